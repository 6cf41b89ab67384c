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
 * The kernel gives a request to the queue of the CPU its caller runs on,
 * and copies it into an entry in the context of the thread that last
 * submitted the entry's command (task work).  So each queue's entries
 * sit on a ring of their own (queues beyond MAX_RINGS share them, queue q
 * on ring q % nrings), read by a thread of its own pinned to that CPU:
 * the loop (loop.c) keeps one reader per ring, and a reader that served
 * its request reads the next one.  A request thus wakes a thread on its
 * caller's CPU, which serves it there while the caller waits, and its
 * reply's commit waits in the ring's submission queue and goes in with
 * the reader's next wait for a completion: one system call a request.
 * The reader alone submits to its ring.  A thread that handed the role
 * over (mfs_fuse_uring_handover) and then replies leaves its entry on
 * the ring's commits and wakes the ring's reader through an eventfd the
 * ring reads.
 *
 * read() waits on the calling reader's ring and rebuilds the request as
 * /dev/fuse would have given it: its header, its argument header (op_in)
 * and the payload.  writev() of a reply finds the entry by the request's
 * unique id and commits it; any other message (the INIT reply,
 * notifications, the reply to a request that came through /dev/fuse, an
 * interrupt's) goes to /dev/fuse as before.  /dev/fuse stays in use:
 * INIT, forgets, interrupts and requests sent before every queue had an
 * entry come through it, and it says when the mount is gone, so the
 * first ring also polls it.
 *
 * Lock order: u.lock (the rings' commits, the entries' ownership) is a
 * leaf.  A ring's submission queue belongs to the thread reading it: one
 * at a time (loop.c).
 */
#include "fuse_ops.h"

#include <errno.h>
#include <inttypes.h>
#include <liburing.h>
#include <linux/fuse.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
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
#define MAX_RINGS 16                /* readers; queues beyond share them */
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
	struct fur_ent *next;       /* on its ring's commits */
};

/* A ring, its reader's: the entries of the queues q with q % nrings its
 * index. */
struct fur_ring {
	struct io_uring ring;
	bool made;
	bool armed;                 /* its entries registered, its reads queued */
	int efd;                    /* wakes the reader for commits */
	uint64_t efd_buf;
	struct fur_ent *commits;    /* replies of threads not reading (u.lock) */
	_Atomic uint64_t requests;  /* that came over it */
};

static struct {
	bool wanted;                /* -o io_uring */
	bool offered;               /* the INIT request offered the transport */
	atomic_bool active;         /* the rings carry requests */
	int fd;                     /* /dev/fuse */
	uint64_t init_unique;
	uint32_t init_flags;        /* what the kernel's INIT offered */
	unsigned int nqueues;       /* the kernel's: its possible CPUs */
	unsigned int nrings;
	struct fur_ring rings[MAX_RINGS];
	struct fur_ent *ents;
	unsigned int nents;
	bool refused_logged;
	pthread_mutex_t lock;
	_Atomic uint64_t ring_requests, dev_requests;
} u = { .lock = PTHREAD_MUTEX_INITIALIZER, .fd = -1 };

/* The role this thread reads for (loop.c), the ring it reads while it
 * holds it, and the ring its CPU mask is set for. */
static __thread unsigned int my_role;
static __thread struct fur_ring *my_ring;
static __thread struct fur_ring *pinned_to;

void mfs_fuse_uring_want(bool on)
{
	u.wanted = on;
}

unsigned int mfs_fuse_transport_roles(void)
{
	return atomic_load_explicit(&u.active, memory_order_acquire) ? u.nrings : 1;
}

void mfs_fuse_transport_take(unsigned int role)
{
	my_role = role;
}

void mfs_fuse_uring_handover(void)
{
	my_ring = NULL;
}

void mfs_fuse_uring_stats(struct mfs_fuse_uring_stats *st)
{
	st->ring_requests = atomic_load(&u.ring_requests);
	st->dev_requests = atomic_load(&u.dev_requests);
	st->rings = atomic_load(&u.active) ? u.nrings : 0;
	st->rings_used = 0;
	for (unsigned int i = 0; i < st->rings; i++)
		st->rings_used += atomic_load(&u.rings[i].requests) != 0;
}

static struct fur_ring *ring_of(const struct fur_ent *e)
{
	return &u.rings[e->qid % u.nrings];
}

/* A submission queue entry, the queue submitted first if it is full. */
static struct io_uring_sqe *get_sqe(struct fur_ring *r)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&r->ring);

	if (!sqe) {
		io_uring_submit(&r->ring);
		sqe = io_uring_get_sqe(&r->ring);
	}
	return sqe;
}

