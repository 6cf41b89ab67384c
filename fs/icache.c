/*
 * icache.c - inodes in memory: a hash table by inode number, reference
 * and lookup counts, reading and writing the on-disk inode, eviction
 * (which frees an unlinked inode's blocks), and the orphan list.
 *
 * A node lives while it has users (refs: operations in progress, open
 * files) or FUSE lookups (nlookup).  When both reach zero it is evicted:
 * its dirty pages are written back, and an unlinked inode is freed.  A
 * node being evicted stays in the hash marked "freeing", so that nobody
 * reads the inode from disk while its last pages are still going out.
 * Nodes nobody uses wait on an LRU list (their cached pages with them)
 * until there are too many; an unlinked one is evicted at once.
 */
#include "mfs_i.h"
#include "balloc.h"
#include "blockmap.h"
#include "dir.h"
#include "icache.h"
#include "jdata.h"
#include "vfs.h"
#include "xattr.h"

#include <errno.h>
#include <inttypes.h>
#include <malloc.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

/* The inode hash starts at 2^IHASH_BITS buckets and doubles whenever it
 * holds twice as many nodes as buckets, up to 2^IHASH_MAX_BITS: a lookup
 * stays a short walk with a million inodes the kernel holds. */
#define IHASH_BITS 14
#define IHASH_MAX_BITS 24
/* Nodes kept cached with no user, so that their pages stay too. */
#define LRU_MAX 8192

void mfs_now(struct timespec *ts)
{
	clock_gettime(CLOCK_REALTIME, ts);
}

int mfs_icache_init(struct mfs_fs *fs)
{
	fs->ihash = calloc(1u << IHASH_BITS, sizeof(*fs->ihash));
	fs->ihash_bits = IHASH_BITS;
	fs->ihash_mask = (1u << IHASH_BITS) - 1;
	ut_list_init(&fs->ilru);
	return fs->ihash ? 0 : -ENOMEM;
}

void mfs_icache_destroy(struct mfs_fs *fs)
{
	free(fs->ihash);
	fs->ihash = NULL;
	mfs_stub_free(&fs->stubs);
}

static uint32_t bucket_of(uint32_t ino, unsigned bits)
{
	return (ino * 2654435761u) >> (32 - bits);
}

static struct mfs_node **bucket(struct mfs_fs *fs, uint32_t ino)
{
	return &fs->ihash[bucket_of(ino, fs->ihash_bits)];
}

static struct mfs_node *hash_find(struct mfs_fs *fs, uint32_t ino)
{
	struct mfs_node *n = *bucket(fs, ino);

	while (n && n->ino != ino)
		n = n->hnext;
	return n;
}

static void hash_del(struct mfs_fs *fs, struct mfs_node *n)
{
	struct mfs_node **pp = bucket(fs, n->ino);

	while (*pp != n)
		pp = &(*pp)->hnext;
	*pp = n->hnext;
	fs->nnodes--;
}

/* Twice the buckets, every node moved (icache_lock held); without the
 * memory the table stays as it is, only slower. */
static void hash_grow(struct mfs_fs *fs)
{
	unsigned bits = fs->ihash_bits + 1;
	struct mfs_node **t = calloc((size_t)1 << bits, sizeof(*t));

	if (!t)
		return;
	for (uint32_t b = 0; b <= fs->ihash_mask; b++)
		while (fs->ihash[b]) {
			struct mfs_node *n = fs->ihash[b];
			struct mfs_node **pp = &t[bucket_of(n->ino, bits)];

			fs->ihash[b] = n->hnext;
			n->hnext = *pp;
			*pp = n;
		}
	free(fs->ihash);
	fs->ihash = t;
	fs->ihash_bits = bits;
	fs->ihash_mask = (1u << bits) - 1;
}

static void hash_add(struct mfs_fs *fs, struct mfs_node *n)
{
	struct mfs_node **pp = bucket(fs, n->ino);

	n->hnext = *pp;
	*pp = n;
	fs->nnodes++;
	if (fs->nnodes > 2ull * (fs->ihash_mask + 1) && fs->ihash_bits < IHASH_MAX_BITS)
		hash_grow(fs);
}

/* ---- the on-disk inode --------------------------------------------------- */

static int inode_place(struct mfs_fs *fs, uint32_t ino, uint64_t *blk, uint32_t *off)
{
	const struct mfs_group_desc *gd;

	if (ino == 0 || ino > fs->ninodes)
		return mfs_error(fs, "inode %" PRIu32 " is out of range", ino);
	gd = mfs_gdesc(fs, (ino - 1) / fs->ipg, NULL);
	*blk = fmt_inode_block(&fs->sb, le32toh(gd->bg_inode_table), ino, off);
	return 0;
}

