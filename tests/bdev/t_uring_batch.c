/*
 * t_uring_batch.c - the io_uring backend moves large batches correctly
 * and in few submissions: a batch of many more blocks than the queue
 * depth is written and read back, vectored writes land where they
 * should, flush works, and end_io may submit more while the ring is full.
 * Run with O_DIRECT allowed and with buffered I/O.
 */
#include "t_bdev.h"

#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#define BS 4096u
#define DEPTH 8u
#define NBLK 1000u
#define DEV_BLOCKS (NBLK + 24u)

static struct bdev *open_dev(const char *path, bool no_direct)
{
	struct bdev_open_opts o = { .block_size = BS, .queue_depth = DEPTH,
				    .no_direct = no_direct };
	struct bdev *bd;

	t_log_reset();
	t_ok(bdev_open(path, &o, &bd));
	t_assert(!strcmp(bd->ops->name, "io_uring"), "backend is %s, not io_uring",
		bd->ops->name);
	t_assert(bd->size == (uint64_t)DEV_BLOCKS * BS, "size %llu",
		(unsigned long long)bd->size);
	t_assert(t_log_count("O_DIRECT") == 1,
		"expected exactly one log line about the I/O mode, got %u",
		t_log_count("O_DIRECT"));
	if (no_direct)
		t_assert(!bd->direct, "O_DIRECT in use although no_direct was asked");
	fprintf(stderr, "mode: %s\n", bd->direct ? "direct" : "buffered");
	return bd;
}

/* One request per block, all in one batch; returns submissions used. */
static uint64_t one_batch(struct bdev *bd, enum bdev_op op, uint64_t first,
			  unsigned char *buf, unsigned int n)
{
	struct bdev_req *reqs = calloc(n, sizeof(*reqs));
	struct bdev_req **rp = calloc(n, sizeof(*rp));
	struct bdev_stats a, b;

	t_assert(reqs && rp, "out of memory");
	for (unsigned int i = 0; i < n; i++) {
		bdev_req_init(&reqs[i], op, (first + i) * BS, buf + (size_t)i * BS, BS);
		rp[i] = &reqs[i];
	}
	bdev_get_stats(bd, &a);
	t_ok(bdev_submit_wait(bd, rp, n));
	bdev_get_stats(bd, &b);
	for (unsigned int i = 0; i < n; i++)
		t_assert(reqs[i].result == 0 && reqs[i].done == BS,
			"request %u: result %d done %zu", i, reqs[i].result, reqs[i].done);
	if (op == BDEV_OP_READ)
		t_assert(b.reads - a.reads == n && b.read_bytes - a.read_bytes == (uint64_t)n * BS,
			"read stats moved by %llu requests", (unsigned long long)(b.reads - a.reads));
	else
		t_assert(b.writes - a.writes == n && b.write_bytes - a.write_bytes == (uint64_t)n * BS,
			"write stats moved by %llu requests", (unsigned long long)(b.writes - a.writes));
	free(reqs);
	free(rp);
	return b.submits - a.submits;
}

static void check_batches(struct bdev *bd, uint64_t seed)
{
	size_t len = (size_t)NBLK * BS;
	unsigned char *src = t_alloc(len), *dst = t_alloc(len);
	uint64_t subs;
	long d;

	t_fill(src, len, seed);
	subs = one_batch(bd, BDEV_OP_WRITE, 3, src, NBLK);
	fprintf(stderr, "%u writes in %llu submissions\n", NBLK, (unsigned long long)subs);
	/* The ring is refilled only when half of it is free. */
	t_assert(subs >= 1 && subs <= NBLK / (DEPTH / 2) + 2,
		"%u writes took %llu submissions (depth %u)", NBLK,
		(unsigned long long)subs, DEPTH);
	memset(dst, 0, len);
	subs = one_batch(bd, BDEV_OP_READ, 3, dst, NBLK);
	t_assert(subs <= NBLK / (DEPTH / 2) + 2, "%u reads took %llu submissions",
		NBLK, (unsigned long long)subs);
	d = t_diff(src, dst, len);
	t_assert(d < 0, "read back differs at byte %ld (block %ld)", d, d / (long)BS);
	/* A batch that fits the ring goes in one submission. */
	subs = one_batch(bd, BDEV_OP_READ, 3, dst, DEPTH);
	t_assert(subs == 1, "a batch of %u took %llu submissions", DEPTH,
		(unsigned long long)subs);
	bdev_free_buf(src);
	bdev_free_buf(dst);
}

