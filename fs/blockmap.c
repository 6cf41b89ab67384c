/*
 * blockmap.c - an inode's block map: looking blocks up for reads and
 * writeback, allocating them when a write happens (under the write's
 * handle, as ext3 does, so that writeback never needs one), and freeing
 * them on truncate in as many handles as it takes.
 *
 * node->map_lock guards i_block and the indirect blocks: read for lookups
 * (readpage(s) and writepages take it under their page locks), written
 * for allocation and truncation.  Indirect blocks live in the metadata
 * mapping and are journalled; their checksum (kind INDIRECT, id = the
 * inode) is checked each time one is read for a lookup.
 */
#include "mfs_i.h"
#include "balloc.h"
#include "blockmap.h"
#include "icache.h"
#include "jdata.h"

#include <errno.h>
#include <inttypes.h>
#include <string.h>

/* ---- lookups ------------------------------------------------------------- */

static uint32_t *ind_ptrs(struct pc_page *pg)
{
	return pg->data;
}

static int ind_read(struct mfs_node *n, uint64_t blk, struct pc_page **pg)
{
	struct mfs_fs *fs = n->fs;
	int err = mfs_meta_read(fs, blk, pg);

	if (err)
		return err;
	if (!fmt_block_csum_ok(&fs->sb, MFS_CSUM_INDIRECT, n->ino, (*pg)->data)) {
		pc_put_page(*pg);
		return mfs_error(fs, "indirect block %" PRIu64 " of inode %" PRIu64
				 ": checksum mismatch", blk, n->ino);
	}
	return 0;
}

static int ptr_check(struct mfs_node *n, uint64_t ptr, uint64_t from)
{
	const char *where;

	if (ptr >= n->fs->nblocks || ptr < le32toh(n->fs->sb.s_first_data_block))
		where = "outside the filesystem";
	else if (fmt_block_in_group_meta(&n->fs->sb, ptr))
		where = "on the metadata of its group";
	else
		return 0;
	return mfs_error(n->fs, "inode %" PRIu64 ": block %" PRIu64 " maps to %"
			 PRIu64 ", %s", n->ino, from, ptr, where);
}

/* map_lock held (either way). */
static int lookup_locked(struct mfs_node *n, uint64_t lblk, uint64_t *pblk)
{
	uint32_t off[4];
	int depth = fmt_block_to_path(n->fs->apb, lblk, off);
	uint64_t ptr;
	int err = 0;

	*pblk = 0;
	if (!depth)
		return -EFBIG;
	pthread_mutex_lock(&n->lock);
	ptr = le32toh(n->raw.i_block[off[0]]);
	pthread_mutex_unlock(&n->lock);
	for (int d = 1; d < depth && ptr && !err; d++) {
		struct pc_page *pg;

		err = ptr_check(n, ptr, lblk);
		if (!err)
			err = ind_read(n, ptr, &pg);
		if (!err) {
			ptr = le32toh(ind_ptrs(pg)[off[d]]);
			pc_put_page(pg);
		}
	}
	if (!err && ptr)
		err = ptr_check(n, ptr, lblk);
	if (!err)
		*pblk = ptr;
	return err;
}

int mfs_bmap_lookup(struct mfs_node *n, uint64_t lblk, uint64_t *pblk)
{
	int err;

	pthread_rwlock_rdlock(&n->map_lock);
	err = lookup_locked(n, lblk, pblk);
	pthread_rwlock_unlock(&n->map_lock);
	return err;
}

/* ---- SEEK_DATA and SEEK_HOLE --------------------------------------------- */

struct seek_ctx {
	struct mfs_node *n;
	bool data;               /* looking for data, else for a hole */
	uint64_t next;           /* the block a hole search expects next */
	uint64_t found;
};

static int seek_read(void *arg, uint64_t blk, void *buf)
{
	struct seek_ctx *c = arg;
	struct pc_page *pg;
	int err = mfs_meta_read(c->n->fs, blk, &pg);

	if (err)
		return err;
	memcpy(buf, pg->data, c->n->fs->bs);
	pc_put_page(pg);
	return 0;
}

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

