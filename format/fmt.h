/*
 * fmt.h - the on-disk format library: checksums, geometry, every check of
 * an on-disk structure, the one walk over a block map, reads of an
 * unmounted image, mkfs and printing.
 *
 * mkfs.miscfs, miscfs-debug, fsck.miscfs and the fuzzers link this
 * library (and the journal's, for its replay), never the mounted
 * filesystem; the mounted filesystem (fs/) judges what it reads by the
 * same checks.  The structures themselves are in mfs_format.h
 * (docs/FORMAT.md).
 */
#ifndef MISCFS_FMT_H
#define MISCFS_FMT_H

#include <endian.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "bdev.h"
#include "mfs_format.h"
/* ---- checksums ----------------------------------------------------------- */

/* Low 32 bits of XXH3-64 over @buf with seed @seed + @salt. */
uint32_t fmt_csum(uint64_t seed, uint64_t salt, const void *buf, size_t len);

uint32_t fmt_sb_csum(const struct mfs_super *sb);
void fmt_sb_set_csum(struct mfs_super *sb);
uint32_t fmt_gdesc_csum(const struct mfs_super *sb, uint32_t group,
			const struct mfs_group_desc *gd);
uint32_t fmt_bitmap_csum(const struct mfs_super *sb, unsigned kind,
			 uint32_t group, const void *bitmap);
uint32_t fmt_inode_csum(const struct mfs_super *sb, uint32_t ino,
			const struct mfs_inode *inode);
/* Checksums of whole blocks whose last 4 bytes (indirect, xattr, region
 * table) or last 12 bytes (directory tail) hold the checksum. */
uint32_t fmt_block_csum(const struct mfs_super *sb, unsigned kind,
			uint64_t id, const void *block);
void fmt_block_set_csum(const struct mfs_super *sb, unsigned kind,
			uint64_t id, void *block);
bool fmt_block_csum_ok(const struct mfs_super *sb, unsigned kind,
		       uint64_t id, const void *block);

/* ---- geometry ------------------------------------------------------------ */

static inline uint32_t fmt_block_size(const struct mfs_super *sb)
{
	return 1024u << le32toh(sb->s_log_block_size);
}

/* Block pointers an indirect block holds (the last slot is a checksum). */
static inline uint32_t fmt_addr_per_block(uint32_t block_size)
{
	return block_size / 4 - 1;
}

bool fmt_group_has_super(uint32_t group);
uint64_t fmt_group_first_block(const struct mfs_super *sb, uint32_t group);
/* Blocks in @group (the last one may be short). */
uint32_t fmt_group_nblocks(const struct mfs_super *sb, uint32_t group);
/* Blocks at the start of @group taken by a superblock and descriptor copy. */
uint32_t fmt_group_super_blocks(const struct mfs_super *sb, uint32_t group);
uint32_t fmt_itable_blocks(const struct mfs_super *sb);
/* Superblock copy, descriptors, two bitmaps and the inode table. */
uint32_t fmt_group_meta_blocks(const struct mfs_super *sb, uint32_t group);
/* Whether block @blk of the groups is one of those of its group's start:
 * no file maps it, and it is never free. */
bool fmt_block_in_group_meta(const struct mfs_super *sb, uint64_t blk);
/* Device block and byte offset in it of the descriptor of @group in the
 * primary table. */
uint64_t fmt_gdesc_block(const struct mfs_super *sb, uint32_t group,
			 uint32_t *offset);
/* Device block and byte offset of inode @ino, given its group's table. */
uint64_t fmt_inode_block(const struct mfs_super *sb, uint64_t itable,
			 uint32_t ino, uint32_t *offset);

/*
 * Split logical block @lblk of a block map into the indexes of each level:
 * returns the depth (1 direct, 2 single, 3 double, 4 triple indirect) and
 * fills @offsets, or 0 if @lblk is beyond the largest file.
 */
int fmt_block_to_path(uint32_t addr_per_block, uint64_t lblk,
		      uint32_t offsets[4]);
/* Largest file size in bytes for a block size. */
uint64_t fmt_max_file_size(uint32_t block_size);
/* Largest file in blocks: the logical blocks a block map can reach. */
uint64_t fmt_max_file_blocks(uint32_t block_size);

/* An all-zero slot: an inode never used, which needs no checksum. */
bool fmt_inode_never_used(const struct mfs_inode *in);
/* The directory entry's file type (MFS_FT_*) of a mode; 0 for none. */
uint8_t fmt_mode_to_ft(uint16_t mode);

/* A symbolic link whose target is in i_block, which is then no block map. */
bool fmt_inode_is_fast_symlink(const struct mfs_inode *in);
/*
 * An i_size beyond the largest file the block map can reach is damage:
 * -EUCLEAN naming the inode and the field in @why.
 */
int fmt_inode_check_size(const struct mfs_super *sb, uint32_t ino,
			 const struct mfs_inode *in, char *why, size_t len);

