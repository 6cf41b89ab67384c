/*
 * t_pread.c - the pread backend: chosen by no_uring, synchronous (end_io
 * runs before bdev_submit returns), reads back what was written, carries
 * short transfers to the end, reports the end of a shrunken image as
 * -EIO, refuses invalid requests, and flushes.
 */
#include "t_bdev.h"

#include "bdev_test.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

#define BS 2048u
#define NBLK 128u

static unsigned int calls;

static void count_end_io(struct bdev_req *req)
{
	calls++;
}

static struct bdev *open_dev(const char *path, bool no_direct)
{
	struct bdev_open_opts o = { .block_size = BS, .no_uring = true,
				    .no_direct = no_direct };
	struct bdev *bd;

	t_ok(bdev_open(path, &o, &bd));
	t_assert(!strcmp(bd->ops->name, "pread"), "no_uring gave the %s backend",
		bd->ops->name);
	return bd;
}

/* A batch of single-block requests, finished when bdev_submit returns. */
static void check_sync_batch(struct bdev *bd, unsigned char *src, unsigned char *dst)
{
	struct bdev_req reqs[NBLK], *rp[NBLK];
	struct bdev_stats a, b;

	for (unsigned int i = 0; i < NBLK; i++) {
		bdev_req_init(&reqs[i], BDEV_OP_WRITE, (uint64_t)i * BS, src + (size_t)i * BS, BS);
		reqs[i].end_io = count_end_io;
		rp[i] = &reqs[i];
	}
	calls = 0;
	bdev_get_stats(bd, &a);
	t_ok(bdev_submit(bd, rp, NBLK));
	t_assert(calls == NBLK, "%u of %u end_io calls before bdev_submit returned",
		calls, NBLK);
	for (unsigned int i = 0; i < NBLK; i++)
		bdev_req_init(&reqs[i], BDEV_OP_READ, (uint64_t)i * BS, dst + (size_t)i * BS, BS);
	t_ok(bdev_submit_wait(bd, rp, NBLK));
	bdev_get_stats(bd, &b);
	t_assert(b.submits - a.submits == 2 && b.writes - a.writes == NBLK &&
		b.reads - a.reads == NBLK, "stats: %llu submits, %llu writes, %llu reads",
		(unsigned long long)(b.submits - a.submits),
		(unsigned long long)(b.writes - a.writes),
		(unsigned long long)(b.reads - a.reads));
	t_assert(!memcmp(src, dst, NBLK * BS), "read back differs at %ld",
		t_diff(src, dst, NBLK * BS));
}

static void check_vectored_capped(struct bdev *bd, unsigned char *src, unsigned char *dst)
{
	struct iovec iov[8];
	struct bdev_stats a, b;

	for (unsigned int i = 0; i < 8; i++)
		iov[i] = (struct iovec){ src + (size_t)(7 - i) * 2 * BS, 2 * BS };
	bdev_get_stats(bd, &a);
	bdev_test_max_xfer = bd->direct ? 1536 : 1000;
	t_ok(bdev_writev(bd, 4 * BS, iov, 8));
	memset(dst, 0, 16 * BS);
	t_ok(bdev_read(bd, 4 * BS, dst, 16 * BS));
	bdev_test_max_xfer = 0;
	bdev_get_stats(bd, &b);
	for (unsigned int i = 0; i < 8; i++)
		t_assert(!memcmp(dst + (size_t)i * 2 * BS, iov[i].iov_base, 2 * BS),
			"vectored, capped write: segment %u differs", i);
	t_assert(b.retries - a.retries >= 16, "only %llu continuations",
		(unsigned long long)(b.retries - a.retries));
}

static void check_errors(struct bdev *bd, const char *path, unsigned char *buf)
{
	t_eq(bdev_read(bd, BS / 2, buf, BS), -EINVAL);
	t_eq(bdev_read(bd, 0, buf + 8, BS), -EINVAL);
	t_eq(bdev_read(bd, bd->size, buf, BS), -EINVAL);
	t_assert(truncate(path, 3 * BS + 512) == 0, "truncate: %s", strerror(errno));
	t_eq(bdev_read(bd, 2 * BS, buf, 2 * BS), -EIO);
	t_eq(bdev_read(bd, 50 * BS, buf, BS), -EIO);
	t_ok(bdev_read(bd, 2 * BS, buf, BS));
	t_assert(truncate(path, NBLK * BS) == 0, "truncate: %s", strerror(errno));
}

/* On an image of its own: each case also runs alone. */
static void run(bool no_direct)
{
	char *path = t_image("img", (uint64_t)NBLK * BS);
	unsigned char *src = t_alloc(NBLK * BS), *dst = t_alloc(NBLK * BS);
	struct bdev *bd = open_dev(path, no_direct);
	struct bdev_stats st;

	t_fill(src, NBLK * BS, no_direct ? 5 : 6);
	check_sync_batch(bd, src, dst);
	check_vectored_capped(bd, src, dst);
	t_ok(bdev_flush(bd));
	bdev_get_stats(bd, &st);
	t_assert(st.flushes == 1, "flushes %llu", (unsigned long long)st.flushes);
	check_errors(bd, path, dst);
	bdev_close(bd);

	/* bdev_open_pread directly, read-only: the data is there. */
	struct bdev_open_opts o = { .block_size = BS, .read_only = true };
	t_ok(bdev_open_pread(path, &o, &bd));
	t_ok(bdev_read(bd, 0, dst, 4 * BS));
	/* Blocks 3 and later were cut off by check_errors. */
	t_assert(!memcmp(src, dst, 3 * BS), "reopened image differs");
	t_eq(bdev_write(bd, 0, dst, BS), -EROFS);
	bdev_close(bd);
	bdev_free_buf(src);
	bdev_free_buf(dst);
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
