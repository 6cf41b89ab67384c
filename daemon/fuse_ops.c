/*
 * fuse_ops.c - FUSE low-level requests to mfs_* calls, and nothing else:
 * inode numbers (FUSE's root is 1, the filesystem's MFS_ROOT_INO), the
 * caller's credentials, and each reply.  Every request ends in exactly one
 * fuse_reply_*; errors are negative errno from the core, turned positive
 * here only.  Each request's count and time in here (the call, the core's
 * work and the reply) go into the filesystem's statistics file.
 */
#include "fuse_ops.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/fs.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/xattr.h>

#include "util.h"

#define MAX_GROUPS 64

/*
 * The daemon is the image's only writer (it holds the image's lock), and
 * every change reaches the core through this mount: a change the kernel
 * makes itself it also updates or drops in its own caches, and a change
 * the core makes on its own (set-id bits a write drops, a mode an ACL
 * sets, chattr's ctime) is told to the kernel (mfs_fuse_attr_changed).  So
 * names, attributes and missing names stay valid until then, and the
 * timeouts are long: they only bound how long a bug could show.
 */
static struct mfs_fuse_cache cache = MFS_FUSE_CACHE_DEFAULTS;

void mfs_fuse_set_cache(const struct mfs_fuse_cache *c)
{
	cache = *c;
}

static char bdi_path[64];

void mfs_fuse_set_mount_dev(unsigned int major, unsigned int minor)
{
	snprintf(bdi_path, sizeof(bdi_path), "/sys/class/bdi/%u:%u/read_ahead_kb",
		 major, minor);
}

/*
 * The kernel reads ahead of a FUSE file in requests as large as the
 * mount's readahead, which it takes from its block devices' default (128
 * KiB) and may only lower at INIT; a request may be 1 MiB (max_pages
 * 256).  A cold sequential read in requests of 1 MiB is 1.13× faster
 * (docs/PERFORMANCE.md).  Only root may write the setting: otherwise the
 * kernel's stays, and the debug log says so.
 */
void mfs_fuse_init_replied(void)
{
	FILE *f;
	bool ok;

	if (!cache.readahead_kb || !bdi_path[0])
		return;
	f = fopen(bdi_path, "w");
	ok = f && fprintf(f, "%u\n", cache.readahead_kb) > 0;
	if (f && fclose(f))
		ok = false;               /* sysfs says no at the flush */
	if (!ok)
		mlog_dbg("%s: %s; the kernel's readahead stays", bdi_path,
			 strerror(errno));
}

static struct mfs_fs *fs_of(fuse_req_t req)
{
	return fuse_req_userdata(req);
}

/* FUSE's node ids are the filesystem's inode numbers, but for the root
 * (FUSE_ROOT_ID, 1, which is no inode of the disk).  The inodes in memory
 * keep theirs too: the control files' 9 and 10, and the regions' from
 * 2^32 on, which no inode of the disk reaches. */
static uint64_t to_mfs(fuse_ino_t ino)
{
	return ino == FUSE_ROOT_ID ? MFS_ROOT_INO : ino;
}

static fuse_ino_t to_fuse(uint64_t ino)
{
	return ino == MFS_ROOT_INO ? FUSE_ROOT_ID : ino;
}

/* The caller, as the kernel reports it; supplementary groups are only
 * looked up for a caller that is not root (root passes every check). */
struct cred_buf {
	struct mfs_cred cr;
	uint32_t groups[MAX_GROUPS];
};

static const struct mfs_cred *cred_of(fuse_req_t req, struct cred_buf *b)
{
	const struct fuse_ctx *ctx = fuse_req_ctx(req);
	gid_t g[MAX_GROUPS];
	int n = 0;

	b->cr = (struct mfs_cred){ ctx->uid, ctx->gid, ctx->umask, 0, b->groups };
	if (ctx->uid)
		n = fuse_req_getgroups(req, MAX_GROUPS, g);
	for (int i = 0; i < n && i < MAX_GROUPS; i++)
		b->groups[i] = g[i];
	b->cr.ngroups = n > 0 ? (unsigned)UT_MIN(n, MAX_GROUPS) : 0;
	return &b->cr;
}

static void reply_err(fuse_req_t req, long err)
{
	fuse_reply_err(req, err < 0 ? (int)-err : 0);
}

static void reply_entry(fuse_req_t req, int err, struct stat *st, uint64_t gen)
{
	struct fuse_entry_param e = { 0 };

	if (err) {
		reply_err(req, err);
		return;
	}
	st->st_ino = to_fuse(st->st_ino);
	e.ino = st->st_ino;
	e.generation = gen;
	e.attr = *st;
	e.attr_timeout = cache.attr_s;
	e.entry_timeout = cache.entry_s;
	fuse_reply_entry(req, &e);
}

static void reply_attr(fuse_req_t req, int err, struct stat *st)
{
	if (err) {
		reply_err(req, err);
		return;
	}
	st->st_ino = to_fuse(st->st_ino);
	fuse_reply_attr(req, st, cache.attr_s);
}

/* ---- names --------------------------------------------------------------- */

