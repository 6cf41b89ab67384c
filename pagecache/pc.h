/*
 * pc.h - the miscfs page cache.
 *
 * A cache of fixed-size pages (one device block each) kept in the daemon,
 * with no knowledge of the filesystem format.  Pages are indexed per
 * mapping (one per inode, one for metadata blocks); the owner of a mapping
 * supplies the address-space operations that read and write its pages.
 *
 * The pieces:
 *   pages     a descriptor per page: flags word, reference count, index,
 *             mapping, data (aligned for O_DIRECT), owner's private pointer;
 *   flags     kernel-style accessors (PageDirty, SetPageUptodate ...) and
 *             exactly one flag that belongs to the filesystem alone,
 *             PG_fs_misc (PageMiscFS ...), which the core never tests;
 *   mappings  a lock-free-read index from page index to page;
 *   reclaim   a two-list LRU held within a memory budget fixed at creation;
 *   flusher   a background thread that writes back expired dirty pages and
 *             keeps dirty memory below a share of the budget;
 *   readahead growing windows submitted as one batch;
 *   helpers   batched bdev I/O for owners that map a page index to a block;
 *   regions   reserved ranges of the device mmap(MAP_SHARED)ed and served
 *             outside the cache (no LRU, no refcount, no writeback).
 *
 * Threads: every call is safe from any thread unless said otherwise.  A
 * lookup of a cached page takes no lock at all.
 *
 * Lock order (outermost first), see pagecache/README.md and the daemon's
 * whole order in docs/DESIGN.md:
 *   [a journal handle, the filesystem's own locks] >
 *   mapping writeback lock > page lock (several: in index order) >
 *   mapping index lock > dirty-mapping list lock > LRU lock > pool lock.
 * The owner's operations are called with no cache-internal lock held,
 * but possibly with page locks held as each one documents.  Writeback
 * (writepage, writepages) therefore never starts a journal handle nor
 * waits for a commit: a filesystem allocates blocks when the write
 * happens (as ext3 does), so writing a page back only maps it.  Debug
 * builds count the locks each thread holds (pc_page_locks_held) and abort
 * on a violation, naming the rule.
 *
 * Errors are negative errno values.  Calls that only tests and benches
 * make (driving the flusher, dropping clean pages, explicit readahead,
 * looking inside a mapping or a region) are in pc_test.h, which no
 * production file includes.
 */
#ifndef MISCFS_PC_H
#define MISCFS_PC_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bdev.h"

struct pc_cache;
struct pc_mapping;
struct pc_region;

/* ---- pages ---------------------------------------------------------------- */

/*
 * Page flag bits.  The first group is the usual set; PG_fs_misc is the
 * filesystem's ("don't let me spread"); the last group is the core's own
 * bookkeeping and never interesting to an owner.
 */
enum pc_page_flag {
	PG_locked,        /* I/O or exclusive use in progress; sleepable lock */
	PG_uptodate,      /* data is valid */
	PG_dirty,         /* data is newer than the device */
	PG_writeback,     /* a write of the page is in flight */
	PG_error,         /* the last read or write of the page failed */
	PG_referenced,    /* accessed since the LRU last looked at it */
	PG_active,        /* on the active LRU list */
	PG_lru,           /* on an LRU list */
	PG_private,       /* ->private is set (pc_attach_private) */
	PG_mappedtodisk,  /* every block of the page has a place on disk */
	PG_fs_misc,       /* the filesystem's own; the core never tests it */
	PG_readahead,     /* core: reaching this page starts async readahead */
	PG_promote,       /* core: accessed again while inactive */
	PG_waiters,       /* core: a thread sleeps on a bit of this page */
	PG_wb_epoch,      /* core: the writeback epoch counting this page */
	PG_NR_FLAGS
};

/*
 * A page descriptor: 56 bytes.  The owner reads ->data and ->private and
 * uses the accessors below; every other field belongs to the core.
 * Descriptors live as long as their cache, so a stale pointer never
 * points into freed memory, but only a held reference keeps a page's
 * identity (mapping, index) from changing.
 */
struct pc_page {
	_Atomic uint32_t flags;              /* 1u << PG_* */
	_Atomic int32_t count;               /* references; the index holds one */
	_Atomic uint64_t index;              /* page number within the mapping */
	struct pc_mapping *_Atomic mapping;  /* NULL once removed from the cache */
	void *data;                          /* block_size bytes, aligned */
	void *private;                       /* the owner's (PG_private) */
	uint32_t lru_prev, lru_next;         /* core: LRU or free list */
	_Atomic uint32_t hash_next;          /* core: index chain */
	_Atomic uint32_t dirtied_ms;         /* core: when it became dirty */
};

