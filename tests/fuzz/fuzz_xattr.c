/*
 * fuzz_xattr - an xattr block that fmt_xattr_block_check() accepts can be
 * walked by trusting h_used, e_name_len and e_value_size, which is what
 * every later reader does.  The input is resealed so the fuzzer reaches
 * the entry checks, not only the checksum.
 */
#include <stdlib.h>
#include <string.h>

#include "fmt.h"

#define BS 1024u
#define HDR 16u

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void require(int ok)
{
	if (!ok)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t blk[BS];
	struct mfs_super sb = { .s_log_block_size = 0 };
	struct mfs_xattr_header *h = (void *)blk;
	uint32_t off = 0, used;
	char why[256];

	memset(blk, 0, sizeof(blk));
	memcpy(blk, data, size < BS ? size : BS);
	if (size && data[0] & 1) {      /* usually keep a well-formed header */
		h->h_magic = htole32(MFS_XATTR_BLOCK_MAGIC);
		h->h_refcount = htole32(1);
		h->h_used = htole32(le32toh(h->h_used) % BS);
	}
	fmt_block_set_csum(&sb, MFS_CSUM_XATTR, 12, blk);
	if (fmt_xattr_block_check(&sb, 12, blk, why, sizeof(why)))
		return 0;
	used = le32toh(h->h_used);
	require(used && used <= BS - HDR - 4);
	while (off < used) {
		const struct mfs_xattr_entry *e = (const void *)(blk + HDR + off);
		uint32_t len = (4u + e->e_name_len + le16toh(e->e_value_size) + 3u) & ~3u;

		require(e->e_name_index != 0 && off + len <= used);
		off += len;
	}
	require(off == used);
	return 0;
}
