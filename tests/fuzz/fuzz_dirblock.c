/*
 * fuzz_dirblock - a directory block that fmt_dirblock_check() accepts can
 * be walked by trusting rec_len and name_len, which is what every later
 * reader does.  The input is resealed so the fuzzer reaches the record
 * checks, not only the checksum.
 */
#include <stdlib.h>
#include <string.h>

#include "fmt.h"

#define BS 1024u

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void require(int ok)
{
	if (!ok)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t blk[BS];
	struct mfs_super sb = { .s_inodes_count = htole32(1000) };
	struct mfs_dir_tail *t = (void *)(blk + BS - MFS_DIR_TAIL_SIZE);
	char why[256];
	uint32_t off = 0;

	memset(blk, 0, sizeof(blk));
	memcpy(blk, data, size < BS ? size : BS);
	if (size && data[0] & 1) {      /* usually keep a well-formed tail */
		memset(t, 0, sizeof(*t));
		t->det_rec_len = htole16(MFS_DIR_TAIL_SIZE);
		t->det_type = MFS_FT_DIR_TAIL;
	}
	fmt_block_set_csum(&sb, MFS_CSUM_DIR, 12, blk);
	if (fmt_dirblock_check(&sb, 12, blk, why, sizeof(why)))
		return 0;
	while (off < BS - MFS_DIR_TAIL_SIZE) {
		const struct mfs_dirent *de = (const void *)(blk + off);
		uint32_t rec = le16toh(de->rec_len);

		require(rec >= MFS_DIRENT_LEN(0) && off + rec <= BS - MFS_DIR_TAIL_SIZE);
		if (de->inode)
			require(de->name_len && MFS_DIRENT_LEN(de->name_len) <= rec &&
				le32toh(de->inode) <= 1000);
		off += rec;
	}
	require(off == BS - MFS_DIR_TAIL_SIZE);
	return 0;
}
