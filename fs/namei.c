/*
 * namei.c - names in a directory on the disk: lookup, creating inodes of
 * every type, link, unlink, rmdir, and the target of a symbolic link.
 * Rename is in rename.c; the calls of mfs.h that lead here, in vfs.c.
 *
 * A change locks the directory's rwsem for writing, reserves what it may
 * allocate (so -ENOSPC comes before anything changes), and makes its
 * changes in one journal handle.  When a second inode must be locked it is
 * locked in increasing inode number: the directory is let go and both are
 * taken again in order, and the entry looked up again.
 */
#include "mfs_i.h"
#include "balloc.h"
#include "blockmap.h"
#include "dir.h"
#include "icache.h"
#include "kinds.h"
#include "vfs.h"
#include "xattr.h"

#include <errno.h>
#include <inttypes.h>
#include <string.h>
#include <unistd.h>

int mfs_dir_lookup(struct mfs_node *dir, const struct mfs_cred *cr,
		   const char *name, size_t len, struct mfs_node **out)
{
	struct mfs_dirloc loc;

	(void)cr;
	atomic_fetch_add(&dir->fs->st.lookups, 1);
	return mfs_dir_get(dir, name, len, &loc, out);
}

/* ---- creating ------------------------------------------------------------ */

/* The parent's default ACL, when it has one, masks the mode instead of
 * the umask (@inh). */
static void new_raw(struct mfs_fs *fs, struct mfs_node *dir, const struct mfs_cred *cr,
		    const struct newinode *ni, const struct mfs_acl_inherit *inh,
		    struct mfs_inode *raw)
{
	uint16_t dmode = node_mode(dir);
	mode_t mode = ni->mode;
	struct timespec now;

	memset(raw, 0, sizeof(*raw));
	mfs_now(&now);
	if (inh->dflt)
		mode = inh->mode;
	else if (!S_ISLNK(mode) && cr)
		mode = (mode & S_IFMT) | (mode & 07777 & ~cr->umask);
	raw->i_uid = htole32(cr ? cr->uid : 0);
	raw->i_gid = htole32(cr ? cr->gid : 0);
	if (dmode & S_ISGID) {
		raw->i_gid = dir->raw.i_gid;
		if (S_ISDIR(mode))
			mode |= S_ISGID;
	} else if (S_ISDIR(mode) && cr && cr->uid) {
		/* mkdir(2) never sets S_ISGID by itself but from the parent. */
		mode &= ~(mode_t)S_ISGID;
	}
	if (!S_ISDIR(mode) && cr && cr->uid && (mode & S_ISGID) && (mode & S_IXGRP) &&
	    !mfs_in_group(cr, le32toh(raw->i_gid)))
		mode &= ~(mode_t)S_ISGID;
	raw->i_mode = htole16((uint16_t)mode);
	raw->i_links_count = htole16(S_ISDIR(mode) ? 2 : 1);
	raw->i_atime = raw->i_mtime = raw->i_ctime = raw->i_crtime = htole64(now.tv_sec);
	raw->i_atime_nsec = raw->i_mtime_nsec = raw->i_ctime_nsec =
		raw->i_crtime_nsec = htole32((uint32_t)now.tv_nsec);
	raw->i_generation = htole32(atomic_fetch_add(&fs->next_gen, 1));
	raw->i_flags = htole32(mfs_inherit_flags(dir, (uint16_t)mode));
	if (S_ISCHR(mode) || S_ISBLK(mode))
		raw->i_rdev = htole64((uint64_t)ni->rdev);
}

/* A slow symlink's target in its data block 0 (ordered data). */
static int write_target(struct mfs_node *n, struct mfs_handle *h,
			const struct newinode *ni)
{
	struct pc_page *pg;
	uint64_t pblk;
	bool isnew;
	int err = n->map ? 0 : mfs_map_create(n);   /* made as a fast one */

	if (!err)
		err = pc_find_or_create_page(n->map, 0, &pg);
	if (err)
		return err;
	err = mfs_bmap_alloc(n, h, 0, &pblk, &isnew);
	if (!err) {
		memset(pg->data, 0, n->fs->bs);
		memcpy(pg->data, ni->target, ni->tlen);
		SetPageUptodate(pg);
		pc_set_page_dirty(pg);
	}
	pc_unlock_page(pg);
	pc_put_page(pg);
	return err;
}

