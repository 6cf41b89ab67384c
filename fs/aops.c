/*
 * aops.c - the page cache's operations on a file's or directory's pages:
 * which block a page reads from and writes to (the block map, under
 * node->map_lock), and, for a file whose data is journalled, the hooks
 * of jdata.c.  Two tables: one for ordered and writeback data (and
 * directories and symlinks), one for journalled data, chosen when the
 * mapping is set up or the file's data mode switches (mfs_jdata_setup),
 * so that no operation asks which mode its file is in.
 */
#include "mfs_i.h"
#include "blockmap.h"
#include "jdata.h"

#include <inttypes.h>

bool mfs_page_past_eof(struct mfs_node *n, uint64_t index)
{
	uint64_t pages;

	pthread_mutex_lock(&n->lock);
	pages = UT_DIV_ROUND_UP(le64toh(n->raw.i_size), n->fs->bs);
	pthread_mutex_unlock(&n->lock);
	return index >= pages;
}

/*
 * One batch of pages to read or write back: the run of blocks the last
 * lookup found (fmt_bmap_find_run), so that the pages of one indirect
 * block cost one walk, not one each.  Every page of the batch is locked
 * from before its first lookup, and a page's block changes only under
 * its lock (a write allocates it with the page locked; truncate and
 * punch wait for the lock to drop the page), so the run stays true for
 * the batch's pages.
 */
struct batch_map {
	struct mfs_node *n;
	uint64_t end;                /* past the batch's last page */
	uint64_t first;              /* the run's first page */
	uint64_t block;              /* its block, 0: a run of holes */
	uint32_t len;                /* 0: no run yet */
};

#define RUN_MAX 1024

/* A run never reaches past the batch: a lone random read looks at its
 * own pointer only, not at the rest of its indirect block. */
static struct batch_map batch_of(struct mfs_node *n, struct pc_page **pages,
				 unsigned int count)
{
	struct batch_map b = { .n = n };

	for (unsigned int i = 0; i < count; i++)
		b.end = UT_MAX(b.end, pc_page_index(pages[i]) + 1);
	return b;
}

static int lookup(struct batch_map *b, uint64_t index, uint64_t *block)
{
	uint32_t max = (uint32_t)UT_MIN((uint64_t)RUN_MAX, b->end - index);
	int err;

	if (index < b->first || index - b->first >= b->len) {
		err = mfs_bmap_lookup_run(b->n, index, max, &b->block, &b->len);
		if (err) {
			b->len = 0;
			return err;
		}
		b->first = index;
	}
	*block = b->block ? b->block + (index - b->first) : 0;
	return 0;
}

/*
 * A read past i_size finds zeros.  Writeback goes by the block map alone:
 * a write that extends the file maps and dirties its pages before it sets
 * the new i_size, and memory pressure may write them back in between;
 * taking them for holes would call them clean and let reclaim drop the
 * only copy of the data.
 */
static int map_page(void *ctx, struct pc_mapping *m, uint64_t index, bool write,
		    uint64_t *block)
{
	struct batch_map *b = ctx;
	struct mfs_node *n = b->n;
	int err;

	(void)m;
	if (!write && mfs_page_past_eof(n, index))
		return PC_BLOCK_HOLE;
	err = lookup(b, index, block);
	if (err)
		return err;
	if (!*block && write && !mfs_page_past_eof(n, index))
		mlog_warn("inode %" PRIu64 ": dirty page %" PRIu64 " has no block",
			  n->ino, index);
	return *block ? 0 : PC_BLOCK_HOLE;
}

/* ---- ordered and writeback data, directories, symlinks ------------------ */

static int data_readpages(void *ctx, struct pc_mapping *m, struct pc_page **pages,
			  unsigned int n, const struct pc_rdc *rdc)
{
	struct mfs_node *node = ctx;
	struct batch_map b = batch_of(node, pages, n);

	return pc_block_readpages(node->fs->bd, map_page, &b, m, pages, n, rdc);
}

static int data_readpage(void *ctx, struct pc_page *page)
{
	return data_readpages(ctx, pc_page_mapping(page), &page, 1, NULL);
}

static int data_writepages(void *ctx, struct pc_mapping *m, struct pc_page **pages,
			   unsigned int n, const struct pc_wbc *wbc)
{
	struct mfs_node *node = ctx;
	struct batch_map b = batch_of(node, pages, n);

	return pc_block_writepages(node->fs->bd, map_page, &b, m, pages, n, wbc);
}

/* Its pages never carry private data: no invalidatepage, releasepage. */
static const struct pc_mapping_ops data_ops = {
	.readpage = data_readpage,
	.readpages = data_readpages,
	.writepages = data_writepages,
};

/* ---- journalled data (jdata.c) ------------------------------------------- */

/* Runs of the batch go to the device; a page whose newest bytes are still
 * only in the journal is filled from there.  The batch array is the
 * caller's, which puts every page after the call. */
static int jdata_readpages(void *ctx, struct pc_mapping *m, struct pc_page **pages,
			   unsigned int n, const struct pc_rdc *rdc)
{
	struct mfs_node *node = ctx;
	unsigned int from = 0;
	int err = 0, e;

	if (!node->fs->j)
		return data_readpages(ctx, m, pages, n, rdc);
	for (unsigned int i = 0; i < n; i++) {
		if (!mfs_jdata_read_page(node, pages[i]))
			continue;
		e = i > from ? data_readpages(ctx, m, pages + from, i - from, rdc) : 0;
		err = err ? err : e;
		from = i + 1;
	}
	e = n > from ? data_readpages(ctx, m, pages + from, n - from, rdc) : 0;
	return err ? err : e;
}

static int jdata_readpage(void *ctx, struct pc_page *page)
{
	return jdata_readpages(ctx, pc_page_mapping(page), &page, 1, NULL);
}

static int jdata_writepages(void *ctx, struct pc_mapping *m, struct pc_page **pages,
			    unsigned int n, const struct pc_wbc *wbc)
{
	(void)m;
	return mfs_jdata_writepages(ctx, pages, n, wbc);
}

static int jdata_set_page_dirty(void *ctx, struct pc_page *page)
{
	return mfs_jdata_set_page_dirty(ctx, page);
}

/* Only pages awaiting journalling carry private data. */
static void jdata_invalidatepage(void *ctx, struct pc_page *page, uint32_t offset)
{
	mfs_jdata_invalidatepage(ctx, page, offset);
}

static bool jdata_releasepage(void *ctx, struct pc_page *page)
{
	mfs_jdata_invalidatepage(ctx, page, 0);
	return true;
}

static const struct pc_mapping_ops jdata_ops = {
	.readpage = jdata_readpage,
	.readpages = jdata_readpages,
	.writepages = jdata_writepages,
	.set_page_dirty = jdata_set_page_dirty,
	.invalidatepage = jdata_invalidatepage,
	.releasepage = jdata_releasepage,
};

/* ---- the mapping --------------------------------------------------------- */

int mfs_map_create(struct mfs_node *n)
{
	int err = pc_mapping_create(n->fs->cache, &data_ops, n, &n->map);

	return err ? err : mfs_jdata_setup(n);
}

int mfs_map_set_journalled(struct mfs_node *n, bool journalled)
{
	int err = pc_mapping_set_ops(n->map, journalled ? &jdata_ops : &data_ops);

	if (!err)
		err = pc_mapping_set_flags(n->map, journalled ?
					   PC_MAPPING_WB_NEEDS_TX : 0);
	return err;
}
