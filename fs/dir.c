/*
 * dir.c - directory blocks: every access to the record layout is here.
 *
 * A directory's blocks are pages of its own mapping.  Each page is checked
 * once, when it is first used after being read (fmt_dirblock_check, the
 * same rules the tools apply), under its page lock, and then marked with
 * PG_fs_misc; a bad page gets PG_error as well, one log line naming the
 * directory and the block, and -EIO for every operation that needs it.
 * Later walkers trust a marked page's rec_len and name_len.
 *
 * Changes happen under the directory's rwsem held for writing and a
 * journal handle: the page is journalled at its home block and never
 * dirtied in the page cache.  Readers hold the rwsem for reading.
 *
 * With the dir_index feature a directory that grows past its first block
 * gets an index on the disk instead (dx.c): lookups and inserts go
 * through it, and the index in memory below is never built for it.
 *
 * Without it, a directory of INDEX_BLOCKS blocks or more gets an index
 * in memory (dirhash.c) when a name is first looked up or added: built in one
 * sequential read of its blocks, then kept exact here by every change to
 * a block, under dh_lock taken after the page lock is let go.  A lookup
 * then reads the block the index names, an insert the block it says has
 * room, whatever the directory's size.  Without an index (a small
 * directory, a spent memory budget) both walk the blocks in order.
 * Every walk of a block's records counts in st.dir_scans, so that tests
 * can see the work an operation does.
 */
#include "mfs_i.h"
#include "blockmap.h"
#include "dir.h"
#include "icache.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <string.h>

/* Smallest directory worth an index: below it a walk costs little. */
#define INDEX_BLOCKS 4u
/* A lookup falls back to the walk if more places share a name's hash. */
#define MAX_PLACES 8
/* Returned by the index's helpers for a directory without an index. */
#define NO_INDEX 2

static uint32_t dir_end(struct mfs_fs *fs)
{
	return fs->bs - MFS_DIR_TAIL_SIZE;
}

static struct mfs_dirent *dirent_at(struct pc_page *pg, uint32_t off)
{
	return (struct mfs_dirent *)((char *)pg->data + off);
}

static void scanned(struct mfs_node *dir)
{
	atomic_fetch_add_explicit(&dir->fs->st.dir_scans, 1, memory_order_relaxed);
}

/* Bytes of a record its entry uses (0 for an unused record). */
static uint32_t used_len(const struct mfs_dirent *de)
{
	return de->inode ? MFS_DIRENT_LEN(de->name_len) : 0;
}

uint64_t mfs_dir_blocks(struct mfs_node *dir)
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
	if (!fmt_dirblock_check(&fs->sb, dir->ino, pg->data, why, sizeof(why))) {
		SetPageMiscFS(pg);
		return;
	}
	atomic_fetch_add(&fs->st.dir_bad, 1);
	SetPageError(pg);
	mfs_error(fs, "directory %" PRIu64 ", block %" PRIu64 ": %s", dir->ino,
		  lblk, why);
}

/* A page just read is checked once; -EIO (and its reference dropped) if
 * it is bad. */
static int page_checked(struct mfs_node *dir, uint64_t lblk, struct pc_page *pg)
{
	if (!PageMiscFS(pg)) {
		pc_lock_page(pg);
		check_page(dir, lblk, pg);
		pc_unlock_page(pg);
	}
	if (PageMiscFS(pg))
		return 0;
	pc_put_page(pg);
	return -EIO;
}

int mfs_dir_page(struct mfs_node *dir, uint64_t lblk, struct pc_page **out)
{
	struct pc_page *pg;
	int err = pc_read_cache_page(dir->map, lblk, &pg);

	if (!err)
		err = page_checked(dir, lblk, pg);
	if (!err)
		*out = pg;
	return err;
}

/* mfs_dir_page for a reader of blocks @lblk to @n in order: readahead
 * turns the walk into a few large reads. */
static int dir_page_seq(struct mfs_node *dir, struct pc_ra_state *ra, uint64_t lblk,
			uint64_t n, struct pc_page **out)
{
	unsigned nr = (unsigned)UT_MIN(n - lblk, (uint64_t)UINT_MAX);
	struct pc_page *pg;
	int err = pc_read_page_ra(dir->map, ra, lblk, nr, n, &pg);

	if (!err)
		err = page_checked(dir, lblk, pg);
	if (!err)
		*out = pg;
	return err;
}

