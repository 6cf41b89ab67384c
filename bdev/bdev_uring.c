/*
 * bdev_uring.c - the io_uring backend.
 *
 * One ring per device, and one thread of the device that lives as long as
 * the ring.  The kernel ties the work of a request (io-wq workers, retries
 * run as task work) to the thread that submitted it, and cancels it when
 * that thread exits: -ECANCELED or -EFAULT instead of the I/O.  A FUSE
 * daemon's worker threads come and go with the load, so a thread puts in
 * the ring only requests it will wait for itself: a thread in
 * bdev_submit_wait() submits and reaps its own batch (no thread switch for
 * a synchronous write or an fsync), and every other request -- one nobody
 * waits for, a continuation of a short transfer that another thread
 * reaped, one its owner left waiting for a slot -- is submitted by the
 * device thread, which the others wake through the eventfd.
 *
 * Completions are reaped under u->cq_lock, by whoever holds it: a thread
 * waiting in bdev_submit_wait() reaps them itself (the kernel wakes it
 * directly, as for a plain system call), and the device thread, woken
 * through the eventfd, reaps the ones nobody waits for.  Reaping continues
 * short transfers in the same ring slot and calls end_io.
 *
 * Invariants (u->lock protects the submission side, inflight, the waiting
 * list and the redo list; u->cq_lock the completion queue):
 *   1. inflight <= depth <= CQ size, so the completion queue never
 *      overflows; every ring entry counts, and so does a continuation on
 *      the redo list (it keeps its slot).
 *   2. Nothing stays in the submission queue once u->lock is released,
 *      so io_uring_get_sqe() always has room for inflight <= depth.
 *   3. Requests wait for a ring slot, in order, on a list linked through
 *      req->next.  A thread that leaves u->lock with work only the device
 *      thread may do (the list's head could go in, or a continuation
 *      waits on the redo list) wakes it; otherwise something is in flight
 *      and whoever reaps it looks again.  Reaping moves the list into the
 *      ring once at least half of it is free, so that requests go in
 *      batches rather than one system call each.
 *   4. A flush (a request without segments) enters the ring only when
 *      nothing is in flight: everything submitted before it has completed
 *      (short transfers included, they keep their slot until done), so the
 *      fsync covers it.  Its owner puts it in as the last of them
 *      completes, without a trip to another thread.
 *   5. The device thread never waits for u->cq_lock: its holder may be
 *      waiting for requests that only the device thread may submit.  It
 *      raises cq_wanted instead, and the holder wakes it on leaving.
 */
#include "bdev_i.h"

#include "util.h"

#include <assert.h>
#include <errno.h>
#include <liburing.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#define REAP_BATCH 64
#define MAX_PIECE ((size_t)1 << 30)

struct uring_bdev {
	struct bdev bd;
	struct io_uring ring;
	pthread_t thread;          /* the device thread */
	unsigned int depth;
	pthread_mutex_t lock;
	pthread_mutex_t cq_lock;   /* one reaper at a time */
	int efd;                   /* signalled by completions and wake-ups */
	pthread_cond_t idle;       /* signalled when nothing is in flight */
	unsigned int inflight;
	struct bdev_req *head, *tail;  /* waiting for a ring slot */
	struct bdev_req *redo;     /* continuations for the device thread */
	atomic_bool cq_wanted;     /* the device thread found cq_lock taken */
	bool stopping;
};

/* A completion, copied out of the ring so that its slot is free at once. */
struct uring_done {
	struct bdev_req *req;
	int res;
};

static struct uring_bdev *to_uring(struct bdev *bd)
{
	return ut_container_of(bd, struct uring_bdev, bd);
}

/*
 * Who submits, for uring_mine(): the device itself in its own thread (an
 * end_io it runs may submit), the waiter of a thread in
 * bdev_submit_wait(), or NULL for a thread that does not wait.  The
 * kernel's rule is about the submitting thread, so the caller's identity
 * is what decides; the device keeps its thread's (pthread_create stored
 * it before any request could reach the device).
 */