static int inode_check(struct mfs_fs *fs, uint32_t ino, const struct mfs_inode *in,
		       uint64_t blk)
{
	char why[256];

	if (fmt_inode_never_used(in))
		return mfs_error(fs, "inode %" PRIu32 " (block %" PRIu64 ") is named "
				 "but was never used", ino, blk);
	if (le32toh(in->i_checksum) != fmt_inode_csum(&fs->sb, ino, in))
		return mfs_error(fs, "inode %" PRIu32 " (block %" PRIu64 "): checksum "
				 "mismatch", ino, blk);
	if (fmt_inode_check(&fs->sb, ino, in, why, sizeof(why)))
		return mfs_error(fs, "%s", why);
	return 0;
}

static int inode_read(struct mfs_fs *fs, uint32_t ino, struct mfs_inode *in,
		      bool unlinked)
{
	uint64_t blk = 0;
	uint32_t off = 0;
	struct pc_page *pg;
	int err = inode_place(fs, ino, &blk, &off);

	if (!err)
		err = mfs_meta_read(fs, blk, &pg);
	if (err)
		return err;
	pc_lock_page(pg);
	memcpy(in, (char *)pg->data + off, sizeof(*in));
	pc_unlock_page(pg);
	pc_put_page(pg);
	err = inode_check(fs, ino, in, blk);
	if (!err && !unlinked && !in->i_links_count)
		err = mfs_error(fs, "inode %" PRIu32 " is named but has no links", ino);
	if (!err && !unlinked) {
		err = mfs_ino_in_use(fs, ino);
		if (err == 0)
			err = mfs_error(fs, "inode %" PRIu32 " is named but free in "
					"the inode bitmap", ino);
		else if (err == 1)
			err = 0;
	}
	return err;
}

int mfs_inode_write(struct mfs_node *n, struct mfs_handle *h, bool data)
{
	struct mfs_fs *fs = n->fs;
	uint64_t blk = 0;
	uint32_t off = 0;
	struct pc_page *pg;
	int err = inode_place(fs, n->ino, &blk, &off);

	if (!err)
		err = mfs_meta_access(fs, h, blk, false, &pg);
	if (err)
		return err;
	pc_lock_page(pg);
	pthread_mutex_lock(&n->lock);
	n->raw.i_checksum = htole32(fmt_inode_csum(&fs->sb, n->ino, &n->raw));
	memcpy((char *)pg->data + off, &n->raw, sizeof(n->raw));
	n->last_tid = h->jh.h_tid;
	if (data)
		n->last_data_tid = h->jh.h_tid;
	n->dirty_tid = true;
	pthread_mutex_unlock(&n->lock);
	pc_unlock_page(pg);
	err = mfs_meta_dirty(fs, h, blk, pg);
	pc_put_page(pg);
	return err;
}

/* ---- nodes --------------------------------------------------------------- */

static bool has_data(const struct mfs_inode *in)
{
	uint16_t mode = le16toh(in->i_mode);

	return S_ISREG(mode) || S_ISDIR(mode) ||
	       (S_ISLNK(mode) && !fmt_inode_is_fast_symlink(in));
}

static void node_free(struct mfs_node *n)
{
	if (n->map)
		pc_mapping_destroy(n->map);
	mfs_dirhash_free(n);
	free(n->acl);
	pthread_rwlock_destroy(&n->rwsem);
	pthread_rwlock_destroy(&n->map_lock);
	pthread_mutex_destroy(&n->lock);
	pthread_mutex_destroy(&n->dh_lock);
	free(n);
}

static struct mfs_node *node_new(struct mfs_fs *fs, uint64_t ino,
				  const struct mfs_inode *in, const struct mfs_iops *ops)
{
	struct mfs_node *n = calloc(1, sizeof(*n));

	if (!n)
		return NULL;
	n->fs = fs;
	n->ino = ino;
	n->ops = ops;
	n->raw = *in;
	n->refs = 1;
	n->ji.ji_ino = (uint32_t)ino;
	ut_list_init(&n->orphan_link);
	ut_list_init(&n->lru);
	pthread_rwlock_init(&n->rwsem, NULL);
	pthread_rwlock_init(&n->map_lock, NULL);
	pthread_mutex_init(&n->lock, NULL);
	pthread_mutex_init(&n->dh_lock, NULL);
	return n;
}

static int node_alloc(struct mfs_fs *fs, uint32_t ino, const struct mfs_inode *in,
		      struct mfs_node **out)
{
	struct mfs_node *n = node_new(fs, ino, in, mfs_disk_kind(ino, in));
	int err = n ? 0 : -ENOMEM;

	if (!err && has_data(in))
		err = mfs_map_create(n);
	if (err) {
		if (n)
			node_free(n);
		return err;
	}
	*out = n;
	return 0;
}

