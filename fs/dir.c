/*
 * dir.c - directory blocks: every access to the record layout is here.
 *
 * A directory's blocks are pages of its own mapping.  Each page is checked
 * once, when it is first used after being read (mfs_dirblock_check, the
 * same rules the tools apply), under its page lock, and then marked with
 * PG_fs_misc; a bad page gets PG_error as well, one log line naming the
 * directory and the block, and -EIO for every operation that needs it.
 * Later walkers trust a marked page's rec_len and name_len.
 *
 * Changes happen under the directory's rwsem held for writing and a
 * journal handle: the page is journalled at its home block and never
 * dirtied in the page cache.  Readers hold the rwsem for reading.
 */
#include "mfs_i.h"

#include <errno.h>
#include <inttypes.h>
#include <string.h>

uint8_t mfs_mode_to_ft(uint16_t mode)
{
	switch (mode & S_IFMT) {
	case S_IFREG: return MFS_FT_REG_FILE;
	case S_IFDIR: return MFS_FT_DIR;
	case S_IFCHR: return MFS_FT_CHRDEV;
	case S_IFBLK: return MFS_FT_BLKDEV;
	case S_IFIFO: return MFS_FT_FIFO;
	case S_IFSOCK: return MFS_FT_SOCK;
	case S_IFLNK: return MFS_FT_SYMLINK;
	default: return MFS_FT_UNKNOWN;
	}
}

static uint32_t dir_end(struct mfs_fs *fs)
{
	return fs->bs - MFS_DIR_TAIL_SIZE;
}

static struct mfs_dirent *dirent_at(struct pc_page *pg, uint32_t off)
{
	return (struct mfs_dirent *)((char *)pg->data + off);
}

static uint64_t dir_blocks(struct mfs_node *dir)
{
	uint64_t size;

	pthread_mutex_lock(&dir->lock);
	size = le64toh(dir->raw.i_size);
	pthread_mutex_unlock(&dir->lock);
	return size / dir->fs->bs;
}

/* ---- reading and checking ------------------------------------------------ */

static void check_page(struct mfs_node *dir, uint64_t lblk, struct pc_page *pg)
{
	struct mfs_fs *fs = dir->fs;
	char why[256];

	if (PageMiscFS(pg) || PageError(pg))
		return;
	atomic_fetch_add(&fs->st.dir_checked, 1);
	if (!mfs_dirblock_check(&fs->sb, dir->ino, pg->data, why, sizeof(why))) {
		SetPageMiscFS(pg);
		return;
	}
	atomic_fetch_add(&fs->st.dir_bad, 1);
	SetPageError(pg);
	mfs_error(fs, "directory %" PRIu32 ", block %" PRIu64 ": %s", dir->ino,
		  lblk, why);
}

int mfs_dir_page(struct mfs_node *dir, uint64_t lblk, struct pc_page **out)
{
	struct pc_page *pg;
	int err = pc_read_cache_page(dir->map, lblk, &pg);

	if (err)
		return err;
	if (!PageMiscFS(pg)) {
		pc_lock_page(pg);
		check_page(dir, lblk, pg);
		pc_unlock_page(pg);
	}
	if (!PageMiscFS(pg)) {
		pc_put_page(pg);
		return -EIO;
	}
	*out = pg;
	return 0;
}

/* ---- finding names ------------------------------------------------------- */

static bool name_is(const struct mfs_dirent *de, const char *name, size_t len)
{
	return de->inode && de->name_len == len && !memcmp(de->name, name, len);
}

/* Look for @name in block @lblk; 1 and @loc if found. */
static int find_in_block(struct mfs_node *dir, uint64_t lblk, const char *name,
			 size_t len, struct mfs_dirloc *loc)
{
	uint32_t end = dir_end(dir->fs), off = 0, prev = 0;
	struct pc_page *pg;
	int err = mfs_dir_page(dir, lblk, &pg), found = 0;

	if (err)
		return err;
	while (off < end && !found) {
		const struct mfs_dirent *de = dirent_at(pg, off);

		if (name_is(de, name, len)) {
			*loc = (struct mfs_dirloc){ lblk, off, prev, le32toh(de->inode),
						    de->file_type };
			found = 1;
		}
		prev = off;
		off += le16toh(de->rec_len);
	}
	pc_put_page(pg);
	return found;
}

