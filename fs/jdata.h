/*
 * jdata.h - journalled file data (data=journal, chattr +j).
 */
#ifndef MISCFS_FS_JDATA_H
#define MISCFS_FS_JDATA_H

#include "mfs_i.h"

/* jdata.c: journalled file data (data=journal, chattr +j) */
int mfs_jdata_start(struct mfs_fs *fs);
/* Journal what is pending, then stop the thread (unmount). */
void mfs_jdata_stop(struct mfs_fs *fs);
/* The queue goes, once the page cache's threads (which may still queue
 * a file as they write back) are gone. */
void mfs_jdata_free(struct mfs_fs *fs);
/* Should the data of @n (its mode and flags as they are) be journalled? */
bool mfs_jdata_wanted(const struct mfs_node *n);
/* Set up @n's mapping for its data mode: its table of operations and
 * flags (new node; or a switch, rwsem held for writing and every page
 * clean). */
int mfs_jdata_setup(struct mfs_node *n);
/*
 * Before @n's FS_JOURNAL_DATA_FL changes (rwsem held for writing), as
 * ext3 did: the file's data written and committed, and the log emptied,
 * so that no journalled copy of one of its blocks can land home after a
 * write of the other mode went there directly.  The caller then changes
 * the flag and calls mfs_jdata_setup().
 */
int mfs_jdata_prepare_switch(struct mfs_node *n);
/* Journal every page of @n awaiting it; the node's tids then name the
 * transaction to wait for.  No lock held. */
int mfs_jdata_flush(struct mfs_node *n);
/* After a write to @n (its rwsem may be held, no handle): gather @n at
 * once if pages awaiting journalling fill a quarter of the cache. */
int mfs_jdata_balance(struct mfs_node *n);
/* The same for every file with pages awaiting journalling (sync). */
int mfs_jdata_flush_all(struct mfs_fs *fs);
/* The journalled-data table's operations (aops.c calls them). */
int mfs_jdata_set_page_dirty(struct mfs_node *n, struct pc_page *pg);
void mfs_jdata_invalidatepage(struct mfs_node *n, struct pc_page *pg,
			      uint32_t offset);
int mfs_jdata_writepages(struct mfs_node *n, struct pc_page **pages,
			 unsigned int nr, const struct pc_wbc *wbc);
/* A page being read (locked) whose block the journal has newer than its
 * home is filled from the journal and ended: true.  False: read it. */
bool mfs_jdata_read_page(struct mfs_node *n, struct pc_page *pg);

#endif /* MISCFS_FS_JDATA_H */
