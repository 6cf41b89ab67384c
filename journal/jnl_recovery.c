/*
 * jnl_recovery.c - replaying the journal after a crash.
 *
 * Recovery is done in three passes over the log, from s_start:
 *
 *   SCAN    find the run of complete transactions: every header block
 *           sealed, every data block matching its tag, and a commit block
 *           whose block count and transaction checksum agree.  The first
 *           transaction that is torn or does not match ends the log.
 *   REVOKE  collect every revoked block with the newest transaction that
 *           revoked it.
 *   REPLAY  write each journalled block home, in log order (so the newest
 *           copy wins), unless a transaction at least as new revoked it.
 *
 * Only SCAN trusts nothing; the later passes walk what SCAN accepted.
 * The same code serves the mount and fsck.
 */
#include <endian.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "jnl.h"
#include "jnl_disk.h"
#include "util.h"

enum pass { PASS_SCAN, PASS_REVOKE, PASS_REPLAY };

/* Block number -> newest revoking transaction, open addressing. */
struct revoke_table {
	uint64_t *blk;               /* UINT64_MAX: empty slot */
	uint32_t *tid;
	size_t cap, count;
};

/*
 * Blocks to write home, sent as one batch when full.  A block that comes
 * back in a newer transaction replaces its pending copy, so a batch never
 * holds two writes of one block (their order would be the device's).
 */
#define REPLAY_BATCH 256u

struct replay_batch {
	uint64_t home[REPLAY_BATCH];
	uint8_t *data;               /* REPLAY_BATCH blocks */
	uint32_t n;
};

struct recovery {
	struct jnl_geom g;
	uint64_t home_end;           /* logged blocks' homes lie below it */
	struct jnl_superblock sb;
	struct jnl_recovery *info;
	struct revoke_table rt;
	uint8_t *desc;               /* the current descriptor or revoke block */
	uint8_t *blk;                /* a data block */
	uint32_t end_tid;            /* the ID after the last good transaction */
	struct replay_batch batch;
};

/* Transaction IDs wrap: compare them as a circle. */
static bool tid_geq(uint32_t a, uint32_t b)
{
	return (int32_t)(a - b) >= 0;
}

