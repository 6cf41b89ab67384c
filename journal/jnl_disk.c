/*
 * jnl_disk.c - checksums and I/O of the journal's log blocks.
 */
#include "jnl_disk.h"

#include <endian.h>
#include <errno.h>
#include <string.h>
#include <xxhash.h>

static uint64_t tx_seed(const struct jnl_geom *g, uint32_t tid)
{
	return g->seed + tid;
}

uint32_t jnl_data_csum(const struct jnl_geom *g, uint32_t tid, const void *blk)
{
	return jnl_csum(tx_seed(g, tid), blk, g->bs);
}

static uint32_t *seal_slot(const struct jnl_geom *g, const void *blk)
{
	return (uint32_t *)((char *)blk + g->bs - 4);
}

uint32_t jnl_seal_of(const struct jnl_geom *g, const void *blk)
{
	return le32toh(*seal_slot(g, blk));
}

void jnl_seal(const struct jnl_geom *g, uint32_t tid, void *blk)
{
	*seal_slot(g, blk) = htole32(jnl_csum(tx_seed(g, tid), blk, g->bs - 4));
}

bool jnl_header_ok(const struct jnl_geom *g, const void *blk, uint32_t type,
		   uint32_t tid)
{
	const struct jnl_header *h = blk;

	return le32toh(h->h_magic) == JNL_MAGIC &&
	       le32toh(h->h_blocktype) == type &&
	       le32toh(h->h_sequence) == tid &&
	       jnl_seal_of(g, blk) == jnl_csum(tx_seed(g, tid), blk, g->bs - 4);
}

void jnl_header_init(void *blk, uint32_t bs, uint32_t type, uint32_t tid)
{
	struct jnl_header *h = blk;

	memset(blk, 0, bs);
	h->h_magic = htole32(JNL_MAGIC);
	h->h_blocktype = htole32(type);
	h->h_sequence = htole32(tid);
}

int jnl_txsum_init(struct jnl_txsum *s, const struct jnl_geom *g, uint32_t tid)
{
	XXH3_state_t *st = XXH3_createState();

	if (!st)
		return -ENOMEM;
	XXH3_64bits_reset_withSeed(st, tx_seed(g, tid));
	s->state = st;
	return 0;
}

void jnl_txsum_add(struct jnl_txsum *s, uint32_t csum)
{
	uint32_t le = htole32(csum);

	XXH3_64bits_update(s->state, &le, sizeof(le));
}

uint32_t jnl_txsum_final(struct jnl_txsum *s)
{
	uint32_t v = (uint32_t)XXH3_64bits_digest(s->state);

	XXH3_freeState(s->state);
	s->state = NULL;
	return v;
}

int jnl_read_block(const struct jnl_geom *g, uint32_t pos, void *buf)
{
	if (pos >= g->nblocks)
		return -EINVAL;
	return bdev_read(g->bd, g->map[pos] * g->bs, buf, g->bs);
}

int jnl_write_block(const struct jnl_geom *g, uint32_t pos, const void *buf)
{
	if (pos >= g->nblocks)
		return -EINVAL;
	return bdev_write(g->bd, g->map[pos] * g->bs, buf, g->bs);
}