/*
 * The accessor family, generated for every flag by one macro:
 *   PageX(p)  SetPageX(p)  ClearPageX(p)  TestSetPageX(p)  TestClearPageX(p)
 * Set/Clear/TestSet/TestClear are atomic read-modify-writes with full
 * ordering; PageX is an acquire load (data written before SetPageUptodate
 * is visible to a reader that sees PageUptodate).
 *
 * Owners may set and clear Uptodate, Error, MappedToDisk, Referenced and
 * MiscFS directly.  Locked, Dirty, Writeback, LRU, Active and Private carry
 * accounting or waiters: change them only through the pc_ calls
 * (pc_lock_page, pc_set_page_dirty, pc_set_page_writeback, ...).
 */
#define PC_PAGEFLAG_FNS(Name, bit)                                             \
static inline bool Page##Name(const struct pc_page *p)                         \
{                                                                              \
	return (atomic_load_explicit((_Atomic uint32_t *)&p->flags,            \
				     memory_order_acquire) >> (bit)) & 1u;     \
}                                                                              \
static inline void SetPage##Name(struct pc_page *p)                            \
{                                                                              \
	atomic_fetch_or(&p->flags, 1u << (bit));                               \
}                                                                              \
static inline void ClearPage##Name(struct pc_page *p)                          \
{                                                                              \
	atomic_fetch_and(&p->flags, ~(1u << (bit)));                           \
}                                                                              \
static inline bool TestSetPage##Name(struct pc_page *p)                        \
{                                                                              \
	return (atomic_fetch_or(&p->flags, 1u << (bit)) >> (bit)) & 1u;        \
}                                                                              \
static inline bool TestClearPage##Name(struct pc_page *p)                      \
{                                                                              \
	return (atomic_fetch_and(&p->flags, ~(1u << (bit))) >> (bit)) & 1u;    \
}

/* (accessor name, bit) for every flag an owner may look at. */
#define PC_PAGE_FLAGS(X)                 \
	X(Locked, PG_locked)             \
	X(Uptodate, PG_uptodate)         \
	X(Dirty, PG_dirty)               \
	X(Writeback, PG_writeback)       \
	X(Error, PG_error)                \
	X(Referenced, PG_referenced)     \
	X(Active, PG_active)             \
	X(LRU, PG_lru)                   \
	X(Private, PG_private)           \
	X(MappedToDisk, PG_mappedtodisk) \
	X(MiscFS, PG_fs_misc)

PC_PAGE_FLAGS(PC_PAGEFLAG_FNS)

/* Clear PG_fs_misc, which must be set, and wake its waiters (the
 * filesystem uses the flag as a "work pending" mark). */
void end_page_fs_misc(struct pc_page *page);

/* Relaxed reads of the identity fields; stable while a reference is held
 * and the page is still in its mapping. */
static inline uint64_t pc_page_index(const struct pc_page *p)
{
	return atomic_load_explicit((_Atomic uint64_t *)&p->index,
				    memory_order_relaxed);
}
static inline struct pc_mapping *pc_page_mapping(const struct pc_page *p)
{
	return atomic_load_explicit((struct pc_mapping *_Atomic *)&p->mapping,
				    memory_order_acquire);
}

/* ---- the cache ------------------------------------------------------------ */

struct pc_config {
	uint32_t block_size;        /* page size: the device block size */
	uint32_t data_align;        /* buffer alignment (bd->dma_align); 0: none
	                               beyond block_size.  Pages are spaced by
	                               max(block_size, data_align). */
	uint64_t budget;            /* bytes for page data + descriptors; room
	                               for at least 64 pages */
	uint32_t dirty_expire_ms;   /* flusher writes pages dirty this long;
	                               0: 5000 */
	uint32_t flush_interval_ms; /* flusher wakes this often; 0: 1000 */
	uint32_t dirty_bg_pct;      /* flusher writes at once above this share
	                               of the budget dirty; 0: 20 */
	uint32_t dirty_max_pct;     /* pc_balance_dirty() blocks above it; 0: 50 */
	uint32_t ra_max_pages;      /* largest readahead window; 0: 4 MiB worth */
	bool no_flusher;            /* no background thread (tests) */
};

