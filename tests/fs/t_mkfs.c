/*
 * t_mkfs - mkfs for every block size, with and without reserved regions,
 * read back structure by structure with every checksum verified.
 */
#include <inttypes.h>
#include <sys/stat.h>

#include "bdev_test.h"
#include "jnl.h"
#include "mfs.h"
#include "t.h"
#include "util.h"

struct layout {
	uint32_t bs;
	uint64_t bytes;
	unsigned nregions;
};

static void add_region(struct fmt_mkfs_opts *o, const char *name, uint64_t bytes)
{
	struct fmt_region_spec *r = &o->regions[o->nregions++];

	memset(r->name, 0, sizeof(r->name));
	strncpy(r->name, name, sizeof(r->name) - 1);
	r->bytes = bytes;
}

static unsigned popcount_block(const uint8_t *map, uint32_t bits)
{
	unsigned n = 0;

	for (uint32_t i = 0; i < bits; i++)
		n += (map[i / 8] >> (i % 8)) & 1;
	return n;
}

/* Descriptors, bitmaps and free counts agree with each other. */
static void check_groups(struct fmt_raw *raw)
{
	uint64_t free_blocks = 0, free_inodes = 0;
	uint8_t *map = bdev_alloc_buf(raw->bs);

	for (uint32_t g = 0; g < le32toh(raw->sb.s_groups_count); g++) {
		const struct mfs_group_desc *gd;
		uint32_t n = fmt_group_nblocks(&raw->sb, g);

		t_ok(fmt_raw_gdesc(raw, g, &gd));
		t_ok(fmt_raw_read(raw, le32toh(gd->bg_block_bitmap), map));
		t_eq(fmt_bitmap_csum(&raw->sb, MFS_CSUM_BBITMAP, g, map),
		     le32toh(gd->bg_block_bitmap_csum));
		t_eq(n - popcount_block(map, n), le32toh(gd->bg_free_blocks_count));
		t_eq(popcount_block(map, 8 * raw->bs) - popcount_block(map, n), 8 * raw->bs - n);
		free_blocks += le32toh(gd->bg_free_blocks_count);

		t_ok(fmt_raw_read(raw, le32toh(gd->bg_inode_bitmap), map));
		t_eq(fmt_bitmap_csum(&raw->sb, MFS_CSUM_IBITMAP, g, map),
		     le32toh(gd->bg_inode_bitmap_csum));
		t_eq(le32toh(raw->sb.s_inodes_per_group) -
		     popcount_block(map, le32toh(raw->sb.s_inodes_per_group)),
		     le32toh(gd->bg_free_inodes_count));
		free_inodes += le32toh(gd->bg_free_inodes_count);
		t_eq(le32toh(gd->bg_used_dirs_count), g == 0 ? 2 : 0);
	}
	t_eq(free_blocks, le64toh(raw->sb.s_free_blocks_count));
	t_eq(free_inodes, le32toh(raw->sb.s_free_inodes_count));
	bdev_free_buf(map);
}

/* The names of directory @ino, joined with spaces, in on-disk order. */
static void dir_names(struct fmt_raw *raw, uint32_t ino, char *out, size_t len)
{
	struct mfs_inode in;
	uint64_t pblk;
	char why[200];
	char *blk = bdev_alloc_buf(raw->bs);

	t_ok(fmt_raw_inode(raw, ino, &in));
	t_assert(S_ISDIR(le16toh(in.i_mode)), "inode %u is a directory", ino);
	t_eq(le64toh(in.i_size), raw->bs);
	t_ok(fmt_raw_bmap(raw, ino, &in, 0, &pblk));
	t_ok(fmt_raw_read(raw, pblk, blk));
	t_assert(!fmt_dirblock_check(&raw->sb, ino, blk, why, sizeof(why)),
		 "directory %u block valid: %s", ino, why);
	out[0] = 0;
	for (uint32_t off = 0; off < raw->bs - MFS_DIR_TAIL_SIZE;) {
		struct mfs_dirent *de = (void *)(blk + off);

		snprintf(out + strlen(out), len - strlen(out), "%s%.*s:%u",
			 off ? " " : "", de->name_len, de->name, le32toh(de->inode));
		off += le16toh(de->rec_len);
	}
	bdev_free_buf(blk);
}

