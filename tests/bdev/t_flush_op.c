/*
 * t_flush_op - a flush inside a batch completes after every request
 * submitted before it, on every backend, and counts as a flush.
 */
#include "bdev_test.h"
#include "t_bdev.h"
#include "t_dev.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#define BS     4096u
#define NWRITE 64u

/* The batch comes first: t_batch_end_io() takes req->private for it. */
struct order {
	struct t_batch batch;
	pthread_mutex_t lock;
	unsigned int done;           /* requests completed so far */
	unsigned int flush_saw;      /* writes done when the flush completed */
};

static void end_write(struct bdev_req *req)
{
	struct order *o = req->private;

	pthread_mutex_lock(&o->lock);
	o->done++;
	pthread_mutex_unlock(&o->lock);
	t_batch_end_io(req);
}

static void end_flush(struct bdev_req *req)
{
	struct order *o = req->private;

	pthread_mutex_lock(&o->lock);
	o->flush_saw = o->done;
	o->done++;
	pthread_mutex_unlock(&o->lock);
	t_batch_end_io(req);
}

/* Writes, then a flush, then more writes, all in one async batch. */
static void check_barrier(struct bdev *bd, const char *name)
{
	static struct bdev_req reqs[2 * NWRITE + 1];
	struct bdev_req *ptrs[2 * NWRITE + 1];
	struct order o = { .lock = PTHREAD_MUTEX_INITIALIZER };

	_Static_assert(offsetof(struct order, batch) == 0, "batch first");
	struct bdev_stats before, after;
	uint8_t *buf = t_alloc((size_t)2 * NWRITE * BS);

	t_fill(buf, (size_t)2 * NWRITE * BS, 42);
	t_batch_init(&o.batch, 2 * NWRITE + 1);
	for (unsigned int i = 0; i < 2 * NWRITE + 1; i++) {
		unsigned int w = i < NWRITE ? i : i - 1;

		if (i == NWRITE)
			bdev_req_init(&reqs[i], BDEV_OP_FLUSH, 0, NULL, 0);
		else
			bdev_req_init(&reqs[i], BDEV_OP_WRITE, (uint64_t)w * BS, buf + (size_t)w * BS, BS);
		reqs[i].end_io = i == NWRITE ? end_flush : end_write;
		reqs[i].private = &o;
		ptrs[i] = &reqs[i];
	}
	bdev_get_stats(bd, &before);
	t_ok(bdev_submit(bd, ptrs, 2 * NWRITE + 1));
	t_batch_wait(&o.batch);
	bdev_get_stats(bd, &after);
	t_assert(o.batch.errors == 0, "%s: %u errors", name, o.batch.errors);
	t_assert(o.flush_saw >= NWRITE, "%s: the flush completed after %u of the %u "
		"writes before it", name, o.flush_saw, NWRITE);
	t_assert(after.flushes == before.flushes + 1, "%s: flush not counted", name);
	t_assert(after.writes == before.writes + 2 * NWRITE, "%s: writes", name);
	bdev_free_buf(buf);
	printf("ok: %s\n", name);
}

/* On the memory device the flush makes the writes before it survive a
 * power cut, and the ones after it may be lost. */
static void test_mem_durability(void)
{
	struct bdev_req reqs[3], *ptrs[3] = { &reqs[0], &reqs[1], &reqs[2] };
	uint8_t *a = t_alloc(BS), *b = t_alloc(BS), *got = t_alloc(BS);
	struct bdev *bd;

	t_fill(a, BS, 1);
	t_fill(b, BS, 2);
	bd = t_dev_mem(16 * BS, BS);
	bdev_req_init(&reqs[0], BDEV_OP_WRITE, 0, a, BS);
	bdev_req_init(&reqs[1], BDEV_OP_FLUSH, 0, NULL, 0);
	bdev_req_init(&reqs[2], BDEV_OP_WRITE, BS, b, BS);
	t_ok(bdev_submit_wait(bd, ptrs, 3));
	bdev_mem_power_cut(bd, BDEV_CUT_LOSE_ALL, 0);
	t_ok(bdev_read(bd, 0, got, BS));
	t_assert(!memcmp(got, a, BS), "write before the flush lost");
	t_ok(bdev_read(bd, BS, got, BS));
	t_assert(memcmp(got, b, BS), "write after the flush survived a cut");
	t_ok(bdev_wrap_fail(bd, 0, BS, BDEV_WRAP_FAIL_FLUSH));
	t_eq(bdev_submit_wait(bd, ptrs + 1, 1), -EIO);
	bdev_close(bd);
	bdev_free_buf(a);
	bdev_free_buf(b);
	bdev_free_buf(got);
	printf("ok: mem durability\n");
}

static void check_invalid(struct bdev *bd)
{
	struct iovec v = { t_alloc(BS), BS };
	struct bdev_req req, *p = &req;

	bdev_req_initv(&req, BDEV_OP_FLUSH, 0, &v, 1);   /* a flush has no data */
	t_eq(bdev_submit(bd, &p, 1), -EINVAL);
	bdev_free_buf(v.iov_base);
}

static void test_uring_barrier(void)
{
	char *path = t_image("img", (uint64_t)4 * NWRITE * BS);
	struct bdev_open_opts o = { .block_size = BS, .queue_depth = 16 };
	struct bdev *bd;

	t_ok(bdev_open_uring(path, &o, &bd));
	check_barrier(bd, "io_uring (depth 16)");
	check_invalid(bd);
	bdev_close(bd);
	free(path);
}

static void test_pread_barrier(void)
{
	char *path = t_image("img", (uint64_t)4 * NWRITE * BS);
	struct bdev_open_opts o = { .block_size = BS, .queue_depth = 16 };
	struct bdev *bd;

	t_ok(bdev_open_pread(path, &o, &bd));
	check_barrier(bd, "pread");
	bdev_close(bd);
	free(path);
}

static void test_mem_barrier(void)
{
	struct bdev *bd = t_dev_mem((uint64_t)4 * NWRITE * BS, BS);

	check_barrier(bd, "mem");
	bdev_close(bd);
}

T_MAIN(T_CASE(test_uring_barrier), T_CASE(test_pread_barrier), T_CASE(test_mem_barrier),
       T_CASE(test_mem_durability))
