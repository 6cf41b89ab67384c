/*
 * pass2.c - every directory block and every entry in it.
 *
 * A block is judged by the mount's own check (fmt_dirblock_check); one
 * that fails only its checksum gets a new one, any other is salvaged:
 * the records up to the first that cannot be trusted are kept, entries
 * that break a rule are blanked, and what they named turns up unattached
 * in pass 3 or 4.  Blocks are read in batches, in the order of the list
 * pass 1 made (by directory, then logical block).
 */
#include "fsck_i.h"

#include <errno.h>

#define BATCH 32u

/* ---- names of one directory --------------------------------------------------- */

struct names {
	uint32_t *slot;              /* offset + 1 into arena, 0: empty */
	size_t cap, n;
	char *arena;                 /* length byte, then the name */
	size_t alen, acap;
};

static void names_reset(struct names *s)
{
	if (s->slot)
		memset(s->slot, 0, s->cap * sizeof(*s->slot));
	s->n = 0;
	s->alen = 0;
}

static int names_grow(struct names *s)
{
	size_t cap = s->cap ? s->cap * 2 : 1024;
	uint32_t *old = s->slot, *slot = calloc(cap, sizeof(*slot));

	if (!slot)
		return -ENOMEM;
	for (size_t i = 0; i < s->cap; i++) {
		const char *nm;
		size_t h;

		if (!old[i])
			continue;
		nm = s->arena + old[i] - 1;
		h = fmt_csum(0, 0, nm + 1, (uint8_t)nm[0]) & (cap - 1);
		while (slot[h])
			h = (h + 1) & (cap - 1);
		slot[h] = old[i];
	}
	free(old);
	s->slot = slot;
	s->cap = cap;
	return 0;
}

/* 1 if @name was seen in this directory before, else 0 (and notes it). */
static int names_add(struct names *s, const char *name, size_t len)
{
	size_t h;

	if ((s->n + 1) * 2 > s->cap && names_grow(s))
		return -ENOMEM;
	if (s->alen + len + 1 > s->acap) {
		size_t acap = UT_MAX(s->acap * 2, s->alen + len + 1 + 4096);
		char *a = realloc(s->arena, acap);

		if (!a)
			return -ENOMEM;
		s->arena = a;
		s->acap = acap;
	}
	h = fmt_csum(0, 0, name, len) & (s->cap - 1);
	for (; s->slot[h]; h = (h + 1) & (s->cap - 1)) {
		const char *nm = s->arena + s->slot[h] - 1;

		if ((uint8_t)nm[0] == len && !memcmp(nm + 1, name, len))
			return 1;
	}
	s->arena[s->alen] = (char)len;
	memcpy(s->arena + s->alen + 1, name, len);
	s->slot[h] = (uint32_t)s->alen + 1;
	s->alen += len + 1;
	s->n++;
	return 0;
}

/* ---- one block ------------------------------------------------------------------ */

struct dblk {
	struct fsck_ctx *c;
	const struct fsck_dblock *db;
	uint8_t *blk;
	bool dirty;
	struct names *names;
};

static struct mfs_dirent *rec(struct dblk *b, uint32_t off)
{
	return (struct mfs_dirent *)(b->blk + off);
}

static bool is_name(const struct mfs_dirent *de, const char *name)
{
	return de->name_len == strlen(name) && !memcmp(de->name, name, de->name_len);
}

static void put_tail(struct fsck_ctx *c, uint8_t *blk)
{
	struct mfs_dir_tail *t = (void *)(blk + c->bs - MFS_DIR_TAIL_SIZE);

	memset(t, 0, sizeof(*t));
	t->det_rec_len = htole16(MFS_DIR_TAIL_SIZE);
	t->det_type = MFS_FT_DIR_TAIL;
}

static bool entry_sound(const struct fsck_ctx *c, const struct mfs_dirent *de, uint32_t rec)
{
	uint32_t child = le32toh(de->inode);

	return de->name_len && MFS_DIRENT_LEN(de->name_len) <= rec && child <= c->ninodes &&
	       de->file_type > MFS_FT_UNKNOWN && de->file_type < MFS_FT_MAX &&
	       !memchr(de->name, '/', de->name_len) && !memchr(de->name, 0, de->name_len);
}

