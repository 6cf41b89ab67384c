/*
 * blockmap.c - an inode's block map: looking blocks up for reads and
 * writeback, allocating them when a write happens (under the write's
 * handle, as ext3 does, so that writeback never needs one), and freeing
 * them on truncate in as many handles as it takes.
 *
 * The format's walker (fmt_bmap_*) does the walking and the checks of
 * every pointer and indirect block; what is here is how the mounted
 * filesystem reaches blocks: indirect blocks are pages of the metadata
 * mapping, changed under their page lock and journalled, and i_block is
 * changed under the node's lock, which every copy of the inode takes.
 *
 * node->map_lock guards i_block and the indirect blocks: read for lookups
 * (readpage(s) and writepages take it under their page locks), written
 * for allocation and truncation, so i_block is read under it without the
 * node's lock.  An indirect block's checksum (kind INDIRECT, id = the
 * inode) is checked each time one is read.
 */
#include "mfs_i.h"
#include "balloc.h"
#include "blockmap.h"
#include "icache.h"
#include "jdata.h"

#include <errno.h>
#include <inttypes.h>
#include <string.h>

/* ---- the walker's callbacks ----------------------------------------------- */

/* What they need: the node, the handle of a change (none to read), and
 * the function that walks, which damage met on the way is said by. */
struct map_ctx {
	struct mfs_node *n;
	struct mfs_handle *h;
	const char *func;
};

static int map_get(void *arg, struct fmt_bmap_ind *ind, enum fmt_bmap_get how)
{
	struct map_ctx *c = arg;
	struct pc_page *pg;
	int err;

	if (how == FMT_BMAP_WRITE)
		return mfs_journal_access(c->n->fs, c->h, ind->priv, ind->blk);
	if (how == FMT_BMAP_NEW)
		err = mfs_meta_access(c->n->fs, c->h, ind->blk, true, &pg);
	else
		err = mfs_meta_read(c->n->fs, ind->blk, &pg);
	if (err)
		return err;
	ind->priv = pg;
	ind->ptrs = pg->data;
	return 0;
}

static void map_put(void *arg, struct fmt_bmap_ind *ind)
{
	(void)arg;
	pc_put_page(ind->priv);
}

static void map_lock(void *arg, struct fmt_bmap_ind *ind)
{
	struct map_ctx *c = arg;

	if (ind->blk)
		pc_lock_page(ind->priv);
	else
		pthread_mutex_lock(&c->n->lock);
}

static void map_unlock(void *arg, struct fmt_bmap_ind *ind)
{
	struct map_ctx *c = arg;

	if (ind->blk)
		pc_unlock_page(ind->priv);
	else
		pthread_mutex_unlock(&c->n->lock);
}

/* i_block goes to the disk with the inode, which its changer writes. */
static int map_changed(void *arg, struct fmt_bmap_ind *ind)
{
	struct map_ctx *c = arg;

	return ind->blk ? mfs_meta_dirty(c->n->fs, c->h, ind->blk, ind->priv) : 0;
}

static int new_block(struct mfs_node *n, struct mfs_handle *h, uint64_t *blk);

static int map_alloc(void *arg, int depth, uint64_t *blk)
{
	struct map_ctx *c = arg;

	(void)depth;
	return new_block(c->n, c->h, blk);
}

static int map_damage(void *arg, const struct fmt_bmap_bad *bad)
{
	struct map_ctx *c = arg;

	if (!bad->where)
		return mfs_error_at(c->n->fs, c->func, "%s", bad->why);
	return mfs_error_at(c->n->fs, c->func, "inode %" PRIu64 ": block %" PRIu64
			    " maps to %" PRIu64 ", %s", c->n->ino, bad->lblk, bad->ptr,
			    bad->where);
}

static const struct fmt_bmap_ops map_ops = {
	.get = map_get, .put = map_put, .lock = map_lock, .unlock = map_unlock,
	.changed = map_changed, .alloc = map_alloc, .damage = map_damage,
};

static struct fmt_bmap node_bmap(struct map_ctx *c, const struct fmt_bmap_ops *ops)
{
	/* An inode of memory has no block map: the number fits. */
	return (struct fmt_bmap){ .sb = &c->n->fs->sb, .ino = (uint32_t)c->n->ino,
				  .in = &c->n->raw, .ops = ops, .ctx = c };
}

/* ---- lookups ------------------------------------------------------------- */

