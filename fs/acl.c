/*
 * acl.c - POSIX access control lists: their two forms (user space's
 * xattr form and the compact form on disk), the access check of acl(5),
 * the mode they stand for, what chmod and a new inode do to them, and the
 * cached access ACL that mfs_permission consults.
 *
 * An ACL the mode says all of is not kept: setting one changes only the
 * mode, as Linux does.  A stored access ACL always has a mask or named
 * entries, so the mode's group bits are then its mask (or owning group).
 */
#include "mfs_i.h"
#include "balloc.h"
#include "icache.h"
#include "xattr.h"

#include <errno.h>
#include <inttypes.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/xattr.h>
#include <unistd.h>

#define XATTR_ACL_VERSION 2u         /* <linux/posix_acl_xattr.h> */
#define XATTR_ACL_ENTRY 8u
#define DISK_ACL_VERSION 1u          /* docs/FORMAT.md, "POSIX ACLs" */

static bool named(uint16_t tag)
{
	return tag == MFS_ACL_USER || tag == MFS_ACL_GROUP;
}

static struct mfs_acl *acl_alloc(uint32_t count)
{
	struct mfs_acl *acl = malloc(sizeof(*acl) + count * sizeof(acl->e[0]));

	if (acl)
		acl->count = count;
	return acl;
}

/* acl(5)'s rules: one owner, owning group and other entry, named entries
 * between them in increasing id, and a mask whenever there are named
 * entries. */
static bool acl_valid(const struct mfs_acl *acl)
{
	static const uint16_t order[] = { MFS_ACL_USER_OBJ, MFS_ACL_USER,
		MFS_ACL_GROUP_OBJ, MFS_ACL_GROUP, MFS_ACL_MASK, MFS_ACL_OTHER };
	unsigned seen[6] = { 0 }, pos = 0;
	bool has_named = false;

	for (uint32_t i = 0; i < acl->count; i++) {
		const struct mfs_acl_entry *e = &acl->e[i];
		unsigned k = pos;

		while (k < 6 && order[k] != e->tag)
			k++;
		if (k == 6 || e->perm & ~7u)
			return false;
		if (!named(e->tag) && seen[k])
			return false;
		if (named(e->tag) && seen[k] && e->id <= acl->e[i - 1].id)
			return false;
		has_named |= named(e->tag);
		seen[k]++;
		pos = k;
	}
	return seen[0] && seen[2] && seen[5] && (!has_named || seen[4]);
}

/* ---- forms ----------------------------------------------------------------- */

int mfs_acl_from_xattr(const void *value, size_t size, struct mfs_acl **out)
{
	const uint8_t *p = value;
	uint32_t le, count;
	struct mfs_acl *acl;

	*out = NULL;
	if (!value || size < 4)
		return -EINVAL;
	memcpy(&le, p, 4);
	if (le32toh(le) != XATTR_ACL_VERSION)
		return -EOPNOTSUPP;
	if ((size - 4) % XATTR_ACL_ENTRY)
		return -EINVAL;
	count = (uint32_t)((size - 4) / XATTR_ACL_ENTRY);
	if (!count)
		return 0;
	acl = acl_alloc(count);
	if (!acl)
		return -ENOMEM;
	for (uint32_t i = 0; i < count; i++) {
		const uint8_t *q = p + 4 + i * XATTR_ACL_ENTRY;
		uint16_t t16;

		memcpy(&t16, q, 2);
		acl->e[i].tag = le16toh(t16);
		memcpy(&t16, q + 2, 2);
		acl->e[i].perm = le16toh(t16);
		memcpy(&le, q + 4, 4);
		acl->e[i].id = named(acl->e[i].tag) ? le32toh(le) : 0;
	}
	if (!acl_valid(acl)) {
		free(acl);
		return -EINVAL;
	}
	*out = acl;
	return 0;
}

size_t mfs_acl_xattr_len(const struct mfs_acl *acl)
{
	return 4 + acl->count * XATTR_ACL_ENTRY;
}