/*
 * What every reader of an inode demands of it beyond its checksum: a known
 * file type, a size a block map can reach, a directory of whole blocks, a
 * symbolic link of 1 to block size - 1 bytes.  The mount refuses an inode
 * that fails it; fsck repairs or clears it.  0 or -EUCLEAN with @why.
 */
int fmt_inode_check(const struct mfs_super *sb, uint32_t ino,
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
struct fmt_bmap_walk {
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
int fmt_bmap_walk(const struct fmt_bmap_walk *w, uint64_t first, uint64_t end);
/* Device blocks of logical blocks [0, @n) into @map, for a file that must
 * have no hole (the journal): a hole or a short map is -EUCLEAN with
 * @w->why.  @w's data and ctx are not used. */
int fmt_bmap_map_all(const struct fmt_bmap_walk *w, uint64_t *map, uint64_t n);

/* ---- superblock ---------------------------------------------------------- */

/*
 * Check a superblock as read from disk: magic, checksum, and that its
 * geometry is self-consistent and fits @device_bytes (0: unknown).
 * Returns 0 or -EUCLEAN with the reason in @why.
 */
int fmt_sb_check(const struct mfs_super *sb, uint64_t device_bytes,
		 char *why, size_t whylen);

/*
 * Read the primary superblock of @bd; when it is damaged, find the first
 * good backup (in groups 1, 3, 5, 7, 9, 25, ... for each block size) and
 * say so in the log.  @copy_group gets the group the copy came from
 * (0 for the primary).  @bd may have any block size up to 1024.
 */
int fmt_sb_load(struct bdev *bd, struct mfs_super *sb, uint32_t *copy_group);
/*
 * As fmt_sb_load, and when no copy is intact but the primary fails only
 * its checksum with its fields whole (fmt_sb_fields_whole: a torn write;
 * a filesystem of one group has no backup), that primary, its checksum
 * made good, with *@torn set.
 */
int fmt_sb_load_torn(struct bdev *bd, struct mfs_super *sb, uint32_t *copy_group,
		     bool *torn);
/*
 * Whether every field of @sb comes from one copy: its checksum matches,
 * or only the second sector, holding nothing but reserved zeros and the
 * checksum, is stale.  Every field lies in the first 512 bytes, so a
 * write torn at a sector boundary leaves the fields of the old or of the
 * new copy, whole.
 */
bool fmt_sb_fields_whole(const struct mfs_super *sb);

/* ---- mkfs ---------------------------------------------------------------- */

#define FMT_MAX_REGIONS_ARG 64

struct fmt_region_spec {
	char name[MFS_REGION_NAME_LEN];
	uint64_t bytes;
};

/* What fmt_mkfs_opts.reserve is asked to back on the host. */
enum fmt_reserve {
	FMT_RESERVE_JOURNAL,         /* a run of the journal's blocks */
	FMT_RESERVE_REGIONS,         /* the reserved regions */
};

struct fmt_mkfs_opts {
	uint32_t block_size;         /* 1024, 2048 or 4096; 0: 4096 */
	uint32_t inodes;             /* 0: from bytes_per_inode */
	uint32_t bytes_per_inode;    /* 0: 16384 (4096 below 512 MiB) */
	uint64_t journal_bytes;      /* 0: default by size */
	char label[MFS_LABEL_LEN + 1];
	uint8_t uuid[16];
	bool uuid_set;               /* else random */
	unsigned int nregions;
	struct fmt_region_spec regions[FMT_MAX_REGIONS_ARG];
	bool zeroed;                 /* the device is known to read zero */
	int64_t now;                 /* creation time; 0: time(NULL) */
	uint64_t csum_seed;          /* 0: random */
	uint32_t default_mount_opts; /* s_default_mount_opts (MFS_DEFM_*) */
	uint16_t errors;             /* s_errors; 0: MFS_ERRORS_CONTINUE */
	/*
	 * Unless NULL, called before the superblock is written with each run
	 * of bytes [off, off + len) of the device that the journal's blocks
	 * occupy (none of it written yet) and with the region area (which
	 * reads zero), so that the caller can back them on the host
	 * (mkfs.miscfs allocates them in an image file): writes there then
	 * never meet a full host.  An error fails mkfs, leaving no
	 * filesystem; the hook logs why, mkfs nothing more.
	 */
	int (*reserve)(void *arg, enum fmt_reserve what, uint64_t off, uint64_t len);
	void *reserve_arg;
};

/* Smallest device, in bytes, on which mkfs can build a filesystem with
 * these options (regions included). */
uint64_t fmt_mkfs_min_bytes(const struct fmt_mkfs_opts *opts);

/*
 * Build a filesystem over the whole of @bd (whose block size must equal
 * opts->block_size).  Returns 0, or -errno after logging one line that
 * names the problem (-ENOSPC: too small, -EINVAL: bad option).
 */
int fmt_mkfs(struct bdev *bd, const struct fmt_mkfs_opts *opts);

/* ---- raw access (tools) -------------------------------------------------- */

/*
 * Read-only access to an unmounted image without the page cache, for
 * miscfs-debug and fsck.  Every structure is checked as it is read; a bad
 * one is reported with -EUCLEAN and a message in raw->why naming it.
 */
struct fmt_raw {
	struct bdev *bd;
	struct mfs_super sb;
	uint32_t sb_group;           /* group the superblock copy came from */
	uint32_t bs;
	struct mfs_group_desc *gdt;  /* all descriptors, unchecked */
	char why[256];               /* what the last -EUCLEAN was about */
};

int fmt_raw_open(struct bdev *bd, struct fmt_raw *raw);
void fmt_raw_close(struct fmt_raw *raw);
/* Descriptor of @group, checksum verified. */
int fmt_raw_gdesc(struct fmt_raw *raw, uint32_t group,
		  const struct mfs_group_desc **gd);
/* Inode @ino, checksum verified (a never-used, all-zero slot is fine). */
int fmt_raw_inode(struct fmt_raw *raw, uint32_t ino, struct mfs_inode *in);
/* Device block of logical block @lblk of @in (0 for a hole), indirect
 * block checksums verified: fmt_bmap_walk() over one block. */
int fmt_raw_bmap(struct fmt_raw *raw, uint32_t ino, const struct mfs_inode *in,
		 uint64_t lblk, uint64_t *pblk);
/* Read block @blk into @buf (raw->bs bytes, from bdev_alloc_buf). */
int fmt_raw_read(struct fmt_raw *raw, uint64_t blk, void *buf);
/* Set up @w to walk @in's block map with raw reads, reasons in raw->why;
 * the caller fills in data, indirect and ctx. */
void fmt_raw_bmap_walk_init(struct fmt_raw *raw, uint32_t ino,
			    const struct mfs_inode *in, struct fmt_bmap_walk *w);

/*
 * Check a directory block of directory @ino: checksum tail, rec_len
 * alignment and bounds, name_len, inode range.  Returns 0 or -EUCLEAN with
 * the offset and problem in @why.
 */
int fmt_dirblock_check(const struct mfs_super *sb, uint32_t ino,
		       const void *block, char *why, size_t whylen);

/*
 * The region table (FORMAT.md, "Reserved regions"), as the mount and fsck
 * both judge it: the table block's header and checksum (0 or -EUCLEAN with
 * the reason in @why), and why entry @i of the table's entries @tbl cannot
 * be used -- a bad name or range, or a name or blocks of an earlier entry
 * -- or NULL when it can.
 */
int fmt_region_table_check(const struct mfs_super *sb, const void *blk,
			   char *why, size_t whylen);
const char *fmt_region_entry_problem(const struct mfs_super *sb,
				     const struct mfs_region_entry *tbl, uint32_t i);

/* ---- extended attributes ------------------------------------------------- */

#define FMT_XATTR_HDR 16u            /* a block's header */
#define FMT_XATTR_ENTRY_HDR 4u       /* an entry's, before its name */

/* Bytes an entry with a name and value of these lengths takes (4-aligned). */
uint32_t fmt_xattr_entry_len(uint32_t name_len, uint32_t value_size);
/* The value size of the entry at @entry. */
uint16_t fmt_xattr_value_size(const uint8_t *entry);
/* Bytes a block holds for entries: after the header, before the checksum. */
uint32_t fmt_xattr_block_room(uint32_t block_size);
bool fmt_xattr_is_acl(unsigned index);
/*
 * The bytes the entries of an area of @size bytes take: they end at an
 * entry whose index is 0 or at the end of the area.  -EUCLEAN with the
 * reason in @why for an entry that leaves the area or is not one.
 */
int fmt_xattr_area_used(const uint8_t *p, uint32_t size, uint32_t *used,
			char *why, size_t whylen);
/* Check xattr block @blk as read: checksum, header and entries; 0 or
 * -EUCLEAN with the reason in @why. */
int fmt_xattr_block_check(const struct mfs_super *sb, uint64_t blk,
			  const void *block, char *why, size_t whylen);

/* Check the entries of the in-inode xattr area of @in, as the mount reads
 * them; 0 or -EUCLEAN with the reason in @why. */
int fmt_xattr_inode_check(uint32_t ino, const struct mfs_inode *in, char *why,
			  size_t whylen);

/* ---- printing (miscfs-debug) --------------------------------------------- */

void fmt_sb_print(const struct mfs_super *sb, FILE *out);
void fmt_gdesc_print(uint32_t group, const struct mfs_group_desc *gd, FILE *out);
void fmt_inode_print(uint32_t ino, const struct mfs_inode *inode, FILE *out);
const char *fmt_ft_name(unsigned file_type);

#endif /* MISCFS_FMT_H */
