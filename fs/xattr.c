/*
 * xattr.c - extended attributes: the entries of an inode's in-inode area
 * and of its one xattr block (docs/FORMAT.md, "Extended attributes"),
 * and the calls getxattr(2), setxattr(2), listxattr(2) and removexattr(2)
 * with the name spaces and permission rules Linux applies.
 *
 * A change works on copies of both areas: the old entry goes, the new one
 * goes to the inode when it fits there and to the block otherwise, and
 * only when all of that worked is anything written (so ENOSPC and the
 * other refusals change nothing).  The block is allocated for its first
 * entry and freed with its last, under the change's handle.
 */
#include "mfs_i.h"
#include "balloc.h"
#include "icache.h"
#include "kinds.h"
#include "vfs.h"
#include "xattr.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/xattr.h>
#include <unistd.h>

#define XA_NAME_MAX 255u             /* Linux's XATTR_NAME_MAX */
/* ---- the two areas, copied ------------------------------------------------- */

struct xa_state {
	uint8_t in[MFS_INODE_XATTR_SIZE];
	uint32_t in_used;
	uint8_t *blk;                /* the block's entries (block_room bytes) */
	uint32_t blk_used;
	uint64_t blkno;              /* 0: none yet */
};

/* Copy block @blkno's entries, checked, into @st->blk. */
static int load_block(struct mfs_node *n, struct xa_state *st)
{
	struct mfs_fs *fs = n->fs;
	struct pc_page *pg;
	char why[160];
	int err;

	if (st->blkno < le32toh(fs->sb.s_first_data_block) || st->blkno >= fs->nblocks)
		return mfs_error(fs, "inode %" PRIu64 ": xattr block %" PRIu64
				 " is outside the filesystem", n->ino, st->blkno);
	err = mfs_meta_read(fs, st->blkno, &pg);
	if (err)
		return err;
	pc_lock_page(pg);
	err = fmt_xattr_block_check(&fs->sb, st->blkno, pg->data, why, sizeof(why));
	if (!err) {
		st->blk_used = le32toh(((struct mfs_xattr_header *)pg->data)->h_used);
		memcpy(st->blk, (uint8_t *)pg->data + FMT_XATTR_HDR, fmt_xattr_block_room(fs->bs));
	}
	pc_unlock_page(pg);
	pc_put_page(pg);
	if (err)
		return mfs_error(fs, "inode %" PRIu64 ": %s", n->ino, why);
	return 0;
}

static void state_free(struct xa_state *st)
{
	free(st->blk);
	st->blk = NULL;
}

/* The inode's xattrs into @st; the block's copy only where there is a
 * block or @writing may make one (a lookup in a file with no xattr block,
 * as every create's look for its parent's default ACL, allocates none). */
static int state_load(struct mfs_node *n, struct xa_state *st, bool writing)
{
	char why[128];
	int err;

	memset(st, 0, sizeof(*st));
	pthread_mutex_lock(&n->lock);
	memcpy(st->in, n->raw.i_xattr, sizeof(st->in));
	st->blkno = le32toh(n->raw.i_xattr_block);
	pthread_mutex_unlock(&n->lock);
	if ((st->blkno || writing) && !(st->blk = calloc(1, n->fs->bs)))
		return -ENOMEM;
	err = fmt_xattr_area_used(st->in, sizeof(st->in), &st->in_used, why, sizeof(why));
	if (err)
		err = mfs_error(n->fs, "inode %" PRIu64 ": in-inode xattrs: %s", n->ino, why);
	if (!err && st->blkno)
		err = load_block(n, st);
	if (err)
		state_free(st);
	return err;
}

/* Offset of the entry named @nm among @used bytes of entries, or -1. */
static int64_t find(const uint8_t *p, uint32_t used, const struct mfs_xname *nm)
{
	uint32_t off = 0;

	while (off < used) {
		if (p[off] == nm->index && p[off + 1] == nm->len &&
		    !memcmp(p + off + FMT_XATTR_ENTRY_HDR, nm->name, nm->len))
			return off;
		off += fmt_xattr_entry_len(p[off + 1], fmt_xattr_value_size(p + off));
	}
	return -1;
}

