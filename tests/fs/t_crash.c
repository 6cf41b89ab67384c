/*
 * t_crash - power cuts at many points of a recorded workload (creates,
 * writes, fsyncs, unlinks of open files, renames, mkdir/rmdir,
 * truncates): each image must mount (journal replay, orphan list), hold
 * every file fsynced before the cut with its content, and unmount to an
 * image whose bitmaps, counts, block maps and link counts all agree.
 */
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>

#include "bdev_test.h"
#include "t_fs.h"
#include "t_dev.h"

#define FILES 24

struct kept {
	char name[16];
	size_t len;
	unsigned seed;
	size_t log_pos;      /* the log entries its fsync had completed by */
};

static struct kept kept[FILES];
static unsigned nkept;
static uint32_t bs = 1024;

static uint64_t create(struct mfs_fs *fs, const char *name)
{
	struct stat st;
	int err = mfs_mknod(fs, &tf_root, MFS_ROOT_INO, name, S_IFREG | 0644, 0, &st, NULL);

	t_ok(err);
	mfs_forget(fs, st.st_ino, 1);
	return st.st_ino;
}

static void churn(struct mfs_fs *fs, int i)
{
	char a[16], b[16];
	struct mfs_setattr sa = { .valid = MFS_SET_SIZE, .size = 700 };
	struct mfs_file *f;
	struct stat st;
	uint64_t ino;

	snprintf(a, sizeof(a), "c%d", i);
	snprintf(b, sizeof(b), "r%d", i);
	ino = create(fs, a);
	tf_write(fs, ino, 0, (size_t)(i % 5 + 1) * bs + 100, (unsigned)i);
	if (i % 3 == 0) {
		t_ok(mfs_rename(fs, &tf_root, MFS_ROOT_INO, a, MFS_ROOT_INO, b, 0));
		memcpy(a, b, sizeof(a));
	}
	if (i % 4 == 1) {
		t_ok(mfs_setattr(fs, &tf_root, ino, &sa, &st));
	}
	if (i % 4 == 2) {            /* unlinked while open: the orphan list */
		t_ok(mfs_open(fs, &tf_root, ino, O_RDONLY, &f));
		t_ok(mfs_unlink(fs, &tf_root, MFS_ROOT_INO, a));
		t_ok(mfs_fsync(fs, MFS_ROOT_INO, false));
		t_ok(mfs_release(fs, f));
	}
	snprintf(a, sizeof(a), "d%d", i);
	t_ok(mfs_mkdir(fs, &tf_root, MFS_ROOT_INO, a, 0755, &st, NULL));
	mfs_forget(fs, st.st_ino, 1);
	if (i % 2)
		t_ok(mfs_rmdir(fs, &tf_root, MFS_ROOT_INO, a));
}

static void keep(struct mfs_fs *fs, struct bdev *bd, int i)
{
	struct kept *k = &kept[nkept++];
	uint64_t ino;

	snprintf(k->name, sizeof(k->name), "k%d", i);
	k->len = (size_t)(i % 7) * bs + 333;
	k->seed = 1000u + (unsigned)i;
	ino = create(fs, k->name);
	tf_write(fs, ino, 0, k->len, k->seed);
	t_ok(mfs_fsync(fs, ino, i % 2));
	t_ok(mfs_fsync(fs, MFS_ROOT_INO, false));    /* its entry too */
	k->log_pos = bdev_wrap_log_count(bd);
}

/* A file fsynced whole, then truncated to nothing and its blocks taken
 * by new files: until the truncation commits, a crash must give it back
 * whole, so its blocks may not be reused before that. */
#define VICTIM_LEN (40 * 1024 + 5)

static void victim_make(struct mfs_fs *fs)
{
	uint64_t ino = create(fs, "victim");

	tf_write(fs, ino, 0, VICTIM_LEN, 77);
	t_ok(mfs_fsync(fs, ino, false));
	t_ok(mfs_fsync(fs, MFS_ROOT_INO, false));
}

