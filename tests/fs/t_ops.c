/*
 * t_ops - each operation of the mounted filesystem and its errors, on
 * both block sizes; after each group the image is unmounted and checked
 * (bitmaps, counts, block maps, directories, link counts), then mounted
 * again to see that everything came back.
 */
#include <fcntl.h>
#include <linux/fs.h>
#include <inttypes.h>
#include <stdlib.h>
#include <unistd.h>

#include "bdev_test.h"
#include "t_fs.h"
#include "t_dev.h"
#include "util.h"

static uint32_t bs;

static struct mfs_fs *remount(struct mfs_fs *fs, struct bdev *bd)
{
	tf_unmount_check(fs, bd);
	return tf_mount(bd);
}

static uint64_t mkfile(struct mfs_fs *fs, uint64_t dir, const char *name, mode_t mode)
{
	struct stat st;

	t_ok(mfs_mknod(fs, &tf_root, dir, name, S_IFREG | mode, 0, &st, NULL));
	mfs_forget(fs, st.st_ino, 1);
	return st.st_ino;
}

static uint64_t mkdir_(struct mfs_fs *fs, uint64_t dir, const char *name)
{
	struct stat st;

	t_ok(mfs_mkdir(fs, &tf_root, dir, name, 0755, &st, NULL));
	mfs_forget(fs, st.st_ino, 1);
	return st.st_ino;
}

static void names(struct mfs_fs *fs, struct bdev *bd)
{
	char longname[300];
	struct stat st;
	uint64_t d, f;

	memset(longname, 'x', 256);
	longname[256] = 0;
	t_eq(mfs_mknod(fs, &tf_root, MFS_ROOT_INO, longname, S_IFREG | 0644, 0, &st, NULL),
	     -ENAMETOOLONG);
	longname[255] = 0;
	f = mkfile(fs, MFS_ROOT_INO, longname, 0644);
	t_eq(tf_ino(fs, longname), f);
	t_eq(mfs_mknod(fs, &tf_root, MFS_ROOT_INO, longname, S_IFREG | 0644, 0, &st, NULL),
	     -EEXIST);
	d = mkdir_(fs, MFS_ROOT_INO, "dir");
	t_eq(mfs_mkdir(fs, &tf_root, MFS_ROOT_INO, "dir", 0755, &st, NULL), -EEXIST);
	t_eq(mfs_mkdir(fs, &tf_root, f, "sub", 0755, &st, NULL), -ENOTDIR);
	t_eq(mfs_lookup(fs, &tf_root, f, "x", &st, NULL), -ENOTDIR);
	mkfile(fs, d, "inside", 0600);
	t_eq(mfs_rmdir(fs, &tf_root, MFS_ROOT_INO, "dir"), -ENOTEMPTY);
	t_eq(mfs_rmdir(fs, &tf_root, MFS_ROOT_INO, longname), -ENOTDIR);
	t_eq(mfs_unlink(fs, &tf_root, MFS_ROOT_INO, "dir"), -EISDIR);
	t_eq(mfs_unlink(fs, &tf_root, MFS_ROOT_INO, "nothing"), -ENOENT);
	t_eq(mfs_rmdir(fs, &tf_root, d, "."), -EINVAL);
	t_eq(mfs_rmdir(fs, &tf_root, d, ".."), -ENOTEMPTY);
	t_ok(mfs_getattr(fs, MFS_ROOT_INO, &st));
	t_eq(st.st_nlink, 4);
	fs = remount(fs, bd);
	t_eq(tf_ino(fs, "dir/inside") > 0, 1);
	t_ok(mfs_unlink(fs, &tf_root, d, "inside"));
	t_ok(mfs_rmdir(fs, &tf_root, MFS_ROOT_INO, "dir"));
	t_ok(mfs_unlink(fs, &tf_root, MFS_ROOT_INO, longname));
	t_ok(mfs_getattr(fs, MFS_ROOT_INO, &st));
	t_eq(st.st_nlink, 3);
	tf_unmount_check(fs, bd);
	printf("ok: names (%u)\n", bs);
}

static void many_entries(struct mfs_fs *fs, struct bdev *bd)
{
	char name[64], list[64];
	uint64_t d = mkdir_(fs, MFS_ROOT_INO, "many");
	struct stat st;

	for (int i = 0; i < 600; i++) {
		snprintf(name, sizeof(name), "entry-with-a-long-name-%04d", i);
		mkfile(fs, d, name, 0644);
	}
	t_ok(mfs_getattr(fs, d, &st));
	t_assert(st.st_size > (off_t)bs, "the directory grew: %lld", (long long)st.st_size);
	for (int i = 0; i < 600; i += 2) {
		snprintf(name, sizeof(name), "entry-with-a-long-name-%04d", i);
		t_ok(mfs_unlink(fs, &tf_root, d, name));
	}
	fs = remount(fs, bd);
	d = tf_ino(fs, "many");
	for (int i = 0; i < 600; i++) {
		snprintf(name, sizeof(name), "entry-with-a-long-name-%04d", i);
		t_eq(mfs_lookup(fs, &tf_root, d, name, &st, NULL), i % 2 ? 0 : -ENOENT);
		if (i % 2)
			mfs_forget(fs, st.st_ino, 1);
	}
	for (int i = 1; i < 600; i += 2) {
		snprintf(name, sizeof(name), "entry-with-a-long-name-%04d", i);
		t_ok(mfs_unlink(fs, &tf_root, d, name));
	}
	tf_list(fs, d, list, sizeof(list));
	t_assert(!strcmp(list, ".\n.."), "left: %s", list);
	t_ok(mfs_rmdir(fs, &tf_root, MFS_ROOT_INO, "many"));
	tf_unmount_check(fs, bd);
	printf("ok: 600 entries (%u)\n", bs);
}