int mfs_bmap_lookup_run(struct mfs_node *n, uint64_t lblk, uint32_t max,
			uint64_t *pblk, uint32_t *run)
{
	struct map_ctx c = { .n = n, .func = __func__ };
	struct fmt_bmap bm = node_bmap(&c, &map_ops);
	int err;

	pthread_rwlock_rdlock(&n->map_lock);
	err = fmt_bmap_find_run(&bm, lblk, max, pblk, run);
	pthread_rwlock_unlock(&n->map_lock);
	return err;
}

int mfs_bmap_lookup(struct mfs_node *n, uint64_t lblk, uint64_t *pblk)
{
	uint32_t run;

	return mfs_bmap_lookup_run(n, lblk, 1, pblk, &run);
}

/* ---- SEEK_DATA and SEEK_HOLE --------------------------------------------- */

struct seek_ctx {
	bool data;               /* looking for data, else for a hole */
	uint64_t next;           /* the block a hole search expects next */
	uint64_t found;
};

/* Blocks arrive in order: the first one is the data sought, and the
 * first gap before one is the hole sought. */
static int seek_block(void *arg, uint64_t lblk, uint64_t pblk)
{
	struct seek_ctx *c = arg;

	(void)pblk;
	if (c->data || lblk > c->next) {
		c->found = c->data ? lblk : c->next;
		return 1;
	}
	c->next = lblk + 1;
	return 0;
}

/* The walk's own words for any damage it meets. */
static int seek_damage(void *arg, const struct fmt_bmap_bad *bad)
{
	struct map_ctx *c = arg;

	return mfs_error_at(c->n->fs, c->func, "%s", bad->why);
}

static const struct fmt_bmap_ops seek_ops = {
	.get = map_get, .put = map_put, .damage = seek_damage,
};

int mfs_bmap_seek(struct mfs_node *n, uint64_t lblk, uint64_t end, bool data,
		  uint64_t *out)
{
	struct seek_ctx c = { .data = data, .next = lblk, .found = end };
	struct map_ctx mc = { .n = n, .func = __func__ };
	struct mfs_inode in;
	struct fmt_bmap bm = { .sb = &n->fs->sb, .ino = (uint32_t)n->ino, .in = &in,
			       .ops = &seek_ops, .ctx = &mc };
	int err;

	pthread_rwlock_rdlock(&n->map_lock);
	pthread_mutex_lock(&n->lock);
	in = n->raw;
	pthread_mutex_unlock(&n->lock);
	err = fmt_bmap_read(&bm, lblk, end, seek_block, NULL, &c);
	pthread_rwlock_unlock(&n->map_lock);
	if (err < 0)
		return err;
	if (!data && !err)
		c.found = c.next;        /* mapped up to the end of the walk */
	*out = UT_MIN(c.found, end);
	return 0;
}

/* ---- allocation ---------------------------------------------------------- */

uint64_t mfs_bmap_worst(struct mfs_fs *fs, uint64_t n)
{
	uint64_t apb = fs->apb;

	return n + n / apb + n / (apb * apb) + 6;
}

/* The indirect blocks on @lblk's path (@all), or those whose span
 * starts at @lblk: the ones a block mapped after its predecessor makes. */
static uint64_t ind_blocks(uint64_t apb, uint64_t lblk, bool all)
{
	uint64_t span = apb, n = 0;

	if (lblk < MFS_NDIR_BLOCKS)
		return 0;
	lblk -= MFS_NDIR_BLOCKS;
	for (unsigned level = 1; level <= 3; level++, span *= apb) {
		if (lblk >= span) {
			lblk -= span;
			continue;
		}
		for (uint64_t sub = apb, j = 1; j <= level; j++, sub *= apb)
			n += all || lblk % sub == 0;
		return n;
	}
	return 0;
}

uint64_t mfs_bmap_append_worst(struct mfs_fs *fs, uint64_t first, uint64_t n)
{
	uint64_t total = n;

	for (uint64_t l = first; l < first + n; l++)
		total += ind_blocks(fs->apb, l, l == first);
	return total;
}

static uint64_t goal_of(struct mfs_node *n)
{
	struct mfs_fs *fs = n->fs;

	if (n->goal)
		return n->goal;
	return fmt_group_first_block(&fs->sb, (n->ino - 1) / fs->ipg);
}

