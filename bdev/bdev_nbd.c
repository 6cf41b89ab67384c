/*
 * bdev_nbd.c - images served by a network block device server, through
 * libnbd's asynchronous API: nbd://HOST[:PORT]/EXPORT,
 * nbd+unix:///EXPORT?socket=PATH, or any other URI nbd_connect_uri takes.
 *
 * Submitters issue their commands from their own threads (a libnbd handle
 * may be used by several) and wake the device's thread, which polls the
 * socket, moves libnbd's state machine along and runs the end_io of what
 * completed.  libnbd calls a completion callback with its handle locked,
 * where no nbd_* call is allowed, so the callback only queues the command;
 * end_io runs after, in the device's thread, and may submit more.
 *
 * A request is one command; a vectored one goes through a bounce buffer
 * (gathered before a write, scattered after a read); one larger than the
 * server takes at once is cut into several.
 *
 * Flushes.  NBD_CMD_FLUSH makes durable the writes the server has
 * replied to.  bdev_flush() covers the writes completed before it is
 * called: one flush command.  A BDEV_OP_FLUSH in a batch covers every
 * request submitted before it, completed or not: commands are counted in
 * epochs, each flush closes one, and its command goes out once its epoch
 * and every older one have drained.  A server that offers no flush is
 * used with a warning: its writes are as durable as it makes them.  A
 * write with its flush after it, alone on the device, is one write with
 * FUA where the server offers it (fua_alone).
 *
 * A lost connection: libnbd ends the commands in flight with an error,
 * the device says once which server it lost, and every later request
 * fails with -EIO.  Nothing is retried on another connection: the
 * journal above aborts, and whatever it reported durable had been
 * flushed on the server.
 */
#include "bdev_i.h"

#include "util.h"

#include <errno.h>
#include <libnbd.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

/* The largest payload the NBD protocol advises a client to send when the
 * server names none. */
#define NBD_DEFAULT_MAX_CMD (32u << 20)

struct nbd_epoch {
	uint64_t pending;            /* its commands not yet ended */
	struct bdev_req *flush;      /* the flush that closed it; NULL: open */
	struct nbd_epoch *next;      /* the newer one */
};

struct nbd_dev;

struct nbd_cmd {
	struct nbd_dev *d;
	struct bdev_req *req;
	struct nbd_epoch *epoch;     /* NULL for a flush */
	char *buf;                   /* where its bytes come from or go */
	size_t len;                  /* how many */
	uint64_t off;                /* on the device */
	char *bounce;                /* a vectored request's buffer */
	bool fua;                    /* sent with NBD_CMD_FLAG_FUA ... */
	struct bdev_req *then;       /* ... standing for this flush */
	/* Held by finish(), by libnbd until it calls .free, and by the
	 * issuing thread until its call returns: libnbd may both fail the
	 * call and end the command (a connection dying under it). */
	atomic_uint refs;
	atomic_bool is_ended;        /* ended() takes only the first end */
	int err;
	struct nbd_cmd *next;        /* on the list of ended commands */
};

struct nbd_dev {
	struct bdev bd;
	struct nbd_handle *h;
	pthread_t thread;
	int wake;                    /* eventfd: work for the thread */
	uint64_t max_cmd;
	bool can_flush, can_fua;
	pthread_mutex_t lock;        /* what follows */
	struct nbd_cmd *ended, **ended_tail;
	struct nbd_epoch *oldest, *newest;
	uint64_t inflight;           /* commands issued, not yet ended */
	uint64_t unflushed;          /* writes ended since a flush was sent */
	bool dead, stop;
};

static struct nbd_dev *dev_of(struct bdev *bd)
{
	return ut_container_of(bd, struct nbd_dev, bd);
}

static void kick(struct nbd_dev *d)
{
	uint64_t one = 1;

	while (write(d->wake, &one, sizeof(one)) < 0 && errno == EINTR)
		;
}

/* An errno from libnbd or the server as the block layer reports it:
 * what the device refused stays, a lost connection is an I/O error. */
