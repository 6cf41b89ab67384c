/*
 * t_pc.c - helpers shared by the page cache's tests.
 */
#include "t_pc.h"

#include "util.h"

#include <string.h>
#include <unistd.h>

void t_pattern(void *buf, uint64_t i, uint32_t bs)
{
	unsigned char *b = buf;

	memcpy(b, &i, sizeof(i));
	for (uint32_t k = sizeof(i); k < bs; k++)
		b[k] = (unsigned char)(i * 31 + k);
}

bool t_is_pattern(const void *buf, uint64_t i, uint32_t bs)
{
	const unsigned char *b = buf;
	uint64_t got;

	memcpy(&got, b, sizeof(got));
	if (got != i)
		return false;
	for (uint32_t k = sizeof(i); k < bs; k++)
		if (b[k] != (unsigned char)(i * 31 + k))
			return false;
	return true;
}

const void *t_dev_block(struct t_env *e, uint64_t i)
{
	if (t_dev_is_mem())
		return (const char *)bdev_mem_data(e->bd) + i * e->bs;
	if (!e->dev_buf && !(e->dev_buf = bdev_alloc_buf(e->bs)))
		t_fail("no memory");
	t_ok(bdev_read(e->bd, i * e->bs, e->dev_buf, e->bs));
	return e->dev_buf;
}

/* The pattern onto every block, past the device (its counters stay 0). */
static void fill_pattern(struct t_env *e, uint64_t blocks)
{
	const uint64_t chunk = 64;
	char *buf = bdev_alloc_buf(chunk * e->bs);
	size_t len;

	t_assert(buf, "no memory");
	for (uint64_t i = 0; i < blocks; i += chunk) {
		len = UT_MIN(chunk, blocks - i) * e->bs;
		for (uint64_t k = 0; k < len / e->bs; k++)
			t_pattern(buf + k * e->bs, i + k, e->bs);
		if (t_dev_is_mem())
			memcpy((char *)bdev_mem_data(e->bd) + i * e->bs, buf, len);
		else if (pwrite(e->bd->fd, buf, len, (off_t)(i * e->bs)) != (ssize_t)len)
			t_fail("writing the pattern: %s", strerror(errno));
	}
	bdev_free_buf(buf);
}

/* ---- the counting owner -------------------------------------------------- */

static void record(unsigned int *v, _Atomic unsigned int *n, unsigned int val)
{
	unsigned int i = atomic_fetch_add(n, 1);

	if (i < T_MAX_BATCHES)
		v[i] = val;
}

static int o_readpage(void *ctx, struct pc_page *page)
{
	struct t_owner *o = ctx;

	atomic_fetch_add(&o->readpage_calls, 1);
	atomic_fetch_add(&o->pages_read, 1);
	return pc_block_readpages(o->bd, pc_block_map_identity, NULL,
				  pc_page_mapping(page), &page, 1, NULL);
}

static int o_readpages(void *ctx, struct pc_mapping *m, struct pc_page **pages,
		       unsigned int n, const struct pc_rdc *rdc)
{
	struct t_owner *o = ctx;

	atomic_fetch_add(&o->readpages_calls, 1);
	atomic_fetch_add(&o->pages_read, n);
	record(o->read_batches, &o->nread_batches, n);
	return pc_block_readpages(o->bd, pc_block_map_identity, NULL, m, pages, n,
				  rdc);
}

static int o_writepages(void *ctx, struct pc_mapping *m, struct pc_page **pages,
			unsigned int n, const struct pc_wbc *wbc)
{
	struct t_owner *o = ctx;

	atomic_fetch_add(&o->writepages_calls, 1);
	record(o->write_batches, &o->nwrite_batches, n);
	for (unsigned int i = 1; i < n; i++)
		if (pc_page_index(pages[i - 1]) >= pc_page_index(pages[i]))
			atomic_store(&o->unsorted, true);
	if (atomic_load(&o->decline_writes)) {
		for (unsigned int i = 0; i < n; i++) {
			pc_set_page_dirty_default(pages[i]);
			pc_unlock_page(pages[i]);
		}
		return 0;
	}
	atomic_fetch_add(&o->pages_written, n);
	return pc_block_writepages(o->bd, pc_block_map_identity, NULL, m, pages, n,
				   wbc);
}

static bool o_releasepage(void *ctx, struct pc_page *page)
{
	struct t_owner *o = ctx;

	if (atomic_load(&o->refuse_release))
		return false;
	atomic_fetch_add(&o->released, 1);
	pc_detach_private(page);
	return true;
}

static void o_invalidatepage(void *ctx, struct pc_page *page, uint32_t offset)
{
	struct t_owner *o = ctx;

	atomic_fetch_add(&o->invalidated, 1);
	o->last_inval_offset = offset;
	if (!offset)
		pc_detach_private(page);
}

const struct pc_mapping_ops t_owner_ops = {
	.readpage = o_readpage,
	.readpages = o_readpages,
	.writepages = o_writepages,
	.releasepage = o_releasepage,
	.invalidatepage = o_invalidatepage,
};

/* ---- environments -------------------------------------------------------- */

void t_env_init_cfg(struct t_env *e, uint32_t bs, uint64_t blocks,
		    struct pc_config *cfg)
{
	memset(e, 0, sizeof(*e));
	e->bs = bs;
	e->bd = t_dev_create(blocks * bs, bs);
	fill_pattern(e, blocks);
	if (!cfg->block_size)
		cfg->block_size = bs;
	if (!cfg->data_align)
		cfg->data_align = e->bd->dma_align;
	t_ok(pc_cache_create(cfg, &e->c));
	e->own.bd = e->bd;
	t_ok(pc_mapping_create(e->c, &t_owner_ops, &e->own, &e->m));
}

void t_env_init(struct t_env *e, uint32_t bs, uint64_t blocks, uint64_t pages,
		bool flusher)
{
	struct pc_config cfg = {
		.budget = T_BUDGET(pages, bs),
		.no_flusher = !flusher,
	};

	t_env_init_cfg(e, bs, blocks, &cfg);
}

void t_env_fini(struct t_env *e)
{
	if (e->m)
		pc_mapping_destroy(e->m);
	pc_cache_destroy(e->c);
	bdev_close(e->bd);
	bdev_free_buf(e->dev_buf);
}

/* ---- threads and logs ---------------------------------------------------- */

pthread_t t_thread(void *(*fn)(void *), void *arg)
{
	pthread_t t;

	if (pthread_create(&t, NULL, fn, arg))
		t_fail("pthread_create failed");
	return t;
}

void t_join(pthread_t t)
{
	pthread_join(t, NULL);
}

#define LOG_MAX 64
static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
static char log_lines[LOG_MAX][256];
static unsigned int log_n;

static void log_sink(enum mlog_level level, const char *line, void *arg)
{
	(void)level;
	(void)arg;
	pthread_mutex_lock(&log_lock);
	if (log_n < LOG_MAX)
		snprintf(log_lines[log_n++], sizeof(log_lines[0]), "%s", line);
	pthread_mutex_unlock(&log_lock);
}

void t_log_capture(void)
{
	mlog_set_sink(log_sink, NULL);
}

unsigned int t_log_count(const char *s)
{
	unsigned int n = 0;

	pthread_mutex_lock(&log_lock);
	for (unsigned int i = 0; i < log_n; i++)
		if (strstr(log_lines[i], s))
			n++;
	pthread_mutex_unlock(&log_lock);
	return n;
}
