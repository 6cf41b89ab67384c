/*
 * bdev_crash.c - crash images of a wrapper's log in memory: one at a time
 * (bdev_wrap_crash_image), or walking the log forward with a cursor that
 * keeps the durable state of the last flush it passed and a hash of the
 * image, so that a test pays for each write once and skips the images it
 * has seen.  The log is read under the wrapper's lock.
 */
#include "bdev_i.h"

#include "util.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* The entries as bdev_log_replay() takes them. */
static const struct bdev_wrap_log_entry *const *ents(const struct bdev_log *log)
{
	return (const struct bdev_wrap_log_entry *const *)log->ents;
}

int bdev_wrap_crash_image(struct bdev *bd, size_t prefix, enum bdev_cut mode,
			  uint64_t seed, struct bdev **out)
{
	struct bdev_log *log;
	pthread_mutex_t *lock;
	struct bdev *nbd;
	int err;

	err = bdev_wrap_log_of(bd, &log, &lock);
	if (!err)
		err = bdev_mem_create(bd->size, bd->block_size, &nbd);
	if (err)
		return err;
	pthread_mutex_lock(lock);
	if (log->base) {
		memcpy(bdev_mem_data(nbd), log->base, log->size);
		bdev_log_replay(ents(log), UT_MIN(prefix, log->n), mode, seed, log->bs,
				bdev_mem_data(nbd));
	} else {
		err = -EINVAL;  /* nothing was ever recorded */
	}
	pthread_mutex_unlock(lock);
	if (err)
		bdev_close(nbd);
	else
		*out = nbd;
	return err;
}

/* ---- crash images in order ------------------------------------------- */

struct bdev_wrap_crash {
	struct bdev_log *log;
	pthread_mutex_t *lock;
	uint32_t bs;
	size_t nblk;
	size_t at;                   /* entries [0, at) are in durable; a
	                                flush ends entry at - 1, or at is 0 */
	uint8_t *durable;            /* base and every write before at */
	uint8_t *work;               /* durable and what the cut kept */
	uint64_t *bhash;             /* each block's hash in durable */
	uint64_t sum;                /* the hash of durable */
	uint32_t *seen, epoch;       /* blocks counted in this image's hash */
	size_t from, to;             /* the unflushed entries laid on work */
};

static uint64_t block_hash(const uint8_t *p, size_t len)
{
	uint64_t h = 0x9e3779b97f4a7c15ull ^ len, w;

	for (size_t i = 0; i + 8 <= len; i += 8) {
		memcpy(&w, p + i, 8);
		h = (h ^ w) * 0xbf58476d1ce4e5b9ull;
		h ^= h >> 31;
	}
	return h;
}

/* A block's share of an image hash: a sum of shares, so that changing a
 * block costs one block's hash and not the image's. */
static uint64_t share(size_t blk, uint64_t h)
{
	uint64_t s = h ^ (blk * 0x94d049bb133111ebull);

	return bdev_rng_next(&s);
}

static void crash_set_block(struct bdev_wrap_crash *c, size_t blk)
{
	uint64_t h = block_hash(c->durable + blk * c->bs, c->bs);

	c->sum += share(blk, h) - share(blk, c->bhash[blk]);
	c->bhash[blk] = h;
}

static void crash_reset(struct bdev_wrap_crash *c)
{
	memcpy(c->durable, c->log->base, c->log->size);
	memcpy(c->work, c->log->base, c->log->size);
	c->sum = 0;
	for (size_t b = 0; b < c->nblk; b++) {
		c->bhash[b] = block_hash(c->durable + b * c->bs, c->bs);
		c->sum += share(b, c->bhash[b]);
	}
	c->at = c->from = c->to = 0;
}

int bdev_wrap_crash_begin(struct bdev *bd, struct bdev_wrap_crash **out)
{
	struct bdev_wrap_crash *c = calloc(1, sizeof(*c));
	size_t size = bd->size ? bd->size : 1;
	int err = -ENOMEM;

	if (!c)
		return err;
	*c = (struct bdev_wrap_crash){ .bs = bd->block_size,
				       .nblk = bd->size / bd->block_size };
	err = bdev_wrap_log_of(bd, &c->log, &c->lock);
	if (err) {
		free(c);
		return err;
	}
	c->durable = malloc(size);
	c->work = malloc(size);
	c->bhash = calloc(c->nblk + 1, sizeof(*c->bhash));
	c->seen = calloc(c->nblk + 1, sizeof(*c->seen));
	err = -ENOMEM;
	pthread_mutex_lock(c->lock);
	if (c->durable && c->work && c->bhash && c->seen)
		err = c->log->base ? 0 : -EINVAL;  /* -EINVAL: never recorded */
	if (!err)
		crash_reset(c);
	pthread_mutex_unlock(c->lock);
	if (err)
		bdev_wrap_crash_end(c);
	else
		*out = c;
	return err;
}