static int io_errno(int e)
{
	switch (e) {
	case ENOSPC: case EROFS: case EINVAL: case ENOMEM:
		return -e;
	default:
		return -EIO;
	}
}

/* ---- ending commands ---------------------------------------------------- */

/* Queue @c as ended (any thread; d->lock not held). */
static void ended(struct nbd_cmd *c, int err)
{
	struct nbd_dev *d = c->d;

	if (atomic_exchange(&c->is_ended, true))
		return;
	c->err = err;
	c->next = NULL;
	pthread_mutex_lock(&d->lock);
	*d->ended_tail = c;
	d->ended_tail = &c->next;
	pthread_mutex_unlock(&d->lock);
}

/* libnbd's completion callback: its handle is locked, so only queue. */
static int cmd_callback(void *user, int *error)
{
	struct nbd_cmd *c = user;

	ended(c, *error ? io_errno(*error) : 0);
	return 1;
}

/* End a request that sent nothing, or a flush a FUA write stood for. */
static void end_now(struct bdev_req *req, int err)
{
	req->result = err;
	if (req->end_io)
		req->end_io(req);
}

/* Commands and their bounce buffers, along their next links. */
static void cmd_put(struct nbd_cmd *c)
{
	if (atomic_fetch_sub(&c->refs, 1) == 1) {
		bdev_free_buf(c->bounce);
		free(c);
	}
}

/* libnbd will not call the command's callback again. */
static void cmd_free_cb(void *user)
{
	cmd_put(user);
}

static void free_plan(struct nbd_cmd *c)
{
	while (c) {
		struct nbd_cmd *next = c->next;

		cmd_put(c);
		c = next;
	}
}

/* A command has ended: its request ends with the last of its commands
 * (in the device's thread, which alone touches req->done). */
static void finish(struct nbd_dev *d, struct nbd_cmd *c)
{
	struct bdev_req *req = c->req, *then = c->then;
	int err;

	pthread_mutex_lock(&d->lock);
	if (c->epoch)
		c->epoch->pending--;
	d->inflight--;
	if (req->op == BDEV_OP_WRITE && !c->fua)
		d->unflushed++;
	pthread_mutex_unlock(&d->lock);
	if (c->err && !req->result)
		req->result = c->err;
	if (c->bounce && !c->err && req->op == BDEV_OP_READ)
		bdev_req_scatter(req, c->bounce);
	req->done += c->len;
	cmd_put(c);
	if (req->op != BDEV_OP_FLUSH && req->done != bdev_req_len(req))
		return;
	/* @then is a single command's: its request ends here.  The request
	 * may be gone once its end_io has run. */
	err = req->result;
	if (req->end_io)
		req->end_io(req);
	if (then)
		end_now(then, err);
}

/* ---- issuing commands --------------------------------------------------- */

static struct nbd_cmd *cmd_new(struct nbd_dev *d, struct bdev_req *req, char *buf,
			       size_t len, uint64_t off)
{
	struct nbd_cmd *c = calloc(1, sizeof(*c));

	if (c) {
		*c = (struct nbd_cmd){ .d = d, .req = req, .buf = buf, .len = len,
				       .off = off };
		atomic_init(&c->refs, 1);            /* finish()'s */
	}
	return c;
}

/* The connection is gone: say so once; from now on every request fails. */
static void lost(struct nbd_dev *d, const char *why)
{
	bool first;

	pthread_mutex_lock(&d->lock);
	first = !d->dead;
	d->dead = true;
	pthread_mutex_unlock(&d->lock);
	if (first)
		mlog_err("%s: connection to the NBD server lost (%s): every "
			 "request fails from now on", d->bd.path, why);
}

/*
 * After libnbd refused a command of a submitting thread: a send that
 * found the server gone kills the handle right there (libnbd ends the
 * commands in flight with ENOTCONN and closes the socket), maybe before
 * the device's thread polls it, and every later command is refused with
 * EINVAL (not connected).  Such a refusal is the lost connection, not
 * the device refusing the command: mark the device lost, and wake the
 * thread off the socket it polls.
 */
