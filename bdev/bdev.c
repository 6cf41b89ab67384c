/*
 * bdev.c - what every backend shares: request set-up and validation, the
 * synchronous helpers built on asynchronous submission, and bdev_open's
 * choice of backend.
 */
#include "bdev_i.h"

#include "util.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#define DEFAULT_QUEUE_DEPTH 64u
#define MAX_QUEUE_DEPTH 4096u
/* Batches up to this size wait without allocating. */
#define WAIT_STACK_SLOTS 16u

size_t bdev_test_max_xfer;

/* ---- requests ----------------------------------------------------------- */

void bdev_req_init(struct bdev_req *req, enum bdev_op op, uint64_t off,
		   void *buf, size_t len)
{
	memset(req, 0, sizeof(*req));
	req->op = op;
	req->off = off;
	if (op == BDEV_OP_FLUSH)
		return;
	req->one.iov_base = buf;
	req->one.iov_len = len;
	req->iov = &req->one;
	req->iovcnt = 1;
}

void bdev_req_initv(struct bdev_req *req, enum bdev_op op, uint64_t off,
		    struct iovec *iov, unsigned int iovcnt)
{
	memset(req, 0, sizeof(*req));
	req->op = op;
	req->off = off;
	req->iov = iov;
	req->iovcnt = iovcnt;
}

size_t bdev_req_len(const struct bdev_req *req)
{
	size_t len = 0;

	for (unsigned int i = 0; i < req->iovcnt; i++)
		len += req->iov[i].iov_len;
	return len;
}

void bdev_req_gather(void *dst, const struct bdev_req *req)
{
	char *at = dst;

	for (unsigned int i = 0; req && i < req->iovcnt; i++) {
		memcpy(at, req->iov[i].iov_base, req->iov[i].iov_len);
		at += req->iov[i].iov_len;
	}
}

void bdev_req_scatter(const struct bdev_req *req, const void *src)
{
	const char *at = src;

	for (unsigned int i = 0; i < req->iovcnt; i++) {
		memcpy(req->iov[i].iov_base, at, req->iov[i].iov_len);
		at += req->iov[i].iov_len;
	}
}

void bdev_req_rest(struct bdev_req *req, struct bdev_rest *rest)
{
	size_t skip = req->done;
	unsigned int k = 0;

	while (k < req->iovcnt && skip >= req->iov[k].iov_len)
		skip -= req->iov[k++].iov_len;
	rest->off = req->off + req->done;
	if (skip || bdev_test_max_xfer) {
		/* Inside a segment: finish that piece first. */
		rest->piece.iov_base = (char *)req->iov[k].iov_base + skip;
		rest->piece.iov_len = req->iov[k].iov_len - skip;
		if (bdev_test_max_xfer)
			rest->piece.iov_len = UT_MIN(rest->piece.iov_len, bdev_test_max_xfer);
		rest->iov = &rest->piece;
		rest->cnt = 1;
		return;
	}
	rest->iov = req->iov + k;
	rest->cnt = UT_MIN(req->iovcnt - k, (unsigned int)IOV_MAX);
}

static int check_req(const struct bdev *bd, const struct bdev_req *req)
{
	uint64_t len = 0;

	if (req->op != BDEV_OP_READ && bdev_is_fenced(bd))
		return -EIO;
	if (req->op == BDEV_OP_FLUSH)
		return req->iovcnt ? -EINVAL : 0;
	if ((req->op != BDEV_OP_READ && req->op != BDEV_OP_WRITE) ||
	    !req->iov || req->iovcnt == 0 || req->off % bd->block_size)
		return -EINVAL;
	for (unsigned int i = 0; i < req->iovcnt; i++) {
		const struct iovec *v = &req->iov[i];

		if (v->iov_len % bd->block_size || v->iov_len > bd->size ||
		    (uintptr_t)v->iov_base % bd->dma_align)
			return -EINVAL;
		len += v->iov_len;
		if (len > bd->size)
			return -EINVAL;
	}
	if (len == 0 || req->off > bd->size - len)
		return -EINVAL;
	if (req->op == BDEV_OP_WRITE && bd->read_only)
		return -EROFS;
	return 0;
}

int bdev_req_fd(const struct bdev *bd, const struct bdev_req *req)
{
	return bd->host_reads && req->op == BDEV_OP_READ &&
	       bdev_req_len(req) == bd->block_size ? bd->read_fd : bd->fd;
}

