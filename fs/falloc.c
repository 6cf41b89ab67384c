/*
 * falloc.c - fallocate(2) and copy_file_range(2).
 *
 * Preallocated blocks are ordinary mapped blocks (the format has no
 * "unwritten" state): they are zeroed on the disk before they are mapped
 * (mfs_bmap_prealloc), so they read as zeros and a crash never shows what
 * a previous owner left in them.  Blocks past i_size (FALLOC_FL_KEEP_SIZE)
 * stay until a truncation to a size at or below the current one frees
 * them.  A punched hole frees its whole blocks with the truncation's
 * range walk, so freed blocks are pended and revoked as truncate's are.
 *
 * Each operation holds the inode's rwsem for writing and goes in chunks,
 * one handle each, after reserving every block it may need: a full
 * filesystem fails it before anything changed.  A crash between chunks
 * leaves a file whose mapped blocks all hold zeros or data, and whose
 * size covers only what was committed.
 */
#include "mfs_i.h"
#include "balloc.h"
#include "blockmap.h"
#include "icache.h"
#include "kinds.h"
#include "vfs.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/falloc.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Blocks per handle of a preallocation, at most. */
#define FALLOC_CHUNK 32u

/* A handle that maps @blocks blocks: bitmaps, descriptors, indirect
 * blocks, the inode, and the zeroed tail of a journalled last block. */
static uint32_t chunk_credits(uint64_t blocks)
{
	return MFS_CR_INODE + (uint32_t)blocks * 3 + 12 + 1;
}

/* Fewer blocks per handle where the journal's transactions are small (a
 * small log, a small cache), as writes take. */
static uint64_t chunk_blocks(struct mfs_fs *fs)
{
	uint32_t max = fs->j ? jnl_max_credits(fs->j) : UINT32_MAX;
	uint64_t blocks = FALLOC_CHUNK;

	while (blocks > 1 && chunk_credits(blocks) > max)
		blocks--;
	return blocks;
}

/* The modes ext3 (a block-mapped ext4) would accept if it preallocated. */
bool mfs_falloc_mode_ok(int mode)
{
	switch (mode & ~FALLOC_FL_KEEP_SIZE) {
	case 0:
	case FALLOC_FL_ZERO_RANGE:
		return true;
	case FALLOC_FL_PUNCH_HOLE:
		return mode & FALLOC_FL_KEEP_SIZE;
	default:
		return false;
	}
}

/* vfs_fallocate's checks, in its order, after those of mfs_fallocate. */
static int falloc_checks(struct mfs_fs *fs, struct mfs_file *f, int mode,
			 uint64_t off, uint64_t len)
{
	struct mfs_node *n = f->n;
	uint32_t fl;

	fl = mfs_node_flags(n);
	if ((mode & ~FALLOC_FL_KEEP_SIZE) && (fl & MFS_APPEND_FL))
		return -EPERM;
	if (fl & MFS_IMMUTABLE_FL)
		return -EPERM;
	if (S_ISFIFO(node_mode(n)))
		return -ESPIPE;
	if (S_ISDIR(node_mode(n)))
		return -EISDIR;
	if (!S_ISREG(node_mode(n)) || !n->map)
		return -ENODEV;
	if (off + len > fmt_max_file_size(fs->bs))
		return -EFBIG;
	return mfs_check_rw(fs);
}

/* Blocks of [@first, @end) that map nowhere. */
static int count_holes(struct mfs_node *n, uint64_t first, uint64_t end,
		       uint64_t *count)
{
	uint64_t pos = first, hole, data;
	int err = 0;

	*count = 0;
	while (pos < end && !err) {
		err = mfs_bmap_seek(n, pos, end, false, &hole);
		if (err || hole >= end)
			break;
		err = mfs_bmap_seek(n, hole, end, true, &data);
		*count += data - hole;
		pos = data;
	}
	return err;
}

/* mtime and ctime, in a handle of their own: ext4 moves both on every
 * fallocate that succeeds, whatever its mode, even one that allocates
 * nothing. */
static int touch_times(struct mfs_node *n)
{
	struct mfs_handle h;
	int err = mfs_jstart(n->fs, MFS_CR_INODE, &h);

	if (err)
		return err;
	pthread_mutex_lock(&n->lock);
	mfs_node_touch(n, true, true);
	pthread_mutex_unlock(&n->lock);
	return mfs_jstop(n->fs, &h, mfs_inode_write(n, &h, false));
}

