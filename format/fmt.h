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

/* ---- the block-map walker ------------------------------------------------ */

/*
 * The one walker over an inode's block map, for every user of one: the
 * tools and fsck through raw reads and writes, the mounted filesystem
 * through its page cache and journal.  It knows the format -- the path of
 * a logical block, the checks of every pointer (inside the filesystem,
 * not on its group's metadata) and of every indirect block (its
 * checksum), resealing an indirect block it changed -- and nothing of
 * where blocks live: the caller hands it a table of block-access
 * callbacks.  Its modes:
 *
 *   fmt_bmap_find   the block of one logical block (a lookup)
 *   fmt_bmap_read   every mapped block of a range; a hole of any size is
 *                   one step, so its cost is bounded by what is on disk
 *   fmt_bmap_alloc  fill a hole, making the indirect blocks on its path
 *   fmt_bmap_free   free a range, and every indirect block whose whole
 *                   span goes, until the caller says stop
 *   fmt_bmap_edit   a visitor sees every pointer and may change it
 *
 * Damage (a bad pointer, an indirect block whose checksum fails, an
 * i_size beyond the largest file, a map meeting more blocks than the
 * filesystem holds) is -EUCLEAN, worded in @why; a caller that words or
 * handles it otherwise has ops->damage.  An indirect block whose
 * pointers the walker changed is resealed and marked changed before the
 * walk returns, also when a later step failed, so that what the caller
 * holds and what it writes say the same.
 */
#define FMT_BMAP_LEVELS 3            /* indirect levels: single .. triple */

/* An indirect block as the walker holds it, or the inode's i_block (blk 0,
 * never got, put or resealed). */
struct fmt_bmap_ind {
	uint64_t blk;
	int depth;                   /* levels under it: 1 (single) .. 3 */
	uint32_t *ptrs;              /* its pointers, little-endian: set by get */
	void *priv;                  /* the caller's: its page, say */
};

enum fmt_bmap_get {
	FMT_BMAP_READ,               /* read it; the walker checks its checksum */
	FMT_BMAP_WRITE,              /* one held from a READ is about to change */
	FMT_BMAP_NEW,                /* just allocated: all zero, to be filled */
};

/* Damage, as the walker words it and in its parts. */
struct fmt_bmap_bad {
	const char *why;             /* the whole sentence */
	uint64_t lblk;               /* the block looked up, or the first
				      * logical block under the pointer */
	uint64_t ptr;                /* a pointer naming no block a map holds, */
	const char *where;           /* and why ("outside the filesystem"); NULL:
				      * the damage is of another kind */
};

struct fmt_bmap_ops {
	/* Set ind->ptrs (and ind->priv) for indirect block ind->blk.  Each READ
	 * and NEW is matched by one put. */
	int (*get)(void *ctx, struct fmt_bmap_ind *ind, enum fmt_bmap_get how);
	void (*put)(void *ctx, struct fmt_bmap_ind *ind);    /* NULL: nothing */
	/* The walker changes ind->ptrs (i_block too) only between these, and
	 * calls nothing else there; NULL: no lock is needed. */
	void (*lock)(void *ctx, struct fmt_bmap_ind *ind);
	void (*unlock)(void *ctx, struct fmt_bmap_ind *ind);
	/* ind changed, and was resealed: journal it, write it.  Called for
	 * i_block after each change of it. */
	int (*changed)(void *ctx, struct fmt_bmap_ind *ind);
	/* A new block for a data block (@depth 0) or an indirect block. */
	int (*alloc)(void *ctx, int depth, uint64_t *blk);
	/* Free a data block (@depth 0) or an indirect block. */
	int (*free)(void *ctx, uint64_t blk, int depth);
	/* Asked before each pointer of a range walk (and each of i_block's
	 * top-level ones): true ends the walk there for good, a truncation
	 * low on credits, a check cancelled.  NULL: never. */
	bool (*stop)(void *ctx);
	/* Damage met: the error to end the walk with, or 0 to take an
	 * indirect block whose checksum fails as it is (a bad pointer is
	 * never followed).  NULL: -EUCLEAN. */
	int (*damage)(void *ctx, const struct fmt_bmap_bad *bad);
};