/* -EINVAL for a bad configuration, -ENOMEM, or a pthread error. */
int pc_cache_create(const struct pc_config *cfg, struct pc_cache **out);
/* Stops the flusher.  Every mapping must have been destroyed and every
 * region unmapped. */
void pc_cache_destroy(struct pc_cache *c);
uint32_t pc_block_size(const struct pc_cache *c);

/*
 * Throttle a writer: while dirty pages exceed dirty_max_pct of the budget,
 * kick the flusher and wait for it.  Call it after dirtying pages, with no
 * page lock held.
 */
void pc_balance_dirty(struct pc_cache *c);
/* Write back every dirty page of every mapping and wait for it (syncfs).
 * Returns the first error any mapping reported. */
int pc_sync_cache(struct pc_cache *c);

/* ---- mappings and their owner's operations -------------------------------- */

enum pc_wb_reason {
	PC_WB_EXPIRED,    /* flusher: pages older than the expiry time */
	PC_WB_PRESSURE,   /* flusher: too many dirty pages for the budget */
	PC_WB_SYNC,       /* pc_write_and_wait_range / pc_sync_mapping / ... */
};

/*
 * What a writeback pass asks of the owner, for one batch.  The owner
 * passes it on to pc_block_writepages.
 */
struct pc_wbc {
	enum pc_wb_reason reason;
	bool sync;        /* data integrity: the caller will wait for it */
	bool wait_now;    /* the caller waits for this batch as soon as
	                     writepages returns (the last batch of an
	                     integrity pass): the block helpers submit and
	                     reap it in the calling thread */
};

/*
 * What a read asks of the owner's readpages, for one batch.  The owner
 * passes it on to pc_block_readpages.
 */
struct pc_rdc {
	bool wait_now;    /* the reader waits for the whole batch as soon as
	                     readpages returns (a miss outside a stream,
	                     which reads only the request): the block helpers
	                     submit and reap it in the calling thread */
};

/*
 * The owner's operations; @ctx is the pointer given to pc_mapping_create.
 * Any of them may be NULL, with the default said below.
 *
 * Reads: every page handed over is locked, not uptodate, in the mapping.
 * The owner starts the read and, once it is done, ends each page exactly
 * once with pc_end_read(page, err) (which sets uptodate or error and
 * unlocks), possibly before the call returns, from any thread.  The
 * return value only reports; the pages must be ended in every case.
 *
 * Writes: every page handed over is locked, in the mapping, and its dirty
 * bit has just been cleared.  For each page the owner either
 *   - calls pc_set_page_writeback(page), unlocks it, starts the write and
 *     ends it with pc_end_page_writeback(page, err), or
 *   - declines it: pc_set_page_dirty_default(page) and unlocks it.
 * Pages come sorted by index, so runs of neighbours can become one I/O.
 * The unlocks happen before writepage(s) returns, in the calling thread.
 * Writeback runs with the mapping's writeback lock and the page locks
 * held: it must not start a journal handle, wait for a commit, or call
 * pc_write_and_wait_range / pc_sync_mapping.  Blocks are allocated when
 * the write happens (under the filesystem's handle), so writeback only
 * maps pages to blocks; a page whose writeback would need a transaction
 * (journalled data not yet journalled) is declined and journalled by the
 * filesystem later, handle first, then page locks.  Two writeback calls
 * for one mapping may run at once (a pass and pc_write_range), never for
 * the same page.
 */
struct pc_mapping_ops {
	/* NULL: the page fails with -EIO. */
	int (*readpage)(void *ctx, struct pc_page *page);
	/* A batch, for readahead; NULL: readpage for each. */
	int (*readpages)(void *ctx, struct pc_mapping *m,
			 struct pc_page **pages, unsigned int n,
			 const struct pc_rdc *rdc);
	/* NULL: writepages must be set, or dirty pages stay dirty. */
	int (*writepage)(void *ctx, struct pc_page *page,
			 const struct pc_wbc *wbc);
	/* A batch; NULL: writepage for each. */
	int (*writepages)(void *ctx, struct pc_mapping *m,
			  struct pc_page **pages, unsigned int n,
			  const struct pc_wbc *wbc);
	/*
	 * Mark a page dirty (page referenced and locked).  Must end in
	 * pc_set_page_dirty_default(); may do more first (ext3 set
	 * PG_fs_misc here for journalled data).  NULL: the default alone.
	 * Returns what pc_set_page_dirty_default returned.
	 */
	int (*set_page_dirty)(void *ctx, struct pc_page *page);
	/*
	 * The page (locked, PG_private set) is being truncated from byte
	 * @offset of the page on (0: the whole page is going away).  For 0
	 * the owner must detach its private data.
	 */
	void (*invalidatepage)(void *ctx, struct pc_page *page, uint32_t offset);
	/*
	 * Reclaim or invalidation wants to drop a clean, locked page with
	 * PG_private set.  Detach the private data and return true, or
	 * return false to keep the page.  Must not sleep on I/O.
	 * NULL: such pages are never dropped.
	 */
	bool (*releasepage)(void *ctx, struct pc_page *page);
};

