/*
 * page.c - one page: references, the page lock and bit waiting, dirty and
 * writeback state, read completion, the owner's private pointer.
 *
 * Waiting uses a futex on the flags word itself: a waiter sets PG_waiters
 * and sleeps while the word still holds the value it saw; whoever clears
 * a bit that someone may wait on (locked, writeback, fs_misc) and finds
 * PG_waiters set, clears it and wakes every sleeper of that word.  Sleepers
 * that still have to wait set it again.  The synchronisation itself is
 * carried by the atomic flag operations, the futex only parks threads.
 */
#include "pc_i.h"

#include "util.h"

#include <assert.h>
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

static void futex_wait(_Atomic uint32_t *word, uint32_t val)
{
	syscall(SYS_futex, (uint32_t *)word, FUTEX_WAIT_PRIVATE, val, NULL,
		NULL, 0);
}

static void futex_wake_all(_Atomic uint32_t *word)
{
	syscall(SYS_futex, (uint32_t *)word, FUTEX_WAKE_PRIVATE, INT_MAX, NULL,
		NULL, 0);
}

/* Sleep until @bit of the page is clear. */
void pc_page_wait_bit(struct pc_page *p, unsigned int bit)
{
	uint32_t mask = PF(bit);

	for (;;) {
		uint32_t v = atomic_load_explicit(&p->flags, memory_order_acquire);

		if (!(v & mask))
			return;
		if (!(v & PF(PG_waiters))) {
			v = atomic_fetch_or(&p->flags, PF(PG_waiters)) |
			    PF(PG_waiters);
			if (!(v & mask))
				return;
		}
		ut_blocking();
		futex_wait(&p->flags, v);
	}
}

/* Wake every sleeper of the page; call after clearing the bit they wait on. */
void pc_page_wake(struct pc_page *p)
{
	if (TestClearPageWaiters(p))
		futex_wake_all(&p->flags);
}

static void clear_bit_wake(struct pc_page *p, unsigned int bit)
{
	uint32_t old = atomic_fetch_and(&p->flags, ~PF(bit));

	assert(old & PF(bit));
	if (old & PF(PG_waiters))
		pc_page_wake(p);
}

/* ---- the lock order's per-thread count ----------------------------------- */

#ifndef NDEBUG
/* Thread-local, and safe so: debug builds only, and read only by the lock
 * order's checks, which abort on a broken rule and change nothing else. */
static _Thread_local unsigned int tl_page_locks, tl_wb_locks;

void pc_held_page_lock(void)
{
	tl_page_locks++;
}

/* A thread may unlock a page another thread locked (an owner ending a
 * write, say): never below zero. */
void pc_held_page_unlock(void)
{
	if (tl_page_locks)
		tl_page_locks--;
}

unsigned int pc_held_pages(void)
{
	return tl_page_locks;
}

void pc_held_pages_set(unsigned int n)
{
	tl_page_locks = n;
}

void pc_held_wb(int delta)
{
	tl_wb_locks = (unsigned int)((int)tl_wb_locks + delta);
}

unsigned int pc_page_locks_held(void)
{
	return tl_page_locks;
}

unsigned int pc_wb_locks_held(void)
{
	return tl_wb_locks;
}
#else
unsigned int pc_page_locks_held(void)
{
	return 0;
}

unsigned int pc_wb_locks_held(void)
{
	return 0;
}
#endif

void pc_order_violation(const char *why)
{
	mlog_err("lock order violated: %s (see \"Lock order\" in docs/DESIGN.md)",
		 why);
	abort();
}

/* ---- the page lock ------------------------------------------------------- */

bool pc_trylock_page(struct pc_page *page)
{
	if (atomic_fetch_or_explicit(&page->flags, PF(PG_locked),
				     memory_order_acquire) & PF(PG_locked))
		return false;
	pc_held_page_lock();
	return true;
}

void pc_lock_page(struct pc_page *page)
{
	while (!pc_trylock_page(page))
		pc_page_wait_bit(page, PG_locked);
}

void pc_unlock_page(struct pc_page *page)
{
	pc_held_page_unlock();
	clear_bit_wake(page, PG_locked);
}

void pc_wait_on_page_locked(struct pc_page *page)
{
	pc_page_wait_bit(page, PG_locked);
}

void pc_wait_on_page_writeback(struct pc_page *page)
{
	pc_page_wait_bit(page, PG_writeback);
}

void wait_on_page_fs_misc(struct pc_page *page)
{
	pc_page_wait_bit(page, PG_fs_misc);
}

void end_page_fs_misc(struct pc_page *page)
{
	clear_bit_wake(page, PG_fs_misc);
}

/* ---- references ---------------------------------------------------------- */

/* Take a reference unless the count is zero (free, or frozen by reclaim). */
bool pc_page_try_get(struct pc_page *p)
{
	int32_t v = atomic_load_explicit(&p->count, memory_order_relaxed);

	while (v > 0) {
		if (atomic_compare_exchange_weak_explicit(&p->count, &v, v + 1,
				memory_order_acquire, memory_order_relaxed))
			return true;
	}
	return false;
}

