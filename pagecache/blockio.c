/*
 * blockio.c - batched device I/O for owners whose pages map to blocks.
 *
 * The owner hands a batch of pages and a function from page index to
 * device block; the pages are mapped one by one, runs of consecutive
 * blocks become one vectored request (up to MAX_RUN pages), and every
 * request of the batch goes to bdev_submit() in one call.  Completion ends
 * each page: uptodate or PG_error and unlock for reads, end of writeback
 * for writes.
 */
#include "pc_i.h"

#include "util.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define MAX_RUN 256u

struct pc_bio {
	struct bdev_req req;
	bool write;
	bool keep, ended;            /* keep: do_batch frees it, after a wait */
	unsigned int n;
	struct pc_page **pages;
	struct iovec *iov;
};

struct bio_batch {
	struct bdev *bd;
	bool write;
	bool wait;                   /* the caller waits for it at once
	                                (pc_rdc, pc_wbc: wait_now) */
	struct bdev_req **reqs;
	unsigned int nreqs;
	struct pc_page *run[MAX_RUN];
	unsigned int nrun;
	uint64_t run_block;
	int err;
};

static void end_page(struct pc_page *p, bool write, int err)
{
	if (write)
		pc_end_page_writeback(p, err);
	else
		pc_end_read(p, err);
}

static void bio_end(struct bdev_req *req)
{
	struct pc_bio *b = ut_container_of(req, struct pc_bio, req);

	for (unsigned int i = 0; i < b->n; i++)
		end_page(b->pages[i], b->write, req->result);
	b->ended = true;
	if (!b->keep)
		free(b);
}

/* Turn the current run into a request of the batch. */
static void close_run(struct bio_batch *bb)
{
	unsigned int n = bb->nrun;
	uint32_t bs = bb->bd->block_size;
	struct pc_bio *b;

	if (!n)
		return;
	bb->nrun = 0;
	b = malloc(sizeof(*b) + n * (sizeof(*b->pages) + sizeof(*b->iov)));
	if (!b) {
		for (unsigned int i = 0; i < n; i++)
			end_page(bb->run[i], bb->write, -ENOMEM);
		bb->err = bb->err ? bb->err : -ENOMEM;
		return;
	}
	b->iov = (struct iovec *)(b + 1);
	b->pages = (struct pc_page **)(b->iov + n);
	b->write = bb->write;
	b->keep = bb->wait;
	b->ended = false;
	b->n = n;
	for (unsigned int i = 0; i < n; i++) {
		b->pages[i] = bb->run[i];
		b->iov[i] = (struct iovec){ bb->run[i]->data, bs };
	}
	bdev_req_initv(&b->req, bb->write ? BDEV_OP_WRITE : BDEV_OP_READ,
		       bb->run_block * bs, b->iov, n);
	b->req.end_io = bio_end;
	bb->reqs[bb->nreqs++] = &b->req;
}

static void add_to_run(struct bio_batch *bb, struct pc_page *p, uint64_t block)
{
	if (bb->nrun && (block != bb->run_block + bb->nrun || bb->nrun == MAX_RUN))
		close_run(bb);
	if (!bb->nrun)
		bb->run_block = block;
	bb->run[bb->nrun++] = p;
}

static int map_page(struct bdev *bd, pc_block_map_fn map, void *ctx,
		    struct pc_mapping *m, struct pc_page *p, bool write,
		    uint64_t *block)
{
	uint64_t nblocks = bd->size / bd->block_size;
	int rc = map(ctx, m, pc_page_index(p), write, block);

	if (rc == 0 && *block >= nblocks) {
		mlog_err("page cache: page %llu maps to block %llu, beyond the "
			 "device's %llu blocks",
			 (unsigned long long)pc_page_index(p),
			 (unsigned long long)*block, (unsigned long long)nblocks);
		rc = -EIO;
	}
	return rc;
}

/* Map one page and either queue it or end it at once (hole, error). */
static void one_page(struct bio_batch *bb, pc_block_map_fn map, void *ctx,
		     struct pc_mapping *m, struct pc_page *p)
{
	uint64_t block = 0;
	int rc = map_page(bb->bd, map, ctx, m, p, bb->write, &block);

	if (bb->write) {
		pc_set_page_writeback(p);
		pc_unlock_page(p);
	}
	if (rc == PC_BLOCK_HOLE) {
		if (!bb->write)
			memset(p->data, 0, bb->bd->block_size);
		end_page(p, bb->write, 0);
	} else if (rc) {
		bb->err = bb->err ? bb->err : rc;
		end_page(p, bb->write, rc);
	} else {
		SetPageMappedToDisk(p);
		add_to_run(bb, p, block);
	}
}

