/*
 * vfs.c - the entry layer's names: lookup, the calls that create,
 * link, remove and rename names, readlink and forget.
 *
 * Each call checks what every kind shares -- the name, the read-only
 * state, that a directory is one -- then asks the directory's kind
 * whether it takes the change at all (refuse), locks the inodes a change
 * of names concerns (vfs_lock.c) and hands the rest to the kind's
 * operation (vfs.h).  A directory marked for synchronous updates
 * (chattr +S/+D) has its change committed before the call returns.
 */
#include "mfs_i.h"
#include "icache.h"
#include "vfs.h"

#include <errno.h>
#include <linux/fs.h>
#include <string.h>
#include <unistd.h>

/* The one place that tells an inode of memory from one of the disk. */
int vfs_get(struct mfs_fs *fs, uint64_t ino, struct mfs_node **out)
{
	int err = mfs_mem_get(fs, ino, out);

	return err == 1 ? mfs_iget(fs, ino, out) : err;
}

/* As vfs_get, for a number a file handle gave: one freed since is gone. */
static int get_handle(struct mfs_fs *fs, uint64_t ino, struct mfs_node **out)
{
	int err = mfs_mem_get(fs, ino, out);

	if (err == 1)
		err = mfs_iget_handle(fs, ino, out);
	return err == -ESTALE ? -ENOENT : err;
}

void mfs_forget(struct mfs_fs *fs, uint64_t ino, uint64_t nlookup)
{
	struct mfs_node *n;
	int err = mfs_mem_get(fs, ino, &n);

	if (err == 1)
		mfs_icache_forget(fs, ino, nlookup);
	else if (!err)
		mfs_iput(n);        /* in memory for good: nothing to count */
}

static int check_name(const char *name, size_t *len)
{
	*len = strlen(name);
	if (*len > MFS_NAME_LEN)
		return -ENAMETOOLONG;
	if (!*len || memchr(name, '/', *len))
		return -EINVAL;
	return 0;
}

/* The directory @ino, referenced; -ENOTDIR if it is none. */
static int get_dir(struct mfs_fs *fs, uint64_t ino, struct mfs_node **out)
{
	int err = vfs_get(fs, ino, out);

	if (!err && !(*out)->ops->lookup) {
		mfs_iput(*out);
		err = -ENOTDIR;
	}
	return err;
}

/* The directory @ino, referenced, if a change of @name there may go on. */
static int get_dir_to_change(struct mfs_fs *fs, uint64_t ino, const char *name,
			     bool create, struct mfs_node **out)
{
	int err = get_dir(fs, ino, out);

	if (err)
		return err;
	if ((*out)->ops->refuse)
		err = (*out)->ops->refuse(*out, name, create);
	if (!err)
		err = mfs_check_rw(fs);
	if (err)
		mfs_iput(*out);
	return err;
}

/* Hand out @n with its stat and a lookup count. */
static void hand_out(struct mfs_node *n, struct stat *st, uint64_t *gen)
{
	if (st)
		mfs_node_fill_stat(n, st);
	if (gen)
		*gen = le32toh(n->raw.i_generation);
	mfs_iget_lookup(n);
}

/* ---- lookup -------------------------------------------------------------- */

/*
 * "." of any inode is the inode itself: the kernel asks so when it turns a
 * file handle back into an inode it no longer holds (the path walk never
 * sends "."), and compares the generation with the handle's.
 */
static int lookup_self(struct mfs_fs *fs, uint64_t ino, struct stat *st,
		       uint64_t *gen)
{
	struct mfs_node *n;
	int err = get_handle(fs, ino, &n);

	if (err)
		return err;
	hand_out(n, st, gen);
	mfs_iput(n);
	return 0;
}

int mfs_lookup(struct mfs_fs *fs, const struct mfs_cred *cr, uint64_t dirino,
	       const char *name, struct stat *st, uint64_t *gen)
{
	struct mfs_node *dir, *n;
	size_t len;
	int err = check_name(name, &len);

	if (!err && !strcmp(name, "."))
		return lookup_self(fs, dirino, st, gen);
	if (!err)
		err = get_dir(fs, dirino, &dir);
	if (err)
		return err;
	err = dir->ops->permission(dir, cr, X_OK);
	if (!err)
		err = dir->ops->lookup(dir, cr, name, len, &n);
	if (!err) {
		hand_out(n, st, gen);
		mfs_iput(n);
	}
	mfs_iput(dir);
	return err;
}

