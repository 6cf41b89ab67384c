/*
 * bdev_uring.c - the io_uring backend.
 *
 * One ring per device.  Submitters queue their requests under u->lock and
 * submit the whole batch with one io_uring_submit().  Completions are
 * reaped under u->cq_lock, by whoever holds it: a thread waiting in
 * bdev_submit_wait() reaps them itself (the kernel wakes it directly, as
 * for a plain system call), and a reaper thread, woken through an eventfd,
 * reaps the ones nobody waits for.  Reaping continues short transfers in
 * the same ring slot and calls end_io.
 *
 * Invariants (u->lock protects the submission side, inflight and the
 * waiting list; u->cq_lock the completion queue):
 *   1. inflight <= depth <= CQ size, so the completion queue never
 *      overflows; every ring entry (I/O, fsync, the stop NOP) counts.
 *   2. Nothing stays in the submission queue once u->lock is released,
 *      so io_uring_get_sqe() always has room for inflight <= depth.
 *   3. Requests that find the ring full wait, in order, on a list linked
 *      through req->next.  When the lock is released with requests
 *      waiting, something is in flight, so the reaper will wake and move
 *      them into the ring (once at least half of it is free, so that they
 *      go in batches rather than one system call each).
 *   4. A flush (a request without segments) enters the ring only when
 *      nothing is in flight: everything submitted before it has completed
 *      (short transfers included, they keep their slot until done), so the
 *      fsync covers it.  The reaper puts it in as the last of them
 *      completes, without a trip back to the submitter.
 */
#include "bdev_i.h"

#include "util.h"

#include <assert.h>
#include <errno.h>
#include <liburing.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#define REAP_BATCH 64
#define MAX_PIECE ((size_t)1 << 30)

struct uring_bdev {
	struct bdev bd;
	struct io_uring ring;
	pthread_t reaper;
	unsigned int depth;
	pthread_mutex_t lock;
	pthread_mutex_t cq_lock;   /* one reaper at a time */
	int efd;                   /* signalled by every completion */
	pthread_cond_t idle;       /* signalled when nothing is in flight */
	unsigned int inflight;
	struct bdev_req *head, *tail;  /* waiting for a ring slot */
	bool stopping;
};

/* A completion, copied out of the ring so that its slot is free at once. */
struct uring_done {
	struct bdev_req *req;      /* NULL: the NOP that stops the reaper */
	int res;
};

static struct uring_bdev *to_uring(struct bdev *bd)
{
	return ut_container_of(bd, struct uring_bdev, bd);
}

