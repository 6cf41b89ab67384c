/*
 * fuzz_recovery - journal recovery over a damaged log never crashes,
 * never writes outside the device and never finds more transactions than
 * were written.  The input is laid (XOR) over the log of a journal holding
 * three committed transactions; header blocks that still carry the journal
 * magic are resealed, so the damage reaches the descriptor, revoke and
 * commit parsing instead of stopping at a checksum.
 */
#include <endian.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "jnl.h"
#include "jnl_disk.h"
#include "pc.h"

#define BS       1024u
#define DEV      1152u
#define JSTART   64u
#define JBLOCKS  1024u
#define LOGSPAN  96u              /* log blocks the input may touch */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

static uint8_t *base;
static uint64_t map[JBLOCKS];

static void require(int ok)
{
	if (!ok)
		abort();
}

static void write_block(struct jnl_handle *h, struct pc_mapping *m, uint64_t blk)
{
	struct pc_page *pg;

	require(!pc_read_cache_page(m, blk, &pg));
	require(!jnl_get_write_access(h, pg, blk));
	memset(pg->data, (int)blk, BS);
	require(!jnl_dirty(h, blk));
	pc_put_page(pg);
}

/* Three transactions: small, two descriptors with a revoke, small. */
static void build(struct bdev *bd)
{
	struct pc_config pcfg = { .block_size = BS, .budget = 4u << 20, .no_flusher = true };
	struct jnl_config jcfg = { .commit_interval_ms = 60000 };
	uint8_t uuid[16] = { 9 };
	struct pc_cache *c;
	struct pc_mapping *m;
	struct jnl_handle h;
	struct jnl *j;

	pcfg.data_align = bd->dma_align;
	require(!pc_cache_create(&pcfg, &c) && !pc_mapping_create(c, &pc_identity_ops, bd, &m));
	require(!jnl_format(bd, map, JBLOCKS, uuid, 77) && !jnl_open(bd, map, JBLOCKS, &jcfg, &j));
	for (int t = 0; t < 3; t++) {
		require(!jnl_start(j, 80, &h));
		for (uint64_t b = 0; b < (t == 1 ? 70u : 3u); b++)
			write_block(&h, m, 1 + (b + (uint64_t)t * 5) % 60);
		if (t == 1)
			require(!jnl_revoke(&h, 61));
		require(!jnl_stop(&h) && !jnl_commit_wait(j, h.h_tid));
	}
	memcpy(base, bdev_mem_data(bd), (size_t)DEV * BS);
	/* The journal is dropped without a checkpoint: the log stays full. */
	jnl_close(j);
	pc_mapping_destroy(m);
	pc_cache_destroy(c);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	struct bdev *bd;

	for (uint32_t i = 0; i < JBLOCKS; i++)
		map[i] = JSTART + i;
	base = malloc((size_t)DEV * BS);
	require(base != NULL);
	require(!bdev_mem_create((uint64_t)DEV * BS, BS, &bd));
	build(bd);
	bdev_close(bd);
	return 0;
}

/* Reseal every header block in the damaged span with its own ID. */
static void reseal(uint8_t *img)
{
	struct jnl_superblock *sb = (void *)(img + JSTART * BS);
	struct jnl_geom g = { .bs = BS, .seed = le64toh(sb->s_csum_seed) };

	for (uint32_t pos = 1; pos <= LOGSPAN; pos++) {
		struct jnl_header *h = (void *)(img + map[pos] * BS);

		if (le32toh(h->h_magic) == JNL_MAGIC)
			jnl_seal(&g, le32toh(h->h_sequence), h);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct jnl_recovery info;
	struct bdev *bd;
	uint8_t *img;
	int err;

	require(!bdev_mem_create((uint64_t)DEV * BS, BS, &bd));
	img = bdev_mem_data(bd);
	memcpy(img, base, (size_t)DEV * BS);
	for (size_t i = 0; i < size && i < (size_t)LOGSPAN * BS; i++)
		img[(JSTART + 1) * BS + i] ^= data[i];
	reseal(img);
	err = jnl_recover(bd, map, JBLOCKS, size && data[0] & 1 ? JNL_RECOVER_CHECK_ONLY : 0,
			  &info);
	require(err == 0 || err == -EUCLEAN);
	require(err || info.transactions <= 3);
	bdev_close(bd);
	return 0;
}