static const void *uring_self(const struct uring_bdev *u, const struct bdev_waiter *w)
{
	return pthread_equal(pthread_self(), u->thread) ? (const void *)u :
							  (const void *)w;
}

/* Whether @self may hand @req to the kernel: the request's work dies with
 * the thread that does, and only the device thread outlives every one. */
static bool uring_mine(const struct uring_bdev *u, const void *self,
		       const struct bdev_req *req)
{
	return self == (const void *)u || (self && self == req->waiter);
}

static void uring_wake(struct uring_bdev *u)
{
	if (eventfd_write(u->efd, 1)) {
		mlog_err("%s: waking the device thread failed: %s", u->bd.path,
			 strerror(errno));
		abort();
	}
}

/*
 * The length of the fsync that covers bd->flush_end.  The kernel syncs
 * bytes off .. off + len of the file, that last byte included
 * (vfs_fsync_range's end is inclusive), so [0, end) is length end - 1;
 * 0 is the whole file.  The field has 32 bits: a longer range is cut to
 * 4 GiB on a direct device, whose own writes never sit in the kernel's
 * cache (only the pages of a shared mapping do, and those after the end
 * are not ours), and is the whole file on a buffered one.
 */
static unsigned int uring_flush_len(const struct bdev *bd)
{
	if (!bd->flush_end)
		return 0;
	if (bd->flush_end - 1 <= UINT32_MAX)
		return (unsigned int)(bd->flush_end - 1);
	return bd->direct ? UINT32_MAX : 0;
}

/* A request without segments is an internal fsync. */
static void uring_prep(struct uring_bdev *u, struct bdev_req *req)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&u->ring);
	bool rd = req->op == BDEV_OP_READ;
	int fd = bdev_req_fd(&u->bd, req);
	struct bdev_rest r;
	unsigned int len;

	assert(sqe);  /* invariants 1 and 2 */
	if (req->iovcnt == 0) {
		io_uring_prep_fsync(sqe, fd, IORING_FSYNC_DATASYNC);
		sqe->off = 0;
		sqe->len = uring_flush_len(&u->bd);
	} else {
		bdev_req_rest(req, &r);
		/* The kernel moves less than 2 GiB at once; the rest continues. */
		len = (unsigned int)UT_MIN(r.iov->iov_len, MAX_PIECE);
		if (r.cnt == 1 && rd)
			io_uring_prep_read(sqe, fd, r.iov->iov_base, len, r.off);
		else if (r.cnt == 1)
			io_uring_prep_write(sqe, fd, r.iov->iov_base, len, r.off);
		else if (rd)
			io_uring_prep_readv(sqe, fd, r.iov, r.cnt, r.off);
		else
			io_uring_prep_writev(sqe, fd, r.iov, r.cnt, r.off);
	}
	io_uring_sqe_set_data(sqe, req);
}

/* Hand everything queued to the kernel (invariant 2).  The ring refusing
 * entries we formatted is a programming error, not an I/O error. */
static void uring_push(struct uring_bdev *u)
{
	int ret;

	while (io_uring_sq_ready(&u->ring)) {
		ret = io_uring_submit(&u->ring);
		if (ret > 0) {
			bdev_stat_add(&u->bd, submits, 1);
		} else if (ret == 0 || ret == -EINTR || ret == -EAGAIN || ret == -EBUSY) {
			sched_yield();
		} else {
			mlog_err("%s: io_uring_submit failed: %s", u->bd.path, strerror(-ret));
			abort();
		}
	}
}

/* Whether the head of the waiting list may enter the ring now.  A flush
 * goes in only when nothing is in flight (invariant 4), so it covers every
 * request queued before it; the ones behind it wait their turn.  With
 * @batching, only once half of the ring is free (invariant 3). */
static bool uring_head_fits(const struct uring_bdev *u, bool batching)
{
	unsigned int free = u->depth - u->inflight;

	if (!u->head || !free || (u->head->iovcnt == 0 && u->inflight))
		return false;
	return !batching || !u->inflight || free >= UT_MAX(u->depth / 2, 1u);
}

/* Move waiting requests that @self may submit into free ring slots, in
 * order: a request @self may not submit stops it. */