/* One handle: the holes of blocks [@first, @end) preallocated, and the
 * size raised to @size if that is more. */
static int alloc_chunk(struct mfs_node *n, struct mfs_resv *resv, uint64_t first,
		       uint64_t end, uint64_t size, const void *zeros)
{
	struct mfs_fs *fs = n->fs;
	uint64_t old = node_size(n);
	struct mfs_handle h;
	int err = mfs_jstart_resv(fs, chunk_credits(end - first), resv, &h);

	if (err)
		return err;
	if (size > old)
		err = mfs_zero_eof_tail(n, &h, old);
	if (!err)
		err = mfs_bmap_prealloc(n, &h, first, end, zeros, FALLOC_CHUNK);
	if (!err) {
		pthread_mutex_lock(&n->lock);
		if (size > old)
			n->raw.i_size = htole64(size);
		pthread_mutex_unlock(&n->lock);
		err = mfs_inode_write(n, &h, true);
	}
	return mfs_jstop(fs, &h, err);
}

/* The blocks a preallocation of bytes [@off, @end) may take, reserved
 * before anything changes. */
static int alloc_reserve(struct mfs_node *n, const struct mfs_cred *cr,
			 uint64_t off, uint64_t end, struct mfs_resv *resv)
{
	struct mfs_fs *fs = n->fs;
	uint64_t holes;
	int err = count_holes(n, off / fs->bs, UT_DIV_ROUND_UP(end, fs->bs), &holes);

	*resv = (struct mfs_resv){ 0 };
	if (!err && holes)
		err = mfs_reserve_blocks(fs, cr, mfs_bmap_worst(fs, holes), resv);
	return err;
}

/* Preallocate bytes [@off, @end) (reserved); the size grows to @end
 * unless @keep. */
static int alloc_blocks(struct mfs_node *n, struct mfs_resv *resv, uint64_t off,
			uint64_t end, bool keep)
{
	struct mfs_fs *fs = n->fs;
	uint64_t first = off / fs->bs, last = UT_DIV_ROUND_UP(end, fs->bs);
	uint64_t chunk = chunk_blocks(fs);
	void *zeros = bdev_alloc_buf((size_t)FALLOC_CHUNK * fs->bs);
	int err = zeros ? 0 : -ENOMEM;

	if (zeros)
		memset(zeros, 0, (size_t)FALLOC_CHUNK * fs->bs);
	for (uint64_t b = first; b < last && !err; b += chunk) {
		uint64_t cend = UT_MIN(b + chunk, last), hole;
		uint64_t size = keep ? 0 : UT_MIN(end, cend * fs->bs);

		err = mfs_bmap_seek(n, b, cend, false, &hole);
		if (!err && (hole < cend || size > node_size(n)))
			err = alloc_chunk(n, resv, b, cend, size, zeros);
		pc_balance_dirty(fs->cache);
	}
	bdev_free_buf(zeros);
	return err;
}

static int alloc_range(struct mfs_node *n, const struct mfs_cred *cr,
		       uint64_t off, uint64_t end, bool keep)
{
	struct mfs_resv resv;
	int err = alloc_reserve(n, cr, off, end, &resv);

	if (!err)
		err = alloc_blocks(n, &resv, off, end, keep);
	mfs_reserve_end(n->fs, &resv);
	return err;
}

/* Zero bytes [@from, @to) of one block through the cache, if the block
 * is mapped (a hole reads as zeros already). */
static int zero_part(struct mfs_node *n, uint64_t from, uint64_t to)
{
	uint32_t bs = n->fs->bs, in = (uint32_t)(from % bs);
	struct pc_page *pg;
	uint64_t pblk;
	int err;

	if (from >= to)
		return 0;
	err = mfs_bmap_lookup(n, from / bs, &pblk);
	if (err || !pblk)
		return err;
	err = pc_read_cache_page(n->map, from / bs, &pg);
	if (err)
		return err;
	pc_lock_page(pg);
	pc_wait_on_page_writeback(pg);     /* stable pages, as in a write */
	memset((char *)pg->data + in, 0, to - from);
	pc_set_page_dirty(pg);
	pc_unlock_page(pg);
	pc_put_page(pg);
	return 0;
}

