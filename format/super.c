/*
 * super.c - checking and finding the superblock.
 *
 * The primary copy lives at byte 1024.  When it is damaged, the backups
 * in the sparse groups are tried for every block size, because a damaged
 * primary cannot be trusted to say what the block size is.
 */
#include "fmt.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <string.h>

#include "jnl.h"
#include "util.h"

static int check_identity(const struct mfs_super *sb, char *why, size_t len)
{
	if (le32toh(sb->s_magic) != MFS_MAGIC)
		return ut_corrupt(why, len, "superblock: bad magic 0x%08" PRIx32
			   " (expected 0x%08x)", le32toh(sb->s_magic), MFS_MAGIC);
	if (le32toh(sb->s_checksum) != fmt_sb_csum(sb))
		return ut_corrupt(why, len, "superblock: checksum mismatch (stored 0x%08"
			   PRIx32 ", computed 0x%08" PRIx32 ")",
			   le32toh(sb->s_checksum), fmt_sb_csum(sb));
	if (le32toh(sb->s_rev_level) != MFS_REV_LEVEL)
		return ut_corrupt(why, len, "superblock: revision %" PRIu32 " unknown",
			   le32toh(sb->s_rev_level));
	if (le32toh(sb->s_log_block_size) > MFS_MAX_BLOCK_LOG - MFS_MIN_BLOCK_LOG)
		return ut_corrupt(why, len, "superblock: block size log %" PRIu32
			   " out of range", le32toh(sb->s_log_block_size));
	if (le16toh(sb->s_inode_size) != MFS_INODE_SIZE ||
	    le16toh(sb->s_desc_size) != MFS_DESC_SIZE)
		return ut_corrupt(why, len, "superblock: inode size %u / descriptor size %u"
			   " unsupported", le16toh(sb->s_inode_size),
			   le16toh(sb->s_desc_size));
	return 0;
}

/* A group holds its superblock copy, descriptors, bitmaps and inode table.
 * Group 0 carries the most of them among full groups, the last group is
 * the shortest: if both fit, every group does. */
static int check_group_fit(const struct mfs_super *sb, uint32_t g, char *why, size_t len)
{
	uint32_t meta = fmt_group_meta_blocks(sb, g);

	if (fmt_group_nblocks(sb, g) < meta)
		return ut_corrupt(why, len, "superblock: group %" PRIu32 " has %" PRIu32
			   " blocks, too few for its %" PRIu32 " blocks of metadata "
			   "(%" PRIu32 " of inode table)", g, fmt_group_nblocks(sb, g),
			   meta, fmt_itable_blocks(sb));
	return 0;
}

static int check_groups(const struct mfs_super *sb, char *why, size_t len)
{
	uint32_t bs = fmt_block_size(sb);
	uint32_t bpg = le32toh(sb->s_blocks_per_group);
	uint32_t ipg = le32toh(sb->s_inodes_per_group);
	uint32_t fdb = le32toh(sb->s_first_data_block);
	uint64_t blocks = le64toh(sb->s_blocks_count);
	uint64_t groups;

	if (fdb != (bs == 1024 ? 1u : 0u))
		return ut_corrupt(why, len, "superblock: first data block %" PRIu32
			   " wrong for %" PRIu32 "-byte blocks", fdb, bs);
	/* One bitmap block holds a group's bits, and the inode table holds
	 * whole blocks of inodes. */
	if (bpg < 8 || bpg > 8 * bs || bpg % 8)
		return ut_corrupt(why, len, "superblock: %" PRIu32 " blocks per group "
			   "(must be a multiple of 8 from 8 to %" PRIu32 ")", bpg, 8 * bs);
	if (ipg == 0 || ipg > 8 * bs || ipg % (bs / MFS_INODE_SIZE))
		return ut_corrupt(why, len, "superblock: %" PRIu32 " inodes per group "
			   "(must be a multiple of %" PRIu32 " from %" PRIu32 " to %" PRIu32 ")",
			   ipg, bs / MFS_INODE_SIZE, bs / MFS_INODE_SIZE, 8 * bs);
	if (blocks <= fdb || blocks > UINT32_MAX)
		return ut_corrupt(why, len, "superblock: block count %" PRIu64, blocks);
	groups = (blocks - fdb + bpg - 1) / bpg;
	if (groups != le32toh(sb->s_groups_count))
		return ut_corrupt(why, len, "superblock: %" PRIu32 " groups recorded, %"
			   PRIu64 " computed", le32toh(sb->s_groups_count), groups);
	if ((uint64_t)ipg * groups != le32toh(sb->s_inodes_count))
		return ut_corrupt(why, len, "superblock: inode count %" PRIu32
			   " is not groups x inodes per group",
			   le32toh(sb->s_inodes_count));
	if (le16toh(sb->s_gdt_blocks) != (groups * MFS_DESC_SIZE + bs - 1) / bs)
		return ut_corrupt(why, len, "superblock: %u descriptor blocks for %" PRIu64
			   " groups", le16toh(sb->s_gdt_blocks), groups);
	if (check_group_fit(sb, 0, why, len))
		return -EUCLEAN;
	return check_group_fit(sb, (uint32_t)groups - 1, why, len);
}