static void end_log(struct recovery *r, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void end_log(struct recovery *r, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(r->info->end, sizeof(r->info->end), fmt, ap);
	va_end(ap);
}

/* ---- the revoke table ---------------------------------------------------- */

static size_t rt_slot(const struct revoke_table *t, uint64_t blk)
{
	size_t i = (size_t)(blk * 0x9E3779B97F4A7C15ull) & (t->cap - 1);

	while (t->blk[i] != UINT64_MAX && t->blk[i] != blk)
		i = (i + 1) & (t->cap - 1);
	return i;
}

static int rt_grow(struct revoke_table *t)
{
	struct revoke_table n = { .cap = t->cap ? t->cap * 2 : 256 };

	n.blk = malloc(n.cap * sizeof(*n.blk));
	n.tid = malloc(n.cap * sizeof(*n.tid));
	if (!n.blk || !n.tid) {
		free(n.blk);
		free(n.tid);
		return -ENOMEM;
	}
	memset(n.blk, 0xff, n.cap * sizeof(*n.blk));
	for (size_t i = 0; i < t->cap; i++) {
		if (t->blk[i] == UINT64_MAX)
			continue;
		size_t s = rt_slot(&n, t->blk[i]);
		n.blk[s] = t->blk[i];
		n.tid[s] = t->tid[i];
		n.count++;
	}
	free(t->blk);
	free(t->tid);
	*t = n;
	return 0;
}

static int rt_add(struct revoke_table *t, uint64_t blk, uint32_t tid)
{
	size_t s;

	if ((t->count + 1) * 2 > t->cap && rt_grow(t))
		return -ENOMEM;
	s = rt_slot(t, blk);
	if (t->blk[s] == UINT64_MAX) {
		t->blk[s] = blk;
		t->tid[s] = tid;
		t->count++;
	} else if (tid_geq(tid, t->tid[s])) {
		t->tid[s] = tid;
	}
	return 0;
}

static bool rt_revoked(const struct revoke_table *t, uint64_t blk, uint32_t tid)
{
	size_t s;

	if (!t->cap)
		return false;
	s = rt_slot(t, blk);
	return t->blk[s] == blk && tid_geq(t->tid[s], tid);
}

/* ---- replay writes ------------------------------------------------------- */

static int batch_flush(struct recovery *r)
{
	struct replay_batch *b = &r->batch;
	struct bdev_req reqs[REPLAY_BATCH], *ptrs[REPLAY_BATCH];
	int err;

	for (uint32_t i = 0; i < b->n; i++) {
		bdev_req_init(&reqs[i], BDEV_OP_WRITE, b->home[i] * r->g.bs,
			      b->data + (size_t)i * r->g.bs, r->g.bs);
		ptrs[i] = &reqs[i];
	}
	err = b->n ? bdev_submit_wait(r->g.bd, ptrs, b->n) : 0;
	b->n = 0;
	return err;
}

/* Queue r->blk for block @home. */
static int batch_add(struct recovery *r, uint64_t home)
{
	struct replay_batch *b = &r->batch;
	uint32_t i = 0;
	int err = 0;

	while (i < b->n && b->home[i] != home)
		i++;
	if (i == REPLAY_BATCH) {
		err = batch_flush(r);
		i = 0;
	}
	if (i == b->n)
		b->home[b->n++] = home;
	memcpy(b->data + (size_t)i * r->g.bs, r->blk, r->g.bs);
	return err;
}

/* ---- walking one transaction --------------------------------------------- */

struct tx_walk {
	uint32_t tid;
	uint32_t pos;                /* next log block */
	uint32_t nblocks;            /* log blocks before the commit block */
	struct jnl_txsum sum;
};

static void unescape(struct recovery *r, const struct jnl_tag *tag)
{
	if (le32toh(tag->t_flags) & JNL_TAG_ESCAPED) {
		uint32_t magic = htole32(JNL_MAGIC);

		memcpy(r->blk, &magic, sizeof(magic));
	}
}

/* One data block described by @tag: check it (SCAN) or write it (REPLAY). */
static int walk_data(struct recovery *r, struct tx_walk *w,
		     const struct jnl_tag *tag, enum pass pass)
{
	uint64_t home = le64toh(tag->t_blocknr);
	int err;

	if (pass != PASS_REVOKE) {
		err = jnl_read_block(&r->g, w->pos, r->blk);
		if (err)
			return err;
		unescape(r, tag);
	}
	if (pass == PASS_SCAN &&
	    jnl_data_csum(&r->g, w->tid, r->blk) != le32toh(tag->t_checksum)) {
		end_log(r, "transaction %" PRIu32 ": data block at log block %" PRIu32
			" (home block %" PRIu64 ") fails its checksum", w->tid, w->pos, home);
		return 1;
	}
	if (pass == PASS_SCAN && home >= r->home_end) {
		end_log(r, "transaction %" PRIu32 ": tag at log block %" PRIu32
			" names block %" PRIu64 ", beyond the %" PRIu64 " blocks the "
			"journal covers", w->tid, w->pos, home, r->home_end);
		return 1;
	}
	if (pass == PASS_REPLAY && rt_revoked(&r->rt, home, w->tid))
		r->info->revoked++;
	else if (pass == PASS_REPLAY) {
		err = batch_add(r, home);
		if (err)
			return err;
		r->info->replayed++;
	}
	jnl_txsum_add(&w->sum, le32toh(tag->t_checksum));
	w->pos = jnl_next(&r->g, w->pos);
	w->nblocks++;
	return 0;
}

static int walk_descriptor(struct recovery *r, struct tx_walk *w, enum pass pass)
{
	const struct jnl_tag *tag = (const void *)(r->desc + sizeof(struct jnl_header));
	uint32_t n = jnl_tags_per_block(r->g.bs);
	int err = 0;

	for (uint32_t i = 0; i < n && !err; i++, tag++) {
		err = walk_data(r, w, tag, pass);
		if (le32toh(tag->t_flags) & JNL_TAG_LAST)
			break;
	}
	return err;
}

static int walk_revoke(struct recovery *r, struct tx_walk *w, enum pass pass)
{
	const struct jnl_revoke_header *h = (const void *)r->desc;
	uint32_t used = le32toh(h->r_count);

	if (used < JNL_REVOKE_FIRST || used > r->g.bs - 4 || (used - JNL_REVOKE_FIRST) % 8) {
		end_log(r, "transaction %" PRIu32 ": revoke block at log block %" PRIu32
			" has a bad length %" PRIu32, w->tid, w->pos, used);
		return 1;
	}
	for (uint32_t off = JNL_REVOKE_FIRST; pass == PASS_REVOKE && off < used; off += 8) {
		uint64_t blk;

		memcpy(&blk, r->desc + off, 8);
		if (rt_add(&r->rt, le64toh(blk), w->tid))
			return -ENOMEM;
	}
	return 0;
}

static int walk_commit(struct recovery *r, struct tx_walk *w, uint32_t *data_sum)
{
	const struct jnl_commit_block *c = (const void *)r->desc;

	*data_sum = jnl_txsum_final(&w->sum);
	if (le32toh(c->c_blocks) != w->nblocks || le32toh(c->c_data_checksum) != *data_sum) {
		end_log(r, "transaction %" PRIu32 ": commit block at log block %" PRIu32
			" does not match the transaction (%" PRIu32 " of %" PRIu32
			" blocks, or a data checksum mismatch)", w->tid, w->pos,
			w->nblocks, le32toh(c->c_blocks));
		return 1;
	}
	w->pos = jnl_next(&r->g, w->pos);
	return 0;
}

static const char *kind_name(uint32_t type)
{
	switch (type) {
	case JNL_BT_DESCRIPTOR: return "descriptor";
	case JNL_BT_COMMIT: return "commit";
	case JNL_BT_REVOKE: return "revoke";
	default: return "unknown";
	}
}

/* The header block at w->pos: which kind, or 0 if it ends the log (and
 * why: the end of the log, a torn transaction, or a damaged block). */
static uint32_t header_kind(struct recovery *r, struct tx_walk *w)
{
	const struct jnl_header *h = (const void *)r->desc;
	uint32_t type = le32toh(h->h_blocktype);

	if (le32toh(h->h_magic) == JNL_MAGIC && le32toh(h->h_sequence) == w->tid &&
	    type >= JNL_BT_DESCRIPTOR && type <= JNL_BT_REVOKE) {
		if (jnl_header_ok(&r->g, r->desc, type, w->tid))
			return type;
		end_log(r, "transaction %" PRIu32 ": %s block at log block %" PRIu32
			" fails its checksum", w->tid, kind_name(type), w->pos);
	} else if (!w->nblocks) {
		end_log(r, "no transaction %" PRIu32 " at log block %" PRIu32,
			w->tid, w->pos);
	} else {
		end_log(r, "transaction %" PRIu32 " is incomplete: log block %" PRIu32
			" is not a valid descriptor, revoke or commit block", w->tid, w->pos);
	}
	return 0;
}

/*
 * A transaction may begin with a higher ID than expected: transactions
 * that had nothing to log (only ordered data, or nothing at all) took an
 * ID without writing a block.  IDs only grow, and recovery moves the next
 * ID past anything an earlier pass over the log could have left, so a
 * higher ID at the expected place is the next transaction.
 */
static void adopt_tid(struct recovery *r, struct tx_walk *w)
{
	const struct jnl_header *h = (const void *)r->desc;
	uint32_t tid = le32toh(h->h_sequence), type = le32toh(h->h_blocktype);

	if (le32toh(h->h_magic) == JNL_MAGIC && (int32_t)(tid - w->tid) > 0 &&
	    type >= JNL_BT_DESCRIPTOR && type <= JNL_BT_REVOKE &&
	    jnl_header_ok(&r->g, r->desc, type, tid))
		w->tid = tid;
}

/*
 * Walk the transaction at w->pos.  Returns 0 when it is complete (w->pos
 * then points past its commit block), 1 when it ends the log, or -errno.
 */
static int walk_tx(struct recovery *r, struct tx_walk *w, enum pass pass)
{
	uint32_t data_sum;
	int err = jnl_read_block(&r->g, w->pos, r->desc);

	if (err)
		return err;
	adopt_tid(r, w);
	err = jnl_txsum_init(&w->sum, &r->g, w->tid);
	for (bool first = true; !err; first = false) {
		uint32_t kind;

		if (w->nblocks >= r->g.nblocks - r->g.first) {
			end_log(r, "transaction %" PRIu32 " is longer than the log", w->tid);
			err = 1;
			break;
		}
		if (!first && (err = jnl_read_block(&r->g, w->pos, r->desc)))
			break;
		kind = header_kind(r, w);
		if (kind == JNL_BT_COMMIT)
			return walk_commit(r, w, &data_sum);
		if (!kind) {
			err = 1;
			break;
		}
		jnl_txsum_add(&w->sum, jnl_seal_of(&r->g, r->desc));
		w->pos = jnl_next(&r->g, w->pos);
		w->nblocks++;
		err = kind == JNL_BT_DESCRIPTOR ? walk_descriptor(r, w, pass)
						: walk_revoke(r, w, pass);
	}
	jnl_txsum_final(&w->sum);
	return err;
}

/* ---- the passes ---------------------------------------------------------- */

/* SCAN counts the complete transactions; the later passes walk exactly
 * those, and never into the one that ended the log. */
static int run_pass(struct recovery *r, enum pass pass)
{
	struct tx_walk w = { .tid = le32toh(r->sb.s_sequence),
			     .pos = le32toh(r->sb.s_start) };
	uint32_t walked = 0, done = 0;
	int err = 0;

	while (pass == PASS_SCAN || done < r->info->transactions) {
		w.nblocks = 0;
		err = walk_tx(r, &w, pass);
		if (err)
			break;
		done++;
		if (pass == PASS_SCAN)
			r->info->last_tid = w.tid;
		walked += w.nblocks + 1;
		w.tid++;
		if (walked >= r->g.nblocks - r->g.first) {
			end_log(r, "the log wrapped onto itself after transaction %"
				PRIu32, w.tid - 1);
			break;
		}
	}
	if (pass == PASS_SCAN) {
		r->info->transactions = done;
		r->end_tid = w.tid;
	}
	return err < 0 ? err : 0;
}

static int load_sb(struct recovery *r, struct bdev *bd, const uint64_t *map,
		   uint32_t nblocks)
{
	char why[200];
	int err;

	r->g = (struct jnl_geom){ .bd = bd, .map = map, .nblocks = nblocks,
				  .bs = bd->block_size };
	err = jnl_read_block(&r->g, 0, r->blk);
	if (err)
		return err;
	memcpy(&r->sb, r->blk, sizeof(r->sb));
	if (jnl_sb_check(&r->sb, nblocks, bd->block_size, why, sizeof(why))) {
		mlog_err("%s; the journal is not replayed", why);
		return -EUCLEAN;
	}
	r->g.first = le32toh(r->sb.s_first);
	r->g.seed = le64toh(r->sb.s_csum_seed);
	return 0;
}

/* Replay what SCAN accepted, flush, and mark the log empty. */
static int replay(struct recovery *r)
{
	int err = run_pass(r, PASS_REVOKE);

	if (!err)
		err = run_pass(r, PASS_REPLAY);
	if (!err)
		err = batch_flush(r);
	if (!err)
		err = bdev_flush(r->g.bd);
	if (err)
		return err;
	/* Every ID an earlier pass over the log can have left is below this
	 * (each transaction takes at least one block), so none of them can
	 * pass for a future transaction. */
	r->sb.s_start = 0;
	r->sb.s_sequence = htole32(r->end_tid + r->g.nblocks);
	return jnl_sb_write(&r->g, &r->sb);
}

static int recover(struct recovery *r, struct bdev *bd, const uint64_t *map,
		   uint32_t nblocks, unsigned int flags)
{
	int err = load_sb(r, bd, map, nblocks);

	if (err)
		return err;
	r->info->first_tid = le32toh(r->sb.s_sequence);
	r->info->jnl_errno = (int32_t)le32toh(r->sb.s_errno);
	if (!r->sb.s_start) {
		r->info->was_empty = true;
		snprintf(r->info->end, sizeof(r->info->end), "the log is empty");
		return 0;
	}
	err = run_pass(r, PASS_SCAN);
	if (err)
		return err;
	return flags & JNL_RECOVER_CHECK_ONLY ? 0 : replay(r);
}

int jnl_recover(struct bdev *bd, const uint64_t *map, uint32_t nblocks,
		unsigned int flags, struct jnl_recovery *info)
{
	return jnl_recover_within(bd, map, nblocks, 0, flags, info);
}

int jnl_recover_within(struct bdev *bd, const uint64_t *map, uint32_t nblocks,
		       uint64_t home_end, unsigned int flags, struct jnl_recovery *info)
{
	uint64_t dev_end = bd->size / bd->block_size;
	struct recovery r = { .info = info,
			      .home_end = home_end && home_end < dev_end ? home_end : dev_end };
	int err = -ENOMEM;

	memset(info, 0, sizeof(*info));
	r.desc = bdev_alloc_buf(bd->block_size);
	r.blk = bdev_alloc_buf(bd->block_size);
	r.batch.data = bdev_alloc_buf((size_t)REPLAY_BATCH * bd->block_size);
	if (r.desc && r.blk && r.batch.data)
		err = recover(&r, bd, map, nblocks, flags);
	bdev_free_buf(r.desc);
	bdev_free_buf(r.blk);
	bdev_free_buf(r.batch.data);
	free(r.rt.blk);
	free(r.rt.tid);
	return err;
}
