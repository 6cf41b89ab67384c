/*
 * vfs.h - the entry layer and the kinds of inodes.
 *
 * Every public call of mfs.h that names an inode or an open file starts in
 * the entry layer (vfs.c, vfs_file.c, vfs_attr.c, vfs_lock.c): it checks
 * the name and the read-only state, gets the node (vfs_get: the one place
 * that tells an inode of memory from one of the disk), makes the checks
 * every kind shares, takes the locks of a change of names, and then calls
 * the operation of the node's kind.  A kind is a table of operations,
 * chosen once when the node is made (kinds.c lists every table, kinds.h
 * declares the operations they name):
 *
 *   on the disk   directory, the root directory, regular file, symbolic
 *                 link, device/fifo/socket
 *   in memory     the control directory and its statistics file
 *                 (mem_stats.c), the regions directory and its region
 *                 files (mem_regions.c)
 *
 * An operation a kind has no use for is NULL, and the entry layer gives
 * the errno its comment names.  Open files have a table of their own
 * (struct mfs_fops), set by the kind's open.
 */
#ifndef MISCFS_FS_VFS_H
#define MISCFS_FS_VFS_H

#include "mfs_i.h"
#include "dir.h"
#include "pc.h"

struct mfs_xname;
struct newinode;
struct mfs_rename;

struct mfs_iops {
	const char *kind;                /* for messages */
	/* Whether the calls of @cr may @mask (R_OK, W_OK, X_OK) it: 0 or
	 * -EACCES.  Every kind has one. */
	int (*permission)(struct mfs_node *n, const struct mfs_cred *cr, int mask);
	/* Directories: what a create (@create) or a removal or rename of
	 * @name in @dir gets from the kind before anything else: 0 to go
	 * on.  NULL: every name goes on. */
	int (*refuse)(struct mfs_node *dir, const char *name, bool create);
	/* The node @name (not ".") names in @dir, referenced; the caller
	 * checked X_OK on @dir.  NULL: -ENOTDIR. */
	int (*lookup)(struct mfs_node *dir, const struct mfs_cred *cr,
		      const char *name, size_t len, struct mfs_node **out);
	/* Names on the disk; NULL: -ENOTDIR. */
	int (*create)(struct mfs_node *dir, const struct mfs_cred *cr,
		      const char *name, size_t len, const struct newinode *ni,
		      struct mfs_node **out);
	/* Called with the inodes concerned locked by the entry layer
	 * (vfs_lock.c): @dir and @n; @dir and @victim, which @loc names;
	 * all of @r's. */
	int (*link)(struct mfs_node *dir, const struct mfs_cred *cr,
		    const char *name, size_t len, struct mfs_node *n);
	int (*unlink)(struct mfs_node *dir, struct mfs_node *victim,
		      const struct mfs_dirloc *loc, const struct mfs_cred *cr,
		      bool rmdir);
	int (*rename)(struct mfs_rename *r);
	/* May this inode get another name (link(2))?  Else -EPERM. */
	bool linkable;
	/* Entries from position @off (mfs_readdir); NULL: -ENOTDIR. */
	int (*readdir)(struct mfs_node *dir, uint64_t off, bool plus,
		       mfs_filldir_t fill, void *ctx);
	/* NULL: -EPERM. */
	int (*setattr)(struct mfs_node *n, const struct mfs_cred *cr,
		       const struct mfs_setattr *sa);
	int (*set_flags)(struct mfs_node *n, const struct mfs_cred *cr,
			 uint32_t flags);
	/* Sets f->fops and what the file keeps; NULL: -EISDIR. */
	int (*open)(struct mfs_node *n, const struct mfs_cred *cr, int flags,
		    struct mfs_file *f);
	/* NULL: nothing to write, 0. */
	int (*fsync)(struct mfs_node *n, bool datasync);
	/* NULL: -EINVAL. */
	ssize_t (*readlink)(struct mfs_node *n, char *buf, size_t size);
	/* Extended attributes; NULL: none, and none taken (get -ENODATA,
	 * set and remove -EPERM, list empty). */
	ssize_t (*getxattr)(struct mfs_node *n, const struct mfs_cred *cr,
			    const struct mfs_xname *nm, void *buf, size_t size);
	int (*setxattr)(struct mfs_node *n, const struct mfs_cred *cr,
			const struct mfs_xname *nm, const void *value,
			size_t size, int flags);
	ssize_t (*listxattr)(struct mfs_node *n, const struct mfs_cred *cr,
			     char *buf, size_t size);
};

/* An open file of any kind.  @n is referenced while it is open. */
struct mfs_file {
	struct mfs_node *n;
	const struct mfs_fops *fops;
	int flags;
	/* Files on the disk: their readahead. */
	pthread_mutex_t ra_lock;
	struct pc_ra_state ra;
	/* The statistics file: its text, made at open. */
	char *text;
	size_t text_len;
};

struct mfs_fops {
	/* Reads bypass any cache of the caller (mfs_file_direct). */
	bool direct;
	ssize_t (*read)(struct mfs_file *f, void *buf, size_t size, uint64_t off);
	/* NULL: -EBADF. */
	ssize_t (*write)(struct mfs_file *f, const struct mfs_cred *cr,
			 const void *buf, size_t size, uint64_t off,
			 unsigned int flags);
	/* SEEK_DATA or SEEK_HOLE; NULL: -EINVAL. */
	int (*lseek)(struct mfs_file *f, uint64_t off, int whence, uint64_t *out);
	/* After the checks of mfs_fallocate; NULL: -ENODEV. */
	int (*fallocate)(struct mfs_file *f, const struct mfs_cred *cr, int mode,
			 uint64_t off, uint64_t len);
	/* Between two files of this table, after the checks of
	 * mfs_copy_file_range; NULL: -EINVAL. */
	ssize_t (*copy_range)(const struct mfs_cred *cr, struct mfs_file *in,
			      uint64_t off_in, struct mfs_file *out,
			      uint64_t off_out, size_t len);
	/* What the file kept goes; NULL: nothing kept. */
	void (*release)(struct mfs_file *f);
	/* mfs_file_keep_cache; NULL: never. */
	bool (*keep_cache)(struct mfs_file *f);
};