/* ---- the index ----------------------------------------------------------- */

/* Largest record an insert could place in @pg. */
static uint32_t block_room(struct mfs_node *dir, struct pc_page *pg)
{
	uint32_t end = dir_end(dir->fs), off = 0, room = 0;

	scanned(dir);
	while (off < end) {
		const struct mfs_dirent *de = dirent_at(pg, off);
		uint32_t rec = le16toh(de->rec_len);

		room = UT_MAX(room, rec - used_len(de));
		off += rec;
	}
	return room;
}

/* Block @b's names and room into @dh. */
static int index_block(struct mfs_node *dir, struct mfs_dirhash *dh,
		       struct pc_ra_state *ra, uint64_t b, uint64_t n)
{
	struct mfs_fs *fs = dir->fs;
	uint32_t end = dir_end(fs), off = 0, room = 0;
	struct pc_page *pg;
	int err = dir_page_seq(dir, ra, b, n, &pg);

	if (err)
		return err;
	scanned(dir);
	while (off < end && !err) {
		const struct mfs_dirent *de = dirent_at(pg, off);
		uint32_t rec = le16toh(de->rec_len);

		room = UT_MAX(room, rec - used_len(de));
		if (de->inode)
			err = mfs_dh_add(dh, mfs_dh_hash(fs, de->name, de->name_len), b, off);
		off += rec;
	}
	pc_put_page(pg);
	return err ? err : mfs_dh_set_room(dh, b, room);
}

/* dh_lock held.  A build that fails (memory budget, a bad block) is not
 * tried again for MFS_DH_AGE uses of big directories. */
static void index_build(struct mfs_node *dir, uint64_t now)
{
	struct mfs_fs *fs = dir->fs;
	uint64_t n = mfs_dir_blocks(dir);
	struct mfs_dirhash *dh;
	struct pc_ra_state ra;
	int err = mfs_dh_create(dir, &dh);

	pc_ra_init(&ra);
	for (uint64_t b = 0; b < n && !err; b++) {
		err = index_block(dir, dh, &ra, b, n);
		if (err)
			mfs_dh_destroy(dh);
	}
	if (err) {
		dir->dh_failed = now;
		return;
	}
	dir->dh = dh;
	atomic_fetch_add(&fs->st.dirhash_builds, 1);
}

/* The directory's index, built if it is big enough; NULL: none.
 * dh_lock held. */
static struct mfs_dirhash *index_get(struct mfs_node *dir)
{
	uint64_t now;

	if (!dir->dh && mfs_dir_blocks(dir) < INDEX_BLOCKS)
		return NULL;
	now = atomic_fetch_add(&dir->fs->dh_clock, 1) + 1;
	if (!dir->dh && (!dir->dh_failed || now - dir->dh_failed >= MFS_DH_AGE))
		index_build(dir, now);
	if (dir->dh)
		mfs_dh_touch(dir->dh, now);
	return dir->dh;
}

/* dh_lock held: the index cannot follow (memory, or it disagrees with a
 * block); the directory is walked until it is built again. */
static void index_drop(struct mfs_node *dir)
{
	mfs_dh_destroy(dir->dh);
	dir->dh = NULL;
	atomic_fetch_add(&dir->fs->st.dirhash_drops, 1);
}

/* Block @lblk (page @pg, referenced, unlocked) of @dir gained (@added) or
 * lost the record of @hash at @off. */
static void index_note(struct mfs_node *dir, struct pc_page *pg, uint64_t lblk,
		       uint64_t hash, uint32_t off, bool added)
{
	struct mfs_dirhash *dh;
	int err;

	pthread_mutex_lock(&dir->dh_lock);
	dh = dir->dh;
	if (dh) {
		err = added ? mfs_dh_add(dh, hash, lblk, off) :
			      mfs_dh_del(dh, hash, lblk, off);
		if (!err)
			err = mfs_dh_set_room(dh, lblk, block_room(dir, pg));
		if (err)
			index_drop(dir);
	}
	pthread_mutex_unlock(&dir->dh_lock);
}

