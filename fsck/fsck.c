/*
 * fsck.c - the order of the passes, the superblock and the journal.
 */
#include "fsck_i.h"

#include <errno.h>
#include <time.h>


int fsck_open(const char *path, bool read_only, struct bdev **out)
{
	struct bdev_open_opts o = { .block_size = 1024, .read_only = read_only };
	struct mfs_super sb;
	enum mlog_level level;
	uint32_t copy;
	bool torn;
	struct bdev *bd;
	int err = bdev_open(path, &o, &bd);

	if (err) {
		mlog_err("cannot open %s: %s", path, strerror(-err));
		return err;
	}
	/* Only the block size is wanted here: what is wrong with the
	 * superblock is said once, when fsck_run reads it again. */
	level = mlog_get_level();
	mlog_set_level(MLOG_ERR);
	err = fmt_sb_load_torn(bd, &sb, &copy, &torn);
	mlog_set_level(level);
	bdev_close(bd);
	if (err)
		return err;
	o.block_size = fmt_block_size(&sb);
	err = bdev_open(path, &o, out);
	if (err)
		mlog_err("cannot open %s: %s", path, strerror(-err));
	return err;
}

/* ---- the superblock and the descriptors ---------------------------------- */

static void set_geometry(struct fsck_ctx *c)
{
	c->bs = fmt_block_size(&c->sb);
	c->ngroups = le32toh(c->sb.s_groups_count);
	c->ipg = le32toh(c->sb.s_inodes_per_group);
	c->bpg = le32toh(c->sb.s_blocks_per_group);
	c->fdb = le32toh(c->sb.s_first_data_block);
	c->ninodes = le32toh(c->sb.s_inodes_count);
	c->nblocks = le64toh(c->sb.s_blocks_count);
}

static bool gdt_sound(const struct fsck_ctx *c)
{
	for (uint32_t g = 0; g < c->ngroups; g++)
		if (le32toh(c->gdt[g].bg_checksum) != fmt_gdesc_csum(&c->sb, g, &c->gdt[g]))
			return false;
	return true;
}

/*
 * The descriptors of the superblock's copy.  With a backup superblock the
 * primary table is still tried first: a damaged primary superblock says
 * nothing of the table after it, which is current, while a backup's copy
 * holds the counts of the last time the backups were written.
 */
static int read_gdt(struct fsck_ctx *c)
{
	uint32_t n = le16toh(c->sb.s_gdt_blocks);
	uint64_t start = fmt_group_first_block(&c->sb, c->sb_group) + 1;
	size_t len = (size_t)n * c->bs;
	int err;

	bdev_free_buf(c->gdt);
	c->gdt = bdev_alloc_buf(len);
	if (!c->gdt)
		return -ENOMEM;
	if (c->sb_group) {
		err = bdev_read(c->bd, (uint64_t)(c->fdb + 1) * c->bs, c->gdt, len);
		if (err || gdt_sound(c))
			return err;
	}
	return bdev_read(c->bd, start * c->bs, c->gdt, len);
}

int fsck_load_super(struct fsck_ctx *c)
{
	int err = fmt_sb_load_torn(c->bd, &c->sb, &c->sb_group, &c->sb_torn);

	if (err)
		return err;
	set_geometry(c);
	if (c->bd->block_size > c->bs) {
		mlog_err("device opened with %" PRIu32 "-byte blocks cannot hold a "
			 "filesystem of %" PRIu32 "-byte blocks", c->bd->block_size, c->bs);
		return -EINVAL;
	}
	return read_gdt(c);
}

/* Unknown features: the image is of a format this fsck does not know. */
static int check_features(struct fsck_ctx *c)
{
	uint32_t inc = le32toh(c->sb.s_feature_incompat) & ~MFS_FEATURE_INCOMPAT_SUPP;
	uint32_t roc = le32toh(c->sb.s_feature_ro_compat) & ~MFS_FEATURE_RO_COMPAT_SUPP;

	if (!inc && !roc)
		return 0;
	mlog_err("the filesystem has features this fsck does not know (incompat "
		 "0x%" PRIx32 ", ro_compat 0x%" PRIx32 "): it cannot be checked", inc, roc);
	return -EOPNOTSUPP;
}

