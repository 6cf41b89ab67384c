/*
 * t_eio.c - a read error reaches the reader: a block of the test device
 * that fails reads makes pc_read_cache_page return -EIO and leaves the
 * cached page with PG_error and without PG_uptodate; once the fault is
 * gone the next read succeeds and clears the error.
 */
#include "bdev_test.h"
#include "t_pc.h"

#include <errno.h>

#define BS 4096u

static void test_read_error_until_fixed(void)
{
	struct t_env e;
	struct pc_page *p;

	t_env_init(&e, BS, 64, 64, true);
	t_ok(bdev_wrap_fail(e.bd, 9 * BS, BS, BDEV_WRAP_FAIL_READ));
	p = (struct pc_page *)&e;
	t_eq(pc_read_cache_page(e.m, 9, &p), -EIO);
	p = pc_find_get_page(e.m, 9);
	t_assert(p, "failed page not cached");
	t_assert(PageError(p) && !PageUptodate(p) && !PageLocked(p),
		 "failed page state %#x", (unsigned int)atomic_load(&p->flags));
	pc_put_page(p);
	t_eq(pc_read_cache_page(e.m, 9, &p), -EIO);     /* tried again */
	t_eq(atomic_load(&e.own.readpage_calls), 2);

	t_ok(pc_read_cache_page(e.m, 8, &p));           /* neighbours fine */
	pc_put_page(p);
	t_ok(bdev_wrap_fail(e.bd, 0, 0, 0));
	t_ok(pc_read_cache_page(e.m, 9, &p));
	t_assert(PageUptodate(p) && !PageError(p), "recovered page state");
	t_assert(t_is_pattern(p->data, 9, BS), "recovered page data");
	pc_put_page(p);
	t_env_fini(&e);
}

T_MAIN(T_CASE(test_read_error_until_fixed))
