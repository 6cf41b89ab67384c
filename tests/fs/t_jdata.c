/*
 * t_jdata - journalled file data (data=journal): deferred journalling of
 * rewritten pages, a page rewritten many times logged once, pages read
 * back from the journal after eviction, truncation ending the pending
 * state, and a writer racing the journal's copies, checked after a power
 * cut: every block whole from one write.
 */
#include <fcntl.h>
#include <linux/falloc.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bdev_test.h"
#include "t_fs.h"
#include "t_dev.h"
#include "util.h"

#define BS 1024u

static const struct mfs_mount_opts jopts = {
	.data = MFS_DATA_JOURNAL, .no_flusher = true, .commit_s = 600,
	.cache_bytes = 1u << 20,
};

static uint64_t stat_of(struct mfs_fs *fs, const char *key)
{
	char buf[8192], *at;

	mfs_stats_format(fs, buf, sizeof(buf));
	at = strstr(buf, key);
	t_assert(at, "no statistic %s", key);
	return strtoull(at + strlen(key) + 2, NULL, 10);
}

static uint64_t create(struct mfs_fs *fs, const char *name)
{
	struct mfs_file *f;
	struct stat st;

	t_ok(mfs_create(fs, &tf_root, MFS_ROOT_INO, name, 0644, O_RDWR, &st, NULL, &f));
	t_ok(mfs_release(fs, f));
	return st.st_ino;
}

static void put(struct mfs_fs *fs, uint64_t ino, const void *buf, size_t len,
		uint64_t off)
{
	struct mfs_file *f;

	t_ok(mfs_open(fs, &tf_root, ino, O_RDWR, &f));
	t_eq(mfs_write(fs, &tf_root, f, buf, len, off, 0), (ssize_t)len);
	t_ok(mfs_release(fs, f));
}

static void get(struct mfs_fs *fs, uint64_t ino, void *buf, size_t len, uint64_t off)
{
	struct mfs_file *f;

	t_ok(mfs_open(fs, &tf_root, ino, O_RDONLY, &f));
	t_eq(mfs_read(fs, f, buf, len, off), (ssize_t)len);
	t_ok(mfs_release(fs, f));
}

/* A page rewritten a thousand times is journalled once, when fsync
 * gathers it; the writes themselves journal nothing. */
static void test_rewrite_logged_once(void)
{
	struct bdev *bd = tf_mkfs(BS, 16u << 20);
	struct mfs_fs *fs = tf_mount_opts(bd, &jopts);
	uint64_t ino = create(fs, "f"), logged, pend;
	char buf[BS];

	memset(buf, 'a', sizeof(buf));
	put(fs, ino, buf, BS, 0);             /* a new block: journalled at once */
	t_ok(mfs_fsync(fs, ino, false));
	t_eq(stat_of(fs, "jdata_pages_pending"), 0);
	logged = stat_of(fs, "jdata_pages_journalled");
	for (int i = 0; i < 1000; i++) {
		memset(buf + (i % 9) * 100, 'b' + i % 20, 100);
		put(fs, ino, buf + (i % 9) * 100, 100, (uint64_t)(i % 9) * 100);
	}
	pend = stat_of(fs, "jdata_pages_pending");
	t_eq(pend, 1);
	t_eq(stat_of(fs, "jdata_pages_journalled"), logged);
	t_ok(mfs_fsync(fs, ino, false));
	t_eq(stat_of(fs, "jdata_pages_pending"), 0);
	t_eq(stat_of(fs, "jdata_pages_journalled"), logged + 1);
	tf_unmount_check(fs, bd);
	fs = tf_mount(bd);
	{
		char got[BS];

		get(fs, ino, got, BS, 0);
		t_assert(!memcmp(got, buf, BS), "the rewritten page did not survive");
	}
	tf_unmount_check(fs, bd);
	bdev_close(bd);
}