static int write_super_block(struct fsck_ctx *c, uint64_t blk, uint32_t off,
			     uint16_t group)
{
	struct mfs_super copy = c->sb;
	char *buf = bdev_alloc_buf(c->bs);
	int err;

	if (!buf)
		return -ENOMEM;
	copy.s_block_group_nr = htole16(group);
	fmt_sb_set_csum(&copy);
	memset(buf, 0, c->bs);
	memcpy(buf + off, &copy, sizeof(copy));
	err = fsck_write(c, blk, buf);
	bdev_free_buf(buf);
	return err;
}

static int write_gdt_at(struct fsck_ctx *c, uint64_t blk)
{
	uint32_t n = le16toh(c->sb.s_gdt_blocks);
	int err;

	for (uint32_t g = 0; g < c->ngroups; g++)
		c->gdt[g].bg_checksum = htole32(fmt_gdesc_csum(&c->sb, g, &c->gdt[g]));
	err = bdev_write(c->bd, blk * c->bs, c->gdt, (size_t)n * c->bs);

	if (err)
		mlog_err("cannot write the group descriptors: %s", strerror(-err));
	return err;
}

/* The primary superblock and descriptors, and with @backups every copy. */
static int write_super(struct fsck_ctx *c, bool backups)
{
	uint64_t sb_block = MFS_SB_OFFSET / c->bs;
	int err = write_gdt_at(c, c->fdb + 1);

	for (uint32_t g = 1; g < c->ngroups && backups && !err; g++) {
		uint64_t first = fmt_group_first_block(&c->sb, g);

		if (!fmt_group_has_super(g))
			continue;
		err = write_super_block(c, first, 0, (uint16_t)g);
		if (!err)
			err = write_gdt_at(c, first + 1);
	}
	if (!err)
		err = bdev_flush(c->bd);
	if (!err)
		err = write_super_block(c, sb_block, MFS_SB_OFFSET % c->bs, 0);
	if (!err)
		err = bdev_flush(c->bd);
	return err;
}

/* ---- pass 0 ------------------------------------------------------------------ */

static bool sb_fields_differ(const struct mfs_super *pa, const struct mfs_super *pb,
			     const char **what)
{
	/* The geometry and identity: what a reader of a backup relies on. */
	size_t ends[] = { offsetof(struct mfs_super, s_free_blocks_count),
			  offsetof(struct mfs_super, s_state) };
	struct mfs_super ca = *pa, cb = *pb, *a = &ca, *b = &cb;

	/* Whether the journal needs a replay is the primary's alone. */
	a->s_feature_incompat &= htole32(~MFS_FEATURE_INCOMPAT_RECOVER);
	b->s_feature_incompat &= htole32(~MFS_FEATURE_INCOMPAT_RECOVER);
	*what = "differs from the primary";
	if (memcmp(a, b, ends[0]) || a->s_inodes_count != b->s_inodes_count ||
	    memcmp(&a->s_first_data_block, &b->s_first_data_block,
		   ends[1] - offsetof(struct mfs_super, s_first_data_block)))
		return true;
	return a->s_csum_seed != b->s_csum_seed || memcmp(a->s_uuid, b->s_uuid, 16) ||
	       a->s_journal_blocks != b->s_journal_blocks ||
	       a->s_region_table != b->s_region_table ||
	       a->s_region_count != b->s_region_count ||
	       a->s_regions_start != b->s_regions_start ||
	       a->s_device_blocks != b->s_device_blocks;
}

