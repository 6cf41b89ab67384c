/*
 * mem.c - the inodes that exist only in memory: the control directory
 * and its statistics file (mem_stats.c), the regions directory and its
 * region files (mem_regions.c).  Each is a node like any other, made at
 * mount with its kind's operations (vfs.h) and held by the filesystem
 * until unmount; it is in no hash and on no list of the inode cache, so
 * no directory entry on the disk can ever name it.  Their numbers are
 * outside the disk's inodes (FORMAT.md); mfs_mem_get() finds them.
 *
 * Both directories are found by lookup in the root, whose kind (here) is
 * the disk directory's with that lookup added.  "/.miscfs" is never
 * listed; "/.regions" is listed by readdir of the root when the
 * filesystem has regions, so that scripts and users find them with ls; a
 * filesystem without regions lists nothing and shows an empty directory,
 * so that its tree, walked by tools and tests, is what was put in it.
 * Nothing here can be created, removed, renamed or linked: -EPERM, or
 * -EEXIST for a create over a name that exists.  The mounted filesystem
 * never creates either name in the root; an entry of that name written
 * there by other means is listed by readdir as it is on the disk, and
 * shadowed for lookup while mounted.
 */
#include "mfs_i.h"
#include "icache.h"
#include "kinds.h"
#include "vfs.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct mfs_mem {
	struct mfs_node *ctl_dir, *stats, *regions_dir;
	struct mfs_node **region;        /* one per table entry; NULL: not shown */
	uint32_t nregion;
};

/* The root's position after its blocks (a directory is far smaller),
 * where readdir of the root reports the regions directory. */
#define ROOT_MEM_POS (1ull << 62)

static bool region_range(uint64_t ino)
{
	return ino >= MFS_REGIONS_DIR_INO &&
	       ino <= MFS_REGION_INO(FMT_MAX_REGIONS_ARG - 1);
}

int mfs_mem_get(struct mfs_fs *fs, uint64_t ino, struct mfs_node **out)
{
	struct mfs_mem *m = fs->mem;
	struct mfs_node *n = NULL;

	if (ino == MFS_CTL_DIR_INO)
		n = m->ctl_dir;
	else if (ino == MFS_STATS_INO)
		n = m->stats;
	else if (ino == MFS_REGIONS_DIR_INO)
		n = m->regions_dir;
	else if (!region_range(ino))
		return 1;
	else if (ino - MFS_REGION_INO(0) < m->nregion)
		n = m->region[ino - MFS_REGION_INO(0)];
	if (!n)
		return -ENOENT;
	mfs_igrab(n);
	*out = n;
	return 0;
}

/* ---- making them --------------------------------------------------------- */

static int make(struct mfs_fs *fs, uint64_t ino, uint16_t mode, uint64_t size,
		uint64_t sectors, const struct mfs_iops *ops, struct mfs_node **out)
{
	struct mfs_inode raw = { 0 };

	raw.i_mode = htole16(mode);
	raw.i_links_count = htole16(S_ISDIR(mode) ? 2 : 1);
	raw.i_size = htole64(size);
	raw.i_blocks = htole64(sectors);
	raw.i_atime = raw.i_mtime = raw.i_ctime = raw.i_crtime =
		htole64(fs->mounted_at.tv_sec);
	raw.i_atime_nsec = raw.i_mtime_nsec = raw.i_ctime_nsec = raw.i_crtime_nsec =
		htole32((uint32_t)fs->mounted_at.tv_nsec);
	return mfs_inode_mem(fs, ino, &raw, ops, out);
}

static int make_regions(struct mfs_fs *fs, struct mfs_mem *m)
{
	int err = 0;

	m->region = calloc(fs->nregions ? fs->nregions : 1, sizeof(*m->region));
	if (!m->region)
		return -ENOMEM;
	m->nregion = fs->nregions;
	for (uint32_t i = 0; i < fs->nregions && !err; i++)
		if (mfs_region_shown(fs, i))
			err = make(fs, MFS_REGION_INO(i), S_IFREG | 0600,
				   mfs_region_bytes(fs, i),
				   mfs_region_mapped(fs, i) / 512, &mfs_region_iops,
				   &m->region[i]);
	return err;
}

int mfs_mem_create(struct mfs_fs *fs)
{
	struct mfs_mem *m = calloc(1, sizeof(*m));
	int err;

	if (!m)
		return -ENOMEM;
	fs->mem = m;
	err = make(fs, MFS_CTL_DIR_INO, S_IFDIR | 0555, 0, 0, &mfs_ctl_dir_iops,
		   &m->ctl_dir);
	if (!err)
		err = make(fs, MFS_STATS_INO, S_IFREG | 0444, 0, 0, &mfs_stats_iops,
			   &m->stats);
	if (!err)
		err = make(fs, MFS_REGIONS_DIR_INO, S_IFDIR | 0755, 0, 0,
			   &mfs_regions_dir_iops, &m->regions_dir);
	return err ? err : make_regions(fs, m);
}

