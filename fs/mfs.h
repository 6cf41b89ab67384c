/*
 * mfs.h - the mounted filesystem's public header: the calls the daemon,
 * the crash tester and the benchmarks make of a mounted image.  The
 * format itself (structures, checks, mkfs, raw reads) is the format
 * library's (fmt.h).
 */
#ifndef MISCFS_MFS_H
#define MISCFS_MFS_H

#include <endian.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/types.h>
#include <time.h>

#include "bdev.h"
#include "fmt.h"

/* ---- the mounted filesystem ---------------------------------------------- */

/*
 * The filesystem itself, as the daemon, the crash tester, fsck's checks of
 * a live image and the benchmarks drive it.  It knows no FUSE: one thin
 * adapter (daemon/) turns requests into these calls.  Every call returns 0
 * (or a count) or a negative errno, with the values Linux gives for the
 * same system call.  Inode numbers are the filesystem's (the root is
 * MFS_ROOT_INO); calls are safe from many threads at once.
 *
 * Lookup counts: every call that hands out an inode (mfs_lookup,
 * mfs_create, mfs_mknod, mfs_mkdir, mfs_symlink, mfs_link, and
 * mfs_readdir with @plus for each entry it reports other than "." and
 * "..") adds one to that inode's lookup count; mfs_forget takes them off.
 * An inode stays in memory while counted or open; an unlinked one keeps
 * its blocks (on the orphan list) until both are gone.
 */
struct mfs_fs;

enum mfs_data_mode {
	MFS_DATA_DEFAULT = 0,        /* what mkfs stored in the superblock
	                                (s_default_mount_opts): ordered unless
	                                said otherwise */
	MFS_DATA_ORDERED,            /* data home before the commit */
	MFS_DATA_WRITEBACK,          /* metadata journalled, data unordered */
	MFS_DATA_JOURNAL,            /* data through the journal */
};

enum mfs_atime_mode {
	MFS_ATIME_RELATIME = 0,      /* default */
	MFS_ATIME_STRICT,
	MFS_ATIME_NONE,
};

struct mfs_mount_opts {
	uint64_t cache_bytes;        /* page cache budget; 0: the default */
	enum mfs_data_mode data;
	unsigned int commit_s;       /* seconds between commits; 0: 5 */
	enum mfs_atime_mode atime;
	bool nodiratime;             /* directories' atime never moves */
	bool read_only;
	/* After damage is found: MFS_ERRORS_CONTINUE or MFS_ERRORS_RO;
	 * 0: what the superblock's s_errors says. */
	uint16_t errors;
	bool force;                  /* mount even when marked with errors */
	bool no_flusher;             /* tests: write back only when asked */
	/* Memory for the indexes of big directories; 0: a quarter of the
	 * cache budget, at least 8 MiB.  Below one index's size, none is
	 * built and big directories are walked. */
	uint64_t dirhash_bytes;
};

/* Who asks, as the kernel reports the caller. */
struct mfs_cred {
	uint32_t uid, gid;
	uint32_t umask;              /* applied to modes of new inodes */
	unsigned int ngroups;
	const uint32_t *groups;      /* supplementary groups */
};

/*
 * Mount the filesystem on @bd: check the superblock, replay the journal,
 * process the orphan list, start the journal and the page cache.  @bd
 * stays the caller's and must outlive the mount.  A refusal is logged in
 * one line naming the problem: -EUCLEAN damage, -EOPNOTSUPP an unknown
 * incompat feature, -EROFS a filesystem marked with errors without @force
 * (or a journal to replay that may not be written).  An unknown ro_compat
 * feature mounts read-only, with a line saying so.
 */
int mfs_mount(struct bdev *bd, const struct mfs_mount_opts *opts,
	      struct mfs_fs **out);
/* Write everything back, commit, checkpoint, mark clean, free @fs. */
int mfs_unmount(struct mfs_fs *fs);
/* syncfs: every dirty page home, every transaction committed. */
int mfs_sync(struct mfs_fs *fs);
int mfs_statfs(struct mfs_fs *fs, struct statvfs *out);

/* ---- names and attributes ---- */

/* @st and @gen (the inode's generation) may be NULL where not wanted. */
int mfs_lookup(struct mfs_fs *fs, const struct mfs_cred *cr, uint64_t dir,
	       const char *name, struct stat *st, uint64_t *gen);
