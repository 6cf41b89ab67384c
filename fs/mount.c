/*
 * mount.c - mounting and unmounting: the superblock, journal recovery, the
 * page cache and the journal, the orphan list; sync and statfs.
 *
 * Mount order: superblock checks, recovery of the journal before anything
 * else reads the filesystem, the superblock again (recovery may have
 * replayed it), the descriptors, the running journal, the superblock
 * marked "in use", then the orphan list.  Unmount does it backwards and
 * marks the filesystem clean last.
 */
#include "mfs_i.h"
#include "icache.h"
#include "jdata.h"
#include "vfs.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#define MFS_DEFAULT_CACHE (64ull << 20)
/* Directory indexes: a quarter of the cache's budget, at least this. */
#define MFS_MIN_DIRHASH (8ull << 20)

/* Unknown incompat features refuse the mount; unknown ro_compat ones
 * allow reading, so the mount goes on read-only. */
static int check_features(struct mfs_fs *fs)
{
	const struct mfs_super *sb = &fs->sb;
	uint32_t in = le32toh(sb->s_feature_incompat);
	uint32_t roc = le32toh(sb->s_feature_ro_compat);

	if (in & ~MFS_FEATURE_INCOMPAT_SUPP) {
		mlog_err("cannot mount: unknown incompatible features 0x%" PRIx32,
			 in & ~MFS_FEATURE_INCOMPAT_SUPP);
		return -EOPNOTSUPP;
	}
	/* Said by check_state once the mount is sure to go on. */
	if (roc & ~MFS_FEATURE_RO_COMPAT_SUPP)
		atomic_store(&fs->ro, true);
	if (!(le32toh(sb->s_feature_compat) & MFS_FEATURE_COMPAT_HAS_JOURNAL)) {
		mlog_err("cannot mount: the filesystem has no journal");
		return -EOPNOTSUPP;
	}
	return 0;
}

/*
 * The superblock; before the replay (@replayed false) a backup will do.
 * The primary spans two sectors under one checksum and is written home
 * from the log at checkpoints: a power cut can tear it while the log
 * still holds the copy that mends it.  So the backup, whose geometry and
 * journal are the same, finds the journal, and only the primary as the
 * replay left it may be mounted.  A filesystem of one group has no
 * backup: there a torn primary finds the journal itself.  Its fields all
 * lie in its first sector, so a tear leaves them whole (one copy's, old
 * or new) and only the checksum stale; if the replay did not write it
 * again (an in-place write was torn, not a checkpoint's), it is mounted
 * as it is, and written whole by the mount.
 */
static int load_super(struct mfs_fs *fs, bool replayed)
{
	uint32_t copy;
	char why[256];
	bool torn;
	int err = fmt_sb_load_torn(fs->bd, &fs->sb, &copy, &torn);

	if (err)
		return err;
	atomic_store(&fs->sb_torn, torn);
	if (copy && !replayed) {
		mlog_warn("the primary superblock is damaged: replaying the journal "
			  "with the backup of group %" PRIu32 " first", copy);
	} else if (torn && !replayed) {
		mlog_warn("the primary superblock is damaged: replaying the journal "
			  "it locates first");
	} else if (copy) {
		mlog_err("cannot mount: the primary superblock is damaged; run "
			 "fsck.miscfs (a backup is intact in group %" PRIu32 ")", copy);
		return -EUCLEAN;
	} else if (torn) {
		mlog_warn("the primary superblock's fields are whole, only its "
			  "checksum is stale: mounting with them, and writing it "
			  "again on a read-write mount");
	}
	err = fmt_sb_check(&fs->sb, fs->bd->size, why, sizeof(why));
	if (err) {
		mlog_err("cannot mount: %s", why);
		return err;
	}
	fs->bs = fmt_block_size(&fs->sb);
	fs->apb = fmt_addr_per_block(fs->bs);
	fs->ipg = le32toh(fs->sb.s_inodes_per_group);
	fs->bpg = le32toh(fs->sb.s_blocks_per_group);
	fs->ngroups = le32toh(fs->sb.s_groups_count);
	fs->ninodes = le32toh(fs->sb.s_inodes_count);
	fs->nblocks = le64toh(fs->sb.s_blocks_count);
	if (fs->bd->block_size != fs->bs) {
		mlog_err("cannot mount: device opened with %" PRIu32 "-byte blocks, "
			 "the filesystem has %" PRIu32, fs->bd->block_size, fs->bs);
		return -EINVAL;
	}
	return check_features(fs);
}

