/*
 * mapping.c - mappings: creation, lookup and creation of pages, reading a
 * page through the owner, truncation and invalidation.
 */
#include "pc_i.h"

#include "util.h"

#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#define BATCH 64u

/* ---- hit and miss counters ----------------------------------------------- */

static _Atomic unsigned int next_stripe;
/* Thread-local, and safe so: it only picks which counters of a sum this
 * thread adds to, so that threads do not share a line; no call's result
 * depends on it. */
static _Thread_local unsigned int my_stripe = UINT_MAX;

static struct pc_stripe *stripe(struct pc_cache *c)
{
	if (my_stripe == UINT_MAX)
		my_stripe = atomic_fetch_add(&next_stripe, 1) % PC_STRIPES;
	return &c->stripes[my_stripe];
}

void pc_stat_hit(struct pc_cache *c)
{
	atomic_fetch_add_explicit(&stripe(c)->hits, 1, memory_order_relaxed);
}

void pc_stat_miss(struct pc_cache *c)
{
	atomic_fetch_add_explicit(&stripe(c)->misses, 1, memory_order_relaxed);
}

/* ---- mappings ------------------------------------------------------------ */

static void destroy_locks(struct pc_mapping *m)
{
	pthread_mutex_destroy(&m->lock);
	pthread_mutex_destroy(&m->wb_mutex);
	pthread_mutex_destroy(&m->wb_sync_mutex);
	pthread_mutex_destroy(&m->wb_wait_lock);
	pthread_cond_destroy(&m->wb_wait_cond);
}

int pc_mapping_create(struct pc_cache *c, const struct pc_mapping_ops *ops,
		      void *ctx, struct pc_mapping **out)
{
	struct pc_mapping *m = calloc(1, sizeof(*m));

	if (!m)
		return -ENOMEM;
	m->cache = c;
	m->ops = ops;
	m->ctx = ctx;
	pthread_mutex_init(&m->lock, NULL);
	pthread_mutex_init(&m->wb_mutex, NULL);
	pthread_mutex_init(&m->wb_sync_mutex, NULL);
	pthread_mutex_init(&m->wb_wait_lock, NULL);
	pthread_cond_init(&m->wb_wait_cond, NULL);
	if (pc_index_init(m)) {
		destroy_locks(m);
		free(m);
		return -ENOMEM;
	}
	atomic_fetch_add(&c->nr_mappings, 1);
	*out = m;
	return 0;
}

/* Reclaim may still be unlinking a page it froze before truncation could
 * take it; it is done with the mapping once nrpages says so. */
static void wait_unlinked(struct pc_mapping *m)
{
	for (;;) {
		uint64_t n;

		pthread_mutex_lock(&m->lock);
		n = atomic_load(&m->nrpages);
		pthread_mutex_unlock(&m->lock);
		if (!n)
			return;
		sched_yield();
	}
}

void pc_mapping_destroy(struct pc_mapping *m)
{
	struct pc_cache *c = m->cache;

	pc_dirty_list_forget(m);
	pc_truncate(m, 0);
	wait_unlinked(m);
	pc_index_free(m);
	free(m->dq);
	destroy_locks(m);
	atomic_fetch_sub(&c->nr_mappings, 1);
	free(m);
}

/* Pages dirty, handed to the owner's writepages or under writeback: a
 * check against a caller that did not clean the mapping first, not a
 * barrier (nothing stops a page turning dirty right after it). */
static bool owner_busy(struct pc_mapping *m)
{
	return atomic_load(&m->nr_dirty) || atomic_load(&m->nr_handover) ||
	       atomic_load(&m->nr_writeback);
}

int pc_mapping_set_ops(struct pc_mapping *m, const struct pc_mapping_ops *ops)
{
	int err = 0;

	pthread_mutex_lock(&m->lock);
	if (owner_busy(m))
		err = -EBUSY;
	else
		atomic_store_explicit(&m->ops, ops, memory_order_release);
	pthread_mutex_unlock(&m->lock);
	return err;
}

int pc_mapping_set_flags(struct pc_mapping *m, unsigned int flags)
{
	int err = 0;

	if (flags & ~PC_MAPPING_WB_NEEDS_TX)
		return -EINVAL;
	/* The cache counts the dirty pages of such mappings as they turn
	 * dirty and clean: the flag may change only while there are none. */
	pthread_mutex_lock(&m->lock);
	if (atomic_load(&m->nr_dirty))
		err = -EBUSY;
	else
		atomic_store(&m->flags, flags);
	pthread_mutex_unlock(&m->lock);
	return err;
}

