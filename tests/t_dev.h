/*
 * t_dev.h - the device a test of the page cache or the journal runs on,
 * chosen by the environment variable MISCFS_TEST_BDEV:
 *
 *   mem        the memory device, completing inline (the default),
 *   mem-async  the memory device completing late and out of order
 *              (MISCFS_TEST_SEED sets the order; the seed is printed),
 *   uring      the io_uring backend over a temporary file.
 *
 * The memory devices come under a wrapper (bdev_wrap), so that the
 * bdev_wrap_* functions (faults, the write log, crash images) work on
 * them; the bdev_mem_* ones (contents, power cuts) work on the first two
 * kinds only: parts of a test that need them ask t_dev_is_mem().
 */
#ifndef MISCFS_T_DEV_H
#define MISCFS_T_DEV_H

#include "bdev.h"
#include "bdev_test.h"
#include "t.h"

#include <stdbool.h>
#include <stdint.h>

enum t_dev_kind { T_DEV_MEM, T_DEV_MEM_ASYNC, T_DEV_URING };

enum t_dev_kind t_dev_kind(void);
bool t_dev_is_mem(void);
/* A zero-filled device of @size bytes of the chosen kind; fails the test
 * if it cannot be made. */
struct bdev *t_dev_create(uint64_t size, uint32_t bs);

/* A zero-filled memory device under a wrapper without a log file. */
static inline struct bdev *t_dev_mem(uint64_t size, uint32_t bs)
{
	struct bdev *mem, *bd;

	t_ok(bdev_mem_create(size, bs, &mem));
	t_ok(bdev_wrap(mem, NULL, &bd));
	return bd;
}

#endif /* MISCFS_T_DEV_H */
