/*
 * t_pc_ops.c - the owner's operations as the cache calls them, with an owner
 * that completes writes later, from the test: set_page_dirty goes through
 * the owner (which sets PG_fs_misc, as ext3 did for journalled data);
 * without writepages each page goes to writepage; pc_write_and_wait_range
 * and pc_wait_on_page_writeback wait for writes in flight; the flusher
 * starts writeback when kicked; readahead without readpages uses
 * readpage; a mapping without readpage fails reads with -EIO; a
 * mapping takes another table of operations only while it is clean.
 */
#include "pc_test.h"
#include "t_pc.h"

#include <errno.h>
#include <sched.h>
#include <string.h>

#define BS 4096u

static struct {
	pthread_mutex_t lock;
	struct pc_page *pending[64];
	unsigned int n;
	_Atomic unsigned int writepage_calls, readpage_calls, dirty_calls;
	_Atomic bool done;
	struct pc_mapping *m;
} own = { .lock = PTHREAD_MUTEX_INITIALIZER };

static int writepage(void *ctx, struct pc_page *p, const struct pc_wbc *wbc)
{
	(void)ctx;
	(void)wbc;
	atomic_fetch_add(&own.writepage_calls, 1);
	pc_set_page_writeback(p);
	pc_unlock_page(p);
	pthread_mutex_lock(&own.lock);
	own.pending[own.n++] = p;
	pthread_mutex_unlock(&own.lock);
	return 0;
}

static int readpage(void *ctx, struct pc_page *p)
{
	(void)ctx;
	atomic_fetch_add(&own.readpage_calls, 1);
	t_pattern(p->data, pc_page_index(p), BS);
	pc_end_read(p, 0);
	return 0;
}

static int set_page_dirty(void *ctx, struct pc_page *p)
{
	t_assert(ctx == &own, "ctx");
	atomic_fetch_add(&own.dirty_calls, 1);
	SetPageMiscFS(p);
	return pc_set_page_dirty_default(p);
}

static const struct pc_mapping_ops ops = {
	.readpage = readpage,
	.writepage = writepage,
	.set_page_dirty = set_page_dirty,
};

static unsigned int pending(void)
{
	unsigned int n;

	pthread_mutex_lock(&own.lock);
	n = own.n;
	pthread_mutex_unlock(&own.lock);
	return n;
}

static void complete_all(void)
{
	pthread_mutex_lock(&own.lock);
	for (unsigned int i = 0; i < own.n; i++)
		pc_end_page_writeback(own.pending[i], 0);
	own.n = 0;
	pthread_mutex_unlock(&own.lock);
}

static struct pc_page *dirty(uint64_t i)
{
	struct pc_page *p;

	t_ok(pc_read_cache_page(own.m, i, &p));
	pc_lock_page(p);
	t_eq(pc_set_page_dirty(p), 1);
	t_eq(pc_set_page_dirty(p), 0);
	t_assert(PageDirty(p) && PageMiscFS(p), "owner's dirtying");
	pc_unlock_page(p);
	return p;
}

static void *syncer(void *arg)
{
	(void)arg;
	t_ok(pc_write_and_wait_range(own.m, 0, 4 * BS));
	atomic_store(&own.done, true);
	return NULL;
}

static void *wb_waiter(void *arg)
{
	pc_wait_on_page_writeback(arg);
	t_assert(!PageWriteback((struct pc_page *)arg), "woken early");
	atomic_store(&own.done, true);
	return NULL;
}