/* ---- the journal's blocks ------------------------------------------------ */

/* The journal inode's block map, read raw (nothing is cached before
 * recovery has run). */
static int load_jmap(struct mfs_fs *fs)
{
	struct fmt_raw raw;
	struct mfs_inode in;
	struct fmt_bmap_walk w;
	uint32_t n = le32toh(fs->sb.s_journal_blocks);
	uint64_t *map;
	int err = fmt_raw_open(fs->bd, &raw);

	if (err)
		return err;
	err = fmt_raw_inode(&raw, MFS_JOURNAL_INO, &in);
	map = calloc(n, sizeof(*map));
	if (!err && !map)
		err = -ENOMEM;
	if (!err) {
		fmt_raw_bmap_walk_init(&raw, MFS_JOURNAL_INO, &in, &w);
		err = fmt_bmap_map_all(&w, map, n);
	}
	if (err == -EUCLEAN)
		mlog_err("cannot mount: journal: %s", raw.why);
	fmt_raw_close(&raw);
	if (err)
		free(map);
	else
		fs->jmap = map;
	return err;
}

/* ---- the superblock's flags, straight to the disk ------------------------ */

/*
 * Set @state bits and set or clear incompat bits of the superblock on the
 * disk, read back from there rather than taken from the cache: the cached
 * block may hold changes of a transaction not committed yet, which must
 * not reach home before their commit.  Used where the journal cannot
 * carry the change: before it runs, when it has aborted, under any lock
 * of a caller that met an error, and for the flag that says the journal
 * holds something.  A primary the mount found torn (sb_torn: whole
 * fields, a stale checksum) is taken as it is until written again.
 */
static int sb_flags_write(struct mfs_fs *fs, uint16_t state, uint32_t set,
			  uint32_t clear)
{
	uint64_t blk = MFS_SB_OFFSET / fs->bs;
	void *buf = bdev_alloc_buf(fs->bs);
	struct mfs_super *sb = buf ? (void *)((char *)buf + MFS_SB_OFFSET % fs->bs) : NULL;
	int err = buf ? 0 : -ENOMEM;

	pthread_mutex_lock(&fs->sb_io_lock);
	if (!err)
		err = bdev_read(fs->bd, blk * fs->bs, buf, fs->bs);
	if (!err && (le32toh(sb->s_magic) != MFS_MAGIC ||
		     !(atomic_load(&fs->sb_torn) ? fmt_sb_fields_whole(sb) :
		       le32toh(sb->s_checksum) == fmt_sb_csum(sb))))
		err = -EUCLEAN;
	if (!err) {
		sb->s_state |= htole16(state);
		sb->s_feature_incompat = htole32((le32toh(sb->s_feature_incompat) | set) &
						 ~clear);
		fmt_sb_set_csum(sb);
		err = bdev_write(fs->bd, blk * fs->bs, buf, fs->bs);
	}
	if (!err)
		err = bdev_flush(fs->bd);
	if (!err)
		atomic_store(&fs->sb_torn, false);
	pthread_mutex_unlock(&fs->sb_io_lock);
	bdev_free_buf(buf);
	return err;
}

void mfs_error_record(struct mfs_fs *fs)
{
	int err;

	if (!atomic_load(&fs->rw_mounted) || atomic_exchange(&fs->error_on_disk, true))
		return;
	err = sb_flags_write(fs, MFS_STATE_ERRORS, 0, 0);
	if (err)
		mlog_err("cannot mark the superblock with errors: %s", strerror(-err));
}

/* ---- recovery ------------------------------------------------------------ */

/*
 * The replay wrote home the superblock as its newest logged copy had it,
 * which may predate an error recorded on the disk since; and an abort
 * left its error in the journal's superblock only, if the filesystem's
 * could not be written.  Both go to the superblock, before the journal's
 * record is cleared; and the log needs nothing any more.
 */
