/*
 * flusher.c - the background writeback thread and the list of dirty
 * mappings it works from.
 *
 * A mapping joins the list when its first page turns dirty and leaves it
 * once it has neither dirty pages nor writeback in flight (so that a
 * cache-wide sync can wait for writeback started by the flusher).  Each
 * pass visits the mappings whose oldest queued page has expired and writes
 * the pages dirty for longer than the expiry time (a walk of the whole
 * list, at most once a tick unless a sync asks); when dirty pages pass
 * dirty_bg_pct of the budget, or an allocation is waiting for room, the
 * pass writes every dirty page of a batch of mappings from the head of
 * the list instead, moving them to its tail, until enough is clean.  The
 * owner gets each mapping's pages in batches through writepages.
 */
#include "pc_i.h"

#include "util.h"

#include <errno.h>
#include <stdlib.h>
#include <time.h>

/*
 * The allocation scope of a background pass, as the kernel's PF_MEMALLOC
 * is its flusher's.  The owner's writepages reads pages on the pass's
 * behalf (a block map's indirect blocks) through calls that carry nothing
 * of the pass: those allocations may take the reserve, and must not start
 * a pass of their own, which would wait for this one.  Thread-local, and
 * the pass sets it around its own work in its own thread, so it covers
 * exactly the allocations made for the pass.  Passing it instead would
 * take an allocation argument on every page-reading call of the owner.
 */
static _Thread_local bool tl_flusher;

bool pc_in_flusher(void)
{
	return tl_flusher;
}

/* ---- the dirty mapping list (c->wb_lock) --------------------------------- */

static void list_unlink(struct pc_cache *c, struct pc_mapping *m)
{
	if (m->dprev)
		m->dprev->dnext = m->dnext;
	else
		c->dirty_head = m->dnext;
	if (m->dnext)
		m->dnext->dprev = m->dprev;
	else
		c->dirty_tail = m->dprev;
	m->dnext = m->dprev = NULL;
	m->on_dirty_list = false;
}

static void list_append(struct pc_cache *c, struct pc_mapping *m)
{
	m->dprev = c->dirty_tail;
	m->dnext = NULL;
	if (c->dirty_tail)
		c->dirty_tail->dnext = m;
	else
		c->dirty_head = m;
	c->dirty_tail = m;
	m->on_dirty_list = true;
}

void pc_dirty_list_add(struct pc_mapping *m)
{
	struct pc_cache *c = m->cache;

	pthread_mutex_lock(&c->wb_lock);
	if (!m->on_dirty_list) {
		list_append(c, m);
		m->oldest_ms = pc_now_ms(c);
	}
	pthread_mutex_unlock(&c->wb_lock);
}

void pc_dirty_list_aged(struct pc_mapping *m, uint32_t oldest_ms)
{
	pthread_mutex_lock(&m->cache->wb_lock);
	m->oldest_ms = oldest_ms;
	pthread_mutex_unlock(&m->cache->wb_lock);
}

/* Take a mapping off the list for good and wait until nobody uses it. */
void pc_dirty_list_forget(struct pc_mapping *m)
{
	struct pc_cache *c = m->cache;

	pthread_mutex_lock(&c->wb_lock);
	if (m->on_dirty_list)
		list_unlink(c, m);
	while (m->users)
		ut_cond_wait(&c->wb_done, &c->wb_lock);
	pthread_mutex_unlock(&c->wb_lock);
}

static bool is_clean(struct pc_mapping *m)
{
	return !atomic_load(&m->nr_dirty) && !atomic_load(&m->nr_writeback);
}

#define PRESSURE_BATCH 256u

/*
 * Take a reference (users) on the listed mappings that @all or expiry
 * selects, at most @max, dropping clean ones from the list, into a
 * malloc'ed array.  A limited grab moves the mappings it took to the
 * tail.  A pass under pressure takes PRESSURE_BATCH: it stops as
 * soon as enough is clean, so with thousands of small dirty files a walk
 * of the whole list would cost more than the pass writes, and the next
 * pass starts from other mappings than those a pass could not clean
 * (a journalled file's pages wait for the filesystem, not the flusher).
 * Returns 0 or -ENOMEM.
 */
