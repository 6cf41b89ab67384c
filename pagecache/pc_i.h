/*
 * pc_i.h - the page cache's private structures, shared by its files.
 *
 * Lock order (outermost first; never take an earlier one while holding a
 * later one).  The daemon's whole order is in docs/DESIGN.md ("Lock
 * order"): a journal handle and the journal's checkpoint and superblock
 * mutexes come before all of these, the journal's j_lock between page
 * locks and m->lock.
 *   1. m->wb_mutex     one writeback pass per mapping at a time; its
 *                      owner's writepage(s) never starts a handle
 *   2. page lock       PG_locked; several only in increasing index order
 *   3. m->lock         the mapping's index (writers) and dirty queue
 *   4. c->wb_lock      the list of dirty mappings, flusher state
 *   5. c->lru_lock     the two LRU lists, PG_lru/PG_active, clearing
 *                      page->mapping
 *   6. c->pool_lock    the free list
 * c->pass_mutex (one background pass) is taken before 1, and also by an
 * allocation holding page locks: a background pass only tries 1 and 2.
 * pc_write_range (a journal commit's ordered data) takes 2 without 1.
 * Lookups of the index take none of them (see index.c).  No lock is held
 * while calling the owner's operations except the page locks they expect
 * and, for writepages, m->wb_mutex.  Nothing allocates a page while
 * holding m->lock, c->lru_lock or c->pool_lock (reclaim takes them).
 * Debug builds count 1 and 2 per thread (pc_held_*) for the checks.
 */
#ifndef MISCFS_PC_I_H
#define MISCFS_PC_I_H

#include "pc.h"
#include "pc_test.h"

#include <pthread.h>
#include <stdatomic.h>

/* A page id is the descriptor's position in the pool; PC_NIL ends lists. */
#define PC_NIL UINT32_MAX

/* The core's own flags get the same generated accessors. */
#define PC_CORE_FLAGS(X)          \
	X(Readahead, PG_readahead) \
	X(Promote, PG_promote)     \
	X(Waiters, PG_waiters)
PC_CORE_FLAGS(PC_PAGEFLAG_FNS)

#define PF(bit) (1u << (bit))

/* Cleared when a page is initialised for a new index (prep_new_page). */
#define PC_PREP_CLEAR (PF(PG_uptodate) | PF(PG_error) | PF(PG_referenced) | \
		       PF(PG_fs_misc) | PF(PG_mappedtodisk) |                \
		       PF(PG_readahead) | PF(PG_promote) | PF(PG_waiters))
/* Must be clear when a page returns to the pool (else: bad page). */
#define PC_FREE_CHECK (PF(PG_locked) | PF(PG_dirty) | PF(PG_writeback) |   \
		       PF(PG_lru) | PF(PG_active) | PF(PG_private))

struct pc_list {
	uint32_t head, tail;
	uint64_t count;
};

/* Hit and miss counters, one cache line per stripe so threads do not
 * share a line on the hit path. */
#define PC_STRIPES 16
struct pc_stripe {
	_Alignas(64) _Atomic uint64_t hits;
	_Atomic uint64_t misses;
	char pad[64 - 2 * sizeof(uint64_t)];
};

struct pc_cache {
	uint32_t block_size, stride;
	uint32_t max_pages, reserve;
	uint64_t budget, page_cost;
	uint32_t bg_pages, max_dirty, ra_max;
	uint32_t interval_ms;
	_Atomic uint32_t expire_ms;
	uint64_t epoch_ns;

	struct pc_page *pages;          /* the pool: max_pages descriptors */
	void *arena;                    /* page data, max_pages * stride */
	void *arena_map;                /* the mmap holding it */
	size_t arena_len;

	pthread_mutex_t pool_lock;      /* order 6: innermost */
	pthread_cond_t pool_cond;       /* progress, for waiting allocations */
	uint32_t free_head;
	uint32_t nr_free;
	_Atomic uint64_t progress;      /* frees + writeback completions */
	_Atomic uint32_t nr_ending;     /* pc_end_* calls still running */
	_Atomic uint32_t alloc_waiters;

	pthread_mutex_t lru_lock;       /* order 5 */
	struct pc_list active, inactive;

	struct pc_stripe stripes[PC_STRIPES];
	_Atomic uint64_t nr_pages, nr_dirty, nr_writeback;
	_Atomic uint64_t nr_dirty_tx;   /* of PC_MAPPING_WB_NEEDS_TX mappings */
	_Atomic uint64_t written, evictions, ra_pages, alloc_waits;
	_Atomic uint64_t region_bytes, index_bytes, passes, scanned;
	_Atomic uint32_t nr_mappings, nr_regions;