static void seek_is(struct mfs_fs *fs, uint64_t ino, uint64_t off, int whence,
		    int64_t want)
{
	struct mfs_file *o;
	uint64_t pos = 0;
	int err;

	t_ok(mfs_open(fs, &tf_root, ino, O_RDONLY, &o));
	err = mfs_lseek(fs, o, off, whence, &pos);
	t_assert(want < 0 ? err == want : !err && pos == (uint64_t)want,
		 "lseek(%" PRIu64 ", %s) of inode %" PRIu64 ": %d, %" PRIu64
		 "; expected %" PRId64, off, whence == SEEK_DATA ? "data" : "hole",
		 ino, err, pos, want);
	t_ok(mfs_release(fs, o));
}

/* Data at [0, 3 bs + 50) and [big, big + 5000), a hole between that spans
 * the single and into the double indirect range. */
static void seeks(struct mfs_fs *fs, uint64_t f, uint64_t big)
{
	uint64_t end = big + 5000, dstart = big / bs * bs;

	seek_is(fs, f, 0, SEEK_DATA, 0);
	seek_is(fs, f, 0, SEEK_HOLE, 4 * (int64_t)bs);
	seek_is(fs, f, 3 * bs + 49, SEEK_DATA, 3 * (int64_t)bs + 49);
	seek_is(fs, f, 4 * bs, SEEK_DATA, (int64_t)dstart);
	seek_is(fs, f, 5 * bs + 3, SEEK_HOLE, 5 * (int64_t)bs + 3);
	seek_is(fs, f, dstart + 1, SEEK_DATA, (int64_t)dstart + 1);
	seek_is(fs, f, dstart, SEEK_HOLE, (int64_t)end);   /* the end is a hole */
	seek_is(fs, f, end - 1, SEEK_HOLE, (int64_t)end);
	seek_is(fs, f, end, SEEK_DATA, -ENXIO);
	seek_is(fs, f, end, SEEK_HOLE, -ENXIO);
	seek_is(fs, f, end + bs, SEEK_HOLE, -ENXIO);
	seek_is(fs, f, 0, SEEK_SET, -EINVAL);
}

static void data(struct mfs_fs *fs, struct bdev *bd)
{
	uint64_t big = (uint64_t)bs * (12 + 2 * fmt_addr_per_block(bs) + 5);
	uint64_t f = mkfile(fs, MFS_ROOT_INO, "data", 0644), h;
	struct stat st;

	tf_write(fs, f, 0, 100, 1);
	tf_write(fs, f, 50, 3 * bs, 2);            /* across pages, overlapping */
	tf_write(fs, f, big, 5000, 3);              /* double indirect, a hole */
	tf_verify(fs, f, 0, 50, 1);
	tf_verify(fs, f, 50, 3 * bs, 2);
	tf_verify(fs, f, big, 5000, 3);
	seeks(fs, f, big);
	h = mkfile(fs, MFS_ROOT_INO, "holes", 0644);
	tf_write(fs, h, 10 * (uint64_t)bs + 7, 10, 4);
	fs = remount(fs, bd);
	f = tf_ino(fs, "data");
	tf_verify(fs, f, 50, 3 * bs, 2);
	tf_verify(fs, f, big, 5000, 3);
	t_ok(mfs_getattr(fs, f, &st));
	t_eq(st.st_size, big + 5000);
	seeks(fs, f, big);
	h = tf_ino(fs, "holes");
	{
		struct mfs_file *o;
		char buf[64];

		t_ok(mfs_open(fs, &tf_root, h, O_RDONLY, &o));
		t_eq(mfs_read(fs, o, buf, 64, 0), 64);
		for (int i = 0; i < 64; i++)
			t_eq(buf[i], 0);
		t_eq(mfs_read(fs, o, buf, 64, 10 * (uint64_t)bs + 17), 0);
		t_eq(mfs_read(fs, o, buf, 64, 10 * (uint64_t)bs), 17);
		t_ok(mfs_release(fs, o));
	}
	t_ok(mfs_getattr(fs, h, &st));
	t_eq(st.st_blocks, bs / 512);
	tf_unmount_check(fs, bd);
	printf("ok: data (%u)\n", bs);
}

static void truncate_(struct mfs_fs *fs, struct bdev *bd)
{
	uint64_t size = (uint64_t)bs * (12 + fmt_addr_per_block(bs) + 40), f;
	struct mfs_setattr sa = { .valid = MFS_SET_SIZE };
	struct statvfs before, after;
	struct stat st;

	t_ok(mfs_statfs(fs, &before));
	f = mkfile(fs, MFS_ROOT_INO, "t", 0644);
	tf_write(fs, f, 0, size, 5);
	sa.size = 12 * (uint64_t)bs + 100;          /* frees the double indirect */
	t_ok(mfs_setattr(fs, &tf_root, f, &sa, &st));
	t_eq(st.st_size, sa.size);
	tf_verify(fs, f, 0, sa.size, 5);
	sa.size = 1000;
	t_ok(mfs_setattr(fs, &tf_root, f, &sa, &st));
	sa.size = 3000;
	t_ok(mfs_setattr(fs, &tf_root, f, &sa, &st));
	fs = remount(fs, bd);
	f = tf_ino(fs, "t");
	tf_verify(fs, f, 0, 1000, 5);
	{
		struct mfs_file *o;
		char buf[2000];

		t_ok(mfs_open(fs, &tf_root, f, O_RDONLY, &o));
		t_eq(mfs_read(fs, o, buf, 2000, 1000), 2000);
		for (int i = 0; i < 2000; i++)
			t_eq(buf[i], 0);
		t_ok(mfs_release(fs, o));
	}
	sa.size = 0;
	t_ok(mfs_setattr(fs, &tf_root, f, &sa, &st));
	t_eq(st.st_blocks, 0);
	t_ok(mfs_unlink(fs, &tf_root, MFS_ROOT_INO, "t"));
	t_ok(mfs_sync(fs));
	t_ok(mfs_statfs(fs, &after));
	t_eq(after.f_bfree, before.f_bfree);
	t_eq(after.f_ffree, before.f_ffree);
	tf_unmount_check(fs, bd);
	printf("ok: truncate (%u)\n", bs);
}

