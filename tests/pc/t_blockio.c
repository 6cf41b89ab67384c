/*
 * t_blockio.c - the block-mapping helpers and the ready-made identity
 * operations: holes read as zeroes and write nothing, a mapping error or a
 * block beyond the device fails only its own page (with a log line for
 * the latter), runs of consecutive blocks become one request each within
 * one submission, a mapping with pc_identity_ops reads and writes the
 * device blocks of its page indexes, and a read of only what the reader
 * waits for completes before readpages returns (submitted and reaped in
 * the reader's thread) while a readahead window does not, and the last
 * write of an integrity pass (fsync) likewise, unlike a write that
 * nobody waits for.
 */
#include "bdev_test.h"
#include "pc_test.h"
#include "t_pc.h"

#include <errno.h>
#include <string.h>

#define BS 1024u
#define BLOCKS 256u

static struct bdev *bd;

/* Index i: block 2 * (i / 8) * 8 + i % 8 (runs of 8 with gaps), except
 * i % 16 == 13 (a hole), i == 30 (an error), i == 31 (beyond the end). */
static int map(void *ctx, struct pc_mapping *m, uint64_t index, bool write,
	       uint64_t *block)
{
	(void)ctx;
	(void)m;
	(void)write;
	if (index % 16 == 13)
		return PC_BLOCK_HOLE;
	if (index == 30)
		return -ENOSPC;
	*block = index == 31 ? BLOCKS : 2 * (index / 8) * 8 + index % 8;
	return 0;
}

static int readpages(void *ctx, struct pc_mapping *m, struct pc_page **pages,
		     unsigned int n, const struct pc_rdc *rdc)
{
	return pc_block_readpages(bd, map, ctx, m, pages, n, rdc);
}

static int writepages(void *ctx, struct pc_mapping *m, struct pc_page **pages,
		      unsigned int n, const struct pc_wbc *wbc)
{
	return pc_block_writepages(bd, map, ctx, m, pages, n, wbc);
}

static const struct pc_mapping_ops ops = {
	.readpages = readpages,
	.writepages = writepages,
};

static void dirty_page(struct pc_mapping *m, uint64_t index)
{
	struct pc_page *p;

	t_ok(pc_find_or_create_page(m, index, &p));
	SetPageUptodate(p);
	pc_set_page_dirty(p);
	pc_unlock_page(p);
	pc_put_page(p);
}

static void check_mapped(struct pc_cache *c)
{
	struct pc_mapping *m;
	struct bdev_stats a, b;
	unsigned char zero[BS] = { 0 };

	t_ok(pc_mapping_create(c, &ops, NULL, &m));
	bdev_get_stats(bd, &a);
	t_log_capture();
	t_eq(pc_readahead(m, 0, 32, UINT64_MAX), 32);
	bdev_get_stats(bd, &b);
	t_eq(b.submits - a.submits, 1);
	t_eq(b.reads - a.reads, 5);     /* 0-7, 8-12, 14-15, 16-23, 24-28 */
	t_eq(t_log_count("maps to block 256, beyond the device"), 1);
	for (uint64_t i = 0; i < 32; i++) {
		struct pc_page *p = pc_find_get_page(m, i);
		uint64_t blk = 2 * (i / 8) * 8 + i % 8;

		t_assert(p, "page %llu", (unsigned long long)i);
		if (i == 30 || i == 31)
			t_assert(PageError(p) && !PageUptodate(p), "bad page %llu",
				 (unsigned long long)i);
		else if (i % 16 == 13)
			t_assert(PageUptodate(p) && !memcmp(p->data, zero, BS),
				 "hole");
		else
			t_assert(PageUptodate(p) && t_is_pattern(p->data, blk, BS),
				 "page %llu", (unsigned long long)i);
		if (PageUptodate(p) && i < 30) {
			pc_lock_page(p);
			t_pattern(p->data, 1000 + i, BS);
			pc_set_page_dirty(p);
			pc_unlock_page(p);
		}
		pc_put_page(p);
	}
	bdev_get_stats(bd, &a);
	t_ok(pc_sync_mapping(m));
	bdev_get_stats(bd, &b);
	t_eq(b.writes - a.writes, 5);
	for (uint64_t i = 0; i < 30; i++) {
		uint64_t blk = 2 * (i / 8) * 8 + i % 8;
		const void *d = (char *)bdev_mem_data(bd) + blk * BS;

		if (i % 16 != 13)
			t_assert(t_is_pattern(d, 1000 + i, BS), "block %llu",
				 (unsigned long long)blk);
	}
	/* A write the map refuses is reported by the next sync. */
	dirty_page(m, 30);
	t_eq(pc_sync_mapping(m), -ENOSPC);
	pc_mapping_destroy(m);
}

