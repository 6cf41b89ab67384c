/*
 * mfs.h - the miscfs filesystem layer's public header.
 *
 * It gives the tools (mkfs.miscfs, miscfs-debug, fsck.miscfs) and the
 * daemon the on-disk format (mfs_format.h), its checksums and geometry,
 * and the calls that create and read a filesystem.
 */
#ifndef MISCFS_MFS_H
#define MISCFS_MFS_H

#include <endian.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "bdev.h"
#include "mfs_format.h"

/* ---- checksums ----------------------------------------------------------- */

/* Low 32 bits of XXH3-64 over @buf with seed @seed + @salt. */
uint32_t mfs_csum(uint64_t seed, uint64_t salt, const void *buf, size_t len);

uint32_t mfs_sb_csum(const struct mfs_super *sb);
void mfs_sb_set_csum(struct mfs_super *sb);
uint32_t mfs_gdesc_csum(const struct mfs_super *sb, uint32_t group,
			const struct mfs_group_desc *gd);
uint32_t mfs_bitmap_csum(const struct mfs_super *sb, unsigned kind,
			 uint32_t group, const void *bitmap);
uint32_t mfs_inode_csum(const struct mfs_super *sb, uint32_t ino,
			const struct mfs_inode *inode);
/* Checksums of whole blocks whose last 4 bytes (indirect, xattr, region
 * table) or last 12 bytes (directory tail) hold the checksum. */
uint32_t mfs_block_csum(const struct mfs_super *sb, unsigned kind,
			uint64_t id, const void *block);
void mfs_block_set_csum(const struct mfs_super *sb, unsigned kind,
			uint64_t id, void *block);
bool mfs_block_csum_ok(const struct mfs_super *sb, unsigned kind,
		       uint64_t id, const void *block);

/* ---- geometry ------------------------------------------------------------ */

static inline uint32_t mfs_block_size(const struct mfs_super *sb)
{
	return 1024u << le32toh(sb->s_log_block_size);
}

/* Block pointers an indirect block holds (the last slot is a checksum). */
static inline uint32_t mfs_addr_per_block(uint32_t block_size)
{
	return block_size / 4 - 1;
}

bool mfs_group_has_super(uint32_t group);
uint64_t mfs_group_first_block(const struct mfs_super *sb, uint32_t group);
/* Blocks in @group (the last one may be short). */
uint32_t mfs_group_nblocks(const struct mfs_super *sb, uint32_t group);
/* Blocks at the start of @group taken by a superblock and descriptor copy. */
uint32_t mfs_group_super_blocks(const struct mfs_super *sb, uint32_t group);
uint32_t mfs_itable_blocks(const struct mfs_super *sb);
/* Superblock copy, descriptors, two bitmaps and the inode table. */
uint32_t mfs_group_meta_blocks(const struct mfs_super *sb, uint32_t group);
/* Device block and byte offset in it of the descriptor of @group in the
 * primary table. */
uint64_t mfs_gdesc_block(const struct mfs_super *sb, uint32_t group,
			 uint32_t *offset);
/* Device block and byte offset of inode @ino, given its group's table. */
uint64_t mfs_inode_block(const struct mfs_super *sb, uint64_t itable,
			 uint32_t ino, uint32_t *offset);

/*
 * Split logical block @lblk of a block map into the indexes of each level:
 * returns the depth (1 direct, 2 single, 3 double, 4 triple indirect) and
 * fills @offsets, or 0 if @lblk is beyond the largest file.
 */
int mfs_block_to_path(uint32_t addr_per_block, uint64_t lblk,
		      uint32_t offsets[4]);
/* Largest file size in bytes for a block size. */
uint64_t mfs_max_file_size(uint32_t block_size);
/* Largest file in blocks: the logical blocks a block map can reach. */
uint64_t mfs_max_file_blocks(uint32_t block_size);

/* A symbolic link whose target is in i_block, which is then no block map. */
bool mfs_inode_is_fast_symlink(const struct mfs_inode *in);
/*
 * An i_size beyond the largest file the block map can reach is damage:
 * -EUCLEAN naming the inode and the field in @why.
 */
int mfs_inode_check_size(const struct mfs_super *sb, uint32_t ino,
			 const struct mfs_inode *in, char *why, size_t len);

/* ---- the block-map walk -------------------------------------------------- */

/*
 * One walk over the block map of inode @ino, for every reader of block
 * maps (the tools through raw reads, the daemon through its cache).
 * It calls @data for each mapped block of the logical range asked for, in
 * order, and skips a hole of any size in one step, so its cost is bounded
 * by the indirect blocks and pointers on disk, never by i_size.  An i_size
 * beyond the largest file, an indirect block whose checksum fails and a
 * pointer outside the groups are -EUCLEAN with the reason in @why.
 */
struct mfs_bmap_walk {
	const struct mfs_super *sb;
	uint32_t ino;
	const struct mfs_inode *in;
	/* Read block @blk into @buf (block size bytes, bdev_alloc_buf). */
	int (*read_block)(void *read_ctx, uint64_t blk, void *buf);
	void *read_ctx;
	/* Indirect block @blk of level @depth (1 single .. 3 triple) passed its
	 * checks; NULL if not wanted.  Non-zero ends the walk. */
	int (*indirect)(void *ctx, uint64_t blk, int depth);
	/* Logical block @lblk is at @pblk.  Non-zero ends the walk and is
	 * returned: a positive value stops it without an error. */
	int (*data)(void *ctx, uint64_t lblk, uint64_t pblk);
	void *ctx;
	char *why;
	size_t whylen;
};