/* Requests of 4 segments each, the segments taken from memory in reverse. */
static void check_vectored(struct bdev *bd, uint64_t seed)
{
	enum { NREQ = 50, SEGS = 4 };
	size_t len = (size_t)NREQ * SEGS * BS;
	unsigned char *src = t_alloc(len), *dst = t_alloc(len), *want = t_alloc(len);
	struct iovec iov[NREQ][SEGS];
	struct bdev_req reqs[NREQ], *rp[NREQ];
	long d;

	t_fill(src, len, seed);
	for (unsigned int r = 0; r < NREQ; r++) {
		for (unsigned int s = 0; s < SEGS; s++) {
			size_t blk = (size_t)r * SEGS + s, from = NREQ * SEGS - 1 - blk;

			iov[r][s] = (struct iovec){ src + from * BS, BS };
			memcpy(want + blk * BS, src + from * BS, BS);
		}
		bdev_req_initv(&reqs[r], BDEV_OP_WRITE, (uint64_t)(r * SEGS + 10) * BS,
			       iov[r], SEGS);
		rp[r] = &reqs[r];
	}
	t_ok(bdev_submit_wait(bd, rp, NREQ));
	t_ok(bdev_read(bd, 10 * BS, dst, len));
	d = t_diff(want, dst, len);
	t_assert(d < 0, "vectored write: block %ld differs", d / (long)BS);
	/* bdev_writev, then a vectored read into scattered buffers. */
	t_ok(bdev_writev(bd, 0, iov[0], SEGS));
	memset(dst, 0, len);
	for (unsigned int s = 0; s < SEGS; s++)
		iov[1][s] = (struct iovec){ dst + (size_t)(SEGS - 1 - s) * BS, BS };
	bdev_req_initv(&reqs[0], BDEV_OP_READ, 0, iov[1], SEGS);
	t_ok(bdev_submit_wait(bd, rp, 1));
	for (unsigned int s = 0; s < SEGS; s++)
		t_assert(!memcmp(iov[1][s].iov_base, iov[0][s].iov_base, BS),
			"vectored read: segment %u differs", s);
	bdev_free_buf(src);
	bdev_free_buf(dst);
	bdev_free_buf(want);
}

static void chain_end_io(struct bdev_req *req);

/* Each end_io submits another request, while the ring is full. */
struct chain {
	struct bdev *bd;
	pthread_mutex_t lock;
	struct bdev_req req[4 * DEPTH];
	unsigned char *buf;
	unsigned int next;
	struct t_batch done;
};

static struct bdev_req *chain_next(struct chain *c)
{
	struct bdev_req *req = NULL;
	unsigned int i;

	pthread_mutex_lock(&c->lock);
	i = c->next;
	if (i < UT_ARRAY_SIZE(c->req)) {
		c->next++;
		req = &c->req[i];
		bdev_req_init(req, BDEV_OP_READ, (uint64_t)i * BS, c->buf + (size_t)i * BS, BS);
		req->end_io = chain_end_io;
		req->private = c;
	}
	pthread_mutex_unlock(&c->lock);
	return req;
}

static void chain_end_io(struct bdev_req *req)
{
	struct chain *c = req->private;
	struct bdev_req *nreq = chain_next(c);

	if (nreq)
		t_ok(bdev_submit(c->bd, &nreq, 1));
	req->private = &c->done;
	t_batch_end_io(req);
}

static void check_chain(struct bdev *bd)
{
	static struct chain c;
	struct bdev_req *rp[DEPTH];

	memset(&c, 0, sizeof(c));
	c.bd = bd;
	pthread_mutex_init(&c.lock, NULL);
	c.buf = t_alloc(UT_ARRAY_SIZE(c.req) * BS);
	t_batch_init(&c.done, UT_ARRAY_SIZE(c.req));
	for (unsigned int i = 0; i < DEPTH; i++)
		rp[i] = chain_next(&c);
	t_ok(bdev_submit(bd, rp, DEPTH));
	t_batch_wait(&c.done);
	t_assert(c.done.errors == 0, "chained request failed: %d", c.done.first_error);
	t_assert(c.next == UT_ARRAY_SIZE(c.req), "chain stopped at %u", c.next);
	pthread_mutex_destroy(&c.lock);
	bdev_free_buf(c.buf);
}

/* What the file holds, read without the block layer. */
static void check_file(const char *path, uint64_t seed)
{
	size_t len = (size_t)NBLK * BS;
	unsigned char *src = t_alloc(len), *got = t_alloc(len);
	int fd = open(path, O_RDONLY);

	t_assert(fd >= 0, "open %s: %s", path, strerror(errno));
	t_fill(src, len, seed);
	t_assert(pread(fd, got, len, 3 * BS) == (ssize_t)len, "short pread of the image");
	/* The vectored test overwrote blocks 0..3 and 10..209 of the batch. */
	t_assert(!memcmp(src + BS, got + BS, 6 * BS) &&
		!memcmp(src + 207 * BS, got + 207 * BS, len - 207 * BS),
		"the image file does not hold the batch");
	close(fd);
	bdev_free_buf(src);
	bdev_free_buf(got);
}

/* On an image of its own: each case also runs alone. */
static void run(bool no_direct, uint64_t seed)
{
	char *path = t_image("img", (uint64_t)DEV_BLOCKS * BS + 100);
	struct bdev *bd = open_dev(path, no_direct);
	struct bdev_stats st;

	check_batches(bd, seed);
	check_vectored(bd, seed + 1);
	check_chain(bd);
	t_ok(bdev_flush(bd));
	bdev_get_stats(bd, &st);
	t_assert(st.flushes == 1, "flushes = %llu", (unsigned long long)st.flushes);
	bdev_close(bd);
	check_file(path, seed);
	free(path);
}

/* O_DIRECT, where the file system takes it. */
static void test_direct(void)
{
	run(false, 1);
}

static void test_buffered(void)
{
	run(true, 2);
}

T_MAIN_SETUP(t_log_capture(), T_CASE(test_direct), T_CASE(test_buffered))
