/*
 * print.c - the stable text form of on-disk structures.
 *
 * One "key: value" per line, keys never renamed, so tests and scripts can
 * compare miscfs-debug output with grep and diff.
 */
#include "fmt.h"

#include <inttypes.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>

static void print_uuid(const uint8_t u[16], FILE *out)
{
	for (int i = 0; i < 16; i++)
		fprintf(out, "%02x%s", u[i], (i == 3 || i == 5 || i == 7 || i == 9) ? "-" : "");
}

static void print_sb_identity(const struct mfs_super *sb, FILE *out)
{
	uint16_t state = le16toh(sb->s_state);

	fprintf(out, "magic: 0x%08" PRIx32 "\n", le32toh(sb->s_magic));
	fprintf(out, "revision: %" PRIu32 "\n", le32toh(sb->s_rev_level));
	fprintf(out, "label: %.*s\n", (int)MFS_LABEL_LEN, sb->s_volume_name);
	fprintf(out, "uuid: ");
	print_uuid(sb->s_uuid, out);
	fprintf(out, "\nfeatures: compat 0x%" PRIx32 " incompat 0x%" PRIx32
		" ro_compat 0x%" PRIx32 "\n", le32toh(sb->s_feature_compat),
		le32toh(sb->s_feature_incompat), le32toh(sb->s_feature_ro_compat));
	fprintf(out, "state: %s%s\n", state & MFS_STATE_VALID ? "clean" : "not clean",
		state & MFS_STATE_ERRORS ? " with errors" : "");
	fprintf(out, "errors behaviour: %s\n",
		le16toh(sb->s_errors) == MFS_ERRORS_RO ? "remount-ro" : "continue");
	fprintf(out, "copy in group: %u\n", le16toh(sb->s_block_group_nr));
	fprintf(out, "checksum seed: 0x%016" PRIx64 "\n", le64toh(sb->s_csum_seed));
	fprintf(out, "checksum: 0x%08" PRIx32 "\n", le32toh(sb->s_checksum));
}

static void print_sb_geometry(const struct mfs_super *sb, FILE *out)
{
	fprintf(out, "block size: %" PRIu32 "\n", fmt_block_size(sb));
	fprintf(out, "blocks: %" PRIu64 "\n", le64toh(sb->s_blocks_count));
	fprintf(out, "free blocks: %" PRIu64 "\n", le64toh(sb->s_free_blocks_count));
	fprintf(out, "reserved blocks: %" PRIu64 "\n", le64toh(sb->s_r_blocks_count));
	fprintf(out, "inodes: %" PRIu32 "\n", le32toh(sb->s_inodes_count));
	fprintf(out, "free inodes: %" PRIu32 "\n", le32toh(sb->s_free_inodes_count));
	fprintf(out, "first data block: %" PRIu32 "\n", le32toh(sb->s_first_data_block));
	fprintf(out, "blocks per group: %" PRIu32 "\n", le32toh(sb->s_blocks_per_group));
	fprintf(out, "inodes per group: %" PRIu32 "\n", le32toh(sb->s_inodes_per_group));
	fprintf(out, "groups: %" PRIu32 "\n", le32toh(sb->s_groups_count));
	fprintf(out, "descriptor blocks: %u\n", le16toh(sb->s_gdt_blocks));
	fprintf(out, "inode size: %u\n", le16toh(sb->s_inode_size));
	fprintf(out, "first inode: %" PRIu32 "\n", le32toh(sb->s_first_ino));
	fprintf(out, "journal inode: %" PRIu32 "\n", le32toh(sb->s_journal_inum));
	fprintf(out, "journal blocks: %" PRIu32 "\n", le32toh(sb->s_journal_blocks));
	fprintf(out, "orphan list head: %" PRIu32 "\n", le32toh(sb->s_last_orphan));
	fprintf(out, "regions: %" PRIu32 "\n", le32toh(sb->s_region_count));
	fprintf(out, "region table block: %" PRIu64 "\n", le64toh(sb->s_region_table));
	fprintf(out, "regions start: %" PRIu64 "\n", le64toh(sb->s_regions_start));
	fprintf(out, "device blocks: %" PRIu64 "\n", le64toh(sb->s_device_blocks));
	if (fmt_has_mmp(sb)) {
		fprintf(out, "mmp block: %" PRIu64 "\n", le64toh(sb->s_mmp_block));
		fprintf(out, "mmp interval: %u\n", fmt_mmp_interval(sb));
	}
}

void fmt_mmp_print(const struct mfs_super *sb, const struct mfs_mmp *m, FILE *out)
{
	uint32_t seq = le32toh(m->mmp_seq);
	int64_t when = (int64_t)le64toh(m->mmp_time);
	int64_t age = (int64_t)time(NULL) - when;

	fprintf(out, "mmp block: %" PRIu64 "\n", le64toh(sb->s_mmp_block));
	fprintf(out, "state: %s\n", seq == MFS_MMP_SEQ_CLEAN ? "clean" : "in use or not released");
	fprintf(out, "sequence: 0x%08" PRIx32 "\n", seq);
	fprintf(out, "program: %.*s\n", (int)sizeof(m->mmp_program), m->mmp_program);
	fprintf(out, "pid: %" PRIu32 "\n", le32toh(m->mmp_pid));
	fprintf(out, "node: %.*s\n", (int)sizeof(m->mmp_nodename), m->mmp_nodename);
	fprintf(out, "stamped: %" PRId64 " (%" PRId64 " s ago)\n", when, age < 0 ? 0 : age);
	fprintf(out, "interval: %u\n", le16toh(m->mmp_interval));
}