/* Bytes [@off, @end) of a file: the partial blocks at either end. */
static int zero_edges(struct mfs_node *n, uint64_t off, uint64_t end,
		      uint64_t *first, uint64_t *last)
{
	uint32_t bs = n->fs->bs;
	int err;

	*first = UT_DIV_ROUND_UP(off, bs);
	*last = end / bs;
	if (*first > *last) {               /* inside one block */
		*last = *first;
		return zero_part(n, off, end);
	}
	err = zero_part(n, off, *first * bs);
	if (!err)
		err = zero_part(n, *last * bs, end);
	return err;
}

static int punch_range(struct mfs_node *n, uint64_t off, uint64_t end)
{
	uint64_t first, last;
	int err = zero_edges(n, off, end, &first, &last);

	if (err)
		return err;
	/* No page of the hole may be written back to a block freed. */
	pc_truncate_pages(n->map, first, last);
	err = mfs_bmap_free_range(n, first, last);
	/* A read takes no inode lock: one between the two may have cached a
	 * block of the hole as it was before its free.  Past the free, a
	 * page read again finds the hole. */
	pc_truncate_pages(n->map, first, last);
	return err;
}

/* Every mapped whole block of [@first, @last) to zeros in the cache. */
static int zero_mapped(struct mfs_node *n, uint64_t first, uint64_t last)
{
	uint64_t b = first, end;
	int err = 0;

	while (b < last && !err) {
		err = mfs_bmap_seek(n, b, last, true, &b);
		if (!err && b < last)
			err = mfs_bmap_seek(n, b, last, false, &end);
		for (; !err && b < last && b < end; b++) {
			struct pc_page *pg;

			err = pc_find_or_create_page(n->map, b, &pg);
			if (err)
				break;
			pc_wait_on_page_writeback(pg);
			memset(pg->data, 0, n->fs->bs);
			SetPageUptodate(pg);
			pc_set_page_dirty(pg);
			pc_unlock_page(pg);
			pc_put_page(pg);
		}
		pc_balance_dirty(n->fs->cache);
	}
	return err;
}

/* Data turns to zeros in the cache; holes get zeroed blocks, reserved
 * first, so that a full filesystem changes nothing. */
static int zero_range(struct mfs_node *n, const struct mfs_cred *cr,
		      uint64_t off, uint64_t end, bool keep)
{
	uint64_t first, last;
	struct mfs_resv resv;
	int err = alloc_reserve(n, cr, off, end, &resv);

	if (!err)
		err = zero_edges(n, off, end, &first, &last);
	if (!err)
		err = zero_mapped(n, first, last);
	if (!err)
		err = alloc_blocks(n, &resv, off, end, keep);
	mfs_reserve_end(n->fs, &resv);
	return err;
}

/* rwsem held for writing. */
static int falloc_locked(struct mfs_node *n, const struct mfs_cred *cr, int mode,
			 uint64_t off, uint64_t len)
{
	bool keep = mode & FALLOC_FL_KEEP_SIZE;
	int err;

	if (mode & FALLOC_FL_PUNCH_HOLE)
		err = punch_range(n, off, off + len);
	else if (mode & FALLOC_FL_ZERO_RANGE)
		err = zero_range(n, cr, off, off + len, keep);
	else
		err = alloc_range(n, cr, off, off + len, keep);
	return err ? err : touch_times(n);
}

int mfs_disk_fallocate(struct mfs_file *f, const struct mfs_cred *cr, int mode,
		       uint64_t off, uint64_t len)
{
	struct mfs_node *n = f->n;
	int err;

	/* The flags are looked at under the rwsem chattr takes. */
	pthread_rwlock_wrlock(&n->rwsem);
	err = falloc_checks(n->fs, f, mode, off, len);
	/* A change of data by another user drops the set-id bits, as a
	 * write does (Linux's file_modified in fallocate). */
	if (!err)
		err = mfs_kill_suid(n, cr);
	if (!err)
		err = falloc_locked(n, cr, mode, off, len);
	pthread_rwlock_unlock(&n->rwsem);
	return err;
}

/* ---- copy_file_range ----------------------------------------------------- */

/* Bytes per read and write of a copy. */
#define COPY_CHUNK (256u * 1024)