static void links(struct mfs_fs *fs, struct bdev *bd)
{
	uint64_t f = mkfile(fs, MFS_ROOT_INO, "orig", 0644), d;
	char target[200], buf[256];
	struct stat st;

	t_ok(mfs_link(fs, &tf_root, f, MFS_ROOT_INO, "second", &st, NULL));
	mfs_forget(fs, st.st_ino, 1);
	t_eq(st.st_nlink, 2);
	t_eq(mfs_link(fs, &tf_root, f, MFS_ROOT_INO, "second", &st, NULL), -EEXIST);
	d = mkdir_(fs, MFS_ROOT_INO, "d");
	t_eq(mfs_link(fs, &tf_root, d, MFS_ROOT_INO, "dlink", &st, NULL), -EPERM);
	t_ok(mfs_symlink(fs, &tf_root, MFS_ROOT_INO, "fast", "orig", &st, NULL));
	mfs_forget(fs, st.st_ino, 1);
	t_eq(st.st_size, 4);
	t_eq(st.st_blocks, 0);
	memset(target, 'a', sizeof(target) - 1);
	target[sizeof(target) - 1] = 0;
	t_ok(mfs_symlink(fs, &tf_root, MFS_ROOT_INO, "slow", target, &st, NULL));
	mfs_forget(fs, st.st_ino, 1);
	t_eq(st.st_blocks, bs / 512);
	fs = remount(fs, bd);
	t_eq(mfs_readlink(fs, tf_ino(fs, "fast"), buf, sizeof(buf)), 4);
	t_assert(!memcmp(buf, "orig", 4), "fast target");
	t_eq(mfs_readlink(fs, tf_ino(fs, "slow"), buf, sizeof(buf)), 199);
	t_assert(!memcmp(buf, target, 199), "slow target");
	t_ok(mfs_unlink(fs, &tf_root, MFS_ROOT_INO, "orig"));
	t_ok(mfs_getattr(fs, tf_ino(fs, "second"), &st));
	t_eq(st.st_nlink, 1);
	t_ok(mfs_unlink(fs, &tf_root, MFS_ROOT_INO, "slow"));
	t_ok(mfs_unlink(fs, &tf_root, MFS_ROOT_INO, "fast"));
	tf_unmount_check(fs, bd);
	printf("ok: links and symlinks (%u)\n", bs);
}

static void attrs(struct mfs_fs *fs, struct bdev *bd)
{
	uint64_t f = mkfile(fs, MFS_ROOT_INO, "a", 04755);
	struct mfs_setattr sa = { .valid = MFS_SET_MTIME | MFS_SET_ATIME,
				  .mtime = { 1234567890, 123456789 },
				  .atime = { 1111111111, 999999999 } };
	struct mfs_file *o;
	struct stat st;

	t_ok(mfs_setattr(fs, &tf_root, f, &sa, &st));
	t_eq(st.st_mtim.tv_sec, 1234567890);
	t_eq(st.st_mtim.tv_nsec, 123456789);
	t_eq(st.st_atim.tv_nsec, 999999999);
	sa = (struct mfs_setattr){ .valid = MFS_SET_UID | MFS_SET_GID, .uid = 1000, .gid = 1000 };
	t_ok(mfs_setattr(fs, &tf_root, f, &sa, &st));
	t_eq(st.st_uid, 1000);
	t_eq(st.st_mode & 07777, 0755);             /* chown drops suid */
	sa = (struct mfs_setattr){ .valid = MFS_SET_MODE, .mode = 06755 };
	t_eq(mfs_setattr(fs, &tf_other, f, &sa, &st), -EPERM);
	t_ok(mfs_setattr(fs, &tf_user, f, &sa, &st));
	t_eq(st.st_mode & 07777, 06755);
	sa = (struct mfs_setattr){ .valid = MFS_SET_UID, .uid = 0 };
	t_eq(mfs_setattr(fs, &tf_user, f, &sa, &st), -EPERM);
	sa = (struct mfs_setattr){ .valid = MFS_SET_MTIME, .mtime = { 1, 0 } };
	t_eq(mfs_setattr(fs, &tf_other, f, &sa, &st), -EPERM);
	/* A write by a user that is not the owner drops set-id bits. */
	sa = (struct mfs_setattr){ .valid = MFS_SET_MODE, .mode = 06777 };
	t_ok(mfs_setattr(fs, &tf_user, f, &sa, &st));
	t_ok(mfs_open(fs, &tf_other, f, O_WRONLY, &o));
	t_eq(mfs_write(fs, &tf_other, o, "x", 1, 0, 0), 1);
	t_ok(mfs_release(fs, o));
	t_ok(mfs_getattr(fs, f, &st));
	t_eq(st.st_mode & 07777, 0777);
	t_eq(mfs_open(fs, &tf_other, MFS_FIRST_INO, O_RDONLY, &o), -EACCES);
	/* execve's open needs execute permission, not read permission */
	sa = (struct mfs_setattr){ .valid = MFS_SET_MODE, .mode = 0711 };
	t_ok(mfs_setattr(fs, &tf_root, f, &sa, &st));
	t_eq(mfs_open(fs, &tf_other, f, O_RDONLY, &o), -EACCES);
	t_ok(mfs_open(fs, &tf_other, f, O_RDONLY | MFS_O_EXEC, &o));
	t_ok(mfs_release(fs, o));
	sa.mode = 0744;
	t_ok(mfs_setattr(fs, &tf_root, f, &sa, &st));
	t_eq(mfs_open(fs, &tf_other, f, O_RDONLY | MFS_O_EXEC, &o), -EACCES);
	t_eq(mfs_open(fs, &tf_root, f, O_RDONLY | MFS_O_EXEC, &o), 0);
	t_ok(mfs_release(fs, o));
	sa.mode = 0666;
	t_ok(mfs_setattr(fs, &tf_root, f, &sa, &st));
	t_eq(mfs_open(fs, &tf_root, f, O_RDONLY | MFS_O_EXEC, &o), -EACCES);
	t_eq(mfs_access(fs, &tf_other, f, W_OK), 0);
	t_eq(mfs_access(fs, &tf_user, MFS_FIRST_INO, R_OK), -EACCES);
	fs = remount(fs, bd);
	t_ok(mfs_getattr(fs, tf_ino(fs, "a"), &st));
	t_eq(st.st_atim.tv_sec, 1111111111);
	tf_unmount_check(fs, bd);
	printf("ok: attributes (%u)\n", bs);
}

