/*
 * vfs_attr.c - the entry layer's attributes: stat, access(2), setattr,
 * the inode flags of chattr(1), and the xattr calls.
 *
 * Every inode, of the disk or of memory, keeps what stat reports in its
 * node, so getattr and the flags' read are the same for every kind; the
 * rest goes to the kind's operation (vfs.h) after the checks every kind
 * shares, in the order Linux makes them.
 */
#include "mfs_i.h"
#include "icache.h"
#include "vfs.h"
#include "xattr.h"

#include <errno.h>
#include <sys/xattr.h>
#include <unistd.h>

int mfs_getattr(struct mfs_fs *fs, uint64_t ino, struct stat *st)
{
	struct mfs_node *n;
	int err = vfs_get(fs, ino, &n);

	if (err)
		return err;
	mfs_node_fill_stat(n, st);
	mfs_iput(n);
	return 0;
}

/* A read-only filesystem refuses writing what it stores: files,
 * directories and symbolic links, not devices or fifos. */
static bool stores_data(struct mfs_node *n)
{
	uint16_t mode = node_mode(n);

	return S_ISREG(mode) || S_ISDIR(mode) || S_ISLNK(mode);
}

int mfs_access(struct mfs_fs *fs, const struct mfs_cred *cr, uint64_t ino,
	       int mask)
{
	struct mfs_node *n;
	int err = vfs_get(fs, ino, &n);

	if (err)
		return err;
	err = n->ops->permission(n, cr, mask & (R_OK | W_OK | X_OK));
	if (!err && (mask & W_OK) && mfs_check_rw(fs) && stores_data(n))
		err = -EROFS;
	mfs_iput(n);
	return err;
}

int mfs_setattr(struct mfs_fs *fs, const struct mfs_cred *cr, uint64_t ino,
		const struct mfs_setattr *sa, struct stat *st)
{
	struct mfs_node *n;
	int err = vfs_get(fs, ino, &n);

	if (err)
		return err;
	err = n->ops->setattr ? n->ops->setattr(n, cr, sa) : -EPERM;
	if (!err)
		err = mfs_sync_if_flagged(n, false);
	if (!err && st)
		mfs_node_fill_stat(n, st);
	mfs_iput(n);
	return err;
}

/* ---- inode flags --------------------------------------------------------- */

int mfs_get_flags(struct mfs_fs *fs, uint64_t ino, uint32_t *flags)
{
	struct mfs_node *n;
	int err = vfs_get(fs, ino, &n);

	if (err)
		return err;
	pthread_mutex_lock(&n->lock);
	*flags = mfs_node_flags(n) & MFS_USER_FL_VISIBLE;
	pthread_mutex_unlock(&n->lock);
	mfs_iput(n);
	return 0;
}

int mfs_set_flags(struct mfs_fs *fs, const struct mfs_cred *cr, uint64_t ino,
		  uint32_t flags)
{
	struct mfs_node *n;
	int err = vfs_get(fs, ino, &n);

	if (err)
		return err;
	err = n->ops->set_flags ? n->ops->set_flags(n, cr, flags) : -EPERM;
	if (!err)
		err = mfs_sync_if_flagged(n, S_ISDIR(node_mode(n)));
	/* The ctime moved, and an ioctl's reply carries no attributes. */
	if (!err && fs->attr_changed_fn)
		fs->attr_changed_fn(fs->attr_changed_arg, n->ino);
	mfs_iput(n);
	return err;
}

/* ---- extended attributes ------------------------------------------------- */

static int change_xattr(struct mfs_fs *fs, const struct mfs_cred *cr, uint64_t ino,
			const char *name, const void *value, size_t size, int flags)
{
	struct mfs_xname nm;
	struct mfs_node *n;
	int err;

	/* In the order setxattr(2) checks. */
	if (flags & ~(XATTR_CREATE | XATTR_REPLACE))
		return -EINVAL;
	err = mfs_xattr_parse_name(name, &nm);
	if (!err && value && size > MFS_XATTR_SIZE_MAX)
		err = -E2BIG;
	if (!err)
		err = vfs_get(fs, ino, &n);
	if (err)
		return err;
	err = n->ops->setxattr ? n->ops->setxattr(n, cr, &nm, value, size, flags) :
	      -EPERM;
	mfs_iput(n);
	return err;
}

int mfs_setxattr(struct mfs_fs *fs, const struct mfs_cred *cr, uint64_t ino,
		 const char *name, const void *value, size_t size, int flags)
{
	return change_xattr(fs, cr, ino, name, value ? value : "", size, flags);
}

int mfs_removexattr(struct mfs_fs *fs, const struct mfs_cred *cr, uint64_t ino,
		    const char *name)
{
	return change_xattr(fs, cr, ino, name, NULL, 0, XATTR_REPLACE);
}

ssize_t mfs_getxattr(struct mfs_fs *fs, const struct mfs_cred *cr, uint64_t ino,
		     const char *name, void *buf, size_t size)
{
	struct mfs_xname nm;
	struct mfs_node *n;
	ssize_t ret = mfs_xattr_parse_name(name, &nm);

	if (!ret)
		ret = vfs_get(fs, ino, &n);
	if (ret)
		return ret;
	ret = n->ops->getxattr ? n->ops->getxattr(n, cr, &nm, buf, size) : -ENODATA;
	mfs_iput(n);
	return ret;
}

ssize_t mfs_listxattr(struct mfs_fs *fs, const struct mfs_cred *cr, uint64_t ino,
		      char *buf, size_t size)
{
	struct mfs_node *n;
	ssize_t ret = vfs_get(fs, ino, &n);

	if (ret)
		return ret;
	ret = n->ops->listxattr ? n->ops->listxattr(n, cr, buf, size) : 0;
	mfs_iput(n);
	return ret;
}