void mfs_forget(struct mfs_fs *fs, uint64_t ino, uint64_t nlookup);
int mfs_getattr(struct mfs_fs *fs, uint64_t ino, struct stat *st);
/* permission check of access(2); @mask of R_OK, W_OK, X_OK or F_OK */
int mfs_access(struct mfs_fs *fs, const struct mfs_cred *cr, uint64_t ino,
	       int mask);

#define MFS_SET_MODE        0x001u
#define MFS_SET_UID         0x002u
#define MFS_SET_GID         0x004u
#define MFS_SET_SIZE        0x008u
#define MFS_SET_ATIME       0x010u
#define MFS_SET_MTIME       0x020u
#define MFS_SET_ATIME_NOW   0x040u
#define MFS_SET_MTIME_NOW   0x080u
#define MFS_SET_CTIME       0x100u
#define MFS_SET_BY_FILE     0x200u   /* through an open file (ftruncate...) */
/* The atime and mtime given are the caller's clock at the change, not
 * times it chose (a cache in front that keeps times itself): checked as
 * the _NOW forms are, set as given. */
#define MFS_SET_TIMES_NOW_GIVEN 0x400u

struct mfs_setattr {
	unsigned int valid;          /* MFS_SET_* */
	mode_t mode;
	uint32_t uid, gid;
	uint64_t size;
	struct timespec atime, mtime, ctime;
};

int mfs_setattr(struct mfs_fs *fs, const struct mfs_cred *cr, uint64_t ino,
		const struct mfs_setattr *sa, struct stat *st);

/* mknod(2) for regular files, fifos, sockets and devices. */
int mfs_mknod(struct mfs_fs *fs, const struct mfs_cred *cr, uint64_t dir,
	      const char *name, mode_t mode, dev_t rdev, struct stat *st,
	      uint64_t *gen);
int mfs_mkdir(struct mfs_fs *fs, const struct mfs_cred *cr, uint64_t dir,
	      const char *name, mode_t mode, struct stat *st, uint64_t *gen);
int mfs_symlink(struct mfs_fs *fs, const struct mfs_cred *cr, uint64_t dir,
		const char *name, const char *target, struct stat *st,
		uint64_t *gen);
int mfs_link(struct mfs_fs *fs, const struct mfs_cred *cr, uint64_t ino,
	     uint64_t newdir, const char *newname, struct stat *st, uint64_t *gen);
int mfs_unlink(struct mfs_fs *fs, const struct mfs_cred *cr, uint64_t dir,
	       const char *name);
int mfs_rmdir(struct mfs_fs *fs, const struct mfs_cred *cr, uint64_t dir,
	      const char *name);
/* @flags: 0, RENAME_NOREPLACE or RENAME_EXCHANGE. */
int mfs_rename(struct mfs_fs *fs, const struct mfs_cred *cr, uint64_t dir,
	       const char *name, uint64_t newdir, const char *newname,
	       unsigned int flags);
/* The target into @buf (not terminated); returns its length. */
ssize_t mfs_readlink(struct mfs_fs *fs, uint64_t ino, char *buf, size_t size);

/* ---- extended attributes ---- */

/*
 * The name spaces user., trusted. (root's: others neither see nor change
 * them), security. (root changes them), and the POSIX ACLs
 * system.posix_acl_access and system.posix_acl_default in the xattr form
 * of <linux/posix_acl_xattr.h>; other names are -EOPNOTSUPP.  A value
 * goes into the inode when it fits, else into the inode's one xattr
 * block: -ENOSPC when neither can hold it, -E2BIG above 64 KiB.  The
 * inodes that live in memory only (the control files, the regions) have
 * none and take none (-EPERM).
 */
/* setxattr(2); @flags 0, XATTR_CREATE or XATTR_REPLACE. */
int mfs_setxattr(struct mfs_fs *fs, const struct mfs_cred *cr, uint64_t ino,
		 const char *name, const void *value, size_t size, int flags);
/* getxattr(2) into @buf; @size 0 asks only for the length. */
ssize_t mfs_getxattr(struct mfs_fs *fs, const struct mfs_cred *cr, uint64_t ino,
		     const char *name, void *buf, size_t size);
/* listxattr(2): NUL-terminated names the caller may see. */
ssize_t mfs_listxattr(struct mfs_fs *fs, const struct mfs_cred *cr, uint64_t ino,
		      char *buf, size_t size);
