/*
 * regions.c - the reserved regions as files: the directory "/.regions"
 * (MFS_REGIONS_DIR_INO) holds one file per entry of the region table
 * (MFS_REGION_INO(i)), in memory only, like the control directory.
 *
 * Each region is mapped once at mount through the page cache's region
 * mapping (pc_region_map: MAP_SHARED over the image, or the memory
 * device's own bytes), and reads and writes copy straight to and from
 * it: no page of the cache, no journal, no flusher.  The mapping is
 * synced by fsync of the file, by mfs_sync and at unmount; the
 * device's flushes stop before the regions (bdev_set_flush_end), so a
 * commit never waits for their pages.
 *
 * The table has no owner, mode or times: a file is root's, mode 0600,
 * with the mount's time.  Its owner (or root) may change its permission
 * bits and root its owner, for as long as the mount lasts; set-id and
 * sticky bits, times and the size are refused (-EPERM).
 */
#include "mfs_i.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct mfs_region {
	char name[MFS_REGION_NAME_LEN];  /* NUL-terminated; empty: unused */
	uint64_t bytes;                  /* the file's size */
	struct pc_region *map;
	pthread_mutex_t lock;            /* leaf: mode, uid, gid */
	uint16_t mode;
	uint32_t uid, gid;
};

/* ---- the table ----------------------------------------------------------- */

static int map_entry(struct mfs_fs *fs, uint32_t i, const struct mfs_region_entry *tbl)
{
	struct mfs_region *r = &fs->regions[i];
	const struct mfs_region_entry *e = &tbl[i];
	const char *why = fmt_region_entry_problem(&fs->sb, tbl, i);
	unsigned int flags = atomic_load(&fs->ro) ? 0 : PC_REGION_WRITE;

	if (why)
		return mfs_error(fs, "region table: entry %" PRIu32 " has %s: "
				 "not shown", i, why);
	memcpy(r->name, e->re_name, MFS_REGION_NAME_LEN);
	r->bytes = le64toh(e->re_bytes);
	return pc_region_map(fs->cache, fs->bd, le64toh(e->re_start) * fs->bs,
			     le64toh(e->re_blocks) * fs->bs, flags, &r->map);
}

static int check_table(struct mfs_fs *fs, const void *blk)
{
	char why[64];

	if (!fmt_region_table_check(&fs->sb, blk, why, sizeof(why)))
		return 0;
	return mfs_error(fs, "region table (block %" PRIu64 "): %s: no region shown",
			 le64toh(fs->sb.s_region_table), why);
}

static int alloc_regions(struct mfs_fs *fs, uint32_t n)
{
	fs->regions = calloc(n, sizeof(*fs->regions));
	if (!fs->regions)
		return -ENOMEM;
	fs->nregions = n;
	for (uint32_t i = 0; i < n; i++) {
		pthread_mutex_init(&fs->regions[i].lock, NULL);
		fs->regions[i].mode = S_IFREG | 0600;
	}
	return 0;
}

/*
 * Read the table and map its regions.  Damage (a bad table, an entry
 * that points outside the region area) is reported with mfs_error and
 * leaves those regions out, not the mount: the groups do not depend on
 * them.  An entry left out keeps its slot, so that every inode number
 * stays that of its entry.
 */
int mfs_regions_load(struct mfs_fs *fs)
{
	uint32_t n = le32toh(fs->sb.s_region_count);
	const struct mfs_region_entry *e;
	void *blk;
	int err;

	if (!n)
		return 0;
	blk = bdev_alloc_buf(fs->bs);
	if (!blk)
		return -ENOMEM;
	err = bdev_read(fs->bd, le64toh(fs->sb.s_region_table) * fs->bs, blk, fs->bs);
	if (!err && check_table(fs, blk) == 0)
		err = alloc_regions(fs, n);
	e = (const void *)((const char *)blk + MFS_REGION_HDR_SIZE);
	for (uint32_t i = 0; !err && i < fs->nregions; i++) {
		int e2 = map_entry(fs, i, e);

		if (e2 != -EUCLEAN)
			err = e2;
	}
	bdev_free_buf(blk);
	return err;
}

int mfs_regions_sync(struct mfs_fs *fs)
{
	int err = 0;

	for (uint32_t i = 0; i < fs->nregions; i++) {
		int e = fs->regions[i].map ? pc_region_sync(fs->regions[i].map, 0, 0) : 0;

		err = err ? err : e;
	}
	return err;
}

void mfs_regions_unmap(struct mfs_fs *fs)
{
	for (uint32_t i = 0; i < fs->nregions; i++) {
		if (fs->regions[i].map)
			pc_region_unmap(fs->regions[i].map);
		pthread_mutex_destroy(&fs->regions[i].lock);
	}
	free(fs->regions);
	fs->regions = NULL;
	fs->nregions = 0;
}

/* ---- inodes -------------------------------------------------------------- */