static void drop_entry(uint8_t *p, uint32_t *used, uint32_t off, uint32_t room)
{
	uint32_t len = fmt_xattr_entry_len(p[off + 1], fmt_xattr_value_size(p + off));

	memmove(p + off, p + off + len, *used - off - len);
	*used -= len;
	memset(p + *used, 0, room - *used);
}

/* Append the entry if it fits in @room; false if not. */
static bool add_entry(uint8_t *p, uint32_t *used, uint32_t room,
		      const struct mfs_xname *nm, const void *value, size_t size)
{
	uint32_t len = fmt_xattr_entry_len((uint32_t)nm->len, (uint32_t)size);
	uint16_t vs = htole16((uint16_t)size);

	if (len > room - *used)
		return false;
	p[*used] = (uint8_t)nm->index;
	p[*used + 1] = (uint8_t)nm->len;
	memcpy(p + *used + 2, &vs, 2);
	memcpy(p + *used + FMT_XATTR_ENTRY_HDR, nm->name, nm->len);
	if (size)
		memcpy(p + *used + FMT_XATTR_ENTRY_HDR + nm->len, value, size);
	*used += len;
	return true;
}

/* ---- reading ------------------------------------------------------------------- */

static ssize_t copy_value(const uint8_t *e, void *buf, size_t size)
{
	uint16_t vs = fmt_xattr_value_size(e);

	if (size && size < vs)
		return -ERANGE;
	if (size && vs)
		memcpy(buf, e + FMT_XATTR_ENTRY_HDR + e[1], vs);
	return vs;
}

ssize_t mfs_xattr_get(struct mfs_node *n, const struct mfs_xname *nm, void *buf,
		      size_t size)
{
	struct xa_state st;
	int64_t off;
	ssize_t ret = -ENODATA;
	int err = state_load(n, &st, false);

	if (err)
		return err;
	off = find(st.in, st.in_used, nm);
	if (off >= 0)
		ret = copy_value(st.in + off, buf, size);
	else if ((off = find(st.blk, st.blk_used, nm)) >= 0)
		ret = copy_value(st.blk + off, buf, size);
	state_free(&st);
	return ret;
}

bool mfs_xattr_needs_block(struct mfs_node *n)
{
	bool none;

	pthread_mutex_lock(&n->lock);
	none = !n->raw.i_xattr_block;
	pthread_mutex_unlock(&n->lock);
	return none;
}

/* ---- writing ------------------------------------------------------------------- */

/* The block as @st has it: freed when empty, allocated when new. */
static int store_block(struct mfs_node *n, struct mfs_handle *h, struct xa_state *st)
{
	struct mfs_fs *fs = n->fs;
	uint64_t old = st->blkno;
	struct mfs_xattr_header *hd;
	struct pc_page *pg;
	int err;

	if (!st->blk_used) {
		st->blkno = 0;
		return old ? mfs_free_blocks(fs, h, old, 1, true) : 0;
	}
	if (!old) {
		uint64_t goal;

		pthread_mutex_lock(&n->lock);
		goal = n->goal;
		pthread_mutex_unlock(&n->lock);
		err = mfs_alloc_block(fs, h, goal, &st->blkno);
		if (err)
			return err;
	}
	err = mfs_meta_access(fs, h, st->blkno, !old, &pg);
	if (err)
		return err;
	pc_lock_page(pg);
	hd = pg->data;
	memset(hd, 0, FMT_XATTR_HDR);
	hd->h_magic = htole32(MFS_XATTR_BLOCK_MAGIC);
	hd->h_refcount = htole32(1);
	hd->h_used = htole32(st->blk_used);
	memcpy((uint8_t *)pg->data + FMT_XATTR_HDR, st->blk, fmt_xattr_block_room(fs->bs));
	fmt_block_set_csum(&fs->sb, MFS_CSUM_XATTR, st->blkno, pg->data);
	pc_unlock_page(pg);
	err = mfs_meta_dirty(fs, h, st->blkno, pg);
	pc_put_page(pg);
	return err;
}

