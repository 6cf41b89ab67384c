/*
 * balloc.c - block and inode allocation.
 *
 * Each group has a lock over its two bitmaps and its descriptor; both are
 * changed under a journal handle, their checksums kept current.  Blocks
 * are taken goal first (the block after a file's previous one, so that
 * sequential files come out contiguous), inodes near their directory.
 *
 * A block freed by a transaction is not handed out again before that
 * transaction has committed: until then a crash brings the old owner
 * back, and it must find its block unchanged.  Such blocks wait in a list
 * of extents tagged with the freeing transaction.
 */
#include "mfs_i.h"
#include "balloc.h"
#include "icache.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* ---- counts and reservations --------------------------------------------- */

static bool tid_done(uint32_t tid, uint32_t committed)
{
	return (int32_t)(committed - tid) >= 0;
}

void mfs_pend_prune(struct mfs_fs *fs)
{
	struct jnl_stats st;
	uint64_t freed = 0;
	size_t k = 0;

	if (!fs->j)
		return;
	jnl_get_stats(fs->j, &st);
	pthread_mutex_lock(&fs->pend_lock);
	for (size_t i = 0; i < fs->npend; i++) {
		if (tid_done(fs->pend[i].tid, st.committed_tid))
			freed += fs->pend[i].len;
		else
			fs->pend[k++] = fs->pend[i];
	}
	fs->npend = k;
	pthread_mutex_unlock(&fs->pend_lock);
	if (!freed)
		return;
	pthread_mutex_lock(&fs->count_lock);
	fs->pend_blocks -= freed;
	pthread_mutex_unlock(&fs->count_lock);
}

static bool pending(struct mfs_fs *fs, uint64_t blk)
{
	bool hit = false;

	pthread_mutex_lock(&fs->pend_lock);
	for (size_t i = 0; i < fs->npend && !hit; i++)
		hit = blk >= fs->pend[i].start &&
		      blk - fs->pend[i].start < fs->pend[i].len;
	pthread_mutex_unlock(&fs->pend_lock);
	return hit;
}

static int pend_add(struct mfs_fs *fs, uint64_t blk, uint32_t n, uint32_t tid)
{
	struct mfs_pend *last;
	int err = 0;

	pthread_mutex_lock(&fs->pend_lock);
	last = fs->npend ? &fs->pend[fs->npend - 1] : NULL;
	if (last && last->tid == tid && last->start + last->len == blk) {
		last->len += n;
	} else if (last && last->tid == tid && blk + n == last->start) {
		last->start = blk;
		last->len += n;
	} else {
		if (fs->npend == fs->cap_pend) {
			size_t cap = fs->cap_pend ? 2 * fs->cap_pend : 64;
			struct mfs_pend *p = realloc(fs->pend, cap * sizeof(*p));

			if (!p)
				err = -ENOMEM;
			else {
				fs->pend = p;
				fs->cap_pend = cap;
			}
		}
		if (!err)
			fs->pend[fs->npend++] = (struct mfs_pend){ blk, n, tid };
	}
	pthread_mutex_unlock(&fs->pend_lock);
	return err;
}

static int try_reserve(struct mfs_fs *fs, const struct mfs_cred *cr, uint64_t n,
		       bool *pend)
{
	uint64_t keep = cr && cr->uid ? le64toh(fs->sb.s_r_blocks_count) : 0;
	int err = -ENOSPC;

	pthread_mutex_lock(&fs->count_lock);
	if (fs->free_blocks >= fs->pend_blocks + keep + n) {
		fs->free_blocks -= n;
		err = 0;
	}
	*pend = fs->pend_blocks > 0;
	pthread_mutex_unlock(&fs->count_lock);
	return err;
}

/* How long a full filesystem waits for unlinked inodes' FORGETs. */
#define FORGET_WAIT_MS 1000

static void forget_deadline(struct timespec *until)
{
	clock_gettime(CLOCK_REALTIME, until);     /* icache_cond's clock */
	until->tv_sec += FORGET_WAIT_MS / 1000;
}

static int reserve_blocks_once(struct mfs_fs *fs, const struct mfs_cred *cr,
			       uint64_t n)
{
	bool pend;
	int err;

	mfs_pend_prune(fs);
	err = try_reserve(fs, cr, n, &pend);
	if (err && pend) {
		/* Blocks freed by transactions not yet committed: commit them
		 * (no handle is held here) and try again. */
		err = jnl_sync(fs->j);
		mfs_pend_prune(fs);
		if (!err)
			err = try_reserve(fs, cr, n, &pend);
	}
	return err;
}

