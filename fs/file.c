/*
 * file.c - open files and directories: open, create, read, write, fsync,
 * release, and directory reading.
 *
 * Reads take no inode lock: each page is copied under its page lock, and
 * the size is read once.  Writes hold the inode's rwsem for writing and go
 * in chunks, one handle each: the chunk's holes are given blocks under the
 * handle (reserved before it starts) with the page locked, the data is
 * copied into the page and the page dirtied; writeback later only maps it.
 */
#include "mfs_i.h"
#include "balloc.h"
#include "blockmap.h"
#include "dir.h"
#include "icache.h"
#include "jdata.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Pages per write handle. */
#define WRITE_CHUNK 16u

/* n is NULL for a directory in memory, @ino. */
struct mfs_dir {
	struct mfs_node *n;
	uint64_t ino;
};

int mfs_open_mask(int flags)
{
	switch (flags & O_ACCMODE) {
	case O_RDONLY: return R_OK;
	case O_WRONLY: return W_OK;
	default: return R_OK | W_OK;
	}
}

static int file_new(struct mfs_node *n, int flags, struct mfs_file **out)
{
	struct mfs_file *f = calloc(1, sizeof(*f));

	if (!f)
		return -ENOMEM;
	f->n = n;
	f->flags = flags;
	pthread_mutex_init(&f->ra_lock, NULL);
	pc_ra_init(&f->ra);
	mfs_node_opened(n, 1);
	*out = f;
	return 0;
}

static int open_checks(struct mfs_node *n, const struct mfs_cred *cr, int flags)
{
	uint16_t mode = node_mode(n);
	/* An open to execute needs execute permission, not read. */
	int mask = flags & MFS_O_EXEC ? X_OK : mfs_open_mask(flags), err;

	if (S_ISDIR(mode) && (mask & W_OK))
		return -EISDIR;
	if ((mfs_node_flags(n) & MFS_APPEND_FL) &&
	    (((mask & W_OK) && !(flags & O_APPEND)) || (flags & O_TRUNC)))
		return -EPERM;
	if ((mask & W_OK) || (flags & O_TRUNC)) {
		err = mfs_check_rw(n->fs);
		if (err && (S_ISREG(mode) || S_ISDIR(mode)))
			return err;
	}
	return mfs_permission(n, cr, mask);
}

static int open_trunc(struct mfs_node *n, const struct mfs_cred *cr)
{
	int err = 0;

	if (!S_ISREG(node_mode(n)))
		return 0;
	pthread_rwlock_wrlock(&n->rwsem);
	/* Even an empty file loses its set-id bits and gets new times, as
	 * Linux's do_truncate gives them. */
	err = mfs_kill_suid(n, cr);
	if (!err)
		err = mfs_truncate_locked(n, cr, 0);
	pthread_rwlock_unlock(&n->rwsem);
	return err;
}

static int special_open(struct mfs_fs *fs, const struct mfs_cred *cr, uint64_t ino,
			int flags, struct mfs_file **out)
{
	struct mfs_file *f = calloc(1, sizeof(*f));
	int err = f ? 0 : -ENOMEM;

	if (!err && mfs_region_ino(ino))
		err = mfs_region_open(fs, cr, ino, flags, &f->rgn);
	else if (!err)
		err = mfs_ctl_open(fs, ino, flags, &f->text, &f->text_len);

	if (err) {
		free(f);
		return err;
	}
	f->flags = flags;
	*out = f;
	return 0;
}

bool mfs_file_direct(const struct mfs_file *f)
{
	return !f->n && !f->rgn;
}

int mfs_open(struct mfs_fs *fs, const struct mfs_cred *cr, uint64_t ino,
	     int flags, struct mfs_file **out)
{
	struct mfs_node *n;
	int err;

	if (mfs_special_ino(ino))
		return special_open(fs, cr, ino, flags, out);
	err = mfs_iget(fs, ino, &n);
	if (err)
		return err;
	err = open_checks(n, cr, flags);
	if (!err && (flags & O_TRUNC) && (mfs_open_mask(flags) & W_OK))
		err = open_trunc(n, cr);
	if (!err)
		err = file_new(n, flags, out);
	if (err)
		mfs_iput(n);
	return err;
}

