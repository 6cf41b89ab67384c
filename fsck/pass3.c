/*
 * pass3.c - every directory reachable from the root, each once.
 *
 * Pass 2 gave each directory the one directory whose entry names it
 * (c->dirs[].parent).  Following those links up from every directory
 * either reaches the root, stops at a directory no entry names, or comes
 * back to itself (a loop).  The last two are reconnected in /lost+found
 * (made when missing); then every ".." is made to name the parent, and
 * counted.
 */
#include "fsck_i.h"

#include <errno.h>

static int check_root(struct fsck_ctx *c)
{
	struct fsck_dir *root = fsck_dir_find(c, MFS_ROOT_INO);
	int err;

	if (root && !c->root_bad)
		return 0;
	if (!fsck_fix(c, PR_NO_ROOT, NULL))
		return 1;
	c->istate[MFS_ROOT_INO - 1] = MFS_FT_DIR;
	err = fsck_mkdir(c, MFS_ROOT_INO, MFS_ROOT_INO, 0755);
	if (!err)
		fsck_dir_find(c, MFS_ROOT_INO)->parent = MFS_ROOT_INO;
	return err;
}

/*
 * The root's entry lost+found names no directory: it goes (the inode,
 * if nothing else names it, is then unattached, and pass 4 takes it to
 * the new /lost+found), as e2fsck does.  1 if the answer is no.
 */
static int unlink_lf_file(struct fsck_ctx *c)
{
	uint32_t ino = c->lf_taken;
	int err;

	if (!fsck_fix(c, PR_LF_NOT_DIR, &(struct fsck_pctx){ .ino = ino }))
		return 1;
	err = fsck_dir_remove(c, MFS_ROOT_INO, ino, "lost+found");
	if (err) {
		fsck_unfixed(c);
		return err == -EUCLEAN || err == -ENOENT ? 1 : err;
	}
	c->links_found[ino - 1]--;
	c->lf_taken = 0;
	return 0;
}

static int make_lost_found(struct fsck_ctx *c)
{
	uint32_t ino;
	int err;

	if (c->lost_found)
		return 0;
	if (c->lf_taken) {
		err = unlink_lf_file(c);
		if (err)
			return err < 0 ? err : 0;
	}
	if (!fsck_fix(c, PR_NO_LF, NULL))
		return 0;
	err = fsck_alloc_inode(c, MFS_FT_DIR, &ino);
	if (!err)
		err = fsck_mkdir(c, ino, MFS_ROOT_INO, 0700);
	if (!err)
		err = fsck_dir_add(c, MFS_ROOT_INO, "lost+found", ino, MFS_FT_DIR);
	if (err) {
		fsck_unfixed(c);
		return err == -ENOSPC ? 0 : err;
	}
	fsck_dir_find(c, ino)->parent = MFS_ROOT_INO;
	c->links_found[ino - 1]++;
	c->lost_found = ino;
	return 0;
}

/* Link @ino (of @type) into /lost+found as "#INO". */
int fsck_reconnect(struct fsck_ctx *c, uint32_t ino, unsigned type)
{
	char name[16];
	int err;

	if (!c->lost_found) {
		fsck_note(c, PR_NO_ROOM, &(struct fsck_pctx){ .ino = ino,
			  .str = "there is no /lost+found" });
		return -ENOENT;
	}
	snprintf(name, sizeof(name), "#%" PRIu32, ino);
	err = fsck_dir_add(c, c->lost_found, name, ino, type);
	if (err) {
		fsck_note(c, PR_NO_ROOM, &(struct fsck_pctx){ .ino = ino,
			  .str = strerror(-err) });
		return err;
	}
	if (c->links_found[ino - 1] < UINT16_MAX)
		c->links_found[ino - 1]++;
	return 0;
}

/* A directory outside the tree: to /lost+found, leaving the loop it was
 * in (its old entry goes, or it would be a second link). */
static int reconnect_dir(struct fsck_ctx *c, struct fsck_dir *d, bool loop)
{
	struct fsck_pctx p = { .ino = d->ino, .ino2 = d->dotdot };
	uint32_t ino = d->ino;
	int err;

	if (!fsck_fix(c, loop ? PR_LOOP : PR_UNCONNECTED, &p))
		return 0;
	if (loop && d->parent) {
		err = fsck_dir_remove(c, d->parent, ino, NULL);
		if (err && err != -ENOENT)
			return err;
		c->links_found[ino - 1]--;
		d->parent = 0;
	}
	err = fsck_reconnect(c, ino, MFS_FT_DIR);
	if (err)
		return err == -ENOENT || err == -ENOSPC ? 0 : err;
	fsck_dir_find(c, ino)->parent = c->lost_found;
	return 0;
}

