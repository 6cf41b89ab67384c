/*
 * pass5.c - the bitmaps and free counts against what is in use.
 *
 * Passes 1 to 4 leave in c->bused every block in use and in c->istate
 * every inode; here each group's bitmaps are built from them, compared
 * with the disk's and written where they differ, and the counts of the
 * descriptors and the superblock follow.
 */
#include "fsck_i.h"

#include <errno.h>

#define MAX_RANGES 8

struct diff {
	char text[256];
	unsigned int ranges;
	uint64_t from, to;           /* the range being built */
	int sign;                    /* 0: none open */
};

static void diff_flush(struct diff *d)
{
	size_t len = strlen(d->text);

	if (!d->sign)
		return;
	if (d->ranges < MAX_RANGES) {
		if (d->from == d->to)
			snprintf(d->text + len, sizeof(d->text) - len, " %c%" PRIu64,
				 d->sign > 0 ? '+' : '-', d->from);
		else
			snprintf(d->text + len, sizeof(d->text) - len, " %c(%" PRIu64
				 "--%" PRIu64 ")", d->sign > 0 ? '+' : '-', d->from, d->to);
	} else if (d->ranges == MAX_RANGES) {
		snprintf(d->text + len, sizeof(d->text) - len, " ...");
	}
	d->ranges++;
	d->sign = 0;
}

static void diff_add(struct diff *d, uint64_t n, int sign)
{
	if (d->sign == sign && n == d->to + 1) {
		d->to = n;
		return;
	}
	diff_flush(d);
	d->sign = sign;
	d->from = d->to = n;
}

/* Compare the bitmap @want with the disk's @have (@nbits meaningful bits,
 * numbered from @base in the report); 1 when they differ. */
static int compare(const uint8_t *want, const uint8_t *have, uint32_t nbits,
		   uint64_t base, struct diff *d)
{
	bool differ = false;

	for (uint32_t i = 0; i < nbits; i++) {
		bool w = bit_test(want, i), h = bit_test(have, i);

		if (w == h)
			continue;
		differ = true;
		diff_add(d, base + i, w ? 1 : -1);
	}
	diff_flush(d);
	return differ;
}

static void build_bbitmap(struct fsck_ctx *c, uint32_t g, uint8_t *map, uint32_t *nfree)
{
	uint64_t first = fmt_group_first_block(&c->sb, g);
	uint32_t n = fmt_group_nblocks(&c->sb, g);

	memset(map, 0, c->bs);
	*nfree = 0;
	for (uint32_t i = 0; i < n; i++) {
		if (bit_test(c->bused, first + i))
			bit_set(map, i);
		else
			(*nfree)++;
	}
	for (uint32_t i = n; i < 8 * c->bs; i++)
		bit_set(map, i);
}

static void build_ibitmap(struct fsck_ctx *c, uint32_t g, uint8_t *map, uint32_t *nfree,
			  uint32_t *ndirs)
{
	memset(map, 0, c->bs);
	*nfree = 0;
	*ndirs = 0;
	for (uint32_t i = 0; i < c->ipg; i++) {
		uint32_t ino = g * c->ipg + i + 1;

		if (ino < MFS_FIRST_INO || inode_in_use(c, ino))
			bit_set(map, i);
		else
			(*nfree)++;
		*ndirs += istate_type(c, ino) == MFS_FT_DIR;
	}
	for (uint32_t i = c->ipg; i < 8 * c->bs; i++)
		bit_set(map, i);
}