/*
 * A mapping: one per inode, one for metadata.  @ops and @ctx must outlive
 * it.  -ENOMEM.
 */
int pc_mapping_create(struct pc_cache *c, const struct pc_mapping_ops *ops,
		      void *ctx, struct pc_mapping **out);
/*
 * Drop every page (as pc_truncate from 0, waiting for writeback) and free
 * the mapping.  Dirty pages are discarded: sync first to keep them.  No
 * other thread may use the mapping during or after the call.
 */
void pc_mapping_destroy(struct pc_mapping *m);
/*
 * Mapping flags.  PC_MAPPING_WB_NEEDS_TX: the owner's writeback cannot
 * clean this mapping's dirty pages without a transaction of its own (a
 * journalled file's pages awaiting journalling, PG_fs_misc); its
 * writepages declines them until the filesystem journals them.  The
 * cache then knows that waiting for writeback cannot free those pages
 * for a thread inside a transaction (pc_nofs_begin).
 */
#define PC_MAPPING_WB_NEEDS_TX 0x1u
/* Set the mapping's flags; -EBUSY while it has dirty pages, -EINVAL for
 * an unknown flag. */
int pc_mapping_set_flags(struct pc_mapping *m, unsigned int flags);
/*
 * Give the mapping another table of operations, for an owner whose pages
 * change how they reach the disk (a file whose data becomes journalled,
 * or stops being): one table per way, chosen here once, rather than a
 * test in every operation.  The rule: the mapping is clean -- no page
 * dirty, under writeback or handed to writepages (-EBUSY otherwise) --
 * and stays so until the call returns, since the owner holds off every
 * call of its own that could dirty a page (a filesystem holds the file's
 * lock for writing); and no page carries private data of the old table
 * (its invalidatepage or releasepage would not be called for it).  A call
 * of the cache's already under way (a read, reclaim, a background pass)
 * may finish with the old table: each reads the table once.  @ops must
 * outlive the mapping.
 */
int pc_mapping_set_ops(struct pc_mapping *m, const struct pc_mapping_ops *ops);
struct pc_cache *pc_mapping_cache(const struct pc_mapping *m);

/* ---- lookup and references ------------------------------------------------ */

/*
 * The cached page at @index with a reference taken, or NULL.  Lock-free.
 * The page may be locked, not uptodate, or being truncated: check under
 * the page lock that pc_page_mapping(page) is still @m when it matters.
 */
struct pc_page *pc_find_get_page(struct pc_mapping *m, uint64_t index);
/*
 * The page at @index, created (not uptodate) if missing, referenced and
 * locked.  May reclaim other pages or wait for writeback to make room.
 * -ENOMEM if the budget is pinned full (every page referenced or locked).
 */
int pc_find_or_create_page(struct pc_mapping *m, uint64_t index,
			   struct pc_page **out);
/*
 * The page at @index, uptodate and referenced (not locked): read through
 * the owner's readpage if needed, waiting for it.  A failed read leaves
 * PG_error set on the cached page and returns -EIO; the next call tries
 * the read again.  -ENOMEM as pc_find_or_create_page.
 */
int pc_read_cache_page(struct pc_mapping *m, uint64_t index,
		       struct pc_page **out);

/*
 * References are uniform: every cached page is got and put the same way.
 * The mapping's index holds one reference of its own; when the last other
 * one goes, a clean unlocked page becomes reclaimable, and a page already
 * removed from its mapping is freed.  Putting a page that does not belong
 * to a cache's pool (a region page) is a programmer error and aborts.
 */
