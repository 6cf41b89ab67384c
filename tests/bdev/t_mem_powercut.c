/*
 * t_mem_powercut.c - power cuts on the memory device.  LOSE_ALL loses
 * exactly the writes after the last flush; RANDOM keeps a seeded subset
 * of them (different seeds, different subsets; never anything flushed);
 * RANDOM_TORN may cut a kept write at a 512-byte boundary.  Crash images
 * of every prefix of a recorded workload are checked against images
 * computed here from the workload alone, and agree with power cuts; so
 * are the cursor's images, whose hashes must tell them apart.  BLOCKS
 * keeps any subset of the blocks of each unflushed write.
 */
#include "bdev_test.h"
#include "t_bdev.h"
#include "t_dev.h"

#include <errno.h>
#include <string.h>

#define BS 1024u
#define NBLK 32u
#define SIZE (NBLK * BS)
#define SECTOR 512u

static struct bdev *fresh(unsigned char *base)
{
	struct bdev *bd;

	bd = t_dev_mem(SIZE, BS);
	t_fill(base, SIZE, 1000);
	t_ok(bdev_write(bd, 0, base, SIZE));
	t_ok(bdev_flush(bd));
	return bd;
}

static void write_blocks(struct bdev *bd, unsigned int blk, unsigned int n, uint64_t seed,
			 unsigned char *model)
{
	unsigned char *buf = t_alloc(n * BS);

	t_fill(buf, n * BS, seed);
	t_ok(bdev_write(bd, (uint64_t)blk * BS, buf, n * BS));
	if (model)
		memcpy(model + (size_t)blk * BS, buf, n * BS);
	bdev_free_buf(buf);
}

static void test_lose_all(void)
{
	unsigned char *base = t_alloc(SIZE), *want = t_alloc(SIZE);
	struct bdev *bd = fresh(base);

	memcpy(want, base, SIZE);
	write_blocks(bd, 0, 4, 1, want);
	t_ok(bdev_flush(bd));
	write_blocks(bd, 2, 4, 2, NULL);
	write_blocks(bd, 8, 1, 3, NULL);
	bdev_mem_power_cut(bd, BDEV_CUT_LOSE_ALL, 0);
	t_assert(!memcmp(bdev_mem_data(bd), want, SIZE),
		"LOSE_ALL: contents differ from the flushed state at %ld",
		t_diff(bdev_mem_data(bd), want, SIZE));
	/* The device works on, and a cut with nothing pending changes nothing. */
	write_blocks(bd, 8, 1, 4, want);
	t_ok(bdev_flush(bd));
	bdev_mem_power_cut(bd, BDEV_CUT_RANDOM, 99);
	t_assert(!memcmp(bdev_mem_data(bd), want, SIZE), "a cut after a flush lost data");
	bdev_close(bd);
	bdev_free_buf(base);
	bdev_free_buf(want);
}

/*
 * After a cut with @seed: @nw writes of @wblk blocks each, the i-th at
 * block 4 + i * wblk, each kept for how many leading bytes (keep[i]).
 * Anything other than new bytes up to a sector boundary, old after it,
 * fails the test.
 */
static void cut_outcome(enum bdev_cut mode, uint64_t seed, unsigned int nw,
			unsigned int wblk, size_t *keep)
{
	unsigned char *base = t_alloc(SIZE), *flushed = t_alloc(SIZE), *news = t_alloc(SIZE);
	struct bdev *bd = fresh(base);
	const unsigned char *got = bdev_mem_data(bd);
	size_t len = (size_t)wblk * BS;

	memcpy(flushed, base, SIZE);
	write_blocks(bd, 0, 2, 50, flushed);
	t_ok(bdev_flush(bd));
	memcpy(news, flushed, SIZE);
	for (unsigned int i = 0; i < nw; i++)
		write_blocks(bd, 4 + i * wblk, wblk, 100 + i, news);
	bdev_mem_power_cut(bd, mode, seed);
	t_assert(!memcmp(got, flushed, 4 * BS), "seed %llu: flushed data lost",
		(unsigned long long)seed);
	for (unsigned int i = 0; i < nw; i++) {
		size_t off = (size_t)(4 + i * wblk) * BS, k;

		for (k = 0; k <= len; k += SECTOR)
			if (!memcmp(got + off, news + off, k) &&
			    !memcmp(got + off + k, flushed + off + k, len - k))
				break;
		t_assert(k <= len, "seed %llu: write %u is neither kept, lost nor torn "
			"at a sector boundary", (unsigned long long)seed, i);
		keep[i] = k;
	}
	bdev_close(bd);
	bdev_free_buf(base);
	bdev_free_buf(flushed);
	bdev_free_buf(news);
}