/* A pending page that is truncated away ends its pending state. */
static void test_truncate_ends_pending(void)
{
	struct bdev *bd = tf_mkfs(BS, 16u << 20);
	struct mfs_fs *fs = tf_mount_opts(bd, &jopts);
	uint64_t ino = create(fs, "f");
	struct mfs_setattr sa = { .valid = MFS_SET_SIZE, .size = 0 };
	char buf[4 * BS];

	memset(buf, 'x', sizeof(buf));
	put(fs, ino, buf, sizeof(buf), 0);
	t_ok(mfs_fsync(fs, ino, false));
	put(fs, ino, buf, sizeof(buf), 0);    /* rewrites: pending */
	t_eq(stat_of(fs, "jdata_pages_pending"), 4);
	t_ok(mfs_setattr(fs, &tf_root, ino, &sa, NULL));
	t_eq(stat_of(fs, "jdata_pages_pending"), 0);
	t_ok(mfs_sync(fs));
	tf_unmount_check(fs, bd);
	bdev_close(bd);
}

/* A file with pages awaiting journalling, unlinked and freed before the
 * thread or a sync gets to it: its queue entry names a free inode, which
 * is nothing to journal, not damage. */
static void test_freed_while_queued(void)
{
	struct bdev *bd = tf_mkfs(BS, 16u << 20);
	struct mfs_fs *fs = tf_mount_opts(bd, &jopts);
	uint64_t ino = create(fs, "f");
	char buf[2 * BS];

	memset(buf, 'q', sizeof(buf));
	put(fs, ino, buf, sizeof(buf), 0);
	t_ok(mfs_fsync(fs, ino, false));
	put(fs, ino, buf, sizeof(buf), 0);    /* pending, queued */
	t_eq(stat_of(fs, "jdata_pages_pending"), 2);
	t_ok(mfs_unlink(fs, &tf_root, MFS_ROOT_INO, "f"));
	mfs_forget(fs, ino, 1);               /* freed now */
	t_eq(stat_of(fs, "jdata_pages_pending"), 0);
	t_ok(mfs_sync(fs));
	tf_unmount_check(fs, bd);
	fs = tf_mount(bd);                    /* refused if marked with errors */
	tf_unmount_check(fs, bd);
	bdev_close(bd);
}

/*
 * Pages dropped by reclaim after they were journalled, before the journal
 * wrote them home, are read back from the journal: their home block
 * still holds what the file had before.  Every other block is rewritten,
 * so that one readahead batch mixes pages from the journal and from the
 * disk.
 */
static void test_read_back_from_journal(void)
{
	struct bdev *bd = tf_mkfs(BS, 32u << 20);
	struct mfs_fs *fs = tf_mount(bd);
	uint64_t big = create(fs, "big"), f = create(fs, "f");
	char *buf = malloc(4u << 20), *got = malloc(200 * BS);

	memset(buf, 'o', 4u << 20);
	put(fs, big, buf, 4u << 20, 0);
	put(fs, f, buf, 200 * BS, 0);        /* old contents, home */
	t_ok(mfs_unmount(fs));
	fs = tf_mount_opts(bd, &jopts);
	memset(buf, 'n', BS);
	for (uint32_t b = 0; b < 200; b += 2)
		put(fs, f, buf, BS, (uint64_t)b * BS);   /* rewrites: pending */
	t_ok(mfs_fsync(fs, f, false));       /* journalled, not home */
	for (uint64_t off = 0; off + 200 * BS <= (4u << 20); off += 200 * BS)
		get(fs, big, got, 200 * BS, off);   /* the cache (1 MiB) turns over */
	t_assert(stat_of(fs, "jnl_checkpoints") == 0, "a checkpoint ran: the test "
		 "proves nothing");
	get(fs, f, got, 200 * BS, 0);
	for (uint32_t i = 0; i < 200 * BS; i++)
		t_assert(got[i] == (i / BS % 2 ? 'o' : 'n'), "byte %" PRIu32 " reads "
			 "'%c': the page came back from its stale home, not from the "
			 "journal", i, got[i]);
	tf_unmount_check(fs, bd);
	free(buf);
	free(got);
	bdev_close(bd);
}