void pc_get_page(struct pc_page *page)
{
	int32_t old = atomic_fetch_add_explicit(&page->count, 1,
						memory_order_relaxed);

	assert(old > 0);
	(void)old;
}

void pc_put_page(struct pc_page *page)
{
	int32_t old = atomic_fetch_sub_explicit(&page->count, 1,
						memory_order_acq_rel);

	assert(old > 0);
	if (old == 1)
		pc_page_free(pc_cache_of(page), page);
}

/*
 * An access on the hit path: first PG_referenced, then (accessed again
 * while inactive) PG_promote, which reclaim turns into activation.  Only
 * writes the flags word when something changes, so hot pages stay shared.
 */
void pc_mark_accessed(struct pc_page *p)
{
	uint32_t f = atomic_load_explicit(&p->flags, memory_order_relaxed);

	if (!(f & PF(PG_referenced)))
		SetPageReferenced(p);
	else if (!(f & (PF(PG_active) | PF(PG_promote))))
		SetPagePromote(p);
}

/* ---- dirty and writeback ------------------------------------------------- */

uint32_t pc_now_ms(const struct pc_cache *c)
{
	return (uint32_t)((ut_now_ns() - c->epoch_ns) / 1000000u);
}

int pc_set_page_dirty(struct pc_page *page)
{
	struct pc_mapping *m = pc_page_mapping(page);
	const struct pc_mapping_ops *ops;

	assert(PageLocked(page));
	if (!m)
		return 0;
	ops = pc_ops(m);
	if (ops->set_page_dirty)
		return ops->set_page_dirty(m->ctx, page);
	return pc_set_page_dirty_default(page);
}

int pc_set_page_dirty_default(struct pc_page *page)
{
	struct pc_mapping *m = pc_page_mapping(page);
	struct pc_cache *c;

	assert(PageLocked(page));
	if (!m || PageDirty(page) || TestSetPageDirty(page))
		return 0;
	c = m->cache;
	atomic_store_explicit(&page->dirtied_ms, pc_now_ms(c),
			      memory_order_relaxed);
	atomic_fetch_add(&c->nr_dirty, 1);
	pc_dirty_queue(m, pc_page_index(page));
	if (atomic_load(&c->nr_dirty) > c->bg_pages &&
	    !atomic_load_explicit(&c->kicked, memory_order_relaxed))
		pc_flusher_kick(c);
	return 1;
}

/* A dirty page became clean without being written (or before it is). */
void pc_account_clean(struct pc_mapping *m)
{
	/* Read before the count drops: the flag changes only at zero. */
	bool tx = atomic_load(&m->flags) & PC_MAPPING_WB_NEEDS_TX;

	if (tx)
		atomic_fetch_sub(&m->cache->nr_dirty_tx, 1);
	atomic_fetch_sub(&m->nr_dirty, 1);
	atomic_fetch_sub(&m->cache->nr_dirty, 1);
}

/* ---- writeback epochs ---------------------------------------------------- */

static void epoch_leave(struct pc_mapping *m, uint32_t e)
{
	if (atomic_fetch_sub(&m->wb_count[e], 1) == 1 && atomic_load(&m->wb_waiters)) {
		pthread_mutex_lock(&m->wb_wait_lock);
		pthread_cond_broadcast(&m->wb_wait_cond);
		pthread_mutex_unlock(&m->wb_wait_lock);
	}
}

/* Count @page in the current epoch, before its writeback bit is set: a
 * sync that moved the epoch meanwhile did not begin after this write, so
 * the page moves along and is not waited for. */
static void epoch_enter(struct pc_mapping *m, struct pc_page *page)
{
	uint32_t e;

	for (;;) {
		e = atomic_load(&m->wb_epoch);
		atomic_fetch_add(&m->wb_count[e], 1);
		if (atomic_load(&m->wb_epoch) == e)
			break;
		epoch_leave(m, e);
	}
	if (e)
		atomic_fetch_or(&page->flags, PF(PG_wb_epoch));
	else
		atomic_fetch_and(&page->flags, ~PF(PG_wb_epoch));
}

static void epoch_wait(struct pc_mapping *m, uint32_t e)
{
	while (atomic_load(&m->wb_count[e]))
		ut_cond_wait(&m->wb_wait_cond, &m->wb_wait_lock);
}

/*
 * New writeback goes to the other epoch, then the one left drains.  What
 * the other epoch held from an earlier sync drains first, so each epoch
 * only ever loses pages while it is waited for.
 */
