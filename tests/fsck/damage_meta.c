/*
 * damage_meta.c - damage to the superblock, the group descriptors, the
 * bitmaps, the region table and the orphan list.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "mkdamage.h"

/* ---- superblock ---------------------------------------------------------- */

/* Damage to the primary superblock is repairable only from a backup: the
 * 4 KiB variant of 16 MiB has one group and none. */
static int need_backup(struct md_img *d)
{
	if (le32toh(d->raw.sb.s_groups_count) > 1)
		return 0;
	fprintf(stderr, "mkdamage: one group, so no backup superblock: this "
		"kind needs the 1 KiB variant\n");
	return -EINVAL;
}

static int sb_inodes_per_group(struct md_img *d)
{
	struct mfs_super *sb = &d->raw.sb;
	uint32_t old = le32toh(sb->s_inodes_per_group);
	uint32_t new = old - d->bs / MFS_INODE_SIZE * (1 + md_pick(d, 4));

	if (need_backup(d))
		return -EINVAL;
	sb->s_inodes_per_group = htole32(new);
	md_say("superblock: s_inodes_per_group %" PRIu32 " -> %" PRIu32, old, new);
	return md_put_sb(d, sb, true);
}

static int sb_free_blocks(struct md_img *d)
{
	struct mfs_super *sb = &d->raw.sb;
	uint64_t old = le64toh(sb->s_free_blocks_count);
	uint64_t new = le64toh(sb->s_blocks_count) + 1 + md_pick(d, 1000);

	if (need_backup(d))
		return -EINVAL;
	sb->s_free_blocks_count = htole64(new);
	md_say("superblock: s_free_blocks_count %" PRIu64 " -> %" PRIu64, old, new);
	return md_put_sb(d, sb, true);
}

static int sb_csum(struct md_img *d)
{
	struct mfs_super *sb = &d->raw.sb;
	uint32_t old = le32toh(sb->s_checksum), new = old ^ (1u << md_pick(d, 32));

	if (need_backup(d))
		return -EINVAL;
	sb->s_checksum = htole32(new);
	md_say("superblock: s_checksum 0x%08" PRIx32 " -> 0x%08" PRIx32, old, new);
	return md_put_sb(d, sb, false);
}

/* ---- group descriptors --------------------------------------------------- */

static uint32_t pick_group(struct md_img *d)
{
	return md_pick(d, le32toh(d->raw.sb.s_groups_count));
}

static int gd_bitmap_outside(struct md_img *d)
{
	uint32_t g = pick_group(d), groups = le32toh(d->raw.sb.s_groups_count);
	struct mfs_group_desc gd = d->raw.gdt[g];
	uint32_t old = le32toh(gd.bg_block_bitmap);
	uint64_t new = g + 1 < groups ? fmt_group_first_block(&d->raw.sb, g + 1) + 3
				      : fmt_group_first_block(&d->raw.sb, g) - 3;

	gd.bg_block_bitmap = htole32((uint32_t)new);
	md_say("group %" PRIu32 ": bg_block_bitmap %" PRIu32 " -> %" PRIu64
	       " (outside the group)", g, old, new);
	return md_put_gdesc(d, g, &gd, true);
}

static int gd_free_count(struct md_img *d)
{
	uint32_t g = pick_group(d);
	struct mfs_group_desc gd = d->raw.gdt[g];
	uint32_t old = le32toh(gd.bg_free_blocks_count), new = old - 7;

	gd.bg_free_blocks_count = htole32(new);
	md_say("group %" PRIu32 ": bg_free_blocks_count %" PRIu32 " -> %" PRIu32,
	       g, old, new);
	return md_put_gdesc(d, g, &gd, true);
}

static int gd_csum(struct md_img *d)
{
	uint32_t g = pick_group(d);
	struct mfs_group_desc gd = d->raw.gdt[g];
	uint32_t old = le32toh(gd.bg_checksum), new = old ^ 0x10;

	gd.bg_checksum = htole32(new);
	md_say("group %" PRIu32 ": bg_checksum 0x%08" PRIx32 " -> 0x%08" PRIx32,
	       g, old, new);
	return md_put_gdesc(d, g, &gd, false);
}

static int bitmap_csum(struct md_img *d, bool inodes)
{
	uint32_t g = pick_group(d);
	struct mfs_group_desc gd = d->raw.gdt[g];
	uint32_t *f = inodes ? &gd.bg_inode_bitmap_csum : &gd.bg_block_bitmap_csum;
	uint32_t old = le32toh(*f);

	*f = htole32(old ^ 0x100);
	md_say("group %" PRIu32 ": bg_%s_bitmap_csum 0x%08" PRIx32 " -> 0x%08" PRIx32
	       " (the bitmap itself unchanged)", g, inodes ? "inode" : "block", old,
	       old ^ 0x100);
	return md_put_gdesc(d, g, &gd, true);
}

