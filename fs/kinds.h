/*
 * kinds.h - the operations that the kinds' tables (kinds.c) name, by the
 * files that carry them out.  Only kinds.c and those files include it:
 * everything else reaches them through a node's table (vfs.h).
 */
#ifndef MISCFS_FS_KINDS_H
#define MISCFS_FS_KINDS_H

#include "vfs.h"

/* ---- on the disk: namei.c, rename.c, file.c ------------------------------- */

int mfs_dir_lookup(struct mfs_node *dir, const struct mfs_cred *cr,
		   const char *name, size_t len, struct mfs_node **out);
int mfs_dir_create(struct mfs_node *dir, const struct mfs_cred *cr,
		   const char *name, size_t len, const struct newinode *ni,
		   struct mfs_node **out);
int mfs_dir_link(struct mfs_node *dir, const struct mfs_cred *cr,
		 const char *name, size_t len, struct mfs_node *n);
int mfs_dir_unlink(struct mfs_node *dir, struct mfs_node *victim,
		   const struct mfs_dirloc *loc, const struct mfs_cred *cr,
		   bool rmdir);
int mfs_dir_rename(struct mfs_rename *r);
int mfs_dir_readdir(struct mfs_node *dir, uint64_t off, bool plus,
		    mfs_filldir_t fill, void *ctx);
ssize_t mfs_symlink_read(struct mfs_node *n, char *buf, size_t size);

/* attr.c, flags.c, file.c */
int mfs_disk_setattr(struct mfs_node *n, const struct mfs_cred *cr,
		     const struct mfs_setattr *sa);
int mfs_disk_set_flags(struct mfs_node *n, const struct mfs_cred *cr,
		       uint32_t flags);
int mfs_disk_open(struct mfs_node *n, const struct mfs_cred *cr, int flags,
		  struct mfs_file *f);

/* xattr.c */
ssize_t mfs_disk_getxattr(struct mfs_node *n, const struct mfs_cred *cr,
			  const struct mfs_xname *nm, void *buf, size_t size);
int mfs_disk_setxattr(struct mfs_node *n, const struct mfs_cred *cr,
		      const struct mfs_xname *nm, const void *value, size_t size,
		      int flags);
ssize_t mfs_disk_listxattr(struct mfs_node *n, const struct mfs_cred *cr,
			   char *buf, size_t size);

/* file.c, falloc.c */
ssize_t mfs_disk_read(struct mfs_file *f, void *buf, size_t size, uint64_t off);
ssize_t mfs_disk_write(struct mfs_file *f, const struct mfs_cred *cr,
		       const void *buf, size_t size, uint64_t off,
		       unsigned int flags);
int mfs_disk_lseek(struct mfs_file *f, uint64_t off, int whence, uint64_t *out);
int mfs_disk_fallocate(struct mfs_file *f, const struct mfs_cred *cr, int mode,
		       uint64_t off, uint64_t len);
ssize_t mfs_disk_copy_range(const struct mfs_cred *cr, struct mfs_file *in,
			    uint64_t off_in, struct mfs_file *out,
			    uint64_t off_out, size_t len);
void mfs_disk_release(struct mfs_file *f);
bool mfs_disk_keep_cache(struct mfs_file *f);

/* ---- in memory: mem.c, mem_stats.c, mem_regions.c ------------------------- */

/* The root's kind: the disk directory, and the two directories of
 * memory found by lookup in it. */
int mfs_root_refuse(struct mfs_node *dir, const char *name, bool create);
int mfs_root_lookup(struct mfs_node *dir, const struct mfs_cred *cr,
		    const char *name, size_t len, struct mfs_node **out);
int mfs_root_readdir(struct mfs_node *dir, uint64_t off, bool plus,
		     mfs_filldir_t fill, void *ctx);

/* What the kinds of memory share (mem.c). */
int mfs_mem_ro_permission(struct mfs_node *n, const struct mfs_cred *cr, int mask);
int mfs_mem_permission(struct mfs_node *n, const struct mfs_cred *cr, int mask);
int mfs_mem_dir_refuse(struct mfs_node *dir, const char *name, bool create);
int mfs_mem_parent(struct mfs_node *dir, struct mfs_node **out);
int mfs_mem_fill(struct mfs_node *n, const char *name, uint64_t next, bool plus,
		 mfs_filldir_t fill, void *ctx);
bool mfs_mem_fill_dots(struct mfs_node *dir, uint64_t off, mfs_filldir_t fill,
		       void *ctx);

/* mem_stats.c */
int mfs_ctl_lookup(struct mfs_node *dir, const struct mfs_cred *cr,
		   const char *name, size_t len, struct mfs_node **out);
int mfs_ctl_readdir(struct mfs_node *dir, uint64_t off, bool plus,
		    mfs_filldir_t fill, void *ctx);
int mfs_stats_open(struct mfs_node *n, const struct mfs_cred *cr, int flags,
		   struct mfs_file *f);
ssize_t mfs_stats_read(struct mfs_file *f, void *buf, size_t size, uint64_t off);
void mfs_stats_release(struct mfs_file *f);

/* mem_regions.c: the regions directory and its files */
int mfs_regions_lookup(struct mfs_node *dir, const struct mfs_cred *cr,
		       const char *name, size_t len, struct mfs_node **out);
int mfs_regions_readdir(struct mfs_node *dir, uint64_t off, bool plus,
			mfs_filldir_t fill, void *ctx);
int mfs_region_setattr(struct mfs_node *n, const struct mfs_cred *cr,
		       const struct mfs_setattr *sa);
int mfs_region_open(struct mfs_node *n, const struct mfs_cred *cr, int flags,
		    struct mfs_file *f);
int mfs_region_fsync(struct mfs_node *n, bool datasync);
ssize_t mfs_region_read(struct mfs_file *f, void *buf, size_t size, uint64_t off);
ssize_t mfs_region_write(struct mfs_file *f, const struct mfs_cred *cr,
			 const void *buf, size_t size, uint64_t off,
			 unsigned int flags);
int mfs_region_lseek(struct mfs_file *f, uint64_t off, int whence, uint64_t *out);

#endif /* MISCFS_FS_KINDS_H */
