/*
 * vfs_lock.c - the entry layer's locks of names: the inodes a change of
 * names concerns, locked in the one order mfs_i.h writes down, and the
 * check that the names still say what the unlocked lookup found.
 *
 * A name's inode is looked up and referenced first, with its directory
 * read-locked (mfs_dir_get); then every inode concerned is write-locked
 * in increasing inode number, and the lookups are made again: if an
 * entry changed meanwhile, all is let go and the whole starts over.  A
 * rename between two directories first takes the filesystem's rename
 * mutex, so that the walk up ".." that checks "not into its own subtree"
 * walks a tree nobody else reshapes.
 */
#include "mfs_i.h"
#include "dir.h"
#include "icache.h"
#include "vfs.h"

#include <errno.h>
#include <inttypes.h>
#include <linux/fs.h>

/* ---- a set of inodes ------------------------------------------------------ */

void mfs_lock_nodes(struct mfs_locked *l, struct mfs_node *a, struct mfs_node *b,
		    struct mfs_node *c, struct mfs_node *d)
{
	struct mfs_node *v[MFS_LOCKED_MAX] = { a, b, c, d };
	unsigned n = 0;

	for (unsigned i = 0; i < MFS_LOCKED_MAX; i++) {
		bool dup = !v[i];

		for (unsigned k = 0; k < n && !dup; k++)
			dup = l->n[k] == v[i];
		if (!dup)
			l->n[n++] = v[i];
	}
	for (unsigned i = 1; i < n; i++)            /* by inode number */
		for (unsigned k = i; k > 0 && l->n[k - 1]->ino > l->n[k]->ino; k--) {
			struct mfs_node *t = l->n[k];

			l->n[k] = l->n[k - 1];
			l->n[k - 1] = t;
		}
	for (unsigned i = 0; i < n; i++)
		pthread_rwlock_wrlock(&l->n[i]->rwsem);
	l->nr = n;
}

void mfs_unlock_nodes(struct mfs_locked *l)
{
	for (unsigned i = l->nr; i-- > 0;)
		pthread_rwlock_unlock(&l->n[i]->rwsem);
	l->nr = 0;
}

/* ---- one entry ------------------------------------------------------------ */

int mfs_lock_entry(struct mfs_node *dir, const char *name, size_t len,
		   struct mfs_dirloc *loc, struct mfs_node **victim,
		   struct mfs_locked *l)
{
	int err;

	for (;;) {
		uint32_t ino;

		err = mfs_dir_get(dir, name, len, loc, victim);
		if (err)
			return err;
		ino = loc->ino;
		mfs_lock_nodes(l, dir, *victim, NULL, NULL);
		err = mfs_dir_find(dir, name, len, loc);
		if (!err && loc->ino == ino)
			return 0;
		mfs_unlock_nodes(l);
		mfs_iput(*victim);
		if (err)
			return err;
	}
}

/* ---- rename --------------------------------------------------------------- */

static void put_entries(struct mfs_rename *r)
{
	if (r->src)
		mfs_iput(r->src);
	if (r->dst)
		mfs_iput(r->dst);
	r->src = r->dst = NULL;
}

/* Look both names up and get their inodes, lock everything, and check
 * that the entries still name them. */
static int grab(struct mfs_rename *r)
{
	for (;;) {
		uint32_t sino, dino = 0;
		int err = mfs_dir_get(r->sdir, r->sname, r->slen, &r->sloc, &r->src);

		if (err)
			return err;
		err = mfs_dir_get(r->ddir, r->dname, r->dlen, &r->dloc, &r->dst);
		if (err && err != -ENOENT) {
			put_entries(r);
			return err;
		}
		sino = r->sloc.ino;
		dino = err ? 0 : r->dloc.ino;
		mfs_lock_nodes(&r->locked, r->sdir, r->ddir, r->src, r->dst);
		err = mfs_dir_find(r->sdir, r->sname, r->slen, &r->sloc);
		if (!err && r->sloc.ino == sino) {
			err = mfs_dir_find(r->ddir, r->dname, r->dlen, &r->dloc);
			if ((err == -ENOENT && !dino) || (!err && r->dloc.ino == dino))
				return 0;
		}
		mfs_unlock_nodes(&r->locked);
		put_entries(r);
	}
}

/* The parent of directory @ino, from its ".." entry. */
static int parent_of(struct mfs_fs *fs, uint32_t ino, uint32_t *parent)
{
	struct mfs_node *d;
	struct mfs_dirloc loc;
	int err = mfs_iget(fs, ino, &d);

	if (err)
		return err;
	pthread_rwlock_rdlock(&d->rwsem);
	err = mfs_dir_find(d, "..", 2, &loc);
	pthread_rwlock_unlock(&d->rwsem);
	mfs_iput(d);
	if (!err)
		*parent = loc.ino;
	return err;
}

/* -EINVAL if directory @dir is @anc or below it.  The walk up is bounded
 * by the inode count, so a loop on disk cannot hold it. */
static int check_not_below(struct mfs_fs *fs, uint32_t dir, uint32_t anc)
{
	uint32_t steps = 0;

	while (dir != MFS_ROOT_INO) {
		int err;

		if (dir == anc)
			return -EINVAL;
		if (++steps > fs->ninodes)
			return mfs_error(fs, "directory %" PRIu32 ": its '..' entries "
					 "form a loop", dir);
		err = parent_of(fs, dir, &dir);
		if (err)
			return err;
	}
	return dir == anc ? -EINVAL : 0;
}

/* Subtree checks, with the rename mutex held. */
static int check_tree(struct mfs_rename *r)
{
	int err = 0;

	if (mfs_is_dir(r->src))
		err = check_not_below(r->sdir->fs, r->ddir->ino, r->src->ino);
	if (!err && (r->flags & RENAME_EXCHANGE) && mfs_is_dir(r->dst))
		err = check_not_below(r->sdir->fs, r->sdir->ino, r->dst->ino);
	return err;
}

/* Between two directories: the subtree check reads ".." of directories
 * that may be among the locked ones, so it runs between a first look and
 * the locked one, which must find the same inodes (or start over). */
static int checked_grab(struct mfs_rename *r)
{
	for (;;) {
		uint32_t src, dst;
		int err = grab(r);

		if (err)
			return err;
		src = r->src->ino;
		dst = r->dst ? r->dst->ino : 0;
		mfs_unlock_nodes(&r->locked);
		err = check_tree(r);
		put_entries(r);
		if (!err)
			err = grab(r);
		if (err || (r->src->ino == src && (r->dst ? r->dst->ino : 0) == dst))
			return err;
		mfs_unlock_nodes(&r->locked);
		put_entries(r);
	}
}

int mfs_lock_rename(struct mfs_rename *r)
{
	int err;

	r->src = r->dst = NULL;
	r->locked.nr = 0;
	if (r->sdir == r->ddir)
		return grab(r);
	pthread_mutex_lock(&r->sdir->fs->rename_lock);
	err = checked_grab(r);
	if (err)
		pthread_mutex_unlock(&r->sdir->fs->rename_lock);
	return err;
}

void mfs_unlock_rename(struct mfs_rename *r)
{
	mfs_unlock_nodes(&r->locked);
	put_entries(r);
	if (r->sdir != r->ddir)
		pthread_mutex_unlock(&r->sdir->fs->rename_lock);
}