static void note_changed(void *arg, uint64_t ino)
{
	*(uint64_t *)arg = ino;
}

/*
 * Set-id bits a write drops: set-gid without group execute stays for a
 * writer in the file's group and goes for one outside it.  A caller that
 * may write the file may drop those bits with a mode change (what the
 * kernel asks for before a write when the filesystem does not promise to
 * drop them itself), and nothing more.
 */
static void setid(struct mfs_fs *fs, struct bdev *bd)
{
	static const struct mfs_cred stranger = { 1002, 1002, 022, 0, NULL };
	uint64_t f = mkfile(fs, MFS_ROOT_INO, "s", 0644), seen = 0;
	struct mfs_setattr sa = { .valid = MFS_SET_UID | MFS_SET_GID,
				  .uid = 1000, .gid = 1000 };
	struct mfs_file *o;
	struct stat st;

	mfs_set_attr_changed(fs, note_changed, &seen);
	t_ok(mfs_setattr(fs, &tf_root, f, &sa, &st));
	sa = (struct mfs_setattr){ .valid = MFS_SET_MODE, .mode = 02767 };
	t_ok(mfs_setattr(fs, &tf_user, f, &sa, &st));
	t_ok(mfs_open(fs, &tf_other, f, O_WRONLY, &o));
	t_eq(mfs_write(fs, &tf_other, o, "x", 1, 0, 0), 1);
	t_ok(mfs_release(fs, o));
	t_ok(mfs_getattr(fs, f, &st));
	t_eq(st.st_mode & 07777, 02767);            /* in the group: kept */
	t_eq(seen, 0);
	t_ok(mfs_open(fs, &stranger, f, O_WRONLY, &o));
	t_eq(mfs_write(fs, &stranger, o, "x", 1, 0, 0), 1);
	t_ok(mfs_release(fs, o));
	t_ok(mfs_getattr(fs, f, &st));
	t_eq(st.st_mode & 07777, 0767);
	t_eq(seen, f);

	sa = (struct mfs_setattr){ .valid = MFS_SET_MODE, .mode = 06767 };
	t_ok(mfs_setattr(fs, &tf_user, f, &sa, &st));
	sa.mode = 06766;                            /* more than set-id bits */
	t_eq(mfs_setattr(fs, &stranger, f, &sa, &st), -EPERM);
	sa.mode = 06767;                            /* nothing dropped */
	t_eq(mfs_setattr(fs, &stranger, f, &sa, &st), -EPERM);
	sa.mode = 02767;
	t_ok(mfs_setattr(fs, &stranger, f, &sa, &st));
	t_eq(st.st_mode & 07777, 02767);
	sa = (struct mfs_setattr){ .valid = MFS_SET_MODE, .mode = 06755 };
	t_ok(mfs_setattr(fs, &tf_user, f, &sa, &st));
	sa.mode = 0755;                             /* may not write it */
	t_eq(mfs_setattr(fs, &stranger, f, &sa, &st), -EPERM);
	t_ok(mfs_getattr(fs, f, &st));
	t_eq(st.st_mode & 07777, 06755);
	/* open(O_TRUNC) drops them even with nothing to cut */
	f = mkfile(fs, MFS_ROOT_INO, "e", 0);
	sa = (struct mfs_setattr){ .valid = MFS_SET_MODE, .mode = 06777 };
	t_ok(mfs_setattr(fs, &tf_root, f, &sa, &st));
	t_ok(mfs_open(fs, &stranger, f, O_WRONLY | O_TRUNC, &o));
	t_ok(mfs_release(fs, o));
	t_ok(mfs_getattr(fs, f, &st));
	t_eq(st.st_mode & 07777, 0777);
	t_eq(seen, f);
	mfs_set_attr_changed(fs, NULL, NULL);
	fs = remount(fs, bd);
	t_ok(mfs_getattr(fs, tf_ino(fs, "s"), &st));
	t_eq(st.st_mode & 07777, 06755);
	tf_unmount_check(fs, bd);
	printf("ok: set-id bits (%u)\n", bs);
}

