/*
 * special.c - the inodes that exist only in memory, behind one gate: the
 * control directory and its statistics (ctl.c), the regions directory
 * and its files (regions.c).  Their numbers are outside the disk's
 * inodes (FORMAT.md), and the public calls of mfs.h turn here, by
 * mfs_special_ino() or mfs_special_name(), before they touch any inode;
 * each call then goes to the kind the number or name belongs to.
 *
 * Both directories are found by lookup in the root.  "/.miscfs" is never
 * listed; "/.regions" is listed by readdir of the root when the
 * filesystem has regions (mfs_special_readdir_root), so that scripts and
 * users find them with ls; a filesystem without regions lists nothing
 * and shows an empty directory, so that its tree, walked by tools and
 * tests, is what was put in it.  Nothing here can be created, removed,
 * renamed or linked: -EPERM, or -EEXIST for a create over a name that
 * exists.  The mounted filesystem never creates either name in the root;
 * an entry of that name written there by other means is listed by
 * readdir as it is on the disk, and shadowed for lookup while mounted.
 */
#include "mfs_i.h"

#include <errno.h>
#include <string.h>

bool mfs_special_ino(uint64_t ino)
{
	return mfs_ctl_ino(ino) || mfs_region_ino(ino);
}

/* Whether @name in @dir belongs to the regions (else to ctl.c). */
static bool region_name(uint64_t dir, const char *name)
{
	return mfs_region_ino(dir) ||
	       (dir == MFS_ROOT_INO && !strcmp(name, MFS_REGIONS_DIR_NAME));
}

bool mfs_special_name(uint64_t dir, const char *name)
{
	return mfs_ctl_name(dir, name) || region_name(dir, name);
}

int mfs_special_stat(struct mfs_fs *fs, uint64_t ino, struct stat *st)
{
	if (mfs_region_ino(ino))
		return mfs_region_stat(fs, ino, st);
	mfs_ctl_stat(fs, ino, st);
	return 0;
}

int mfs_special_lookup(struct mfs_fs *fs, const struct mfs_cred *cr, uint64_t dir,
		       const char *name, struct stat *st, uint64_t *gen)
{
	if (region_name(dir, name))
		return mfs_region_lookup(fs, cr, dir, name, st, gen);
	return mfs_ctl_lookup(fs, cr, dir, name, st, gen);
}

int mfs_special_change(struct mfs_fs *fs, uint64_t dir, const char *name, bool create)
{
	if (region_name(dir, name))
		return mfs_region_change(fs, dir, name, create);
	return mfs_ctl_change(dir, name, create);
}

int mfs_special_access(struct mfs_fs *fs, const struct mfs_cred *cr, uint64_t ino,
		       int mask)
{
	if (mfs_region_ino(ino))
		return mfs_region_access(fs, cr, ino, mask);
	return mfs_ctl_access(ino, mask);
}

int mfs_special_setattr(struct mfs_fs *fs, const struct mfs_cred *cr, uint64_t ino,
			const struct mfs_setattr *sa, struct stat *st)
{
	if (mfs_region_ino(ino))
		return mfs_region_setattr(fs, cr, ino, sa, st);
	return -EPERM;
}

int mfs_special_fsync(struct mfs_fs *fs, uint64_t ino)
{
	return mfs_region_ino(ino) ? mfs_region_fsync(fs, ino) : 0;
}

int mfs_special_opendir(struct mfs_fs *fs, uint64_t ino)
{
	struct stat st;
	int err = mfs_special_stat(fs, ino, &st);

	return err ? err : S_ISDIR(st.st_mode) ? 0 : -ENOTDIR;
}

int mfs_special_readdir(struct mfs_fs *fs, uint64_t ino, uint64_t off, bool plus,
			mfs_filldir_t fill, void *ctx)
{
	if (ino == MFS_REGIONS_DIR_INO)
		return mfs_region_readdir(fs, off, plus, fill, ctx);
	return mfs_ctl_readdir(fs, off, plus, fill, ctx);
}

int mfs_special_readdir_root(struct mfs_fs *fs, uint64_t off, bool plus,
			     mfs_filldir_t fill, void *ctx)
{
	struct stat st;

	if (off >= MFS_ROOT_SPECIAL_POS || !mfs_regions_present(fs))
		return 0;
	if (plus)
		mfs_region_stat(fs, MFS_REGIONS_DIR_INO, &st);
	fill(ctx, MFS_REGIONS_DIR_NAME, strlen(MFS_REGIONS_DIR_NAME),
	     MFS_REGIONS_DIR_INO, MFS_FT_DIR, MFS_ROOT_SPECIAL_POS, plus ? &st : NULL, 0);
	return 0;
}
