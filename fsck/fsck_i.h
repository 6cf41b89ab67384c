/*
 * fsck_i.h - what the passes of fsck share; not part of the API.
 *
 * The state of a check is one struct fsck_ctx.  It holds no copy of the
 * metadata: bitmaps of the blocks in use (and claimed twice), one byte of
 * state and two link counts per inode, an array of the directories and
 * one of the directory blocks.  fsck is single-threaded: no locks.
 */
#ifndef MISCFS_FSCK_I_H
#define MISCFS_FSCK_I_H

#include <inttypes.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fsck.h"
#include "fmt.h"
#include "util.h"

/* ---- per-inode state ------------------------------------------------------ */

/* The low three bits are the file type as a directory entry gives it
 * (MFS_FT_*, 0 for an inode not in use), so pass 2 compares them at once. */
#define IS_TYPE_MASK    0x07u
#define IS_ORPHAN       0x08u    /* on the orphan list */
#define IS_BAD          0x10u    /* damaged and left so (-n): its map is not
                                    trusted, its entries are kept */
#define IS_SEEN         0x20u    /* met during a walk (orphan list loops) */
#define IS_FAST_LINK    0x40u

/* ---- directories and their blocks ----------------------------------------- */

struct fsck_dir {
	uint32_t ino;
	uint32_t parent;             /* the directory whose entry names it */
	uint32_t dotdot;             /* what its ".." says */
};

/* Block numbers fit 32 bits (FORMAT.md), logical ones too. */
struct fsck_dblock {
	uint32_t ino;
	uint32_t lblk;
	uint32_t pblk;               /* 0: a hole pass 2 fills */
};

/* ---- the problems --------------------------------------------------------- */

/* Every problem of problem.c, one code each. */
enum fsck_code {
#define FSCK_PROBLEM(code, pass, flags, question, fmt) PR_##code,
#include "problems.h"
#undef FSCK_PROBLEM
	PR_COUNT
};

/* The objects a problem's message names (e2fsck's problem context). */
struct fsck_pctx {
	uint32_t ino, ino2, dir;
	uint64_t blk, blk2, num, num2;
	uint32_t group;
	const char *name;            /* an entry name: printed with escapes */
	size_t namelen;
	const char *str;             /* any other text (a reason) */
};

/* ---- the check ------------------------------------------------------------ */

struct fsck_ctx {
	struct bdev *bd;
	const struct fsck_opts *o;
	struct fsck_result *res;
	bool rw;                     /* repairs may be written */
	int64_t now;

	struct mfs_super sb;
	uint32_t sb_group;           /* the copy it came from */
	bool sb_torn;                /* the primary, only its checksum stale */
	bool sb_dirty, backups_dirty;
	bool was_valid;              /* cleanly unmounted: its counts are exact */
	struct fmt_mmp *mmp;         /* stamping while a repairing check runs */
	bool mmp_bad;                /* the MMP block is rewritten at the end */
	uint32_t bs, ngroups, ipg, bpg, fdb, ninodes;
	uint64_t nblocks;
	struct mfs_group_desc *gdt;  /* the primary table (s_gdt_blocks) */
	bool gdt_dirty;

	/* passes 1 to 5 */
	uint8_t *bused;              /* blocks in use, as found */
	uint8_t *bdup;               /* blocks claimed twice (pass 1b) */
	uint64_t ndup;
	uint8_t *istate;             /* IS_* per inode, index ino - 1 */
	uint16_t *links_disk;        /* i_links_count */
	uint16_t *links_found;       /* entries naming it */
	struct fsck_dir *dirs;       /* sorted by inode */
	size_t ndirs, dirs_cap;
	struct fsck_dblock *dblist;  /* directory blocks, by inode and lblk */
	size_t ndb, db_cap;
	uint32_t lost_found;         /* 0: none (yet) */
	uint32_t lf_taken;           /* the inode of a root entry lost+found
	                                that is no directory; 0: none */
	bool root_bad;
	bool journal_rebuild;        /* a new journal is made before pass 5 */

	/* buffers of one block each, bdev_alloc_buf */
	void *buf, *buf2, *ind[3];

	enum fsck_pass pass;
	bool stop;                   /* cancelled or preen halted: unwind */
	char msg[1024];
};

/* ---- problem.c ---- */

/*
 * Report problem @code with the objects in @p; returns true when it is to
 * be fixed.  Counts it, asks (or applies the mode's answer) and notes a
 * cancel or a preen halt in c->stop.  A fix must then be made.  With a
 * read-only check every answer is no.
 */
