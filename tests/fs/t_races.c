/*
 * t_races - operations on one name from several threads at once, where a
 * call's answer must not depend on how the threads interleave:
 *
 * - a lookup, an unlink or a rename of a name that another thread
 *   creates and removes over and over finds the inode or ENOENT, never
 *   an inode freed in between (read back from disk as damage, -EUCLEAN,
 *   which also marks the filesystem with errors);
 * - open with O_CREAT of a name another thread unlinks over and over
 *   opens or creates it, never ENOENT;
 * - directories made and removed by several threads: a block one frees is
 *   not handed to another in the same transaction (its directory block
 *   then had two pages in the journal: EINVAL, and an inode left
 *   allocated with no links); and a mkdir that gets the number of an
 *   inode whose eviction is still ending waits for it inside its handle,
 *   so that end must not wait for what waits for the journal (it took
 *   the orphan list's lock while a free held it waiting for room in the
 *   journal: a deadlock, in eight runs of this case in ten).
 * - files extended by one write each while another thread writes every
 *   dirty page back: a page the write has mapped but not yet covered by
 *   i_size is written to its block, not taken for a hole and called
 *   clean (its data was then never written, and lost once reclaimed).
 * - a full filesystem whose last inode was unlinked while the kernel
 *   still looked it up: a create waits for the FORGET that comes a moment
 *   later (as FUSE sends it, after the unlink's reply) instead of
 *   answering ENOSPC, which a local filesystem would not have.
 *
 * Each case runs for a fixed number of rounds on an image of its own,
 * checked after.
 */
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <unistd.h>

#include "bdev_test.h"
#include "t_fs.h"

#define ROUNDS 4000

static struct mfs_fs *fs;
static uint64_t dir;
static atomic_bool done;
static atomic_ulong progress;

/* A fresh image mounted as @fs, with the directory @dir the cases use. */
static struct bdev *begin_on(struct bdev *bd)
{
	struct stat st;

	fs = tf_mount(bd);
	t_ok(mfs_mkdir(fs, &tf_root, MFS_ROOT_INO, "d", 0755, &st, NULL));
	mfs_forget(fs, st.st_ino, 1);
	dir = st.st_ino;
	return bd;
}

static struct bdev *begin(void)
{
	return begin_on(tf_mkfs(1024, 16u << 20));
}

static void end(struct bdev *bd)
{
	tf_unmount_check(fs, bd);
	bdev_close(bd);
}

static void *churn(void *arg)
{
	const char *name = arg;
	struct stat st;

	for (int i = 0; i < ROUNDS; i++) {
		int err = mfs_mknod(fs, &tf_root, dir, name, S_IFREG | 0644, 0, &st, NULL);

		t_assert(!err || err == -EEXIST, "mknod %d", err);
		if (!err)
			mfs_forget(fs, st.st_ino, 1);
		err = mfs_unlink(fs, &tf_root, dir, name);
		t_assert(!err || err == -ENOENT, "unlink %d", err);
	}
	atomic_store(&done, true);
	return NULL;
}

/* Look "x" up, rename it to "y" and back, unlink "y". */
static void *name_user(void *arg)
{
	unsigned seed = (unsigned)(uintptr_t)arg;
	struct stat st;

	while (!atomic_load(&done)) {
		int err;

		switch (rand_r(&seed) % 3) {
		case 0:
			err = mfs_lookup(fs, &tf_root, dir, "x", &st, NULL);
			if (!err)
				mfs_forget(fs, st.st_ino, 1);
			break;
		case 1:
			err = mfs_rename(fs, &tf_root, dir, "x", dir, "y", 0);
			if (!err)
				err = mfs_rename(fs, &tf_root, dir, "y", dir, "x", 0);
			break;
		default:
			err = mfs_unlink(fs, &tf_root, dir, "y");
			break;
		}
		t_assert(!err || err == -ENOENT, "lookup, rename or unlink: %d", err);
	}
	return NULL;
}

static void test_lookups(void)
{
	struct bdev *bd = begin();
	pthread_t th[3];

	atomic_store(&done, false);
	t_assert(!pthread_create(&th[0], NULL, churn, "x"), "thread");
	for (uintptr_t i = 1; i < 3; i++)
		t_assert(!pthread_create(&th[i], NULL, name_user, (void *)i), "thread");
	for (int i = 0; i < 3; i++)
		pthread_join(th[i], NULL);
	end(bd);
	printf("ok: lookups and renames of a name created and removed meanwhile\n");
}

static void *unlinker(void *arg)
{
	(void)arg;
	while (!atomic_load(&done)) {
		int err = mfs_unlink(fs, &tf_root, dir, "c");

		t_assert(!err || err == -ENOENT, "unlink %d", err);
	}
	return NULL;
}

static void test_creates(void)
{
	struct bdev *bd = begin();
	pthread_t th;

	atomic_store(&done, false);
	t_assert(!pthread_create(&th, NULL, unlinker, NULL), "thread");
	for (int i = 0; i < 5 * ROUNDS; i++) {
		struct mfs_file *f;
		struct stat st;

		t_ok(mfs_create(fs, &tf_root, dir, "c", 0644, O_RDWR, &st, NULL, &f));
		t_ok(mfs_release(fs, f));
		mfs_forget(fs, st.st_ino, 1);
	}
	atomic_store(&done, true);
	pthread_join(th, NULL);
	end(bd);
	printf("ok: open O_CREAT of a name unlinked meanwhile\n");
}