/* A walk: whose map, and how its blocks are reached. */
struct fmt_bmap {
	const struct mfs_super *sb;
	uint32_t ino;
	struct mfs_inode *in;        /* i_block, the map's root */
	const struct fmt_bmap_ops *ops;
	void *ctx;
	char *why;                   /* damage worded here (may be NULL) */
	size_t whylen;
};

/* The block of logical block @lblk in *@pblk, 0 for a hole; -EFBIG beyond
 * the largest file.  ops: get (READ), put. */
int fmt_bmap_find(const struct fmt_bmap *bm, uint64_t lblk, uint64_t *pblk);
/* The same, and in *@run (1 to @max) how many logical blocks from @lblk
 * on map likewise: to the next block each, or holes, all named by the
 * one indirect block (or i_block) that names @lblk's.  One walk, one
 * check of each indirect block on the way, serves the run. */
int fmt_bmap_find_run(const struct fmt_bmap *bm, uint64_t lblk, uint32_t max,
		      uint64_t *pblk, uint32_t *run);

/*
 * @data for each mapped block of [@first, @end) in order, and @indirect
 * (may be NULL) for each indirect block of @depth (1 single .. 3 triple)
 * there that passed its checks.  Non-zero from either ends the walk and
 * is returned (a positive value is no error).  An i_size beyond the
 * largest file is damage, a fast symlink maps nothing, and the walk meets
 * at most as many blocks as the filesystem has.  ops: get (READ), put.
 */
int fmt_bmap_read(const struct fmt_bmap *bm, uint64_t first, uint64_t end,
		  int (*data)(void *arg, uint64_t lblk, uint64_t pblk),
		  int (*indirect)(void *arg, uint64_t blk, int depth), void *arg);

/* Map @lblk, allocating it and the indirect blocks on its path if it is
 * a hole (*@isnew says so); -EFBIG beyond the largest file.  ops: get,
 * put, lock, unlock, changed, alloc. */
int fmt_bmap_alloc(const struct fmt_bmap *bm, uint64_t lblk, uint64_t *pblk,
		   bool *isnew);

/*
 * Free the blocks of [@from, @end), with the indirect blocks whose whole
 * span is in it (one the range covers in part stays, even empty), until
 * ops->stop says so: *@stopped then, and a later call goes on from there.
 * Every indirect block got for writing is resealed and marked changed.
 * ops: get, put, lock, unlock, changed, free, stop.
 */
int fmt_bmap_free(const struct fmt_bmap *bm, uint64_t from, uint64_t end,
		  bool *stopped);

/* What an edit's visitor does with a pointer. */
enum {
	FMT_BMAP_KEEP = 0,           /* keep it (and walk under an indirect one) */
	FMT_BMAP_SKIP,               /* keep it, do not walk under it */
	FMT_BMAP_ZERO,               /* replace it with a hole */
	FMT_BMAP_STOP,               /* end the walk (no error) */
};

/* A pointer as a visitor sees it. */
struct fmt_bmap_slot {
	uint64_t lblk, span;         /* maps logical blocks [lblk, lblk + span) */
	int depth;                   /* 0: a data block, 1 .. 3: indirect */
	uint32_t *ptr;               /* little-endian; the visitor may change it */
	const char *bad;             /* why *ptr names no block a map may hold
				      * (as fmt_bmap_bad.where), or NULL */
};

