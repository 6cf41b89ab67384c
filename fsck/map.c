/*
 * map.c - the block-map walk of fsck, which may change what it walks.
 *
 * The mount's walk (fmt_bmap_walk) stops at the first bad pointer; fsck
 * must go on past it and mend it.  Here a visitor sees every pointer,
 * data and indirect alike, and may keep it, keep it without walking under
 * it, replace it with a hole or with another block; an indirect block
 * whose pointers changed is written back with a fresh checksum, and the
 * inode's own pointers are left changed in w->in for the caller to write.
 * The depth of the tree bounds the recursion (three levels, each with its
 * own buffer), however the pointers of a damaged map repeat.  Pointers
 * are passed as they are on disk (little-endian).
 */
#include "fsck_i.h"

#include <errno.h>

struct level {
	struct fsck_map_walk *w;
	uint32_t apb;
	uint64_t span[4];            /* logical blocks under one pointer */
};

static int walk_ptr(struct level *l, uint64_t lblk, int depth, uint32_t *slot,
		    bool *changed);

/* Walk indirect block @blk of @depth, which maps from @lblk on. */
static int walk_indirect(struct level *l, uint64_t lblk, int depth, uint32_t *slot,
			 bool *changed)
{
	struct fsck_map_walk *w = l->w;
	struct fsck_ctx *c = w->c;
	uint32_t *ptrs = c->ind[depth - 1];
	bool dirty = false;
	uint64_t blk = le32toh(*slot);
	int err = fsck_read(c, blk, ptrs), r = MAP_KEEP;

	if (err)
		return err;
	if (!fmt_block_csum_ok(&c->sb, MFS_CSUM_INDIRECT, w->ino, ptrs)) {
		r = w->bad_indirect ? w->bad_indirect(w, lblk, depth, slot) : MAP_SKIP;
		if (r == MAP_ZERO) {
			*slot = 0;
			*changed = true;
		}
		if (r != MAP_KEEP)
			return r < 0 ? r : 0;
		dirty = true;
	}
	for (uint32_t i = 0; i < l->apb && !err && !c->stop; i++) {
		if (!ptrs[i])
			continue;
		err = walk_ptr(l, lblk + i * l->span[depth - 1], depth - 1, &ptrs[i], &dirty);
	}
	if (!err && dirty && c->rw) {
		fmt_block_set_csum(&c->sb, MFS_CSUM_INDIRECT, w->ino, ptrs);
		err = fsck_write(c, le32toh(*slot), ptrs);
	}
	return err;
}

static int walk_ptr(struct level *l, uint64_t lblk, int depth, uint32_t *slot,
		    bool *changed)
{
	struct fsck_map_walk *w = l->w;
	uint32_t before = *slot;
	int r = w->visit(w, lblk, l->span[depth], depth, slot);

	if (r < 0)
		return r;
	if (r == MAP_ZERO)
		*slot = 0;
	if (*slot != before)
		*changed = true;
	/* Never read what is not a block of the groups' data. */
	if (r != MAP_KEEP || !depth || !*slot || !fsck_block_ok(w->c, le32toh(*slot)))
		return 0;
	r = walk_indirect(l, lblk, depth, slot, changed);
	if (r || !w->leave || !*slot)
		return r;
	r = w->leave(w, lblk, depth, slot);
	if (r == MAP_ZERO) {
		*slot = 0;
		*changed = true;
	}
	return r < 0 ? r : 0;
}

int fsck_map_walk(struct fsck_map_walk *w)
{
	struct level l = { .w = w, .apb = fmt_addr_per_block(w->c->bs) };
	uint64_t base = MFS_NDIR_BLOCKS;
	int err = 0;

	if (fmt_inode_is_fast_symlink(w->in))
		return 0;
	l.span[0] = 1;
	for (int d = 1; d <= 3; d++)
		l.span[d] = l.span[d - 1] * l.apb;
	for (uint32_t b = 0; b < MFS_NDIR_BLOCKS && !err && !w->c->stop; b++)
		if (w->in->i_block[b])
			err = walk_ptr(&l, b, 0, &w->in->i_block[b], &w->inode_dirty);
	for (int d = 1; d <= 3 && !err && !w->c->stop; d++) {
		uint32_t *slot = &w->in->i_block[MFS_NDIR_BLOCKS + d - 1];

		if (*slot)
			err = walk_ptr(&l, base, d, slot, &w->inode_dirty);
		base += l.span[d];
	}
	return err;
}
