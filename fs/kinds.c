/*
 * kinds.c - every kind of inode and of open file, in one table each
 * (vfs.h says what each operation does and what a NULL one means).  A
 * node's kind is chosen once, when it is made: by its mode for an inode
 * of the disk (mfs_disk_kind), by mem.c for one of memory.  A new kind,
 * or a new operation, is a table here and the functions it names.
 */
#include "mfs_i.h"
#include "kinds.h"
#include "vfs.h"

/* ---- on the disk --------------------------------------------------------- */

#define DISK_XATTRS \
	.getxattr = mfs_disk_getxattr, \
	.setxattr = mfs_disk_setxattr, \
	.listxattr = mfs_disk_listxattr

#define DISK_INODE \
	.permission = mfs_permission, \
	.setattr = mfs_disk_setattr, \
	.set_flags = mfs_disk_set_flags, \
	.open = mfs_disk_open, \
	.fsync = mfs_fsync_node, \
	DISK_XATTRS

#define DISK_NAMES \
	.create = mfs_dir_create, \
	.link = mfs_dir_link, \
	.unlink = mfs_dir_unlink, \
	.rename = mfs_dir_rename

const struct mfs_iops mfs_dir_iops = {
	.kind = "directory",
	DISK_INODE,
	DISK_NAMES,
	.lookup = mfs_dir_lookup,
	.readdir = mfs_dir_readdir,
};

/* The disk directory, with the two directories of memory in it. */
const struct mfs_iops mfs_root_iops = {
	.kind = "root directory",
	DISK_INODE,
	DISK_NAMES,
	.refuse = mfs_root_refuse,
	.lookup = mfs_root_lookup,
	.readdir = mfs_root_readdir,
};

const struct mfs_iops mfs_file_iops = {
	.kind = "regular file",
	DISK_INODE,
	.linkable = true,
};

const struct mfs_iops mfs_symlink_iops = {
	.kind = "symbolic link",
	DISK_INODE,
	.linkable = true,
	.readlink = mfs_symlink_read,
};

/* Devices, fifos and sockets: their data is no business of a filesystem. */
const struct mfs_iops mfs_special_iops = {
	.kind = "special file",
	DISK_INODE,
	.linkable = true,
};

const struct mfs_fops mfs_disk_fops = {
	.read = mfs_disk_read,
	.write = mfs_disk_write,
	.lseek = mfs_disk_lseek,
	.fallocate = mfs_disk_fallocate,
	.copy_range = mfs_disk_copy_range,
	.release = mfs_disk_release,
	.keep_cache = mfs_disk_keep_cache,
};

const struct mfs_iops *mfs_disk_kind(uint64_t ino, const struct mfs_inode *raw)
{
	uint16_t mode = le16toh(raw->i_mode);

	if (S_ISDIR(mode))
		return ino == MFS_ROOT_INO ? &mfs_root_iops : &mfs_dir_iops;
	if (S_ISREG(mode))
		return &mfs_file_iops;
	if (S_ISLNK(mode))
		return &mfs_symlink_iops;
	return &mfs_special_iops;
}

/* ---- in memory ----------------------------------------------------------- */

const struct mfs_iops mfs_ctl_dir_iops = {
	.kind = "control directory",
	.permission = mfs_mem_ro_permission,
	.refuse = mfs_mem_dir_refuse,
	.lookup = mfs_ctl_lookup,
	.readdir = mfs_ctl_readdir,
};

const struct mfs_iops mfs_stats_iops = {
	.kind = "statistics file",
	.permission = mfs_mem_ro_permission,
	.open = mfs_stats_open,
};

const struct mfs_fops mfs_stats_fops = {
	.direct = true,              /* made at open; its size is not known before */
	.read = mfs_stats_read,
	.release = mfs_stats_release,
};

const struct mfs_iops mfs_regions_dir_iops = {
	.kind = "regions directory",
	.permission = mfs_mem_ro_permission,
	.refuse = mfs_mem_dir_refuse,
	.lookup = mfs_regions_lookup,
	.readdir = mfs_regions_readdir,
};

const struct mfs_iops mfs_region_iops = {
	.kind = "region file",
	.permission = mfs_mem_permission,
	.setattr = mfs_region_setattr,
	.open = mfs_region_open,
	.fsync = mfs_region_fsync,
};

const struct mfs_fops mfs_region_fops = {
	.read = mfs_region_read,
	.write = mfs_region_write,
	.lseek = mfs_region_lseek,
};