static int after_replay(struct mfs_fs *fs, const struct jnl_recovery *info,
			bool had_errors)
{
	bool errors = info->jnl_errno || (had_errors && !info->was_empty);
	int err = 0;

	if (errors || !info->was_empty)
		err = sb_flags_write(fs, errors ? MFS_STATE_ERRORS : 0, 0,
				     MFS_FEATURE_INCOMPAT_RECOVER);
	if (!err && info->jnl_errno)
		err = jnl_clear_errno(fs->bd, fs->jmap, le32toh(fs->sb.s_journal_blocks));
	if (err)
		mlog_err("cannot mount: the superblock cannot be updated after "
			 "recovery: %s", strerror(-err));
	return err;
}

static int recover(struct mfs_fs *fs)
{
	struct jnl_recovery info;
	uint32_t n = le32toh(fs->sb.s_journal_blocks);
	uint32_t roc = le32toh(fs->sb.s_feature_ro_compat) & ~MFS_FEATURE_RO_COMPAT_SUPP;
	bool had_errors = le16toh(fs->sb.s_state) & MFS_STATE_ERRORS;
	int err;

	if (fs->bd->read_only || roc) {
		err = jnl_recover_within(fs->bd, fs->jmap, n, le64toh(fs->sb.s_blocks_count),
					 JNL_RECOVER_CHECK_ONLY, &info);
		if (!err && !info.was_empty && info.transactions) {
			if (roc)
				mlog_err("cannot mount: the journal needs replaying and "
					 "unknown read-only compatible features 0x%"
					 PRIx32 " forbid writing", roc);
			else
				mlog_err("cannot mount: the journal needs replaying and "
					 "the device is read-only");
			return -EROFS;
		}
		fs->jnl_errno = err ? 0 : info.jnl_errno;
		return err;
	}
	err = jnl_recover_within(fs->bd, fs->jmap, n, le64toh(fs->sb.s_blocks_count), 0, &info);
	if (err) {
		mlog_err("cannot mount: journal recovery failed: %s", strerror(-err));
		return err;
	}
	if (!info.was_empty)
		mlog_info("journal replayed: %" PRIu32 " transactions, %" PRIu64
			  " blocks", info.transactions, info.replayed);
	fs->jnl_errno = info.jnl_errno;
	return after_replay(fs, &info, had_errors);
}

/* ---- page cache and journal ---------------------------------------------- */

static int submit_ordered(void *arg, struct jnl_inode *ji)
{
	struct mfs_node *n = ut_container_of(ji, struct mfs_node, ji);

	(void)arg;
	return n->map ? pc_write_range(n->map, 0, UINT64_MAX) : 0;
}

static int wait_ordered(void *arg, struct jnl_inode *ji)
{
	struct mfs_node *n = ut_container_of(ji, struct mfs_node, ji);

	(void)arg;
	return n->map ? pc_wait_range(n->map, 0, UINT64_MAX) : 0;
}

/*
 * cache_size is the memory the daemon holds for data.  With data=journal
 * that includes the journal's copies of data blocks (commit snapshots,
 * pages changed while logged), which a log's worth bounds in practice:
 * that much, at most half, comes out of the page cache's budget.
 */
static uint64_t cache_budget(const struct mfs_fs *fs)
{
	uint64_t total = fs->opts.cache_bytes ? fs->opts.cache_bytes : MFS_DEFAULT_CACHE;
	uint64_t log = (uint64_t)le32toh(fs->sb.s_journal_blocks) * fs->bs;

	if (fs->opts.data != MFS_DATA_JOURNAL)
		return total;
	return total - UT_MIN(log, total / 2);
}

static int start_cache(struct mfs_fs *fs)
{
	struct pc_config pcfg = {
		.block_size = fs->bs,
		.data_align = fs->bd->dma_align,
		.budget = cache_budget(fs),
		.no_flusher = fs->opts.no_flusher,
	};
	int err = pc_cache_create(&pcfg, &fs->cache);

	if (err) {
		mlog_err("cannot mount: page cache of %" PRIu64 " bytes: %s",
			 pcfg.budget, strerror(-err));
		return err;
	}
	return pc_mapping_create(fs->cache, &pc_identity_ops, fs->bd, &fs->meta);
}

/* The first commit of the mount: from now on the log may hold
 * transactions that only a replay brings home.  Once on the disk the flag
 * stays there until the clean unmount, as every copy of the superblock
 * the journal writes keeps it (sb_frozen). */