void pc_wait_all_writeback(struct pc_mapping *m)
{
	uint32_t e;

	if (!atomic_load(&m->nr_writeback))
		return;
	pthread_mutex_lock(&m->wb_sync_mutex);
	atomic_fetch_add(&m->wb_waiters, 1);
	pthread_mutex_lock(&m->wb_wait_lock);
	e = atomic_load(&m->wb_epoch);
	epoch_wait(m, e ^ 1);
	atomic_store(&m->wb_epoch, e ^ 1);
	epoch_wait(m, e);
	pthread_mutex_unlock(&m->wb_wait_lock);
	atomic_fetch_sub(&m->wb_waiters, 1);
	pthread_mutex_unlock(&m->wb_sync_mutex);
}

void pc_set_page_writeback(struct pc_page *page)
{
	struct pc_mapping *m = pc_page_mapping(page);
	bool was;

	assert(PageLocked(page) && m);
	epoch_enter(m, page);
	was = TestSetPageWriteback(page);
	assert(!was);
	(void)was;
	atomic_fetch_add(&m->nr_writeback, 1);
	atomic_fetch_add(&m->cache->nr_writeback, 1);
}

/*
 * An I/O completion runs in the device's thread and still touches the page
 * and the cache after clearing the bit that lets waiters go on (waking
 * them, pc_progress); the thread that waited may be on its way to
 * pc_cache_destroy by then, which waits for these to end.
 */
static struct pc_cache *end_begin(struct pc_page *page)
{
	struct pc_cache *c = pc_page_mapping(page)->cache;

	atomic_fetch_add(&c->nr_ending, 1);
	return c;
}

/* The last touch of the cache by a completion. */
static void end_done(struct pc_cache *c)
{
	atomic_fetch_sub(&c->nr_ending, 1);
}

/*
 * The mapping cannot go away before the bit is cleared: truncation and
 * reclaim both wait for (or skip) pages under writeback.  So everything
 * that needs @m happens first, and so do the cache's counters: a thread
 * woken by the bit (pc_sync_mapping returning) must find them settled.
 */
void pc_end_page_writeback(struct pc_page *page, int err)
{
	struct pc_mapping *m = pc_page_mapping(page);
	struct pc_cache *c = end_begin(page);

	if (err) {
		int zero = 0;

		SetPageError(page);
		atomic_compare_exchange_strong(&m->wb_err, &zero, err);
		mlog_err("page cache: write of page %llu failed: %s",
			 (unsigned long long)pc_page_index(page), strerror(-err));
	}
	atomic_fetch_sub(&m->nr_writeback, 1);
	atomic_fetch_add(&c->written, 1);
	atomic_fetch_sub(&c->nr_writeback, 1);
	/* A sync waiting by epochs goes on from here: the counters are
	 * settled, and @m is still there until the bit is cleared. */
	epoch_leave(m, (atomic_load(&page->flags) >> PG_wb_epoch) & 1);
	clear_bit_wake(page, PG_writeback);
	pc_progress(c);
	end_done(c);
}

void pc_end_read(struct pc_page *page, int err)
{
	struct pc_cache *c = end_begin(page);

	if (err)
		SetPageError(page);
	else
		SetPageUptodate(page);
	/* The lock was handed to the read: no thread's count holds it. */
	clear_bit_wake(page, PG_locked);
	end_done(c);
}

/* ---- private data -------------------------------------------------------- */

void pc_attach_private(struct pc_page *page, void *priv)
{
	assert(PageLocked(page));
	page->private = priv;
	SetPagePrivate(page);
}

void *pc_detach_private(struct pc_page *page)
{
	void *priv = page->private;

	assert(PageLocked(page));
	page->private = NULL;
	ClearPagePrivate(page);
	return priv;
}

/* ---- which cache a page belongs to (pfn_valid) -------------------------- */

#define PC_MAX_CACHES 64
static struct pc_cache *_Atomic registry[PC_MAX_CACHES];

/*
 * The cache whose pool holds @p, or NULL: a descriptor from anywhere else
 * (a region's) is not a cache page, and freeing it is a bug that
 * pc_page_free() reports.
 */
struct pc_cache *pc_cache_of(const struct pc_page *p)
{
	uintptr_t a = (uintptr_t)p;

	for (unsigned int i = 0; i < PC_MAX_CACHES; i++) {
		struct pc_cache *c = atomic_load_explicit(&registry[i],
							  memory_order_acquire);
		uintptr_t lo;

		if (!c)
			continue;
		lo = (uintptr_t)c->pages;
		if (a >= lo && a < lo + (uintptr_t)c->max_pages * sizeof(*p))
			return c;
	}
	return NULL;
}

int pc_registry_add(struct pc_cache *c)
{
	for (unsigned int i = 0; i < PC_MAX_CACHES; i++) {
		struct pc_cache *none = NULL;

		if (atomic_compare_exchange_strong(&registry[i], &none, c))
			return 0;
	}
	mlog_err("page cache: more than %d caches at once", PC_MAX_CACHES);
	return -EMFILE;
}

void pc_registry_del(struct pc_cache *c)
{
	for (unsigned int i = 0; i < PC_MAX_CACHES; i++) {
		struct pc_cache *cur = c;

		if (atomic_compare_exchange_strong(&registry[i], &cur, NULL))
			return;
	}
}
