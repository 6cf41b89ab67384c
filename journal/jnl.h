/*
 * jnl.h - the miscfs journal: JBD-style transactions over a bdev.
 *
 * The journal lives in blocks the filesystem hands over as a block map
 * (journal logical block i is device block map[i]); it knows nothing of the
 * filesystem's format beyond that, and nothing of FUSE.
 *
 * On-disk structures are little-endian and described in docs/FORMAT.md
 * ("The journal").
 */
#ifndef MISCFS_JNL_H
#define MISCFS_JNL_H

#include <stdint.h>
#include <stdio.h>

#include "bdev.h"

#define JNL_MAGIC               0x4C4E4A4Du   /* bytes "MJNL" */
#define JNL_MIN_BLOCKS          1024u

/* h_blocktype of every journal block that carries a header. */
#define JNL_BT_DESCRIPTOR       1u
#define JNL_BT_COMMIT           2u
#define JNL_BT_REVOKE           3u
#define JNL_BT_SUPERBLOCK       4u

/* The 12-byte header every metadata block of the journal starts with. */
struct jnl_header {
	uint32_t h_magic;
	uint32_t h_blocktype;
	uint32_t h_sequence;            /* transaction ID */
};

/* Journal superblock: the first 1024 bytes of journal block 0. */
struct jnl_superblock {
	struct jnl_header s_header;     /*   0 */
	uint32_t s_block_size;          /*  12 */
	uint32_t s_maxlen;              /*  16: blocks, superblock included */
	uint32_t s_first;               /*  20: first log block (1) */
	uint32_t s_sequence;            /*  24: first transaction to replay */
	uint32_t s_start;               /*  28: its block; 0: log is empty */
	int32_t  s_errno;               /*  32: sticky error, 0 or -errno */
	uint32_t s_feature_compat;      /*  36 */
	uint32_t s_feature_incompat;    /*  40 */
	uint32_t s_feature_ro_compat;   /*  44 */
	uint8_t  s_uuid[16];            /*  48: the filesystem's */
	uint64_t s_csum_seed;           /*  64: seed of block checksums */
	uint32_t s_max_trans_blocks;    /*  72: largest transaction */
	uint8_t  s_reserved[944];       /*  76 */
	uint32_t s_checksum;            /* 1020: seed 0 over bytes 0..1019 */
};
_Static_assert(sizeof(struct jnl_superblock) == 1024, "journal superblock");

/*
 * Write an empty journal over @nblocks blocks of @bd: a superblock in
 * map[0] saying the log is empty.  The log blocks are left as they are:
 * recovery accepts only blocks with the journal magic, the expected
 * sequence and a checksum seeded with @csum_seed, which stale data cannot
 * forge.  @bd's block size is the journal's.
 */
int jnl_format(struct bdev *bd, const uint64_t *map, uint32_t nblocks,
	       const uint8_t uuid[16], uint64_t csum_seed);

/*
 * Check a journal superblock read from disk: magic, type, checksum and
 * bounds against @nblocks and @block_size.  Returns 0 or -EUCLEAN, with
 * what is wrong in @why (if not NULL).
 */
int jnl_sb_check(const struct jnl_superblock *sb, uint32_t nblocks,
		 uint32_t block_size, char *why, size_t whylen);

/* Print a journal superblock in the stable "key: value" form of
 * miscfs-debug. */
void jnl_sb_print(const struct jnl_superblock *sb, FILE *out);

/* The journal's checksum: low 32 bits of XXH3-64 with @seed. */
uint32_t jnl_csum(uint64_t seed, const void *buf, size_t len);

#endif /* MISCFS_JNL_H */