/* ---- creating ------------------------------------------------------------ */

int mfs_create_node(struct mfs_fs *fs, const struct mfs_cred *cr, uint64_t dirino,
		    const char *name, const struct newinode *ni, struct stat *st,
		    uint64_t *gen, struct mfs_node **keep)
{
	struct mfs_node *dir, *n = NULL;
	size_t len;
	int err = check_name(name, &len);

	if (!err)
		err = get_dir_to_change(fs, dirino, name, true, &dir);
	if (err)
		return err;
	err = dir->ops->create ? dir->ops->create(dir, cr, name, len, ni, &n) : -ENOTDIR;
	if (!err)
		err = mfs_sync_if_flagged(dir, true);
	mfs_iput(dir);
	if (err && n)
		mfs_iput(n);
	if (err)
		return err;
	hand_out(n, st, gen);
	if (keep)
		*keep = n;
	else
		mfs_iput(n);
	return 0;
}

int mfs_mknod(struct mfs_fs *fs, const struct mfs_cred *cr, uint64_t dir,
	      const char *name, mode_t mode, dev_t rdev, struct stat *st,
	      uint64_t *gen)
{
	struct newinode ni = { .mode = mode, .rdev = rdev };

	if (S_ISDIR(mode) || S_ISLNK(mode))
		return -EINVAL;
	if (!(mode & S_IFMT))
		ni.mode |= S_IFREG;
	if (!S_ISREG(ni.mode) && !S_ISCHR(ni.mode) && !S_ISBLK(ni.mode) &&
	    !S_ISFIFO(ni.mode) && !S_ISSOCK(ni.mode))
		return -EINVAL;
	return mfs_create_node(fs, cr, dir, name, &ni, st, gen, NULL);
}

int mfs_mkdir(struct mfs_fs *fs, const struct mfs_cred *cr, uint64_t dir,
	      const char *name, mode_t mode, struct stat *st, uint64_t *gen)
{
	struct newinode ni = { .mode = S_IFDIR | (mode & 07777) };

	return mfs_create_node(fs, cr, dir, name, &ni, st, gen, NULL);
}

int mfs_symlink(struct mfs_fs *fs, const struct mfs_cred *cr, uint64_t dir,
		const char *name, const char *target, struct stat *st,
		uint64_t *gen)
{
	struct newinode ni = { .mode = S_IFLNK | 0777, .target = target,
			       .tlen = strlen(target) };

	if (!ni.tlen)
		return -ENOENT;
	if (ni.tlen >= fs->bs)
		return -ENAMETOOLONG;
	return mfs_create_node(fs, cr, dir, name, &ni, st, gen, NULL);
}

ssize_t mfs_readlink(struct mfs_fs *fs, uint64_t ino, char *buf, size_t size)
{
	struct mfs_node *n;
	ssize_t ret = vfs_get(fs, ino, &n);

	if (ret)
		return ret;
	ret = n->ops->readlink ? n->ops->readlink(n, buf, size) : -EINVAL;
	mfs_iput(n);
	return ret;
}

/* ---- link ---------------------------------------------------------------- */

static int lock_and_link(struct mfs_node *dir, const struct mfs_cred *cr,
		       const char *name, size_t len, struct mfs_node *n)
{
	struct mfs_locked l;
	int err;

	mfs_lock_nodes(&l, dir, n, NULL, NULL);
	err = dir->ops->link(dir, cr, name, len, n);
	mfs_unlock_nodes(&l);
	return err;
}

int mfs_link(struct mfs_fs *fs, const struct mfs_cred *cr, uint64_t ino,
	     uint64_t newdir, const char *newname, struct stat *st, uint64_t *gen)
{
	struct mfs_node *n, *dir;
	size_t len;
	int err = check_name(newname, &len);

	if (!err)
		err = get_dir_to_change(fs, newdir, newname, true, &dir);
	if (err)
		return err;
	err = vfs_get(fs, ino, &n);
	if (err) {
		mfs_iput(dir);
		return err;
	}
	if (!n->ops->linkable)
		err = -EPERM;
	else if (!dir->ops->link)
		err = -ENOTDIR;
	else
		err = lock_and_link(dir, cr, newname, len, n);
	if (!err)
		err = mfs_sync_if_flagged(dir, true);
	if (!err)
		hand_out(n, st, gen);
	mfs_iput(n);
	mfs_iput(dir);
	return err;
}

