/*
 * t_faults - the device fails in the middle of operations, as the
 * kernel's fail_make_request makes it fail: the N-th read, write or flush
 * (once), or every request from the N-th on (the device is gone), with N
 * swept over every request of a workload; or one block fails every read
 * and write, for every block the workload writes.
 *
 * The workload (t_work.h) mounts a populated image, reads all of it, runs
 * every kind of operation on new files (fsyncing some), then renames and
 * removes everything it found, syncs and unmounts.  A dry run counts its
 * requests; then for every N:
 *
 *   - nothing crashes; a sanitizer build finds no bad access and no leak;
 *   - every call returns success, EIO, or EROFS once the journal aborted
 *     (or an errno that follows from an earlier failed call);
 *   - the fault reaches someone: a call returns it, the unmount does, or
 *     the superblock on the disk says the filesystem has errors;
 *   - with the fault cleared, the still-mounted filesystem reads back
 *     every file whose fsync returned 0, and the unmount returns;
 *   - fsck -y leaves an image that fsck -fn finds clean, and every file
 *     whose fsync returned 0 has its contents.
 *
 * Usage: t_faults [CASE...]; MISCFS_FAULT_STEP=K tries every K-th N only
 * (default 1: every request), and a failure names the case and N, which
 * MISCFS_FAULT_N=N runs alone.
 */
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>

#include "bdev_test.h"
#include "fsck.h"
#include "t_dev.h"
#include "t_fs.h"
#include "t_work.h"
#include "util.h"

#define BS        1024u
#define DEV_BYTES (8u << 20)

static struct bdev *base;           /* the populated image every run starts from */
static uint64_t step = 1, only_n;
static uint64_t unheard;            /* read faults no caller met (readahead) */

struct fault {
	const char *name;
	unsigned int ops;
	uint64_t count;                     /* requests failed from the N-th on */
	enum mfs_data_mode data;
	const uint64_t *blocks;             /* bad blocks, one per run N */
	size_t nblocks;
};

struct run {
	const struct fault *f;
	uint64_t n;
};

static void bad_errno(void *arg, const char *what, int err)
{
	const struct run *r = arg;

	t_fail("%s N=%" PRIu64 ": %s returned %d (%s), not an error of a failing device",
	       r->f->name, r->n, what, err, strerror(-err));
}

/* Errors beyond those tw_allowed() takes are acceptable on a damaged
 * image but not here: a failing device gives EIO, and EROFS after. */
static void strict_errno(void *arg, const char *what, int err)
{
	if (err != -EIO && err != -EROFS && err != -ENOENT && err != -ENOTEMPTY)
		bad_errno(arg, what, err);
}

static struct mfs_mount_opts opts(enum mfs_data_mode data)
{
	/* No timer-driven writeback or commit: the requests come in the
	 * same order in every run, so N names the same one. */
	return (struct mfs_mount_opts){ .cache_bytes = 2u << 20, .commit_s = 3600,
					.no_flusher = true, .force = true, .data = data };
}

static struct bdev *copy_base(void)
{
	struct bdev *bd = t_dev_mem(DEV_BYTES, BS);

	memcpy(bdev_mem_data(bd), bdev_mem_data(base), DEV_BYTES);
	return bd;
}

static bool disk_errors(struct bdev *bd)
{
	const struct mfs_super *sb = (void *)((char *)bdev_mem_data(bd) + MFS_SB_OFFSET);

	return le16toh(sb->s_state) & MFS_STATE_ERRORS;
}

static void verify_kept(struct mfs_fs *fs, const struct tw *w)
{
	for (unsigned int i = 0; i < w->nkept; i++)
		tf_verify(fs, tf_ino(fs, w->kept[i].name), 0, w->kept[i].len, w->kept[i].seed);
}

static enum fsck_answer quiet(void *arg, const struct fsck_report *r)
{
	(void)arg;
	return r->proposed;
}

/* fsck -fy, then the image must be clean and hold what was kept. */
static void repair_and_check(const struct run *r, struct bdev *bd, const struct tw *w)
{
	struct fsck_opts fo = { .mode = FSCK_YES, .force = true, .problem = quiet };
	struct mfs_mount_opts o = opts(r->f->data);
	struct fsck_result res;
	struct mfs_fs *fs;
	int st = fsck_run(bd, &fo, &res);

	t_assert(!(st & ~FSCK_EXIT_CORRECTED),
		 "%s N=%" PRIu64 ": fsck -fy: exit %d", r->f->name, r->n, st);
	tf_check(bd, false);
	t_ok(mfs_mount(bd, &o, &fs));
	verify_kept(fs, w);
	t_ok(mfs_unmount(fs));
}

