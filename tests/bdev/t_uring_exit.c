/*
 * t_uring_exit.c - requests outlive the thread that submitted them.
 *
 * The kernel cancels the io_uring work of a thread that exits, and a FUSE
 * daemon's worker threads come and go with the load.  Here many threads
 * each queue asynchronous writes to one io_uring device and exit at once;
 * then, with the kernel's page cache dropped, as many queue reads and
 * exit.  Every request must still complete without error and move the
 * right bytes.  Buffered I/O (which the kernel hands to workers of the
 * submitting thread, or retries from it) and O_DIRECT; new holes each
 * round so that writes must allocate.  A last pass cuts every transfer
 * short while other threads read synchronously and exit too: whoever
 * reaps a short transfer must not be the one who continues it, unless it
 * waits for it.
 */
#include "t_bdev.h"

#include "bdev_test.h"

#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#define BS 4096u
#define NTHREADS 16u
#define NREQ 8u                  /* requests per thread */
#define RBLK 2u                  /* blocks per request */
#define PER (NREQ * RBLK)        /* blocks per thread */
#define NBLK (NTHREADS * PER)
#define ROUNDS 8u
#define NSYNC 8u                 /* threads reading synchronously */
#define SCRATCH (NBLK + 8u)      /* their block */

struct round {
	struct bdev *bd;
	enum bdev_op op;
	unsigned char *buf;      /* NBLK blocks */
	struct bdev_req reqs[NBLK / RBLK];
	struct t_batch batch;
};

struct worker {
	struct round *r;
	unsigned int id;
};

/* Queue this thread's requests and leave without waiting for them. */
static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct round *r = w->r;
	struct bdev_req *rp[NREQ];

	for (unsigned int i = 0; i < NREQ; i++) {
		unsigned int k = w->id * NREQ + i;
		struct bdev_req *req = &r->reqs[k];

		bdev_req_init(req, r->op, (uint64_t)k * RBLK * BS,
			      r->buf + (size_t)k * RBLK * BS, RBLK * BS);
		req->end_io = t_batch_end_io;
		req->private = &r->batch;
		rp[i] = req;
	}
	t_ok(bdev_submit(r->bd, rp, NREQ));
	return NULL;
}

/* Read the scratch blocks synchronously, reaping others' completions. */
static void *sync_main(void *arg)
{
	struct worker *w = arg;
	unsigned char *buf = t_alloc(2 * BS);

	for (unsigned int i = 0; i < 8; i++)
		t_ok(bdev_read(w->r->bd, (uint64_t)(SCRATCH + w->id % 4) * BS, buf, 2 * BS));
	bdev_free_buf(buf);
	return NULL;
}

/* Every thread queues its share of @op and exits; then all must succeed. */
static void run_round(struct bdev *bd, enum bdev_op op, unsigned char *buf,
		      const char *what, unsigned int round)
{
	static struct round r;
	static struct worker w[NTHREADS + NSYNC];
	pthread_t th[NTHREADS + NSYNC];

	r.bd = bd;
	r.op = op;
	r.buf = buf;
	t_batch_init(&r.batch, NBLK / RBLK);
	for (unsigned int i = 0; i < NTHREADS + NSYNC; i++) {
		w[i] = (struct worker){ &r, i };
		t_assert(!pthread_create(&th[i], NULL, i < NTHREADS ? worker_main : sync_main,
					 &w[i]), "pthread_create");
	}
	for (unsigned int i = 0; i < NTHREADS + NSYNC; i++)
		pthread_join(th[i], NULL);
	t_batch_wait(&r.batch);
	t_assert(r.batch.errors == 0, "%s round %u: %u of %u %s requests failed, "
		"first with %d (%s)", what, round, r.batch.errors, NBLK / RBLK,
		op == BDEV_OP_READ ? "read" : "write", r.batch.first_error,
		strerror(-r.batch.first_error));
}

/* Holes where the data goes, and nothing of the file in the page cache. */
static void drop_file(struct bdev *bd)
{
	t_ok(fdatasync(bd->fd) ? -errno : 0);
	t_ok(-posix_fadvise(bd->fd, 0, 0, POSIX_FADV_DONTNEED));
}

/* On an image of its own: each case also runs alone. */
static void run(bool no_direct, size_t max_xfer)
{
	struct bdev_open_opts o = { .block_size = BS, .queue_depth = 32, .no_direct = no_direct };
	char *path = t_image("img", (uint64_t)(SCRATCH + 8) * BS);
	const char *mode;
	unsigned char *src = t_alloc(NBLK * BS), *dst = t_alloc(NBLK * BS);
	struct bdev *bd;
	long d;

	t_ok(bdev_open_uring(path, &o, &bd));
	mode = max_xfer ? "short" : bd->direct ? "direct" : "buffered";
	bdev_test_max_xfer = max_xfer;
	for (unsigned int round = 0; round < ROUNDS; round++) {
		t_ok(fallocate(bd->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0,
			       (off_t)NBLK * BS) ? -errno : 0);
		drop_file(bd);
		t_fill(src, NBLK * BS, round + (no_direct ? 1000 : 0));
		run_round(bd, BDEV_OP_WRITE, src, mode, round);
		drop_file(bd);
		memset(dst, 0, NBLK * BS);
		run_round(bd, BDEV_OP_READ, dst, mode, round);
		d = t_diff(src, dst, NBLK * BS);
		t_assert(d < 0, "%s round %u: block %ld differs", mode, round, d / (long)BS);
	}
	fprintf(stderr, "%s: %u rounds of %u threads, %u requests each way\n", mode,
		ROUNDS, NTHREADS, NBLK / RBLK);
	bdev_close(bd);
	bdev_test_max_xfer = 0;
	bdev_free_buf(src);
	bdev_free_buf(dst);
	free(path);
}

static void test_buffered(void)
{
	run(true, 0);
}

/* O_DIRECT, where the file system takes it. */
static void test_direct(void)
{
	run(false, 0);
}

/* Every transfer cut short at a block, and still carried to its end. */
static void test_short_transfers(void)
{
	run(true, BS);
}

T_MAIN(T_CASE(test_buffered), T_CASE(test_direct), T_CASE(test_short_transfers))