static void test_random(void)
{
	enum { NW = 12, SEEDS = 24 };
	size_t keep[NW], again[NW];
	uint32_t masks[SEEDS];
	unsigned int distinct = 0;

	for (unsigned int s = 0; s < SEEDS; s++) {
		masks[s] = 0;
		cut_outcome(BDEV_CUT_RANDOM, s + 1, NW, 2, keep);
		for (unsigned int i = 0; i < NW; i++) {
			t_assert(keep[i] == 0 || keep[i] == 2 * BS,
				"RANDOM tore write %u (kept %zu bytes)", i, keep[i]);
			masks[s] |= (uint32_t)(keep[i] != 0) << i;
		}
		distinct += s == 0 || masks[s] != masks[s - 1];
	}
	cut_outcome(BDEV_CUT_RANDOM, 1, NW, 2, again);
	for (unsigned int i = 0; i < NW; i++)
		t_assert((again[i] != 0) == !!(masks[0] & (1u << i)),
			"the same seed kept a different subset");
	fprintf(stderr, "RANDOM: %u changes of subset over %u seeds\n", distinct, SEEDS);
	t_assert(distinct > SEEDS / 2, "different seeds keep the same subsets");
}

static void test_torn(void)
{
	enum { NW = 6, WBLK = 4 };
	unsigned int torn = 0, whole = 0, lost = 0;
	size_t keep[NW];

	for (uint64_t s = 1; s <= 64; s++) {
		cut_outcome(BDEV_CUT_RANDOM_TORN, s, NW, WBLK, keep);
		for (unsigned int i = 0; i < NW; i++) {
			torn += keep[i] > 0 && keep[i] < WBLK * BS;
			whole += keep[i] == WBLK * BS;
			lost += keep[i] == 0;
		}
	}
	fprintf(stderr, "TORN: %u torn, %u whole, %u lost\n", torn, whole, lost);
	t_assert(torn && whole && lost, "TORN: %u torn, %u whole, %u lost", torn, whole, lost);
}

/* ---- crash images of a recorded workload --------------------------------- */

struct op {
	bool flush;
	unsigned int blk, n;
	_Alignas(4096) unsigned char data[4 * BS];
};

static struct op ops[] = {
	{ .blk = 0, .n = 4 }, { .blk = 2, .n = 2 }, { .flush = true },
	{ .blk = 4, .n = 3 }, { .blk = 10, .n = 1 }, { .flush = true },
	{ .blk = 5, .n = 4 }, { .blk = 0, .n = 1 }, { .blk = 6, .n = 2 },
};
#define NOPS (sizeof(ops) / sizeof(ops[0]))

static struct bdev *run_workload(unsigned char *base)
{
	struct bdev *bd = fresh(base);

	bdev_wrap_record(bd, true);
	for (unsigned int i = 0; i < NOPS; i++) {
		if (ops[i].flush) {
			t_ok(bdev_flush(bd));
			continue;
		}
		t_fill(ops[i].data, ops[i].n * BS, 500 + i);
		t_ok(bdev_write(bd, (uint64_t)ops[i].blk * BS, ops[i].data, ops[i].n * BS));
	}
	return bd;
}

static void check_log(struct bdev *bd)
{
	t_assert(bdev_wrap_log_count(bd) == NOPS, "log holds %zu entries, expected %zu",
		bdev_wrap_log_count(bd), NOPS);
	for (unsigned int i = 0; i < NOPS; i++) {
		const struct bdev_wrap_log_entry *e = bdev_wrap_log(bd, i);

		t_assert(e && e->seq == i && e->flush == ops[i].flush, "log entry %u", i);
		t_assert(e->flush || (e->off == ops[i].blk * BS && e->len == ops[i].n * BS &&
				     !memcmp(e->data, ops[i].data, e->len)),
			"log entry %u: off %llu len %zu or data wrong", i,
			(unsigned long long)e->off, e->len);
	}
	t_assert(!bdev_wrap_log(bd, NOPS), "an entry past the end of the log");
}

static bool reachable(const unsigned char *got, unsigned char *img, const unsigned int *post,
		      unsigned int npost, enum bdev_cut mode);

/* reachable() for BLOCKS: any subset of the first write's blocks. */
static bool reachable_blocks(const unsigned char *got, unsigned char *img,
			     const unsigned int *post, unsigned int npost,
			     const unsigned char *save)
{
	const struct op *op = &ops[post[0]];
	size_t off = op->blk * BS, len = op->n * BS;
	bool ok = false;

	for (unsigned int mask = 0; mask < 1u << op->n && !ok; mask++) {
		for (unsigned int b = 0; b < op->n; b++)
			if (mask & 1u << b)
				memcpy(img + off + b * BS, op->data + b * BS, BS);
		ok = reachable(got, img, post + 1, npost - 1, BDEV_CUT_BLOCKS);
		memcpy(img + off, save, len);
	}
	return ok;
}

