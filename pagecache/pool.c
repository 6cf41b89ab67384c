/*
 * pool.c - page allocation within the budget, the two LRU lists, reclaim.
 *
 * Every descriptor and its data are allocated once, at cache creation: the
 * pool holds exactly as many pages as the budget pays for, so the cache can
 * never grow past it.  A free page sits on the free list (count 0); a
 * cached page is in its mapping's index (which holds one reference) and on
 * one LRU list.
 *
 * The LRU is two lists.  New pages enter the inactive list.  The hit path
 * only sets bits (see pc_mark_accessed): a page accessed twice while
 * inactive carries PG_promote, and reclaim moves it to the active list when
 * it meets it at the inactive tail.  The active list is kept no longer than
 * the inactive one; its tail pages go back to the inactive list unless
 * referenced since the last look.  A scan that touches pages once therefore
 * only churns the inactive list and the hot set survives it.
 *
 * Reclaim takes pages off the inactive tail with a reference (isolation),
 * then, without the LRU lock, drops those that are clean, unlocked, not
 * under writeback and used by nobody else, by freezing their count from 2
 * (index + isolation) to 0 so that no lock-free lookup can take them any
 * more.  Dirty pages are never dropped; meeting them wakes the flusher.
 */
#include "pc_i.h"

#include "util.h"

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <time.h>

#define SCAN_BATCH 32u
#define WAIT_STEP_MS 10u
#define WAIT_IDLE_MAX 500u   /* ~5 s without any progress: -ENOMEM */
#define NOFS_IDLE_MAX 10u    /* ~100 ms, inside a transaction */

/* ---- lists of page ids (c->lru_lock, or c->pool_lock for the free list) */

static void list_add_head(struct pc_cache *c, struct pc_list *l,
			  struct pc_page *p)
{
	uint32_t id = pc_page_id(c, p);

	p->lru_prev = PC_NIL;
	p->lru_next = l->head;
	if (l->head != PC_NIL)
		pc_id_page(c, l->head)->lru_prev = id;
	else
		l->tail = id;
	l->head = id;
	l->count++;
}

static void list_unlink(struct pc_cache *c, struct pc_list *l,
			struct pc_page *p)
{
	if (p->lru_prev != PC_NIL)
		pc_id_page(c, p->lru_prev)->lru_next = p->lru_next;
	else
		l->head = p->lru_next;
	if (p->lru_next != PC_NIL)
		pc_id_page(c, p->lru_next)->lru_prev = p->lru_prev;
	else
		l->tail = p->lru_prev;
	p->lru_prev = p->lru_next = PC_NIL;
	l->count--;
}

void pc_lru_add(struct pc_cache *c, struct pc_page *p)
{
	pthread_mutex_lock(&c->lru_lock);
	list_add_head(c, &c->inactive, p);
	SetPageLRU(p);
	pthread_mutex_unlock(&c->lru_lock);
}

/*
 * Take a page that is leaving its mapping off the LRU.  Clearing ->mapping
 * under the LRU lock is what tells reclaim, which may hold the page
 * isolated, not to put it back.
 */
void pc_lru_remove(struct pc_cache *c, struct pc_page *p)
{
	pthread_mutex_lock(&c->lru_lock);
	if (PageLRU(p)) {
		list_unlink(c, PageActive(p) ? &c->active : &c->inactive, p);
		ClearPageLRU(p);
		ClearPageActive(p);
	}
	atomic_store_explicit(&p->mapping, NULL, memory_order_release);
	pthread_mutex_unlock(&c->lru_lock);
}

/* ---- the free list ------------------------------------------------------- */

void pc_pool_init(struct pc_cache *c)
{
	c->free_head = PC_NIL;
	for (uint32_t i = c->max_pages; i-- > 0;) {
		struct pc_page *p = &c->pages[i];

		p->data = (char *)c->arena + (size_t)i * c->stride;
		p->lru_prev = PC_NIL;
		p->lru_next = c->free_head;
		c->free_head = i;
	}
	c->nr_free = c->max_pages;
	c->active = (struct pc_list){ PC_NIL, PC_NIL, 0 };
	c->inactive = (struct pc_list){ PC_NIL, PC_NIL, 0 };
}