int mfs_create(struct mfs_fs *fs, const struct mfs_cred *cr, uint64_t dir,
	       const char *name, mode_t mode, int flags, struct stat *st,
	       uint64_t *gen, struct mfs_file **out)
{
	struct newinode ni = { .mode = S_IFREG | (mode & 07777) };
	struct mfs_node *n;
	int err;

again:
	err = mfs_create_node(fs, cr, dir, name, &ni, st, gen, &n);
	if (err == -EEXIST && !(flags & O_EXCL)) {
		err = mfs_lookup(fs, cr, dir, name, st, gen);
		if (err == -ENOENT)
			goto again;     /* unlinked since: create it after all */
		if (err)
			return err;
		err = mfs_open(fs, cr, st->st_ino, flags, out);
		if (err)
			mfs_forget(fs, st->st_ino, 1);
		else if ((flags & O_TRUNC) && (*out)->n)
			mfs_node_fill_stat((*out)->n, st);
		return err;
	}
	if (err)
		return err;
	err = file_new(n, flags, out);
	if (err) {
		mfs_forget(fs, n->ino, 1);
		mfs_iput(n);
	}
	return err;
}

int mfs_release(struct mfs_fs *fs, struct mfs_file *f)
{
	(void)fs;
	if (!f->n) {
		free(f->text);
		free(f);
		return 0;
	}
	mfs_node_opened(f->n, -1);
	mfs_iput(f->n);
	pthread_mutex_destroy(&f->ra_lock);
	free(f);
	return 0;
}

/* ---- read ---------------------------------------------------------------- */

/* Nanoseconds since the epoch: a file read in the second it was written
 * must compare by its nanoseconds too. */
static __int128 ns_of(int64_t sec, uint32_t nsec)
{
	return (__int128)sec * 1000000000 + nsec;
}

static __int128 raw_ns(int64_t le_sec, uint32_t le_nsec)
{
	return ns_of((int64_t)le64toh(le_sec), le32toh(le_nsec));
}

/* relatime: atime moves when it is not newer than mtime or ctime, or is
 * a day old. */
static bool atime_due(struct mfs_node *n, const struct timespec *now)
{
	enum mfs_atime_mode mode = n->fs->opts.atime;
	__int128 at, mt, ct;

	if (mode == MFS_ATIME_NONE || mfs_check_rw(n->fs) ||
	    (le32toh(n->raw.i_flags) & MFS_NOATIME_FL) ||
	    (n->fs->opts.nodiratime && S_ISDIR(node_mode(n))))
		return false;
	if (mode == MFS_ATIME_STRICT)
		return true;
	pthread_mutex_lock(&n->lock);
	at = raw_ns(n->raw.i_atime, n->raw.i_atime_nsec);
	mt = raw_ns(n->raw.i_mtime, n->raw.i_mtime_nsec);
	ct = raw_ns(n->raw.i_ctime, n->raw.i_ctime_nsec);
	pthread_mutex_unlock(&n->lock);
	return at <= mt || at <= ct ||
	       ns_of(now->tv_sec, (uint32_t)now->tv_nsec) - at >= ns_of(24 * 3600, 0);
}

static void touch_atime(struct mfs_node *n)
{
	struct jnl_handle h;
	struct timespec now;

	mfs_now(&now);
	if (!atime_due(n, &now) || mfs_jstart(n->fs, MFS_CR_INODE, &h))
		return;
	pthread_mutex_lock(&n->lock);
	n->raw.i_atime = htole64(now.tv_sec);
	n->raw.i_atime_nsec = htole32((uint32_t)now.tv_nsec);
	pthread_mutex_unlock(&n->lock);
	mfs_jstop(n->fs, &h, mfs_inode_write(n, &h, false));
}

static int read_page(struct mfs_file *f, uint64_t idx, unsigned nr, uint64_t limit,
		     struct pc_page **pg)
{
	int err;

