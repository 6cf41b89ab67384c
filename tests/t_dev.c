/*
 * t_dev.c - the device the page cache's and the journal's tests run on.
 */
#include "bdev_test.h"
#include "t_dev.h"

#include "t.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* Long enough to reorder a batch, short enough for thousands of waits. */
#define ASYNC_DELAY_US 100u

enum t_dev_kind t_dev_kind(void)
{
	const char *v = getenv("MISCFS_TEST_BDEV");

	if (!v || !*v || !strcmp(v, "mem"))
		return T_DEV_MEM;
	if (!strcmp(v, "mem-async"))
		return T_DEV_MEM_ASYNC;
	if (!strcmp(v, "uring"))
		return T_DEV_URING;
	t_fail("MISCFS_TEST_BDEV=%s: expected mem, mem-async or uring", v);
}

bool t_dev_is_mem(void)
{
	return t_dev_kind() != T_DEV_URING;
}

/* The seed of the asynchronous device's order, printed once so that a
 * failure can be replayed (as far as timing allows). */
static uint64_t async_seed(void)
{
	static uint64_t seed;
	const char *v = getenv("MISCFS_TEST_SEED");

	if (seed)
		return seed;
	seed = v ? strtoull(v, NULL, 0) : (uint64_t)time(NULL) ^ (uint64_t)getpid() << 32;
	seed = seed ? seed : 1;
	fprintf(stderr, "mem-async: MISCFS_TEST_SEED=%llu\n", (unsigned long long)seed);
	return seed;
}

/* A file that disappears with the device: unlinked once it is open. */
static struct bdev *uring_dev(uint64_t size, uint32_t bs)
{
	const char *tmp = getenv("TMPDIR");
	struct bdev_open_opts o = { .block_size = bs };
	struct bdev *bd;
	char path[256];
	int fd;

	snprintf(path, sizeof(path), "%s/t_dev.XXXXXX", tmp ? tmp : "/tmp");
	fd = mkstemp(path);
	if (fd < 0 || ftruncate(fd, (off_t)size))
		t_fail("creating %s: %s", path, strerror(errno));
	close(fd);
	t_ok(bdev_open_uring(path, &o, &bd));
	unlink(path);
	return bd;
}

struct bdev *t_dev_create(uint64_t size, uint32_t bs)
{
	static uint64_t ndev;
	struct bdev *bd;

	if (t_dev_kind() == T_DEV_URING)
		return uring_dev(size, bs);
	bd = t_dev_mem(size, bs);
	if (t_dev_kind() == T_DEV_MEM_ASYNC)
		t_ok(bdev_mem_async(bd, ASYNC_DELAY_US, async_seed() + ndev++));
	return bd;
}