static int log_in_use(void *arg)
{
	struct mfs_fs *fs = arg;
	int err;

	if (atomic_load(&fs->recover_on_disk))
		return 0;
	err = sb_flags_write(fs, 0, MFS_FEATURE_INCOMPAT_RECOVER, 0);
	if (!err)
		atomic_store(&fs->recover_on_disk, true);
	return err;
}

/* A copy of the superblock taken before an error or before the first
 * commit must not clear, when a checkpoint writes it home, what was
 * written to the disk since. */
static void sb_frozen(void *arg, uint64_t home, void *data)
{
	struct mfs_fs *fs = arg;
	struct mfs_super *sb;

	if (home != MFS_SB_OFFSET / fs->bs)
		return;
	sb = (void *)((char *)data + MFS_SB_OFFSET % fs->bs);
	sb->s_feature_incompat |= htole32(MFS_FEATURE_INCOMPAT_RECOVER);
	if (atomic_load(&fs->had_error))
		sb->s_state |= htole16(MFS_STATE_ERRORS);
	fmt_sb_set_csum(sb);
}

/* The journal stopped: nothing more reaches the disk through it, so the
 * error goes there directly. */
static void jnl_aborted(void *arg, int err)
{
	struct mfs_fs *fs = arg;

	(void)err;
	atomic_store(&fs->had_error, true);
	atomic_store(&fs->ro, true);
	mfs_error_record(fs);
}

static int start_journal(struct mfs_fs *fs)
{
	struct pc_stats st;
	struct jnl_config cfg = {
		.commit_interval_ms = (fs->opts.commit_s ? fs->opts.commit_s : 5) * 1000,
		/* One batch and one flush per commit: the transaction's checksum
		 * stands in for the flush before the commit block.  Data a
		 * commit depends on is ordered data, flushed before its batch. */
		.async_commit = true,
		.log_in_use = log_in_use,
		.frozen = sb_frozen,
		.aborted = jnl_aborted,
		.arg = fs,
	};

	pc_get_stats(fs->cache, &st);
	cfg.max_pinned = (uint32_t)UT_MIN(st.max_pages / 2, (uint64_t)UINT32_MAX);
	if (fs->opts.data != MFS_DATA_WRITEBACK) {
		cfg.submit_ordered = submit_ordered;
		cfg.wait_ordered = wait_ordered;
	}
	return jnl_open(fs->bd, fs->jmap, le32toh(fs->sb.s_journal_blocks), &cfg, &fs->j);
}

/* ---- the superblock written in place ------------------------------------- */

/* Write the superblock block straight home (before the journal runs, or
 * after it has stopped), with @fn applied to the copy in the cache. */
static int sb_write(struct mfs_fs *fs, void (*fn)(struct mfs_fs *, struct mfs_super *))
{
	uint64_t blk = MFS_SB_OFFSET / fs->bs;
	struct pc_page *pg;
	void *buf = bdev_alloc_buf(fs->bs);
	int err = buf ? pc_read_cache_page(fs->meta, blk, &pg) : -ENOMEM;

	if (!err) {
		struct mfs_super *sb;

		pc_lock_page(pg);
		sb = (void *)((char *)pg->data + MFS_SB_OFFSET % fs->bs);
		fn(fs, sb);
		fmt_sb_set_csum(sb);
		memcpy(buf, pg->data, fs->bs);
		pc_unlock_page(pg);
		pc_put_page(pg);
		pthread_mutex_lock(&fs->sb_io_lock);
		err = bdev_write(fs->bd, blk * fs->bs, buf, fs->bs);
		if (!err)
			err = bdev_flush(fs->bd);
		if (!err)
			atomic_store(&fs->sb_torn, false);
		pthread_mutex_unlock(&fs->sb_io_lock);
	}
	bdev_free_buf(buf);
	return err;
}

static void sb_mounted(struct mfs_fs *fs, struct mfs_super *sb)
{
	struct timespec now;

	mfs_now(&now);
	sb->s_state = htole16(le16toh(sb->s_state) & ~MFS_STATE_VALID);
	/* The log is empty until the first commit (log_in_use). */
	sb->s_feature_incompat &= htole32(~MFS_FEATURE_INCOMPAT_RECOVER);
	sb->s_mnt_count = htole16(le16toh(sb->s_mnt_count) + 1);
	sb->s_mtime = sb->s_wtime = htole64(now.tv_sec);
}

