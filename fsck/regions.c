/*
 * regions.c - the reserved-region table (pass 0).
 *
 * fsck judges the table as the mount does (fmt_region_table_check,
 * fmt_region_entry_problem) and, beyond that, that no region lies on a
 * block of the groups.  Its repairs change the table only: a region's
 * bytes are its owner's, and fsck never reads or writes them.
 */
#include "fsck_i.h"

#include <errno.h>

/* Clear the whole table: the superblock no longer names one. */
static void drop_table(struct fsck_ctx *c)
{
	c->sb.s_region_count = 0;
	c->sb.s_region_table = 0;
	c->sb.s_feature_compat &= htole32(~MFS_FEATURE_COMPAT_REGIONS);
	c->sb_dirty = true;
}

/* Take entry @i out, closing the gap, and count one region less. */
static void remove_entry(struct fsck_ctx *c, struct mfs_region_entry *tbl, uint32_t i,
			 uint32_t *n)
{
	struct mfs_region_header *h = c->buf;

	memmove(&tbl[i], &tbl[i + 1], (size_t)(*n - i - 1) * sizeof(*tbl));
	memset(&tbl[*n - 1], 0, sizeof(*tbl));
	(*n)--;
	h->rh_count = htole32(*n);
	c->sb.s_region_count = htole32(*n);
	c->sb_dirty = true;
}

static const char *entry_problem(struct fsck_ctx *c, const struct mfs_region_entry *tbl,
				 uint32_t i)
{
	const char *why = fmt_region_entry_problem(&c->sb, tbl, i);

	if (!why && le64toh(tbl[i].re_start) < c->nblocks)
		why = "a range overlapping the block groups";
	return why;
}

/* Returns true when the table changed. */
static bool check_entries(struct fsck_ctx *c)
{
	struct mfs_region_entry *tbl = (void *)((char *)c->buf + MFS_REGION_HDR_SIZE);
	uint32_t n = le32toh(c->sb.s_region_count);
	bool changed = false;
	char why[96];

	for (uint32_t i = 0; i < n && !c->stop; ) {
		const char *what = entry_problem(c, tbl, i);
		char name[MFS_REGION_NAME_LEN + 1];
		struct fsck_pctx p = { .blk = le64toh(tbl[i].re_start), .str = why,
				       .name = name };

		if (!what) {
			i++;
			continue;
		}
		memcpy(name, tbl[i].re_name, MFS_REGION_NAME_LEN);
		name[MFS_REGION_NAME_LEN] = 0;
		p.namelen = strlen(name);
		p.blk2 = p.blk + le64toh(tbl[i].re_blocks) - 1;
		snprintf(why, sizeof(why), "has %s", what);
		if (fsck_fix(c, PR_RGN_BAD, &p)) {
			remove_entry(c, tbl, i, &n);
			changed = true;
		} else {
			i++;
		}
	}
	return changed;
}

int fsck_regions(struct fsck_ctx *c)
{
	uint64_t blk = le64toh(c->sb.s_region_table);
	struct fsck_pctx p = { .blk = blk };
	char why[96];
	bool csum_only, changed;
	int err;

	if (!le32toh(c->sb.s_region_count))
		return 0;
	err = fsck_read(c, blk, c->buf);
	if (err)
		return err;
	if (fmt_region_table_check(&c->sb, c->buf, why, sizeof(why))) {
		/* Header sound, checksum wrong: keep the entries. */
		fmt_block_set_csum(&c->sb, MFS_CSUM_REGION, 0, c->buf);
		csum_only = !fmt_region_table_check(&c->sb, c->buf, NULL, 0);
		p.str = why;
		if (!fsck_fix(c, csum_only ? PR_RGN_TABLE_CSUM : PR_RGN_TABLE, &p))
			return 0;
		if (!csum_only) {
			drop_table(c);
			return 0;
		}
		err = fsck_write(c, blk, c->buf);
		if (err)
			return err;
	}
	changed = check_entries(c);
	if (!changed)
		return 0;
	fmt_block_set_csum(&c->sb, MFS_CSUM_REGION, 0, c->buf);
	return fsck_write(c, blk, c->buf);
}