void mfs_acl_to_xattr(const struct mfs_acl *acl, void *buf)
{
	uint8_t *p = buf;
	uint32_t le = htole32(XATTR_ACL_VERSION);

	memcpy(p, &le, 4);
	for (uint32_t i = 0; i < acl->count; i++) {
		uint8_t *q = p + 4 + i * XATTR_ACL_ENTRY;
		uint16_t t16 = htole16(acl->e[i].tag);

		memcpy(q, &t16, 2);
		t16 = htole16(acl->e[i].perm);
		memcpy(q + 2, &t16, 2);
		le = htole32(named(acl->e[i].tag) ? acl->e[i].id : UINT32_MAX);
		memcpy(q + 4, &le, 4);
	}
}

/* Entries of the disk form: 4 bytes, 8 with an id. */
static size_t disk_entry_len(uint16_t tag)
{
	return named(tag) ? 8 : 4;
}

static int disk_count(const uint8_t *p, size_t size, uint32_t *count)
{
	size_t off = 4;
	uint16_t t16;

	*count = 0;
	while (off + 4 <= size) {
		memcpy(&t16, p + off, 2);
		off += disk_entry_len(le16toh(t16));
		(*count)++;
	}
	return off == size ? 0 : -EUCLEAN;
}

int mfs_acl_from_disk(const void *value, size_t size, struct mfs_acl **out)
{
	const uint8_t *p = value;
	uint32_t le, count;
	struct mfs_acl *acl;
	size_t off = 4;

	*out = NULL;
	if (size < 4)
		return -EUCLEAN;
	memcpy(&le, p, 4);
	if (le32toh(le) != DISK_ACL_VERSION || disk_count(p, size, &count) || !count)
		return -EUCLEAN;
	acl = acl_alloc(count);
	if (!acl)
		return -ENOMEM;
	for (uint32_t i = 0; i < count; i++) {
		uint16_t t16;

		memcpy(&t16, p + off, 2);
		acl->e[i].tag = le16toh(t16);
		memcpy(&t16, p + off + 2, 2);
		acl->e[i].perm = le16toh(t16);
		acl->e[i].id = 0;
		if (named(acl->e[i].tag)) {
			memcpy(&le, p + off + 4, 4);
			acl->e[i].id = le32toh(le);
		}
		off += disk_entry_len(acl->e[i].tag);
	}
	if (!acl_valid(acl)) {
		free(acl);
		return -EUCLEAN;
	}
	*out = acl;
	return 0;
}

size_t mfs_acl_disk_len(const struct mfs_acl *acl)
{
	size_t len = 4;

	for (uint32_t i = 0; i < acl->count; i++)
		len += disk_entry_len(acl->e[i].tag);
	return len;
}

void mfs_acl_to_disk(const struct mfs_acl *acl, void *buf)
{
	uint8_t *p = buf;
	uint32_t le = htole32(DISK_ACL_VERSION);
	size_t off = 4;

	memcpy(p, &le, 4);
	for (uint32_t i = 0; i < acl->count; i++) {
		uint16_t t16 = htole16(acl->e[i].tag);

		memcpy(p + off, &t16, 2);
		t16 = htole16(acl->e[i].perm);
		memcpy(p + off + 2, &t16, 2);
		if (named(acl->e[i].tag)) {
			le = htole32(acl->e[i].id);
			memcpy(p + off + 4, &le, 4);
		}
		off += disk_entry_len(acl->e[i].tag);
	}
}

/* ---- what an ACL allows ------------------------------------------------------ */

static const struct mfs_acl_entry *find_tag(const struct mfs_acl *acl, uint16_t tag)
{
	for (uint32_t i = 0; i < acl->count; i++)
		if (acl->e[i].tag == tag)
			return &acl->e[i];
	return NULL;
}

/* An entry that matched grants what the mask lets through of it. */
static int masked(const struct mfs_acl *acl, const struct mfs_acl_entry *e,
		  unsigned want)
{
	const struct mfs_acl_entry *m = find_tag(acl, MFS_ACL_MASK);
	unsigned perm = e->perm & (m ? m->perm : 7u);

	return (perm & want) == want ? 0 : -EACCES;
}

