/*
 * mfs_populate - copy a directory tree into a miscfs image through the
 * filesystem core, without FUSE: what mke2fs -d does for ext4, so that
 * the fsck benchmark can fill an image with a million inodes in minutes.
 *
 * Usage: mfs_populate IMAGE SOURCE-DIR
 * Regular files (contents), directories, symbolic links and special files
 * are copied with their modes, owners and times.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mfs.h"
#include "util.h"

static const struct mfs_cred root = { 0, 0, 0, 0, NULL };
static uint64_t copied;

static int copy_data(struct mfs_fs *fs, struct mfs_file *f, int fd)
{
	static char buf[1 << 16];
	uint64_t off = 0;
	ssize_t n;

	while ((n = read(fd, buf, sizeof(buf))) > 0) {
		ssize_t w = mfs_write(fs, &root, f, buf, (size_t)n, off, 0);

		if (w < 0)
			return (int)w;
		off += (uint64_t)n;
	}
	return n < 0 ? -errno : 0;
}

static int copy_file(struct mfs_fs *fs, uint64_t dir, const char *name, int dfd,
		     const struct stat *sst, uint64_t *ino)
{
	struct mfs_file *f;
	struct stat st;
	int fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW);
	int err = fd < 0 ? -errno : mfs_create(fs, &root, dir, name, sst->st_mode & 07777,
					       O_WRONLY | O_EXCL, &st, NULL, &f);

	if (!err) {
		*ino = st.st_ino;
		err = copy_data(fs, f, fd);
		mfs_release(fs, f);
	}
	if (fd >= 0)
		close(fd);
	return err;
}

static int copy_attrs(struct mfs_fs *fs, uint64_t ino, const struct stat *sst)
{
	struct mfs_setattr sa = {
		.valid = MFS_SET_UID | MFS_SET_GID | MFS_SET_ATIME | MFS_SET_MTIME,
		.uid = sst->st_uid, .gid = sst->st_gid,
		.atime = sst->st_atim, .mtime = sst->st_mtim,
	};

	return mfs_setattr(fs, &root, ino, &sa, NULL);
}

static int copy_tree(struct mfs_fs *fs, uint64_t dir, int dfd);

static int copy_entry(struct mfs_fs *fs, uint64_t dir, int dfd, const char *name)
{
	struct stat sst, st;
	uint64_t ino = 0;
	char target[4096];
	int err = fstatat(dfd, name, &sst, AT_SYMLINK_NOFOLLOW) ? -errno : 0;

	if (err)
		return err;
	if (S_ISDIR(sst.st_mode)) {
		int sub = openat(dfd, name, O_RDONLY | O_DIRECTORY);

		err = sub < 0 ? -errno : mfs_mkdir(fs, &root, dir, name, sst.st_mode & 07777,
						   &st, NULL);
		ino = st.st_ino;
		if (!err)
			err = copy_tree(fs, ino, sub);
		if (sub >= 0)
			close(sub);
	} else if (S_ISREG(sst.st_mode)) {
		err = copy_file(fs, dir, name, dfd, &sst, &ino);
	} else if (S_ISLNK(sst.st_mode)) {
		ssize_t n = readlinkat(dfd, name, target, sizeof(target) - 1);

		if (n < 0)
			return -errno;
		target[n] = 0;
		err = mfs_symlink(fs, &root, dir, name, target, &st, NULL);
		return err;                  /* a link's times follow its creation */
	} else {
		err = mfs_mknod(fs, &root, dir, name, sst.st_mode, sst.st_rdev, &st, NULL);
		ino = st.st_ino;
	}
	if (!err)
		err = copy_attrs(fs, ino, &sst);
	if (ino)
		mfs_forget(fs, ino, 1);
	if (!err && ++copied % 100000 == 0)
		fprintf(stderr, "%" PRIu64 " copied\n", copied);
	return err;
}

static int copy_tree(struct mfs_fs *fs, uint64_t dir, int dfd)
{
	int fd = dup(dfd);
	DIR *d = fd < 0 ? NULL : fdopendir(fd);
	struct dirent *de;
	int err = 0;

	if (!d)
		return -errno;
	while (!err && (de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		err = copy_entry(fs, dir, dfd, de->d_name);
		if (err)
			mlog_err("%s: %s", de->d_name, strerror(-err));
	}
	closedir(d);
	return err;
}

int main(int argc, char **argv)
{
	struct bdev_open_opts bo = { .block_size = 1024 };
	struct mfs_mount_opts mo = { .cache_bytes = 256u << 20 };
	struct mfs_super sb;
	struct mfs_fs *fs;
	struct bdev *bd;
	uint32_t copy;
	int src, err;

	if (argc != 3) {
		fprintf(stderr, "usage: mfs_populate IMAGE SOURCE-DIR\n");
		return 2;
	}
	src = open(argv[2], O_RDONLY | O_DIRECTORY);
	err = src < 0 ? -errno : bdev_open(argv[1], &bo, &bd);
	if (!err) {
		err = fmt_sb_load(bd, &sb, &copy);
		bdev_close(bd);
	}
	bo.block_size = err ? 0 : fmt_block_size(&sb);
	if (!err)
		err = bdev_open(argv[1], &bo, &bd);
	if (!err)
		err = mfs_mount(bd, &mo, &fs);
	if (err) {
		fprintf(stderr, "mfs_populate: %s\n", strerror(-err));
		return 1;
	}
	err = copy_tree(fs, MFS_ROOT_INO, src);
	if (mfs_unmount(fs) && !err)
		err = -EIO;
	bdev_close(bd);
	fprintf(stderr, "%" PRIu64 " copied\n", copied);
	return err ? 1 : 0;
}
