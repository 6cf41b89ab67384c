/*
 * t_mount - mounting a fresh image and the read path: getattr, lookup,
 * readdir (positions, plus), readlink, statfs, unmount marking the image
 * clean; the refusals (unknown features, errors, wrong block size); a
 * damaged directory block read as -EIO with one log line, the mount
 * staying up.
 */
#include <fcntl.h>
#include <inttypes.h>
#include <unistd.h>

#include "bdev_test.h"
#include "t_fs.h"
#include "util.h"

static char logged[4096];

static void sink(enum mlog_level level, const char *line, void *arg)
{
	(void)level;
	(void)arg;
	strncat(logged, line, sizeof(logged) - strlen(logged) - 2);
	strcat(logged, "\n");
}

static void fresh(uint32_t bs)
{
	struct bdev *bd = tf_mkfs(bs, 8u << 20);
	struct mfs_fs *fs = tf_mount(bd);
	struct stat st;
	struct statvfs sv;
	uint64_t gen;
	char names[256], buf[16];

	t_ok(mfs_getattr(fs, MFS_ROOT_INO, &st));
	t_assert(S_ISDIR(st.st_mode), "root is a directory");
	t_eq(st.st_nlink, 3);
	t_eq(st.st_ino, MFS_ROOT_INO);
	t_ok(mfs_lookup(fs, &tf_root, MFS_ROOT_INO, "lost+found", &st, &gen));
	t_eq(st.st_ino, MFS_FIRST_INO);
	t_eq(st.st_mode, S_IFDIR | 0700);
	mfs_forget(fs, st.st_ino, 1);
	t_eq(mfs_lookup(fs, &tf_root, MFS_ROOT_INO, "nothing", &st, NULL), -ENOENT);
	t_eq(mfs_lookup(fs, &tf_root, MFS_FIRST_INO, "x", &st, NULL), 0 - EACCES * 0 - ENOENT);
	t_eq(mfs_lookup(fs, &tf_user, MFS_FIRST_INO, "x", &st, NULL), -EACCES);
	tf_list(fs, MFS_ROOT_INO, names, sizeof(names));
	t_assert(!strcmp(names, ".\n..\nlost+found"), "root lists '%s'", names);
	t_eq(mfs_readlink(fs, MFS_ROOT_INO, buf, sizeof(buf)), -EINVAL);
	t_ok(mfs_statfs(fs, &sv));
	t_eq(sv.f_bsize, bs);
	t_eq(sv.f_namemax, 255);
	t_assert(sv.f_bfree > 0 && sv.f_bfree < sv.f_blocks, "free blocks");
	t_eq(mfs_getattr(fs, 0, &st), -ESTALE);
	t_eq(mfs_getattr(fs, 1ull << 40, &st), -ESTALE);
	tf_unmount_check(fs, bd);
	/* A second mount of the image unmounted clean. */
	fs = tf_mount(bd);
	tf_unmount_check(fs, bd);
	bdev_close(bd);
	printf("ok: fresh image of %u-byte blocks\n", bs);
}

/* Positions: each entry's next resumes after it; plus counts lookups. */
struct pos {
	uint64_t next[8];
	char name[8][32];
	unsigned n, stop;
};

static int fill_pos(void *ctx, const char *name, size_t len, uint64_t ino,
		    unsigned type, uint64_t next, const struct stat *st, uint64_t gen)
{
	struct pos *p = ctx;

	(void)ino;
	(void)type;
	(void)gen;
	if (p->n == p->stop)
		return 1;
	if (st)
		t_eq(st->st_ino, ino);
	snprintf(p->name[p->n], 32, "%.*s", (int)len, name);
	p->next[p->n++] = next;
	return 0;
}

