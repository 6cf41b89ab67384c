/*
 * io.c - fsck's reads and writes, and the fixed places of the layout.
 *
 * fsck reads the device with the filesystem's block size and writes each
 * repair at once: it keeps no cache, so a block read after a repair is the
 * repaired one.  A read-only check writes nothing (bdev refuses, and the
 * passes never try: fsck_fix answers no).
 */
#include "fsck_i.h"

#include <errno.h>

int fsck_read(struct fsck_ctx *c, uint64_t blk, void *buf)
{
	if (blk >= le64toh(c->sb.s_device_blocks))
		return -EINVAL;
	return bdev_read(c->bd, blk * c->bs, buf, c->bs);
}

int fsck_write(struct fsck_ctx *c, uint64_t blk, const void *buf)
{
	int err;

	if (!c->rw || blk >= c->nblocks)
		return -EROFS;
	err = bdev_write(c->bd, blk * c->bs, buf, c->bs);
	if (err)
		mlog_err("cannot write block %" PRIu64 ": %s", blk, strerror(-err));
	else
		c->res->changed = true;
	return err;
}

int fsck_read_batch(struct fsck_ctx *c, const uint64_t *blks, void **bufs,
		    unsigned int n)
{
	struct bdev_req reqs[64], *ptrs[64];
	int err = 0;

	for (unsigned int done = 0; done < n && !err; ) {
		unsigned int k = UT_MIN(n - done, (unsigned int)UT_ARRAY_SIZE(reqs));

		for (unsigned int i = 0; i < k; i++) {
			bdev_req_init(&reqs[i], BDEV_OP_READ, blks[done + i] * c->bs,
				      bufs[done + i], c->bs);
			ptrs[i] = &reqs[i];
		}
		err = bdev_submit_wait(c->bd, ptrs, k);
		done += k;
	}
	return err;
}

uint64_t fsck_inode_block(const struct fsck_ctx *c, uint32_t ino, uint32_t *off)
{
	return fmt_inode_block(&c->sb, fsck_layout_itable(c, (ino - 1) / c->ipg), ino, off);
}

/* The unit of the device (its block size, at most the filesystem's)
 * holding the inode: inodes never straddle one. */
static uint64_t inode_unit(const struct fsck_ctx *c, uint32_t ino, uint32_t *off)
{
	uint32_t o;
	uint64_t byte = fsck_inode_block(c, ino, &o) * c->bs + o;

	*off = (uint32_t)(byte % c->bd->block_size);
	return byte - *off;
}

int fsck_read_inode(struct fsck_ctx *c, uint32_t ino, struct mfs_inode *in)
{
	uint32_t off;
	uint64_t at = inode_unit(c, ino, &off);
	uint32_t unit_len = c->bd->block_size;
	char *unit = bdev_alloc_buf(unit_len);
	int err = unit ? bdev_read(c->bd, at, unit, unit_len) : -ENOMEM;

	if (!err)
		memcpy(in, unit + off, sizeof(*in));
	bdev_free_buf(unit);
	return err;
}

int fsck_write_inode(struct fsck_ctx *c, uint32_t ino, struct mfs_inode *in)
{
	uint32_t off;
	uint64_t at = inode_unit(c, ino, &off);
	uint32_t unit_len = c->bd->block_size;
	char *unit;
	int err;

	if (!c->rw)
		return -EROFS;
	unit = bdev_alloc_buf(unit_len);
	err = unit ? bdev_read(c->bd, at, unit, unit_len) : -ENOMEM;
	in->i_checksum = htole32(fmt_inode_csum(&c->sb, ino, in));
	if (!err) {
		memcpy(unit + off, in, sizeof(*in));
		err = bdev_write(c->bd, at, unit, unit_len);
	}
	if (err)
		mlog_err("cannot write inode %" PRIu32 ": %s", ino, strerror(-err));
	else
		c->res->changed = true;
	bdev_free_buf(unit);
	return err;
}

uint64_t fsck_layout_bbitmap(const struct fsck_ctx *c, uint32_t g)
{
	return fmt_group_first_block(&c->sb, g) + fmt_group_super_blocks(&c->sb, g);
}

bool fsck_is_group_meta(const struct fsck_ctx *c, uint64_t blk)
{
	uint64_t rel;
	uint32_t g;

	if (blk < c->fdb || blk >= c->nblocks)
		return false;
	rel = blk - c->fdb;
	g = (uint32_t)(rel / c->bpg);
	return rel % c->bpg < fmt_group_meta_blocks(&c->sb, g);
}

bool fsck_block_ok(const struct fsck_ctx *c, uint64_t blk)
{
	return blk >= c->fdb && blk < c->nblocks && !fsck_is_group_meta(c, blk);
}

bool fsck_slot_in_use(const struct mfs_inode *in)
{
	return in->i_mode && !in->i_dtime;
}

/* Also where a long check notices it was cancelled, problem or not. */
void fsck_progress(struct fsck_ctx *c, uint64_t done, uint64_t total)
{
	if (c->o->cancel && *c->o->cancel) {
		c->res->exit |= FSCK_EXIT_CANCELED;
		c->stop = true;
	}
	if (c->o->progress)
		c->o->progress(c->o->arg, c->pass, done, total);
}