/* Run @try; if it finds the filesystem full, wait for unlinked inodes'
 * FORGETs and try again.  The first try costs no lock and no clock. */
static int retry_after_forgets(struct mfs_fs *fs, int (*try)(void *), void *arg)
{
	struct timespec until;
	int err = try(arg);

	if (err != -ENOSPC)
		return err;
	forget_deadline(&until);
	for (;;) {
		uint64_t seq = mfs_evict_seq(fs);

		err = try(arg);
		if (err != -ENOSPC || !mfs_wait_forgotten(fs, seq, &until))
			return err;
	}
}

struct block_want {
	struct mfs_fs *fs;
	const struct mfs_cred *cr;
	uint64_t n;
};

static int try_blocks(void *arg)
{
	struct block_want *w = arg;

	return reserve_blocks_once(w->fs, w->cr, w->n);
}

int mfs_reserve_blocks(struct mfs_fs *fs, const struct mfs_cred *cr, uint64_t n,
		       struct mfs_resv *r)
{
	struct block_want w = { fs, cr, n };
	int err = n ? retry_after_forgets(fs, try_blocks, &w) : 0;

	*r = (struct mfs_resv){ .blocks = err ? 0 : n };
	return err;
}

void mfs_reserve_end(struct mfs_fs *fs, struct mfs_resv *r)
{
	pthread_mutex_lock(&fs->count_lock);
	fs->free_blocks += r->blocks - r->used;
	pthread_mutex_unlock(&fs->count_lock);
	*r = (struct mfs_resv){ 0 };
}

/* A block allocated under @h comes out of its reservation; one that has
 * none left (a reservation that counted wrong) comes off the free count
 * now, which then may go below what running operations hold. */
static void charge_block(struct mfs_fs *fs, struct mfs_handle *h)
{
	struct mfs_resv *r = h->resv;

	if (r && r->used < r->blocks) {
		r->used++;
		return;
	}
	mlog_err("a block was allocated beyond its operation's reservation "
		 "(%" PRIu64 " reserved)", r ? r->blocks : 0);
	pthread_mutex_lock(&fs->count_lock);
	fs->free_blocks -= UT_MIN(fs->free_blocks, 1);
	pthread_mutex_unlock(&fs->count_lock);
}

static int take_inode(void *arg)
{
	struct mfs_fs *fs = arg;
	int err = -ENOSPC;

	pthread_mutex_lock(&fs->count_lock);
	if (fs->free_inodes) {
		fs->free_inodes--;
		err = 0;
	}
	pthread_mutex_unlock(&fs->count_lock);
	return err;
}

int mfs_reserve_inode(struct mfs_fs *fs)
{
	return retry_after_forgets(fs, take_inode, fs);
}

void mfs_unreserve_inode(struct mfs_fs *fs)
{
	pthread_mutex_lock(&fs->count_lock);
	fs->free_inodes++;
	pthread_mutex_unlock(&fs->count_lock);
}

/* ---- bitmaps --------------------------------------------------------------- */

static bool test_bit(const uint8_t *map, uint32_t i)
{
	return map[i / 8] >> (i % 8) & 1;
}

/* First clear bit in [from, to), or @to. */
static uint32_t find_zero(const uint8_t *map, uint32_t from, uint32_t to)
{
	uint32_t i = from;

	while (i < to && i % 64)
		if (!test_bit(map, i++))
			return i - 1;
	for (; i + 64 <= to; i += 64) {
		uint64_t w;

		memcpy(&w, map + i / 8, 8);
		w = le64toh(w);
		if (w != UINT64_MAX)
			return i + (uint32_t)__builtin_ctzll(~w);
	}
	for (; i < to; i++)
		if (!test_bit(map, i))
			return i;
	return to;
}

/*
 * Bitmap of group @g, checked the first time (group lock held): its
 * checksum, and for blocks that the group's own metadata is marked in
 * use, or the allocator would hand it out.
 */
static int bitmap_get(struct mfs_fs *fs, uint32_t g, bool inodes,
		      struct pc_page **pg, uint64_t *blk)
{
	struct mfs_group_desc *gd = mfs_gdesc(fs, g, NULL);
	struct mfs_group *grp = &fs->groups[g];
	bool *ok = inodes ? &grp->ibitmap_ok : &grp->bbitmap_ok;
	uint32_t want = le32toh(inodes ? gd->bg_inode_bitmap_csum : gd->bg_block_bitmap_csum);
	uint32_t meta = fmt_group_meta_blocks(&fs->sb, g);
	const char *why = NULL;
	int err;

