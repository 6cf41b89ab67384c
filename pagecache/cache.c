/*
 * cache.c - creating and destroying a cache, its configuration, statistics.
 */
#include "pc_i.h"

#include "util.h"

#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define MIN_PAGES 64u
#define DEFAULT_EXPIRE_MS 5000u
#define DEFAULT_INTERVAL_MS 1000u
#define DEFAULT_BG_PCT 20u
#define DEFAULT_MAX_PCT 50u
#define DEFAULT_RA_BYTES (4u << 20)

static uint32_t or_default(uint32_t v, uint32_t def)
{
	return v ? v : def;
}

static int check_config(const struct pc_config *cfg)
{
	if (!UT_IS_POW2(cfg->block_size) || cfg->block_size < 512 ||
	    cfg->block_size > 65536) {
		mlog_err("page cache: block size %u is not a power of two in "
			 "[512, 65536]", cfg->block_size);
		return -EINVAL;
	}
	if (cfg->data_align && (!UT_IS_POW2(cfg->data_align) ||
				cfg->data_align > 65536)) {
		mlog_err("page cache: bad data alignment %u", cfg->data_align);
		return -EINVAL;
	}
	if (cfg->dirty_bg_pct > 100 || cfg->dirty_max_pct > 100) {
		mlog_err("page cache: dirty thresholds are percentages");
		return -EINVAL;
	}
	return 0;
}

/* Sizes and thresholds from the configuration. */
static int size_cache(struct pc_cache *c, const struct pc_config *cfg)
{
	uint64_t pages;

	c->block_size = cfg->block_size;
	c->stride = UT_MAX(cfg->block_size, cfg->data_align);
	c->page_cost = c->stride + sizeof(struct pc_page);
	c->budget = cfg->budget;
	pages = cfg->budget / c->page_cost;
	if (pages < MIN_PAGES) {
		mlog_err("page cache: a budget of %llu bytes holds fewer than "
			 "%u pages of %u bytes", (unsigned long long)cfg->budget,
			 MIN_PAGES, c->block_size);
		return -EINVAL;
	}
	c->max_pages = (uint32_t)UT_MIN(pages, (uint64_t)PC_NIL - 1);
	c->reserve = UT_MAX(4u, c->max_pages / 64);
	c->bg_pages = (uint32_t)((uint64_t)c->max_pages *
		or_default(cfg->dirty_bg_pct, DEFAULT_BG_PCT) / 100);
	c->max_dirty = (uint32_t)((uint64_t)c->max_pages *
		or_default(cfg->dirty_max_pct, DEFAULT_MAX_PCT) / 100);
	c->ra_max = or_default(cfg->ra_max_pages,
			       UT_MAX(4u, DEFAULT_RA_BYTES / c->block_size));
	c->ra_max = UT_MIN(c->ra_max, c->max_pages / 4);
	c->interval_ms = or_default(cfg->flush_interval_ms, DEFAULT_INTERVAL_MS);
	atomic_store(&c->expire_ms, or_default(cfg->dirty_expire_ms,
					       DEFAULT_EXPIRE_MS));
	return 0;
}

/* Page data: one anonymous mapping, touched only as pages get used, its
 * start rounded up to the stride (mmap only promises 4 KiB). */