int mfs_inode_mem(struct mfs_fs *fs, uint64_t ino, const struct mfs_inode *raw,
		  const struct mfs_iops *ops, struct mfs_node **out)
{
	struct mfs_node *n = node_new(fs, ino, raw, ops);

	if (!n)
		return -ENOMEM;
	/* No ACL, and none is ever read from the disk for it. */
	n->acl_cached = true;
	*out = n;
	return 0;
}

void mfs_inode_mem_free(struct mfs_node *n)
{
	node_free(n);
}

void mfs_igrab(struct mfs_node *n)
{
	pthread_mutex_lock(&n->fs->icache_lock);
	n->refs++;
	pthread_mutex_unlock(&n->fs->icache_lock);
}

/* Wait while a node of @ino is being evicted; icache_lock held.  Returns
 * the live node, or NULL. */
static struct mfs_node *find_live(struct mfs_fs *fs, uint32_t ino)
{
	struct mfs_node *n;

	while ((n = hash_find(fs, ino)) && n->freeing)
		ut_cond_wait(&fs->icache_cond, &fs->icache_lock);
	if (n && !ut_list_empty(&n->lru)) {
		ut_list_del(&n->lru);
		fs->nlru--;
	}
	return n;
}

static int iget(struct mfs_fs *fs, uint64_t ino64, bool unlinked,
		struct mfs_node **out)
{
	uint32_t ino = (uint32_t)ino64;
	struct mfs_inode in;
	struct mfs_node *n, *other;
	int err;

	if (ino64 == 0 || ino64 > fs->ninodes)
		return -ESTALE;
	pthread_mutex_lock(&fs->icache_lock);
	n = find_live(fs, ino);
	if (n)
		n->refs++;
	pthread_mutex_unlock(&fs->icache_lock);
	if (n) {
		*out = n;
		return 0;
	}
	err = inode_read(fs, ino, &in, unlinked);
	if (!err)
		err = node_alloc(fs, ino, &in, &n);
	if (err)
		return err;
	pthread_mutex_lock(&fs->icache_lock);
	other = find_live(fs, ino);
	if (other) {
		other->refs++;
	} else {
		n->last_tid = fs->evicted_tid;
		n->last_data_tid = fs->evicted_data_tid;
		n->dirty_tid = fs->evicted_dirty;
		n->nlookup = mfs_stub_take(&fs->stubs, ino);
		hash_add(fs, n);
	}
	pthread_mutex_unlock(&fs->icache_lock);
	if (other) {
		node_free(n);
		n = other;
	}
	*out = n;
	return 0;
}

int mfs_iget(struct mfs_fs *fs, uint64_t ino, struct mfs_node **out)
{
	return iget(fs, ino, false, out);
}

int mfs_iget_cached(struct mfs_fs *fs, uint64_t ino, struct mfs_node **out)
{
	struct mfs_node *n = NULL;

	if (ino && ino <= fs->ninodes) {
		pthread_mutex_lock(&fs->icache_lock);
		n = find_live(fs, (uint32_t)ino);
		if (n)
			n->refs++;
		pthread_mutex_unlock(&fs->icache_lock);
	}
	*out = n;
	return n ? 0 : -ENOENT;
}

/*
 * An inode by number alone, as a file handle names it: one that is free,
 * unlinked, or of the reserved range (other than the root) is stale.  A
 * number used again is another inode, which the caller tells apart by
 * its generation.
 */
int mfs_iget_handle(struct mfs_fs *fs, uint64_t ino, struct mfs_node **out)
{
	int err;

	if (ino != MFS_ROOT_INO && (ino < MFS_FIRST_INO || ino > fs->ninodes))
		return -ESTALE;
	err = mfs_ino_in_use(fs, (uint32_t)ino);
	if (err <= 0)
		return err ? err : -ESTALE;
	err = iget(fs, ino, true, out);
	if (!err && (!(*out)->raw.i_links_count || !node_mode(*out))) {
		mfs_iput(*out);
		err = -ESTALE;
	}
	return err;
}

int mfs_inew(struct mfs_fs *fs, uint32_t ino, const struct mfs_inode *raw,
	     struct mfs_node **out)
{
	struct mfs_node *n;
	int err = node_alloc(fs, ino, raw, &n);

	if (err)
		return err;
	pthread_mutex_lock(&fs->icache_lock);
	if (find_live(fs, ino) || mfs_stub_take(&fs->stubs, ino)) {
		pthread_mutex_unlock(&fs->icache_lock);
		node_free(n);
		return mfs_error(fs, "inode %" PRIu32 " allocated while in use", ino);
	}
	hash_add(fs, n);
	pthread_mutex_unlock(&fs->icache_lock);
	*out = n;
	return 0;
}