/*
 * host_reads: a read the host's page cache holds whole needs no trip
 * through the device's queue.  Nor does one its caller waits for alone
 * (@block): a plain read on the caller's thread sleeps once in the host,
 * where the queue's buffered read comes back through a completion and a
 * wake-up of that thread (docs/PERFORMANCE.md has the figures).  A batch
 * of several still goes through the queue, so that its reads overlap.  A
 * read that fails here is left to the queue, which reports it.
 */
static bool read_host(struct bdev *bd, struct bdev_req *req, bool block)
{
	ssize_t n;

	if (bdev_req_fd(bd, req) != bd->read_fd)
		return false;
	n = preadv2(bd->read_fd, req->iov, (int)req->iovcnt, (off_t)req->off,
		    RWF_NOWAIT);
	if (n < 0 && errno == EAGAIN && block) {
		bdev_stat_add(bd, host_waited, 1);
		n = preadv2(bd->read_fd, req->iov, (int)req->iovcnt,
			    (off_t)req->off, 0);
	}
	if (n < 0 || (size_t)n != bdev_req_len(req))
		return false;
	req->done = (size_t)n;
	req->result = 0;
	return true;
}

/* Queue what the host's cache cannot answer here; complete the rest.
 * @w: the caller waits for the batch. */
static int submit_host(struct bdev *bd, struct bdev_req **reqs, unsigned int n,
		       struct bdev_waiter *w)
{
	struct bdev_req *left[64], *done[64];
	unsigned int nl = 0, nd = 0;
	int err = 0;

	if (n > 64)
		return bd->ops->submit(bd, reqs, n);
	for (unsigned int i = 0; i < n; i++) {
		if (read_host(bd, reqs[i], w && n == 1))
			done[nd++] = reqs[i];
		else
			left[nl++] = reqs[i];
	}
	if (nl)
		err = bd->ops->submit(bd, left, nl);
	/* A batch the device refused is refused whole: none completes. */
	for (unsigned int i = 0; i < nd && !err; i++)
		if (done[i]->end_io)
			done[i]->end_io(done[i]);
	return err;
}

/* Validate, count and queue a batch; @w is the waiter of a thread that
 * will wait for all of it, NULL when nobody waits. */
static int submit_batch(struct bdev *bd, struct bdev_req **reqs, unsigned int n,
			struct bdev_waiter *w)
{
	int err = 0;

	for (unsigned int i = 0; i < n; i++) {
		reqs[i]->result = check_req(bd, reqs[i]);
		if (reqs[i]->result && !err)
			err = reqs[i]->result;
	}
	if (err || n == 0)
		return err;
	for (unsigned int i = 0; i < n; i++) {
		size_t len = bdev_req_len(reqs[i]);

		reqs[i]->done = 0;
		reqs[i]->next = NULL;
		reqs[i]->waiter = w;
		if (reqs[i]->op == BDEV_OP_FLUSH) {
			bdev_stat_add(bd, flushes, 1);
		} else if (reqs[i]->op == BDEV_OP_READ) {
			bdev_stat_add(bd, reads, 1);
			bdev_stat_add(bd, read_bytes, len);
		} else {
			bdev_stat_add(bd, writes, 1);
			bdev_stat_add(bd, write_bytes, len);
		}
	}
	return bd->host_reads ? submit_host(bd, reqs, n, w) : bd->ops->submit(bd, reqs, n);
}

void bdev_fence(struct bdev *bd)
{
	__atomic_store_n(&bd->fenced, true, __ATOMIC_RELEASE);
}

bool bdev_is_fenced(const struct bdev *bd)
{
	return __atomic_load_n(&bd->fenced, __ATOMIC_ACQUIRE);
}

int bdev_submit(struct bdev *bd, struct bdev_req **reqs, unsigned int n)
{
	return submit_batch(bd, reqs, n, NULL);
}

int bdev_submit_for(struct bdev *bd, struct bdev_req **reqs, unsigned int n,
		    struct bdev_waiter *w)
{
	return submit_batch(bd, reqs, n, w);
}

struct bdev *bdev_bottom(struct bdev *bd)
{
	while (bd->ops->lower)
		bd = bd->ops->lower(bd);
	return bd;
}

int bdev_submit_inline(struct bdev *bd, struct bdev_req **reqs, unsigned int n,
		       int (*rw)(struct bdev *bd, struct bdev_req *req))
{
	bdev_stat_add(bd, submits, 1);
	for (unsigned int i = 0; i < n; i++) {
		struct bdev_req *req = reqs[i];

		req->result = req->op == BDEV_OP_FLUSH ? bd->ops->flush(bd) : rw(bd, req);
		if (req->end_io)
			req->end_io(req);
	}
	return 0;
}

