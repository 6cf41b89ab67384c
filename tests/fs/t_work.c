/*
 * t_work.c - the workload of t_work.h.  Every call goes through ok(),
 * which counts a failure and hands an errno no failing device or damaged
 * image explains to the caller; a call that needs an earlier one's result
 * (an inode number, an open file) is skipped when that one failed.
 */
#include "t_work.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/falloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "mfs_format.h"

#define NAMES_MAX  256
#define DEPTH_MAX  16
#define CHUNK      (64u * 1024)

static const struct mfs_cred root_cred = { 0, 0, 022, 0, NULL };

uint8_t tw_pattern(uint64_t pos, unsigned int seed)
{
	uint64_t x = (pos + 1) * 0x9E3779B97F4A7C15ull ^ seed;

	return (uint8_t)(x >> 29);
}

/* What a failing device (EIO, then EROFS once the journal aborted) or a
 * damaged image (its checks, and whatever its odd but valid-looking
 * contents make the calls meet) may give. */
static bool tw_allowed(int err)
{
	switch (err) {
	case EIO: case EUCLEAN: case EROFS: case ENOSPC: case ENOENT:
	case EEXIST: case ENOTEMPTY: case ENOTDIR: case EISDIR: case ESTALE:
	case ENODATA: case EMLINK: case EFBIG: case ELOOP: case EPERM:
	case EINVAL: case ERANGE: case EOPNOTSUPP: case EXDEV:
		return true;
	}
	return false;
}

static bool ok(struct tw *w, const char *what, long ret)
{
	if (ret >= 0)
		return true;
	w->errors++;
	if (!w->first_fail)
		w->first_fail = what;
	if (!tw_allowed((int)-ret) && w->bad)
		w->bad(w->arg, what, (int)ret);
	return false;
}

/* ---- building blocks ------------------------------------------------------- */

static uint64_t mk(struct tw *w, uint64_t dir, const char *name, mode_t mode)
{
	struct stat st;
	int r;

	if (!dir)
		return 0;
	r = S_ISDIR(mode) ? mfs_mkdir(w->fs, &root_cred, dir, name, mode, &st, NULL) :
			    mfs_mknod(w->fs, &root_cred, dir, name, mode, 0, &st, NULL);
	if (!ok(w, S_ISDIR(mode) ? "mkdir" : "mknod", r))
		return 0;
	mfs_forget(w->fs, st.st_ino, 1);
	return st.st_ino;
}

static bool write_pattern(struct tw *w, struct mfs_file *f, uint64_t off, uint32_t len,
			  unsigned int seed)
{
	uint8_t *buf = malloc(CHUNK);
	bool good = buf != NULL;

	for (uint32_t done = 0; good && done < len; ) {
		uint32_t n = len - done < CHUNK ? len - done : CHUNK;

		for (uint32_t i = 0; i < n; i++)
			buf[i] = tw_pattern(off + done + i, seed);
		good = ok(w, "write", mfs_write(w->fs, &root_cred, f, buf, n, off + done, 0));
		done += n;
	}
	free(buf);
	return good;
}

/* A new file @name in @dir of @len pattern bytes (a j-flagged one with
 * @jflag); fsynced with @sync.  Returns its inode, 0 if it was not made,
 * and in @written whether every step worked. */
static uint64_t put(struct tw *w, uint64_t dir, const char *name, uint32_t len,
		    unsigned int seed, bool jflag, bool sync, bool *written)
{
	struct mfs_file *f;
	struct stat st;
	bool good;

	*written = false;
	if (!dir || !ok(w, "create", mfs_create(w->fs, &root_cred, dir, name, S_IFREG | 0644,
					       O_RDWR | O_EXCL, &st, NULL, &f)))
		return 0;
	good = !jflag || ok(w, "set_flags", mfs_set_flags(w->fs, &root_cred, st.st_ino,
							  MFS_JOURNAL_DATA_FL));
	good = good && write_pattern(w, f, 0, len, seed);
	good = good && (!sync || ok(w, "fsync", mfs_fsync(w->fs, st.st_ino, false)));
	good = ok(w, "release", mfs_release(w->fs, f)) && good;
	mfs_forget(w->fs, st.st_ino, 1);
	*written = good;
	return st.st_ino;
}