/* Bytes [@off, @off + @len) of @ino all read @c. */
static void expect_bytes(struct mfs_fs *fs, uint64_t ino, uint64_t off, size_t len,
			 char c)
{
	char *buf = malloc(len);
	struct mfs_file *o;

	t_assert(buf, "no memory");
	t_ok(mfs_open(fs, &tf_root, ino, O_RDONLY, &o));
	t_eq(mfs_read(fs, o, buf, len, off), (ssize_t)len);
	for (size_t i = 0; i < len; i++)
		t_assert(buf[i] == c, "byte %" PRIu64 ": %d, expected %d",
			 off + i, buf[i], c);
	t_ok(mfs_release(fs, o));
	free(buf);
}

/*
 * A file opened O_APPEND appends whatever offset a write names, but the
 * dirty pages of a shared mapping, which the kernel may send back through
 * that very file after an ftruncate down, belong at their own offset
 * (MFS_WRITE_AT): appended, they grew the file by what was written.
 */
static void appends(struct mfs_fs *fs, struct bdev *bd)
{
	uint64_t f = mkfile(fs, MFS_ROOT_INO, "log", 0644), cut = 2 * (uint64_t)bs + 300;
	struct mfs_setattr sa = { .valid = MFS_SET_SIZE | MFS_SET_BY_FILE, .size = cut };
	char *page = malloc(bs);
	struct mfs_file *o;
	struct stat st;

	t_assert(page, "no memory");
	memset(page, 'm', bs);
	tf_write(fs, f, 0, 3 * bs, 7);
	t_ok(mfs_open(fs, &tf_root, f, O_WRONLY | O_APPEND, &o));
	t_eq(mfs_write(fs, &tf_root, o, "tail", 4, 0, 0), 4);
	t_ok(mfs_getattr(fs, f, &st));
	t_eq(st.st_size, 3 * bs + 4);
	t_ok(mfs_setattr(fs, &tf_root, f, &sa, &st));
	t_eq(mfs_write(fs, &tf_root, o, page, bs, bs, MFS_WRITE_AT), (ssize_t)bs);
	t_ok(mfs_getattr(fs, f, &st));
	t_eq(st.st_size, cut);
	t_eq(mfs_write(fs, &tf_root, o, "end", 3, 0, 0), 3);
	t_ok(mfs_release(fs, o));
	fs = remount(fs, bd);
	f = tf_ino(fs, "log");
	t_ok(mfs_getattr(fs, f, &st));
	t_eq(st.st_size, cut + 3);
	tf_verify(fs, f, 0, bs, 7);
	expect_bytes(fs, f, bs, bs, 'm');
	tf_verify(fs, f, 2 * (uint64_t)bs, 300, 7);
	free(page);
	tf_unmount_check(fs, bd);
	printf("ok: O_APPEND and pages written back (%u)\n", bs);
}

/* What readdir with plus said of each entry but "." and "..". */
struct plus {
	char name[8][16];
	uint64_t ino[8], gen[8];
	mode_t mode[8];
	unsigned n;
};

static int fill_plus(void *ctx, const char *name, size_t len, uint64_t ino,
		     unsigned type, uint64_t next, const struct stat *st, uint64_t gen)
{
	struct plus *p = ctx;

	(void)type;
	(void)next;
	if (!st)
		return 0;
	t_assert(p->n < 8 && len < 16, "unexpected entry %.*s", (int)len, name);
	snprintf(p->name[p->n], 16, "%.*s", (int)len, name);
	p->ino[p->n] = ino;
	p->gen[p->n] = gen;
	p->mode[p->n++] = st->st_mode;
	return 0;
}

/*
 * readdir with plus hands out inodes as lookups do, so it must name them
 * as lookups do, generation included: FUSE's kernel side takes an inode
 * it knows that comes back with another generation for a reused number,
 * marks it bad (its open files then fail with EIO) and drops its dentries.
 */
static void readdir_plus(struct mfs_fs *fs, struct bdev *bd)
{
	uint64_t d = mkdir_(fs, MFS_ROOT_INO, "d"), gen[3];
	const char *names[3] = { "f", "sub", "l" };
	struct plus p = { 0 };
	struct mfs_dir *dh;
	struct stat st;

	t_ok(mfs_mknod(fs, &tf_root, d, "f", S_IFREG | 0644, 0, &st, &gen[0]));
	t_ok(mfs_mkdir(fs, &tf_root, d, "sub", 0755, &st, &gen[1]));
	t_ok(mfs_symlink(fs, &tf_root, d, "l", "f", &st, &gen[2]));
	t_ok(mfs_opendir(fs, &tf_root, d, &dh));
	t_ok(mfs_readdir(fs, dh, 0, true, fill_plus, &p));
	t_ok(mfs_releasedir(fs, dh));
	t_eq(p.n, 3);
	for (unsigned i = 0; i < 3; i++) {
		uint64_t g = 0;

		t_ok(mfs_lookup(fs, &tf_root, d, p.name[i], &st, &g));
		t_eq(p.ino[i], st.st_ino);
		t_eq(p.mode[i], st.st_mode);
		t_eq(p.gen[i], g);
		for (unsigned k = 0; k < 3; k++)
			if (!strcmp(p.name[i], names[k]))
				t_eq(g, gen[k]);
		mfs_forget(fs, st.st_ino, 3);    /* create, readdir, lookup */
	}
	tf_unmount_check(fs, bd);
	printf("ok: readdir plus (%u)\n", bs);
}

/* A full filesystem: -ENOSPC with nothing half done, and room again
 * once the file is gone. */
