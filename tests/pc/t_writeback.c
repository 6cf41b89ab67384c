/*
 * t_writeback.c - writeback: pc_write_and_wait_range writes exactly the
 * dirty pages of its range, pc_sync_mapping the rest, in sorted batches
 * merged into one request per run of blocks; a write error reaches the
 * next sync once; the flusher writes pages older than the expiry time and
 * leaves younger ones, writes at once above the dirty threshold; a pass
 * under pressure looks at a bounded batch of dirty mappings and the next
 * pass at others; kicks below the threshold look for expired pages at
 * most once a tick; and pc_sync_cache and pc_balance_dirty do what they
 * say.
 */
#include "bdev_test.h"
#include "pc_test.h"
#include "t_pc.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

#define BS 4096u
#define PAGES 200u

static void dirty(struct t_env *e, struct pc_mapping *m, uint64_t i, uint64_t as)
{
	struct pc_page *p;

	t_ok(pc_read_cache_page(m, i, &p));
	pc_lock_page(p);
	t_pattern(p->data, as, BS);
	pc_set_page_dirty(p);
	pc_unlock_page(p);
	pc_put_page(p);
	(void)e;
}

static bool written(struct t_env *e, uint64_t i, uint64_t as)
{
	return t_is_pattern(t_dev_block(e, i), as, BS);
}

static void test_ranges(void)
{
	struct t_env e;
	struct bdev_stats a, b;
	struct pc_page *p;

	t_env_init(&e, BS, 1024, PAGES, false);
	for (uint64_t i = 10; i < 20; i++)
		dirty(&e, e.m, i, 1000 + i);
	for (uint64_t i = 39; i >= 30; i--)
		dirty(&e, e.m, i, 1000 + i);

	t_ok(pc_write_and_wait_range(e.m, 10 * BS, 15 * BS));
	for (uint64_t i = 10; i < 20; i++)
		t_assert(written(&e, i, 1000 + i) == (i < 15), "page %llu",
			 (unsigned long long)i);
	bdev_get_stats(e.bd, &a);
	t_ok(pc_sync_mapping(e.m));
	bdev_get_stats(e.bd, &b);
	for (uint64_t i = 15; i < 40; i++)
		t_assert(written(&e, i, 1000 + i) == (i < 20 || i >= 30),
			 "page %llu", (unsigned long long)i);
	/* 15..19 and 30..39: two runs, two requests, one batch. */
	t_eq(b.writes - a.writes, 2);
	t_eq(b.submits - a.submits, 1);
	t_assert(!atomic_load(&e.own.unsorted), "unsorted batch");
	if (!t_dev_is_mem()) {
		t_env_fini(&e);
		return;
	}

	/* A failed write is reported once, and marks the page. */
	t_ok(bdev_wrap_fail(e.bd, 50 * BS, BS, BDEV_WRAP_FAIL_WRITE));
	t_log_capture();
	dirty(&e, e.m, 50, 7);
	t_eq(pc_sync_mapping(e.m), -EIO);
	t_assert(t_log_count("write of page 50 failed") == 1, "no log line");
	p = pc_find_get_page(e.m, 50);
	t_assert(p && PageError(p) && !PageDirty(p), "failed page state");
	pc_put_page(p);
	t_ok(pc_sync_mapping(e.m));
	t_ok(bdev_wrap_fail(e.bd, 0, 0, 0));
	t_env_fini(&e);
}

static void test_flusher_expiry(void)
{
	struct pc_config cfg = {
		.budget = T_BUDGET(PAGES, BS),
		.dirty_expire_ms = 3600 * 1000,
	};
	struct t_env e;
	struct pc_page *p;

	t_env_init_cfg(&e, BS, 1024, &cfg);
	dirty(&e, e.m, 3, 33);
	pc_flusher_sync(e.c);
	p = pc_find_get_page(e.m, 3);
	t_assert(PageDirty(p) && !written(&e, 3, 33), "young page written");
	pc_set_dirty_expire(e.c, 0);
	pc_flusher_sync(e.c);
	pc_wait_on_page_writeback(p);
	t_assert(!PageDirty(p) && written(&e, 3, 33), "old page not written");
	pc_put_page(p);
	t_env_fini(&e);
}

static void test_threshold(void)
{
	struct pc_config cfg = {
		.budget = T_BUDGET(PAGES, BS),
		.dirty_expire_ms = 3600 * 1000,
		.dirty_bg_pct = 10,
	};
	struct t_env e;
	struct pc_stats st;

	t_env_init_cfg(&e, BS, 1024, &cfg);
	for (uint64_t i = 0; i < 30; i++)
		dirty(&e, e.m, i, 2000 + i);
	pc_flusher_sync(e.c);
	pc_get_stats(e.c, &st);
	t_assert(st.dirty <= PAGES / 10, "%llu pages still dirty",
		 (unsigned long long)st.dirty);
	/* The pass started the writes; they may still be in flight. */
	t_assert(st.written + st.writeback >= 10, "flusher wrote %llu",
		 (unsigned long long)(st.written + st.writeback));
	t_env_fini(&e);
}