static bool rec_len_sound(uint32_t off, uint32_t r, uint32_t end)
{
	return r >= MFS_DIRENT_LEN(0) && r % 4 == 0 && off + r <= end;
}

/*
 * A bad rec_len under a sound name: the record most likely ended where
 * its name does, if a sound record starts there (e2fsck's salvage does
 * the same); 0 if not.
 */
static uint32_t resync(const struct fsck_ctx *c, const uint8_t *blk, uint32_t off,
		       uint32_t end)
{
	const struct mfs_dirent *de = (const void *)(blk + off);
	uint32_t r = MFS_DIRENT_LEN(de->name_len), next;

	if (!de->inode || !de->name_len || off + r >= end)
		return 0;
	next = le16toh(((const struct mfs_dirent *)(blk + off + r))->rec_len);
	if (!rec_len_sound(off + r, next, end) || !entry_sound(c, de, r))
		return 0;
	return r;
}

/* Keep the records that can be trusted; blank the entries that cannot. */
static void salvage(struct fsck_ctx *c, uint8_t *blk)
{
	uint32_t end = c->bs - MFS_DIR_TAIL_SIZE, off = 0, prev = end;

	while (off < end) {
		struct mfs_dirent *de = (void *)(blk + off);
		uint32_t r = le16toh(de->rec_len);

		if (!rec_len_sound(off, r, end) && (r = resync(c, blk, off, end)))
			de->rec_len = htole16((uint16_t)r);
		if (!rec_len_sound(off, r, end)) {
			if (prev < end) {
				((struct mfs_dirent *)(blk + prev))->rec_len =
					htole16((uint16_t)(end - prev));
			} else {
				de->inode = 0;
				de->rec_len = htole16((uint16_t)(end - off));
			}
			break;
		}
		if (de->inode && !entry_sound(c, de, r))
			de->inode = 0;
		prev = off;
		off += r;
	}
	put_tail(c, blk);
}

/* The block as read passes the mount's check, or is made to: 0, or 1 to
 * leave it (damaged and not repaired), or -errno. */
static int check_block(struct dblk *b)
{
	struct fsck_ctx *c = b->c;
	char why[200];
	struct fsck_pctx p = { .ino = b->db->ino, .num = b->db->lblk, .blk = b->db->pblk,
			       .str = why };
	uint32_t stored;

	if (!fmt_dirblock_check(&c->sb, b->db->ino, b->blk, why, sizeof(why)))
		return 0;
	stored = *(uint32_t *)(b->blk + c->bs - 4);
	fmt_block_set_csum(&c->sb, MFS_CSUM_DIR, b->db->ino, b->blk);
	if (!fmt_dirblock_check(&c->sb, b->db->ino, b->blk, NULL, 0)) {
		b->dirty = fsck_fix(c, PR_DB_CSUM, &p);
		return 0;
	}
	*(uint32_t *)(b->blk + c->bs - 4) = stored;
	if (!fsck_fix(c, PR_DB_BAD, &p))
		return 1;
	salvage(c, b->blk);
	b->dirty = true;
	return 0;
}

/* "." first, then "..", in block 0; the offset after them in @next. */
static void check_dots(struct dblk *b, uint32_t *next)
{
	struct fsck_ctx *c = b->c;
	uint32_t ino = b->db->ino, end = c->bs - MFS_DIR_TAIL_SIZE;
	struct mfs_dirent *dot = rec(b, 0), *dd;
	struct fsck_pctx p = { .ino = ino, .ino2 = le32toh(dot->inode) };
	uint32_t r = le16toh(dot->rec_len);

	*next = r;
	if (!(dot->inode && is_name(dot, "."))) {
		if (r < 12 || !fsck_fix(c, PR_NO_DOT, &p))
			return;
		dot->name_len = 1;
		dot->name[0] = '.';
		dot->inode = htole32(ino);
		dot->file_type = MFS_FT_DIR;
		b->dirty = true;
	} else if (le32toh(dot->inode) != ino && fsck_fix(c, PR_BAD_DOT, &p)) {
		dot->inode = htole32(ino);
		b->dirty = true;
	}
	if (le32toh(dot->inode) == ino)
		c->links_found[ino - 1]++;
	dd = r < end ? rec(b, r) : NULL;
	if (dd && dd->inode && is_name(dd, "..")) {
		fsck_dir_find(c, ino)->dotdot = le32toh(dd->inode);
		*next = r + le16toh(dd->rec_len);
		return;
	}
	if (!fsck_fix(c, PR_NO_DOTDOT, &p))
		return;
	if (!dd || !dd->inode) {
		/* Split "." (or an unused record after it) to make room. */
		if (r < 24 && (!dd || le16toh(dd->rec_len) < 12)) {
			fsck_unfixed(c);
			return;
		}
		if (r >= 24) {
			dot->rec_len = htole16(12);
			dd = rec(b, 12);
			dd->rec_len = htole16((uint16_t)(r - 12));
		}
	}
	dd->inode = htole32(ino);            /* pass 3 names the parent */
	dd->name_len = 2;
	memcpy(dd->name, "..", 2);
	dd->file_type = MFS_FT_DIR;
	fsck_dir_find(c, ino)->dotdot = ino;
	*next = (uint32_t)((uint8_t *)dd - b->blk) + le16toh(dd->rec_len);
	b->dirty = true;
}

