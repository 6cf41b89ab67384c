/*
 * journal.c - the journal: replaying it before the passes, and making a
 * new one when its inode cannot be used.
 */
#include "fsck_i.h"

#include <errno.h>

#include "jnl.h"

struct jmap {
	uint64_t *map;
	uint32_t n;
};

static int read_block(void *c, uint64_t blk, void *buf)
{
	return fsck_read(c, blk, buf);
}

/* The journal's blocks, read through the mount's own walk (a journal the
 * mount could not use is damage here too), from the inode table where
 * the layout puts it. */
static int load_jmap(struct fsck_ctx *c, struct jmap *m, char *why, size_t len)
{
	struct mfs_inode in;
	struct fmt_bmap_walk w = { .sb = &c->sb, .ino = MFS_JOURNAL_INO, .in = &in,
				   .read_block = read_block, .read_ctx = c,
				   .why = why, .whylen = len };
	int err;

	m->n = le32toh(c->sb.s_journal_blocks);
	m->map = calloc(m->n, sizeof(*m->map));
	err = m->map ? fsck_read_inode(c, MFS_JOURNAL_INO, &in) : -ENOMEM;
	if (!err && le32toh(in.i_checksum) != fmt_inode_csum(&c->sb, MFS_JOURNAL_INO, &in))
		err = ut_corrupt(why, len, "its checksum does not match");
	if (!err)
		err = fmt_bmap_map_all(&w, m->map, m->n);
	return err;
}

static int jsb_read(struct fsck_ctx *c, const struct jmap *m, char *why, size_t len)
{
	int err = fsck_read(c, m->map[0], c->buf);

	if (!err)
		err = jnl_sb_check(c->buf, m->n, c->bs, why, len);
	return err;
}

static int replay(struct fsck_ctx *c, const struct jmap *m)
{
	struct jnl_recovery info;
	struct fsck_pctx p = { 0 };
	int err = jnl_recover_within(c->bd, m->map, m->n, c->nblocks, 0, &info);

	if (err) {
		mlog_err("journal recovery failed: %s", strerror(-err));
		return err;
	}
	c->res->recovered = true;
	c->res->changed = true;
	p.num = info.transactions;
	p.num2 = info.replayed;
	fsck_note(c, PR_J_REPLAYED, &p);
	/* The replay wrote home the superblock and descriptors it logged. */
	err = fsck_load_super(c);
	if (!err) {
		c->sb.s_feature_incompat &= htole32(~MFS_FEATURE_INCOMPAT_RECOVER);
		if (info.jnl_errno)
			c->sb.s_state |= htole16(MFS_STATE_ERRORS);
		c->sb_dirty = true;
	}
	return err;
}

static int check_log(struct fsck_ctx *c, const struct jmap *m)
{
	bool flag = le32toh(c->sb.s_feature_incompat) & MFS_FEATURE_INCOMPAT_RECOVER;
	struct jnl_recovery info;
	struct fsck_pctx p = { 0 };
	char what[96];
	int err = jnl_recover_within(c->bd, m->map, m->n, c->nblocks,
				     JNL_RECOVER_CHECK_ONLY, &info);

	if (err)
		return err;
	if (info.was_empty) {
		if (flag && fsck_fix(c, PR_J_RECOVER_FLAG, NULL)) {
			c->sb.s_feature_incompat &= htole32(~MFS_FEATURE_INCOMPAT_RECOVER);
			c->sb_dirty = true;
		}
		return 0;
	}
	snprintf(what, sizeof(what), "%" PRIu32 " transactions in the log",
		 info.transactions);
	p.str = what;
	if (fsck_fix(c, PR_J_RECOVER, &p))
		return replay(c, m);
	c->res->needs_recovery = true;
	return 0;
}

static int check_jerrno(struct fsck_ctx *c, const struct jmap *m)
{
	const struct jnl_superblock *js = c->buf;
	int32_t jerr = (int32_t)le32toh(js->s_errno);
	struct fsck_pctx p = { .str = jerr ? strerror(-jerr) : "" };

	if (!jerr || !fsck_fix(c, PR_J_ERRNO, &p))
		return 0;
	c->sb.s_state |= htole16(MFS_STATE_ERRORS);
	c->sb_dirty = true;
	return jnl_clear_errno(c->bd, m->map, m->n);
}

/*
 * mkfs always makes a journal and the mount refuses a filesystem without
 * one: a clear flag is damage.  With the flag set again the journal the
 * superblock names is judged as any other (0); if the superblock's
 * journal fields fail its checks once the flag is set, they get the
 * smallest journal and a new one is made (1).
 */