int mfs_removexattr(struct mfs_fs *fs, const struct mfs_cred *cr, uint64_t ino,
		    const char *name);

/* ---- open files ---- */

struct mfs_file;

/* open(2) of an existing inode with @flags (O_ACCMODE, O_TRUNC, O_APPEND,
 * O_DIRECT ...), and MFS_O_EXEC for the read-only open that executes the
 * file (it needs execute permission rather than read permission). */
#define MFS_O_EXEC 040           /* not an open(2) flag; Linux's __FMODE_EXEC */
int mfs_open(struct mfs_fs *fs, const struct mfs_cred *cr, uint64_t ino,
	     int flags, struct mfs_file **out);
/* open(2) with O_CREAT: creates @name unless it exists (EEXIST with
 * O_EXCL), and opens it. */
int mfs_create(struct mfs_fs *fs, const struct mfs_cred *cr, uint64_t dir,
	       const char *name, mode_t mode, int flags, struct stat *st,
	       uint64_t *gen, struct mfs_file **out);
/* Short only at end of file. */
ssize_t mfs_read(struct mfs_fs *fs, struct mfs_file *f, void *buf, size_t size,
		 uint64_t off);
/*
 * All or an error.  A file opened O_APPEND writes at its end whatever @off,
 * as write(2) does, unless @flags has MFS_WRITE_AT: dirty pages of a shared
 * mapping go back through any writable open file of the inode, and they
 * belong at their own offset whether that file appends or not (so does a
 * write after fcntl(F_SETFL) took O_APPEND off).
 */
#define MFS_WRITE_AT 0x1u
ssize_t mfs_write(struct mfs_fs *fs, const struct mfs_cred *cr,
		  struct mfs_file *f, const void *buf, size_t size, uint64_t off,
		  unsigned int flags);
/* lseek(2) with SEEK_DATA or SEEK_HOLE (the other kinds need no
 * filesystem): -ENXIO at or past the end, or no data after @off. */
int mfs_lseek(struct mfs_fs *fs, struct mfs_file *f, uint64_t off, int whence,
	      uint64_t *out);
/*
 * @fn is called with an inode whose attributes a request changed beyond
 * what its reply tells: a write or an open with O_TRUNC by an
 * unprivileged caller drops set-id bits.  A caller that caches
 * attributes (the kernel) refreshes them there.  Set it before requests are served; NULL removes it.
 */
typedef void (*mfs_attr_changed_fn)(void *arg, uint64_t ino);
void mfs_set_attr_changed(struct mfs_fs *fs, mfs_attr_changed_fn fn, void *arg);
/*
 * fallocate(2) on an open file: @mode 0 (preallocate, the size grows),
 * FALLOC_FL_KEEP_SIZE (preallocate past the end too, the size stays),
 * FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, FALLOC_FL_ZERO_RANGE with or
 * without FALLOC_FL_KEEP_SIZE; any other mode is -EOPNOTSUPP.
 * Preallocated blocks read as zeros; those past the end stay until a
 * truncation to a size at or below the current one.
 */
int mfs_fallocate(struct mfs_fs *fs, const struct mfs_cred *cr,
		  struct mfs_file *f, int mode, uint64_t off, uint64_t len);
/* copy_file_range(2) between two open files of the filesystem (@flags
 * must be 0); returns the bytes copied, short only at the source's end.
 * A hole of the source over a hole of the destination stays a hole. */
ssize_t mfs_copy_file_range(struct mfs_fs *fs, const struct mfs_cred *cr,
			    struct mfs_file *in, uint64_t off_in,
			    struct mfs_file *out, uint64_t off_out, size_t len,
			    unsigned int flags);
/*
 * FS_IOC_GETFLAGS / FS_IOC_SETFLAGS (chattr, lsattr): the inode flags
 * MFS_*_FL (Linux's FS_*_FL values).  Setting any other flag is
 * -EOPNOTSUPP; changing MFS_IMMUTABLE_FL or MFS_APPEND_FL needs root
 * (CAP_LINUX_IMMUTABLE), the others the owner or root.
 */
int mfs_get_flags(struct mfs_fs *fs, uint64_t ino, uint32_t *flags);
int mfs_set_flags(struct mfs_fs *fs, const struct mfs_cred *cr, uint64_t ino,
		  uint32_t flags);