	pthread_mutex_t wb_lock;        /* order 4 */
	pthread_cond_t wb_cond;         /* wakes the flusher */
	pthread_cond_t wb_done;         /* a pass ended, a mapping let go */
	struct pc_mapping *dirty_head, *dirty_tail;
	bool wb_kick, wb_stop, has_flusher;
	bool wb_sync_kick;              /* a pc_flusher_sync waits: a full pass */
	_Atomic bool kicked;            /* a kick is pending (cheap check) */
	uint64_t pass_started, pass_done;
	pthread_mutex_t pass_mutex;     /* one pass at a time; before 1 */
	uint32_t last_expire_ms;        /* the flusher's last walk for
	                                   expired pages (its own) */
	pthread_t flusher;
};

/* Bucket segments: segment 0 has PC_SEG0 buckets, segment k > 0 has
 * PC_SEG0 << (k - 1), so the table doubles without moving a bucket. */
#define PC_SEG0_SHIFT 6
#define PC_SEG0 (1u << PC_SEG0_SHIFT)
#define PC_NSEGS 27

struct pc_mapping {
	struct pc_cache *cache;
	/* Read once per call, through pc_ops(): pc_mapping_set_ops may
	 * change it while a call of the cache's is under way. */
	const struct pc_mapping_ops *_Atomic ops;
	void *ctx;

	pthread_mutex_t lock;                  /* order 3 */
	_Atomic uint32_t seq;                  /* odd while chains move */
	_Atomic uint32_t order;                /* PC_SEG0 << order buckets */
	_Atomic uint32_t *_Atomic seg[PC_NSEGS];
	_Atomic uint64_t nrpages;
	_Atomic uint64_t nr_dirty, nr_writeback;
	/* Pages a writeback pass has taken (dirty cleared, still locked)
	 * and its owner has not yet put under writeback or declined. */
	_Atomic uint32_t nr_handover;
	_Atomic int wb_err;

	/*
	 * Pages under writeback, counted in two epochs (PG_wb_epoch says
	 * which): a sync of the whole mapping moves new writeback to the
	 * other epoch and waits until the one it left drains, rather than
	 * walk every page (pc_wait_all_writeback).
	 */
	_Atomic uint32_t wb_epoch;
	_Atomic uint64_t wb_count[2];
	_Atomic uint32_t wb_waiters;
	pthread_mutex_t wb_sync_mutex;         /* one such sync at a time;
	                                          before wb_wait_lock */
	pthread_mutex_t wb_wait_lock;          /* a leaf */
	pthread_cond_t wb_wait_cond;           /* an epoch drained */

	uint64_t *dq;                          /* dirtied indexes, m->lock */
	size_t dq_len, dq_cap;
	bool dq_lost;                          /* an index could not be queued */

	pthread_mutex_t wb_mutex;              /* order 1: after any journal
	                                          handle; never held when one
	                                          starts */
	_Atomic unsigned int flags;            /* PC_MAPPING_* */

	/* under c->wb_lock */
	struct pc_mapping *dnext, *dprev;
	bool on_dirty_list;
	unsigned int users;                    /* flusher or sync_cache */
	uint32_t oldest_ms;                    /* oldest queued dirty page */
};

static inline const struct pc_mapping_ops *pc_ops(struct pc_mapping *m)
{
	return atomic_load_explicit(&m->ops, memory_order_acquire);
}

/* ---- page.c ---- */

/*
 * The lock order's debug check (see "Lock order" in docs/DESIGN.md).  In
 * debug builds each thread counts the page locks it holds and the mapping
 * writeback locks (m->wb_mutex) it holds; a lock handed to the owner with
 * a page (readpage(s), writepage(s)) leaves the count of the thread that
 * hands it over, which the caller settles with pc_held_pages_set() once
 * the owner returns.  Release builds keep no count.
 */