static void victim_cut(struct mfs_fs *fs)
{
	struct mfs_setattr sa = { .valid = MFS_SET_SIZE, .size = 0 };
	struct stat st;

	t_ok(mfs_setattr(fs, &tf_root, tf_ino(fs, "victim"), &sa, &st));
}

static void victim_check(struct mfs_fs *fs)
{
	uint64_t ino = tf_ino(fs, "victim");
	struct stat st;

	t_ok(mfs_getattr(fs, ino, &st));
	if (st.st_size)
		tf_verify(fs, ino, 0, VICTIM_LEN, 77);
}

/* A slow symlink's target is data in a block of its own: when another
 * file's fsync commits the symlink's creation, the target must be home
 * first, as any ordered data. */
/* An overwrite of @ino's block 1 with @seed, fsynced (fdatasync if
 * @datasync): it takes @flushes flushes, after which a power cut keeps it. */
static void overwrite_synced(struct bdev *bd, struct mfs_fs **fs, uint64_t ino,
			     unsigned seed, bool datasync, uint64_t flushes)
{
	struct bdev_stats a, b;
	struct bdev *img;
	struct mfs_fs *cut;

	tf_write(*fs, ino, bs, bs, seed);
	bdev_get_stats(bd, &a);
	t_ok(mfs_fsync(*fs, ino, datasync));
	bdev_get_stats(bd, &b);
	t_assert(b.flushes - a.flushes == flushes, "%s of an overwrite made %lu "
		 "flushes, not %lu", datasync ? "fdatasync" : "fsync",
		 (unsigned long)(b.flushes - a.flushes), (unsigned long)flushes);
	t_ok(bdev_wrap_crash_image(bd, bdev_wrap_log_count(bd), BDEV_CUT_LOSE_ALL, 0, &img));
	cut = tf_mount(img);
	tf_verify(cut, ino, bs, bs, seed);
	tf_unmount_check(cut, img);
	bdev_close(img);
}

/*
 * An fsync of an overwrite commits the new times: no ordered data, so the
 * commit is one batch and one flush, which covers the data written before
 * it too: no second one.  An fdatasync commits nothing and flushes once
 * itself.  Either way the data survives a cut right after it.
 */
static void test_overwrite(void)
{
	struct bdev *bd = tf_mkfs(bs, 16u << 20);
	struct mfs_fs *fs = tf_mount(bd);
	uint64_t ino = create(fs, "over");

	tf_write(fs, ino, 0, 4 * bs, 1);
	t_ok(mfs_fsync(fs, ino, false));
	t_ok(mfs_fsync(fs, MFS_ROOT_INO, false));
	bdev_wrap_record(bd, true);
	overwrite_synced(bd, &fs, ino, 2, false, 1);
	overwrite_synced(bd, &fs, ino, 3, true, 1);
	overwrite_synced(bd, &fs, ino, 4, false, 1);
	t_ok(mfs_unmount(fs));
	bdev_close(bd);
}

static void test_slow_symlink(void)
{
	struct bdev *bd = tf_mkfs(bs, 16u << 20), *img;
	struct mfs_fs *fs = tf_mount(bd);
	char target[300], got[300];
	struct stat st;
	uint64_t ino;
	size_t pos;

	memset(target, 't', sizeof(target) - 1);
	target[sizeof(target) - 1] = 0;
	bdev_wrap_record(bd, true);
	t_ok(mfs_symlink(fs, &tf_root, MFS_ROOT_INO, "link", target, &st, NULL));
	mfs_forget(fs, st.st_ino, 1);
	ino = create(fs, "other");
	tf_write(fs, ino, 0, 100, 5);
	t_ok(mfs_fsync(fs, ino, false));
	pos = bdev_wrap_log_count(bd);
	t_ok(mfs_unmount(fs));
	t_ok(bdev_wrap_crash_image(bd, pos, BDEV_CUT_LOSE_ALL, 0, &img));
	fs = tf_mount(img);
	t_eq(mfs_readlink(fs, tf_ino(fs, "link"), got, sizeof(got)), sizeof(target) - 1);
	t_assert(!memcmp(got, target, sizeof(target) - 1), "the target of a slow "
		 "symlink was lost: the commit went before its block");
	tf_unmount_check(fs, img);
	bdev_close(img);
	bdev_close(bd);
}