bool mfs_region_ino(uint64_t ino)
{
	return ino >= MFS_REGIONS_DIR_INO &&
	       ino <= MFS_REGION_INO(FMT_MAX_REGIONS_ARG - 1);
}

/* The region of file @ino, or NULL (the directory, or nothing mapped). */
static struct mfs_region *region_of(struct mfs_fs *fs, uint64_t ino)
{
	uint64_t i = ino - MFS_REGION_INO(0);

	if (ino < MFS_REGION_INO(0) || i >= fs->nregions || !fs->regions[i].map)
		return NULL;
	return &fs->regions[i];
}

bool mfs_regions_present(struct mfs_fs *fs)
{
	for (uint32_t i = 0; i < fs->nregions; i++)
		if (fs->regions[i].map)
			return true;
	return false;
}

int mfs_region_stat(struct mfs_fs *fs, uint64_t ino, struct stat *st)
{
	struct mfs_region *r = region_of(fs, ino);

	if (ino != MFS_REGIONS_DIR_INO && !r)
		return -ENOENT;
	memset(st, 0, sizeof(*st));
	st->st_ino = ino;
	st->st_blksize = fs->bs;
	st->st_atim = st->st_mtim = st->st_ctim = fs->mounted_at;
	if (!r) {
		st->st_mode = S_IFDIR | 0755;
		st->st_nlink = 2;
		return 0;
	}
	pthread_mutex_lock(&r->lock);
	st->st_mode = r->mode;
	st->st_uid = r->uid;
	st->st_gid = r->gid;
	pthread_mutex_unlock(&r->lock);
	st->st_nlink = 1;
	st->st_size = (off_t)r->bytes;
	st->st_blocks = (blkcnt_t)(pc_region_len(r->map) / 512);
	return 0;
}

/* The file @name names in the directory, or 0. */
static uint64_t child(struct mfs_fs *fs, const char *name)
{
	if (!strcmp(name, "."))
		return MFS_REGIONS_DIR_INO;
	for (uint32_t i = 0; i < fs->nregions; i++)
		if (fs->regions[i].map && !strcmp(fs->regions[i].name, name))
			return MFS_REGION_INO(i);
	return 0;
}

int mfs_region_lookup(struct mfs_fs *fs, const struct mfs_cred *cr, uint64_t dir,
		      const char *name, struct stat *st, uint64_t *gen)
{
	uint64_t ino = MFS_REGIONS_DIR_INO;
	int err;

	if (dir != MFS_REGIONS_DIR_INO && dir != MFS_ROOT_INO)
		return -ENOTDIR;
	if (dir == MFS_REGIONS_DIR_INO && !strcmp(name, ".."))
		return mfs_lookup(fs, cr, MFS_ROOT_INO, ".", st, gen);
	if (dir == MFS_REGIONS_DIR_INO)
		ino = child(fs, name);
	else if ((err = mfs_access(fs, cr, MFS_ROOT_INO, X_OK)))
		return err;
	if (!ino)
		return -ENOENT;
	if (gen)
		*gen = 0;
	return st ? mfs_region_stat(fs, ino, st) : 0;
}

int mfs_region_change(struct mfs_fs *fs, uint64_t dir, const char *name, bool create)
{
	if (dir != MFS_REGIONS_DIR_INO && dir != MFS_ROOT_INO)
		return -ENOTDIR;
	if (dir == MFS_REGIONS_DIR_INO && !child(fs, name) && strcmp(name, ".."))
		return create ? -EPERM : -ENOENT;
	return create ? -EEXIST : -EPERM;
}

/* Permission of @cr for @mask on region file @r, as for any inode. */
static int region_permission(struct mfs_region *r, const struct mfs_cred *cr, int mask)
{
	uint16_t mode;
	uint32_t uid, gid;

	pthread_mutex_lock(&r->lock);
	mode = r->mode;
	uid = r->uid;
	gid = r->gid;
	pthread_mutex_unlock(&r->lock);
	return mfs_mode_permission(mode, uid, gid, cr, mask);
}

int mfs_region_access(struct mfs_fs *fs, const struct mfs_cred *cr, uint64_t ino,
		      int mask)
{
	struct mfs_region *r = region_of(fs, ino);
	int err;

	if (ino == MFS_REGIONS_DIR_INO)
		return mask & W_OK ? -EACCES : 0;
	if (!r)
		return -ENOENT;
	err = region_permission(r, cr, mask & (R_OK | W_OK | X_OK));
	if (!err && (mask & W_OK))
		err = mfs_check_rw(fs);
	return err;
}

/* ---- attributes ---------------------------------------------------------- */

static int check_setattr(struct mfs_region *r, const struct mfs_cred *cr,
			 const struct mfs_setattr *sa)
{
	bool root = !cr || cr->uid == 0;

	if (sa->valid & (MFS_SET_SIZE | MFS_SET_ATIME | MFS_SET_MTIME | MFS_SET_CTIME))
		return -EPERM;
	if ((sa->valid & (MFS_SET_UID | MFS_SET_GID)) && !root)
		return -EPERM;
	if (!(sa->valid & MFS_SET_MODE))
		return 0;
	/* Only permission bits: a set-id bit on a file everyone's
	 * mapping may share would mean nothing safe. */
	if (sa->mode & (S_ISUID | S_ISGID | S_ISVTX))
		return -EPERM;
	return root || cr->uid == r->uid ? 0 : -EPERM;
}