static void uring_fill(struct uring_bdev *u, const void *self)
{
	struct bdev_req *req;

	while (uring_head_fits(u, false) && uring_mine(u, self, u->head)) {
		req = u->head;
		u->head = req->next;
		if (!u->head)
			u->tail = NULL;
		req->next = NULL;
		uring_prep(u, req);
		u->inflight++;
	}
}

/* Continuations other threads reaped (device thread; they hold their slots). */
static void uring_redo(struct uring_bdev *u)
{
	struct bdev_req *req;

	while ((req = u->redo) != NULL) {
		u->redo = req->next;
		req->next = NULL;
		uring_prep(u, req);
	}
}

/* Whether the device thread has work no other thread may do (u->lock held). */
static bool uring_needs_device(const struct uring_bdev *u, bool batching)
{
	return u->redo || uring_head_fits(u, batching);
}

static int uring_submit(struct bdev *bd, struct bdev_req **reqs, unsigned int n)
{
	struct uring_bdev *u = to_uring(bd);
	const void *self = uring_self(u, reqs[0]->waiter);
	bool wake;

	pthread_mutex_lock(&u->lock);
	for (unsigned int i = 0; i < n; i++) {
		reqs[i]->next = NULL;
		if (u->tail)
			u->tail->next = reqs[i];
		else
			u->head = reqs[i];
		u->tail = reqs[i];
	}
	uring_fill(u, self);
	uring_push(u);
	wake = self != (const void *)u && uring_needs_device(u, false);
	pthread_mutex_unlock(&u->lock);
	if (wake)
		uring_wake(u);
	return 0;
}

/* ---- reaping ------------------------------------------------------------ */

/* Account for one completion; false if the request goes on. */
static bool uring_complete(struct uring_bdev *u, struct bdev_req *req, int res)
{
	if (res == -EAGAIN || res == -EINTR) {
		bdev_stat_add(&u->bd, retries, 1);
		return false;
	}
	if (req->iovcnt == 0 || res < 0) {
		req->result = res < 0 ? res : 0;
		return true;
	}
	if (bdev_xfer_ended(&u->bd, req, (size_t)res)) {
		req->result = -EIO;
		return true;
	}
	req->done += (size_t)res;
	if (req->done < bdev_req_len(req)) {
		bdev_stat_add(&u->bd, retries, 1);
		return false;
	}
	req->result = 0;
	return true;
}

/* Copy up to REAP_BATCH completions out of the ring (cq_lock held). */
static unsigned int uring_peek(struct uring_bdev *u, struct uring_done *got)
{
	struct io_uring_cqe *cqes[REAP_BATCH];
	unsigned int n = io_uring_peek_batch_cqe(&u->ring, cqes, REAP_BATCH);

	for (unsigned int i = 0; i < n; i++) {
		got[i].req = io_uring_cqe_get_data(cqes[i]);
		got[i].res = cqes[i]->res;
	}
	io_uring_cq_advance(&u->ring, n);
	return n;
}

/* Continue @req in its slot if @self may, else leave that to the device. */
static void uring_continue(struct uring_bdev *u, const void *self, struct bdev_req *req)
{
	if (uring_mine(u, self, req)) {
		uring_prep(u, req);
	} else {
		req->next = u->redo;
		u->redo = req;
	}
}

/*
 * Settle a batch of completions under the lock: continue unfinished
 * requests, refill the ring with what @self may submit, wake the device
 * thread for the rest, and collect finished requests into @fin.
 * Returns how many finished.
 */
static unsigned int uring_settle(struct uring_bdev *u, const void *self,
				 struct uring_done *got, unsigned int n,
				 struct bdev_req **fin)
{
	unsigned int nfin = 0;
	bool wake;