void *pc_mapping_ctx(const struct pc_mapping *m)
{
	return m->ctx;
}

struct pc_cache *pc_mapping_cache(const struct pc_mapping *m)
{
	return m->cache;
}

uint64_t pc_mapping_nrpages(const struct pc_mapping *m)
{
	return atomic_load(&((struct pc_mapping *)m)->nrpages);
}

/* ---- lookup and creation ------------------------------------------------- */

struct pc_page *pc_lookup(struct pc_mapping *m, uint64_t index, bool count)
{
	struct pc_page *p = pc_index_get(m, index);

	if (p)
		pc_mark_accessed(p);
	if (count) {
		if (p)
			pc_stat_hit(m->cache);
		else
			pc_stat_miss(m->cache);
	}
	return p;
}

struct pc_page *pc_find_get_page(struct pc_mapping *m, uint64_t index)
{
	return pc_lookup(m, index, true);
}

/*
 * Allocate a locked page and insert it at @index.  Returns 0 with the new
 * page, 1 with a referenced (unlocked) page that got there first, or
 * -ENOMEM.  The allocation happens before m->lock: it may reclaim.
 */
int pc_add_new_page(struct pc_mapping *m, uint64_t index,
		    enum pc_alloc_mode mode, struct pc_page **out)
{
	struct pc_page *p = pc_page_alloc(m->cache, mode), *q;

	if (!p)
		return -ENOMEM;
	SetPageLocked(p);
	pc_held_page_lock();
	pthread_mutex_lock(&m->lock);
	q = pc_index_get_locked(m, index);
	if (!q)
		pc_index_insert(m, p, index);
	pthread_mutex_unlock(&m->lock);
	if (q) {
		pc_unlock_page(p);
		pc_put_page(p);
		*out = q;
		return 1;
	}
	pc_lru_add(m->cache, p);
	*out = p;
	return 0;
}

/* The page at @index, locked and referenced, created if missing. */
static int get_locked(struct pc_mapping *m, uint64_t index, bool *created,
		      struct pc_page **out)
{
	for (;;) {
		struct pc_page *p = pc_lookup(m, index, false);

		if (!p) {
			int rc = pc_add_new_page(m, index, PC_ALLOC_WAIT, &p);

			if (rc < 0)
				return rc;
			if (rc == 0) {
				pc_mark_accessed(p);    /* its first use */
				*created = true;
				*out = p;
				return 0;
			}
		}
		pc_lock_page(p);
		if (pc_page_mapping(p) == m && pc_page_index(p) == index) {
			*out = p;
			return 0;
		}
		pc_unlock_page(p);      /* truncated meanwhile */
		pc_put_page(p);
	}
}

int pc_find_or_create_page(struct pc_mapping *m, uint64_t index,
			   struct pc_page **out)
{
	bool created = false;
	int rc = get_locked(m, index, &created, out);

	if (created || rc)
		pc_stat_miss(m->cache);
	else
		pc_stat_hit(m->cache);
	return rc;
}

/* Read a locked page that is not uptodate and wait for the result. */
int pc_readpage_sync(struct pc_mapping *m, struct pc_page *p)
{
	unsigned int held = pc_held_pages() - 1;  /* the page goes to the read */
	const struct pc_mapping_ops *ops = pc_ops(m);

	ClearPageError(p);
	if (ops->readpage)
		ops->readpage(m->ctx, p);
	else
		pc_end_read(p, -EIO);
	pc_held_pages_set(held);
	pc_wait_on_page_locked(p);
	return PageUptodate(p) ? 0 : -EIO;
}

/* The page at @index, uptodate and referenced, read if need be; no
 * statistics.  *created says whether it had to be created. */
int pc_get_read(struct pc_mapping *m, uint64_t index, bool *created,
		struct pc_page **out)
{
	struct pc_page *p;
	int rc;

	*created = false;
	rc = get_locked(m, index, created, &p);
	if (rc)
		return rc;
	if (PageUptodate(p)) {
		pc_unlock_page(p);
		*out = p;
		return 0;
	}
	rc = pc_readpage_sync(m, p);
	if (rc) {
		pc_put_page(p);
		return rc;
	}
	*out = p;
	return 0;
}

int pc_read_cache_page(struct pc_mapping *m, uint64_t index,
		       struct pc_page **out)
{
	struct pc_page *p = pc_lookup(m, index, false);
	bool created;
	int rc;