	pthread_mutex_lock(&f->ra_lock);
	err = pc_read_page_ra(f->n->map, &f->ra, idx, nr, limit, pg);
	pthread_mutex_unlock(&f->ra_lock);
	return err;
}

ssize_t mfs_read(struct mfs_fs *fs, struct mfs_file *f, void *buf, size_t size,
		 uint64_t off)
{
	struct mfs_node *n = f->n;
	uint32_t bs = fs->bs;
	uint64_t isize, end, last, limit;
	size_t done = 0;
	int err = 0;

	if (f->rgn)
		return mfs_region_read(f->rgn, buf, size, off);
	if (!n)
		return mfs_ctl_read(f->text, f->text_len, buf, size, off);
	if (S_ISDIR(node_mode(n)))
		return -EISDIR;
	if (!S_ISREG(node_mode(n)) || !n->map)
		return -EINVAL;
	pthread_mutex_lock(&n->lock);
	isize = le64toh(n->raw.i_size);
	pthread_mutex_unlock(&n->lock);
	end = UT_MIN(isize, off + size);
	/* The request ends at @last; reading ahead may go on to the file's
	 * end, @limit. */
	last = UT_DIV_ROUND_UP(end, bs);
	limit = UT_DIV_ROUND_UP(isize, bs);
	atomic_fetch_add(&fs->st.reads, 1);
	while (off + done < end && !err) {
		uint64_t pos = off + done, idx = pos / bs;
		uint32_t in = (uint32_t)(pos % bs);
		size_t len = UT_MIN((uint64_t)bs - in, end - pos);
		struct pc_page *pg;

		err = read_page(f, idx, (unsigned)UT_MIN(last - idx, 1024u), limit, &pg);
		if (err)
			break;
		pc_lock_page(pg);
		memcpy((char *)buf + done, (char *)pg->data + in, len);
		pc_unlock_page(pg);
		pc_put_page(pg);
		done += len;
	}
	if (done)
		touch_atime(n);
	return done ? (ssize_t)done : err;
}

/* ---- SEEK_DATA / SEEK_HOLE ----------------------------------------------- */

/* Blocks are allocated when written (or preallocated, holding zeros), so
 * the block map alone says where data is; past i_size there is none, and
 * the end of file is a hole. */
int mfs_lseek(struct mfs_fs *fs, struct mfs_file *f, uint64_t off, int whence,
	      uint64_t *out)
{
	struct mfs_node *n = f->n;
	uint64_t size, blk;
	uint32_t bs = fs->bs;
	int err;

	if (whence != SEEK_DATA && whence != SEEK_HOLE)
		return -EINVAL;
	if (f->rgn) {
		/* All data, no hole before the end. */
		size = mfs_region_size(f->rgn);
		if (off >= size)
			return -ENXIO;
		*out = whence == SEEK_DATA ? off : size;
		return 0;
	}
	if (!n || !S_ISREG(node_mode(n)) || !n->map)
		return -EINVAL;
	pthread_mutex_lock(&n->lock);
	size = node_size(n);
	pthread_mutex_unlock(&n->lock);
	if (off >= size)
		return -ENXIO;
	err = mfs_bmap_seek(n, off / bs, UT_DIV_ROUND_UP(size, bs),
			    whence == SEEK_DATA, &blk);
	if (err)
		return err;
	if (blk * bs >= size)
		return whence == SEEK_DATA ? -ENXIO : (*out = size, 0);
	*out = UT_MAX(off, blk * bs);
	return 0;
}

/* ---- write --------------------------------------------------------------- */

/* The page at @idx, locked and mapped to a block (*@pblk, *@isnew if the
 * write gave it), ready for bytes [@in, @in + @len) of it. */