void mfs_dirhash_free(struct mfs_node *dir)
{
	pthread_mutex_lock(&dir->dh_lock);
	if (dir->dh)
		mfs_dh_destroy(dir->dh);
	dir->dh = NULL;
	pthread_mutex_unlock(&dir->dh_lock);
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
	scanned(dir);
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

/* 1 and @loc if the record at @at of block @lblk holds @name.  The walk
 * from the block's start finds the record before it, which a removal
 * needs, and proves @at a record's start. */
static int find_at(struct mfs_node *dir, uint64_t lblk, uint32_t at,
		   const char *name, size_t len, struct mfs_dirloc *loc)
{
	uint32_t end = dir_end(dir->fs), off = 0, prev = 0;
	const struct mfs_dirent *de;
	struct pc_page *pg;
	int err = mfs_dir_page(dir, lblk, &pg), found = 0;

	if (err)
		return err;
	scanned(dir);
	while (off < at && off < end) {
		prev = off;
		off += le16toh(dirent_at(pg, off)->rec_len);
	}
	de = dirent_at(pg, off);
	if (off == at && off < end && name_is(de, name, len)) {
		*loc = (struct mfs_dirloc){ lblk, off, prev, le32toh(de->inode),
					    de->file_type };
		found = 1;
	}
	pc_put_page(pg);
	return found;
}

/* Through the index: 0 and @loc, -ENOENT, -errno, or NO_INDEX. */
static int index_find(struct mfs_node *dir, const char *name, size_t len,
		      struct mfs_dirloc *loc)
{
	struct mfs_dh_place pl[MAX_PLACES];
	uint64_t hash = mfs_dh_hash(dir->fs, name, len);
	int n = -1, found = 0;

	pthread_mutex_lock(&dir->dh_lock);
	if (index_get(dir))
		n = mfs_dh_lookup(dir->dh, hash, pl, MAX_PLACES);
	pthread_mutex_unlock(&dir->dh_lock);
	if (n < 0 || n > MAX_PLACES)
		return NO_INDEX;
	atomic_fetch_add(&dir->fs->st.dirhash_hits, 1);
	for (int i = 0; i < n && !found; i++)
		found = find_at(dir, pl[i].lblk, pl[i].off, name, len, loc);
	if (found < 0)
		return found;
	return found ? 0 : -ENOENT;
}

/* Through the index on the disk: 0 and @loc, -ENOENT, -errno, or NO_INDEX
 * for more names of the hash than a lookup takes (then the walk). */
static int dx_find(struct mfs_node *dir, const char *name, size_t len,
		   struct mfs_dirloc *loc)
{
	uint64_t lblks[MAX_PLACES];
	int n = mfs_dx_lookup(dir, fmt_dx_hash(&dir->fs->sb, name, len), lblks,
			      MAX_PLACES), found = 0;

	if (n < 0)
		return n;
	if (n > MAX_PLACES)
		return NO_INDEX;
	for (int i = 0; i < n && !found; i++)
		found = find_in_block(dir, lblks[i], name, len, loc);
	if (found < 0)
		return found;
	return found ? 0 : -ENOENT;
}

int mfs_dir_find(struct mfs_node *dir, const char *name, size_t len,
		 struct mfs_dirloc *loc)
{
	uint64_t n = mfs_dir_blocks(dir);
	int err = mfs_dx_on(dir) ? dx_find(dir, name, len, loc) :
				   index_find(dir, name, len, loc);

	if (err != NO_INDEX)
		return err;
	err = 0;
	for (uint64_t b = 0; b < n && !err; b++)
		err = find_in_block(dir, b, name, len, loc);
	if (err < 0)
		return err;
	return err ? 0 : -ENOENT;
}

/* ---- changing blocks ----------------------------------------------------- */

/* Journal access to block @lblk of @dir; the page is referenced. */
int mfs_dir_access(struct mfs_node *dir, struct mfs_handle *h, uint64_t lblk,
		      struct pc_page **pg, uint64_t *pblk)
{
	int err = mfs_bmap_lookup(dir, lblk, pblk);

	if (!err && !*pblk)
		err = mfs_error(dir->fs, "directory %" PRIu64 ": block %" PRIu64
				" is a hole", dir->ino, lblk);
	if (!err)
		err = mfs_dir_page(dir, lblk, pg);
	if (err)
		return err;
	err = mfs_journal_access(dir->fs, h, *pg, *pblk);
	if (err)
		pc_put_page(*pg);
	return err;
}

/* Page locked: the checksum after a change. */
void mfs_dir_seal(struct mfs_node *dir, struct pc_page *pg)
{
	fmt_block_set_csum(&dir->fs->sb, MFS_CSUM_DIR, dir->ino, pg->data);
}

int mfs_dir_done(struct mfs_node *dir, struct mfs_handle *h, uint64_t pblk,
		    struct pc_page *pg)
{
	int err = jnl_dirty(&h->jh, pblk);

	(void)dir;
	pc_put_page(pg);
	return err;
}

/* An entry to add. */
struct newent {
	const char *name;
	size_t len;
	uint32_t ino;
	uint8_t type;
	uint64_t hash;               /* for the index */
};

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

	scanned(dir);
	while (off < end) {
		const struct mfs_dirent *de = dirent_at(pg, off);
		uint32_t rec = le16toh(de->rec_len);

		if (rec - used_len(de) >= need)
			return off;
		off += rec;
	}
	return end;
}

