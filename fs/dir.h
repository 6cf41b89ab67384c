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
/* Blocks a directory insert may need (a new block and its indirects). */
#define MFS_DIR_ADD_BLOCKS 4u
#define MFS_DIR_ADD_CREDITS 16u

#endif /* MISCFS_FS_DIR_H */
