/*
 * t_budget.c - the budget holds: a working set ten times the cache, read
 * sequentially and then at random, never makes the cache hold more pages
 * (or bytes) than the budget pays for, every page read has the right
 * data, and what had to go shows up as evictions.
 */
#include "pc_test.h"
#include "t_pc.h"

#define BS 1024u
#define PAGES 100u
#define BLOCKS (10u * PAGES)

static void check_within(struct t_env *e)
{
	struct pc_stats st;

	pc_get_stats(e->c, &st);
	t_assert(st.pages <= st.max_pages, "%llu pages cached, budget holds %llu",
		 (unsigned long long)st.pages, (unsigned long long)st.max_pages);
	t_assert(st.in_use <= st.budget, "%llu bytes in use, budget %llu",
		 (unsigned long long)st.in_use, (unsigned long long)st.budget);
}

static void read_one(struct t_env *e, uint64_t i)
{
	struct pc_page *p;

	t_ok(pc_read_cache_page(e->m, i, &p));
	t_assert(t_is_pattern(p->data, i, BS), "page %llu has wrong data",
		 (unsigned long long)i);
	pc_put_page(p);
	check_within(e);
}

static void test_reads_stay_in_budget(void)
{
	struct t_env e;
	struct pc_stats st;
	uint64_t seed = 42;

	/* A budget a little over PAGES pages still holds only PAGES. */
	struct pc_config cfg = {
		.budget = T_BUDGET(PAGES, BS) + BS / 2,
		.no_flusher = true,
	};

	t_env_init_cfg(&e, BS, BLOCKS, &cfg);
	for (uint64_t i = 0; i < BLOCKS; i++)
		read_one(&e, i);
	for (int k = 0; k < 5000; k++) {
		seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
		read_one(&e, (seed >> 33) % BLOCKS);
	}
	pc_get_stats(e.c, &st);
	t_eq(st.max_pages, PAGES);
	t_eq(st.budget, cfg.budget);
	t_assert(st.pages > PAGES / 2, "the cache did not fill (%llu)",
		 (unsigned long long)st.pages);
	t_assert(st.evictions >= BLOCKS - PAGES, "only %llu evictions",
		 (unsigned long long)st.evictions);
	t_eq(st.hits + st.misses, BLOCKS + 5000);
	t_assert(st.misses >= BLOCKS, "misses");
	t_eq(pc_mapping_nrpages(e.m), st.pages);
	t_env_fini(&e);
}

T_MAIN(T_CASE(test_reads_stay_in_budget))