/* A request without segments is an internal fsync. */
static void uring_prep(struct uring_bdev *u, struct bdev_req *req)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&u->ring);
	bool rd = req->op == BDEV_OP_READ;
	int fd = u->bd.fd;
	struct bdev_rest r;
	unsigned int len;

	assert(sqe);  /* invariants 1 and 2 */
	if (req->iovcnt == 0) {
		io_uring_prep_fsync(sqe, fd, IORING_FSYNC_DATASYNC);
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

/*
 * Move waiting requests into free ring slots.  A flush goes in only when
 * nothing is in flight (invariant 4), so it covers every request queued
 * before it; the ones behind it wait their turn.
 */
static void uring_fill(struct uring_bdev *u)
{
	struct bdev_req *req;

	while (u->head && u->inflight < u->depth &&
	       !(u->head->iovcnt == 0 && u->inflight)) {
		req = u->head;
		u->head = req->next;
		if (!u->head)
			u->tail = NULL;
		req->next = NULL;
		uring_prep(u, req);
		u->inflight++;
	}
}

static int uring_submit(struct bdev *bd, struct bdev_req **reqs, unsigned int n)
{
	struct uring_bdev *u = to_uring(bd);

	pthread_mutex_lock(&u->lock);
	for (unsigned int i = 0; i < n; i++) {
		reqs[i]->next = NULL;
		if (u->tail)
			u->tail->next = reqs[i];
		else
			u->head = reqs[i];
		u->tail = reqs[i];
	}
	uring_fill(u);
	uring_push(u);
	pthread_mutex_unlock(&u->lock);
	return 0;
}

/* ---- the reaper --------------------------------------------------------- */

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

/*
 * Settle a batch of completions under the lock: continue unfinished
 * requests, refill the ring, and collect finished ones into @fin.
 * Returns how many finished.
 */
static unsigned int uring_settle(struct uring_bdev *u, struct uring_done *got,
				 unsigned int n, struct bdev_req **fin)
{
	unsigned int nfin = 0;

	pthread_mutex_lock(&u->lock);
	for (unsigned int i = 0; i < n; i++) {
		struct bdev_req *req = got[i].req;

		if (!req) {
			u->stopping = true;
			u->inflight--;
		} else if (uring_complete(u, req, got[i].res)) {
			fin[nfin++] = req;
			u->inflight--;
		} else {
			uring_prep(u, req);  /* keeps its slot */
		}
	}
	if (u->head && (u->depth - u->inflight >= UT_MAX(u->depth / 2, 1u) || !u->inflight))
		uring_fill(u);
	uring_push(u);
	if (!u->inflight && !u->head)
		pthread_cond_broadcast(&u->idle);
	pthread_mutex_unlock(&u->lock);
	return nfin;
}

/* Settle everything the ring holds and run end_io (cq_lock held). */
static void uring_drain(struct uring_bdev *u)
{
	struct uring_done got[REAP_BATCH];
	struct bdev_req *fin[REAP_BATCH];
	unsigned int n;

	while ((n = uring_peek(u, got)) != 0) {
		n = uring_settle(u, got, n, fin);
		for (unsigned int i = 0; i < n; i++)
			if (fin[i]->end_io)
				fin[i]->end_io(fin[i]);
	}
}

static void *uring_reaper(void *arg)
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
		pthread_mutex_lock(&u->cq_lock);
		uring_drain(u);
		pthread_mutex_unlock(&u->cq_lock);
		pthread_mutex_lock(&u->lock);
		stop = u->stopping && !u->inflight && !u->head;
		pthread_mutex_unlock(&u->lock);
	} while (!stop);
	return NULL;
}

/*
 * A synchronous submitter reaps for itself while its requests are out,
 * unless someone else is reaping: then that one delivers them.
 */
static void uring_wait(struct bdev *bd, struct bdev_waiter *w)
{
	struct uring_bdev *u = to_uring(bd);
	struct io_uring_cqe *cqe;
	int err;

	if (pthread_mutex_trylock(&u->cq_lock))
		return;
	/* The reaper need not wake while we reap: what arrives before the
	 * eventfd is on again is drained below, what arrives after wakes it. */
	io_uring_cq_eventfd_toggle(&u->ring, false);
	while (bdev_waiter_pending(w)) {
		err = io_uring_wait_cqe(&u->ring, &cqe);
		if (err < 0 && err != -EINTR && err != -EAGAIN) {
			mlog_err("%s: io_uring_wait_cqe failed: %s", u->bd.path, strerror(-err));
			abort();
		}
		uring_drain(u);
	}
	io_uring_cq_eventfd_toggle(&u->ring, true);
	uring_drain(u);
	pthread_mutex_unlock(&u->cq_lock);
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
	bdev_waiter_init(&w, 1);
	uring_submit(bd, &r, 1);
	uring_wait(bd, &w);
	bdev_waiter_wait(&w);
	return req.result;
}

/* Drain everything in flight, then stop the reaper with a NOP. */
static void uring_close(struct bdev *bd)
{
	struct uring_bdev *u = to_uring(bd);
	struct io_uring_sqe *sqe;

	pthread_mutex_lock(&u->lock);
	while (u->inflight || u->head)
		pthread_cond_wait(&u->idle, &u->lock);
	sqe = io_uring_get_sqe(&u->ring);
	assert(sqe);
	io_uring_prep_nop(sqe);
	io_uring_sqe_set_data(sqe, NULL);
	u->inflight++;
	uring_push(u);
	pthread_mutex_unlock(&u->lock);
	pthread_join(u->reaper, NULL);

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
				   IORING_OP_WRITEV, IORING_OP_FSYNC, IORING_OP_NOP };
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

/* Every completion bumps an eventfd, which is what the reaper sleeps on. */
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

/* The reaper blocks every signal: they belong to the application's threads. */
static int uring_start_reaper(struct uring_bdev *u)
{
	sigset_t all, old;
	int err;

	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	err = pthread_create(&u->reaper, NULL, uring_reaper, u);
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
	err = uring_start_reaper(u);
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
