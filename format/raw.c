/*
 * raw.c - reading an unmounted image structure by structure.
 *
 * The tools use this instead of the page cache: they read each block once,
 * check it, and say precisely what is wrong with it when it is bad.
 */
#include "fmt.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

static int corrupt(struct fmt_raw *raw, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static int corrupt(struct fmt_raw *raw, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(raw->why, sizeof(raw->why), fmt, ap);
	va_end(ap);
	return -EUCLEAN;
}

int fmt_raw_read(struct fmt_raw *raw, uint64_t blk, void *buf)
{
	if (blk >= le64toh(raw->sb.s_device_blocks))
		return corrupt(raw, "block %" PRIu64 " is outside the filesystem", blk);
	return bdev_read(raw->bd, blk * raw->bs, buf, raw->bs);
}

static int read_gdt(struct fmt_raw *raw)
{
	uint32_t n = le16toh(raw->sb.s_gdt_blocks);
	uint64_t start = fmt_group_first_block(&raw->sb, raw->sb_group) + 1;

	raw->gdt = bdev_alloc_buf((size_t)n * raw->bs);
	if (!raw->gdt)
		return -ENOMEM;
	return bdev_read(raw->bd, start * raw->bs, raw->gdt, (size_t)n * raw->bs);
}

int fmt_raw_open(struct bdev *bd, struct fmt_raw *raw)
{
	bool torn;      /* a torn primary, whole fields: its log message says */
	int err;

	memset(raw, 0, sizeof(*raw));
	raw->bd = bd;
	err = fmt_sb_load_torn(bd, &raw->sb, &raw->sb_group, &torn);
	if (err)
		return err;
	raw->bs = fmt_block_size(&raw->sb);
	if (bd->block_size > raw->bs) {
		mlog_err("device opened with %" PRIu32 "-byte blocks cannot read a "
			 "filesystem of %" PRIu32 "-byte blocks", bd->block_size, raw->bs);
		return -EINVAL;
	}
	err = read_gdt(raw);
	if (err)
		fmt_raw_close(raw);
	return err;
}

void fmt_raw_close(struct fmt_raw *raw)
{
	bdev_free_buf(raw->gdt);
	raw->gdt = NULL;
}

static int check_gdesc(struct fmt_raw *raw, uint32_t g,
		       const struct mfs_group_desc *gd)
{
	uint64_t first = fmt_group_first_block(&raw->sb, g);
	uint64_t end = first + fmt_group_nblocks(&raw->sb, g);
	uint64_t itable = le32toh(gd->bg_inode_table);

	if (le32toh(gd->bg_checksum) != fmt_gdesc_csum(&raw->sb, g, gd))
		return corrupt(raw, "group descriptor %" PRIu32 ": checksum mismatch "
			       "(stored 0x%08" PRIx32 ", computed 0x%08" PRIx32 ")", g,
			       le32toh(gd->bg_checksum), fmt_gdesc_csum(&raw->sb, g, gd));
	if (le32toh(gd->bg_block_bitmap) < first || le32toh(gd->bg_block_bitmap) >= end ||
	    le32toh(gd->bg_inode_bitmap) < first || le32toh(gd->bg_inode_bitmap) >= end ||
	    itable < first || itable + fmt_itable_blocks(&raw->sb) > end)
		return corrupt(raw, "group descriptor %" PRIu32 ": bitmaps or inode "
			       "table outside the group", g);
	return 0;
}

int fmt_raw_gdesc(struct fmt_raw *raw, uint32_t group,
		  const struct mfs_group_desc **gd)
{
	if (group >= le32toh(raw->sb.s_groups_count))
		return corrupt(raw, "group %" PRIu32 " does not exist", group);
	*gd = &raw->gdt[group];
	return check_gdesc(raw, group, *gd);
}

int fmt_raw_inode(struct fmt_raw *raw, uint32_t ino, struct mfs_inode *in)
{
	uint32_t ipg = le32toh(raw->sb.s_inodes_per_group), off;
	const struct mfs_group_desc *gd;
	uint64_t blk;
	void *buf;
	int err;

	if (ino == 0 || ino > le32toh(raw->sb.s_inodes_count))
		return corrupt(raw, "inode %" PRIu32 " is out of range (1..%" PRIu32 ")",
			       ino, le32toh(raw->sb.s_inodes_count));
	err = fmt_raw_gdesc(raw, (ino - 1) / ipg, &gd);
	if (err)
		return err;
	blk = fmt_inode_block(&raw->sb, le32toh(gd->bg_inode_table), ino, &off);
	buf = bdev_alloc_buf(raw->bs);
	if (!buf)
		return -ENOMEM;
	err = fmt_raw_read(raw, blk, buf);
	if (!err)
		memcpy(in, (char *)buf + off, sizeof(*in));
	bdev_free_buf(buf);
	if (err || fmt_inode_never_used(in))
		return err;
	if (le32toh(in->i_checksum) != fmt_inode_csum(&raw->sb, ino, in))
		return corrupt(raw, "inode %" PRIu32 " (block %" PRIu64 "): checksum "
			       "mismatch (stored 0x%08" PRIx32 ", computed 0x%08" PRIx32 ")",
			       ino, blk, le32toh(in->i_checksum),
			       fmt_inode_csum(&raw->sb, ino, in));
	return 0;
}

static int raw_read_block(void *raw, uint64_t blk, void *buf)
{
	return fmt_raw_read(raw, blk, buf);
}

void fmt_raw_bmap_walk_init(struct fmt_raw *raw, uint32_t ino,
			    const struct mfs_inode *in, struct fmt_bmap_walk *w)
{
	*w = (struct fmt_bmap_walk){
		.sb = &raw->sb, .ino = ino, .in = in,
		.read_block = raw_read_block, .read_ctx = raw,
		.why = raw->why, .whylen = sizeof(raw->why),
	};
}

static int found_block(void *pblk, uint64_t lblk, uint64_t blk)
{
	(void)lblk;
	*(uint64_t *)pblk = blk;
	return 1;
}

int fmt_raw_bmap(struct fmt_raw *raw, uint32_t ino, const struct mfs_inode *in,
		 uint64_t lblk, uint64_t *pblk)
{
	struct fmt_bmap_walk w;
	int err;

	if (lblk >= fmt_max_file_blocks(raw->bs))
		return corrupt(raw, "block %" PRIu64 " is beyond the largest file", lblk);
	fmt_raw_bmap_walk_init(raw, ino, in, &w);
	w.data = found_block;
	w.ctx = pblk;
	*pblk = 0;
	err = fmt_bmap_walk(&w, lblk, lblk + 1);
	if (err < 0)
		*pblk = 0;
	return err < 0 ? err : 0;
}