struct fmt_bmap_visit {
	/* Every non-zero pointer, before what it maps; FMT_BMAP_* or -errno.
	 * A bad pointer kept is never walked under. */
	int (*visit)(void *arg, struct fmt_bmap_slot *s);
	/* The indirect block *s->ptr failed its checksum: ZERO drops it, SKIP
	 * leaves it unwalked, KEEP walks it (and reseals it).  NULL: SKIP. */
	int (*bad_indirect)(void *arg, struct fmt_bmap_slot *s);
	/* The indirect block *s->ptr passed its checks, before its pointers
	 * are walked; may be NULL. */
	int (*enter)(void *arg, struct fmt_bmap_slot *s);
	/* After the blocks under the indirect block *s->ptr; ZERO replaces it
	 * with a hole.  May be NULL. */
	int (*leave)(void *arg, struct fmt_bmap_slot *s);
	void *arg;
};

/*
 * Every pointer of the map, in order, through @v, which may change any of
 * them: a changed indirect block is resealed and marked changed, a change
 * of i_block is made in bm->in.  No limit on the blocks met: the visitor
 * judges what it meets twice.  ops: get (READ, WRITE), put, changed,
 * stop, and lock and unlock if the blocks need them.
 */
int fmt_bmap_edit(const struct fmt_bmap *bm, const struct fmt_bmap_visit *v);

/*
 * fmt_bmap_read for readers without a cache (the tools, fsck, the mount
 * before recovery): @read_block reads an indirect block into a buffer
 * of the walk's, and damage is worded in @why.
 */