void mfs_iget_lookup(struct mfs_node *n)
{
	pthread_mutex_lock(&n->fs->icache_lock);
	n->nlookup++;
	pthread_mutex_unlock(&n->fs->icache_lock);
}

void mfs_node_opened(struct mfs_node *n, int delta)
{
	pthread_mutex_lock(&n->fs->icache_lock);
	n->nopen += delta;
	pthread_mutex_unlock(&n->fs->icache_lock);
}

/* ---- eviction ------------------------------------------------------------ */

/*
 * Free an unlinked inode: its blocks (in as many handles as that takes),
 * then the inode itself and its place on the orphan list.  The steps that
 * may fail and leave nothing changed come first (the bitmap read, the
 * xattr block's free, taking the node off the list): one of them failing
 * leaves the inode on the orphan list for a retry.  A failure past them
 * leaves it off the list, still marked in use (evict() says so).
 */
static int free_unlinked(struct mfs_node *n)
{
	struct mfs_fs *fs = n->fs;
	struct mfs_handle h;
	bool is_dir = S_ISDIR(node_mode(n));
	struct timespec now;
	int err = mfs_bmap_truncate(n, 0);

	if (!err)
		err = mfs_ino_in_use(fs, n->ino);    /* reads the bitmap in */
	if (err < 0)
		return err;
	pthread_mutex_lock(&fs->orphan_lock);
	err = mfs_jstart(fs, MFS_ORPHAN_CREDITS + 6, &h);
	if (err) {
		pthread_mutex_unlock(&fs->orphan_lock);
		return err;
	}
	err = mfs_xattr_drop_block(n, &h);
	if (!err)
		err = mfs_orphan_del(n, &h);
	if (!err) {
		mfs_now(&now);
		pthread_mutex_lock(&n->lock);
		n->raw.i_dtime = htole64(now.tv_sec);
		n->raw.i_size = 0;
		pthread_mutex_unlock(&n->lock);
		err = mfs_inode_write(n, &h, true);
		if (!err)
			err = mfs_free_inode(fs, &h, n->ino, is_dir);
	}
	err = mfs_jstop(fs, &h, err);
	pthread_mutex_unlock(&fs->orphan_lock);
	return err;
}

/*
 * Whether a node being evicted is still on the orphan list, read without
 * orphan_lock.  Only a holder of a reference changes n->orphan (unlink,
 * truncate, and this eviction's own free, in this thread); the last other
 * holder let go under icache_lock before the eviction began, so nobody
 * writes it now.  And the lock must not be taken: once the inode's bit is
 * free, a create may allocate the number and wait, inside its handle, for
 * this node to leave the hash (find_live).  orphan_lock comes before a
 * handle; its holder may be waiting for room in the journal, which waits
 * for the commit, which waits for that create's handle.
 */
static bool evicting_orphan(const struct mfs_node *n)
{
	return n->orphan;
}

/* An inode on the orphan list is freed by a retry, the unmount or the
 * next mount; one off it (a create that failed, or a free that failed
 * late) only by fsck, and the superblock must say so. */
static void free_failed(struct mfs_node *n, int err)
{
	if (evicting_orphan(n))
		mlog_err("inode %" PRIu64 ": cannot free it (%s); it stays on the "
			 "orphan list", n->ino, strerror(-err));
	else
		mfs_error(n->fs, "inode %" PRIu64 ": cannot free it (%s); it stays "
			  "allocated until fsck frees it", n->ino, strerror(-err));
}

static void evict(struct mfs_node *n)
{
	struct mfs_fs *fs = n->fs;
	int err = 0;

	if (!n->raw.i_links_count && !mfs_check_rw(fs)) {
		if (n->map)
			pc_truncate(n->map, 0);
		err = free_unlinked(n);
		if (err)
			free_failed(n, err);
	} else if (n->map) {
		err = mfs_jdata_flush(n);
		if (!err)
			err = pc_sync_mapping(n->map);
		if (err)
			mlog_err("inode %" PRIu64 ": writing back its data failed: %s",
				 n->ino, strerror(-err));
	}
	if (fs->j)
		jnl_forget_inode(fs->j, &n->ji);
}

static uint32_t tid_newer(uint32_t a, uint32_t b)
{
	return (int32_t)(a - b) > 0 ? a : b;
}

/* What the node's fsync would have waited for, kept for the inodes read
 * back later (icache_lock held; nobody else uses @n). */
static void note_evicted(struct mfs_fs *fs, const struct mfs_node *n)
{
	if (!n->dirty_tid)
		return;
	fs->evicted_tid = fs->evicted_dirty ? tid_newer(fs->evicted_tid, n->last_tid) :
			  n->last_tid;
	fs->evicted_data_tid = fs->evicted_dirty ?
			       tid_newer(fs->evicted_data_tid, n->last_data_tid) :
			       n->last_data_tid;
	fs->evicted_dirty = true;
}

