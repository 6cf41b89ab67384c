/*
 * readahead.c - reading ahead of sequential readers.
 *
 * Each reader stream keeps a window (struct pc_ra_state): a miss that
 * continues the stream (or starts at page 0) reads a first window a few
 * times larger than the request; the page where the request ends is marked
 * PG_readahead, and reaching a marked page reads the next window, twice as
 * large (four times while small) up to ra_max_pages, marked on its first
 * page.  So a sequential reader finds its pages already read, or in
 * flight, one window ahead.  A miss that does not continue the stream
 * reads only the request, and since the reader waits for it at once, in
 * its own thread: the batch's struct pc_rdc says so (wait_now).  Every
 * window is created as locked pages and handed to the owner's readpages
 * in one call, with its pc_rdc, which submits it as one batch; completion
 * marks each page uptodate or failed and unlocks it.
 */
#include "pc_i.h"

#include "util.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

void pc_ra_init(struct pc_ra_state *ra)
{
	memset(ra, 0, sizeof(*ra));
	ra->prev = UINT64_MAX;
}

static void read_batch(struct pc_mapping *m, struct pc_page **pages,
		       unsigned int n, const struct pc_rdc *rdc)
{
	const struct pc_mapping_ops *ops = pc_ops(m);
	unsigned int held = pc_held_pages() - n;   /* the pages go to the read */

	for (unsigned int i = 0; i < n; i++)
		ClearPageError(pages[i]);
	if (ops->readpages) {
		ops->readpages(m->ctx, m, pages, n, rdc);
	} else {
		for (unsigned int i = 0; i < n; i++) {
			if (ops->readpage)
				ops->readpage(m->ctx, pages[i]);
			else
				pc_end_read(pages[i], -EIO);
		}
	}
	pc_held_pages_set(held);
}

/* Create and read the missing pages of [start, start + nr) below @limit;
 * the page at @mark (if created) gets PG_readahead. */
static unsigned int ra_submit(struct pc_mapping *m, uint64_t start,
			      unsigned int nr, uint64_t limit, uint64_t mark,
			      const struct pc_rdc *rdc)
{
	uint64_t end = limit - start < nr ? limit : start + nr;
	struct pc_page **pages;
	unsigned int n = 0;

	if (start >= limit || !nr)
		return 0;
	pages = malloc((size_t)(end - start) * sizeof(*pages));
	if (!pages)
		return 0;
	for (uint64_t idx = start; idx < end; idx++) {
		struct pc_page *p = pc_index_get(m, idx);
		int rc;

		if (p) {
			pc_put_page(p);
			continue;
		}
		rc = pc_add_new_page(m, idx, PC_ALLOC_NOWAIT, &p);
		if (rc < 0)
			break;          /* no room without waiting: stop here */
		if (rc == 1) {
			pc_put_page(p);
			continue;
		}
		if (idx == mark)
			SetPageReadahead(p);
		pages[n++] = p;
	}
	if (n) {
		read_batch(m, pages, n, rdc);
		atomic_fetch_add(&m->cache->ra_pages, n);
	}
	for (unsigned int i = 0; i < n; i++)
		pc_put_page(pages[i]);
	free(pages);
	return n;
}

unsigned int pc_readahead(struct pc_mapping *m, uint64_t start,
			  unsigned int nr, uint64_t limit)
{
	struct pc_rdc rdc = { .wait_now = false };

	nr = UT_MIN(nr, m->cache->max_pages / 4);
	return ra_submit(m, start, nr, limit, UINT64_MAX, &rdc);
}

static uint32_t pow2_up(uint32_t x)
{
	uint32_t p = 1;

	while (p < x && p < (1u << 31))
		p <<= 1;
	return p;
}

static uint32_t first_size(uint32_t nr, uint32_t max)
{
	uint32_t s = pow2_up(nr);

	if (s <= max / 32)
		s *= 4;
	else if (s <= max / 4)
		s *= 2;
	else
		s = max;
	return UT_MAX(UT_MIN(s, max), 1u);
}

static uint32_t next_size(uint32_t cur, uint32_t max)
{
	uint64_t s = cur < max / 16 ? 4ull * cur : 2ull * cur;

	return (uint32_t)UT_MAX(UT_MIN(s, (uint64_t)max), 1ull);
}

static void ra_window(struct pc_mapping *m, struct pc_ra_state *ra,
		      uint64_t limit, const struct pc_rdc *rdc)
{
	uint64_t mark = ra->async_size ?
			ra->start + ra->size - ra->async_size : UINT64_MAX;

	ra_submit(m, ra->start, ra->size, limit, mark, rdc);
}

/* A miss: a new window if the stream goes on, else just the request. */
static void ra_miss(struct pc_mapping *m, struct pc_ra_state *ra,
		    uint64_t index, uint32_t nr, uint64_t limit)
{
	uint32_t max = m->cache->ra_max;
	bool seq = ra->prev == UINT64_MAX ? index == 0 :
		   index == ra->prev || index == ra->prev + 1;
	/* Outside a stream only the request is read: the caller waits for
	 * all of it at once. */
	struct pc_rdc rdc = { .wait_now = !seq };

	ra->start = index;
	if (seq) {
		ra->size = first_size(nr, max);
		ra->async_size = ra->size - UT_MIN(nr, ra->size - 1);
	} else {
		ra->size = UT_MIN(nr, max);
		ra->async_size = 0;
	}
	ra_window(m, ra, limit, &rdc);
}

/* The reader reached a marked page: read the next window now. */
static void ra_marker(struct pc_mapping *m, struct pc_ra_state *ra,
		      uint64_t index, uint64_t limit)
{
	uint32_t max = m->cache->ra_max;
	struct pc_rdc rdc = { .wait_now = false };

	if (!ra->size || index != ra->start + ra->size - ra->async_size) {
		ra->start = index;      /* someone else's marker: adopt it */
		ra->size = 1;
	}
	ra->start += ra->size;
	ra->size = next_size(ra->size, max);
	ra->async_size = ra->size;
	ra_window(m, ra, limit, &rdc);
}

/* Wait for a page readahead (or someone) started; retry a failed read
 * once, synchronously. */
static int ra_wait(struct pc_mapping *m, uint64_t index, struct pc_page *p,
		   struct pc_page **out)
{
	bool created;

	if (!PageUptodate(p)) {
		pc_wait_on_page_locked(p);
		if (!PageUptodate(p)) {
			pc_put_page(p);
			return pc_get_read(m, index, &created, out);
		}
	}
	*out = p;
	return 0;
}

int pc_read_page_ra(struct pc_mapping *m, struct pc_ra_state *ra,
		    uint64_t index, unsigned int nr, uint64_t limit,
		    struct pc_page **out)
{
	struct pc_page *p = pc_lookup(m, index, false);
	bool created;

	nr = UT_MAX(nr, 1u);
	if (p) {
		pc_stat_hit(m->cache);
		if (PageReadahead(p) && TestClearPageReadahead(p))
			ra_marker(m, ra, index, limit);
	} else {
		pc_stat_miss(m->cache);
		if (index < limit)
			ra_miss(m, ra, index, nr, limit);
		p = pc_lookup(m, index, false);
	}
	ra->prev = index;
	if (!p)
		return pc_get_read(m, index, &created, out);
	return ra_wait(m, index, p, out);
}
