/*
 * t_dirty.c - dirty pages and the budget: a dirty page is never reclaimed
 * before it is written (even when its owner keeps declining to write it),
 * and writing ten times the budget of new data makes the cache start
 * writeback and wait for room instead of growing past the budget - with
 * the flusher thread, and without one.
 */
#include "pc_test.h"
#include "t_pc.h"

#include <string.h>

#define BS 4096u
#define PAGES 128u
#define DIRTY 16u
#define BLOCKS (12u * PAGES)

static void dirty_page(struct t_env *e, uint64_t i, uint64_t as)
{
	struct pc_page *p;
	struct pc_stats st;

	t_ok(pc_find_or_create_page(e->m, i, &p));
	t_pattern(p->data, as, BS);
	SetPageUptodate(p);
	pc_set_page_dirty(p);
	pc_unlock_page(p);
	pc_put_page(p);
	pc_get_stats(e->c, &st);
	t_assert(st.pages <= st.max_pages && st.in_use <= st.budget,
		 "over budget");
}

static void scan(struct t_env *e, uint64_t from, uint64_t n)
{
	for (uint64_t i = from; i < from + n; i++) {
		struct pc_page *p;

		t_ok(pc_read_cache_page(e->m, i, &p));
		pc_put_page(p);
	}
}

static void test_never_reclaimed_dirty(void)
{
	struct t_env e;

	t_env_init(&e, BS, BLOCKS, PAGES, false);
	atomic_store(&e.own.decline_writes, true);
	for (uint64_t i = 0; i < DIRTY; i++)
		dirty_page(&e, i, 5000 + i);
	scan(&e, DIRTY, 10 * PAGES);
	for (uint64_t i = 0; i < DIRTY; i++) {
		struct pc_page *p = pc_find_get_page(e.m, i);

		t_assert(p, "dirty page %llu was reclaimed", (unsigned long long)i);
		t_assert(PageDirty(p) && t_is_pattern(p->data, 5000 + i, BS),
			 "dirty page %llu lost its data", (unsigned long long)i);
		t_assert(t_is_pattern(t_dev_block(&e, i), i, BS), "written");
		pc_put_page(p);
	}

	/* Once written they may go (they were used twice, so they stay on
	 * the active list through a scan, but nothing pins them), and the
	 * device has the data. */
	atomic_store(&e.own.decline_writes, false);
	t_ok(pc_sync_mapping(e.m));
	scan(&e, 2 * PAGES, 10 * PAGES);
	for (uint64_t i = 0; i < DIRTY; i++)
		t_assert(t_is_pattern(t_dev_block(&e, i), 5000 + i, BS),
			 "block %llu not written", (unsigned long long)i);
	t_assert(pc_invalidate(e.m, 0) >= DIRTY, "written pages stay pinned");
	t_eq(pc_find_get_page(e.m, 0), NULL);
	t_env_fini(&e);
}

/* Write 10x the budget of new pages; the device must end with all of it. */
static void write_past_budget(bool flusher)
{
	struct t_env e;
	struct pc_stats st;
	uint64_t n = 10 * PAGES;

	t_env_init(&e, BS, BLOCKS, PAGES, flusher);
	pc_set_dirty_expire(e.c, 3600 * 1000);   /* only pressure writes */
	for (uint64_t i = 0; i < n; i++)
		dirty_page(&e, i, 100000 + i);
	pc_get_stats(e.c, &st);
	t_assert(st.written > 0 && st.written < n, "written %llu",
		 (unsigned long long)st.written);
	t_ok(pc_sync_mapping(e.m));
	for (uint64_t i = 0; i < n; i++)
		t_assert(t_is_pattern(t_dev_block(&e, i), 100000 + i, BS),
			 "block %llu lost", (unsigned long long)i);
	t_assert(!atomic_load(&e.own.unsorted), "unsorted write batch");
	pc_get_stats(e.c, &st);
	t_eq(st.dirty, 0);
	t_eq(st.writeback, 0);
	t_env_fini(&e);
}

static void test_past_budget_with_flusher(void)
{
	write_past_budget(true);
}

static void test_past_budget_without_flusher(void)
{
	write_past_budget(false);
}

T_MAIN(T_CASE(test_never_reclaimed_dirty), T_CASE(test_past_budget_with_flusher),
       T_CASE(test_past_budget_without_flusher))