void bdev_wrap_crash_end(struct bdev_wrap_crash *c)
{
	if (!c)
		return;
	free(c->durable);
	free(c->work);
	free(c->bhash);
	free(c->seen);
	free(c);
}

static const struct bdev_wrap_log_entry *entry(const struct bdev_wrap_crash *c, size_t i)
{
	return c->log->ents[i];
}

/* Make work equal durable again (lock held). */
static void crash_undo(struct bdev_wrap_crash *c)
{
	for (size_t i = c->from; i < c->to; i++) {
		const struct bdev_wrap_log_entry *e = entry(c, i);

		if (!e->flush)
			memcpy(c->work + e->off, c->durable + e->off, e->len);
	}
	c->from = c->to = c->at;
}

/* One past the last flush among the first @prefix entries, or c->at if
 * none lies at or after it (lock held). */
static size_t crash_durable_end(const struct bdev_wrap_crash *c, size_t prefix)
{
	for (size_t i = prefix; i > c->at; i--)
		if (entry(c, i - 1)->flush)
			return i;
	return c->at;
}

/* Carry durable and work forward to entry @to (lock held). */
static void crash_advance(struct bdev_wrap_crash *c, size_t to)
{
	for (; c->at < to; c->at++) {
		const struct bdev_wrap_log_entry *e = entry(c, c->at);

		if (e->flush)
			continue;
		memcpy(c->durable + e->off, e->data, e->len);
		memcpy(c->work + e->off, e->data, e->len);
		for (size_t b = e->off / c->bs; b < (e->off + e->len) / c->bs; b++)
			crash_set_block(c, b);
	}
	c->from = c->to = c->at;
}

/* The hash of work: durable's, with the blocks the cut touched redone. */
static uint64_t crash_hash(struct bdev_wrap_crash *c)
{
	uint64_t h = c->sum;

	if (++c->epoch == 0) {
		memset(c->seen, 0, (c->nblk + 1) * sizeof(*c->seen));
		c->epoch = 1;
	}
	for (size_t i = c->from; i < c->to; i++) {
		const struct bdev_wrap_log_entry *e = entry(c, i);

		for (size_t b = e->off / c->bs; !e->flush && b < (e->off + e->len) / c->bs; b++) {
			if (c->seen[b] == c->epoch)
				continue;
			c->seen[b] = c->epoch;
			h += share(b, block_hash(c->work + b * c->bs, c->bs)) -
			     share(b, c->bhash[b]);
		}
	}
	return h;
}

int bdev_wrap_crash_next(struct bdev_wrap_crash *c, size_t prefix,
			 enum bdev_cut mode, uint64_t seed, uint64_t *hash)
{
	struct bdev_cut_state cut;
	size_t durable;

	pthread_mutex_lock(c->lock);
	if (!c->log->base) {
		pthread_mutex_unlock(c->lock);
		return -EINVAL;
	}
	prefix = UT_MIN(prefix, c->log->n);
	crash_undo(c);
	if (prefix < c->at)
		crash_reset(c);
	durable = crash_durable_end(c, prefix);
	crash_advance(c, durable);
	bdev_cut_init(&cut, mode, seed, c->bs);
	for (size_t i = durable; i < prefix; i++) {
		const struct bdev_wrap_log_entry *e = entry(c, i);

		if (!e->flush)
			bdev_cut_apply(&cut, c->work, e->off, e->data, e->len);
	}
	c->to = prefix;
	*hash = crash_hash(c);
	pthread_mutex_unlock(c->lock);
	return 0;
}

int bdev_wrap_crash_copy(struct bdev_wrap_crash *c, struct bdev *img)
{
	return bdev_mem_set_contents(img, c->work, c->log->size, c->bs);
}