	if (p && PageUptodate(p)) {
		pc_stat_hit(m->cache);
		*out = p;
		return 0;
	}
	if (p)
		pc_put_page(p);
	rc = pc_get_read(m, index, &created, out);
	if (created || rc == -ENOMEM)
		pc_stat_miss(m->cache);
	else
		pc_stat_hit(m->cache);
	return rc;
}

/* ---- truncation and invalidation ----------------------------------------- */

static uint64_t first_whole_page(struct pc_cache *c, uint64_t from)
{
	uint64_t idx = from / c->block_size;

	return from % c->block_size ? idx + 1 : idx;
}

/* Take a locked page out of its mapping; the index's reference stays with
 * the caller to put. */
static void remove_page(struct pc_mapping *m, struct pc_page *p)
{
	pthread_mutex_lock(&m->lock);
	pc_index_delete(m, p);
	pthread_mutex_unlock(&m->lock);
	pc_lru_remove(m->cache, p);
}

static void truncate_page(struct pc_mapping *m, struct pc_page *p)
{
	const struct pc_mapping_ops *ops = pc_ops(m);

	pc_lock_page(p);
	if (pc_page_mapping(p) != m) {
		pc_unlock_page(p);
		return;
	}
	pc_wait_on_page_writeback(p);
	if (PagePrivate(p) && ops->invalidatepage)
		ops->invalidatepage(m->ctx, p, 0);
	if (PagePrivate(p))
		pc_detach_private(p);
	if (TestClearPageDirty(p))
		pc_account_clean(m);
	remove_page(m, p);
	pc_unlock_page(p);
	pc_put_page(p);
}

static void truncate_partial(struct pc_mapping *m, struct pc_page *p,
			     uint32_t off)
{
	const struct pc_mapping_ops *ops = pc_ops(m);

	pc_lock_page(p);
	if (pc_page_mapping(p) == m) {
		pc_wait_on_page_writeback(p);
		memset((char *)p->data + off, 0, m->cache->block_size - off);
		if (PagePrivate(p) && ops->invalidatepage)
			ops->invalidatepage(m->ctx, p, off);
	}
	pc_unlock_page(p);
}

void pc_truncate_pages(struct pc_mapping *m, uint64_t first, uint64_t end)
{
	struct pc_page *batch[BATCH];
	struct pc_iter it;
	unsigned int n;

	if (first >= end)
		return;
	pc_iter_init(m, &it, first, end);
	while ((n = pc_iter_next(m, &it, batch, BATCH))) {
		for (unsigned int i = 0; i < n; i++) {
			truncate_page(m, batch[i]);
			pc_put_page(batch[i]);
		}
	}
}

void pc_truncate(struct pc_mapping *m, uint64_t from)
{
	struct pc_cache *c = m->cache;

	pc_truncate_pages(m, first_whole_page(c, from), UINT64_MAX);
	if (from % c->block_size) {
		struct pc_page *p = pc_index_get(m, from / c->block_size);

		if (p) {
			truncate_partial(m, p, (uint32_t)(from % c->block_size));
			pc_put_page(p);
		}
	}
}

/* Drop a page nobody uses, as reclaim would; consumes the caller's
 * reference on success. */
static bool invalidate_page(struct pc_mapping *m, struct pc_page *p)
{
	int32_t two = 2;

	if (!pc_trylock_page(p))
		return false;
	if (pc_page_mapping(p) != m || PageDirty(p) || PageWriteback(p) ||
	    !pc_release_private(m, p) ||
	    !atomic_compare_exchange_strong(&p->count, &two, 0)) {
		pc_unlock_page(p);
		return false;
	}
	remove_page(m, p);
	ClearPageLocked(p);     /* count 0: no waiter can exist */
	pc_held_page_unlock();
	pc_page_free(m->cache, p);
	return true;
}

uint64_t pc_invalidate(struct pc_mapping *m, uint64_t from)
{
	struct pc_page *batch[BATCH];
	struct pc_iter it;
	uint64_t dropped = 0;
	unsigned int n;

	pc_iter_init(m, &it, first_whole_page(m->cache, from), UINT64_MAX);
	while ((n = pc_iter_next(m, &it, batch, BATCH))) {
		for (unsigned int i = 0; i < n; i++) {
			if (invalidate_page(m, batch[i]))
				dropped++;
			else
				pc_put_page(batch[i]);
		}
	}
	return dropped;
}