/* The block first, then the inode: readers that do not hold the rwsem
 * (mfs_acl_check) see xattr_changing between the two and read again. */
static int store(struct mfs_node *n, struct mfs_handle *h, struct xa_state *st,
		 bool block_changed)
{
	uint64_t old = st->blkno;
	int64_t delta;
	int err;

	pthread_mutex_lock(&n->lock);
	mfs_acl_forget_locked(n);
	n->xattr_changing = true;
	pthread_mutex_unlock(&n->lock);
	err = block_changed ? store_block(n, h, st) : 0;
	delta = (st->blkno != 0) - (old != 0);
	pthread_mutex_lock(&n->lock);
	if (!err) {
		memcpy(n->raw.i_xattr, st->in, sizeof(st->in));
		n->raw.i_xattr_block = htole32((uint32_t)st->blkno);
		n->raw.i_blocks = htole64(le64toh(n->raw.i_blocks) +
					  delta * (n->fs->bs / 512));
		mfs_node_touch(n, false, true);
	}
	n->xattr_changing = false;
	mfs_acl_forget_locked(n);
	pthread_mutex_unlock(&n->lock);
	return err ? err : mfs_inode_write(n, h, true);
}

int mfs_xattr_set(struct mfs_node *n, struct mfs_handle *h,
		  const struct mfs_xname *nm, const void *value, size_t size,
		  int flags)
{
	uint32_t room = fmt_xattr_block_room(n->fs->bs);
	struct xa_state st;
	int64_t in_off, blk_off;
	bool blk_changed = false;
	int err = state_load(n, &st, true);

	if (err)
		return err;
	in_off = find(st.in, st.in_used, nm);
	blk_off = in_off < 0 ? find(st.blk, st.blk_used, nm) : -1;
	if ((flags & XATTR_CREATE) && (in_off >= 0 || blk_off >= 0))
		err = -EEXIST;
	else if (((flags & XATTR_REPLACE) || !value) && in_off < 0 && blk_off < 0)
		err = -ENODATA;
	if (err)
		goto out;
	if (in_off >= 0)
		drop_entry(st.in, &st.in_used, (uint32_t)in_off, sizeof(st.in));
	if (blk_off >= 0) {
		drop_entry(st.blk, &st.blk_used, (uint32_t)blk_off, room);
		blk_changed = true;
	}
	if (value && !add_entry(st.in, &st.in_used, sizeof(st.in), nm, value, size)) {
		if ((!st.blkno && (flags & MFS_XATTR_NO_BLOCK)) ||
		    !add_entry(st.blk, &st.blk_used, room, nm, value, size)) {
			err = -ENOSPC;
			goto out;
		}
		blk_changed = true;
	}
	err = store(n, h, &st, blk_changed);
out:
	state_free(&st);
	return err;
}

int mfs_xattr_drop_block(struct mfs_node *n, struct mfs_handle *h)
{
	uint64_t blk;
	int err;

	pthread_mutex_lock(&n->lock);
	blk = le32toh(n->raw.i_xattr_block);
	pthread_mutex_unlock(&n->lock);
	if (!blk)
		return 0;
	if (blk < le32toh(n->fs->sb.s_first_data_block) || blk >= n->fs->nblocks)
		return mfs_error(n->fs, "inode %" PRIu64 ": xattr block %" PRIu64
				 " is outside the filesystem", n->ino, blk);
	err = mfs_free_blocks(n->fs, h, blk, 1, true);
	if (err)
		return err;
	pthread_mutex_lock(&n->lock);
	n->raw.i_xattr_block = 0;
	n->raw.i_blocks = htole64(le64toh(n->raw.i_blocks) - n->fs->bs / 512);
	mfs_acl_forget_locked(n);
	pthread_mutex_unlock(&n->lock);
	return 0;
}