static void test_readdir_positions(void)
{
	struct bdev *bd = tf_mkfs(1024, 8u << 20);
	struct mfs_fs *fs = tf_mount(bd);
	struct mfs_dir *d;
	struct pos p = { .stop = 2 }, q = { .stop = 8 };

	t_ok(mfs_opendir(fs, &tf_root, MFS_ROOT_INO, &d));
	t_ok(mfs_readdir(fs, d, 0, false, fill_pos, &p));
	t_eq(p.n, 2);
	t_ok(mfs_readdir(fs, d, p.next[1], true, fill_pos, &q));
	t_eq(q.n, 1);
	t_assert(!strcmp(q.name[0], "lost+found"), "third entry %s", q.name[0]);
	t_eq(q.next[0], 1024);
	q.n = 0;
	/* A position inside a record resumes at the next record. */
	t_ok(mfs_readdir(fs, d, p.next[0] + 4, false, fill_pos, &q));
	t_eq(q.n, 1);
	t_ok(mfs_releasedir(fs, d));
	t_eq(mfs_opendir(fs, &tf_user, MFS_FIRST_INO, &d), -EACCES);
	mfs_forget(fs, MFS_FIRST_INO, 1);   /* the lookup readdirplus gave */
	tf_unmount_check(fs, bd);
	bdev_close(bd);
	printf("ok: readdir positions\n");
}

static void set_sb(struct bdev *bd, void (*fn)(struct mfs_super *))
{
	struct mfs_super *sb = (void *)((char *)bdev_mem_data(bd) + MFS_SB_OFFSET);

	fn(sb);
	fmt_sb_set_csum(sb);
}

static void incompat(struct mfs_super *sb) { sb->s_feature_incompat |= htole32(0x80); }
static void rocompat(struct mfs_super *sb) { sb->s_feature_ro_compat |= htole32(0x80); }
static void errors(struct mfs_super *sb) { sb->s_state |= htole16(MFS_STATE_ERRORS); }

static void test_refusals(void)
{
	struct mfs_mount_opts o = { .cache_bytes = 4u << 20 };
	struct bdev *bd = tf_mkfs(1024, 8u << 20), *other;
	struct mfs_fs *fs;

	set_sb(bd, incompat);
	t_eq(mfs_mount(bd, &o, &fs), -EOPNOTSUPP);
	bdev_close(bd);

	/* Unknown ro_compat features: read-only, asked for or not. */
	bd = tf_mkfs(1024, 8u << 20);
	set_sb(bd, rocompat);
	t_ok(mfs_mount(bd, &o, &fs));
	t_eq(mfs_mkdir(fs, &tf_root, MFS_ROOT_INO, "d", 0755, NULL, NULL), -EROFS);
	t_ok(mfs_unmount(fs));
	o.read_only = true;
	t_ok(mfs_mount(bd, &o, &fs));
	t_eq(mfs_mkdir(fs, &tf_root, MFS_ROOT_INO, "d", 0755, NULL, NULL), -EROFS);
	t_ok(mfs_unmount(fs));
	o.read_only = false;
	bdev_close(bd);

	bd = tf_mkfs(1024, 8u << 20);
	set_sb(bd, errors);
	t_eq(mfs_mount(bd, &o, &fs), -EROFS);
	o.force = true;
	t_ok(mfs_mount(bd, &o, &fs));
	t_ok(mfs_unmount(fs));
	o.force = false;
	bdev_close(bd);

	/* A device opened with another block size than the filesystem's. */
	bd = tf_mkfs(4096, 8u << 20);
	t_ok(bdev_mem_create(8u << 20, 1024, &other));
	memcpy(bdev_mem_data(other), bdev_mem_data(bd), 8u << 20);
	t_eq(mfs_mount(other, &o, &fs), -EINVAL);
	bdev_close(other);
	bdev_close(bd);
	printf("ok: refusals\n");
}

/* The root directory's block, damaged: lookups get -EIO and one line of
 * log naming the directory and the block; the mount stays up. */