/* After those of mfs_copy_file_range. */
static int copy_checks(struct mfs_file *in, uint64_t off_in, struct mfs_file *out,
		       uint64_t off_out, size_t len)
{
	struct mfs_node *ni = in->n, *no = out->n;

	if (S_ISDIR(node_mode(ni)) || S_ISDIR(node_mode(no)))
		return -EISDIR;
	if (!S_ISREG(node_mode(ni)) || !S_ISREG(node_mode(no)) || !ni->map || !no->map)
		return -EINVAL;
	if (off_in > INT64_MAX || len > INT64_MAX - off_in ||
	    off_out > INT64_MAX || len > INT64_MAX - off_out)
		return -EOVERFLOW;
	if (ni == no && off_in < off_out + len && off_out < off_in + len)
		return -EINVAL;
	if (mfs_node_flags(no) & MFS_IMMUTABLE_FL)
		return -EPERM;
	return 0;
}

/* [@off, @off + @len) of @n holds no data: a hole or past the end. */
static int no_data(struct mfs_node *n, uint64_t off, uint64_t len, bool *none)
{
	uint32_t bs = n->fs->bs;
	uint64_t first = off / bs, end = UT_DIV_ROUND_UP(off + len, bs), data;
	int err = mfs_bmap_seek(n, first, end, true, &data);

	*none = !err && (data >= end || off >= node_size(n));
	return err;
}

/* How much of [@off, @off + *@len) of the source is all hole (*@hole) or
 * all data: *@len is cut to that. */
static int src_extent(struct mfs_node *n, uint64_t off, size_t *len, bool *hole)
{
	uint32_t bs = n->fs->bs;
	uint64_t first = off / bs, end = UT_DIV_ROUND_UP(off + *len, bs), next;
	int err = mfs_bmap_seek(n, first, end, true, &next);

	*hole = !err && next > first;
	if (!err && !*hole)
		err = mfs_bmap_seek(n, first, end, false, &next);
	if (!err)
		*len = (size_t)UT_MIN((uint64_t)*len, next * bs - off);
	return err;
}

/* One piece: a hole of the source over a hole of the destination is left
 * alone (no block is allocated for it); anything else is read and
 * written, zeros included. */
static ssize_t copy_piece(struct mfs_fs *fs, const struct mfs_cred *cr,
			  struct mfs_file *in, uint64_t off_in, struct mfs_file *out,
			  uint64_t off_out, size_t len, char *buf)
{
	bool src_hole = false, dst_hole = false;
	ssize_t got;
	int err = src_extent(in->n, off_in, &len, &src_hole);

	if (!err && src_hole)
		err = no_data(out->n, off_out, len, &dst_hole);
	if (err)
		return err;
	if (src_hole && dst_hole)
		return (ssize_t)len;
	got = mfs_read(fs, in, buf, len, off_in);
	if (got <= 0)
		return got;
	return mfs_write(fs, cr, out, buf, (size_t)got, off_out, MFS_WRITE_AT);
}

/* The destination's size covers a copy whose last piece was a hole. */
static int copy_extend(struct mfs_node *n, const struct mfs_cred *cr, uint64_t end)
{
	int err = 0;

	pthread_rwlock_wrlock(&n->rwsem);
	if (end > node_size(n))
		err = mfs_truncate_locked(n, cr, end);
	pthread_rwlock_unlock(&n->rwsem);
	return err;
}

ssize_t mfs_disk_copy_range(const struct mfs_cred *cr, struct mfs_file *in,
			    uint64_t off_in, struct mfs_file *out,
			    uint64_t off_out, size_t len)
{
	struct mfs_fs *fs = in->n->fs;
	uint64_t size, done = 0;
	char *buf;
	int err = copy_checks(in, off_in, out, off_out, len);

	if (err)
		return err;
	size = node_size(in->n);
	len = off_in >= size ? 0 : (size_t)UT_MIN((uint64_t)len, size - off_in);
	buf = len ? malloc(UT_MIN(len, (size_t)COPY_CHUNK)) : NULL;
	if (len && !buf)
		return -ENOMEM;
	while (done < len && !err) {
		size_t piece = (size_t)UT_MIN((uint64_t)COPY_CHUNK, len - done);
		ssize_t n = copy_piece(fs, cr, in, off_in + done, out, off_out + done,
				       piece, buf);

		if (n < 0)
			err = (int)n;
		else if (n == 0)
			break;                  /* the source shrank meanwhile */
		else
			done += (uint64_t)n;
	}
	free(buf);
	if (done && (!err || err == -ENOSPC || err == -EFBIG))
		err = copy_extend(out->n, cr, off_out + done);
	return done ? (ssize_t)done : err;
}
