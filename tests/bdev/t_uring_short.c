/*
 * t_uring_short.c - short transfers on the io_uring backend are continued
 * or reported, never taken for success: a read crossing the end of an
 * image truncated after opening fails with -EIO; requests of more
 * segments than one system call takes, and transfers capped by the test
 * hook, are carried to the end.  Invalid requests are refused.
 */
#include "t_bdev.h"

#include "bdev_test.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

#define BS 1024u
#define NBLK 64u

static struct bdev *open_dev(const char *path, uint32_t bs, bool no_direct, bool ro)
{
	struct bdev_open_opts o = { .block_size = bs, .queue_depth = 16,
				    .no_direct = no_direct, .read_only = ro };
	struct bdev *bd;

	t_ok(bdev_open_uring(path, &o, &bd));
	return bd;
}

static uint64_t retries(struct bdev *bd)
{
	struct bdev_stats st;

	bdev_get_stats(bd, &st);
	return st.retries;
}

/* The image shrinks under an open device: reads crossing or past its new
 * end are errors, reads before it still work. */
static void check_eof(bool no_direct)
{
	char *path = t_image("eof", (uint64_t)NBLK * BS + 100);
	struct bdev *bd = open_dev(path, BS, no_direct, false);
	unsigned char *src = t_alloc(NBLK * BS), *buf = t_alloc(4 * BS);
	uint64_t r0;

	t_assert(bd->size == NBLK * BS, "size %llu not rounded down to whole blocks",
		(unsigned long long)bd->size);
	t_fill(src, NBLK * BS, 7);
	t_ok(bdev_write(bd, 0, src, NBLK * BS));
	t_assert(truncate(path, 10 * BS + 100) == 0, "truncate: %s", strerror(errno));
	r0 = retries(bd);
	t_eq(bdev_read(bd, 9 * BS, buf, 4 * BS), -EIO);
	if (no_direct)
		t_assert(retries(bd) > r0, "the short read was not continued");
	t_eq(bdev_read(bd, 20 * BS, buf, BS), -EIO);
	t_eq(bdev_read(bd, 10 * BS, buf, BS), -EIO);
	t_ok(bdev_read(bd, 9 * BS, buf, BS));
	t_assert(!memcmp(buf, src + 9 * BS, BS), "block 9 differs after truncation");
	bdev_close(bd);
	bdev_free_buf(src);
	bdev_free_buf(buf);
	unlink(path);
	free(path);
}

/* More segments than IOV_MAX, scattered in memory in reverse order. */
static void check_many_segments(bool no_direct)
{
	enum { SEG = 512, NSEG = 1536 };
	char *path = t_image("segs", (uint64_t)NSEG * SEG);
	struct bdev *bd = open_dev(path, SEG, no_direct, false);
	unsigned char *src = t_alloc(NSEG * SEG), *dst = t_alloc(NSEG * SEG);
	struct iovec *iov = calloc(NSEG, sizeof(*iov));
	struct bdev_req req, *rp = &req;
	uint64_t r0 = retries(bd);

	t_assert(iov, "out of memory");
	t_fill(src, NSEG * SEG, 3);
	for (unsigned int i = 0; i < NSEG; i++)
		iov[i] = (struct iovec){ src + (size_t)(NSEG - 1 - i) * SEG, SEG };
	bdev_req_initv(&req, BDEV_OP_WRITE, 0, iov, NSEG);
	t_ok(bdev_submit_wait(bd, &rp, 1));
	t_assert(req.done == NSEG * SEG, "write done %zu", req.done);
	t_ok(bdev_read(bd, 0, dst, NSEG * SEG));
	for (unsigned int i = 0; i < NSEG; i++)
		t_assert(!memcmp(dst + (size_t)i * SEG, iov[i].iov_base, SEG),
			"segment %u landed in the wrong place", i);
	/* And the same scattered read. */
	memset(src, 0, NSEG * SEG);
	bdev_req_initv(&req, BDEV_OP_READ, 0, iov, NSEG);
	t_ok(bdev_submit_wait(bd, &rp, 1));
	for (unsigned int i = 0; i < NSEG; i++)
		t_assert(!memcmp(dst + (size_t)i * SEG, iov[i].iov_base, SEG),
			"scattered read: segment %u differs", i);
	t_assert(retries(bd) >= r0 + 2, "requests over IOV_MAX were not continued");
	bdev_close(bd);
	free(iov);
	bdev_free_buf(src);
	bdev_free_buf(dst);
	unlink(path);
	free(path);
}

