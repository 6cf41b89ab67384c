/*
 * t_super - each bound of the superblock check, pinned on both sides.
 *
 * A superblock mkfs wrote gets one field changed (and the fields that
 * must follow it kept consistent) and a matching checksum; the check must
 * refuse it with a message naming the field.  Where a bound has a largest
 * legal value, that value must still pass, so a check made too strict
 * fails as well as one made too loose.
 */
#include <inttypes.h>

#include "bdev_test.h"
#include "jnl.h"
#include "mfs.h"
#include "t.h"
#include "util.h"

static struct mfs_super base;
static uint64_t dev_bytes;

typedef void (*mutate_fn)(struct mfs_super *sb);

struct bound {
	const char *what;
	mutate_fn mutate;
	const char *text;        /* in the reason; NULL: must be accepted */
};

static uint32_t bs(void)
{
	return fmt_block_size(&base);
}

static uint32_t groups(const struct mfs_super *sb)
{
	return le32toh(sb->s_groups_count);
}

/* Inodes per group @ipg, with the inode count that must go with it. */
static void set_ipg(struct mfs_super *sb, uint32_t ipg)
{
	sb->s_inodes_per_group = htole32(ipg);
	sb->s_inodes_count = htole32(ipg * groups(sb));
}

/* Two table blocks of inodes more than the bitmap has bits for: every
 * other rule on inodes per group holds. */
static void ipg_over_bitmap(struct mfs_super *sb)
{
	set_ipg(sb, 8 * bs() + 2 * (bs() / MFS_INODE_SIZE));
}

static void ipg_full_bitmap(struct mfs_super *sb) { set_ipg(sb, 8 * bs()); }
static void ipg_zero(struct mfs_super *sb) { set_ipg(sb, 0); }
static void ipg_partial_block(struct mfs_super *sb) { set_ipg(sb, 8 * bs() - 1); }
static void bad_magic(struct mfs_super *sb) { sb->s_magic = htole32(0x3153464E); }
static void bad_rev(struct mfs_super *sb) { sb->s_rev_level = htole32(2); }
static void bad_log(struct mfs_super *sb) { sb->s_log_block_size = htole32(3); }
static void bad_isize(struct mfs_super *sb) { sb->s_inode_size = htole16(128); }
static void bad_dsize(struct mfs_super *sb) { sb->s_desc_size = htole16(32); }

static void bad_fdb(struct mfs_super *sb)
{
	sb->s_first_data_block = htole32(!le32toh(sb->s_first_data_block));
}

static void bpg_over_bitmap(struct mfs_super *sb) { sb->s_blocks_per_group = htole32(8 * bs() + 8); }
static void bpg_small(struct mfs_super *sb) { sb->s_blocks_per_group = htole32(0); }
static void bpg_odd(struct mfs_super *sb) { sb->s_blocks_per_group = htole32(8 * bs() - 4); }

static void blocks_none(struct mfs_super *sb)
{
	sb->s_blocks_count = htole64(le32toh(sb->s_first_data_block));
}

static void blocks_over_32bit(struct mfs_super *sb)
{
	sb->s_blocks_count = htole64((uint64_t)UINT32_MAX + 1);
}

static void groups_off(struct mfs_super *sb) { sb->s_groups_count = htole32(groups(sb) + 1); }

static void inodes_off(struct mfs_super *sb)
{
	sb->s_inodes_count = htole32(le32toh(sb->s_inodes_count) + 1);
}

static void gdt_off(struct mfs_super *sb)
{
	sb->s_gdt_blocks = htole16(le16toh(sb->s_gdt_blocks) + 1);
}

static void free_blocks_over(struct mfs_super *sb)
{
	sb->s_free_blocks_count = htole64(le64toh(sb->s_blocks_count) + 1);
}

static void free_blocks_all(struct mfs_super *sb)
{
	sb->s_free_blocks_count = sb->s_blocks_count;
}

static void free_inodes_over(struct mfs_super *sb)
{
	sb->s_free_inodes_count = htole32(le32toh(sb->s_inodes_count) + 1);
}

static void regions_in_groups(struct mfs_super *sb)
{
	sb->s_regions_start = htole64(le64toh(sb->s_blocks_count) - 1);
}

static void regions_end_early(struct mfs_super *sb)
{
	sb->s_device_blocks = htole64(le64toh(sb->s_regions_start) - 1);
}

static void device_too_big(struct mfs_super *sb)
{
	sb->s_device_blocks = htole64(dev_bytes / bs() + 1);
}

