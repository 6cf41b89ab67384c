/*
 * t_jnl_nofs.c - allocating pages while holding a handle.
 *
 * A small cache filled with dirty pages of a journalled file (writeback
 * declines them: they await journalling, which needs a transaction) and a
 * page the running transaction pins.  A thread holding a handle then needs
 * a page.  Nothing can be reclaimed, and writeback cannot help before the
 * handle's transaction ends; waiting for the flusher used to end in
 * -ENOMEM after some five seconds.  Inside a handle the allocation takes a
 * page of the reserve at once, and when that is gone too it fails within
 * a moment.
 */
#include "bdev_test.h"
#include "t_jnl.h"

#include <unistd.h>

#include "util.h"

#define BS      4096u
#define DEV     4096u
#define JSTART  100u
#define JBLOCKS 1024u
#define PAGES   64u

/* Journalled data awaiting journalling: writeback declines every page. */
static int decline_writepages(void *ctx, struct pc_mapping *m,
			      struct pc_page **pages, unsigned int n,
			      const struct pc_wbc *wbc)
{
	for (unsigned int i = 0; i < n; i++) {
		pc_set_page_dirty_default(pages[i]);
		pc_unlock_page(pages[i]);
	}
	return 0;
}

static const struct pc_mapping_ops journalled_ops = {
	.writepages = decline_writepages,
};

struct env {
	struct bdev *bd;
	struct pc_cache *cache;
	struct pc_mapping *meta, *file;
	uint64_t map[JBLOCKS];
	struct jnl *j;
};

static void setup(struct env *e)
{
	struct pc_config pcfg = {
		.block_size = BS,
		.budget = (uint64_t)PAGES * (BS + sizeof(struct pc_page)),
	};
	struct jnl_config jcfg = { .commit_interval_ms = 60000 };
	uint8_t uuid[16] = { 9 };

	t_ok(bdev_mem_create((uint64_t)DEV * BS, BS, &e->bd));
	pcfg.data_align = e->bd->dma_align;
	t_ok(pc_cache_create(&pcfg, &e->cache));
	t_ok(pc_mapping_create(e->cache, &pc_identity_ops, e->bd, &e->meta));
	t_ok(pc_mapping_create(e->cache, &journalled_ops, NULL, &e->file));
	t_ok(pc_mapping_set_flags(e->file, PC_MAPPING_WB_NEEDS_TX));
	for (uint32_t i = 0; i < JBLOCKS; i++)
		e->map[i] = JSTART + i;
	t_ok(jnl_format(e->bd, e->map, JBLOCKS, uuid, 0x5eedull));
	t_ok(jnl_open(e->bd, e->map, JBLOCKS, &jcfg, &e->j));
}

/* Change metadata block @blk in @h, as an allocation would. */
static void touch(struct env *e, struct jnl_handle *h, uint64_t blk)
{
	struct pc_page *pg;

	t_ok(pc_read_cache_page(e->meta, blk, &pg));
	t_ok(jnl_get_write_access(h, pg, blk));
	pc_lock_page(pg);
	tj_fill(pg->data, BS, blk, 1);
	pc_unlock_page(pg);
	t_ok(jnl_dirty(h, blk));
	pc_put_page(pg);
}

static uint64_t pages_cached(struct env *e)
{
	struct pc_stats st;

	pc_get_stats(e->cache, &st);
	return st.pages;
}

