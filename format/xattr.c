/*
 * xattr.c - the entries of an xattr area (docs/FORMAT.md, "Extended
 * attributes"): in an inode or after a block's header, each a 4-byte
 * header, the name and the value, padded to 4 bytes; an index of 0 or
 * the area's end ends them.  The mount and fsck judge them alike.
 */
#include "fmt.h"

#include <errno.h>
#include <inttypes.h>
#include <string.h>


uint32_t fmt_xattr_entry_len(uint32_t name_len, uint32_t value_size)
{
	return (FMT_XATTR_ENTRY_HDR + name_len + value_size + 3u) & ~3u;
}

uint16_t fmt_xattr_value_size(const uint8_t *entry)
{
	uint16_t v;

	memcpy(&v, entry + 2, 2);
	return le16toh(v);
}

uint32_t fmt_xattr_block_room(uint32_t bs)
{
	return bs - FMT_XATTR_HDR - 4;
}

static bool known_index(unsigned index)
{
	return index == MFS_XATTR_INDEX_USER || index == MFS_XATTR_INDEX_TRUSTED ||
	       index == MFS_XATTR_INDEX_SECURITY || index == MFS_XATTR_INDEX_ACL_ACCESS ||
	       index == MFS_XATTR_INDEX_ACL_DEFAULT;
}

bool fmt_xattr_is_acl(unsigned index)
{
	return index == MFS_XATTR_INDEX_ACL_ACCESS || index == MFS_XATTR_INDEX_ACL_DEFAULT;
}

int fmt_xattr_area_used(const uint8_t *p, uint32_t size, uint32_t *used,
		     char *why, size_t whylen)
{
	uint32_t off = 0;

	while (off + FMT_XATTR_ENTRY_HDR <= size && p[off]) {
		uint32_t len = fmt_xattr_entry_len(p[off + 1], fmt_xattr_value_size(p + off));

		if (!known_index(p[off]) || (!fmt_xattr_is_acl(p[off]) && !p[off + 1]) ||
		    (fmt_xattr_is_acl(p[off]) && p[off + 1])) {
			snprintf(why, whylen, "entry at byte %" PRIu32 " has a bad name",
				 off);
			return -EUCLEAN;
		}
		if (len > size - off) {
			snprintf(why, whylen, "entry at byte %" PRIu32 " runs past the "
				 "end", off);
			return -EUCLEAN;
		}
		off += len;
	}
	*used = off;
	return 0;
}

int fmt_xattr_inode_check(uint32_t ino, const struct mfs_inode *in, char *why,
			  size_t whylen)
{
	char entry[96];
	uint32_t used;

	if (!fmt_xattr_area_used(in->i_xattr, sizeof(in->i_xattr), &used, entry, sizeof(entry)))
		return 0;
	snprintf(why, whylen, "inode %" PRIu32 ": in-inode xattrs: %s", ino, entry);
	return -EUCLEAN;
}

int fmt_xattr_block_check(const struct mfs_super *sb, uint64_t blk,
			  const void *block, char *why, size_t whylen)
{
	const struct mfs_xattr_header *hd = block;
	uint32_t bs = fmt_block_size(sb), used = 0;
	const uint8_t *p = (const uint8_t *)block + FMT_XATTR_HDR;
	char entry[96];

	if (!fmt_block_csum_ok(sb, MFS_CSUM_XATTR, blk, block)) {
		snprintf(why, whylen, "xattr block %" PRIu64 ": checksum mismatch", blk);
		return -EUCLEAN;
	}
	if (le32toh(hd->h_magic) != MFS_XATTR_BLOCK_MAGIC || le32toh(hd->h_refcount) != 1 ||
	    le32toh(hd->h_used) > fmt_xattr_block_room(bs)) {
		snprintf(why, whylen, "xattr block %" PRIu64 ": bad header", blk);
		return -EUCLEAN;
	}
	if (fmt_xattr_area_used(p, le32toh(hd->h_used), &used, entry, sizeof(entry))) {
		snprintf(why, whylen, "xattr block %" PRIu64 ": %s", blk, entry);
		return -EUCLEAN;
	}
	if (used != le32toh(hd->h_used) || !used) {
		snprintf(why, whylen, "xattr block %" PRIu64 ": entries take %" PRIu32
			 " bytes, the header says %" PRIu32, blk, used, le32toh(hd->h_used));
		return -EUCLEAN;
	}
	return 0;
}