/*
 * Walk up from @d.  @mark holds, per directory, 0 (not met), the number
 * of the walk that met it, or UINT32_MAX (reaches the root).
 */
static int check_path(struct fsck_ctx *c, struct fsck_dir *d, uint32_t *mark,
		      uint32_t walk)
{
	struct fsck_dir *x = d;
	int err = 0;

	while (x->ino != MFS_ROOT_INO && mark[x - c->dirs] != UINT32_MAX) {
		struct fsck_dir *up;

		if (mark[x - c->dirs] == walk) {
			err = reconnect_dir(c, x, true);
			break;
		}
		mark[x - c->dirs] = walk;
		up = x->parent ? fsck_dir_find(c, x->parent) : NULL;
		if (!up) {
			err = reconnect_dir(c, x, false);
			break;
		}
		x = up;
	}
	/* Whatever the answer, the chain is settled: not asked again. */
	for (x = d; x && mark[x - c->dirs] == walk; ) {
		mark[x - c->dirs] = UINT32_MAX;
		x = x->parent ? fsck_dir_find(c, x->parent) : NULL;
	}
	return err;
}

/* Device block of directory @ino's block 0: always a direct pointer. */
static uint64_t block0(struct fsck_ctx *c, uint32_t ino)
{
	struct mfs_inode in;

	if (fsck_read_inode(c, ino, &in))
		return 0;
	return fsck_block_ok(c, le32toh(in.i_block[0])) ? le32toh(in.i_block[0]) : 0;
}

static int set_dotdot(struct fsck_ctx *c, struct fsck_dir *d)
{
	uint64_t blk = block0(c, d->ino);
	struct mfs_dirent *dot = c->buf, *dd;
	int err;

	if (!blk)
		return -ENOENT;
	err = fsck_read(c, blk, c->buf);
	if (err)
		return err;
	dd = (void *)((char *)c->buf + le16toh(dot->rec_len));
	if (le16toh(dot->rec_len) >= c->bs - MFS_DIR_TAIL_SIZE || dd->name_len != 2 ||
	    memcmp(dd->name, "..", 2))
		return -EUCLEAN;
	dd->inode = htole32(d->parent);
	fmt_block_set_csum(&c->sb, MFS_CSUM_DIR, d->ino, c->buf);
	return fsck_write(c, blk, c->buf);
}

static int check_dotdot(struct fsck_ctx *c, struct fsck_dir *d)
{
	struct fsck_pctx p = { .ino = d->ino, .ino2 = d->dotdot, .num = d->parent };
	uint32_t old = d->dotdot;
	int err = 0;

	if (d->parent && d->dotdot != d->parent && fsck_fix(c, PR_DOTDOT, &p)) {
		err = set_dotdot(c, d);
		if (!err && old != d->ino && inode_in_use(c, old) &&
		    istate_type(c, old) == MFS_FT_DIR)
			err = fsck_adjust_links(c, old, -1);
		if (!err && d->parent != d->ino)
			err = fsck_adjust_links(c, d->parent, 1);
		if (err == -EUCLEAN || err == -ENOENT) {
			fsck_unfixed(c);
			return 0;
		}
		d->dotdot = d->parent;
	}
	if (inode_in_use(c, d->dotdot) && istate_type(c, d->dotdot) == MFS_FT_DIR &&
	    c->links_found[d->dotdot - 1] < UINT16_MAX)
		c->links_found[d->dotdot - 1]++;
	return err;
}

int fsck_pass3(struct fsck_ctx *c)
{
	uint32_t *mark;
	int err;

	c->pass = FSCK_PASS_3;
	if (c->o->pass_start)
		c->o->pass_start(c->o->arg, FSCK_PASS_3, "Pass 3: Checking directory connectivity");
	err = check_root(c);
	if (err)
		return err < 0 ? err : 0;
	err = make_lost_found(c);
	mark = calloc(c->ndirs + 1, sizeof(*mark));
	if (!mark)
		return -ENOMEM;
	for (size_t i = 0; i < c->ndirs && !err && !c->stop; i++) {
		err = check_path(c, &c->dirs[i], mark, (uint32_t)i + 1);
		fsck_progress(c, i + 1, c->ndirs);
	}
	free(mark);
	for (size_t i = 0; i < c->ndirs && !err && !c->stop; i++)
		err = check_dotdot(c, &c->dirs[i]);
	return err;
}