static void test_bad_dirblock(void)
{
	struct bdev *bd = tf_mkfs(1024, 8u << 20);
	struct fmt_raw raw;
	struct mfs_inode in;
	struct mfs_fs *fs;
	struct stat st;
	uint64_t blk;
	uint8_t *img;

	t_ok(fmt_raw_open(bd, &raw));
	t_ok(fmt_raw_inode(&raw, MFS_ROOT_INO, &in));
	t_ok(fmt_raw_bmap(&raw, MFS_ROOT_INO, &in, 0, &blk));
	fmt_raw_close(&raw);
	img = (uint8_t *)bdev_mem_data(bd) + blk * 1024;
	img[4] ^= 0x40;                     /* rec_len of "." */
	fs = tf_mount(bd);
	logged[0] = 0;
	mlog_set_sink(sink, NULL);
	t_eq(mfs_lookup(fs, &tf_root, MFS_ROOT_INO, "lost+found", &st, NULL), -EIO);
	t_eq(mfs_lookup(fs, &tf_root, MFS_ROOT_INO, "lost+found", &st, NULL), -EIO);
	mlog_set_sink(NULL, NULL);
	t_assert(strstr(logged, "directory 2, block 0"), "log: %s", logged);
	t_assert(strchr(logged, '\n') == logged + strlen(logged) - 1,
		 "one line only: %s", logged);
	t_ok(mfs_getattr(fs, MFS_ROOT_INO, &st));
	t_ok(mfs_getattr(fs, MFS_FIRST_INO, &st));
	t_ok(mfs_unmount(fs));
	bdev_close(bd);
	printf("ok: damaged directory block\n");
}

/* The primary superblock's second sector as a torn write leaves it. */
static void tear_super(struct bdev *bd)
{
	memset((char *)bdev_mem_data(bd) + MFS_SB_OFFSET + 512, 0x5a, 512);
}

/*
 * A power cut that tore the primary superblock while the log still holds
 * a copy of it: the mount finds the journal through a backup, and the
 * replay mends the primary.  With nothing in the log to mend it, the
 * mount is refused, naming the damage.
 */
static void test_torn_super(void)
{
	uint64_t size = 24u << 20;          /* groups with backups */
	struct mfs_mount_opts o = { .cache_bytes = 4u << 20, .no_flusher = true };
	struct bdev *bd = tf_mkfs(1024, size), *img;
	struct mfs_file *f;
	struct mfs_fs *fs = tf_mount_opts(bd, &o), *fs2;
	struct stat st;

	/* An open file unlinked: the orphan list's head, in the superblock,
	 * goes to the log with the commit. */
	t_ok(mfs_create(fs, &tf_root, MFS_ROOT_INO, "f", 0644, O_RDWR, &st, NULL, &f));
	t_ok(mfs_unlink(fs, &tf_root, MFS_ROOT_INO, "f"));
	t_ok(mfs_sync(fs));
	t_ok(bdev_mem_create(size, 1024, &img));
	memcpy(bdev_mem_data(img), bdev_mem_data(bd), size);
	tear_super(img);
	logged[0] = 0;
	mlog_set_sink(sink, NULL);
	t_ok(mfs_mount(img, &o, &fs2));
	mlog_set_sink(NULL, NULL);
	t_assert(strstr(logged, "primary superblock is damaged"), "log: %s", logged);
	t_ok(mfs_unmount(fs2));
	tf_check(img, true);
	bdev_close(img);
	t_ok(mfs_release(fs, f));
	mfs_forget(fs, st.st_ino, 1);
	tf_unmount_check(fs, bd);

	tear_super(bd);      /* a clean image: no log to mend it */
	logged[0] = 0;
	mlog_set_sink(sink, NULL);
	t_eq(mfs_mount(bd, &o, &fs), -EUCLEAN);
	mlog_set_sink(NULL, NULL);
	t_assert(strstr(logged, "cannot mount: the primary superblock is damaged"),
		 "log: %s", logged);
	bdev_close(bd);
	printf("ok: a torn primary superblock mended by the replay, or refused\n");
}

/* A fresh image of 1 KiB blocks, then of 4 KiB blocks. */
static void test_fresh(void)
{
	fresh(1024);
	fresh(4096);
}

T_MAIN(T_CASE(test_fresh),
       T_CASE(test_readdir_positions),
       T_CASE(test_refusals),
       T_CASE(test_bad_dirblock),
       T_CASE(test_torn_super))