/* A file of @n blocks, none next to another: freeing it takes many
 * journal handles, and commits fall between them. */
#define FRAG_BLOCKS 600

static uint64_t fragmented(struct mfs_fs *fs)
{
	uint64_t a = create(fs, "frag"), b = create(fs, "filler");

	for (uint32_t i = 0; i < FRAG_BLOCKS; i++) {
		tf_write(fs, a, (uint64_t)i * bs, bs, 3);
		tf_write(fs, b, (uint64_t)i * bs, bs, 4);
	}
	return a;
}

/* Cut before the truncation committed, the file is whole; after, grown
 * back to its old size, it must read as zeros: no block of the truncated
 * file may still be mapped past its end. */
static bool frag_check(struct bdev *img)
{
	struct mfs_setattr sa = { .valid = MFS_SET_SIZE, .size = FRAG_BLOCKS * bs };
	struct mfs_fs *fs = tf_mount(img);
	uint64_t ino = tf_ino(fs, "frag");
	struct mfs_file *f;
	uint8_t *buf = malloc(bs);
	struct stat st;

	t_assert(buf, "no memory");
	t_ok(mfs_getattr(fs, ino, &st));
	if (st.st_size == FRAG_BLOCKS * bs) {
		tf_verify(fs, ino, 0, FRAG_BLOCKS * bs, 3);
		tf_unmount_check(fs, img);
		free(buf);
		return false;
	}
	t_eq(st.st_size, 0);
	t_ok(mfs_setattr(fs, &tf_root, ino, &sa, &st));
	t_ok(mfs_open(fs, &tf_root, ino, O_RDONLY, &f));
	for (uint32_t i = 0; i < FRAG_BLOCKS; i++) {
		t_eq(mfs_read(fs, f, buf, bs, (uint64_t)i * bs), bs);
		for (uint32_t k = 0; k < bs; k++)
			t_assert(!buf[k], "block %u of the truncated file came back", i);
	}
	t_ok(mfs_release(fs, f));
	free(buf);
	tf_unmount_check(fs, img);
	return true;
}

/*
 * Truncation to nothing, cut after every flush it made.  It runs on a
 * cache of 256 blocks, where the journal may pin 128 and a transaction
 * takes at most 60 credits, fewer than the 64 a truncation's handle asks
 * for: each handle after the first commits the one before, and cuts fall
 * between them.
 */
static void test_truncate(void)
{
	struct mfs_setattr sa = { .valid = MFS_SET_SIZE, .size = 0 };
	struct mfs_mount_opts small = { .cache_bytes = 256u * bs };
	struct bdev *bd = tf_mkfs(bs, 16u << 20), *img;
	struct mfs_fs *fs = tf_mount(bd);
	uint64_t ino = fragmented(fs);
	struct stat st;
	size_t start, end, cuts = 0, cut_short = 0;

	t_ok(mfs_unmount(fs));
	fs = tf_mount_opts(bd, &small);
	bdev_wrap_record(bd, true);
	start = bdev_wrap_log_count(bd);
	t_ok(mfs_setattr(fs, &tf_root, ino, &sa, &st));
	end = bdev_wrap_log_count(bd);
	t_ok(mfs_unmount(fs));
	for (size_t i = start; i < end; i++) {
		if (!bdev_wrap_log(bd, i)->flush)
			continue;
		t_ok(bdev_wrap_crash_image(bd, i + 1, BDEV_CUT_LOSE_ALL, 0, &img));
		cut_short += frag_check(img);
		bdev_close(img);
		cuts++;
	}
	/* The cuts between its commits are the point. */
	t_assert(cut_short >= 2, "%zu of %zu cuts fell between the truncation's "
		 "commits", cut_short, cuts);
	bdev_close(bd);
}