	pthread_mutex_lock(&u->lock);
	for (unsigned int i = 0; i < n; i++) {
		struct bdev_req *req = got[i].req;

		if (uring_complete(u, req, got[i].res)) {
			fin[nfin++] = req;
			u->inflight--;
		} else {
			uring_continue(u, self, req);
		}
	}
	if (self == (const void *)u)
		uring_redo(u);
	if (uring_head_fits(u, true))
		uring_fill(u, self);
	uring_push(u);
	if (!u->inflight && !u->head)
		pthread_cond_broadcast(&u->idle);
	wake = self != (const void *)u && uring_needs_device(u, true);
	pthread_mutex_unlock(&u->lock);
	if (wake)
		uring_wake(u);
	return nfin;
}

/* Settle everything the ring holds and run end_io (cq_lock held). */
static void uring_drain(struct uring_bdev *u, const void *self)
{
	struct uring_done got[REAP_BATCH];
	struct bdev_req *fin[REAP_BATCH];
	unsigned int n;

	while ((n = uring_peek(u, got)) != 0) {
		n = uring_settle(u, self, got, n, fin);
		for (unsigned int i = 0; i < n; i++)
			if (fin[i]->end_io)
				fin[i]->end_io(fin[i]);
	}
}

/* Submit what only the device thread may: continuations and the list. */
static void uring_service(struct uring_bdev *u)
{
	pthread_mutex_lock(&u->lock);
	uring_redo(u);
	uring_fill(u, u);
	uring_push(u);
	pthread_mutex_unlock(&u->lock);
}

/* Reap unless a waiter is reaping (invariant 5). */
static void uring_try_drain(struct uring_bdev *u)
{
	atomic_store(&u->cq_wanted, true);
	if (pthread_mutex_trylock(&u->cq_lock))
		return;
	atomic_store(&u->cq_wanted, false);
	uring_drain(u, u);
	pthread_mutex_unlock(&u->cq_lock);
}

static void *uring_thread(void *arg)
{
	struct uring_bdev *u = arg;
	uint64_t count;
	bool stop;

	do {
		if (read(u->efd, &count, sizeof(count)) < 0 && errno != EINTR) {
			mlog_err("%s: reading the completion eventfd failed: %s",
				 u->bd.path, strerror(errno));
			abort();
		}
		uring_service(u);
		uring_try_drain(u);
		pthread_mutex_lock(&u->lock);
		stop = u->stopping && !u->inflight && !u->head;
		pthread_mutex_unlock(&u->lock);
	} while (!stop);
	return NULL;
}

/*
 * A synchronous submitter reaps for itself while its requests are out,
 * unless someone else is reaping: then that one delivers them.  Leaving,
 * it wakes the device thread if that found the completion queue taken.
 */
static void uring_wait(struct bdev *bd, struct bdev_waiter *w)
{
	struct uring_bdev *u = to_uring(bd);
	struct io_uring_cqe *cqe;
	int err;

	if (pthread_mutex_trylock(&u->cq_lock))
		return;
	/* The device thread need not wake while we reap: what arrives before
	 * the eventfd is on again is drained below, what arrives after wakes
	 * it. */
	io_uring_cq_eventfd_toggle(&u->ring, false);
	while (bdev_waiter_pending(w)) {
		ut_blocking();
		err = io_uring_wait_cqe(&u->ring, &cqe);
		if (err < 0 && err != -EINTR && err != -EAGAIN) {
			mlog_err("%s: io_uring_wait_cqe failed: %s", u->bd.path, strerror(-err));
			abort();
		}
		uring_drain(u, w);
	}
	io_uring_cq_eventfd_toggle(&u->ring, true);
	/* The kernel stores the tail, then reads the flag; we store the flag,
	 * then read the tail.  Without a full barrier between our two, both
	 * sides can read the old value: no eventfd signal and no completion
	 * seen, and the completion waits in the ring with nobody woken. */
	atomic_thread_fence(memory_order_seq_cst);
	uring_drain(u, w);
	pthread_mutex_unlock(&u->cq_lock);
	if (atomic_exchange(&u->cq_wanted, false))
		uring_wake(u);
}

/* ---- flush, close, setup ------------------------------------------------ */

static void uring_flush_done(struct bdev_req *req)
{
	bdev_waiter_done(req->private);
}