/* ---- unlink and rmdir ---------------------------------------------------- */

static int lock_and_unlink(struct mfs_node *dir, const struct mfs_cred *cr,
			 const char *name, size_t len, bool rmdir)
{
	struct mfs_node *victim;
	struct mfs_dirloc loc;
	struct mfs_locked l;
	int err = mfs_lock_entry(dir, name, len, &loc, &victim, &l);

	if (err)
		return err;
	err = dir->ops->unlink(dir, victim, &loc, cr, rmdir);
	mfs_unlock_nodes(&l);
	mfs_iput(victim);
	return err;
}

static int remove_name(struct mfs_fs *fs, const struct mfs_cred *cr, uint64_t dirino,
		       const char *name, bool rmdir)
{
	struct mfs_node *dir;
	size_t len;
	int err = check_name(name, &len);

	if (!err && rmdir && !strcmp(name, "."))
		err = -EINVAL;
	if (!err && rmdir && !strcmp(name, ".."))
		err = -ENOTEMPTY;
	if (!err)
		err = get_dir_to_change(fs, dirino, name, false, &dir);
	if (err)
		return err;
	err = dir->ops->unlink ? lock_and_unlink(dir, cr, name, len, rmdir) : -ENOTDIR;
	if (!err)
		err = mfs_sync_if_flagged(dir, true);
	mfs_iput(dir);
	return err;
}

int mfs_unlink(struct mfs_fs *fs, const struct mfs_cred *cr, uint64_t dir,
	       const char *name)
{
	return remove_name(fs, cr, dir, name, false);
}

int mfs_rmdir(struct mfs_fs *fs, const struct mfs_cred *cr, uint64_t dir,
	      const char *name)
{
	return remove_name(fs, cr, dir, name, true);
}

/* ---- rename -------------------------------------------------------------- */

static int rename_checks(const struct mfs_rename *r)
{
	if ((r->flags & ~(RENAME_NOREPLACE | RENAME_EXCHANGE)) ||
	    (r->flags & RENAME_NOREPLACE && r->flags & RENAME_EXCHANGE))
		return -EINVAL;
	if (r->slen > MFS_NAME_LEN || r->dlen > MFS_NAME_LEN)
		return -ENAMETOOLONG;
	if (!strcmp(r->sname, ".") || !strcmp(r->sname, "..") ||
	    !strcmp(r->dname, ".") || !strcmp(r->dname, ".."))
		return -EBUSY;
	return 0;
}

/* Both directories' kinds take the change, and are the same family. */
static int rename_dirs_ok(struct mfs_rename *r)
{
	const struct mfs_iops *s = r->sdir->ops, *d = r->ddir->ops;

	if ((s->refuse && s->refuse(r->sdir, r->sname, false)) ||
	    (d->refuse && d->refuse(r->ddir, r->dname, false)))
		return -EPERM;
	if (!s->rename || !d->rename)
		return -ENOTDIR;
	return s->rename == d->rename ? 0 : -EXDEV;
}

int mfs_rename(struct mfs_fs *fs, const struct mfs_cred *cr, uint64_t dir,
	       const char *name, uint64_t newdir, const char *newname,
	       unsigned int flags)
{
	struct mfs_rename r = { .sname = name, .dname = newname, .flags = flags,
				.cr = cr, .slen = strlen(name), .dlen = strlen(newname) };
	int err = mfs_check_rw(fs);

	if (!err)
		err = rename_checks(&r);
	if (!err)
		err = get_dir(fs, dir, &r.sdir);
	if (err)
		return err;
	err = get_dir(fs, newdir, &r.ddir);
	if (!err) {
		err = rename_dirs_ok(&r);
		if (!err)
			err = mfs_lock_rename(&r);
		if (!err) {
			err = r.sdir->ops->rename(&r);
			mfs_unlock_rename(&r);
		}
		if (!err)
			err = mfs_sync_if_flagged(r.sdir, true);
		if (!err && r.ddir != r.sdir)
			err = mfs_sync_if_flagged(r.ddir, true);
		mfs_iput(r.ddir);
	}
	mfs_iput(r.sdir);
	return err;
}
