/*
 * t_index.c - the index with many pages: sparse indexes across the whole
 * range of byte offsets, growth of the table while it fills, every page found
 * again, truncation both by walking the table and by probing a short
 * range, and the metadata cost per cached page (descriptor + index) at
 * most 64 bytes once the cache is full.
 */
#include "pc_test.h"
#include "t_pc.h"

#define BS 512u
#define PAGES 40000u

static uint64_t idx_of(uint64_t i)
{
	return i * 0x9e3779b97ULL + (i & 7);    /* sparse, byte offsets fit */
}

static void add(struct pc_mapping *m, uint64_t idx)
{
	struct pc_page *p;

	t_ok(pc_find_or_create_page(m, idx, &p));
	SetPageUptodate(p);
	pc_unlock_page(p);
	pc_put_page(p);
}

static void check_all(struct pc_mapping *m, uint64_t n, uint64_t gone_from)
{
	for (uint64_t i = 0; i < n; i++) {
		struct pc_page *p = pc_find_get_page(m, idx_of(i));
		bool want = idx_of(i) < gone_from;

		t_assert(!!p == want, "page %llu (index %#llx) %s",
			 (unsigned long long)i, (unsigned long long)idx_of(i),
			 want ? "missing" : "still there");
		if (p) {
			t_eq(pc_page_index(p), idx_of(i));
			pc_put_page(p);
		}
	}
}

static void test_sparse_index(void)
{
	static const struct pc_mapping_ops none = { 0 };
	/* Room for PAGES beyond the pool's reserve (1/64, for writeback). */
	struct pc_config cfg = { .block_size = BS,
				 .budget = T_BUDGET(PAGES + PAGES / 64 + 64, BS),
				 .no_flusher = true };
	struct pc_cache *c;
	struct pc_mapping *m, *small;
	struct pc_stats st;
	uint64_t cut = idx_of(PAGES / 2);

	t_ok(pc_cache_create(&cfg, &c));
	t_ok(pc_mapping_create(c, &none, NULL, &m));
	for (uint64_t i = 0; i < PAGES; i++)
		add(m, idx_of(i));
	t_eq(pc_mapping_nrpages(m), PAGES);
	check_all(m, PAGES, UINT64_MAX);

	pc_get_stats(c, &st);
	t_eq(st.pages, PAGES);
	t_assert(st.meta_bytes / st.pages <= 64, "%llu bytes of metadata a page",
		 (unsigned long long)(st.meta_bytes / st.pages));
	t_eq(sizeof(struct pc_page), 56);

	/* Truncation by walking the table (a huge range). */
	pc_truncate(m, cut * BS);
	t_eq(pc_mapping_nrpages(m), PAGES / 2);
	check_all(m, PAGES, cut);
	pc_truncate(m, 0);
	t_eq(pc_mapping_nrpages(m), 0);

	/* Truncation by probing (a range no larger than the table). */
	t_ok(pc_mapping_create(c, &none, NULL, &small));
	for (uint64_t i = 0; i < 100; i++)
		add(small, i);
	pc_truncate(small, 60 * BS);
	t_eq(pc_mapping_nrpages(small), 60);
	t_eq(pc_find_get_page(small, 60), NULL);
	pc_mapping_destroy(small);
	pc_mapping_destroy(m);
	pc_get_stats(c, &st);
	t_eq(st.pages, 0);
	pc_cache_destroy(c);
}

T_MAIN(T_CASE(test_sparse_index))
