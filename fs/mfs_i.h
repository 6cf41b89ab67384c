/*
 * mfs_i.h - the mounted filesystem's internals: the filesystem and the
 * inode in memory, and the helpers every part uses.  Each part has its
 * own header besides (balloc.h, blockmap.h, dir.h, icache.h, jdata.h,
 * xattr.h).  Nothing outside fs/ includes them.
 *
 * Lock order (docs/DESIGN.md "Lock order" is binding; this is the
 * filesystem's part of it, outermost first):
 *
 *   fs->rename_lock       one cross-directory rename at a time
 *   node->rwsem           inode locks; several only in increasing inode
 *                         number, taken by the entry layer (vfs_lock.c; a
 *                         new inode, invisible until its entry exists, is
 *                         never locked)
 *   fs->orphan_lock       the orphan list, held across the handle that
 *                         changes it
 *   journal handle        jnl_start .. jnl_stop
 *   node->dh_lock         a directory's index (under its rwsem): held
 *                         across the build, which reads the directory's
 *                         pages, and while it is used or changed; never
 *                         taken under a page lock
 *   data page locks       a file's or directory's pages
 *   node->map_lock        the block map of one inode (i_block and its
 *                         indirect blocks); taken in readpage(s) and
 *                         writepages under data page locks
 *   group->lock           one group's bitmaps and descriptor
 *   metadata page locks   pages of fs->meta (bitmaps, inode tables,
 *                         descriptors, indirect blocks, the superblock)
 *   node->lock, fs->count_lock, fs->pend_lock,
 *   fs->icache_lock, fs->error_lock,
 *   fs->dh_list_lock      leaves: held for a few instructions, never while
 *                         sleeping on anything above (under dh_list_lock
 *                         another directory's dh_lock is only tried)
 *   fs->sb_io_lock        leaf: held across the read and write of the
 *                         superblock's block on the disk, nothing else
 */
#ifndef MISCFS_MFS_I_H
#define MISCFS_MFS_I_H

#include <pthread.h>
#include <stdatomic.h>

#include "jnl.h"
#include "mfs.h"
#include "pc.h"
#include "util.h"

/* ---- the filesystem ------------------------------------------------------ */

/* Blocks freed by transaction @tid: not reused before it commits. */
struct mfs_pend {
	uint64_t start;
	uint32_t len;
	uint32_t tid;
};

struct mfs_group {
	pthread_mutex_t lock;
	bool bbitmap_ok, ibitmap_ok;     /* checksum checked once */
	uint32_t ino_from;               /* under lock: no inode before it is free */
};

struct mfs_node;

/*
 * Blocks an operation took off the free count before its first handle, so
 * that it never meets -ENOSPC half-way, and how many of them its handles
 * have allocated since.  One reservation may span several handles
 * (fallocate's chunks); mfs_reserve_end gives back what was not used.
 */
struct mfs_resv {
	uint64_t blocks;
	uint64_t used;
};

/*
 * The filesystem's handle: the journal's, and the reservation that the
 * blocks allocated under it are charged to (NULL when the operation
 * allocates nothing).
 */
struct mfs_handle {
	struct jnl_handle jh;
	struct mfs_resv *resv;
};

#define MFS_ERROR_FUNCS 16u

/* The stubs of istub.c (icache.h). */
struct mfs_stubs {
	uint64_t *slot;
	uint32_t mask, count;
	unsigned bits;
};

struct mfs_fs {
	struct bdev *bd;
	struct mfs_super sb;             /* geometry; read-only after mount */
	struct mfs_mount_opts opts;
	uint32_t bs, apb, ipg, bpg, ngroups, ninodes;
	uint64_t nblocks;
	atomic_bool ro;                  /* read-only mount or after an error */
	atomic_bool had_error;
	atomic_bool rw_mounted;          /* the disk is ours to write: the
	                                    journal runs, sb marked in use */
	int jnl_errno;                   /* the journal had been aborted */
	struct fmt_mmp *mmp;             /* stamping while mounted (INCOMPAT_MMP) */
	atomic_bool error_on_disk;       /* MFS_STATE_ERRORS written */
	atomic_bool recover_on_disk;     /* INCOMPAT_RECOVER written */
	atomic_bool sb_torn;             /* the primary on the disk has a stale
	                                    checksum over whole fields, until
	                                    the mount writes it again */
	pthread_mutex_t sb_io_lock;      /* leaf: writes of the superblock
	                                    straight to the disk */

