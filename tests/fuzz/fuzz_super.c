/*
 * fuzz_super - any superblock that fmt_sb_check() accepts describes a
 * geometry every other piece of code can use without overflow: groups
 * inside the filesystem, metadata inside its group, descriptors inside
 * their table.  The input is laid over a superblock mkfs wrote (XOR, so
 * an empty input is that superblock) and resealed (checksum recomputed),
 * so the fuzzer explores around a valid geometry and reaches the
 * structural checks, not only the checksum.
 */
#include <stdlib.h>
#include <string.h>

#include "bdev_test.h"
#include "fmt.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

static struct mfs_super base;

/* A real superblock: 24 MiB of 1 KiB blocks, three groups. */
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	struct fmt_mkfs_opts o = { .block_size = 1024, .zeroed = true };
	struct bdev *bd;

	if (bdev_mem_create(24u << 20, 1024, &bd) || fmt_mkfs(bd, &o))
		abort();
	memcpy(&base, (char *)bdev_mem_data(bd) + MFS_SB_OFFSET, sizeof(base));
	bdev_close(bd);
	return 0;
}

static void require(int ok)
{
	if (!ok)
		abort();
}

static void check_group(const struct mfs_super *sb, uint32_t g)
{
	uint64_t first = fmt_group_first_block(sb, g);
	uint64_t blocks = le64toh(sb->s_blocks_count);
	uint32_t n = fmt_group_nblocks(sb, g), off;
	uint64_t gd = fmt_gdesc_block(sb, g, &off);

	require(first < blocks && n > 0 && first + n <= blocks);
	require(n <= le32toh(sb->s_blocks_per_group));
	require(off + MFS_DESC_SIZE <= fmt_block_size(sb));
	require(gd < le32toh(sb->s_first_data_block) + 1u + le16toh(sb->s_gdt_blocks));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct mfs_super sb;
	char why[256];
	uint32_t groups;

	sb = base;
	for (size_t i = 0; i < size && i < sizeof(sb); i++)
		((uint8_t *)&sb)[i] ^= data[i];
	sb.s_magic = htole32(MFS_MAGIC);
	if (size && data[0] & 1) {      /* get past the identity checks */
		sb.s_rev_level = htole32(MFS_REV_LEVEL);
		sb.s_log_block_size = htole32(le32toh(sb.s_log_block_size) % 3);
		sb.s_inode_size = htole16(MFS_INODE_SIZE);
		sb.s_desc_size = htole16(MFS_DESC_SIZE);
		sb.s_first_data_block = htole32(sb.s_log_block_size == 0);
	}
	fmt_sb_set_csum(&sb);
	if (fmt_sb_check(&sb, (uint64_t)1 << 44, why, sizeof(why)))
		return 0;
	groups = le32toh(sb.s_groups_count);
	require(groups > 0);
	require(fmt_itable_blocks(&sb) > 0);
	check_group(&sb, 0);
	check_group(&sb, groups - 1);
	check_group(&sb, groups / 2);
	for (uint32_t ino = 1; ino <= le32toh(sb.s_inodes_count);
	     ino += 1 + le32toh(sb.s_inodes_count) / 7) {
		uint32_t off;

		fmt_inode_block(&sb, 0, ino, &off);
		require(off + MFS_INODE_SIZE <= fmt_block_size(&sb));
	}
	return 0;
}
