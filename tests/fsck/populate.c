/*
 * populate.c - a fresh image filled through the filesystem's own calls
 * with one of each thing fsck must know: deep directories, small files, a
 * file reaching the double-indirect blocks, a sparse file, fast and slow
 * symlinks, a hard link, a fifo and devices, xattrs in the inode and in a
 * block, a directory of several blocks.  Then its manifest.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <xxhash.h>

#include "mkdamage.h"
#include "util.h"

const struct mfs_cred md_root = { .uid = 0, .gid = 0, .umask = 022 };

/* Image size and the two reserved regions. */
#define POP_BYTES      (16ull << 20)
#define POP_MANY       120
#define POP_TIME       1700000000   /* every time stamp of the image */      /* entries of /many: five 1 KiB blocks */

struct pop {
	struct mfs_fs *fs;
	uint64_t seed;
	uint32_t bs;
};

/* ---- describing a file (the manifest's and verify's view) ------------------ */

static int hash_data(struct mfs_fs *fs, uint64_t ino, uint64_t *h)
{
	XXH64_state_t *st = XXH64_createState();
	struct mfs_file *f;
	char buf[16384];
	uint64_t off = 0;
	ssize_t n = 0;
	int err = st ? mfs_open(fs, &md_root, ino, O_RDONLY, &f) : -ENOMEM;

	if (!err) {
		XXH64_reset(st, 0);
		while ((n = mfs_read(fs, f, buf, sizeof(buf), off)) > 0) {
			XXH64_update(st, buf, (size_t)n);
			off += (uint64_t)n;
		}
		err = n < 0 ? (int)n : 0;
		mfs_release(fs, f);
		*h = XXH64_digest(st);
	}
	XXH64_freeState(st);
	return err;
}