static void sb_clean(struct mfs_fs *fs, struct mfs_super *sb)
{
	struct timespec now;
	uint16_t state = MFS_STATE_VALID;

	mfs_now(&now);
	if (atomic_load(&fs->had_error) ||
	    (le16toh(sb->s_state) & MFS_STATE_ERRORS))
		state |= MFS_STATE_ERRORS;
	sb->s_state = htole16(state);
	sb->s_feature_incompat &= htole32(~MFS_FEATURE_INCOMPAT_RECOVER);
	sb->s_free_blocks_count = htole64(fs->free_blocks);
	sb->s_free_inodes_count = htole32(fs->free_inodes);
	sb->s_last_orphan = htole32(fs->orphan_head);
	sb->s_wtime = htole64(now.tv_sec);
}

/* ---- mount --------------------------------------------------------------- */

/* The names' hash is seeded at random, so that nobody can pick names
 * that collide in a directory's index. */
static void dirhash_init(struct mfs_fs *fs)
{
	uint64_t cache = fs->opts.cache_bytes ? fs->opts.cache_bytes : MFS_DEFAULT_CACHE;

	pthread_mutex_init(&fs->dh_list_lock, NULL);
	ut_list_init(&fs->dh_lru);
	fs->dh_max = fs->opts.dirhash_bytes ? fs->opts.dirhash_bytes :
		     UT_MAX(cache / 4, MFS_MIN_DIRHASH);
	if (getrandom(&fs->dh_seed, sizeof(fs->dh_seed), GRND_NONBLOCK) !=
	    (ssize_t)sizeof(fs->dh_seed))
		fs->dh_seed = ut_now_ns() ^ (uintptr_t)fs;
}

static struct mfs_fs *fs_alloc(struct bdev *bd, const struct mfs_mount_opts *opts)
{
	struct mfs_fs *fs = calloc(1, sizeof(*fs));
	uint32_t seed;

	if (!fs)
		return NULL;
	fs->bd = bd;
	fs->opts = *opts;
	atomic_store(&fs->ro, opts->read_only || bd->read_only);
	pthread_mutex_init(&fs->count_lock, NULL);
	pthread_mutex_init(&fs->pend_lock, NULL);
	pthread_mutex_init(&fs->icache_lock, NULL);
	pthread_cond_init(&fs->icache_cond, NULL);
	pthread_mutex_init(&fs->rename_lock, NULL);
	pthread_mutex_init(&fs->orphan_lock, NULL);
	pthread_mutex_init(&fs->sb_io_lock, NULL);
	ut_list_init(&fs->orphans);
	seed = (uint32_t)ut_now_ns();
	atomic_store(&fs->next_gen, seed * 2654435761u);
	dirhash_init(fs);
	pthread_mutex_init(&fs->stats_lock, NULL);
	pthread_mutex_init(&fs->error_lock, NULL);
	mfs_now(&fs->mounted_at);
	return fs;
}

static int alloc_groups(struct mfs_fs *fs)
{
	fs->groups = calloc(fs->ngroups, sizeof(*fs->groups));
	fs->gdt = calloc(le16toh(fs->sb.s_gdt_blocks), sizeof(*fs->gdt));
	if (!fs->groups || !fs->gdt)
		return -ENOMEM;
	for (uint32_t g = 0; g < fs->ngroups; g++)
		pthread_mutex_init(&fs->groups[g].lock, NULL);
	return 0;
}

/* The data mode mkfs stored as the default. */
static enum mfs_data_mode data_mode_of(uint32_t defm)
{
	switch (defm & MFS_DEFM_DATA_MASK) {
	case MFS_DEFM_DATA_JOURNAL: return MFS_DATA_JOURNAL;
	case MFS_DEFM_DATA_WRITEBACK: return MFS_DATA_WRITEBACK;
	default: return MFS_DATA_ORDERED;
	}
}