/* Arm the fault of @f for the run's @n (0: none). */
static void arm(struct bdev *bd, const struct fault *f, uint64_t n)
{
	if (f->blocks && n)
		t_ok(bdev_wrap_fail(bd, f->blocks[n - 1] * BS, BS, f->ops));
	else
		t_ok(bdev_wrap_fail_nth(bd, f->ops, n, f->count));
}

static void disarm(struct bdev *bd)
{
	t_ok(bdev_wrap_fail(bd, 0, 0, 0));
	t_ok(bdev_wrap_fail_nth(bd, 0, 0, 0));
}

/* Mount, the workload, the unmount; returns the unmount's error, or the
 * mount's in @mounted. */
static int work(struct bdev *bd, const struct fault *f, struct tw *w, int *mounted)
{
	struct mfs_mount_opts o = opts(f->data);

	*mounted = mfs_mount(bd, &o, &w->fs);
	if (*mounted)
		return 0;
	tw_walk(w, 1000);
	tw_run(w);
	tw_clear(w, 1000);
	if (mfs_sync(w->fs))
		w->errors++;
	/* A fault met: it is gone now, and what was kept reads back through
	 * the filesystem that met it.  None yet: the unmount may meet it. */
	if (bdev_wrap_failed(bd)) {
		disarm(bd);
		verify_kept(w->fs, w);
	}
	return mfs_unmount(w->fs);
}

/* One run with the fault at @n (0: none); returns the requests of the
 * fault's kinds the run made. */
static uint64_t run_one(const struct fault *f, uint64_t n)
{
	struct run r = { f, n };
	struct tw w = { .bad = strict_errno, .arg = &r };
	struct bdev *bd = copy_base();
	uint64_t before = bdev_wrap_count(bd, f->ops), made;
	int mounted, unmounted;

	arm(bd, f, n);
	unmounted = work(bd, f, &w, &mounted);
	disarm(bd);
	made = bdev_wrap_count(bd, f->ops) - before;
	/* A failed read may have been a readahead, which is a hint: whoever
	 * needs the block reads it again.  A failed write or flush loses
	 * data unless someone hears of it. */
	if (bdev_wrap_failed(bd) && !mounted && !unmounted && !w.errors && !disk_errors(bd)) {
		t_assert(f->ops == BDEV_WRAP_FAIL_READ || (f->blocks && !bdev_wrap_count(bd,
			 BDEV_WRAP_FAIL_WRITE)), "%s N=%" PRIu64 ": the fault met no caller "
			 "and no superblock", f->name, n);
		unheard++;
	}
	if (n == 0)
		t_assert(!mounted && !unmounted && !w.errors, "the run without a fault failed at %s",
			 w.first_fail ? w.first_fail : "mount or unmount");
	/* An unmount that returned 0 on an image not marked with errors
	 * wrote everything: no repair needed, whatever the workload met. */
	if (!mounted && !unmounted && !disk_errors(bd))
		tf_check(bd, false);
	repair_and_check(&r, bd, &w);
	bdev_close(bd);
	return made;
}