	struct pc_cache *cache;
	struct pc_mapping *meta;         /* the device, block by block */
	struct jnl *j;
	uint64_t *jmap;
	struct mfs_group *groups;
	struct pc_page **gdt;            /* descriptor blocks, held all along */

	/* Free counts as the descriptors have them, less what running
	 * operations have reserved (a reservation is taken off at once, so an
	 * operation that reserved never meets -ENOSPC half-way). */
	pthread_mutex_t count_lock;      /* leaf: the counters below */
	uint64_t free_blocks;
	uint64_t pend_blocks;            /* freed, not reusable yet */
	uint32_t free_inodes;

	pthread_mutex_t pend_lock;       /* leaf: freed-block extents */
	struct mfs_pend *pend;
	size_t npend, cap_pend;

	pthread_mutex_t icache_lock;     /* leaf: the hash and counts */
	pthread_cond_t icache_cond;      /* a node finished being evicted */
	uint64_t evict_seq;              /* icache_lock: evictions so far */
	struct mfs_node **ihash;
	uint32_t ihash_mask;
	unsigned ihash_bits;
	struct mfs_stubs stubs;          /* icache_lock: inodes only the kernel
	                                    knows (istub.c) */
	uint64_t nnodes;
	struct ut_list ilru;             /* nodes nobody uses, oldest first */
	uint64_t nlru;
	/* The newest transactions that changed an inode since evicted: one
	 * read back may have its change there still, and fsync must wait
	 * for them (an inode never evicted has its own). */
	uint32_t evicted_tid, evicted_data_tid;
	bool evicted_dirty;

	pthread_mutex_t rename_lock;
	pthread_mutex_t orphan_lock;     /* the orphan list */
	uint32_t orphan_head;            /* s_last_orphan, in memory */
	struct ut_list orphans;          /* the nodes on it, in list order */
	_Atomic uint32_t next_gen;

	/* Indexes of big directories (dirhash.c): their memory against a
	 * budget, least recently used first. */
	pthread_mutex_t dh_list_lock;    /* leaf but for trylocks of dh_lock */
	struct ut_list dh_lru;
	uint64_t dh_bytes, dh_max;
	uint32_t dh_count;
	uint64_t dh_seed;                /* the names' hash, random per mount */
	_Atomic uint64_t dh_clock;       /* uses of big directories */

	struct timespec mounted_at;      /* the in-memory inodes' times */
	struct mfs_mem *mem;             /* mem.c: the inodes of memory */
	struct mfs_region *regions;      /* the region table's entries */
	uint32_t nregions;
	pthread_mutex_t stats_lock;      /* leaf: the source below */
	mfs_stats_fn stats_fn;
	void *stats_arg;
	mfs_attr_changed_fn attr_changed_fn;   /* set before serving */
	void *attr_changed_arg;

	struct mfs_jdata *jd;            /* jdata.c: files awaiting journalling */

	struct {
		_Atomic uint64_t jdata_pending;   /* pages awaiting journalling */
		_Atomic uint64_t jdata_journalled; /* file pages journalled */
		_Atomic uint64_t lookups, creates, unlinks, renames, reads, writes;
		_Atomic uint64_t dir_checked, dir_bad, handles, fsyncs;
		_Atomic uint64_t dirhash_builds, dirhash_hits, dirhash_drops;
		_Atomic uint64_t dir_scans;  /* directory blocks walked */
		_Atomic uint64_t dx_reads;   /* index blocks a walk reached */
		_Atomic uint64_t errors;     /* damage met (mfs_error) */
	} st;
	/* Damage met (mfs_error) by the function that met it, for the
	 * statistics: the first MFS_ERROR_FUNCS functions. */
	pthread_mutex_t error_lock;      /* leaf: the table below */
	struct {
		const char *func;
		uint64_t count;
	} error_at[MFS_ERROR_FUNCS];
};