static int check_backups(struct fsck_ctx *c)
{
	struct mfs_super *copy = c->buf2;
	char why[200], reason[160];

	for (uint32_t g = 1; g < c->ngroups && !c->stop; g++) {
		const char *what = why;
		struct fsck_pctx p = { .group = g, .str = why };
		int err;

		if (!fmt_group_has_super(g))
			continue;
		err = fsck_read(c, fmt_group_first_block(&c->sb, g), copy);
		if (err)
			return err;
		if (fmt_sb_check(copy, c->bd->size, reason, sizeof(reason)))
			snprintf(why, sizeof(why), "is damaged (%s)", reason);
		else if (le16toh(copy->s_block_group_nr) != g)
			snprintf(why, sizeof(why), "says it is of group %u",
				 le16toh(copy->s_block_group_nr));
		else if (!sb_fields_differ(&c->sb, copy, &what))
			continue;
		p.str = what;
		if (fsck_fix(c, PR_SB_BACKUP, &p))
			c->backups_dirty = true;
		return 0;                /* one report: every copy is rewritten */
	}
	return 0;
}

/* A clock that ran ahead once would make every later check think the
 * filesystem was written in the future; a day of slack for time zones. */
static void check_sb_times(struct fsck_ctx *c)
{
	int64_t *t[3] = { &c->sb.s_mtime, &c->sb.s_wtime, &c->sb.s_lastcheck };
	static const char *const names[3] = { "mount", "write", "last check" };

	for (int i = 0; i < 3; i++) {
		struct fsck_pctx p = { .str = names[i], .num = (uint64_t)(int64_t)le64toh(*t[i]),
				       .num2 = (uint64_t)c->now };

		if ((int64_t)le64toh(*t[i]) <= c->now + 86400 || !fsck_fix(c, PR_SB_FUTURE, &p))
			continue;
		*t[i] = (int64_t)htole64(c->now);
		c->sb_dirty = true;
	}
}

static void check_sb_fields(struct fsck_ctx *c)
{
	uint16_t state = le16toh(c->sb.s_state), errors = le16toh(c->sb.s_errors);
	struct fsck_pctx p = { .num = state & ~(MFS_STATE_VALID | MFS_STATE_ERRORS) };

	if (p.num && fsck_fix(c, PR_SB_STATE, &p)) {
		c->sb.s_state = htole16(state & (MFS_STATE_VALID | MFS_STATE_ERRORS));
		c->sb_dirty = true;
	}
	p.num = errors;
	if (errors != MFS_ERRORS_CONTINUE && errors != MFS_ERRORS_RO &&
	    fsck_fix(c, PR_SB_ERRORS_MODE, &p)) {
		c->sb.s_errors = htole16(MFS_ERRORS_CONTINUE);
		c->sb_dirty = true;
	}
	for (size_t i = 0; i < sizeof(c->sb.s_reserved); i++) {
		if (!c->sb.s_reserved[i])
			continue;
		if (fsck_fix(c, PR_SB_RESERVED, NULL)) {
			memset(c->sb.s_reserved, 0, sizeof(c->sb.s_reserved));
			c->sb_dirty = true;
		}
		break;
	}
	if (state & MFS_STATE_ERRORS)
		fsck_note(c, PR_SB_MARKED, NULL);
	check_sb_times(c);
}

static void check_gdesc(struct fsck_ctx *c, uint32_t g)
{
	struct mfs_group_desc *gd = &c->gdt[g];
	uint64_t want[3] = { fsck_layout_bbitmap(c, g), fsck_layout_bbitmap(c, g) + 1,
			     fsck_layout_bbitmap(c, g) + 2 };
	uint32_t *have[3] = { &gd->bg_block_bitmap, &gd->bg_inode_bitmap, &gd->bg_inode_table };
	static const char *const names[3] = { "block bitmap", "inode bitmap", "inode table" };
	bool csum_bad = le32toh(gd->bg_checksum) != fmt_gdesc_csum(&c->sb, g, gd);
	bool other = false;
	static const uint8_t zero[24];

	for (int i = 0; i < 3; i++) {
		struct fsck_pctx p = { .group = g, .str = names[i],
				       .blk = le32toh(*have[i]), .blk2 = want[i] };

		if (le32toh(*have[i]) == want[i])
			continue;
		other = true;
		if (fsck_fix(c, PR_GD_LOC, &p)) {
			*have[i] = htole32((uint32_t)want[i]);
			c->gdt_dirty = true;
		}
	}
	if (gd->bg_flags || memcmp(gd->bg_reserved, zero, sizeof(zero))) {
		struct fsck_pctx p = { .group = g };

		other = true;
		if (fsck_fix(c, PR_GD_RESERVED, &p)) {
			gd->bg_flags = 0;
			memset(gd->bg_reserved, 0, sizeof(gd->bg_reserved));
			c->gdt_dirty = true;
		}
	}
	/* A bad checksum alone is reported as such; with other damage the
	 * fixes above rewrite the descriptor and its checksum. */
	if (csum_bad && !other) {
		struct fsck_pctx p = { .group = g };

		if (fsck_fix(c, PR_GD_CSUM, &p))
			c->gdt_dirty = true;
	}
}

