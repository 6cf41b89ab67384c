/*
 * rename.c - rename(2) with RENAME_NOREPLACE and RENAME_EXCHANGE.
 *
 * The inodes concerned (both directories, the source, and the target if
 * any) are locked in increasing inode number after the entries have been
 * looked up; the lookups are checked again under the locks, and the whole
 * thing starts over if an entry moved meanwhile.  A rename between two
 * directories first takes the filesystem's rename mutex, so that the
 * check "not into its own subtree" walks a tree nobody else reshapes.
 */
#include "mfs_i.h"
#include "balloc.h"
#include "dir.h"
#include "icache.h"
#include "vfs.h"

#include <errno.h>
#include <inttypes.h>
#include <linux/fs.h>
#include <string.h>
#include <unistd.h>

#define RENAME_CREDITS (2 * MFS_DIR_ADD_CREDITS + MFS_ORPHAN_CREDITS + 12)

struct ren {
	struct mfs_node *sdir, *ddir, *src, *dst;   /* dst may be NULL */
	const char *sname, *dname;
	size_t slen, dlen;
	struct mfs_dirloc sloc, dloc;
	unsigned int flags;
	const struct mfs_cred *cr;
	struct mfs_node *locked[4];
	unsigned nlocked;
};

/* ---- locking ------------------------------------------------------------- */

static void lock_all(struct ren *r)
{
	struct mfs_node *v[4] = { r->sdir, r->ddir, r->src, r->dst };
	unsigned n = 0;

	for (unsigned i = 0; i < 4; i++) {
		bool dup = !v[i];

		for (unsigned k = 0; k < n && !dup; k++)
			dup = r->locked[k] == v[i];
		if (!dup)
			r->locked[n++] = v[i];
	}
	for (unsigned i = 1; i < n; i++)            /* by inode number */
		for (unsigned k = i; k > 0 && r->locked[k - 1]->ino > r->locked[k]->ino; k--) {
			struct mfs_node *t = r->locked[k];

			r->locked[k] = r->locked[k - 1];
			r->locked[k - 1] = t;
		}
	for (unsigned i = 0; i < n; i++)
		pthread_rwlock_wrlock(&r->locked[i]->rwsem);
	r->nlocked = n;
}

static void unlock_all(struct ren *r)
{
	for (unsigned i = r->nlocked; i-- > 0;)
		pthread_rwlock_unlock(&r->locked[i]->rwsem);
	r->nlocked = 0;
}

static void put_entries(struct ren *r)
{
	if (r->src)
		mfs_iput(r->src);
	if (r->dst)
		mfs_iput(r->dst);
	r->src = r->dst = NULL;
}

/* Look both names up and get their inodes (mfs_dir_get), lock everything,
 * and check that the entries still name them. */
static int grab(struct ren *r)
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
		lock_all(r);
		err = mfs_dir_find(r->sdir, r->sname, r->slen, &r->sloc);
		if (!err && r->sloc.ino == sino) {
			err = mfs_dir_find(r->ddir, r->dname, r->dlen, &r->dloc);
			if ((err == -ENOENT && !dino) || (!err && r->dloc.ino == dino))
				return 0;
		}
		unlock_all(r);
		put_entries(r);
	}
}

/* ---- checks -------------------------------------------------------------- */

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

static bool is_dir(struct mfs_node *n)
{
	return n && S_ISDIR(node_mode(n));
}

static int check_types(struct ren *r)
{
	if (!r->dst)
		return r->flags & RENAME_EXCHANGE ? -ENOENT : 0;
	if (r->flags & RENAME_NOREPLACE)
		return -EEXIST;
	if (r->flags & RENAME_EXCHANGE)
		return 0;
	if (is_dir(r->src) && !is_dir(r->dst))
		return -ENOTDIR;
	if (!is_dir(r->src) && is_dir(r->dst))
		return -EISDIR;
	if (is_dir(r->dst)) {
		int e = mfs_dir_is_empty(r->dst);

		return e == 1 ? 0 : e ? e : -ENOTEMPTY;
	}
	return 0;
}