static void check_wait_for_writes(void)
{
	struct pc_page *p[4];
	pthread_t t;

	for (int i = 0; i < 4; i++)
		p[i] = dirty((uint64_t)i);
	t_eq(atomic_load(&own.dirty_calls), 8);
	t = t_thread(syncer, NULL);
	while (pending() < 4)
		sched_yield();
	t_eq(atomic_load(&own.writepage_calls), 4);
	t_assert(!atomic_load(&own.done), "sync returned with writes in flight");
	t_assert(PageWriteback(p[0]) && !PageDirty(p[0]), "page state");
	complete_all();
	t_join(t);
	t_assert(atomic_load(&own.done), "sync did not return");

	atomic_store(&own.done, false);
	pc_put_page(p[0]);
	p[0] = dirty(0);
	t_ok(pc_write_and_wait_range(own.m, 4 * BS, 8 * BS));   /* not page 0 */
	t_eq(pending(), 0);
	pc_set_dirty_expire(pc_mapping_cache(own.m), 0);
	pc_flusher_kick(pc_mapping_cache(own.m));
	while (pending() < 1)                   /* the flusher starts it */
		sched_yield();
	t = t_thread(wb_waiter, p[0]);
	t_assert(!atomic_load(&own.done), "waiter returned during writeback");
	complete_all();
	t_join(t);
	t_assert(PageMiscFS(p[0]), "writeback touched PG_fs_misc");
	for (int i = 0; i < 4; i++)
		pc_put_page(p[i]);
}

static struct pc_cache *cache(void)
{
	struct pc_config cfg = { .block_size = BS, .budget = T_BUDGET(64, BS),
				 .dirty_expire_ms = 3600 * 1000 };
	struct pc_cache *c;

	t_ok(pc_cache_create(&cfg, &c));
	return c;
}

/* Readahead's readpage calls come on top of the four reads before it. */
static void test_owner_ops(void)
{
	struct pc_cache *c = cache();

	t_eq(pc_block_size(c), BS);
	t_ok(pc_mapping_create(c, &ops, &own, &own.m));
	t_assert(pc_mapping_ctx(own.m) == &own, "ctx");
	t_assert(pc_mapping_cache(own.m) == c, "cache");
	check_wait_for_writes();

	t_eq(pc_readahead(own.m, 10, 8, UINT64_MAX), 8);
	t_eq(atomic_load(&own.readpage_calls), 4 + 8);
	pc_mapping_destroy(own.m);
	pc_cache_destroy(c);
}

static void test_no_readpage(void)
{
	static const struct pc_mapping_ops no_read = { 0 };
	struct pc_cache *c = cache();
	struct pc_mapping *m;
	struct pc_page *p;

	t_ok(pc_mapping_create(c, &no_read, NULL, &m));
	t_eq(pc_read_cache_page(m, 0, &p), -EIO);
	pc_mapping_destroy(m);
	pc_cache_destroy(c);
}

static _Atomic unsigned int other_dirty_calls;

static int other_set_page_dirty(void *ctx, struct pc_page *p)
{
	(void)ctx;
	atomic_fetch_add(&other_dirty_calls, 1);
	return pc_set_page_dirty_default(p);
}

/* A mapping with a page dirty or under writeback keeps its table; once
 * clean it takes another, which the next call uses. */
static void test_set_ops(void)
{
	static const struct pc_mapping_ops other = {
		.readpage = readpage,
		.writepage = writepage,
		.set_page_dirty = other_set_page_dirty,
	};
	struct pc_cache *c = cache();
	unsigned int mine;
	struct pc_page *p;

	t_ok(pc_mapping_create(c, &ops, &own, &own.m));
	p = dirty(0);
	t_eq(pc_mapping_set_ops(own.m, &other), -EBUSY);
	t_ok(pc_write_range(own.m, 0, BS));       /* under writeback now */
	t_eq(pending(), 1);
	t_eq(pc_mapping_set_ops(own.m, &other), -EBUSY);
	complete_all();
	t_ok(pc_mapping_set_ops(own.m, &other));
	mine = atomic_load(&own.dirty_calls);
	pc_lock_page(p);
	t_eq(pc_set_page_dirty(p), 1);
	pc_unlock_page(p);
	t_eq(atomic_load(&other_dirty_calls), 1);
	t_eq(atomic_load(&own.dirty_calls), mine);
	pc_put_page(p);
	pc_mapping_destroy(own.m);
	pc_cache_destroy(c);
}

T_MAIN(T_CASE(test_owner_ops), T_CASE(test_no_readpage), T_CASE(test_set_ops))