/* Walk logical blocks [@first, @end) (clamped to the largest file). */
int mfs_bmap_walk(const struct mfs_bmap_walk *w, uint64_t first, uint64_t end);

/* ---- superblock ---------------------------------------------------------- */

/*
 * Check a superblock as read from disk: magic, checksum, and that its
 * geometry is self-consistent and fits @device_bytes (0: unknown).
 * Returns 0 or -EUCLEAN with the reason in @why.
 */
int mfs_sb_check(const struct mfs_super *sb, uint64_t device_bytes,
		 char *why, size_t whylen);

/*
 * Read the primary superblock of @bd; when it is damaged, find the first
 * good backup (in groups 1, 3, 5, 7, 9, 25, ... for each block size) and
 * say so in the log.  @copy_group gets the group the copy came from
 * (0 for the primary).  @bd may have any block size up to 1024.
 */
int mfs_sb_load(struct bdev *bd, struct mfs_super *sb, uint32_t *copy_group);

/* ---- mkfs ---------------------------------------------------------------- */

#define MFS_MAX_REGIONS_ARG 64

struct mfs_region_spec {
	char name[MFS_REGION_NAME_LEN];
	uint64_t bytes;
};

struct mfs_mkfs_opts {
	uint32_t block_size;         /* 1024, 2048 or 4096; 0: 4096 */
	uint32_t inodes;             /* 0: from bytes_per_inode */
	uint32_t bytes_per_inode;    /* 0: 16384 (4096 below 512 MiB) */
	uint64_t journal_bytes;      /* 0: default by size */
	char label[MFS_LABEL_LEN + 1];
	uint8_t uuid[16];
	bool uuid_set;               /* else random */
	unsigned int nregions;
	struct mfs_region_spec regions[MFS_MAX_REGIONS_ARG];
	bool zeroed;                 /* the device is known to read zero */
	int64_t now;                 /* creation time; 0: time(NULL) */
	uint64_t csum_seed;          /* 0: random */
};

/* Smallest device, in bytes, on which mkfs can build a filesystem with
 * these options (regions included). */
uint64_t mfs_mkfs_min_bytes(const struct mfs_mkfs_opts *opts);

/*
 * Build a filesystem over the whole of @bd (whose block size must equal
 * opts->block_size).  Returns 0, or -errno after logging one line that
 * names the problem (-ENOSPC: too small, -EINVAL: bad option).
 */
int mfs_mkfs(struct bdev *bd, const struct mfs_mkfs_opts *opts);

/* ---- raw access (tools) -------------------------------------------------- */

/*
 * Read-only access to an unmounted image without the page cache, for
 * miscfs-debug and fsck.  Every structure is checked as it is read; a bad
 * one is reported with -EUCLEAN and a message in raw->why naming it.
 */
struct mfs_raw {
	struct bdev *bd;
	struct mfs_super sb;
	uint32_t sb_group;           /* group the superblock copy came from */
	uint32_t bs;
	struct mfs_group_desc *gdt;  /* all descriptors, unchecked */
	char why[256];               /* what the last -EUCLEAN was about */
};

int mfs_raw_open(struct bdev *bd, struct mfs_raw *raw);
void mfs_raw_close(struct mfs_raw *raw);
/* Descriptor of @group, checksum verified. */
int mfs_raw_gdesc(struct mfs_raw *raw, uint32_t group,
		  const struct mfs_group_desc **gd);
/* Inode @ino, checksum verified (a never-used, all-zero slot is fine). */
int mfs_raw_inode(struct mfs_raw *raw, uint32_t ino, struct mfs_inode *in);
/* Device block of logical block @lblk of @in (0 for a hole), indirect
 * block checksums verified: mfs_bmap_walk() over one block. */
int mfs_raw_bmap(struct mfs_raw *raw, uint32_t ino, const struct mfs_inode *in,
		 uint64_t lblk, uint64_t *pblk);
/* Read block @blk into @buf (raw->bs bytes, from bdev_alloc_buf). */
int mfs_raw_read(struct mfs_raw *raw, uint64_t blk, void *buf);
/* Set up @w to walk @in's block map with raw reads, reasons in raw->why;
 * the caller fills in data, indirect and ctx. */
void mfs_raw_bmap_walk_init(struct mfs_raw *raw, uint32_t ino,
			    const struct mfs_inode *in, struct mfs_bmap_walk *w);

/*
 * Check a directory block of directory @ino: checksum tail, rec_len
 * alignment and bounds, name_len, inode range.  Returns 0 or -EUCLEAN with
 * the offset and problem in @why.
 */
int mfs_dirblock_check(const struct mfs_super *sb, uint32_t ino,
		       const void *block, char *why, size_t whylen);

/* ---- printing (miscfs-debug) --------------------------------------------- */

void mfs_sb_print(const struct mfs_super *sb, FILE *out);
void mfs_gdesc_print(uint32_t group, const struct mfs_group_desc *gd, FILE *out);
void mfs_inode_print(uint32_t ino, const struct mfs_inode *inode, FILE *out);
const char *mfs_ft_name(unsigned file_type);

#endif /* MISCFS_MFS_H */
