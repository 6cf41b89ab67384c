/*
 * t_ctl - the control directory "/.miscfs" and its file "stats" in the
 * core: lookup finds them and readdir of the root does not list them; the
 * file reads as "key: value" lines with every key promised, one snapshot
 * per open, counters that move; nothing can write, remove, rename, link
 * or create over them; a read-only mount shows them too, and nothing of
 * them reaches the disk.
 */
#include <fcntl.h>
#include <inttypes.h>
#include <linux/fs.h>
#include <stdlib.h>
#include <unistd.h>

#include "t_fs.h"
#include "util.h"

static const char *const keys[] = {
	"pc_hits", "pc_misses", "pc_pages", "pc_dirty", "pc_evictions",
	"dir_pages_validated", "dir_pages_rejected", "dir_blocks_scanned",
	"dirhash_builds", "dirhash_hits", "dirhash_bytes", "dirhash_dirs",
	"jnl_commits", "jnl_blocks_logged", "jnl_checkpoints",
	"jnl_commit_mean_us", "jnl_commit_max_us", "fs_creates", "fs_lookups",
};

/* The whole file as one open reads it, in pieces of @chunk bytes. */
static char *read_stats(struct mfs_fs *fs, size_t chunk, struct mfs_file **keep)
{
	struct mfs_file *f;
	size_t len = 0, cap = 1 << 16;
	char *text = malloc(cap);
	ssize_t n;

	t_ok(mfs_open(fs, &tf_user, MFS_STATS_INO, O_RDONLY, &f));
	t_assert(mfs_file_direct(f), "the statistics are read around the cache");
	while ((n = mfs_read(fs, f, text + len, UT_MIN(chunk, cap - 1 - len), len)) > 0)
		len += (size_t)n;
	t_eq(n, 0);
	text[len] = 0;
	if (keep)
		*keep = f;
	else
		t_ok(mfs_release(fs, f));
	return text;
}

