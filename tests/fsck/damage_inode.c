/*
 * damage_inode.c - damage to inodes: their fields, their block maps and
 * indirect blocks, and their extended attributes.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "mkdamage.h"

/* Load the inode of the entry @ok picks, and list it as damaged if @lost. */
static const struct md_entry *take(struct md_img *d, md_filter_fn ok,
				   struct mfs_inode *in, bool lost)
{
	const struct md_entry *e = md_pick_entry(d, ok);

	if (!e || md_get_inode(d, e->ino, in))
		return NULL;
	if (lost)
		md_lost(d, e->path);
	return e;
}

static bool is_dir(const struct md_img *d, const struct md_entry *e)
{
	return e->type == 'd';
}

static bool is_hard_linked(const struct md_img *d, const struct md_entry *e)
{
	return e->type == 'f' && md_names(d, e->ino) > 1;
}

/* A file that maps a data block by its first pointer. */
static bool has_block0(const struct md_img *d, const struct md_entry *e)
{
	return md_is_data_file(d, e) && e->size > MFS_INODE_XATTR_SIZE;
}

/* ---- block maps ---------------------------------------------------------- */

static int block_out_of_range(struct md_img *d)
{
	struct mfs_inode in;
	const struct md_entry *e = take(d, has_block0, &in, true);
	uint32_t old, new = (uint32_t)le64toh(d->raw.sb.s_blocks_count) + 100 + md_pick(d, 50);
	int err;

	if (!e)
		return -ENOENT;
	old = le32toh(in.i_block[0]);
	in.i_block[0] = htole32(new);
	md_say("inode %" PRIu32 " (%s): i_block[0] %" PRIu32 " -> %" PRIu32
	       " (beyond s_blocks_count)", e->ino, e->path, old, new);
	err = md_put_inode(d, e->ino, &in, true);
	return err ? err : md_set_bit(d, MFS_CSUM_BBITMAP, old, false);
}

static int block_shared(struct md_img *d)
{
	struct mfs_inode a, b;
	const struct md_entry *ea = take(d, has_block0, &a, true), *eb;
	uint32_t old;
	int err;

	d->seed++;
	eb = take(d, has_block0, &b, true);
	d->seed--;
	if (!ea || !eb || ea == eb)
		return -ENOENT;
	old = le32toh(b.i_block[0]);
	b.i_block[0] = a.i_block[0];
	md_say("inode %" PRIu32 " (%s): i_block[0] %" PRIu32 " -> %" PRIu32 " (block 0"
	       " of inode %" PRIu32 ", %s)", eb->ino, eb->path, old,
	       le32toh(a.i_block[0]), ea->ino, ea->path);
	err = md_put_inode(d, eb->ino, &b, true);
	return err ? err : md_set_bit(d, MFS_CSUM_BBITMAP, old, false);
}

/* /big's single-indirect block into d->blk. */
static int big_indirect(struct md_img *d, struct mfs_inode *in, uint32_t *ino,
			uint64_t *blk)
{
	int err;

	*ino = md_ino(d, "/big");
	err = *ino ? md_get_inode(d, *ino, in) : -ENOENT;
	if (err)
		return err;
	md_lost(d, "/big");
	*blk = le32toh(in->i_block[MFS_IND_BLOCK]);
	return md_read_block(d, *blk, d->blk);
}

static int ind_out_of_range(struct md_img *d)
{
	struct mfs_inode in;
	uint32_t ino, *ptr = NULL, k = md_pick(d, 8) * 17, old, new;
	uint64_t blk;
	int err = big_indirect(d, &in, &ino, &blk);

	if (err)
		return err;
	ptr = (uint32_t *)d->blk + k;
	old = le32toh(*ptr);
	new = (uint32_t)le64toh(d->raw.sb.s_blocks_count) + 7;
	*ptr = htole32(new);
	md_say("indirect block %" PRIu64 " of inode %" PRIu32 " (/big): pointer %" PRIu32
	       " %" PRIu32 " -> %" PRIu32 " (beyond s_blocks_count)", blk, ino, k, old, new);
	fmt_block_set_csum(&d->raw.sb, MFS_CSUM_INDIRECT, ino, d->blk);
	err = md_write_block(d, blk, d->blk);
	return err ? err : md_set_bit(d, MFS_CSUM_BBITMAP, old, false);
}

static int ind_csum(struct md_img *d)
{
	struct mfs_inode in;
	uint32_t ino, *c;
	uint64_t blk;
	int err = big_indirect(d, &in, &ino, &blk);

	if (err)
		return err;
	c = (uint32_t *)((char *)d->blk + d->bs - 4);
	md_say("indirect block %" PRIu64 " of inode %" PRIu32 " (/big): checksum 0x%08"
	       PRIx32 " -> 0x%08" PRIx32, blk, ino, le32toh(*c), le32toh(*c) ^ 4);
	*c = htole32(le32toh(*c) ^ 4);
	return md_write_block(d, blk, d->blk);
}

/* ---- inode fields -------------------------------------------------------- */

