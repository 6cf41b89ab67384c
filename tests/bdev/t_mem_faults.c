/*
 * t_mem_faults.c - the memory device under a wrapper: reads see the newest
 * writes, chosen byte ranges fail reads, writes or flushes with -EIO until
 * cleared, a failed write changes nothing, and contents survive save and
 * load.
 */
#include "bdev_test.h"
#include "t_bdev.h"
#include "t_dev.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#define BS 1024u
#define NBLK 256u

static unsigned char *data_of(struct bdev *bd, unsigned int blk)
{
	return (unsigned char *)bdev_mem_data(bd) + (size_t)blk * BS;
}

static void check_read_faults(struct bdev *bd, unsigned char *img, unsigned char *buf)
{
	t_ok(bdev_wrap_fail(bd, 10 * BS, BS, BDEV_WRAP_FAIL_READ));
	t_eq(bdev_read(bd, 10 * BS, buf, BS), -EIO);
	t_eq(bdev_read(bd, 8 * BS, buf, 3 * BS), -EIO);
	t_ok(bdev_read(bd, 9 * BS, buf, BS));
	t_ok(bdev_read(bd, 11 * BS, buf, BS));
	t_assert(!memcmp(buf, img + 11 * BS, BS), "block 11 differs");
	/* A read fault does not stop writes. */
	memset(img + 10 * BS, 0xa5, BS);
	t_ok(bdev_write(bd, 10 * BS, img + 10 * BS, BS));
	t_assert(!memcmp(data_of(bd, 10), img + 10 * BS, BS), "write under a read fault lost");
}

/* One faulty byte fails both directions; a failed write changes nothing. */
static void check_byte_fault(struct bdev *bd, unsigned char *img, unsigned char *buf)
{
	t_ok(bdev_wrap_fail(bd, 20 * BS + 700, 1, BDEV_WRAP_FAIL_READ | BDEV_WRAP_FAIL_WRITE));
	t_eq(bdev_read(bd, 20 * BS, buf, BS), -EIO);
	memset(buf, 0x5a, BS);
	t_eq(bdev_write(bd, 20 * BS, buf, BS), -EIO);
	t_assert(!memcmp(data_of(bd, 20), img + 20 * BS, BS), "a failed write changed data");
	t_ok(bdev_read(bd, 21 * BS, buf, BS));
	t_ok(bdev_write(bd, 19 * BS, img + 19 * BS, BS));

	t_ok(bdev_wrap_fail(bd, 30 * BS, 2 * BS, BDEV_WRAP_FAIL_WRITE));
	t_eq(bdev_write(bd, 29 * BS, buf, 2 * BS), -EIO);
	t_assert(!memcmp(data_of(bd, 29), img + 29 * BS, 2 * BS), "a failed write changed data");
	t_ok(bdev_read(bd, 30 * BS, buf, 2 * BS));
	t_ok(bdev_flush(bd));
}

/* Errors are per request within one asynchronous batch. */
static void check_batch(struct bdev *bd, unsigned char *buf)
{
	static const unsigned int blks[] = { 9, 10, 11, 20 };
	struct bdev_req reqs[4], *rp[4];
	struct t_batch b;

	t_batch_init(&b, 4);
	for (unsigned int i = 0; i < 4; i++) {
		bdev_req_init(&reqs[i], BDEV_OP_READ, (uint64_t)blks[i] * BS,
			      buf + (size_t)i * BS, BS);
		reqs[i].end_io = t_batch_end_io;
		reqs[i].private = &b;
		rp[i] = &reqs[i];
	}
	t_ok(bdev_submit(bd, rp, 4));
	t_batch_wait(&b);
	t_assert(b.errors == 2 && reqs[0].result == 0 && reqs[1].result == -EIO &&
		reqs[2].result == 0 && reqs[3].result == -EIO,
		"batch results %d %d %d %d", reqs[0].result, reqs[1].result,
		reqs[2].result, reqs[3].result);
	for (unsigned int i = 0; i < 4; i++)
		reqs[i].end_io = NULL;
	t_eq(bdev_submit_wait(bd, rp, 4), -EIO);
}

