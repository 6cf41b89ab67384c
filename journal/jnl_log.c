/*
 * jnl_log.c - writing one transaction into the log.
 *
 * Write ordering (docs/FORMAT.md, "Write ordering"):
 *
 *   1. descriptor, data and revoke blocks go out as one batch;
 *   2. when all of them have completed, the device is flushed;
 *   3. only then is the commit block written, and flushed again;
 *   4. the transaction counts as committed when that flush has completed.
 *
 * A crash before 4 leaves a transaction without a valid commit block (or
 * with blocks that fail their checksums), which recovery ignores; a crash
 * after 4 leaves it whole.  The caller writes ordered data before calling,
 * so the flush of step 2 covers it too.  With async commit, steps 1-3 are
 * one batch and one flush (see write_image); the caller then flushes
 * ordered data itself first.
 */
#include <endian.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "jnl_disk.h"
#include "jnl_i.h"
#include "util.h"

uint32_t jnl_log_blocks_needed(uint32_t bs, uint32_t nblocks, uint32_t nrevokes)
{
	return nblocks + UT_DIV_ROUND_UP(nblocks, jnl_tags_per_block(bs)) +
	       UT_DIV_ROUND_UP(nrevokes, jnl_revokes_per_block(bs)) + 1;
}

/* The log image of one transaction, built in memory before any I/O. */
struct log_image {
	const struct jnl_geom *g;
	uint32_t tid;
	uint32_t start;              /* first log position */
	uint32_t count, cap;         /* blocks so far, room */
	void **bufs;                 /* in log order */
	bool *owned;                 /* bufs[i] was allocated here */
	uint32_t *csums;             /* what each block adds to the txsum */
};

static int image_init(struct log_image *im, const struct jnl_geom *g,
		      uint32_t tid, uint32_t start, uint32_t cap)
{
	*im = (struct log_image){ .g = g, .tid = tid, .start = start, .cap = cap };
	im->bufs = calloc(cap, sizeof(*im->bufs));
	im->owned = calloc(cap, sizeof(*im->owned));
	im->csums = calloc(cap, sizeof(*im->csums));
	return im->bufs && im->owned && im->csums ? 0 : -ENOMEM;
}

static void image_free(struct log_image *im)
{
	for (uint32_t i = 0; i < im->count; i++)
		if (im->owned[i])
			bdev_free_buf(im->bufs[i]);
	free(im->bufs);
	free(im->owned);
	free(im->csums);
}

/* Append a block; returns its slot, or -1 if the image is full (a bug:
 * the caller sized it with jnl_log_blocks_needed). */
static int image_add(struct log_image *im, void *buf, bool owned, uint32_t csum)
{
	if (im->count == im->cap)
		return -1;
	im->bufs[im->count] = buf;
	im->owned[im->count] = owned;
	im->csums[im->count] = csum;
	return (int)im->count++;
}

static void *new_header_block(const struct log_image *im, uint32_t type)
{
	void *blk = bdev_alloc_buf(im->g->bs);

	if (blk)
		jnl_header_init(blk, im->g->bs, type, im->tid);
	return blk;
}

/* A data block whose first bytes are the journal magic is stored with
 * them zeroed, so recovery never mistakes it for a header. */
static int add_data(struct log_image *im, const struct jnl_log_block *b,
		    struct jnl_tag *tag)
{
	void *buf = (void *)b->data;
	bool owned = false;
	uint32_t magic;

	memcpy(&magic, b->data, sizeof(magic));
	tag->t_blocknr = htole64(b->home);
	tag->t_checksum = htole32(jnl_data_csum(im->g, im->tid, b->data));
	if (le32toh(magic) == JNL_MAGIC) {
		tag->t_flags |= htole32(JNL_TAG_ESCAPED);
		buf = bdev_alloc_buf(im->g->bs);
		if (!buf)
			return -ENOMEM;
		memcpy(buf, b->data, im->g->bs);
		memset(buf, 0, sizeof(magic));
		owned = true;
	}
	if (image_add(im, buf, owned, le32toh(tag->t_checksum)) < 0) {
		if (owned)
			bdev_free_buf(buf);
		return -EOVERFLOW;
	}
	return 0;
}

/* One descriptor block and the (up to a block's worth of) data after it. */
static int add_descriptor(struct log_image *im, const struct jnl_log_block *b,
			  uint32_t n)
{
	uint8_t *desc = new_header_block(im, JNL_BT_DESCRIPTOR);
	struct jnl_tag *tags = (void *)(desc + sizeof(struct jnl_header));
	int slot, err = 0;

	if (!desc)
		return -ENOMEM;
	slot = image_add(im, desc, true, 0);
	if (slot < 0) {
		bdev_free_buf(desc);
		return -EOVERFLOW;
	}
	for (uint32_t i = 0; i < n && !err; i++)
		err = add_data(im, &b[i], &tags[i]);
	tags[n - 1].t_flags |= htole32(JNL_TAG_LAST);
	jnl_seal(im->g, im->tid, desc);
	im->csums[slot] = jnl_seal_of(im->g, desc);
	return err;
}