static bool lost_by_call(struct nbd_dev *d)
{
	const char *why;

	if (nbd_aio_is_dead(d->h) != 1 && nbd_aio_is_closed(d->h) != 1)
		return false;
	why = nbd_get_error();
	lost(d, why ? why : "the server closed it");
	kick(d);
	return true;
}

/* Send @c, counted in flight (in the newest epoch unless it is a flush);
 * once the connection is gone it ends at once with -EIO. */
static void issue(struct nbd_dev *d, struct nbd_cmd *c)
{
	nbd_completion_callback cb = { .callback = cmd_callback, .user_data = c,
				       .free = cmd_free_cb };
	enum bdev_op op = c->req->op;
	int64_t cookie;
	bool dead;

	pthread_mutex_lock(&d->lock);
	dead = d->dead;
	c->epoch = op == BDEV_OP_FLUSH ? NULL : d->newest;
	if (c->epoch)
		c->epoch->pending++;
	d->inflight++;
	if (op == BDEV_OP_FLUSH)
		d->unflushed = 0;    /* it covers every write ended by now */
	pthread_mutex_unlock(&d->lock);
	if (dead) {
		ended(c, -EIO);
		return;
	}
	atomic_fetch_add(&c->refs, 2);               /* libnbd's, ours */
	if (op == BDEV_OP_READ)
		cookie = nbd_aio_pread(d->h, c->buf, c->len, c->off, cb, 0);
	else if (op == BDEV_OP_WRITE)
		cookie = nbd_aio_pwrite(d->h, c->buf, c->len, c->off, cb,
					c->fua ? LIBNBD_CMD_FLAG_FUA : 0);
	else
		cookie = nbd_aio_flush(d->h, cb, 0);
	/* Refused: ended here, unless the callback ended it already. */
	if (cookie < 0) {
		int e = nbd_get_errno();

		ended(c, lost_by_call(d) ? -EIO : io_errno(e));
	}
	cmd_put(c);
}

/* A vectored request that fits one command: through a bounce buffer. */
static int plan_bounced(struct nbd_dev *d, struct bdev_req *req, size_t len,
			struct nbd_cmd **out)
{
	char *b = bdev_alloc_buf(len);

	if (!b || !(*out = cmd_new(d, req, b, len, req->off))) {
		bdev_free_buf(b);
		return -ENOMEM;
	}
	(*out)->bounce = b;
	if (req->op == BDEV_OP_WRITE)
		bdev_req_gather(b, req);
	return 0;
}

/* The commands of a read or write, made before any is sent: a request
 * either goes out whole or fails whole. */
static int plan(struct nbd_dev *d, struct bdev_req *req, struct nbd_cmd **out)
{
	size_t total = bdev_req_len(req);
	struct nbd_cmd **tail = out;
	uint64_t off = req->off;

	*out = NULL;
	if (req->iovcnt > 1 && total <= d->max_cmd)
		return plan_bounced(d, req, total, out);
	for (unsigned int i = 0; i < req->iovcnt; i++) {
		char *buf = req->iov[i].iov_base;

		for (size_t at = 0; at < req->iov[i].iov_len; at += d->max_cmd) {
			size_t n = UT_MIN(req->iov[i].iov_len - at, d->max_cmd);

			*tail = cmd_new(d, req, buf + at, n, off);
			if (!*tail) {
				free_plan(*out);
				return -ENOMEM;
			}
			tail = &(*tail)->next;
			off += n;
		}
	}
	return 0;
}

/*
 * A write that a flush follows in its batch, on a device with nothing in
 * flight and nothing written since the last flush, is all that flush has
 * to cover: one command with FUA does both, a round trip less (the
 * commit block of a transaction, say).  Writes submitted meanwhile by
 * other threads come after the flush, which need not cover them.
 */