/* Insert into the record at @off of a locked page, which has room;
 * returns where the new record starts. */
static uint32_t insert_at(struct pc_page *pg, uint32_t off, const struct newent *e)
{
	struct mfs_dirent *de = dirent_at(pg, off);
	uint32_t rec = le16toh(de->rec_len), used = used_len(de);

	if (used) {
		de->rec_len = htole16((uint16_t)used);
		de = dirent_at(pg, off + used);
		rec -= used;
	}
	put_entry(de, rec, e->name, e->len, e->ino, e->type);
	return off + used;
}

/* Where in block @lblk a record of @need bytes fits (the end: nowhere). */
static int room_in(struct mfs_node *dir, uint64_t lblk, uint32_t need, uint32_t *off)
{
	struct pc_page *pg;
	int err = mfs_dir_page(dir, lblk, &pg);

	if (err)
		return err;
	*off = find_room(dir, pg, need);
	pc_put_page(pg);
	return 0;
}

/* Put @e into the record at @off of block @lblk, which has room; the
 * block's room left after it in @room, if wanted. */
static int put_at(struct mfs_node *dir, struct mfs_handle *h, uint64_t lblk,
		  uint32_t off, const struct newent *e, uint32_t *room)
{
	struct pc_page *pg;
	uint64_t pblk;
	int err = mfs_dir_access(dir, h, lblk, &pg, &pblk);

	if (err)
		return err;
	pc_lock_page(pg);
	off = insert_at(pg, off, e);
	mfs_dir_seal(dir, pg);
	if (room)
		*room = block_room(dir, pg);
	pc_unlock_page(pg);
	index_note(dir, pg, lblk, e->hash, off, true);
	return mfs_dir_done(dir, h, pblk, pg);
}

/* 1 if @e went into block @lblk, 0 if it has no room. */
static int add_to_block(struct mfs_node *dir, struct mfs_handle *h, uint64_t lblk,
			const struct newent *e)
{
	uint32_t off;
	int err = room_in(dir, lblk, MFS_DIRENT_LEN(e->len), &off);

	if (!err && off >= dir_end(dir->fs))
		return 0;
	if (!err)
		err = put_at(dir, h, lblk, off, e, NULL);
	return err ? err : 1;
}

/* Walk the @n blocks for room: 1 placed, 0 none has room. */
static int add_walk(struct mfs_node *dir, struct mfs_handle *h, uint64_t n,
		    const struct newent *e)
{
	int placed = 0;

	for (uint64_t b = 0; b < n && !placed; b++)
		placed = add_to_block(dir, h, b, e);
	return placed;
}

/* Through the index: 1 placed, 0 no block has room, -errno, or
 * NO_INDEX. */
static int index_add(struct mfs_node *dir, struct mfs_handle *h, uint64_t n,
		     const struct newent *e)
{
	int64_t b = -1;
	int placed;

	pthread_mutex_lock(&dir->dh_lock);
	if (!index_get(dir)) {
		pthread_mutex_unlock(&dir->dh_lock);
		return NO_INDEX;
	}
	b = mfs_dh_find_room(dir->dh, MFS_DIRENT_LEN(e->len));
	pthread_mutex_unlock(&dir->dh_lock);
	if (b < 0)
		return 0;
	placed = add_to_block(dir, h, (uint64_t)b, e);
	if (placed)
		return placed;
	/* The index said room and the block has none: it cannot be trusted. */
	pthread_mutex_lock(&dir->dh_lock);
	if (dir->dh)
		index_drop(dir);
	pthread_mutex_unlock(&dir->dh_lock);
	return NO_INDEX;
}

