/*
 * pass4.c - link counts against the entries that name each inode.
 *
 * An inode in use that no entry names is either empty (freed) or holds
 * something (linked into /lost+found).  Then every count that differs
 * from what was counted is set to it.  Pass 4 also takes the tally of
 * what the image holds, for the summary.
 */
#include "fsck_i.h"

#include <errno.h>

static const char *type_name(unsigned type)
{
	static const char *const names[MFS_FT_MAX] = {
		"unknown", "a regular file", "a directory", "a character device",
		"a block device", "a fifo", "a socket", "a symbolic link",
	};

	return type < MFS_FT_MAX ? names[type] : "unknown";
}

/* Freed: an empty inode has no block to give back. */
static int free_empty(struct fsck_ctx *c, uint32_t ino, struct mfs_inode *in)
{
	in->i_links_count = 0;
	in->i_dtime = htole64(c->now);
	int err = fsck_write_inode(c, ino, in);

	return err ? err : fsck_release_inode(c, ino, false);
}

static bool is_empty(const struct mfs_inode *in)
{
	static const uint32_t zero[MFS_N_BLOCKS];

	if (S_ISLNK(le16toh(in->i_mode)))
		return false;            /* a target is content */
	return !in->i_size && !memcmp(in->i_block, zero, sizeof(zero));
}

static int unattached(struct fsck_ctx *c, uint32_t ino)
{
	unsigned type = istate_type(c, ino);
	struct mfs_inode in;
	struct fsck_pctx p = { .ino = ino, .str = type_name(type) };
	int err = fsck_read_inode(c, ino, &in);

	if (err)
		return err;
	p.num = le64toh(in.i_size);
	if (is_empty(&in) && !in.i_xattr_block &&
	    (type == MFS_FT_REG_FILE || type == MFS_FT_SYMLINK))
		return fsck_fix(c, PR_UNATTACHED_EMPTY, &p) ? free_empty(c, ino, &in) : 0;
	if (!fsck_fix(c, PR_UNATTACHED, &p))
		return 0;
	err = fsck_reconnect(c, ino, type);
	return err == -ENOENT || err == -ENOSPC ? 0 : err;
}

static int check_count(struct fsck_ctx *c, uint32_t ino)
{
	struct fsck_pctx p = { .ino = ino, .num = c->links_disk[ino - 1],
			       .num2 = c->links_found[ino - 1] };
	struct mfs_inode in;
	int err;

	if (p.num == p.num2 || !fsck_fix(c, PR_LINKS, &p))
		return 0;
	err = fsck_read_inode(c, ino, &in);
	if (err)
		return err;
	in.i_links_count = htole16((uint16_t)p.num2);
	c->links_disk[ino - 1] = (uint16_t)p.num2;
	return fsck_write_inode(c, ino, &in);
}

static void tally(struct fsck_ctx *c, uint32_t ino)
{
	struct fsck_result *r = c->res;
	unsigned type = istate_type(c, ino);

	if (!type)
		return;
	switch (type) {
	case MFS_FT_REG_FILE: r->regular++; break;
	case MFS_FT_DIR: r->directories++; break;
	case MFS_FT_CHRDEV: r->chrdevs++; break;
	case MFS_FT_BLKDEV: r->blkdevs++; break;
	case MFS_FT_FIFO: r->fifos++; break;
	case MFS_FT_SOCK: r->sockets++; break;
	case MFS_FT_SYMLINK:
		r->symlinks++;
		r->fast_symlinks += !!(c->istate[ino - 1] & IS_FAST_LINK);
		break;
	}
	if (type != MFS_FT_DIR && c->links_found[ino - 1] > 1)
		r->hard_links += c->links_found[ino - 1] - 1u;
}

int fsck_pass4(struct fsck_ctx *c)
{
	int err = 0;

	c->pass = FSCK_PASS_4;
	if (c->o->pass_start)
		c->o->pass_start(c->o->arg, FSCK_PASS_4, "Pass 4: Checking reference counts");
	for (uint32_t ino = 1; ino <= c->ninodes && !err && !c->stop; ino++) {
		unsigned type = istate_type(c, ino);

		if (ino % 65536 == 0)
			fsck_progress(c, ino, c->ninodes);
		if (!type || (ino < MFS_FIRST_INO && ino != MFS_ROOT_INO))
			continue;
		/* An unlinked orphan left as it is (-n) is its list's business. */
		if (!c->links_found[ino - 1] && (c->istate[ino - 1] & IS_ORPHAN))
			continue;
		if (!c->links_found[ino - 1] && type != MFS_FT_DIR)
			err = unattached(c, ino);
		if (!err && istate_type(c, ino))
			err = check_count(c, ino);
		tally(c, ino);
	}
	fsck_progress(c, c->ninodes, c->ninodes);
	return err;
}
