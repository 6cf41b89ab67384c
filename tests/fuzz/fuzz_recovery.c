/*
 * fuzz_recovery - journal recovery over a damaged log never crashes,
 * never writes outside the device and never finds more transactions than
 * the log holds commit blocks.
 *
 * The logs are recorded at start-up from real workloads: strict and
 * asynchronous commits, transactions of two descriptors, revoke blocks,
 * escaped data blocks, blocks journalled again after their revoke.  The
 * input picks one and damages it anywhere in its first LOGSPAN blocks:
 *
 *   byte 0        the log (low bits), make the damaged transactions whole
 *                 again (bit 6, see refit), check-only recovery (bit 7)
 *   then records  1 byte: a header block (even: the k-th, k the next
 *                 byte) or any log block (odd: the next byte, modulo
 *                 LOGSPAN); 2 bytes offset in the block (little-endian);
 *                 1 byte length n; n bytes laid over it (XOR)
 *
 * so that a short input reaches the later blocks of a log as easily as
 * the first, and most damage lands where the parsing is.  Header blocks that still carry the journal magic are
 * resealed, so the damage reaches the descriptor, revoke and commit
 * parsing instead of stopping at a checksum; with bit 6 the tags and
 * commit blocks are made to match too, so it reaches the revoke and
 * replay passes.
 */
#include <endian.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "bdev_test.h"
#include "jnl.h"
#include "jnl_disk.h"
#include "pc.h"

#define BS       1024u
#define DEV      1152u
#define JSTART   64u
#define JBLOCKS  1024u
#define NHOME    60u              /* home blocks 1..NHOME */
#define LOGSPAN  96u              /* log blocks the input may touch */
#define NLOGS    3u

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

static uint8_t *base[NLOGS];
static uint64_t map[JBLOCKS];
static struct bdev *dev;          /* every input's, so no run allocates it */

static void require(int ok)
{
	if (!ok)
		abort();
}

/* ---- recording the logs -------------------------------------------------- */

struct rec {
	struct pc_mapping *m;
	struct jnl *j;
	struct jnl_handle h;
	uint32_t stamp;
};

/* Journal block @blk; every third content begins with the journal's
 * magic, which the log must store escaped. */
static void write_block(struct rec *r, uint64_t blk)
{
	struct pc_page *pg;
	uint32_t magic = htole32(JNL_MAGIC);

	require(!pc_read_cache_page(r->m, blk, &pg));
	require(!jnl_get_write_access(&r->h, pg, blk));
	memset(pg->data, (int)(++r->stamp + blk), BS);
	if (r->stamp % 3 == 0)
		memcpy(pg->data, &magic, sizeof(magic));
	require(!jnl_dirty(&r->h, blk));
	pc_put_page(pg);
}

/* One committed transaction: @n blocks from @first on, @nrev revokes of
 * blocks from @rev on. */
static void tx(struct rec *r, uint32_t n, uint64_t first, uint32_t nrev, uint64_t rev)
{
	require(!jnl_start(r->j, n + nrev, &r->h));
	for (uint32_t b = 0; b < n; b++)
		write_block(r, 1 + (first + b) % NHOME);
	for (uint32_t b = 0; b < nrev; b++)
		require(!jnl_revoke(&r->h, rev + b));
	require(!jnl_stop(&r->h) && !jnl_commit_wait(r->j, r->h.h_tid));
}

/* Small, two descriptors with a revoke, small. */
static void log_mixed(struct rec *r)
{
	tx(r, 3, 0, 0, 0);
	tx(r, 70, 5, 1, 61);
	tx(r, 3, 10, 0, 0);
}

/* Many small ones, revoking blocks that later ones journal again. */
static void log_small(struct rec *r)
{
	for (uint32_t t = 0; t < 12; t++)
		tx(r, 1 + t % 5, t * 7, t % 3 == 0, 1 + (t * 7 + 20) % NHOME);
}

/* A transaction of two revoke blocks between small ones (what it revokes
 * need not have been journalled: recovery only skips copies). */
static void log_revokes(struct rec *r)
{
	tx(r, 4, 0, 0, 0);
	tx(r, 2, 30, 130, 1000);
	tx(r, 5, 40, 0, 0);
}