static int add_revokes(struct log_image *im, const uint64_t *rev, uint32_t n)
{
	uint8_t *blk = new_header_block(im, JNL_BT_REVOKE);
	struct jnl_revoke_header *h = (void *)blk;

	if (!blk)
		return -ENOMEM;
	for (uint32_t i = 0; i < n; i++) {
		uint64_t le = htole64(rev[i]);

		memcpy(blk + JNL_REVOKE_FIRST + 8 * i, &le, 8);
	}
	h->r_count = htole32(JNL_REVOKE_FIRST + 8 * n);
	jnl_seal(im->g, im->tid, blk);
	if (image_add(im, blk, true, jnl_seal_of(im->g, blk)) < 0) {
		bdev_free_buf(blk);
		return -EOVERFLOW;
	}
	return 0;
}

static int build_image(struct log_image *im, const struct jnl_tx_io *io)
{
	uint32_t per_desc = jnl_tags_per_block(im->g->bs);
	uint32_t per_rev = jnl_revokes_per_block(im->g->bs);
	int err = 0;

	for (uint32_t i = 0; i < io->nblocks && !err; i += per_desc)
		err = add_descriptor(im, io->blocks + i, UT_MIN(per_desc, io->nblocks - i));
	for (uint32_t i = 0; i < io->nrevokes && !err; i += per_rev)
		err = add_revokes(im, io->revokes + i, UT_MIN(per_rev, io->nrevokes - i));
	return err;
}

/* ---- I/O ----------------------------------------------------------------- */

static uint32_t image_pos(const struct log_image *im, uint32_t i)
{
	const struct jnl_geom *g = im->g;

	return (im->start - g->first + i) % (g->nblocks - g->first) + g->first;
}

/* Log positions [i, to) whose device blocks are adjacent: one request. */
static uint32_t run_length(const struct log_image *im, uint32_t i, uint32_t to)
{
	const uint64_t *map = im->g->map;
	uint32_t pos = image_pos(im, i), n = 1;

	while (i + n < to && pos + n < im->g->nblocks && map[pos + n] == map[pos] + n)
		n++;
	return n;
}

/* Write image blocks [from, to) and a flush in one batch, and wait. */
static int write_blocks(struct log_image *im, uint32_t from, uint32_t to)
{
	uint32_t n = to - from, nreq = 0;
	struct bdev_req *reqs = calloc(n + 1, sizeof(*reqs));
	struct bdev_req **ptrs = calloc(n + 1, sizeof(*ptrs));
	struct iovec *iov = calloc(n, sizeof(*iov));
	int err = -ENOMEM;

	if (reqs && ptrs && iov) {
		for (uint32_t i = from; i < to; i += run_length(im, i, to)) {
			uint32_t len = run_length(im, i, to);

			for (uint32_t k = 0; k < len; k++)
				iov[i - from + k] = (struct iovec){ im->bufs[i + k], im->g->bs };
			bdev_req_initv(&reqs[nreq], BDEV_OP_WRITE,
				       im->g->map[image_pos(im, i)] * im->g->bs,
				       &iov[i - from], len);
			ptrs[nreq] = &reqs[nreq];
			nreq++;
		}
		bdev_req_init(&reqs[nreq], BDEV_OP_FLUSH, 0, NULL, 0);
		ptrs[nreq] = &reqs[nreq];
		err = bdev_submit_wait(im->g->bd, ptrs, nreq + 1);
	}
	free(reqs);
	free(ptrs);
	free(iov);
	return err;
}

/* The commit block, last in the image: its checksum covers every block
 * before it. */
static int add_commit(struct log_image *im)
{
	struct jnl_commit_block *c = new_header_block(im, JNL_BT_COMMIT);
	struct jnl_txsum sum;
	struct timespec now;
	int err;

	if (!c)
		return -ENOMEM;
	err = jnl_txsum_init(&sum, im->g, im->tid);
	if (err) {
		bdev_free_buf(c);
		return err;
	}
	for (uint32_t i = 0; i < im->count; i++)
		jnl_txsum_add(&sum, im->csums[i]);
	clock_gettime(CLOCK_REALTIME, &now);
	c->c_sec = htole64((uint64_t)now.tv_sec);
	c->c_nsec = htole32((uint32_t)now.tv_nsec);
	c->c_blocks = htole32(im->count);
	c->c_data_checksum = htole32(jnl_txsum_final(&sum));
	jnl_seal(im->g, im->tid, c);
	if (image_add(im, c, true, 0) < 0) {
		bdev_free_buf(c);
		return -EOVERFLOW;
	}
	return 0;
}

/*
 * Strict ordering flushes between the transaction's blocks and its commit
 * block.  The asynchronous commit writes them all in one batch and
 * flushes once: a commit block that reaches the disk before some block it
 * covers fails the transaction checksum, so recovery treats the
 * transaction as never committed -- which it was not, since the caller
 * hears of the commit only after the flush.
 */
static int write_image(struct log_image *im, bool async)
{
	uint32_t body = im->count - 1;
	int err;

	if (async)
		return write_blocks(im, 0, im->count);
	err = write_blocks(im, 0, body);
	return err ? err : write_blocks(im, body, im->count);
}

int jnl_log_write(const struct jnl_geom *g, const struct jnl_tx_io *io,
		  bool async, uint32_t *end)
{
	uint32_t need = jnl_log_blocks_needed(g->bs, io->nblocks, io->nrevokes);
	struct log_image im;
	int err = image_init(&im, g, io->tid, io->start, need);

	if (!err)
		err = build_image(&im, io);
	if (!err)
		err = add_commit(&im);
	if (!err)
		err = write_image(&im, async);
	if (!err)
		*end = image_pos(&im, im.count);
	image_free(&im);
	return err;
}