/* The bad_page analogue: a page in a state the free path must never see. */
static void bad_page(const struct pc_page *p, const char *why)
{
	mlog_err("page cache: bad page %p (index %llu, flags %#x, count %d): %s",
		 (const void *)p, (unsigned long long)pc_page_index(p),
		 (unsigned int)atomic_load(&p->flags),
		 (int)atomic_load(&p->count), why);
	abort();
}

void pc_page_free(struct pc_cache *c, struct pc_page *p)
{
	if (!c)
		bad_page(p, "not a page of any cache's pool (a region page?)");
	if (atomic_load(&p->flags) & PC_FREE_CHECK)
		bad_page(p, "freed while locked, dirty, under writeback, on the "
			 "LRU or with private data");
	if (pc_page_mapping(p))
		bad_page(p, "freed while still in a mapping");
	pthread_mutex_lock(&c->pool_lock);
	p->lru_next = c->free_head;
	c->free_head = pc_page_id(c, p);
	c->nr_free++;
	atomic_fetch_add(&c->progress, 1);
	if (atomic_load(&c->alloc_waiters))
		pthread_cond_broadcast(&c->pool_cond);
	pthread_mutex_unlock(&c->pool_lock);
}

/* Something that may let a waiting allocation through has happened. */
void pc_progress(struct pc_cache *c)
{
	atomic_fetch_add(&c->progress, 1);
	if (atomic_load(&c->alloc_waiters)) {
		pthread_mutex_lock(&c->pool_lock);
		pthread_cond_broadcast(&c->pool_cond);
		pthread_mutex_unlock(&c->pool_lock);
	}
}

/* ---- threads inside a filesystem transaction ---------------------------- */

/*
 * The calling thread holds a journal handle: the kernel's
 * memalloc_nofs_save, which jbd2 sets per handle the same way.  An
 * allocation inside it must not wait for writeback that only the end of
 * its transaction can do.  Thread-local, and jnl_start and jnl_stop set
 * it around the handle's life in the one thread that holds the handle,
 * so it covers exactly the allocations made inside the transaction.
 * Passing it instead would take an argument on every page-allocating call
 * of the filesystem (its metadata reads among them) saying whether the
 * caller holds a handle.
 */
static _Thread_local unsigned int tl_nofs;

void pc_nofs_begin(void)
{
	tl_nofs++;
}

void pc_nofs_end(void)
{
	tl_nofs--;
}

/*
 * The flusher may use the last few free pages, so that writeback can
 * always make progress; so may a thread inside a transaction (@reserve)
 * when only the end of a transaction can free a page: it must not wait
 * for that.
 */
static struct pc_page *pool_pop(struct pc_cache *c, bool reserve)
{
	uint32_t floor = pc_in_flusher() || reserve ? 0 : c->reserve;
	struct pc_page *p = NULL;

	pthread_mutex_lock(&c->pool_lock);
	if (c->nr_free > floor) {
		p = pc_id_page(c, c->free_head);
		c->free_head = p->lru_next;
		c->nr_free--;
	}
	pthread_mutex_unlock(&c->pool_lock);
	return p;
}

/* prep_new_page: clear the per-use flags, PG_fs_misc among them. */
static void prep_new_page(struct pc_page *p)
{
	uint32_t old = atomic_fetch_and(&p->flags, ~PC_PREP_CLEAR);

	if (old & PC_FREE_CHECK)
		bad_page(p, "allocated in a busy state");
	p->private = NULL;
	p->lru_prev = p->lru_next = PC_NIL;
	atomic_store_explicit(&p->dirtied_ms, 0, memory_order_relaxed);
	atomic_store_explicit(&p->count, 1, memory_order_release);
}

/* ---- reclaim ------------------------------------------------------------- */

/* Keep the active list no longer than the inactive one (c->lru_lock). */
static void balance_active(struct pc_cache *c)
{
	for (unsigned int n = 0; n < SCAN_BATCH &&
	     c->active.count > c->inactive.count; n++) {
		struct pc_page *p = pc_id_page(c, c->active.tail);

		list_unlink(c, &c->active, p);
		if (atomic_fetch_and(&p->flags, ~(PF(PG_referenced) |
		    PF(PG_promote))) & (PF(PG_referenced) | PF(PG_promote))) {
			list_add_head(c, &c->active, p);
		} else {
			ClearPageActive(p);
			list_add_head(c, &c->inactive, p);
		}
	}
}