static void test_sync_cache_and_balance(void)
{
	struct pc_config cfg = {
		.budget = T_BUDGET(PAGES, BS),
		.dirty_max_pct = 30,
		.dirty_bg_pct = 90,
		.no_flusher = true,
	};
	struct t_env e;
	struct pc_mapping *m2;
	struct pc_stats st;

	t_env_init_cfg(&e, BS, 1024, &cfg);
	t_ok(pc_mapping_create(e.c, &t_owner_ops, &e.own, &m2));
	for (uint64_t i = 0; i < 100; i++)
		dirty(&e, i < 50 ? e.m : m2, i, 3000 + i);
	pc_get_stats(e.c, &st);
	t_eq(st.dirty, 100);
	pc_balance_dirty(e.c);
	pc_get_stats(e.c, &st);
	t_assert(st.dirty <= PAGES * 30 / 100, "balance left %llu dirty",
		 (unsigned long long)st.dirty);
	for (uint64_t i = 100; i < 110; i++)
		dirty(&e, m2, i, 3000 + i);
	t_ok(pc_sync_cache(e.c));
	pc_get_stats(e.c, &st);
	t_eq(st.dirty, 0);
	t_eq(st.writeback, 0);
	for (uint64_t i = 0; i < 110; i++)
		t_assert(written(&e, i, 3000 + i), "page %llu", (unsigned long long)i);
	pc_mapping_destroy(m2);
	t_env_fini(&e);
}

/*
 * Many small dirty files, the oldest of which the owner will not write:
 * a pass under pressure looks at no more than a batch of them, and later
 * passes reach the ones it can write instead of the same batch again.
 */
#define MANY 600u

static void test_pressure_batches(void)
{
	struct pc_config cfg = {
		.budget = T_BUDGET(2 * MANY, BS),
		.dirty_expire_ms = 3600 * 1000,
		.dirty_bg_pct = 1,
		.no_flusher = true,
	};
	struct t_env e;
	struct t_owner stuck = { 0 };
	struct pc_mapping *m[MANY];
	struct pc_stats a, b;

	t_env_init_cfg(&e, BS, 2 * MANY, &cfg);
	stuck.bd = e.own.bd;
	atomic_store(&stuck.decline_writes, true);
	for (unsigned i = 0; i < MANY; i++) {
		t_ok(pc_mapping_create(e.c, &t_owner_ops, i < MANY / 2 ? &stuck : &e.own,
				       &m[i]));
		dirty(&e, m[i], i, 5000 + i);
	}
	pc_get_stats(e.c, &a);
	pc_flusher_sync(e.c);
	pc_get_stats(e.c, &b);
	t_assert(b.flusher_scanned - a.flusher_scanned <= 256, "one pass under "
		 "pressure looked at %llu mappings",
		 (unsigned long long)(b.flusher_scanned - a.flusher_scanned));
	for (int pass = 0; pass < 8; pass++)
		pc_flusher_sync(e.c);
	pc_get_stats(e.c, &b);
	t_assert(b.dirty <= MANY / 2 + 2 * MANY / 100, "passes kept to the "
		 "mappings they could not write: %llu pages dirty",
		 (unsigned long long)b.dirty);
	atomic_store(&stuck.decline_writes, false);
	t_ok(pc_sync_cache(e.c));
	for (unsigned i = 0; i < MANY; i++)
		pc_mapping_destroy(m[i]);
	t_env_fini(&e);
}

/* Below the threshold, kicks (as every dirtying above it and every
 * allocation that meets dirty pages sends) do not each walk the list. */
static void test_kicks_walk_once(void)
{
	struct pc_config cfg = {
		.budget = T_BUDGET(2 * MANY, BS),
		.dirty_expire_ms = 3600 * 1000,
		.flush_interval_ms = 60 * 1000,
	};
	struct t_env e;
	struct pc_mapping *m[MANY / 2];
	struct pc_stats a, b;

	t_env_init_cfg(&e, BS, 2 * MANY, &cfg);
	for (unsigned i = 0; i < MANY / 2; i++) {
		t_ok(pc_mapping_create(e.c, &t_owner_ops, &e.own, &m[i]));
		dirty(&e, m[i], i, 6000 + i);
	}
	pc_flusher_sync(e.c);                    /* a full pass, a walk */
	pc_get_stats(e.c, &a);
	for (int k = 0; k < 50; k++) {
		pc_flusher_kick(e.c);
		usleep(2000);
	}
	/* The flusher may not have been scheduled yet on a loaded machine. */
	for (int ms = 0; ms < 10000; ms++) {
		pc_get_stats(e.c, &b);
		if (b.flusher_passes > a.flusher_passes)
			break;
		usleep(1000);
	}
	t_assert(b.flusher_passes > a.flusher_passes, "no pass ran");
	t_assert(b.flusher_scanned - a.flusher_scanned <= MANY / 2, "50 kicks "
		 "looked at %llu mappings", (unsigned long long)(b.flusher_scanned -
								 a.flusher_scanned));
	t_ok(pc_sync_cache(e.c));
	for (unsigned i = 0; i < MANY / 2; i++)
		pc_mapping_destroy(m[i]);
	t_env_fini(&e);
}

T_MAIN(T_CASE(test_ranges), T_CASE(test_flusher_expiry), T_CASE(test_threshold),
       T_CASE(test_sync_cache_and_balance), T_CASE(test_pressure_batches),
       T_CASE(test_kicks_walk_once))
