/*
 * writeback.c - writing a mapping's dirty pages back through its owner.
 *
 * Each mapping queues the index of every page that turns dirty (m->dq).
 * A writeback pass takes the queue, sorts it, and hands the owner the
 * pages that are still dirty in index order, in batches, so that runs of
 * neighbours become large I/Os; entries it leaves (too young, locked, out
 * of range) go back on the queue.  One pass per mapping runs at a time
 * (m->wb_mutex), so a sync pass never misses pages a background pass has
 * taken off the queue but not yet handed over.
 *
 * Background passes never sleep on a page: locked pages and pages still
 * under writeback are left for later.  Integrity passes (sync) lock every
 * page and wait for earlier writeback of a page before writing it again.
 *
 * pc_write_range is the integrity pass a journal commit uses for ordered
 * data: it walks the index instead of taking the queue, so it needs no
 * m->wb_mutex and never waits behind another thread's pass (which may be
 * the thread that runs the commit).
 */
#include "pc_i.h"

#include "util.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define WB_BATCH 256u
#define DQ_MIN 16u

struct wb_ctx {
	struct pc_mapping *m;
	struct pc_wbc wbc;      /* the pass's, passed with each batch */
	struct pc_writer *writer;  /* the owner's own pass: its writepages */
	uint64_t first, last;
	uint32_t expire, now;
	struct pc_page *batch[WB_BATCH];
	unsigned int n;
	int err;
	uint32_t kept_age;      /* age of the oldest page left queued */
};

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

static size_t sort_unique(uint64_t *v, size_t n)
{
	size_t k = 0;

	qsort(v, n, sizeof(*v), cmp_u64);
	for (size_t i = 0; i < n; i++)
		if (!k || v[k - 1] != v[i])
			v[k++] = v[i];
	return k;
}

/* ---- the dirty queue (m->lock) ------------------------------------------- */

static bool dq_reserve(struct pc_mapping *m)
{
	size_t cap;
	uint64_t *v;

	if (m->dq_len < m->dq_cap)
		return true;
	/* Pages truncated while dirty leave stale entries; squeeze out the
	 * duplicates before growing. */
	if (m->dq_len > 2 * atomic_load(&m->nr_dirty) + DQ_MIN) {
		m->dq_len = sort_unique(m->dq, m->dq_len);
		if (m->dq_len < m->dq_cap)
			return true;
	}
	cap = m->dq_cap ? 2 * m->dq_cap : DQ_MIN;
	v = realloc(m->dq, cap * sizeof(*v));
	if (!v)
		return false;
	m->dq = v;
	m->dq_cap = cap;
	return true;
}

/*
 * Queue a page that has just become dirty.  If the queue cannot grow, the
 * mapping is marked so that the next pass looks at every page instead.
 */
void pc_dirty_queue(struct pc_mapping *m, uint64_t index)
{
	bool first;

	pthread_mutex_lock(&m->lock);
	if (!atomic_load(&m->nr_dirty))
		m->dq_len = 0;          /* every entry is stale */
	if (dq_reserve(m))
		m->dq[m->dq_len++] = index;
	else
		m->dq_lost = true;
	if (atomic_load(&m->flags) & PC_MAPPING_WB_NEEDS_TX)
		atomic_fetch_add(&m->cache->nr_dirty_tx, 1);
	first = atomic_fetch_add(&m->nr_dirty, 1) == 0;
	pthread_mutex_unlock(&m->lock);
	if (first)
		pc_dirty_list_add(m);
}

