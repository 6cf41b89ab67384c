/*
 * rename.c - rename(2) with RENAME_NOREPLACE and RENAME_EXCHANGE in a
 * directory on the disk: the checks and the change, with every inode
 * concerned locked and the entries found by the entry layer
 * (mfs_lock_rename, vfs_lock.c).
 */
#include "mfs_i.h"
#include "balloc.h"
#include "dir.h"
#include "icache.h"
#include "kinds.h"
#include "vfs.h"

#include <errno.h>
#include <linux/fs.h>
#include <unistd.h>

#define RENAME_CREDITS(fs) (2 * mfs_dir_add_credits(fs) + MFS_ORPHAN_CREDITS + 12)

/* ---- checks -------------------------------------------------------------- */

static int check_types(struct mfs_rename *r)
{
	if (!r->dst)
		return r->flags & RENAME_EXCHANGE ? -ENOENT : 0;
	if (r->flags & RENAME_NOREPLACE)
		return -EEXIST;
	if (r->flags & RENAME_EXCHANGE)
		return 0;
	if (mfs_is_dir(r->src) && !mfs_is_dir(r->dst))
		return -ENOTDIR;
	if (!mfs_is_dir(r->src) && mfs_is_dir(r->dst))
		return -EISDIR;
	if (mfs_is_dir(r->dst)) {
		int e = mfs_dir_is_empty(r->dst);

		return e == 1 ? 0 : e ? e : -ENOTEMPTY;
	}
	return 0;
}

static int check_perms(struct mfs_rename *r)
{
	int err = mfs_may_delete(r->sdir, r->src, r->cr);

	if (!err)
		err = r->dst ? mfs_may_delete(r->ddir, r->dst, r->cr) :
		      mfs_permission(r->ddir, r->cr, W_OK | X_OK);
	/* A directory that changes parent has its ".." rewritten. */
	if (!err && r->sdir != r->ddir && mfs_is_dir(r->src))
		err = mfs_permission(r->src, r->cr, W_OK);
	if (!err && r->sdir != r->ddir && (r->flags & RENAME_EXCHANGE) &&
	    mfs_is_dir(r->dst))
		err = mfs_permission(r->dst, r->cr, W_OK);
	return err;
}

static int check_links(struct mfs_rename *r)
{
	bool moves_in = mfs_is_dir(r->src) && r->sdir != r->ddir && !mfs_is_dir(r->dst);
	bool moves_back = (r->flags & RENAME_EXCHANGE) && mfs_is_dir(r->dst) &&
			  r->sdir != r->ddir && !mfs_is_dir(r->src);

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

static int do_exchange(struct mfs_rename *r, struct mfs_handle *h)
{
	int err = mfs_dir_set(r->sdir, h, &r->sloc, r->dst->ino,
			      fmt_mode_to_ft(node_mode(r->dst)));
	int ds = 0, dd = 0;

	if (!err)
		err = mfs_dir_set(r->ddir, h, &r->dloc, r->src->ino,
				  fmt_mode_to_ft(node_mode(r->src)));
	if (!err && r->sdir != r->ddir && mfs_is_dir(r->src)) {
		err = reparent(r->src, h, r->ddir);
		ds--, dd++;
	}
	if (!err && r->sdir != r->ddir && mfs_is_dir(r->dst)) {
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

static int do_move(struct mfs_rename *r, struct mfs_handle *h)
{
	uint8_t ft = fmt_mode_to_ft(node_mode(r->src));
	int ds = 0, dd = 0, err;

	if (r->dst) {
		err = mfs_dir_set(r->ddir, h, &r->dloc, r->src->ino, ft);
		if (!err)
			err = mfs_drop_link(r->dst, h);
		dd -= mfs_is_dir(r->dst);
	} else {
		err = mfs_dir_add(r->ddir, h, r->dname, r->dlen, r->src->ino, ft);
	}
	/* The add may have moved records of the same block: look again. */
	if (!err)
		err = mfs_dir_find(r->sdir, r->sname, r->slen, &r->sloc);
	if (!err)
		err = mfs_dir_remove(r->sdir, h, &r->sloc);
	if (!err && mfs_is_dir(r->src) && r->sdir != r->ddir) {
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

/* The entry layer holds the locks (mfs_lock_rename). */
int mfs_dir_rename(struct mfs_rename *r)
{
	struct mfs_fs *fs = r->sdir->fs;
	struct mfs_resv resv;
	struct mfs_handle h;
	uint64_t blocks = 0;
	int err;

	if (r->src == r->dst)
		return 0;               /* two names of one inode: nothing to do */
	err = check_types(r);
	if (!err)
		err = check_perms(r);
	if (!err)
		err = check_links(r);
	if (!err && !r->dst)
		err = mfs_dir_add_need(r->ddir, r->dname, r->dlen, &blocks);
	if (!err)
		err = mfs_reserve_blocks(fs, r->cr, blocks, &resv);
	if (err)
		return err;
	pthread_mutex_lock(&fs->orphan_lock);
	err = mfs_jstart_resv(fs, RENAME_CREDITS(fs), &resv, &h);
	if (!err) {
		err = r->flags & RENAME_EXCHANGE ? do_exchange(r, &h) : do_move(r, &h);
		err = mfs_jstop(fs, &h, err);
	}
	pthread_mutex_unlock(&fs->orphan_lock);
	mfs_reserve_end(fs, &resv);
	return err;
}