/*
 * 1 when the entry is to be cleared.  One whose problem is left (-n) is
 * counted as the entry it is, so that one problem does not bring others
 * about in later passes.
 */
static int check_entry(struct dblk *b, struct mfs_dirent *de)
{
	struct fsck_ctx *c = b->c;
	uint32_t dir = b->db->ino, child = le32toh(de->inode);
	struct fsck_pctx p = { .ino = child, .dir = dir, .name = de->name,
			       .namelen = de->name_len };
	struct fsck_dir *d;
	int dup;

	if (is_name(de, ".") || is_name(de, ".."))
		return fsck_fix(c, PR_DOT_PLACE, &p);
	if (child < MFS_FIRST_INO && child != MFS_ROOT_INO)
		return fsck_fix(c, PR_ENTRY_RESERVED, &p);
	if (!inode_in_use(c, child))
		return fsck_fix(c, PR_ENTRY_FREE, &p);
	dup = names_add(b->names, de->name, de->name_len);
	if (dup < 0)
		return dup;
	if (dup && fsck_fix(c, PR_DUP_NAME, &p))
		return 1;
	if (de->file_type != istate_type(c, child)) {
		p.num = de->file_type;
		p.num2 = istate_type(c, child);
		if (fsck_fix(c, PR_ENTRY_TYPE, &p)) {
			de->file_type = (uint8_t)istate_type(c, child);
			b->dirty = true;
		}
	}
	d = istate_type(c, child) == MFS_FT_DIR ? fsck_dir_find(c, child) : NULL;
	p.ino2 = d ? d->parent : 0;
	if (d && d->parent && fsck_fix(c, PR_DIR_LINK, &p))
		return 1;
	if (d && !d->parent)
		d->parent = dir;
	if (dir == MFS_ROOT_INO && is_name(de, "lost+found")) {
		if (d)
			c->lost_found = child;
		else
			c->lf_taken = child;
	}
	if (c->links_found[child - 1] < UINT16_MAX)
		c->links_found[child - 1]++;
	return 0;
}

static int check_entries(struct dblk *b)
{
	struct fsck_ctx *c = b->c;
	uint32_t end = c->bs - MFS_DIR_TAIL_SIZE, off = 0;
	int err = 0;

	if (b->db->lblk == 0)
		check_dots(b, &off);
	for (; off < end && !err && !c->stop; off += le16toh(rec(b, off)->rec_len)) {
		struct mfs_dirent *de = rec(b, off);

		if (!de->inode)
			continue;
		err = check_entry(b, de);
		if (err == 1) {
			de->inode = 0;
			b->dirty = true;
			err = 0;
		}
	}
	return err;
}

/* ---- holes ------------------------------------------------------------------------ */