static int size_beyond_max(struct md_img *d)
{
	struct mfs_inode in;
	const struct md_entry *e = take(d, md_is_data_file, &in, true);
	uint64_t new = fmt_max_file_size(d->bs) + d->bs * (1 + md_pick(d, 100));

	if (!e)
		return -ENOENT;
	md_say("inode %" PRIu32 " (%s): i_size %" PRIu64 " -> %" PRIu64 " (beyond the "
	       "largest file)", e->ino, e->path, le64toh(in.i_size), new);
	in.i_size = htole64(new);
	return md_put_inode(d, e->ino, &in, true);
}

static int dir_size_unaligned(struct md_img *d)
{
	struct mfs_inode in;
	const struct md_entry *e = take(d, is_dir, &in, false);
	uint64_t new;

	if (!e)
		return -ENOENT;
	new = le64toh(in.i_size) + 100 + md_pick(d, 50);
	md_say("inode %" PRIu32 " (%s): i_size %" PRIu64 " -> %" PRIu64 " (not a "
	       "multiple of the block size)", e->ino, e->path, le64toh(in.i_size), new);
	in.i_size = htole64(new);
	return md_put_inode(d, e->ino, &in, true);
}

static int blocks_wrong(struct md_img *d)
{
	struct mfs_inode in;
	const struct md_entry *e = take(d, md_is_data_file, &in, false);
	uint64_t new;

	if (!e)
		return -ENOENT;
	new = le64toh(in.i_blocks) + d->bs / 512 * (1 + md_pick(d, 5));
	md_say("inode %" PRIu32 " (%s): i_blocks %" PRIu64 " -> %" PRIu64, e->ino,
	       e->path, le64toh(in.i_blocks), new);
	in.i_blocks = htole64(new);
	return md_put_inode(d, e->ino, &in, true);
}

static int mode_bad_type(struct md_img *d)
{
	static const uint16_t bad[] = { 0170000, 0030000, 0050000, 0070000 };
	struct mfs_inode in;
	const struct md_entry *e = take(d, md_is_data_file, &in, true);
	uint16_t old, new;

	if (!e)
		return -ENOENT;
	old = le16toh(in.i_mode);
	new = (uint16_t)((old & 07777) | bad[md_pick(d, 4)]);
	md_say("inode %" PRIu32 " (%s): i_mode 0%o -> 0%o (no such file type)",
	       e->ino, e->path, old, new);
	in.i_mode = htole16(new);
	return md_put_inode(d, e->ino, &in, true);
}

static int inode_csum(struct md_img *d)
{
	struct mfs_inode in;
	const struct md_entry *e = take(d, md_is_data_file, &in, true);
	uint32_t old;

	if (!e)
		return -ENOENT;
	old = le32toh(in.i_checksum);
	in.i_checksum = htole32(old ^ 0x20000);
	md_say("inode %" PRIu32 " (%s): i_checksum 0x%08" PRIx32 " -> 0x%08" PRIx32,
	       e->ino, e->path, old, old ^ 0x20000);
	return md_put_inode(d, e->ino, &in, false);
}

/*
 * A file whose link count is 0 looks deleted: a checker that goes by the
 * count (as e2fsck does) drops its entries, so it may be lost.
 */
static int links_set(struct md_img *d, md_filter_fn ok, int delta, bool zero)
{
	struct mfs_inode in;
	const struct md_entry *e = take(d, ok, &in, zero);

	if (!e)
		return -ENOENT;
	return md_add_links(d, e->ino, zero ? -(int)le16toh(in.i_links_count) : delta);
}

static int links_high(struct md_img *d)
{
	return links_set(d, md_is_data_file, 2 + (int)md_pick(d, 3), false);
}

static int links_low(struct md_img *d)
{
	return links_set(d, is_hard_linked, -1, false);
}

static int links_zero(struct md_img *d)
{
	return links_set(d, md_is_data_file, 0, true);
}

static int nsec_too_big(struct md_img *d)
{
	struct mfs_inode in;
	const struct md_entry *e = take(d, md_is_data_file, &in, false);
	uint32_t new = 1000000000u + md_pick(d, 1000);

	if (!e)
		return -ENOENT;
	md_say("inode %" PRIu32 " (%s): i_mtime_nsec %" PRIu32 " -> %" PRIu32, e->ino,
	       e->path, le32toh(in.i_mtime_nsec), new);
	in.i_mtime_nsec = htole32(new);
	return md_put_inode(d, e->ino, &in, true);
}

static int root_not_dir(struct md_img *d)
{
	struct mfs_inode in;
	uint16_t old;
	int err = md_get_inode(d, MFS_ROOT_INO, &in);

	if (err)
		return err;
	old = le16toh(in.i_mode);
	in.i_mode = htole16((uint16_t)(S_IFREG | (old & 07777)));
	md_say("inode 2 (/): i_mode 0%o -> 0%o (a regular file)", old,
	       le16toh(in.i_mode));
	return md_put_inode(d, MFS_ROOT_INO, &in, true);
}

/* ---- extended attributes ------------------------------------------------- */