static int alloc_pool(struct pc_cache *c)
{
	size_t len = (size_t)c->max_pages * c->stride + c->stride;
	void *a = mmap(NULL, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

	if (a == MAP_FAILED)
		return -ENOMEM;
	c->arena_map = a;
	c->arena_len = len;
	c->arena = (void *)UT_ROUND_UP((uintptr_t)a, (uintptr_t)c->stride);
	c->pages = calloc(c->max_pages, sizeof(struct pc_page));
	if (!c->pages) {
		munmap(a, len);
		return -ENOMEM;
	}
	pc_pool_init(c);
	return 0;
}

static void init_sync(struct pc_cache *c)
{
	pthread_condattr_t ca;

	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_mutex_init(&c->pool_lock, NULL);
	pthread_mutex_init(&c->lru_lock, NULL);
	pthread_mutex_init(&c->wb_lock, NULL);
	pthread_mutex_init(&c->pass_mutex, NULL);
	pthread_cond_init(&c->pool_cond, &ca);
	pthread_cond_init(&c->wb_cond, &ca);
	pthread_cond_init(&c->wb_done, &ca);
	pthread_condattr_destroy(&ca);
}

static void fini_sync(struct pc_cache *c)
{
	pthread_mutex_destroy(&c->pool_lock);
	pthread_mutex_destroy(&c->lru_lock);
	pthread_mutex_destroy(&c->wb_lock);
	pthread_mutex_destroy(&c->pass_mutex);
	pthread_cond_destroy(&c->pool_cond);
	pthread_cond_destroy(&c->wb_cond);
	pthread_cond_destroy(&c->wb_done);
}

static void free_pool(struct pc_cache *c)
{
	free(c->pages);
	munmap(c->arena_map, c->arena_len);
}

int pc_cache_create(const struct pc_config *cfg, struct pc_cache **out)
{
	struct pc_cache *c;
	int rc = check_config(cfg);

	if (rc)
		return rc;
	if (posix_memalign((void **)&c, 64, sizeof(*c)))
		return -ENOMEM;
	memset(c, 0, sizeof(*c));
	rc = size_cache(c, cfg);
	if (!rc)
		rc = alloc_pool(c);
	if (rc) {
		free(c);
		return rc;
	}
	c->epoch_ns = ut_now_ns();
	init_sync(c);
	rc = pc_registry_add(c);
	if (!rc && !cfg->no_flusher && (rc = pc_flusher_start(c)))
		pc_registry_del(c);
	if (rc) {
		fini_sync(c);
		free_pool(c);
		free(c);
		return rc;
	}
	*out = c;
	return 0;
}

void pc_cache_destroy(struct pc_cache *c)
{
	if (atomic_load(&c->nr_mappings) || atomic_load(&c->nr_regions))
		mlog_err("page cache: destroyed with %u mappings and %u regions "
			 "left", atomic_load(&c->nr_mappings),
			 atomic_load(&c->nr_regions));
	pc_flusher_stop(c);
	pc_registry_del(c);
	/* Completions that released their pages may still be leaving. */
	while (atomic_load(&c->nr_ending))
		sched_yield();
	fini_sync(c);
	free_pool(c);
	free(c);
}

uint32_t pc_block_size(const struct pc_cache *c)
{
	return c->block_size;
}

void pc_get_stats(struct pc_cache *c, struct pc_stats *st)
{
	memset(st, 0, sizeof(*st));
	for (unsigned int i = 0; i < PC_STRIPES; i++) {
		st->hits += atomic_load(&c->stripes[i].hits);
		st->misses += atomic_load(&c->stripes[i].misses);
	}
	st->readahead_pages = atomic_load(&c->ra_pages);
	st->evictions = atomic_load(&c->evictions);
	st->dirty = atomic_load(&c->nr_dirty);
	st->writeback = atomic_load(&c->nr_writeback);
	st->written = atomic_load(&c->written);
	st->alloc_waits = atomic_load(&c->alloc_waits);
	st->flusher_passes = atomic_load(&c->passes);
	st->flusher_scanned = atomic_load(&c->scanned);
	st->region_bytes = atomic_load(&c->region_bytes);
	st->budget = c->budget;
	st->pages = atomic_load(&c->nr_pages);
	st->max_pages = c->max_pages;
	st->page_cost = c->page_cost;
	st->in_use = st->pages * c->page_cost;
	st->meta_bytes = (uint64_t)c->max_pages * sizeof(struct pc_page) +
			 atomic_load(&c->index_bytes);
}