static bool fua_alone(struct nbd_dev *d, struct nbd_cmd *c, struct bdev_req *flush)
{
	bool alone;

	if (!flush || !d->can_fua || c->next)
		return false;
	pthread_mutex_lock(&d->lock);
	alone = !d->inflight && !d->unflushed;
	pthread_mutex_unlock(&d->lock);
	if (alone) {
		c->fua = true;
		c->then = flush;
	}
	return alone;
}

/* Send a read or write; a write whose following @flush it can stand for
 * (fua_alone) returns true, and that flush is taken care of. */
static bool issue_rw(struct nbd_dev *d, struct bdev_req *req, struct bdev_req *flush)
{
	struct nbd_cmd *c;
	int err = plan(d, req, &c);
	bool fua;

	if (err) {
		end_now(req, err);
		return false;
	}
	fua = req->op == BDEV_OP_WRITE && fua_alone(d, c, flush);
	while (c) {
		struct nbd_cmd *next = c->next;   /* ended() reuses it */

		issue(d, c);
		c = next;
	}
	return fua;
}

/* ---- flushes ------------------------------------------------------------ */

/* A flush once its epoch and every older one have drained. */
static void flush_now(struct nbd_dev *d, struct bdev_req *req)
{
	struct nbd_cmd *c;
	bool dead;

	if (!d->can_flush) {
		/* Nothing to send: the writes it covers have completed. */
		pthread_mutex_lock(&d->lock);
		dead = d->dead;
		pthread_mutex_unlock(&d->lock);
		end_now(req, dead ? -EIO : 0);
	} else if ((c = cmd_new(d, req, NULL, 0, 0))) {
		issue(d, c);
	} else {
		end_now(req, -ENOMEM);
	}
}

/* Send the flushes whose epochs have drained, oldest first. */
static void flush_drained(struct nbd_dev *d)
{
	for (;;) {
		struct nbd_epoch *e;

		pthread_mutex_lock(&d->lock);
		e = d->oldest;
		if (e->pending || !e->flush) {
			pthread_mutex_unlock(&d->lock);
			return;
		}
		d->oldest = e->next;
		pthread_mutex_unlock(&d->lock);
		flush_now(d, e->flush);
		free(e);
	}
}

/* Close the newest epoch with @req. */
static int queue_flush(struct nbd_dev *d, struct bdev_req *req)
{
	struct nbd_epoch *e = calloc(1, sizeof(*e));

	if (!e)
		return -ENOMEM;
	pthread_mutex_lock(&d->lock);
	d->newest->flush = req;
	d->newest->next = e;
	d->newest = e;
	pthread_mutex_unlock(&d->lock);
	return 0;
}

static int nbdev_submit(struct bdev *bd, struct bdev_req **reqs, unsigned int n)
{
	struct nbd_dev *d = dev_of(bd);

	bdev_stat_add(bd, submits, 1);
	for (unsigned int i = 0; i < n; i++) {
		struct bdev_req *req = reqs[i];
		int err;

		if (req->op != BDEV_OP_FLUSH) {
			struct bdev_req *next = i + 1 < n ? reqs[i + 1] : NULL;

			if (issue_rw(d, req, next && next->op == BDEV_OP_FLUSH ? next : NULL))
				i++;          /* its flush is the FUA write's */
			continue;
		}
		err = queue_flush(d, req);
		if (err)
			end_now(req, err);
	}
	flush_drained(d);
	kick(d);
	return 0;
}

static void flush_waited(struct bdev_req *req)
{
	bdev_waiter_done(req->private);
}

/* bdev_flush(): what has completed by now, so no epoch to wait for. */
static int nbdev_flush(struct bdev *bd)
{
	struct nbd_dev *d = dev_of(bd);
	struct bdev_waiter w;
	struct bdev_req req;

	if (!d->can_flush)
		return 0;
	bdev_req_init(&req, BDEV_OP_FLUSH, 0, NULL, 0);
	req.end_io = flush_waited;
	req.private = &w;
	bdev_waiter_init(&w, 1);
	flush_now(d, &req);
	kick(d);
	bdev_waiter_wait(&w);
	return req.result;
}