static int write_begin(struct mfs_node *n, struct jnl_handle *h, uint64_t idx,
		       uint32_t in, size_t len, struct pc_page **out,
		       uint64_t *pblk, bool *isnew)
{
	uint32_t bs = n->fs->bs;
	bool whole = in == 0 && len == bs;
	struct pc_page *pg;
	int err;

	if (!whole && idx * bs < node_size(n)) {
		err = pc_read_cache_page(n->map, idx, &pg);   /* the rest of it */
		if (err)
			return err;
		pc_lock_page(pg);
	} else {
		err = pc_find_or_create_page(n->map, idx, &pg);
		if (err)
			return err;
	}
	err = mfs_bmap_alloc(n, h, idx, pblk, isnew);
	/* A page the write fills whole needs no zeros first: it stays locked
	 * until the bytes are in, and nobody reads a page without its lock. */
	if (!err && !PageUptodate(pg)) {
		if (!whole)
			memset(pg->data, 0, bs);
		SetPageUptodate(pg);
	}
	if (err) {
		pc_unlock_page(pg);
		pc_put_page(pg);
		return err;
	}
	*out = pg;
	return 0;
}

/*
 * The page holds its new bytes.  Journalled data that maps a new block
 * or lies past the old end of file goes into this handle, with the
 * metadata that makes it part of the file; any other page is dirtied,
 * which for journalled data defers it (jdata.c).
 */
static int write_done(struct mfs_node *n, struct jnl_handle *h,
		      struct pc_page *pg, uint64_t pblk, bool grows)
{
	int err = 0;

	if (atomic_load(&n->jdata) && grows) {
		err = jnl_journal_data(h, pg, pblk);
		if (!err) {
			atomic_fetch_add(&n->fs->st.jdata_journalled, 1);
			return 0;
		}
	}
	pc_set_page_dirty(pg);     /* and on an error, the bytes are kept */
	return err;
}

static int write_chunk(struct mfs_node *n, struct jnl_handle *h, unsigned pages,
		       const char *buf, size_t size, uint64_t off, size_t *done)
{
	uint32_t bs = n->fs->bs;
	uint64_t old_size = node_size(n);
	int err = 0;

	for (unsigned i = 0; i < pages && *done < size && !err; i++) {
		uint64_t pos = off + *done, idx = pos / bs, pblk;
		uint32_t in = (uint32_t)(pos % bs);
		size_t len = UT_MIN((size_t)(bs - in), size - *done);
		struct pc_page *pg;
		bool isnew;

		err = write_begin(n, h, idx, in, len, &pg, &pblk, &isnew);
		if (err)
			break;
		/* Stable pages: the device may still be reading this page for
		 * a write started before; changing it under that copy would
		 * put a mix of two writes on the disk. */
		pc_wait_on_page_writeback(pg);
		memcpy((char *)pg->data + in, buf + *done, len);
		err = write_done(n, h, pg, pblk, isnew || pos + len > old_size);
		pc_unlock_page(pg);
		pc_put_page(pg);
		if (!err)
			*done += len;
	}
	return err;
}

/* Blocks the chunk from @pos may allocate: none when every block it
 * writes is mapped already, so that a rewrite works on a full filesystem. */
static int chunk_blocks(struct mfs_node *n, unsigned pages, uint64_t pos,
			size_t left, uint64_t *resv)
{
	uint32_t bs = n->fs->bs;
	uint64_t first = pos / bs, hole;
	uint64_t end = UT_MIN(first + pages, UT_DIV_ROUND_UP(pos + left, bs));
	int err = mfs_bmap_seek(n, first, end, false, &hole);

	if (!err)
		*resv = hole < end ? mfs_bmap_worst(n->fs, end - first) : 0;
	return err;
}

/* Journalled data may log each page of the chunk too, and the zeroed
 * tail of the old last block. */
static uint32_t chunk_credits(struct mfs_node *n, unsigned pages)
{
	return MFS_CR_INODE + pages * 3 + 12 +
	       (atomic_load(&n->jdata) ? pages + 1 : 0);
}

/* Pages one handle writes: fewer for journalled data when the journal's
 * transactions are small (a small log, a small cache), so that its
 * handles still fit where those of ordered data do. */
static unsigned chunk_pages(struct mfs_node *n)
{
	uint32_t max = atomic_load(&n->jdata) ? jnl_max_credits(n->fs->j) : UINT32_MAX;
	unsigned pages = WRITE_CHUNK;

	while (pages > 1 && chunk_credits(n, pages) > max)
		pages--;
	return pages;
}

