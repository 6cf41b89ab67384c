/*
 * balloc.h - allocation of blocks and inodes, and the reservations an
 * operation takes before its handle starts.
 */
#ifndef MISCFS_FS_BALLOC_H
#define MISCFS_FS_BALLOC_H

#include "mfs_i.h"

/* balloc.c */
/* Before the first handle: *@r holds @n blocks, or -ENOSPC (*@r empty).
 * The handles started with @r (mfs_jstart_resv) allocate from it. */
int mfs_reserve_blocks(struct mfs_fs *fs, const struct mfs_cred *cr, uint64_t n,
		       struct mfs_resv *r);
/* After the last handle: the blocks of @r not allocated go back. */
void mfs_reserve_end(struct mfs_fs *fs, struct mfs_resv *r);
int mfs_reserve_inode(struct mfs_fs *fs);
void mfs_unreserve_inode(struct mfs_fs *fs);
int mfs_alloc_block(struct mfs_fs *fs, struct mfs_handle *h, uint64_t goal,
		    uint64_t *blk);
int mfs_free_blocks(struct mfs_fs *fs, struct mfs_handle *h, uint64_t blk,
		    uint32_t n, bool meta);
int mfs_alloc_inode(struct mfs_fs *fs, struct mfs_handle *h, uint32_t dir,
		    bool is_dir, uint32_t *ino);
int mfs_free_inode(struct mfs_fs *fs, struct mfs_handle *h, uint32_t ino,
		   bool is_dir);
int mfs_bitmap_check(struct mfs_fs *fs, uint32_t g, bool inodes,
		     const void *bitmap);
void mfs_pend_prune(struct mfs_fs *fs);
int mfs_ino_in_use(struct mfs_fs *fs, uint32_t ino);

#endif /* MISCFS_FS_BALLOC_H */