static void op_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct cred_buf cb;
	struct stat st;
	uint64_t gen = 0;
	int err = mfs_lookup(fs_of(req), cred_of(req, &cb), to_mfs(parent), name,
			     &st, &gen);

	/* A name that is not there is cached by the kernel like one that
	 * is (ino 0): every name is made through it, and it drops the
	 * negative entry then. */
	if (err == -ENOENT) {
		struct fuse_entry_param e = { .entry_timeout = cache.negative_s };

		fuse_reply_entry(req, &e);
		return;
	}
	reply_entry(req, err, &st, gen);
}

static void op_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
	mfs_forget(fs_of(req), to_mfs(ino), nlookup);
	fuse_reply_none(req);
}

static void op_forget_multi(fuse_req_t req, size_t count,
			    struct fuse_forget_data *forgets)
{
	for (size_t i = 0; i < count; i++)
		mfs_forget(fs_of(req), to_mfs(forgets[i].ino), forgets[i].nlookup);
	fuse_reply_none(req);
}

static void op_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct stat st;

	(void)fi;
	reply_attr(req, mfs_getattr(fs_of(req), to_mfs(ino), &st), &st);
}

static unsigned setattr_valid(int to_set, struct fuse_file_info *fi)
{
	static const struct { int fuse; unsigned mfs; } map[] = {
		{ FUSE_SET_ATTR_MODE, MFS_SET_MODE },
		{ FUSE_SET_ATTR_UID, MFS_SET_UID },
		{ FUSE_SET_ATTR_GID, MFS_SET_GID },
		{ FUSE_SET_ATTR_SIZE, MFS_SET_SIZE },
		{ FUSE_SET_ATTR_ATIME, MFS_SET_ATIME },
		{ FUSE_SET_ATTR_MTIME, MFS_SET_MTIME },
		{ FUSE_SET_ATTR_ATIME_NOW, MFS_SET_ATIME | MFS_SET_ATIME_NOW },
		{ FUSE_SET_ATTR_MTIME_NOW, MFS_SET_MTIME | MFS_SET_MTIME_NOW },
		{ FUSE_SET_ATTR_CTIME, MFS_SET_CTIME },
	};
	unsigned valid = fi ? MFS_SET_BY_FILE : 0;

	for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
		if (to_set & map[i].fuse)
			valid |= map[i].mfs;
	return valid;
}

static bool same_time(const struct timespec *a, const struct timespec *b)
{
	return a->tv_sec == b->tv_sec && a->tv_nsec == b->tv_nsec;
}

/*
 * With its writeback cache the kernel keeps a regular file's times itself:
 * it sends the ctime of every change, and its clock where the caller
 * asked for "now" (touch, truncate), which then equals that ctime.  A
 * time equal to the ctime is the kernel's now, checked as now is (a
 * writer may set it); the ctime itself the core stamps on every change.
 */
static void kernel_times(struct mfs_setattr *sa)
{
	if (!cache.writeback || !(sa->valid & MFS_SET_CTIME))
		return;
	if ((!(sa->valid & MFS_SET_ATIME) || same_time(&sa->atime, &sa->ctime)) &&
	    (!(sa->valid & MFS_SET_MTIME) || same_time(&sa->mtime, &sa->ctime)))
		sa->valid |= MFS_SET_TIMES_NOW_GIVEN;
	sa->valid &= ~MFS_SET_CTIME;
}

static void op_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr,
		       int to_set, struct fuse_file_info *fi)
{
	struct cred_buf cb;
	struct mfs_setattr sa = {
		.valid = setattr_valid(to_set, fi),
		.mode = attr->st_mode, .uid = attr->st_uid, .gid = attr->st_gid,
		.size = (uint64_t)attr->st_size,
		.atime = attr->st_atim, .mtime = attr->st_mtim, .ctime = attr->st_ctim,
	};
	struct stat st;
	int err;

	kernel_times(&sa);
	err = mfs_setattr(fs_of(req), cred_of(req, &cb), to_mfs(ino), &sa, &st);
	reply_attr(req, err, &st);
}

static void op_readlink(fuse_req_t req, fuse_ino_t ino)
{
	char buf[4097];
	ssize_t n = mfs_readlink(fs_of(req), to_mfs(ino), buf, sizeof(buf) - 1);

	if (n < 0) {
		reply_err(req, n);
		return;
	}
	buf[n] = 0;
	fuse_reply_readlink(req, buf);
}

static void op_mknod(fuse_req_t req, fuse_ino_t parent, const char *name,
		     mode_t mode, dev_t rdev)
{
	struct cred_buf cb;
	struct stat st;
	uint64_t gen = 0;
	int err = mfs_mknod(fs_of(req), cred_of(req, &cb), to_mfs(parent), name,
			    mode, rdev, &st, &gen);

	reply_entry(req, err, &st, gen);
}

static void op_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name,
		     mode_t mode)
{
	struct cred_buf cb;
	struct stat st;
	uint64_t gen = 0;
	int err = mfs_mkdir(fs_of(req), cred_of(req, &cb), to_mfs(parent), name,
			    mode, &st, &gen);

	reply_entry(req, err, &st, gen);
}

static void op_symlink(fuse_req_t req, const char *target, fuse_ino_t parent,
		       const char *name)
{
	struct cred_buf cb;
	struct stat st;
	uint64_t gen = 0;
	int err = mfs_symlink(fs_of(req), cred_of(req, &cb), to_mfs(parent), name,
			      target, &st, &gen);

	reply_entry(req, err, &st, gen);
}

