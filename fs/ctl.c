/*
 * ctl.c - the control directory "/.miscfs" and its file "stats": two
 * inodes of the format's reserved range (MFS_CTL_DIR_INO,
 * MFS_STATS_INO) that exist only in memory, never on the disk.
 *
 * Lookup in the root finds ".miscfs"; readdir of the root does not list
 * it, so that tools walking the tree (cp -a, tar, rsync, find, du) do not
 * copy a file that changes under them.  The directory holds "stats"
 * alone, whose text is made when it is opened: every read of one open
 * file sees the same snapshot.  Nothing here can be written, removed,
 * renamed, linked or created over: names are -EPERM (-EEXIST for a
 * create over an existing one), a write open -EACCES, attributes -EPERM.
 * The public calls of mfs.h turn to the functions here, through
 * special.c, before touching any inode.
 */
#include "mfs_i.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define STATS_NAME "stats"

bool mfs_ctl_ino(uint64_t ino)
{
	return ino == MFS_CTL_DIR_INO || ino == MFS_STATS_INO;
}

bool mfs_ctl_name(uint64_t dir, const char *name)
{
	return mfs_ctl_ino(dir) ||
	       (dir == MFS_ROOT_INO && !strcmp(name, MFS_CTL_DIR_NAME));
}

void mfs_ctl_stat(struct mfs_fs *fs, uint64_t ino, struct stat *st)
{
	bool dir = ino == MFS_CTL_DIR_INO;

	memset(st, 0, sizeof(*st));
	st->st_ino = ino;
	st->st_mode = dir ? S_IFDIR | 0555 : S_IFREG | 0444;
	st->st_nlink = dir ? 2 : 1;
	st->st_blksize = fs->bs;
	st->st_atim = st->st_mtim = st->st_ctim = fs->mounted_at;
}

/* The inode @name names in the control directory, or 0. */
static uint64_t child(const char *name)
{
	if (!strcmp(name, STATS_NAME))
		return MFS_STATS_INO;
	return strcmp(name, ".") ? 0 : MFS_CTL_DIR_INO;
}

int mfs_ctl_lookup(struct mfs_fs *fs, const struct mfs_cred *cr, uint64_t dir,
		   const char *name, struct stat *st, uint64_t *gen)
{
	uint64_t ino = MFS_CTL_DIR_INO;
	int err;

	if (dir == MFS_STATS_INO)
		return -ENOTDIR;
	/* ".." is the root, whose lookup count goes up as for any lookup. */
	if (dir == MFS_CTL_DIR_INO && !strcmp(name, ".."))
		return mfs_lookup(fs, cr, MFS_ROOT_INO, ".", st, gen);
	if (dir == MFS_CTL_DIR_INO)
		ino = child(name);
	else if ((err = mfs_access(fs, cr, MFS_ROOT_INO, X_OK)))
		return err;
	if (!ino)
		return -ENOENT;
	if (st)
		mfs_ctl_stat(fs, ino, st);
	if (gen)
		*gen = 0;
	return 0;
}

int mfs_ctl_change(uint64_t dir, const char *name, bool create)
{
	if (dir == MFS_STATS_INO)
		return -ENOTDIR;
	if (dir == MFS_CTL_DIR_INO && !child(name) && strcmp(name, ".."))
		return create ? -EPERM : -ENOENT;
	return create ? -EEXIST : -EPERM;
}

int mfs_ctl_access(uint64_t ino, int mask)
{
	if (mask & W_OK)
		return -EACCES;
	if ((mask & X_OK) && ino == MFS_STATS_INO)
		return -EACCES;
	return 0;
}

/* ---- the snapshot -------------------------------------------------------- */

int mfs_ctl_open(struct mfs_fs *fs, uint64_t ino, int flags, char **text,
		 size_t *len)
{
	size_t size = 4096, n;
	char *buf = NULL;

	if (ino == MFS_CTL_DIR_INO)
		return -EISDIR;
	if ((flags & O_ACCMODE) != O_RDONLY || (flags & O_TRUNC))
		return -EACCES;
	/* The counters may add a line between the two calls: try again. */
	for (;;) {
		char *more = realloc(buf, size);

		if (!more) {
			free(buf);
			return -ENOMEM;
		}
		buf = more;
		n = mfs_stats_format(fs, buf, size);
		if (n < size)
			break;
		size = n + 1024;
	}
	*text = buf;
	*len = n;
	return 0;
}

ssize_t mfs_ctl_read(const char *text, size_t len, void *buf, size_t size,
		     uint64_t off)
{
	if (off >= len)
		return 0;
	size = UT_MIN(size, len - (size_t)off);
	memcpy(buf, text + off, size);
	return (ssize_t)size;
}

/* ---- the directory ------------------------------------------------------- */

int mfs_ctl_readdir(struct mfs_fs *fs, uint64_t off, bool plus,
		    mfs_filldir_t fill, void *ctx)
{
	static const struct { const char *name; uint64_t ino; unsigned type; } ent[] = {
		{ ".", MFS_CTL_DIR_INO, MFS_FT_DIR },
		{ "..", MFS_ROOT_INO, MFS_FT_DIR },
		{ STATS_NAME, MFS_STATS_INO, MFS_FT_REG_FILE },
	};
	struct stat st;

	/* Positions are 1, 2, 3: the next entry's index plus one. */
	for (uint64_t i = off; i < sizeof(ent) / sizeof(ent[0]); i++) {
		bool with_stat = plus && ent[i].ino == MFS_STATS_INO;

		if (with_stat)
			mfs_ctl_stat(fs, ent[i].ino, &st);
		if (fill(ctx, ent[i].name, strlen(ent[i].name), ent[i].ino, ent[i].type,
			 i + 1, with_stat ? &st : NULL, 0))
			break;
	}
	return 0;
}