/* Queue @e's command @op: it goes in with its reader's next wait. */
static int queue_cmd(struct fur_ent *e, uint32_t op, uint64_t commit_id)
{
	struct io_uring_sqe *sqe = get_sqe(ring_of(e));
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

static int queue_poll(struct fur_ring *r)
{
	struct io_uring_sqe *sqe = get_sqe(r);

	if (!sqe)
		return -EBUSY;
	io_uring_prep_poll_add(sqe, u.fd, POLLIN);
	io_uring_sqe_set_data64(sqe, POLL_TAG);
	return 0;
}

static int queue_event_read(struct fur_ring *r)
{
	struct io_uring_sqe *sqe = get_sqe(r);

	if (!sqe)
		return -EBUSY;
	io_uring_prep_read(sqe, r->efd, &r->efd_buf, sizeof(r->efd_buf), 0);
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

/* The calling reader runs on the CPUs of its ring's queues, where their
 * requests' callers run.  A mask the system refuses (CPUs outside the
 * daemon's cpuset) leaves the thread where it may run. */
static void pin(struct fur_ring *r)
{
	unsigned int idx = (unsigned int)(r - u.rings);
	cpu_set_t set;

	if (pinned_to == r)
		return;
	pinned_to = r;
	CPU_ZERO(&set);
	for (unsigned int q = idx; q < u.nqueues && q < CPU_SETSIZE; q += u.nrings)
		CPU_SET(q, &set);
	pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

/* The entries, each with a payload of @payload bytes (mapped, so only the
 * pages a request touches take memory). */
static int make_entries(size_t payload)
{
	u.ents = calloc((size_t)u.nqueues * ENTS_PER_QUEUE, sizeof(*u.ents));
	if (!u.ents)
		return -ENOMEM;
	for (unsigned int i = 0; i < u.nqueues * ENTS_PER_QUEUE; i++) {
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

/* On a ring's reader, the first time it reads: the ring's entries go to
 * the kernel with its next wait, from the thread that will be woken for
 * their requests, and the first ring polls /dev/fuse.  An entry the
 * kernel refuses comes back with an error (refused()). */
static int arm(struct fur_ring *r)
{
	int err = r == &u.rings[0] ? queue_poll(r) : 0;

	if (!err)
		err = queue_event_read(r);
	for (unsigned int i = 0; !err && i < u.nents; i++)
		if (ring_of(&u.ents[i]) == r)
			err = queue_cmd(&u.ents[i], FUR_CMD_REGISTER, 0);
	if (err)
		mlog_warn("io_uring: ring %u not armed: %s", (unsigned int)(r - u.rings),
			  strerror(-err));
	r->armed = true;
	return err;
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
 * kernel: with its ring's reader's next wait, through the ring's commits
 * if this thread does not read that ring.  A reply too large for the
 * payload becomes EIO. */
static void commit(struct fur_ent *e, uint64_t unique, int32_t error,
		   const struct iovec *iov, int count)
{
	struct fuse_out_header *oh = (struct fuse_out_header *)e->hdr.in_out;
	struct fur_ring *r = ring_of(e);
	bool mine = my_ring == r;
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
	wake = !mine && !r->commits;
	if (!mine) {
		e->next = r->commits;
		r->commits = e;
	}
	pthread_mutex_unlock(&u.lock);
	if (mine && queue_cmd(e, FUR_CMD_COMMIT_AND_FETCH, unique))
		mlog_warn("io_uring: request %" PRIu64 " not answered", unique);
	if (wake && eventfd_write(r->efd, 1))
		mlog_warn("io_uring: the reader not woken: %s", strerror(errno));
}

/* On @r's reader: the replies of threads that handed the role over. */
static void take_commits(struct fur_ring *r)
{
	struct fur_ent *e;

	pthread_mutex_lock(&u.lock);
	e = r->commits;
	r->commits = NULL;
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
	atomic_fetch_add(&ring_of(e)->requests, 1);
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
static ssize_t complete(struct fur_ring *r, struct io_uring_cqe *cqe, int fd,
			void *buf, size_t len)
{
	uint64_t tag = io_uring_cqe_get_data64(cqe);
	int res = cqe->res;

	io_uring_cqe_seen(&r->ring, cqe);
	if (tag == POLL_TAG) {
		ssize_t n = read_dev(fd, buf, len);    /* readable, or gone */
		int saved = errno;

		/* Polled again unless the mount is gone (ENODEV). */
		if ((n > 0 || saved != ENODEV) && queue_poll(r))
			mlog_warn("io_uring: /dev/fuse no longer polled");
		errno = saved;
		return n;
	}
	if (tag == EVENT_TAG) {
		if (res < 0 || queue_event_read(r))
			mlog_warn("io_uring: the eventfd no longer read");
		take_commits(r);
		return 0;
	}
	if (res < 0) {
		refused((struct fur_ent *)(uintptr_t)tag, res);
		return 0;
	}
	return deliver((struct fur_ent *)(uintptr_t)tag, buf, len);
}

/* Read for the role this thread took: /dev/fuse until the rings carry
 * requests, then the role's ring. */
static ssize_t fur_read(int fd, void *buf, size_t len, void *userdata)
{
	struct fur_ring *r;

	(void)userdata;
	if (!atomic_load_explicit(&u.active, memory_order_acquire))
		return read_dev(fd, buf, len);
	r = my_ring = &u.rings[my_role % u.nrings];
	pin(r);
	if (!r->armed)
		arm(r);
	for (;;) {
		struct __kernel_timespec ts = { 0, WAIT_MS * 1000000LL };
		struct io_uring_cqe *cqe = NULL;
		ssize_t n;
		int err;

		take_commits(r);
		/* A wait that submitted something and then timed out returns
		 * the count it submitted, with no completion. */
		err = io_uring_submit_and_wait_timeout(&r->ring, &cqe, 1, &ts, NULL);
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
		n = complete(r, cqe, fd, buf, len);
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

/* The INIT reply is in: from now on the loop keeps a reader on each ring
 * (mfs_fuse_transport_roles), which registers its entries as it starts
 * reading, and the first ring polls /dev/fuse. */
static void activate(const struct fuse_init_out *out)
{
	size_t pages = (out->flags & FUSE_MAX_PAGES) ? out->max_pages : 32;
	size_t payload = UT_MAX(UT_MAX((size_t)8192, (size_t)out->max_write),
				pages * 4096);
	int err = make_entries(payload);

	if (err) {
		/* The kernel holds requests back until every queue has an
		 * entry: nothing would be served. */
		mlog_err("io_uring: no entries (%s); the mount cannot serve requests",
			 strerror(-err));
		return;
	}
	atomic_store_explicit(&u.active, true, memory_order_release);
}

static ssize_t fur_writev(int fd, struct iovec *iov, int count, void *userdata)
{
	const struct fuse_out_header *oh = iov[0].iov_base;
	bool init = oh->unique && oh->unique == u.init_unique;
	struct fur_ent *e;
	ssize_t n;

	(void)userdata;
	if (atomic_load_explicit(&u.active, memory_order_acquire) && oh->unique &&
	    (e = find_ent(oh->unique))) {
		commit(e, oh->unique, oh->error, iov + 1, count - 1);
		return (ssize_t)oh->len;
	}
	if (init && !oh->error)
		patch_init(iov, count);
	n = writev(fd, iov, count);
	if (init && n > 0 && !oh->error)
		mfs_fuse_init_replied();
	if (init && u.offered && n > 0 && count >= 2)
		activate(iov[1].iov_base);
	if (init)
		u.init_unique = 0;
	return n;
}

static void unmake_rings(void)
{
	for (unsigned int i = 0; i < u.nrings; i++) {
		struct fur_ring *r = &u.rings[i];

		if (r->made)
			io_uring_queue_exit(&r->ring);
		if (r->efd >= 0)
			close(r->efd);
		*r = (struct fur_ring){ .efd = -1 };
	}
	u.nrings = 0;
}

/* The rings, if -o io_uring asked for them; without them, /dev/fuse. */
static void make_rings(void)
{
	int err = 0;

	u.nqueues = nr_queues();
	u.nrings = UT_MIN(u.nqueues, MAX_RINGS);
	for (unsigned int i = 0; i < u.nrings; i++)
		u.rings[i].efd = -1;
	for (unsigned int i = 0; i < u.nrings && !err; i++) {
		struct io_uring_params p = { .flags = IORING_SETUP_SQE128 };
		struct fur_ring *r = &u.rings[i];

		r->efd = eventfd(0, EFD_CLOEXEC);
		err = r->efd < 0 ? -errno :
		      io_uring_queue_init_params(RING_DEPTH, &r->ring, &p);
		r->made = !err;
	}
	if (!err)
		return;
	mlog_warn("io_uring: no ring (%s); requests go through /dev/fuse",
		  strerror(-err));
	unmake_rings();
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
		make_rings();
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
	unmake_rings();
	for (unsigned int i = 0; i < u.nents; i++)
		munmap(u.ents[i].payload, u.ents[i].payload_len);
	free(u.ents);
	u.ents = NULL;
	u.nents = 0;
	atomic_store(&u.active, false);
	u.wanted = false;
}