/* ---- inodes in memory ---------------------------------------------------- */

struct mfs_dirhash;
struct mfs_iops;
struct mfs_mem;

struct mfs_node {
	struct mfs_fs *fs;
	uint64_t ino;                    /* above 32 bits: an inode of memory */
	const struct mfs_iops *ops;      /* its kind (vfs.h), set once */
	struct mfs_node *hnext;          /* icache_lock */
	uint32_t refs;                   /* icache_lock: users now */
	uint64_t nlookup;                /* icache_lock: FUSE lookup count */
	uint32_t nopen;                  /* icache_lock: open files */
	bool freeing;                    /* icache_lock: being evicted */
	/* icache_lock: unlinked (or cut short) but not freed, an error in
	 * the way; kept, since it is still on the orphan list, until the
	 * unmount drops it and the next mount or fsck finishes it. */
	bool stuck;
	struct ut_list lru;              /* icache_lock: on fs->ilru */

	pthread_rwlock_t rwsem;
	pthread_rwlock_t map_lock;
	pthread_mutex_t lock;            /* leaf: raw, tids, flags below */
	struct mfs_inode raw;            /* the inode as it goes to disk */
	uint32_t last_tid;               /* newest transaction that changed it */
	uint32_t last_data_tid;          /* ... other than timestamps only */
	bool dirty_tid;                  /* last_tid is meaningful */
	bool orphan;                     /* on the on-disk orphan list */
	struct ut_list orphan_link;      /* orphan_lock */
	uint64_t goal;                   /* next block to try allocating */

	struct pc_mapping *map;          /* data pages; NULL: no data */
	/* Its data goes through the journal (data=journal, or chattr +j):
	 * changed only with rwsem held for writing and no page dirty. */
	atomic_bool jdata;
	bool jd_queued;                  /* fs->jd's lock: on its queue */
	struct jnl_inode ji;
	struct mfs_dirhash *dh;          /* big directories; under dh_lock */
	pthread_mutex_t dh_lock;         /* dh: its build, use and changes */
	uint64_t dh_failed;              /* dh_clock when a build failed */
	/* Under rwsem held for writing: no block of the directory before
	 * this one has room, by its index's room map (dx.c). */
	uint64_t dx_room_from;
	/* The access ACL as last read (acl.c), under lock: valid while
	 * acl_cached; NULL then means none.  A change of the xattrs bumps
	 * xattr_seq when it begins (xattr_changing set) and when it ends,
	 * so that a read from the disk that overlapped one is read again:
	 * the change writes the block before the inode, and a read between
	 * could find an entry that is moving in neither place. */
	struct mfs_acl *acl;
	bool acl_cached;
	bool xattr_changing;
	uint32_t xattr_seq;
};

static inline uint16_t node_mode(struct mfs_node *n)
{
	return le16toh(n->raw.i_mode);
}
static inline uint32_t mfs_node_flags(struct mfs_node *n)
{
	return le32toh(n->raw.i_flags);
}
static inline uint64_t node_size(struct mfs_node *n)
{
	return le64toh(n->raw.i_size);
}
/* Must @n's new data reach its blocks before the commit that maps them?
 * Ordered mode, and data=journal for what it does not journal (the
 * target of a slow symlink). */
static inline bool node_data_ordered(struct mfs_node *n)
{
	return n->fs->opts.data != MFS_DATA_WRITEBACK && !atomic_load(&n->jdata);
}
void mfs_node_touch(struct mfs_node *n, bool mtime, bool ctime);
void mfs_now(struct timespec *ts);

/* ---- helpers across files ------------------------------------------------ */

/* Log a line naming what is damaged, mark the superblock on the disk
 * with errors; with errors=remount-ro the filesystem stops writing.
 * Returns -EUCLEAN for "return mfs_error(..)". */