static int uring_flush(struct bdev *bd)
{
	struct bdev_req req, *r = &req;
	struct bdev_waiter w;

	bdev_req_init(&req, BDEV_OP_FLUSH, 0, NULL, 0);
	req.end_io = uring_flush_done;
	req.private = &w;
	req.waiter = &w;
	bdev_waiter_init(&w, 1);
	uring_submit(bd, &r, 1);
	uring_wait(bd, &w);
	bdev_waiter_wait(&w);
	return req.result;
}

/* Wait until nothing is in flight, then stop the device thread. */
static void uring_close(struct bdev *bd)
{
	struct uring_bdev *u = to_uring(bd);

	pthread_mutex_lock(&u->lock);
	while (u->inflight || u->head)
		ut_cond_wait(&u->idle, &u->lock);
	u->stopping = true;
	pthread_mutex_unlock(&u->lock);
	uring_wake(u);
	pthread_join(u->thread, NULL);

	io_uring_queue_exit(&u->ring);
	close(u->efd);
	pthread_cond_destroy(&u->idle);
	pthread_mutex_destroy(&u->cq_lock);
	pthread_mutex_destroy(&u->lock);
	bdev_file_close(&u->bd);
	free(u);
}

static const struct bdev_ops uring_ops = {
	.name = "io_uring",
	.submit = uring_submit,
	.flush = uring_flush,
	.close = uring_close,
	.wait = uring_wait,
};

/* Whether the kernel has every operation we use (5.6 and later). */
static int uring_probe(struct io_uring *ring)
{
	static const int ops[] = { IORING_OP_READ, IORING_OP_WRITE, IORING_OP_READV,
				   IORING_OP_WRITEV, IORING_OP_FSYNC };
	struct io_uring_probe *p = io_uring_get_probe_ring(ring);
	int err = 0;

	if (!p)
		return -EOPNOTSUPP;
	for (size_t i = 0; i < UT_ARRAY_SIZE(ops) && !err; i++)
		if (!io_uring_opcode_supported(p, ops[i]))
			err = -EOPNOTSUPP;
	io_uring_free_probe(p);
	return err;
}

/* Every completion bumps an eventfd, which is what the device thread
 * sleeps on. */
static int uring_eventfd(struct uring_bdev *u)
{
	int err;

	u->efd = eventfd(0, EFD_CLOEXEC);
	if (u->efd < 0)
		return -errno;
	err = io_uring_register_eventfd(&u->ring, u->efd);
	if (err) {
		close(u->efd);
		return err;
	}
	return 0;
}

/* The device thread blocks every signal: they belong to the application's
 * threads. */
static int uring_start_thread(struct uring_bdev *u)
{
	sigset_t all, old;
	int err;

	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	err = pthread_create(&u->thread, NULL, uring_thread, u);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return -err;
}

int bdev_uring_setup(struct bdev *file, unsigned int depth, struct bdev **out,
		     const char **what)
{
	struct uring_bdev *u = calloc(1, sizeof(*u));
	int err;

	*what = "calloc";
	if (!u)
		return -ENOMEM;
	*what = "io_uring_queue_init";
	err = io_uring_queue_init(depth, &u->ring, 0);
	if (err)
		goto out_free;
	*what = "io_uring opcode probe";
	err = uring_probe(&u->ring);
	if (err)
		goto out_ring;
	*what = "the completion eventfd";
	err = uring_eventfd(u);
	if (err)
		goto out_ring;
	u->depth = UT_MIN(depth, u->ring.cq.ring_entries);
	u->bd = *file;
	u->bd.ops = &uring_ops;
	pthread_mutex_init(&u->lock, NULL);
	pthread_mutex_init(&u->cq_lock, NULL);
	pthread_cond_init(&u->idle, NULL);
	*what = "pthread_create";
	err = uring_start_thread(u);
	if (!err) {
		*out = &u->bd;
		return 0;
	}
	pthread_cond_destroy(&u->idle);
	pthread_mutex_destroy(&u->cq_lock);
	pthread_mutex_destroy(&u->lock);
	close(u->efd);
out_ring:
	io_uring_queue_exit(&u->ring);
out_free:
	free(u);
	return err;
}