/* ---- names and permissions ------------------------------------------------------ */

static const struct {
	const char *prefix;
	int index;
	bool whole;                  /* the prefix is the whole name */
} prefixes[] = {
	{ "user.", MFS_XATTR_INDEX_USER, false },
	{ "trusted.", MFS_XATTR_INDEX_TRUSTED, false },
	{ "security.", MFS_XATTR_INDEX_SECURITY, false },
	{ "system.posix_acl_access", MFS_XATTR_INDEX_ACL_ACCESS, true },
	{ "system.posix_acl_default", MFS_XATTR_INDEX_ACL_DEFAULT, true },
};

int mfs_xattr_parse_name(const char *full, struct mfs_xname *nm)
{
	size_t len = strlen(full);

	if (len > XA_NAME_MAX)
		return -ERANGE;
	if (!len)
		return -ERANGE;
	for (size_t i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++) {
		size_t pl = strlen(prefixes[i].prefix);

		if (prefixes[i].whole ? strcmp(full, prefixes[i].prefix) :
		    strncmp(full, prefixes[i].prefix, pl))
			continue;
		nm->index = prefixes[i].index;
		nm->name = full + (prefixes[i].whole ? len : pl);
		nm->len = prefixes[i].whole ? 0 : len - pl;
		return !prefixes[i].whole && !nm->len ? -EINVAL : 0;
	}
	return -EOPNOTSUPP;
}

static bool is_root(const struct mfs_cred *cr)
{
	return !cr || cr->uid == 0;
}

/*
 * Linux's xattr_permission: trusted.* is root's (others get EPERM for a
 * change and see nothing); user.* is for files and directories only, and
 * follows the file's permissions and a sticky directory's rule;
 * security.* takes root to change (the capability module's rule);
 * ACLs are anybody's to read and their owner's to change.
 */
static int may_xattr(struct mfs_node *n, const struct mfs_cred *cr,
		     const struct mfs_xname *nm, bool write)
{
	uint16_t mode = node_mode(n);

	if (write && (le32toh(n->raw.i_flags) & (MFS_IMMUTABLE_FL | MFS_APPEND_FL)))
		return -EPERM;
	switch (nm->index) {
	case MFS_XATTR_INDEX_TRUSTED:
		return is_root(cr) ? 0 : write ? -EPERM : -ENODATA;
	case MFS_XATTR_INDEX_SECURITY:
		return !write || is_root(cr) ? 0 : -EPERM;
	case MFS_XATTR_INDEX_USER:
		if (!S_ISREG(mode) && !S_ISDIR(mode))
			return write ? -EPERM : -ENODATA;
		if (write && S_ISDIR(mode) && (mode & S_ISVTX) && !is_root(cr) &&
		    cr->uid != le32toh(n->raw.i_uid))
			return -EPERM;
		return mfs_permission(n, cr, write ? W_OK : R_OK);
	default:
		return 0;
	}
}

/* ---- the calls --------------------------------------------------------------------- */


/*
 * Before a write or fallocate by anyone, the kernel removes a file's
 * capabilities (security.capability) itself, and through FUSE that
 * removal arrives as the writer's: a caller who may write the file may
 * remove them, as the writer could make them void by writing.
 */
static bool drops_caps(struct mfs_node *n, const struct mfs_cred *cr,
		       const struct mfs_xname *nm, const void *value)
{
	return !value && nm->index == MFS_XATTR_INDEX_SECURITY &&
	       nm->len == 10 && !memcmp(nm->name, "capability", 10) &&
	       !mfs_permission(n, cr, W_OK);
}