static void bad_first_ino(struct mfs_super *sb) { sb->s_first_ino = htole32(12); }

static void region_table_out(struct mfs_super *sb)
{
	sb->s_region_count = htole32(1);
	sb->s_region_table = sb->s_blocks_count;
}

static void region_table_last(struct mfs_super *sb)
{
	sb->s_region_count = htole32(1);
	sb->s_region_table = htole64(le64toh(sb->s_blocks_count) - 1);
}

/* The last group cut to @n blocks; nothing else changes but the free
 * count, which must not exceed the new total. */
static void set_last_group(struct mfs_super *sb, uint32_t n)
{
	uint32_t last = groups(sb) - 1;

	sb->s_blocks_count = htole64(fmt_group_first_block(sb, last) + n);
	sb->s_free_blocks_count = 0;
}

static void last_group_short(struct mfs_super *sb)
{
	set_last_group(sb, fmt_group_meta_blocks(sb, groups(sb) - 1) - 1);
}

static void last_group_just_fits(struct mfs_super *sb)
{
	set_last_group(sb, fmt_group_meta_blocks(sb, groups(sb) - 1));
}

/* Groups of @bpg blocks, with the counts that follow from it. */
static void set_bpg(struct mfs_super *sb, uint32_t bpg)
{
	uint64_t n = le64toh(sb->s_blocks_count) - le32toh(sb->s_first_data_block);
	uint32_t g = (uint32_t)((n + bpg - 1) / bpg);

	sb->s_blocks_per_group = htole32(bpg);
	sb->s_groups_count = htole32(g);
	sb->s_inodes_count = htole32(g * le32toh(sb->s_inodes_per_group));
	sb->s_free_inodes_count = 0;
	sb->s_gdt_blocks = htole16((uint16_t)((g * MFS_DESC_SIZE + bs() - 1) / bs()));
}

/* Inode tables of a full bitmap in groups no larger than the table. */
static void itable_over_group(struct mfs_super *sb)
{
	set_ipg(sb, 8 * bs());
	set_bpg(sb, fmt_itable_blocks(sb));
}

static void reserved_over(struct mfs_super *sb)
{
	sb->s_r_blocks_count = htole64(le64toh(sb->s_blocks_count) + 1);
}

static void reserved_all(struct mfs_super *sb) { sb->s_r_blocks_count = sb->s_blocks_count; }

static uint32_t region_room(void)
{
	return (bs() - MFS_REGION_HDR_SIZE - 4) / MFS_REGION_ENTRY_SIZE;
}

static void regions_over_block(struct mfs_super *sb)
{
	sb->s_region_count = htole32(region_room() + 1);
	sb->s_region_table = htole64(le64toh(sb->s_blocks_count) - 1);
}

static void regions_fill_block(struct mfs_super *sb)
{
	sb->s_region_count = htole32(region_room());
	sb->s_region_table = htole64(le64toh(sb->s_blocks_count) - 1);
}

static void journal_inum(struct mfs_super *sb) { sb->s_journal_inum = htole32(9); }
static void journal_short(struct mfs_super *sb) { sb->s_journal_blocks = htole32(JNL_MIN_BLOCKS - 1); }
static void journal_min(struct mfs_super *sb) { sb->s_journal_blocks = htole32(JNL_MIN_BLOCKS); }

static void journal_whole(struct mfs_super *sb)
{
	sb->s_journal_blocks = htole32((uint32_t)le64toh(sb->s_blocks_count));
}

static void journal_all_but_one(struct mfs_super *sb)
{
	sb->s_journal_blocks = htole32((uint32_t)le64toh(sb->s_blocks_count) - 1);
}