int mfs_region_setattr(struct mfs_fs *fs, const struct mfs_cred *cr, uint64_t ino,
		       const struct mfs_setattr *sa, struct stat *st)
{
	struct mfs_region *r = region_of(fs, ino);
	int err = ino == MFS_REGIONS_DIR_INO ? -EPERM : r ? 0 : -ENOENT;

	if (!err)
		err = mfs_check_rw(fs);
	if (err)
		return err;
	pthread_mutex_lock(&r->lock);
	err = check_setattr(r, cr, sa);
	if (!err && (sa->valid & MFS_SET_MODE))
		r->mode = S_IFREG | (sa->mode & 0777);
	if (!err && (sa->valid & MFS_SET_UID))
		r->uid = sa->uid;
	if (!err && (sa->valid & MFS_SET_GID))
		r->gid = sa->gid;
	pthread_mutex_unlock(&r->lock);
	return err ? err : st ? mfs_region_stat(fs, ino, st) : 0;
}

/* ---- open files ---------------------------------------------------------- */

static int open_mask(int flags)
{
	switch (flags & O_ACCMODE) {
	case O_RDONLY: return R_OK;
	case O_WRONLY: return W_OK;
	default: return R_OK | W_OK;
	}
}

int mfs_region_open(struct mfs_fs *fs, const struct mfs_cred *cr, uint64_t ino,
		    int flags, struct mfs_region **out)
{
	struct mfs_region *r = region_of(fs, ino);
	int mask = flags & MFS_O_EXEC ? X_OK : open_mask(flags), err;

	if (ino == MFS_REGIONS_DIR_INO)
		return -EISDIR;
	if (!r)
		return -ENOENT;
	if ((mask & W_OK) || (flags & O_TRUNC)) {
		err = mfs_check_rw(fs);
		if (err)
			return err;
	}
	/* O_TRUNC asks for write permission whatever the access mode
	 * (Linux's build_open_flags), and a region's size never changes. */
	err = region_permission(r, cr, flags & O_TRUNC ? mask | W_OK : mask);
	if (!err && (flags & O_TRUNC))
		err = -EPERM;
	if (!err)
		*out = r;
	return err;
}

ssize_t mfs_region_read(struct mfs_region *r, void *buf, size_t size, uint64_t off)
{
	if (off >= r->bytes)
		return 0;
	size = (size_t)UT_MIN((uint64_t)size, r->bytes - off);
	memcpy(buf, (const char *)pc_region_data(r->map) + off, size);
	return (ssize_t)size;
}

/* Like a block device: nothing is written from the end on (-ENOSPC), and
 * a write across it is short. */
ssize_t mfs_region_write(struct mfs_fs *fs, struct mfs_region *r, const void *buf,
			 size_t size, uint64_t off)
{
	int err = mfs_check_rw(fs);

	if (err)
		return err;
	if (!size)
		return 0;
	if (off >= r->bytes)
		return -ENOSPC;
	size = (size_t)UT_MIN((uint64_t)size, r->bytes - off);
	memcpy((char *)pc_region_data(r->map) + off, buf, size);
	return (ssize_t)size;
}

uint64_t mfs_region_size(const struct mfs_region *r)
{
	return r->bytes;
}

int mfs_region_fsync(struct mfs_fs *fs, uint64_t ino)
{
	struct mfs_region *r = region_of(fs, ino);

	return r ? pc_region_sync(r->map, 0, 0) : 0;
}

/* ---- the directory ------------------------------------------------------- */

int mfs_region_readdir(struct mfs_fs *fs, uint64_t off, bool plus,
		       mfs_filldir_t fill, void *ctx)
{
	struct stat st;

	/* Positions: 1 after ".", 2 after "..", 3 + i after region i. */
	if (off < 1 && fill(ctx, ".", 1, MFS_REGIONS_DIR_INO, MFS_FT_DIR, 1, NULL, 0))
		return 0;
	if (off < 2 && fill(ctx, "..", 2, MFS_ROOT_INO, MFS_FT_DIR, 2, NULL, 0))
		return 0;
	for (uint64_t i = off < 2 ? 0 : off - 2; i < fs->nregions; i++) {
		struct mfs_region *r = &fs->regions[i];

		if (!r->map)
			continue;
		if (plus)
			mfs_region_stat(fs, MFS_REGION_INO(i), &st);
		if (fill(ctx, r->name, strlen(r->name), MFS_REGION_INO(i),
			 MFS_FT_REG_FILE, i + 3, plus ? &st : NULL, 0))
			break;
	}
	return 0;
}