static int new_block(struct mfs_node *n, struct mfs_handle *h, uint64_t *blk)
{
	int err = mfs_alloc_block(n->fs, h, goal_of(n), blk);

	if (err)
		return err;
	n->goal = *blk + 1;
	pthread_mutex_lock(&n->lock);
	n->raw.i_blocks = htole64(le64toh(n->raw.i_blocks) + n->fs->bs / 512);
	pthread_mutex_unlock(&n->lock);
	return 0;
}

static int alloc_locked(struct mfs_node *n, struct mfs_handle *h, uint64_t lblk,
			uint64_t *pblk, bool *isnew)
{
	struct map_ctx c = { .n = n, .h = h, .func = __func__ };
	struct fmt_bmap bm = node_bmap(&c, &map_ops);

	return fmt_bmap_alloc(&bm, lblk, pblk, isnew);
}

int mfs_bmap_alloc(struct mfs_node *n, struct mfs_handle *h, uint64_t lblk,
		   uint64_t *pblk, bool *isnew)
{
	int err;

	pthread_rwlock_wrlock(&n->map_lock);
	err = alloc_locked(n, h, lblk, pblk, isnew);
	pthread_rwlock_unlock(&n->map_lock);
	/* A slow symlink's target is data too; directories are journalled. */
	if (!err && *isnew && !S_ISDIR(node_mode(n)) && node_data_ordered(n))
		err = jnl_add_ordered(&h->jh, &n->ji);
	return err;
}

/*
 * Preallocation: the format has no "unwritten" state, so a preallocated
 * block must read as zeros from the moment it is mapped.  The zeros are
 * written straight to the disk, and waited for, while map_lock is still
 * held for writing: a reader that maps the block (readpage takes the lock
 * for reading) finds them, never the bytes a previous owner left.  They
 * complete before the handle stops, and the inode is listed as ordered
 * data of the handle's transaction, whatever the data mode: its commit
 * then flushes the device before its commit block is written, also when
 * the commit is asynchronous (journal invariant C3), so the flush covers
 * them.
 */
struct zrun {
	struct mfs_fs *fs;
	const void *zeros;           /* @max blocks of zeros */
	uint64_t max, start, len;
	bool any;                    /* a block was zeroed */
};

static int zrun_flush(struct zrun *z)
{
	int err = 0;

	if (z->len)
		err = bdev_write(z->fs->bd, z->start * z->fs->bs, z->zeros,
				 z->len * z->fs->bs);
	z->len = 0;
	return err;
}

static int zrun_add(struct zrun *z, uint64_t blk)
{
	int err = 0;

	if (z->len && blk == z->start + z->len && z->len < z->max) {
		z->len++;
		return 0;
	}
	err = zrun_flush(z);
	z->start = blk;
	z->len = 1;
	z->any = true;
	return err;
}

int mfs_bmap_prealloc(struct mfs_node *n, struct mfs_handle *h, uint64_t first,
		      uint64_t end, const void *zeros, uint64_t zblocks)
{
	struct zrun z = { .fs = n->fs, .zeros = zeros, .max = zblocks };
	int err = 0;

	pthread_rwlock_wrlock(&n->map_lock);
	for (uint64_t b = first; b < end && !err; b++) {
		uint64_t pblk;
		bool isnew;

		err = alloc_locked(n, h, b, &pblk, &isnew);
		if (!err && isnew)
			err = zrun_add(&z, pblk);
	}
	if (!err)
		err = zrun_flush(&z);
	pthread_rwlock_unlock(&n->map_lock);
	if (!err && z.any)
		err = jnl_add_ordered(&h->jh, &n->ji);
	return err;
}

/* ---- truncation ---------------------------------------------------------- */

/* Credits one truncation step may use; it stops with a margin left. */
#define TRUNC_CREDITS 64
#define TRUNC_MARGIN  10

/* A small journal (or cache) takes fewer: more handles for one
 * truncation. */
uint64_t mfs_truncate_credits(struct mfs_fs *fs)
{
	return UT_MIN(TRUNC_CREDITS, jnl_max_credits(fs->j));
}

struct trunc {
	struct map_ctx c;            /* first: the walker's callbacks take it */
	bool meta;                   /* the data blocks are journalled */
	int credits;                 /* left in the handle (an estimate) */
	uint64_t freed;
	uint64_t run, run_len;       /* data blocks waiting to be freed */
};

/*
 * The slots of the run's blocks are cleared already: if their bits cannot
 * be cleared too (the bitmap cannot be read), they stay allocated to no
 * file, which only fsck can see -- so the superblock says so.
 */
