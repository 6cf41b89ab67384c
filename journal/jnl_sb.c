/*
 * jnl_sb.c - creating, checking and printing the journal superblock.
 */
#include "jnl.h"
#include "jnl_disk.h"
#include "jnl_i.h"

#include <endian.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <string.h>
#include <xxhash.h>

#include "util.h"

uint32_t jnl_csum(uint64_t seed, const void *buf, size_t len)
{
	return (uint32_t)XXH3_64bits_withSeed(buf, len, seed);
}

static uint32_t sb_csum(const struct jnl_superblock *sb)
{
	return jnl_csum(0, sb, offsetof(struct jnl_superblock, s_checksum));
}

static void sb_init(struct jnl_superblock *sb, uint32_t block_size,
		    uint32_t nblocks, const uint8_t uuid[16], uint64_t seed)
{
	memset(sb, 0, sizeof(*sb));
	sb->s_header.h_magic = htole32(JNL_MAGIC);
	sb->s_header.h_blocktype = htole32(JNL_BT_SUPERBLOCK);
	sb->s_block_size = htole32(block_size);
	sb->s_maxlen = htole32(nblocks);
	sb->s_first = htole32(1);
	sb->s_sequence = htole32(1);
	sb->s_start = 0;
	memcpy(sb->s_uuid, uuid, 16);
	sb->s_csum_seed = htole64(seed);
	/* A transaction may use a quarter of the log, as in JBD. */
	sb->s_max_trans_blocks = htole32(nblocks / 4);
	sb->s_checksum = htole32(sb_csum(sb));
}

int jnl_format(struct bdev *bd, const uint64_t *map, uint32_t nblocks,
	       const uint8_t uuid[16], uint64_t csum_seed)
{
	uint32_t bs = bd->block_size;
	char *blk;
	int err;

	if (nblocks < JNL_MIN_BLOCKS) {
		mlog_err("journal of %" PRIu32 " blocks is below the minimum of %u",
			 nblocks, JNL_MIN_BLOCKS);
		return -EINVAL;
	}
	blk = bdev_alloc_buf(bs);
	if (!blk)
		return -ENOMEM;
	memset(blk, 0, bs);
	sb_init((struct jnl_superblock *)blk, bs, nblocks, uuid, csum_seed);
	err = bdev_write(bd, map[0] * bs, blk, bs);
	bdev_free_buf(blk);
	return err;
}

int jnl_sb_check(const struct jnl_superblock *sb, uint32_t nblocks,
		 uint32_t block_size, char *why, size_t whylen)
{
	uint32_t maxlen = le32toh(sb->s_maxlen);
	uint32_t first = le32toh(sb->s_first);
	uint32_t start = le32toh(sb->s_start);

	if (le32toh(sb->s_header.h_magic) != JNL_MAGIC)
		return ut_corrupt(why, whylen, "journal superblock: bad magic 0x%08" PRIx32,
			   le32toh(sb->s_header.h_magic));
	if (le32toh(sb->s_header.h_blocktype) != JNL_BT_SUPERBLOCK)
		return ut_corrupt(why, whylen, "journal superblock: block type %" PRIu32,
			   le32toh(sb->s_header.h_blocktype));
	if (le32toh(sb->s_checksum) != sb_csum(sb))
		return ut_corrupt(why, whylen, "journal superblock: checksum mismatch "
			   "(stored 0x%08" PRIx32 ", computed 0x%08" PRIx32 ")",
			   le32toh(sb->s_checksum), sb_csum(sb));
	if (le32toh(sb->s_block_size) != block_size)
		return ut_corrupt(why, whylen, "journal superblock: block size %" PRIu32
			   " differs from the filesystem's %" PRIu32,
			   le32toh(sb->s_block_size), block_size);
	if (maxlen != nblocks || maxlen < JNL_MIN_BLOCKS)
		return ut_corrupt(why, whylen, "journal superblock: length %" PRIu32
			   " blocks, the journal inode holds %" PRIu32, maxlen, nblocks);
	if (first == 0 || first >= maxlen || (start && (start < first || start >= maxlen)))
		return ut_corrupt(why, whylen, "journal superblock: first %" PRIu32
			   " / start %" PRIu32 " outside the log", first, start);
	/* A transaction must fit a quarter of the log (jnl_open): a log too
	 * short for one of a single block would leave every handle waiting
	 * for room that never comes. */
	if ((maxlen - first) / 4 < jnl_log_blocks_needed(block_size, 1, 1))
		return ut_corrupt(why, whylen, "journal superblock: first %" PRIu32
			   " leaves a log of %" PRIu32 " blocks, too short for a "
			   "transaction", first, maxlen - first);
	return 0;
}

void jnl_sb_print(const struct jnl_superblock *sb, FILE *out)
{
	fprintf(out, "journal magic: 0x%08" PRIx32 "\n", le32toh(sb->s_header.h_magic));
	fprintf(out, "journal block size: %" PRIu32 "\n", le32toh(sb->s_block_size));
	fprintf(out, "journal length: %" PRIu32 "\n", le32toh(sb->s_maxlen));
	fprintf(out, "journal first block: %" PRIu32 "\n", le32toh(sb->s_first));
	fprintf(out, "journal sequence: %" PRIu32 "\n", le32toh(sb->s_sequence));
	fprintf(out, "journal start: %" PRIu32 "\n", le32toh(sb->s_start));
	fprintf(out, "journal errno: %" PRId32 "\n", (int32_t)le32toh(sb->s_errno));
	fprintf(out, "journal max transaction: %" PRIu32 "\n",
		le32toh(sb->s_max_trans_blocks));
	fprintf(out, "journal features: compat 0x%" PRIx32 " incompat 0x%" PRIx32
		" ro_compat 0x%" PRIx32 "\n", le32toh(sb->s_feature_compat),
		le32toh(sb->s_feature_incompat), le32toh(sb->s_feature_ro_compat));
	fprintf(out, "journal checksum: 0x%08" PRIx32 "\n", le32toh(sb->s_checksum));
}

int jnl_sb_write(const struct jnl_geom *g, struct jnl_superblock *sb)
{
	struct bdev_req req[2], *ptrs[2] = { &req[0], &req[1] };
	char *blk = bdev_alloc_buf(g->bs);
	int err;

	if (!blk)
		return -ENOMEM;
	sb->s_checksum = htole32(sb_csum(sb));
	memset(blk, 0, g->bs);
	memcpy(blk, sb, sizeof(*sb));
	bdev_req_init(&req[0], BDEV_OP_WRITE, g->map[0] * g->bs, blk, g->bs);
	bdev_req_init(&req[1], BDEV_OP_FLUSH, 0, NULL, 0);
	err = bdev_submit_wait(g->bd, ptrs, 2);
	bdev_free_buf(blk);
	return err;
}

int jnl_clear_errno(struct bdev *bd, const uint64_t *map, uint32_t nblocks)
{
	struct jnl_geom g = { .bd = bd, .map = map, .nblocks = nblocks,
			      .bs = bd->block_size };
	struct jnl_superblock sb;
	char why[200];
	void *blk = bdev_alloc_buf(g.bs);
	int err = blk ? jnl_read_block(&g, 0, blk) : -ENOMEM;

	if (!err)
		memcpy(&sb, blk, sizeof(sb));
	bdev_free_buf(blk);
	if (!err && jnl_sb_check(&sb, nblocks, g.bs, why, sizeof(why))) {
		mlog_err("%s", why);
		err = -EUCLEAN;
	}
	if (err || !sb.s_errno)
		return err;
	sb.s_errno = 0;
	return jnl_sb_write(&g, &sb);
}
