/*
 * t_csum - every checksum mkfs writes matches docs/FORMAT.md, computed
 * here from the document alone: XXH3-64 from libxxhash, low 32 bits, seed
 * s_csum_seed + (kind << 56 | id), over the documented bytes, at the
 * documented offsets.  mkfs and the checkers share fs/format.c, so a wrong
 * seed or kind there would agree with itself; this test would not.
 *
 * Nothing of fs/ is used but mkfs: offsets are the document's numbers,
 * not the C structures.
 */
#include <inttypes.h>
#include <xxhash.h>

#include "bdev_test.h"
#include "mfs.h"
#include "t.h"
#include "util.h"

/* Kinds and ids, from the table in FORMAT.md "Conventions". */
enum { GDESC = 1, BBITMAP = 2, IBITMAP = 3, INODE = 4, DIR = 5, INDIRECT = 6,
       XATTR = 7, REGION = 8, MMP = 9 };

static const uint8_t *img;
static uint32_t bs, groups, ipg, fdb, bpg;
static uint64_t seed;
static unsigned long checked[10], sb_copies;

static uint32_t rd32(const uint8_t *p, size_t off)
{
	return (uint32_t)p[off] | (uint32_t)p[off + 1] << 8 |
	       (uint32_t)p[off + 2] << 16 | (uint32_t)p[off + 3] << 24;
}

static uint64_t rd64(const uint8_t *p, size_t off)
{
	return rd32(p, off) | (uint64_t)rd32(p, off + 4) << 32;
}

static const uint8_t *block(uint64_t blk)
{
	return img + blk * bs;
}

/* FORMAT.md: low 32 bits of XXH3-64 with seed s_csum_seed + salt. */
static uint32_t doc_csum(unsigned kind, uint64_t id, const void *p, size_t len)
{
	return (uint32_t)XXH3_64bits_withSeed(p, len, seed + ((uint64_t)kind << 56 | id));
}

static void expect(const char *what, uint64_t where, uint32_t stored, uint32_t want)
{
	t_assert(stored == want, "%s %" PRIu64 ": stored 0x%08x, FORMAT.md gives 0x%08x",
		 what, where, stored, want);
}

/* The superblock copy at @p: seed 0 over bytes 0-1019, stored at 1020. */
static void check_super(const uint8_t *p, uint32_t group)
{
	expect("superblock copy of group", group, rd32(p, 1020),
	       (uint32_t)XXH3_64bits_withSeed(p, 1020, 0));
	sb_copies++;
}

static bool has_super(uint32_t g)
{
	uint32_t bases[] = { 3, 5, 7 };

	if (g <= 1)
		return true;
	for (int i = 0; i < 3; i++) {
		uint32_t n = g;

		while (n % bases[i] == 0)
			n /= bases[i];
		if (n == 1)
			return true;
	}
	return false;
}

/* Descriptor @g in the table that starts at block @table. */
static const uint8_t *gdesc_at(uint64_t table, uint32_t g)
{
	return block(table) + 64u * g;
}

static void check_descriptors(uint64_t table)
{
	for (uint32_t g = 0; g < groups; g++) {
		const uint8_t *gd = gdesc_at(table, g);

		expect("descriptor", g, rd32(gd, 60), doc_csum(GDESC, g, gd, 60));
		checked[GDESC]++;
	}
}

static void check_bitmaps(uint32_t g, const uint8_t *gd)
{
	expect("block bitmap of group", g, rd32(gd, 28),
	       doc_csum(BBITMAP, g, block(rd32(gd, 0)), bs));
	expect("inode bitmap of group", g, rd32(gd, 32),
	       doc_csum(IBITMAP, g, block(rd32(gd, 4)), bs));
	checked[BBITMAP]++;
	checked[IBITMAP]++;
}

static const uint8_t *inode_slot(uint32_t ino)
{
	const uint8_t *gd = gdesc_at(fdb + 1, (ino - 1) / ipg);

	return block(rd32(gd, 8)) + (size_t)((ino - 1) % ipg) * 256;
}

static bool all_zero(const uint8_t *p, size_t n)
{
	while (n--)
		if (*p++)
			return false;
	return true;
}

/* Every slot that is not all zero: seed + (4 << 56 | ino), bytes 0-251. */
static void check_inodes(uint32_t g)
{
	for (uint32_t i = 0; i < ipg; i++) {
		uint32_t ino = g * ipg + i + 1;
		const uint8_t *in = inode_slot(ino);

		if (all_zero(in, 256))
			continue;
		expect("inode", ino, rd32(in, 252), doc_csum(INODE, ino, in, 252));
		checked[INODE]++;
	}
}

/* A block whose last 4 bytes hold the checksum of the bytes before. */
static void check_block(const char *what, unsigned kind, uint64_t id, uint64_t blk)
{
	const uint8_t *b = block(blk);

	expect(what, blk, rd32(b, bs - 4), doc_csum(kind, id, b, bs - 4));
	checked[kind]++;
}

static void check_dir(uint32_t ino)
{
	const uint8_t *b = block(rd32(inode_slot(ino), 92));

	t_eq(b[bs - 12 + 7], 0xDE);      /* the tail's marker */
	check_block("directory block", DIR, ino, rd32(inode_slot(ino), 92));
}