static void full(struct mfs_fs *fs, struct bdev *bd)
{
	uint64_t f = mkfile(fs, MFS_ROOT_INO, "fill", 0644);
	size_t chunk = 256 * 1024;
	char *buf = calloc(1, chunk);
	struct mfs_file *o;
	uint64_t off = 0;
	struct stat st;
	ssize_t n;

	t_ok(mfs_open(fs, &tf_root, f, O_WRONLY, &o));
	while ((n = mfs_write(fs, &tf_root, o, buf, chunk, off, 0)) > 0)
		off += (uint64_t)n;
	t_eq(n, -ENOSPC);
	/* Rewriting blocks the file has needs no free one. */
	t_eq(mfs_write(fs, &tf_root, o, buf, chunk, 0, 0), (ssize_t)chunk);
	t_ok(mfs_release(fs, o));
	fs = remount(fs, bd);
	t_ok(mfs_getattr(fs, tf_ino(fs, "fill"), &st));
	t_eq((uint64_t)st.st_size, off);
	for (int i = 0; i < 40; i++) {
		char name[16];
		int err;

		snprintf(name, sizeof(name), "d%d", i);
		err = mfs_mkdir(fs, &tf_root, MFS_ROOT_INO, name, 0755, &st, NULL);
		if (err)
			t_eq(err, -ENOSPC);
		else
			mfs_forget(fs, st.st_ino, 1);
	}
	fs = remount(fs, bd);
	t_ok(mfs_unlink(fs, &tf_root, MFS_ROOT_INO, "fill"));
	tf_write(fs, mkfile(fs, MFS_ROOT_INO, "after", 0644), 0, 100000, 9);
	free(buf);
	tf_unmount_check(fs, bd);
	printf("ok: full filesystem (%u)\n", bs);
}

/* An inode unlinked while open keeps its data until released; after a
 * crash with it still open, the mount frees it from the orphan list. */
static void orphans(struct mfs_fs *fs, struct bdev *bd)
{
	struct mfs_file *o;
	struct bdev *crash;
	struct statvfs a, b;
	struct stat st;
	uint64_t f;

	t_ok(mfs_statfs(fs, &a));
	f = mkfile(fs, MFS_ROOT_INO, "open", 0644);
	tf_write(fs, f, 0, 20 * bs, 6);
	t_ok(mfs_open(fs, &tf_root, f, O_RDONLY, &o));
	t_ok(mfs_lookup(fs, &tf_root, MFS_ROOT_INO, "open", &st, NULL));
	t_ok(mfs_unlink(fs, &tf_root, MFS_ROOT_INO, "open"));
	tf_verify(fs, f, 0, 20 * bs, 6);
	t_ok(mfs_sync(fs));
	/* The image as a crash now would leave it. */
	crash = t_dev_mem(bd->size, bs);
	memcpy(bdev_mem_data(crash), bdev_mem_data(bd), bd->size);
	t_ok(mfs_release(fs, o));
	mfs_forget(fs, f, 1);
	t_ok(mfs_sync(fs));
	t_ok(mfs_statfs(fs, &b));
	t_eq(a.f_bfree, b.f_bfree);
	t_eq(a.f_ffree, b.f_ffree);
	tf_unmount_check(fs, bd);
	fs = tf_mount(crash);
	t_ok(mfs_statfs(fs, &b));
	t_eq(a.f_bfree, b.f_bfree);
	t_eq(a.f_ffree, b.f_ffree);
	tf_unmount_check(fs, crash);
	bdev_close(crash);
	printf("ok: orphans (%u)\n", bs);
}

/*
 * Inodes the kernel still knows but nothing uses shrink to stubs: made
 * and looked up, 14,000 of them keep at most the LRU's worth of nodes;
 * each comes back whole when used (its data too), an unlink of one goes
 * when the kernel forgets it, and the stubs go with the forgets.
 */
static void stubs(struct mfs_fs *fs, struct bdev *bd)
{
	unsigned n = 14000;
	uint64_t *ino = calloc(n, sizeof(*ino)), d;
	struct statvfs a, b;
	struct stat st;
	char name[32];

	t_ok(mfs_statfs(fs, &a));
	d = mkdir_(fs, MFS_ROOT_INO, "d");
	for (unsigned i = 0; i < n; i++) {
		snprintf(name, sizeof(name), "f%u", i);
		t_ok(mfs_mknod(fs, &tf_root, d, name, S_IFREG | 0644, 0, &st, NULL));
		ino[i] = st.st_ino;
		if (i % 1000 == 0)
			tf_write(fs, ino[i], 0, bs + 7, i);
	}
	printf("stubs (%u): %" PRIu64 " nodes, %" PRIu64 " stubs in %" PRIu64 " bytes\n",
	       bs, tf_counter(fs, "fs_inodes_cached"), tf_counter(fs, "fs_inode_stubs"),
	       tf_counter(fs, "fs_inode_stub_bytes"));
	t_assert(tf_counter(fs, "fs_inodes_cached") <= 8192 + 64, "nodes kept");
	t_assert(tf_counter(fs, "fs_inode_stubs") >= n - 8192, "no stubs");
	for (unsigned i = 0; i < n; i++) {
		snprintf(name, sizeof(name), "f%u", i);
		t_ok(mfs_lookup(fs, &tf_root, d, name, &st, NULL));
		t_eq(st.st_ino, ino[i]);
		t_eq(st.st_size, i % 1000 ? 0 : bs + 7);
		if (i % 1000 == 0)
			tf_verify(fs, ino[i], 0, bs + 7, i);
		mfs_forget(fs, ino[i], 1);          /* the first lookup stays */
	}
	for (unsigned i = 0; i < n; i += 2) {
		snprintf(name, sizeof(name), "f%u", i);
		t_ok(mfs_unlink(fs, &tf_root, d, name));
	}
	for (unsigned i = 0; i < n; i++)
		mfs_forget(fs, ino[i], 1);
	t_eq(tf_counter(fs, "fs_inode_stubs"), 0);
	for (unsigned i = 1; i < n; i += 2) {
		snprintf(name, sizeof(name), "f%u", i);
		t_ok(mfs_unlink(fs, &tf_root, d, name));
	}
	t_ok(mfs_rmdir(fs, &tf_root, MFS_ROOT_INO, "d"));
	t_ok(mfs_sync(fs));
	t_ok(mfs_statfs(fs, &b));
	t_eq(a.f_ffree, b.f_ffree);
	t_eq(a.f_bfree, b.f_bfree);
	tf_unmount_check(fs, bd);
	free(ino);
}

