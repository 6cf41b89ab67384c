/*
 * attr.c - permissions and attribute changes: access(2), chmod, chown,
 * utimens and truncate, with the rules Linux applies (owner, group with
 * supplementary groups, other; root passes every check but execute on a
 * file with no execute bit; set-id bits cleared as Linux clears them).
 */
#include "mfs_i.h"
#include "blockmap.h"
#include "icache.h"
#include "kinds.h"
#include "vfs.h"
#include "xattr.h"

#include <errno.h>
#include <inttypes.h>
#include <string.h>
#include <unistd.h>

bool mfs_in_group(const struct mfs_cred *cr, uint32_t gid)
{
	if (cr->gid == gid)
		return true;
	for (unsigned i = 0; i < cr->ngroups; i++)
		if (cr->groups[i] == gid)
			return true;
	return false;
}

/* @mask of R_OK, W_OK, X_OK; a NULL @cr is the filesystem itself. */
int mfs_mode_permission(uint16_t mode, uint32_t uid, uint32_t gid,
			const struct mfs_cred *cr, int mask)
{
	uint32_t bits;

	if (!cr || !mask)
		return 0;
	if (cr->uid == 0) {
		if (!(mask & X_OK) || S_ISDIR(mode) || (mode & 0111))
			return 0;
		return -EACCES;
	}
	if (cr->uid == uid)
		bits = mode >> 6;
	else if (mfs_in_group(cr, gid))
		bits = mode >> 3;
	else
		bits = mode;
	return ((bits & 7) & (unsigned)mask) == (unsigned)mask ? 0 : -EACCES;
}

/*
 * As Linux's generic_permission: the owner gets the owner bits; for anyone
 * else but root an access ACL decides, unless the group bits (its mask)
 * are all clear; without one the group or other bits do.
 */
int mfs_permission(struct mfs_node *n, const struct mfs_cred *cr, int mask)
{
	uint16_t mode;
	uint32_t uid, gid;
	int err;

	if (!cr || !mask)
		return 0;
	/* Before any mode or ACL, and for root too (inode_permission). */
	if ((mask & W_OK) && (mfs_node_flags(n) & MFS_IMMUTABLE_FL))
		return -EPERM;
	pthread_mutex_lock(&n->lock);
	mode = le16toh(n->raw.i_mode);
	uid = le32toh(n->raw.i_uid);
	gid = le32toh(n->raw.i_gid);
	pthread_mutex_unlock(&n->lock);
	if (cr->uid && cr->uid != uid && (mode & S_IRWXG)) {
		err = mfs_acl_check(n, cr, mask);
		if (err != -EAGAIN)
			return err;
	}
	return mfs_mode_permission(mode, uid, gid, cr, mask);
}

static bool is_owner(struct mfs_node *n, const struct mfs_cred *cr)
{
	return !cr || cr->uid == 0 || cr->uid == le32toh(n->raw.i_uid);
}

/* Sticky directories: only the owner of the entry or of the directory
 * (or root) removes or renames it.  Nothing leaves an append-only
 * directory, and an immutable or append-only inode keeps its names. */
int mfs_may_delete(struct mfs_node *dir, struct mfs_node *victim,
		   const struct mfs_cred *cr)
{
	int err = mfs_permission(dir, cr, W_OK | X_OK);

	if (err)
		return err;
	if ((mfs_node_flags(dir) & MFS_APPEND_FL) || mfs_check_flags(victim, true))
		return -EPERM;
	if (!(node_mode(dir) & S_ISVTX) || is_owner(victim, cr) || is_owner(dir, cr))
		return 0;
	return -EPERM;
}

/* ---- truncate ------------------------------------------------------------ */

/* Zero the part of the last block beyond a new size, in the cache and, by
 * writeback (or in @h, for journalled data), on disk: bytes past the end
 * must read as zeros if the file grows again. */
static int zero_tail(struct mfs_node *n, uint64_t size, struct mfs_handle *h)
{
	uint32_t bs = n->fs->bs, in = (uint32_t)(size % bs);
	struct pc_page *pg;
	uint64_t pblk;
	int err;

	if (!in)
		return 0;
	err = mfs_bmap_lookup(n, size / bs, &pblk);
	if (err || !pblk)
		return err;
	err = pc_read_cache_page(n->map, size / bs, &pg);
	if (err)
		return err;
	pc_lock_page(pg);
	pc_wait_on_page_writeback(pg);     /* stable pages, as in a write */
	memset((char *)pg->data + in, 0, bs - in);
	if (h && atomic_load(&n->jdata))
		err = jnl_journal_data(&h->jh, pg, pblk);
	else
		pc_set_page_dirty(pg);
	pc_unlock_page(pg);
	pc_put_page(pg);
	return err;
}