#ifndef NDEBUG
void pc_held_page_lock(void);
void pc_held_page_unlock(void);
unsigned int pc_held_pages(void);
void pc_held_pages_set(unsigned int n);
void pc_held_wb(int delta);
#else
static inline void pc_held_page_lock(void) {}
static inline void pc_held_page_unlock(void) {}
static inline unsigned int pc_held_pages(void) { return 0; }
static inline void pc_held_pages_set(unsigned int n) { (void)n; }
static inline void pc_held_wb(int delta) { (void)delta; }
#endif
/* Abort at once, naming the rule @why broke (debug builds call it). */
_Noreturn void pc_order_violation(const char *why);
static inline uint32_t pc_page_id(const struct pc_cache *c,
				  const struct pc_page *p)
{
	return (uint32_t)(p - c->pages);
}
static inline struct pc_page *pc_id_page(struct pc_cache *c, uint32_t id)
{
	return &c->pages[id];
}
bool pc_page_try_get(struct pc_page *p);
void pc_page_wait_bit(struct pc_page *p, unsigned int bit);
void pc_page_wake(struct pc_page *p);
void pc_mark_accessed(struct pc_page *p);
void pc_account_clean(struct pc_mapping *m);
uint32_t pc_now_ms(const struct pc_cache *c);
struct pc_cache *pc_cache_of(const struct pc_page *p);
int pc_registry_add(struct pc_cache *c);
void pc_registry_del(struct pc_cache *c);

/* ---- pool.c (allocation, LRU, reclaim) ---- */
enum pc_alloc_mode { PC_ALLOC_WAIT, PC_ALLOC_NOWAIT };
struct pc_page *pc_page_alloc(struct pc_cache *c, enum pc_alloc_mode mode);
void pc_page_free(struct pc_cache *c, struct pc_page *p);
void pc_pool_init(struct pc_cache *c);
void pc_progress(struct pc_cache *c);
void pc_lru_add(struct pc_cache *c, struct pc_page *p);
void pc_lru_remove(struct pc_cache *c, struct pc_page *p);
bool pc_release_private(struct pc_mapping *m, struct pc_page *p);

/* ---- index.c ---- */
int pc_index_init(struct pc_mapping *m);
void pc_index_free(struct pc_mapping *m);
struct pc_page *pc_index_get(struct pc_mapping *m, uint64_t index);
struct pc_page *pc_index_get_locked(struct pc_mapping *m, uint64_t index);
void pc_index_insert(struct pc_mapping *m, struct pc_page *p, uint64_t index);
void pc_index_delete(struct pc_mapping *m, struct pc_page *p);

/* Pages of [start, end) with references, a batch at a time. */
struct pc_iter {
	uint64_t start, end, next;
	uint32_t bucket;
	uint32_t want;               /* flags a page must have (PF()); 0: any */
	bool probe, done;
};
void pc_iter_init(struct pc_mapping *m, struct pc_iter *it, uint64_t start,
		  uint64_t end);
/* Only pages with one of the flags @want (PF()) set when the walk passes
 * them: a walk for the few dirty pages or pages under writeback of a big
 * mapping takes no reference to the others. */
void pc_iter_want(struct pc_iter *it, uint32_t want);
unsigned int pc_iter_next(struct pc_mapping *m, struct pc_iter *it,
			  struct pc_page **pages, unsigned int max);

/* Wait for every write of @m's pages in flight when called (page.c). */
void pc_wait_all_writeback(struct pc_mapping *m);

/* ---- mapping.c ---- */
struct pc_page *pc_lookup(struct pc_mapping *m, uint64_t index, bool count);
int pc_add_new_page(struct pc_mapping *m, uint64_t index,
		    enum pc_alloc_mode mode, struct pc_page **out);
int pc_readpage_sync(struct pc_mapping *m, struct pc_page *p);
int pc_get_read(struct pc_mapping *m, uint64_t index, bool *created,
		struct pc_page **out);
void pc_stat_hit(struct pc_cache *c);
void pc_stat_miss(struct pc_cache *c);

/* ---- writeback.c, flusher.c ---- */
int pc_write_mapping(struct pc_mapping *m, const struct pc_wbc *wbc,
		     struct pc_writer *writer, uint64_t first, uint64_t last,
		     uint32_t expire_ms);
void pc_dirty_queue(struct pc_mapping *m, uint64_t index);
void pc_dirty_list_add(struct pc_mapping *m);
void pc_dirty_list_forget(struct pc_mapping *m);
void pc_dirty_list_aged(struct pc_mapping *m, uint32_t oldest_ms);
int pc_flusher_start(struct pc_cache *c);
void pc_flusher_stop(struct pc_cache *c);
void pc_run_pass(struct pc_cache *c);
bool pc_in_flusher(void);

#endif /* MISCFS_PC_I_H */
