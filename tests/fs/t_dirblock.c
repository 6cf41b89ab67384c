/*
 * t_dirblock - every rule of a directory block is enforced even when the
 * checksum matches (a bug, not a bit flip, can write such a block).
 */
#include "mfs.h"
#include "t.h"

#define BS 1024u

static struct mfs_super sb;
static uint8_t blk[BS];

static struct mfs_dirent *put(uint32_t off, uint32_t ino, uint16_t rec,
			      const char *name, uint8_t type)
{
	struct mfs_dirent *de = (void *)(blk + off);

	de->inode = htole32(ino);
	de->rec_len = htole16(rec);
	de->name_len = (uint8_t)strlen(name);
	de->file_type = type;
	memcpy(de->name, name, strlen(name));
	return de;
}

/* ".", "..", "file" filling the block, a tail, a good checksum. */
static void good_block(void)
{
	struct mfs_dir_tail *t = (void *)(blk + BS - MFS_DIR_TAIL_SIZE);

	memset(blk, 0, sizeof(blk));
	put(0, 12, 12, ".", MFS_FT_DIR);
	put(12, 2, 12, "..", MFS_FT_DIR);
	put(24, 13, BS - MFS_DIR_TAIL_SIZE - 24, "file", MFS_FT_REG_FILE);
	t->det_rec_len = htole16(MFS_DIR_TAIL_SIZE);
	t->det_type = MFS_FT_DIR_TAIL;
}

static void expect_bad(const char *what, const char *text)
{
	char why[256] = "";

	fmt_block_set_csum(&sb, MFS_CSUM_DIR, 12, blk);
	t_eq(fmt_dirblock_check(&sb, 12, blk, why, sizeof(why)), -EUCLEAN);
	t_assert(strstr(why, text), "%s: message '%s' lacks '%s'", what, why, text);
	printf("ok: %s -> %s\n", what, why);
	good_block();
}

static void setup(void)
{
	sb.s_log_block_size = 0;
	sb.s_inodes_count = htole32(100);
	sb.s_csum_seed = htole64(0x1234);
}

/* The checksum is seeded with the directory's inode: a good block moved
 * to another directory fails. */
static void test_csum_binds_dir(void)
{
	char why[256];

	good_block();
	fmt_block_set_csum(&sb, MFS_CSUM_DIR, 12, blk);
	t_ok(fmt_dirblock_check(&sb, 12, blk, why, sizeof(why)));
	t_eq(fmt_dirblock_check(&sb, 13, blk, why, sizeof(why)), -EUCLEAN);
	t_assert(strstr(why, "checksum mismatch"), "another directory's block: %s", why);
}

static void test_rec_len(void)
{
	good_block();
	((struct mfs_dirent *)(blk + 24))->rec_len = htole16(BS);
	expect_bad("rec_len past the block", "misaligned or too long");
	/* The tail stays intact, so only the bound at the tail refuses these:
	 * a walker trusting such a rec_len would read the checksum as a record. */
	((struct mfs_dirent *)(blk + 24))->rec_len = htole16(BS - 24);
	expect_bad("rec_len over the whole checksum tail", "rec_len 1000 at offset 24");
	((struct mfs_dirent *)(blk + 24))->rec_len = htole16(BS - 24 - MFS_DIR_TAIL_SIZE + 4);
	expect_bad("rec_len 4 bytes into the checksum tail", "misaligned or too long");
	put(24, 13, 12, "file", MFS_FT_REG_FILE);
	put(36, 0, BS - 36, "", 0);
	expect_bad("an unused record over the checksum tail", "at offset 36");
	((struct mfs_dirent *)(blk + 12))->rec_len = htole16(14);
	expect_bad("rec_len not a multiple of 4", "misaligned");
	((struct mfs_dirent *)(blk + 12))->rec_len = htole16(4);
	expect_bad("rec_len below a header", "misaligned");
}

static void test_entry_fields(void)
{
	good_block();
	((struct mfs_dirent *)(blk + 0))->name_len = 9;
	expect_bad("name_len beyond rec_len", "does not fit rec_len");
	((struct mfs_dirent *)(blk + 24))->inode = htole32(101);
	expect_bad("inode beyond the count", "names inode 101");
	((struct mfs_dirent *)(blk + 24))->file_type = 9;
	expect_bad("file type 9", "file type 9");
	((struct mfs_dirent *)(blk + 24))->name[1] = '/';
	expect_bad("slash in a name", "'/' or NUL");
}

static void test_tail_marker(void)
{
	good_block();
	blk[BS - MFS_DIR_TAIL_SIZE + 7] = 0;
	expect_bad("tail marker gone", "checksum tail missing");
}

/* An unused record may have any name_len, but its rec_len still counts. */
static void test_unused_name_len(void)
{
	char why[256];

	good_block();
	((struct mfs_dirent *)(blk + 24))->inode = 0;
	((struct mfs_dirent *)(blk + 24))->name_len = 200;
	fmt_block_set_csum(&sb, MFS_CSUM_DIR, 12, blk);
	t_ok(fmt_dirblock_check(&sb, 12, blk, why, sizeof(why)));
}

T_MAIN_SETUP(setup(),
	     T_CASE(test_csum_binds_dir),
	     T_CASE(test_rec_len),
	     T_CASE(test_entry_fields),
	     T_CASE(test_tail_marker),
	     T_CASE(test_unused_name_len))
