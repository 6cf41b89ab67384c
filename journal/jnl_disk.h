/*
 * jnl_disk.h - the journal's log blocks: layout, checksums, walking the log.
 *
 * Private to journal/.  docs/FORMAT.md ("Transactions in the log") is the
 * specification.
 */
#ifndef MISCFS_JNL_DISK_H
#define MISCFS_JNL_DISK_H

#include <stdbool.h>
#include <stdint.h>

#include "jnl.h"

#define JNL_TAG_ESCAPED   0x1u
#define JNL_TAG_LAST      0x2u

/* Tags follow the 12-byte header, so they are only 4-byte aligned. */
struct jnl_tag {
	uint64_t t_blocknr;
	uint32_t t_flags;
	uint32_t t_checksum;
} __attribute__((packed, aligned(4)));
_Static_assert(sizeof(struct jnl_tag) == 16, "journal tag");

struct jnl_revoke_header {
	struct jnl_header r_header;
	uint32_t r_count;           /* bytes used, header included */
	/* uint64_t block numbers follow at offset 16 */
};
#define JNL_REVOKE_FIRST  16u

struct jnl_commit_block {
	struct jnl_header c_header;
	uint64_t c_sec;              /* 12: unaligned in the block, packed below */
	uint32_t c_nsec;
	uint32_t c_blocks;
	uint32_t c_data_checksum;
} __attribute__((packed));
_Static_assert(sizeof(struct jnl_commit_block) == 32, "commit block");

/* Where a journal's log is and how its blocks are checksummed. */
struct jnl_geom {
	struct bdev *bd;
	const uint64_t *map;         /* journal block -> device block */
	uint32_t nblocks;            /* s_maxlen */
	uint32_t first;              /* s_first */
	uint32_t bs;
	uint64_t seed;               /* s_csum_seed */
};

/* Tags a descriptor block holds; revoke records a revoke block holds. */
static inline uint32_t jnl_tags_per_block(uint32_t bs)
{
	return (bs - sizeof(struct jnl_header) - 4) / sizeof(struct jnl_tag);
}
static inline uint32_t jnl_revokes_per_block(uint32_t bs)
{
	return (bs - JNL_REVOKE_FIRST - 4) / 8;
}

/* The log position after @pos, wrapping from the end to s_first. */
static inline uint32_t jnl_next(const struct jnl_geom *g, uint32_t pos)
{
	return pos + 1 >= g->nblocks ? g->first : pos + 1;
}

/* Checksum of a data block's content for transaction @tid. */
uint32_t jnl_data_csum(const struct jnl_geom *g, uint32_t tid, const void *blk);
/* The seal stored in a header block's last 4 bytes. */
uint32_t jnl_seal_of(const struct jnl_geom *g, const void *blk);
/* Seal a descriptor, revoke or commit block: checksum in its last 4 bytes. */
void jnl_seal(const struct jnl_geom *g, uint32_t tid, void *blk);
/* Does a header block carry @type and @tid, and a good seal? */
bool jnl_header_ok(const struct jnl_geom *g, const void *blk, uint32_t type,
		   uint32_t tid);
void jnl_header_init(void *blk, uint32_t bs, uint32_t type, uint32_t tid);

/*
 * The commit block's c_data_checksum: XXH3-64 (seed s_csum_seed + tid) over
 * the 4-byte little-endian checksums of the transaction's blocks in log
 * order: a descriptor's or revoke block's seal, a data block's tag checksum.
 */
struct jnl_txsum {
	void *state;                 /* XXH3_state_t */
};
int jnl_txsum_init(struct jnl_txsum *s, const struct jnl_geom *g, uint32_t tid);
void jnl_txsum_add(struct jnl_txsum *s, uint32_t csum);
uint32_t jnl_txsum_final(struct jnl_txsum *s);   /* and frees it */

/* Read / write journal block @pos. */
int jnl_read_block(const struct jnl_geom *g, uint32_t pos, void *buf);
int jnl_write_block(const struct jnl_geom *g, uint32_t pos, const void *buf);

/* Write a journal superblock (checksum recomputed) and flush. */
int jnl_sb_write(const struct jnl_geom *g, struct jnl_superblock *sb);

#endif /* MISCFS_JNL_DISK_H */