static int bbitmap_csum(struct md_img *d) { return bitmap_csum(d, false); }
static int ibitmap_csum(struct md_img *d) { return bitmap_csum(d, true); }

/* ---- bitmaps ------------------------------------------------------------- */

static const struct md_entry *pick_file(struct md_img *d)
{
	return md_pick_entry(d, md_is_data_file);
}

static int bbitmap_used_clear(struct md_img *d)
{
	const struct md_entry *e = pick_file(d);
	struct mfs_inode in;
	uint64_t pblk = 0;
	int err = e ? md_get_inode(d, e->ino, &in) : -ENOENT;

	if (!err)
		err = fmt_raw_bmap(&d->raw, e->ino, &in, 0, &pblk);
	if (!err && !pblk)
		err = -ENOENT;
	if (!err)
		md_say("# block %" PRIu64 ": data block 0 of inode %" PRIu32 " (%s)",
		       pblk, e->ino, e->path);
	return err ? err : md_set_bit(d, MFS_CSUM_BBITMAP, pblk, false);
}

/* The free block or inode chosen by the seed, counting down from the end. */
static int pick_free(struct md_img *d, unsigned kind, uint64_t last, uint64_t *nr)
{
	unsigned int k = md_pick(d, 16);

	for (uint64_t n = last; n > MFS_FIRST_INO; n--) {
		bool set;
		int err = md_test_bit(d, kind, n, &set);

		if (err)
			return err;
		if (!set && !k--) {
			*nr = n;
			return 0;
		}
	}
	return -ENOSPC;
}

static int bbitmap_free_set(struct md_img *d)
{
	uint64_t nr;
	int err = pick_free(d, MFS_CSUM_BBITMAP, le64toh(d->raw.sb.s_blocks_count) - 1, &nr);

	return err ? err : md_set_bit(d, MFS_CSUM_BBITMAP, nr, true);
}

static int ibitmap_used_clear(struct md_img *d)
{
	const struct md_entry *e = pick_file(d);

	if (!e)
		return -ENOENT;
	md_say("# inode %" PRIu32 " is %s", e->ino, e->path);
	return md_set_bit(d, MFS_CSUM_IBITMAP, e->ino, false);
}

static int ibitmap_free_set(struct md_img *d)
{
	uint64_t nr;
	int err = pick_free(d, MFS_CSUM_IBITMAP, le32toh(d->raw.sb.s_inodes_count), &nr);

	return err ? err : md_set_bit(d, MFS_CSUM_IBITMAP, nr, true);
}

/* ---- region table -------------------------------------------------------- */

static int read_regions(struct md_img *d, struct mfs_region_entry **e)
{
	uint64_t tbl = le64toh(d->raw.sb.s_region_table);

	if (le32toh(d->raw.sb.s_region_count) < 2) {
		fprintf(stderr, "mkdamage: the image has fewer than two regions\n");
		return -ENOENT;
	}
	*e = (void *)((char *)d->blk + MFS_REGION_HDR_SIZE);
	return md_read_block(d, tbl, d->blk);
}

static int put_regions(struct md_img *d, bool csum)
{
	if (csum)
		fmt_block_set_csum(&d->raw.sb, MFS_CSUM_REGION, 0, d->blk);
	return md_write_block(d, le64toh(d->raw.sb.s_region_table), d->blk);
}

static int region_overlap_group(struct md_img *d)
{
	struct mfs_region_entry *e;
	int err = read_regions(d, &e);
	uint32_t i = md_pick(d, 2);
	uint64_t old, new = (le64toh(d->raw.sb.s_regions_start) - 64) & ~(uint64_t)7;

	if (err)
		return err;
	old = le64toh(e[i].re_start);
	e[i].re_start = htole64(new);
	md_say("region %u (%s): re_start %" PRIu64 " -> %" PRIu64 " (inside the groups,"
	       " which end at %" PRIu64 ")", i, e[i].re_name, old, new,
	       le64toh(d->raw.sb.s_blocks_count));
	return put_regions(d, true);
}

