/*
 * t_readahead.c - readahead: a sequential reader gets windows that grow up
 * to the maximum, each handed to readpages as one batch and submitted to
 * the device in one call; a random reader gets only what it asks for;
 * nothing is read past the limit; pc_readahead reads a range in one batch;
 * a failing block inside a window fails only its own page.
 */
#include "bdev_test.h"
#include "pc_test.h"
#include "t_pc.h"

#include "util.h"

#include <errno.h>

#define BS 4096u
#define PAGES 1024u
#define RA_MAX 64u

static void init(struct t_env *e)
{
	struct pc_config cfg = {
		.budget = T_BUDGET(PAGES, BS),
		.ra_max_pages = RA_MAX,
		.no_flusher = true,
	};

	t_env_init_cfg(e, BS, 4096, &cfg);
}

static int read_ra(struct t_env *e, struct pc_ra_state *ra, uint64_t i,
		   uint64_t limit)
{
	struct pc_page *p;
	int rc = pc_read_page_ra(e->m, ra, i, 1, limit, &p);

	if (rc)
		return rc;
	t_assert(PageUptodate(p) && t_is_pattern(p->data, i, BS),
		 "page %llu has wrong data", (unsigned long long)i);
	pc_put_page(p);
	return 0;
}

static void test_sequential(void)
{
	struct t_env e;
	struct pc_ra_state ra;
	struct bdev_stats bs;
	struct pc_stats st;
	unsigned int nb, prev = 0;

	init(&e);
	pc_ra_init(&ra);
	for (uint64_t i = 0; i < 512; i++)
		t_ok(read_ra(&e, &ra, i, UINT64_MAX));
	nb = atomic_load(&e.own.nread_batches);
	t_assert(nb >= 4 && nb <= 16, "%u batches", nb);
	for (unsigned int k = 0; k < nb; k++) {
		unsigned int s = e.own.read_batches[k];

		t_assert(s >= prev && s <= RA_MAX, "batch %u of %u pages after %u",
			 k, s, prev);
		prev = s;
	}
	t_assert(e.own.read_batches[0] < RA_MAX && prev == RA_MAX,
		 "window did not grow: %u .. %u", e.own.read_batches[0], prev);
	t_eq(atomic_load(&e.own.readpage_calls), 0);
	bdev_get_stats(e.bd, &bs);
	/* One submission a window (io_uring may take two in one call). */
	t_assert(t_dev_kind() == T_DEV_URING ? bs.submits <= nb : bs.submits == nb,
		 "%llu submissions for %u windows", (unsigned long long)bs.submits, nb);
	pc_get_stats(e.c, &st);
	t_assert(st.readahead_pages >= 512, "readahead %llu",
		 (unsigned long long)st.readahead_pages);
	t_env_fini(&e);
}

static void test_random_and_limit(void)
{
	static const uint64_t idx[] = { 700, 900, 650, 1000, 720 };
	struct t_env e;
	struct pc_ra_state ra;
	struct pc_stats st;

	init(&e);
	pc_ra_init(&ra);
	t_ok(read_ra(&e, &ra, 300, UINT64_MAX));   /* not from the start */
	for (unsigned int k = 0; k < UT_ARRAY_SIZE(idx); k++)
		t_ok(read_ra(&e, &ra, idx[k], UINT64_MAX));
	pc_get_stats(e.c, &st);
	t_eq(st.readahead_pages, 6);
	t_eq(pc_mapping_nrpages(e.m), 6);

	pc_ra_init(&ra);
	for (uint64_t i = 0; i < 20; i++)
		t_ok(read_ra(&e, &ra, i, 20));
	for (uint64_t i = 20; i < 20 + RA_MAX; i++)
		t_eq(pc_find_get_page(e.m, i), NULL);

	t_eq(pc_readahead(e.m, 2000, 16, UINT64_MAX), 16);
	t_eq(pc_readahead(e.m, 2000, 16, UINT64_MAX), 0);
	t_eq(pc_readahead(e.m, 2010, 16, 2020), 4);
	t_eq(pc_find_get_page(e.m, 2020), NULL);
	for (uint64_t i = 2000; i < 2020; i++) {
		struct pc_page *p = pc_find_get_page(e.m, i);

		if (p)
			pc_wait_on_page_locked(p);      /* readahead does not wait */
		t_assert(p && PageUptodate(p), "page %llu not read",
			 (unsigned long long)i);
		pc_put_page(p);
	}
	t_env_fini(&e);
}

static void test_error(void)
{
	struct t_env e;
	struct pc_ra_state ra;
	struct pc_page *p;

	if (!t_dev_is_mem())
		t_skip_case("faults need the memory device");
	init(&e);
	t_ok(bdev_wrap_fail(e.bd, 130 * BS, BS, BDEV_WRAP_FAIL_READ));
	pc_ra_init(&ra);
	for (uint64_t i = 0; i < 200; i++)
		t_eq(read_ra(&e, &ra, i, UINT64_MAX), i == 130 ? -EIO : 0);
	p = pc_find_get_page(e.m, 130);
	t_assert(p && PageError(p) && !PageUptodate(p), "failed page state");
	pc_put_page(p);
	t_env_fini(&e);
}

T_MAIN(T_CASE(test_sequential), T_CASE(test_random_and_limit), T_CASE(test_error))