static void op_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent,
		    const char *newname)
{
	struct cred_buf cb;
	struct stat st;
	uint64_t gen = 0;
	int err = mfs_link(fs_of(req), cred_of(req, &cb), to_mfs(ino),
			   to_mfs(newparent), newname, &st, &gen);

	reply_entry(req, err, &st, gen);
}

static void op_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct cred_buf cb;

	reply_err(req, mfs_unlink(fs_of(req), cred_of(req, &cb), to_mfs(parent), name));
}

static void op_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct cred_buf cb;

	reply_err(req, mfs_rmdir(fs_of(req), cred_of(req, &cb), to_mfs(parent), name));
}

static void op_rename(fuse_req_t req, fuse_ino_t parent, const char *name,
		      fuse_ino_t newparent, const char *newname, unsigned int flags)
{
	struct cred_buf cb;

	reply_err(req, mfs_rename(fs_of(req), cred_of(req, &cb), to_mfs(parent), name,
				  to_mfs(newparent), newname, flags));
}

/* ---- files --------------------------------------------------------------- */

static struct mfs_file *file_of(struct fuse_file_info *fi)
{
	return (struct mfs_file *)(uintptr_t)fi->fh;
}

/* The kernel passes the file's f_flags, in which an open for execve(2)
 * carries __FMODE_EXEC (040, no open(2) flag has that bit). */
#define KERNEL_FMODE_EXEC 040

static int open_flags(int flags)
{
	return (flags & ~KERNEL_FMODE_EXEC) | (flags & KERNEL_FMODE_EXEC ? MFS_O_EXEC : 0);
}

static void op_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct cred_buf cb;
	struct mfs_file *f;
	int err = mfs_open(fs_of(req), cred_of(req, &cb), to_mfs(ino),
			   open_flags(fi->flags), &f);

	if (err) {
		reply_err(req, err);
		return;
	}
	fi->fh = (uintptr_t)f;
	/*
	 * The statistics go around the kernel's cache.  A region file goes
	 * through it, as any file: its bytes change only through this
	 * mount, whose writes pass through the kernel's pages on their way
	 * here, so nothing there goes stale, and read(2) then sees what a
	 * shared mapping stored before msync, as POSIX wants.  direct_io
	 * would lose that, and libfuse 3.14 cannot ask for shared mappings
	 * of direct_io files (FUSE_DIRECT_IO_ALLOW_MMAP came later).
	 * What an earlier open cached stays when the core says so
	 * (mfs_file_keep_cache: the bytes are the same, and no atime is due).
	 */
	fi->direct_io = mfs_file_direct(f);
	fi->keep_cache = cache.keep_cache && mfs_file_keep_cache(f);
	if (fuse_reply_open(req, fi) == -ENOENT)
		mfs_release(fs_of(req), f);      /* the caller was interrupted */
}

static void op_create(fuse_req_t req, fuse_ino_t parent, const char *name,
		      mode_t mode, struct fuse_file_info *fi)
{
	struct cred_buf cb;
	struct fuse_entry_param e = { 0 };
	struct mfs_file *f;
	uint64_t gen = 0;
	int err = mfs_create(fs_of(req), cred_of(req, &cb), to_mfs(parent), name,
			     mode, fi->flags, &e.attr, &gen, &f);

	if (err) {
		reply_err(req, err);
		return;
	}
	e.attr.st_ino = to_fuse(e.attr.st_ino);
	e.ino = e.attr.st_ino;
	e.generation = gen;
	e.attr_timeout = cache.attr_s;
	e.entry_timeout = cache.entry_s;
	fi->fh = (uintptr_t)f;
	fi->direct_io = mfs_file_direct(f);    /* O_CREAT of the statistics */
	if (fuse_reply_create(req, &e, fi) == -ENOENT) {
		mfs_release(fs_of(req), f);
		mfs_forget(fs_of(req), to_mfs(e.ino), 1);
	}
}

static void op_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		    struct fuse_file_info *fi)
{
	char *buf = malloc(size ? size : 1);
	ssize_t n;

	(void)ino;
	if (!buf) {
		reply_err(req, -ENOMEM);
		return;
	}
	n = mfs_read(fs_of(req), file_of(fi), buf, size, (uint64_t)off);
	if (n < 0)
		reply_err(req, n);
	else
		fuse_reply_buf(req, buf, (size_t)n);
	free(buf);
}

/*
 * The kernel has placed every write: an append at its i_size under the
 * inode lock, and the dirty pages of a shared mapping (FUSE_WRITE_CACHE,
 * fi->writepage) at their own offset, clipped to i_size, through whichever
 * writable file of the inode it picks, O_APPEND or not; such a write
 * carries no file flags.  So only a write the caller's file still appends
 * with (fi->flags are the file's flags at this write) may append here.
 */
static unsigned write_flags(const struct fuse_file_info *fi)
{
	return fi->writepage || !(fi->flags & O_APPEND) ? MFS_WRITE_AT : 0;
}

static void op_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size,
		     off_t off, struct fuse_file_info *fi)
{
	struct cred_buf cb;
	ssize_t n = mfs_write(fs_of(req), cred_of(req, &cb), file_of(fi), buf, size,
			      (uint64_t)off, write_flags(fi));

	(void)ino;
	if (n < 0)
		reply_err(req, n);
	else
		fuse_reply_write(req, (size_t)n);
}