/* The region table is one block: a header, the entries, a checksum. */
static int check_regions(const struct mfs_super *sb, char *why, size_t len)
{
	uint32_t n = le32toh(sb->s_region_count);
	uint32_t room = (fmt_block_size(sb) - MFS_REGION_HDR_SIZE - 4) /
			MFS_REGION_ENTRY_SIZE;

	if (!n)
		return 0;
	if (n > room)
		return ut_corrupt(why, len, "superblock: %" PRIu32 " regions, more than "
			   "the %" PRIu32 " one table block holds", n, room);
	if (le64toh(sb->s_region_table) >= le64toh(sb->s_blocks_count))
		return ut_corrupt(why, len, "superblock: region table at block %" PRIu64
			   " outside the filesystem", le64toh(sb->s_region_table));
	return 0;
}

/* The MMP block is a block of the groups past the first superblock, and
 * its interval one the stamper can keep. */
static int check_mmp(const struct mfs_super *sb, char *why, size_t len)
{
	uint64_t blk = le64toh(sb->s_mmp_block);

	if (!fmt_has_mmp(sb))
		return 0;
	if (blk <= le32toh(sb->s_first_data_block) || blk >= le64toh(sb->s_blocks_count))
		return ut_corrupt(why, len, "superblock: MMP block %" PRIu64 " outside "
			   "the filesystem", blk);
	if (le16toh(sb->s_mmp_interval) > MFS_MMP_INTERVAL_MAX)
		return ut_corrupt(why, len, "superblock: MMP interval of %u s (at most %u)",
			   le16toh(sb->s_mmp_interval), MFS_MMP_INTERVAL_MAX);
	return 0;
}

/* The journal is inode 8, at least the journal's minimum, and smaller than
 * the filesystem that holds it. */
static int check_journal(const struct mfs_super *sb, char *why, size_t len)
{
	uint32_t n = le32toh(sb->s_journal_blocks);

	if (!(le32toh(sb->s_feature_compat) & MFS_FEATURE_COMPAT_HAS_JOURNAL))
		return 0;
	if (le32toh(sb->s_journal_inum) != MFS_JOURNAL_INO)
		return ut_corrupt(why, len, "superblock: journal inode %" PRIu32
			   " (expected %u)", le32toh(sb->s_journal_inum), MFS_JOURNAL_INO);
	if (n < JNL_MIN_BLOCKS || n >= le64toh(sb->s_blocks_count))
		return ut_corrupt(why, len, "superblock: journal of %" PRIu32 " blocks "
			   "(from %u to fewer than the %" PRIu64 " of the filesystem)",
			   n, JNL_MIN_BLOCKS, le64toh(sb->s_blocks_count));
	return 0;
}

static int check_counts(const struct mfs_super *sb, uint64_t device_bytes,
			char *why, size_t len)
{
	uint32_t bs = fmt_block_size(sb);
	uint64_t blocks = le64toh(sb->s_blocks_count);
	uint64_t dev_blocks = le64toh(sb->s_device_blocks);
	uint64_t rstart = le64toh(sb->s_regions_start);

	if (le64toh(sb->s_free_blocks_count) > blocks ||
	    le32toh(sb->s_free_inodes_count) > le32toh(sb->s_inodes_count))
		return ut_corrupt(why, len, "superblock: free counts exceed totals");
	if (rstart < blocks || dev_blocks < rstart)
		return ut_corrupt(why, len, "superblock: region area %" PRIu64 "..%" PRIu64
			   " overlaps the groups", rstart, dev_blocks);
	if (device_bytes && dev_blocks > device_bytes / bs)
		return ut_corrupt(why, len, "superblock: filesystem of %" PRIu64
			   " blocks is larger than the device (%" PRIu64 " blocks)",
			   dev_blocks, device_bytes / bs);
	if (le32toh(sb->s_first_ino) != MFS_FIRST_INO ||
	    le32toh(sb->s_inodes_count) < MFS_FIRST_INO)
		return ut_corrupt(why, len, "superblock: first inode %" PRIu32 " / %" PRIu32
			   " inodes", le32toh(sb->s_first_ino),
			   le32toh(sb->s_inodes_count));
	if (le64toh(sb->s_r_blocks_count) > blocks)
		return ut_corrupt(why, len, "superblock: %" PRIu64 " blocks reserved for "
			   "root, more than the %" PRIu64 " blocks of the filesystem",
			   le64toh(sb->s_r_blocks_count), blocks);
	if (check_regions(sb, why, len) || check_mmp(sb, why, len))
		return -EUCLEAN;
	return check_journal(sb, why, len);
}