static const struct bound bounds[] = {
	{ "inodes per group beyond one bitmap block", ipg_over_bitmap, "inodes per group (must" },
	{ "inodes per group filling the bitmap block", ipg_full_bitmap, NULL },
	{ "no inodes per group", ipg_zero, "0 inodes per group" },
	{ "inodes per group not whole table blocks", ipg_partial_block, "inodes per group (must" },
	{ "magic", bad_magic, "bad magic 0x3153464e" },
	{ "revision", bad_rev, "revision 2 unknown" },
	{ "block size log", bad_log, "block size log 3 out of range" },
	{ "inode size", bad_isize, "inode size 128" },
	{ "descriptor size", bad_dsize, "descriptor size 32" },
	{ "first data block", bad_fdb, "first data block" },
	{ "blocks per group beyond one bitmap block", bpg_over_bitmap, "blocks per group (must" },
	{ "no blocks per group", bpg_small, "0 blocks per group" },
	{ "blocks per group not a multiple of 8", bpg_odd, "blocks per group (must" },
	{ "no blocks after the first data block", blocks_none, "block count" },
	{ "block count beyond 32-bit pointers", blocks_over_32bit, "block count 4294967296" },
	{ "group count", groups_off, "groups recorded" },
	{ "inode count", inodes_off, "is not groups x inodes per group" },
	{ "descriptor blocks", gdt_off, "descriptor blocks for" },
	{ "free blocks beyond the blocks", free_blocks_over, "free counts exceed totals" },
	{ "every block free", free_blocks_all, NULL },
	{ "free inodes beyond the inodes", free_inodes_over, "free counts exceed totals" },
	{ "regions inside the groups", regions_in_groups, "overlaps the groups" },
	{ "region area ending before it starts", regions_end_early, "overlaps the groups" },
	{ "filesystem larger than the device", device_too_big, "larger than the device" },
	{ "first inode", bad_first_ino, "first inode 12" },
	{ "region table outside the groups", region_table_out, "region table at block" },
	{ "region table in the last block", region_table_last, NULL },
	{ "last group shorter than its metadata", last_group_short, "too few for its" },
	{ "last group just holding its metadata", last_group_just_fits, NULL },
	{ "inode table as large as a group", itable_over_group, "group 0 has" },
	{ "more reserved blocks than blocks", reserved_over, "reserved for root" },
	{ "every block reserved", reserved_all, NULL },
	{ "more regions than one table block holds", regions_over_block, "one table block holds" },
	{ "regions filling the table block", regions_fill_block, NULL },
	{ "journal inode", journal_inum, "journal inode 9" },
	{ "journal below the minimum", journal_short, "journal of" },
	{ "journal of the minimum", journal_min, NULL },
	{ "journal as large as the filesystem", journal_whole, "journal of" },
	{ "journal one block smaller than the filesystem", journal_all_but_one, NULL },
};

static void check_bound(const struct bound *b)
{
	struct mfs_super sb = base;
	char why[256] = "";
	int err;

	b->mutate(&sb);
	fmt_sb_set_csum(&sb);
	err = fmt_sb_check(&sb, dev_bytes, why, sizeof(why));
	if (!b->text) {
		t_assert(!err, "%s: must be accepted, refused: %s", b->what, why);
		printf("ok: %s: accepted\n", b->what);
		return;
	}
	t_assert(err == -EUCLEAN, "%s: must be refused, check returned %d", b->what, err);
	t_assert(strstr(why, b->text), "%s: reason '%s' lacks '%s'", b->what, why, b->text);
	printf("ok: %s: %s\n", b->what, why);
}

static void run(uint32_t block_size, uint64_t bytes)
{
	struct fmt_mkfs_opts o = { .block_size = block_size, .zeroed = true };
	struct bdev *bd;
	char why[256];

	t_ok(bdev_mem_create(bytes, block_size, &bd));
	t_ok(fmt_mkfs(bd, &o));
	memcpy(&base, (char *)bdev_mem_data(bd) + MFS_SB_OFFSET, sizeof(base));
	dev_bytes = bd->size;
	bdev_close(bd);
	t_assert(!fmt_sb_check(&base, dev_bytes, why, sizeof(why)), "fresh: %s", why);
	t_assert(groups(&base) >= 2, "%u groups", groups(&base));
	base.s_checksum ^= htole32(1);
	t_eq(fmt_sb_check(&base, dev_bytes, why, sizeof(why)), -EUCLEAN);
	t_assert(strstr(why, "checksum mismatch"), "flipped checksum: %s", why);
	base.s_checksum ^= htole32(1);
	for (size_t i = 0; i < UT_ARRAY_SIZE(bounds); i++)
		check_bound(&bounds[i]);
	printf("ok: %u-byte blocks, %zu bounds\n", block_size, UT_ARRAY_SIZE(bounds));
}

/* Every bound on a superblock of 1 KiB blocks, then of 4 KiB blocks. */
static void test_bounds_1k(void)
{
	run(1024, 24u << 20);
}

static void test_bounds_4k(void)
{
	run(4096, 160u << 20);
}

static void setup(void)
{
	mlog_set_level(MLOG_ERR);
}

T_MAIN_SETUP(setup(),
	     T_CASE(test_bounds_1k),
	     T_CASE(test_bounds_4k))