/* Put entries a pass left back in front of those queued meanwhile. */
static void dq_requeue(struct pc_mapping *m, uint64_t *keep, size_t nkeep,
		       size_t cap, bool lost)
{
	pthread_mutex_lock(&m->lock);
	if (lost)
		m->dq_lost = true;
	if (nkeep + m->dq_len > cap) {
		uint64_t *v = realloc(keep, (nkeep + m->dq_len) * sizeof(*v));

		if (!v) {
			m->dq_lost = true;
			nkeep = 0;
		} else {
			keep = v;
			cap = nkeep + m->dq_len;
		}
	}
	if (m->dq_len)
		memcpy(keep + nkeep, m->dq, m->dq_len * sizeof(*keep));
	free(m->dq);
	m->dq = keep;
	m->dq_len += nkeep;
	m->dq_cap = cap;
	pthread_mutex_unlock(&m->lock);
}

/* ---- one pass ------------------------------------------------------------ */

/* The batch goes to the pass's own writepages, else to the mapping's
 * (or its writepage, page by page). */
static int owner_write(struct wb_ctx *w)
{
	struct pc_mapping *m = w->m;
	const struct pc_mapping_ops *ops = pc_ops(m);
	int rc = 0;

	if (w->writer)
		return w->writer->writepages(w->writer, m, w->batch, w->n,
					     &w->wbc);
	if (ops->writepages)
		return ops->writepages(m->ctx, m, w->batch, w->n, &w->wbc);
	for (unsigned int i = 0; i < w->n; i++) {
		struct pc_page *p = w->batch[i];
		int r;

		if (!ops->writepage) {
			pc_set_page_dirty_default(p);
			pc_unlock_page(p);
			continue;
		}
		r = ops->writepage(m->ctx, p, &w->wbc);
		rc = rc ? rc : r;
	}
	return rc;
}

/* Hand the batch to the owner; it unlocks every page. */
static void wb_flush(struct wb_ctx *w)
{
	struct pc_mapping *m = w->m;
	unsigned int held = pc_held_pages() - w->n;  /* the owner unlocks them */
	unsigned int written = 0;
	int rc;

	if (!w->n)
		return;
	/* From here until the owner puts a page under writeback (after
	 * mapping its blocks, maybe reading them) the page is neither dirty
	 * nor under writeback, only locked: wait_range counts on
	 * nr_handover to know such pages may be about. */
	atomic_fetch_add(&m->nr_handover, w->n);
	for (unsigned int i = 0; i < w->n; i++)
		if (TestClearPageDirty(w->batch[i]))
			pc_account_clean(m);
	rc = owner_write(w);
	pc_held_pages_set(held);
	atomic_fetch_sub(&m->nr_handover, w->n);
	if (rc < 0 && !w->err)
		w->err = rc;
	for (unsigned int i = 0; i < w->n; i++) {
		written += !PageDirty(w->batch[i]);
		pc_put_page(w->batch[i]);
	}
	/* A page whose write ended before this reference went was not
	 * reclaimable when the end said so: say it again (only for pages
	 * written, or a declined batch would look like progress forever). */
	if (written)
		pc_progress(m->cache);
	w->n = 0;
}

/* Lock a page for writeback; false (page put) to leave it queued. */
static bool wb_lock_page(struct wb_ctx *w, struct pc_page *p)
{
	if (pc_trylock_page(p))
		return true;
	if (!w->wbc.sync) {
		pc_put_page(p);
		return false;
	}
	wb_flush(w);            /* never sleep holding other page locks */
	pc_lock_page(p);
	return true;
}

/* Take one referenced page (dirty for @age ms); true if its queue entry
 * stays. */
static bool wb_page_keep(struct wb_ctx *w, struct pc_page *p, uint32_t age)
{
	if (!PageDirty(p)) {
		pc_put_page(p);
		return false;
	}
	if (!w->wbc.sync && age < w->expire) {
		pc_put_page(p);
		return true;
	}
	if (!wb_lock_page(w, p))
		return true;
	if (pc_page_mapping(p) != w->m || !PageDirty(p)) {
		pc_unlock_page(p);
		pc_put_page(p);
		return false;
	}
	if (PageWriteback(p)) {
		if (!w->wbc.sync) {
			pc_unlock_page(p);
			pc_put_page(p);
			return true;
		}
		wb_flush(w);
		pc_wait_on_page_writeback(p);
	}
	w->batch[w->n++] = p;
	if (w->n == WB_BATCH)
		wb_flush(w);
	return false;
}

