/*
 * file.c - what open files and directories of the disk do: open, read,
 * write, SEEK_DATA/SEEK_HOLE, fsync, release, and reading a directory
 * (the calls of mfs.h that lead here are in vfs_file.c).
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
#include "kinds.h"
#include "vfs.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Pages per write handle. */
#define WRITE_CHUNK 16u

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

int mfs_disk_open(struct mfs_node *n, const struct mfs_cred *cr, int flags,
		  struct mfs_file *f)
{
	int err = open_checks(n, cr, flags);

	if (!err && (flags & O_TRUNC) && (mfs_open_mask(flags) & W_OK))
		err = open_trunc(n, cr);
	if (!err)
		mfs_disk_opened(f);
	return err;
}

void mfs_disk_opened(struct mfs_file *f)
{
	pthread_mutex_init(&f->ra_lock, NULL);
	pc_ra_init(&f->ra);
	mfs_node_opened(f->n, 1);
	f->fops = &mfs_disk_fops;
}

void mfs_disk_release(struct mfs_file *f)
{
	mfs_node_opened(f->n, -1);
	pthread_mutex_destroy(&f->ra_lock);
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

bool mfs_disk_keep_cache(struct mfs_file *f)
{
	struct timespec now;

	mfs_now(&now);
	return !atime_due(f->n, &now);
}

static void touch_atime(struct mfs_node *n)
{
	struct mfs_handle h;
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

ssize_t mfs_disk_read(struct mfs_file *f, void *buf, size_t size, uint64_t off)
{
	struct mfs_node *n = f->n;
	struct mfs_fs *fs = n->fs;
	uint32_t bs = fs->bs;
	uint64_t isize, end, last, limit;
	size_t done = 0;
	int err = 0;

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
int mfs_disk_lseek(struct mfs_file *f, uint64_t off, int whence, uint64_t *out)
{
	struct mfs_node *n = f->n;
	uint64_t size, blk;
	uint32_t bs = n->fs->bs;
	int err;

	if (!S_ISREG(node_mode(n)) || !n->map)
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
static int write_begin(struct mfs_node *n, struct mfs_handle *h, uint64_t idx,
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
static int write_done(struct mfs_node *n, struct mfs_handle *h,
		      struct pc_page *pg, uint64_t pblk, bool grows)
{
	int err = 0;

	if (atomic_load(&n->jdata) && grows) {
		err = jnl_journal_data(&h->jh, pg, pblk);
		if (!err) {
			atomic_fetch_add(&n->fs->st.jdata_journalled, 1);
			return 0;
		}
	}
	pc_set_page_dirty(pg);     /* and on an error, the bytes are kept */
	return err;
}

static int write_chunk(struct mfs_node *n, struct mfs_handle *h, unsigned pages,
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
static int write_end(struct mfs_node *n, struct mfs_handle *h, uint64_t end,
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
		uint64_t blocks = le64toh(n->raw.i_blocks), start = *done, want;
		unsigned pages = chunk_pages(n);
		struct mfs_resv resv;
		struct mfs_handle h;

		err = chunk_blocks(n, pages, off + *done, size - *done, &want);
		if (!err)
			err = mfs_reserve_blocks(fs, cr, want, &resv);
		if (err)
			break;
		err = mfs_jstart_resv(fs, chunk_credits(n, pages), &resv, &h);
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
		mfs_reserve_end(fs, &resv);
		if (!err)
			err = mfs_jdata_balance(n);
		pc_balance_dirty(fs->cache);
	}
	return err;
}

ssize_t mfs_disk_write(struct mfs_file *f, const struct mfs_cred *cr,
		       const void *buf, size_t size, uint64_t off,
		       unsigned int flags)
{
	struct mfs_node *n = f->n;
	struct mfs_fs *fs = n->fs;
	uint64_t max = fmt_max_file_size(fs->bs);
	size_t done = 0;
	int err = mfs_check_rw(fs);

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
	return done ? (ssize_t)done : err;
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

int mfs_dir_readdir(struct mfs_node *dir, uint64_t off, bool plus,
		    mfs_filldir_t fill, void *ctx)
{
	int err;

	pthread_rwlock_rdlock(&dir->rwsem);
	err = mfs_dir_iterate(dir, off, plus, fill, ctx);
	pthread_rwlock_unlock(&dir->rwsem);
	if (!err)
		touch_atime(dir);
	return err;
}