static void check_dirs(struct fmt_raw *raw)
{
	char names[256];
	struct mfs_inode in;

	dir_names(raw, MFS_ROOT_INO, names, sizeof(names));
	t_assert(!strcmp(names, ".:2 ..:2 lost+found:11"), "root holds %s", names);
	t_ok(fmt_raw_inode(raw, MFS_ROOT_INO, &in));
	t_eq(le16toh(in.i_links_count), 3);
	dir_names(raw, MFS_FIRST_INO, names, sizeof(names));
	t_assert(!strcmp(names, ".:11 ..:2"), "lost+found holds %s", names);
	t_ok(fmt_raw_inode(raw, MFS_FIRST_INO, &in));
	t_eq(le16toh(in.i_links_count), 2);
	t_eq(le16toh(in.i_mode) & 07777, 0700);
}

static bool block_used(struct fmt_raw *raw, uint64_t blk)
{
	uint32_t bpg = le32toh(raw->sb.s_blocks_per_group);
	uint32_t g = (uint32_t)((blk - le32toh(raw->sb.s_first_data_block)) / bpg);
	uint32_t bit = (uint32_t)((blk - le32toh(raw->sb.s_first_data_block)) % bpg);
	const struct mfs_group_desc *gd;
	uint8_t *map = bdev_alloc_buf(raw->bs);
	bool used;

	t_ok(fmt_raw_gdesc(raw, g, &gd));
	t_ok(fmt_raw_read(raw, le32toh(gd->bg_block_bitmap), map));
	used = map[bit / 8] & (1u << (bit % 8));
	bdev_free_buf(map);
	return used;
}

static void check_journal(struct fmt_raw *raw)
{
	uint32_t n = le32toh(raw->sb.s_journal_blocks);
	uint64_t prev = 0, pblk;
	struct mfs_inode in;
	char why[200];
	void *blk = bdev_alloc_buf(raw->bs);

	t_assert(n >= JNL_MIN_BLOCKS, "journal of %u blocks", n);
	t_ok(fmt_raw_inode(raw, MFS_JOURNAL_INO, &in));
	t_eq(le64toh(in.i_size), (uint64_t)n * raw->bs);
	t_assert(S_ISREG(le16toh(in.i_mode)), "journal is a regular file");
	for (uint64_t i = 0; i < n; i++) {
		t_ok(fmt_raw_bmap(raw, MFS_JOURNAL_INO, &in, i, &pblk));
		t_assert(pblk > prev, "journal block %" PRIu64 " at %" PRIu64
			 " follows %" PRIu64, i, pblk, prev);
		if (i % 97 == 0 || i == n - 1)
			t_assert(block_used(raw, pblk), "journal block %" PRIu64
				 " marked in use", pblk);
		prev = pblk;
	}
	t_ok(fmt_raw_bmap(raw, MFS_JOURNAL_INO, &in, 0, &pblk));
	t_ok(fmt_raw_read(raw, pblk, blk));
	t_assert(!jnl_sb_check(blk, n, raw->bs, why, sizeof(why)), "journal sb: %s", why);
	bdev_free_buf(blk);
}

static void check_regions(struct fmt_raw *raw, const struct fmt_mkfs_opts *o)
{
	uint8_t *blk = bdev_alloc_buf(raw->bs);
	const struct mfs_region_header *h = (const void *)blk;
	const struct mfs_region_entry *e = (const void *)(h + 1);
	uint64_t next = le64toh(raw->sb.s_regions_start);

	t_eq(le32toh(raw->sb.s_region_count), o->nregions);
	t_eq(!!(le32toh(raw->sb.s_feature_compat) & MFS_FEATURE_COMPAT_REGIONS),
	     !!o->nregions);
	t_assert(next >= le64toh(raw->sb.s_blocks_count), "regions after the groups");
	if (!o->nregions) {
		bdev_free_buf(blk);
		return;
	}
	t_assert(block_used(raw, le64toh(raw->sb.s_region_table)), "table block in use");
	t_ok(fmt_raw_read(raw, le64toh(raw->sb.s_region_table), blk));
	t_assert(fmt_block_csum_ok(&raw->sb, MFS_CSUM_REGION, 0, blk), "table checksum");
	t_eq(le32toh(h->rh_magic), MFS_REGION_MAGIC);
	for (unsigned i = 0; i < o->nregions; i++, e++) {
		t_assert(!strcmp(e->re_name, o->regions[i].name), "region %u name", i);
		t_eq(le64toh(e->re_bytes), o->regions[i].bytes);
		t_eq(le64toh(e->re_start), next);
		t_eq(le64toh(e->re_start) * raw->bs % MFS_REGION_ALIGN, 0);
		t_eq(le64toh(e->re_blocks) * raw->bs,
		     UT_ROUND_UP(o->regions[i].bytes, MFS_REGION_ALIGN));
		next += le64toh(e->re_blocks);
	}
	t_eq(next, le64toh(raw->sb.s_device_blocks));
	bdev_free_buf(blk);
}