/* Take one referenced page; returns true if its queue entry stays. */
static bool wb_page(struct wb_ctx *w, struct pc_page *p)
{
	uint32_t age = w->now - atomic_load_explicit(&p->dirtied_ms,
						     memory_order_relaxed);
	bool keep = wb_page_keep(w, p, age);

	if (keep && age > w->kept_age && age < UINT32_MAX / 2)
		w->kept_age = age;
	return keep;
}

static bool wb_index(struct wb_ctx *w, uint64_t idx)
{
	struct pc_page *p;

	if (idx < w->first || idx >= w->last)
		return true;
	p = pc_index_get(w->m, idx);
	return p ? wb_page(w, p) : false;
}

/* The queue was lost to a failed allocation: look at every page. */
static bool wb_walk(struct wb_ctx *w)
{
	struct pc_page *pages[64];
	struct pc_iter it;
	unsigned int n;
	bool kept = false;

	pc_iter_init(w->m, &it, w->first, w->last);
	pc_iter_want(&it, PF(PG_dirty));
	while ((n = pc_iter_next(w->m, &it, pages, 64)))
		for (unsigned int i = 0; i < n; i++)
			kept |= wb_page(w, pages[i]);
	return kept;
}

static void wb_run(struct wb_ctx *w)
{
	struct pc_mapping *m = w->m;
	uint64_t *q;
	size_t len, cap, nkeep = 0;
	bool lost;

	pthread_mutex_lock(&m->lock);
	q = m->dq;
	len = m->dq_len;
	cap = m->dq_cap;
	lost = m->dq_lost;
	m->dq = NULL;
	m->dq_len = m->dq_cap = 0;
	m->dq_lost = false;
	pthread_mutex_unlock(&m->lock);

	len = q ? sort_unique(q, len) : 0;
	for (size_t i = 0; i < len; i++)
		if (wb_index(w, q[i]))
			q[nkeep++] = q[i];
	if (lost)
		lost = wb_walk(w);
	/* An integrity pass's caller waits for it all next: the last batch
	 * is reaped here rather than by the device's thread, which would
	 * then have to wake this one. */
	w->wbc.wait_now = w->wbc.sync;
	wb_flush(w);
	dq_requeue(m, q, nkeep, cap, lost);
}

static void record_error(struct pc_mapping *m, int err)
{
	int zero = 0;

	if (err)
		atomic_compare_exchange_strong(&m->wb_err, &zero, err);
}

/*
 * Write back the dirty pages of [first, last) that have been dirty for
 * @expire_ms (sync passes: all of them), through @writer if not NULL.
 * Background passes skip a mapping another pass is working on.  Returns
 * the first error the owner returned.
 */
int pc_write_mapping(struct pc_mapping *m, const struct pc_wbc *wbc,
		     struct pc_writer *writer, uint64_t first, uint64_t last,
		     uint32_t expire_ms)
{
	struct wb_ctx *w;
	int err;

	if (wbc->sync)
		pthread_mutex_lock(&m->wb_mutex);
	else if (pthread_mutex_trylock(&m->wb_mutex))
		return 0;
	w = calloc(1, sizeof(*w));
	if (!w) {
		pthread_mutex_unlock(&m->wb_mutex);
		return -ENOMEM;
	}
	pc_held_wb(1);
	*w = (struct wb_ctx){ .m = m, .wbc = *wbc, .writer = writer,
			      .first = first, .last = last,
			      .expire = expire_ms, .now = pc_now_ms(m->cache) };
	wb_run(w);
	err = w->err;
	if (!wbc->sync)
		pc_dirty_list_aged(m, w->now - w->kept_age);
	free(w);
	pc_held_wb(-1);
	pthread_mutex_unlock(&m->wb_mutex);
	record_error(m, err);
	return err;
}