/*
 * The kernel answers SEEK_SET, SEEK_CUR and SEEK_END itself.  With its
 * writeback cache it also holds written pages the core has not seen, and
 * asks for SEEK_DATA and SEEK_HOLE without sending them first: ENOSYS
 * makes it answer those itself for good, the whole file being data, as
 * POSIX allows.
 */
static void op_lseek(fuse_req_t req, fuse_ino_t ino, off_t off, int whence,
		     struct fuse_file_info *fi)
{
	uint64_t pos = 0;
	int err = cache.writeback ? -ENOSYS : off < 0 ? -ENXIO :
		  mfs_lseek(fs_of(req), file_of(fi), (uint64_t)off, whence, &pos);

	(void)ino;
	if (err)
		reply_err(req, err);
	else
		fuse_reply_lseek(req, (off_t)pos);
}

static void op_fallocate(fuse_req_t req, fuse_ino_t ino, int mode, off_t off,
			 off_t len, struct fuse_file_info *fi)
{
	struct cred_buf cb;
	int err = off < 0 || len <= 0 ? -EINVAL :
		  mfs_fallocate(fs_of(req), cred_of(req, &cb), file_of(fi), mode,
				(uint64_t)off, (uint64_t)len);

	(void)ino;
	reply_err(req, err);
}

static void op_copy_file_range(fuse_req_t req, fuse_ino_t ino_in, off_t off_in,
			       struct fuse_file_info *fi_in, fuse_ino_t ino_out,
			       off_t off_out, struct fuse_file_info *fi_out,
			       size_t len, int flags)
{
	struct cred_buf cb;
	ssize_t n = off_in < 0 || off_out < 0 ? -EINVAL :
		    mfs_copy_file_range(fs_of(req), cred_of(req, &cb), file_of(fi_in),
					(uint64_t)off_in, file_of(fi_out),
					(uint64_t)off_out, len, (unsigned)flags);

	(void)ino_in;
	(void)ino_out;
	if (n < 0)
		reply_err(req, n);
	else
		fuse_reply_write(req, (size_t)n);
}

/*
 * The kernel passes chattr's and lsattr's FS_IOC_GETFLAGS and
 * FS_IOC_SETFLAGS with an int-sized buffer (its fileattr calls), and
 * FS_IOC_FSGETXATTR / FS_IOC_FSSETXATTR with a struct fsxattr, for files
 * and directories alike; the inode number is enough, the open file is
 * not needed.
 */
/* A successful ioctl answers with its result, never with an empty reply,
 * which the kernel takes for an I/O error. */
static void reply_ioctl_done(fuse_req_t req, int err)
{
	if (err)
		reply_err(req, err);
	else
		fuse_reply_ioctl(req, 0, NULL, 0);
}

static void reply_flags(fuse_req_t req, uint64_t ino, size_t out_bufsz)
{
	uint32_t flags = 0;
	uint8_t out[8] = { 0 };
	int err = mfs_get_flags(fs_of(req), ino, &flags);

	if (!err && out_bufsz < sizeof(flags))
		err = -EINVAL;
	if (err) {
		reply_err(req, err);
		return;
	}
	memcpy(out, &flags, sizeof(flags));
	fuse_reply_ioctl(req, 0, out, UT_MIN(out_bufsz, sizeof(out)));
}

static void set_flags(fuse_req_t req, uint64_t ino, const void *in_buf,
		      size_t in_bufsz)
{
	struct cred_buf cb;
	uint32_t flags;

	if (in_bufsz < sizeof(flags)) {
		reply_err(req, -EINVAL);
		return;
	}
	memcpy(&flags, in_buf, sizeof(flags));
	reply_ioctl_done(req, mfs_set_flags(fs_of(req), cred_of(req, &cb), ino, flags));
}

/* The inode flags that struct fsxattr's fsx_xflags can say. */
static const struct {
	uint32_t fl, xfl;
} xflag_map[] = {
	{ MFS_SYNC_FL, FS_XFLAG_SYNC },
	{ MFS_IMMUTABLE_FL, FS_XFLAG_IMMUTABLE },
	{ MFS_APPEND_FL, FS_XFLAG_APPEND },
	{ MFS_NODUMP_FL, FS_XFLAG_NODUMP },
	{ MFS_NOATIME_FL, FS_XFLAG_NOATIME },
};

static uint32_t to_xflags(uint32_t fl)
{
	uint32_t x = 0;

	for (size_t i = 0; i < sizeof(xflag_map) / sizeof(xflag_map[0]); i++)
		if (fl & xflag_map[i].fl)
			x |= xflag_map[i].xfl;
	return x;
}

static void reply_fsxattr(fuse_req_t req, uint64_t ino, size_t out_bufsz)
{
	struct fsxattr fa = { 0 };
	uint32_t flags = 0;
	int err = mfs_get_flags(fs_of(req), ino, &flags);

	if (!err && out_bufsz < sizeof(fa))
		err = -EINVAL;
	if (err) {
		reply_err(req, err);
		return;
	}
	fa.fsx_xflags = to_xflags(flags);
	fuse_reply_ioctl(req, 0, &fa, sizeof(fa));
}

/* The flags fsx_xflags cannot say (journal data, dirsync) stay as they
 * are; what the format cannot store is -EOPNOTSUPP. */
