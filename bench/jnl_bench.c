/*
 * jnl_bench - commits per second and journalled MB/s on an image file.
 *
 *   jnl_bench IMAGE commits SECONDS [async]  small transactions, fsync each
 *   jnl_bench IMAGE data MIB [async]         large transactions of data
 *
 * "async" selects the one-flush commit.
 *
 * Not a test: bench/jnl_bench.sh runs it next to fio on the same file and
 * prints medians and ratios.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jnl.h"
#include "pc.h"
#include "util.h"

#define BS       4096u
#define JBLOCKS  16384u            /* 64 MiB of log */
#define HOME0    (JBLOCKS + 16)

struct bench {
	struct bdev *bd;
	struct pc_cache *cache;
	struct pc_mapping *meta;
	uint64_t map[JBLOCKS];
	struct jnl *j;
};

static int die(const char *what, int err)
{
	fprintf(stderr, "jnl_bench: %s: %s\n", what, strerror(-err));
	exit(1);
}

static void setup(struct bench *b, const char *image, bool async)
{
	struct bdev_open_opts bo = { .block_size = BS, .queue_depth = 128 };
	struct pc_config pcfg = { .block_size = BS, .budget = 256u << 20,
				  .no_flusher = true };
	struct jnl_config jcfg = { .commit_interval_ms = 5000, .async_commit = async };
	uint8_t uuid[16] = { 7 };
	int err;

	if ((err = bdev_open(image, &bo, &b->bd)))
		die("open", err);
	pcfg.data_align = b->bd->dma_align;
	if ((err = pc_cache_create(&pcfg, &b->cache)) ||
	    (err = pc_mapping_create(b->cache, &pc_identity_ops, b->bd, &b->meta)))
		die("page cache", err);
	for (uint32_t i = 0; i < JBLOCKS; i++)
		b->map[i] = 1 + i;
	if ((err = jnl_format(b->bd, b->map, JBLOCKS, uuid, 0x1234)) ||
	    (err = jnl_open(b->bd, b->map, JBLOCKS, &jcfg, &b->j)))
		die("journal", err);
}

static void teardown(struct bench *b)
{
	int err = jnl_close(b->j);

	if (err)
		die("close", err);
	pc_mapping_destroy(b->meta);
	pc_cache_destroy(b->cache);
	bdev_close(b->bd);
}

static void write_block(struct bench *b, struct jnl_handle *h, uint64_t blk,
			uint64_t stamp)
{
	struct pc_page *pg;
	int err;

	if ((err = pc_find_or_create_page(b->meta, blk, &pg)))
		die("page", err);
	SetPageUptodate(pg);
	pc_unlock_page(pg);
	if ((err = jnl_get_write_access(h, pg, blk)))
		die("write access", err);
	memset(pg->data, (int)(stamp & 0xff), BS);
	memcpy(pg->data, &stamp, sizeof(stamp));
	if ((err = jnl_dirty(h, blk)))
		die("dirty", err);
	pc_put_page(pg);
}

static void bench_commits(struct bench *b, double seconds)
{
	uint64_t n = 0, t0 = ut_now_ns(), end = t0 + (uint64_t)(seconds * 1e9);
	struct jnl_handle h;
	int err;

	while (ut_now_ns() < end) {
		if ((err = jnl_start(b->j, 1, &h)))
			die("start", err);
		write_block(b, &h, HOME0 + n % 1024, n);
		jnl_stop(&h);
		if ((err = jnl_commit_wait(b->j, h.h_tid)))
			die("commit", err);
		n++;
	}
	printf("commits/s: %.0f\n", n / ((ut_now_ns() - t0) / 1e9));
}

static void bench_data(struct bench *b, uint64_t mib)
{
	uint64_t blocks = (mib << 20) / BS, t0 = ut_now_ns(), done = 0;
	struct jnl_handle h;
	int err;

	while (done < blocks) {
		uint32_t n = (uint32_t)UT_MIN(256u, blocks - done);

		if ((err = jnl_start(b->j, n, &h)))
			die("start", err);
		for (uint32_t i = 0; i < n; i++, done++)
			write_block(b, &h, HOME0 + done % 16384, done);
		jnl_stop(&h);
	}
	if ((err = jnl_sync(b->j)))
		die("sync", err);
	printf("journalled MB/s: %.1f\n", (double)(blocks * BS) / 1e6 /
	       ((ut_now_ns() - t0) / 1e9));
}

int main(int argc, char **argv)
{
	static struct bench b;

	if (argc != 4 && argc != 5) {
		fprintf(stderr, "usage: jnl_bench IMAGE commits SECONDS [async] | "
			"IMAGE data MIB [async]\n");
		return 2;
	}
	setup(&b, argv[1], argc == 5 && !strcmp(argv[4], "async"));
	if (!strcmp(argv[2], "commits"))
		bench_commits(&b, atof(argv[3]));
	else
		bench_data(&b, strtoull(argv[3], NULL, 10));
	teardown(&b);
	return 0;
}