int mfs_dir_find(struct mfs_node *dir, const char *name, size_t len,
		 struct mfs_dirloc *loc)
{
	uint64_t n = dir_blocks(dir);
	int err = 0;

	for (uint64_t b = 0; b < n && !err; b++)
		err = find_in_block(dir, b, name, len, loc);
	if (err < 0)
		return err;
	return err ? 0 : -ENOENT;
}

/* ---- changing blocks ----------------------------------------------------- */

/* Journal access to block @lblk of @dir; the page is referenced. */
static int dir_access(struct mfs_node *dir, struct jnl_handle *h, uint64_t lblk,
		      struct pc_page **pg, uint64_t *pblk)
{
	int err = mfs_bmap_lookup(dir, lblk, pblk);

	if (!err && !*pblk)
		err = mfs_error(dir->fs, "directory %" PRIu32 ": block %" PRIu64
				" is a hole", dir->ino, lblk);
	if (!err)
		err = mfs_dir_page(dir, lblk, pg);
	if (err)
		return err;
	err = jnl_get_write_access(h, *pg, *pblk);
	if (err)
		pc_put_page(*pg);
	return err;
}

/* Page locked: the checksum after a change. */
static void dir_seal(struct mfs_node *dir, struct pc_page *pg)
{
	mfs_block_set_csum(&dir->fs->sb, MFS_CSUM_DIR, dir->ino, pg->data);
}

static int dir_done(struct mfs_node *dir, struct jnl_handle *h, uint64_t pblk,
		    struct pc_page *pg)
{
	int err = jnl_dirty(h, pblk);

	(void)dir;
	pc_put_page(pg);
	return err;
}

static void put_entry(struct mfs_dirent *de, uint32_t rec, const char *name,
		      size_t len, uint32_t ino, uint8_t type)
{
	de->inode = htole32(ino);
	de->rec_len = htole16((uint16_t)rec);
	de->name_len = (uint8_t)len;
	de->file_type = type;
	memcpy(de->name, name, len);
}

/* Offset of a record with room for @need bytes in @pg, or the end. */
static uint32_t find_room(struct mfs_node *dir, struct pc_page *pg, uint32_t need)
{
	uint32_t end = dir_end(dir->fs), off = 0;

	while (off < end) {
		const struct mfs_dirent *de = dirent_at(pg, off);
		uint32_t rec = le16toh(de->rec_len);
		uint32_t used = de->inode ? MFS_DIRENT_LEN(de->name_len) : 0;

		if (rec - used >= need)
			return off;
		off += rec;
	}
	return end;
}

/* Insert into the record at @off of a locked page, which has room. */
static void insert_at(struct pc_page *pg, uint32_t off, const char *name,
		      size_t len, uint32_t ino, uint8_t type)
{
	struct mfs_dirent *de = dirent_at(pg, off);
	uint32_t rec = le16toh(de->rec_len);
	uint32_t used = de->inode ? MFS_DIRENT_LEN(de->name_len) : 0;

	if (used) {
		de->rec_len = htole16((uint16_t)used);
		de = dirent_at(pg, off + used);
		rec -= used;
	}
	put_entry(de, rec, name, len, ino, type);
}

static int add_to_block(struct mfs_node *dir, struct jnl_handle *h, uint64_t lblk,
			const char *name, size_t len, uint32_t ino, uint8_t type)
{
	uint32_t need = MFS_DIRENT_LEN(len), off;
	struct pc_page *pg;
	uint64_t pblk;
	int err = mfs_dir_page(dir, lblk, &pg);

	if (err)
		return err;
	off = find_room(dir, pg, need);
	pc_put_page(pg);
	if (off >= dir_end(dir->fs))
		return 0;
	err = dir_access(dir, h, lblk, &pg, &pblk);
	if (err)
		return err;
	pc_lock_page(pg);
	insert_at(pg, off, name, len, ino, type);
	dir_seal(dir, pg);
	pc_unlock_page(pg);
	err = dir_done(dir, h, pblk, pg);
	return err ? err : 1;
}