int mfs_acl_permission(const struct mfs_acl *acl, const struct mfs_cred *cr,
		       uint32_t gid, int mask)
{
	unsigned want = (unsigned)mask & 7u;
	bool group_matched = false;
	const struct mfs_acl_entry *e;

	for (uint32_t i = 0; i < acl->count; i++) {
		e = &acl->e[i];
		if (e->tag == MFS_ACL_USER && e->id == cr->uid)
			return masked(acl, e, want);
	}
	/* Any group entry that matches and grants all of @want will do;
	 * matching only ones that do not means no access. */
	for (uint32_t i = 0; i < acl->count; i++) {
		e = &acl->e[i];
		if ((e->tag == MFS_ACL_GROUP_OBJ && mfs_in_group(cr, gid)) ||
		    (e->tag == MFS_ACL_GROUP && mfs_in_group(cr, e->id))) {
			group_matched = true;
			if ((e->perm & want) == want)
				return masked(acl, e, want);
		}
	}
	if (group_matched)
		return -EACCES;
	e = find_tag(acl, MFS_ACL_OTHER);
	return e && (e->perm & want) == want ? 0 : -EACCES;
}

int mfs_acl_equiv_mode(const struct mfs_acl *acl, uint16_t *mode)
{
	uint16_t m = *mode & ~0777u;
	int not_equiv = 0;

	for (uint32_t i = 0; i < acl->count; i++) {
		const struct mfs_acl_entry *e = &acl->e[i];

		switch (e->tag) {
		case MFS_ACL_USER_OBJ:
			m |= (uint16_t)(e->perm << 6);
			break;
		case MFS_ACL_GROUP_OBJ:
			if (!find_tag(acl, MFS_ACL_MASK))
				m |= (uint16_t)(e->perm << 3);
			break;
		case MFS_ACL_MASK:
			m |= (uint16_t)(e->perm << 3);
			not_equiv = 1;
			break;
		case MFS_ACL_OTHER:
			m |= e->perm;
			break;
		default:
			not_equiv = 1;
		}
	}
	*mode = m;
	return not_equiv;
}

/* The entry that carries the mode's group bits: the mask, or the owning
 * group when there is none. */
static struct mfs_acl_entry *group_bits_entry(struct mfs_acl *acl)
{
	struct mfs_acl_entry *e = (struct mfs_acl_entry *)find_tag(acl, MFS_ACL_MASK);

	return e ? e : (struct mfs_acl_entry *)find_tag(acl, MFS_ACL_GROUP_OBJ);
}

int mfs_acl_create_masq(struct mfs_acl *acl, uint16_t *mode)
{
	struct mfs_acl_entry *g = group_bits_entry(acl);
	uint16_t m = *mode;

	for (uint32_t i = 0; i < acl->count; i++) {
		struct mfs_acl_entry *e = &acl->e[i];

		if (e->tag == MFS_ACL_USER_OBJ)
			e->perm &= (m >> 6) & 7u;
		else if (e->tag == MFS_ACL_OTHER)
			e->perm &= m & 7u;
	}
	if (g)
		g->perm &= (m >> 3) & 7u;
	return mfs_acl_equiv_mode(acl, mode);
}

void mfs_acl_chmod(struct mfs_acl *acl, uint16_t mode)
{
	struct mfs_acl_entry *g = group_bits_entry(acl);

	for (uint32_t i = 0; i < acl->count; i++) {
		struct mfs_acl_entry *e = &acl->e[i];

		if (e->tag == MFS_ACL_USER_OBJ)
			e->perm = (mode >> 6) & 7u;
		else if (e->tag == MFS_ACL_OTHER)
			e->perm = mode & 7u;
	}
	if (g)
		g->perm = (mode >> 3) & 7u;
}

/* ---- the access ACL of an inode ---------------------------------------------- */

static const struct mfs_xname acl_access_name = { MFS_XATTR_INDEX_ACL_ACCESS, "", 0 };
static const struct mfs_xname acl_default_name = { MFS_XATTR_INDEX_ACL_DEFAULT, "", 0 };

/* The ACL stored under @nm (*@out NULL: none). */
static int acl_read(struct mfs_node *n, const struct mfs_xname *nm,
		    struct mfs_acl **out)
{
	uint8_t *buf = malloc(n->fs->bs);
	ssize_t len;
	int err = 0;

	*out = NULL;
	if (!buf)
		return -ENOMEM;
	len = mfs_xattr_get(n, nm, buf, n->fs->bs);
	if (len >= 0)
		err = mfs_acl_from_disk(buf, (size_t)len, out);
	else if (len != -ENODATA)
		err = (int)len;
	free(buf);
	if (err == -EUCLEAN)
		return mfs_error(n->fs, "inode %" PRIu64 ": its %s ACL is damaged",
				 n->ino, nm->index == MFS_XATTR_INDEX_ACL_ACCESS ?
				 "access" : "default");
	return err;
}