static int fill_hole(struct fsck_ctx *c, struct fsck_dblock *db, uint8_t *blk)
{
	struct fsck_pctx p = { .ino = db->ino, .num = db->lblk };
	struct mfs_inode in;
	uint64_t pblk, added = 1;
	int err;

	if (!fsck_fix(c, PR_DIR_HOLE, &p))
		return 1;
	err = fsck_read_inode(c, db->ino, &in);
	if (!err)
		err = fsck_alloc_block(c, 0, &pblk);
	if (!err)
		err = fsck_bmap_set(c, db->ino, &in, db->lblk, pblk, &added);
	if (err)
		return err;
	in.i_blocks = htole64(le64toh(in.i_blocks) + added * (c->bs / 512));
	if (le64toh(in.i_size) < (db->lblk + 1) * c->bs)
		in.i_size = htole64((db->lblk + 1) * c->bs);
	err = fsck_write_inode(c, db->ino, &in);
	db->pblk = (uint32_t)pblk;
	/* Block 0 gets "." and ".." (pass 3 names the parent). */
	fsck_dirblock_init(c, blk, db->ino, db->lblk ? 0 : db->ino);
	return err;
}

/* ---- the pass --------------------------------------------------------------------- */

static int check_one(struct fsck_ctx *c, struct fsck_dblock *db, uint8_t *blk,
		     struct names *names)
{
	struct dblk b = { .c = c, .db = db, .blk = blk, .names = names };
	int err = 0;

	if (!db->pblk) {
		err = fill_hole(c, db, blk);
		if (err)
			return err < 0 ? err : 0;
		b.dirty = true;
	} else {
		err = check_block(&b);
		if (err)
			return err < 0 ? err : 0;
	}
	err = check_entries(&b);
	if (!err && b.dirty && c->rw) {
		fmt_block_set_csum(&c->sb, MFS_CSUM_DIR, db->ino, blk);
		err = fsck_write(c, db->pblk, blk);
	}
	return err;
}

static int cmp_dblock(const void *a, const void *b)
{
	const struct fsck_dblock *x = a, *y = b;

	if (x->ino != y->ino)
		return x->ino < y->ino ? -1 : 1;
	return x->lblk < y->lblk ? -1 : x->lblk > y->lblk;
}

static int run(struct fsck_ctx *c, uint8_t *bufs, struct names *names)
{
	struct fsck_dx *dx = NULL;
	uint32_t cur = 0;
	int err = 0;

	for (size_t i = 0; i < c->ndb && !err && !c->stop; i += BATCH) {
		size_t n = UT_MIN((size_t)BATCH, c->ndb - i);
		uint64_t blks[BATCH];
		void *ptrs[BATCH];
		unsigned int k = 0;

		for (size_t j = 0; j < n; j++) {
			if (!c->dblist[i + j].pblk)
				continue;
			blks[k] = c->dblist[i + j].pblk;
			ptrs[k++] = bufs + j * c->bs;
		}
		err = fsck_read_batch(c, blks, ptrs, k);
		for (size_t j = 0; j < n && !err && !c->stop; j++) {
			struct fsck_dblock *db = &c->dblist[i + j];

			if (db->ino != cur) {
				names_reset(names);
				err = fsck_dx_end(dx, true);
				dx = NULL;
				if (!err)
					err = fsck_dx_begin(c, db, c->ndb - i - j, &dx);
			}
			cur = db->ino;
			if (!err)
				err = check_one(c, db, bufs + j * c->bs, names);
			if (!err)
				fsck_dx_block(dx, db->lblk, bufs + j * c->bs);
		}
		fsck_progress(c, i + n, c->ndb);
	}
	if (err) {
		fsck_dx_end(dx, false);
		return err;
	}
	return fsck_dx_end(dx, true);
}

int fsck_pass2(struct fsck_ctx *c)
{
	struct names names = { 0 };
	uint8_t *bufs;
	struct fsck_dir *root;
	int err;

	c->pass = FSCK_PASS_2;
	if (c->o->pass_start)
		c->o->pass_start(c->o->arg, FSCK_PASS_2, "Pass 2: Checking directory structure");
	qsort(c->dblist, c->ndb, sizeof(*c->dblist), cmp_dblock);
	root = fsck_dir_find(c, MFS_ROOT_INO);
	if (root)
		root->parent = MFS_ROOT_INO;
	bufs = bdev_alloc_buf((size_t)BATCH * c->bs);
	err = bufs ? run(c, bufs, &names) : -ENOMEM;
	bdev_free_buf(bufs);
	free(names.slot);
	free(names.arena);
	return err;
}
