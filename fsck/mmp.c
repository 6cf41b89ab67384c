/*
 * mmp.c - fsck and multi-mount protection.
 *
 * A repairing check writes: it claims the filesystem as a mount does (and
 * stamps it while it runs), so that it neither repairs an image another
 * node has mounted nor is mounted under its feet.  A read-only check
 * claims nothing and only warns when the block says someone has it.
 *
 * A damaged MMP block cannot say who has the filesystem.  The check goes
 * on without the claim; by the end of pass 1b no inode shares the block
 * any more (it is claimed as metadata, so a file on it was given a copy),
 * and the block is written back released.
 */
#include "fsck_i.h"

#include <errno.h>

int fsck_mmp_start(struct fsck_ctx *c)
{
	struct mfs_mmp m;
	char why[160], who[160];
	int err;

	if (!fmt_has_mmp(&c->sb))
		return 0;
	err = fmt_mmp_read(c->bd, &c->sb, &m, why, sizeof(why));
	if (err == -EUCLEAN) {
		c->mmp_bad = fsck_fix(c, PR_MMP_BAD, &(struct fsck_pctx){
			.blk = le64toh(c->sb.s_mmp_block), .str = why });
		return 0;
	}
	if (err) {
		mlog_err("%s", why);
		return err;
	}
	if (!c->rw) {
		if (le32toh(m.mmp_seq) != MFS_MMP_SEQ_CLEAN) {
			fmt_mmp_describe(&m, who, sizeof(who));
			mlog_warn("the filesystem may be in use by %s: what this "
				  "check reads may be changing under it", who);
		}
		return 0;
	}
	return fmt_mmp_start(c->bd, &c->sb, "fsck.miscfs", NULL, NULL, &c->mmp);
}

/* The damaged block released, once no inode shares it (after pass 1b). */
int fsck_mmp_repair(struct fsck_ctx *c)
{
	if (!c->mmp_bad || !c->rw || !fmt_has_mmp(&c->sb))
		return 0;
	return fmt_mmp_release(c->bd, &c->sb, "fsck.miscfs");
}

int fsck_mmp_stop(struct fsck_ctx *c)
{
	int err = fmt_mmp_stop(c->mmp);

	c->mmp = NULL;
	return err;
}
