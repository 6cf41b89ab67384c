/*
 * dir_bench.c - lookups, creates and unlinks in one directory of N
 * entries, with and without its index, on the memory device.
 *
 * Fills a directory with N empty files, then for each mode (the index,
 * and a mount whose index budget is nil) mounts again and reports: the
 * first lookup (which builds the index from a cold cache) and the index's
 * memory, then the mean time and blocks walked of a lookup, a failed
 * lookup, and a create and unlink pair, each measured on a second pass
 * over the same names (the first brings inodes into the cache).
 *
 *   dir_bench [ENTRIES [OPS]]
 */
#include "bdev_test.h"
#include "mfs.h"

#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct mfs_cred root = { 0, 0, 022, 0, NULL };

static void check(int err, const char *what)
{
	if (err) {
		fprintf(stderr, "%s: %s\n", what, strerror(-err));
		exit(1);
	}
}

static uint64_t counter(struct mfs_fs *fs, const char *key)
{
	static char buf[16384];
	size_t klen = strlen(key);

	mfs_stats_format(fs, buf, sizeof(buf));
	for (char *p = buf; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
		if (!strncmp(p, key, klen) && p[klen] == ':')
			return strtoull(p + klen + 1, NULL, 10);
	return 0;
}

static int lookup(struct mfs_fs *fs, uint64_t dir, const char *name)
{
	struct stat st;
	int err = mfs_lookup(fs, &root, dir, name, &st, NULL);

	if (!err)
		mfs_forget(fs, st.st_ino, 1);
	return err;
}

static int create(struct mfs_fs *fs, uint64_t dir, const char *name)
{
	struct stat st;
	int err = mfs_mknod(fs, &root, dir, name, S_IFREG | 0644, 0, &st, NULL);

	if (!err)
		mfs_forget(fs, st.st_ino, 1);
	return err;
}

enum { LOOKUP, MISS, CREATE_UNLINK, NKIND };
static const char *const kinds[NKIND] = { "lookup", "failed lookup", "create+unlink" };

static int one(struct mfs_fs *fs, uint64_t dir, int kind, unsigned i, unsigned n)
{
	char name[32];

	switch (kind) {
	case LOOKUP:
		snprintf(name, sizeof(name), "e%07u", (unsigned)((i * 7919ull) % n));
		return lookup(fs, dir, name);
	case MISS:
		snprintf(name, sizeof(name), "missing%u", i);
		return lookup(fs, dir, name) == -ENOENT ? 0 : -EIO;
	default:
		snprintf(name, sizeof(name), "new%u", i);
		check(create(fs, dir, name), "create");
		return mfs_unlink(fs, &root, dir, name);
	}
}

static void run(struct bdev *bd, uint64_t dir, unsigned n, unsigned ops, uint64_t budget)
{
	struct mfs_mount_opts o = { .cache_bytes = 64u << 20, .dirhash_bytes = budget };
	struct mfs_fs *fs;
	uint64_t t0;

	check(mfs_mount(bd, &o, &fs), "mount");
	t0 = ut_now_ns();
	check(lookup(fs, dir, "e0000000"), "first lookup");
	printf("%s: first lookup %.2f ms, index %" PRIu64 " bytes\n",
	       budget ? "no index" : "index", (ut_now_ns() - t0) / 1e6,
	       counter(fs, "dirhash_bytes"));
	for (int k = 0; k < NKIND; k++) {
		uint64_t s;

		/* A first pass brings the inodes and pages into the cache. */
		for (unsigned i = 0; i < ops; i++)
			check(one(fs, dir, k, i, n), kinds[k]);
		s = counter(fs, "dir_blocks_scanned");
		t0 = ut_now_ns();
		for (unsigned i = 0; i < ops; i++)
			check(one(fs, dir, k, i, n), kinds[k]);
		printf("  %-14s %9.2f us %9.2f blocks walked\n", kinds[k],
		       (ut_now_ns() - t0) / 1e3 / ops,
		       (double)(counter(fs, "dir_blocks_scanned") - s) / ops);
	}
	check(mfs_unmount(fs), "unmount");
}

int main(int argc, char **argv)
{
	unsigned n = argc > 1 ? (unsigned)strtoul(argv[1], NULL, 10) : 100000;
	unsigned ops = argc > 2 ? (unsigned)strtoul(argv[2], NULL, 10) : 1000;
	struct fmt_mkfs_opts mo = { .block_size = 4096, .zeroed = true,
				    .inodes = n + 2 * ops + 4096 };
	struct mfs_mount_opts o = { .cache_bytes = 64u << 20 };
	uint64_t bytes = UT_MAX(64ull << 20, ((uint64_t)n + 65536) * 4096);
	struct mfs_fs *fs;
	struct bdev *bd;
	struct stat st;
	char name[32];
	uint64_t t0;

	if (!n || !ops || n > 1000000) {
		fprintf(stderr, "usage: dir_bench [ENTRIES (1..1000000) [OPS]]\n");
		return 2;
	}
	check(bdev_mem_create(bytes, 4096, &bd), "memory device");
	check(fmt_mkfs(bd, &mo), "mkfs");
	check(mfs_mount(bd, &o, &fs), "mount");
	check(mfs_mkdir(fs, &root, MFS_ROOT_INO, "d", 0755, &st, NULL), "mkdir");
	t0 = ut_now_ns();
	for (unsigned i = 0; i < n; i++) {
		snprintf(name, sizeof(name), "e%07u", i);
		check(create(fs, st.st_ino, name), "fill");
	}
	printf("%u entries: filled in %.2f s\n", n, (ut_now_ns() - t0) / 1e9);
	check(mfs_unmount(fs), "unmount");
	run(bd, st.st_ino, n, ops, 0);
	run(bd, st.st_ino, n, ops, 1);
	bdev_close(bd);
	return 0;
}