	*blk = le32toh(inodes ? gd->bg_inode_bitmap : gd->bg_block_bitmap);
	err = mfs_meta_read(fs, *blk, pg);
	if (err || *ok)
		return err;
	if (fmt_bitmap_csum(&fs->sb, inodes ? MFS_CSUM_IBITMAP : MFS_CSUM_BBITMAP,
			    g, (*pg)->data) != want)
		why = "checksum mismatch";
	else if (!inodes && find_zero((*pg)->data, 0, meta) < meta)
		why = "the group's metadata is marked free";
	if (why) {
		pc_put_page(*pg);
		return mfs_error(fs, "%s bitmap of group %" PRIu32 " (block %" PRIu64
				 "): %s", inodes ? "inode" : "block", g, *blk, why);
	}
	*ok = true;
	return 0;
}

/* Descriptor counts are read without their group's lock (choosing a
 * group), so they are read and written as relaxed atomics. */
static uint32_t count_get(const uint32_t *field)
{
	return le32toh(__atomic_load_n(field, __ATOMIC_RELAXED));
}

static void count_add(uint32_t *field, int32_t d)
{
	__atomic_store_n(field, htole32(le32toh(*field) + (uint32_t)d), __ATOMIC_RELAXED);
}

/* Journal group @g's descriptor: counts moved by @dfree and @ddirs, and
 * the checksum of the bitmap now in @bitmap. */
static int gdesc_update(struct mfs_fs *fs, struct mfs_handle *h, uint32_t g,
			bool inodes, const void *bitmap, int32_t dfree, int32_t ddirs)
{
	uint32_t off;
	uint64_t blk = fmt_gdesc_block(&fs->sb, g, &off);
	struct pc_page *pg;
	struct mfs_group_desc *gd = mfs_gdesc(fs, g, &pg);
	int err = mfs_journal_access(fs, h, pg, blk);
	uint32_t csum;

	if (err)
		return err;
	csum = fmt_bitmap_csum(&fs->sb, inodes ? MFS_CSUM_IBITMAP : MFS_CSUM_BBITMAP,
			       g, bitmap);
	pc_lock_page(pg);
	if (inodes) {
		count_add(&gd->bg_free_inodes_count, dfree);
		count_add(&gd->bg_used_dirs_count, ddirs);
		gd->bg_inode_bitmap_csum = htole32(csum);
	} else {
		count_add(&gd->bg_free_blocks_count, dfree);
		gd->bg_block_bitmap_csum = htole32(csum);
	}
	gd->bg_checksum = htole32(fmt_gdesc_csum(&fs->sb, g, gd));
	pc_unlock_page(pg);
	return jnl_dirty(&h->jh, blk);
}

static uint32_t bits_wrong(const uint8_t *map, uint32_t from, uint32_t n, bool set)
{
	for (uint32_t i = from; i < from + n; i++)
		if (test_bit(map, i) == set)
			return i;
	return UINT32_MAX;
}

/* Set (@set) or clear bits [@from, @from + @n) of a bitmap under the
 * journal, group lock held; -EUCLEAN, changing nothing, if one of them
 * already has that value. */
static int bitmap_change(struct mfs_fs *fs, struct mfs_handle *h, uint32_t g,
			 bool inodes, uint32_t from, uint32_t n, bool set,
			 int32_t ddirs)
{
	struct pc_page *pg;
	uint64_t blk;
	uint32_t bad = UINT32_MAX;
	int err = bitmap_get(fs, g, inodes, &pg, &blk);

	if (err)
		return err;
	err = mfs_journal_access(fs, h, pg, blk);
	if (!err) {
		pc_lock_page(pg);
		bad = bits_wrong(pg->data, from, n, set);
		for (uint32_t i = from; i < from + n && bad == UINT32_MAX; i++) {
			uint8_t *b = (uint8_t *)pg->data + i / 8;

			*b = set ? *b | (uint8_t)(1u << (i % 8)) : *b & (uint8_t)~(1u << (i % 8));
		}
		pc_unlock_page(pg);
		if (bad == UINT32_MAX)
			err = jnl_dirty(&h->jh, blk);
	}
	if (!err && bad == UINT32_MAX)
		err = gdesc_update(fs, h, g, inodes, pg->data,
				   set ? -(int32_t)n : (int32_t)n, ddirs);
	pc_put_page(pg);
	if (!err && bad != UINT32_MAX)
		err = mfs_error(fs, "group %" PRIu32 ": %s bit %" PRIu32 " is already "
				"%s", g, inodes ? "inode" : "block", bad,
				set ? "set" : "clear");
	return err;
}

