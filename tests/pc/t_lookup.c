/*
 * t_lookup.c - lookups and references: pc_find_get_page, 
 * pc_find_or_create_page (returns the page locked), pc_read_cache_page
 * (reads once, then hits), get/put, the page lock (trylock, lock, unlock,
 * waiting, mutual exclusion between threads) and the hit/miss counters.
 */
#include "pc_test.h"
#include "t_pc.h"

#include <sched.h>

#define BS 4096u

static struct {
	struct pc_page *page;
	_Atomic bool started;
	_Atomic bool saw_uptodate;
	long counter;
} shared;

static void *waiter(void *arg)
{
	(void)arg;
	atomic_store(&shared.started, true);
	pc_wait_on_page_locked(shared.page);
	atomic_store(&shared.saw_uptodate, PageUptodate(shared.page));
	return NULL;
}

static void *locker(void *arg)
{
	(void)arg;
	for (int i = 0; i < 20000; i++) {
		pc_lock_page(shared.page);
		shared.counter++;
		pc_unlock_page(shared.page);
	}
	return NULL;
}

static void check_read(struct t_env *e)
{
	struct pc_page *p, *q;

	t_assert(pc_find_get_page(e->m, 5) == NULL, "page 5 cached too early");
	t_ok(pc_read_cache_page(e->m, 5, &p));
	t_assert(PageUptodate(p) && !PageLocked(p) && !PageError(p), "state");
	t_assert(t_is_pattern(p->data, 5, BS), "page 5 has wrong data");
	t_eq(pc_page_index(p), 5);
	t_assert(pc_page_mapping(p) == e->m, "wrong mapping");
	t_eq(atomic_load(&e->own.readpage_calls), 1);
	t_eq(atomic_load(&p->count), 2);        /* ours + the index's */

	q = pc_find_get_page(e->m, 5);
	t_assert(q == p, "lookup found another page");
	t_eq(atomic_load(&p->count), 3);
	pc_put_page(q);
	t_ok(pc_read_cache_page(e->m, 5, &q));
	t_assert(q == p, "second read gave another page");
	t_eq(atomic_load(&e->own.readpage_calls), 1);
	pc_get_page(p);
	t_eq(atomic_load(&p->count), 4);
	pc_put_page(p);
	pc_put_page(q);
	pc_put_page(p);
	t_eq(atomic_load(&p->count), 1);        /* cached, unused */
	t_eq(pc_mapping_nrpages(e->m), 1);
}

static void check_create_and_wait(struct t_env *e)
{
	struct pc_page *p, *q;
	pthread_t t;

	t_ok(pc_find_or_create_page(e->m, 7, &p));
	t_assert(PageLocked(p) && !PageUptodate(p), "new page state");
	t_assert(!pc_trylock_page(p), "trylock of a locked page succeeded");
	shared.page = p;
	t = t_thread(waiter, NULL);
	while (!atomic_load(&shared.started))
		sched_yield();
	t_pattern(p->data, 7, BS);
	SetPageUptodate(p);
	pc_unlock_page(p);
	t_join(t);
	t_assert(atomic_load(&shared.saw_uptodate), "waiter returned early");

	t_ok(pc_find_or_create_page(e->m, 7, &q));
	t_assert(q == p && PageLocked(q) && PageUptodate(q), "existing page");
	pc_unlock_page(q);
	t_assert(pc_trylock_page(q), "trylock of an unlocked page failed");
	pc_unlock_page(q);
	pc_put_page(q);
	pc_put_page(p);
	t_eq(atomic_load(&e->own.readpage_calls), 1);
}

static void check_exclusion(struct t_env *e)
{
	struct pc_page *p;
	pthread_t t[4];

	t_ok(pc_read_cache_page(e->m, 9, &p));
	shared.page = p;
	shared.counter = 0;
	for (int i = 0; i < 4; i++)
		t[i] = t_thread(locker, NULL);
	for (int i = 0; i < 4; i++)
		t_join(t[i]);
	t_eq(shared.counter, 4 * 20000);
	t_assert(!PageLocked(p), "left locked");
	pc_put_page(p);
}

/* One environment throughout: the counts at the end are of every
 * lookup before them. */
static void test_lookups_locks_and_counts(void)
{
	struct t_env e;
	struct pc_stats st;

	t_env_init(&e, BS, 256, 128, false);
	check_read(&e);
	check_create_and_wait(&e);
	check_exclusion(&e);
	pc_get_stats(e.c, &st);
	/* misses: find_get 5, read 5, create 7, read 9; the rest hit. */
	t_eq(st.misses, 4);
	t_eq(st.hits, 3);
	t_eq(st.pages, 3);
	t_eq(st.in_use, 3 * st.page_cost);
	t_eq(st.page_cost, BS + sizeof(struct pc_page));
	t_eq(st.max_pages, 128);
	t_env_fini(&e);
}

T_MAIN(T_CASE(test_lookups_locks_and_counts))