/* fsync(2) / fdatasync(2) of an inode (files and directories). */
int mfs_fsync(struct mfs_fs *fs, uint64_t ino, bool datasync);
int mfs_release(struct mfs_fs *fs, struct mfs_file *f);

/* ---- directories ---- */

struct mfs_dir;

int mfs_opendir(struct mfs_fs *fs, const struct mfs_cred *cr, uint64_t ino,
		struct mfs_dir **out);
/*
 * Report the entries from position @off (0: the start; else a @next of an
 * entry reported before) to @fill until it returns non-zero (that entry
 * is then not reported).  Positions stay valid while entries come and go:
 * each entry present throughout is reported once.  With @plus, @st and
 * @gen (the inode's generation) are what mfs_lookup would give, and each
 * reported entry but "." and ".." counts as a lookup; otherwise @st is
 * NULL and @gen 0.
 */
typedef int (*mfs_filldir_t)(void *ctx, const char *name, size_t namelen,
			     uint64_t ino, unsigned int type, uint64_t next,
			     const struct stat *st, uint64_t gen);
int mfs_readdir(struct mfs_fs *fs, struct mfs_dir *d, uint64_t off, bool plus,
		mfs_filldir_t fill, void *ctx);
int mfs_releasedir(struct mfs_fs *fs, struct mfs_dir *d);

/*
 * Reads of @f must bypass any cache of the caller (FUSE's direct_io): the
 * statistics' text is made at open and its size is not known before.
 * Region files may be cached (and mapped shared) by the caller: their
 * bytes change only through the caller's own writes.
 */
bool mfs_file_direct(const struct mfs_file *f);

/*
 * What the caller cached of @f's bytes at earlier opens may serve this
 * one (FUSE's keep_cache): true for a file of the disk, whose bytes change
 * only through the caller's own writes, truncates, hole punches and
 * copies (each of which updates or drops the caller's pages), when a read
 * now would not move its atime (noatime, chattr +A, or relatime with an
 * atime newer than the last change and less than a day old).  A read the
 * caller answers from its pages never reaches the filesystem, so an open
 * that would owe an atime update must read through.  Region files and the
 * statistics are never kept: their bytes also change without the caller.
 */
bool mfs_file_keep_cache(struct mfs_file *f);

/* ---- statistics ---- */

/*
 * The mounted filesystem shows its statistics in a read-only file
 * "/.miscfs/stats", made when it is opened.  The directory ".miscfs" is
 * found by lookup in the root and not listed by readdir; both inodes are
 * of the format's reserved range and exist only in memory (FORMAT.md).
 */
#define MFS_CTL_DIR_INO         9u
#define MFS_STATS_INO           10u
#define MFS_CTL_DIR_NAME        ".miscfs"

/*
 * The reserved regions show as files "/.regions/NAME" whose bytes are the
 * region's (FORMAT.md, "Reserved regions"): read, written and mapped
 * shared straight into the device, never through the page cache or the
 * journal.  Their inode numbers lie above the 32-bit numbers of the
 * disk: the directory's is MFS_REGIONS_DIR_INO, the file of entry @i of
 * the region table MFS_REGION_INO(i).  A file is as large as the region
 * was asked for (re_bytes); a write from its end on is -ENOSPC and one
 * across it is short.  Names cannot be created, removed, renamed or
 * linked there and a region file cannot be truncated (-EPERM); its
 * owner may change its permission bits, root its owner, for the mount.
 */
#define MFS_REGIONS_DIR_INO     (1ull << 32)
#define MFS_REGION_INO(i)       (MFS_REGIONS_DIR_INO + 1 + (uint64_t)(i))
#define MFS_REGIONS_DIR_NAME    ".regions"

/* "key: value" lines of the caches', directories' and journal's counters
 * into @buf, then those of the source set below; returns the length it
 * needs (as snprintf). */
size_t mfs_stats_format(struct mfs_fs *fs, char *buf, size_t size);
/* More "key: value" lines for the statistics (the daemon's requests):
 * formats into @buf as snprintf does and returns the length it needs.
 * NULL removes it. */
typedef size_t (*mfs_stats_fn)(void *arg, char *buf, size_t size);
void mfs_stats_set_source(struct mfs_fs *fs, mfs_stats_fn fn, void *arg);

#endif /* MISCFS_MFS_H */
