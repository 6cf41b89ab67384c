/*
 * transport.c - how requests reach the daemon and replies leave it,
 * behind libfuse's custom I/O hook, so that libfuse still decodes every
 * request and builds every reply: /dev/fuse, or FUSE over io_uring.
 *
 * Either way the INIT reply is looked at on its way out.  libfuse 3.14
 * does not know FUSE_HANDLE_KILLPRIV_V2, which the daemon can take: the
 * core drops set-id bits itself on every write, truncate and chown by a
 * caller other than root (mfs_kill_suid), as the flag asks, and with it
 * the kernel marks an inode it has found without set-id bits or
 * security.capability (S_NOSEC) and stops asking for that xattr before
 * each of its writes: one request a write fewer, from the second write of
 * an inode on.
 *
 * FUSE over io_uring (-o io_uring): the kernel (6.14 on, with /sys/module/fuse/parameters/enable_uring set)
 * offers the transport in its INIT request; the daemon takes it by setting
 * FUSE_OVER_IO_URING in its INIT reply, which libfuse 3.14 does not know,
 * so the reply is patched on its way out.  Then each CPU's queue gets
 * ENTS_PER_QUEUE entries: a header buffer and a payload buffer the daemon
 * registers (FUSE_IO_URING_CMD_REGISTER).  The kernel fills an entry with
 * a request of a task on that CPU and completes the entry's command; the
 * reply goes back in the same buffers with COMMIT_AND_FETCH, which also
 * hands the entry back for the next request.
 *
 * read() (one thread at a time: the loop's reader, loop.c) waits on the
 * ring and rebuilds the request as /dev/fuse would have given it: its
 * header, its argument header (op_in) and the payload.  writev() of a
 * reply finds the entry by the request's unique id and commits it; any
 * other message (the INIT reply, notifications, the reply to a request
 * that came through /dev/fuse, an interrupt's) goes to /dev/fuse as
 * before.  /dev/fuse stays in use: INIT, forgets, interrupts and requests
 * sent before every queue had an entry come through it, and it says when
 * the mount is gone, so the ring also polls it.
 *
 * The kernel copies a request into an entry in the context of the thread
 * that last submitted the entry's command (task work), and a reader that
 * served its request reads the next one (loop.c).  So the reader alone
 * submits: its reply's commit waits in the submission queue and goes in
 * with its next wait for a completion, one system call a request, and the
 * next request for that entry is copied on the thread that waits.  A
 * thread that handed the role over (mfs_fuse_uring_handover) and then
 * replies leaves its entry on u.commits and wakes the reader through an
 * eventfd the ring reads.
 *
 * Lock order: u.lock (u.commits, the entries' ownership) is a leaf.  The
 * rings' queues belong to the thread with is_reader set: one at a time.
 */
#include "fuse_ops.h"

#include <errno.h>
#include <inttypes.h>
#include <liburing.h>
#include <linux/fuse.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/sysinfo.h>
#include <sys/uio.h>
#include <unistd.h>

#include "util.h"

/* ---- the protocol (uapi fuse.h 7.42), newer than the installed headers */

#define FUR_OVER_IO_URING_FLAGS2 (1u << 9)     /* FUSE_OVER_IO_URING >> 32 */
#define FUR_HEADER_SZ 128
#define FUR_OP_SZ 128

struct fur_ent_in_out {
	uint64_t flags;
	uint64_t commit_id;         /* the request's unique id */
	uint32_t payload_sz;        /* bytes of the payload in use */
	uint32_t padding;
	uint64_t reserved;
};

struct fur_req_header {
	char in_out[FUR_HEADER_SZ]; /* fuse_in_header in, fuse_out_header out */
	char op_in[FUR_OP_SZ];      /* the request's argument header */
	struct fur_ent_in_out ent;
};

enum { FUR_CMD_REGISTER = 1, FUR_CMD_COMMIT_AND_FETCH = 2 };

struct fur_cmd_req {
	uint64_t flags;
	uint64_t commit_id;
	uint16_t qid;
	uint8_t padding[6];
};

/* ---- the daemon's side ----------------------------------------------------- */

#define ENTS_PER_QUEUE 4
#define RING_DEPTH 64
#define POLL_TAG 1                  /* user_data: the poll of /dev/fuse */
#define EVENT_TAG 2                 /* user_data: the read of the eventfd */
#define WAIT_MS 1000                /* a cancelled reader notices within this */