/* A new block @lblk for @dir, holding one unused record (or the first
 * entries of a new directory, filled by @fill). */
static int new_block(struct mfs_node *dir, struct jnl_handle *h, uint64_t lblk,
		     struct pc_page **out, uint64_t *pblk)
{
	struct mfs_fs *fs = dir->fs;
	struct mfs_dir_tail *tail;
	struct pc_page *pg;
	bool isnew;
	int err = mfs_bmap_alloc(dir, h, lblk, pblk, &isnew);

	if (!err)
		err = pc_find_or_create_page(dir->map, lblk, &pg);
	if (err)
		return err;
	err = jnl_get_write_access(h, pg, *pblk);
	if (!err) {
		memset(pg->data, 0, fs->bs);
		dirent_at(pg, 0)->rec_len = htole16((uint16_t)dir_end(fs));
		tail = (void *)((char *)pg->data + dir_end(fs));
		tail->det_rec_len = htole16(MFS_DIR_TAIL_SIZE);
		tail->det_type = MFS_FT_DIR_TAIL;
		dir_seal(dir, pg);
		ClearPageError(pg);
		SetPageUptodate(pg);
		SetPageMiscFS(pg);
	}
	if (err) {
		pc_unlock_page(pg);
		pc_put_page(pg);
		return err;
	}
	pthread_mutex_lock(&dir->lock);
	dir->raw.i_size = htole64((lblk + 1) * fs->bs);
	pthread_mutex_unlock(&dir->lock);
	*out = pg;          /* locked */
	return 0;
}

int mfs_dir_add(struct mfs_node *dir, struct jnl_handle *h, const char *name,
		size_t len, uint32_t ino, uint8_t type)
{
	uint64_t n = dir_blocks(dir), pblk;
	struct pc_page *pg;
	int err = 0;

	for (uint64_t b = 0; b < n && !err; b++)
		err = add_to_block(dir, h, b, name, len, ino, type);
	if (err)
		return err < 0 ? err : 0;
	err = new_block(dir, h, n, &pg, &pblk);
	if (err)
		return err;
	insert_at(pg, 0, name, len, ino, type);
	dir_seal(dir, pg);
	pc_unlock_page(pg);
	return dir_done(dir, h, pblk, pg);
}

int mfs_dir_remove(struct mfs_node *dir, struct jnl_handle *h,
		   const struct mfs_dirloc *loc)
{
	struct pc_page *pg;
	uint64_t pblk;
	int err = dir_access(dir, h, loc->lblk, &pg, &pblk);

	if (err)
		return err;
	pc_lock_page(pg);
	if (loc->off) {
		struct mfs_dirent *prev = dirent_at(pg, loc->prev_off);
		struct mfs_dirent *de = dirent_at(pg, loc->off);

		prev->rec_len = htole16((uint16_t)(le16toh(prev->rec_len) +
						   le16toh(de->rec_len)));
	} else {
		dirent_at(pg, 0)->inode = 0;
	}
	dir_seal(dir, pg);
	pc_unlock_page(pg);
	return dir_done(dir, h, pblk, pg);
}

int mfs_dir_set(struct mfs_node *dir, struct jnl_handle *h,
		const struct mfs_dirloc *loc, uint32_t ino, uint8_t type)
{
	struct pc_page *pg;
	uint64_t pblk;
	int err = dir_access(dir, h, loc->lblk, &pg, &pblk);

	if (err)
		return err;
	pc_lock_page(pg);
	dirent_at(pg, loc->off)->inode = htole32(ino);
	dirent_at(pg, loc->off)->file_type = type;
	dir_seal(dir, pg);
	pc_unlock_page(pg);
	return dir_done(dir, h, pblk, pg);
}

