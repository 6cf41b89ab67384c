/*
 * pc_test.h - the page cache's calls for tests and benches: driving the
 * flusher, dropping clean pages, readahead on demand, and looking inside
 * a mapping or a region.  The code is in the page cache's library with
 * the rest; no production file (the daemon, the tools, the filesystem,
 * the journal, the format library, fsck) includes this header.
 */
#ifndef MISCFS_PC_TEST_H
#define MISCFS_PC_TEST_H

#include "pc.h"

/* ---- the flusher ---------------------------------------------------------- */

/* Change the flusher's expiry time (milliseconds; 0 writes every dirty page
 * at its next pass). */
void pc_set_dirty_expire(struct pc_cache *c, uint32_t ms);
/* Wake the flusher now. */
void pc_flusher_kick(struct pc_cache *c);
/* Wake the flusher and wait until a whole pass that began after this call
 * has finished.  Without a flusher (no_flusher), run one pass here. */
void pc_flusher_sync(struct pc_cache *c);

/* ---- mappings ------------------------------------------------------------- */

void *pc_mapping_ctx(const struct pc_mapping *m);
uint64_t pc_mapping_nrpages(const struct pc_mapping *m);
/*
 * Drop the clean pages from byte @from on that nobody uses (not locked,
 * dirty, under writeback or referenced), releasing private data through
 * releasepage.  Never loses data.  Returns the number of pages dropped.
 */
uint64_t pc_invalidate(struct pc_mapping *m, uint64_t from);
/*
 * Start reading the missing pages of [start, start + nr), not beyond page
 * @limit, in one batch through readpages; does not wait.  Pages that cannot
 * be allocated without waiting are skipped.  Returns the number of pages
 * submitted.
 */
unsigned int pc_readahead(struct pc_mapping *m, uint64_t start,
			  unsigned int nr, uint64_t limit);

/* ---- pages and regions ---------------------------------------------------- */

/* Wait until PG_fs_misc is clear (at once if it is). */
void wait_on_page_fs_misc(struct pc_page *page);
/*
 * Descriptor of block @i of the region (data points into the mapping;
 * uptodate and mappedtodisk set), or NULL past the end.  Never get, put,
 * lock or dirty it.
 */
struct pc_page *pc_region_page(struct pc_region *r, uint64_t i);

#endif /* MISCFS_PC_TEST_H */