static void set_fsxattr(fuse_req_t req, uint64_t ino, const void *in_buf,
			size_t in_bufsz)
{
	struct cred_buf cb;
	struct fsxattr fa;
	uint32_t flags = 0, x;
	int err = in_bufsz < sizeof(fa) ? -EINVAL : mfs_get_flags(fs_of(req), ino, &flags);

	if (!err) {
		memcpy(&fa, in_buf, sizeof(fa));
		x = fa.fsx_xflags;
		if ((x & ~to_xflags(MFS_USER_FL_MASK)) || fa.fsx_extsize ||
		    fa.fsx_projid || fa.fsx_cowextsize)
			err = -EOPNOTSUPP;
	}
	for (size_t i = 0; !err && i < sizeof(xflag_map) / sizeof(xflag_map[0]); i++)
		flags = (x & xflag_map[i].xfl) ? flags | xflag_map[i].fl :
						  flags & ~xflag_map[i].fl;
	if (!err)
		err = mfs_set_flags(fs_of(req), cred_of(req, &cb), ino, flags);
	reply_ioctl_done(req, err);
}

static void op_ioctl(fuse_req_t req, fuse_ino_t ino, int cmd, void *arg,
		     struct fuse_file_info *fi, unsigned flags, const void *in_buf,
		     size_t in_bufsz, size_t out_bufsz)
{
	(void)arg;
	(void)fi;
	if (flags & FUSE_IOCTL_COMPAT) {
		reply_err(req, -ENOSYS);
		return;
	}
	switch ((unsigned)cmd) {
	case (unsigned)FS_IOC_GETFLAGS:
		reply_flags(req, to_mfs(ino), out_bufsz);
		break;
	case (unsigned)FS_IOC_SETFLAGS:
		set_flags(req, to_mfs(ino), in_buf, in_bufsz);
		break;
	case (unsigned)FS_IOC_FSGETXATTR:
		reply_fsxattr(req, to_mfs(ino), out_bufsz);
		break;
	case (unsigned)FS_IOC_FSSETXATTR:
		set_fsxattr(req, to_mfs(ino), in_buf, in_bufsz);
		break;
	default:
		reply_err(req, -ENOTTY);
	}
}

static void op_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	(void)ino;
	reply_err(req, mfs_release(fs_of(req), file_of(fi)));
}

static void op_fsync(fuse_req_t req, fuse_ino_t ino, int datasync,
		     struct fuse_file_info *fi)
{
	(void)fi;
	reply_err(req, mfs_fsync(fs_of(req), to_mfs(ino), datasync != 0));
}

/* ---- directories --------------------------------------------------------- */

static struct mfs_dir *dir_of(struct fuse_file_info *fi)
{
	return (struct mfs_dir *)(uintptr_t)fi->fh;
}

static void op_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct cred_buf cb;
	struct mfs_dir *d;
	int err = mfs_opendir(fs_of(req), cred_of(req, &cb), to_mfs(ino), &d);

	if (err) {
		reply_err(req, err);
		return;
	}
	fi->fh = (uintptr_t)d;
	if (fuse_reply_open(req, fi) == -ENOENT)
		mfs_releasedir(fs_of(req), d);
}

static mode_t ft_mode(unsigned int type)
{
	static const mode_t modes[MFS_FT_MAX] = {
		[MFS_FT_REG_FILE] = S_IFREG, [MFS_FT_DIR] = S_IFDIR,
		[MFS_FT_CHRDEV] = S_IFCHR, [MFS_FT_BLKDEV] = S_IFBLK,
		[MFS_FT_FIFO] = S_IFIFO, [MFS_FT_SOCK] = S_IFSOCK,
		[MFS_FT_SYMLINK] = S_IFLNK,
	};

	return type < MFS_FT_MAX ? modes[type] : 0;
}

struct dirbuf {
	fuse_req_t req;
	char *buf;
	size_t size, len;
	bool plus;
};

static int fill(void *ctx, const char *name, size_t namelen, uint64_t ino,
		unsigned int type, uint64_t next, const struct stat *st,
		uint64_t gen)
{
	struct dirbuf *b = ctx;
	char cname[MFS_NAME_LEN + 1];
	struct fuse_entry_param e = { 0 };
	size_t need;

	memcpy(cname, name, namelen);
	cname[namelen] = 0;
	/* The generation must be the one lookups give: the kernel takes an
	 * inode it knows with another one for a reused number, marks it bad
	 * (its open files then fail with EIO) and drops its dentries. */
	if (st) {
		e.attr = *st;
		e.ino = to_fuse(ino);
		e.generation = gen;
		e.attr_timeout = cache.attr_s;
		e.entry_timeout = cache.entry_s;
	}
	e.attr.st_ino = to_fuse(ino);
	if (!st)
		e.attr.st_mode = ft_mode(type);
	if (b->plus)
		need = fuse_add_direntry_plus(b->req, b->buf + b->len, b->size - b->len,
					      cname, &e, (off_t)next);
	else
		need = fuse_add_direntry(b->req, b->buf + b->len, b->size - b->len,
					 cname, &e.attr, (off_t)next);
	if (need > b->size - b->len)
		return 1;
	b->len += need;
	return 0;
}

static void readdir_any(fuse_req_t req, size_t size, off_t off,
			struct fuse_file_info *fi, bool plus)
{
	struct dirbuf b = { req, malloc(size ? size : 1), size, 0, plus };
	int err;