static void record(uint8_t *img, bool async, void (*workload)(struct rec *))
{
	struct pc_config pcfg = { .block_size = BS, .budget = 4u << 20, .no_flusher = true };
	struct jnl_config jcfg = { .commit_interval_ms = 60000, .async_commit = async };
	uint8_t uuid[16] = { 9 };
	struct pc_cache *c;
	struct rec r = { 0 };
	struct bdev *bd;

	require(!bdev_mem_create((uint64_t)DEV * BS, BS, &bd));
	pcfg.data_align = bd->dma_align;
	require(!pc_cache_create(&pcfg, &c) && !pc_mapping_create(c, &pc_identity_ops, bd, &r.m));
	require(!jnl_format(bd, map, JBLOCKS, uuid, 77) &&
		!jnl_open(bd, map, JBLOCKS, &jcfg, &r.j));
	workload(&r);
	memcpy(img, bdev_mem_data(bd), (size_t)DEV * BS);
	/* The journal is dropped without a checkpoint: the log stays full. */
	jnl_close(r.j);
	pc_mapping_destroy(r.m);
	pc_cache_destroy(c);
	bdev_close(bd);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	static void (*const workloads[NLOGS])(struct rec *) = {
		log_mixed, log_small, log_revokes };

	(void)argc;
	(void)argv;
	for (uint32_t i = 0; i < JBLOCKS; i++)
		map[i] = JSTART + i;
	for (uint32_t i = 0; i < NLOGS; i++) {
		base[i] = malloc((size_t)DEV * BS);
		require(base[i] != NULL);
		record(base[i], i == 1, workloads[i]);
	}
	require(!bdev_mem_create((uint64_t)DEV * BS, BS, &dev));
	return 0;
}

/* ---- one input ----------------------------------------------------------- */

/* The log position of the @k-th header block in the span, counting
 * round; @k itself if there is none. */
static uint32_t header_pos(const uint8_t *img, uint32_t k)
{
	uint32_t pos[LOGSPAN], n = 0;

	for (uint32_t p = 1; p <= LOGSPAN; p++) {
		const struct jnl_header *h = (const void *)(img + map[p] * BS);

		if (le32toh(h->h_magic) == JNL_MAGIC)
			pos[n++] = p;
	}
	return n ? pos[k % n] : 1 + k % LOGSPAN;
}

/* Lay the input's records over the log span of @img. */
static void damage(uint8_t *img, const uint8_t *data, size_t size)
{
	while (size >= 5) {
		uint32_t pos = data[0] & 1 ? 1 + data[1] % LOGSPAN : header_pos(img, data[1]);
		size_t off = (data[2] | (size_t)data[3] << 8) % BS, n = data[4];
		uint8_t *blk = img + map[pos] * BS;

		data += 5;
		size -= 5;
		n = n < size ? n : size;
		for (size_t i = 0; i < n; i++)
			blk[(off + i) % BS] ^= data[i];
		data += n;
		size -= n;
	}
}

/* Reseal every header block in the damaged span with its own ID; count
 * the commit blocks. */
static uint32_t reseal(uint8_t *img)
{
	struct jnl_superblock *sb = (void *)(img + JSTART * BS);
	struct jnl_geom g = { .bs = BS, .seed = le64toh(sb->s_csum_seed) };
	uint32_t commits = 0;

	for (uint32_t pos = 1; pos < JBLOCKS; pos++) {
		struct jnl_header *h = (void *)(img + map[pos] * BS);

		if (le32toh(h->h_magic) != JNL_MAGIC)
			continue;
		if (pos <= LOGSPAN)
			jnl_seal(&g, le32toh(h->h_sequence), h);
		commits += le32toh(h->h_blocktype) == JNL_BT_COMMIT;
	}
	return commits;
}

/* ---- making damaged transactions whole again ------------------------------ */

static uint8_t *log_block(uint8_t *img, uint32_t pos)
{
	return img + map[pos] * BS;
}

/* A data block's tag checksum, of its content with the magic restored. */
static uint32_t data_csum(const struct jnl_geom *g, uint32_t tid, const struct jnl_tag *tag,
			  const uint8_t *blk)
{
	static _Alignas(8) uint8_t buf[BS];
	uint32_t magic = htole32(JNL_MAGIC);

	memcpy(buf, blk, BS);
	if (le32toh(tag->t_flags) & JNL_TAG_ESCAPED)
		memcpy(buf, &magic, sizeof(magic));
	return jnl_data_csum(g, tid, buf);
}