/* ---- the device's thread ------------------------------------------------ */

/* Move libnbd's state machine as the socket allows. */
static void step(struct nbd_dev *d, short revents)
{
	unsigned int dir = (unsigned int)nbd_aio_get_direction(d->h);
	int r = 0;

	if ((dir & LIBNBD_AIO_DIRECTION_READ) && (revents & (POLLIN | POLLHUP | POLLERR)))
		r = nbd_aio_notify_read(d->h);
	else if ((dir & LIBNBD_AIO_DIRECTION_WRITE) && (revents & (POLLOUT | POLLHUP | POLLERR)))
		r = nbd_aio_notify_write(d->h);
	else if (revents & (POLLHUP | POLLERR | POLLNVAL))
		r = -2;
	if (r == -1)
		lost(d, nbd_get_error() ? nbd_get_error() : "no reason given");
	else if (r < 0 || nbd_aio_is_dead(d->h) == 1 || nbd_aio_is_closed(d->h) == 1)
		lost(d, "the server closed it");
}

/* Run the end_io of every ended command, and send the flushes that
 * waited for them; until none is left, since ending one may end more
 * (a flush issued on a lost connection ends at once). */
static void reap(struct nbd_dev *d)
{
	for (;;) {
		struct nbd_cmd *c;

		pthread_mutex_lock(&d->lock);
		c = d->ended;
		d->ended = NULL;
		d->ended_tail = &d->ended;
		pthread_mutex_unlock(&d->lock);
		if (!c)
			return;
		while (c) {
			struct nbd_cmd *next = c->next;

			finish(d, c);
			c = next;
		}
		flush_drained(d);
	}
}

static bool done_for_good(struct nbd_dev *d)
{
	bool done;

	pthread_mutex_lock(&d->lock);
	done = d->stop && !d->inflight && !d->ended;
	pthread_mutex_unlock(&d->lock);
	return done;
}

static void *nbdev_thread(void *arg)
{
	struct nbd_dev *d = arg;

	while (!done_for_good(d)) {
		struct pollfd p[2] = { { .fd = d->wake, .events = POLLIN } };
		unsigned int dir;
		bool dead;
		uint64_t v;

		pthread_mutex_lock(&d->lock);
		dead = d->dead;
		pthread_mutex_unlock(&d->lock);
		dir = dead ? 0 : (unsigned int)nbd_aio_get_direction(d->h);
		p[1].fd = dead ? -1 : nbd_aio_get_fd(d->h);
		p[1].events = (short)((dir & LIBNBD_AIO_DIRECTION_READ ? POLLIN : 0) |
				      (dir & LIBNBD_AIO_DIRECTION_WRITE ? POLLOUT : 0));
		if (poll(p, 2, -1) < 0 && errno != EINTR)
			break;
		if (p[0].revents & POLLIN)
			while (read(d->wake, &v, sizeof(v)) < 0 && errno == EINTR)
				;
		if (p[1].fd >= 0 && p[1].revents)
			step(d, p[1].revents);
		reap(d);
	}
	return NULL;
}

/* ---- opening and closing ------------------------------------------------ */

static void nbdev_close(struct bdev *bd)
{
	struct nbd_dev *d = dev_of(bd);

	pthread_mutex_lock(&d->lock);
	d->stop = true;
	pthread_mutex_unlock(&d->lock);
	kick(d);
	pthread_join(d->thread, NULL);
	if (!d->dead)
		nbd_shutdown(d->h, 0);
	nbd_close(d->h);
	close(d->wake);
	while (d->oldest) {
		struct nbd_epoch *e = d->oldest;

		d->oldest = e->next;
		free(e);
	}
	pthread_mutex_destroy(&d->lock);
	free(bd->path);
	free(d);
}