/* ---- waiting ------------------------------------------------------------ */

void bdev_waiter_init(struct bdev_waiter *w, unsigned int count)
{
	pthread_mutex_init(&w->lock, NULL);
	pthread_cond_init(&w->cond, NULL);
	w->left = count;
}

void bdev_waiter_done(struct bdev_waiter *w)
{
	pthread_mutex_lock(&w->lock);
	if (--w->left == 0)
		pthread_cond_broadcast(&w->cond);
	pthread_mutex_unlock(&w->lock);
}

bool bdev_waiter_pending(struct bdev_waiter *w)
{
	bool pending;

	pthread_mutex_lock(&w->lock);
	pending = w->left != 0;
	pthread_mutex_unlock(&w->lock);
	return pending;
}

void bdev_waiter_wait(struct bdev_waiter *w)
{
	pthread_mutex_lock(&w->lock);
	while (w->left)
		ut_cond_wait(&w->cond, &w->lock);
	pthread_mutex_unlock(&w->lock);
	pthread_cond_destroy(&w->cond);
	pthread_mutex_destroy(&w->lock);
}

/* While bdev_submit_wait() owns a request, its end_io and private. */
struct wait_slot {
	struct bdev_waiter *waiter;
	bdev_end_io_fn end_io;
	void *private;
};

static void wait_end_io(struct bdev_req *req)
{
	struct wait_slot *slot = req->private;
	struct bdev_waiter *w = slot->waiter;

	req->end_io = slot->end_io;
	req->private = slot->private;
	if (req->end_io)
		req->end_io(req);
	bdev_waiter_done(w);  /* the slot may be gone after this */
}

static void wait_restore(struct bdev_req **reqs, unsigned int n,
			 const struct wait_slot *slots)
{
	for (unsigned int i = 0; i < n; i++) {
		reqs[i]->end_io = slots[i].end_io;
		reqs[i]->private = slots[i].private;
	}
}

int bdev_submit_wait(struct bdev *bd, struct bdev_req **reqs, unsigned int n)
{
	struct wait_slot stack[WAIT_STACK_SLOTS], *slots = stack;
	struct bdev_waiter w;
	int err;

	if (n > WAIT_STACK_SLOTS && !(slots = malloc(n * sizeof(*slots))))
		return -ENOMEM;
	bdev_waiter_init(&w, n);
	for (unsigned int i = 0; i < n; i++) {
		slots[i] = (struct wait_slot){ &w, reqs[i]->end_io, reqs[i]->private };
		reqs[i]->end_io = wait_end_io;
		reqs[i]->private = &slots[i];
	}
	err = submit_batch(bd, reqs, n, &w);
	if (err) {
		wait_restore(reqs, n, slots);
		w.left = 0;
	} else if (bd->ops->wait) {
		bd->ops->wait(bd, &w);
	}
	bdev_waiter_wait(&w);
	for (unsigned int i = 0; i < n && !err; i++)
		err = reqs[i]->result;
	if (slots != stack)
		free(slots);
	return err;
}

/* ---- synchronous helpers ------------------------------------------------ */

int bdev_read(struct bdev *bd, uint64_t off, void *buf, size_t len)
{
	struct bdev_req req, *r = &req;

	bdev_req_init(&req, BDEV_OP_READ, off, buf, len);
	return bdev_submit_wait(bd, &r, 1);
}

int bdev_write(struct bdev *bd, uint64_t off, const void *buf, size_t len)
{
	struct bdev_req req, *r = &req;

	/* Backends never write through the buffer of a write request. */
	bdev_req_init(&req, BDEV_OP_WRITE, off, (void *)buf, len);
	return bdev_submit_wait(bd, &r, 1);
}

int bdev_writev(struct bdev *bd, uint64_t off, const struct iovec *iov,
		unsigned int iovcnt)
{
	struct bdev_req req, *r = &req;

	bdev_req_initv(&req, BDEV_OP_WRITE, off, (struct iovec *)iov, iovcnt);
	return bdev_submit_wait(bd, &r, 1);
}

int bdev_flush(struct bdev *bd)
{
	if (bdev_is_fenced(bd))
		return -EIO;
	bdev_stat_add(bd, flushes, 1);
	return bd->ops->flush(bd);
}

