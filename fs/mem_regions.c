/*
 * mem_regions.c - the reserved regions as files: the directory
 * "/.regions" (MFS_REGIONS_DIR_INO) holds one file per entry of the
 * region table (MFS_REGION_INO(i)), inodes of memory (mem.c) like the
 * control directory.
 *
 * Each region is mapped once at mount through the page cache's region
 * mapping (pc_region_map: MAP_SHARED over the image, the memory device's
 * own bytes, or a copy in memory for an NBD export), and reads and writes
 * copy straight to and from it: no page of the cache, no journal, no
 * flusher.  The mapping is
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
#include "icache.h"
#include "kinds.h"
#include "vfs.h"

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
	for (uint32_t i = 0; i < fs->nregions; i++)
		if (fs->regions[i].map)
			pc_region_unmap(fs->regions[i].map);
	free(fs->regions);
	fs->regions = NULL;
	fs->nregions = 0;
}


bool mfs_regions_present(struct mfs_fs *fs)
{
	for (uint32_t i = 0; i < fs->nregions; i++)
		if (fs->regions[i].map)
			return true;
	return false;
}

bool mfs_region_shown(struct mfs_fs *fs, uint32_t i)
{
	return fs->regions[i].map != NULL;
}

uint64_t mfs_region_bytes(struct mfs_fs *fs, uint32_t i)
{
	return fs->regions[i].bytes;
}

uint64_t mfs_region_mapped(struct mfs_fs *fs, uint32_t i)
{
	return pc_region_len(fs->regions[i].map);
}

/* The region of file @n (shown: mem.c made no node for any other). */
static struct mfs_region *region_of(struct mfs_node *n)
{
	return &n->fs->regions[n->ino - MFS_REGION_INO(0)];
}

/* ---- the directory ------------------------------------------------------- */

int mfs_regions_lookup(struct mfs_node *dir, const struct mfs_cred *cr,
		       const char *name, size_t len, struct mfs_node **out)
{
	struct mfs_fs *fs = dir->fs;

	(void)cr;
	(void)len;
	if (!strcmp(name, ".."))
		return mfs_mem_parent(dir, out);
	for (uint32_t i = 0; i < fs->nregions; i++)
		if (fs->regions[i].map && !strcmp(fs->regions[i].name, name))
			return vfs_get(fs, MFS_REGION_INO(i), out);
	return -ENOENT;
}

int mfs_regions_readdir(struct mfs_node *dir, uint64_t off, bool plus,
			mfs_filldir_t fill, void *ctx)
{
	struct mfs_fs *fs = dir->fs;

	/* Positions: 1 after ".", 2 after "..", 3 + i after region i. */
	if (mfs_mem_fill_dots(dir, off, fill, ctx))
		return 0;
	for (uint64_t i = off < 2 ? 0 : off - 2; i < fs->nregions; i++) {
		struct mfs_node *n;
		int full;

		if (!fs->regions[i].map || vfs_get(fs, MFS_REGION_INO(i), &n))
			continue;
		full = mfs_mem_fill(n, fs->regions[i].name, i + 3, plus, fill, ctx);
		mfs_iput(n);
		if (full)
			break;
	}
	return 0;
}

/* ---- a region's file ------------------------------------------------------ */

static int check_setattr(struct mfs_node *n, const struct mfs_cred *cr,
			 const struct mfs_setattr *sa)
{
	bool root = !cr || cr->uid == 0;
	unsigned int times = MFS_SET_ATIME | MFS_SET_MTIME | MFS_SET_CTIME;

	/* Times a cache in front keeps for a write are not chosen: the
	 * file's times stay the mount's, and the write goes on. */
	if (sa->valid & MFS_SET_TIMES_NOW_GIVEN)
		times = 0;
	if (sa->valid & (MFS_SET_SIZE | times))
		return -EPERM;
	if ((sa->valid & (MFS_SET_UID | MFS_SET_GID)) && !root)
		return -EPERM;
	if (!(sa->valid & MFS_SET_MODE))
		return 0;
	/* Only permission bits: a set-id bit on a file everyone's
	 * mapping may share would mean nothing safe. */
	if (sa->mode & (S_ISUID | S_ISGID | S_ISVTX))
		return -EPERM;
	return root || cr->uid == le32toh(n->raw.i_uid) ? 0 : -EPERM;
}

/* The mode and owner last for the mount: the table keeps neither. */
int mfs_region_setattr(struct mfs_node *n, const struct mfs_cred *cr,
		       const struct mfs_setattr *sa)
{
	int err = mfs_check_rw(n->fs);

	if (err)
		return err;
	pthread_mutex_lock(&n->lock);
	err = check_setattr(n, cr, sa);
	if (!err && (sa->valid & MFS_SET_MODE))
		n->raw.i_mode = htole16(S_IFREG | (sa->mode & 0777));
	if (!err && (sa->valid & MFS_SET_UID))
		n->raw.i_uid = htole32(sa->uid);
	if (!err && (sa->valid & MFS_SET_GID))
		n->raw.i_gid = htole32(sa->gid);
	pthread_mutex_unlock(&n->lock);
	return err;
}

int mfs_region_open(struct mfs_node *n, const struct mfs_cred *cr, int flags,
		    struct mfs_file *f)
{
	int mask = flags & MFS_O_EXEC ? X_OK : mfs_open_mask(flags), err;

	if ((mask & W_OK) || (flags & O_TRUNC)) {
		err = mfs_check_rw(n->fs);
		if (err)
			return err;
	}
	/* O_TRUNC asks for write permission whatever the access mode
	 * (Linux's build_open_flags), and a region's size never changes. */
	err = mfs_mem_permission(n, cr, flags & O_TRUNC ? mask | W_OK : mask);
	if (!err && (flags & O_TRUNC))
		err = -EPERM;
	if (!err)
		f->fops = &mfs_region_fops;
	return err;
}

int mfs_region_fsync(struct mfs_node *n, bool datasync)
{
	(void)datasync;
	return pc_region_sync(region_of(n)->map, 0, 0);
}

ssize_t mfs_region_read(struct mfs_file *f, void *buf, size_t size, uint64_t off)
{
	struct mfs_region *r = region_of(f->n);

	if (off >= r->bytes)
		return 0;
	size = (size_t)UT_MIN((uint64_t)size, r->bytes - off);
	memcpy(buf, (const char *)pc_region_data(r->map) + off, size);
	return (ssize_t)size;
}

/* Like a block device: nothing is written from the end on (-ENOSPC), and
 * a write across it is short. */
ssize_t mfs_region_write(struct mfs_file *f, const struct mfs_cred *cr,
			 const void *buf, size_t size, uint64_t off,
			 unsigned int flags)
{
	struct mfs_region *r = region_of(f->n);
	int err = mfs_open_mask(f->flags) & W_OK ? mfs_check_rw(f->n->fs) : -EBADF;

	(void)cr;
	(void)flags;
	if (err)
		return err;
	if (!size)
		return 0;
	if (off >= r->bytes)
		return -ENOSPC;
	size = (size_t)UT_MIN((uint64_t)size, r->bytes - off);
	memcpy((char *)pc_region_data(r->map) + off, buf, size);
	pc_region_dirty(r->map, off, size);
	return (ssize_t)size;
}

/* All data, no hole before the end. */
int mfs_region_lseek(struct mfs_file *f, uint64_t off, int whence, uint64_t *out)
{
	uint64_t size = region_of(f->n)->bytes;

	if (off >= size)
		return -ENXIO;
	*out = whence == SEEK_DATA ? off : size;
	return 0;
}