/* Grown to three blocks after the cut, the file reads zeros past the size
 * the cut left: not the bytes of a write whose size did not commit.
 * Returns whether it had the old size. */
static bool tail_check(struct bdev *img)
{
	struct mfs_setattr sa = { .valid = MFS_SET_SIZE, .size = 3 * bs };
	struct mfs_fs *fs = tf_mount(img);
	uint64_t ino = tf_ino(fs, "tail");
	uint8_t buf[3 * 1024];
	struct mfs_file *f;
	struct stat st;
	uint64_t size;

	t_ok(mfs_getattr(fs, ino, &st));
	size = (uint64_t)st.st_size;
	t_assert(size == 1500 || size == 2400, "size %" PRIu64, size);
	t_ok(mfs_setattr(fs, &tf_root, ino, &sa, &st));
	t_ok(mfs_open(fs, &tf_root, ino, O_RDONLY, &f));
	t_eq(mfs_read(fs, f, buf, sizeof(buf), 0), sizeof(buf));
	t_ok(mfs_release(fs, f));
	for (uint64_t i = size; i < sizeof(buf); i++)
		t_assert(!buf[i], "grown from %" PRIu64 ", byte %" PRIu64 " is %u", size,
			 i, buf[i]);
	tf_unmount_check(fs, img);
	return size == 1500;
}

/* A write inside the last block, past the end, goes home in place before
 * its size commits: cut between the two, the bytes past the old end must
 * not come back when the file grows. */
static void test_tail(void)
{
	struct bdev *bd = tf_mkfs(bs, 16u << 20), *img;
	struct mfs_fs *fs = tf_mount(bd);
	uint64_t ino = create(fs, "tail");
	size_t start, end, old_size = 0;

	tf_write(fs, ino, 0, 1500, 6);
	t_ok(mfs_fsync(fs, ino, false));
	bdev_wrap_record(bd, true);
	start = bdev_wrap_log_count(bd);
	tf_write(fs, ino, 1400, 1000, 7);
	t_ok(mfs_fsync(fs, ino, false));
	end = bdev_wrap_log_count(bd);
	t_ok(mfs_unmount(fs));
	for (size_t i = start; i < end; i++) {
		if (!bdev_wrap_log(bd, i)->flush)
			continue;
		t_ok(bdev_wrap_crash_image(bd, i + 1, BDEV_CUT_LOSE_ALL, 0, &img));
		old_size += tail_check(img);
		bdev_close(img);
	}
	t_assert(old_size, "no cut fell between the data and its size");
	bdev_close(bd);
}

/* More unused inodes than the cache keeps, all looked up after @keep. */
#define CROWD 8300

static void crowd_make(struct mfs_fs *fs)
{
	struct stat st;
	char name[16];

	t_ok(mfs_mkdir(fs, &tf_root, MFS_ROOT_INO, "crowd", 0755, &st, NULL));
	mfs_forget(fs, st.st_ino, 1);
	for (int i = 0; i < CROWD; i++) {
		snprintf(name, sizeof(name), "c%d", i);
		t_ok(mfs_mknod(fs, &tf_root, st.st_ino, name, S_IFREG | 0644, 0, NULL, NULL));
	}
}

static void crowd_walk(struct mfs_fs *fs)
{
	uint64_t dir = tf_ino(fs, "crowd");
	struct stat st;
	char name[16];

	for (int i = 0; i < CROWD; i++) {
		snprintf(name, sizeof(name), "c%d", i);
		t_ok(mfs_lookup(fs, &tf_root, dir, name, &st, NULL));
		mfs_forget(fs, st.st_ino, 1);
	}
}

/*
 * A file changed, pushed out of the inode cache by others, read back and
 * fsynced: the fsync must still commit the transaction of its change.
 * The unmounts close the journal while its thread writes a checkpoint (the
 * crowd filled the log past the mark): the stop must not wait for the
 * next periodic commit, ten minutes away here.
 */
