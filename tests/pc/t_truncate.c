/*
 * t_truncate.c - pc_truncate and pc_invalidate from an offset.
 *
 * Truncation removes every page from the offset on, dirty or not, calls
 * invalidatepage for pages with private data (offset 0 for whole pages,
 * the offset within the page for the partial one, whose tail is zeroed),
 * and leaves a page still referenced elsewhere outside the mapping until
 * its last put.  Invalidation drops only what nobody uses and is clean.
 */
#include "pc_test.h"
#include "t_pc.h"

#include <string.h>

#define BS 1024u
#define PARTIAL 100u

static int priv_tag;

static struct pc_page *get(struct t_env *e, uint64_t i)
{
	struct pc_page *p;

	t_ok(pc_read_cache_page(e->m, i, &p));
	return p;
}

static void dirty(struct pc_page *p)
{
	pc_lock_page(p);
	memset(p->data, 0xdd, BS);
	pc_set_page_dirty(p);
	pc_unlock_page(p);
}

static void attach(struct pc_page *p)
{
	pc_lock_page(p);
	pc_attach_private(p, &priv_tag);
	pc_unlock_page(p);
}

static void check_truncate(struct t_env *e)
{
	struct pc_page *p[10], *held;
	struct pc_stats st;

	for (int i = 0; i < 10; i++)
		p[i] = get(e, (uint64_t)i);
	dirty(p[3]);
	dirty(p[8]);
	attach(p[5]);
	attach(p[9]);
	held = p[7];
	for (int i = 0; i < 10; i++)
		if (i != 7)
			pc_put_page(p[i]);
	pc_get_stats(e->c, &st);
	t_eq(st.dirty, 2);

	pc_truncate(e->m, 5 * BS + PARTIAL);
	t_eq(pc_mapping_nrpages(e->m), 6);
	for (uint64_t i = 6; i < 10; i++)
		t_eq(pc_find_get_page(e->m, i), NULL);
	t_eq(atomic_load(&e->own.invalidated), 2);     /* 9 whole, 5 partial */
	t_eq(e->own.last_inval_offset, PARTIAL);
	pc_get_stats(e->c, &st);
	t_eq(st.dirty, 1);
	t_assert(t_is_pattern(t_dev_block(e, 8), 8, BS), "dropped page written");

	/* The partial page keeps its head and loses its tail. */
	p[5] = pc_find_get_page(e->m, 5);
	t_assert(p[5] && PagePrivate(p[5]), "partial page gone");
	{
		unsigned char want[BS];

		t_pattern(want, 5, BS);
		memset(want + PARTIAL, 0, BS - PARTIAL);
		t_assert(!memcmp(p[5]->data, want, BS), "partial page contents");
	}
	pc_lock_page(p[5]);
	pc_detach_private(p[5]);
	pc_unlock_page(p[5]);
	pc_put_page(p[5]);

	/* A page held across truncation is out of the mapping, freed later. */
	t_eq(pc_page_mapping(held), NULL);
	t_assert(!PageLRU(held) && !PageDirty(held), "held page state");
	pc_put_page(held);
	pc_get_stats(e->c, &st);
	t_eq(st.pages, 6);
}

static void check_invalidate(struct t_env *e)
{
	struct pc_page *held, *locked, *p;

	held = get(e, 1);
	locked = get(e, 2);
	pc_lock_page(locked);
	p = get(e, 4);
	attach(p);
	pc_put_page(p);
	/* 0, 4 (private, released) and 5 go; 1 held, 2 locked, 3 dirty stay. */
	t_eq(pc_invalidate(e->m, 0), 3);
	t_eq(atomic_load(&e->own.released), 1);
	t_eq(pc_mapping_nrpages(e->m), 3);
	p = pc_find_get_page(e->m, 3);
	t_assert(p && PageDirty(p), "dirty page lost");
	pc_put_page(p);
	pc_unlock_page(locked);
	pc_put_page(locked);
	pc_put_page(held);

	/* An owner that will not release keeps its page. */
	atomic_store(&e->own.refuse_release, true);
	p = get(e, 1);
	attach(p);
	pc_put_page(p);
	t_eq(pc_invalidate(e->m, BS), 1);       /* page 2 only */
	t_assert((p = pc_find_get_page(e->m, 1)) != NULL, "private page dropped");
	pc_put_page(p);
	atomic_store(&e->own.refuse_release, false);

	/* Truncating everything drops the dirty page too; at a page
	 * boundary no partial page is touched. */
	pc_truncate(e->m, 0);
	t_eq(pc_mapping_nrpages(e->m), 0);
	t_assert(t_is_pattern(t_dev_block(e, 3), 3, BS), "dropped page written");
}

/* Invalidation works on the pages truncation left. */
static void test_truncate_then_invalidate(void)
{
	struct t_env e;
	struct pc_stats st;

	t_env_init(&e, BS, 64, 64, false);
	check_truncate(&e);
	check_invalidate(&e);
	pc_get_stats(e.c, &st);
	t_eq(st.pages, 0);
	t_eq(st.dirty, 0);
	t_env_fini(&e);
}

T_MAIN(T_CASE(test_truncate_then_invalidate))