/*
 * chattr -j: the file's journalled copies must not come back over what it
 * writes directly afterwards.  Its last journalled version is in the log,
 * not yet home, when the flag goes; then it is rewritten in ordered mode
 * and fsynced; a crash must find the ordered write, not a replay of the
 * older copy.  And chattr +j on a file with dirty ordered pages keeps them.
 */
static void test_switch_flag(void)
{
	struct mfs_mount_opts o = jopts;
	struct bdev *bd = tf_mkfs(BS, 16u << 20), *img;
	struct mfs_fs *fs;
	uint64_t ino;
	char buf[4 * BS], got[4 * BS];

	o.data = MFS_DATA_ORDERED;
	fs = tf_mount_opts(bd, &o);
	ino = create(fs, "f");
	memset(buf, 'a', sizeof(buf));
	put(fs, ino, buf, sizeof(buf), 0);         /* ordered, dirty */
	t_ok(mfs_set_flags(fs, &tf_root, ino, MFS_JOURNAL_DATA_FL));
	memset(buf, 'b', BS);
	put(fs, ino, buf, BS, 0);                  /* journalled, pending */
	t_eq(stat_of(fs, "jdata_pages_pending"), 1);   /* the table switched */
	t_ok(mfs_fsync(fs, ino, false));           /* in the log only */
	bdev_wrap_record(bd, true);
	t_ok(mfs_set_flags(fs, &tf_root, ino, 0));
	memset(buf, 'c', BS);
	put(fs, ino, buf, BS, 0);                  /* ordered again */
	t_ok(mfs_fsync(fs, ino, false));
	t_ok(bdev_wrap_crash_image(bd, bdev_wrap_log_count(bd), BDEV_CUT_LOSE_ALL, 0, &img));
	t_ok(mfs_unmount(fs));
	fs = tf_mount(img);
	get(fs, ino, got, sizeof(got), 0);
	for (uint32_t i = 0; i < sizeof(got); i++)
		t_assert(got[i] == (i < BS ? 'c' : 'a'), "byte %" PRIu32 " is '%c' after "
			 "chattr -j and a crash", i, got[i]);
	tf_unmount_check(fs, img);
	bdev_close(img);
	bdev_close(bd);
}

/*
 * A reader racing a truncation: pages it reads past the new end, while
 * the blocks are still mapped, must not come from the journal's copies
 * and stay cached, to show when the file grows again.
 */
#define TR_BLOCKS 48u

struct tr {
	struct mfs_fs *fs;
	uint64_t ino;
	_Atomic bool stop;
};

static void *tr_reader(void *arg)
{
	struct tr *r = arg;
	struct mfs_file *f;
	char *buf = malloc(TR_BLOCKS * BS);

	t_ok(mfs_open(r->fs, &tf_root, r->ino, O_RDONLY, &f));
	while (!atomic_load(&r->stop))
		t_assert(mfs_read(r->fs, f, buf, TR_BLOCKS * BS, 0) >= 0, "read");
	t_ok(mfs_release(r->fs, f));
	free(buf);
	return NULL;
}

