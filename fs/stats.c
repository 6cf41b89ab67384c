/*
 * stats.c - the live statistics: "key: value" lines of the filesystem's,
 * the page cache's and the journal's counters.
 */
#include "mfs_i.h"
#include "icache.h"

#include <inttypes.h>
#include <stdarg.h>

struct out {
	char *buf;
	size_t size, len;
};

static void put(struct out *o, const char *key, uint64_t v)
{
	int n = snprintf(o->buf ? o->buf + UT_MIN(o->len, o->size) : NULL,
			 o->len < o->size ? o->size - o->len : 0,
			 "%s: %" PRIu64 "\n", key, v);

	if (n > 0)
		o->len += (size_t)n;
}

#define LOAD(x) atomic_load(&(x))

static void fs_stats(struct mfs_fs *fs, struct out *o)
{
	uint64_t nodes, stubs, stub_bytes, fb, fi;

	pthread_mutex_lock(&fs->icache_lock);
	nodes = fs->nnodes;
	stubs = fs->stubs.count;
	stub_bytes = mfs_stub_bytes(&fs->stubs);
	pthread_mutex_unlock(&fs->icache_lock);
	pthread_mutex_lock(&fs->count_lock);
	fb = fs->free_blocks;
	fi = fs->free_inodes;
	pthread_mutex_unlock(&fs->count_lock);
	put(o, "fs_inodes_cached", nodes);
	put(o, "fs_inode_node_bytes", nodes * sizeof(struct mfs_node));
	put(o, "fs_inode_stubs", stubs);
	put(o, "fs_inode_stub_bytes", stub_bytes);
	put(o, "fs_free_blocks", fb);
	put(o, "fs_free_inodes", fi);
	put(o, "fs_lookups", LOAD(fs->st.lookups));
	put(o, "fs_creates", LOAD(fs->st.creates));
	put(o, "fs_unlinks", LOAD(fs->st.unlinks));
	put(o, "fs_renames", LOAD(fs->st.renames));
	put(o, "fs_reads", LOAD(fs->st.reads));
	put(o, "fs_writes", LOAD(fs->st.writes));
	put(o, "fs_fsyncs", LOAD(fs->st.fsyncs));
	put(o, "fs_handles", LOAD(fs->st.handles));
	/* Every line is a number: the data mode as whether it journals. */
	put(o, "fs_data_journal", fs->opts.data == MFS_DATA_JOURNAL);
	put(o, "jdata_pages_pending", LOAD(fs->st.jdata_pending));
	put(o, "jdata_pages_journalled", LOAD(fs->st.jdata_journalled));
}

static void dir_stats(struct mfs_fs *fs, struct out *o)
{
	uint64_t bytes, max;
	uint32_t count;

	pthread_mutex_lock(&fs->dh_list_lock);
	bytes = fs->dh_bytes;
	max = fs->dh_max;
	count = fs->dh_count;
	pthread_mutex_unlock(&fs->dh_list_lock);
	put(o, "dir_pages_validated", LOAD(fs->st.dir_checked));
	put(o, "dir_pages_rejected", LOAD(fs->st.dir_bad));
	put(o, "dir_blocks_scanned", LOAD(fs->st.dir_scans));
	put(o, "dir_index_blocks_read", LOAD(fs->st.dx_reads));
	put(o, "dirhash_builds", LOAD(fs->st.dirhash_builds));
	put(o, "dirhash_hits", LOAD(fs->st.dirhash_hits));
	put(o, "dirhash_drops", LOAD(fs->st.dirhash_drops));
	put(o, "dirhash_dirs", count);
	put(o, "dirhash_bytes", bytes);
	put(o, "dirhash_max_bytes", max);
}

static void cache_stats(struct mfs_fs *fs, struct out *o)
{
	struct pc_stats st;

	pc_get_stats(fs->cache, &st);
	put(o, "pc_hits", st.hits);
	put(o, "pc_misses", st.misses);
	put(o, "pc_readahead_pages", st.readahead_pages);
	put(o, "pc_evictions", st.evictions);
	put(o, "pc_dirty", st.dirty);
	put(o, "pc_writeback", st.writeback);
	put(o, "pc_written", st.written);
	put(o, "pc_pages", st.pages);
	put(o, "pc_max_pages", st.max_pages);
	put(o, "pc_budget", st.budget);
}

