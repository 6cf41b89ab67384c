/*
 * t_region.c - reserved regions: a byte range of an image file mapped
 * MAP_SHARED outside the cache.  Stores through the region reach the file
 * after pc_region_sync; region pages are never in the LRU or the budget;
 * a private writable mapping is refused with -EACCES, a range outside the
 * device with -EINVAL and a log line naming it; the memory device serves
 * regions from its own memory; and handing a region page to the regular
 * free path aborts (the bad_page check).
 */
#include "bdev_test.h"
#include "pc_test.h"
#include "t_pc.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define BS 4096u
#define DEV (256u * BS)

static char dir[] = "/tmp/t_region.XXXXXX";
static char path[64];

static void cleanup(void)
{
	unlink(path);
	rmdir(dir);
}

static struct bdev *open_image(bool ro)
{
	struct bdev_open_opts o = { .block_size = BS, .read_only = ro };
	struct bdev *bd;

	t_ok(bdev_open(path, &o, &bd));
	return bd;
}

static struct pc_cache *cache(void)
{
	struct pc_config cfg = { .block_size = BS, .budget = T_BUDGET(64, BS),
				 .no_flusher = true };
	struct pc_cache *c;

	t_ok(pc_cache_create(&cfg, &c));
	return c;
}

static void check_file_region(struct pc_cache *c, struct bdev *bd)
{
	struct pc_region *r;
	struct pc_stats st;
	struct pc_page *p;
	char buf[BS];
	int fd;

	t_ok(pc_region_map(c, bd, 8 * BS, 4 * BS, PC_REGION_WRITE, &r));
	t_eq(pc_region_len(r), 4 * BS);
	memset(pc_region_data(r), 0x11, 4 * BS);
	memcpy((char *)pc_region_data(r) + BS, "region", 6);
	t_ok(pc_region_sync(r, BS, BS));
	t_ok(pc_region_sync(r, 0, 0));
	t_eq(pc_region_sync(r, 0, 5 * BS), -EINVAL);

	fd = open(path, O_RDONLY);
	t_assert(fd >= 0, "open image");
	t_eq(pread(fd, buf, BS, 9 * BS), BS);
	close(fd);
	t_assert(!memcmp(buf, "region", 6) && buf[6] == 0x11, "not in the file");

	p = pc_region_page(r, 1);
	t_assert(p && p->data == (char *)pc_region_data(r) + BS, "page 1");
	t_assert(PageUptodate(p) && !PageLRU(p) && !PageDirty(p), "flags");
	t_eq(pc_region_page(r, 4), NULL);
	pc_get_stats(c, &st);
	t_eq(st.region_bytes, 4 * BS);
	t_eq(st.pages, 0);
	t_eq(st.in_use, 0);
	pc_region_unmap(r);
	pc_get_stats(c, &st);
	t_eq(st.region_bytes, 0);
}

static void check_refusals(struct pc_cache *c, struct bdev *bd)
{
	struct pc_region *r;

	t_eq(pc_region_map(c, bd, 0, BS, PC_REGION_PRIVATE | PC_REGION_WRITE, &r),
	     -EACCES);
	t_ok(pc_region_map(c, bd, 0, BS, PC_REGION_PRIVATE, &r));
	pc_region_unmap(r);

	t_log_capture();
	t_eq(pc_region_map(c, bd, DEV - BS, 2 * BS, 0, &r), -EINVAL);
	t_eq(t_log_count("region [1044480, 1052672) lies outside the device"), 1);
	t_eq(pc_region_map(c, bd, UINT64_MAX - BS + 1, 2 * BS, 0, &r), -EINVAL);
	t_eq(pc_region_map(c, bd, 0, 0, 0, &r), -EINVAL);
	t_eq(pc_region_map(c, bd, 100, BS, 0, &r), -EINVAL);
	t_eq(t_log_count("lies outside the device"), 3);
}

/* The view of block 9, where check_file_region wrote "region": written
 * here too, so that this case also runs alone. */
static void check_read_only(struct pc_cache *c)
{
	int fd = open(path, O_WRONLY);
	struct bdev *bd;
	struct pc_region *r;

	t_assert(fd >= 0 && pwrite(fd, "region", 6, 9 * BS) == 6, "image");
	close(fd);
	bd = open_image(true);
	t_eq(pc_region_map(c, bd, 0, BS, PC_REGION_WRITE, &r), -EROFS);
	t_ok(pc_region_map(c, bd, 9 * BS, BS, 0, &r));
	t_assert(!memcmp(pc_region_data(r), "region", 6), "read-only view");
	pc_region_unmap(r);
	bdev_close(bd);
}

static void check_mem_device(struct pc_cache *c)
{
	struct bdev *bd;
	struct pc_region *r;

	t_ok(bdev_mem_create(DEV, BS, &bd));
	t_ok(pc_region_map(c, bd, 2 * BS, BS, PC_REGION_WRITE, &r));
	t_assert(pc_region_data(r) == (char *)bdev_mem_data(bd) + 2 * BS,
		 "memory device region is not the device's memory");
	t_ok(pc_region_sync(r, 0, 0));
	pc_region_unmap(r);
	bdev_close(bd);
}

/* The bad_page analogue: a put that would free a region page aborts. */
static void check_bad_page(struct pc_cache *c, struct bdev *bd)
{
	struct pc_region *r;
	int status;
	pid_t pid;

	t_ok(pc_region_map(c, bd, 0, BS, 0, &r));
	fflush(NULL);
	pid = fork();
	t_assert(pid >= 0, "fork");
	if (pid == 0) {
		pc_put_page(pc_region_page(r, 0));
		_exit(0);
	}
	t_eq(waitpid(pid, &status, 0), pid);
	t_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT,
		 "freeing a region page did not abort (status %#x)", status);
	pc_region_unmap(r);
}

/* The image every case maps, removed at exit. */
static void setup(void)
{
	int fd;

	t_assert(mkdtemp(dir), "mkdtemp");
	snprintf(path, sizeof(path), "%s/img", dir);
	atexit(cleanup);
	fd = open(path, O_CREAT | O_RDWR, 0600);
	t_assert(fd >= 0 && ftruncate(fd, DEV) == 0, "image");
	close(fd);
}

/* Each case with a cache of its own, and the image open when it maps it. */
static void with_image(void (*check)(struct pc_cache *, struct bdev *))
{
	struct pc_cache *c = cache();
	struct bdev *bd = open_image(false);

	check(c, bd);
	bdev_close(bd);
	pc_cache_destroy(c);
}

static void with_cache(void (*check)(struct pc_cache *))
{
	struct pc_cache *c = cache();

	check(c);
	pc_cache_destroy(c);
}

static void test_file_region(void)
{
	with_image(check_file_region);
}

static void test_refusals(void)
{
	with_image(check_refusals);
}

static void test_bad_page(void)
{
	with_image(check_bad_page);
}

static void test_read_only(void)
{
	with_cache(check_read_only);
}

static void test_mem_device(void)
{
	with_cache(check_mem_device);
}

T_MAIN_SETUP(setup(), T_CASE(test_file_region), T_CASE(test_refusals), T_CASE(test_bad_page),
	     T_CASE(test_read_only), T_CASE(test_mem_device))