/*
 * The file grows past @old under @h.  The disk may hold bytes past @old in
 * the last block: a write that a power cut kept while the size covering
 * it was lost.  They are zeroed in the cache, and the page is ordered data
 * of the transaction that grows the size (or journalled in it), so they
 * are zeros on disk before that size can be.  One credit of @h.
 */
int mfs_zero_eof_tail(struct mfs_node *n, struct mfs_handle *h, uint64_t old)
{
	int err = zero_tail(n, old, h);

	if (!err && old % n->fs->bs && node_data_ordered(n))
		err = jnl_add_ordered(&h->jh, &n->ji);
	return err;
}

/*
 * The new size; a shrinking one also puts the inode on the orphan list in
 * the same handle.  Its blocks are freed in as many handles as it takes,
 * and a commit may fall between them: after a crash there, the mount
 * finishes the truncation, so no block stays mapped past the end (where
 * growing the file again would show its old contents).
 */
static int set_size(struct mfs_node *n, uint64_t size, bool orphan)
{
	struct mfs_fs *fs = n->fs;
	uint64_t old = node_size(n);
	struct mfs_handle h;
	int err;

	if (orphan)
		pthread_mutex_lock(&fs->orphan_lock);
	err = mfs_jstart(fs, MFS_CR_INODE + 1 + (orphan ? MFS_ORPHAN_CREDITS : 0), &h);
	if (!err) {
		pthread_mutex_lock(&n->lock);
		n->raw.i_size = htole64(size);
		mfs_node_touch(n, true, true);
		pthread_mutex_unlock(&n->lock);
		err = mfs_inode_write(n, &h, true);
		if (!err && orphan)
			err = mfs_orphan_add(n, &h);
		if (!err && size > old)
			err = mfs_zero_eof_tail(n, &h, old);
		err = mfs_jstop(fs, &h, err);
	}
	if (orphan)
		pthread_mutex_unlock(&fs->orphan_lock);
	return err;
}

/* The truncation is complete: off the orphan list, unless the inode is
 * unlinked (its last close frees it and takes it off). */
static int truncate_done(struct mfs_node *n)
{
	if (!n->raw.i_links_count)
		return 0;
	return mfs_orphan_remove(n);
}

/* A truncation to the size a file has frees what a preallocation left past
 * its end, as ext4 does.  Only zeroed blocks past the end are freed, so a
 * crash half-way needs no orphan list. */
static int truncate_same(struct mfs_node *n)
{
	uint64_t from = UT_DIV_ROUND_UP(node_size(n), n->fs->bs);
	uint64_t end = fmt_max_file_blocks(n->fs->bs), data;
	int err = set_size(n, node_size(n), false);

	if (!err)
		err = mfs_bmap_seek(n, from, end, true, &data);
	if (!err && data < end)
		err = mfs_bmap_truncate(n, from);
	return err;
}

/* rwsem held for writing. */
int mfs_truncate_locked(struct mfs_node *n, const struct mfs_cred *cr, uint64_t size)
{
	uint64_t old = node_size(n);
	int err;

	(void)cr;
	if (size > fmt_max_file_size(n->fs->bs))
		return -EFBIG;
	if (size == old)
		return truncate_same(n);
	err = set_size(n, size, size < old);
	if (err || size > old)
		return err;
	pc_truncate(n->map, size);
	err = zero_tail(n, size, NULL);
	if (!err)
		err = mfs_bmap_truncate(n, UT_DIV_ROUND_UP(size, n->fs->bs));
	if (!err)
		err = truncate_done(n);
	return err;
}

/* ---- setattr ------------------------------------------------------------- */

static int check_chown(struct mfs_node *n, const struct mfs_cred *cr,
		       const struct mfs_setattr *sa)
{
	uint32_t uid = le32toh(n->raw.i_uid), gid = le32toh(n->raw.i_gid);

	if (!cr || cr->uid == 0)
		return 0;
	if ((sa->valid & MFS_SET_UID) && sa->uid != uid)
		return -EPERM;
	if ((sa->valid & MFS_SET_GID) && sa->gid != gid &&
	    (cr->uid != uid || !mfs_in_group(cr, sa->gid)))
		return -EPERM;
	return 0;
}

