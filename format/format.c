/*
 * format.c - checksums and geometry of the on-disk format.
 *
 * Everything here is pure arithmetic over structures already in memory,
 * so mkfs, the daemon, fsck and the debug tool share one definition.
 */
#include "fmt.h"

#include <sys/stat.h>
#include <xxhash.h>

uint32_t fmt_csum(uint64_t seed, uint64_t salt, const void *buf, size_t len)
{
	return (uint32_t)XXH3_64bits_withSeed(buf, len, seed + salt);
}

static uint64_t seed_of(const struct mfs_super *sb)
{
	return le64toh(sb->s_csum_seed);
}

uint32_t fmt_sb_csum(const struct mfs_super *sb)
{
	return fmt_csum(0, 0, sb, offsetof(struct mfs_super, s_checksum));
}

void fmt_sb_set_csum(struct mfs_super *sb)
{
	sb->s_checksum = htole32(fmt_sb_csum(sb));
}

uint32_t fmt_gdesc_csum(const struct mfs_super *sb, uint32_t group,
			const struct mfs_group_desc *gd)
{
	return fmt_csum(seed_of(sb), MFS_SALT(MFS_CSUM_GDESC, group), gd,
			offsetof(struct mfs_group_desc, bg_checksum));
}

uint32_t fmt_bitmap_csum(const struct mfs_super *sb, unsigned kind,
			 uint32_t group, const void *bitmap)
{
	return fmt_csum(seed_of(sb), MFS_SALT(kind, group), bitmap,
			fmt_block_size(sb));
}

uint32_t fmt_inode_csum(const struct mfs_super *sb, uint32_t ino,
			const struct mfs_inode *inode)
{
	return fmt_csum(seed_of(sb), MFS_SALT(MFS_CSUM_INODE, ino), inode,
			offsetof(struct mfs_inode, i_checksum));
}

/* Directory blocks keep their checksum in the 12-byte tail; the others in
 * their last 4 bytes.  Either way it is the block's last 4 bytes. */
uint32_t fmt_block_csum(const struct mfs_super *sb, unsigned kind,
			uint64_t id, const void *block)
{
	return fmt_csum(seed_of(sb), MFS_SALT(kind, id), block,
			fmt_block_size(sb) - 4);
}

static uint32_t *block_csum_slot(const struct mfs_super *sb, const void *block)
{
	return (uint32_t *)((char *)block + fmt_block_size(sb) - 4);
}

void fmt_block_set_csum(const struct mfs_super *sb, unsigned kind,
			uint64_t id, void *block)
{
	*block_csum_slot(sb, block) = htole32(fmt_block_csum(sb, kind, id, block));
}

bool fmt_block_csum_ok(const struct mfs_super *sb, unsigned kind,
		       uint64_t id, const void *block)
{
	return le32toh(*block_csum_slot(sb, block)) ==
	       fmt_block_csum(sb, kind, id, block);
}

bool fmt_inode_never_used(const struct mfs_inode *in)
{
	const uint8_t *b = (const void *)in;

	for (size_t i = 0; i < sizeof(*in); i++)
		if (b[i])
			return false;
	return true;
}

/* Groups 0 and 1 and the powers of 3, 5 and 7 keep a superblock copy. */
static bool is_power_of(uint32_t n, uint32_t base)
{
	while (n > 1 && n % base == 0)
		n /= base;
	return n == 1;
}

bool fmt_group_has_super(uint32_t group)
{
	if (group <= 1)
		return true;
	return is_power_of(group, 3) || is_power_of(group, 5) ||
	       is_power_of(group, 7);
}

uint64_t fmt_group_first_block(const struct mfs_super *sb, uint32_t group)
{
	return le32toh(sb->s_first_data_block) +
	       (uint64_t)group * le32toh(sb->s_blocks_per_group);
}

uint32_t fmt_group_nblocks(const struct mfs_super *sb, uint32_t group)
{
	uint64_t first = fmt_group_first_block(sb, group);
	uint64_t end = le64toh(sb->s_blocks_count);
	uint32_t bpg = le32toh(sb->s_blocks_per_group);

	if (first >= end)
		return 0;
	return end - first < bpg ? (uint32_t)(end - first) : bpg;
}