/*
 * A node the eviction could not take off the orphan list stays in memory:
 * its neighbours on the list write through it when they leave, and the
 * list in memory must match the one on the disk.  Mounted, it is found by
 * its number as before, and its next user tries again; at unmount
 * (@final) it stays freeing, for drop_stuck (icache_lock held).
 */
static bool keep_stuck(struct mfs_fs *fs, struct mfs_node *n, bool orphan, bool final)
{
	n->stuck = orphan;
	if (!orphan)
		return false;
	if (!final) {
		n->freeing = false;
		pthread_cond_broadcast(&fs->icache_cond);
	}
	return true;
}

/*
 * The nodes the kernel forgets in a batch (a dentry prune, drop_caches)
 * free thousands of small blocks spread over the heaps of every worker
 * thread; the allocator keeps them for reuse, so the daemon's memory would
 * never fall back.  Every TRIM_EVERY frees the free pages go back to the
 * system (a walk of the heaps: a few milliseconds, once per thousands of
 * evictions).  The count is the process's, as the allocator is.
 */
#define TRIM_EVERY 4096u

static void freed_one(void)
{
	static atomic_uint freed;

	if (atomic_fetch_add(&freed, 1) % TRIM_EVERY == TRIM_EVERY - 1)
		malloc_trim(0);
}

/*
 * A node the kernel still knows (mounted: at unmount it lets go) leaves
 * a stub of its number and lookup count.  Without the memory for one the
 * node stays, back at the LRU's end (icache_lock held).
 */
static bool keep_known(struct mfs_fs *fs, struct mfs_node *n, bool final)
{
	if (final || !n->nlookup || !mfs_stub_put(&fs->stubs, (uint32_t)n->ino, n->nlookup))
		return false;
	n->freeing = false;
	ut_list_add_tail(&fs->ilru, &n->lru);
	fs->nlru++;
	pthread_cond_broadcast(&fs->icache_cond);
	return true;
}

static void evict_and_free(struct mfs_node *n, bool final)
{
	struct mfs_fs *fs = n->fs;
	bool orphan;

	evict(n);
	pthread_mutex_lock(&n->lock);
	pthread_mutex_unlock(&n->lock);     /* the last writer's changes seen */
	orphan = evicting_orphan(n);
	pthread_mutex_lock(&fs->icache_lock);
	if (keep_stuck(fs, n, orphan, final) || keep_known(fs, n, final)) {
		pthread_mutex_unlock(&fs->icache_lock);
		return;
	}
	note_evicted(fs, n);
	hash_del(fs, n);
	fs->evict_seq++;
	pthread_cond_broadcast(&fs->icache_cond);
	pthread_mutex_unlock(&fs->icache_lock);
	node_free(n);
	freed_one();
}

/*
 * A directory's blocks are journalled from its own mapping, and the
 * journal keeps a reference to each page until the block is home.  While
 * it does, the node must stay: evicted, it would drop the page, and the
 * directory read back would show the block's old contents from disk.
 * (icache_lock held; nobody uses @n.)
 */
static bool journal_holds_dir(struct mfs_node *n)
{
	uint64_t blocks = S_ISDIR(node_mode(n)) && n->map ? node_size(n) / n->fs->bs : 0;

	for (uint64_t i = 0; i < blocks; i++) {
		struct pc_page *pg = pc_find_get_page(n->map, i);
		bool held = pg && atomic_load(&pg->count) > 2;   /* the index's, ours */

		if (pg)
			pc_put_page(pg);
		if (held)
			return true;
	}
	return false;
}

/* Nodes of the LRU looked at for one eviction. */
#define EVICT_TRIES 16

/* The oldest node of the LRU that may go, marked freeing; one that may
 * not moves to the end (icache_lock held). */
static struct mfs_node *lru_victim(struct mfs_fs *fs)
{
	for (int i = 0; i < EVICT_TRIES; i++) {
		struct mfs_node *n = ut_list_entry(fs->ilru.next, struct mfs_node, lru);

		ut_list_del(&n->lru);
		if (journal_holds_dir(n)) {
			ut_list_add_tail(&fs->ilru, &n->lru);
			continue;
		}
		fs->nlru--;
		n->freeing = true;
		return n;
	}
	return NULL;        /* over the limit for now: the next one tries again */
}

/* A node nobody uses any more: unlinked, it goes at once; else it joins
 * the LRU, and the oldest there goes if there are too many.  Returns the
 * node to evict, marked freeing, or NULL (icache_lock held). */