/* Retag the data after the descriptor at @pos, seal it, and add it all to
 * @sum; returns the position after its data, or 0 past the span. */
static uint32_t refit_descriptor(uint8_t *img, const struct jnl_geom *g, uint32_t pos,
				 uint32_t tid, struct jnl_txsum *sum, uint32_t *n)
{
	uint8_t *desc = log_block(img, pos);
	struct jnl_tag *tags = (void *)(desc + sizeof(struct jnl_header));
	uint32_t ntags = 0, per = jnl_tags_per_block(BS);

	while (ntags < per && pos + 1 + ntags <= LOGSPAN) {
		struct jnl_tag *tag = &tags[ntags++];

		tag->t_checksum = htole32(data_csum(g, tid, tag, log_block(img, pos + ntags)));
		if (le32toh(tag->t_flags) & JNL_TAG_LAST)
			break;
	}
	jnl_seal(g, le32toh(((struct jnl_header *)desc)->h_sequence), desc);
	jnl_txsum_add(sum, jnl_seal_of(g, desc));
	for (uint32_t i = 0; i < ntags; i++)
		jnl_txsum_add(sum, le32toh(tags[i].t_checksum));
	*n += 1 + ntags;
	pos += 1 + ntags;
	return pos <= LOGSPAN ? pos : 0;
}

/* Seal the commit block at @pos over the transaction before it. */
static void refit_commit(uint8_t *img, const struct jnl_geom *g, uint32_t pos,
			 struct jnl_txsum *sum, uint32_t n)
{
	struct jnl_commit_block *c = (void *)log_block(img, pos);

	c->c_blocks = htole32(n);
	c->c_data_checksum = htole32(jnl_txsum_final(sum));
	jnl_seal(g, le32toh(c->c_header.h_sequence), c);
}

/*
 * Walk the span as recovery will and make every transaction in it
 * consistent again -- tags, seals, the commit block's count and checksum
 * -- so that damage to block numbers, flags, revoke records and IDs
 * reaches the revoke and replay passes instead of a checksum.
 */
static void refit(uint8_t *img, const struct jnl_geom *g)
{
	struct jnl_txsum sum = { 0 };
	uint32_t pos = 1, n = 0, tid = 0;

	while (pos && pos <= LOGSPAN) {
		struct jnl_header *h = (void *)log_block(img, pos);
		uint32_t type = le32toh(h->h_blocktype);

		if (le32toh(h->h_magic) != JNL_MAGIC || type < JNL_BT_DESCRIPTOR ||
		    type > JNL_BT_REVOKE)
			break;
		if (!sum.state) {
			tid = le32toh(h->h_sequence);
			n = 0;
			require(!jnl_txsum_init(&sum, g, tid));
		}
		if (type == JNL_BT_COMMIT) {
			refit_commit(img, g, pos++, &sum, n);
			continue;
		}
		if (type == JNL_BT_DESCRIPTOR) {
			pos = refit_descriptor(img, g, pos, tid, &sum, &n);
			continue;
		}
		jnl_seal(g, le32toh(h->h_sequence), h);
		jnl_txsum_add(&sum, jnl_seal_of(g, h));
		n++;
		pos++;
	}
	if (sum.state)
		jnl_txsum_final(&sum);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct jnl_recovery info;
	unsigned int flags = size && data[0] & 0x80 ? JNL_RECOVER_CHECK_ONLY : 0;
	uint8_t *img = bdev_mem_data(dev);
	const struct jnl_superblock *sb = (const void *)(img + JSTART * BS);
	struct jnl_geom g = { .bs = BS };
	uint32_t commits;
	int err;

	/* Recovery ends with a flush (or writes nothing), so the device has
	 * no unflushed writes left from the previous input. */
	memcpy(img, base[size ? data[0] % NLOGS : 0], (size_t)DEV * BS);
	if (size)
		damage(img, data + 1, size - 1);
	g.seed = le64toh(sb->s_csum_seed);
	if (size && data[0] & 0x40)
		refit(img, &g);
	commits = reseal(img);
	err = jnl_recover(dev, map, JBLOCKS, flags, &info);
	require(err == 0 || err == -EUCLEAN);
	require(err || info.transactions <= commits);
	return 0;
}