/* A file in the root that is fsynced and then left alone. */
static void keep(struct tw *w, const char *name, uint32_t len, unsigned int seed, bool jflag)
{
	bool written;

	put(w, MFS_ROOT_INO, name, len, seed, jflag, true, &written);
	if (!written || w->nkept == TW_KEPT_MAX)
		return;
	snprintf(w->kept[w->nkept].name, sizeof(w->kept[0].name), "%s", name);
	w->kept[w->nkept].len = len;
	w->kept[w->nkept].seed = seed;
	w->nkept++;
}

static bool is_kept(const struct tw *w, uint64_t dir, const char *name)
{
	for (unsigned int i = 0; dir == MFS_ROOT_INO && i < w->nkept; i++)
		if (!strcmp(w->kept[i].name, name))
			return true;
	return false;
}

static void set_size(struct tw *w, uint64_t ino, uint64_t size)
{
	struct mfs_setattr sa = { .valid = MFS_SET_SIZE, .size = size };

	if (ino)
		ok(w, "truncate", mfs_setattr(w->fs, &root_cred, ino, &sa, NULL));
}

static void falloc(struct tw *w, uint64_t ino)
{
	static const struct { int mode; uint32_t off, len; } f[] = {
		{ FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 4096, 8192 },
		{ FALLOC_FL_KEEP_SIZE, 100 * 1024, 40 * 1024 },
		{ 0, 150 * 1024, 10 * 1024 },
		{ FALLOC_FL_ZERO_RANGE, 30 * 1024, 5000 },
	};
	struct mfs_file *file;

	if (!ino || !ok(w, "open", mfs_open(w->fs, &root_cred, ino, O_RDWR, &file)))
		return;
	for (size_t i = 0; i < sizeof(f) / sizeof(f[0]); i++)
		ok(w, "fallocate", mfs_fallocate(w->fs, &root_cred, file, f[i].mode,
						 f[i].off, f[i].len));
	ok(w, "release", mfs_release(w->fs, file));
}

static void append(struct tw *w, uint64_t ino, uint32_t len)
{
	struct mfs_file *f;

	if (!ino || !ok(w, "open", mfs_open(w->fs, &root_cred, ino, O_WRONLY | O_APPEND, &f)))
		return;
	write_pattern(w, f, 0, len, 77);
	ok(w, "release", mfs_release(w->fs, f));
}

/* An open file unlinked, written, committed while on the orphan list,
 * then closed: its last close frees it. */
static void orphan(struct tw *w, uint64_t dir, const char *name, uint64_t ino)
{
	struct mfs_file *f;

	if (!ino || !ok(w, "open", mfs_open(w->fs, &root_cred, ino, O_RDWR, &f)))
		return;
	if (ok(w, "unlink", mfs_unlink(w->fs, &root_cred, dir, name)))
		write_pattern(w, f, 0, 10 * 1024, 9);
	ok(w, "syncfs", mfs_sync(w->fs));
	ok(w, "release", mfs_release(w->fs, f));
}

static void xattrs(struct tw *w, uint64_t small, uint64_t big)
{
	char val[600];

	memset(val, 'v', sizeof(val));
	if (small)
		ok(w, "setxattr", mfs_setxattr(w->fs, &root_cred, small, "user.s", "1", 1, 0));
	if (big) {
		ok(w, "setxattr", mfs_setxattr(w->fs, &root_cred, big, "user.b", val,
					       sizeof(val), 0));
		ok(w, "setxattr", mfs_setxattr(w->fs, &root_cred, big, "user.c", val, 300, 0));
		ok(w, "removexattr", mfs_removexattr(w->fs, &root_cred, big, "user.c"));
	}
}

static void symlinks(struct tw *w, uint64_t dir)
{
	char target[300];
	struct stat st;

	memset(target, 'x', sizeof(target) - 1);
	target[sizeof(target) - 1] = 0;
	if (dir && ok(w, "symlink", mfs_symlink(w->fs, &root_cred, dir, "s1", "t", &st, NULL)))
		mfs_forget(w->fs, st.st_ino, 1);
	if (dir && ok(w, "symlink", mfs_symlink(w->fs, &root_cred, dir, "s2", target, &st, NULL)))
		mfs_forget(w->fs, st.st_ino, 1);
}