/* ---- the entry layer (vfs.c) --------------------------------------------- */

/* The node of @ino, of the disk or of memory, referenced. */
int vfs_get(struct mfs_fs *fs, uint64_t ino, struct mfs_node **out);
/* R_OK, W_OK or both, as an open with @flags may read or write. */
int mfs_open_mask(int flags);
/* Create @name in @dirino; *@keep, unless NULL, gets the node referenced. */
int mfs_create_node(struct mfs_fs *fs, const struct mfs_cred *cr, uint64_t dirino,
		    const char *name, const struct newinode *ni, struct stat *st,
		    uint64_t *gen, struct mfs_node **keep);

/* ---- the kinds (kinds.c) ------------------------------------------------- */

extern const struct mfs_iops mfs_dir_iops, mfs_root_iops, mfs_file_iops,
	mfs_symlink_iops, mfs_special_iops;
extern const struct mfs_iops mfs_ctl_dir_iops, mfs_stats_iops,
	mfs_regions_dir_iops, mfs_region_iops;
extern const struct mfs_fops mfs_disk_fops, mfs_stats_fops, mfs_region_fops;

/* The kind of disk inode @ino as @raw says it is.  The operations the
 * tables name are declared in kinds.h. */
const struct mfs_iops *mfs_disk_kind(uint64_t ino, const struct mfs_inode *raw);

/* ---- what the entry layer and the kinds share ----------------------------- */

struct newinode {
	mode_t mode;
	dev_t rdev;
	const char *target;          /* symlinks */
	size_t tlen;
};

/* Inodes write-locked together, in increasing inode number. */
#define MFS_LOCKED_MAX 4
struct mfs_locked {
	struct mfs_node *n[MFS_LOCKED_MAX];
	unsigned nr;
};

/* rename(2): both directories referenced and refused nothing; the rest is
 * filled by mfs_lock_rename. */
struct mfs_rename {
	struct mfs_node *sdir, *ddir;
	const char *sname, *dname;
	size_t slen, dlen;
	unsigned int flags;
	const struct mfs_cred *cr;
	struct mfs_node *src, *dst;          /* referenced; dst NULL: none */
	struct mfs_dirloc sloc, dloc;        /* their entries */
	struct mfs_locked locked;
};

/* @n, a rename's inode (NULL: no target), is a directory. */
static inline bool mfs_is_dir(struct mfs_node *n)
{
	return n && S_ISDIR(node_mode(n));
}

/* vfs_lock.c: the locks of a change of names (lock order: mfs_i.h) */
/* Lock the distinct nodes of @a..@d that are not NULL. */
void mfs_lock_nodes(struct mfs_locked *l, struct mfs_node *a, struct mfs_node *b,
		    struct mfs_node *c, struct mfs_node *d);
void mfs_unlock_nodes(struct mfs_locked *l);
/* Find @name in @dir and lock @dir and the inode it names; on success
 * both are locked in @l, *@victim referenced, @loc its entry. */
int mfs_lock_entry(struct mfs_node *dir, const char *name, size_t len,
		   struct mfs_dirloc *loc, struct mfs_node **victim,
		   struct mfs_locked *l);
/* Both names found, their inodes referenced, all four inodes locked; a
 * rename between two directories holds the rename mutex too and has
 * checked that no directory moves below itself (-EINVAL). */
int mfs_lock_rename(struct mfs_rename *r);
void mfs_unlock_rename(struct mfs_rename *r);

/* @f, new, is open on its node (the open's checks made, or a create). */
void mfs_disk_opened(struct mfs_file *f);
/* fsync of @n: its pages home, its last transaction committed. */
int mfs_fsync_node(struct mfs_node *n, bool datasync);
/* fallocate(2) knows @mode. */
bool mfs_falloc_mode_ok(int mode);

/* The name of an xattr call split into its space and the rest; -EOPNOTSUPP
 * for a space miscfs does not know, -ERANGE for a name too long. */
int mfs_xattr_parse_name(const char *name, struct mfs_xname *nm);

/* ---- the inodes of memory (mem.c, mem_stats.c, mem_regions.c) ------------ */

/*
 * The inode of memory @ino, referenced: 0; -ENOENT for a number of theirs
 * that names nothing now (a region not shown); 1 when @ino is not one of
 * theirs.
 */
int mfs_mem_get(struct mfs_fs *fs, uint64_t ino, struct mfs_node **out);
/* At mount, once the regions are loaded; and at unmount. */
int mfs_mem_create(struct mfs_fs *fs);
void mfs_mem_destroy(struct mfs_fs *fs);

/* mem_regions.c: the table, loaded at mount */
int mfs_regions_load(struct mfs_fs *fs);
int mfs_regions_sync(struct mfs_fs *fs);       /* msync every region */
void mfs_regions_unmap(struct mfs_fs *fs);
bool mfs_regions_present(struct mfs_fs *fs);   /* any region shown */
/* Entry @i of the table is shown; its size, and the bytes mapped for it. */
bool mfs_region_shown(struct mfs_fs *fs, uint32_t i);
uint64_t mfs_region_bytes(struct mfs_fs *fs, uint32_t i);
uint64_t mfs_region_mapped(struct mfs_fs *fs, uint32_t i);

#endif /* MISCFS_FS_VFS_H */