uint32_t fmt_group_super_blocks(const struct mfs_super *sb, uint32_t group)
{
	if (!fmt_group_has_super(group))
		return 0;
	return 1u + le16toh(sb->s_gdt_blocks);
}

uint32_t fmt_group_meta_blocks(const struct mfs_super *sb, uint32_t group)
{
	return fmt_group_super_blocks(sb, group) + 2 + fmt_itable_blocks(sb);
}

bool fmt_block_in_group_meta(const struct mfs_super *sb, uint64_t blk)
{
	uint64_t fdb = le32toh(sb->s_first_data_block), rel;
	uint32_t bpg = le32toh(sb->s_blocks_per_group), off;

	if (blk < fdb || blk >= le64toh(sb->s_blocks_count) || !bpg)
		return false;
	rel = blk - fdb;
	off = (uint32_t)(rel % bpg);
	/* The most any group holds first, then this group's own. */
	if (off >= 3u + le16toh(sb->s_gdt_blocks) + fmt_itable_blocks(sb))
		return false;
	return off < fmt_group_meta_blocks(sb, (uint32_t)(rel / bpg));
}

uint32_t fmt_itable_blocks(const struct mfs_super *sb)
{
	uint64_t bytes = (uint64_t)le32toh(sb->s_inodes_per_group) * MFS_INODE_SIZE;

	return (uint32_t)((bytes + fmt_block_size(sb) - 1) / fmt_block_size(sb));
}

uint64_t fmt_gdesc_block(const struct mfs_super *sb, uint32_t group,
			 uint32_t *offset)
{
	uint32_t per_block = fmt_block_size(sb) / MFS_DESC_SIZE;

	*offset = (group % per_block) * MFS_DESC_SIZE;
	return le32toh(sb->s_first_data_block) + 1 + group / per_block;
}

uint64_t fmt_inode_block(const struct mfs_super *sb, uint64_t itable,
			 uint32_t ino, uint32_t *offset)
{
	uint32_t index = (ino - 1) % le32toh(sb->s_inodes_per_group);
	uint32_t per_block = fmt_block_size(sb) / MFS_INODE_SIZE;

	*offset = (index % per_block) * MFS_INODE_SIZE;
	return itable + index / per_block;
}

int fmt_block_to_path(uint32_t apb, uint64_t lblk, uint32_t offsets[4])
{
	uint64_t apb2 = (uint64_t)apb * apb;

	if (lblk < MFS_NDIR_BLOCKS) {
		offsets[0] = (uint32_t)lblk;
		return 1;
	}
	lblk -= MFS_NDIR_BLOCKS;
	if (lblk < apb) {
		offsets[0] = MFS_IND_BLOCK;
		offsets[1] = (uint32_t)lblk;
		return 2;
	}
	lblk -= apb;
	if (lblk < apb2) {
		offsets[0] = MFS_DIND_BLOCK;
		offsets[1] = (uint32_t)(lblk / apb);
		offsets[2] = (uint32_t)(lblk % apb);
		return 3;
	}
	lblk -= apb2;
	if (lblk < apb2 * apb) {
		offsets[0] = MFS_TIND_BLOCK;
		offsets[1] = (uint32_t)(lblk / apb2);
		offsets[2] = (uint32_t)(lblk / apb % apb);
		offsets[3] = (uint32_t)(lblk % apb);
		return 4;
	}
	return 0;
}

uint64_t fmt_max_file_size(uint32_t block_size)
{
	uint64_t apb = fmt_addr_per_block(block_size);
	uint64_t blocks = MFS_NDIR_BLOCKS + apb + apb * apb + apb * apb * apb;

	return blocks * block_size;
}

uint8_t fmt_mode_to_ft(uint16_t mode)
{
	switch (mode & S_IFMT) {
	case S_IFREG: return MFS_FT_REG_FILE;
	case S_IFDIR: return MFS_FT_DIR;
	case S_IFCHR: return MFS_FT_CHRDEV;
	case S_IFBLK: return MFS_FT_BLKDEV;
	case S_IFIFO: return MFS_FT_FIFO;
	case S_IFSOCK: return MFS_FT_SOCK;
	case S_IFLNK: return MFS_FT_SYMLINK;
	default: return MFS_FT_UNKNOWN;
	}
}