void pc_get_page(struct pc_page *page);
void pc_put_page(struct pc_page *page);

/* ---- page lock and waiting ------------------------------------------------ */

/* Sleep until the page lock is ours.  Hold a reference. */
void pc_lock_page(struct pc_page *page);
bool pc_trylock_page(struct pc_page *page);
/* Release the page lock and wake its waiters. */
void pc_unlock_page(struct pc_page *page);
void pc_wait_on_page_locked(struct pc_page *page);
void pc_wait_on_page_writeback(struct pc_page *page);

/* ---- dirtying, writeback, read completion --------------------------------- */

/* Dirty a locked page through the owner's set_page_dirty (or the
 * default).  Returns 1 if the page was clean before, 0 if it was already
 * dirty or no longer in a mapping. */
int pc_set_page_dirty(struct pc_page *page);
/*
 * The core's dirtying of a locked page: set PG_dirty and, if it was clear,
 * account the page and queue it for the flusher.  Returns 1 if newly
 * dirty, else 0.  Never touches PG_fs_misc.
 */
int pc_set_page_dirty_default(struct pc_page *page);
/* Start writeback of a locked page (see struct pc_mapping_ops). */
void pc_set_page_writeback(struct pc_page *page);
/*
 * End writeback: on error set PG_error and record @err in the mapping,
 * to be returned once by the next pc_write_and_wait_range/pc_sync_mapping.
 * Wakes waiters.  Any thread, any context.
 */
void pc_end_page_writeback(struct pc_page *page, int err);
/*
 * End a read: uptodate (err 0) or PG_error, then unlock.  The page lock
 * belongs to the read once the page is handed to readpage(s), so this
 * unlock counts for no thread in the debug lock-order check.
 */
void pc_end_read(struct pc_page *page, int err);

/* Owner's private pointer; the page must be locked. */
void pc_attach_private(struct pc_page *page, void *priv);
void *pc_detach_private(struct pc_page *page);

/* ---- whole mappings ------------------------------------------------------- */

/*
 * Remove every page from byte @from on: each is locked, its writeback
 * waited for, invalidatepage(page, 0) called if it has private data, its
 * dirty state dropped.  The page holding @from, if @from is not at a page
 * boundary, stays; its tail from @from is zeroed and invalidatepage called
 * with that offset.  Pages still referenced elsewhere are removed from the
 * mapping (pc_page_mapping() becomes NULL) and freed at their last put.
 */
void pc_truncate(struct pc_mapping *m, uint64_t from);
/* Remove the pages of indexes [@first, @end) as pc_truncate removes whole
 * pages (a hole punched in a file). */
void pc_truncate_pages(struct pc_mapping *m, uint64_t first, uint64_t end);
/*
 * Write back the dirty pages holding bytes [start, end) and wait for all
 * writeback there, including writes already in flight.  end UINT64_MAX:
 * to the end.  Returns 0 or the first error recorded for the mapping since
 * the last report (-EIO ...), which it clears.  Call it holding no page
 * lock (it locks pages, after the mapping's writeback lock).
 */
int pc_write_and_wait_range(struct pc_mapping *m, uint64_t start, uint64_t end);
/*
 * The writepages of an owner's own writeback pass: called, under the
 * contract of struct pc_mapping_ops' writepages, for that pass's batches
 * instead of the mapping's.  The owner embeds it in the state of its pass
 * and gets back to that with ut_container_of, as a struct bdev_req's
 * end_io does: the state goes from the caller to the caller's own
 * function, with its type, and no other pass ever sees it.
 */
struct pc_writer {
	int (*writepages)(struct pc_writer *w, struct pc_mapping *m,
			  struct pc_page **pages, unsigned int n,
			  const struct pc_wbc *wbc);
};

/*
 * The same with @w's writepages (NULL: the mapping's): the owner's own
 * pass over its dirty pages, which it treats apart from every other (a
 * filesystem journalling a file's data journals them under the handle it
 * started before the call).  As the mapping's writeback lock is held
 * throughout, no background pass holds a page of it meanwhile: every page
 * dirty when the call starts reaches @w.
 */
int pc_write_and_wait_range_for(struct pc_mapping *m, uint64_t start,
				uint64_t end, struct pc_writer *w);
/* The whole mapping (fsync). */
int pc_sync_mapping(struct pc_mapping *m);