/* ---- blocks ---------------------------------------------------------------- */

/* A free, not pending bit of group @g's block bitmap from @start on. */
static int group_find_block(struct mfs_fs *fs, uint32_t g, uint32_t start,
			    uint32_t *bit)
{
	uint32_t n = fmt_group_nblocks(&fs->sb, g);
	uint64_t first = fmt_group_first_block(&fs->sb, g), blk;
	struct pc_page *pg;
	int err = bitmap_get(fs, g, false, &pg, &blk);

	if (err)
		return err;
	*bit = find_zero(pg->data, start, n);
	while (*bit < n && pending(fs, first + *bit))
		*bit = find_zero(pg->data, *bit + 1, n);
	pc_put_page(pg);
	return *bit < n ? 0 : -ENOSPC;
}

static int group_alloc_block(struct mfs_fs *fs, struct mfs_handle *h, uint32_t g,
			     uint32_t start, uint64_t *blk)
{
	struct mfs_group *grp = &fs->groups[g];
	uint32_t bit;
	int err;

	pthread_mutex_lock(&grp->lock);
	if (!count_get(&mfs_gdesc(fs, g, NULL)->bg_free_blocks_count))
		err = -ENOSPC;
	else
		err = group_find_block(fs, g, start, &bit);
	if (!err)
		err = bitmap_change(fs, h, g, false, bit, 1, true, 0);
	pthread_mutex_unlock(&grp->lock);
	if (!err) {
		*blk = fmt_group_first_block(&fs->sb, g) + bit;
		charge_block(fs, h);
	}
	return err;
}

/*
 * One block, as near @goal as can be: from @goal to the end of its group,
 * then every other group from its start.  The caller reserved it.
 */
int mfs_alloc_block(struct mfs_fs *fs, struct mfs_handle *h, uint64_t goal,
		    uint64_t *blk)
{
	uint64_t fdb = le32toh(fs->sb.s_first_data_block);
	uint32_t g0, start;
	int err = -ENOSPC;

	if (goal < fdb || goal >= fs->nblocks)
		goal = fdb;
	g0 = (uint32_t)((goal - fdb) / fs->bpg);
	start = (uint32_t)((goal - fdb) % fs->bpg);
	for (uint32_t i = 0; i <= fs->ngroups && err == -ENOSPC; i++) {
		uint32_t g = (g0 + i) % fs->ngroups;

		err = group_alloc_block(fs, h, g, i ? 0 : start, blk);
	}
	if (err == -ENOSPC)
		err = mfs_error(fs, "no free block found although one was reserved "
				"(descriptors disagree with the bitmaps)");
	return err;
}

int mfs_free_blocks(struct mfs_fs *fs, struct mfs_handle *h, uint64_t blk,
		    uint32_t n, bool meta)
{
	uint64_t fdb = le32toh(fs->sb.s_first_data_block);
	int err = 0;

	if (blk < fdb || blk + n > fs->nblocks || !n)
		return mfs_error(fs, "freeing blocks %" PRIu64 "+%" PRIu32 " outside "
				 "the filesystem", blk, n);
	while (n && !err) {
		uint32_t g = (uint32_t)((blk - fdb) / fs->bpg);
		uint32_t bit = (uint32_t)((blk - fdb) % fs->bpg);
		uint32_t run = UT_MIN(n, fs->bpg - bit);

		/* The group's metadata comes first in it, and is never free. */
		if (bit < fmt_group_meta_blocks(&fs->sb, g))
			return mfs_error(fs, "freeing blocks %" PRIu64 "+%" PRIu32 ", on "
					 "the metadata of group %" PRIu32, blk, run, g);
		/* Pending before the group's lock goes: an allocation in between
		 * would find the bits clear and hand the blocks out again before
		 * their free has committed, even in this very transaction. */
		pthread_mutex_lock(&fs->groups[g].lock);
		err = bitmap_change(fs, h, g, false, bit, run, false, 0);
		if (!err)
			err = pend_add(fs, blk, run, h->jh.h_tid);
		pthread_mutex_unlock(&fs->groups[g].lock);
		for (uint32_t i = 0; i < run && meta && !err; i++)
			err = jnl_revoke(&h->jh, blk + i);
		if (!err) {
			pthread_mutex_lock(&fs->count_lock);
			fs->free_blocks += run;
			fs->pend_blocks += run;
			pthread_mutex_unlock(&fs->count_lock);
		}
		blk += run;
		n -= run;
	}
	return err;
}