static void check_one(const struct layout *l)
{
	struct fmt_mkfs_opts o = { .block_size = l->bs, .zeroed = true };
	struct bdev *bd;
	struct fmt_raw raw;
	char why[200];

	strcpy(o.label, "test");
	if (l->nregions) {
		add_region(&o, "ring", 1 << 20);
		add_region(&o, "odd.size-1", 12345);
	}
	t_ok(bdev_mem_create(l->bytes, l->bs, &bd));
	t_ok(fmt_mkfs(bd, &o));
	t_ok(fmt_raw_open(bd, &raw));
	t_assert(!fmt_sb_check(&raw.sb, bd->size, why, sizeof(why)), "sb: %s", why);
	t_eq(raw.bs, l->bs);
	t_eq(raw.sb_group, 0);
	t_assert(le32toh(raw.sb.s_groups_count) >= 2, "%u groups",
		 le32toh(raw.sb.s_groups_count));
	t_assert(!strcmp(raw.sb.s_volume_name, "test"), "label");
	check_groups(&raw);
	check_dirs(&raw);
	check_journal(&raw);
	check_regions(&raw, &o);
	fmt_raw_close(&raw);
	bdev_close(bd);
	printf("ok: %u-byte blocks, %" PRIu64 " MiB, %u regions\n", l->bs,
	       l->bytes >> 20, o.nregions);
}

/* The reported minimum works, and one step below it is refused. */
static void check_minimum(uint32_t bs)
{
	struct fmt_mkfs_opts o = { .block_size = bs, .zeroed = true };
	uint64_t min = fmt_mkfs_min_bytes(&o);
	struct bdev *bd;

	t_assert(min > 0 && min < (64ull << 20), "minimum %" PRIu64, min);
	t_ok(bdev_mem_create(min, bs, &bd));
	t_ok(fmt_mkfs(bd, &o));
	bdev_close(bd);
	t_ok(bdev_mem_create(min - 4096, bs, &bd));
	t_eq(fmt_mkfs(bd, &o), -ENOSPC);
	bdev_close(bd);
	printf("ok: minimum for %u-byte blocks is %" PRIu64 " bytes\n", bs, min);
}

static void test_refusals(void)
{
	struct fmt_mkfs_opts o = { .block_size = 4096 };
	struct bdev *bd;

	t_ok(bdev_mem_create(64 << 20, 4096, &bd));
	o.block_size = 8192;
	t_eq(fmt_mkfs(bd, &o), -EINVAL);
	o.block_size = 1024;           /* device opened for 4096 */
	t_eq(fmt_mkfs(bd, &o), -EINVAL);
	o.block_size = 4096;
	add_region(&o, "big", 80 << 20);
	t_eq(fmt_mkfs(bd, &o), -ENOSPC);
	o.regions[0].bytes = 1 << 20;
	add_region(&o, "big", 1 << 20);
	t_eq(fmt_mkfs(bd, &o), -EINVAL);       /* the same name twice */
	o.nregions = 0;
	o.journal_bytes = 512 * 4096;          /* under 1024 blocks */
	t_eq(fmt_mkfs(bd, &o), -EINVAL);
	bdev_close(bd);
}

/* @bs-byte blocks, @bytes of device, without and with two regions. */
static void layouts(uint32_t bs, uint64_t bytes)
{
	const struct layout plain = { bs, bytes, 0 }, regions = { bs, bytes, 2 };

	check_one(&plain);
	check_one(&regions);
}

static void test_layout_1k(void)
{
	layouts(1024, 24 << 20);
}

static void test_layout_2k(void)
{
	layouts(2048, 80 << 20);
}

static void test_layout_4k(void)
{
	layouts(4096, 300 << 20);
}

static void test_minimum(void)
{
	check_minimum(1024);
	check_minimum(4096);
}

static void setup(void)
{
	mlog_set_level(MLOG_ERR);
}

T_MAIN_SETUP(setup(),
	     T_CASE(test_layout_1k),
	     T_CASE(test_layout_2k),
	     T_CASE(test_layout_4k),
	     T_CASE(test_minimum),
	     T_CASE(test_refusals))