static void link_to(struct tw *w, uint64_t ino, uint64_t dir, const char *name)
{
	struct stat st;

	if (ino && dir && ok(w, "link", mfs_link(w->fs, &root_cred, ino, dir, name, &st, NULL)))
		mfs_forget(w->fs, st.st_ino, 1);
}

static void chmod_touch(struct tw *w, uint64_t ino)
{
	struct mfs_setattr sa = { .valid = MFS_SET_MODE | MFS_SET_MTIME_NOW | MFS_SET_ATIME,
				  .mode = 0600, .atime = { 1000000000, 5 } };

	if (ino)
		ok(w, "setattr", mfs_setattr(w->fs, &root_cred, ino, &sa, NULL));
}

/* ---- reading a directory ------------------------------------------------- */

struct names {
	char *v[NAMES_MAX];
	unsigned int n;
};

static int collect(void *ctx, const char *name, size_t len, uint64_t ino,
		   unsigned int type, uint64_t next, const struct stat *st, uint64_t gen)
{
	struct names *ns = ctx;

	(void)ino; (void)type; (void)next; (void)st; (void)gen;
	if ((len == 1 && name[0] == '.') || (len == 2 && !memcmp(name, "..", 2)))
		return 0;
	if (ns->n == NAMES_MAX)
		return 1;
	ns->v[ns->n] = strndup(name, len);
	if (!ns->v[ns->n])
		return 1;
	ns->n++;
	return 0;
}

static void names_free(struct names *ns)
{
	for (unsigned int i = 0; i < ns->n; i++)
		free(ns->v[i]);
	ns->n = 0;
}

static void list(struct tw *w, uint64_t dir, struct names *ns)
{
	struct mfs_dir *d;

	ns->n = 0;
	if (!ok(w, "opendir", mfs_opendir(w->fs, &root_cred, dir, &d)))
		return;
	ok(w, "readdir", mfs_readdir(w->fs, d, 0, false, collect, ns));
	ok(w, "releasedir", mfs_releasedir(w->fs, d));
}

/* ---- the walk --------------------------------------------------------------- */

static void read_file(struct tw *w, uint64_t ino)
{
	uint8_t *buf = malloc(CHUNK);
	struct mfs_file *f;
	ssize_t n = 1;

	if (buf && ok(w, "open", mfs_open(w->fs, &root_cred, ino, O_RDONLY, &f))) {
		for (uint64_t off = 0; n > 0 && off < (1u << 20); off += (uint64_t)n)
			n = mfs_read(w->fs, f, buf, CHUNK, off);
		ok(w, "read", n);
		ok(w, "release", mfs_release(w->fs, f));
	}
	free(buf);
}

static void read_xattrs(struct tw *w, uint64_t ino)
{
	char *names = malloc(CHUNK), *val = malloc(CHUNK);
	ssize_t len;

	len = names && val ? mfs_listxattr(w->fs, &root_cred, ino, names, CHUNK) : -ENOMEM;
	for (ssize_t p = 0; ok(w, "listxattr", len) && p < len; p += (ssize_t)strlen(names + p) + 1)
		ok(w, "getxattr", mfs_getxattr(w->fs, &root_cred, ino, names + p, val, CHUNK));
	free(names);
	free(val);
}

static void walk(struct tw *w, uint64_t dir, unsigned int depth, unsigned int *budget)
{
	struct names ns;
	char target[4096];

	list(w, dir, &ns);
	for (unsigned int i = 0; i < ns.n && *budget; i++, (*budget)--) {
		struct stat st;

		if (!ok(w, "lookup", mfs_lookup(w->fs, &root_cred, dir, ns.v[i], &st, NULL)))
			continue;
		ok(w, "getattr", mfs_getattr(w->fs, st.st_ino, &st));
		read_xattrs(w, st.st_ino);
		if (S_ISREG(st.st_mode))
			read_file(w, st.st_ino);
		else if (S_ISLNK(st.st_mode))
			ok(w, "readlink", mfs_readlink(w->fs, st.st_ino, target, sizeof(target)));
		else if (S_ISDIR(st.st_mode) && depth < DEPTH_MAX)
			walk(w, st.st_ino, depth + 1, budget);
		mfs_forget(w->fs, st.st_ino, 1);
	}
	names_free(&ns);
}

