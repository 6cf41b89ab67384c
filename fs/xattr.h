/*
 * xattr.h - extended attributes and POSIX ACLs.
 */
#ifndef MISCFS_FS_XATTR_H
#define MISCFS_FS_XATTR_H

#include "mfs_i.h"

/* xattr.c: an inode's extended attributes, in its in-inode area and its
 * one block.  Readers hold the rwsem either way (or none, as the ACL
 * check does: the area is copied under node->lock, the block under its
 * page lock); changes hold it for writing. */
struct mfs_xname {
	int index;                   /* MFS_XATTR_INDEX_* */
	const char *name;            /* after the prefix */
	size_t len;
};
/* The largest value (Linux's XATTR_SIZE_MAX). */
#define MFS_XATTR_SIZE_MAX 65536u
/* Journal credits of one change: the inode, the block, and a bitmap and
 * descriptor each for a block freed and one allocated. */
#define MFS_XATTR_CREDITS 6u
/* The value into @buf (@size 0: its length only): its length, -ENODATA,
 * -ERANGE when @size is too small. */
ssize_t mfs_xattr_get(struct mfs_node *n, const struct mfs_xname *nm, void *buf,
		      size_t size);
/* Set (@value not NULL) or remove under @h, with XATTR_CREATE or
 * XATTR_REPLACE in @flags; a caller that may need a block reserves one
 * first (mfs_xattr_needs_block), or, when none can be had, passes
 * MFS_XATTR_NO_BLOCK: what does not fit in the inode is then -ENOSPC. */
#define MFS_XATTR_NO_BLOCK 0x100
int mfs_xattr_set(struct mfs_node *n, struct mfs_handle *h,
		  const struct mfs_xname *nm, const void *value, size_t size,
		  int flags);
bool mfs_xattr_needs_block(struct mfs_node *n);
/* Free the block of an inode being freed, under @h (2 credits). */
int mfs_xattr_drop_block(struct mfs_node *n, struct mfs_handle *h);

/* acl.c: POSIX ACLs.  Entries are kept sorted as acl(5) requires. */
#define MFS_ACL_USER_OBJ  0x01
#define MFS_ACL_USER      0x02
#define MFS_ACL_GROUP_OBJ 0x04
#define MFS_ACL_GROUP     0x08
#define MFS_ACL_MASK      0x10
#define MFS_ACL_OTHER     0x20
struct mfs_acl_entry {
	uint16_t tag, perm;
	uint32_t id;
};
struct mfs_acl {
	uint32_t count;
	struct mfs_acl_entry e[];
};
/* The xattr form of user space (<linux/posix_acl_xattr.h>) and the
 * compact form of the disk (docs/FORMAT.md): -EINVAL for a malformed or
 * invalid ACL from user space, -EUCLEAN for one on disk; an empty one
 * is *@out NULL.  The *_len calls give the bytes needed. */
int mfs_acl_from_xattr(const void *value, size_t size, struct mfs_acl **out);
size_t mfs_acl_xattr_len(const struct mfs_acl *acl);
void mfs_acl_to_xattr(const struct mfs_acl *acl, void *buf);
int mfs_acl_from_disk(const void *value, size_t size, struct mfs_acl **out);
size_t mfs_acl_disk_len(const struct mfs_acl *acl);
void mfs_acl_to_disk(const struct mfs_acl *acl, void *buf);
/* acl(5)'s access check algorithm for a caller that does not own the
 * file: 0 or -EACCES. */
int mfs_acl_permission(const struct mfs_acl *acl, const struct mfs_cred *cr,
		       uint32_t gid, int mask);
/* The permission bits @acl stands for into *@mode; 0 when the mode
 * says all of it (no need to keep the ACL), 1 otherwise. */
int mfs_acl_equiv_mode(const struct mfs_acl *acl, uint16_t *mode);
/* A new inode's ACL from its parent's default: entries and *@mode are
 * each cut to what the other allows.  Returns as mfs_acl_equiv_mode. */
int mfs_acl_create_masq(struct mfs_acl *acl, uint16_t *mode);
/* chmod: the owner, mask (or owning group) and other entries take the
 * new mode's bits. */
void mfs_acl_chmod(struct mfs_acl *acl, uint16_t mode);
/* 0, -EACCES, or -EAGAIN when @n has no access ACL (the mode decides). */
int mfs_acl_check(struct mfs_node *n, const struct mfs_cred *cr, int mask);
/* The cached ACL of @n is stale (node->lock held). */
void mfs_acl_forget_locked(struct mfs_node *n);
/* An ACL of @n through setxattr/removexattr (@value NULL): checks,
 * mode update, storage.  rwsem held for writing. */
int mfs_acl_set(struct mfs_node *n, const struct mfs_cred *cr, int index,
		const void *value, size_t size);
ssize_t mfs_acl_get(struct mfs_node *n, int index, void *buf, size_t size);
/* Under @h: after a mode change, the access ACL follows it. */
int mfs_acl_chmod_node(struct mfs_node *n, struct mfs_handle *h);
/* What a new inode gets from its parent's default ACL. */
struct mfs_acl_inherit {
	struct mfs_acl *dflt;        /* the parent's default; NULL: none */
	struct mfs_acl *access;      /* the child's access ACL, if any */
	uint16_t mode;               /* the child's mode, ACL applied */
};
/* @dir's rwsem held; on success the caller ends with mfs_acl_inherit_free. */
int mfs_acl_inherit_prepare(struct mfs_node *dir, uint16_t mode,
			    struct mfs_acl_inherit *inh);
int mfs_acl_inherit_apply(struct mfs_node *n, struct mfs_handle *h,
			  const struct mfs_acl_inherit *inh);
void mfs_acl_inherit_free(struct mfs_acl_inherit *inh);

#endif /* MISCFS_FS_XATTR_H */