/*
 * The two halves of integrity writeback, for a journal commit's ordered
 * data (jbd2's submit and finish).  pc_write_range starts writeback of
 * the dirty pages holding bytes [start, end) without taking the mapping's
 * writeback lock, so it never waits behind another thread's writeback
 * pass: it walks the cached pages of the range, sleeps on a page lock only
 * while holding no other (a holder never waits for a commit, by the lock
 * order), waits for an earlier write of a dirty page before writing it
 * again, and leaves pages a concurrent pass has already taken to that
 * pass.  Returns 0 or the owner's first error.  Call it holding no page
 * lock.  pc_wait_range then waits for all writeback in the range,
 * including writes other passes started, and returns the mapping's
 * recorded write error without clearing it (the next fsync still reports
 * it), or 0.
 */
int pc_write_range(struct pc_mapping *m, uint64_t start, uint64_t end);
int pc_wait_range(struct pc_mapping *m, uint64_t start, uint64_t end);


/*
 * The calling thread enters (leaves) a filesystem transaction: it holds a
 * journal handle, which a commit waits for.  Scopes nest.  Inside one, an
 * allocation that finds no page to reclaim waits for writeback only while
 * writeback can free one without the transaction ending (writes are in
 * flight, or dirty pages of mappings without PC_MAPPING_WB_NEEDS_TX
 * exist); otherwise, after one scan of every page, it takes a page of
 * the cache's reserve (the pages otherwise kept for the flusher) or, that
 * empty too, fails with -ENOMEM once nothing has moved for about 100 ms
 * (pages held only for a moment, as by a write that just ended, come
 * back).  jnl_start and jnl_stop call these (as jbd2 sets the kernel's
 * memalloc_nofs_save per handle).
 */
void pc_nofs_begin(void);
void pc_nofs_end(void);

/* ---- the lock order's debug check ---------------------------------------- */

/*
 * Debug builds (NDEBUG unset): the page locks the calling thread holds,
 * and the mapping writeback locks it holds (it is inside a writeback pass
 * and its owner's writepage(s)).  A lock handed to the owner with a page
 * (readpage(s), writepage(s)) counts for the thread only until the owner
 * returns.  Release builds: always 0.  Layers above the cache assert on
 * these (the journal: no handle starts while either is non-zero).
 */
unsigned int pc_page_locks_held(void);
unsigned int pc_wb_locks_held(void);

/* ---- readahead ------------------------------------------------------------ */

/* One per reader stream (an open file); zero it or call pc_ra_init. */
struct pc_ra_state {
	uint64_t start;        /* first page of the current window */
	uint32_t size;         /* pages in it */
	uint32_t async_size;   /* the last async_size pages start the next */
	uint64_t prev;         /* last page read, UINT64_MAX: none */
};

void pc_ra_init(struct pc_ra_state *ra);
/*
 * Like pc_read_cache_page, for a reader that will read @nr pages from
 * @index on (its request) within a file of @limit pages (UINT64_MAX: no
 * limit).  Sequential readers get a window that doubles up to
 * ra_max_pages, read ahead asynchronously in one batch when they reach
 * the marked page of the previous one.  Random readers get only what they
 * ask for.
 */
int pc_read_page_ra(struct pc_mapping *m, struct pc_ra_state *ra,
		    uint64_t index, unsigned int nr, uint64_t limit,
		    struct pc_page **out);

/* ---- helpers for owners that map pages to device blocks ------------------ */

/* Returned by a block-mapping function for a page with no block. */
#define PC_BLOCK_HOLE 1

/*
 * Map page @index of @m to a device block (in units of the device block
 * size, which must equal the cache's).  Returns 0 with *block set,
 * PC_BLOCK_HOLE (reads: the page is zero-filled; writes: nothing is
 * written and the page counts as clean), or -errno (the page fails).
 * @write is true when called for writeback.  It runs under page locks and
 * the mapping's writeback lock, so it must not start a journal handle:
 * the filesystem allocates a page's block when the page is written to,
 * as ext3 does, and here only looks it up.
 */
typedef int (*pc_block_map_fn)(void *ctx, struct pc_mapping *m,
			       uint64_t index, bool write, uint64_t *block);

/* The identity: page index i is device block i (the metadata mapping). */
int pc_block_map_identity(void *ctx, struct pc_mapping *m, uint64_t index,
			  bool write, uint64_t *block);