/* rwsem held for writing. */
static int set_locked(struct mfs_node *n, const struct mfs_cred *cr,
		      const struct mfs_xname *nm, const void *value, size_t size,
		      int flags)
{
	struct mfs_resv resv = { 0 };
	struct mfs_handle h;
	int err = drops_caps(n, cr, nm, value) ? 0 : may_xattr(n, cr, nm, true);

	if (err)
		return err;
	if (fmt_xattr_is_acl(nm->index))
		return mfs_acl_set(n, cr, nm->index, value, size);
	/* A full filesystem still takes what fits in the inode. */
	if (value && mfs_xattr_needs_block(n)) {
		err = mfs_reserve_blocks(n->fs, cr, 1, &resv);
		if (err && err != -ENOSPC)
			return err;
		flags |= err ? MFS_XATTR_NO_BLOCK : 0;
	}
	err = mfs_jstart_resv(n->fs, MFS_XATTR_CREDITS, &resv, &h);
	if (!err) {
		err = mfs_xattr_set(n, &h, nm, value, size, flags);
		err = mfs_jstop(n->fs, &h, err);
	}
	mfs_reserve_end(n->fs, &resv);
	return err;
}

int mfs_disk_setxattr(struct mfs_node *n, const struct mfs_cred *cr,
		      const struct mfs_xname *nm, const void *value, size_t size,
		      int flags)
{
	int err = mfs_check_rw(n->fs);

	if (err)
		return err;
	pthread_rwlock_wrlock(&n->rwsem);
	err = set_locked(n, cr, nm, value, size, flags);
	pthread_rwlock_unlock(&n->rwsem);
	return err;
}

ssize_t mfs_disk_getxattr(struct mfs_node *n, const struct mfs_cred *cr,
			  const struct mfs_xname *nm, void *buf, size_t size)
{
	ssize_t ret;

	pthread_rwlock_rdlock(&n->rwsem);
	ret = may_xattr(n, cr, nm, false);
	if (!ret && fmt_xattr_is_acl(nm->index))
		ret = S_ISLNK(node_mode(n)) ? -EOPNOTSUPP : mfs_acl_get(n, nm->index, buf, size);
	else if (!ret)
		ret = mfs_xattr_get(n, nm, buf, size);
	pthread_rwlock_unlock(&n->rwsem);
	return ret;
}

/* ---- listing ----------------------------------------------------------------------- */

struct xa_list {
	char *buf;
	size_t size, len;
	bool root;
};

static void list_area(struct xa_list *l, const uint8_t *p, uint32_t used)
{
	for (uint32_t off = 0; off < used; off += fmt_xattr_entry_len(p[off + 1], fmt_xattr_value_size(p + off))) {
		const char *prefix = NULL;
		size_t pl, nl = p[off + 1];

		for (size_t i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++)
			if (prefixes[i].index == p[off])
				prefix = prefixes[i].prefix;
		if (p[off] == MFS_XATTR_INDEX_TRUSTED && !l->root)
			continue;
		pl = strlen(prefix);
		if (l->buf && l->len + pl + nl + 1 <= l->size) {
			memcpy(l->buf + l->len, prefix, pl);
			memcpy(l->buf + l->len + pl, p + off + FMT_XATTR_ENTRY_HDR, nl);
			l->buf[l->len + pl + nl] = '\0';
		}
		l->len += pl + nl + 1;
	}
}

ssize_t mfs_disk_listxattr(struct mfs_node *n, const struct mfs_cred *cr,
			   char *buf, size_t size)
{
	struct xa_list l = { size ? buf : NULL, size, 0, is_root(cr) };
	struct xa_state st;
	int err;

	pthread_rwlock_rdlock(&n->rwsem);
	err = state_load(n, &st, false);
	pthread_rwlock_unlock(&n->rwsem);
	if (err)
		return err;
	list_area(&l, st.in, st.in_used);
	list_area(&l, st.blk, st.blk_used);
	state_free(&st);
	if (size && l.len > size)
		return -ERANGE;
	return (ssize_t)l.len;
}