static void test_alloc_in_handle(void)
{
	struct env e;
	struct jnl_handle h;
	struct pc_stats st;
	struct pc_page *p;
	struct pc_page *held[64];
	uint64_t t0, ms, index = 0, reserve;
	unsigned int nheld = 0;
	int rc;

	setup(&e);
	pc_get_stats(e.cache, &st);
	reserve = st.max_pages / 64 < 4 ? 4 : st.max_pages / 64;
	t_ok(jnl_start(e.j, 4, &h));
	touch(&e, &h, 20);                  /* pinned by the transaction */
	/* write(): the file's pages dirty, all the cache but its reserve. */
	while (pages_cached(&e) < st.max_pages - reserve) {
		t_ok(pc_find_or_create_page(e.file, index++, &p));
		memset(p->data, 0x5a, BS);
		SetPageUptodate(p);
		pc_set_page_dirty(p);
		pc_unlock_page(p);
		pc_put_page(p);
	}

	/* The allocation a metadata read needs, inside the handle. */
	t0 = ut_now_ns();
	rc = pc_read_cache_page(e.meta, 21, &p);
	ms = (ut_now_ns() - t0) / 1000000u;
	t_assert(rc == 0, "a page inside a handle: %d (%s) after %llu ms", rc,
		 strerror(-rc), (unsigned long long)ms);
	t_assert(ms < 2000, "got it without waiting (%llu ms)",
		 (unsigned long long)ms);
	held[nheld++] = p;

	/* The reserve runs out (the pages stay in use): failing soon
	 * beats waiting in vain. */
	for (uint64_t blk = 22; rc == 0 && nheld < 2 * reserve + 1; blk++) {
		t0 = ut_now_ns();
		rc = pc_read_cache_page(e.meta, blk, &p);
		ms = (ut_now_ns() - t0) / 1000000u;
		if (rc == 0)
			held[nheld++] = p;
	}
	t_eq(rc, -ENOMEM);
	t_assert(nheld == reserve, "the reserve's %llu pages, then no more (%u)",
		 (unsigned long long)reserve, nheld);
	t_assert(ms < 2000, "failed without waiting (%llu ms)",
		 (unsigned long long)ms);
	t_ok(jnl_stop(&h));
	while (nheld)
		pc_put_page(held[--nheld]);

	pc_truncate(e.file, 0);
	pc_mapping_destroy(e.file);
	t_ok(jnl_close(e.j));
	pc_mapping_destroy(e.meta);
	pc_cache_destroy(e.cache);
	bdev_close(e.bd);
	printf("ok: a handle's allocation takes the reserve, and fails soon "
	       "when nothing can free a page\n");
}

/* Dirty pages the flusher can write: a handle's allocation waits for
 * them rather than take the reserve or fail. */
static void test_flusher_helps(void)
{
	struct env e;
	struct jnl_handle h;
	struct pc_stats st;
	struct pc_mapping *plain;
	struct pc_page *p, *held[64];
	unsigned int nheld = 0;
	uint64_t index = 3000;

	setup(&e);
	t_ok(pc_mapping_create(e.cache, &pc_identity_ops, e.bd, &plain));
	pc_get_stats(e.cache, &st);
	t_ok(jnl_start(e.j, 4, &h));
	touch(&e, &h, 20);
	/* Every page the cache lends to others dirty, one pass of writes. */
	while (index < 3000 + st.max_pages - 8) {
		t_ok(pc_find_or_create_page(plain, index++, &p));
		memset(p->data, 0x6b, BS);
		SetPageUptodate(p);
		pc_set_page_dirty(p);
		pc_unlock_page(p);
		pc_put_page(p);
	}
	for (uint64_t blk = 21; nheld < 16; blk++) {
		t_ok(pc_read_cache_page(e.meta, blk, &p));
		held[nheld++] = p;
	}
	t_ok(jnl_stop(&h));
	while (nheld)
		pc_put_page(held[--nheld]);
	t_ok(pc_sync_mapping(plain));
	pc_mapping_destroy(plain);
	pc_mapping_destroy(e.file);
	t_ok(jnl_close(e.j));
	pc_mapping_destroy(e.meta);
	pc_cache_destroy(e.cache);
	bdev_close(e.bd);
	printf("ok: inside a handle, allocations wait for writeback that "
	       "needs no transaction\n");
}

/* The flag counts only while the mapping has no dirty page. */
static void test_flags(void)
{
	struct env e;
	struct pc_page *p;

	setup(&e);
	t_eq(pc_mapping_set_flags(e.file, 0x80), -EINVAL);
	t_ok(pc_find_or_create_page(e.file, 0, &p));
	SetPageUptodate(p);
	pc_set_page_dirty(p);
	pc_unlock_page(p);
	pc_put_page(p);
	t_eq(pc_mapping_set_flags(e.file, 0), -EBUSY);
	pc_truncate(e.file, 0);
	t_ok(pc_mapping_set_flags(e.file, 0));
	pc_mapping_destroy(e.file);
	t_ok(jnl_close(e.j));
	pc_mapping_destroy(e.meta);
	pc_cache_destroy(e.cache);
	bdev_close(e.bd);
	printf("ok: mapping flags change only without dirty pages\n");
}

/* A hang fails rather than stalls. */
T_MAIN_SETUP(alarm(60), T_CASE(test_alloc_in_handle), T_CASE(test_flusher_helps),
	     T_CASE(test_flags))
