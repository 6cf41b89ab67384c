/*
 * regions.c - the reserved-region table (docs/FORMAT.md, "Reserved
 * regions"), judged alike by the mount and by fsck.
 */
#include "fmt.h"

#include <errno.h>
#include <string.h>

#include "util.h"

static bool name_ok(const char *name)
{
	size_t len = strnlen(name, MFS_REGION_NAME_LEN);

	if (!len || len == MFS_REGION_NAME_LEN)
		return false;
	for (size_t i = 0; i < len; i++) {
		char c = name[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		      (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-'))
			return false;
	}
	return strcmp(name, ".") && strcmp(name, "..");
}

const char *fmt_region_entry_problem(const struct mfs_super *sb,
				     const struct mfs_region_entry *tbl, uint32_t i)
{
	const struct mfs_region_entry *e = &tbl[i];
	uint64_t start = le64toh(e->re_start), blocks = le64toh(e->re_blocks);
	uint64_t bytes = le64toh(e->re_bytes);
	uint32_t bs = fmt_block_size(sb);

	if (!name_ok(e->re_name))
		return "a bad name";
	if (start < le64toh(sb->s_regions_start) ||
	    blocks > le64toh(sb->s_device_blocks) - start || !blocks)
		return "a range outside the region area";
	if ((start * bs) % MFS_REGION_ALIGN || (blocks * bs) % MFS_REGION_ALIGN)
		return "a range not aligned to 4 KiB";
	if (!bytes || bytes > blocks * bs)
		return "a size that does not fit its blocks";
	for (uint32_t j = 0; j < i; j++) {
		uint64_t s2 = le64toh(tbl[j].re_start), b2 = le64toh(tbl[j].re_blocks);

		if (!strncmp(tbl[j].re_name, e->re_name, MFS_REGION_NAME_LEN))
			return "a name used before";
		if (start < s2 + b2 && s2 < start + blocks)
			return "a range overlapping an earlier region";
	}
	return NULL;
}

int fmt_region_table_check(const struct mfs_super *sb, const void *blk,
			   char *why, size_t whylen)
{
	const struct mfs_region_header *h = blk;
	uint32_t n = le32toh(sb->s_region_count);
	uint32_t room = (fmt_block_size(sb) - MFS_REGION_HDR_SIZE - 4) /
			MFS_REGION_ENTRY_SIZE;

	if (le32toh(h->rh_magic) != MFS_REGION_MAGIC || le32toh(h->rh_count) != n ||
	    le32toh(h->rh_entry_size) != MFS_REGION_ENTRY_SIZE || n > room)
		return ut_corrupt(why, whylen, "bad magic, count or entry size");
	if (!fmt_block_csum_ok(sb, MFS_CSUM_REGION, 0, blk))
		return ut_corrupt(why, whylen, "bad checksum");
	return 0;
}