static void jnl_stats(struct mfs_fs *fs, struct out *o)
{
	struct jnl_stats st = { 0 };

	/* A read-only mount runs no journal: its keys stay, at zero. */
	if (fs->j)
		jnl_get_stats(fs->j, &st);
	put(o, "jnl_commits", st.commits);
	put(o, "jnl_handles", st.handles);
	put(o, "jnl_blocks_logged", st.blocks_logged);
	put(o, "jnl_revokes", st.revokes);
	put(o, "jnl_commit_mean_us", st.commits ? st.commit_ns_total / st.commits / 1000 : 0);
	put(o, "jnl_commit_max_us", st.commit_ns_max / 1000);
	put(o, "jnl_checkpoints", st.checkpoints);
	put(o, "jnl_log_full_waits", st.log_full_waits);
	put(o, "jnl_early_checkpoints", st.early_checkpoints);
	put(o, "jnl_pinned", st.pinned);
	put(o, "jnl_committed_tid", st.committed_tid);
	put(o, "jnl_log_used", st.log_used);
	put(o, "jnl_log_size", st.log_size);
	put(o, "jnl_copy_bytes", st.copy_bytes);
	put(o, "jnl_copy_bytes_held", st.copy_bytes_held);
}

#define CALLERS_SHOWN 8u

/* "PREFIX_FUNC: value", a function's name making the key. */
static void put_at(struct out *o, const char *prefix, const char *func, uint64_t v)
{
	char key[160];

	snprintf(key, sizeof(key), "%s_%s", prefix, func);
	put(o, key, v);
}

/* The damage met by the function that met it, and the handles held
 * longest by the function that started them, as ext4 names the function
 * of an error and jbd2's statistics show its handles. */
static void caller_stats(struct mfs_fs *fs, struct out *o)
{
	struct jnl_caller_stats c[CALLERS_SHOWN];
	unsigned int n = fs->j ? jnl_get_caller_stats(fs->j, c, CALLERS_SHOWN) : 0;

	put(o, "fs_errors", LOAD(fs->st.errors));
	pthread_mutex_lock(&fs->error_lock);
	for (unsigned int i = 0; i < MFS_ERROR_FUNCS && fs->error_at[i].func; i++)
		put_at(o, "fs_errors_in", fs->error_at[i].func, fs->error_at[i].count);
	pthread_mutex_unlock(&fs->error_lock);
	for (unsigned int i = 0; i < n; i++) {
		put_at(o, "jnl_handle_max_us", c[i].caller, c[i].held_ns_max / 1000);
		put_at(o, "jnl_handle_mean_us", c[i].caller,
		       c[i].held_ns_total / c[i].handles / 1000);
		put_at(o, "jnl_handles", c[i].caller, c[i].handles);
	}
}

/* The source's lines after ours; the source is called under stats_lock
 * so that it is not removed while it runs. */
static void source_stats(struct mfs_fs *fs, struct out *o)
{
	size_t at = UT_MIN(o->len, o->size);

	pthread_mutex_lock(&fs->stats_lock);
	if (fs->stats_fn)
		o->len += fs->stats_fn(fs->stats_arg, o->buf ? o->buf + at : NULL,
				       o->len < o->size ? o->size - o->len : 0);
	pthread_mutex_unlock(&fs->stats_lock);
}

size_t mfs_stats_format(struct mfs_fs *fs, char *buf, size_t size)
{
	struct out o = { buf, size, 0 };

	if (buf && size)
		buf[0] = 0;
	fs_stats(fs, &o);
	dir_stats(fs, &o);
	cache_stats(fs, &o);
	jnl_stats(fs, &o);
	caller_stats(fs, &o);
	source_stats(fs, &o);
	return o.len;
}

void mfs_stats_set_source(struct mfs_fs *fs, mfs_stats_fn fn, void *arg)
{
	pthread_mutex_lock(&fs->stats_lock);
	fs->stats_fn = fn;
	fs->stats_arg = arg;
	pthread_mutex_unlock(&fs->stats_lock);
}