/* End every page of a batch that cannot even be built. */
static int fail_batch(struct pc_page **pages, unsigned int n, bool write,
		      int err)
{
	for (unsigned int i = 0; i < n; i++) {
		if (write) {
			pc_set_page_writeback(pages[i]);
			pc_unlock_page(pages[i]);
		}
		end_page(pages[i], write, err);
	}
	return err;
}

static int submit(struct bio_batch *bb)
{
	int rc = bb->nreqs ? bdev_submit(bb->bd, bb->reqs, bb->nreqs) : 0;

	if (rc < 0) {
		/* Refused as a whole: no end_io ran, end them here. */
		for (unsigned int i = 0; i < bb->nreqs; i++) {
			bb->reqs[i]->result = rc;
			bio_end(bb->reqs[i]);
		}
	}
	return rc;
}

/*
 * Submit and reap in this thread, for a reader that would otherwise sleep
 * on the first page at once: no other thread has to submit the batch or
 * run its completion, two thread switches fewer per miss.  The bios stay
 * until every end_io has run; a batch refused whole never ran one.
 */
static int submit_wait(struct bio_batch *bb)
{
	int rc = bb->nreqs ? bdev_submit_wait(bb->bd, bb->reqs, bb->nreqs) : 0;
	bool refused = false;

	for (unsigned int i = 0; i < bb->nreqs; i++) {
		struct pc_bio *b = ut_container_of(bb->reqs[i], struct pc_bio, req);

		if (!b->ended) {
			refused = true;
			b->req.result = rc < 0 ? rc : -EIO;
			bio_end(&b->req);
		}
		free(b);
	}
	return refused ? rc : 0;      /* the pages carry an I/O error */
}

static int do_batch(struct bdev *bd, pc_block_map_fn map, void *ctx,
		    struct pc_mapping *m, struct pc_page **pages,
		    unsigned int n, bool write, bool wait)
{
	struct bio_batch *bb;
	int rc;

	if (bd->block_size != m->cache->block_size) {
		mlog_err("page cache: device blocks of %u bytes, pages of %u",
			 bd->block_size, m->cache->block_size);
		return fail_batch(pages, n, write, -EINVAL);
	}
	bb = calloc(1, sizeof(*bb));
	if (!bb || !(bb->reqs = malloc(n * sizeof(*bb->reqs)))) {
		free(bb);
		return fail_batch(pages, n, write, -ENOMEM);
	}
	bb->bd = bd;
	bb->write = write;
	bb->wait = wait;
	for (unsigned int i = 0; i < n; i++)
		one_page(bb, map, ctx, m, pages[i]);
	close_run(bb);
	rc = bb->wait ? submit_wait(bb) : submit(bb);
	rc = bb->err ? bb->err : rc;
	free(bb->reqs);
	free(bb);
	return rc;
}

int pc_block_readpages(struct bdev *bd, pc_block_map_fn map, void *ctx,
		       struct pc_mapping *m, struct pc_page **pages,
		       unsigned int n, const struct pc_rdc *rdc)
{
	return do_batch(bd, map, ctx, m, pages, n, false, rdc && rdc->wait_now);
}

int pc_block_writepages(struct bdev *bd, pc_block_map_fn map, void *ctx,
			struct pc_mapping *m, struct pc_page **pages,
			unsigned int n, const struct pc_wbc *wbc)
{
	return do_batch(bd, map, ctx, m, pages, n, true, wbc && wbc->wait_now);
}

int pc_block_map_identity(void *ctx, struct pc_mapping *m, uint64_t index,
			  bool write, uint64_t *block)
{
	(void)ctx;
	(void)m;
	(void)write;
	*block = index;
	return 0;
}

/* ---- ready-made operations for the device itself ------------------------ */

static int identity_readpage(void *ctx, struct pc_page *page)
{
	return pc_block_readpages(ctx, pc_block_map_identity, NULL,
				  pc_page_mapping(page), &page, 1, NULL);
}

static int identity_readpages(void *ctx, struct pc_mapping *m,
			      struct pc_page **pages, unsigned int n,
			      const struct pc_rdc *rdc)
{
	return pc_block_readpages(ctx, pc_block_map_identity, NULL, m, pages, n,
				  rdc);
}

static int identity_writepages(void *ctx, struct pc_mapping *m,
			       struct pc_page **pages, unsigned int n,
			       const struct pc_wbc *wbc)
{
	return pc_block_writepages(ctx, pc_block_map_identity, NULL, m, pages,
				   n, wbc);
}

const struct pc_mapping_ops pc_identity_ops = {
	.readpage = identity_readpage,
	.readpages = identity_readpages,
	.writepages = identity_writepages,
};