void tw_walk(struct tw *w, unsigned int max)
{
	struct statvfs sv;

	ok(w, "statfs", mfs_statfs(w->fs, &sv));
	walk(w, MFS_ROOT_INO, 0, &max);
}

/* ---- the workload of new files ------------------------------------------- */

void tw_run(struct tw *w)
{
	static const uint32_t sizes[6] = { 0, 100, 3000, 13 * 1024 + 5, 70 * 1024, 300 * 1024 };
	uint64_t d, e, f[6];
	struct names ns;
	bool written;
	char name[8];

	keep(w, "wk0", 5000, 1, false);
	d = mk(w, MFS_ROOT_INO, "wd", S_IFDIR | 0755);
	e = mk(w, d, "e", S_IFDIR | 0755);
	for (unsigned int i = 0; i < 6; i++) {
		snprintf(name, sizeof(name), "f%u", i);
		f[i] = put(w, d, name, sizes[i], 10 + i, false, false, &written);
	}
	xattrs(w, f[1], f[2]);
	symlinks(w, d);
	link_to(w, f[1], e, "l1");
	if (d && e)
		ok(w, "rename", mfs_rename(w->fs, &root_cred, d, "f2", e, "f2", 0));
	if (d && f[3] && f[4] && ok(w, "rename", mfs_rename(w->fs, &root_cred, d, "f3", d, "f4", 0))) {
		f[4] = f[3];         /* the old f4 is gone: its number names nothing */
		f[3] = 0;
	}
	set_size(w, f[5], 20 * 1024);
	set_size(w, f[5], 100 * 1024);
	falloc(w, f[5]);
	append(w, f[4], 2000);
	orphan(w, d, "f0", f[0]);
	keep(w, "wk1", 40000, 2, false);
	keep(w, "wj", 8192, 3, true);
	list(w, MFS_ROOT_INO, &ns);
	names_free(&ns);
	ok(w, "syncfs", mfs_sync(w->fs));
	chmod_touch(w, f[4]);
	if (e)
		ok(w, "unlink", mfs_unlink(w->fs, &root_cred, e, "l1"));
	if (d)
		ok(w, "unlink", mfs_unlink(w->fs, &root_cred, d, "f1"));
	if (d && e)
		ok(w, "rename", mfs_rename(w->fs, &root_cred, e, "f2", d, "f2b", 0));
	if (d && e)
		ok(w, "rmdir", mfs_rmdir(w->fs, &root_cred, d, "e"));
	keep(w, "wk2", 1000, 4, false);
	set_size(w, f[5], 260 * 1024);
	mk(w, d, "dev", S_IFCHR | 0600);
	list(w, d ? d : MFS_ROOT_INO, &ns);
	names_free(&ns);
}

/* ---- removing everything ------------------------------------------------ */

static void clear(struct tw *w, uint64_t dir, unsigned int depth, unsigned int *budget)
{
	struct names ns;
	char moved[300];

	list(w, dir, &ns);
	for (unsigned int i = 0; i < ns.n && *budget; i++, (*budget)--) {
		const char *name = ns.v[i];
		struct stat st;

		if ((dir == MFS_ROOT_INO && !strcmp(name, "lost+found")) || is_kept(w, dir, name))
			continue;
		if (!ok(w, "lookup", mfs_lookup(w->fs, &root_cred, dir, name, &st, NULL)))
			continue;
		snprintf(moved, sizeof(moved), "%.250s~", name);
		if (ok(w, "rename", mfs_rename(w->fs, &root_cred, dir, name, dir, moved, 0)))
			name = moved;
		if (S_ISDIR(st.st_mode)) {
			if (depth < DEPTH_MAX)
				clear(w, st.st_ino, depth + 1, budget);
			ok(w, "rmdir", mfs_rmdir(w->fs, &root_cred, dir, name));
		} else {
			ok(w, "unlink", mfs_unlink(w->fs, &root_cred, dir, name));
		}
		mfs_forget(w->fs, st.st_ino, 1);
	}
	names_free(&ns);
}

void tw_clear(struct tw *w, unsigned int max)
{
	clear(w, MFS_ROOT_INO, 0, &max);
}