static void test_evicted(void)
{
	struct mfs_mount_opts o = { .cache_bytes = 4u << 20, .commit_s = 600 };
	struct fmt_mkfs_opts mo = { .block_size = bs, .inodes = CROWD + 512, .zeroed = true,
				    .now = 1700000000, .csum_seed = 0x5eed };
	struct bdev *bd, *img;
	struct mfs_fs *fs;
	uint64_t ino;
	size_t pos;

	t_watchdog(120, "an unmount waited out the commit interval");
	bd = t_dev_mem(16u << 20, bs);
	t_ok(fmt_mkfs(bd, &mo));
	fs = tf_mount_opts(bd, &o);
	crowd_make(fs);
	t_ok(mfs_unmount(fs));
	fs = tf_mount_opts(bd, &o);
	bdev_wrap_record(bd, true);
	ino = create(fs, "kept");
	tf_write(fs, ino, 0, 100, 8);
	crowd_walk(fs);
	t_ok(mfs_fsync(fs, tf_ino(fs, "kept"), false));
	pos = bdev_wrap_log_count(bd);
	t_ok(mfs_unmount(fs));
	t_ok(bdev_wrap_crash_image(bd, pos, BDEV_CUT_LOSE_ALL, 0, &img));
	fs = tf_mount(img);
	tf_verify(fs, tf_ino(fs, "kept"), 0, 100, 8);
	tf_unmount_check(fs, img);
	t_watchdog_off();
	bdev_close(img);
	bdev_close(bd);
}

static void check_image(struct bdev *img, size_t prefix)
{
	struct mfs_fs *fs = tf_mount(img);

	if (prefix)
		victim_check(fs);

	for (unsigned i = 0; i < nkept; i++) {
		if (kept[i].log_pos > prefix)
			continue;
		tf_verify(fs, tf_ino(fs, kept[i].name), 0, kept[i].len, kept[i].seed);
	}
	tf_unmount_check(fs, img);
}

/* Every crash image of the log: losing all, random writes, whole blocks. */
static size_t cut_everywhere(struct bdev *bd, size_t n)
{
	const char *every = getenv("MISCFS_CRASH_EVERY");   /* sampled builds */
	size_t images = 0, step = (1 + n / 97) * (every && atoi(every) > 1 ? atoi(every) : 1);

	for (size_t p = 0; p <= n; p += step) {
		for (int mode = 0; mode < 3; mode++) {
			struct bdev *img;

			t_ok(bdev_wrap_crash_image(bd, p, mode == 0 ? BDEV_CUT_LOSE_ALL :
						  mode == 1 ? BDEV_CUT_RANDOM : BDEV_CUT_BLOCKS,
						  p * 31 + (size_t)mode, &img));
			check_image(img, p);
			bdev_close(img);
			images++;
		}
	}
	return images;
}

/* The recorded workload, cut at many points. */
static void test_workload(void)
{
	struct mfs_mount_opts o = { .cache_bytes = 2u << 20, .no_flusher = true,
				    .commit_s = 60 };
	struct bdev *bd = tf_mkfs(bs, 16u << 20);
	struct mfs_fs *fs = tf_mount_opts(bd, &o);
	size_t n, images;

	victim_make(fs);
	t_ok(mfs_sync(fs));
	bdev_wrap_record(bd, true);
	for (int i = 0; i < FILES; i++) {
		if (i == 1)
			victim_cut(fs);
		churn(fs, i);
		if (i % 2 == 0)
			keep(fs, bd, i);
	}
	t_ok(mfs_unmount(fs));
	bdev_wrap_record(bd, false);
	n = bdev_wrap_log_count(bd);
	images = cut_everywhere(bd, n);
	tf_check(bd, true);
	bdev_close(bd);
	printf("ok: %zu crash images of a log of %zu entries\n", images, n);
}

T_MAIN(T_CASE(test_slow_symlink),
       T_CASE(test_overwrite),
       T_CASE(test_truncate),
       T_CASE(test_tail),
       T_CASE(test_evicted),
       T_CASE(test_workload))
