/*
 * mem_stats.c - the control directory "/.miscfs" and its file "stats":
 * two inodes of the format's reserved range (MFS_CTL_DIR_INO,
 * MFS_STATS_INO) that exist only in memory (mem.c), never on the disk.
 *
 * Lookup in the root finds ".miscfs"; readdir of the root does not list
 * it, so that tools walking the tree (cp -a, tar, rsync, find, du) do not
 * copy a file that changes under them.  The directory holds "stats"
 * alone, whose text is made when it is opened: every read of one open
 * file sees the same snapshot.  Nothing here can be written, removed,
 * renamed, linked or created over: names are -EPERM (-EEXIST for a
 * create over an existing one), a write open -EACCES, attributes -EPERM.
 */
#include "mfs_i.h"
#include "icache.h"
#include "kinds.h"
#include "vfs.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>

#define STATS_NAME "stats"

int mfs_ctl_lookup(struct mfs_node *dir, const struct mfs_cred *cr,
		   const char *name, size_t len, struct mfs_node **out)
{
	(void)cr;
	(void)len;
	if (!strcmp(name, ".."))
		return mfs_mem_parent(dir, out);
	return strcmp(name, STATS_NAME) ? -ENOENT : vfs_get(dir->fs, MFS_STATS_INO, out);
}

int mfs_ctl_readdir(struct mfs_node *dir, uint64_t off, bool plus,
		    mfs_filldir_t fill, void *ctx)
{
	struct mfs_node *stats;
	int err;

	/* Positions are 1, 2, 3: the next entry's index plus one. */
	if (mfs_mem_fill_dots(dir, off, fill, ctx))
		return 0;
	if (off >= 3)
		return 0;
	err = vfs_get(dir->fs, MFS_STATS_INO, &stats);
	if (err)
		return err;
	mfs_mem_fill(stats, STATS_NAME, 3, plus, fill, ctx);
	mfs_iput(stats);
	return 0;
}

/* ---- the snapshot -------------------------------------------------------- */

int mfs_stats_open(struct mfs_node *n, const struct mfs_cred *cr, int flags,
		   struct mfs_file *f)
{
	size_t size = 4096, len;
	char *buf = NULL;

	(void)cr;
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
		len = mfs_stats_format(n->fs, buf, size);
		if (len < size)
			break;
		size = len + 1024;
	}
	f->text = buf;
	f->text_len = len;
	f->fops = &mfs_stats_fops;
	return 0;
}

ssize_t mfs_stats_read(struct mfs_file *f, void *buf, size_t size, uint64_t off)
{
	if (off >= f->text_len)
		return 0;
	size = UT_MIN(size, f->text_len - (size_t)off);
	memcpy(buf, f->text + off, size);
	return (ssize_t)size;
}

void mfs_stats_release(struct mfs_file *f)
{
	free(f->text);
}