int mfs_error_at(struct mfs_fs *fs, const char *func, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* The line starts with the function that found the damage, as ext4's. */
#define mfs_error(fs, ...) mfs_error_at(fs, __func__, __VA_ARGS__)
/* mount.c: MFS_STATE_ERRORS to the superblock on the disk, once; callable
 * under any lock (it takes only the leaf sb_io_lock). */
void mfs_error_record(struct mfs_fs *fs);
/* -EROFS when the filesystem does not take changes. */
int mfs_check_rw(struct mfs_fs *fs);

/* meta.c: metadata blocks through fs->meta */
int mfs_meta_read(struct mfs_fs *fs, uint64_t blk, struct pc_page **pg);
/* Journal access to metadata block @blk, read from disk first unless
 * @fresh (then zeroed).  Returns the page referenced, not locked. */
int mfs_meta_access(struct mfs_fs *fs, struct mfs_handle *h, uint64_t blk,
		    bool fresh, struct pc_page **pg);
/* jnl_get_write_access, with two owners of @blk (damage) said in the log
 * and marked on the superblock. */
int mfs_journal_access(struct mfs_fs *fs, struct mfs_handle *h,
		       struct pc_page *pg, uint64_t blk);
int mfs_meta_dirty(struct mfs_fs *fs, struct mfs_handle *h, uint64_t blk,
		   struct pc_page *pg);
struct mfs_group_desc *mfs_gdesc(struct mfs_fs *fs, uint32_t g,
				 struct pc_page **pg);
int mfs_gdt_load(struct mfs_fs *fs);
void mfs_gdt_put(struct mfs_fs *fs);
int mfs_jstart_by(struct mfs_fs *fs, uint32_t credits, struct mfs_resv *resv,
		  struct mfs_handle *h, const char *caller);
/* The handle is counted by the function that starts it (jnl_start); the
 * blocks it allocates are charged to @resv. */
#define mfs_jstart(fs, credits, h) mfs_jstart_by(fs, credits, NULL, h, __func__)
#define mfs_jstart_resv(fs, credits, resv, h) \
	mfs_jstart_by(fs, credits, resv, h, __func__)
int mfs_jstop(struct mfs_fs *fs, struct mfs_handle *h, int err);
/* Superblock fields changed under a handle (the orphan head). */
int mfs_sb_journal(struct mfs_fs *fs, struct mfs_handle *h);

/* namei.c */
struct mfs_dirloc;

int mfs_dir_get(struct mfs_node *dir, const char *name, size_t len,
		struct mfs_dirloc *loc, struct mfs_node **out);
int mfs_drop_link(struct mfs_node *n, struct mfs_handle *h);

/* attr.c */
int mfs_permission(struct mfs_node *n, const struct mfs_cred *cr, int mask);
int mfs_mode_permission(uint16_t mode, uint32_t uid, uint32_t gid,
			const struct mfs_cred *cr, int mask);
bool mfs_in_group(const struct mfs_cred *cr, uint32_t gid);
int mfs_may_delete(struct mfs_node *dir, struct mfs_node *victim,
		   const struct mfs_cred *cr);
int mfs_kill_suid(struct mfs_node *n, const struct mfs_cred *cr);
int mfs_truncate_locked(struct mfs_node *n, const struct mfs_cred *cr,
			uint64_t size);
/* Before the file grows past @old under @h: zeros after @old in its
 * last block, ordered before the new size. */
int mfs_zero_eof_tail(struct mfs_node *n, struct mfs_handle *h, uint64_t old);

/* flags.c: the inode flags' rules */
/* chattr +S on @n (or +D on a directory, with @dir): the change just
 * made commits before the call returns.  No lock or handle held. */
int mfs_sync_if_flagged(struct mfs_node *n, bool dir);
/* -EPERM if @n is immutable, or (with @append) append-only. */
int mfs_check_flags(struct mfs_node *n, bool append);
/* A new inode's flags, from its directory's: what ext4 passes down. */
uint32_t mfs_inherit_flags(struct mfs_node *dir, uint16_t mode);

/* Credits of an operation that changes one inode. */
#define MFS_CR_INODE 1u

#endif /* MISCFS_MFS_I_H */