static int cmp_names(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* XXH64 of "name\0value" of every xattr in name order; 0 for none. */
static int hash_xattrs(struct mfs_fs *fs, uint64_t ino, uint64_t *h)
{
	char list[4096], val[65536];
	const char *names[128];
	unsigned int n = 0;
	ssize_t len = mfs_listxattr(fs, &md_root, ino, list, sizeof(list));
	XXH64_state_t *st;

	*h = 0;
	if (len <= 0)
		return (int)len;
	for (ssize_t i = 0; i < len && n < 128; i += (ssize_t)strlen(list + i) + 1)
		names[n++] = list + i;
	qsort(names, n, sizeof(names[0]), cmp_names);
	st = XXH64_createState();
	if (!st)
		return -ENOMEM;
	XXH64_reset(st, 1);
	for (unsigned int i = 0; i < n; i++) {
		ssize_t vl = mfs_getxattr(fs, &md_root, ino, names[i], val, sizeof(val));

		if (vl < 0) {
			XXH64_freeState(st);
			return (int)vl;
		}
		XXH64_update(st, names[i], strlen(names[i]) + 1);
		XXH64_update(st, val, (size_t)vl);
	}
	*h = XXH64_digest(st);
	XXH64_freeState(st);
	return 0;
}

static char type_of(mode_t mode)
{
	switch (mode & S_IFMT) {
	case S_IFREG: return 'f';
	case S_IFDIR: return 'd';
	case S_IFLNK: return 'l';
	case S_IFIFO: return 'p';
	case S_IFCHR: return 'c';
	case S_IFBLK: return 'b';
	case S_IFSOCK: return 's';
	}
	return '?';
}

int md_describe(struct mfs_fs *fs, uint64_t ino, const char *path,
		struct md_entry *e)
{
	char target[4096];
	struct stat st;
	ssize_t n;
	int err = mfs_getattr(fs, ino, &st);

	if (err)
		return err;
	*e = (struct md_entry){ .type = type_of(st.st_mode), .ino = (uint32_t)ino,
				.size = (uint64_t)st.st_size };
	snprintf(e->path, sizeof(e->path), "%s", path);
	if (e->type == 'f')
		err = hash_data(fs, ino, &e->hash);
	else if (e->type == 'l') {
		n = mfs_readlink(fs, ino, target, sizeof(target));
		err = n < 0 ? (int)n : 0;
		if (!err)
			e->hash = XXH64(target, (size_t)n, 0);
	} else if (e->type == 'c' || e->type == 'b')
		e->hash = (uint64_t)st.st_rdev;
	if (!err)
		err = hash_xattrs(fs, ino, &e->xhash);
	return err;
}

/* ---- walking the tree for the manifest ----------------------------------- */

struct names {
	char name[POP_MANY + 16][256];
	uint64_t ino[POP_MANY + 16];
	unsigned int n;
};

static int collect(void *ctx, const char *name, size_t len, uint64_t ino,
		   unsigned int type, uint64_t next, const struct stat *st,
		   uint64_t gen)
{
	struct names *nm = ctx;

	if ((len == 1 && name[0] == '.') || (len == 2 && !memcmp(name, "..", 2)))
		return 0;
	if (nm->n == UT_ARRAY_SIZE(nm->ino) || len > 255)
		return -ENOSPC;
	memcpy(nm->name[nm->n], name, len);
	nm->name[nm->n][len] = 0;
	nm->ino[nm->n++] = ino;
	return 0;
}

static int list_dir(struct mfs_fs *fs, uint64_t dir, struct names *nm)
{
	struct mfs_dir *d;
	int err = mfs_opendir(fs, &md_root, dir, &d);

	nm->n = 0;
	if (err)
		return err;
	err = mfs_readdir(fs, d, 0, false, collect, nm);
	mfs_releasedir(fs, d);
	return err;
}

/* Not the damage's business: fsck may make lost+found anew, and the
 * control and region directories live in memory only. */
static bool skipped(uint64_t dir, const char *name)
{
	return dir == MFS_ROOT_INO && (!strcmp(name, "lost+found") ||
				       !strcmp(name, MFS_REGIONS_DIR_NAME) ||
				       !strcmp(name, MFS_CTL_DIR_NAME));
}

static int walk_tree(struct mfs_fs *fs, uint64_t dir, const char *path,
		     struct md_manifest *m)
{
	struct names *nm = malloc(sizeof(*nm));
	int err = nm ? list_dir(fs, dir, nm) : -ENOMEM;

	for (unsigned int i = 0; !err && i < (nm ? nm->n : 0); i++) {
		char child[256];
		struct md_entry e;

		if (skipped(dir, nm->name[i]))
			continue;
		snprintf(child, sizeof(child), "%s/%s", path, nm->name[i]);
		err = md_describe(fs, nm->ino[i], child, &e);
		if (!err)
			err = md_manifest_add(m, &e);
		if (!err && e.type == 'd')
			err = walk_tree(fs, nm->ino[i], child, m);
	}
	free(nm);
	return err;
}

/* ---- making things ------------------------------------------------------- */

/* Bytes of a pattern of the seed, different per file and offset. */
static void fill(void *buf, size_t len, uint64_t seed, uint64_t salt, uint64_t off)
{
	uint8_t *p = buf;

	for (size_t i = 0; i < len; i++) {
		uint64_t x = (off + i) / 8 * 0x9E3779B97F4A7C15ull ^ seed ^ salt << 32;

		x ^= x >> 29;
		x *= 0xBF58476D1CE4E5B9ull;
		p[i] = (uint8_t)(x >> (8 * ((off + i) % 8)));
	}
}

static int pop_forget(struct pop *p, int err, const struct stat *st)
{
	if (!err)
		mfs_forget(p->fs, st->st_ino, 1);
	return err;
}

static int pop_dir(struct pop *p, uint64_t dir, const char *name, uint64_t *ino)
{
	struct stat st;
	int err = mfs_mkdir(p->fs, &md_root, dir, name, 0755, &st, NULL);

	if (!err)
		*ino = st.st_ino;
	return pop_forget(p, err, &st);
}

/* @len bytes at each of @offs[0..n) of a new file. */
static int pop_file_at(struct pop *p, uint64_t dir, const char *name, size_t len,
		       const uint64_t *offs, unsigned int n, uint64_t *ino)
{
	char *buf = malloc(len ? len : 1);
	struct mfs_file *f = NULL;
	struct stat st = { 0 };
	int err = buf ? mfs_create(p->fs, &md_root, dir, name, 0644, O_RDWR, &st,
				   NULL, &f) : -ENOMEM;

	for (unsigned int i = 0; !err && i < n && len; i++) {
		ssize_t w;

		fill(buf, len, p->seed, st.st_ino, offs[i]);
		w = mfs_write(p->fs, &md_root, f, buf, len, offs[i], 0);
		err = w < 0 ? (int)w : 0;
	}
	if (f) {
		int err2 = mfs_release(p->fs, f);

		err = err ? err : err2;
	}
	if (!err && ino)
		*ino = st.st_ino;
	free(buf);
	return pop_forget(p, err, &st);
}

static int pop_file(struct pop *p, uint64_t dir, const char *name, size_t len,
		    uint64_t *ino)
{
	const uint64_t zero = 0;

	return pop_file_at(p, dir, name, len, &zero, 1, ino);
}

static int pop_node(struct pop *p, uint64_t dir, const char *name, mode_t mode,
		    dev_t rdev)
{
	struct stat st;

	return pop_forget(p, mfs_mknod(p->fs, &md_root, dir, name, mode | 0644, rdev,
				       &st, NULL), &st);
}

static int pop_symlink(struct pop *p, uint64_t dir, const char *name,
		       const char *target)
{
	struct stat st;

	return pop_forget(p, mfs_symlink(p->fs, &md_root, dir, name, target, &st,
					 NULL), &st);
}

static int pop_link(struct pop *p, uint64_t ino, uint64_t dir, const char *name)
{
	struct stat st;

	return pop_forget(p, mfs_link(p->fs, &md_root, ino, dir, name, &st, NULL), &st);
}

static int pop_xattr(struct pop *p, uint64_t ino, const char *name, size_t len)
{
	char val[1024];

	fill(val, len, p->seed, ino + 7, 0);
	return mfs_setxattr(p->fs, &md_root, ino, name, val, len, 0);
}

/* /a/b/c/d deep, small files, a hard link across directories. */
static int pop_tree(struct pop *p)
{
	uint64_t a, b, c, d, small1;
	int err = pop_dir(p, MFS_ROOT_INO, "a", &a);

	if (!err) err = pop_file(p, a, "small1.txt", 100, &small1);
	if (!err) err = pop_file(p, a, "small2.txt", 2000, NULL);
	if (!err) err = pop_dir(p, a, "b", &b);
	if (!err) err = pop_file(p, b, "notes.txt", 5000, NULL);
	if (!err) err = pop_link(p, small1, b, "link1");
	if (!err) err = pop_dir(p, b, "c", &c);
	if (!err) err = pop_file(p, c, "empty", 0, NULL);
	if (!err) err = pop_dir(p, c, "d", &d);
	if (!err) err = pop_file(p, d, "deep.txt", 700, NULL);
	return err;
}

/* A file into the double-indirect blocks, and a sparse one with its
 * second block there too, past a hole. */
static int pop_big(struct pop *p)
{
	uint64_t apb = fmt_addr_per_block(p->bs);
	uint64_t sparse[2] = { 0, (12 + apb + 5) * p->bs + 100 };

	int err = pop_file(p, MFS_ROOT_INO, "big", (size_t)(12 + apb + 20) * p->bs, NULL);

	if (!err)
		err = pop_file_at(p, MFS_ROOT_INO, "sparse", p->bs, sparse, 2, NULL);
	return err;
}

static int pop_special(struct pop *p)
{
	char slow[160];
	int err;

	memset(slow, 0, sizeof(slow));
	for (int i = 0; i < 25; i++)
		strcat(slow, "a/../");
	strcat(slow, "big");
	err = pop_symlink(p, MFS_ROOT_INO, "fastlink", "a/b/notes.txt");
	if (!err) err = pop_symlink(p, MFS_ROOT_INO, "slowlink", slow);
	if (!err) err = pop_node(p, MFS_ROOT_INO, "fifo", S_IFIFO, 0);
	if (!err) err = pop_node(p, MFS_ROOT_INO, "chardev", S_IFCHR, makedev(1, 3));
	if (!err) err = pop_node(p, MFS_ROOT_INO, "blockdev", S_IFBLK, makedev(7, 0));
	return err;
}

static int pop_xattrs(struct pop *p)
{
	uint64_t in, blk;
	int err = pop_file(p, MFS_ROOT_INO, "xattr_in", 300, &in);

	if (!err) err = pop_xattr(p, in, "user.color", 12);
	if (!err) err = pop_file(p, MFS_ROOT_INO, "xattr_blk", 400, &blk);
	if (!err) err = pop_xattr(p, blk, "user.small", 8);
	if (!err) err = pop_xattr(p, blk, "user.big", 300);
	return err;
}

/* A directory of several blocks; two nested ones for the loop. */
static int pop_dirs(struct pop *p)
{
	uint64_t many, la, lb;
	int err = pop_dir(p, MFS_ROOT_INO, "many", &many);

	for (int i = 0; !err && i < POP_MANY; i++) {
		char name[64];

		snprintf(name, sizeof(name), "entry-%03d-with-a-longer-name", i);
		err = pop_file(p, many, name, (size_t)(i % 7) * 10, NULL);
	}
	if (!err) err = pop_dir(p, MFS_ROOT_INO, "loopa", &la);
	if (!err) err = pop_dir(p, la, "loopb", &lb);
	if (!err) err = pop_file(p, lb, "inner.txt", 1500, NULL);
	return err;
}

static int make_fs(const char *image, uint64_t seed, uint32_t bs, struct bdev **bd)
{
	struct bdev_open_opts bo = { .block_size = bs, .no_direct = true };
	struct fmt_mkfs_opts o = { .block_size = bs, .zeroed = true,
				   .now = POP_TIME, .uuid_set = true,
				   .csum_seed = seed * 2654435761u + 12345,
				   .nregions = 2, .dir_index = true };
	int fd = open(image, O_RDWR | O_CREAT | O_TRUNC, 0644), err;

	if (fd < 0)
		return -errno;
	err = ftruncate(fd, (off_t)POP_BYTES) ? -errno : 0;
	close(fd);
	for (int i = 0; i < 16; i++)
		o.uuid[i] = (uint8_t)(seed + 17 * i);
	snprintf(o.regions[0].name, sizeof(o.regions[0].name), "blob");
	o.regions[0].bytes = 64 << 10;
	snprintf(o.regions[1].name, sizeof(o.regions[1].name), "log");
	o.regions[1].bytes = 40 << 10;
	if (!err)
		err = bdev_open(image, &bo, bd);
	if (!err && (err = fmt_mkfs(*bd, &o)))
		bdev_close(*bd);
	return err;
}

static int fill_fs(struct pop *p, struct md_manifest *m)
{
	int err = pop_tree(p);

	if (!err) err = pop_big(p);
	if (!err) err = pop_special(p);
	if (!err) err = pop_xattrs(p);
	if (!err) err = pop_dirs(p);
	if (!err) err = walk_tree(p->fs, MFS_ROOT_INO, "", m);
	return err;
}

/* ---- the same bytes for the same seed ------------------------------------ */

static int normalize_inode(struct md_img *d, uint32_t ino)
{
	struct mfs_inode in;
	int err = md_get_inode(d, ino, &in);

	if (err || !in.i_mode)
		return err;
	in.i_atime = in.i_mtime = in.i_ctime = in.i_crtime = htole64(POP_TIME);
	in.i_atime_nsec = in.i_mtime_nsec = in.i_ctime_nsec = in.i_crtime_nsec = 0;
	in.i_generation = htole32((uint32_t)((ino * 2654435761u) ^ d->seed));
	return md_put_inode(d, ino, &in, true);
}

static int normalize_inodes(struct md_img *d)
{
	uint32_t ninodes = le32toh(d->raw.sb.s_inodes_count);
	int err = 0;

	for (uint32_t ino = 1; !err && ino <= ninodes; ino++) {
		bool used;

		err = md_test_bit(d, MFS_CSUM_IBITMAP, ino, &used);
		if (!err && used)
			err = normalize_inode(d, ino);
	}
	return err;
}

/* The log is empty after the clean unmount: its old blocks go too. */
static int zero_log(struct md_img *d)
{
	struct mfs_inode jin;
	uint32_t n = le32toh(d->raw.sb.s_journal_blocks);
	int err = md_get_inode(d, MFS_JOURNAL_INO, &jin);

	memset(d->blk, 0, d->bs);
	for (uint32_t i = 1; !err && i < n; i++) {
		uint64_t pblk;

		err = fmt_raw_bmap(&d->raw, MFS_JOURNAL_INO, &jin, i, &pblk);
		if (!err && pblk)
			err = md_write_block(d, pblk, d->blk);
	}
	return err;
}

/*
 * Times, generations and the log's leftovers are all that a second
 * populate with the same seed would make differently: fixed here, so
 * fsck's messages (checksums included) are the same on every run.
 */
static int normalize(const char *image, uint64_t seed)
{
	struct md_img d = { .fd = -1, .seed = seed };
	int err = md_img_open(&d, image, false), err2;

	if (err)
		return err;
	err = normalize_inodes(&d);
	if (!err)
		err = zero_log(&d);
	d.raw.sb.s_mtime = d.raw.sb.s_wtime = htole64(POP_TIME);
	if (!err)
		err = md_put_sb(&d, &d.raw.sb, true);
	err2 = md_img_close(&d);
	return err ? err : err2;
}

int md_populate(const char *image, uint64_t seed, uint32_t bs)
{
	struct mfs_mount_opts mo = { .no_flusher = true };
	struct md_manifest m = { 0 };
	struct pop p = { .seed = seed, .bs = bs };
	struct bdev *bd;
	int err = make_fs(image, seed, bs, &bd), err2;

	if (err) {
		fprintf(stderr, "mkdamage: cannot make %s: %s\n", image, strerror(-err));
		return err;
	}
	err = mfs_mount(bd, &mo, &p.fs);
	if (!err) {
		err = fill_fs(&p, &m);
		err2 = mfs_unmount(p.fs);
		err = err ? err : err2;
	}
	bdev_close(bd);
	if (!err)
		err = md_manifest_save(&m, image);
	if (!err)
		err = normalize(image, seed);
	if (err)
		fprintf(stderr, "mkdamage: populating %s: %s\n", image, strerror(-err));
	else
		printf("populated %s: %u entries\n", image, m.n);
	md_manifest_free(&m);
	return err;
}