int mfs_dir_init(struct mfs_node *dir, struct jnl_handle *h, uint32_t parent)
{
	struct pc_page *pg;
	uint64_t pblk;
	uint32_t dot = MFS_DIRENT_LEN(1);
	int err = new_block(dir, h, 0, &pg, &pblk);

	if (err)
		return err;
	put_entry(dirent_at(pg, 0), dot, ".", 1, dir->ino, MFS_FT_DIR);
	put_entry(dirent_at(pg, dot), dir_end(dir->fs) - dot, "..", 2, parent,
		  MFS_FT_DIR);
	dir_seal(dir, pg);
	pc_unlock_page(pg);
	return dir_done(dir, h, pblk, pg);
}

static bool is_dot(const struct mfs_dirent *de)
{
	return (de->name_len == 1 && de->name[0] == '.') ||
	       (de->name_len == 2 && de->name[0] == '.' && de->name[1] == '.');
}

/* 1 if only "." and ".." are left, 0 if not, or -errno. */
int mfs_dir_is_empty(struct mfs_node *dir)
{
	uint64_t n = dir_blocks(dir);
	uint32_t end = dir_end(dir->fs);
	int empty = 1;

	for (uint64_t b = 0; b < n && empty == 1; b++) {
		struct pc_page *pg;
		int err = mfs_dir_page(dir, b, &pg);

		if (err)
			return err;
		for (uint32_t off = 0; off < end && empty;) {
			const struct mfs_dirent *de = dirent_at(pg, off);

			if (de->inode && !is_dot(de))
				empty = 0;
			off += le16toh(de->rec_len);
		}
		pc_put_page(pg);
	}
	return empty;
}

void mfs_dirhash_free(struct mfs_node *dir)
{
	(void)dir;
}

/* ---- readdir ------------------------------------------------------------- */

struct rd {
	struct mfs_node *dir;
	bool plus;
	mfs_filldir_t fill;
	void *ctx;
};

static int report(struct rd *r, const struct mfs_dirent *de, uint64_t next)
{
	struct mfs_fs *fs = r->dir->fs;
	struct mfs_node *child = NULL;
	struct stat st, *stp = NULL;
	uint64_t gen = 0;
	int full, err;

	if (r->plus && !is_dot(de)) {
		err = mfs_iget(fs, le32toh(de->inode), &child);
		if (err)
			return err;
		mfs_node_fill_stat(child, &st);
		stp = &st;
		gen = le32toh(child->raw.i_generation);
	}
	full = r->fill(r->ctx, de->name, de->name_len, le32toh(de->inode),
		       de->file_type, next, stp, gen);
	if (child) {
		if (!full)
			mfs_iget_lookup(child);
		mfs_iput(child);
	}
	return full ? 1 : 0;
}

/* Report the records of block @lblk from byte @start on; 1 when @fill
 * is full.  A @start inside a record (one merged away since) resumes at
 * the next record start. */
static int readdir_block(struct rd *r, uint64_t lblk, uint32_t start)
{
	uint32_t bs = r->dir->fs->bs, end = dir_end(r->dir->fs), off = 0;
	struct pc_page *pg;
	int err = mfs_dir_page(r->dir, lblk, &pg);

	if (err)
		return err;
	while (!err && off < end) {
		const struct mfs_dirent *de = dirent_at(pg, off);
		uint32_t next = off + le16toh(de->rec_len);
		uint64_t pos = lblk * bs + (next >= end ? bs : next);

		if (off >= start && de->inode)
			err = report(r, de, pos);
		off = next;
	}
	pc_put_page(pg);
	return err;
}

int mfs_dir_iterate(struct mfs_node *dir, uint64_t pos, bool plus,
		    mfs_filldir_t fill, void *ctx)
{
	struct rd r = { dir, plus, fill, ctx };
	uint64_t n = dir_blocks(dir), bs = dir->fs->bs;
	int err = 0;

	for (uint64_t b = pos / bs; b < n && !err; b++)
		err = readdir_block(&r, b, b == pos / bs ? (uint32_t)(pos % bs) : 0);
	return err < 0 ? err : 0;
}