/* After a chunk: the size, the times and the inode. */
static int write_end(struct mfs_node *n, struct jnl_handle *h, uint64_t end,
		     uint64_t blocks_before)
{
	bool data;

	pthread_mutex_lock(&n->lock);
	data = end > le64toh(n->raw.i_size) ||
	       le64toh(n->raw.i_blocks) != blocks_before;
	if (end > le64toh(n->raw.i_size))
		n->raw.i_size = htole64(end);
	mfs_node_touch(n, true, true);
	pthread_mutex_unlock(&n->lock);
	return mfs_inode_write(n, h, data);
}

static int write_locked(struct mfs_node *n, const struct mfs_cred *cr,
			const char *buf, size_t size, uint64_t off, size_t *done)
{
	struct mfs_fs *fs = n->fs;
	int err = 0;

	while (*done < size && !err) {
		uint64_t resv, since = mfs_blocks_allocated();
		uint64_t blocks = le64toh(n->raw.i_blocks), start = *done;
		unsigned pages = chunk_pages(n);
		struct jnl_handle h;

		err = chunk_blocks(n, pages, off + *done, size - *done, &resv);
		if (!err)
			err = mfs_reserve_blocks(fs, cr, resv);
		if (err)
			break;
		err = mfs_jstart(fs, chunk_credits(n, pages), &h);
		if (!err && off + size > node_size(n))
			err = mfs_zero_eof_tail(n, &h, node_size(n));
		if (!err) {
			err = write_chunk(n, &h, pages, buf, size, off, done);
			if (*done > start)
				err = mfs_jstop(fs, &h, err ? err :
						write_end(n, &h, off + *done, blocks));
			else
				err = mfs_jstop(fs, &h, err);
		}
		mfs_reserve_end(fs, resv, since);
		if (!err)
			err = mfs_jdata_balance(n);
		pc_balance_dirty(fs->cache);
	}
	return err;
}

ssize_t mfs_write(struct mfs_fs *fs, const struct mfs_cred *cr,
		  struct mfs_file *f, const void *buf, size_t size, uint64_t off,
		  unsigned int flags)
{
	struct mfs_node *n = f->n;
	uint64_t max = fmt_max_file_size(fs->bs);
	size_t done = 0;
	int err;

	if (f->rgn && !(mfs_open_mask(f->flags) & W_OK))
		return -EBADF;
	if (f->rgn)
		return mfs_region_write(fs, f->rgn, buf, size, off);
	err = n ? mfs_check_rw(fs) : -EBADF;
	if (err)
		return err;
	if (!S_ISREG(node_mode(n)))
		return S_ISDIR(node_mode(n)) ? -EISDIR : -EINVAL;
	if (!(mfs_open_mask(f->flags) & W_OK))
		return -EBADF;
	pthread_rwlock_wrlock(&n->rwsem);
	err = mfs_check_flags(n, false);     /* made immutable since the open */
	if ((f->flags & O_APPEND) && !(flags & MFS_WRITE_AT))
		off = node_size(n);
	if (!err && off >= max && size)
		err = -EFBIG;
	size = UT_MIN((uint64_t)size, max - UT_MIN(off, max));
	if (!err && size)
		err = mfs_kill_suid(n, cr);
	if (!err)
		err = write_locked(n, cr, buf, size, off, &done);
	pthread_rwlock_unlock(&n->rwsem);
	atomic_fetch_add(&fs->st.writes, 1);
	if (done)
		err = mfs_sync_if_flagged(n, false);
	return done && !err ? (ssize_t)done : err;
}

void mfs_set_attr_changed(struct mfs_fs *fs, mfs_attr_changed_fn fn, void *arg)
{
	fs->attr_changed_fn = fn;
	fs->attr_changed_arg = arg;
}

/* ---- fsync --------------------------------------------------------------- */