static int check_perms(struct ren *r)
{
	int err = mfs_may_delete(r->sdir, r->src, r->cr);

	if (!err)
		err = r->dst ? mfs_may_delete(r->ddir, r->dst, r->cr) :
		      mfs_permission(r->ddir, r->cr, W_OK | X_OK);
	/* A directory that changes parent has its ".." rewritten. */
	if (!err && r->sdir != r->ddir && is_dir(r->src))
		err = mfs_permission(r->src, r->cr, W_OK);
	if (!err && r->sdir != r->ddir && (r->flags & RENAME_EXCHANGE) && is_dir(r->dst))
		err = mfs_permission(r->dst, r->cr, W_OK);
	return err;
}

static int check_links(struct ren *r)
{
	bool moves_in = is_dir(r->src) && r->sdir != r->ddir && !is_dir(r->dst);
	bool moves_back = (r->flags & RENAME_EXCHANGE) && is_dir(r->dst) &&
			  r->sdir != r->ddir && !is_dir(r->src);

	if (!r->ddir->raw.i_links_count || !r->sdir->raw.i_links_count)
		return -ENOENT;
	if (moves_in && le16toh(r->ddir->raw.i_links_count) >= MFS_LINK_MAX)
		return -EMLINK;
	if (moves_back && le16toh(r->sdir->raw.i_links_count) >= MFS_LINK_MAX)
		return -EMLINK;
	return 0;
}

/* ---- the change ---------------------------------------------------------- */

static int touch(struct mfs_node *n, struct mfs_handle *h, int dlinks, bool mtime)
{
	pthread_mutex_lock(&n->lock);
	n->raw.i_links_count = htole16((uint16_t)(le16toh(n->raw.i_links_count) + dlinks));
	mfs_node_touch(n, mtime, true);
	pthread_mutex_unlock(&n->lock);
	return mfs_inode_write(n, h, true);
}

/* Directory @n moved from @from to @to: its ".." and both link counts. */
static int reparent(struct mfs_node *n, struct mfs_handle *h, struct mfs_node *to)
{
	struct mfs_dirloc loc;
	int err = mfs_dir_find(n, "..", 2, &loc);

	if (!err)
		err = mfs_dir_set(n, h, &loc, to->ino, MFS_FT_DIR);
	return err;
}

static int do_exchange(struct ren *r, struct mfs_handle *h)
{
	int err = mfs_dir_set(r->sdir, h, &r->sloc, r->dst->ino,
			      fmt_mode_to_ft(node_mode(r->dst)));
	int ds = 0, dd = 0;

	if (!err)
		err = mfs_dir_set(r->ddir, h, &r->dloc, r->src->ino,
				  fmt_mode_to_ft(node_mode(r->src)));
	if (!err && r->sdir != r->ddir && is_dir(r->src)) {
		err = reparent(r->src, h, r->ddir);
		ds--, dd++;
	}
	if (!err && r->sdir != r->ddir && is_dir(r->dst)) {
		err = reparent(r->dst, h, r->sdir);
		ds++, dd--;
	}
	if (!err)
		err = touch(r->src, h, 0, false);
	if (!err)
		err = touch(r->dst, h, 0, false);
	if (!err)
		err = touch(r->sdir, h, ds, true);
	if (!err && r->ddir != r->sdir)
		err = touch(r->ddir, h, dd, true);
	return err;
}