struct fmt_bmap_walk {
	const struct mfs_super *sb;
	uint32_t ino;
	const struct mfs_inode *in;
	/* Read block @blk into @buf (block size bytes, bdev_alloc_buf). */
	int (*read_block)(void *read_ctx, uint64_t blk, void *buf);
	void *read_ctx;
	/* As fmt_bmap_read's @indirect and @data, with @ctx. */
	int (*indirect)(void *ctx, uint64_t blk, int depth);
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
	bool mmp;                    /* multi-mount protection (INCOMPAT_MMP) */
	bool dir_index;              /* RO_COMPAT_DIR_INDEX */
	uint16_t mmp_interval;       /* its seconds; 0: the default */
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

/* ---- multi-mount protection (mmp.c) ------------------------------------- */

static inline bool fmt_has_mmp(const struct mfs_super *sb)
{
	return le32toh(sb->s_feature_incompat) & MFS_FEATURE_INCOMPAT_MMP;
}
/* The seconds between stamps: s_mmp_interval, or the default for 0. */
uint16_t fmt_mmp_interval(const struct mfs_super *sb);
/* The MMP block's fields; -EUCLEAN (bad magic or checksum) or the read's
 * error, with the reason in @why. */
int fmt_mmp_read(struct bdev *bd, const struct mfs_super *sb, struct mfs_mmp *m,
		 char *why, size_t len);
/* Fields for a stamp @seq by this process (node name, pid, now). */
void fmt_mmp_fill(struct mfs_mmp *m, uint32_t seq, const char *program,
		  uint16_t interval);
/* Write the block with its checksum, then flush the device. */
int fmt_mmp_write(struct bdev *bd, const struct mfs_super *sb, const struct mfs_mmp *m);
/* Write it CLEAN (no one has the filesystem), by @program. */
int fmt_mmp_release(struct bdev *bd, const struct mfs_super *sb, const char *program);
/* "PROGRAM (pid N) on node NODE, stamped S s ago" */
void fmt_mmp_describe(const struct mfs_mmp *m, char *buf, size_t len);

/*
 * Claim the filesystem of @sb (INCOMPAT_MMP) for writing: waits 2 *
 * interval + 1 seconds once, twice when the block was not released, and
 * logs what it waits for.  Then a thread stamps the block every interval
 * until fmt_mmp_stop().  -EBUSY (logged, naming the owner): another node
 * has it; -EUCLEAN: the block is damaged (fsck.miscfs rewrites it).
 * If another node takes the filesystem later, the device is fenced
 * (bdev_fence: every later write fails) and @on_lost is called from the
 * stamping thread.
 */
struct fmt_mmp;
int fmt_mmp_start(struct bdev *bd, const struct mfs_super *sb, const char *program,
		  void (*on_lost)(void *arg), void *arg, struct fmt_mmp **out);
/* Stop stamping and write CLEAN (unless lost); NULL is a no-op. */
int fmt_mmp_stop(struct fmt_mmp *mp);

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

/* ---- directory index (dxindex.c; FORMAT.md, "Directory index") ---------- */

static inline bool fmt_has_dir_index(const struct mfs_super *sb)
{
	return le32toh(sb->s_feature_ro_compat) & MFS_FEATURE_RO_COMPAT_DIR_INDEX;
}
/* The hash of a name, as the index sorts it. */
uint64_t fmt_dx_hash(const struct mfs_super *sb, const char *name, size_t len);
/* Records a block of @kind holds (room map: bytes, one per block). */
uint32_t fmt_dx_limit(const struct mfs_super *sb, unsigned kind);
/* The parts of an index block. */
struct mfs_dx_head *fmt_dx_head(void *blk);
struct mfs_dx_root_info *fmt_dx_root(void *blk);
struct mfs_dx_rec *fmt_dx_recs(void *blk);
uint8_t *fmt_dx_fmap(void *blk);
/* An empty index block of @kind at place @lblk; the caller seals it. */
void fmt_dx_init(const struct mfs_super *sb, void *blk, unsigned kind,
		 unsigned level, uint32_t lblk);
/* Check the head of index block @lblk, read as a @kind (what a walk of
 * the index meets at each step, in constant time): 0 or -EUCLEAN with
 * the reason in @why.  The block's checksum is fmt_dirblock_check's. */
int fmt_dx_check(const struct mfs_super *sb, uint32_t ino, const void *blk,
		 uint32_t lblk, unsigned kind, char *why, size_t whylen);
uint64_t fmt_dx_rec_hash(const struct mfs_dx_rec *r);
void fmt_dx_rec_set(struct mfs_dx_rec *r, uint64_t hash, uint32_t lblk);
/* The first of @n sorted records not below (@hash, @lblk). */
uint32_t fmt_dx_lower(const struct mfs_dx_rec *r, uint32_t n, uint64_t hash,
		      uint32_t lblk);
/* The record of a node (level > 0) whose child holds @hash. */
uint32_t fmt_dx_child(const struct mfs_dx_rec *r, uint32_t n, uint64_t hash);
/* Insert at @at of @n records (room for one more), or delete @at. */
void fmt_dx_insert(struct mfs_dx_rec *r, uint32_t n, uint32_t at, uint64_t hash,
		   uint32_t lblk);
void fmt_dx_delete(struct mfs_dx_rec *r, uint32_t n, uint32_t at);
/* Where @n records split in two: the first of the upper half, nearest
 * the middle with a hash unlike the one before it (records of one hash
 * stay in one block); 0 if all have one hash. */
uint32_t fmt_dx_split_at(const struct mfs_dx_rec *r, uint32_t n);
/* 0 if @n records are in order (a node's hashes strictly rising), else
 * the first out of place. */
int fmt_dx_sorted(const struct mfs_dx_rec *r, uint32_t n, bool leaf);
/* A room map byte for @room bytes, and whether a block with that byte
 * surely fits a record of @need bytes. */
uint8_t fmt_dx_room_code(const struct mfs_super *sb, uint32_t room);
bool fmt_dx_room_fits(const struct mfs_super *sb, uint8_t code, uint32_t need);

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
void fmt_mmp_print(const struct mfs_super *sb, const struct mfs_mmp *m, FILE *out);
void fmt_gdesc_print(uint32_t group, const struct mfs_group_desc *gd, FILE *out);
void fmt_inode_print(uint32_t ino, const struct mfs_inode *inode, FILE *out);
const char *fmt_ft_name(unsigned file_type);

#endif /* MISCFS_FMT_H */