	if (!b.buf) {
		reply_err(req, -ENOMEM);
		return;
	}
	err = mfs_readdir(fs_of(req), dir_of(fi), (uint64_t)off, plus, fill, &b);
	if (err && !b.len)
		reply_err(req, err);
	else
		fuse_reply_buf(req, b.buf, b.len);
	free(b.buf);
}

static void op_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		       struct fuse_file_info *fi)
{
	(void)ino;
	readdir_any(req, size, off, fi, false);
}

static void op_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
			   struct fuse_file_info *fi)
{
	(void)ino;
	readdir_any(req, size, off, fi, true);
}

static void op_releasedir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	(void)ino;
	reply_err(req, mfs_releasedir(fs_of(req), dir_of(fi)));
}

static void op_fsyncdir(fuse_req_t req, fuse_ino_t ino, int datasync,
			struct fuse_file_info *fi)
{
	(void)fi;
	reply_err(req, mfs_fsync(fs_of(req), to_mfs(ino), datasync != 0));
}

/* ---- the filesystem ------------------------------------------------------ */

static void op_statfs(fuse_req_t req, fuse_ino_t ino)
{
	struct statvfs sv;
	int err = mfs_statfs(fs_of(req), &sv);

	(void)ino;
	if (err)
		reply_err(req, err);
	else
		fuse_reply_statfs(req, &sv);
}

static void op_access(fuse_req_t req, fuse_ino_t ino, int mask)
{
	struct cred_buf cb;

	reply_err(req, mfs_access(fs_of(req), cred_of(req, &cb), to_mfs(ino), mask));
}

/* ---- extended attributes ------------------------------------------------- */

static void op_setxattr(fuse_req_t req, fuse_ino_t ino, const char *name,
			const char *value, size_t size, int flags)
{
	struct cred_buf cb;

	/* Only the flags of setxattr(2); the kernel's own extra flags ask
	 * for nothing the core does not do anyway. */
	reply_err(req, mfs_setxattr(fs_of(req), cred_of(req, &cb), to_mfs(ino), name,
				    value, size, flags & (XATTR_CREATE | XATTR_REPLACE)));
}

/* @size 0 asks for the length; anything else for the bytes. */
static void reply_xattr(fuse_req_t req, ssize_t len, const char *buf, size_t size)
{
	if (len < 0)
		reply_err(req, len);
	else if (!size)
		fuse_reply_xattr(req, (size_t)len);
	else
		fuse_reply_buf(req, buf, (size_t)len);
}

static void op_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name, size_t size)
{
	struct cred_buf cb;
	char *buf = size ? malloc(size) : NULL;
	ssize_t len = size && !buf ? -ENOMEM :
		      mfs_getxattr(fs_of(req), cred_of(req, &cb), to_mfs(ino), name, buf, size);

	reply_xattr(req, len, buf, size);
	free(buf);
}

static void op_listxattr(fuse_req_t req, fuse_ino_t ino, size_t size)
{
	struct cred_buf cb;
	char *buf = size ? malloc(size) : NULL;
	ssize_t len = size && !buf ? -ENOMEM :
		      mfs_listxattr(fs_of(req), cred_of(req, &cb), to_mfs(ino), buf, size);

	reply_xattr(req, len, buf, size);
	free(buf);
}

static void op_removexattr(fuse_req_t req, fuse_ino_t ino, const char *name)
{
	struct cred_buf cb;

	reply_err(req, mfs_removexattr(fs_of(req), cred_of(req, &cb), to_mfs(ino), name));
}

/* ---- request statistics -------------------------------------------------- */

#define OPS(X) X(lookup) X(forget) X(forget_multi) X(getattr) X(setattr)         \
	X(readlink) X(mknod) X(mkdir) X(symlink) X(link) X(unlink) X(rmdir)      \
	X(rename) X(open) X(create) X(read) X(write) X(lseek) X(release)                  \
	X(fsync) X(opendir) X(readdir) X(readdirplus) X(releasedir) X(fsyncdir) \
	X(statfs) X(access) X(setxattr) X(getxattr) X(listxattr) X(removexattr)      \
	X(fallocate) X(copy_file_range) X(ioctl)

#define OP_ENUM(op) OP_##op,
#define OP_NAME(op) #op,
enum { OPS(OP_ENUM) NOPS };
static const char *const op_names[NOPS] = { OPS(OP_NAME) };

/* One daemon serves one mount: the counts are the process's. */
static struct {
	_Atomic uint64_t n, ns;
} op_stats[NOPS];

static void account(int op, uint64_t t0)
{
	uint64_t ns = ut_now_ns() - t0;

	atomic_fetch_add_explicit(&op_stats[op].n, 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&op_stats[op].ns, ns, memory_order_relaxed);
}

/* "fuse_OP_requests" and "fuse_OP_mean_ns" for every operation, then the
 * request loop's counters. */