int fmt_sb_check(const struct mfs_super *sb, uint64_t device_bytes,
		 char *why, size_t whylen)
{
	int err = check_identity(sb, why, whylen);

	if (!err)
		err = check_groups(sb, why, whylen);
	if (!err)
		err = check_counts(sb, device_bytes, why, whylen);
	return err;
}

/* Read a superblock copy at byte @off into @sb, through the aligned
 * device block(s) around it, whatever the device's block size. */
static int read_copy(struct bdev *bd, uint64_t off, struct mfs_super *sb)
{
	uint64_t start = off / bd->block_size * bd->block_size;
	size_t len = UT_ROUND_UP(off + MFS_SB_SIZE - start, bd->block_size);
	char *buf;
	int err;

	if (start + len > bd->size)
		return -EINVAL;
	buf = bdev_alloc_buf(len);
	if (!buf)
		return -ENOMEM;
	err = bdev_read(bd, start, buf, len);
	if (!err)
		memcpy(sb, buf + (off - start), MFS_SB_SIZE);
	bdev_free_buf(buf);
	return err;
}

/* The next group after @g that holds a backup (1, 3, 5, 7, 9, 25, ...). */
static uint32_t next_backup_group(uint32_t g)
{
	do
		g++;
	while (!fmt_group_has_super(g));
	return g;
}

static int try_backups(struct bdev *bd, struct mfs_super *sb, uint32_t *copy)
{
	char why[160];

	for (uint32_t log = 0; log <= MFS_MAX_BLOCK_LOG - MFS_MIN_BLOCK_LOG; log++) {
		uint32_t bs = 1024u << log;
		uint64_t fdb = bs == 1024, bpg = 8ull * bs;

		for (uint32_t g = 1; (fdb + g * bpg + 1) * bs <= bd->size;
		     g = next_backup_group(g)) {
			if (read_copy(bd, (fdb + g * bpg) * bs, sb))
				continue;
			if (fmt_sb_check(sb, bd->size, why, sizeof(why)) ||
			    le16toh(sb->s_block_group_nr) != g ||
			    fmt_block_size(sb) != bs)
				continue;
			*copy = g;
			return 0;
		}
	}
	return -EUCLEAN;
}

bool fmt_sb_fields_whole(const struct mfs_super *sb)
{
	if (le32toh(sb->s_checksum) == fmt_sb_csum(sb))
		return true;
	for (size_t i = 0; i < sizeof(sb->s_reserved); i++)
		if (sb->s_reserved[i])
			return false;
	return true;
}

/*
 * Whether the primary @sb fails nothing but its checksum, its fields
 * whole; @out gets it with the checksum it would have.  A write of the
 * superblock torn at the sector boundary inside it by a power cut leaves
 * it so.
 */
static bool checksum_only(const struct mfs_super *sb, uint64_t device_bytes,
			  struct mfs_super *out)
{
	char why[160];

	*out = *sb;
	out->s_checksum = htole32(fmt_sb_csum(out));
	return fmt_sb_fields_whole(sb) &&
	       !fmt_sb_check(out, device_bytes, why, sizeof(why));
}

int fmt_sb_load(struct bdev *bd, struct mfs_super *sb, uint32_t *copy_group)
{
	return fmt_sb_load_torn(bd, sb, copy_group, NULL);
}

int fmt_sb_load_torn(struct bdev *bd, struct mfs_super *sb, uint32_t *copy_group,
		     bool *torn)
{
	struct mfs_super primary;
	char why[160];
	int err;

	*copy_group = 0;
	if (bd->size < MFS_SB_OFFSET + MFS_SB_SIZE) {
		mlog_err("device of %" PRIu64 " bytes is too small to hold a "
			 "superblock", bd->size);
		return -EUCLEAN;
	}
	err = read_copy(bd, MFS_SB_OFFSET, sb);
	if (err) {
		mlog_err("cannot read the superblock: %s", strerror(-err));
		return err;
	}
	if (torn)
		*torn = false;
	if (!fmt_sb_check(sb, bd->size, why, sizeof(why)))
		return 0;
	primary = *sb;
	mlog_warn("primary %s; looking for a backup superblock", why);
	if (!try_backups(bd, sb, copy_group)) {
		mlog_warn("using the backup superblock of group %" PRIu32, *copy_group);
		return 0;
	}
	if (torn && checksum_only(&primary, bd->size, sb)) {
		mlog_warn("no backup superblock is intact, but the primary fails "
			  "nothing but its checksum, as a write torn by a power cut "
			  "leaves it");
		*torn = true;
		return 0;
	}
	mlog_err("no valid superblock found: primary %s, and no backup "
		 "copy is intact", why);
	return -EUCLEAN;
}