static void test_truncate_races_reader(void)
{
	struct bdev *bd = tf_mkfs(BS, 16u << 20);
	struct tr r = { .fs = tf_mount_opts(bd, &jopts) };
	struct mfs_setattr down = { .valid = MFS_SET_SIZE, .size = BS };
	struct mfs_setattr up = { .valid = MFS_SET_SIZE, .size = TR_BLOCKS * BS };
	char *buf = malloc(TR_BLOCKS * BS);
	pthread_t t;

	r.ino = create(r.fs, "f");
	atomic_store(&r.stop, false);
	t_ok(-pthread_create(&t, NULL, tr_reader, &r));
	for (int i = 0; i < 300; i++) {
		memset(buf, 'A' + i % 26, TR_BLOCKS * BS);
		put(r.fs, r.ino, buf, TR_BLOCKS * BS, 0);  /* grows: journalled */
		t_ok(mfs_setattr(r.fs, &tf_root, r.ino, &down, NULL));
		t_ok(mfs_setattr(r.fs, &tf_root, r.ino, &up, NULL));
		get(r.fs, r.ino, buf, TR_BLOCKS * BS, 0);
		for (uint32_t k = BS; k < TR_BLOCKS * BS; k++)
			t_assert(!buf[k], "round %d: byte %" PRIu32 " is '%c' after a "
				 "truncation down and up, not zero", i, k, buf[k]);
		down.size = 0;
		t_ok(mfs_setattr(r.fs, &tf_root, r.ino, &down, NULL));
		down.size = BS;
	}
	atomic_store(&r.stop, true);
	pthread_join(t, NULL);
	free(buf);
	tf_unmount_check(r.fs, bd);
	bdev_close(bd);
}

/* The same race against a punched hole, which leaves the size: a page of
 * the hole read while its block was still mapped must not stay cached
 * (in either data mode). */
static void punch_races_reader(enum mfs_data_mode mode)
{
	struct mfs_mount_opts o = jopts;
	struct bdev *bd = tf_mkfs(BS, 16u << 20);
	struct tr r;
	char *buf = malloc(TR_BLOCKS * BS);
	struct mfs_file *f;
	pthread_t t;

	o.data = mode;
	r.fs = tf_mount_opts(bd, &o);
	r.ino = create(r.fs, "f");
	atomic_store(&r.stop, false);
	t_ok(-pthread_create(&t, NULL, tr_reader, &r));
	t_ok(mfs_open(r.fs, &tf_root, r.ino, O_RDWR, &f));
	for (int i = 0; i < 300; i++) {
		memset(buf, 'A' + i % 26, TR_BLOCKS * BS);
		put(r.fs, r.ino, buf, TR_BLOCKS * BS, 0);
		t_ok(mfs_fsync(r.fs, r.ino, false));
		t_ok(mfs_fallocate(r.fs, &tf_root, f, FALLOC_FL_PUNCH_HOLE |
				   FALLOC_FL_KEEP_SIZE, BS, (TR_BLOCKS - 1) * BS));
		get(r.fs, r.ino, buf, TR_BLOCKS * BS, 0);
		for (uint32_t k = BS; k < TR_BLOCKS * BS; k++)
			t_assert(!buf[k], "round %d: byte %" PRIu32 " is '%c' after a "
				 "punched hole, not zero", i, k, buf[k]);
	}
	t_ok(mfs_release(r.fs, f));
	atomic_store(&r.stop, true);
	pthread_join(t, NULL);
	free(buf);
	tf_unmount_check(r.fs, bd);
	bdev_close(bd);
}

static void test_punch_races_reader(void)
{
	punch_races_reader(MFS_DATA_ORDERED);
	punch_races_reader(MFS_DATA_JOURNAL);
}

/* ---- a writer racing the journal ----------------------------------------- */

#define RACE_BLOCKS 8u

struct race {
	struct mfs_fs *fs;
	uint64_t ino;
	_Atomic bool stop;
};

/* Whole blocks, each of one byte value that grows with every pass: a block
 * journalled while half filled would hold two values. */
static void *writer(void *arg)
{
	struct race *r = arg;
	struct mfs_file *f;
	char buf[BS];

	t_ok(mfs_open(r->fs, &tf_root, r->ino, O_RDWR, &f));
	for (unsigned v = 1; !atomic_load(&r->stop); v++) {
		memset(buf, (int)(v % 250) + 1, BS);
		t_eq(mfs_write(r->fs, &tf_root, f, buf, BS,
			       (uint64_t)(v % RACE_BLOCKS) * BS, 0), BS);
	}
	t_ok(mfs_release(r->fs, f));
	return NULL;
}