static void check_flush_fault(struct bdev *bd, unsigned char *img, unsigned char *buf)
{
	t_ok(bdev_wrap_fail(bd, 200 * BS, 1, BDEV_WRAP_FAIL_FLUSH));
	t_ok(bdev_read(bd, 200 * BS, buf, BS));
	memset(buf, 0x77, BS);
	t_ok(bdev_write(bd, 50 * BS, buf, BS));
	t_eq(bdev_flush(bd), -EIO);
	/* The write was never made durable. */
	bdev_mem_power_cut(bd, BDEV_CUT_LOSE_ALL, 0);
	t_assert(!memcmp(data_of(bd, 50), img + 50 * BS, BS),
		"a write before a failed flush survived a power cut");
}

static void check_cleared(struct bdev *bd, unsigned char *img, unsigned char *buf)
{
	t_ok(bdev_wrap_fail(bd, 0, 0, 0));
	t_ok(bdev_read(bd, 0, buf, NBLK * BS));
	t_assert(!memcmp(buf, img, NBLK * BS), "contents differ at %ld", t_diff(buf, img, NBLK * BS));
	t_ok(bdev_write(bd, 20 * BS, img + 20 * BS, 20 * BS));
	t_ok(bdev_flush(bd));
}

static void check_save_load(struct bdev *bd, unsigned char *img)
{
	char *path = t_image("saved", 0);
	struct bdev *nbd;
	int fd;

	t_ok(bdev_mem_save(bd, path));
	fd = open(path, O_WRONLY | O_APPEND);
	t_assert(fd >= 0 && write(fd, "tail", 4) == 4, "appending to %s", path);
	close(fd);
	t_ok(bdev_mem_load(path, BS, &nbd));
	t_assert(nbd->size == NBLK * BS && nbd->block_size == BS && nbd->fd == -1 && !nbd->path,
		"loaded device: size %llu block %u", (unsigned long long)nbd->size,
		nbd->block_size);
	t_assert(!memcmp(bdev_mem_data(nbd), img, NBLK * BS), "loaded contents differ");
	bdev_close(nbd);
	t_eq(bdev_mem_load("/nonexistent/image", BS, &nbd), -ENOENT);
	free(path);
}

/* One device throughout: each check finds the faults the ones before it
 * set, and the counts at the end are of them all. */
static void test_faults_and_save_load(void)
{
	unsigned char *img = t_alloc(NBLK * BS), *buf = t_alloc(NBLK * BS);
	struct bdev_stats st;
	struct bdev *bd;

	bd = t_dev_mem(NBLK * BS + 100, BS);
	t_assert(bd->size == NBLK * BS && bd->fd == -1 && !bd->path && !strcmp(bd->ops->name, "wrap") &&
		 !strcmp(bd->ops->lower(bd)->ops->name, "mem"),
		"new memory device: size %llu", (unsigned long long)bd->size);
	t_fill(img, NBLK * BS, 42);
	t_ok(bdev_write(bd, 0, img, NBLK * BS));
	t_assert(!memcmp(bdev_mem_data(bd), img, NBLK * BS), "contents differ after a write");
	check_read_faults(bd, img, buf);
	check_byte_fault(bd, img, buf);
	check_batch(bd, buf);
	check_flush_fault(bd, img, buf);
	check_cleared(bd, img, buf);
	check_save_load(bd, img);
	bdev_get_stats(bd, &st);
	t_assert(st.flushes == 3 && st.writes == 7,
		"stats: %llu flushes %llu writes", (unsigned long long)st.flushes,
		(unsigned long long)st.writes);
	bdev_close(bd);
	bdev_free_buf(img);
	bdev_free_buf(buf);
}

T_MAIN(T_CASE(test_faults_and_save_load))