/* ---- inodes ---------------------------------------------------------------- */

int mfs_ino_in_use(struct mfs_fs *fs, uint32_t ino)
{
	uint32_t g = (ino - 1) / fs->ipg;
	struct pc_page *pg;
	uint64_t blk;
	int err;

	pthread_mutex_lock(&fs->groups[g].lock);
	err = bitmap_get(fs, g, true, &pg, &blk);
	if (!err) {
		err = test_bit(pg->data, (ino - 1) % fs->ipg);
		pc_put_page(pg);
	}
	pthread_mutex_unlock(&fs->groups[g].lock);
	return err;
}

/* Directories spread over the groups with the most room; other inodes
 * stay with their directory. */
static uint32_t pick_group(struct mfs_fs *fs, uint32_t dir, bool is_dir)
{
	uint32_t pg = (dir - 1) / fs->ipg, best = pg;
	uint64_t best_blocks = 0;

	if (!is_dir)
		return pg;
	for (uint32_t i = 0; i < fs->ngroups; i++) {
		uint32_t g = (pg + 1 + i) % fs->ngroups;
		const struct mfs_group_desc *gd = mfs_gdesc(fs, g, NULL);
		uint64_t fb = count_get(&gd->bg_free_blocks_count);

		if (count_get(&gd->bg_free_inodes_count) && fb > best_blocks) {
			best = g;
			best_blocks = fb;
		}
	}
	return best;
}

/* An inode of group @g; with @fast, from the first that may be free, and
 * none (-ENOSPC) where the descriptor counts none free, so that a file
 * among a million in one directory skips the full groups before it. */
static int group_alloc_inode(struct mfs_fs *fs, struct mfs_handle *h, uint32_t g,
			     bool is_dir, bool fast, uint32_t *ino)
{
	struct mfs_group *grp = &fs->groups[g];
	struct pc_page *pg;
	uint64_t blk;
	uint32_t bit = 0;
	int err = 0;

	if (fast && !count_get(&mfs_gdesc(fs, g, NULL)->bg_free_inodes_count))
		return -ENOSPC;
	pthread_mutex_lock(&grp->lock);
	err = bitmap_get(fs, g, true, &pg, &blk);
	if (!err) {
		bit = find_zero(pg->data, fast ? UT_MIN(grp->ino_from, fs->ipg) : 0, fs->ipg);
		pc_put_page(pg);
		if (bit >= fs->ipg)
			err = -ENOSPC;
	}
	if (!err)
		err = bitmap_change(fs, h, g, true, bit, 1, true, is_dir);
	if (!err)
		grp->ino_from = bit + 1;
	pthread_mutex_unlock(&grp->lock);
	*ino = g * fs->ipg + bit + 1;
	return err;
}

int mfs_alloc_inode(struct mfs_fs *fs, struct mfs_handle *h, uint32_t dir,
		    bool is_dir, uint32_t *ino)
{
	uint32_t g0 = pick_group(fs, dir, is_dir);
	int err = -ENOSPC;

	/* Then every bit of every group, should a count or a hint be wrong. */
	for (int fast = 1; fast >= 0 && err == -ENOSPC; fast--)
		for (uint32_t i = 0; i < fs->ngroups && err == -ENOSPC; i++)
			err = group_alloc_inode(fs, h, (g0 + i) % fs->ngroups, is_dir,
						fast, ino);
	if (err == -ENOSPC)
		err = mfs_error(fs, "no free inode found although one was reserved "
				"(descriptors disagree with the bitmaps)");
	return err;
}

int mfs_free_inode(struct mfs_fs *fs, struct mfs_handle *h, uint32_t ino,
		   bool is_dir)
{
	uint32_t g = (ino - 1) / fs->ipg;
	int err;

	pthread_mutex_lock(&fs->groups[g].lock);
	err = bitmap_change(fs, h, g, true, (ino - 1) % fs->ipg, 1, false,
			    is_dir ? -1 : 0);
	if (!err)
		fs->groups[g].ino_from = UT_MIN(fs->groups[g].ino_from, (ino - 1) % fs->ipg);
	pthread_mutex_unlock(&fs->groups[g].lock);
	if (!err)
		mfs_unreserve_inode(fs);
	return err;
}