static void rename_(struct mfs_fs *fs, struct bdev *bd)
{
	uint64_t a = mkdir_(fs, MFS_ROOT_INO, "a"), b = mkdir_(fs, a, "b");
	uint64_t c = mkdir_(fs, MFS_ROOT_INO, "c"), f, g;
	struct stat st;
	char list[256];

	f = mkfile(fs, MFS_ROOT_INO, "f", 0644);
	g = mkfile(fs, MFS_ROOT_INO, "g", 0644);
	tf_write(fs, g, 0, 10 * bs, 1);
	t_ok(mfs_rename(fs, &tf_root, MFS_ROOT_INO, "f", MFS_ROOT_INO, "f2", 0));
	t_eq(tf_ino(fs, "f2"), f);
	t_ok(mfs_rename(fs, &tf_root, MFS_ROOT_INO, "f2", MFS_ROOT_INO, "g", 0));
	t_eq(tf_ino(fs, "g"), f);                   /* the old g is freed */
	t_eq(mfs_rename(fs, &tf_root, MFS_ROOT_INO, "a", b, "x", 0), -EINVAL);
	t_eq(mfs_rename(fs, &tf_root, MFS_ROOT_INO, "a", a, "x", 0), -EINVAL);
	t_ok(mfs_rename(fs, &tf_root, a, "b", c, "b", 0));   /* '..' moves */
	t_eq(tf_ino(fs, "c/b"), b);
	t_ok(mfs_lookup(fs, &tf_root, b, "..", &st, NULL));
	mfs_forget(fs, st.st_ino, 1);
	t_eq(st.st_ino, c);
	t_ok(mfs_getattr(fs, a, &st));
	t_eq(st.st_nlink, 2);
	t_ok(mfs_getattr(fs, c, &st));
	t_eq(st.st_nlink, 3);
	t_eq(mfs_rename(fs, &tf_root, MFS_ROOT_INO, "g", MFS_ROOT_INO, "a", 0), -EISDIR);
	t_eq(mfs_rename(fs, &tf_root, MFS_ROOT_INO, "a", MFS_ROOT_INO, "g", 0), -ENOTDIR);
	t_eq(mfs_rename(fs, &tf_root, MFS_ROOT_INO, "a", MFS_ROOT_INO, "c", 0), -ENOTEMPTY);
	t_ok(mfs_rename(fs, &tf_root, c, "b", MFS_ROOT_INO, "a", 0));  /* over empty */
	t_eq(tf_ino(fs, "a"), b);
	t_eq(mfs_rename(fs, &tf_root, MFS_ROOT_INO, "g", MFS_ROOT_INO, "a",
			RENAME_NOREPLACE), -EEXIST);
	t_eq(mfs_rename(fs, &tf_root, MFS_ROOT_INO, "g", MFS_ROOT_INO, "none",
			RENAME_EXCHANGE), -ENOENT);
	t_ok(mfs_rename(fs, &tf_root, MFS_ROOT_INO, "g", c, "inside", 0));
	t_ok(mfs_rename(fs, &tf_root, MFS_ROOT_INO, "a", c, "inside", RENAME_EXCHANGE));
	t_eq(tf_ino(fs, "c/inside"), b);
	t_eq(tf_ino(fs, "a"), f);
	t_ok(mfs_lookup(fs, &tf_root, b, "..", &st, NULL));
	mfs_forget(fs, st.st_ino, 1);
	t_eq(st.st_ino, c);
	t_ok(mfs_link(fs, &tf_root, f, MFS_ROOT_INO, "same", &st, NULL));
	mfs_forget(fs, st.st_ino, 1);
	t_ok(mfs_rename(fs, &tf_root, MFS_ROOT_INO, "a", MFS_ROOT_INO, "same", 0));
	t_eq(tf_ino(fs, "a"), f);                   /* both names stay */
	fs = remount(fs, bd);
	tf_list(fs, MFS_ROOT_INO, list, sizeof(list));
	t_assert(!strcmp(list, ".\n..\na\nc\nlost+found\nsame"), "root: %s", list);
	/* Sticky: another user may not move the owner's file away. */
	{
		struct mfs_setattr sa = { .valid = MFS_SET_MODE, .mode = 01777 };

		t_ok(mfs_setattr(fs, &tf_root, MFS_ROOT_INO, &sa, &st));
		t_eq(mfs_rename(fs, &tf_other, MFS_ROOT_INO, "same", MFS_ROOT_INO, "z", 0),
		     -EPERM);
		sa.mode = 0755;
		t_ok(mfs_setattr(fs, &tf_root, MFS_ROOT_INO, &sa, &st));
	}
	tf_unmount_check(fs, bd);
	printf("ok: rename (%u)\n", bs);
}