bool fsck_fix(struct fsck_ctx *c, enum fsck_code code, const struct fsck_pctx *p);
/* A problem that asks nothing (a note, or one fixed without question). */
void fsck_note(struct fsck_ctx *c, enum fsck_code code, const struct fsck_pctx *p);
/* A fix could not be written: it stays an uncorrected error. */
void fsck_unfixed(struct fsck_ctx *c);

/* ---- io.c ---- */

int fsck_read(struct fsck_ctx *c, uint64_t blk, void *buf);
int fsck_write(struct fsck_ctx *c, uint64_t blk, const void *buf);
/* Read @n blocks at @blks[i] into @bufs[i] in one batch. */
int fsck_read_batch(struct fsck_ctx *c, const uint64_t *blks, void **bufs,
		    unsigned int n);
/* Inode @ino as on disk, unchecked. */
int fsck_read_inode(struct fsck_ctx *c, uint32_t ino, struct mfs_inode *in);
/* Write inode @ino with a fresh checksum. */
int fsck_write_inode(struct fsck_ctx *c, uint32_t ino, struct mfs_inode *in);
/* Device block of inode @ino's slot and its offset there, from the layout. */
uint64_t fsck_inode_block(const struct fsck_ctx *c, uint32_t ino, uint32_t *off);

/*
 * Where the group layout (FORMAT.md) puts @g's bitmaps and inode table.
 * The layout is fixed, so fsck reads them there rather than where a
 * descriptor, which may be damaged, says; pass 0 makes the descriptors
 * agree.
 */
uint64_t fsck_layout_bbitmap(const struct fsck_ctx *c, uint32_t g);
static inline uint64_t fsck_layout_ibitmap(const struct fsck_ctx *c, uint32_t g)
{
	return fsck_layout_bbitmap(c, g) + 1;
}
static inline uint64_t fsck_layout_itable(const struct fsck_ctx *c, uint32_t g)
{
	return fsck_layout_bbitmap(c, g) + 2;
}
/* Block @blk is a superblock copy, descriptor copy, bitmap or inode table. */
bool fsck_is_group_meta(const struct fsck_ctx *c, uint64_t blk);
/* A block a map may point at: in the groups, not their metadata. */
bool fsck_block_ok(const struct fsck_ctx *c, uint64_t blk);

static inline bool bit_test(const uint8_t *map, uint64_t i)
{
	return map[i / 8] & (1u << (i % 8));
}

static inline void bit_set(uint8_t *map, uint64_t i)
{
	map[i / 8] |= (uint8_t)(1u << (i % 8));
}

static inline void bit_clear(uint8_t *map, uint64_t i)
{
	map[i / 8] &= (uint8_t)~(1u << (i % 8));
}

static inline unsigned istate_type(const struct fsck_ctx *c, uint32_t ino)
{
	return c->istate[ino - 1] & IS_TYPE_MASK;
}

static inline bool inode_in_use(const struct fsck_ctx *c, uint32_t ino)
{
	return ino && ino <= c->ninodes && istate_type(c, ino);
}

/* The slot holds an inode in use: a mode and no deletion time. */
bool fsck_slot_in_use(const struct mfs_inode *in);

/* ---- map.c: block maps, through the format's walker ---- */

/*
 * A walk over every pointer of @in's map that may change what it walks
 * (fmt_bmap_edit): each visitor gets the pointer as a fmt_bmap_slot,
 * with the walker's verdict on it in s->bad, and answers FMT_BMAP_*; an
 * indirect block whose pointers changed is written back resealed, the
 * inode's own pointers are changed in @in for the caller to write.
 * Stops when c->stop is set.
 */
struct fsck_map_walk {
	struct fsck_ctx *c;
	uint32_t ino;
	struct mfs_inode *in;        /* changed in place; see inode_dirty */
	/* Every non-zero pointer, data or indirect; it may change *s->ptr (to
	 * a copy of the block). */
	int (*visit)(struct fsck_map_walk *w, struct fmt_bmap_slot *s);
	/* Indirect block *s->ptr failed its checksum: FMT_BMAP_ZERO drops
	 * it, SKIP leaves it unwalked, KEEP walks it (its checksum is then
	 * rewritten with it).  NULL: SKIP. */
	int (*bad_indirect)(struct fsck_map_walk *w, struct fmt_bmap_slot *s);
	/* After the blocks under indirect block *s->ptr were walked; ZERO
	 * replaces it with a hole.  May be NULL. */
	int (*leave)(struct fsck_map_walk *w, struct fmt_bmap_slot *s);
	void *arg;
	bool inode_dirty;            /* i_block changed: the caller writes it */
};