void mfs_acl_forget_locked(struct mfs_node *n)
{
	n->xattr_seq++;
	n->acl_cached = false;
	free(n->acl);
	n->acl = NULL;
}

/* node->lock held: the decision on what is cached. */
static int check_cached(struct mfs_node *n, const struct mfs_acl *acl,
			const struct mfs_cred *cr, int mask)
{
	if (!acl)
		return -EAGAIN;
	return mfs_acl_permission(acl, cr, le32toh(n->raw.i_gid), mask);
}

/*
 * The caller may hold no lock of @n, so a change of its xattrs may run
 * alongside: a read from the disk counts only if no change was under way
 * when it began and none began or ended before it was done (xattr_seq);
 * else it is read again.  Changes are short and hold the rwsem, so this
 * ends as soon as one is not running.
 */
int mfs_acl_check(struct mfs_node *n, const struct mfs_cred *cr, int mask)
{
	struct mfs_acl *mine;
	uint32_t seq;
	int err;

	for (;;) {
		pthread_mutex_lock(&n->lock);
		if (n->acl_cached) {
			err = check_cached(n, n->acl, cr, mask);
			pthread_mutex_unlock(&n->lock);
			return err;
		}
		seq = n->xattr_seq;
		err = n->xattr_changing ? -EAGAIN : 0;
		pthread_mutex_unlock(&n->lock);
		if (err) {
			sched_yield();
			continue;
		}
		err = acl_read(n, &acl_access_name, &mine);
		if (err)
			return err;
		pthread_mutex_lock(&n->lock);
		if (n->xattr_seq == seq)
			break;
		pthread_mutex_unlock(&n->lock);
		free(mine);
	}
	if (!n->acl_cached) {
		n->acl = mine;
		n->acl_cached = true;
		mine = NULL;
	}
	err = check_cached(n, n->acl, cr, mask);
	pthread_mutex_unlock(&n->lock);
	free(mine);
	return err;
}

ssize_t mfs_acl_get(struct mfs_node *n, int index, void *buf, size_t size)
{
	struct mfs_acl *acl;
	size_t len;
	int err = acl_read(n, index == MFS_XATTR_INDEX_ACL_ACCESS ? &acl_access_name :
			   &acl_default_name, &acl);

	if (err)
		return err;
	if (!acl)
		return -ENODATA;
	len = mfs_acl_xattr_len(acl);
	if (size && size < len) {
		free(acl);
		return -ERANGE;
	}
	if (size)
		mfs_acl_to_xattr(acl, buf);
	free(acl);
	return (ssize_t)len;
}

/* Store @acl (NULL: remove it) under @nm in @h. */
static int acl_store(struct mfs_node *n, struct mfs_handle *h,
		     const struct mfs_xname *nm, const struct mfs_acl *acl, int flags)
{
	uint8_t *disk = NULL;
	size_t len = 0;
	int err;

	if (acl) {
		len = mfs_acl_disk_len(acl);
		disk = malloc(len);
		if (!disk)
			return -ENOMEM;
		mfs_acl_to_disk(acl, disk);
	}
	err = mfs_xattr_set(n, h, nm, disk, len, flags);
	free(disk);
	return err == -ENODATA && !acl ? 0 : err;
}

/* What setting @acl as the access ACL makes of the mode (Linux's
 * posix_acl_update_mode); *@acl becomes NULL when the mode says it all. */
static uint16_t update_mode(struct mfs_node *n, const struct mfs_cred *cr,
			    struct mfs_acl **acl)
{
	uint16_t mode = node_mode(n);

	if (!*acl)
		return mode;
	if (!mfs_acl_equiv_mode(*acl, &mode)) {
		free(*acl);
		*acl = NULL;
	}
	if (cr && cr->uid && !mfs_in_group(cr, le32toh(n->raw.i_gid)))
		mode &= (uint16_t)~S_ISGID;
	return mode;
}