static size_t format_requests(void *arg, char *buf, size_t size)
{
	size_t len = 0;
	struct mfs_fuse_uring_stats us;
	uint64_t handovers;
	uint32_t threads;
	int k;

	(void)arg;
	for (int i = 0; i < NOPS; i++) {
		uint64_t n = atomic_load(&op_stats[i].n), ns = atomic_load(&op_stats[i].ns);

		k = snprintf(buf ? buf + UT_MIN(len, size) : NULL, len < size ? size - len : 0,
			     "fuse_%s_requests: %" PRIu64 "\nfuse_%s_mean_ns: %" PRIu64 "\n",
			     op_names[i], n, op_names[i], n ? ns / n : 0);
		if (k > 0)
			len += (size_t)k;
	}
	mfs_fuse_loop_stats(&handovers, &threads);
	mfs_fuse_uring_stats(&us);
	k = snprintf(buf ? buf + UT_MIN(len, size) : NULL, len < size ? size - len : 0,
		     "fuse_loop_handovers: %" PRIu64 "\nfuse_loop_threads: %" PRIu32 "\n"
		     "fuse_uring_requests: %" PRIu64 "\nfuse_dev_requests: %" PRIu64 "\n"
		     "fuse_uring_rings: %u\nfuse_uring_rings_used: %u\n",
		     handovers, threads, us.ring_requests, us.dev_requests,
		     us.rings, us.rings_used);
	if (k > 0)
		len += (size_t)k;
	return len;
}

/* Every operation through a wrapper that times it: each one replies
 * before it returns, so the time covers the whole request here. */
