/*
 * flags.c - the inode flags of chattr(1) and lsattr(1) (FS_IOC_GETFLAGS
 * and FS_IOC_SETFLAGS), with ext3's rules: the immutable and append-only
 * flags need CAP_LINUX_IMMUTABLE (root here) to change, the journal-data
 * flag CAP_SYS_RESOURCE (root too), the others the owner or root.
 *
 * What each flag does is enforced where the operation is: the permission
 * check refuses writing an immutable inode, the delete check an entry of
 * an append-only directory or an immutable or append-only victim, open a
 * writer of an append-only file that does not append, setattr the changes
 * Linux's notify_change refuses.  The synchronous flags make a change
 * commit before its call returns (mfs_sync_if_flagged).
 */
#include "mfs_i.h"
#include "icache.h"
#include "jdata.h"
#include "kinds.h"
#include "vfs.h"

#include <errno.h>
#include <string.h>

/* What a new inode takes from its directory (ext4's EXT4_FL_INHERITED,
 * cut to its EXT4_REG_FLMASK and EXT4_OTHER_FLMASK). */
#define INHERITED (MFS_SYNC_FL | MFS_NODUMP_FL | MFS_NOATIME_FL | \
		   MFS_JOURNAL_DATA_FL | MFS_DIRSYNC_FL)
#define REG_INHERITED (INHERITED & ~MFS_DIRSYNC_FL)
#define OTHER_INHERITED (MFS_NODUMP_FL | MFS_NOATIME_FL)

uint32_t mfs_inherit_flags(struct mfs_node *dir, uint16_t mode)
{
	uint32_t fl = mfs_node_flags(dir);

	if (S_ISDIR(mode))
		return fl & INHERITED;
	if (S_ISREG(mode))
		return fl & REG_INHERITED;
	return fl & OTHER_INHERITED;
}

int mfs_check_flags(struct mfs_node *n, bool append)
{
	uint32_t fl = mfs_node_flags(n);

	if ((fl & MFS_IMMUTABLE_FL) || (append && (fl & MFS_APPEND_FL)))
		return -EPERM;
	return 0;
}

int mfs_sync_if_flagged(struct mfs_node *n, bool dir)
{
	uint32_t want = MFS_SYNC_FL | (dir ? MFS_DIRSYNC_FL : 0);

	if (!(mfs_node_flags(n) & want))
		return 0;
	return mfs_fsync_node(n, false);
}

/* ext4_ioctl_setflags' refusals, in its order. */
static int set_flags_check(struct mfs_node *n, const struct mfs_cred *cr,
			   uint32_t flags)
{
	uint32_t old = mfs_node_flags(n) & MFS_USER_FL_MASK, changed = old ^ flags;
	bool root = !cr || cr->uid == 0;

	if (!root && cr->uid != le32toh(n->raw.i_uid))
		return -EPERM;
	if (flags & ~MFS_USER_FL_MASK)
		return -EOPNOTSUPP;
	/* An inode that stays immutable takes no other change. */
	if ((old & flags & MFS_IMMUTABLE_FL) && (changed & ~MFS_IMMUTABLE_FL))
		return -EPERM;
	if ((changed & (MFS_APPEND_FL | MFS_IMMUTABLE_FL | MFS_JOURNAL_DATA_FL)) &&
	    !root)
		return -EPERM;
	return 0;
}

static int set_flags_locked(struct mfs_node *n, const struct mfs_cred *cr,
			    uint32_t flags)
{
	bool jswitch = ((mfs_node_flags(n) ^ flags) & MFS_JOURNAL_DATA_FL) &&
		       S_ISREG(node_mode(n));
	struct mfs_handle h;
	int err = set_flags_check(n, cr, flags);

	/* The journal-data flag changes how the file's data reaches the
	 * disk: what was written the old way is home and committed first,
	 * and the mapping follows the new flag after. */
	if (!err && jswitch)
		err = mfs_jdata_prepare_switch(n);
	if (!err)
		err = mfs_jstart(n->fs, MFS_CR_INODE, &h);
	if (err)
		return err;
	pthread_mutex_lock(&n->lock);
	n->raw.i_flags = htole32((mfs_node_flags(n) & ~MFS_USER_FL_MASK) | flags);
	mfs_node_touch(n, false, true);
	pthread_mutex_unlock(&n->lock);
	err = mfs_jstop(n->fs, &h, mfs_inode_write(n, &h, true));
	if (!err && jswitch)
		err = mfs_jdata_setup(n);
	return err;
}

int mfs_disk_set_flags(struct mfs_node *n, const struct mfs_cred *cr,
		       uint32_t flags)
{
	int err = mfs_check_rw(n->fs);

	if (err)
		return err;
	pthread_rwlock_wrlock(&n->rwsem);
	/* What lsattr showed comes back: the index flag is the filesystem's
	 * to keep, as ext4 keeps it. */
	err = set_flags_locked(n, cr, flags & ~MFS_INDEX_FL);
	pthread_rwlock_unlock(&n->rwsem);
	return err;
}