int fsck_pass0(struct fsck_ctx *c)
{
	int err;

	c->pass = FSCK_PASS_0;
	if (c->o->pass_start)
		c->o->pass_start(c->o->arg, FSCK_PASS_0,
				 "Pass 0: Checking the superblock, descriptors and regions");
	check_sb_fields(c);
	err = check_backups(c);
	for (uint32_t g = 0; g < c->ngroups && !err && !c->stop; g++)
		check_gdesc(c, g);
	if (!err && !c->stop)
		err = fsck_regions(c);
	return err;
}

/* ---- putting it together ------------------------------------------------- */

static bool is_clean(const struct fsck_ctx *c)
{
	const struct mfs_super *sb = &c->sb;
	int16_t max = (int16_t)le16toh(sb->s_max_mnt_count);
	int64_t interval = (int64_t)le64toh(sb->s_checkinterval);

	if ((le16toh(sb->s_state) & (MFS_STATE_VALID | MFS_STATE_ERRORS)) != MFS_STATE_VALID)
		return false;
	if (le32toh(sb->s_feature_incompat) & MFS_FEATURE_INCOMPAT_RECOVER)
		return false;
	if (max > 0 && le16toh(sb->s_mnt_count) >= (uint16_t)max)
		return false;
	return !interval || (int64_t)le64toh(sb->s_lastcheck) + interval > c->now;
}

static int alloc_state(struct fsck_ctx *c)
{
	c->bused = calloc(1, c->nblocks / 8 + 1);
	c->istate = calloc(c->ninodes, 1);
	c->links_disk = calloc(c->ninodes, sizeof(uint16_t));
	c->links_found = calloc(c->ninodes, sizeof(uint16_t));
	c->buf = bdev_alloc_buf(c->bs);
	c->buf2 = bdev_alloc_buf(c->bs);
	for (int i = 0; i < 3; i++)
		c->ind[i] = bdev_alloc_buf(c->bs);
	if (!c->bused || !c->istate || !c->links_disk || !c->links_found || !c->buf ||
	    !c->buf2 || !c->ind[0] || !c->ind[1] || !c->ind[2])
		return -ENOMEM;
	return 0;
}

static void free_state(struct fsck_ctx *c)
{
	free(c->bused);
	free(c->bdup);
	free(c->istate);
	free(c->links_disk);
	free(c->links_found);
	free(c->dirs);
	free(c->dblist);
	bdev_free_buf(c->buf);
	bdev_free_buf(c->buf2);
	for (int i = 0; i < 3; i++)
		bdev_free_buf(c->ind[i]);
	bdev_free_buf(c->gdt);
}

/* What the superblock says; pass 5 puts in what it counted. */
static void fill_counts(struct fsck_ctx *c)
{
	struct fsck_result *r = c->res;

	r->inodes_count = c->ninodes;
	r->blocks_count = c->nblocks;
	r->inodes_used = c->ninodes - le32toh(c->sb.s_free_inodes_count);
	r->blocks_used = c->nblocks - le64toh(c->sb.s_free_blocks_count);
	memcpy(r->label, c->sb.s_volume_name, MFS_LABEL_LEN);
	r->label[MFS_LABEL_LEN] = 0;
}