static int grab(struct pc_cache *c, bool all, uint32_t expire, size_t max,
		struct pc_mapping ***out, size_t *n)
{
	struct pc_mapping **v = NULL, *m, *next;
	uint32_t now = pc_now_ms(c);
	size_t count = 0, cap = 0;

	pthread_mutex_lock(&c->wb_lock);
	for (m = c->dirty_head; m && cap < max; m = m->dnext)
		cap++;
	if (cap && !(v = malloc(cap * sizeof(*v)))) {
		pthread_mutex_unlock(&c->wb_lock);
		return -ENOMEM;
	}
	for (m = c->dirty_head; m && count < cap; m = next) {
		next = m->dnext;
		atomic_fetch_add_explicit(&c->scanned, 1, memory_order_relaxed);
		if (is_clean(m) && !m->users)
			list_unlink(c, m);
		else if (all || now - m->oldest_ms >= expire) {
			m->users++;
			v[count++] = m;
		}
	}
	for (size_t i = 0; max != SIZE_MAX && i < count; i++) {
		list_unlink(c, v[i]);
		list_append(c, v[i]);
	}
	pthread_mutex_unlock(&c->wb_lock);
	*out = v;
	*n = count;
	return 0;
}

static void release(struct pc_cache *c, struct pc_mapping **v, size_t n)
{
	pthread_mutex_lock(&c->wb_lock);
	for (size_t i = 0; i < n; i++) {
		struct pc_mapping *m = v[i];

		m->users--;
		if (!m->users && m->on_dirty_list && is_clean(m))
			list_unlink(c, m);
	}
	pthread_cond_broadcast(&c->wb_done);
	pthread_mutex_unlock(&c->wb_lock);
	free(v);
}

/* ---- a pass -------------------------------------------------------------- */

static bool under_pressure(struct pc_cache *c)
{
	uint64_t dirty = atomic_load(&c->nr_dirty);

	return dirty > c->bg_pages || dirty > c->max_dirty ||
	       atomic_load(&c->alloc_waiters) > 0;
}

/*
 * One pass.  Without pressure it looks for expired pages, which walks
 * every dirty mapping: the flusher, kicked whenever dirty pages pass the
 * background threshold, does that at most once a tick (@expire_walk
 * false otherwise); a pass that finds pressure gone then does nothing.
 */
static void run_pass(struct pc_cache *c, bool expire_walk)
{
	bool was = tl_flusher, pressure;
	uint32_t expire;
	struct pc_mapping **v = NULL;
	size_t n = 0;

	pthread_mutex_lock(&c->pass_mutex);
	tl_flusher = true;
	pressure = under_pressure(c);
	expire = pressure ? 0 : atomic_load(&c->expire_ms);
	if ((pressure || expire_walk) &&
	    grab(c, pressure, expire, pressure ? PRESSURE_BATCH : SIZE_MAX, &v, &n))
		n = 0;
	for (size_t i = 0; i < n; i++) {
		struct pc_wbc wbc = {
			.reason = pressure ? PC_WB_PRESSURE : PC_WB_EXPIRED,
			.sync = false,
		};

		if (pressure && !under_pressure(c))
			break;
		pc_write_mapping(v[i], &wbc, NULL, 0, UINT64_MAX, expire);
	}
	if (n)
		release(c, v, n);
	else
		free(v);
	atomic_fetch_add(&c->passes, 1);
	tl_flusher = was;
	pthread_mutex_unlock(&c->pass_mutex);
}

void pc_run_pass(struct pc_cache *c)
{
	run_pass(c, true);
}

/* ---- the thread ---------------------------------------------------------- */