/* ---- integrity writeback ------------------------------------------------- */

/*
 * Wait for the writes of [first, last) started so far, including those of
 * pages another thread's pass has taken but not yet handed over: while
 * any are about, locked pages of the range are waited for as well (their
 * owner unlocks them under writeback), walking the range; otherwise the
 * counters suffice.
 */
static void wait_range(struct pc_mapping *m, uint64_t first, uint64_t last)
{
	bool handover = atomic_load(&m->nr_handover) != 0;
	struct pc_page *pages[64];
	struct pc_iter it;
	unsigned int n;

	if (!handover && !atomic_load(&m->nr_writeback))
		return;
	/* A range past the pages there are would walk them all. */
	if (!handover && last - first > atomic_load(&m->nrpages)) {
		pc_wait_all_writeback(m);
		return;
	}
	pc_iter_init(m, &it, first, last);
	pc_iter_want(&it, PF(PG_writeback) | (handover ? PF(PG_locked) : 0));
	while ((n = pc_iter_next(m, &it, pages, 64))) {
		for (unsigned int i = 0; i < n; i++) {
			if (handover)
				pc_wait_on_page_locked(pages[i]);
			pc_wait_on_page_writeback(pages[i]);
			pc_put_page(pages[i]);
		}
	}
}

/* Pages [*first, *last) holding bytes [start, end). */
static void page_range(const struct pc_mapping *m, uint64_t start,
		       uint64_t end, uint64_t *first, uint64_t *last)
{
	uint32_t bs = m->cache->block_size;

	*first = start / bs;
	*last = end / bs + (end % bs != 0);
}

/* Integrity writeback sleeps on page locks one at a time, holding none. */
static void check_no_page_lock(const char *what)
{
	if (pc_held_pages())
		pc_order_violation(what);
}

int pc_write_and_wait_range(struct pc_mapping *m, uint64_t start, uint64_t end)
{
	return pc_write_and_wait_range_for(m, start, end, NULL);
}

int pc_write_and_wait_range_for(struct pc_mapping *m, uint64_t start,
				uint64_t end, struct pc_writer *writer)
{
	struct pc_wbc wbc = { .reason = PC_WB_SYNC, .sync = true };
	uint64_t first, last;

	check_no_page_lock("pc_write_and_wait_range/pc_sync_mapping while "
			   "holding a page lock");
	if (pc_wb_locks_held())
		pc_order_violation("pc_write_and_wait_range/pc_sync_mapping "
				   "in writeback (a mapping's writeback lock "
				   "is held)");
	page_range(m, start, end, &first, &last);
	if (first < last) {
		pc_write_mapping(m, &wbc, writer, first, last, 0);
		wait_range(m, first, last);
	}
	return atomic_exchange(&m->wb_err, 0);
}

int pc_sync_mapping(struct pc_mapping *m)
{
	return pc_write_and_wait_range(m, 0, UINT64_MAX);
}

int pc_write_range(struct pc_mapping *m, uint64_t start, uint64_t end)
{
	struct pc_wbc wbc = { .reason = PC_WB_SYNC, .sync = true };
	struct wb_ctx *w;
	int err;

	check_no_page_lock("pc_write_range while holding a page lock");
	if (!atomic_load(&m->nr_dirty))
		return 0;
	w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	*w = (struct wb_ctx){ .m = m, .wbc = wbc,
			      .now = pc_now_ms(m->cache) };
	page_range(m, start, end, &w->first, &w->last);
	if (w->first < w->last) {
		wb_walk(w);
		wb_flush(w);
	}
	err = w->err;
	free(w);
	record_error(m, err);
	return err;
}

int pc_wait_range(struct pc_mapping *m, uint64_t start, uint64_t end)
{
	uint64_t first, last;

	page_range(m, start, end, &first, &last);
	if (first < last)
		wait_range(m, first, last);
	return atomic_load(&m->wb_err);
}