/*
 * Read (or write) a batch of pages as readpages (writepages) must: map
 * each page, merge runs of neighbouring blocks into vectored requests and
 * hand them all to bdev_submit() at once.  Completion ends each page.
 * @rdc (@wbc) is what the cache passed with the batch, or NULL (readpage
 * of a single page: an ordinary batch); with wait_now set the batch goes
 * through bdev_submit_wait() and is complete on return.  Returns 0 or the
 * first error met while building the batch (the pages concerned are ended
 * with it anyway).
 */
int pc_block_readpages(struct bdev *bd, pc_block_map_fn map, void *ctx,
		       struct pc_mapping *m, struct pc_page **pages,
		       unsigned int n, const struct pc_rdc *rdc);
int pc_block_writepages(struct bdev *bd, pc_block_map_fn map, void *ctx,
			struct pc_mapping *m, struct pc_page **pages,
			unsigned int n, const struct pc_wbc *wbc);

/*
 * Ready-made operations for a mapping of the device itself (identity
 * block map, no private data): pass the struct bdev * as ctx.
 */
extern const struct pc_mapping_ops pc_identity_ops;

/* ---- reserved regions ----------------------------------------------------- */

#define PC_REGION_WRITE    0x1u   /* map writable */
#define PC_REGION_PRIVATE  0x2u   /* MAP_PRIVATE; refused with WRITE */

/*
 * Map bytes [off, off + len) of @bd as a reserved region, MAP_SHARED over
 * bd->fd.  Its pages are served from the mapping, outside the cache: not
 * on the LRU, not in the budget, not refcounted, never written back by the
 * flusher (use pc_region_sync).
 *   -EACCES  PC_REGION_PRIVATE | PC_REGION_WRITE (no private writable
 *            mappings of a region);
 *   -EINVAL  an empty range, one outside the device (logged with the
 *            range), or @off/@len not multiples of the block size;
 *   -EROFS   PC_REGION_WRITE on a read-only device.
 * On the memory device (fd -1) the region points straight into the
 * device's contents (bdev_mem_data); pc_region_sync is then a no-op, and
 * the device's power-cut simulation does not cover region stores.  On a
 * device with neither (an NBD export) the region is a copy in memory,
 * read whole here; a store into it must be noted with pc_region_dirty,
 * and pc_region_sync writes the noted blocks back and flushes.
 */
int pc_region_map(struct pc_cache *c, struct bdev *bd, uint64_t off,
		  uint64_t len, unsigned int flags, struct pc_region **out);
/* Unmap (without syncing) and free the region and its page descriptors. */
void pc_region_unmap(struct pc_region *r);
void *pc_region_data(const struct pc_region *r);
uint64_t pc_region_len(const struct pc_region *r);
/* msync(MS_SYNC) bytes [off, off + len) of the region; len 0: all of it.
 * A copy: its noted blocks in the range written back, and a flush. */
int pc_region_sync(struct pc_region *r, uint64_t off, uint64_t len);
/* Note a store into bytes [off, off + len) of the region (a no-op but
 * for a copy, which pc_region_sync then writes back). */
void pc_region_dirty(struct pc_region *r, uint64_t off, uint64_t len);

/* ---- statistics ----------------------------------------------------------- */

struct pc_stats {
	uint64_t hits;            /* lookups that found the page */
	uint64_t misses;          /* lookups that did not */
	uint64_t readahead_pages; /* pages read by readahead */
	uint64_t evictions;       /* pages reclaimed */
	uint64_t dirty;           /* pages dirty now */
	uint64_t writeback;       /* pages under writeback now */
	uint64_t written;         /* writebacks completed */
	uint64_t alloc_waits;     /* allocations that waited for writeback */
	uint64_t flusher_passes;
	uint64_t flusher_scanned; /* dirty mappings the passes looked at */
	uint64_t region_bytes;    /* bytes mapped by regions now */
	uint64_t budget;          /* bytes, as configured */
	uint64_t in_use;          /* bytes held by cached pages */
	uint64_t pages;           /* pages cached now */
	uint64_t max_pages;       /* pages the budget holds */
	uint64_t page_cost;       /* bytes per page: data + descriptor */
	uint64_t meta_bytes;      /* descriptors (all of the pool) + indexes */
};

/* A snapshot; counters are exact, gauges may be a moment apart. */
void pc_get_stats(struct pc_cache *c, struct pc_stats *st);

#endif /* MISCFS_PC_H */