/* Without a reserved block the value must fit in the inode. */
static int acl_set_in(struct mfs_node *n, int index, struct mfs_acl *acl,
		      uint16_t mode, struct mfs_resv *resv)
{
	struct mfs_fs *fs = n->fs;
	int flags = resv->blocks ? 0 : MFS_XATTR_NO_BLOCK;
	struct mfs_handle h;
	int err = mfs_jstart_resv(fs, MFS_XATTR_CREDITS, resv, &h);

	if (err)
		return err;
	err = acl_store(n, &h, index == MFS_XATTR_INDEX_ACL_ACCESS ? &acl_access_name :
			&acl_default_name, acl, flags);
	if (!err && mode != node_mode(n)) {
		pthread_mutex_lock(&n->lock);
		n->raw.i_mode = htole16(mode);
		mfs_node_touch(n, false, true);
		pthread_mutex_unlock(&n->lock);
		err = mfs_inode_write(n, &h, true);
	}
	return mfs_jstop(fs, &h, err);
}

int mfs_acl_set(struct mfs_node *n, const struct mfs_cred *cr, int index,
		const void *value, size_t size)
{
	uint16_t mode = node_mode(n), newmode;
	struct mfs_acl *acl = NULL;
	struct mfs_resv resv = { 0 };
	int err;

	if (S_ISLNK(mode))
		return -EOPNOTSUPP;
	/* The value is parsed first, as the system call does before it
	 * looks at the inode. */
	if (value) {
		err = mfs_acl_from_xattr(value, size, &acl);
		if (err)
			return err;
	}
	if (cr && cr->uid && cr->uid != le32toh(n->raw.i_uid)) {
		free(acl);
		return -EPERM;
	}
	if (index == MFS_XATTR_INDEX_ACL_DEFAULT && !S_ISDIR(mode)) {
		err = acl ? -EACCES : 0;
		free(acl);
		return err;
	}
	newmode = index == MFS_XATTR_INDEX_ACL_ACCESS ? update_mode(n, cr, &acl) : mode;
	if (acl && mfs_xattr_needs_block(n)) {
		err = mfs_reserve_blocks(n->fs, cr, 1, &resv);
		if (err && err != -ENOSPC) {
			free(acl);
			return err;
		}
	}
	err = acl_set_in(n, index, acl, newmode, &resv);
	mfs_reserve_end(n->fs, &resv);
	free(acl);
	if (!err && newmode != mode && n->fs->attr_changed_fn)
		n->fs->attr_changed_fn(n->fs->attr_changed_arg, n->ino);
	return err;
}

int mfs_acl_chmod_node(struct mfs_node *n, struct mfs_handle *h)
{
	struct mfs_acl *acl;
	int err;

	if (S_ISLNK(node_mode(n)))
		return 0;
	err = acl_read(n, &acl_access_name, &acl);
	if (err || !acl)
		return err;
	mfs_acl_chmod(acl, node_mode(n));
	err = acl_store(n, h, &acl_access_name, acl, 0);
	free(acl);
	return err;
}

/* ---- inheritance --------------------------------------------------------------- */

static struct mfs_acl *acl_clone(const struct mfs_acl *acl)
{
	struct mfs_acl *c = acl_alloc(acl->count);

	if (c)
		memcpy(c->e, acl->e, acl->count * sizeof(acl->e[0]));
	return c;
}

int mfs_acl_inherit_prepare(struct mfs_node *dir, uint16_t mode,
			    struct mfs_acl_inherit *inh)
{
	int err;

	memset(inh, 0, sizeof(*inh));
	inh->mode = mode;
	if (S_ISLNK(mode))
		return 0;
	err = acl_read(dir, &acl_default_name, &inh->dflt);
	if (err || !inh->dflt)
		return err;
	inh->access = acl_clone(inh->dflt);
	if (!inh->access) {
		mfs_acl_inherit_free(inh);
		return -ENOMEM;
	}
	if (!mfs_acl_create_masq(inh->access, &inh->mode)) {
		free(inh->access);
		inh->access = NULL;
	}
	return 0;
}

int mfs_acl_inherit_apply(struct mfs_node *n, struct mfs_handle *h,
			  const struct mfs_acl_inherit *inh)
{
	int err = 0;

	if (inh->access)
		err = acl_store(n, h, &acl_access_name, inh->access, 0);
	if (!err && inh->dflt && S_ISDIR(node_mode(n)))
		err = acl_store(n, h, &acl_default_name, inh->dflt, 0);
	return err;
}

void mfs_acl_inherit_free(struct mfs_acl_inherit *inh)
{
	free(inh->dflt);
	free(inh->access);
	inh->dflt = inh->access = NULL;
}
