/*
 * t_private.c - the owner's private data: reclaim asks releasepage before
 * dropping a page that has it, keeps the page when the owner says no, and
 * pc_attach_private / pc_detach_private keep PG_private in step.
 */
#include "t_pc.h"

#define BS 1024u
#define PAGES 64u
#define PRIV 8u

static int tag;

static void scan(struct t_env *e, uint64_t from, uint64_t n)
{
	for (uint64_t i = from; i < from + n; i++) {
		struct pc_page *p;

		t_ok(pc_read_cache_page(e->m, i, &p));
		pc_put_page(p);
	}
}

static void attach_range(struct t_env *e, uint64_t from, uint64_t n)
{
	for (uint64_t i = from; i < from + n; i++) {
		struct pc_page *p;

		t_ok(pc_read_cache_page(e->m, i, &p));
		pc_lock_page(p);
		pc_attach_private(p, &tag);
		t_assert(PagePrivate(p) && p->private == &tag, "attach");
		pc_unlock_page(p);
		pc_put_page(p);
	}
}

static void test_release_asked(void)
{
	struct t_env e;
	struct pc_page *p;

	t_env_init(&e, BS, 2048, PAGES, false);

	t_ok(pc_read_cache_page(e.m, 0, &p));
	pc_lock_page(p);
	pc_attach_private(p, &tag);
	t_assert(pc_detach_private(p) == &tag, "detach returned");
	t_assert(!PagePrivate(p) && !p->private, "detach state");
	pc_unlock_page(p);
	pc_put_page(p);

	atomic_store(&e.own.refuse_release, true);
	attach_range(&e, 1, PRIV);
	scan(&e, 100, 10 * PAGES);
	t_eq(atomic_load(&e.own.released), 0);
	for (uint64_t i = 1; i <= PRIV; i++) {
		p = pc_find_get_page(e.m, i);
		t_assert(p && PagePrivate(p), "page %llu with private data dropped",
			 (unsigned long long)i);
		pc_put_page(p);
	}

	atomic_store(&e.own.refuse_release, false);
	attach_range(&e, 1000, PRIV);
	scan(&e, 1100, 10 * PAGES);
	t_assert(atomic_load(&e.own.released) >= PRIV, "released %u",
		 atomic_load(&e.own.released));
	t_eq(pc_find_get_page(e.m, 1000), NULL);
	t_env_fini(&e);
}

T_MAIN(T_CASE(test_release_asked))
