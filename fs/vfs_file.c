/*
 * vfs_file.c - the entry layer's open files and directories: open,
 * create, read, write, SEEK_DATA/SEEK_HOLE, fallocate, copy_file_range,
 * fsync, release, and opendir, readdir, releasedir.
 *
 * The checks every kind shares are made here, in the order Linux makes
 * them; the rest is the kind's (vfs.h).  A change to an inode marked for
 * synchronous updates (chattr +S) is committed before the call returns.
 */
#include "mfs_i.h"
#include "icache.h"
#include "vfs.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

struct mfs_dir {
	struct mfs_node *n;
};

int mfs_open_mask(int flags)
{
	switch (flags & O_ACCMODE) {
	case O_RDONLY: return R_OK;
	case O_WRONLY: return W_OK;
	default: return R_OK | W_OK;
	}
}

bool mfs_file_direct(const struct mfs_file *f)
{
	return f->fops->direct;
}

bool mfs_file_keep_cache(struct mfs_file *f)
{
	return f->fops->keep_cache && f->fops->keep_cache(f);
}

int mfs_open(struct mfs_fs *fs, const struct mfs_cred *cr, uint64_t ino,
	     int flags, struct mfs_file **out)
{
	struct mfs_file *f;
	struct mfs_node *n;
	int err = vfs_get(fs, ino, &n);

	if (err)
		return err;
	f = calloc(1, sizeof(*f));
	err = !f ? -ENOMEM : !n->ops->open ? -EISDIR : 0;
	if (!err) {
		f->n = n;
		f->flags = flags;
		err = n->ops->open(n, cr, flags, f);
	}
	if (err) {
		free(f);
		mfs_iput(n);
		return err;
	}
	*out = f;
	return 0;
}

int mfs_create(struct mfs_fs *fs, const struct mfs_cred *cr, uint64_t dir,
	       const char *name, mode_t mode, int flags, struct stat *st,
	       uint64_t *gen, struct mfs_file **out)
{
	struct newinode ni = { .mode = S_IFREG | (mode & 07777) };
	struct mfs_file *f;
	struct mfs_node *n;
	int err;

again:
	err = mfs_create_node(fs, cr, dir, name, &ni, st, gen, &n);
	if (err == -EEXIST && !(flags & O_EXCL)) {
		err = mfs_lookup(fs, cr, dir, name, st, gen);
		if (err == -ENOENT)
			goto again;     /* unlinked since: create it after all */
		if (err)
			return err;
		err = mfs_open(fs, cr, st->st_ino, flags, out);
		if (err)
			mfs_forget(fs, st->st_ino, 1);
		else if (flags & O_TRUNC)
			mfs_node_fill_stat((*out)->n, st);
		return err;
	}
	if (err)
		return err;
	/* A new file is its creator's to open, whatever its mode says. */
	f = calloc(1, sizeof(*f));
	if (!f) {
		mfs_forget(fs, n->ino, 1);
		mfs_iput(n);
		return -ENOMEM;
	}
	f->n = n;
	f->flags = flags;
	mfs_disk_opened(f);
	*out = f;
	return 0;
}

int mfs_release(struct mfs_fs *fs, struct mfs_file *f)
{
	(void)fs;
	if (f->fops->release)
		f->fops->release(f);
	mfs_iput(f->n);
	free(f);
	return 0;
}

ssize_t mfs_read(struct mfs_fs *fs, struct mfs_file *f, void *buf, size_t size,
		 uint64_t off)
{
	(void)fs;
	return f->fops->read(f, buf, size, off);
}

ssize_t mfs_write(struct mfs_fs *fs, const struct mfs_cred *cr,
		  struct mfs_file *f, const void *buf, size_t size, uint64_t off,
		  unsigned int flags)
{
	ssize_t done;
	int err;

	(void)fs;
	if (!f->fops->write)
		return -EBADF;
	done = f->fops->write(f, cr, buf, size, off, flags);
	if (done <= 0)
		return done;
	err = mfs_sync_if_flagged(f->n, false);
	return err ? err : done;
}

int mfs_lseek(struct mfs_fs *fs, struct mfs_file *f, uint64_t off, int whence,
	      uint64_t *out)
{
	(void)fs;
	if ((whence != SEEK_DATA && whence != SEEK_HOLE) || !f->fops->lseek)
		return -EINVAL;
	return f->fops->lseek(f, off, whence, out);
}

int mfs_fallocate(struct mfs_fs *fs, const struct mfs_cred *cr,
		  struct mfs_file *f, int mode, uint64_t off, uint64_t len)
{
	int err;

	(void)fs;
	if (!len || off > INT64_MAX || len > INT64_MAX)
		return -EINVAL;
	if (!mfs_falloc_mode_ok(mode))
		return -EOPNOTSUPP;
	if (!(mfs_open_mask(f->flags) & W_OK))
		return -EBADF;
	if (!f->fops->fallocate)
		return -ENODEV;
	err = f->fops->fallocate(f, cr, mode, off, len);
	return err ? err : mfs_sync_if_flagged(f->n, false);
}

ssize_t mfs_copy_file_range(struct mfs_fs *fs, const struct mfs_cred *cr,
			    struct mfs_file *in, uint64_t off_in,
			    struct mfs_file *out, uint64_t off_out, size_t len,
			    unsigned int flags)
{
	(void)fs;
	if (flags)
		return -EINVAL;
	if (!(mfs_open_mask(in->flags) & R_OK) ||
	    !(mfs_open_mask(out->flags) & W_OK) || (out->flags & O_APPEND))
		return -EBADF;
	if (!in->fops->copy_range || in->fops->copy_range != out->fops->copy_range)
		return -EINVAL;
	return in->fops->copy_range(cr, in, off_in, out, off_out, len);
}

int mfs_fsync(struct mfs_fs *fs, uint64_t ino, bool datasync)
{
	struct mfs_node *n;
	int err = vfs_get(fs, ino, &n);

	if (err)
		return err;
	err = n->ops->fsync ? n->ops->fsync(n, datasync) : 0;
	mfs_iput(n);
	return err;
}

/* ---- directories --------------------------------------------------------- */

int mfs_opendir(struct mfs_fs *fs, const struct mfs_cred *cr, uint64_t ino,
		struct mfs_dir **out)
{
	struct mfs_node *n;
	struct mfs_dir *d = NULL;
	int err = vfs_get(fs, ino, &n);

	if (err)
		return err;
	err = n->ops->readdir ? n->ops->permission(n, cr, R_OK) : -ENOTDIR;
	if (!err)
		d = calloc(1, sizeof(*d));
	if (!err && !d)
		err = -ENOMEM;
	if (err) {
		mfs_iput(n);
		return err;
	}
	d->n = n;
	*out = d;
	return 0;
}

int mfs_readdir(struct mfs_fs *fs, struct mfs_dir *d, uint64_t off, bool plus,
		mfs_filldir_t fill, void *ctx)
{
	(void)fs;
	return d->n->ops->readdir(d->n, off, plus, fill, ctx);
}

int mfs_releasedir(struct mfs_fs *fs, struct mfs_dir *d)
{
	(void)fs;
	mfs_iput(d->n);
	free(d);
	return 0;
}