static int fill_new(struct mfs_node *n, struct mfs_node *dir, struct mfs_handle *h,
		    const struct newinode *ni)
{
	if (S_ISDIR(ni->mode))
		return mfs_dir_init(n, h, dir->ino);
	if (!S_ISLNK(ni->mode))
		return 0;
	n->raw.i_size = htole64(ni->tlen);
	if (ni->tlen < sizeof(n->raw.i_block)) {
		memcpy(n->raw.i_block, ni->target, ni->tlen);
		return 0;
	}
	return write_target(n, h, ni);
}

/* The parent's side of a new entry: its link count for a directory, its
 * times, its inode. */
static int parent_update(struct mfs_node *dir, struct mfs_handle *h, int dlinks)
{
	pthread_mutex_lock(&dir->lock);
	dir->raw.i_links_count = htole16((uint16_t)(le16toh(dir->raw.i_links_count) +
						    dlinks));
	mfs_node_touch(dir, true, true);
	pthread_mutex_unlock(&dir->lock);
	return mfs_inode_write(dir, h, true);
}

/* Allocate an inode and its node under @h; the inode reserved by the
 * caller is used, or given back here. */
static int new_inode(struct mfs_node *dir, struct mfs_handle *h,
		     const struct mfs_cred *cr, const struct newinode *ni,
		     const struct mfs_acl_inherit *inh, struct mfs_node **out)
{
	struct mfs_fs *fs = dir->fs;
	bool is_dir = S_ISDIR(ni->mode);
	struct mfs_inode raw;
	uint32_t ino;
	int err = mfs_alloc_inode(fs, h, dir->ino, is_dir, &ino);

	if (err) {
		mfs_unreserve_inode(fs);
		return err;
	}
	new_raw(fs, dir, cr, ni, inh, &raw);
	err = mfs_inew(fs, ino, &raw, out);
	/* No node (no memory): nothing refers to the inode, its bit goes
	 * back in this handle, and with it the reservation.  One in use
	 * already (a damaged bitmap, -EUCLEAN) keeps its bit: its owner is
	 * live. */
	if (err && (err == -EUCLEAN || mfs_free_inode(fs, h, ino, is_dir)))
		mfs_unreserve_inode(fs);
	return err;
}

/*
 * A handle cannot be undone: the bit of a new inode that no entry names
 * is set and may outlive the failure, with its slot on disk the previous
 * owner's (no links) or, once @written, the new inode's with no links
 * either.  The caller's iput frees it, and the blocks fill_new gave it;
 * if that fails, evict() marks the superblock.
 */
static void unlink_unnamed(struct mfs_node *n, struct mfs_handle *h, bool written)
{
	pthread_mutex_lock(&n->lock);
	n->raw.i_links_count = 0;
	pthread_mutex_unlock(&n->lock);
	if (written)
		mfs_inode_write(n, h, true);
}

/* Make the inode in one handle; *@out is the node once it exists.  The
 * inode reserved by the caller is used, or given back here. */
static int create_in(struct mfs_node *dir, const struct mfs_cred *cr,
		     const char *name, size_t len, const struct newinode *ni,
		     const struct mfs_acl_inherit *inh, struct mfs_resv *resv,
		     struct mfs_node **out)
{
	struct mfs_fs *fs = dir->fs;
	struct mfs_handle h;
	bool named = false, written;
	int err = mfs_jstart_resv(fs, mfs_dir_add_credits(fs) + 12 +
				  (inh->dflt ? 2 * MFS_XATTR_CREDITS : 0), resv, &h);

	if (err) {
		mfs_unreserve_inode(fs);
		return err;
	}
	err = new_inode(dir, &h, cr, ni, inh, out);
	if (!err)
		err = fill_new(*out, dir, &h, ni);
	if (!err)
		err = mfs_acl_inherit_apply(*out, &h, inh);
	if (!err)
		err = mfs_inode_write(*out, &h, true);
	written = !err;
	if (!err)
		err = mfs_dir_add(dir, &h, name, len, (uint32_t)(*out)->ino,
				  fmt_mode_to_ft((uint16_t)ni->mode));
	named = !err;
	if (!err)
		err = parent_update(dir, &h, S_ISDIR(ni->mode) ? 1 : 0);
	if (err && *out && !named)
		unlink_unnamed(*out, &h, written);
	return mfs_jstop(fs, &h, err);
}