static void check_blocks_whole(struct bdev *img, uint64_t ino)
{
	struct mfs_fs *fs = tf_mount(img);
	char got[RACE_BLOCKS * BS];

	get(fs, ino, got, sizeof(got), 0);
	for (uint32_t b = 0; b < RACE_BLOCKS; b++)
		for (uint32_t i = 1; i < BS; i++)
			t_assert(got[b * BS + i] == got[b * BS], "block %" PRIu32 " holds "
				 "byte %u at 0 and %u at %" PRIu32 ": two writes mixed",
				 b, got[b * BS], got[b * BS + i], i);
	tf_unmount_check(fs, img);
}

/* Syncs racing the writer: fewer under ThreadSanitizer, where each costs
 * ten times as much and the races, not their number, are what it checks. */
#ifdef __SANITIZE_THREAD__
#define RACE_SYNCS 150
#else
#define RACE_SYNCS 400
#endif

static void test_writer_races_journal(void)
{
	struct bdev *bd = tf_mkfs(BS, 16u << 20), *img;
	struct race r;
	pthread_t t;
	char buf[RACE_BLOCKS * BS];
	size_t cuts[17];
	unsigned ncuts = 0;

	r.fs = tf_mount_opts(bd, &jopts);
	r.ino = create(r.fs, "race");
	memset(buf, 1, sizeof(buf));
	put(r.fs, r.ino, buf, sizeof(buf), 0);
	t_ok(mfs_sync(r.fs));
	atomic_store(&r.stop, false);
	bdev_wrap_record(bd, true);
	t_ok(-pthread_create(&t, NULL, writer, &r));
	for (int i = 0; i < RACE_SYNCS; i++) {
		t_ok(i % 3 ? mfs_fsync(r.fs, r.ino, false) : mfs_sync(r.fs));
		if (i % 25 == 0 && ncuts < 16)
			cuts[ncuts++] = bdev_wrap_log_count(bd);
	}
	atomic_store(&r.stop, true);
	pthread_join(t, NULL);
	cuts[ncuts++] = bdev_wrap_log_count(bd);
	t_ok(mfs_unmount(r.fs));
	for (unsigned i = 0; i < ncuts; i++) {
		t_ok(bdev_wrap_crash_image(bd, cuts[i], BDEV_CUT_LOSE_ALL, 0, &img));
		check_blocks_whole(img, r.ino);
		bdev_close(img);
	}
	t_ok(bdev_wrap_crash_image(bd, bdev_wrap_log_count(bd), BDEV_CUT_LOSE_ALL, 0, &img));
	check_blocks_whole(img, r.ino);
	bdev_close(img);
	bdev_close(bd);
}

/*
 * A small journal under a small cache: the journal may pin half the
 * cache, and a transaction half of that (63 blocks here), fewer than a
 * write chunk or a gathering of journalled data asked for.  And a rewrite
 * of four times the cache makes every page pending: the writer, inside
 * its handle, found no page to allocate.
 */