int mfs_fsync_node(struct mfs_node *n, bool datasync)
{
	struct mfs_fs *fs = n->fs;
	uint64_t mark = 0;
	uint32_t tid;
	bool wait;
	int err, e = 0;

	atomic_fetch_add(&fs->st.fsyncs, 1);
	err = mfs_jdata_flush(n);
	if (!err && n->map && !S_ISDIR(node_mode(n)))
		err = pc_sync_mapping(n->map);
	pthread_mutex_lock(&n->lock);
	tid = datasync ? n->last_data_tid : n->last_tid;
	wait = n->dirty_tid && fs->j;
	pthread_mutex_unlock(&n->lock);
	if (wait) {
		mark = jnl_flush_mark(fs->j);
		e = jnl_commit_wait(fs->j, tid);
	}
	err = err ? err : e;
	/* The data written above is durable once a flush issued after it
	 * has completed: the commit's own, or this one. */
	if (!wait || !jnl_flushed_since(fs->j, mark))
		e = bdev_flush(fs->bd);
	return err ? err : e;
}

int mfs_fsync(struct mfs_fs *fs, uint64_t ino, bool datasync)
{
	struct mfs_node *n;
	int err;

	if (mfs_special_ino(ino))
		return mfs_special_fsync(fs, ino);
	err = mfs_iget(fs, ino, &n);
	if (err)
		return err;
	err = mfs_fsync_node(n, datasync);
	mfs_iput(n);
	return err;
}

/* ---- directories --------------------------------------------------------- */

int mfs_opendir(struct mfs_fs *fs, const struct mfs_cred *cr, uint64_t ino,
		struct mfs_dir **out)
{
	struct mfs_node *n = NULL;
	struct mfs_dir *d;
	int err;

	if (mfs_special_ino(ino)) {
		err = mfs_special_opendir(fs, ino);
		d = err ? NULL : calloc(1, sizeof(*d));
		if (d)
			d->ino = ino;
		*out = d;
		return err ? err : d ? 0 : -ENOMEM;
	}
	err = mfs_iget(fs, ino, &n);
	if (err)
		return err;
	if (!S_ISDIR(node_mode(n)))
		err = -ENOTDIR;
	if (!err)
		err = mfs_permission(n, cr, R_OK);
	d = err ? NULL : calloc(1, sizeof(*d));
	if (!err && !d)
		err = -ENOMEM;
	if (err) {
		mfs_iput(n);
		return err;
	}
	d->n = n;
	*out = d;
	return 0;
}

/* The root's blocks, then what special.c lists after them. */
struct root_fill {
	mfs_filldir_t fill;
	void *ctx;
	bool full;
};

static int root_fill(void *ctx, const char *name, size_t namelen, uint64_t ino,
		     unsigned int type, uint64_t next, const struct stat *st,
		     uint64_t gen)
{
	struct root_fill *rf = ctx;

	rf->full = rf->fill(rf->ctx, name, namelen, ino, type, next, st, gen) != 0;
	return rf->full;
}

static int root_iterate(struct mfs_node *root, uint64_t off, bool plus,
			mfs_filldir_t fill, void *ctx)
{
	struct root_fill rf = { fill, ctx, false };
	int err = mfs_dir_iterate(root, off, plus, root_fill, &rf);

	if (err || rf.full)
		return err;
	return mfs_special_readdir_root(root->fs, off, plus, fill, ctx);
}

int mfs_readdir(struct mfs_fs *fs, struct mfs_dir *d, uint64_t off, bool plus,
		mfs_filldir_t fill, void *ctx)
{
	int err;

	if (!d->n)
		return mfs_special_readdir(fs, d->ino, off, plus, fill, ctx);
	pthread_rwlock_rdlock(&d->n->rwsem);
	err = d->n->ino == MFS_ROOT_INO ? root_iterate(d->n, off, plus, fill, ctx) :
	      mfs_dir_iterate(d->n, off, plus, fill, ctx);
	pthread_rwlock_unlock(&d->n->rwsem);
	if (!err)
		touch_atime(d->n);
	return err;
}

int mfs_releasedir(struct mfs_fs *fs, struct mfs_dir *d)
{
	(void)fs;
	if (d->n)
		mfs_iput(d->n);
	free(d);
	return 0;
}
