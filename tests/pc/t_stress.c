/*
 * t_stress.c - many threads against one small cache with the flusher
 * running: readers (locked and lock-free), writers that dirty pages,
 * a truncator and invalidator, a sequential reader with readahead and a
 * syncer, over two mappings of one memory device.  Every page a reader
 * sees under its lock is whole (one version throughout), and after a final
 * sync so is every block on the device.  Meant for ASan and TSan builds.
 */
#include "bdev_test.h"
#include "pc_test.h"
#include "t_pc.h"

#include "util.h"

#include <string.h>

#define BS 1024u
#define HALF 512u                  /* blocks per mapping */
#define PAGES 96u
#define ITERS 20000u

struct blk_hdr {
	uint64_t block, version;
};

static struct bdev *bd;
static struct pc_cache *cache;
static struct pc_mapping *maps[2];
static _Atomic unsigned int checked;

/* Mapping k holds device blocks [k * HALF, (k + 1) * HALF). */
static int map_block(void *ctx, struct pc_mapping *m, uint64_t index,
		     bool write, uint64_t *block)
{
	uint64_t base = (uint64_t)(uintptr_t)ctx;

	(void)m;
	(void)write;
	if (index >= HALF)
		return -EIO;
	*block = base + index;
	return 0;
}

static int s_readpages(void *ctx, struct pc_mapping *m, struct pc_page **pages,
		       unsigned int n, const struct pc_rdc *rdc)
{
	return pc_block_readpages(bd, map_block, ctx, m, pages, n, rdc);
}

static int s_readpage(void *ctx, struct pc_page *page)
{
	return s_readpages(ctx, pc_page_mapping(page), &page, 1, NULL);
}

static int s_writepages(void *ctx, struct pc_mapping *m, struct pc_page **pages,
			unsigned int n, const struct pc_wbc *wbc)
{
	return pc_block_writepages(bd, map_block, ctx, m, pages, n, wbc);
}

static const struct pc_mapping_ops s_ops = {
	.readpage = s_readpage,
	.readpages = s_readpages,
	.writepages = s_writepages,
};

static void fill(void *data, uint64_t block, uint64_t version)
{
	struct blk_hdr h = { block, version };
	unsigned char *b = data;

	memcpy(b, &h, sizeof(h));
	for (uint32_t k = sizeof(h); k < BS; k++)
		b[k] = (unsigned char)(version * 7 + k + block);
}

static uint64_t check_whole(const void *data, uint64_t block)
{
	const unsigned char *b = data;
	struct blk_hdr h;

	memcpy(&h, b, sizeof(h));
	t_assert(h.block == block, "block %llu holds block %llu",
		 (unsigned long long)block, (unsigned long long)h.block);
	for (uint32_t k = sizeof(h); k < BS; k++)
		t_assert(b[k] == (unsigned char)(h.version * 7 + k + block),
			 "block %llu torn at byte %u", (unsigned long long)block, k);
	return h.version;
}