struct fur_ent {
	struct fur_req_header hdr;
	struct iovec iov[2];        /* read by the kernel at registration */
	char *payload;
	size_t payload_len;
	uint16_t qid;
	bool ours;                  /* holds a request the daemon serves */
	uint64_t unique;            /* that request's */
	struct fur_ent *next;       /* on u.commits */
};

static struct {
	bool wanted;                /* -o io_uring */
	bool offered;               /* the INIT request offered the transport */
	bool active;                /* the ring carries requests */
	int fd;                     /* /dev/fuse */
	int efd;                    /* wakes the reader for u.commits */
	uint64_t efd_buf;
	uint64_t init_unique;
	uint32_t init_flags;        /* what the kernel's INIT offered */
	struct io_uring ring;
	struct fur_ent *ents;
	unsigned int nents;
	bool refused_logged;
	pthread_mutex_t lock;
	struct fur_ent *commits;    /* replies of threads not reading */
	_Atomic uint64_t ring_requests, dev_requests;
} u = { .lock = PTHREAD_MUTEX_INITIALIZER, .fd = -1, .efd = -1 };

/* This thread holds the reader role: the ring's queues are its own. */
static __thread bool is_reader;

void mfs_fuse_uring_want(bool on)
{
	u.wanted = on;
}

void mfs_fuse_uring_handover(void)
{
	is_reader = false;
}

void mfs_fuse_uring_stats(uint64_t *ring, uint64_t *dev)
{
	*ring = atomic_load(&u.ring_requests);
	*dev = atomic_load(&u.dev_requests);
}

/* A submission queue entry, the queue submitted first if it is full. */
static struct io_uring_sqe *get_sqe(void)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&u.ring);

	if (!sqe) {
		io_uring_submit(&u.ring);
		sqe = io_uring_get_sqe(&u.ring);
	}
	return sqe;
}

/* Queue @e's command @op: it goes in with the reader's next wait. */
static int queue_cmd(struct fur_ent *e, uint32_t op, uint64_t commit_id)
{
	struct io_uring_sqe *sqe = get_sqe();
	struct fur_cmd_req *req;

	if (!sqe)
		return -EBUSY;
	memset(sqe, 0, 2 * sizeof(*sqe));       /* SQE128 */
	sqe->opcode = IORING_OP_URING_CMD;
	sqe->fd = u.fd;
	sqe->cmd_op = op;
	sqe->user_data = (uintptr_t)e;
	if (op == FUR_CMD_REGISTER) {
		sqe->addr = (uintptr_t)e->iov;
		sqe->len = 2;
	}
	req = (struct fur_cmd_req *)sqe->cmd;
	req->commit_id = commit_id;
	req->qid = e->qid;
	return 0;
}

static int queue_poll(void)
{
	struct io_uring_sqe *sqe = get_sqe();

	if (!sqe)
		return -EBUSY;
	io_uring_prep_poll_add(sqe, u.fd, POLLIN);
	io_uring_sqe_set_data64(sqe, POLL_TAG);
	return 0;
}

static int queue_event_read(void)
{
	struct io_uring_sqe *sqe = get_sqe();

	if (!sqe)
		return -EBUSY;
	io_uring_prep_read(sqe, u.efd, &u.efd_buf, sizeof(u.efd_buf), 0);
	io_uring_sqe_set_data64(sqe, EVENT_TAG);
	return 0;
}

/* The CPUs the kernel keeps a queue for: its possible ones. */
static unsigned int nr_queues(void)
{
	FILE *f = fopen("/sys/devices/system/cpu/possible", "r");
	unsigned int lo, hi = 0, n = 0;
	int c;

	while (f && fscanf(f, "%u", &lo) == 1) {
		hi = lo;
		c = fgetc(f);
		if (c == '-' && fscanf(f, "%u", &hi) != 1)
			break;
		if (c == '-')
			c = fgetc(f);
		n = UT_MAX(n, hi + 1);
		if (c != ',')
			break;
	}
	if (f)
		fclose(f);
	return n ? n : (unsigned int)get_nprocs_conf();
}

/* The entries, each with a payload of @payload bytes (mapped, so only the
 * pages a request touches take memory). */