/* Whether @got is @img with writes ops[post[i..]] applied in order, each
 * kept for a length @mode allows. */
static bool reachable(const unsigned char *got, unsigned char *img, const unsigned int *post,
		      unsigned int npost, enum bdev_cut mode)
{
	const struct op *op;
	unsigned char save[4 * BS];
	size_t len, off, step;
	bool ok = false;

	if (npost == 0)
		return !memcmp(got, img, SIZE);
	op = &ops[post[0]];
	len = op->n * BS;
	off = op->blk * BS;
	step = mode == BDEV_CUT_RANDOM_TORN ? SECTOR : len;
	memcpy(save, img + off, len);
	if (mode == BDEV_CUT_BLOCKS)
		return reachable_blocks(got, img, post, npost, save);
	for (size_t keep = 0; keep <= len && !ok; keep += step) {
		memcpy(img + off, op->data, keep);
		ok = reachable(got, img, post + 1, npost - 1, mode);
		memcpy(img + off, save, len);
		if (mode == BDEV_CUT_LOSE_ALL)
			break;
	}
	return ok;
}

/* The crash image of @prefix computed from the workload alone. */
static bool expected(const unsigned char *base, const unsigned char *got, size_t prefix,
		     enum bdev_cut mode)
{
	unsigned char *img = t_alloc(SIZE);
	unsigned int post[NOPS], npost = 0;
	size_t durable = 0;
	bool ok;

	for (size_t i = 0; i < prefix; i++)
		if (ops[i].flush)
			durable = i + 1;
	memcpy(img, base, SIZE);
	for (size_t i = 0; i < prefix; i++) {
		if (ops[i].flush)
			continue;
		if (i < durable)
			memcpy(img + ops[i].blk * BS, ops[i].data, ops[i].n * BS);
		else
			post[npost++] = (unsigned int)i;
	}
	ok = reachable(got, img, post, npost, mode);
	bdev_free_buf(img);
	return ok;
}

static void test_crash_images(void)
{
	static const enum bdev_cut modes[] = { BDEV_CUT_LOSE_ALL, BDEV_CUT_RANDOM,
						   BDEV_CUT_RANDOM_TORN, BDEV_CUT_BLOCKS };
	unsigned char *base = t_alloc(SIZE), *first = t_alloc(SIZE);
	struct bdev *bd = run_workload(base), *img;
	unsigned int distinct = 0;

	check_log(bd);
	for (size_t p = 0; p <= NOPS; p++)
		for (unsigned int m = 0; m < sizeof(modes) / sizeof(modes[0]); m++)
			for (uint64_t seed = 1; seed <= 6; seed++) {
				t_ok(bdev_wrap_crash_image(bd, p, modes[m], seed, &img));
				t_assert(img->size == SIZE && img->fd == -1,
					"crash image geometry");
				t_assert(expected(base, bdev_mem_data(img), p, modes[m]),
					"crash image of prefix %zu, mode %u, seed %llu is not "
					"a state a power cut can leave", p, m,
					(unsigned long long)seed);
				if (p == NOPS && modes[m] == BDEV_CUT_RANDOM) {
					if (seed == 1)
						memcpy(first, bdev_mem_data(img), SIZE);
					distinct += !!memcmp(first, bdev_mem_data(img), SIZE);
				}
				bdev_close(img);
			}
	t_assert(distinct > 0, "RANDOM crash images do not depend on the seed");
	bdev_close(bd);
	bdev_free_buf(base);
	bdev_free_buf(first);
}

#define MAX_SEEN 256u

/* Record @img's contents under @hash; equal hashes must mean equal
 * images and the reverse. */
static void check_hash(unsigned char **seen, uint64_t *hashes, unsigned int *nseen,
		       const unsigned char *img, uint64_t hash)
{
	for (unsigned int i = 0; i < *nseen; i++) {
		bool same = !memcmp(seen[i], img, SIZE);

		t_assert(same == (hashes[i] == hash), "images %s, hashes %s", same ?
			"equal" : "differ", hashes[i] == hash ? "equal" : "differ");
		if (same)
			return;
	}
	t_assert(*nseen < MAX_SEEN, "too many distinct images");
	seen[*nseen] = t_alloc(SIZE);
	memcpy(seen[*nseen], img, SIZE);
	hashes[(*nseen)++] = hash;
}

/* The cursor builds what bdev_wrap_crash_image() builds, walking the log
 * forward and back, and its hash tells the images apart. */