static int check_state(struct mfs_fs *fs)
{
	uint32_t roc = le32toh(fs->sb.s_feature_ro_compat);
	char why[80] = "";

	if (fs->jnl_errno) {
		snprintf(why, sizeof(why), " (the journal was aborted: %s)",
			 strerror(-fs->jnl_errno));
		fs->sb.s_state |= htole16(MFS_STATE_ERRORS);
	}
	if (le16toh(fs->sb.s_state) & MFS_STATE_ERRORS) {
		atomic_store(&fs->error_on_disk, true);
		if (!fs->opts.force && !atomic_load(&fs->ro)) {
			mlog_err("cannot mount: the filesystem is marked with errors%s; "
				 "run fsck.miscfs, or mount with -o force or -o ro", why);
			return -EROFS;
		}
	}
	if (!fs->opts.errors)
		fs->opts.errors = le16toh(fs->sb.s_errors) == MFS_ERRORS_RO ?
				  MFS_ERRORS_RO : MFS_ERRORS_CONTINUE;
	if (fs->opts.data == MFS_DATA_DEFAULT)
		fs->opts.data = data_mode_of(le32toh(fs->sb.s_default_mount_opts));
	if ((roc & ~MFS_FEATURE_RO_COMPAT_SUPP) && !fs->opts.read_only)
		mlog_err("unknown read-only compatible features 0x%" PRIx32
			 ": mounting read-only", roc & ~MFS_FEATURE_RO_COMPAT_SUPP);
	return 0;
}

/* The device's flushes stop where the regions begin: their pages, dirty
 * in a shared mapping of the image, are synced by whoever owns them
 * (mfs_fsync of a region file, mfs_sync, the unmount), never by a
 * commit, which would otherwise wait for them. */
static int set_flush_end(struct mfs_fs *fs)
{
	if (!le32toh(fs->sb.s_region_count))
		return 0;
	return bdev_set_flush_end(fs->bd, le64toh(fs->sb.s_regions_start) * fs->bs);
}

/* Another node took the filesystem (the device is fenced already): no
 * write of ours may follow, not even the error flag, which is its now. */
static void mmp_lost(void *arg)
{
	struct mfs_fs *fs = arg;

	atomic_store(&fs->had_error, true);
	atomic_store(&fs->ro, true);
	mlog_err("the filesystem is read-only from now on; unmount it");
}

/* Before the first write (the replay): on an image with multi-mount
 * protection, make sure no other node has it.  A read-only mount writes
 * nothing, claims nothing, and only says what the block says. */
static int start_mmp(struct mfs_fs *fs)
{
	struct mfs_mmp m;
	char why[160], who[160];

	if (!fmt_has_mmp(&fs->sb))
		return 0;
	if (!atomic_load(&fs->ro))
		return fmt_mmp_start(fs->bd, &fs->sb, program_invocation_short_name,
				     mmp_lost, fs, &fs->mmp);
	if (fmt_mmp_read(fs->bd, &fs->sb, &m, why, sizeof(why)))
		mlog_warn("%s", why);
	else if (le32toh(m.mmp_seq) != MFS_MMP_SEQ_CLEAN) {
		fmt_mmp_describe(&m, who, sizeof(who));
		mlog_warn("read-only mount of a filesystem that may be in use by %s", who);
	}
	return 0;
}

static int mount_steps(struct mfs_fs *fs)
{
	int err = load_super(fs, false);

	if (!err)
		err = load_jmap(fs);
	if (!err)
		err = start_mmp(fs);
	if (!err)
		err = recover(fs);
	if (!err)
		err = load_super(fs, true);      /* as the replay left it */
	if (!err)
		err = check_state(fs);
	if (!err)
		err = set_flush_end(fs);
	if (!err)
		err = alloc_groups(fs);
	if (!err)
		err = start_cache(fs);
	if (!err)
		err = mfs_gdt_load(fs);
	if (!err)
		err = mfs_icache_init(fs);
	if (!err && !atomic_load(&fs->ro))
		err = start_journal(fs);
	if (!err && !atomic_load(&fs->ro))
		err = sb_write(fs, sb_mounted);
	if (!err && fs->j)
		atomic_store(&fs->rw_mounted, true);
	if (!err && fs->j)
		err = mfs_jdata_start(fs);
	fs->orphan_head = le32toh(fs->sb.s_last_orphan);
	return err;
}

