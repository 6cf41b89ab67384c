/*
 * t_flush_range - a flush limited by bdev_set_flush_end() writes back the
 * pages of the file before the end and leaves those after it, which a
 * shared mapping dirtied (a reserved region), to their owner's msync.
 *
 * The page cache's dirty counts of each range come from cachestat(2)
 * (Linux 6.5); the image is buffered, so that the device's own writes
 * are in the page cache too and the flush must write them back.  The
 * pread backend, which has no ranged fsync, and the memory device, whose
 * crash images must not change, still cover everything.
 */
#include "bdev_test.h"
#include "t_bdev.h"

#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef __NR_cachestat
#define __NR_cachestat 451
#endif

#define BS      4096u
#define SIZE    (64u * BS)
#define END     (48u * BS)       /* the flush end: regions from here on */

struct cs_range { uint64_t off, len; };
struct cs {
	uint64_t nr_cache, nr_dirty, nr_writeback, nr_evicted, nr_recently_evicted;
};

/* Dirty pages of the file in [off, off + len), or -1 without cachestat. */
static long dirty_pages(int fd, uint64_t off, uint64_t len)
{
	struct cs_range r = { off, len };
	struct cs st;

	if (syscall(__NR_cachestat, fd, &r, &st, 0))
		return -1;
	return (long)(st.nr_dirty + st.nr_writeback);
}

/* Skip a case that counts dirty pages where there is no cachestat(2);
 * before the case allocates anything, since a skip leaves the case. */
static void need_cachestat(void)
{
	char *path = t_image("probe", BS);
	int fd = open(path, O_RDONLY), err;
	long n;

	t_assert(fd >= 0, "open: %s", strerror(errno));
	n = dirty_pages(fd, 0, BS);
	err = errno;
	close(fd);
	free(path);
	if (n < 0)
		t_skip_case("no cachestat(2): %s", strerror(err));
}

/* The mapping: this much of the file from the flush end on. */
#define MAPLEN  (16u * BS)

/*
 * One try: the device writes just before @end, the mapping dirties the
 * first page after it and one further on, the device flushes.  Whether
 * those two pages are still dirty after the flush.
 */
static bool flush_leaves_mapping(struct bdev *bd, uint64_t end, uint8_t *map,
				 uint8_t *buf, const char *what)
{
	bool left;

	t_ok(bdev_write(bd, end - BS, buf, BS));
	map[0]++;
	map[5 * BS]++;
	t_assert(dirty_pages(bd->fd, end, MAPLEN) == 2,
		 "%s: the mapping's pages are not dirty", what);
	t_ok(bdev_flush(bd));
	t_eq(dirty_pages(bd->fd, 0, end), 0);
	left = dirty_pages(bd->fd, end, MAPLEN) == 2;
	t_ok(msync(map, MAPLEN, MS_SYNC));
	t_eq(dirty_pages(bd->fd, end, MAPLEN), 0);
	return left;
}

/* The host's own writeback (other programs' dirty memory past its
 * threshold) may clean the pages between two calls: a few tries, and
 * one in which the flush left them is enough, while a flush that
 * covers them cleans them every time. */
#define TRIES 5

/* Whether a flush with the end at @end leaves the mapping's pages after
 * it dirty (@want) or cleans them. */
static void check(struct bdev *bd, uint64_t end, bool want, const char *what)
{
	uint8_t *buf = t_alloc(BS), *map;
	bool left = false;

	t_ok(bdev_set_flush_end(bd, end));
	map = mmap(NULL, MAPLEN, PROT_READ | PROT_WRITE, MAP_SHARED, bd->fd, (off_t)end);
	t_assert(map != MAP_FAILED, "mmap: %s", strerror(errno));
	t_fill(buf, BS, 7);
	for (int i = 0; i < (want ? TRIES : 1) && !left; i++)
		left = flush_leaves_mapping(bd, end, map, buf, what);
	t_assert(left == want, want ? "%s: the flush wrote back the pages after its "
		 "end, %d times" : "%s: the flush left the pages after its end (%d)",
		 what, TRIES);
	munmap(map, MAPLEN);
	bdev_free_buf(buf);
	printf("ok: %s\n", what);
}

