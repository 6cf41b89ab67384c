/*
 * t_concurrent.c - four threads submit asynchronous batches to one
 * io_uring device at once (and flush between rounds), each to its own
 * region; every block read back must be the one its thread wrote last.
 */
#include "t_bdev.h"

#include <string.h>

#define BS 4096u
#define NTHREADS 4u
#define REGION 256u              /* blocks per thread */
#define ROUNDS 6u
#define WBLK 4u                  /* blocks per write request */
#define RBLK 2u                  /* blocks per read request */

struct worker {
	struct bdev *bd;
	unsigned int id;
	unsigned char *src, *dst;
	struct bdev_req wreq[REGION / WBLK], rreq[REGION / RBLK];
	struct iovec wiov[REGION / WBLK][2];
};

/* Submit @n requests asynchronously and wait for their end_io. */
static void run_batch(struct worker *w, struct bdev_req *reqs, unsigned int n)
{
	struct bdev_req *rp[REGION];
	struct t_batch b;

	t_batch_init(&b, n);
	for (unsigned int i = 0; i < n; i++) {
		reqs[i].end_io = t_batch_end_io;
		reqs[i].private = &b;
		rp[i] = &reqs[i];
	}
	t_ok(bdev_submit(w->bd, rp, n));
	t_batch_wait(&b);
	t_assert(b.errors == 0, "thread %u: %u requests failed, first with %d",
		w->id, b.errors, b.first_error);
}

/* Writes of WBLK blocks, every other one split into two segments. */
static void write_region(struct worker *w, uint64_t first)
{
	for (unsigned int i = 0; i < REGION / WBLK; i++) {
		unsigned char *p = w->src + (size_t)i * WBLK * BS;
		uint64_t off = (first + i * WBLK) * BS;

		if (i & 1) {
			w->wiov[i][0] = (struct iovec){ p, BS };
			w->wiov[i][1] = (struct iovec){ p + BS, (WBLK - 1) * BS };
			bdev_req_initv(&w->wreq[i], BDEV_OP_WRITE, off, w->wiov[i], 2);
		} else {
			bdev_req_init(&w->wreq[i], BDEV_OP_WRITE, off, p, WBLK * BS);
		}
	}
	run_batch(w, w->wreq, REGION / WBLK);
}

static void read_region(struct worker *w, uint64_t first)
{
	for (unsigned int i = 0; i < REGION / RBLK; i++)
		bdev_req_init(&w->rreq[i], BDEV_OP_READ, (first + i * RBLK) * BS,
			      w->dst + (size_t)i * RBLK * BS, RBLK * BS);
	run_batch(w, w->rreq, REGION / RBLK);
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	uint64_t first = (uint64_t)w->id * REGION;
	long d;

	for (unsigned int r = 0; r < ROUNDS; r++) {
		t_fill(w->src, REGION * BS, w->id * 100 + r);
		write_region(w, first);
		memset(w->dst, 0, REGION * BS);
		read_region(w, first);
		d = t_diff(w->src, w->dst, REGION * BS);
		t_assert(d < 0, "thread %u round %u: block %ld differs", w->id, r,
			d / (long)BS);
		if (w->id == 0)
			t_ok(bdev_flush(w->bd));
	}
	return NULL;
}

/* On an image of its own: each case also runs alone. */
static void run(bool no_direct)
{
	struct bdev_open_opts o = { .block_size = BS, .queue_depth = 16, .no_direct = no_direct };
	char *path = t_image("img", (uint64_t)NTHREADS * REGION * BS);
	static struct worker w[NTHREADS];
	pthread_t th[NTHREADS];
	struct bdev_stats st;
	struct bdev *bd;

	t_ok(bdev_open_uring(path, &o, &bd));
	for (unsigned int i = 0; i < NTHREADS; i++) {
		w[i].bd = bd;
		w[i].id = i;
		w[i].src = t_alloc(REGION * BS);
		w[i].dst = t_alloc(REGION * BS);
		t_assert(!pthread_create(&th[i], NULL, worker_main, &w[i]), "pthread_create");
	}
	for (unsigned int i = 0; i < NTHREADS; i++)
		pthread_join(th[i], NULL);
	bdev_get_stats(bd, &st);
	t_assert(st.writes == NTHREADS * ROUNDS * REGION / WBLK &&
		st.reads == NTHREADS * ROUNDS * REGION / RBLK && st.flushes == ROUNDS,
		"stats: %llu writes %llu reads %llu flushes", (unsigned long long)st.writes,
		(unsigned long long)st.reads, (unsigned long long)st.flushes);
	fprintf(stderr, "%s: %llu requests in %llu submissions\n",
		bd->direct ? "direct" : "buffered", (unsigned long long)(st.reads + st.writes),
		(unsigned long long)st.submits);
	bdev_close(bd);
	for (unsigned int i = 0; i < NTHREADS; i++) {
		bdev_free_buf(w[i].src);
		bdev_free_buf(w[i].dst);
	}
	free(path);
}

/* O_DIRECT, where the file system takes it. */
static void test_direct(void)
{
	run(false);
}

static void test_buffered(void)
{
	run(true);
}

T_MAIN(T_CASE(test_direct), T_CASE(test_buffered))