static int create_checks(struct mfs_node *dir, const struct mfs_cred *cr,
			 const char *name, size_t len, const struct newinode *ni)
{
	struct mfs_dirloc loc;
	int err = mfs_permission(dir, cr, W_OK | X_OK);

	if (err)
		return err;
	if (!dir->raw.i_links_count)
		return -ENOENT;
	err = mfs_dir_find(dir, name, len, &loc);
	if (err != -ENOENT)
		return err ? err : -EEXIST;
	if (S_ISDIR(ni->mode) && le16toh(dir->raw.i_links_count) >= MFS_LINK_MAX)
		return -EMLINK;
	return 0;
}

/* The blocks a create may take: the entry's, the new directory's first
 * block or a slow symlink's, and one for inherited ACLs. */
static int create_blocks(struct mfs_node *dir, const char *name, size_t len,
			 const struct newinode *ni, const struct mfs_acl_inherit *inh,
			 uint64_t *n)
{
	int err = mfs_dir_add_need(dir, name, len, n);

	if (S_ISDIR(ni->mode) || (S_ISLNK(ni->mode) && ni->tlen >= MFS_N_BLOCKS * 4))
		*n += 1;
	*n += inh->dflt ? 1 : 0;
	return err;
}

/* Create @name in @dir (rwsem held for writing): reserve, check, make. */
static int create_locked(struct mfs_node *dir, const struct mfs_cred *cr,
			 const char *name, size_t len, const struct newinode *ni,
			 struct mfs_node **out)
{
	struct mfs_fs *fs = dir->fs;
	struct mfs_acl_inherit inh;
	struct mfs_resv resv;
	uint64_t blocks;
	int err = create_checks(dir, cr, name, len, ni);

	if (!err)
		err = mfs_acl_inherit_prepare(dir, (uint16_t)ni->mode, &inh);
	if (err)
		return err;
	err = create_blocks(dir, name, len, ni, &inh, &blocks);
	if (!err)
		err = mfs_reserve_inode(fs);
	if (!err) {
		err = mfs_reserve_blocks(fs, cr, blocks, &resv);
		if (err)
			mfs_unreserve_inode(fs);
	}
	if (err) {
		mfs_acl_inherit_free(&inh);
		return err;
	}
	*out = NULL;
	err = create_in(dir, cr, name, len, ni, &inh, &resv, out);
	mfs_acl_inherit_free(&inh);
	mfs_reserve_end(fs, &resv);
	if (err && *out) {
		mfs_iput(*out);
		*out = NULL;
	}
	atomic_fetch_add(&fs->st.creates, 1);
	return err;
}

int mfs_dir_create(struct mfs_node *dir, const struct mfs_cred *cr,
		   const char *name, size_t len, const struct newinode *ni,
		   struct mfs_node **out)
{
	int err;

	pthread_rwlock_wrlock(&dir->rwsem);
	err = create_locked(dir, cr, name, len, ni, out);
	pthread_rwlock_unlock(&dir->rwsem);
	return err;
}

ssize_t mfs_symlink_read(struct mfs_node *n, char *buf, size_t size)
{
	struct pc_page *pg;
	size_t len = UT_MIN((size_t)node_size(n), size);
	int err = 0;

	if (fmt_inode_is_fast_symlink(&n->raw)) {
		pthread_mutex_lock(&n->lock);
		memcpy(buf, n->raw.i_block, len);
		pthread_mutex_unlock(&n->lock);
	} else if (!(err = pc_read_cache_page(n->map, 0, &pg))) {
		pc_lock_page(pg);
		memcpy(buf, pg->data, len);
		pc_unlock_page(pg);
		pc_put_page(pg);
	}
	return err ? err : (ssize_t)len;
}

/*
 * Find @name in @dir and reference the inode it names, with @dir
 * read-locked across both: the entry keeps the inode linked meanwhile.
 * Got after the unlock, the inode could be one that another thread has
 * just unlinked and freed, read back as damage ("named but has no links")
 * or, its number reused, as some other file.
 */
int mfs_dir_get(struct mfs_node *dir, const char *name, size_t len,
		struct mfs_dirloc *loc, struct mfs_node **out)
{
	int err;

	pthread_rwlock_rdlock(&dir->rwsem);
	err = mfs_dir_find(dir, name, len, loc);
	if (!err)
		err = mfs_dir_check_target(dir, name, len, loc->ino);
	if (!err)
		err = mfs_iget(dir->fs, loc->ino, out);
	pthread_rwlock_unlock(&dir->rwsem);
	return err;
}