/*
 * Beyond the 32 bits of the fsync's length: a direct device still leaves
 * the pages after the end (its own writes are in no page), a buffered
 * one syncs the whole file.  The image is sparse.
 */
static void test_big(void)
{
	uint64_t end = 9ull << 29;                  /* 4.5 GiB */
	struct bdev_open_opts o = { .block_size = BS };
	char *path;
	struct bdev *bd;

	need_cachestat();
	path = t_image("big", end + MAPLEN);
	t_ok(bdev_open_uring(path, &o, &bd));
	if (bd->direct)
		check(bd, end, true, "io_uring, direct, end past 4 GiB");
	else
		printf("ok: io_uring, direct, end past 4 GiB: no O_DIRECT here, not run\n");
	bdev_close(bd);
	o.no_direct = true;
	t_ok(bdev_open_uring(path, &o, &bd));
	check(bd, end, false, "io_uring, buffered, end past 4 GiB: the whole file");
	bdev_close(bd);
	free(path);
}

/* Without an end (or at the size) a flush covers the whole file. */
static void check_whole(struct bdev *bd)
{
	uint8_t *map = mmap(NULL, SIZE - END, PROT_READ | PROT_WRITE, MAP_SHARED,
			    bd->fd, END);

	t_assert(map != MAP_FAILED, "mmap: %s", strerror(errno));
	t_ok(bdev_set_flush_end(bd, SIZE));
	t_eq(bd->flush_end, 0);
	map[0] = 3;
	t_ok(bdev_flush(bd));
	t_eq(dirty_pages(bd->fd, END, SIZE - END), 0);
	munmap(map, SIZE - END);
	printf("ok: no end\n");
}

/* The pread backend syncs the whole file whatever the end says. */
static void check_pread(const char *path)
{
	struct bdev_open_opts o = { .block_size = BS, .no_direct = true };
	struct bdev *bd;
	uint8_t *map;

	t_ok(bdev_open_pread(path, &o, &bd));
	t_ok(bdev_set_flush_end(bd, END));
	map = mmap(NULL, SIZE - END, PROT_READ | PROT_WRITE, MAP_SHARED, bd->fd, END);
	t_assert(map != MAP_FAILED, "mmap: %s", strerror(errno));
	map[0] = 4;
	t_ok(bdev_flush(bd));
	t_eq(dirty_pages(bd->fd, END, SIZE - END), 0);
	munmap(map, SIZE - END);
	bdev_close(bd);
	printf("ok: pread, the whole file\n");
}

/* On the memory device a flush with an end still makes every completed
 * write durable: a power cut keeps a write after the end too. */
static void test_mem(void)
{
	uint8_t *buf = t_alloc(BS);
	struct bdev *bd;

	t_ok(bdev_mem_create(SIZE, BS, &bd));
	t_ok(bdev_set_flush_end(bd, END));
	t_fill(buf, BS, 9);
	t_ok(bdev_write(bd, END + BS, buf, BS));
	t_ok(bdev_flush(bd));
	bdev_mem_power_cut(bd, BDEV_CUT_LOSE_ALL, 0);
	t_eq(t_diff((uint8_t *)bdev_mem_data(bd) + END + BS, buf, BS), -1);
	bdev_close(bd);
	bdev_free_buf(buf);
	printf("ok: memory device, every write\n");
}

static void test_uring_buffered(void)
{
	struct bdev_open_opts o = { .block_size = BS, .no_direct = true };
	char *path;
	struct bdev *bd;

	need_cachestat();
	path = t_image("img", SIZE);
	t_ok(bdev_open_uring(path, &o, &bd));
	t_eq(bdev_set_flush_end(bd, END + 1), -EINVAL);
	t_eq(bdev_set_flush_end(bd, SIZE + BS), -EINVAL);
	check(bd, END, true, "io_uring, buffered");
	check_whole(bd);
	bdev_close(bd);
	free(path);
}

static void test_pread(void)
{
	char *path;

	need_cachestat();
	path = t_image("img", SIZE);
	check_pread(path);
	free(path);
}

T_MAIN(T_CASE(test_uring_buffered), T_CASE(test_pread), T_CASE(test_mem), T_CASE(test_big))
