/*
 * damage_dx.c - damage to a directory's hashed index (FORMAT.md,
 * "Directory index"): /many, whose entries fill several blocks, has one.
 * Every kind leaves the entries themselves whole, so fsck must rebuild
 * the index from them and lose no entry.  Each block changed is resealed
 * but for dx-csum, whose checksum is the damage.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "mkdamage.h"
#include "util.h"

/* Block @lblk of /many into d->blk, its place in @pblk.  /many's own
 * size may change: a rebuilt index takes new blocks, and the old index
 * blocks stay as empty ones. */
static int many_block(struct md_img *d, uint64_t lblk, uint32_t *dir, uint64_t *pblk)
{
	struct mfs_inode in;
	int err;

	*dir = md_ino(d, "/many");
	err = *dir ? md_get_inode(d, *dir, &in) : -ENOENT;
	if (!err && !(le32toh(in.i_flags) & MFS_INDEX_FL)) {
		md_say("# /many has no index (an image made without dir_index)");
		return -EINVAL;
	}
	if (!err && lblk == MFS_DX_ROOT_LBLK)      /* where every kind starts */
		md_lost(d, "/many");
	if (!err)
		err = fmt_raw_bmap(&d->raw, *dir, &in, lblk, pblk);
	if (!err && !*pblk)
		err = -ENOENT;
	return err ? err : md_read_block(d, *pblk, d->blk);
}

static uint32_t count(struct md_img *d)
{
	return le16toh(fmt_dx_head(d->blk)->dx_count);
}

/* One of /many's level-0 index blocks (the root, if it is one). */
static int many_leaf(struct md_img *d, uint32_t *dir, uint64_t *pblk)
{
	int err = many_block(d, MFS_DX_ROOT_LBLK, dir, pblk);

	for (unsigned i = 0; !err && fmt_dx_head(d->blk)->dx_level; i++) {
		uint32_t at = md_pick(d, count(d));

		if (i > MFS_DX_MAX_LEVEL || !count(d))
			return -EINVAL;
		err = many_block(d, le32toh(fmt_dx_recs(d->blk)[at].dr_lblk), dir, pblk);
	}
	if (!err && count(d) < 3)
		err = -EINVAL;
	return err;
}

static int dx_csum(struct md_img *d)
{
	uint32_t dir, *c;
	uint64_t pblk;
	int err = many_block(d, MFS_DX_ROOT_LBLK, &dir, &pblk);

	if (err)
		return err;
	c = (uint32_t *)((char *)d->blk + d->bs - 4);
	md_say("directory %" PRIu32 " (/many) index root (block %" PRIu64 "): checksum "
	       "0x%08" PRIx32 " -> 0x%08" PRIx32, dir, pblk, le32toh(*c),
	       le32toh(*c) ^ 0x10);
	*c = htole32(le32toh(*c) ^ 0x10);
	return md_write_block(d, pblk, d->blk);
}

static int dx_record_block(struct md_img *d)
{
	uint32_t dir, at, old, new;
	struct mfs_dx_rec *r;
	uint64_t pblk;
	int err = many_leaf(d, &dir, &pblk);

	if (err)
		return err;
	at = md_pick(d, count(d));
	r = &fmt_dx_recs(d->blk)[at];
	old = le32toh(r->dr_lblk);
	new = old ? 0 : 3;
	r->dr_lblk = htole32(new);
	md_say("directory %" PRIu32 " (/many) index block %" PRIu64 ": record %" PRIu32
	       " names block %" PRIu32 " -> %" PRIu32, dir, pblk, at, old, new);
	return md_put_dirblock(d, dir, pblk);
}

static int dx_record_gone(struct md_img *d)
{
	uint32_t dir;
	uint64_t pblk;
	int err = many_leaf(d, &dir, &pblk);

	if (err)
		return err;
	md_say("directory %" PRIu32 " (/many) index block %" PRIu64 ": records %" PRIu32
	       " -> %" PRIu32 " (the last one dropped)", dir, pblk, count(d), count(d) - 1);
	fmt_dx_head(d->blk)->dx_count = htole16((uint16_t)(count(d) - 1));
	return md_put_dirblock(d, dir, pblk);
}