static void fs_free(struct mfs_fs *fs)
{
	mfs_mem_destroy(fs);
	mfs_regions_unmap(fs);
	if (fs->ihash)
		mfs_icache_destroy(fs);
	if (fs->gdt)
		mfs_gdt_put(fs);
	if (fs->meta)
		pc_mapping_destroy(fs->meta);
	if (fs->cache)
		pc_cache_destroy(fs->cache);
	mfs_jdata_free(fs);
	free(fs->gdt);
	free(fs->groups);
	free(fs->jmap);
	free(fs->pend);
	/* A mount that failed releases its claim last (its thread uses fs). */
	fmt_mmp_stop(fs->mmp);
	free(fs);
}

static int root_check(struct mfs_fs *fs)
{
	struct mfs_node *root;
	int err = mfs_iget(fs, MFS_ROOT_INO, &root);

	if (err)
		return err;
	if (!S_ISDIR(node_mode(root)))
		err = mfs_error(fs, "cannot mount: the root inode is not a directory");
	mfs_iput(root);
	return err;
}

int mfs_mount(struct bdev *bd, const struct mfs_mount_opts *opts,
	      struct mfs_fs **out)
{
	struct mfs_fs *fs = fs_alloc(bd, opts);
	int err;

	if (!fs)
		return -ENOMEM;
	err = mount_steps(fs);
	if (!err)
		err = root_check(fs);
	if (!err && !atomic_load(&fs->ro))
		err = mfs_orphans_process(fs);
	if (!err)
		err = mfs_regions_load(fs);
	if (!err)
		err = mfs_mem_create(fs);
	if (err) {
		mfs_jdata_stop(fs);
		/* The checks above read inodes (the root, orphans): they go
		 * as on unmount, before the journal they may write through. */
		if (fs->ihash)
			mfs_icache_sync(fs);
		if (fs->j)
			jnl_close(fs->j);
		fs_free(fs);
		return err;
	}
	*out = fs;
	return 0;
}

/* ---- unmount, sync, statfs ----------------------------------------------- */

int mfs_unmount(struct mfs_fs *fs)
{
	int err, e;

	mfs_jdata_stop(fs);
	err = mfs_icache_sync(fs);
	e = mfs_regions_sync(fs);
	err = err ? err : e;
	e = pc_sync_cache(fs->cache);
	err = err ? err : e;
	if (fs->j) {
		e = jnl_close(fs->j);
		fs->j = NULL;
		err = err ? err : e;
	}
	mfs_icache_destroy(fs);
	if (!err && atomic_load(&fs->rw_mounted))
		err = sb_write(fs, sb_clean);
	/* Last: the filesystem is released only once all of it is home. */
	e = fmt_mmp_stop(fs->mmp);
	fs->mmp = NULL;
	err = err ? err : e;
	fs_free(fs);
	return err;
}

/* Regions too: a sync of the filesystem covers every file's data. */
int mfs_sync(struct mfs_fs *fs)
{
	int err = mfs_jdata_flush_all(fs), e;

	e = pc_sync_cache(fs->cache);
	err = err ? err : e;
	/* Pages dirtied before the call whose files missed the queue were
	 * declined by that writeback, which queued them. */
	e = mfs_jdata_flush_all(fs);
	err = err ? err : e;
	e = mfs_regions_sync(fs);
	err = err ? err : e;
	if (fs->j) {
		e = jnl_sync(fs->j);
		err = err ? err : e;
	}
	e = atomic_load(&fs->ro) && !fs->j ? 0 : bdev_flush(fs->bd);
	return err ? err : e;
}

int mfs_statfs(struct mfs_fs *fs, struct statvfs *out)
{
	uint64_t r = le64toh(fs->sb.s_r_blocks_count), fb;

	memset(out, 0, sizeof(*out));
	pthread_mutex_lock(&fs->count_lock);
	fb = fs->free_blocks;
	out->f_ffree = out->f_favail = fs->free_inodes;
	pthread_mutex_unlock(&fs->count_lock);
	out->f_bsize = out->f_frsize = fs->bs;
	out->f_blocks = fs->nblocks - le32toh(fs->sb.s_first_data_block);
	out->f_bfree = fb;
	out->f_bavail = fb > r ? fb - r : 0;
	out->f_files = fs->ninodes;
	memcpy(&out->f_fsid, fs->sb.s_uuid, sizeof(out->f_fsid));
	out->f_namemax = MFS_NAME_LEN;
	out->f_flag = atomic_load(&fs->ro) ? ST_RDONLY : 0;
	return 0;
}
