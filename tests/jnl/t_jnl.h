/*
 * t_jnl.h - a journal over the memory device and a page cache, for tests.
 */
#ifndef MISCFS_T_JNL_H
#define MISCFS_T_JNL_H

#include "jnl.h"
#include "pc.h"
#include "t.h"
#include "t_dev.h"

struct tj {
	struct bdev *bd;
	struct pc_cache *cache;
	struct pc_mapping *meta;
	uint64_t *map;            /* journal block -> device block */
	uint32_t nblocks;
	uint32_t bs;
	struct jnl *j;
	struct jnl_config cfg;
};

/*
 * A device (t_dev.h) of @dev_blocks blocks with a journal of @jblocks blocks
 * from block @jstart on; with @gap, the journal's blocks skip a few device
 * blocks in the middle (a journal file is not always contiguous).
 */
void tj_setup(struct tj *t, uint32_t bs, uint64_t dev_blocks, uint64_t jstart,
	      uint32_t jblocks, bool gap);
void tj_open(struct tj *t);
void tj_close(struct tj *t);      /* jnl_close, must succeed */
void tj_teardown(struct tj *t);   /* cache and device */

/* The content a test writes to block @blk as version @stamp. */
void tj_fill(void *buf, uint32_t bs, uint64_t blk, uint64_t stamp);
/* Journal block @blk with content tj_fill(@stamp) in handle @h. */
void tj_write(struct tj *t, struct jnl_handle *h, uint64_t blk, uint64_t stamp);
/* Does device block @blk of @bd hold tj_fill(@stamp)?  Stamp 0: zeros. */
bool tj_holds(struct bdev *bd, uint32_t bs, uint64_t blk, uint64_t stamp);
/* The stamp device block @blk holds, or UINT64_MAX if it is not one. */
uint64_t tj_stamp_of(struct bdev *bd, uint32_t bs, uint64_t blk);
/* The memory device as a power cut right now would leave it, recovered
 * (a new device, for bdev_close). */
struct bdev *tj_crash_now(struct tj *t, struct jnl_recovery *info);

#endif /* MISCFS_T_JNL_H */