static void put(struct mfs_node *n)
{
	if (n)
		mfs_inode_mem_free(n);
}

void mfs_mem_destroy(struct mfs_fs *fs)
{
	struct mfs_mem *m = fs->mem;

	if (!m)
		return;
	put(m->ctl_dir);
	put(m->stats);
	put(m->regions_dir);
	for (uint32_t i = 0; i < m->nregion; i++)
		put(m->region[i]);
	free(m->region);
	free(m);
	fs->mem = NULL;
}

/* ---- what they share ----------------------------------------------------- */

/* The control directory, the statistics and the regions directory: read
 * by anyone, written by no one, the statistics never executed. */
int mfs_mem_ro_permission(struct mfs_node *n, const struct mfs_cred *cr, int mask)
{
	(void)cr;
	if (mask & W_OK)
		return -EACCES;
	if ((mask & X_OK) && !S_ISDIR(node_mode(n)))
		return -EACCES;
	return 0;
}

/* By the mode alone: a file of memory has no ACL. */
int mfs_mem_permission(struct mfs_node *n, const struct mfs_cred *cr, int mask)
{
	uint16_t mode;
	uint32_t uid, gid;

	pthread_mutex_lock(&n->lock);
	mode = node_mode(n);
	uid = le32toh(n->raw.i_uid);
	gid = le32toh(n->raw.i_gid);
	pthread_mutex_unlock(&n->lock);
	return mfs_mode_permission(mode, uid, gid, cr, mask);
}

/* A directory of memory takes no change: a name it has is -EEXIST to a
 * create and -EPERM to the rest; one it has not is -EPERM to a create
 * and -ENOENT to the rest. */
int mfs_mem_dir_refuse(struct mfs_node *dir, const char *name, bool create)
{
	struct mfs_node *n;
	bool exists = !strcmp(name, ".") || !strcmp(name, "..");

	if (!exists && !dir->ops->lookup(dir, NULL, name, strlen(name), &n)) {
		mfs_iput(n);
		exists = true;
	}
	if (exists)
		return create ? -EEXIST : -EPERM;
	return create ? -EPERM : -ENOENT;
}

/* ".." of either directory: the root. */
int mfs_mem_parent(struct mfs_node *dir, struct mfs_node **out)
{
	return vfs_get(dir->fs, MFS_ROOT_INO, out);
}

/* An entry of a directory of memory for @fill, with what lookup would
 * give when @plus. */
int mfs_mem_fill(struct mfs_node *n, const char *name, uint64_t next, bool plus,
		 mfs_filldir_t fill, void *ctx)
{
	struct stat st;

	if (plus)
		mfs_node_fill_stat(n, &st);
	return fill(ctx, name, strlen(name), n->ino, fmt_mode_to_ft(node_mode(n)),
		    next, plus ? &st : NULL, 0);
}

/* "." and ".." of a directory of memory at positions 1 and 2, from @off:
 * true when @fill is full. */
bool mfs_mem_fill_dots(struct mfs_node *dir, uint64_t off, mfs_filldir_t fill,
		       void *ctx)
{
	if (off < 1 && fill(ctx, ".", 1, dir->ino, MFS_FT_DIR, 1, NULL, 0))
		return true;
	return off < 2 && fill(ctx, "..", 2, MFS_ROOT_INO, MFS_FT_DIR, 2, NULL, 0);
}

/* ---- the root ------------------------------------------------------------ */

static struct mfs_node *root_child(struct mfs_fs *fs, const char *name)
{
	if (!strcmp(name, MFS_CTL_DIR_NAME))
		return fs->mem->ctl_dir;
	if (!strcmp(name, MFS_REGIONS_DIR_NAME))
		return fs->mem->regions_dir;
	return NULL;
}

int mfs_root_refuse(struct mfs_node *dir, const char *name, bool create)
{
	if (!root_child(dir->fs, name))
		return 0;
	return create ? -EEXIST : -EPERM;
}

int mfs_root_lookup(struct mfs_node *dir, const struct mfs_cred *cr,
		    const char *name, size_t len, struct mfs_node **out)
{
	struct mfs_node *n = root_child(dir->fs, name);

	if (!n)
		return mfs_dir_lookup(dir, cr, name, len, out);
	mfs_igrab(n);
	*out = n;
	return 0;
}

/* The root's blocks, then the regions directory after them. */
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

int mfs_root_readdir(struct mfs_node *dir, uint64_t off, bool plus,
		     mfs_filldir_t fill, void *ctx)
{
	struct root_fill rf = { fill, ctx, false };
	struct mfs_fs *fs = dir->fs;
	int err = mfs_dir_readdir(dir, off, plus, root_fill, &rf);

	if (err || rf.full || off >= ROOT_MEM_POS || !mfs_regions_present(fs))
		return err;
	mfs_mem_fill(fs->mem->regions_dir, MFS_REGIONS_DIR_NAME, ROOT_MEM_POS, plus,
		     fill, ctx);
	return 0;
}