int fsck_map_walk(struct fsck_map_walk *w);
/* Map logical block @lblk, a hole, of @in to @pblk, making the indirect
 * blocks on the way (@added counts them); the inode is the caller's to
 * write.  -EEXIST if @lblk is mapped already. */
int fsck_bmap_set(struct fsck_ctx *c, uint32_t ino, struct mfs_inode *in,
		  uint64_t lblk, uint64_t pblk, uint64_t *added);

/* ---- alloc.c: what repairs allocate ---- */

/* A free block (by the blocks found in use), marked in use, on the disk's
 * bitmap too, as the mount allocates; near @goal.  Likewise the others:
 * pass 5 finds no difference in what fsck itself changed. */
int fsck_alloc_block(struct fsck_ctx *c, uint64_t goal, uint64_t *blk);
/* Give back a block or an inode (on the disk's bitmaps too). */
int fsck_release_block(struct fsck_ctx *c, uint64_t blk);
int fsck_release_inode(struct fsck_ctx *c, uint32_t ino, bool dir);
/* A free inode number, marked in use with @type. */
int fsck_alloc_inode(struct fsck_ctx *c, unsigned type, uint32_t *ino);
/* An empty directory block of directory @ino ("." and ".." when @parent). */
void fsck_dirblock_init(struct fsck_ctx *c, void *blk, uint32_t ino,
			uint32_t parent);
/* Add entry @name -> @child of @type to directory @dir; may grow it. */
int fsck_dir_add(struct fsck_ctx *c, uint32_t dir, const char *name,
		 uint32_t child, unsigned type);
/* Remove the entry of directory @dir naming @child (not "." or ".."),
 * the one called @name unless that is NULL. */
int fsck_dir_remove(struct fsck_ctx *c, uint32_t dir, uint32_t child, const char *name);
/* Make a directory @ino (allocated) in @parent; the caller adds the entry. */
int fsck_mkdir(struct fsck_ctx *c, uint32_t ino, uint32_t parent, uint16_t perm);
/* Add @by to inode @ino's link count on the disk. */
int fsck_adjust_links(struct fsck_ctx *c, uint32_t ino, int by);
struct fsck_dir *fsck_dir_find(struct fsck_ctx *c, uint32_t ino);
int fsck_dir_insert(struct fsck_ctx *c, uint32_t ino);
int fsck_dblist_add(struct fsck_ctx *c, uint32_t ino, uint64_t lblk, uint64_t pblk);

/* ---- the passes ---- */

/* (Re)read the superblock and descriptors: at the start, after a replay. */
int fsck_load_super(struct fsck_ctx *c);
int fsck_journal(struct fsck_ctx *c);
int fsck_pass0(struct fsck_ctx *c);
/* mmp.c: claim before the first write, repair after pass 1b, release. */
int fsck_mmp_start(struct fsck_ctx *c);
int fsck_mmp_repair(struct fsck_ctx *c);
int fsck_mmp_stop(struct fsck_ctx *c);
int fsck_regions(struct fsck_ctx *c);
int fsck_orphans(struct fsck_ctx *c);
int fsck_pass1(struct fsck_ctx *c);
int fsck_pass1b(struct fsck_ctx *c);
/* pass2dx.c: an indexed directory's index against its entries.  Begin
 * with its first block in the block list (@left entries on); hand over
 * each block as pass 2 leaves it; the end checks the index (@check) and
 * drops it if it does not match (PR_DX_BAD), and frees @dx. */
struct fsck_dx;
int fsck_dx_begin(struct fsck_ctx *c, const struct fsck_dblock *run, size_t left,
		  struct fsck_dx **dx);
void fsck_dx_block(struct fsck_dx *dx, uint32_t lblk, uint8_t *blk);
int fsck_dx_end(struct fsck_dx *dx, bool check);
int fsck_pass2(struct fsck_ctx *c);
int fsck_pass3(struct fsck_ctx *c);
int fsck_pass4(struct fsck_ctx *c);
int fsck_pass5(struct fsck_ctx *c);
/* Make a new, empty journal in inode 8 (before pass 5). */
int fsck_journal_rebuild(struct fsck_ctx *c);

/* Link @ino (of entry type @type) into /lost+found as "#INO". */
int fsck_reconnect(struct fsck_ctx *c, uint32_t ino, unsigned type);

void fsck_progress(struct fsck_ctx *c, uint64_t done, uint64_t total);

#endif /* MISCFS_FSCK_I_H */