/*
 * Take up to @max candidates off the inactive tail, each with a reference.
 * A page with count 0 is being dropped by pc_invalidate (frozen, about to
 * leave the LRU under this lock): it goes back to the head, untouched.
 */
static unsigned int isolate(struct pc_cache *c, struct pc_page **iso,
			    unsigned int max)
{
	unsigned int n = 0, scanned = 0;

	pthread_mutex_lock(&c->lru_lock);
	balance_active(c);
	while (n < max && scanned++ < 2 * max && c->inactive.tail != PC_NIL) {
		struct pc_page *p = pc_id_page(c, c->inactive.tail);

		list_unlink(c, &c->inactive, p);
		if (TestClearPagePromote(p)) {
			ClearPageReferenced(p);
			SetPageActive(p);
			list_add_head(c, &c->active, p);
			continue;
		}
		if (!pc_page_try_get(p)) {
			list_add_head(c, &c->inactive, p);
			continue;
		}
		ClearPageLRU(p);
		iso[n++] = p;
	}
	pthread_mutex_unlock(&c->lru_lock);
	return n;
}

static void putback(struct pc_cache *c, struct pc_page *p)
{
	pthread_mutex_lock(&c->lru_lock);
	if (pc_page_mapping(p)) {
		list_add_head(c, &c->inactive, p);
		SetPageLRU(p);
	}
	pthread_mutex_unlock(&c->lru_lock);
	pc_put_page(p);
}

bool pc_release_private(struct pc_mapping *m, struct pc_page *p)
{
	const struct pc_mapping_ops *ops = pc_ops(m);

	if (!PagePrivate(p))
		return true;
	if (!ops->releasepage || !ops->releasepage(m->ctx, p))
		return false;
	return !PagePrivate(p);
}

/* Drop a locked, isolated page if nobody else uses it. */
static bool reclaim_locked(struct pc_cache *c, struct pc_page *p)
{
	struct pc_mapping *m = pc_page_mapping(p);
	int32_t two = 2;

	if (!m || PageDirty(p) || PageWriteback(p) || !pc_release_private(m, p))
		return false;
	if (!atomic_compare_exchange_strong(&p->count, &two, 0))
		return false;
	pthread_mutex_lock(&m->lock);
	pc_index_delete(m, p);
	pthread_mutex_unlock(&m->lock);
	atomic_store_explicit(&p->mapping, NULL, memory_order_release);
	/* Count 0: nobody holds the page, so nobody waits on its lock. */
	ClearPageLocked(p);
	pc_held_page_unlock();
	atomic_fetch_add(&c->evictions, 1);
	pc_page_free(c, p);
	return true;
}

static bool try_reclaim(struct pc_cache *c, struct pc_page *p, bool *dirty)
{
	uint32_t f = atomic_load(&p->flags);

	if (f & PF(PG_dirty)) {
		*dirty = true;
		return false;
	}
	if ((f & (PF(PG_locked) | PF(PG_writeback))) ||
	    atomic_load(&p->count) != 2 || !pc_trylock_page(p))
		return false;
	if (reclaim_locked(c, p))
		return true;
	pc_unlock_page(p);
	return false;
}

/* Free up to @want pages into the pool; *dirty says dirty pages were met. */
static unsigned int shrink(struct pc_cache *c, unsigned int want,
			   unsigned int rounds, bool *dirty)
{
	struct pc_page *iso[SCAN_BATCH];
	unsigned int freed = 0;

	for (unsigned int round = 0; round < rounds && freed < want; round++) {
		unsigned int n = isolate(c, iso, SCAN_BATCH);

		if (!n)
			break;
		for (unsigned int i = 0; i < n; i++) {
			if (try_reclaim(c, iso[i], dirty))
				freed++;
			else
				putback(c, iso[i]);
		}
	}
	return freed;
}

/* ---- allocation ---------------------------------------------------------- */