int mfs_bmap_seek(struct mfs_node *n, uint64_t lblk, uint64_t end, bool data,
		  uint64_t *out)
{
	struct mfs_fs *fs = n->fs;
	struct seek_ctx c = { .n = n, .data = data, .next = lblk, .found = end };
	struct mfs_inode in;
	char why[160] = "";
	struct fmt_bmap_walk w = {
		.sb = &fs->sb, .ino = n->ino, .in = &in,
		.read_block = seek_read, .read_ctx = &c,
		.data = seek_block, .ctx = &c, .why = why, .whylen = sizeof(why),
	};
	int err;

	pthread_rwlock_rdlock(&n->map_lock);
	pthread_mutex_lock(&n->lock);
	in = n->raw;
	pthread_mutex_unlock(&n->lock);
	err = fmt_bmap_walk(&w, lblk, end);
	pthread_rwlock_unlock(&n->map_lock);
	if (err < 0)
		return err == -EUCLEAN ? mfs_error(fs, "%s", why) : err;
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

static uint64_t goal_of(struct mfs_node *n)
{
	struct mfs_fs *fs = n->fs;

	if (n->goal)
		return n->goal;
	return fmt_group_first_block(&fs->sb, (n->ino - 1) / fs->ipg);
}

static int new_block(struct mfs_node *n, struct jnl_handle *h, uint64_t *blk)
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

/* A new, empty indirect block. */
static int new_indirect(struct mfs_node *n, struct jnl_handle *h, uint64_t *blk)
{
	struct mfs_fs *fs = n->fs;
	struct pc_page *pg;
	int err = new_block(n, h, blk);

	if (!err)
		err = mfs_meta_access(fs, h, *blk, true, &pg);
	if (err)
		return err;
	pc_lock_page(pg);
	fmt_block_set_csum(&fs->sb, MFS_CSUM_INDIRECT, n->ino, pg->data);
	pc_unlock_page(pg);
	err = mfs_meta_dirty(fs, h, *blk, pg);
	pc_put_page(pg);
	return err;
}

/* Point slot @i of indirect block @parent (or of i_block if 0) at @blk. */
static int set_slot(struct mfs_node *n, struct jnl_handle *h, uint64_t parent,
		    uint32_t i, uint64_t blk)
{
	struct mfs_fs *fs = n->fs;
	struct pc_page *pg;
	int err;

	if (!parent) {
		pthread_mutex_lock(&n->lock);
		n->raw.i_block[i] = htole32((uint32_t)blk);
		pthread_mutex_unlock(&n->lock);
		return 0;
	}
	err = mfs_meta_access(fs, h, parent, false, &pg);
	if (err)
		return err;
	pc_lock_page(pg);
	ind_ptrs(pg)[i] = htole32((uint32_t)blk);
	fmt_block_set_csum(&fs->sb, MFS_CSUM_INDIRECT, n->ino, pg->data);
	pc_unlock_page(pg);
	err = mfs_meta_dirty(fs, h, parent, pg);
	pc_put_page(pg);
	return err;
}

static int read_slot(struct mfs_node *n, uint64_t parent, uint32_t i,
		     uint64_t lblk, uint64_t *ptr)
{
	struct pc_page *pg;
	int err;

	if (!parent) {
		pthread_mutex_lock(&n->lock);
		*ptr = le32toh(n->raw.i_block[i]);
		pthread_mutex_unlock(&n->lock);
	} else {
		err = ind_read(n, parent, &pg);
		if (err)
			return err;
		*ptr = le32toh(ind_ptrs(pg)[i]);
		pc_put_page(pg);
	}
	return *ptr ? ptr_check(n, *ptr, lblk) : 0;
}

static int alloc_locked(struct mfs_node *n, struct jnl_handle *h, uint64_t lblk,
			uint64_t *pblk, bool *isnew)
{
	uint32_t off[4];
	int depth = fmt_block_to_path(n->fs->apb, lblk, off);
	uint64_t parent = 0, ptr = 0;
	int err = 0;

	*isnew = false;
	if (!depth)
		return -EFBIG;
	for (int d = 0; d < depth && !err; d++) {
		err = read_slot(n, parent, off[d], lblk, &ptr);
		if (err || ptr) {
			parent = ptr;
			continue;
		}
		if (d == depth - 1) {
			err = new_block(n, h, &ptr);
			*isnew = !err;
		} else {
			err = new_indirect(n, h, &ptr);
		}
		if (!err)
			err = set_slot(n, h, parent, off[d], ptr);
		parent = ptr;
	}
	*pblk = ptr;
	return err;
}

int mfs_bmap_alloc(struct mfs_node *n, struct jnl_handle *h, uint64_t lblk,
		   uint64_t *pblk, bool *isnew)
{
	int err;

	pthread_rwlock_wrlock(&n->map_lock);
	err = alloc_locked(n, h, lblk, pblk, isnew);
	pthread_rwlock_unlock(&n->map_lock);
	/* A slow symlink's target is data too; directories are journalled. */
	if (!err && *isnew && !S_ISDIR(node_mode(n)) && node_data_ordered(n))
		err = jnl_add_ordered(h, &n->ji);
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

int mfs_bmap_prealloc(struct mfs_node *n, struct jnl_handle *h, uint64_t first,
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
		err = jnl_add_ordered(h, &n->ji);
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
	struct mfs_node *n;
	struct jnl_handle *h;
	uint64_t from, end;          /* logical blocks [from, end) to free */
	bool meta;                   /* the data blocks are journalled */
	int credits;                 /* left in the handle (an estimate) */
	uint64_t freed;
	uint64_t run, run_len;       /* data blocks waiting to be freed */
	bool more;                   /* stopped for lack of credits */
	uint64_t span[4];
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
		err = mfs_free_blocks(t->n->fs, t->h, t->run, (uint32_t)t->run_len, t->meta);
	if (err)
		mfs_error(t->n->fs, "inode %" PRIu64 ": cannot free blocks %" PRIu64 "+%" PRIu64
			  " (%s): they stay allocated until fsck frees them", t->n->ino,
			  t->run, t->run_len, strerror(-err));
	t->freed += t->run_len;
	t->run_len = 0;
	return err;
}

static bool out_of_credits(struct trunc *t)
{
	if (t->credits < TRUNC_MARGIN)
		t->more = true;
	return t->more;
}

static int free_data(struct trunc *t, uint64_t blk)
{
	struct mfs_fs *fs = t->n->fs;
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
	return mfs_free_blocks(t->n->fs, t->h, blk, 1, true);
}

static int trunc_ind(struct trunc *t, uint64_t blk, int depth, uint64_t base,
		     bool *gone);

/* Free what slot @i of @pg maps (a child of level @depth at @base). */
static int trunc_child(struct trunc *t, uint32_t *slot, int depth, uint64_t base)
{
	uint64_t ptr = le32toh(*slot);
	bool gone = true;
	int err = ptr_check(t->n, ptr, base);

	if (!err && depth > 1)
		err = trunc_ind(t, ptr, depth - 1, base, &gone);
	if (err || !gone)
		return err;
	err = depth > 1 ? free_meta(t, ptr) : free_data(t, ptr);
	if (!err)
		*slot = 0;
	return err;
}

static int trunc_ind(struct trunc *t, uint64_t blk, int depth, uint64_t base,
		     bool *gone)
{
	struct mfs_fs *fs = t->n->fs;
	uint64_t span = t->span[depth - 1];
	uint32_t i = base >= t->from ? 0 : (uint32_t)((t->from - base) / span);
	struct pc_page *pg;
	int e, err = ind_read(t->n, blk, &pg);

	if (err)
		return err;
	err = mfs_journal_access(t->n->fs, t->h, pg, blk);
	if (err) {
		pc_put_page(pg);
		return err;
	}
	t->credits--;
	for (; i < fs->apb && !err && !out_of_credits(t); i++) {
		uint32_t slot;
		uint64_t cbase = base + i * span;

		pc_lock_page(pg);
		slot = ind_ptrs(pg)[i];
		pc_unlock_page(pg);
		if (cbase >= t->end)
			break;
		if (!slot || (depth == 1 && cbase < t->from))
			continue;
		err = trunc_child(t, &slot, depth, cbase);
		pc_lock_page(pg);
		ind_ptrs(pg)[i] = slot;
		pc_unlock_page(pg);
	}
	/* What changed goes to the journal even when a child failed: the
	 * block in memory and on the disk must say the same. */
	pc_lock_page(pg);
	fmt_block_set_csum(&fs->sb, MFS_CSUM_INDIRECT, t->n->ino, pg->data);
	pc_unlock_page(pg);
	e = jnl_dirty(t->h, blk);
	err = err ? err : e;
	pc_put_page(pg);
	/* An indirect block goes only when its whole span is freed: one a
	 * punched hole covers in part stays, even if left empty. */
	*gone = !err && !t->more && base >= t->from &&
		base + t->span[depth] <= t->end;
	return err;
}

static int trunc_top(struct trunc *t)
{
	struct mfs_node *n = t->n;
	uint64_t base = MFS_NDIR_BLOCKS;
	int err = 0;

	for (uint64_t b = t->from; b < UT_MIN(t->end, MFS_NDIR_BLOCKS) && !err &&
	     !out_of_credits(t); b++) {
		uint32_t slot = n->raw.i_block[b];

		if (slot)
			err = trunc_child(t, &slot, 1, b);
		pthread_mutex_lock(&n->lock);
		n->raw.i_block[b] = slot;
		pthread_mutex_unlock(&n->lock);
	}
	for (int d = 1; d <= 3 && !err && !out_of_credits(t); d++) {
		uint32_t slot = n->raw.i_block[MFS_NDIR_BLOCKS + d - 1];

		if (slot && base + t->span[d] > t->from && base < t->end)
			err = trunc_child(t, &slot, d + 1, base);
		pthread_mutex_lock(&n->lock);
		n->raw.i_block[MFS_NDIR_BLOCKS + d - 1] = slot;
		pthread_mutex_unlock(&n->lock);
		base += t->span[d];
	}
	return err;
}

/* One handle's worth of freeing; *@more if blocks are left. */
static int trunc_step(struct mfs_node *n, uint64_t from, uint64_t end, bool *more)
{
	struct mfs_fs *fs = n->fs;
	struct jnl_handle h;
	uint32_t credits = (uint32_t)mfs_truncate_credits(fs);
	struct trunc t = { .n = n, .h = &h, .from = from, .end = end,
			   .credits = (int)credits - 1,
			   .meta = !S_ISREG(node_mode(n)) || atomic_load(&n->jdata) };
	int e, err = mfs_jstart(fs, credits, &h);

	if (err)
		return err;
	t.span[0] = 1;
	for (int d = 1; d < 4; d++)
		t.span[d] = t.span[d - 1] * fs->apb;
	pthread_rwlock_wrlock(&n->map_lock);
	err = trunc_top(&t);
	if (!err)
		err = run_flush(&t);
	pthread_rwlock_unlock(&n->map_lock);
	pthread_mutex_lock(&n->lock);
	n->raw.i_blocks = htole64(le64toh(n->raw.i_blocks) -
				  UT_MIN(le64toh(n->raw.i_blocks), t.freed * (fs->bs / 512)));
	pthread_mutex_unlock(&n->lock);
	e = mfs_inode_write(n, &h, true);      /* slots cleared before a failure too */
	*more = t.more;
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
