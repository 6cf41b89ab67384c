/*
 * pass1b.c - blocks claimed by more than one inode.
 *
 * Only when pass 1 found some.  The inodes are walked again in order; the
 * first to claim a shared block keeps it, and every later one gets a copy
 * of it (as e2fsck clones), so no file loses its bytes and none shares
 * them any more.  A shared xattr block stays with its first owner and is
 * dropped from the others; a block the region table lies on is copied
 * for every inode.  An indirect block's checksum names its owner, so
 * pass 1 dropped it from every other inode that maps it as an indirect
 * block; but its owner may map it twice, or another inode as data: it is
 * then copied as a data block is, and the walk goes on under the copy.
 */
#include "fsck_i.h"

#include <errno.h>

struct sharer {
	uint8_t *seen;               /* shared blocks some inode keeps */
	uint64_t count;              /* this inode's blocks to copy */
	bool clone;                  /* second walk: copy them */
	/* The shared blocks this inode keeps (it met them first), and
	 * whether the copying walk has passed them once: a block the inode
	 * maps twice is kept once and copied for the other place. */
	uint64_t *mine;
	bool *kept;
	size_t nmine, cap;
};

static long find_mine(const struct sharer *s, uint64_t blk)
{
	for (size_t i = 0; i < s->nmine; i++)
		if (s->mine[i] == blk)
			return (long)i;
	return -1;
}

static int add_mine(struct sharer *s, uint64_t blk)
{
	if (s->nmine == s->cap) {
		size_t cap = s->cap ? 2 * s->cap : 16;
		uint64_t *m = realloc(s->mine, cap * sizeof(*m));
		bool *k = m ? realloc(s->kept, cap * sizeof(*k)) : NULL;

		if (m)
			s->mine = m;
		if (!k)
			return -ENOMEM;
		s->kept = k;
		s->cap = cap;
	}
	s->kept[s->nmine] = false;
	s->mine[s->nmine++] = blk;
	return 0;
}

/* A directory's copied block is the one pass 2 checks. */
static void moved(struct fsck_ctx *c, uint32_t ino, uint64_t lblk, uint64_t blk)
{
	for (size_t i = 0; i < c->ndb; i++)
		if (c->dblist[i].ino == ino && c->dblist[i].lblk == lblk)
			c->dblist[i].pblk = (uint32_t)blk;
}

static int clone_block(struct fsck_ctx *c, uint32_t ino, uint64_t lblk, int depth,
		       uint32_t *ptr)
{
	uint64_t old = le32toh(*ptr), blk;
	int err = fsck_alloc_block(c, old, &blk);

	if (!err)
		err = fsck_read(c, old, c->buf);
	if (!err)
		err = fsck_write(c, blk, c->buf);
	if (!err)
		*ptr = htole32((uint32_t)blk);
	if (!err && !depth && istate_type(c, ino) == MFS_FT_DIR)
		moved(c, ino, lblk, blk);
	return err;
}

static int visit(struct fsck_map_walk *w, struct fmt_bmap_slot *sl)
{
	struct sharer *s = w->arg;
	struct fsck_ctx *c = w->c;
	uint64_t blk = le32toh(*sl->ptr);
	long i;

	if (sl->bad)
		return FMT_BMAP_SKIP;        /* left so by a no in pass 1 */
	if (!bit_test(c->bdup, blk))
		return FMT_BMAP_KEEP;
	i = find_mine(s, blk);
	if (s->clone) {
		if (i < 0 || s->kept[i])
			return clone_block(c, w->ino, sl->lblk, sl->depth, sl->ptr);
		s->kept[i] = true;
		return FMT_BMAP_KEEP;
	}
	if (i < 0 && !bit_test(s->seen, blk)) {
		bit_set(s->seen, blk);
		return add_mine(s, blk);
	}
	s->count++;
	return FMT_BMAP_KEEP;
}

static int check_xattr(struct fsck_ctx *c, uint32_t ino, struct mfs_inode *in,
		       struct sharer *s, bool *dirty)
{
	uint64_t blk = le32toh(in->i_xattr_block);
	struct fsck_pctx p = { .ino = ino, .blk = blk, .str = "xattr" };

	if (!fsck_block_ok(c, blk) || !bit_test(c->bdup, blk))
		return 0;
	if (!bit_test(s->seen, blk)) {
		bit_set(s->seen, blk);
		return 0;
	}
	if (fsck_fix(c, PR_DUP_META, &p)) {
		in->i_xattr_block = 0;
		in->i_blocks = htole64(le64toh(in->i_blocks) - c->bs / 512);
		*dirty = true;
	}
	return 0;
}

static int check_sharer(struct fsck_ctx *c, uint32_t ino, struct mfs_inode *in,
			struct sharer *s)
{
	struct fsck_map_walk w = { .c = c, .ino = ino, .in = in, .visit = visit,
				   .arg = s };
	struct fsck_pctx p = { .ino = ino };
	bool dirty = false;
	int err = check_xattr(c, ino, in, s, &dirty);

	s->count = 0;
	s->nmine = 0;
	s->clone = false;
	if (!err)
		err = fsck_map_walk(&w);
	if (!err && s->count) {
		p.num = s->count;
		if (fsck_fix(c, PR_DUP_CLONE, &p)) {
			s->clone = true;
			err = fsck_map_walk(&w);
		}
	}
	if (!err && (dirty || w.inode_dirty))
		err = fsck_write_inode(c, ino, in);
	return err;
}

static int scan_group(struct fsck_ctx *c, uint32_t g, uint8_t *table, struct sharer *s)
{
	size_t len = (size_t)fmt_itable_blocks(&c->sb) * c->bs;
	int err = bdev_read(c->bd, fsck_layout_itable(c, g) * c->bs,
			    table, len);

	for (uint32_t i = 0; i < c->ipg && !err && !c->stop; i++) {
		uint32_t ino = g * c->ipg + i + 1;
		struct mfs_inode in;

		if (!inode_in_use(c, ino) || (c->istate[ino - 1] & (IS_FAST_LINK | IS_BAD)))
			continue;
		memcpy(&in, table + (size_t)i * MFS_INODE_SIZE, sizeof(in));
		err = check_sharer(c, ino, &in, s);
	}
	return err;
}

int fsck_pass1b(struct fsck_ctx *c)
{
	struct sharer s = { 0 };
	uint8_t *table;
	uint64_t rt = le64toh(c->sb.s_region_table);
	int err = 0;

	if (!c->ndup)
		return 0;
	c->pass = FSCK_PASS_1B;
	if (c->o->pass_start)
		c->o->pass_start(c->o->arg, FSCK_PASS_1B,
				 "Pass 1b: Copying blocks claimed by more than one inode");
	s.seen = calloc(1, c->nblocks / 8 + 1);
	table = bdev_alloc_buf((size_t)fmt_itable_blocks(&c->sb) * c->bs);
	if (!s.seen || !table)
		err = -ENOMEM;
	/* The region table and the MMP block are no inode's: every inode on
	 * them gets a copy. */
	if (!err && le32toh(c->sb.s_region_count) && rt < c->nblocks)
		bit_set(s.seen, rt);
	if (!err && fmt_has_mmp(&c->sb) && le64toh(c->sb.s_mmp_block) < c->nblocks)
		bit_set(s.seen, le64toh(c->sb.s_mmp_block));
	for (uint32_t g = 0; g < c->ngroups && !err && !c->stop; g++) {
		err = scan_group(c, g, table, &s);
		fsck_progress(c, g + 1, c->ngroups);
	}
	free(s.seen);
	free(s.mine);
	free(s.kept);
	bdev_free_buf(table);
	return err;
}