/* Setting times to now needs write permission; setting given times needs
 * ownership (utimensat(2)). */
/* Times the caller chose, not its clock at the change. */
static bool times_given(const struct mfs_setattr *sa)
{
	return !(sa->valid & MFS_SET_TIMES_NOW_GIVEN) &&
	       (((sa->valid & MFS_SET_ATIME) && !(sa->valid & MFS_SET_ATIME_NOW)) ||
		((sa->valid & MFS_SET_MTIME) && !(sa->valid & MFS_SET_MTIME_NOW)));
}

static int check_times(struct mfs_node *n, const struct mfs_cred *cr,
		       const struct mfs_setattr *sa)
{
	bool given = times_given(sa);

	if (is_owner(n, cr))
		return 0;
	return given ? -EPERM : mfs_permission(n, cr, W_OK);
}

/*
 * A mode change that only drops set-id bits the file has, as a write or a
 * truncation by this caller would (Linux's file_remove_privs).  The kernel
 * asks for it with the writer's credentials when the filesystem does not
 * drop the bits itself on write (no FUSE_HANDLE_KILLPRIV), so a caller
 * that may write the file may also ask for this, owner or not.
 */
static bool drops_only_setid(struct mfs_node *n, const struct mfs_setattr *sa)
{
	uint16_t cur = node_mode(n) & 07777, new = sa->mode & 07777;
	uint16_t dropped = cur & ~new;

	return S_ISREG(node_mode(n)) && !(new & ~cur) && dropped &&
	       !(dropped & ~(S_ISUID | S_ISGID));
}

static int check_mode(struct mfs_node *n, const struct mfs_cred *cr,
		      const struct mfs_setattr *sa)
{
	if (is_owner(n, cr))
		return 0;
	if (drops_only_setid(n, sa) && !mfs_permission(n, cr, W_OK))
		return 0;
	return -EPERM;
}

/* notify_change and do_truncate: an immutable or append-only inode keeps
 * its mode, owners, given times and size; an immutable one its times. */
static int setattr_flags(struct mfs_node *n, const struct mfs_setattr *sa)
{
	bool given = times_given(sa);

	if ((sa->valid & (MFS_SET_MODE | MFS_SET_UID | MFS_SET_GID | MFS_SET_SIZE)) ||
	    given)
		return mfs_check_flags(n, true);
	if (sa->valid & (MFS_SET_ATIME | MFS_SET_MTIME | MFS_SET_ATIME_NOW |
			 MFS_SET_MTIME_NOW))
		return mfs_check_flags(n, false);
	return 0;
}

static int setattr_check(struct mfs_node *n, const struct mfs_cred *cr,
			 const struct mfs_setattr *sa)
{
	int err = setattr_flags(n, sa);

	if (err)
		return err;

	if ((sa->valid & MFS_SET_MODE) && check_mode(n, cr, sa))
		return -EPERM;
	if (sa->valid & (MFS_SET_UID | MFS_SET_GID))
		err = check_chown(n, cr, sa);
	if (!err && (sa->valid & (MFS_SET_ATIME | MFS_SET_MTIME | MFS_SET_ATIME_NOW |
				  MFS_SET_MTIME_NOW)))
		err = check_times(n, cr, sa);
	if (!err && (sa->valid & MFS_SET_SIZE)) {
		if (S_ISDIR(node_mode(n)))
			return -EISDIR;
		if (!S_ISREG(node_mode(n)))
			return -EINVAL;
		if (!(sa->valid & MFS_SET_BY_FILE))
			err = mfs_permission(n, cr, W_OK);
	}
	return err;
}

static void set_time(int64_t *sec, uint32_t *nsec, const struct timespec *ts)
{
	*sec = htole64(ts->tv_sec);
	*nsec = htole32((uint32_t)ts->tv_nsec);
}

/* Mode and owners; node->lock held. */
static void apply_ids(struct mfs_node *n, const struct mfs_cred *cr,
		      const struct mfs_setattr *sa)
{
	uint16_t mode = node_mode(n);

	if (sa->valid & MFS_SET_MODE) {
		bool kill = !is_owner(n, cr);    /* drops_only_setid() */

		mode = (mode & S_IFMT) | (sa->mode & 07777);
		if (!kill && cr && cr->uid && !mfs_in_group(cr, le32toh(n->raw.i_gid)))
			mode &= ~S_ISGID;
	}
	if (sa->valid & (MFS_SET_UID | MFS_SET_GID)) {
		if (sa->valid & MFS_SET_UID)
			n->raw.i_uid = htole32(sa->uid);
		if (sa->valid & MFS_SET_GID)
			n->raw.i_gid = htole32(sa->gid);
		if (!S_ISDIR(mode)) {
			mode &= ~S_ISUID;
			if (mode & S_IXGRP)
				mode &= ~S_ISGID;
		}
	}
	n->raw.i_mode = htole16(mode);
}