/* Every transfer cut short at @cap bytes, inside segments too. */
static void check_capped(bool no_direct, size_t cap)
{
	char *path = t_image("cap", (uint64_t)NBLK * BS);
	struct bdev *bd = open_dev(path, BS, no_direct, false);
	unsigned char *src = t_alloc(16 * BS), *dst = t_alloc(16 * BS);
	struct iovec iov[4];
	uint64_t r0 = retries(bd), want = 2 * (16 * BS / cap) - 2;

	t_fill(src, 16 * BS, 11);
	for (unsigned int i = 0; i < 4; i++)
		iov[i] = (struct iovec){ src + (size_t)i * 4 * BS, 4 * BS };
	bdev_test_max_xfer = cap;
	t_ok(bdev_writev(bd, 5 * BS, iov, 4));
	t_ok(bdev_read(bd, 5 * BS, dst, 16 * BS));
	bdev_test_max_xfer = 0;
	t_assert(!memcmp(src, dst, 16 * BS), "capped transfers: data differs at %ld",
		t_diff(src, dst, 16 * BS));
	t_assert(retries(bd) - r0 >= want, "only %llu continuations for a %zu-byte cap",
		(unsigned long long)(retries(bd) - r0), cap);
	bdev_close(bd);
	bdev_free_buf(src);
	bdev_free_buf(dst);
	unlink(path);
	free(path);
}

static unsigned int end_io_calls;

static void count_end_io(struct bdev_req *req)
{
	end_io_calls++;
}

static void check_refused(struct bdev *bd, uint64_t off, void *buf, size_t len, int err)
{
	struct bdev_req req, *rp = &req;

	bdev_req_init(&req, BDEV_OP_WRITE, off, buf, len);
	req.end_io = count_end_io;
	t_eq(bdev_submit(bd, &rp, 1), err);
	t_assert(req.result == err, "result %d, expected %d", req.result, err);
	/* The same read is refused too, unless only writing was forbidden. */
	req.op = BDEV_OP_READ;
	t_eq(bdev_submit_wait(bd, &rp, 1), err == -EROFS ? 0 : err);
}

static void test_validation(void)
{
	char *path = t_image("valid", (uint64_t)NBLK * BS);
	struct bdev *bd = open_dev(path, BS, false, false);
	unsigned char *buf = t_alloc(4 * BS);
	uint64_t size = bd->size;
	struct bdev_req reqs[2], *rp[2] = { &reqs[0], &reqs[1] };

	end_io_calls = 0;
	check_refused(bd, 100, buf, BS, -EINVAL);          /* offset */
	check_refused(bd, 0, buf, 1000, -EINVAL);          /* length */
	check_refused(bd, 0, buf + 16, BS, -EINVAL);       /* buffer */
	check_refused(bd, 0, buf, 0, -EINVAL);             /* empty */
	check_refused(bd, size, buf, BS, -EINVAL);         /* past the end */
	check_refused(bd, size - BS, buf, 2 * BS, -EINVAL);
	check_refused(bd, UINT64_MAX - BS + 1, buf, 2 * BS, -EINVAL);
	t_assert(end_io_calls == 0, "end_io ran for a refused request");
	/* One bad request refuses the whole batch. */
	bdev_req_init(&reqs[0], BDEV_OP_READ, 0, buf, BS);
	bdev_req_init(&reqs[1], BDEV_OP_READ, 1, buf, BS);
	reqs[0].end_io = reqs[1].end_io = count_end_io;
	t_eq(bdev_submit(bd, rp, 2), -EINVAL);
	t_eq(bdev_submit_wait(bd, rp, 2), -EINVAL);
	t_assert(end_io_calls == 0 && reqs[0].result == 0 && reqs[1].result == -EINVAL,
		"a refused batch ran end_io %u times, results %d %d", end_io_calls,
		reqs[0].result, reqs[1].result);
	bdev_close(bd);

	bd = open_dev(path, BS, false, true);
	t_assert(bd->read_only, "read_only not set");
	check_refused(bd, 0, buf, BS, -EROFS);
	t_eq(bdev_write(bd, BS, buf, BS), -EROFS);
	t_ok(bdev_read(bd, BS, buf, BS));
	t_ok(bdev_flush(bd));
	bdev_close(bd);
	bdev_free_buf(buf);
	free(path);
}

static void test_eof_buffered(void)
{
	check_eof(true);
}

/* O_DIRECT, where the file system takes it. */
static void test_eof_direct(void)
{
	check_eof(false);
}

static void test_many_segments_buffered(void)
{
	check_many_segments(true);
}

static void test_many_segments_direct(void)
{
	check_many_segments(false);
}

/* Cut inside a sector, which only buffered I/O may be. */
static void test_capped_unaligned_buffered(void)
{
	check_capped(true, 1000);
}

/* Cut at sector boundaries inside the blocks. */
static void test_capped_sectors_buffered(void)
{
	check_capped(true, 3 * 512);
}

/* Direct I/O moves whole sectors: the smallest cap it takes. */
static void test_capped_sector_direct(void)
{
	check_capped(false, 512);
}

T_MAIN(T_CASE(test_eof_buffered), T_CASE(test_eof_direct),
       T_CASE(test_many_segments_buffered), T_CASE(test_many_segments_direct),
       T_CASE(test_capped_unaligned_buffered), T_CASE(test_capped_sectors_buffered),
       T_CASE(test_capped_sector_direct), T_CASE(test_validation))