static int region_overlap_region(struct md_img *d)
{
	struct mfs_region_entry *e;
	int err = read_regions(d, &e);
	uint64_t old, new;

	if (err)
		return err;
	old = le64toh(e[1].re_start);
	new = le64toh(e[0].re_start) + 4096 / d->bs * (1 + md_pick(d, 4));
	e[1].re_start = htole64(new);
	md_say("region 1 (%s): re_start %" PRIu64 " -> %" PRIu64 " (inside region 0,"
	       " blocks %" PRIu64 "..%" PRIu64 ")", e[1].re_name, old, new,
	       le64toh(e[0].re_start), le64toh(e[0].re_start) + le64toh(e[0].re_blocks) - 1);
	return put_regions(d, true);
}

static int region_csum(struct md_img *d)
{
	struct mfs_region_entry *e;
	int err = read_regions(d, &e);
	uint32_t *c = (uint32_t *)((char *)d->blk + d->bs - 4);

	if (err)
		return err;
	md_say("region table: checksum 0x%08" PRIx32 " -> 0x%08" PRIx32,
	       le32toh(*c), le32toh(*c) ^ 0x1000);
	*c = htole32(le32toh(*c) ^ 0x1000);
	return put_regions(d, false);
}

/* ---- orphan list --------------------------------------------------------- */

static int set_next_orphan(struct md_img *d, uint32_t ino, uint32_t next)
{
	struct mfs_inode in;
	int err = md_get_inode(d, ino, &in);

	if (err)
		return err;
	md_say("inode %" PRIu32 " (%s): i_next_orphan %" PRIu32 " -> %" PRIu32, ino,
	       md_path(d, ino), le32toh(in.i_next_orphan), next);
	in.i_next_orphan = htole32(next);
	return md_put_inode(d, ino, &in, true);
}

static int set_last_orphan(struct md_img *d, uint32_t ino)
{
	struct mfs_super *sb = &d->raw.sb;

	md_say("superblock: s_last_orphan %" PRIu32 " -> %" PRIu32,
	       le32toh(sb->s_last_orphan), ino);
	sb->s_last_orphan = htole32(ino);
	return md_put_sb(d, sb, true);
}

static int orphan_loop(struct md_img *d)
{
	uint32_t a = md_ino(d, "/a/small2.txt"), b = md_ino(d, "/a/b/notes.txt");
	int err = a && b ? set_last_orphan(d, a) : -ENOENT;

	if (!err)
		err = set_next_orphan(d, a, b);
	if (!err)
		err = set_next_orphan(d, b, a);
	return err;
}

static int orphan_free_inode(struct md_img *d)
{
	uint64_t nr;
	int err = pick_free(d, MFS_CSUM_IBITMAP, le32toh(d->raw.sb.s_inodes_count), &nr);

	return err ? err : set_last_orphan(d, (uint32_t)nr);
}

const struct md_kind md_kinds_meta[] = {
	{ "sb-inodes-per-group", "superblock s_inodes_per_group disagrees with "
	  "s_inodes_count (checksum right; backups intact)", sb_inodes_per_group },
	{ "sb-free-blocks", "superblock s_free_blocks_count above s_blocks_count",
	  sb_free_blocks },
	{ "sb-csum", "primary superblock checksum wrong (backups intact)", sb_csum },
	{ "gd-bitmap-outside", "group descriptor's block bitmap outside its group",
	  gd_bitmap_outside },
	{ "gd-free-count", "group descriptor's free block count 7 too low",
	  gd_free_count },
	{ "gd-csum", "group descriptor checksum wrong", gd_csum },
	{ "bbitmap-used-clear", "block bitmap bit clear for a file's data block",
	  bbitmap_used_clear },
	{ "bbitmap-free-set", "block bitmap bit set for a free block", bbitmap_free_set },
	{ "ibitmap-used-clear", "inode bitmap bit clear for a file in use",
	  ibitmap_used_clear },
	{ "ibitmap-free-set", "inode bitmap bit set for a free inode", ibitmap_free_set },
	{ "bbitmap-csum", "block bitmap checksum (in the descriptor) wrong", bbitmap_csum },
	{ "ibitmap-csum", "inode bitmap checksum (in the descriptor) wrong", ibitmap_csum },
	{ "region-overlap-group", "a region starts inside the block groups",
	  region_overlap_group },
	{ "region-overlap-region", "region 1 starts inside region 0",
	  region_overlap_region },
	{ "region-csum", "region table checksum wrong", region_csum },
	{ "orphan-loop", "orphan list loops: s_last_orphan -> a -> b -> a", orphan_loop },
	{ "orphan-free-inode", "orphan list names a free inode", orphan_free_inode },
	{ NULL, NULL, NULL },
};