static struct mfs_node *unused(struct mfs_fs *fs, struct mfs_node *n)
{
	if (!n->raw.i_links_count) {
		n->freeing = true;
		return n;
	}
	ut_list_add_tail(&fs->ilru, &n->lru);
	if (++fs->nlru <= LRU_MAX)
		return NULL;
	return lru_victim(fs);
}

void mfs_iput(struct mfs_node *n)
{
	struct mfs_fs *fs = n->fs;
	struct mfs_node *victim = NULL;

	pthread_mutex_lock(&fs->icache_lock);
	if (--n->refs == 0 && (n->nlookup == 0 || n->raw.i_links_count))
		victim = unused(fs, n);
	pthread_mutex_unlock(&fs->icache_lock);
	if (victim)
		evict_and_free(victim, false);
}

/*
 * The kernel forgets: the node's count, or its stub's.  A node being
 * evicted is waited for, since it may be turning into a stub.  Only an
 * unlinked node the kernel alone held goes now; an unused linked one
 * is on the LRU already, and one in use goes through its last mfs_iput.
 */
void mfs_icache_forget(struct mfs_fs *fs, uint64_t ino, uint64_t nlookup)
{
	struct mfs_node *n;

	if (ino > UINT32_MAX)
		return;
	pthread_mutex_lock(&fs->icache_lock);
	while ((n = hash_find(fs, (uint32_t)ino)) && n->freeing && !n->stuck)
		ut_cond_wait(&fs->icache_cond, &fs->icache_lock);
	if (!n) {
		mfs_stub_forget(&fs->stubs, (uint32_t)ino, nlookup);
	} else {
		n->nlookup -= UT_MIN(nlookup, n->nlookup);
		if (n->refs || !ut_list_empty(&n->lru) || n->freeing)
			n = NULL;
		else
			n->refs++;
	}
	pthread_mutex_unlock(&fs->icache_lock);
	if (n)
		mfs_iput(n);
}

/*
 * Unmount, the last step: the nodes still on the orphan list, each evicted
 * once more in vain, go from memory only.  Every neighbour that left the
 * list wrote through them, so the list on the disk is whole, and the next
 * mount (or fsck) takes it up.
 */
static void drop_stuck(struct mfs_fs *fs)
{
	pthread_mutex_lock(&fs->orphan_lock);
	while (!ut_list_empty(&fs->orphans)) {
		struct mfs_node *n = ut_list_entry(fs->orphans.next, struct mfs_node,
						   orphan_link);

		mlog_warn("inode %" PRIu64 ": left on the orphan list for the next "
			  "mount or fsck", n->ino);
		ut_list_del(&n->orphan_link);
		pthread_mutex_lock(&fs->icache_lock);
		hash_del(fs, n);
		pthread_mutex_unlock(&fs->icache_lock);
		node_free(n);
	}
	pthread_mutex_unlock(&fs->orphan_lock);
}

/*
 * Unmount: every node goes, whatever its counts (the kernel has let go);
 * a stuck one is evicted once more, which writes its data back and tries
 * to free it again.  Each scan goes on from the bucket of the last node
 * found, not from the start, and it is over when a scan from the start
 * finds none: about two walks of the table rather than one per node.
 */
int mfs_icache_sync(struct mfs_fs *fs)
{
	uint32_t from = 0;

	for (;;) {
		struct mfs_node *n = NULL;
		uint32_t b;

		pthread_mutex_lock(&fs->icache_lock);
		for (b = from; b <= fs->ihash_mask && !n; b++)
			for (n = fs->ihash[b]; n && n->freeing; n = n->hnext)
				;
		if (!n && from) {
			pthread_mutex_unlock(&fs->icache_lock);
			from = 0;
			continue;
		}
		from = n ? b - 1 : 0;
		if (n) {
			n->freeing = true;
			if (!ut_list_empty(&n->lru)) {
				ut_list_del(&n->lru);
				fs->nlru--;
			}
		}
		pthread_mutex_unlock(&fs->icache_lock);
		if (!n)
			break;
		evict_and_free(n, true);
	}
	drop_stuck(fs);
	return 0;
}

/* ---- attributes ---------------------------------------------------------- */

