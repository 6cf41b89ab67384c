/*
 * t_fs_misc.c - PG_fs_misc belongs to the filesystem: the cache leaves it
 * alone through dirtying, writeback and reclaim decisions, and clears it
 * only when a page is initialised for a new index.
 */
#include "pc_test.h"
#include "t_pc.h"

#include <string.h>

#define BS 4096u
#define PAGES 64u
#define BLOCKS 4096u

/* Read pages [from, from + n) once each, dropping them; if @watch shows
 * up reused for another index, it must have come without PG_fs_misc. */
static unsigned int scan(struct t_env *e, uint64_t from, uint64_t n,
			 struct pc_page *watch)
{
	unsigned int reused = 0;

	for (uint64_t i = from; i < from + n; i++) {
		struct pc_page *p;

		t_ok(pc_read_cache_page(e->m, i, &p));
		if (p == watch) {
			reused++;
			t_assert(!PageMiscFS(p), "reused page kept PG_fs_misc");
		}
		pc_put_page(p);
	}
	return reused;
}

static void test_kept_until_reused(void)
{
	struct t_env e;
	struct pc_page *a, *b;

	t_env_init(&e, BS, BLOCKS, PAGES, false);

	/* Dirtying and writeback leave it as it is. */
	t_ok(pc_read_cache_page(e.m, 1, &a));
	pc_lock_page(a);
	SetPageMiscFS(a);
	memset(a->data, 0x5a, BS);
	t_eq(pc_set_page_dirty(a), 1);
	t_assert(PageMiscFS(a) && PageDirty(a), "dirtying cleared PG_fs_misc");
	pc_unlock_page(a);
	t_ok(pc_sync_mapping(e.m));
	t_assert(!PageDirty(a) && PageMiscFS(a), "writeback cleared PG_fs_misc");
	t_assert(!memcmp(t_dev_block(&e, 1), a->data, BS), "not written");

	/* Reclaim passes over a held page and a dirty one without touching
	 * the flag (the dirty one is declined by its owner, so stays dirty). */
	t_ok(pc_read_cache_page(e.m, 2, &b));
	pc_lock_page(b);
	SetPageMiscFS(b);
	pc_set_page_dirty(b);
	pc_unlock_page(b);
	pc_put_page(b);
	atomic_store(&e.own.decline_writes, true);
	scan(&e, 100, 10 * PAGES, NULL);
	t_assert(PageMiscFS(a) && pc_page_mapping(a) == e.m, "held page lost");
	t_assert(pc_find_get_page(e.m, 2) == b, "dirty page reclaimed");
	t_assert(PageMiscFS(b) && PageDirty(b), "reclaim touched the dirty page");
	pc_put_page(b);
	atomic_store(&e.own.decline_writes, false);

	/* Once a is let go it is reclaimed; its descriptor comes back for
	 * another index with the flag clear. */
	pc_put_page(a);
	t_assert(scan(&e, 2000, 10 * PAGES, a) > 0, "page never reused");
	t_assert(pc_page_index(a) != 1, "page 1 still cached");

	/* Same through invalidation and pc_find_or_create_page. */
	t_ok(pc_read_cache_page(e.m, 3000, &a));
	pc_lock_page(a);
	SetPageMiscFS(a);
	pc_unlock_page(a);
	pc_put_page(a);
	t_eq(pc_invalidate(e.m, 3000 * (uint64_t)BS), 1);
	for (uint64_t i = 3001; i < 3001 + 2 * PAGES; i++) {
		t_ok(pc_find_or_create_page(e.m, i, &b));
		pc_unlock_page(b);
		pc_put_page(b);
		if (b == a)
			break;
	}
	t_assert(b == a, "the freed descriptor was never reused");
	t_assert(!PageMiscFS(b), "new page carries PG_fs_misc");
	t_env_fini(&e);
}

T_MAIN(T_CASE(test_kept_until_reused))