/* One bitmap of group @g: compare, report, write. */
static int check_bitmap(struct fsck_ctx *c, uint32_t g, bool inodes, const uint8_t *want)
{
	struct mfs_group_desc *gd = &c->gdt[g];
	uint64_t blk = inodes ? fsck_layout_ibitmap(c, g) : fsck_layout_bbitmap(c, g);
	uint32_t *csum = inodes ? &gd->bg_inode_bitmap_csum : &gd->bg_block_bitmap_csum;
	unsigned kind = inodes ? MFS_CSUM_IBITMAP : MFS_CSUM_BBITMAP;
	uint64_t base = inodes ? (uint64_t)g * c->ipg + 1 : fmt_group_first_block(&c->sb, g);
	struct diff d = { .text = "" };
	struct fsck_pctx p = { .group = g, .str = d.text };
	bool fix;
	int err = fsck_read(c, blk, c->buf);

	if (err)
		return err;
	if (compare(want, c->buf, 8 * c->bs, base, &d)) {
		fix = fsck_fix(c, inodes ? PR_IBITMAP : PR_BBITMAP, &p);
	} else if (le32toh(*csum) != fmt_bitmap_csum(&c->sb, kind, g, want)) {
		fix = fsck_fix(c, inodes ? PR_IBITMAP_CSUM : PR_BBITMAP_CSUM, &p);
	} else {
		return 0;
	}
	if (!fix)
		return 0;
	*csum = htole32(fmt_bitmap_csum(&c->sb, kind, g, want));
	c->gdt_dirty = true;
	return fsck_write(c, blk, want);
}

static void check_count(struct fsck_ctx *c, enum fsck_code code, uint32_t g,
			uint32_t *field, uint32_t counted)
{
	struct fsck_pctx p = { .group = g, .num = le32toh(*field), .num2 = counted };

	if (p.num != counted && fsck_fix(c, code, &p)) {
		*field = htole32(counted);
		c->gdt_dirty = true;
	}
}

static int check_group(struct fsck_ctx *c, uint32_t g, uint8_t *map, uint64_t *fb,
		       uint64_t *fi)
{
	struct mfs_group_desc *gd = &c->gdt[g];
	uint32_t nfree, ifree, ndirs;
	int err;

	build_bbitmap(c, g, map, &nfree);
	err = check_bitmap(c, g, false, map);
	check_count(c, PR_GD_FREE_BLOCKS, g, &gd->bg_free_blocks_count, nfree);
	build_ibitmap(c, g, map, &ifree, &ndirs);
	if (!err)
		err = check_bitmap(c, g, true, map);
	check_count(c, PR_GD_FREE_INODES, g, &gd->bg_free_inodes_count, ifree);
	check_count(c, PR_GD_DIRS, g, &gd->bg_used_dirs_count, ndirs);
	*fb += nfree;
	*fi += ifree;
	return err;
}

/* The superblock's counts are exact only in a cleanly unmounted image
 * (FORMAT.md): otherwise they are set without a word. */
static void check_sb_counts(struct fsck_ctx *c, uint64_t fb, uint64_t fi)
{
	struct fsck_pctx p = { .num = le64toh(c->sb.s_free_blocks_count), .num2 = fb };
	bool quiet = !c->was_valid;

	if (p.num != fb && (quiet ? c->rw : fsck_fix(c, PR_SB_FREE_BLOCKS, &p))) {
		c->sb.s_free_blocks_count = htole64(fb);
		c->sb_dirty = true;
	}
	p.num = le32toh(c->sb.s_free_inodes_count);
	p.num2 = fi;
	if (p.num != fi && (quiet ? c->rw : fsck_fix(c, PR_SB_FREE_INODES, &p))) {
		c->sb.s_free_inodes_count = htole32((uint32_t)fi);
		c->sb_dirty = true;
	}
}

int fsck_pass5(struct fsck_ctx *c)
{
	uint8_t *map = bdev_alloc_buf(c->bs);
	uint64_t fb = 0, fi = 0;
	int err = map ? 0 : -ENOMEM;

	c->pass = FSCK_PASS_5;
	if (c->o->pass_start)
		c->o->pass_start(c->o->arg, FSCK_PASS_5, "Pass 5: Checking group summary information");
	for (uint32_t g = 0; g < c->ngroups && !err && !c->stop; g++) {
		err = check_group(c, g, map, &fb, &fi);
		fsck_progress(c, g + 1, c->ngroups);
	}
	if (!err && !c->stop) {
		check_sb_counts(c, fb, fi);
		c->res->blocks_used = c->nblocks - fb;
		c->res->inodes_used = c->ninodes - fi;
	}
	bdev_free_buf(map);
	return err;
}