int bdev_set_flush_end(struct bdev *bd, uint64_t end)
{
	if (end % bd->block_size || end > bd->size)
		return -EINVAL;
	/* A stack shares one geometry: every device of it flushes as far. */
	for (; bd; bd = bd->ops->lower ? bd->ops->lower(bd) : NULL)
		bd->flush_end = end == bd->size ? 0 : end;
	return 0;
}

void bdev_close(struct bdev *bd)
{
	if (bd)
		bd->ops->close(bd);
}

void *bdev_alloc_buf(size_t len)
{
	void *buf;

	if (posix_memalign(&buf, 4096, len ? len : 1))
		return NULL;
	return buf;
}

void bdev_free_buf(void *buf)
{
	free(buf);
}

void bdev_get_stats(struct bdev *bd, struct bdev_stats *st)
{
	const struct bdev_stats *s = &bd->stats;

	st->reads = __atomic_load_n(&s->reads, __ATOMIC_RELAXED);
	st->writes = __atomic_load_n(&s->writes, __ATOMIC_RELAXED);
	st->flushes = __atomic_load_n(&s->flushes, __ATOMIC_RELAXED);
	st->read_bytes = __atomic_load_n(&s->read_bytes, __ATOMIC_RELAXED);
	st->write_bytes = __atomic_load_n(&s->write_bytes, __ATOMIC_RELAXED);
	st->submits = __atomic_load_n(&s->submits, __ATOMIC_RELAXED);
	st->retries = __atomic_load_n(&s->retries, __ATOMIC_RELAXED);
	st->host_waited = __atomic_load_n(&s->host_waited, __ATOMIC_RELAXED);
}

/* ---- opening ------------------------------------------------------------ */

static const struct bdev_open_opts default_opts;

static unsigned int queue_depth(const struct bdev_open_opts *opts)
{
	if (!opts->queue_depth)
		return DEFAULT_QUEUE_DEPTH;
	return UT_MIN(opts->queue_depth, MAX_QUEUE_DEPTH);
}

/* Put a backend over an opened file, or release the file. */
static int attach(struct bdev *file, bool uring, const struct bdev_open_opts *opts,
		  struct bdev **out)
{
	const char *what = "";
	int err;

	if (uring)
		err = bdev_uring_setup(file, queue_depth(opts), out, &what);
	else
		err = bdev_pread_setup(file, out, &what);
	if (err) {
		mlog_err("%s: %s failed: %s", file->path, what, strerror(-err));
		bdev_file_close(file);
	}
	return err;
}

int bdev_open_uring(const char *path, const struct bdev_open_opts *opts,
		    struct bdev **out)
{
	struct bdev file;
	int err;

	opts = opts ? opts : &default_opts;
	err = bdev_file_open(path, opts, &file);
	return err ? err : attach(&file, true, opts, out);
}

int bdev_open_pread(const char *path, const struct bdev_open_opts *opts,
		    struct bdev **out)
{
	struct bdev file;
	int err;

	opts = opts ? opts : &default_opts;
	err = bdev_file_open(path, opts, &file);
	return err ? err : attach(&file, false, opts, out);
}

bool bdev_is_remote(const char *path)
{
	return !strncmp(path, "nbd:", 4) || !strncmp(path, "nbds:", 5) ||
	       !strncmp(path, "nbd+", 4) || !strncmp(path, "nbds+", 5);
}

#ifdef MISCFS_NBD
bool bdev_has_nbd(void)
{
	return true;
}
#else
bool bdev_has_nbd(void)
{
	return false;
}

int bdev_nbd_open(const char *uri, const struct bdev_open_opts *opts,
		  struct bdev **out)
{
	(void)opts;
	(void)out;
	mlog_err("%s: this build of miscfs has no NBD support (libnbd was not "
		 "found when it was configured)", uri);
	return -EPROTONOSUPPORT;
}
#endif

int bdev_open(const char *path, const struct bdev_open_opts *opts,
	      struct bdev **out)
{
	const char *what = "";
	struct bdev file;
	int err;

	opts = opts ? opts : &default_opts;
	if (bdev_is_remote(path))
		return bdev_nbd_open(path, opts, out);
	err = bdev_file_open(path, opts, &file);
	if (err || opts->no_uring)
		return err ? err : attach(&file, false, opts, out);
	err = bdev_uring_setup(&file, queue_depth(opts), out, &what);
	if (!err)
		return 0;
	mlog_warn("%s: io_uring unavailable (%s failed: %s), using pread/pwrite",
		  path, what, strerror(-err));
	return attach(&file, false, opts, out);
}