/* 1 if a block of @dir's @n has room for @need bytes, 0 if none: the
 * in-memory index's word, checked against its block, or a walk. */
static int has_room(struct mfs_node *dir, uint64_t n, uint32_t need)
{
	uint64_t first = 0, end = n;
	uint32_t off;
	int64_t b = 0;
	int err;

	pthread_mutex_lock(&dir->dh_lock);
	if (index_get(dir)) {
		b = mfs_dh_find_room(dir->dh, need);
		first = (uint64_t)b;
		end = first + 1;
	}
	pthread_mutex_unlock(&dir->dh_lock);
	for (uint64_t l = first; b >= 0 && l < end; l++) {
		err = room_in(dir, l, need, &off);
		if (err || off < dir_end(dir->fs))
			return err ? err : 1;
	}
	return 0;
}

/* A directory of one block that gains an index: its root, room map, the
 * new block, and the root's two children should block 0's records fill
 * it. */
#define DX_CONVERT_BLOCKS 5u

int mfs_dir_add_need(struct mfs_node *dir, const char *name, size_t len,
		     uint64_t *blocks)
{
	struct mfs_fs *fs = dir->fs;
	uint32_t need = MFS_DIRENT_LEN(len);
	uint64_t n = mfs_dir_blocks(dir);
	int room;

	if (mfs_dx_on(dir))
		return mfs_dx_add_need(dir, fmt_dx_hash(&fs->sb, name, len), need, blocks);
	room = has_room(dir, n, need);
	if (room < 0)
		return room;
	*blocks = 0;
	if (!room)
		*blocks = mfs_bmap_append_worst(fs, n, n == 1 && fmt_has_dir_index(&fs->sb) ?
						DX_CONVERT_BLOCKS : 1);
	return 0;
}

/* A new block @lblk for @dir, holding one unused record (or the first
 * entries of a new directory, filled by @fill). */