void mfs_node_fill_stat(struct mfs_node *n, struct stat *st)
{
	const struct mfs_inode *in = &n->raw;

	memset(st, 0, sizeof(*st));
	pthread_mutex_lock(&n->lock);
	st->st_ino = n->ino;
	st->st_mode = le16toh(in->i_mode);
	st->st_nlink = le16toh(in->i_links_count);
	st->st_uid = le32toh(in->i_uid);
	st->st_gid = le32toh(in->i_gid);
	st->st_size = (off_t)le64toh(in->i_size);
	st->st_blocks = (blkcnt_t)le64toh(in->i_blocks);
	st->st_blksize = n->fs->bs;
	if (S_ISCHR(st->st_mode) || S_ISBLK(st->st_mode))
		st->st_rdev = (dev_t)le64toh(in->i_rdev);
	st->st_atim.tv_sec = (time_t)le64toh(in->i_atime);
	st->st_atim.tv_nsec = le32toh(in->i_atime_nsec);
	st->st_mtim.tv_sec = (time_t)le64toh(in->i_mtime);
	st->st_mtim.tv_nsec = le32toh(in->i_mtime_nsec);
	st->st_ctim.tv_sec = (time_t)le64toh(in->i_ctime);
	st->st_ctim.tv_nsec = le32toh(in->i_ctime_nsec);
	pthread_mutex_unlock(&n->lock);
}

/* Set mtime and/or ctime to now; node->lock held by the caller. */
void mfs_node_touch(struct mfs_node *n, bool mtime, bool ctime)
{
	struct timespec now;

	mfs_now(&now);
	if (mtime) {
		n->raw.i_mtime = htole64(now.tv_sec);
		n->raw.i_mtime_nsec = htole32((uint32_t)now.tv_nsec);
	}
	if (ctime) {
		n->raw.i_ctime = htole64(now.tv_sec);
		n->raw.i_ctime_nsec = htole32((uint32_t)now.tv_nsec);
	}
}

/* ---- the orphan list ----------------------------------------------------- */

int mfs_orphan_add(struct mfs_node *n, struct mfs_handle *h)
{
	struct mfs_fs *fs = n->fs;
	int err;

	if (n->orphan)
		return 0;
	pthread_mutex_lock(&n->lock);
	n->raw.i_next_orphan = htole32(fs->orphan_head);
	pthread_mutex_unlock(&n->lock);
	err = mfs_inode_write(n, h, true);
	if (err)
		return err;
	fs->orphan_head = n->ino;
	n->orphan = true;
	ut_list_del(&n->orphan_link);
	n->orphan_link.next = fs->orphans.next;
	n->orphan_link.prev = &fs->orphans;
	fs->orphans.next->prev = &n->orphan_link;
	fs->orphans.next = &n->orphan_link;
	return mfs_sb_journal(fs, h);
}

/* Point the list's link before @n (the superblock's head, or @prev's
 * i_next_orphan) at @next, in memory and in the journal. */
static int orphan_link_to(struct mfs_fs *fs, struct mfs_node *prev, struct mfs_handle *h,
			  uint32_t next)
{
	if (!prev) {
		fs->orphan_head = next;
		return mfs_sb_journal(fs, h);
	}
	pthread_mutex_lock(&prev->lock);
	prev->raw.i_next_orphan = htole32(next);
	pthread_mutex_unlock(&prev->lock);
	return mfs_inode_write(prev, h, true);
}

/*
 * A failure to write the link before @n (its block cannot be read) is
 * undone in memory: @n stays on the list, on the disk and here, for a
 * retry.  Once that link is written, the list is whole without @n and
 * @n's own stale i_next_orphan is harmless (cleared when it is written).
 */
int mfs_orphan_del(struct mfs_node *n, struct mfs_handle *h)
{
	struct mfs_fs *fs = n->fs;
	uint32_t next = le32toh(n->raw.i_next_orphan);
	struct mfs_node *prev;
	int err;

	if (!n->orphan)
		return 0;
	prev = n->orphan_link.prev == &fs->orphans ? NULL :
	       ut_list_entry(n->orphan_link.prev, struct mfs_node, orphan_link);
	err = orphan_link_to(fs, prev, h, next);
	if (err) {
		if (!prev) {
			fs->orphan_head = n->ino;
		} else {
			pthread_mutex_lock(&prev->lock);
			prev->raw.i_next_orphan = htole32(n->ino);
			pthread_mutex_unlock(&prev->lock);
		}
		return err;
	}
	n->orphan = false;
	ut_list_del(&n->orphan_link);
	pthread_mutex_lock(&n->lock);
	n->raw.i_next_orphan = 0;
	pthread_mutex_unlock(&n->lock);
	return mfs_inode_write(n, h, true);
}

int mfs_orphan_remove(struct mfs_node *n)
{
	struct mfs_fs *fs = n->fs;
	struct mfs_handle h;
	int err;

	pthread_mutex_lock(&fs->orphan_lock);
	err = mfs_jstart(fs, MFS_ORPHAN_CREDITS, &h);
	if (!err)
		err = mfs_jstop(fs, &h, mfs_orphan_del(n, &h));
	pthread_mutex_unlock(&fs->orphan_lock);
	return err;
}

/* A linked orphan was being truncated: free what lies past its size, then
 * take it off the list. */