static uint64_t value(const char *text, const char *key)
{
	size_t klen = strlen(key);

	for (const char *p = text; p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
		if (!strncmp(p, key, klen) && p[klen] == ':' && p[klen + 1] == ' ')
			return strtoull(p + klen + 2, NULL, 10);
	t_fail("no \"%s: \" line", key);
}

/* Every line is "key: number". */
static void check_lines(const char *text)
{
	unsigned lines = 0;

	for (const char *p = text; *p; lines++) {
		const char *nl = strchr(p, '\n'), *colon = strchr(p, ':');
		char *end;

		t_assert(nl && colon && colon < nl && colon > p && colon[1] == ' ',
			 "bad line at \"%.40s\"", p);
		strtoull(colon + 2, &end, 10);
		t_assert(end == nl, "not a number at \"%.40s\"", p);
		p = nl + 1;
	}
	t_assert(lines >= sizeof(keys) / sizeof(keys[0]), "%u lines", lines);
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		value(text, keys[i]);
}

static void names(struct mfs_fs *fs)
{
	struct stat st;
	uint64_t gen;
	char list[4096];

	t_ok(mfs_lookup(fs, &tf_user, MFS_ROOT_INO, MFS_CTL_DIR_NAME, &st, &gen));
	t_eq(st.st_ino, MFS_CTL_DIR_INO);
	t_eq(st.st_mode, S_IFDIR | 0555);
	t_ok(mfs_lookup(fs, &tf_user, MFS_CTL_DIR_INO, "stats", &st, NULL));
	t_eq(st.st_ino, MFS_STATS_INO);
	t_eq(st.st_mode, S_IFREG | 0444);
	t_ok(mfs_lookup(fs, &tf_user, MFS_CTL_DIR_INO, ".", &st, NULL));
	t_eq(st.st_ino, MFS_CTL_DIR_INO);
	t_ok(mfs_lookup(fs, &tf_user, MFS_CTL_DIR_INO, "..", &st, NULL));
	t_eq(st.st_ino, MFS_ROOT_INO);
	mfs_forget(fs, MFS_ROOT_INO, 1);
	t_eq(mfs_lookup(fs, &tf_user, MFS_CTL_DIR_INO, "other", &st, NULL), -ENOENT);
	t_eq(mfs_lookup(fs, &tf_user, MFS_STATS_INO, "x", &st, NULL), -ENOTDIR);
	mfs_forget(fs, MFS_CTL_DIR_INO, 5);            /* counts nothing */
	t_ok(mfs_getattr(fs, MFS_STATS_INO, &st));
	t_eq(st.st_nlink, 1);
	t_ok(mfs_getattr(fs, MFS_CTL_DIR_INO, &st));
	t_eq(st.st_nlink, 2);
	tf_list(fs, MFS_ROOT_INO, list, sizeof(list));
	t_assert(!strstr(list, MFS_CTL_DIR_NAME), "the root lists .miscfs: %s", list);
	tf_list(fs, MFS_CTL_DIR_INO, list, sizeof(list));
	t_assert(!strcmp(list, ".\n..\nstats"), "listing: %s", list);
	t_ok(mfs_access(fs, &tf_user, MFS_STATS_INO, R_OK));
	t_ok(mfs_access(fs, &tf_user, MFS_CTL_DIR_INO, R_OK | X_OK));
	t_eq(mfs_access(fs, &tf_root, MFS_STATS_INO, W_OK), -EACCES);
	t_eq(mfs_readlink(fs, MFS_STATS_INO, list, sizeof(list)), -EINVAL);
	t_ok(mfs_fsync(fs, MFS_STATS_INO, false));
	printf("ok: names\n");
}

static void refusals(struct mfs_fs *fs)
{
	struct mfs_setattr sa = { .valid = MFS_SET_MODE, .mode = 0666 };
	struct mfs_file *f;
	struct mfs_dir *d;
	struct stat st;
	uint64_t file;

	t_ok(mfs_mknod(fs, &tf_root, MFS_ROOT_INO, "f", S_IFREG | 0644, 0, &st, NULL));
	file = st.st_ino;
	t_eq(mfs_mkdir(fs, &tf_root, MFS_ROOT_INO, MFS_CTL_DIR_NAME, 0755, &st, NULL), -EEXIST);
	t_eq(mfs_mknod(fs, &tf_root, MFS_CTL_DIR_INO, "x", S_IFREG | 0644, 0, &st, NULL), -EPERM);
	t_eq(mfs_mknod(fs, &tf_root, MFS_CTL_DIR_INO, "stats", S_IFREG, 0, &st, NULL), -EEXIST);
	t_eq(mfs_symlink(fs, &tf_root, MFS_STATS_INO, "x", "y", &st, NULL), -ENOTDIR);
	t_eq(mfs_create(fs, &tf_root, MFS_CTL_DIR_INO, "stats", 0644, O_CREAT | O_EXCL | O_RDONLY,
			&st, NULL, &f), -EEXIST);
	t_eq(mfs_create(fs, &tf_root, MFS_CTL_DIR_INO, "stats", 0644, O_CREAT | O_WRONLY,
			&st, NULL, &f), -EACCES);
	t_eq(mfs_create(fs, &tf_root, MFS_ROOT_INO, MFS_CTL_DIR_NAME, 0644, O_CREAT | O_RDONLY,
			&st, NULL, &f), -EISDIR);
	t_ok(mfs_create(fs, &tf_root, MFS_CTL_DIR_INO, "stats", 0644, O_CREAT | O_RDONLY,
			&st, NULL, &f));       /* open(2) with O_CREAT of what exists */
	t_eq(mfs_write(fs, &tf_root, f, "x", 1, 0, 0), -EBADF);
	t_ok(mfs_release(fs, f));
	t_eq(mfs_open(fs, &tf_root, MFS_STATS_INO, O_WRONLY, &f), -EACCES);
	t_eq(mfs_open(fs, &tf_root, MFS_STATS_INO, O_RDWR, &f), -EACCES);
	t_eq(mfs_open(fs, &tf_root, MFS_STATS_INO, O_RDONLY | O_TRUNC, &f), -EACCES);
	t_eq(mfs_open(fs, &tf_root, MFS_CTL_DIR_INO, O_RDONLY, &f), -EISDIR);
	t_eq(mfs_opendir(fs, &tf_root, MFS_STATS_INO, &d), -ENOTDIR);
	t_eq(mfs_unlink(fs, &tf_root, MFS_CTL_DIR_INO, "stats"), -EPERM);
	t_eq(mfs_unlink(fs, &tf_root, MFS_CTL_DIR_INO, "other"), -ENOENT);
	t_eq(mfs_unlink(fs, &tf_root, MFS_ROOT_INO, MFS_CTL_DIR_NAME), -EPERM);
	t_eq(mfs_rmdir(fs, &tf_root, MFS_ROOT_INO, MFS_CTL_DIR_NAME), -EPERM);
	t_eq(mfs_rename(fs, &tf_root, MFS_CTL_DIR_INO, "stats", MFS_ROOT_INO, "s", 0), -EPERM);
	t_eq(mfs_rename(fs, &tf_root, MFS_ROOT_INO, "f", MFS_ROOT_INO, MFS_CTL_DIR_NAME, 0),
	     -EPERM);
	t_eq(mfs_rename(fs, &tf_root, MFS_ROOT_INO, "f", MFS_CTL_DIR_INO, "g", 0), -EPERM);
	t_eq(mfs_rename(fs, &tf_root, MFS_ROOT_INO, MFS_CTL_DIR_NAME, MFS_ROOT_INO, "d",
			RENAME_NOREPLACE), -EPERM);
	t_eq(mfs_link(fs, &tf_root, MFS_STATS_INO, MFS_ROOT_INO, "s", &st, NULL), -EPERM);
	t_eq(mfs_link(fs, &tf_root, file, MFS_CTL_DIR_INO, "g", &st, NULL), -EPERM);
	t_eq(mfs_link(fs, &tf_root, file, MFS_ROOT_INO, MFS_CTL_DIR_NAME, &st, NULL), -EEXIST);
	t_eq(mfs_setattr(fs, &tf_root, MFS_STATS_INO, &sa, &st), -EPERM);
	t_eq(mfs_setattr(fs, &tf_root, MFS_CTL_DIR_INO, &sa, &st), -EPERM);
	mfs_forget(fs, file, 1);
	t_ok(mfs_unlink(fs, &tf_root, MFS_ROOT_INO, "f"));
	printf("ok: refusals\n");
}

static size_t source(void *arg, char *buf, size_t size)
{
	return (size_t)snprintf(buf, size, "test_source: %u\n", *(unsigned *)arg);
}

static void contents(struct mfs_fs *fs)
{
	static unsigned answer = 42;
	struct mfs_file *f;
	char *a, *b, *again, name[32];
	struct stat st;
	size_t len;

	a = read_stats(fs, 1 << 16, &f);
	check_lines(a);
	for (int i = 0; i < 20; i++) {
		snprintf(name, sizeof(name), "n%d", i);
		t_ok(mfs_mknod(fs, &tf_root, MFS_ROOT_INO, name, S_IFREG | 0644, 0, &st, NULL));
		mfs_forget(fs, st.st_ino, 1);
	}
	t_ok(mfs_sync(fs));
	/* The open file still reads its snapshot, in small pieces too. */
	len = strlen(a);
	again = calloc(1, len + 1);
	for (size_t off = 0; off < len; off += 7)
		t_eq(mfs_read(fs, f, again + off, 7, off), (ssize_t)UT_MIN(7, len - off));
	t_assert(!strcmp(a, again), "the snapshot changed");
	t_ok(mfs_release(fs, f));
	b = read_stats(fs, 5, NULL);
	check_lines(b);
	t_eq(value(b, "fs_creates") - value(a, "fs_creates"), 20);
	t_assert(value(b, "jnl_commits") > value(a, "jnl_commits"), "commits");
	t_assert(value(b, "jnl_blocks_logged") > value(a, "jnl_blocks_logged"), "blocks");
	t_assert(value(b, "jnl_commit_max_us") >= value(b, "jnl_commit_mean_us"), "latency");
	t_assert(value(b, "pc_hits") > value(a, "pc_hits"), "cache hits");
	t_assert(value(b, "dir_pages_validated") > 0, "pages validated");
	t_eq(value(b, "dir_pages_rejected"), 0);
	mfs_stats_set_source(fs, source, &answer);
	free(a);
	a = read_stats(fs, 1 << 16, NULL);
	check_lines(a);
	t_eq(value(a, "test_source"), 42);
	mfs_stats_set_source(fs, NULL, NULL);
	free(a);
	free(b);
	free(again);
	printf("ok: contents\n");
}

/* Unmount and check the image, then free it: nothing of the control
 * files reached the disk, their inode slots were never used. */
static void unmount_check(struct mfs_fs *fs, struct bdev *bd)
{
	struct fmt_raw raw;
	struct mfs_inode in;

	t_ok(mfs_unmount(fs));
	t_ok(fmt_raw_open(bd, &raw));
	for (uint32_t ino = MFS_CTL_DIR_INO; ino <= MFS_STATS_INO; ino++) {
		t_ok(fmt_raw_inode(&raw, ino, &in));
		t_eq(in.i_mode, 0);
	}
	fmt_raw_close(&raw);
	tf_check(bd, true);
	bdev_close(bd);
}

/* @fn on a read-write mount of a fresh image. */
static void on_fresh(void (*fn)(struct mfs_fs *))
{
	struct bdev *bd = tf_mkfs(4096, 32u << 20);
	struct mfs_fs *fs = tf_mount(bd);

	fn(fs);
	unmount_check(fs, bd);
}

static void test_names(void) { on_fresh(names); }
static void test_refusals(void) { on_fresh(refusals); }
static void test_contents(void) { on_fresh(contents); }

/* A read-only mount has them too. */
static void test_read_only(void)
{
	struct mfs_mount_opts ro = { .cache_bytes = 4u << 20, .read_only = true };
	struct bdev *bd = tf_mkfs(4096, 32u << 20);
	struct mfs_fs *fs = tf_mount_opts(bd, &ro);
	char *text;

	text = read_stats(fs, 100, NULL);
	check_lines(text);
	free(text);
	names(fs);
	unmount_check(fs, bd);
}

/*
 * A file read cold in the kernel's 128 KiB requests misses the cache only
 * now and then, not in every request: each request's reading ahead runs
 * on past its own end, toward the file's, so the next requests find their
 * pages read or in flight.
 */
static void test_readahead_across_requests(void)
{
	const size_t req = 128u << 10, size = 8u << 20;
	struct mfs_mount_opts o = { .cache_bytes = 32u << 20 };
	struct bdev *bd = tf_mkfs(4096, 32u << 20);
	struct mfs_fs *fs = tf_mount(bd);
	uint64_t ino, before;
	struct mfs_file *f;
	struct stat st;
	char *buf = malloc(req), *text;

	t_ok(mfs_mknod(fs, &tf_root, MFS_ROOT_INO, "seq", S_IFREG | 0644, 0, &st, NULL));
	ino = st.st_ino;
	mfs_forget(fs, ino, 1);
	tf_write(fs, ino, 0, size, 7);
	t_ok(mfs_unmount(fs));
	fs = tf_mount_opts(bd, &o);
	text = read_stats(fs, 1 << 16, NULL);
	before = value(text, "pc_misses");
	free(text);
	t_ok(mfs_open(fs, &tf_root, ino, O_RDONLY, &f));
	for (size_t off = 0; off < size; off += req)
		t_eq(mfs_read(fs, f, buf, req, off), (ssize_t)req);
	t_ok(mfs_release(fs, f));
	text = read_stats(fs, 1 << 16, NULL);
	t_assert(value(text, "pc_misses") - before <= size / req / 8, "%lu misses reading %zu "
		 "requests in sequence", (unsigned long)(value(text, "pc_misses") - before),
		 size / req);
	free(text);
	free(buf);
	unmount_check(fs, bd);
	printf("ok: sequential requests find their pages read ahead\n");
}

T_MAIN(T_CASE(test_names),
       T_CASE(test_refusals),
       T_CASE(test_contents),
       T_CASE(test_read_only),
       T_CASE(test_readahead_across_requests))
