/*
 * rename.c - rename(2) with RENAME_NOREPLACE and RENAME_EXCHANGE.
 */
#include "mfs_i.h"

#include <errno.h>

int mfs_rename(struct mfs_fs *fs, const struct mfs_cred *cr, uint64_t dir,
	       const char *name, uint64_t newdir, const char *newname,
	       unsigned int flags)
{
	(void)fs; (void)cr; (void)dir; (void)name; (void)newdir; (void)newname;
	(void)flags;
	return -ENOSYS;
}