static int dx_records_order(struct md_img *d)
{
	struct mfs_dx_rec *r, t;
	uint32_t dir, last;
	uint64_t pblk;
	int err = many_leaf(d, &dir, &pblk);

	if (err)
		return err;
	r = fmt_dx_recs(d->blk);
	last = count(d) - 1;
	if (fmt_dx_rec_hash(&r[0]) == fmt_dx_rec_hash(&r[last]))
		return -EINVAL;
	md_say("directory %" PRIu32 " (/many) index block %" PRIu64 ": records 0 and %"
	       PRIu32 " swapped", dir, pblk, last);
	t = r[0];
	r[0] = r[last];
	r[last] = t;
	return md_put_dirblock(d, dir, pblk);
}

static int dx_level(struct md_img *d)
{
	struct mfs_dx_head *hd;
	uint64_t pblk;
	uint32_t dir;
	int err = many_block(d, MFS_DX_ROOT_LBLK, &dir, &pblk);

	if (err)
		return err;
	hd = fmt_dx_head(d->blk);
	md_say("directory %" PRIu32 " (/many) index root: level %u -> %u", dir,
	       hd->dx_level, hd->dx_level + 1);
	hd->dx_level++;
	return md_put_dirblock(d, dir, pblk);
}

/* The room map says every block has all the room there is. */
static int dx_room_overstated(struct md_img *d)
{
	struct mfs_inode in;
	uint64_t pblk, blocks;
	uint32_t dir, per = fmt_dx_limit(&d->raw.sb, MFS_DX_FMAP);
	int err = many_block(d, MFS_DX_ROOT_LBLK, &dir, &pblk);

	if (!err && !le32toh(fmt_dx_root(d->blk)->dr_fmap_count))
		err = -EINVAL;
	if (!err)
		err = md_get_inode(d, dir, &in);
	if (!err)
		err = many_block(d, le32toh(fmt_dx_root(d->blk)->dr_fmap[0]), &dir, &pblk);
	if (err)
		return err;
	blocks = UT_MIN(le64toh(in.i_size) / d->bs, per);
	md_say("directory %" PRIu32 " (/many) room map (block %" PRIu64 "): the bytes "
	       "of its %" PRIu64 " blocks set to 255", dir, pblk, blocks);
	memset(fmt_dx_fmap(d->blk), 255, blocks);
	return md_put_dirblock(d, dir, pblk);
}

static int dx_room_unmapped(struct md_img *d)
{
	struct mfs_dx_root_info *ri;
	uint64_t pblk;
	uint32_t dir;
	int err = many_block(d, MFS_DX_ROOT_LBLK, &dir, &pblk);

	if (err)
		return err;
	ri = fmt_dx_root(d->blk);
	md_say("directory %" PRIu32 " (/many) index root: room map blocks %" PRIu32
	       " -> 0", dir, le32toh(ri->dr_fmap_count));
	ri->dr_fmap_count = 0;
	return md_put_dirblock(d, dir, pblk);
}

/* /a/b, of one block, says it has an index. */
static int dx_flag_no_index(struct md_img *d)
{
	uint32_t dir = md_ino(d, "/a/b");
	struct mfs_inode in;
	int err = dir ? md_get_inode(d, dir, &in) : -ENOENT;

	if (err)
		return err;
	md_say("inode %" PRIu32 " (/a/b): i_flags 0x%" PRIx32 " -> 0x%" PRIx32
	       " (an index it does not have)", dir, le32toh(in.i_flags),
	       le32toh(in.i_flags) | MFS_INDEX_FL);
	in.i_flags = htole32(le32toh(in.i_flags) | MFS_INDEX_FL);
	return md_put_inode(d, dir, &in, true);
}

const struct md_kind md_kinds_dx[] = {
	{ "dx-csum", "/many's index root with a wrong checksum", dx_csum },
	{ "dx-record-block", "a record of /many's index names the wrong block",
	  dx_record_block },
	{ "dx-record-gone", "a record of /many's index missing", dx_record_gone },
	{ "dx-records-order", "two records of /many's index out of order",
	  dx_records_order },
	{ "dx-level", "/many's index root one level too high", dx_level },
	{ "dx-room-overstated", "/many's room map says every block has room",
	  dx_room_overstated },
	{ "dx-room-unmapped", "/many's index lists no room map", dx_room_unmapped },
	{ "dx-flag-no-index", "/a/b, of one block, flagged as having an index",
	  dx_flag_no_index },
	{ NULL, NULL, NULL },
};