static int do_move(struct ren *r, struct mfs_handle *h)
{
	uint8_t ft = fmt_mode_to_ft(node_mode(r->src));
	int ds = 0, dd = 0, err;

	if (r->dst) {
		err = mfs_dir_set(r->ddir, h, &r->dloc, r->src->ino, ft);
		if (!err)
			err = mfs_drop_link(r->dst, h);
		dd -= is_dir(r->dst);
	} else {
		err = mfs_dir_add(r->ddir, h, r->dname, r->dlen, r->src->ino, ft);
	}
	/* The add may have moved records of the same block: look again. */
	if (!err)
		err = mfs_dir_find(r->sdir, r->sname, r->slen, &r->sloc);
	if (!err)
		err = mfs_dir_remove(r->sdir, h, &r->sloc);
	if (!err && is_dir(r->src) && r->sdir != r->ddir) {
		err = reparent(r->src, h, r->ddir);
		ds--, dd++;
	}
	if (!err)
		err = touch(r->src, h, 0, false);
	if (!err)
		err = touch(r->sdir, h, ds, true);
	if (!err && r->ddir != r->sdir)
		err = touch(r->ddir, h, dd, true);
	else if (!err && dd)
		err = touch(r->sdir, h, dd, false);
	return err;
}

static int rename_locked(struct ren *r)
{
	struct mfs_fs *fs = r->sdir->fs;
	struct mfs_resv resv;
	struct mfs_handle h;
	int err;

	if (r->src == r->dst)
		return 0;               /* two names of one inode: nothing to do */
	err = check_types(r);
	if (!err)
		err = check_perms(r);
	if (!err)
		err = check_links(r);
	if (!err)
		err = mfs_reserve_blocks(fs, r->cr, MFS_DIR_ADD_BLOCKS, &resv);
	if (err)
		return err;
	pthread_mutex_lock(&fs->orphan_lock);
	err = mfs_jstart_resv(fs, RENAME_CREDITS, &resv, &h);
	if (!err) {
		err = r->flags & RENAME_EXCHANGE ? do_exchange(r, &h) : do_move(r, &h);
		err = mfs_jstop(fs, &h, err);
	}
	pthread_mutex_unlock(&fs->orphan_lock);
	mfs_reserve_end(fs, &resv);
	return err;
}

/* Subtree checks, with the rename mutex held. */
static int check_tree(struct ren *r)
{
	int err = 0;

	if (r->sdir == r->ddir)
		return 0;
	if (is_dir(r->src))
		err = check_not_below(r->sdir->fs, r->ddir->ino, r->src->ino);
	if (!err && (r->flags & RENAME_EXCHANGE) && is_dir(r->dst))
		err = check_not_below(r->sdir->fs, r->sdir->ino, r->dst->ino);
	return err;
}

/* Between two directories: the subtree check reads ".." of directories
 * that may be among the locked ones, so it runs between a first look and
 * the locked one, which must find the same inodes (or start over). */
static int checked_grab(struct ren *r)
{
	for (;;) {
		uint32_t src, dst;
		int err = grab(r);

		if (err)
			return err;
		src = r->src->ino;
		dst = r->dst ? r->dst->ino : 0;
		unlock_all(r);
		err = check_tree(r);
		put_entries(r);
		if (!err)
			err = grab(r);
		if (err || (r->src->ino == src && (r->dst ? r->dst->ino : 0) == dst))
			return err;
		unlock_all(r);
		put_entries(r);
	}
}

static int rename_dirs(struct ren *r)
{
	struct mfs_fs *fs = r->sdir->fs;
	bool cross = r->sdir != r->ddir;
	int err;

	if (cross)
		pthread_mutex_lock(&fs->rename_lock);
	err = cross ? checked_grab(r) : grab(r);
	if (!err) {
		err = rename_locked(r);
		unlock_all(r);
		put_entries(r);
	}
	if (cross)
		pthread_mutex_unlock(&fs->rename_lock);
	return err;
}

int mfs_dir_rename(struct mfs_rename *rn)
{
	struct ren r = { .sdir = rn->sdir, .ddir = rn->ddir, .sname = rn->sname,
			 .dname = rn->dname, .slen = rn->slen, .dlen = rn->dlen,
			 .flags = rn->flags, .cr = rn->cr };

	return rename_dirs(&r);
}