static void apply_times(struct mfs_node *n, const struct mfs_setattr *sa)
{
	struct timespec now;

	mfs_now(&now);
	if (sa->valid & MFS_SET_ATIME_NOW)
		set_time(&n->raw.i_atime, &n->raw.i_atime_nsec, &now);
	else if (sa->valid & MFS_SET_ATIME)
		set_time(&n->raw.i_atime, &n->raw.i_atime_nsec, &sa->atime);
	if (sa->valid & MFS_SET_MTIME_NOW)
		set_time(&n->raw.i_mtime, &n->raw.i_mtime_nsec, &now);
	else if (sa->valid & MFS_SET_MTIME)
		set_time(&n->raw.i_mtime, &n->raw.i_mtime_nsec, &sa->mtime);
	if (sa->valid & MFS_SET_CTIME)
		set_time(&n->raw.i_ctime, &n->raw.i_ctime_nsec, &sa->ctime);
	else
		set_time(&n->raw.i_ctime, &n->raw.i_ctime_nsec, &now);
}

static int setattr_apply(struct mfs_node *n, const struct mfs_cred *cr,
			 const struct mfs_setattr *sa)
{
	struct mfs_handle h;
	bool data = sa->valid & (MFS_SET_MODE | MFS_SET_UID | MFS_SET_GID);
	bool chmod = sa->valid & MFS_SET_MODE;
	int err = mfs_jstart(n->fs, MFS_CR_INODE + (chmod ? MFS_XATTR_CREDITS : 0), &h);

	if (err)
		return err;
	pthread_mutex_lock(&n->lock);
	apply_ids(n, cr, sa);
	apply_times(n, sa);
	pthread_mutex_unlock(&n->lock);
	err = mfs_inode_write(n, &h, data);
	/* The access ACL keeps saying what the mode says (posix_acl_chmod). */
	if (!err && chmod)
		err = mfs_acl_chmod_node(n, &h);
	return mfs_jstop(n->fs, &h, err);
}

/* A non-root writer or truncater drops the set-id bits (Linux's
 * file_remove_privs): set-uid always; set-gid when the group may execute,
 * or when the caller is not in the file's group (setattr_should_drop_sgid).
 * The caller holds the rwsem.  The reply of a write or an open carries no
 * attributes, so whoever caches them is told (mfs_set_attr_changed). */
int mfs_kill_suid(struct mfs_node *n, const struct mfs_cred *cr)
{
	struct mfs_setattr sa = { .valid = MFS_SET_MODE };
	uint16_t mode = node_mode(n);
	int err;

	if (!cr || cr->uid == 0 || !(mode & (S_ISUID | S_ISGID)))
		return 0;
	sa.mode = mode & ~S_ISUID;
	if ((mode & S_IXGRP) || !mfs_in_group(cr, le32toh(n->raw.i_gid)))
		sa.mode &= ~S_ISGID;
	if (sa.mode == mode)
		return 0;
	err = setattr_apply(n, NULL, &sa);
	if (!err && n->fs->attr_changed_fn)
		n->fs->attr_changed_fn(n->fs->attr_changed_arg, n->ino);
	return err;
}

int mfs_disk_setattr(struct mfs_node *n, const struct mfs_cred *cr,
		     const struct mfs_setattr *sa)
{
	int err = mfs_check_rw(n->fs);

	if (err)
		return err;
	pthread_rwlock_wrlock(&n->rwsem);
	err = setattr_check(n, cr, sa);
	if (!err && (sa->valid & MFS_SET_SIZE)) {
		err = mfs_kill_suid(n, cr);
		if (!err)
			err = mfs_truncate_locked(n, cr, sa->size);
	}
	if (!err && (sa->valid & ~(MFS_SET_SIZE | MFS_SET_BY_FILE)))
		err = setattr_apply(n, cr, sa);
	pthread_rwlock_unlock(&n->rwsem);
	return err;
}