/* ---- link ---------------------------------------------------------------- */

static int link_locked(struct mfs_node *n, struct mfs_node *dir,
		       const struct mfs_cred *cr, const char *name, size_t len)
{
	struct mfs_fs *fs = dir->fs;
	struct mfs_dirloc loc;
	struct mfs_handle h;
	int err = mfs_permission(dir, cr, W_OK | X_OK);

	if (!err && !dir->raw.i_links_count)
		err = -ENOENT;
	if (!err && !n->raw.i_links_count)
		err = -ENOENT;
	if (!err && le16toh(n->raw.i_links_count) >= MFS_LINK_MAX)
		err = -EMLINK;
	if (!err) {
		err = mfs_dir_find(dir, name, len, &loc);
		err = err == -ENOENT ? 0 : err ? err : -EEXIST;
	}
	struct mfs_resv resv;
	uint64_t blocks;

	if (!err)
		err = mfs_dir_add_need(dir, name, len, &blocks);
	if (!err)
		err = mfs_reserve_blocks(fs, cr, blocks, &resv);
	if (err)
		return err;
	err = mfs_jstart_resv(fs, mfs_dir_add_credits(fs) + 4, &resv, &h);
	if (!err) {
		err = mfs_dir_add(dir, &h, name, len, n->ino, fmt_mode_to_ft(node_mode(n)));
		pthread_mutex_lock(&n->lock);
		n->raw.i_links_count = htole16(le16toh(n->raw.i_links_count) + 1);
		mfs_node_touch(n, false, true);
		pthread_mutex_unlock(&n->lock);
		if (!err)
			err = mfs_inode_write(n, &h, true);
		if (!err)
			err = parent_update(dir, &h, 0);
		err = mfs_jstop(fs, &h, err);
	}
	mfs_reserve_end(fs, &resv);
	return err;
}

/* The entry layer holds both locks. */
int mfs_dir_link(struct mfs_node *dir, const struct mfs_cred *cr,
		 const char *name, size_t len, struct mfs_node *n)
{
	int err = mfs_check_flags(n, true);

	return err ? err : link_locked(n, dir, cr, name, len);
}

/* ---- unlink and rmdir ---------------------------------------------------- */

/* Drop one link of @n (rwsem held); at zero it goes on the orphan list
 * until its last user lets go.  orphan_lock held, in a handle. */
int mfs_drop_link(struct mfs_node *n, struct mfs_handle *h)
{
	uint16_t links = le16toh(n->raw.i_links_count);

	pthread_mutex_lock(&n->lock);
	if (S_ISDIR(node_mode(n)) || links <= 1)
		links = 0;
	else
		links--;
	n->raw.i_links_count = htole16(links);
	mfs_node_touch(n, false, true);
	pthread_mutex_unlock(&n->lock);
	if (!links)
		return mfs_orphan_add(n, h);
	return mfs_inode_write(n, h, true);
}

/* The entry layer holds both locks (mfs_lock_entry). */
int mfs_dir_unlink(struct mfs_node *dir, struct mfs_node *victim,
		   const struct mfs_dirloc *loc, const struct mfs_cred *cr,
		   bool rmdir)
{
	struct mfs_fs *fs = dir->fs;
	struct mfs_handle h;
	int err = mfs_may_delete(dir, victim, cr);

	if (!err && rmdir && !S_ISDIR(node_mode(victim)))
		err = -ENOTDIR;
	if (!err && !rmdir && S_ISDIR(node_mode(victim)))
		err = -EISDIR;
	if (!err && rmdir && victim == dir)
		err = -EINVAL;
	if (!err && rmdir) {
		err = mfs_dir_is_empty(victim);
		err = err == 1 ? 0 : err ? err : -ENOTEMPTY;
	}
	if (err)
		return err;
	pthread_mutex_lock(&fs->orphan_lock);
	err = mfs_jstart(fs, MFS_ORPHAN_CREDITS + 8, &h);
	if (!err) {
		err = mfs_dir_remove(dir, &h, loc);
		if (!err)
			err = mfs_drop_link(victim, &h);
		if (!err)
			err = parent_update(dir, &h, rmdir ? -1 : 0);
		err = mfs_jstop(fs, &h, err);
	}
	pthread_mutex_unlock(&fs->orphan_lock);
	atomic_fetch_add(&fs->st.unlinks, 1);
	return err;
}