static void *mkdirs(void *arg)
{
	char name[16];
	struct stat st;

	snprintf(name, sizeof(name), "d%d", (int)(uintptr_t)arg);
	for (int i = 0; i < 3 * ROUNDS; i++) {
		int err = mfs_mkdir(fs, &tf_root, dir, name, 0755, &st, NULL);

		t_assert(!err, "mkdir %d", err);
		mfs_forget(fs, st.st_ino, 1);
		t_ok(mfs_rmdir(fs, &tf_root, dir, name));
		atomic_fetch_add(&progress, 1);
	}
	return NULL;
}

/* Join @n threads that count their rounds in progress; a minute without
 * a round is a deadlock, reported as such rather than by the timeout. */
static void join_watching(pthread_t *th, int n, unsigned long total)
{
	unsigned long last = 0;
	int still = 0;

	while (atomic_load(&progress) < total) {
		unsigned long now;

		usleep(10000);
		now = atomic_load(&progress);
		still = now == last ? still + 1 : 0;
		last = now;
		t_assert(still < 6000, "no round finished in 60 s (%lu of %lu done): "
			 "the threads are deadlocked", now, total);
	}
	for (int i = 0; i < n; i++)
		pthread_join(th[i], NULL);
}

#define MKDIRS 6
/* Three runs, as one finds that deadlock about half the time; the
 * thread sanitizer, which slows each fourfold, looks for races in one. */
#ifdef __SANITIZE_THREAD__
#define MKDIR_RUNS 1
#else
#define MKDIR_RUNS 3
#endif

static void test_directories(void)
{
	for (uint64_t seed = 1; seed <= MKDIR_RUNS; seed++) {
		struct bdev *bd = tf_mkfs(1024, 16u << 20);
		pthread_t th[MKDIRS];

		/* I/O that takes time, as a device's does, lets the threads
		 * interleave on any number of cores. */
		t_ok(bdev_mem_async(bd, 20, seed));
		begin_on(bd);
		atomic_store(&progress, 0);
		for (uintptr_t i = 0; i < MKDIRS; i++)
			t_assert(!pthread_create(&th[i], NULL, mkdirs, (void *)i), "thread");
		join_watching(th, MKDIRS, MKDIRS * 3ul * ROUNDS);
		end(bd);
	}
	printf("ok: directories made and removed by %d threads, %d runs\n", MKDIRS,
	       MKDIR_RUNS);
}

#define EXTENDS 300

static void *syncer(void *arg)
{
	(void)arg;
	while (!atomic_load(&done))
		t_ok(mfs_sync(fs));
	return NULL;
}

static void test_extends(void)
{
	struct bdev *bd = begin();
	uint64_t ino[EXTENDS];
	size_t len = 16 * 1024 + 100;    /* more than one page, one write */
	pthread_t th;

	atomic_store(&done, false);
	t_assert(!pthread_create(&th, NULL, syncer, NULL), "thread");
	for (int i = 0; i < EXTENDS; i++) {
		char name[16];
		struct mfs_file *f;
		struct stat st;

		snprintf(name, sizeof(name), "x%d", i);
		t_ok(mfs_create(fs, &tf_root, dir, name, 0644, O_RDWR, &st, NULL, &f));
		t_ok(mfs_release(fs, f));
		mfs_forget(fs, st.st_ino, 1);
		ino[i] = st.st_ino;
		tf_write(fs, ino[i], 0, len, (unsigned)i);
	}
	atomic_store(&done, true);
	pthread_join(th, NULL);
	tf_unmount_check(fs, bd);
	fs = tf_mount(bd);      /* what reached the disk, nothing cached */
	for (int i = 0; i < EXTENDS; i++)
		tf_verify(fs, ino[i], 0, len, (unsigned)i);
	end(bd);
	printf("ok: files extended while every dirty page is written back\n");
}

struct late_forget {
	uint64_t ino;
	unsigned ms;
};

static void *forget_later(void *arg)
{
	struct late_forget *lf = arg;

	usleep(lf->ms * 1000);
	mfs_forget(fs, lf->ino, 1);
	return NULL;
}

/* Fill every inode, unlink one still looked up, and create while its
 * FORGET is on its way. */
static void test_forgets(void)
{
	struct bdev *bd = begin();
	struct late_forget lf = { .ms = 200 };
	struct stat st;
	char name[32];
	pthread_t th;
	int i, err;

	for (i = 0;; i++) {
		snprintf(name, sizeof(name), "i%d", i);
		err = mfs_mknod(fs, &tf_root, dir, name, S_IFREG | 0644, 0, &st, NULL);
		if (err)
			break;
		if (i)
			mfs_forget(fs, st.st_ino, 1);
		else
			lf.ino = st.st_ino;       /* kept looked up */
	}
	t_eq(err, -ENOSPC);
	t_ok(mfs_unlink(fs, &tf_root, dir, "i0"));
	t_eq(mfs_mknod(fs, &tf_root, dir, "new", S_IFREG | 0644, 0, &st, NULL), -ENOSPC);
	t_assert(!pthread_create(&th, NULL, forget_later, &lf), "thread");
	t_ok(mfs_mknod(fs, &tf_root, dir, "new", S_IFREG | 0644, 0, &st, NULL));
	mfs_forget(fs, st.st_ino, 1);
	pthread_join(th, NULL);
	for (int k = 1; k < i; k++) {
		snprintf(name, sizeof(name), "i%d", k);
		t_ok(mfs_unlink(fs, &tf_root, dir, name));
	}
	t_ok(mfs_unlink(fs, &tf_root, dir, "new"));
	end(bd);
	printf("ok: a create on a full filesystem waits for an unlinked inode's FORGET\n");
}

T_MAIN(T_CASE(test_lookups),
       T_CASE(test_creates),
       T_CASE(test_directories),
       T_CASE(test_extends),
       T_CASE(test_forgets))