/*
 * A create that fails after its inode was allocated: the handle cannot be
 * undone, so the inode's bit stays set while its slot still holds the
 * previous owner, unlinked.  The failed create must free it again, or
 * the image keeps an inode in use with no links.  The mkdir fails when
 * its directory block is allocated, on a block bitmap that cannot be read.
 */
static void create_fails(struct mfs_fs *fs, struct bdev *bd)
{
	const struct mfs_group_desc *gd;
	struct fmt_raw raw;
	struct stat st;
	uint64_t bitmap;
	int err;

	mkfile(fs, MFS_ROOT_INO, "gone", 0644);
	t_ok(mfs_unlink(fs, &tf_root, MFS_ROOT_INO, "gone"));
	fs = remount(fs, bd);                   /* nothing cached */
	t_ok(fmt_raw_open(bd, &raw));
	t_eq(le32toh(raw.sb.s_groups_count), 1);
	t_ok(fmt_raw_gdesc(&raw, 0, &gd));
	bitmap = le32toh(gd->bg_block_bitmap);
	fmt_raw_close(&raw);
	t_ok(bdev_wrap_fail(bd, bitmap * bs, bs, BDEV_WRAP_FAIL_READ));
	err = mfs_mkdir(fs, &tf_root, MFS_ROOT_INO, "d", 0755, &st, NULL);
	t_assert(err == -EIO, "mkdir %d", err);
	t_ok(bdev_wrap_fail(bd, 0, 0, 0));
	tf_unmount_check(fs, bd);
	printf("ok: a create that fails after allocating its inode (%u)\n", bs);
}

/* An inode freed is the next one a create takes (the lowest free), also
 * when the groups before have filled and the allocator skips them, and
 * when every inode but the freed one is taken. */
static void inode_reuse(struct mfs_fs *fs, struct bdev *bd)
{
	struct statvfs sv;
	uint64_t a, b, c;
	char name[32];
	unsigned n = 0;
	int err = 0;

	a = mkfile(fs, MFS_ROOT_INO, "a", 0644);
	b = mkfile(fs, MFS_ROOT_INO, "b", 0644);
	c = mkfile(fs, MFS_ROOT_INO, "c", 0644);
	t_eq(b, a + 1);
	t_eq(c, b + 1);
	t_ok(mfs_unlink(fs, &tf_root, MFS_ROOT_INO, "b"));
	t_eq(mkfile(fs, MFS_ROOT_INO, "b2", 0644), b);
	/* Every inode taken (in three groups at 1 KiB blocks). */
	while (!err) {
		struct stat st;

		snprintf(name, sizeof(name), "f%u", n);
		err = mfs_mknod(fs, &tf_root, MFS_ROOT_INO, name, S_IFREG | 0644, 0, &st, NULL);
		if (!err)
			mfs_forget(fs, st.st_ino, 1);
		n += !err;
	}
	t_eq(err, -ENOSPC);
	t_ok(mfs_statfs(fs, &sv));
	t_eq(sv.f_ffree, 0);
	t_ok(mfs_unlink(fs, &tf_root, MFS_ROOT_INO, "a"));
	t_eq(mkfile(fs, MFS_ROOT_INO, "a2", 0644), a);
	t_ok(mfs_unlink(fs, &tf_root, MFS_ROOT_INO, "f0"));
	t_ok(mfs_unlink(fs, &tf_root, MFS_ROOT_INO, "c"));
	t_assert(mkfile(fs, MFS_ROOT_INO, "c2", 0644) == c, "the lowest free inode first");
	tf_unmount_check(fs, bd);
	printf("ok: freed inodes taken again (%u files filled the %u-byte-block image)\n",
	       n, bs);
}

/* @fn on a fresh image of @bytes, at 1 KiB blocks, then at 4 KiB blocks. */
static void each(void (*fn)(struct mfs_fs *, struct bdev *), uint64_t bytes)
{
	static const uint32_t sizes[] = { 1024, 4096 };

	for (unsigned i = 0; i < 2; i++) {
		struct bdev *bd;

		bs = sizes[i];
		bd = tf_mkfs(bs, bytes);
		fn(tf_mount(bd), bd);
		bdev_close(bd);
	}
}

static void test_names(void) { each(names, 16u << 20); }
static void test_many_entries(void) { each(many_entries, 16u << 20); }
static void test_data(void) { each(data, 64u << 20); }
static void test_truncate(void) { each(truncate_, 64u << 20); }
static void test_links(void) { each(links, 16u << 20); }
static void test_attrs(void) { each(attrs, 16u << 20); }
static void test_setid(void) { each(setid, 16u << 20); }
static void test_appends(void) { each(appends, 16u << 20); }
static void test_readdir_plus(void) { each(readdir_plus, 16u << 20); }
static void test_full(void) { each(full, 8u << 20); }
static void test_orphans(void) { each(orphans, 16u << 20); }
static void test_rename(void) { each(rename_, 16u << 20); }
static void test_stubs(void) { each(stubs, 64u << 20); }
static void test_create_fails(void) { each(create_fails, 8u << 20); }
static void test_inode_reuse(void) { each(inode_reuse, 24u << 20); }

T_MAIN(T_CASE(test_names),
       T_CASE(test_many_entries),
       T_CASE(test_data),
       T_CASE(test_truncate),
       T_CASE(test_links),
       T_CASE(test_attrs),
       T_CASE(test_setid),
       T_CASE(test_appends),
       T_CASE(test_readdir_plus),
       T_CASE(test_full),
       T_CASE(test_orphans),
       T_CASE(test_rename),
       T_CASE(test_stubs),
       T_CASE(test_create_fails),
       T_CASE(test_inode_reuse))