static int run_passes(struct fsck_ctx *c)
{
	int (*const passes[])(struct fsck_ctx *) = {
		fsck_pass0, fsck_orphans, fsck_pass1, fsck_pass1b, fsck_mmp_repair, fsck_pass2,
		fsck_pass3, fsck_pass4, fsck_journal_rebuild, fsck_pass5,
	};
	int err = 0;

	for (size_t i = 0; i < UT_ARRAY_SIZE(passes) && !err && !c->stop; i++)
		err = passes[i](c);
	return err;
}

/* The check is over: the superblock says so, and everything goes home.
 * The time of the check alone is no change of the filesystem. */
static int finish(struct fsck_ctx *c)
{
	bool clean = !(c->res->exit & FSCK_EXIT_UNCORRECTED) && !c->stop;
	bool changed = c->res->changed || c->res->fixed || c->sb_dirty || c->gdt_dirty;
	uint16_t state = le16toh(c->sb.s_state);
	int err;

	if (!c->rw)
		return 0;
	if (clean) {
		state = (uint16_t)((state | MFS_STATE_VALID) & ~MFS_STATE_ERRORS);
		c->sb.s_mnt_count = 0;
		c->sb.s_lastcheck = htole64(c->now);
		c->sb_dirty = true;
	}
	c->sb.s_state = htole16(state);
	if (!c->sb_dirty && !c->gdt_dirty && !c->backups_dirty && !c->res->changed)
		return bdev_flush(c->bd);
	err = write_super(c, c->backups_dirty || c->gdt_dirty || c->res->changed);
	c->res->changed = changed;
	return err;
}

static int check(struct fsck_ctx *c)
{
	int err = fsck_load_super(c);

	if (!err)
		err = check_features(c);
	if (err)
		return err;
	if (c->sb_group && fsck_fix(c, PR_SB_PRIMARY,
				    &(struct fsck_pctx){ .group = c->sb_group })) {
		c->sb_dirty = true;
		c->backups_dirty = true;
	}
	if (c->sb_torn && fsck_fix(c, PR_SB_TORN, &(struct fsck_pctx){ 0 }))
		c->sb_dirty = true;
	fill_counts(c);
	/* A backup's counts are those of the last time backups were written. */
	c->was_valid = (le16toh(c->sb.s_state) & MFS_STATE_VALID) && !c->sb_group &&
		       !c->sb_torn;
	if (!c->o->force && !c->sb_group && !c->sb_torn && is_clean(c)) {
		c->res->skipped_clean = true;
		return 0;
	}
	err = alloc_state(c);
	if (!err)
		err = fsck_mmp_start(c);
	if (!err)
		err = fsck_journal(c);
	if (!err && !c->stop)
		err = run_passes(c);
	if (!err && !c->stop)
		err = finish(c);
	return err;
}

int fsck_run(struct bdev *bd, const struct fsck_opts *opts, struct fsck_result *res)
{
	struct fsck_ctx c = { .bd = bd, .o = opts, .res = res };
	int err;

	memset(res, 0, sizeof(*res));
	c.rw = !bd->read_only && opts->mode != FSCK_NO;
	c.now = opts->now ? opts->now : (int64_t)time(NULL);
	err = check(&c);
	if (err) {
		if (err == -EUCLEAN)
			mlog_err("no valid superblock: this is not a miscfs image, or "
				 "every copy of its superblock is damaged");
		else if (err != -EOPNOTSUPP)
			mlog_err("cannot check: %s", strerror(-err));
		res->exit |= FSCK_EXIT_OPERATIONAL;
	}
	if (c.stop && res->preen_halted)
		res->exit |= FSCK_EXIT_UNCORRECTED;
	if (fsck_mmp_stop(&c))
		res->exit |= FSCK_EXIT_OPERATIONAL;
	free_state(&c);
	return res->exit;
}
