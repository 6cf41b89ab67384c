/*
 * t_lru.c - the two-list LRU: a hot set (pages used more than once)
 * survives a scan ten times the cache that touches every other page once,
 * while a set used only once does not.
 */
#include "t_pc.h"

#define BS 4096u
#define PAGES 256u
#define HOT 64u
#define SCAN (10u * PAGES)

static void touch(struct t_env *e, uint64_t i)
{
	struct pc_page *p;

	t_ok(pc_read_cache_page(e->m, i, &p));
	pc_put_page(p);
}

/* Misses while reading [0, HOT) again. */
static uint64_t reread_hot(struct t_env *e)
{
	struct pc_stats a, b;

	pc_get_stats(e->c, &a);
	for (uint64_t i = 0; i < HOT; i++)
		touch(e, i);
	pc_get_stats(e->c, &b);
	return b.misses - a.misses;
}

static uint64_t run(bool hot_twice)
{
	struct t_env e;
	uint64_t misses;

	t_env_init(&e, BS, HOT + SCAN, PAGES, false);
	for (int round = 0; round < (hot_twice ? 2 : 1); round++)
		for (uint64_t i = 0; i < HOT; i++)
			touch(&e, i);
	for (uint64_t i = HOT; i < HOT + SCAN; i++)
		touch(&e, i);
	misses = reread_hot(&e);
	t_env_fini(&e);
	return misses;
}

static void test_hot_set_survives(void)
{
	t_eq(run(true), 0);
}

static void test_cold_set_goes(void)
{
	uint64_t cold = run(false);

	t_assert(cold == HOT, "a set used once survived the scan (%llu of %u "
		 "pages missed)", (unsigned long long)cold, HOT);
}

T_MAIN(T_CASE(test_hot_set_survives), T_CASE(test_cold_set_goes))