static int make_entries(size_t payload)
{
	unsigned int nq = nr_queues();

	u.ents = calloc((size_t)nq * ENTS_PER_QUEUE, sizeof(*u.ents));
	if (!u.ents)
		return -ENOMEM;
	for (unsigned int i = 0; i < nq * ENTS_PER_QUEUE; i++) {
		struct fur_ent *e = &u.ents[i];

		e->payload = mmap(NULL, payload, PROT_READ | PROT_WRITE,
				  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (e->payload == MAP_FAILED)
			return -ENOMEM;
		u.nents++;
		e->payload_len = payload;
		e->qid = (uint16_t)(i / ENTS_PER_QUEUE);
		e->iov[0] = (struct iovec){ &e->hdr, sizeof(e->hdr) };
		e->iov[1] = (struct iovec){ e->payload, payload };
	}
	return 0;
}

/* After the INIT reply, on the reader: every entry goes to the kernel
 * with the next wait.  One it refuses comes back with an error
 * (refused()). */
static void register_entries(const struct fuse_init_out *out)
{
	size_t pages = (out->flags & FUSE_MAX_PAGES) ? out->max_pages : 32;
	size_t payload = UT_MAX(UT_MAX((size_t)8192, (size_t)out->max_write),
				pages * 4096);
	int err = make_entries(payload);

	for (unsigned int i = 0; !err && i < u.nents; i++)
		err = queue_cmd(&u.ents[i], FUR_CMD_REGISTER, 0);
	if (err)
		mlog_warn("io_uring: entries not registered: %s; requests go "
			  "through /dev/fuse", strerror(-err));
}

/* A completion with an error: the kernel refused the entry or the
 * connection is going.  A registration refused turns the kernel back to
 * /dev/fuse for good (it clears its io_uring flag), so one line says so. */
static void refused(struct fur_ent *e, int res)
{
	if ((res == -EAGAIN || res == -EINTR) &&
	    !queue_cmd(e, FUR_CMD_REGISTER, 0))
		return;                 /* the INIT reply not yet processed */
	if (res != -ENOTCONN && res != -ECONNABORTED && !u.refused_logged) {
		u.refused_logged = true;
		mlog_warn("io_uring: the kernel refused an entry (queue %u): %s; "
			  "its requests go through /dev/fuse", e->qid, strerror(-res));
	}
}

/* The reply in @iov (after the header) into @e, and @e back to the
 * kernel: with the reader's next wait, or through u.commits.  A reply too
 * large for the payload becomes EIO. */
static void commit(struct fur_ent *e, uint64_t unique, int32_t error,
		   const struct iovec *iov, int count)
{
	struct fuse_out_header *oh = (struct fuse_out_header *)e->hdr.in_out;
	size_t off = 0;
	bool wake;

	for (int i = 0; i < count && !error; i++) {
		if (iov[i].iov_len > e->payload_len - off) {
			error = -EIO;
			break;
		}
		memcpy(e->payload + off, iov[i].iov_base, iov[i].iov_len);
		off += iov[i].iov_len;
	}
	if (error)
		off = 0;
	*oh = (struct fuse_out_header){ (uint32_t)(sizeof(*oh) + off), error, unique };
	e->hdr.ent.payload_sz = (uint32_t)off;
	pthread_mutex_lock(&u.lock);
	e->ours = false;
	wake = !is_reader && !u.commits;
	if (!is_reader) {
		e->next = u.commits;
		u.commits = e;
	}
	pthread_mutex_unlock(&u.lock);
	if (is_reader && queue_cmd(e, FUR_CMD_COMMIT_AND_FETCH, unique))
		mlog_warn("io_uring: request %" PRIu64 " not answered", unique);
	if (wake && eventfd_write(u.efd, 1))
		mlog_warn("io_uring: the reader not woken: %s", strerror(errno));
}

/* On the reader: the replies of threads that handed the role over. */
static void take_commits(void)
{
	struct fur_ent *e;

	pthread_mutex_lock(&u.lock);
	e = u.commits;
	u.commits = NULL;
	pthread_mutex_unlock(&u.lock);
	for (; e; e = e->next) {
		uint64_t unique = ((struct fuse_out_header *)e->hdr.in_out)->unique;

		if (queue_cmd(e, FUR_CMD_COMMIT_AND_FETCH, unique))
			mlog_warn("io_uring: request %" PRIu64 " not answered", unique);
	}
}

/*
 * The request in @e, rebuilt in @buf as /dev/fuse gives it: the header,
 * then the argument header (its length is what the header's total leaves
 * after the payload), then the payload.  Returns its length, or 0 when
 * nothing is for libfuse: a request too large for @buf, answered as
 * /dev/fuse answers it; the answer to a retrieve, which gets no reply.
 * A forget the kernel forced gets none from libfuse either: its entry
 * goes back at once.
 */
static ssize_t deliver(struct fur_ent *e, void *buf, size_t len)
{
	const struct fuse_in_header *in = (const void *)e->hdr.in_out;
	uint32_t psz = e->hdr.ent.payload_sz;
	uint64_t unique = in->unique;
	size_t h;

	if (psz > e->payload_len || in->len < sizeof(*in) + psz ||
	    in->len - sizeof(*in) - psz > FUR_OP_SZ) {
		mlog_warn("io_uring: a request of %u bytes (payload %u) does not "
			  "fit its entry", in->len, psz);
		commit(e, unique, -EIO, NULL, 0);
		return 0;
	}
	if (in->len > len) {
		commit(e, unique, in->opcode == FUSE_SETXATTR ? -E2BIG : -EIO, NULL, 0);
		return 0;
	}
	h = in->len - sizeof(*in) - psz;
	memcpy(buf, in, sizeof(*in));
	memcpy((char *)buf + sizeof(*in), e->hdr.op_in, h);
	memcpy((char *)buf + sizeof(*in) + h, e->payload, psz);
	atomic_fetch_add(&u.ring_requests, 1);
	if (in->opcode == FUSE_FORGET || in->opcode == FUSE_NOTIFY_REPLY) {
		bool forget = in->opcode == FUSE_FORGET;

		commit(e, unique, 0, NULL, 0);
		return forget ? (ssize_t)(sizeof(struct fuse_in_header) + h + psz) : 0;
	}
	pthread_mutex_lock(&u.lock);
	e->unique = unique;
	e->ours = true;
	pthread_mutex_unlock(&u.lock);
	return (ssize_t)(sizeof(*in) + h + psz);
}

/* A request that came through /dev/fuse; the INIT request is looked at. */
static ssize_t read_dev(int fd, void *buf, size_t len)
{
	ssize_t n = read(fd, buf, len);
	const struct fuse_in_header *in = buf;

	if (n >= (ssize_t)(sizeof(*in) + sizeof(struct fuse_init_in)) &&
	    in->opcode == FUSE_INIT) {
		const struct fuse_init_in *arg = (const void *)(in + 1);

		u.init_unique = in->unique;
		u.init_flags = arg->flags;
		u.offered = u.wanted && (arg->flags & FUSE_INIT_EXT) &&
			    (arg->flags2 & FUR_OVER_IO_URING_FLAGS2);
		if (u.wanted && !u.offered)
			mlog_warn("io_uring: the kernel does not offer FUSE over "
				  "io_uring (it needs Linux 6.14 or later and "
				  "/sys/module/fuse/parameters/enable_uring set to Y); "
				  "requests go through /dev/fuse");
	}
	if (n > 0)
		atomic_fetch_add(&u.dev_requests, 1);
	return n;
}

/* One completion: a request for libfuse (its length), 0 for none, or
 * -1 with errno set. */
static ssize_t complete(struct io_uring_cqe *cqe, int fd, void *buf, size_t len)
{
	uint64_t tag = io_uring_cqe_get_data64(cqe);
	int res = cqe->res;

	io_uring_cqe_seen(&u.ring, cqe);
	if (tag == POLL_TAG) {
		ssize_t n = read_dev(fd, buf, len);    /* readable, or gone */
		int saved = errno;

		/* Polled again unless the mount is gone (ENODEV). */
		if ((n > 0 || saved != ENODEV) && queue_poll())
			mlog_warn("io_uring: /dev/fuse no longer polled");
		errno = saved;
		return n;
	}
	if (tag == EVENT_TAG) {
		if (res < 0 || queue_event_read())
			mlog_warn("io_uring: the eventfd no longer read");
		take_commits();
		return 0;
	}
	if (res < 0) {
		refused((struct fur_ent *)(uintptr_t)tag, res);
		return 0;
	}
	return deliver((struct fur_ent *)(uintptr_t)tag, buf, len);
}

static ssize_t fur_read(int fd, void *buf, size_t len, void *userdata)
{
	(void)userdata;
	is_reader = true;
	if (!u.active)
		return read_dev(fd, buf, len);
	for (;;) {
		struct __kernel_timespec ts = { 0, WAIT_MS * 1000000LL };
		struct io_uring_cqe *cqe = NULL;
		ssize_t n;
		int err;

		take_commits();
		/* A wait that submitted something and then timed out returns
		 * the count it submitted, with no completion. */
		err = io_uring_submit_and_wait_timeout(&u.ring, &cqe, 1, &ts, NULL);
		pthread_testcancel();
		if (err == -ETIME || err == -EINTR || (err >= 0 && !cqe))
			continue;
		if (err == -EAGAIN || err == -EBUSY) {
			usleep(1000);    /* the kernel short of room: reap, retry */
			continue;
		}
		if (err < 0) {
			errno = -err;
			return -1;
		}
		n = complete(cqe, fd, buf, len);
		if (n)
			return n;
	}
}

/* The entry serving request @unique, if one does. */
static struct fur_ent *find_ent(uint64_t unique)
{
	struct fur_ent *e = NULL;

	pthread_mutex_lock(&u.lock);
	for (unsigned int i = 0; i < u.nents && !e; i++)
		if (u.ents[i].ours && u.ents[i].unique == unique)
			e = &u.ents[i];
	pthread_mutex_unlock(&u.lock);
	return e;
}

/* The INIT reply takes what the kernel offered and libfuse does not know. */
static void patch_init(struct iovec *iov, int count)
{
	struct fuse_init_out *out;

	if (count < 2 || iov[1].iov_len < sizeof(*out))
		return;
	out = iov[1].iov_base;
	if (u.init_flags & FUSE_HANDLE_KILLPRIV_V2)
		out->flags |= FUSE_HANDLE_KILLPRIV_V2;
	if (u.offered && (out->flags & FUSE_INIT_EXT))
		out->flags2 |= FUR_OVER_IO_URING_FLAGS2;
}

/* The INIT reply is in: from now on the reader waits on the ring, which
 * polls /dev/fuse too, and the entries go to the kernel. */
static void activate(const struct fuse_init_out *out)
{
	int err = queue_poll();

	if (!err)
		err = queue_event_read();
	if (err) {
		mlog_warn("io_uring: not used (%s); requests go through /dev/fuse",
			  strerror(-err));
		return;
	}
	u.active = true;
	register_entries(out);
}

static ssize_t fur_writev(int fd, struct iovec *iov, int count, void *userdata)
{
	const struct fuse_out_header *oh = iov[0].iov_base;
	bool init = oh->unique && oh->unique == u.init_unique;
	struct fur_ent *e;
	ssize_t n;

	(void)userdata;
	if (u.active && oh->unique && (e = find_ent(oh->unique))) {
		commit(e, oh->unique, oh->error, iov + 1, count - 1);
		return (ssize_t)oh->len;
	}
	if (init && !oh->error)
		patch_init(iov, count);
	n = writev(fd, iov, count);
	if (init && u.offered && n > 0 && count >= 2)
		activate(iov[1].iov_base);
	if (init)
		u.init_unique = 0;
	return n;
}

/* The ring, if -o io_uring asked for one; without it, /dev/fuse. */
static void make_ring(void)
{
	struct io_uring_params p = { .flags = IORING_SETUP_SQE128 };
	int err;

	u.efd = eventfd(0, EFD_CLOEXEC);
	err = u.efd < 0 ? -errno : io_uring_queue_init_params(RING_DEPTH, &u.ring, &p);
	if (!err)
		return;
	mlog_warn("io_uring: no ring (%s); requests go through /dev/fuse",
		  strerror(-err));
	if (u.efd >= 0)
		close(u.efd);
	u.efd = -1;
	u.wanted = false;
}

int mfs_fuse_transport_attach(struct fuse_session *se)
{
	static const struct fuse_custom_io io = {
		.read = fur_read,
		.writev = fur_writev,
	};
	int err;

	u.fd = fuse_session_fd(se);
	if (u.wanted)
		make_ring();
	err = fuse_session_custom_io(se, &io, u.fd);
	if (err) {
		mlog_warn("the FUSE session refused its transport (%s); requests go "
			  "through libfuse's own", strerror(-err));
		mfs_fuse_transport_detach();
	}
	return err;
}

void mfs_fuse_transport_detach(void)
{
	if (!u.wanted)
		return;
	io_uring_queue_exit(&u.ring);
	for (unsigned int i = 0; i < u.nents; i++)
		munmap(u.ents[i].payload, u.ents[i].payload_len);
	free(u.ents);
	u.ents = NULL;
	u.nents = 0;
	close(u.efd);
	u.efd = -1;
	u.active = u.wanted = false;
}