/* /xattr_blk's xattr block into d->blk. */
static int xattr_block(struct md_img *d, uint32_t *ino, uint64_t *blk)
{
	struct mfs_inode in;
	int err;

	*ino = md_ino(d, "/xattr_blk");
	err = *ino ? md_get_inode(d, *ino, &in) : -ENOENT;
	if (err)
		return err;
	md_lost(d, "/xattr_blk");
	*blk = le32toh(in.i_xattr_block);
	return *blk ? md_read_block(d, *blk, d->blk) : -ENOENT;
}

static int xattr_csum(struct md_img *d)
{
	uint32_t ino, *c;
	uint64_t blk;
	int err = xattr_block(d, &ino, &blk);

	if (err)
		return err;
	c = (uint32_t *)((char *)d->blk + d->bs - 4);
	md_say("xattr block %" PRIu64 " of inode %" PRIu32 " (/xattr_blk): checksum "
	       "0x%08" PRIx32 " -> 0x%08" PRIx32, blk, ino, le32toh(*c), le32toh(*c) ^ 8);
	*c = htole32(le32toh(*c) ^ 8);
	return md_write_block(d, blk, d->blk);
}

static int xattr_value_beyond(struct md_img *d)
{
	struct mfs_xattr_entry *x;
	uint32_t ino;
	uint64_t blk;
	int err = xattr_block(d, &ino, &blk);

	if (err)
		return err;
	x = (void *)((char *)d->blk + sizeof(struct mfs_xattr_header));
	md_say("xattr block %" PRIu64 " of inode %" PRIu32 " (/xattr_blk): entry 0 "
	       "e_value_size %u -> %u (beyond the block)", blk, ino,
	       le16toh(x->e_value_size), d->bs);
	x->e_value_size = htole16((uint16_t)d->bs);
	fmt_block_set_csum(&d->raw.sb, MFS_CSUM_XATTR, blk, d->blk);
	return md_write_block(d, blk, d->blk);
}

static int xattr_shared(struct md_img *d)
{
	struct mfs_inode in;
	uint32_t ino, other = md_ino(d, "/a/small2.txt");
	uint64_t blk;
	int err = xattr_block(d, &ino, &blk);

	if (!err)
		err = other ? md_get_inode(d, other, &in) : -ENOENT;
	if (err)
		return err;
	md_lost(d, "/a/small2.txt");
	md_say("inode %" PRIu32 " (/a/small2.txt): i_xattr_block %" PRIu32 " -> %" PRIu64
	       " (the block of inode %" PRIu32 ", refcount 1)", other,
	       le32toh(in.i_xattr_block), blk, ino);
	in.i_xattr_block = htole32((uint32_t)blk);
	in.i_blocks = htole64(le64toh(in.i_blocks) + d->bs / 512);
	return md_put_inode(d, other, &in, true);
}

static int ixattr_beyond(struct md_img *d)
{
	struct mfs_inode in;
	uint32_t ino = md_ino(d, "/xattr_in");
	struct mfs_xattr_entry *x = (void *)in.i_xattr;
	int err = ino ? md_get_inode(d, ino, &in) : -ENOENT;

	if (err)
		return err;
	md_lost(d, "/xattr_in");
	md_say("inode %" PRIu32 " (/xattr_in): in-inode xattr entry 0 e_value_size %u"
	       " -> %u (beyond the inode's area)", ino, le16toh(x->e_value_size), 200u);
	x->e_value_size = htole16(200);
	return md_put_inode(d, ino, &in, true);
}

const struct md_kind md_kinds_inode[] = {
	{ "block-out-of-range", "a file's i_block[0] beyond s_blocks_count",
	  block_out_of_range },
	{ "block-shared", "two files map the same data block", block_shared },
	{ "ind-out-of-range", "an indirect block's pointer beyond s_blocks_count",
	  ind_out_of_range },
	{ "ind-csum", "indirect block checksum wrong", ind_csum },
	{ "size-beyond-max", "a file's i_size beyond the largest file", size_beyond_max },
	{ "dir-size-unaligned", "a directory's i_size not a multiple of the block size",
	  dir_size_unaligned },
	{ "blocks-wrong", "a file's i_blocks too high", blocks_wrong },
	{ "mode-bad-type", "a file's i_mode has no valid type bits", mode_bad_type },
	{ "inode-csum", "inode checksum wrong", inode_csum },
	{ "links-high", "a file's link count above its names", links_high },
	{ "links-low", "a hard-linked file's link count 1 with 2 names", links_low },
	{ "links-zero", "a named file's link count 0", links_zero },
	{ "nsec-too-big", "a file's i_mtime_nsec at or above 10^9", nsec_too_big },
	{ "root-not-dir", "the root inode is a regular file", root_not_dir },
	{ "xattr-csum", "xattr block checksum wrong", xattr_csum },
	{ "xattr-value-beyond", "xattr block entry whose value runs past the block",
	  xattr_value_beyond },
	{ "xattr-shared", "one xattr block (refcount 1) referenced by two inodes",
	  xattr_shared },
	{ "ixattr-beyond", "in-inode xattr entry whose value runs past the area",
	  ixattr_beyond },
	{ NULL, NULL, NULL },
};