static void sweep(const struct fault *f)
{
	uint64_t total = f->blocks ? f->nblocks : run_one(f, 0), runs = 0;

	for (uint64_t n = only_n ? only_n : 1; n <= total; n += step) {
		run_one(f, n);
		runs++;
		if (only_n)
			break;
	}
	printf("ok: %s: %" PRIu64 " runs over %" PRIu64 " %s (%" PRIu64
	       " read faults unheard of: a readahead, read again)\n", f->name, runs, total,
	       f->blocks ? "blocks" : "requests", unheard);
	unheard = 0;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* Every block the workload writes, once each, in order. */
static uint64_t *written_blocks(size_t *count)
{
	struct fault none = { "none", BDEV_WRAP_FAIL_WRITE, 1, 0, NULL, 0 };
	struct run r = { &none, 0 };
	struct tw w = { .bad = strict_errno, .arg = &r };
	struct bdev *bd = copy_base();
	uint64_t *v = NULL;
	size_t n = 0, k = 0;
	int mounted;

	bdev_wrap_record(bd, true);
	t_ok(work(bd, &none, &w, &mounted));
	t_ok(mounted);
	for (size_t i = 0; i < bdev_wrap_log_count(bd); i++) {
		const struct bdev_wrap_log_entry *e = bdev_wrap_log(bd, i);

		for (uint64_t b = e->off / BS; !e->flush && b < (e->off + e->len) / BS; b++) {
			v = realloc(v, (n + 1) * sizeof(*v));
			t_assert(v, "no memory");
			v[n++] = b;
		}
	}
	qsort(v, n, sizeof(*v), cmp_u64);
	for (size_t i = 0; i < n; i++)
		if (!k || v[k - 1] != v[i])
			v[k++] = v[i];
	bdev_close(bd);
	*count = k;
	return v;
}

static void test_read_once(void)
{
	sweep(&(struct fault){ "read_once", BDEV_WRAP_FAIL_READ, 1, 0, NULL, 0 });
}

static void test_write_once(void)
{
	sweep(&(struct fault){ "write_once", BDEV_WRAP_FAIL_WRITE, 1, 0, NULL, 0 });
}

static void test_flush_once(void)
{
	sweep(&(struct fault){ "flush_once", BDEV_WRAP_FAIL_FLUSH, 1, 0, NULL, 0 });
}

/* The device is gone from the N-th request of any kind on. */
static void test_gone(void)
{
	sweep(&(struct fault){ "gone", BDEV_WRAP_FAIL_READ | BDEV_WRAP_FAIL_WRITE |
			       BDEV_WRAP_FAIL_FLUSH, UINT64_MAX, 0, NULL, 0 });
}

/* File data through the journal: its writes fail in the log or at
 * checkpoint, not in writeback. */
static void test_write_once_journal(void)
{
	sweep(&(struct fault){ "write_once_journal", BDEV_WRAP_FAIL_WRITE, 1, MFS_DATA_JOURNAL, NULL, 0 });
}

static void test_gone_journal(void)
{
	sweep(&(struct fault){ "gone_journal", BDEV_WRAP_FAIL_READ | BDEV_WRAP_FAIL_WRITE |
			       BDEV_WRAP_FAIL_FLUSH, UINT64_MAX, MFS_DATA_JOURNAL, NULL, 0 });
}

/* One block bad for good (reads and writes), for every block the
 * workload writes: the journal's, the inode tables', bitmaps', directory,
 * indirect and data blocks. */
static void test_bad_block(void)
{
	size_t n;
	uint64_t *blocks = written_blocks(&n);

	sweep(&(struct fault){ "bad_block", BDEV_WRAP_FAIL_READ | BDEV_WRAP_FAIL_WRITE, 0, 0,
			       blocks, n });
	free(blocks);
}

static uint64_t env_num(const char *name, uint64_t dflt)
{
	const char *v = getenv(name);

	return v && *v ? strtoull(v, NULL, 10) : dflt;
}

/* The image every run starts from: the workload's files and a tree for
 * the walk and the removal to meet. */
static void setup(void)
{
	struct mfs_mount_opts o = opts(MFS_DATA_DEFAULT);
	struct tw w = { .bad = NULL };
	struct mfs_fs *fs;

	step = env_num("MISCFS_FAULT_STEP", 1);
	only_n = env_num("MISCFS_FAULT_N", 0);
	if (!step)
		step = 1;
	base = tf_mkfs(BS, DEV_BYTES);
	t_ok(mfs_mount(base, &o, &fs));
	w.fs = fs;
	tw_run(&w);
	t_assert(!w.errors, "the workload failed at %s", w.first_fail);
	t_ok(mfs_rename(fs, &tf_root, MFS_ROOT_INO, "wd", MFS_ROOT_INO, "old", 0));
	for (unsigned int i = 0; i < w.nkept; i++)
		t_ok(mfs_rename(fs, &tf_root, MFS_ROOT_INO, w.kept[i].name, tf_ino(fs, "old"),
				w.kept[i].name, 0));
	t_ok(mfs_unmount(fs));
	tf_check(base, true);
}

T_MAIN_SETUP(setup(),
	     T_CASE(test_read_once),
	     T_CASE(test_write_once),
	     T_CASE(test_flush_once),
	     T_CASE(test_gone),
	     T_CASE(test_write_once_journal),
	     T_CASE(test_gone_journal),
	     T_CASE(test_bad_block))
