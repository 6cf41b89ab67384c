/*
 * t_flags.c - the generated flag accessors: every flag has the whole
 * family (PageX, SetPageX, ClearPageX, TestSetPageX, TestClearPageX), each
 * touches only its own bit, and PG_fs_misc can be waited on: waiters of
 * wait_on_page_fs_misc() return once end_page_fs_misc() clears it.
 */
#include "pc_test.h"
#include "t_pc.h"

#include <sched.h>
#include <string.h>

typedef bool (*test_fn)(const struct pc_page *);
typedef void (*set_fn)(struct pc_page *);
typedef bool (*tas_fn)(struct pc_page *);

static void check_flag(const char *name, unsigned int bit, test_fn test,
		       set_fn set, set_fn clear, tas_fn test_set,
		       tas_fn test_clear)
{
	struct pc_page p;

	memset(&p, 0, sizeof(p));
	atomic_store(&p.flags, 0xffffffffu & ~(1u << bit));
	t_assert(!test(&p), "%s: set with only the other bits set", name);
	set(&p);
	t_assert(test(&p), "%s: Set did not set", name);
	t_eq(atomic_load(&p.flags), 0xffffffffu);
	clear(&p);
	t_assert(!test(&p), "%s: Clear did not clear", name);
	t_eq(atomic_load(&p.flags), 0xffffffffu & ~(1u << bit));

	atomic_store(&p.flags, 0);
	t_assert(!test_set(&p), "%s: TestSet of a clear bit said set", name);
	t_assert(test_set(&p), "%s: TestSet of a set bit said clear", name);
	t_eq(atomic_load(&p.flags), 1u << bit);
	t_assert(test_clear(&p), "%s: TestClear of a set bit said clear", name);
	t_assert(!test_clear(&p), "%s: TestClear of a clear bit said set", name);
	t_eq(atomic_load(&p.flags), 0);
}

#define CHECK_FLAG(Name, bit)                                               \
	check_flag(#Name, bit, Page##Name, SetPage##Name, ClearPage##Name, \
		   TestSetPage##Name, TestClearPage##Name);                \
	count++;

static struct pc_page waited;
static _Atomic int waiting, woke;

static void *misc_waiter(void *arg)
{
	(void)arg;
	atomic_fetch_add(&waiting, 1);
	wait_on_page_fs_misc(&waited);
	t_assert(!PageMiscFS(&waited), "woken with the flag still set");
	atomic_fetch_add(&woke, 1);
	return NULL;
}

static void test_fs_misc_wait(void)
{
	pthread_t t[3];

	memset(&waited, 0, sizeof(waited));
	wait_on_page_fs_misc(&waited);          /* clear: returns at once */
	SetPageMiscFS(&waited);
	SetPageDirty(&waited);
	for (int i = 0; i < 3; i++)
		t[i] = t_thread(misc_waiter, NULL);
	while (atomic_load(&waiting) < 3)
		sched_yield();
	t_eq(atomic_load(&woke), 0);
	end_page_fs_misc(&waited);
	for (int i = 0; i < 3; i++)
		t_join(t[i]);
	t_eq(atomic_load(&woke), 3);
	t_assert(PageDirty(&waited), "end_page_fs_misc touched another bit");
}

static void test_accessors(void)
{
	int count = 0;

	PC_PAGE_FLAGS(CHECK_FLAG)
	t_eq(count, 11);
	t_eq(PG_fs_misc, 10);
	t_assert(PG_NR_FLAGS <= 32, "flags do not fit the word");
}

T_MAIN(T_CASE(test_accessors), T_CASE(test_fs_misc_wait))