int mfs_dir_new_block(struct mfs_node *dir, struct mfs_handle *h, uint64_t lblk,
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
	err = mfs_journal_access(dir->fs, h, pg, *pblk);
	if (!err) {
		memset(pg->data, 0, fs->bs);
		dirent_at(pg, 0)->rec_len = htole16((uint16_t)dir_end(fs));
		tail = (void *)((char *)pg->data + dir_end(fs));
		tail->det_rec_len = htole16(MFS_DIR_TAIL_SIZE);
		tail->det_type = MFS_FT_DIR_TAIL;
		mfs_dir_seal(dir, pg);
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

/* A new block @lblk at the end, holding @e, or empty for NULL. */
static int add_new_block(struct mfs_node *dir, struct mfs_handle *h, uint64_t lblk,
			 const struct newent *e)
{
	struct pc_page *pg;
	uint64_t pblk;
	int err = mfs_dir_new_block(dir, h, lblk, &pg, &pblk);

	if (err)
		return err;
	if (e) {
		insert_at(pg, 0, e);
		mfs_dir_seal(dir, pg);
	}
	pc_unlock_page(pg);
	if (e)
		index_note(dir, pg, lblk, e->hash, 0, true);
	return mfs_dir_done(dir, h, pblk, pg);
}

/* @err came after the index changed and before block @lblk followed:
 * the two disagree, which the superblock must say (damage already has). */
static int dx_apart(struct mfs_node *dir, uint64_t lblk, int err)
{
	if (err && err != -EUCLEAN)
		mfs_error(dir->fs, "directory %" PRIu64 ": block %" PRIu64 " and its index "
			  "left apart (%s)", dir->ino, lblk, strerror(-err));
	return err;
}

/* Where a record of @need bytes goes in block @b, which the room map
 * says fits it: a block that does not is damage. */
static int dx_room_in(struct mfs_node *dir, uint64_t b, uint32_t need, uint32_t *off)
{
	int err = room_in(dir, b, need, off);

	if (!err && *off >= dir_end(dir->fs))
		err = mfs_error(dir->fs, "directory %" PRIu64 ": its room map says block %"
				PRIu64 " has room, and it has none", dir->ino, b);
	return err;
}

/* Add @e to a directory with an index on the disk: into a block the room
 * map says fits it, or a new one (made first, empty: a split of the index
 * appends too).  The record goes in before the entry, so that an index
 * that cannot take it stops the insert before anything changed; past
 * that, a failure leaves the two apart, and the superblock says so. */
static int dx_add_entry(struct mfs_node *dir, struct mfs_handle *h, const struct newent *e)
{
	uint32_t need = MFS_DIRENT_LEN(e->len), off = 0, room;
	uint64_t b;
	int err = mfs_dx_find_room(dir, need, &b);

	if (err == 1) {
		err = dx_room_in(dir, b, need, &off);
	} else if (!err) {
		err = mfs_dx_grow(dir, h, &b);
		if (!err)
			err = add_new_block(dir, h, b, NULL);
	}
	if (!err)
		err = mfs_dx_add(dir, h, e->hash, b);
	if (err)
		return err;
	err = put_at(dir, h, b, off, e, &room);
	if (!err)
		err = mfs_dx_set_room(dir, h, b, room);
	return dx_apart(dir, b, err);
}

/* A directory of one full block gains an index on the disk: the records
 * of block 0's entries and its room. */
static int dx_convert(struct mfs_node *dir, struct mfs_handle *h)
{
	uint32_t end = dir_end(dir->fs), off = 0;
	struct pc_page *pg;
	int err = mfs_dx_init(dir, h);

	if (!err)
		err = mfs_dir_page(dir, 0, &pg);
	if (err)
		return err;
	while (!err && off < end) {
		const struct mfs_dirent *de = dirent_at(pg, off);

		if (de->inode)
			err = mfs_dx_add(dir, h, fmt_dx_hash(&dir->fs->sb, de->name,
							     de->name_len), 0);
		off += le16toh(de->rec_len);
	}
	if (!err)
		err = mfs_dx_set_room(dir, h, 0, block_room(dir, pg));
	pc_put_page(pg);
	return err;
}

int mfs_dir_add(struct mfs_node *dir, struct mfs_handle *h, const char *name,
		size_t len, uint32_t ino, uint8_t type)
{
	struct newent e = { name, len, ino, type, 0 };
	uint64_t n = mfs_dir_blocks(dir);
	int placed;

	if (mfs_dx_on(dir)) {
		e.hash = fmt_dx_hash(&dir->fs->sb, name, len);
		return dx_add_entry(dir, h, &e);
	}
	e.hash = mfs_dh_hash(dir->fs, name, len);
	placed = index_add(dir, h, n, &e);
	if (placed == NO_INDEX)
		placed = add_walk(dir, h, n, &e);
	if (placed)
		return placed < 0 ? placed : 0;
	if (n == 1 && fmt_has_dir_index(&dir->fs->sb)) {
		placed = dx_convert(dir, h);
		e.hash = fmt_dx_hash(&dir->fs->sb, name, len);
		return placed ? placed : dx_add_entry(dir, h, &e);
	}
	return add_new_block(dir, h, n, &e);
}

/* The index's record of the entry at @loc goes first: a disagreement
 * stops the removal before anything changed. */
static int dx_unindex(struct mfs_node *dir, struct mfs_handle *h,
		      const struct mfs_dirloc *loc)
{
	const struct mfs_dirent *de;
	struct pc_page *pg;
	uint64_t hash;
	int err = mfs_dir_page(dir, loc->lblk, &pg);

	if (err)
		return err;
	de = dirent_at(pg, loc->off);
	hash = fmt_dx_hash(&dir->fs->sb, de->name, de->name_len);
	pc_put_page(pg);
	return mfs_dx_remove(dir, h, hash, loc->lblk);
}

int mfs_dir_remove(struct mfs_node *dir, struct mfs_handle *h,
		   const struct mfs_dirloc *loc)
{
	struct pc_page *pg;
	const struct mfs_dirent *gone;
	uint64_t pblk, hash;
	uint32_t room;
	bool dx = mfs_dx_on(dir);
	int err = dx ? dx_unindex(dir, h, loc) : 0;

	if (err)
		return err;
	err = mfs_dir_access(dir, h, loc->lblk, &pg, &pblk);
	if (err)
		return dx ? dx_apart(dir, loc->lblk, err) : err;
	pc_lock_page(pg);
	gone = dirent_at(pg, loc->off);
	hash = mfs_dh_hash(dir->fs, gone->name, gone->name_len);
	if (loc->off) {
		struct mfs_dirent *prev = dirent_at(pg, loc->prev_off);
		struct mfs_dirent *de = dirent_at(pg, loc->off);

		prev->rec_len = htole16((uint16_t)(le16toh(prev->rec_len) +
						   le16toh(de->rec_len)));
	} else {
		dirent_at(pg, 0)->inode = 0;
	}
	mfs_dir_seal(dir, pg);
	room = dx ? block_room(dir, pg) : 0;
	pc_unlock_page(pg);
	index_note(dir, pg, loc->lblk, hash, loc->off, false);
	err = mfs_dir_done(dir, h, pblk, pg);
	return err || !dx ? err : mfs_dx_set_room(dir, h, loc->lblk, room);
}

int mfs_dir_set(struct mfs_node *dir, struct mfs_handle *h,
		const struct mfs_dirloc *loc, uint32_t ino, uint8_t type)
{
	struct pc_page *pg;
	uint64_t pblk;
	int err = mfs_dir_access(dir, h, loc->lblk, &pg, &pblk);

	if (err)
		return err;
	pc_lock_page(pg);
	dirent_at(pg, loc->off)->inode = htole32(ino);
	dirent_at(pg, loc->off)->file_type = type;
	mfs_dir_seal(dir, pg);
	pc_unlock_page(pg);
	return mfs_dir_done(dir, h, pblk, pg);
}

int mfs_dir_init(struct mfs_node *dir, struct mfs_handle *h, uint32_t parent)
{
	struct pc_page *pg;
	uint64_t pblk;
	uint32_t dot = MFS_DIRENT_LEN(1);
	int err = mfs_dir_new_block(dir, h, 0, &pg, &pblk);

	if (err)
		return err;
	put_entry(dirent_at(pg, 0), dot, ".", 1, dir->ino, MFS_FT_DIR);
	put_entry(dirent_at(pg, dot), dir_end(dir->fs) - dot, "..", 2, parent,
		  MFS_FT_DIR);
	mfs_dir_seal(dir, pg);
	pc_unlock_page(pg);
	return mfs_dir_done(dir, h, pblk, pg);
}

static bool is_dot(const struct mfs_dirent *de)
{
	return (de->name_len == 1 && de->name[0] == '.') ||
	       (de->name_len == 2 && de->name[0] == '.' && de->name[1] == '.');
}

/* 1 if only "." and ".." are left, 0 if not, or -errno. */
int mfs_dir_is_empty(struct mfs_node *dir)
{
	uint64_t n = mfs_dir_blocks(dir);
	uint32_t end = dir_end(dir->fs);
	int empty = 1;

	/* An index counts the names: more than "." and ".." is not empty. */
	pthread_mutex_lock(&dir->dh_lock);
	if (dir->dh && mfs_dh_count(dir->dh) > 2)
		empty = 0;
	pthread_mutex_unlock(&dir->dh_lock);
	for (uint64_t b = 0; b < n && empty == 1; b++) {
		struct pc_page *pg;
		int err = mfs_dir_page(dir, b, &pg);

		if (err)
			return err;
		scanned(dir);
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

/* ---- readdir ------------------------------------------------------------- */

int mfs_dir_check_target(struct mfs_node *dir, const char *name, size_t len,
			 uint32_t ino)
{
	bool dots = (len == 2 && !memcmp(name, "..", 2)) ||
		    (len == 1 && name[0] == '.' && dir->ino == MFS_ROOT_INO);

	if (ino != MFS_ROOT_INO || dots)
		return 0;
	return mfs_error(dir->fs, "directory %" PRIu64 ": entry '%.*s' names the root "
			 "directory", dir->ino, (int)len, name);
}

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

	/* An entry naming the root is reported without its attributes, as
	 * "." and "..": a lookup of it then meets the damage. */
	if (r->plus && !is_dot(de) &&
	    !mfs_dir_check_target(r->dir, de->name, de->name_len, le32toh(de->inode))) {
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
	uint64_t n = mfs_dir_blocks(dir), bs = dir->fs->bs;
	int err = 0;

	for (uint64_t b = pos / bs; b < n && !err; b++)
		err = readdir_block(&r, b, b == pos / bs ? (uint32_t)(pos % bs) : 0);
	return err < 0 ? err : 0;
}