static int orphan_truncated(struct mfs_node *n)
{
	int err = mfs_bmap_truncate(n, UT_DIV_ROUND_UP(node_size(n), n->fs->bs));

	return err ? err : mfs_orphan_remove(n);
}

/*
 * Each node of the list (which holds a reference to every one) truncated
 * or freed; one that cannot be stays on the list, stuck, and the next
 * node's reference keeps that one in its place while this one goes.
 * After an error (@err) the references only go.
 */
static int orphans_finish(struct mfs_fs *fs, int err)
{
	struct ut_list *l, *next;

	for (l = fs->orphans.next; l != &fs->orphans; l = next) {
		struct mfs_node *n = ut_list_entry(l, struct mfs_node, orphan_link);

		next = l->next;
		if (n->raw.i_links_count && !err)
			err = orphan_truncated(n);
		mfs_iput(n);
	}
	return err;
}

/* @n, just read, joins the list in memory; false if it is on it already. */
static bool orphan_collect(struct mfs_fs *fs, struct mfs_node *n)
{
	bool again;

	pthread_mutex_lock(&fs->orphan_lock);
	again = n->orphan;
	if (!again) {
		n->orphan = true;
		ut_list_add_tail(&fs->orphans, &n->orphan_link);
	}
	pthread_mutex_unlock(&fs->orphan_lock);
	return !again;
}

/* The list on the disk is damaged at @ino: it ends after @last (or is
 * empty) in memory, and the disk follows as the nodes leave it. */
static void orphan_cut(struct mfs_fs *fs, struct mfs_node *last, uint32_t ino, int err)
{
	mfs_error(fs, "orphan list: %s inode %" PRIu32 "; the list ends before it",
		  err == -ELOOP ? "a loop back to" : "cannot read", ino);
	if (!last) {
		fs->orphan_head = 0;
		return;
	}
	pthread_mutex_lock(&last->lock);
	last->raw.i_next_orphan = 0;
	pthread_mutex_unlock(&last->lock);
}

/*
 * After recovery: finish what the orphan list records.  An unlinked inode
 * is freed; a linked one was cut short by a truncation, which is finished.
 * A damaged list (a loop, an inode that fails its checks) ends before the
 * damage, an error of the filesystem for fsck to finish; an error of the
 * device or of memory fails the mount.
 */
int mfs_orphans_process(struct mfs_fs *fs)
{
	uint32_t ino = fs->orphan_head;
	struct mfs_node *n, *last = NULL;
	int err = 0;

	while (ino) {
		err = iget(fs, ino, true, &n);
		if (!err && !orphan_collect(fs, n)) {
			mfs_iput(n);
			err = -ELOOP;
		}
		if (err == -ELOOP || err == -EUCLEAN || err == -ESTALE) {
			orphan_cut(fs, last, ino, err);
			err = 0;
			break;
		}
		if (err)
			break;
		last = n;
		ino = le32toh(n->raw.i_next_orphan);
		mlog_info("orphan inode %" PRIu64 ": %s", n->ino,
			  n->raw.i_links_count ? "truncated to its size" : "freed");
	}
	return orphans_finish(fs, err);
}

/* ---- allocations that wait for FORGETs ----------------------------------- */

uint64_t mfs_evict_seq(struct mfs_fs *fs)
{
	uint64_t seq;

	pthread_mutex_lock(&fs->icache_lock);
	seq = fs->evict_seq;
	pthread_mutex_unlock(&fs->icache_lock);
	return seq;
}

/* An orphan no file holds open: unlinked, waiting for its FORGET (or a
 * truncation about to end). */
static bool forget_pending(struct mfs_fs *fs)
{
	struct ut_list *l;
	bool any = false;

	pthread_mutex_lock(&fs->orphan_lock);
	pthread_mutex_lock(&fs->icache_lock);
	for (l = fs->orphans.next; l != &fs->orphans && !any; l = l->next) {
		struct mfs_node *n = ut_list_entry(l, struct mfs_node, orphan_link);

		any = !n->nopen && !n->stuck;
	}
	pthread_mutex_unlock(&fs->icache_lock);
	pthread_mutex_unlock(&fs->orphan_lock);
	return any;
}

bool mfs_wait_forgotten(struct mfs_fs *fs, uint64_t seq, const struct timespec *until)
{
	bool moved;
	int rc = 0;

	if (!forget_pending(fs))
		return false;
	/* The forgets come as requests: another thread must read them. */
	ut_blocking();
	pthread_mutex_lock(&fs->icache_lock);
	while (fs->evict_seq == seq && rc != ETIMEDOUT)
		rc = pthread_cond_timedwait(&fs->icache_cond, &fs->icache_lock, until);
	moved = fs->evict_seq != seq;
	pthread_mutex_unlock(&fs->icache_lock);
	return moved;
}