static void small_journal_rewrite(uint32_t bs)
{
	struct fmt_mkfs_opts mo = { .block_size = bs, .zeroed = true,
				    .now = 1700000000, .journal_bytes = 1024u * bs };
	struct mfs_mount_opts o = jopts;
	struct mfs_setattr sa = { .valid = MFS_SET_SIZE, .size = 5000 };
	struct bdev *bd;
	struct mfs_fs *fs;
	uint64_t ino;
	size_t len = 4u << 20;
	char *buf = malloc(len), *got = malloc(len);

	bd = t_dev_mem(64u << 20, bs);
	t_ok(fmt_mkfs(bd, &mo));
	o.cache_bytes = 1u << 20;
	fs = tf_mount_opts(bd, &o);
	ino = create(fs, "big");
	memset(buf, 'a', len);
	put(fs, ino, buf, len, 0);
	t_ok(mfs_fsync(fs, ino, false));
	memset(buf, 'b', len);
	put(fs, ino, buf, len, 0);              /* rewrites: pending */
	t_ok(mfs_fsync(fs, ino, false));
	t_eq(stat_of(fs, "jdata_pages_pending"), 0);
	tf_unmount_check(fs, bd);
	fs = tf_mount(bd);
	get(fs, ino, got, len, 0);
	t_assert(!memcmp(got, buf, len), "the rewrite did not survive");
	tf_unmount_check(fs, bd);
	fs = tf_mount_opts(bd, &o);
	put(fs, ino, buf, len, 0);
	t_ok(mfs_setattr(fs, &tf_root, ino, &sa, NULL));
	t_ok(mfs_fsync(fs, ino, false));
	tf_unmount_check(fs, bd);
	free(buf);
	free(got);
	bdev_close(bd);
}

/*
 * A sync while the thread works through its queue: the files it has
 * taken but not yet gathered are the thread's until it reaches them, and
 * the sync's writeback could not queue them again.  After the sync, a
 * power cut keeps every file's rewrite.
 */
#define SYNC_FILES 600u

static void test_sync_during_thread_round(void)
{
	struct mfs_mount_opts o = jopts;
	struct bdev *bd = tf_mkfs(BS, 32u << 20), *img;
	struct mfs_fs *fs;
	uint64_t *ino = calloc(SYNC_FILES, sizeof(*ino)), base;
	char buf[BS], got[BS], name[16];
	size_t cut;

	o.commit_s = 1;
	o.cache_bytes = 8u << 20;
	fs = tf_mount_opts(bd, &o);
	memset(buf, 'o', BS);
	for (uint32_t i = 0; i < SYNC_FILES; i++) {
		snprintf(name, sizeof(name), "s%u", i);
		ino[i] = create(fs, name);
		put(fs, ino[i], buf, BS, 0);
	}
	t_ok(mfs_sync(fs));
	bdev_wrap_record(bd, true);
	memset(buf, 'n', BS);
	for (uint32_t i = 0; i < SYNC_FILES; i++)
		put(fs, ino[i], buf, BS, 0);     /* rewrites: pending, queued */
	base = stat_of(fs, "jdata_pages_journalled");
	while (stat_of(fs, "jdata_pages_journalled") == base)
		;                                /* the thread has begun */
	t_ok(mfs_sync(fs));
	cut = bdev_wrap_log_count(bd);
	t_ok(mfs_unmount(fs));
	t_ok(bdev_wrap_crash_image(bd, cut, BDEV_CUT_LOSE_ALL, 0, &img));
	fs = tf_mount(img);
	for (uint32_t i = 0; i < SYNC_FILES; i++) {
		get(fs, ino[i], got, BS, 0);
		t_assert(!memcmp(got, buf, BS), "file %" PRIu32 " of %u lost its "
			 "rewrite, synced while the thread had taken it", i, SYNC_FILES);
	}
	tf_unmount_check(fs, img);
	bdev_close(img);
	bdev_close(bd);
	free(ino);
}

/* At 4 KiB blocks, then at the 1 KiB of the other cases. */
static void test_small_journal_rewrite(void)
{
	small_journal_rewrite(4096);
	small_journal_rewrite(BS);
}

static void setup(void)
{
	mlog_set_level(MLOG_ERR);
}

T_MAIN_SETUP(setup(),
	     T_CASE(test_rewrite_logged_once),
	     T_CASE(test_truncate_ends_pending),
	     T_CASE(test_freed_while_queued),
	     T_CASE(test_switch_flag),
	     T_CASE(test_truncate_races_reader),
	     T_CASE(test_punch_races_reader),
	     T_CASE(test_read_back_from_journal),
	     T_CASE(test_writer_races_journal),
	     T_CASE(test_small_journal_rewrite),
	     T_CASE(test_sync_during_thread_round))