static void test_cursor(void)
{
	static const enum bdev_cut modes[] = { BDEV_CUT_LOSE_ALL, BDEV_CUT_RANDOM,
						   BDEV_CUT_RANDOM_TORN, BDEV_CUT_BLOCKS };
	static unsigned char *seen[MAX_SEEN];
	static uint64_t hashes[MAX_SEEN];
	unsigned char *base = t_alloc(SIZE);
	struct bdev *bd = run_workload(base), *img, *scratch;
	struct bdev_wrap_crash *c;
	unsigned int nseen = 0, partial = 0;
	uint64_t h;

	scratch = t_dev_mem(SIZE, BS);
	t_ok(bdev_wrap_crash_begin(bd, &c));
	for (size_t k = 0; k <= 2 * NOPS + 1; k++) {
		size_t p = k <= NOPS ? k : 2 * NOPS + 1 - k;

		for (unsigned int m = 0; m < sizeof(modes) / sizeof(modes[0]); m++)
			for (uint64_t seed = 1; seed <= 4; seed++) {
				t_ok(bdev_wrap_crash_next(c, p, modes[m], seed, &h));
				t_ok(bdev_wrap_crash_copy(c, scratch));
				t_ok(bdev_wrap_crash_image(bd, p, modes[m], seed, &img));
				t_assert(!memcmp(bdev_mem_data(scratch), bdev_mem_data(img), SIZE),
					"prefix %zu mode %u seed %llu: the cursor's image differs "
					"at %ld", p, m, (unsigned long long)seed,
					t_diff(bdev_mem_data(scratch), bdev_mem_data(img), SIZE));
				check_hash(seen, hashes, &nseen, bdev_mem_data(img), h);
				/* Some block of a write kept, another lost. */
				partial += modes[m] == BDEV_CUT_BLOCKS &&
					   !expected(base, bdev_mem_data(img), p, BDEV_CUT_RANDOM);
				bdev_close(img);
			}
	}
	fprintf(stderr, "cursor: %u distinct images, %u with part of a write\n", nseen,
		partial);
	t_assert(nseen > 20, "only %u distinct images", nseen);
	t_assert(partial > 0, "BLOCKS never kept part of a write");
	bdev_wrap_crash_end(c);
	bdev_close(scratch);
	bdev_close(bd);
	bdev_free_buf(base);
	for (unsigned int i = 0; i < nseen; i++)
		bdev_free_buf(seen[i]);
}

/* A crash image of the whole log is what a power cut leaves. */
static void test_agrees_with_cut(void)
{
	unsigned char *base = t_alloc(SIZE);

	for (uint64_t seed = 1; seed <= 8; seed++) {
		enum bdev_cut mode = seed & 1 ? BDEV_CUT_RANDOM : BDEV_CUT_RANDOM_TORN;
		struct bdev *bd = run_workload(base), *img;

		t_ok(bdev_wrap_crash_image(bd, NOPS, mode, seed, &img));
		bdev_mem_power_cut(bd, mode, seed);
		t_assert(!memcmp(bdev_mem_data(bd), bdev_mem_data(img), SIZE),
			"seed %llu: power cut and crash image disagree", (unsigned long long)seed);
		/* The image is a device of its own. */
		write_blocks(img, 0, 1, 7, NULL);
		t_assert(memcmp(bdev_mem_data(bd), bdev_mem_data(img), BS), "image shares data");
		bdev_close(img);
		/* Recording stops and restarts empty. */
		bdev_wrap_record(bd, false);
		write_blocks(bd, 0, 1, 8, NULL);
		t_assert(bdev_wrap_log_count(bd) == NOPS, "a write was logged after recording stopped");
		bdev_wrap_record(bd, true);
		t_assert(bdev_wrap_log_count(bd) == 0, "restarting recording kept the log");
		bdev_close(bd);
	}
	bdev_free_buf(base);
}

/* Crash images come of a recorded log: a device that never recorded
 * has none, nor a cursor. */
static void test_unrecorded(void)
{
	struct bdev *bd = t_dev_mem(SIZE, BS), *img;
	struct bdev_wrap_crash *cursor;

	t_eq(bdev_wrap_crash_image(bd, 0, BDEV_CUT_LOSE_ALL, 0, &img), -EINVAL);
	t_eq(bdev_wrap_crash_begin(bd, &cursor), -EINVAL);
	bdev_close(bd);
}

T_MAIN(T_CASE(test_lose_all), T_CASE(test_random), T_CASE(test_torn),
       T_CASE(test_crash_images), T_CASE(test_cursor), T_CASE(test_agrees_with_cut),
       T_CASE(test_unrecorded))