static void timed_wait(struct pc_cache *c, uint64_t seen)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	ts.tv_nsec += WAIT_STEP_MS * 1000000L;
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	pthread_mutex_lock(&c->pool_lock);
	atomic_fetch_add(&c->alloc_waiters, 1);
	if (atomic_load(&c->progress) == seen) {
		ut_blocking();
		pthread_cond_timedwait(&c->pool_cond, &c->pool_lock, &ts);
	}
	atomic_fetch_sub(&c->alloc_waiters, 1);
	pthread_mutex_unlock(&c->pool_lock);
}

/*
 * Nothing could be reclaimed: have dirty pages written (by the flusher, or
 * here if there is none) and wait for progress.  False once nothing has
 * moved for a long time: every page is pinned.
 */
static bool wait_for_room(struct pc_cache *c, uint64_t *seen, unsigned int *idle)
{
	uint64_t now;

	if (atomic_load(&c->nr_dirty)) {
		if (c->has_flusher)
			pc_flusher_kick(c);
		else if (!pc_in_flusher())
			pc_run_pass(c);
	}
	timed_wait(c, *seen);
	now = atomic_load(&c->progress);
	if (now != *seen) {
		*seen = now;
		*idle = 0;
		return true;
	}
	if (++*idle < WAIT_IDLE_MAX)
		return true;
	mlog_err("page cache: no page can be freed, all %u are in use",
		 c->max_pages);
	return false;
}

/* Can writeback free a page without a transaction ending?  Dirty pages of
 * PC_MAPPING_WB_NEEDS_TX mappings cannot be written until their owner
 * journals them; writes in flight and other dirty pages can. */
static bool writeback_can_help(struct pc_cache *c)
{
	return atomic_load(&c->nr_writeback) ||
	       atomic_load(&c->nr_dirty) > atomic_load(&c->nr_dirty_tx);
}

/*
 * A thread inside a transaction, when writeback cannot free a page before
 * that transaction ends: look at every page once (the loop's scan sees a
 * few), then take the reserve.  With the reserve gone too, wait a little
 * for pages held only for a moment (a write that just ended, a reader),
 * then fail rather than wait for what only the end of the transaction can
 * bring.  0 with *out, -EAGAIN to look again, or -ENOMEM.
 */
static int nofs_alloc(struct pc_cache *c, uint64_t *seen, unsigned int *idle,
		      struct pc_page **out)
{
	bool dirty = false;
	uint64_t now;

	if (shrink(c, 1, c->max_pages / SCAN_BATCH + 4, &dirty))
		return -EAGAIN;
	if ((*out = pool_pop(c, true)) != NULL) {
		prep_new_page(*out);
		return 0;
	}
	timed_wait(c, *seen);
	now = atomic_load(&c->progress);
	if (now != *seen) {
		*seen = now;
		*idle = 0;
		return -EAGAIN;
	}
	if (++*idle < NOFS_IDLE_MAX)
		return -EAGAIN;
	mlog_err("page cache: no page for a thread inside a transaction: all "
		 "%u are in use, and only the end of a transaction can free "
		 "one", c->max_pages);
	return -ENOMEM;
}

struct pc_page *pc_page_alloc(struct pc_cache *c, enum pc_alloc_mode mode)
{
	uint64_t seen = atomic_load(&c->progress);
	unsigned int idle = 0;
	bool waited = false;

	for (;;) {
		struct pc_page *p = pool_pop(c, false);
		bool dirty = false;
		int err;

		if (p) {
			prep_new_page(p);
			return p;
		}
		if (shrink(c, SCAN_BATCH, 4, &dirty)) {
			if (dirty && !atomic_load(&c->kicked))
				pc_flusher_kick(c);     /* before they crowd us */
			continue;
		}
		if (mode == PC_ALLOC_NOWAIT)
			return NULL;
		if (tl_nofs && !writeback_can_help(c)) {
			err = nofs_alloc(c, &seen, &idle, &p);
			if (err != -EAGAIN)
				return err ? NULL : p;
			continue;
		}
		if (!waited) {
			waited = true;
			atomic_fetch_add(&c->alloc_waits, 1);
		}
		if (!wait_for_room(c, &seen, &idle))
			return NULL;
	}
}
