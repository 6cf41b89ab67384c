/*
 * dirblock.c - the rules a directory block must obey.
 *
 * A directory block is checked once, when it is read, so that everything
 * walking it afterwards can trust rec_len and name_len.
 */
#include "fmt.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <string.h>

#include "util.h"

static int check_tail(const struct mfs_super *sb, uint32_t ino,
		      const void *block, char *why, size_t len)
{
	uint32_t bs = fmt_block_size(sb);
	const struct mfs_dir_tail *t = (const void *)((const char *)block + bs -
						       MFS_DIR_TAIL_SIZE);

	if (t->det_zero || le16toh(t->det_rec_len) != MFS_DIR_TAIL_SIZE ||
	    t->det_name_len || t->det_type != MFS_FT_DIR_TAIL)
		return ut_corrupt(why, len, "directory %" PRIu32 ": checksum tail missing", ino);
	if (!fmt_block_csum_ok(sb, MFS_CSUM_DIR, ino, block))
		return ut_corrupt(why, len, "directory %" PRIu32 ": checksum mismatch "
			   "(stored 0x%08" PRIx32 ", computed 0x%08" PRIx32 ")", ino,
			   le32toh(t->det_checksum),
			   fmt_block_csum(sb, MFS_CSUM_DIR, ino, block));
	return 0;
}

static int check_entry(const struct mfs_super *sb, uint32_t ino,
		       const struct mfs_dirent *de, uint32_t off, uint32_t end,
		       char *why, size_t len)
{
	uint32_t rec = le16toh(de->rec_len), child = le32toh(de->inode);

	if (rec < MFS_DIRENT_LEN(0) || rec % 4 || off + rec > end)
		return ut_corrupt(why, len, "directory %" PRIu32 ": rec_len %" PRIu32
			   " at offset %" PRIu32 " is misaligned or too long",
			   ino, rec, off);
	if (!child)
		return 0;
	if (!de->name_len || MFS_DIRENT_LEN(de->name_len) > rec)
		return ut_corrupt(why, len, "directory %" PRIu32 ": name_len %u at offset %"
			   PRIu32 " does not fit rec_len %" PRIu32, ino,
			   de->name_len, off, rec);
	if (child > le32toh(sb->s_inodes_count))
		return ut_corrupt(why, len, "directory %" PRIu32 ": entry at offset %" PRIu32
			   " names inode %" PRIu32 ", beyond %" PRIu32, ino, off,
			   child, le32toh(sb->s_inodes_count));
	if (de->file_type == MFS_FT_UNKNOWN || de->file_type >= MFS_FT_MAX)
		return ut_corrupt(why, len, "directory %" PRIu32 ": entry at offset %" PRIu32
			   " has file type %u", ino, off, de->file_type);
	if (memchr(de->name, '/', de->name_len) || memchr(de->name, 0, de->name_len))
		return ut_corrupt(why, len, "directory %" PRIu32 ": entry at offset %" PRIu32
			   " has '/' or NUL in its name", ino, off);
	return 0;
}

int fmt_dirblock_check(const struct mfs_super *sb, uint32_t ino,
		       const void *block, char *why, size_t whylen)
{
	uint32_t end = fmt_block_size(sb) - MFS_DIR_TAIL_SIZE, off = 0;
	int err = check_tail(sb, ino, block, why, whylen);

	while (!err && off < end) {
		const struct mfs_dirent *de = (const void *)((const char *)block + off);

		err = check_entry(sb, ino, de, off, end, why, whylen);
		off += le16toh(de->rec_len);
	}
	return err;
}