/* The indirect blocks of @ino: single, and the first levels of double. */
static void check_indirect(uint32_t ino)
{
	const uint8_t *in = inode_slot(ino);
	uint32_t single = rd32(in, 92 + 4 * 12), dbl = rd32(in, 92 + 4 * 13);

	t_assert(single, "inode %u has a single-indirect block", ino);
	check_block("indirect block", INDIRECT, ino, single);
	if (!dbl)
		return;
	check_block("double-indirect block", INDIRECT, ino, dbl);
	for (uint32_t i = 0; i < bs / 4 - 1 && rd32(block(dbl), 4 * i); i++)
		check_block("indirect block", INDIRECT, ino, rd32(block(dbl), 4 * i));
}

/* The journal superblock: seed 0 over bytes 0-507, stored at 508. */
static void check_journal_super(void)
{
	const uint8_t *j = block(rd32(inode_slot(8), 92));

	t_eq(rd32(j, 0), 0x4C4E4A4D);
	expect("journal superblock at block", rd32(inode_slot(8), 92), rd32(j, 508),
	       (uint32_t)XXH3_64bits_withSeed(j, 508, 0));
}

static void check_image(void)
{
	seed = rd64(img + 1024, 176);
	bs = 1024u << rd32(img + 1024, 20);
	groups = rd32(img + 1024, 68);
	ipg = rd32(img + 1024, 64);
	fdb = rd32(img + 1024, 56);
	bpg = rd32(img + 1024, 60);
	check_super(img + 1024, 0);
	check_descriptors(fdb + 1);
	for (uint32_t g = 0; g < groups; g++) {
		if (g && has_super(g)) {
			check_super(block(fdb + (uint64_t)g * bpg), g);
			check_descriptors(fdb + (uint64_t)g * bpg + 1);
		}
		check_bitmaps(g, gdesc_at(fdb + 1, g));
		check_inodes(g);
	}
	check_dir(2);
	check_dir(11);
	check_indirect(8);
	check_journal_super();
	if (rd32(img + 1024, 108))
		check_block("region table", REGION, 0, rd64(img + 1024, 112));
	/* INCOMPAT_MMP (0x4): the MMP block's id is its block number. */
	if (rd32(img + 1024, 12) & 0x4)
		check_block("MMP block", MMP, rd64(img + 1024, 296), rd64(img + 1024, 296));
}

static void run(uint32_t block_size, uint64_t bytes)
{
	/* A journal long enough for double-indirect blocks at any block size. */
	struct fmt_mkfs_opts o = { .block_size = block_size, .zeroed = true,
				   .journal_bytes = 1100ull * block_size };
	struct bdev *bd;

	o.mmp = true;
	strcpy(o.regions[0].name, "r");
	o.regions[0].bytes = 64 << 10;
	o.nregions = 1;
	t_ok(bdev_mem_create(bytes, block_size, &bd));
	t_ok(fmt_mkfs(bd, &o));
	img = bdev_mem_data(bd);
	memset(checked, 0, sizeof(checked));
	sb_copies = 0;
	check_image();
	t_assert(groups >= 2 && sb_copies >= 2, "a backup superblock was checked");
	t_assert(checked[INODE] >= 3 && checked[INDIRECT] >= 3 && checked[REGION] == 1 &&
		 checked[MMP] == 1, "inodes %lu, indirect %lu, region tables %lu, MMP "
		 "blocks %lu", checked[INODE], checked[INDIRECT], checked[REGION],
		 checked[MMP]);
	printf("ok: %u-byte blocks: %lu superblocks, %lu descriptors, %lu+%lu bitmaps, "
	       "%lu inodes, %lu directory, %lu indirect, %lu region, %lu MMP blocks, "
	       "journal superblock\n", bs, sb_copies, checked[GDESC], checked[BBITMAP],
	       checked[IBITMAP], checked[INODE], checked[DIR], checked[INDIRECT],
	       checked[REGION], checked[MMP]);
	bdev_close(bd);
}

/*
 * mkfs writes no xattr block, so the kinds are also pinned one by one:
 * what fs/ computes for a block of each kind is what FORMAT.md gives.
 */
static void test_kinds(void)
{
	static const struct { unsigned ours, doc; } kinds[] = {
		{ MFS_CSUM_DIR, DIR }, { MFS_CSUM_INDIRECT, INDIRECT },
		{ MFS_CSUM_XATTR, XATTR }, { MFS_CSUM_REGION, REGION },
		{ MFS_CSUM_MMP, MMP },
	};
	struct mfs_super sb = { .s_log_block_size = 0, .s_csum_seed = htole64(0xfeedf00d) };
	static uint8_t blk[1024];

	for (size_t i = 0; i < sizeof(blk); i++)
		blk[i] = (uint8_t)(i * 7 + 3);
	seed = 0xfeedf00d;
	bs = 1024;
	for (size_t i = 0; i < UT_ARRAY_SIZE(kinds); i++)
		expect("block of kind", kinds[i].doc,
		       fmt_block_csum(&sb, kinds[i].ours, 4711, blk),
		       doc_csum(kinds[i].doc, 4711, blk, bs - 4));
	printf("ok: directory, indirect, xattr, region-table and MMP kinds\n");
}

/* Every checksum of a fresh image of 1 KiB blocks, then of 4 KiB blocks. */
static void test_image_1k(void)
{
	run(1024, 24u << 20);
}

static void test_image_4k(void)
{
	run(4096, 160u << 20);
}

static void setup(void)
{
	mlog_set_level(MLOG_ERR);
}

T_MAIN_SETUP(setup(),
	     T_CASE(test_kinds),
	     T_CASE(test_image_1k),
	     T_CASE(test_image_4k))