#define TIMED(op, params, args)                                          \
	static void timed_##op params                                    \
	{                                                                \
		uint64_t t0 = ut_now_ns();                               \
		op_##op args;                                            \
		account(OP_##op, t0);                                    \
	}

TIMED(lookup, (fuse_req_t req, fuse_ino_t parent, const char *name), (req, parent, name))
TIMED(forget, (fuse_req_t req, fuse_ino_t ino, uint64_t nlookup), (req, ino, nlookup))
TIMED(forget_multi, (fuse_req_t req, size_t count, struct fuse_forget_data *forgets),
      (req, count, forgets))
TIMED(getattr, (fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi), (req, ino, fi))
TIMED(setattr, (fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set,
		struct fuse_file_info *fi), (req, ino, attr, to_set, fi))
TIMED(readlink, (fuse_req_t req, fuse_ino_t ino), (req, ino))
TIMED(mknod, (fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode, dev_t rdev),
      (req, parent, name, mode, rdev))
TIMED(mkdir, (fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode),
      (req, parent, name, mode))
TIMED(symlink, (fuse_req_t req, const char *target, fuse_ino_t parent, const char *name),
      (req, target, parent, name))
TIMED(link, (fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent, const char *newname),
      (req, ino, newparent, newname))
TIMED(unlink, (fuse_req_t req, fuse_ino_t parent, const char *name), (req, parent, name))
TIMED(rmdir, (fuse_req_t req, fuse_ino_t parent, const char *name), (req, parent, name))
TIMED(rename, (fuse_req_t req, fuse_ino_t parent, const char *name, fuse_ino_t newparent,
	       const char *newname, unsigned int flags),
      (req, parent, name, newparent, newname, flags))
TIMED(open, (fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi), (req, ino, fi))
TIMED(create, (fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
	       struct fuse_file_info *fi), (req, parent, name, mode, fi))
TIMED(read, (fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
	     struct fuse_file_info *fi), (req, ino, size, off, fi))
TIMED(write, (fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size, off_t off,
	      struct fuse_file_info *fi), (req, ino, buf, size, off, fi))
TIMED(lseek, (fuse_req_t req, fuse_ino_t ino, off_t off, int whence,
	      struct fuse_file_info *fi), (req, ino, off, whence, fi))
TIMED(release, (fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi), (req, ino, fi))
TIMED(fsync, (fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi),
      (req, ino, datasync, fi))
TIMED(opendir, (fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi), (req, ino, fi))
TIMED(readdir, (fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		struct fuse_file_info *fi), (req, ino, size, off, fi))
TIMED(readdirplus, (fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		    struct fuse_file_info *fi), (req, ino, size, off, fi))
TIMED(releasedir, (fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi),
      (req, ino, fi))
TIMED(fsyncdir, (fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi),
      (req, ino, datasync, fi))
TIMED(statfs, (fuse_req_t req, fuse_ino_t ino), (req, ino))
TIMED(access, (fuse_req_t req, fuse_ino_t ino, int mask), (req, ino, mask))
TIMED(setxattr, (fuse_req_t req, fuse_ino_t ino, const char *name, const char *value,
		 size_t size, int flags), (req, ino, name, value, size, flags))
TIMED(getxattr, (fuse_req_t req, fuse_ino_t ino, const char *name, size_t size),
      (req, ino, name, size))
TIMED(listxattr, (fuse_req_t req, fuse_ino_t ino, size_t size), (req, ino, size))
TIMED(removexattr, (fuse_req_t req, fuse_ino_t ino, const char *name), (req, ino, name))
TIMED(fallocate, (fuse_req_t req, fuse_ino_t ino, int mode, off_t off, off_t len,
		  struct fuse_file_info *fi), (req, ino, mode, off, len, fi))
TIMED(copy_file_range, (fuse_req_t req, fuse_ino_t ino_in, off_t off_in,
			struct fuse_file_info *fi_in, fuse_ino_t ino_out, off_t off_out,
			struct fuse_file_info *fi_out, size_t len, int flags),
      (req, ino_in, off_in, fi_in, ino_out, off_out, fi_out, len, flags))
TIMED(ioctl, (fuse_req_t req, fuse_ino_t ino, int cmd, void *arg,
	      struct fuse_file_info *fi, unsigned flags, const void *in_buf,
	      size_t in_bufsz, size_t out_bufsz),
      (req, ino, cmd, arg, fi, flags, in_buf, in_bufsz, out_bufsz))

void mfs_fuse_attr_changed(void *arg, uint64_t ino)
{
	/* A negative offset: the attributes only, no page is touched, so the
	 * kernel needs no lock the request being served may hold. */
	int err = fuse_lowlevel_notify_inval_inode(arg, to_fuse(ino), -1, 0);

	if (err && err != -ENOENT)
		mlog_warn("inode %" PRIu64 ": attributes not refreshed: %s", ino,
			  strerror(-err));
}

static bool kernel_checks;

void mfs_fuse_kernel_checks(bool on)
{
	kernel_checks = on;
}

/*
 * POSIX ACLs.  The core keeps them, enforces them in every permission
 * check, applies a parent's default ACL to new inodes and keeps the mode
 * and the access ACL in step (chmod, setfacl).  What the kernel does on
 * this side depends on FUSE_CAP_POSIX_ACL, asked for only when the kernel
 * checks permissions itself (-o default_permissions):
 *
 * - Without it, the kernel (on the host, as here) passes the
 *   system.posix_acl_* xattrs through to us in user space's xattr form,
 *   caches no ACL and never consults one: its own checks, if it made any,
 *   would go by the mode alone and refuse named users and groups the
 *   ACL lets in.  So without default_permissions the core decides alone;
 *   an ACL change that changes the mode tells the kernel to drop the
 *   attributes it caches (mfs_set_attr_changed).
 * - With it, the kernel reads the ACLs through getxattr, caches them
 *   (dropping them on its own setxattr, removexattr and chmod, the only
 *   ways they change) and checks them in generic_permission the way the
 *   core does, so both come to the same answer.
 *
 * Either way the kernel must leave the umask to us (FUSE_CAP_DONT_MASK):
 * under a directory with a default ACL the new inode's mode is masked by
 * that ACL instead of the umask, and only the core knows the ACL.
 */
static void want_acls(struct fuse_conn_info *conn)
{
	if (conn->capable & FUSE_CAP_DONT_MASK)
		conn->want |= FUSE_CAP_DONT_MASK;
	if (kernel_checks && (conn->capable & FUSE_CAP_POSIX_ACL))
		conn->want |= FUSE_CAP_POSIX_ACL;
	else
		conn->want &= ~FUSE_CAP_POSIX_ACL;
}

static void op_init(void *userdata, struct fuse_conn_info *conn)
{
	want_acls(conn);
	mfs_stats_set_source(userdata, format_requests, NULL);
	if (conn->capable & FUSE_CAP_PARALLEL_DIROPS)
		conn->want |= FUSE_CAP_PARALLEL_DIROPS;
	/* The core drops the set-id bits on write, truncate and chown itself;
	 * otherwise the kernel asks for a chmod as the writer, which a
	 * writer who does not own the file may not do. */
	if (conn->capable & FUSE_CAP_HANDLE_KILLPRIV)
		conn->want |= FUSE_CAP_HANDLE_KILLPRIV;
	/* -o writeback_cache: the kernel holds written pages back and sends
	 * them when it writes back, at fsync and at close; the journal's
	 * order starts when they arrive (docs/DESIGN.md). */
	if (cache.writeback && (conn->capable & FUSE_CAP_WRITEBACK_CACHE))
		conn->want |= FUSE_CAP_WRITEBACK_CACHE;
	else
		conn->want &= ~FUSE_CAP_WRITEBACK_CACHE;
	/* name_to_handle_at and open_by_handle_at (and NFS export): the
	 * kernel looks up "." of an inode number it no longer holds. */
	if (conn->capable & FUSE_CAP_EXPORT_SUPPORT)
		conn->want |= FUSE_CAP_EXPORT_SUPPORT;
}

const struct fuse_lowlevel_ops mfs_fuse_ops = {
	.init = op_init,
	.lookup = timed_lookup,
	.forget = timed_forget,
	.forget_multi = timed_forget_multi,
	.getattr = timed_getattr,
	.setattr = timed_setattr,
	.readlink = timed_readlink,
	.mknod = timed_mknod,
	.mkdir = timed_mkdir,
	.symlink = timed_symlink,
	.link = timed_link,
	.unlink = timed_unlink,
	.rmdir = timed_rmdir,
	.rename = timed_rename,
	.open = timed_open,
	.create = timed_create,
	.read = timed_read,
	.write = timed_write,
	/* No .flush: a close has nothing to hand over (every write is in the
	 * daemon's cache when it returns), and answered ENOSYS once, the
	 * kernel stops asking on every close. */
	.lseek = timed_lseek,
	.release = timed_release,
	.fsync = timed_fsync,
	.opendir = timed_opendir,
	.readdir = timed_readdir,
	.readdirplus = timed_readdirplus,
	.releasedir = timed_releasedir,
	.fsyncdir = timed_fsyncdir,
	.statfs = timed_statfs,
	.access = timed_access,
	.setxattr = timed_setxattr,
	.getxattr = timed_getxattr,
	.listxattr = timed_listxattr,
	.removexattr = timed_removexattr,
	.fallocate = timed_fallocate,
	.copy_file_range = timed_copy_file_range,
	.ioctl = timed_ioctl,
};
