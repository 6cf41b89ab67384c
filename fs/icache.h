/*
 * icache.h - inodes in memory: the cache, their writes, the orphan
 * list.
 */
#ifndef MISCFS_FS_ICACHE_H
#define MISCFS_FS_ICACHE_H

#include "mfs_i.h"

/* icache.c */
int mfs_icache_init(struct mfs_fs *fs);
void mfs_icache_destroy(struct mfs_fs *fs);
int mfs_iget(struct mfs_fs *fs, uint64_t ino, struct mfs_node **out);
/* The node of @ino if it is in memory (-ENOENT if not): never reads the
 * disk, where the inode may have been freed since. */
int mfs_iget_cached(struct mfs_fs *fs, uint64_t ino, struct mfs_node **out);
/* mfs_iget of a number from a file handle: -ESTALE when it is free. */
int mfs_iget_handle(struct mfs_fs *fs, uint64_t ino, struct mfs_node **out);
/* New inode @ino, made from @raw; in the cache, one reference. */
int mfs_inew(struct mfs_fs *fs, uint32_t ino, const struct mfs_inode *raw,
	     struct mfs_node **out);
void mfs_iput(struct mfs_node *n);
/* One more reference to a node already referenced (or held for good). */
void mfs_igrab(struct mfs_node *n);
/* FUSE's FORGET of a disk inode: @nlookup lookups fewer. */
void mfs_icache_forget(struct mfs_fs *fs, uint64_t ino, uint64_t nlookup);
/* An inode of memory (mem.c) made from @raw, of kind @ops: in no hash and
 * on no list, one reference, which the filesystem holds until
 * mfs_inode_mem_free() at unmount. */
int mfs_inode_mem(struct mfs_fs *fs, uint64_t ino, const struct mfs_inode *raw,
		  const struct mfs_iops *ops, struct mfs_node **out);
void mfs_inode_mem_free(struct mfs_node *n);
void mfs_iget_lookup(struct mfs_node *n);  /* one more lookup count */
void mfs_node_fill_stat(struct mfs_node *n, struct stat *st);
int mfs_inode_write(struct mfs_node *n, struct mfs_handle *h, bool data);
void mfs_node_opened(struct mfs_node *n, int delta);
int mfs_icache_sync(struct mfs_fs *fs);
/* Both with fs->orphan_lock held and 3 credits. */
int mfs_orphan_add(struct mfs_node *n, struct mfs_handle *h);
int mfs_orphan_del(struct mfs_node *n, struct mfs_handle *h);
#define MFS_ORPHAN_CREDITS 3u
/* mfs_orphan_del in a handle of its own, taking fs->orphan_lock. */
int mfs_orphan_remove(struct mfs_node *n);
int mfs_orphans_process(struct mfs_fs *fs);
/*
 * An inode unlinked while the kernel still knew it is freed when FUSE's
 * FORGET for it comes, which the kernel sends after the unlink's reply.
 * An allocation that meets a full filesystem takes mfs_evict_seq() before
 * it tries, and if some unlinked inode is open nowhere (so only the
 * FORGET holds it) waits with mfs_wait_forgotten(), until @until at most,
 * for an eviction after that point: false if there was nothing to wait
 * for or the time ran out.  Called with no lock held.
 */
uint64_t mfs_evict_seq(struct mfs_fs *fs);
bool mfs_wait_forgotten(struct mfs_fs *fs, uint64_t seq, const struct timespec *until);

/* istub.c: inodes only the kernel knows, as (number, lookup count);
 * under icache_lock.  put: -ENOMEM (the caller keeps its node) or
 * -EINVAL for a count a stub cannot hold. */
int mfs_stub_put(struct mfs_stubs *t, uint32_t ino, uint64_t nlookup);
/* The lookup count of @ino's stub, which goes; 0: none. */
uint64_t mfs_stub_take(struct mfs_stubs *t, uint32_t ino);
/* @nlookup fewer (the stub goes at 0); false: no stub of @ino. */
bool mfs_stub_forget(struct mfs_stubs *t, uint32_t ino, uint64_t nlookup);
size_t mfs_stub_bytes(const struct mfs_stubs *t);
void mfs_stub_free(struct mfs_stubs *t);

#endif /* MISCFS_FS_ICACHE_H */