static uint64_t next_rand(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* Lock a referenced page still in @k; false (page put) if it left. */
static bool lock_in(struct pc_page *p, int k)
{
	pc_lock_page(p);
	if (pc_page_mapping(p) == maps[k] && PageUptodate(p))
		return true;
	pc_unlock_page(p);
	pc_put_page(p);
	return false;
}

static void read_one(int k, uint64_t i)
{
	struct pc_page *p;

	t_ok(pc_read_cache_page(maps[k], i, &p));
	if (!lock_in(p, k))
		return;
	check_whole(p->data, k * HALF + i);
	atomic_fetch_add(&checked, 1);
	pc_unlock_page(p);
	pc_put_page(p);
}

static void *reader(void *arg)
{
	uint64_t s = (uintptr_t)arg * 7919 + 1;

	for (unsigned int n = 0; n < ITERS; n++) {
		uint64_t r = next_rand(&s);
		int k = (int)(r & 1);
		struct pc_page *p;

		if (r & 2) {
			read_one(k, (r >> 8) % HALF);
		} else if ((p = pc_find_get_page(maps[k], (r >> 8) % HALF))) {
			pc_put_page(p);
		}
	}
	return NULL;
}

static void write_one(int k, uint64_t i)
{
	struct pc_page *p;
	uint64_t v;

	t_ok(pc_read_cache_page(maps[k], i, &p));
	if (!lock_in(p, k))
		return;
	pc_wait_on_page_writeback(p);   /* stable pages: never change data
					   that is being written */
	v = check_whole(p->data, k * HALF + i);
	fill(p->data, k * HALF + i, v + 1);
	pc_set_page_dirty(p);
	pc_unlock_page(p);
	pc_put_page(p);
}

static void *writer(void *arg)
{
	uint64_t s = (uintptr_t)arg * 104729 + 3;

	for (unsigned int n = 0; n < ITERS; n++) {
		uint64_t r = next_rand(&s);

		write_one((int)(r & 1), (r >> 8) % HALF);
		if (n % 64 == 0)
			pc_balance_dirty(cache);
	}
	return NULL;
}

static void *truncator(void *arg)
{
	uint64_t s = 12345;

	(void)arg;
	for (unsigned int n = 0; n < ITERS / 20; n++) {
		uint64_t r = next_rand(&s);

		pc_truncate(maps[1], (r % HALF) * BS);
		pc_invalidate(maps[0], ((r >> 16) % HALF) * BS);
	}
	return NULL;
}

static void *seq_reader(void *arg)
{
	struct pc_ra_state ra;

	(void)arg;
	for (unsigned int pass = 0; pass < 4; pass++) {
		pc_ra_init(&ra);
		for (uint64_t i = 0; i < HALF; i++) {
			struct pc_page *p;

			t_ok(pc_read_page_ra(maps[1], &ra, i, 1, HALF, &p));
			if (!lock_in(p, 1))
				continue;
			check_whole(p->data, HALF + i);
			pc_unlock_page(p);
			pc_put_page(p);
		}
	}
	return NULL;
}

static void *syncer(void *arg)
{
	(void)arg;
	for (unsigned int n = 0; n < ITERS / 50; n++) {
		t_ok(pc_sync_mapping(maps[0]));
		t_ok(pc_write_and_wait_range(maps[1], 0, HALF / 2 * BS));
		if (n % 10 == 0)
			t_ok(pc_sync_cache(cache));
	}
	return NULL;
}

static void setup(void)
{
	struct pc_config cfg = {
		.block_size = BS,
		.budget = T_BUDGET(PAGES, BS),
		.dirty_expire_ms = 5,
		.flush_interval_ms = 5,
		.ra_max_pages = 16,
	};

	t_ok(bdev_mem_create(2 * HALF * BS, BS, &bd));
	for (uint64_t b = 0; b < 2 * HALF; b++)
		fill((char *)bdev_mem_data(bd) + b * BS, b, 0);
	t_ok(pc_cache_create(&cfg, &cache));
	for (int k = 0; k < 2; k++)
		t_ok(pc_mapping_create(cache, &s_ops,
				       (void *)(uintptr_t)(k * HALF), &maps[k]));
}

static void test_threads_keep_pages_whole(void)
{
	void *(*fns[])(void *) = { reader, reader, writer, writer, truncator,
				   seq_reader, syncer };
	pthread_t t[UT_ARRAY_SIZE(fns)];
	struct pc_stats st;

	setup();
	for (unsigned int i = 0; i < UT_ARRAY_SIZE(fns); i++)
		t[i] = t_thread(fns[i], (void *)(uintptr_t)(i + 1));
	for (unsigned int i = 0; i < UT_ARRAY_SIZE(fns); i++)
		t_join(t[i]);

	t_ok(pc_sync_cache(cache));
	pc_get_stats(cache, &st);
	t_eq(st.dirty, 0);
	t_eq(st.writeback, 0);
	t_assert(st.pages <= PAGES && st.in_use <= st.budget, "over budget");
	t_assert(st.evictions > 0 && st.written > 0 && st.readahead_pages > 0,
		 "the run did not exercise reclaim, writeback and readahead");
	t_assert(atomic_load(&checked) > 0, "readers checked nothing");
	for (uint64_t b = 0; b < 2 * HALF; b++)
		check_whole((char *)bdev_mem_data(bd) + b * BS, b);
	for (int k = 0; k < 2; k++)
		pc_mapping_destroy(maps[k]);
	pc_cache_destroy(cache);
	bdev_close(bd);
}

T_MAIN(T_CASE(test_threads_keep_pages_whole))
