/*
 * t_jnl.c - helpers of the journal tests.
 */
#include "bdev_test.h"
#include "t_jnl.h"

#include <endian.h>

#include "util.h"

void tj_setup(struct tj *t, uint32_t bs, uint64_t dev_blocks, uint64_t jstart,
	      uint32_t jblocks, bool gap)
{
	struct pc_config pcfg = { .block_size = bs, .budget = 8u << 20,
				  .no_flusher = true };
	uint8_t uuid[16] = { 1, 2, 3 };

	memset(t, 0, sizeof(*t));
	t->bs = bs;
	t->nblocks = jblocks;
	t->bd = t_dev_create(dev_blocks * bs, bs);
	pcfg.data_align = t->bd->dma_align;
	t_ok(pc_cache_create(&pcfg, &t->cache));
	t_ok(pc_mapping_create(t->cache, &pc_identity_ops, t->bd, &t->meta));
	t->map = calloc(jblocks, sizeof(*t->map));
	t_assert(t->map, "no memory");
	for (uint32_t i = 0; i < jblocks; i++)
		t->map[i] = jstart + i + (gap && i >= jblocks / 2 ? 7 : 0);
	t_assert(t->map[jblocks - 1] < dev_blocks, "journal fits the device");
	t_ok(jnl_format(t->bd, t->map, jblocks, uuid, 0xfeedbeefull));
	t->cfg.commit_interval_ms = 60000;
	/* Checkpoints only when a handle needs room: tests count them. */
	t->cfg.checkpoint_percent = 100;
}

void tj_open(struct tj *t)
{
	t_ok(jnl_open(t->bd, t->map, t->nblocks, &t->cfg, &t->j));
}

void tj_close(struct tj *t)
{
	t_ok(jnl_close(t->j));
	t->j = NULL;
}

void tj_teardown(struct tj *t)
{
	if (t->j)
		tj_close(t);
	pc_mapping_destroy(t->meta);
	pc_cache_destroy(t->cache);
	bdev_close(t->bd);
	free(t->map);
}

void tj_fill(void *buf, uint32_t bs, uint64_t blk, uint64_t stamp)
{
	uint64_t *w = buf, x = stamp * 0x9E3779B97F4A7C15ull ^ blk;

	w[0] = htole64(0x424c4b54u);       /* "TBLK" */
	w[1] = htole64(blk);
	w[2] = htole64(stamp);
	for (uint32_t i = 3; i < bs / 8; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		w[i] = x;
	}
}

void tj_write(struct tj *t, struct jnl_handle *h, uint64_t blk, uint64_t stamp)
{
	struct pc_page *pg;

	t_ok(pc_read_cache_page(t->meta, blk, &pg));
	t_ok(jnl_get_write_access(h, pg, blk));
	/* Handles of one transaction may share a block: its content changes
	 * under the page lock, as the filesystem's will. */
	pc_lock_page(pg);
	tj_fill(pg->data, t->bs, blk, stamp);
	pc_unlock_page(pg);
	t_ok(jnl_dirty(h, blk));
	pc_put_page(pg);
}

uint64_t tj_stamp_of(struct bdev *bd, uint32_t bs, uint64_t blk)
{
	uint8_t *got = bdev_alloc_buf(bs), *want = bdev_alloc_buf(bs);
	uint64_t stamp = UINT64_MAX, w[3];

	t_ok(bdev_read(bd, blk * bs, got, bs));
	memcpy(w, got, sizeof(w));
	memset(want, 0, bs);
	if (!memcmp(got, want, bs)) {
		stamp = 0;
	} else if (le64toh(w[0]) == 0x424c4b54u && le64toh(w[1]) == blk) {
		tj_fill(want, bs, blk, le64toh(w[2]));
		if (!memcmp(got, want, bs))
			stamp = le64toh(w[2]);
	}
	bdev_free_buf(got);
	bdev_free_buf(want);
	return stamp;
}

bool tj_holds(struct bdev *bd, uint32_t bs, uint64_t blk, uint64_t stamp)
{
	return tj_stamp_of(bd, bs, blk) == stamp;
}

struct bdev *tj_crash_now(struct tj *t, struct jnl_recovery *info)
{
	struct bdev *img;

	t_ok(bdev_wrap_crash_image(t->bd, bdev_wrap_log_count(t->bd),
				  BDEV_CUT_LOSE_ALL, 0, &img));
	t_ok(jnl_recover(img, t->map, t->nblocks, 0, info));
	return img;
}