static void print_sb_times(const struct mfs_super *sb, FILE *out)
{
	fprintf(out, "mount count: %u\n", le16toh(sb->s_mnt_count));
	fprintf(out, "max mount count: %d\n", (int16_t)le16toh(sb->s_max_mnt_count));
	fprintf(out, "created: %" PRId64 "\n", (int64_t)le64toh(sb->s_mkfs_time));
	fprintf(out, "last mount: %" PRId64 "\n", (int64_t)le64toh(sb->s_mtime));
	fprintf(out, "last write: %" PRId64 "\n", (int64_t)le64toh(sb->s_wtime));
	fprintf(out, "last check: %" PRId64 "\n", (int64_t)le64toh(sb->s_lastcheck));
	fprintf(out, "last mounted on: %.*s\n", (int)sizeof(sb->s_last_mounted),
		sb->s_last_mounted);
	fprintf(out, "default data mode: %s\n",
		(le32toh(sb->s_default_mount_opts) & MFS_DEFM_DATA_MASK) ==
		MFS_DEFM_DATA_JOURNAL ? "journal" :
		(le32toh(sb->s_default_mount_opts) & MFS_DEFM_DATA_MASK) ==
		MFS_DEFM_DATA_WRITEBACK ? "writeback" : "ordered");
}

void fmt_sb_print(const struct mfs_super *sb, FILE *out)
{
	print_sb_identity(sb, out);
	print_sb_geometry(sb, out);
	print_sb_times(sb, out);
}

void fmt_gdesc_print(uint32_t group, const struct mfs_group_desc *gd, FILE *out)
{
	fprintf(out, "group %" PRIu32 ": block bitmap %" PRIu32 ", inode bitmap %"
		PRIu32 ", inode table %" PRIu32 ", free blocks %" PRIu32
		", free inodes %" PRIu32 ", directories %" PRIu32
		", checksum 0x%08" PRIx32 "\n", group,
		le32toh(gd->bg_block_bitmap), le32toh(gd->bg_inode_bitmap),
		le32toh(gd->bg_inode_table), le32toh(gd->bg_free_blocks_count),
		le32toh(gd->bg_free_inodes_count), le32toh(gd->bg_used_dirs_count),
		le32toh(gd->bg_checksum));
}

const char *fmt_ft_name(unsigned file_type)
{
	static const char *const names[MFS_FT_MAX] = {
		"unknown", "file", "dir", "chrdev", "blkdev", "fifo", "socket", "symlink",
	};

	return file_type < MFS_FT_MAX ? names[file_type] : "invalid";
}

static const char *mode_kind(uint16_t mode)
{
	switch (mode & S_IFMT) {
	case S_IFREG: return "file";
	case S_IFDIR: return "dir";
	case S_IFLNK: return "symlink";
	case S_IFCHR: return "chrdev";
	case S_IFBLK: return "blkdev";
	case S_IFIFO: return "fifo";
	case S_IFSOCK: return "socket";
	default: return "invalid";
	}
}

static void print_inode_times(const struct mfs_inode *in, FILE *out)
{
	fprintf(out, "atime: %" PRId64 ".%09" PRIu32 "\n", (int64_t)le64toh(in->i_atime),
		le32toh(in->i_atime_nsec));
	fprintf(out, "mtime: %" PRId64 ".%09" PRIu32 "\n", (int64_t)le64toh(in->i_mtime),
		le32toh(in->i_mtime_nsec));
	fprintf(out, "ctime: %" PRId64 ".%09" PRIu32 "\n", (int64_t)le64toh(in->i_ctime),
		le32toh(in->i_ctime_nsec));
	fprintf(out, "crtime: %" PRId64 ".%09" PRIu32 "\n", (int64_t)le64toh(in->i_crtime),
		le32toh(in->i_crtime_nsec));
	fprintf(out, "dtime: %" PRId64 "\n", (int64_t)le64toh(in->i_dtime));
}

void fmt_inode_print(uint32_t ino, const struct mfs_inode *in, FILE *out)
{
	uint16_t mode = le16toh(in->i_mode);

	fprintf(out, "inode: %" PRIu32 "\n", ino);
	fprintf(out, "type: %s\n", mode_kind(mode));
	fprintf(out, "mode: %04o\n", mode & 07777);
	fprintf(out, "links: %u\n", le16toh(in->i_links_count));
	fprintf(out, "uid: %" PRIu32 "\ngid: %" PRIu32 "\n", le32toh(in->i_uid),
		le32toh(in->i_gid));
	fprintf(out, "size: %" PRIu64 "\n", le64toh(in->i_size));
	fprintf(out, "sectors: %" PRIu64 "\n", le64toh(in->i_blocks));
	fprintf(out, "flags: 0x%08" PRIx32 "\n", le32toh(in->i_flags));
	fprintf(out, "generation: %" PRIu32 "\n", le32toh(in->i_generation));
	print_inode_times(in, out);
	if (S_ISCHR(mode) || S_ISBLK(mode))
		fprintf(out, "device: %u:%u\n", major(le64toh(in->i_rdev)),
			minor(le64toh(in->i_rdev)));
	fprintf(out, "xattr block: %" PRIu32 "\n", le32toh(in->i_xattr_block));
	fprintf(out, "next orphan: %" PRIu32 "\n", le32toh(in->i_next_orphan));
	fprintf(out, "block map:");
	for (int i = 0; i < MFS_N_BLOCKS; i++)
		fprintf(out, " %" PRIu32, le32toh(in->i_block[i]));
	fprintf(out, "\nchecksum: 0x%08" PRIx32 "\n", le32toh(in->i_checksum));
}
