/*
 * t_threads - several threads of mixed operations on one mounted
 * filesystem (creates, writes, reads, renames across directories,
 * truncates, unlinks, readdir, fsync) with a small cache and a short
 * commit interval, then the whole image checked.  Run under
 * ThreadSanitizer in the 'tsan' suite; the debug build aborts on any
 * lock-order violation.
 */
#include <fcntl.h>
#include <inttypes.h>
#include <linux/fs.h>
#include <pthread.h>
#include <stdlib.h>

#include "t_fs.h"

#define THREADS 4
#define ROUNDS 1500

static struct mfs_fs *fs;
static uint64_t dirs[3];

static int nothing(void *ctx, const char *name, size_t len, uint64_t ino,
		   unsigned type, uint64_t next, const struct stat *st, uint64_t gen)
{
	(void)ctx; (void)name; (void)len; (void)ino; (void)type; (void)next; (void)st;
	(void)gen;
	return 0;
}

static void one_op(unsigned *seed, int t)
{
	char name[32], other[32];
	uint64_t d = dirs[rand_r(seed) % 3], d2 = dirs[rand_r(seed) % 3];
	int op = rand_r(seed) % 8, err;
	struct mfs_file *f;
	struct stat st;

	snprintf(name, sizeof(name), "f%d-%d", t, rand_r(seed) % 6);
	snprintf(other, sizeof(other), "f%d-%d", rand_r(seed) % THREADS, rand_r(seed) % 6);
	switch (op) {
	case 0:
	case 1:
		err = mfs_create(fs, &tf_root, d, name, 0644, O_RDWR, &st, NULL, &f);
		if (err == -EEXIST || err == -ENOSPC)
			break;
		t_ok(err);
		{
			char buf[6000];
			uint64_t off = (uint64_t)(rand_r(seed) % 40000);

			memset(buf, t, sizeof(buf));
			err = (int)mfs_write(fs, &tf_root, f, buf, sizeof(buf), off, 0);
			t_assert(err == (int)sizeof(buf) || err == -ENOSPC, "write %d", err);
			t_assert(mfs_read(fs, f, buf, sizeof(buf), off / 2) >= 0, "read");
			if (rand_r(seed) % 4 == 0)
				t_ok(mfs_fsync(fs, st.st_ino, rand_r(seed) % 2));
		}
		t_ok(mfs_release(fs, f));
		mfs_forget(fs, st.st_ino, 1);
		break;
	case 2:
		err = mfs_unlink(fs, &tf_root, d, name);
		t_assert(!err || err == -ENOENT, "unlink %d", err);
		break;
	case 3:
		err = mfs_rename(fs, &tf_root, d, other, d2, name,
				 rand_r(seed) % 3 == 0 ? RENAME_EXCHANGE : 0);
		t_assert(!err || err == -ENOENT || err == -ENOSPC, "rename %d", err);
		break;
	case 4: {
		struct mfs_setattr sa = { .valid = MFS_SET_SIZE,
					  .size = (uint64_t)(rand_r(seed) % 20000) };

		if (mfs_lookup(fs, &tf_root, d, name, &st, NULL))
			break;
		err = mfs_setattr(fs, &tf_root, st.st_ino, &sa, &st);
		t_assert(!err || err == -ENOSPC, "truncate %d", err);
		mfs_forget(fs, st.st_ino, 1);
		break;
	}
	case 5: {
		struct mfs_dir *dh;

		t_ok(mfs_opendir(fs, &tf_root, d, &dh));
		t_ok(mfs_readdir(fs, dh, 0, rand_r(seed) % 2, nothing, NULL));
		t_ok(mfs_releasedir(fs, dh));
		break;
	}
	case 6:
		snprintf(name, sizeof(name), "d%d", t);
		/* The name is this thread's and was removed last time: a
		 * failure here is a bug, which would otherwise show only as
		 * an inode left allocated at the image check. */
		err = mfs_mkdir(fs, &tf_root, d, name, 0755, &st, NULL);
		t_assert(!err, "mkdir %d", err);
		mfs_forget(fs, st.st_ino, 1);
		t_ok(mfs_rmdir(fs, &tf_root, d, name));
		break;
	default:
		t_ok(mfs_getattr(fs, d, &st));
		break;
	}
}

static void *worker(void *arg)
{
	unsigned seed = (unsigned)(uintptr_t)arg * 7919u + 1;

	for (int i = 0; i < ROUNDS; i++)
		one_op(&seed, (int)(uintptr_t)arg);
	return NULL;
}

/* THREADS threads of ROUNDS mixed operations each, then the image checked. */
static void test_mixed_ops(void)
{
	struct mfs_mount_opts o = { .cache_bytes = 1u << 20, .commit_s = 1 };
	struct bdev *bd = tf_mkfs(1024, 32u << 20);
	pthread_t th[THREADS];
	struct stat st;

	fs = tf_mount_opts(bd, &o);
	dirs[0] = MFS_ROOT_INO;
	for (int i = 1; i < 3; i++) {
		char name[8];

		snprintf(name, sizeof(name), "dir%d", i);
		t_ok(mfs_mkdir(fs, &tf_root, MFS_ROOT_INO, name, 0755, &st, NULL));
		dirs[i] = st.st_ino;
	}
	for (uintptr_t i = 0; i < THREADS; i++)
		t_assert(!pthread_create(&th[i], NULL, worker, (void *)i), "thread");
	for (int i = 0; i < THREADS; i++)
		pthread_join(th[i], NULL);
	tf_unmount_check(fs, bd);
	bdev_close(bd);
	printf("ok: %d threads x %d operations\n", THREADS, ROUNDS);
}

T_MAIN(T_CASE(test_mixed_ops))
