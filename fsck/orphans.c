/*
 * orphans.c - finishing what the orphan list records, before pass 1.
 *
 * The list (s_last_orphan, then i_next_orphan) names inodes unlinked while
 * open, and inodes being truncated.  As the mount does after a crash, fsck
 * frees the first and cuts the second to their size, giving their blocks
 * and inodes back on the disk's bitmaps as the mount would.  A list that
 * names an inode not in use, or loops, is cleared whole: the passes then
 * find its inodes as they are.
 */
#include "fsck_i.h"

#include <errno.h>

struct cut {
	uint64_t keep;               /* logical blocks kept */
	uint64_t freed;
	int err;
};

static void cut_free(struct fsck_ctx *c, uint64_t blk, struct cut *k)
{
	int err = fsck_release_block(c, blk);

	k->err = k->err ? k->err : err;
	k->freed++;
}

static int cut_visit(struct fsck_map_walk *w, struct fmt_bmap_slot *s)
{
	struct cut *k = w->arg;

	if (s->bad)
		return FMT_BMAP_ZERO;    /* damage: pass 1 would clear it anyway */
	if (s->depth || s->lblk < k->keep)
		return FMT_BMAP_KEEP;
	cut_free(w->c, le32toh(*s->ptr), k);
	return FMT_BMAP_ZERO;
}

static int cut_leave(struct fsck_map_walk *w, struct fmt_bmap_slot *s)
{
	struct cut *k = w->arg;

	if (s->lblk < k->keep)
		return FMT_BMAP_KEEP;
	cut_free(w->c, le32toh(*s->ptr), k);
	return FMT_BMAP_ZERO;
}

/* Free what @ino maps from logical block @keep on, as a truncation does. */
static int cut_map(struct fsck_ctx *c, uint32_t ino, struct mfs_inode *in, uint64_t keep)
{
	struct cut k = { .keep = keep };
	struct fsck_map_walk w = { .c = c, .ino = ino, .in = in, .visit = cut_visit,
				   .leave = cut_leave, .arg = &k };
	uint64_t per = c->bs / 512, blocks = le64toh(in->i_blocks);
	int err = fsck_map_walk(&w);

	in->i_blocks = htole64(blocks > k.freed * per ? blocks - k.freed * per : 0);
	return err ? err : k.err;
}

static int free_orphan(struct fsck_ctx *c, uint32_t ino, struct mfs_inode *in)
{
	uint64_t xblk = le32toh(in->i_xattr_block);
	struct cut k = { 0 };
	int err = cut_map(c, ino, in, 0);

	if (err)
		return err;
	if (xblk)
		cut_free(c, xblk, &k);
	in->i_xattr_block = 0;
	in->i_size = 0;
	in->i_blocks = 0;
	in->i_dtime = htole64(c->now);
	return k.err ? k.err : fsck_release_inode(c, ino, S_ISDIR(le16toh(in->i_mode)));
}

/* Why inode @ino cannot be on the list, or NULL. */
static const char *not_orphan(struct fsck_ctx *c, uint32_t ino, struct mfs_inode *in)
{
	char why[8];

	if (ino < MFS_FIRST_INO || ino > c->ninodes)
		return "it is out of range";
	if (c->istate[ino - 1] & IS_SEEN)
		return "the list loops";
	if (fsck_read_inode(c, ino, in))
		return "it cannot be read";
	if (le32toh(in->i_checksum) != fmt_inode_csum(&c->sb, ino, in) ||
	    fmt_inode_check(&c->sb, ino, in, why, sizeof(why)))
		return "it is damaged";
	if (!fsck_slot_in_use(in))
		return "it is not in use";
	return NULL;
}

/* Walk the list; true when every inode on it may be there. */
static bool list_ok(struct fsck_ctx *c, uint32_t *count)
{
	struct mfs_inode in;

	*count = 0;
	for (uint32_t ino = le32toh(c->sb.s_last_orphan); ino && !c->stop;
	     ino = le32toh(in.i_next_orphan)) {
		const char *why = not_orphan(c, ino, &in);
		struct fsck_pctx p = { .ino = ino, .str = why };

		if (!why) {
			c->istate[ino - 1] |= IS_SEEN | IS_ORPHAN;
			(*count)++;
			continue;
		}
		if (fsck_fix(c, PR_ORPHAN_LIST, &p)) {
			c->sb.s_last_orphan = 0;
			c->sb_dirty = true;
			/* Off the list: pass 1 clears their links. */
			for (uint32_t i = 0; i < c->ninodes; i++)
				c->istate[i] &= (uint8_t)~IS_ORPHAN;
		}
		return false;
	}
	return true;
}

/* 1 when done, 0 when left as it is, or -errno. */
static int process(struct fsck_ctx *c, uint32_t ino)
{
	struct mfs_inode in;
	struct fsck_pctx p = { .ino = ino };
	int err = fsck_read_inode(c, ino, &in);
	bool unlinked = !in.i_links_count;

	if (err)
		return err;
	p.num = le64toh(in.i_size);
	if (!fsck_fix(c, unlinked ? PR_ORPHAN_FREE : PR_ORPHAN_TRUNC, &p))
		return 0;
	c->istate[ino - 1] &= (uint8_t)~IS_ORPHAN;
	if (unlinked)
		err = free_orphan(c, ino, &in);
	else
		err = cut_map(c, ino, &in, UT_DIV_ROUND_UP(le64toh(in.i_size), c->bs));
	in.i_next_orphan = 0;
	if (!err)
		err = fsck_write_inode(c, ino, &in);
	return err ? err : 1;
}

int fsck_orphans(struct fsck_ctx *c)
{
	uint32_t n, ino, next;
	struct mfs_inode in;
	bool all = true;
	int err = 0;

	if (!c->sb.s_last_orphan)
		return 0;
	if (!list_ok(c, &n))
		return 0;
	/* Read each link before processing its inode clears it. */
	for (ino = le32toh(c->sb.s_last_orphan); ino && n-- && !err && !c->stop; ino = next) {
		err = fsck_read_inode(c, ino, &in);
		next = le32toh(in.i_next_orphan);
		if (!err)
			err = process(c, ino);
		all = all && err == 1;
		err = err < 0 ? err : 0;
	}
	if (!err && all && !c->stop) {
		c->sb.s_last_orphan = 0;
		c->sb_dirty = true;
	}
	return err;
}