static int set_has_journal(struct fsck_ctx *c)
{
	struct mfs_super sb = c->sb;

	sb.s_feature_compat |= htole32(MFS_FEATURE_COMPAT_HAS_JOURNAL);
	fmt_sb_set_csum(&sb);
	c->sb.s_feature_compat = sb.s_feature_compat;
	c->sb_dirty = true;
	if (!fmt_sb_check(&sb, 0, NULL, 0))
		return 0;
	c->sb.s_journal_inum = htole32(MFS_JOURNAL_INO);
	c->sb.s_journal_blocks = htole32(JNL_MIN_BLOCKS);
	c->journal_rebuild = true;
	return 1;
}

int fsck_journal(struct fsck_ctx *c)
{
	struct jmap m = { 0 };
	char why[256] = "";
	struct fsck_pctx p = { .str = why };
	int err;

	c->pass = FSCK_PASS_JOURNAL;
	if (!(le32toh(c->sb.s_feature_compat) & MFS_FEATURE_COMPAT_HAS_JOURNAL)) {
		if (!fsck_fix(c, PR_J_NO_JOURNAL, NULL) || set_has_journal(c))
			return 0;
	}
	err = load_jmap(c, &m, why, sizeof(why));
	if (err == -EUCLEAN) {
		if (fsck_fix(c, PR_J_INODE_BAD, &p))
			c->journal_rebuild = true;
		free(m.map);
		return 0;
	}
	if (!err)
		err = jsb_read(c, &m, why, sizeof(why));
	if (err == -EUCLEAN && fsck_fix(c, PR_J_SB_BAD, &p)) {
		err = jnl_format(c->bd, m.map, m.n, c->sb.s_uuid, le64toh(c->sb.s_csum_seed));
		if (!err)
			err = jsb_read(c, &m, why, sizeof(why));
	}
	if (!err)
		err = check_jerrno(c, &m);
	if (!err)
		err = check_log(c, &m);
	free(m.map);
	return err == -EUCLEAN ? 0 : err;
}

/* ---- a new journal ------------------------------------------------------- */

static int build_map(struct fsck_ctx *c, struct mfs_inode *in, uint64_t *map, uint32_t n)
{
	uint64_t goal = fsck_layout_itable(c, 0) + fmt_itable_blocks(&c->sb), added = 0;
	int err = 0;

	for (uint32_t i = 0; i < n && !err; i++) {
		err = fsck_alloc_block(c, goal, &map[i]);
		if (!err)
			err = fsck_bmap_set(c, MFS_JOURNAL_INO, in, i, map[i], &added);
		goal = map[i] + 1;
	}
	in->i_blocks = htole64((n + added) * (uint64_t)(c->bs / 512));
	return err;
}

int fsck_journal_rebuild(struct fsck_ctx *c)
{
	uint32_t n = le32toh(c->sb.s_journal_blocks);
	uint64_t *map;
	struct mfs_inode in;
	int err;

	if (!c->journal_rebuild)
		return 0;
	map = calloc(n, sizeof(*map));
	err = map ? fsck_read_inode(c, MFS_JOURNAL_INO, &in) : -ENOMEM;
	if (!err) {
		uint32_t gen = le32toh(in.i_generation);

		memset(&in, 0, sizeof(in));
		in.i_generation = htole32(gen + 1);
		in.i_mode = htole16(S_IFREG | 0600);
		in.i_links_count = htole16(1);
		in.i_size = htole64((uint64_t)n * c->bs);
		in.i_atime = in.i_mtime = in.i_ctime = in.i_crtime = htole64(c->now);
		err = build_map(c, &in, map, n);
	}
	if (!err)
		err = fsck_write_inode(c, MFS_JOURNAL_INO, &in);
	if (!err)
		err = jnl_format(c->bd, map, n, c->sb.s_uuid, le64toh(c->sb.s_csum_seed));
	if (!err) {
		c->istate[MFS_JOURNAL_INO - 1] = MFS_FT_REG_FILE;
		c->sb.s_feature_incompat &= htole32(~MFS_FEATURE_INCOMPAT_RECOVER);
		c->sb_dirty = true;
	} else {
		mlog_err("cannot make a new journal: %s", strerror(-err));
		fsck_unfixed(c);
		err = err == -ENOSPC ? 0 : err;
	}
	free(map);
	return err;
}