static void check_identity(struct pc_cache *c)
{
	struct pc_mapping *m;
	struct pc_page *p;

	t_ok(pc_mapping_create(c, &pc_identity_ops, bd, &m));
	t_ok(pc_read_cache_page(m, 200, &p));
	t_assert(t_is_pattern(p->data, 200, BS), "identity read");
	pc_lock_page(p);
	t_pattern(p->data, 4242, BS);
	pc_set_page_dirty(p);
	pc_unlock_page(p);
	pc_put_page(p);
	t_eq(pc_readahead(m, 100, 8, UINT64_MAX), 8);
	t_ok(pc_sync_mapping(m));
	t_assert(t_is_pattern((char *)bdev_mem_data(bd) + 200 * BS, 4242, BS),
		 "identity write");
	p = pc_find_get_page(m, 107);
	t_assert(p && t_is_pattern(p->data, 107, BS), "identity readahead");
	pc_put_page(p);
	pc_mapping_destroy(m);
}

/* On a device that completes after a delay, on a thread of its own:
 * whether the batch was complete when readpages returned. */
static struct bdev *slow;
static bool done_on_return;

static int slow_readpages(void *ctx, struct pc_mapping *m, struct pc_page **pages,
			  unsigned int n, const struct pc_rdc *rdc)
{
	int rc = pc_block_readpages(slow, pc_block_map_identity, ctx, m, pages, n,
				    rdc);

	done_on_return = true;
	for (unsigned int i = 0; i < n; i++)
		done_on_return &= PageUptodate(pages[i]);
	return rc;
}

/* Whether every page of the batch was written when writepages returned. */
static int slow_writepages(void *ctx, struct pc_mapping *m, struct pc_page **pages,
			   unsigned int n, const struct pc_wbc *wbc)
{
	int rc = pc_block_writepages(slow, pc_block_map_identity, ctx, m, pages, n,
				     wbc);

	done_on_return = true;
	for (unsigned int i = 0; i < n; i++)
		done_on_return &= !PageWriteback(pages[i]);
	return rc;
}

static const struct pc_mapping_ops slow_ops = {
	.readpages = slow_readpages,
	.writepages = slow_writepages,
};

static void check_waited_read(struct pc_cache *c)
{
	struct pc_mapping *m;
	struct pc_ra_state ra;
	struct pc_page *p;

	t_ok(bdev_mem_create(BLOCKS * BS, BS, &slow));
	t_ok(bdev_mem_async(slow, 3000, 1));
	t_ok(pc_mapping_create(c, &slow_ops, NULL, &m));
	pc_ra_init(&ra);
	t_ok(pc_read_page_ra(m, &ra, 0, 1, BLOCKS, &p));   /* a stream starts */
	t_assert(!done_on_return, "a readahead window was read synchronously");
	pc_put_page(p);
	t_ok(pc_read_page_ra(m, &ra, 200, 2, BLOCKS, &p)); /* a random read */
	t_assert(done_on_return, "a random read was left to another thread");
	pc_put_page(p);
	dirty_page(m, 50);
	t_ok(pc_write_range(m, 50 * BS, 51 * BS));       /* not waited for */
	t_assert(!done_on_return, "a write nobody waits for was reaped at once");
	t_ok(pc_wait_range(m, 50 * BS, 51 * BS));
	dirty_page(m, 60);
	t_ok(pc_write_and_wait_range(m, 60 * BS, 61 * BS));
	t_assert(done_on_return, "an fsync's write was left to another thread");
	pc_mapping_destroy(m);
	bdev_close(slow);
}

/* Each case on a device of its own holding the pattern, with a cache. */
static void with_cache(void (*check)(struct pc_cache *))
{
	struct pc_config cfg = { .block_size = BS, .budget = T_BUDGET(128, BS),
				 .no_flusher = true };
	struct pc_cache *c;

	t_ok(bdev_mem_create(BLOCKS * BS, BS, &bd));
	for (uint64_t i = 0; i < BLOCKS; i++)
		t_pattern((char *)bdev_mem_data(bd) + i * BS, i, BS);
	t_ok(pc_cache_create(&cfg, &c));
	check(c);
	pc_cache_destroy(c);
	bdev_close(bd);
}

static void test_mapped(void)
{
	with_cache(check_mapped);
}

static void test_identity(void)
{
	with_cache(check_identity);
}

static void test_waited_read(void)
{
	with_cache(check_waited_read);
}

T_MAIN(T_CASE(test_mapped), T_CASE(test_identity), T_CASE(test_waited_read))
