/*
 * blockmap.h - the block maps of inodes in memory, and the page cache's
 * operations on a file's pages.
 */
#ifndef MISCFS_FS_BLOCKMAP_H
#define MISCFS_FS_BLOCKMAP_H

#include "mfs_i.h"

/* blockmap.c: block maps; aops.c: the page cache's operations on them */
int mfs_map_create(struct mfs_node *n);
/* Give @n's mapping the operations of journalled data or of the others
 * (pc_mapping_set_ops' rule: the mapping clean, @n's rwsem held for
 * writing or @n new); mfs_jdata_setup decides which. */
int mfs_map_set_journalled(struct mfs_node *n, bool journalled);
int mfs_bmap_lookup(struct mfs_node *n, uint64_t lblk, uint64_t *pblk);
/* The same, and how many blocks from @lblk on (1 to @max) map likewise
 * (fmt_bmap_find_run). */
int mfs_bmap_lookup_run(struct mfs_node *n, uint64_t lblk, uint32_t max,
			uint64_t *pblk, uint32_t *run);
/* Page @index lies wholly past i_size: a read finds a hole there. */
bool mfs_page_past_eof(struct mfs_node *n, uint64_t index);
/* The first block of [@lblk, @end) that is mapped (@data) or a hole
 * (!@data), or @end; a hole costs one step whatever its size. */
int mfs_bmap_seek(struct mfs_node *n, uint64_t lblk, uint64_t end, bool data,
		  uint64_t *out);
/* Map @lblk, allocating it (and indirect blocks) if it is a hole; *@isnew
 * says so.  The caller holds the rwsem for writing, a handle, and has
 * reserved the blocks. */
int mfs_bmap_alloc(struct mfs_node *n, struct mfs_handle *h, uint64_t lblk,
		   uint64_t *pblk, bool *isnew);
/* Worst-case blocks (data plus indirect) to map @n blocks. */
uint64_t mfs_bmap_worst(struct mfs_fs *fs, uint64_t n);
/* Worst-case blocks to map the @n blocks from @first on, when those
 * before @first are mapped (a directory grows at its end). */
uint64_t mfs_bmap_append_worst(struct mfs_fs *fs, uint64_t first, uint64_t n);
/*
 * Map every hole of [@first, @end) to a new block that is zeroed on the
 * disk before anyone can read it through the map; the caller holds the
 * rwsem for writing and a handle, and has reserved the blocks.  @zeros
 * holds @zblocks blocks of zeros.
 */
int mfs_bmap_prealloc(struct mfs_node *n, struct mfs_handle *h, uint64_t first,
		      uint64_t end, const void *zeros, uint64_t zblocks);
/* Free every block from logical block @from on, in as many handles as it
 * takes. */
int mfs_bmap_truncate(struct mfs_node *n, uint64_t from);
/* Free the blocks of [@from, @end) likewise (a punched hole): indirect
 * blocks whose whole span is freed go too, others stay, even empty. */
int mfs_bmap_free_range(struct mfs_node *n, uint64_t from, uint64_t end);
uint64_t mfs_truncate_credits(struct mfs_fs *fs);

#endif /* MISCFS_FS_BLOCKMAP_H */