static const struct bdev_ops nbdev_ops = {
	.name = "nbd",
	.submit = nbdev_submit,
	.flush = nbdev_flush,
	.close = nbdev_close,
};

/* Connect and learn the export's geometry; -errno with a log line. */
static int connect_export(struct nbd_dev *d, const char *uri,
			  const struct bdev_open_opts *opts)
{
	uint32_t bs = d->bd.block_size;
	int64_t size, min, max;

	if (nbd_connect_uri(d->h, uri) < 0) {
		int e = nbd_get_errno();

		mlog_err("%s: cannot connect to the NBD server: %s", uri, nbd_get_error());
		return e ? -e : -EIO;
	}
	size = nbd_get_size(d->h);
	min = nbd_get_block_size(d->h, LIBNBD_SIZE_MINIMUM);
	max = nbd_get_block_size(d->h, LIBNBD_SIZE_MAXIMUM);
	if (size < (int64_t)bs) {
		mlog_err("%s: the export is %lld bytes, less than one %u-byte block",
			 uri, (long long)size, bs);
		return -EINVAL;
	}
	if (min > 0 && bs % (uint64_t)min) {
		mlog_err("%s: the server wants %lld-byte requests, which %u-byte "
			 "blocks do not divide into", uri, (long long)min, bs);
		return -EINVAL;
	}
	d->bd.size = (uint64_t)size - (uint64_t)size % bs;
	d->max_cmd = max > 0 ? (uint64_t)max / bs * bs : NBD_DEFAULT_MAX_CMD;
	d->max_cmd = d->max_cmd ? d->max_cmd : bs;
	if (bdev_test_max_xfer)
		d->max_cmd = UT_MIN(d->max_cmd, bdev_test_max_xfer);
	d->bd.read_only = opts->read_only || nbd_is_read_only(d->h) == 1;
	d->can_flush = nbd_can_flush(d->h) == 1;
	d->can_fua = d->can_flush && nbd_can_fua(d->h) == 1;
	if (!d->can_flush && !d->bd.read_only)
		mlog_warn("%s: the NBD server offers no flush: writes are as durable "
			  "as it makes them", uri);
	return 0;
}

static int start(struct nbd_dev *d)
{
	int err;

	d->wake = eventfd(0, EFD_CLOEXEC);
	if (d->wake < 0)
		return -errno;
	d->oldest = d->newest = calloc(1, sizeof(*d->newest));
	if (!d->oldest)
		return -ENOMEM;
	d->ended_tail = &d->ended;
	err = -pthread_create(&d->thread, NULL, nbdev_thread, d);
	return err;
}

int bdev_nbd_open(const char *uri, const struct bdev_open_opts *opts,
		  struct bdev **out)
{
	struct nbd_dev *d = calloc(1, sizeof(*d));
	int err;

	if (!d)
		return -ENOMEM;
	pthread_mutex_init(&d->lock, NULL);
	d->wake = -1;
	d->bd = (struct bdev){ .ops = &nbdev_ops, .fd = -1, .dma_align = BDEV_MIN_DMA_ALIGN,
			       .block_size = opts->block_size ? opts->block_size : 1024 };
	err = bdev_valid_block_size(d->bd.block_size) ? 0 : -EINVAL;
	if (!err && !(d->bd.path = strdup(uri)))
		err = -ENOMEM;
	if (!err && !(d->h = nbd_create()))
		err = -ENOMEM;
	if (!err)
		err = connect_export(d, uri, opts);
	if (!err)
		err = start(d);
	if (err) {
		if (d->h)
			nbd_close(d->h);
		if (d->wake >= 0)
			close(d->wake);
		free(d->oldest);
		free(d->bd.path);
		pthread_mutex_destroy(&d->lock);
		free(d);
		return err;
	}
	mlog_info("%s: NBD export of %llu bytes, %u-byte blocks%s", uri,
		  (unsigned long long)d->bd.size, d->bd.block_size,
		  d->bd.read_only ? ", read-only" : "");
	*out = &d->bd;
	return 0;
}
