/*
 * map.c - fsck's block-map walks, on the format's walker: the repairing
 * walk (fmt_bmap_edit), which goes on past damage and lets its visitor
 * mend it, and mapping a hole (fmt_bmap_alloc).  Blocks are read and
 * written raw, each level of the tree into a buffer of its own; the
 * walker checks every pointer and indirect block and reseals what it
 * changed, which is written back here.
 */
#include "fsck_i.h"

#include <errno.h>
#include <string.h>

static int raw_get(struct fsck_ctx *c, struct fmt_bmap_ind *ind, enum fmt_bmap_get how)
{
	ind->ptrs = c->ind[ind->depth - 1];
	if (how == FMT_BMAP_NEW)
		memset(ind->ptrs, 0, c->bs);
	return how == FMT_BMAP_READ ? fsck_read(c, ind->blk, ind->ptrs) : 0;
}

/* ---- the repairing walk ---------------------------------------------------- */

static int walk_get(void *arg, struct fmt_bmap_ind *ind, enum fmt_bmap_get how)
{
	struct fsck_map_walk *w = arg;

	return raw_get(w->c, ind, how);
}

/* With -n nothing is written: the walk still tells what it would change. */
static int walk_changed(void *arg, struct fmt_bmap_ind *ind)
{
	struct fsck_map_walk *w = arg;

	if (!ind->blk) {
		w->inode_dirty = true;
		return 0;
	}
	return w->c->rw ? fsck_write(w->c, ind->blk, ind->ptrs) : 0;
}

static bool walk_stop(void *arg)
{
	struct fsck_map_walk *w = arg;

	return w->c->stop;
}

static const struct fmt_bmap_ops walk_ops = {
	.get = walk_get, .changed = walk_changed, .stop = walk_stop,
};

static int on_visit(void *arg, struct fmt_bmap_slot *s)
{
	struct fsck_map_walk *w = arg;

	return w->visit(w, s);
}

static int on_bad_indirect(void *arg, struct fmt_bmap_slot *s)
{
	struct fsck_map_walk *w = arg;

	return w->bad_indirect(w, s);
}

static int on_leave(void *arg, struct fmt_bmap_slot *s)
{
	struct fsck_map_walk *w = arg;

	return w->leave(w, s);
}

int fsck_map_walk(struct fsck_map_walk *w)
{
	struct fmt_bmap bm = { .sb = &w->c->sb, .ino = w->ino, .in = w->in,
			       .ops = &walk_ops, .ctx = w };
	struct fmt_bmap_visit v = { .visit = on_visit,
				    .bad_indirect = w->bad_indirect ? on_bad_indirect : NULL,
				    .leave = w->leave ? on_leave : NULL, .arg = w };

	return fmt_bmap_edit(&bm, &v);
}

/* ---- mapping a hole ------------------------------------------------------- */

struct set {
	struct fsck_ctx *c;
	uint64_t pblk;               /* the data block to map */
	uint64_t *added;             /* indirect blocks made */
};

static int set_get(void *arg, struct fmt_bmap_ind *ind, enum fmt_bmap_get how)
{
	struct set *s = arg;

	return raw_get(s->c, ind, how);
}

static int set_changed(void *arg, struct fmt_bmap_ind *ind)
{
	struct set *s = arg;

	return ind->blk ? fsck_write(s->c, ind->blk, ind->ptrs) : 0;
}

/* The data block is the caller's; indirect blocks are taken near it. */
static int set_alloc(void *arg, int depth, uint64_t *blk)
{
	struct set *s = arg;
	int err;

	if (!depth) {
		*blk = s->pblk;
		return 0;
	}
	err = fsck_alloc_block(s->c, s->pblk, blk);
	if (!err)
		(*s->added)++;
	return err;
}

/* An indirect block on the way is taken whatever its checksum says, and
 * resealed when it changes: what else it maps is pass 1's to judge. */
static int set_damage(void *arg, const struct fmt_bmap_bad *bad)
{
	(void)arg;
	return bad->where ? -EUCLEAN : 0;
}

static const struct fmt_bmap_ops set_ops = {
	.get = set_get, .changed = set_changed, .alloc = set_alloc, .damage = set_damage,
};

int fsck_bmap_set(struct fsck_ctx *c, uint32_t ino, struct mfs_inode *in,
		  uint64_t lblk, uint64_t pblk, uint64_t *added)
{
	struct set s = { .c = c, .pblk = pblk, .added = added };
	struct fmt_bmap bm = { .sb = &c->sb, .ino = ino, .in = in, .ops = &set_ops,
			       .ctx = &s };
	uint64_t got;
	bool isnew;
	int err = fmt_bmap_alloc(&bm, lblk, &got, &isnew);

	return !err && got != pblk ? -EEXIST : err;
}