static void wait_tick(struct pc_cache *c)
{
	struct timespec ts;
	uint64_t ns;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	ns = (uint64_t)ts.tv_nsec + (uint64_t)c->interval_ms * 1000000u;
	ts.tv_sec += (time_t)(ns / 1000000000u);
	ts.tv_nsec = (long)(ns % 1000000000u);
	pthread_cond_timedwait(&c->wb_cond, &c->wb_lock, &ts);
}

static void *flusher_main(void *arg)
{
	struct pc_cache *c = arg;

	tl_flusher = true;
	pthread_mutex_lock(&c->wb_lock);
	while (!c->wb_stop) {
		uint64_t pass, dirty_before;
		bool walk;

		if (!c->wb_kick)
			wait_tick(c);
		if (c->wb_stop)
			break;
		walk = c->wb_sync_kick ||
		       pc_now_ms(c) - c->last_expire_ms >= c->interval_ms;
		if (walk)
			c->last_expire_ms = pc_now_ms(c);
		c->wb_kick = c->wb_sync_kick = false;
		atomic_store(&c->kicked, false);
		pass = ++c->pass_started;
		pthread_mutex_unlock(&c->wb_lock);

		dirty_before = atomic_load(&c->nr_dirty);
		run_pass(c, walk);
		/* Still too much dirty and the pass helped: go on at once. */
		if (under_pressure(c) && atomic_load(&c->nr_dirty) < dirty_before)
			pc_flusher_kick(c);

		pthread_mutex_lock(&c->wb_lock);
		c->pass_done = pass;
		pthread_cond_broadcast(&c->wb_done);
	}
	pthread_mutex_unlock(&c->wb_lock);
	return NULL;
}

int pc_flusher_start(struct pc_cache *c)
{
	int rc = pthread_create(&c->flusher, NULL, flusher_main, c);

	if (rc)
		return -rc;
	c->has_flusher = true;
	return 0;
}

void pc_flusher_stop(struct pc_cache *c)
{
	if (!c->has_flusher)
		return;
	pthread_mutex_lock(&c->wb_lock);
	c->wb_stop = true;
	pthread_cond_signal(&c->wb_cond);
	pthread_mutex_unlock(&c->wb_lock);
	pthread_join(c->flusher, NULL);
	c->has_flusher = false;
}

void pc_flusher_kick(struct pc_cache *c)
{
	if (!c->has_flusher)
		return;
	atomic_store(&c->kicked, true);
	pthread_mutex_lock(&c->wb_lock);
	c->wb_kick = true;
	pthread_cond_signal(&c->wb_cond);
	pthread_mutex_unlock(&c->wb_lock);
}

void pc_flusher_sync(struct pc_cache *c)
{
	uint64_t target;

	if (!c->has_flusher) {
		pc_run_pass(c);
		return;
	}
	pthread_mutex_lock(&c->wb_lock);
	target = c->pass_started + 1;
	c->wb_kick = c->wb_sync_kick = true;
	pthread_cond_signal(&c->wb_cond);
	while (c->pass_done < target && !c->wb_stop)
		ut_cond_wait(&c->wb_done, &c->wb_lock);
	pthread_mutex_unlock(&c->wb_lock);
}

void pc_set_dirty_expire(struct pc_cache *c, uint32_t ms)
{
	atomic_store(&c->expire_ms, ms);
}

void pc_balance_dirty(struct pc_cache *c)
{
	uint64_t before;

	if (pc_page_locks_held())
		pc_order_violation("pc_balance_dirty while holding a page lock");
	while ((before = atomic_load(&c->nr_dirty)) > c->max_dirty) {
		pc_flusher_sync(c);
		if (atomic_load(&c->nr_dirty) >= before)
			return;         /* the owner declines: do not spin */
	}
}

int pc_sync_cache(struct pc_cache *c)
{
	struct pc_mapping **v;
	size_t n;
	int err = 0;

	if (grab(c, true, 0, SIZE_MAX, &v, &n))
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		int rc = pc_sync_mapping(v[i]);

		err = err ? err : rc;
	}
	release(c, v, n);
	return err;
}