static int run_flush(struct trunc *t)
{
	int err = 0;

	if (t->run_len)
		err = mfs_free_blocks(t->c.n->fs, t->c.h, t->run, (uint32_t)t->run_len, t->meta);
	if (err)
		mfs_error(t->c.n->fs, "inode %" PRIu64 ": cannot free blocks %" PRIu64 "+%" PRIu64
			  " (%s): they stay allocated until fsck frees them", t->c.n->ino,
			  t->run, t->run_len, strerror(-err));
	t->freed += t->run_len;
	t->run_len = 0;
	return err;
}

static int free_data(struct trunc *t, uint64_t blk)
{
	struct mfs_fs *fs = t->c.n->fs;
	uint64_t fdb = le32toh(fs->sb.s_first_data_block);
	bool same_group = t->run_len && (blk - fdb) / fs->bpg == (t->run - fdb) / fs->bpg;

	if (t->run_len && blk == t->run + t->run_len && same_group) {
		t->run_len++;
	} else {
		int err = run_flush(t);

		if (err)
			return err;
		t->run = blk;
		t->run_len = 1;
		t->credits -= 2;
	}
	if (t->meta)
		t->credits--;
	return 0;
}

static int free_meta(struct trunc *t, uint64_t blk)
{
	t->credits -= 3;
	t->freed++;
	return mfs_free_blocks(t->c.n->fs, t->c.h, blk, 1, true);
}

static int trunc_get(void *arg, struct fmt_bmap_ind *ind, enum fmt_bmap_get how)
{
	struct trunc *t = arg;
	int err = map_get(&t->c, ind, how);

	if (!err && how == FMT_BMAP_WRITE)
		t->credits--;
	return err;
}

static int trunc_free(void *arg, uint64_t blk, int depth)
{
	struct trunc *t = arg;

	return depth ? free_meta(t, blk) : free_data(t, blk);
}

static bool out_of_credits(void *arg)
{
	struct trunc *t = arg;

	return t->credits < TRUNC_MARGIN;
}

/* The walker dirties every indirect block it got for writing, and a slot
 * is cleared as its block is freed (a data block's free is pended in the
 * run): memory and journal say the same whatever step failed. */
static const struct fmt_bmap_ops trunc_ops = {
	.get = trunc_get, .put = map_put, .lock = map_lock, .unlock = map_unlock,
	.changed = map_changed, .free = trunc_free, .stop = out_of_credits,
	.damage = map_damage,
};

/* One handle's worth of freeing; *@more if blocks are left. */
static int trunc_step(struct mfs_node *n, uint64_t from, uint64_t end, bool *more)
{
	struct mfs_fs *fs = n->fs;
	struct mfs_handle h;
	uint32_t credits = (uint32_t)mfs_truncate_credits(fs);
	struct trunc t = { .c = { .n = n, .h = &h, .func = __func__ }, .credits = (int)credits - 1,
			   .meta = !S_ISREG(node_mode(n)) || atomic_load(&n->jdata) };
	struct fmt_bmap bm = node_bmap(&t.c, &trunc_ops);
	int e, err = mfs_jstart(fs, credits, &h);

	*more = false;
	if (err)
		return err;
	pthread_rwlock_wrlock(&n->map_lock);
	err = fmt_bmap_free(&bm, from, end, more);
	if (!err)
		err = run_flush(&t);
	pthread_rwlock_unlock(&n->map_lock);
	pthread_mutex_lock(&n->lock);
	n->raw.i_blocks = htole64(le64toh(n->raw.i_blocks) -
				  UT_MIN(le64toh(n->raw.i_blocks), t.freed * (fs->bs / 512)));
	pthread_mutex_unlock(&n->lock);
	e = mfs_inode_write(n, &h, true);      /* slots cleared before a failure too */
	return mfs_jstop(fs, &h, err ? err : e);
}

int mfs_bmap_free_range(struct mfs_node *n, uint64_t from, uint64_t end)
{
	bool more = from < end;
	int err = 0;

	if (S_ISLNK(node_mode(n)) && fmt_inode_is_fast_symlink(&n->raw))
		return 0;
	while (more && !err)
		err = trunc_step(n, from, end, &more);
	return err;
}

int mfs_bmap_truncate(struct mfs_node *n, uint64_t from)
{
	return mfs_bmap_free_range(n, from, UINT64_MAX);
}
