/*
 * t_host_reads.c - reads of one block through the host's page cache
 * (bdev_open_opts.host_reads) next to direct writes:
 * - a lone read of one block its caller waits for, which the host does
 *   not hold, is read on the caller's thread (host_waited), and the next
 *   read of that block is answered from the host's cache;
 * - a read nobody waits for, a batch of two and a read of two blocks go
 *   through the device's queue;
 * - every read returns what was written, also after a direct write over
 *   a block the host's cache held (the write drops the host's copy).
 * Skipped (exit 77) where the work directory takes no O_DIRECT.
 */
#include "t_bdev.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#define BS 4096u
#define BLOCKS 64u

static char *path;
static unsigned char *want;          /* what each block should hold */

/* The host's cache forgets the image. */
static void drop_host(void)
{
	int fd = open(path, O_RDONLY);

	t_assert(fd >= 0, "open %s", path);
	t_ok(fdatasync(fd) ? -errno : 0);     /* dirty pages would stay */
	t_ok(-posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED));
	close(fd);
}

static uint64_t waited(struct bdev *bd)
{
	struct bdev_stats st;

	bdev_get_stats(bd, &st);
	return st.host_waited;
}

static void check(const unsigned char *buf, uint64_t blk, unsigned int n)
{
	t_eq(t_diff(buf, want + blk * BS, (size_t)n * BS), -1L);
}

/* Block @blk read with bdev_read (a lone request waited for). */
static void read_one(struct bdev *bd, uint64_t blk, unsigned char *buf)
{
	t_ok(bdev_read(bd, blk * BS, buf, BS));
	check(buf, blk, 1);
}

static void test_host_reads(void)
{
	struct bdev_open_opts o = { .block_size = BS, .host_reads = true };
	unsigned char *buf = t_alloc(2 * BS);
	struct bdev_req reqs[2], *rp[2] = { &reqs[0], &reqs[1] };
	struct t_batch b;
	struct bdev *bd;
	uint64_t w;

	path = t_image("img", (uint64_t)BLOCKS * BS);
	t_ok(bdev_open(path, &o, &bd));
	if (!bd->host_reads) {
		printf("SKIP: no O_DIRECT in %s\n", t_workdir());
		exit(77);
	}
	want = t_alloc((size_t)BLOCKS * BS);
	t_fill(want, (size_t)BLOCKS * BS, 7);
	t_ok(bdev_write(bd, 0, want, (size_t)BLOCKS * BS));

	drop_host();
	w = waited(bd);
	read_one(bd, 3, buf);
	t_eq(waited(bd), w + 1);
	read_one(bd, 3, buf);                     /* the host holds it now */
	t_eq(waited(bd), w + 1);

	drop_host();                              /* nobody waits: queued */
	t_batch_init(&b, 1);
	bdev_req_init(&reqs[0], BDEV_OP_READ, 4 * BS, buf, BS);
	reqs[0].end_io = t_batch_end_io;
	reqs[0].private = &b;
	t_ok(bdev_submit(bd, rp, 1));
	t_batch_wait(&b);
	t_eq(b.errors, 0u);
	check(buf, 4, 1);
	t_eq(waited(bd), w + 1);

	drop_host();                              /* two waited for: queued */
	bdev_req_init(&reqs[0], BDEV_OP_READ, 5 * BS, buf, BS);
	bdev_req_init(&reqs[1], BDEV_OP_READ, 9 * BS, buf + BS, BS);
	t_ok(bdev_submit_wait(bd, rp, 2));
	check(buf, 5, 1);
	check(buf + BS, 9, 1);
	t_ok(bdev_read(bd, 20 * BS, buf, 2 * BS)); /* two blocks: direct */
	check(buf, 20, 2);
	t_eq(waited(bd), w + 1);

	/* A direct write over a block the host holds drops the host's copy:
	 * the next read misses, and finds the new bytes. */
	read_one(bd, 3, buf);
	read_one(bd, 3, buf);
	t_eq(waited(bd), w + 2);
	t_fill(want + 3 * BS, BS, 8);
	t_ok(bdev_write(bd, 3 * BS, want + 3 * BS, BS));
	read_one(bd, 3, buf);
	t_eq(waited(bd), w + 3);

	bdev_close(bd);
	bdev_free_buf(want);
	bdev_free_buf(buf);
	free(path);
	printf("ok: reads of one block through the host's cache\n");
}

T_MAIN(T_CASE(test_host_reads))
