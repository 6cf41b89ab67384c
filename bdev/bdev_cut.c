/*
 * bdev_cut.c - what a power cut keeps of the writes since the last flush,
 * shared by the memory device's power cut and the crash images of a
 * write log, so that the same mode and seed choose the same survivors.
 */
#include "bdev_i.h"

#include "util.h"

#include <errno.h>
#include <string.h>

#define SECTOR 512u

int bdev_cut_parse(const char *name, enum bdev_cut *mode)
{
	static const struct { const char *name; enum bdev_cut mode; } modes[] = {
		{ "keep", BDEV_CUT_KEEP_ALL }, { "drop", BDEV_CUT_LOSE_ALL },
		{ "random", BDEV_CUT_RANDOM }, { "torn", BDEV_CUT_RANDOM_TORN },
		{ "blocks", BDEV_CUT_BLOCKS },
	};

	for (size_t i = 0; i < UT_ARRAY_SIZE(modes); i++)
		if (!strcmp(name, modes[i].name)) {
			*mode = modes[i].mode;
			return 0;
		}
	return -EINVAL;
}

uint64_t bdev_rng_next(uint64_t *state)
{
	uint64_t z = (*state += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* How many leading bytes of an unflushed write of @len survive a cut. */
static size_t cut_keep(uint64_t *rng, enum bdev_cut mode, size_t len)
{
	uint64_t r;
	size_t sectors = len / SECTOR;

	if (mode == BDEV_CUT_LOSE_ALL)
		return 0;
	if (mode == BDEV_CUT_KEEP_ALL)
		return len;
	r = bdev_rng_next(rng);
	if (!(r & 1))
		return 0;
	if (mode != BDEV_CUT_RANDOM_TORN || sectors < 2 || !(r & 2))
		return len;
	return (size_t)(1 + (r >> 8) % (sectors - 1)) * SECTOR;
}

void bdev_cut_init(struct bdev_cut_state *c, enum bdev_cut mode, uint64_t seed,
		   uint32_t bs)
{
	*c = (struct bdev_cut_state){ .mode = mode, .rng = seed, .bs = bs };
	/* From a cache that destaged almost nothing to one that lost a
	 * single block: both ends matter to a journal. */
	if (mode == BDEV_CUT_BLOCKS)
		c->rate = 1 + bdev_rng_next(&c->rng) % 15;
}

void bdev_cut_apply(struct bdev_cut_state *c, uint8_t *img, uint64_t off,
		    const uint8_t *data, size_t len)
{
	if (c->mode != BDEV_CUT_BLOCKS) {
		memcpy(img + off, data, cut_keep(&c->rng, c->mode, len));
		return;
	}
	for (size_t at = 0; at < len; at += c->bs)
		if (bdev_rng_next(&c->rng) % 16 < c->rate)
			memcpy(img + off + at, data + at, UT_MIN((size_t)c->bs, len - at));
}

void bdev_log_replay(const struct bdev_wrap_log_entry *const *log, size_t prefix,
		     enum bdev_cut mode, uint64_t seed, uint32_t bs, uint8_t *img)
{
	size_t durable = 0;
	struct bdev_cut_state c;

	bdev_cut_init(&c, mode, seed, bs);
	for (size_t i = 0; i < prefix; i++)
		if (log[i]->flush)
			durable = i + 1;
	for (size_t i = 0; i < prefix; i++) {
		const struct bdev_wrap_log_entry *e = log[i];

		if (e->flush)
			continue;
		if (i < durable)
			memcpy(img + e->off, e->data, e->len);
		else
			bdev_cut_apply(&c, img, e->off, e->data, e->len);
	}
}
