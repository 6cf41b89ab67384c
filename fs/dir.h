/*
 * dir.h - directories on the disk and the index of a big one.
 */
#ifndef MISCFS_FS_DIR_H
#define MISCFS_FS_DIR_H

#include "mfs_i.h"

/* dir.c */
struct mfs_dirloc {
	uint64_t lblk;                   /* directory block */
	uint32_t off, prev_off;          /* record and the one before it */
	uint32_t ino;
	uint8_t type;
};
int mfs_dir_page(struct mfs_node *dir, uint64_t lblk, struct pc_page **pg);
int mfs_dir_find(struct mfs_node *dir, const char *name, size_t len,
		 struct mfs_dirloc *loc);
/* The blocks (with their indirects) an add of @name would take now, for
 * its reservation; the caller holds the rwsem for writing until the add. */
int mfs_dir_add_need(struct mfs_node *dir, const char *name, size_t len,
		     uint64_t *blocks);
int mfs_dir_add(struct mfs_node *dir, struct mfs_handle *h, const char *name,
		size_t len, uint32_t ino, uint8_t type);
int mfs_dir_remove(struct mfs_node *dir, struct mfs_handle *h,
		   const struct mfs_dirloc *loc);
int mfs_dir_set(struct mfs_node *dir, struct mfs_handle *h,
		const struct mfs_dirloc *loc, uint32_t ino, uint8_t type);
int mfs_dir_init(struct mfs_node *dir, struct mfs_handle *h, uint32_t parent);
int mfs_dir_is_empty(struct mfs_node *dir);
/* Entry @name of @dir names inode @ino: -EUCLEAN, logged, when that is the
 * root and the entry no ".." (nor the root's own "."): the root has no
 * other name, and a kernel refuses one with EIO and no word of why. */
int mfs_dir_check_target(struct mfs_node *dir, const char *name, size_t len,
			 uint32_t ino);
int mfs_dir_iterate(struct mfs_node *dir, uint64_t pos, bool plus,
		    mfs_filldir_t fill, void *ctx);
/* For dx.c: the directory's size in blocks; journal access to block
 * @lblk; the checksum of a changed, locked page; the end of a change;
 * a new block @lblk at the end, empty, locked and under access. */
uint64_t mfs_dir_blocks(struct mfs_node *dir);
int mfs_dir_access(struct mfs_node *dir, struct mfs_handle *h, uint64_t lblk,
		   struct pc_page **pg, uint64_t *pblk);
void mfs_dir_seal(struct mfs_node *dir, struct pc_page *pg);
int mfs_dir_done(struct mfs_node *dir, struct mfs_handle *h, uint64_t pblk,
		 struct pc_page *pg);
int mfs_dir_new_block(struct mfs_node *dir, struct mfs_handle *h, uint64_t lblk,
		      struct pc_page **pg, uint64_t *pblk);

/* The first error of two steps that both had to run. */
static inline int mfs_dir_err(int first, int second)
{
	return first ? first : second;
}

/* dx.c: the index on the disk of a directory with MFS_INDEX_FL (FORMAT.md,
 * "Directory index"), under the directory's rwsem. */
bool mfs_dx_on(struct mfs_node *dir);
/* The blocks that hold a name of @hash: the first @max into @lblks;
 * returns how many there are. */
int mfs_dx_lookup(struct mfs_node *dir, uint64_t hash, uint64_t *lblks, int max);
/* The record of an entry of @hash in block @lblk, added or removed;
 * -ENOSPC (logged) when the index can hold no more. */
int mfs_dx_add(struct mfs_node *dir, struct mfs_handle *h, uint64_t hash, uint64_t lblk);
int mfs_dx_remove(struct mfs_node *dir, struct mfs_handle *h, uint64_t hash,
		  uint64_t lblk);
/* The blocks (with their indirects) an add of a record of @need bytes
 * and @hash would take now. */
int mfs_dx_add_need(struct mfs_node *dir, uint64_t hash, uint32_t need, uint64_t *blocks);
/* 1 and a block the room map says fits a record of @need bytes, or 0. */
int mfs_dx_find_room(struct mfs_node *dir, uint32_t need, uint64_t *lblk);
int mfs_dx_set_room(struct mfs_node *dir, struct mfs_handle *h, uint64_t lblk,
		    uint32_t room);
/* The place of a new block at the end, with the room map grown to it. */
int mfs_dx_grow(struct mfs_node *dir, struct mfs_handle *h, uint64_t *lblk);
/* Give a directory of one block an empty index (root and room map) and
 * its flag; the caller adds the records of block 0 and its room. */
int mfs_dx_init(struct mfs_node *dir, struct mfs_handle *h);
void mfs_dirhash_free(struct mfs_node *dir);

/* dirhash.c: the index of a big directory, with dir->dh_lock held */
struct mfs_dh_place {
	uint64_t lblk;
	uint32_t off;
};
uint64_t mfs_dh_hash(struct mfs_fs *fs, const char *name, size_t len);
int mfs_dh_create(struct mfs_node *dir, struct mfs_dirhash **out);
void mfs_dh_destroy(struct mfs_dirhash *dh);
/* An index used within the last MFS_DH_AGE uses of big directories is
 * not dropped to make room for another (two busy directories and room for
 * one: one keeps its index rather than both rebuilding in turns), and a
 * build that failed is not tried again for as long. */
#define MFS_DH_AGE 256u
/* @dh was used at dh_clock @now. */
void mfs_dh_touch(struct mfs_dirhash *dh, uint64_t now);
/* -ENOMEM when the budget cannot hold it, -EFBIG for a block beyond
 * what a place can say: the caller drops the index. */
int mfs_dh_add(struct mfs_dirhash *dh, uint64_t hash, uint64_t lblk, uint32_t off);
int mfs_dh_del(struct mfs_dirhash *dh, uint64_t hash, uint64_t lblk, uint32_t off);
/* Places whose name may have @hash: the first @max into @out; returns
 * how many there are. */
int mfs_dh_lookup(const struct mfs_dirhash *dh, uint64_t hash,
		  struct mfs_dh_place *out, int max);
uint32_t mfs_dh_count(const struct mfs_dirhash *dh);
/* Block @lblk (at most one past the last) has room for a record of
 * @room bytes at most. */
int mfs_dh_set_room(struct mfs_dirhash *dh, uint64_t lblk, uint32_t room);
/* A block with room for @need bytes, or -1. */
int64_t mfs_dh_find_room(const struct mfs_dirhash *dh, uint32_t need);
/* Journal credits of a directory insert: a new block with its indirects;
 * with an index on the disk, also a room map block and the splits of a
 * full path (a level-0 block, a node, the root's two new children). */
#define MFS_DIR_ADD_CREDITS 16u
#define MFS_DX_ADD_CREDITS 44u

static inline uint32_t mfs_dir_add_credits(struct mfs_fs *fs)
{
	return fmt_has_dir_index(&fs->sb) ? MFS_DX_ADD_CREDITS : MFS_DIR_ADD_CREDITS;
}

#endif /* MISCFS_FS_DIR_H */
