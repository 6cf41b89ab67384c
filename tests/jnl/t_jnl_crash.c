/*
 * t_jnl_crash - a recorded journal workload, cut everywhere it can be.
 *
 * Two cases: "strict_commit", and "async_commit" for the one-flush commit.
 *
 * Several hundred handles of mixed sizes (some fsynced, some revoking
 * blocks that are then reused as plain data or journalled again -- in
 * the same transaction too --, some with ordered data) run over the
 * memory device with its write log on.
 *
 * The log itself must show the write ordering: ordered data flushed
 * before the commit block that depends on it, in strict mode the log
 * blocks flushed before their commit block, and every commit block
 * flushed before the fsync that waited for it returned.
 *
 * Then, at every flush in the log, the device is rebuilt as power cuts
 * there would leave it -- all pending writes lost, random subsets of whole
 * writes, torn writes, and random subsets of single blocks -- and each
 * distinct image is recovered once.  Recovery must give
 *   - every transaction whose commit block was durable, or whose fsync
 *     had returned, fully present;
 *   - nothing beyond the transactions whose commit block was written at
 *     all, not even in part;
 *   - ordered data at least as new as the transactions recovered;
 *   - no old copy of a revoked block, and the copies journalled after
 *     its revoke.
 * On a sample of those images recovery itself is recorded and cut (it
 * must give the same result when run again), and the recovered journal
 * is opened, runs more transactions, and is cut again: the second
 * recovery must replay nothing stale.
 */
#include <endian.h>
#include <inttypes.h>
#include <pthread.h>
#include <time.h>

#include "bdev_test.h"
#include "jnl_disk.h"          /* the commit block, to read the log */
#include "t_hashset.h"
#include "t_dev.h"
#include "t_jnl.h"
#include "util.h"

#define BS          1024u
#define DEV_BLOCKS  1504u
#define HOME0       16u
#define NHOME       240u
#define REV0        400u        /* blocks journalled, revoked, then reused */
#define NREV        48u
#define DATA0       460u        /* ordered data, one block per inode */
#define NINODE      8u
#define JSTART      472u
#define JBLOCKS     1024u
#define HANDLES     700u
#define MAX_TID     4096u
#define CHECK_END   (DATA0 + NINODE)
#define SAMPLE_EVERY 211u       /* distinct states per recovery sample */

struct write_rec {
	uint32_t tid;
	uint64_t stamp;
};

/* A write of ordered data: where in the device's log, and what. */
struct data_rec {
	size_t entry;
	uint64_t blk, stamp;
};

/* An fsync that returned: every transaction up to @tid is durable from
 * log entry @pos on. */
struct ack {
	size_t pos;
	uint32_t tid;
};

struct model {
	/* every stamp journalled to each block, in order, with its tid */
	struct write_rec *writes[CHECK_END];
	uint32_t nwrites[CHECK_END];
	uint32_t revoked_tid[CHECK_END];        /* 0: not revoked */
	uint32_t rev_at[CHECK_END];             /* writes before the revoke */
	uint64_t raw_stamp[CHECK_END];          /* reused as data with this */
	size_t raw_flushed[CHECK_END];          /* log count after its flush */
	/* ordered data: dirtied per inode in handles, written at commit */
	struct jnl_inode inode[NINODE];
	struct write_rec *dirtied[NINODE];
	uint32_t ndirtied[NINODE];
	uint64_t unwritten[NINODE];             /* newest stamp dirtied */
	struct data_rec *data;
	size_t ndata;
	pthread_mutex_t lock;                   /* the above, against commits */
	struct ack *acks;
	size_t nacks;
	size_t commit_write[MAX_TID];           /* log entry of the commit block */
	size_t commit_flush[MAX_TID];           /* first flush after it */
	uint64_t commit_blk[MAX_TID];           /* and its device block */
	const void *commit_data[MAX_TID];       /* and content, in the log */
	size_t *durable_at;                     /* per prefix: entries flushed */
	uint32_t max_tid;
	struct tj *t;
};

#define RNG_SEED 0x2545F4914F6CDD1Dull
static uint64_t rng;

static uint32_t rnd(uint32_t n)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (uint32_t)(rng % n);
}

static void *grow_array(void *arr, size_t n, size_t elem)
{
	void *p = realloc(arr, (n + 1) * elem);

	t_assert(p, "no memory");
	return p;
}

static void record_write(struct model *m, uint64_t blk, uint32_t tid, uint64_t stamp)
{
	m->writes[blk] = grow_array(m->writes[blk], m->nwrites[blk], sizeof(struct write_rec));
	m->writes[blk][m->nwrites[blk]++] = (struct write_rec){ tid, stamp };
	if (tid > m->max_tid)
		m->max_tid = tid;
}

/* ---- the workload -------------------------------------------------------- */

/* The newest log entry writing block @blk: another thread may have
 * logged more since. */
static size_t log_entry_of(struct bdev *bd, uint64_t blk)
{
	size_t i = bdev_wrap_log_count(bd);

	while (i-- > 0) {
		const struct bdev_wrap_log_entry *e = bdev_wrap_log(bd, i);

		if (!e->flush && e->off == blk * BS)
			return i;
	}
	t_fail("block %" PRIu64 " was never written", blk);
}

/* The commit asks for an inode's data: write its newest stamp home (at
 * once, so there is nothing left for wait_ordered). */
static int submit_ordered(void *arg, struct jnl_inode *ji)
{
	struct model *m = arg;
	uint64_t blk = DATA0 + ji->ji_ino;
	void *buf = bdev_alloc_buf(BS);
	uint64_t stamp;
	int err;

	if (!buf)
		return -ENOMEM;
	pthread_mutex_lock(&m->lock);
	stamp = m->unwritten[ji->ji_ino];
	tj_fill(buf, BS, blk, stamp);
	err = bdev_write(m->t->bd, blk * BS, buf, BS);
	if (!err) {
		m->data = grow_array(m->data, m->ndata, sizeof(*m->data));
		m->data[m->ndata++] = (struct data_rec){ log_entry_of(m->t->bd, blk), blk, stamp };
	}
	pthread_mutex_unlock(&m->lock);
	bdev_free_buf(buf);
	return err;
}

static void dirty_data(struct model *m, struct jnl_handle *h, uint64_t *stamp)
{
	uint32_t k = rnd(NINODE);

	pthread_mutex_lock(&m->lock);
	m->unwritten[k] = ++*stamp;
	m->dirtied[k] = grow_array(m->dirtied[k], m->ndirtied[k], sizeof(struct write_rec));
	m->dirtied[k][m->ndirtied[k]++] = (struct write_rec){ h->h_tid, *stamp };
	pthread_mutex_unlock(&m->lock);
	t_ok(jnl_add_ordered(h, &m->inode[k]));
}

/* After an fsync returned: note what it acknowledged, and where.  The
 * committed ID is read before the log position, so the flush that made
 * it durable lies within. */
static void ack(struct model *m)
{
	struct jnl_stats st;

	jnl_get_stats(m->t->j, &st);
	m->acks = grow_array(m->acks, m->nacks, sizeof(*m->acks));
	m->acks[m->nacks++] = (struct ack){ bdev_wrap_log_count(m->t->bd), st.committed_tid };
}

/* A block to journal: a plain one, or one of those revoked later.  Odd
 * ones come back after their revoke, even in the same transaction (the
 * journal cancels the revoke); even ones are reused as plain data. */
static bool pick_block(struct model *m, uint64_t *blk)
{
	if (rnd(4) != 0) {
		*blk = HOME0 + rnd(NHOME);
		return true;
	}
	*blk = REV0 + rnd(NREV);
	return !m->revoked_tid[*blk] || *blk % 2;
}

static void one_handle(struct model *m, uint64_t *stamp)
{
	struct tj *t = m->t;
	uint32_t credits = rnd(10) == 0 ? 60 + rnd(60) : 1 + rnd(24);
	uint32_t nwrites = 1 + rnd(credits), k;
	struct jnl_handle h;
	uint64_t blk;

	t_ok(jnl_start(t->j, credits, &h));
	t_assert(h.h_tid < MAX_TID, "tid %u", h.h_tid);
	for (k = 0; k < nwrites; k++) {
		if (!pick_block(m, &blk))
			continue;
		tj_write(t, &h, blk, ++*stamp);
		record_write(m, blk, h.h_tid, *stamp);
	}
	blk = REV0 + rnd(NREV);
	if (k < credits && rnd(3) == 0 && !m->revoked_tid[blk] && m->nwrites[blk]) {
		t_ok(jnl_revoke(&h, blk));
		m->revoked_tid[blk] = h.h_tid;
		m->rev_at[blk] = m->nwrites[blk];
		/* Freed and reallocated at once: the journal cancels the revoke. */
		if (blk % 2 && k + 2 <= credits && rnd(2) == 0) {
			tj_write(t, &h, blk, ++*stamp);
			record_write(m, blk, h.h_tid, *stamp);
		}
	}
	if (rnd(4) == 0)
		dirty_data(m, &h, stamp);
	t_ok(jnl_stop(&h));
	if (rnd(2) == 0) {
		t_ok(jnl_commit_wait(t->j, h.h_tid));
		ack(m);
	}
}

/* A revoked block whose revoke has committed is reused: as plain data
 * (written and flushed outside the journal), or journalled again. */
static void reuse_revoked(struct model *m, uint64_t *stamp)
{
	struct tj *t = m->t;
	struct jnl_stats st;
	void *buf = bdev_alloc_buf(BS);

	jnl_get_stats(t->j, &st);
	for (uint64_t blk = REV0; blk < REV0 + NREV; blk++) {
		if (!m->revoked_tid[blk] || m->raw_stamp[blk] || blk % 2 ||
		    (int32_t)(st.committed_tid - m->revoked_tid[blk]) < 0)
			continue;
		m->raw_stamp[blk] = (1ull << 40) + ++*stamp;
		tj_fill(buf, BS, blk, m->raw_stamp[blk]);
		t_ok(bdev_write(t->bd, blk * BS, buf, BS));
		t_ok(bdev_flush(t->bd));
		m->raw_flushed[blk] = bdev_wrap_log_count(t->bd);
	}
	bdev_free_buf(buf);
}

static void run_workload(struct model *m)
{
	struct tj *t = m->t;
	uint64_t stamp = 0;

	for (uint32_t k = 0; k < NINODE; k++)
		m->inode[k].ji_ino = k;
	t->cfg.submit_ordered = submit_ordered;
	t->cfg.arg = m;
	bdev_wrap_record(t->bd, true);
	tj_open(t);
	for (uint32_t i = 0; i < HANDLES; i++) {
		one_handle(m, &stamp);
		if (i % 7 == 0)
			reuse_revoked(m, &stamp);
	}
	t_ok(jnl_sync(t->j));
	ack(m);
	reuse_revoked(m, &stamp);
	tj_close(t);
}

/* ---- the order of writes and flushes -------------------------------------- */

struct order {
	struct model *m;
	bool strict;
	int32_t jpos[DEV_BLOCKS];       /* device block -> journal block, or -1 */
	size_t written[JBLOCKS];        /* 1 + last log entry writing it */
	size_t last_flush;              /* 1 + the newest flush so far */
	size_t data_seen;               /* ordered data writes passed */
};

/* Log blocks [pos - n, pos) of the ring before the commit block at @pos. */
static void check_body_flushed(struct order *o, uint32_t pos, uint32_t n, uint32_t tid)
{
	for (uint32_t k = 0; k < n; k++) {
		pos = pos == 1 ? JBLOCKS - 1 : pos - 1;
		t_assert(o->written[pos] && o->written[pos] <= o->last_flush,
			 "transaction %u: log block %u was not flushed before its commit "
			 "block was written", tid, pos);
	}
}

/* Every ordered data write so far was flushed before this commit block. */
static void check_data_flushed(struct order *o, size_t entry, uint32_t tid)
{
	struct model *m = o->m;

	for (; o->data_seen < m->ndata && m->data[o->data_seen].entry < entry; o->data_seen++)
		t_assert(m->data[o->data_seen].entry < o->last_flush, "transaction %u: "
			 "ordered data of block %" PRIu64 " (log entry %zu) was not flushed "
			 "before the commit block (entry %zu)", tid, m->data[o->data_seen].blk,
			 m->data[o->data_seen].entry, entry);
}

static void order_block(struct order *o, size_t entry, uint64_t blk, const void *data)
{
	const struct jnl_header *hd = data;
	const struct jnl_commit_block *c = data;
	int32_t pos = blk < DEV_BLOCKS ? o->jpos[blk] : -1;
	uint32_t tid = le32toh(hd->h_sequence);

	if (pos <= 0)
		return;
	if (le32toh(hd->h_magic) == JNL_MAGIC && le32toh(hd->h_blocktype) == JNL_BT_COMMIT &&
	    tid < MAX_TID) {
		o->m->commit_write[tid] = entry + 1;
		o->m->commit_blk[tid] = blk;
		o->m->commit_data[tid] = data;
		o->m->commit_flush[tid] = 0;
		check_data_flushed(o, entry, tid);
		if (o->strict)
			check_body_flushed(o, (uint32_t)pos, le32toh(c->c_blocks), tid);
	}
	o->written[pos] = entry + 1;
}

/* The newest transaction up to @tid that wrote a commit block. */
static uint32_t last_commit_upto(const struct model *m, uint32_t tid)
{
	while (tid > 0 && !m->commit_write[tid])
		tid--;
	return tid;
}

static void check_acks(const struct model *m)
{
	for (size_t i = 0; i < m->nacks; i++) {
		uint32_t tid = last_commit_upto(m, m->acks[i].tid);

		t_assert(!tid || (m->commit_flush[tid] && m->commit_flush[tid] <= m->acks[i].pos),
			 "fsync of transaction %u returned at log entry %zu, before the "
			 "flush of its commit block (entry %zu)", m->acks[i].tid,
			 m->acks[i].pos, m->commit_flush[tid]);
	}
}

/* Walk the log: find each commit block and the flush that made it
 * durable, and check the ordering rules on the way. */
static void check_order(struct model *m, bool strict)
{
	static struct order o;
	size_t n = bdev_wrap_log_count(m->t->bd);

	o = (struct order){ .m = m, .strict = strict };
	memset(o.jpos, 0xff, sizeof(o.jpos));
	for (uint32_t i = 0; i < JBLOCKS; i++)
		o.jpos[m->t->map[i]] = (int32_t)i;
	m->durable_at = calloc(n + 1, sizeof(*m->durable_at));
	t_assert(m->durable_at, "no memory");
	for (size_t i = 0; i < n; i++) {
		const struct bdev_wrap_log_entry *e = bdev_wrap_log(m->t->bd, i);

		m->durable_at[i] = o.last_flush;
		if (e->flush) {
			o.last_flush = i + 1;
			for (uint32_t tid = 1; tid <= m->max_tid; tid++)
				if (m->commit_write[tid] && !m->commit_flush[tid])
					m->commit_flush[tid] = i + 1;
			continue;
		}
		for (size_t off = 0; off < e->len; off += BS)
			order_block(&o, i, (e->off + off) / BS, (const char *)e->data + off);
	}
	m->durable_at[n] = o.last_flush;
	check_acks(m);
}

/* ---- checking one recovered image ----------------------------------------- */

/* Newest tid whose log entry (1-based, 0: never) lies within @prefix. */
static uint32_t newest_within(const size_t *at, uint32_t max_tid, size_t prefix)
{
	uint32_t best = 0;

	for (uint32_t tid = 1; tid <= max_tid; tid++)
		if (at[tid] && at[tid] <= prefix)
			best = tid;
	return best;
}

static uint32_t acked_within(const struct model *m, size_t prefix)
{
	uint32_t best = 0;

	for (size_t i = 0; i < m->nacks && m->acks[i].pos <= prefix; i++)
		best = UT_MAX(best, m->acks[i].tid);
	return best;
}

/* The stamp a block of the image holds, or UINT64_MAX if it is not one
 * tj_fill() made (torn, or foreign). */
static uint64_t stamp_in(const uint8_t *img, uint64_t blk)
{
	static _Alignas(8) uint8_t want[BS];
	const uint8_t *got = img + blk * BS;
	uint64_t w[3];

	memcpy(w, got, sizeof(w));
	if (le64toh(w[0]) != 0x424c4b54u || le64toh(w[1]) != blk) {
		memset(want, 0, BS);
		return memcmp(got, want, BS) ? UINT64_MAX : 0;
	}
	tj_fill(want, BS, blk, le64toh(w[2]));
	return memcmp(got, want, BS) ? UINT64_MAX : le64toh(w[2]);
}

/* The newest stamp in @w[0..n) of a transaction up to @upto, and after
 * @after (0 if none). */
static uint64_t newest_stamp(const struct write_rec *w, uint32_t n, uint32_t after,
			     uint32_t upto)
{
	uint64_t stamp = 0;

	for (uint32_t i = 0; i < n; i++)
		if (w[i].tid > after && w[i].tid <= upto)
			stamp = w[i].stamp;
	return stamp;
}

struct state {
	const uint8_t *img;
	size_t prefix;
	uint32_t got;                   /* transactions recovered up to */
	uint32_t data_upto;             /* ordered data due up to */
	const char *what;
};

static void check_revoked(const struct model *m, const struct state *s, uint64_t blk)
{
	uint32_t rev = m->revoked_tid[blk];
	uint64_t have = stamp_in(s->img, blk);
	uint64_t later = newest_stamp(m->writes[blk] + m->rev_at[blk],
				      m->nwrites[blk] - m->rev_at[blk], 0, s->got);

	if (later || s->got < rev) {
		uint64_t want = later ? later : newest_stamp(m->writes[blk], m->nwrites[blk],
							       0, s->got);

		t_assert(have == want, "%s: revoked block %" PRIu64 " holds %" PRIu64
			 ", expected %" PRIu64 " (transactions up to %u, revoked in %u)",
			 s->what, blk, have, want, s->got, rev);
		return;
	}
	t_assert(!m->raw_flushed[blk] || m->raw_flushed[blk] > s->prefix ||
		 have == m->raw_stamp[blk], "%s: revoked block %" PRIu64 " holds %"
		 PRIu64 ", not its new data", s->what, blk, have);
}

/*
 * Ordered data: the write that a recovered transaction needed was flushed
 * before the cut, and the block holds it or newer -- or is torn by a
 * later write still unflushed at the cut.
 */
static void check_data(const struct model *m, const struct state *s, uint32_t k)
{
	uint64_t blk = DATA0 + k, have = stamp_in(s->img, blk);
	uint64_t need = newest_stamp(m->dirtied[k], m->ndirtied[k], 0, s->data_upto);
	size_t flushed = m->durable_at[s->prefix], i = 0;
	bool pending = false;

	if (!need)
		return;
	while (i < m->ndata && (m->data[i].blk != blk || m->data[i].stamp < need))
		i++;
	t_assert(i < m->ndata && m->data[i].entry < flushed, "%s: transaction %u is "
		 "recovered or acknowledged, but the ordered data it needs in block %"
		 PRIu64 " was not flushed before the cut", s->what, s->data_upto, blk);
	if (have != UINT64_MAX && have >= need)
		return;
	for (; i < m->ndata; i++)
		pending |= m->data[i].blk == blk && m->data[i].entry >= flushed &&
			   m->data[i].entry < s->prefix;
	t_assert(pending, "%s: ordered data block %" PRIu64 " holds %" PRIu64 " while "
		 "transaction %u needs %" PRIu64, s->what, blk, have, s->data_upto, need);
}

static void check_blocks(const struct model *m, const struct state *s)
{
	for (uint64_t blk = HOME0; blk < REV0 + NREV; blk++) {
		uint64_t have = stamp_in(s->img, blk), want;

		if (m->revoked_tid[blk]) {
			check_revoked(m, s, blk);
			continue;
		}
		want = newest_stamp(m->writes[blk], m->nwrites[blk], 0, s->got);
		t_assert(have == want, "%s: block %" PRIu64 " holds stamp %" PRIu64
			 ", expected %" PRIu64 " (transactions up to %u)", s->what, blk,
			 have, want, s->got);
	}
	for (uint32_t k = 0; k < NINODE; k++)
		check_data(m, s, k);
}

/* ---- crash states --------------------------------------------------------- */

struct run {
	struct model *m;
	struct bdev_wrap_crash *cur;
	struct bdev *scratch;           /* the image being recovered */
	struct bdev *rec;               /* a sample's recovery, recorded */
	struct bdev *again;             /* an image cut from that */
	struct t_hashset seen;
	unsigned long states, distinct;
	unsigned long early_commits;    /* a commit block without its blocks */
	unsigned long rec_states, rec_distinct, again_states, again_distinct;
	unsigned int samples;
};

static uint32_t recovered_upto(const struct jnl_recovery *info)
{
	return info->transactions ? info->last_tid : info->first_tid - 1;
}

static void sample_recovery(struct run *r, const struct state *s);
static void free_model(struct model *m);

/* Is the commit block of @tid, whole, in the image?  Recovery writes no
 * log block, so the recovered image tells. */
static bool commit_in(const struct model *m, const uint8_t *img, uint32_t tid)
{
	return m->commit_write[tid] &&
	       !memcmp(img + m->commit_blk[tid] * BS, m->commit_data[tid], BS);
}

/* Recover one crash state of the workload, if its image is new, and
 * check what recovery made of it. */
static void check_state(struct run *r, size_t prefix, enum bdev_cut mode, uint64_t seed)
{
	struct model *m = r->m;
	struct jnl_recovery info;
	uint32_t durable, written, acked = acked_within(m, prefix);
	char what[96];
	struct state s = { .img = bdev_mem_data(r->scratch), .prefix = prefix, .what = what };
	uint64_t h;

	r->states++;
	t_ok(bdev_wrap_crash_next(r->cur, prefix, mode, seed, &h));
	if (!t_hashset_add(&r->seen, h))
		return;
	r->distinct++;
	t_ok(bdev_wrap_crash_copy(r->cur, r->scratch));
	t_ok(jnl_recover(r->scratch, m->t->map, m->t->nblocks, 0, &info));
	snprintf(what, sizeof(what), "prefix %zu mode %d seed %" PRIu64, prefix, mode, seed);
	s.got = recovered_upto(&info);
	/* An acknowledged transaction that logged nothing has no commit
	 * block: the one before it is what must be there. */
	durable = UT_MAX(newest_within(m->commit_flush, m->max_tid, prefix),
			 last_commit_upto(m, acked));
	s.data_upto = UT_MAX(s.got, acked);
	written = newest_within(m->commit_write, m->max_tid, prefix);
	t_assert(s.got >= durable && s.got <= written, "%s: recovered up to tid %u, "
		 "durable or acknowledged %u, written %u (%s)", what, s.got, durable,
		 written, info.end);
	check_blocks(m, &s);
	r->early_commits += s.got < written && commit_in(m, s.img, s.got + 1);
	if (info.transactions && r->distinct % SAMPLE_EVERY == 0)
		sample_recovery(r, &s);
}

/* The sanitizer builds check the cuts around every MISCFS_CRASH_EVERY-th
 * flush (what they add is a memory error on a path, which a sample of the
 * states reaches as well as all of them). */
static size_t flush_step(void)
{
	const char *v = getenv("MISCFS_CRASH_EVERY");

	return v && atoi(v) > 1 ? (size_t)atoi(v) : 1;
}

static void check_all_states(struct run *r)
{
	size_t n = bdev_wrap_log_count(r->m->t->bd), step = flush_step(), nth = 0;

	for (size_t i = 0; i < n; i++) {
		if (!bdev_wrap_log(r->m->t->bd, i)->flush || nth++ % step)
			continue;
		/* Cuts before the flush, then after: the cursor only goes on. */
		check_state(r, i, BDEV_CUT_LOSE_ALL, 0);
		for (uint64_t seed = 1; seed <= 3; seed++)
			check_state(r, i, BDEV_CUT_RANDOM, seed * 7919 + i);
		check_state(r, i, BDEV_CUT_RANDOM_TORN, i);
		for (uint64_t seed = 1; seed <= 4; seed++)
			check_state(r, i, BDEV_CUT_BLOCKS, seed * 104729 + i);
		check_state(r, i + 1, BDEV_CUT_LOSE_ALL, 0);
	}
	check_state(r, n, BDEV_CUT_LOSE_ALL, 0);
}

/* ---- power cuts during recovery, and after running on ------------------- */

#define SESSION_HANDLES 24u
#define AGAIN_STAMP     (1ull << 48)

/* The journal superblock of an image, and the newest transaction ID any
 * header block in its log carries. */
static const struct jnl_superblock *image_sb(const struct tj *t, const uint8_t *img,
					     uint32_t *newest)
{
	*newest = 0;
	for (uint32_t pos = 1; pos < t->nblocks; pos++) {
		const struct jnl_header *h = (const void *)(img + t->map[pos] * BS);
		uint32_t type = le32toh(h->h_blocktype), tid = le32toh(h->h_sequence);

		if (le32toh(h->h_magic) == JNL_MAGIC && type >= JNL_BT_DESCRIPTOR &&
		    type <= JNL_BT_REVOKE && (int32_t)(tid - *newest) > 0)
			*newest = tid;
	}
	return (const void *)(img + t->map[0] * BS);
}

/* A replayed log is empty, and the next ID is past every stale one left
 * in it: no old transaction can pass for a new one. */
static void check_emptied(const struct tj *t, const uint8_t *img, const char *what)
{
	uint32_t newest;
	const struct jnl_superblock *sb = image_sb(t, img, &newest);

	t_assert(!sb->s_start, "%s: the log is not empty after recovery", what);
	t_assert((int32_t)(le32toh(sb->s_sequence) - newest) > 0, "%s: the next transaction "
		 "ID %u is not past ID %u left in the log", what, le32toh(sb->s_sequence),
		 newest);
}

/* Recover @img again and compare with the first recovery's result. */
static void recover_again(struct run *r, struct bdev *img, const uint8_t *first,
			  const char *what)
{
	struct jnl_recovery info;
	const uint8_t *got = bdev_mem_data(img);

	t_ok(jnl_recover(img, r->m->t->map, r->m->t->nblocks, 0, &info));
	for (uint64_t blk = HOME0; blk < CHECK_END; blk++)
		t_assert(!memcmp(got + blk * BS, first + blk * BS, BS), "%s: recovered again, "
			 "block %" PRIu64 " holds %" PRIu64 ", not %" PRIu64 " (%s)", what, blk,
			 stamp_in(got, blk), stamp_in(first, blk), info.end);
	check_emptied(r->m->t, got, what);
}

/* One cut of the sample's recorded recovery. */
static void cut_recovery_at(struct run *r, struct bdev_wrap_crash *cur, size_t prefix,
			    enum bdev_cut mode, uint64_t seed, struct t_hashset *seen,
			    const uint8_t *first)
{
	char what[96];
	uint64_t h;

	r->rec_states++;
	t_ok(bdev_wrap_crash_next(cur, prefix, mode, seed, &h));
	if (!t_hashset_add(seen, h))
		return;
	r->rec_distinct++;
	t_ok(bdev_wrap_crash_copy(cur, r->again));
	snprintf(what, sizeof(what), "sample %u, recovery cut at entry %zu, mode %d seed %"
		 PRIu64, r->samples, prefix, mode, seed);
	recover_again(r, r->again, first, what);
}

/* Cut the recorded recovery of the sampled image at each of its flushes
 * (the replay's, and the journal superblock's at the end): any subset of
 * the writes before a flush is what a cut between them can leave. */
static void cut_recovery(struct run *r, struct bdev *rec, const uint8_t *first)
{
	size_t n = bdev_wrap_log_count(rec);
	struct bdev_wrap_crash *cur;
	struct t_hashset seen = { 0 };

	t_ok(bdev_wrap_crash_begin(rec, &cur));
	for (size_t i = 0; i <= n; i++) {
		if (i < n && !bdev_wrap_log(rec, i)->flush)
			continue;
		cut_recovery_at(r, cur, i, BDEV_CUT_LOSE_ALL, 0, &seen, first);
		for (uint64_t seed = 1; seed <= 4; seed++) {
			cut_recovery_at(r, cur, i, BDEV_CUT_RANDOM, seed + i, &seen, first);
			cut_recovery_at(r, cur, i, BDEV_CUT_BLOCKS, seed * 31 + i, &seen, first);
		}
		cut_recovery_at(r, cur, i, BDEV_CUT_RANDOM_TORN, i, &seen, first);
		cut_recovery_at(r, cur, i + 1, BDEV_CUT_LOSE_ALL, 0, &seen, first);
	}
	bdev_wrap_crash_end(cur);
	t_hashset_free(&seen);
}

/* A journal over @bd with its own page cache, as the mount would make. */
static void attach(struct tj *t2, const struct tj *t, struct bdev *bd)
{
	struct pc_config pcfg = { .block_size = BS, .budget = 8u << 20, .no_flusher = true,
				  .data_align = bd->dma_align };

	*t2 = *t;
	t2->bd = bd;
	t2->j = NULL;
	t2->cfg.submit_ordered = NULL;
	t_ok(pc_cache_create(&pcfg, &t2->cache));
	t_ok(pc_mapping_create(t2->cache, &pc_identity_ops, bd, &t2->meta));
}

static void detach(struct tj *t2)
{
	pc_mapping_destroy(t2->meta);
	pc_cache_destroy(t2->cache);
}

/* Run on from the recovered image: plain handles, half of them fsynced,
 * recorded up to a clean close. */
static void run_on(struct model *m2, struct tj *t2)
{
	uint64_t stamp = AGAIN_STAMP;

	bdev_wrap_record(t2->bd, true);
	tj_open(t2);
	for (uint32_t i = 0; i < SESSION_HANDLES; i++) {
		struct jnl_handle h;
		uint32_t n = 1 + rnd(12);

		t_ok(jnl_start(t2->j, n, &h));
		t_assert(h.h_tid < MAX_TID, "tid %u", h.h_tid);
		for (uint32_t k = 0; k < n; k++) {
			uint64_t blk = HOME0 + rnd(NHOME);

			tj_write(t2, &h, blk, ++stamp);
			record_write(m2, blk, h.h_tid, stamp);
		}
		t_ok(jnl_stop(&h));
		if (rnd(2) == 0) {
			t_ok(jnl_commit_wait(t2->j, h.h_tid));
			ack(m2);
		}
	}
	tj_close(t2);
}

/* One cut of the second session: its transactions on top of @first. */
static void check_again(struct run *r, struct model *m2, struct bdev_wrap_crash *cur,
			const uint8_t *first, size_t prefix, enum bdev_cut mode,
			uint64_t seed, struct t_hashset *seen)
{
	struct jnl_recovery info;
	const uint8_t *img = bdev_mem_data(r->again);
	uint32_t got, durable, written;
	char what[96];
	uint64_t h;

	r->again_states++;
	t_ok(bdev_wrap_crash_next(cur, prefix, mode, seed, &h));
	if (!t_hashset_add(seen, h))
		return;
	r->again_distinct++;
	t_ok(bdev_wrap_crash_copy(cur, r->again));
	t_ok(jnl_recover(r->again, m2->t->map, m2->t->nblocks, 0, &info));
	snprintf(what, sizeof(what), "sample %u, second session cut at %zu, mode %d",
		 r->samples, prefix, mode);
	got = recovered_upto(&info);
	durable = UT_MAX(newest_within(m2->commit_flush, m2->max_tid, prefix),
			 last_commit_upto(m2, acked_within(m2, prefix)));
	written = newest_within(m2->commit_write, m2->max_tid, prefix);
	t_assert(written ? (int32_t)(got - durable) >= 0 && (int32_t)(got - written) <= 0 :
		 !info.transactions, "%s: recovered up to tid %u (%u transactions), "
		 "durable or acknowledged %u, written %u (%s)", what, got,
		 info.transactions, durable, written, info.end);
	for (uint64_t blk = HOME0; blk < CHECK_END; blk++) {
		uint64_t want = newest_stamp(m2->writes[blk], m2->nwrites[blk], 0, got);

		t_assert(want ? stamp_in(img, blk) == want :
			 !memcmp(img + blk * BS, first + blk * BS, BS), "%s: block %" PRIu64
			 " holds %" PRIu64 ", expected %" PRIu64 " (transactions up to %u)",
			 what, blk, stamp_in(img, blk), want, got);
	}
	check_emptied(m2->t, img, what);
}

/* Open the recovered image, run on, and cut that session everywhere. */
static void cut_second_session(struct run *r, struct bdev *img, const uint8_t *first)
{
	static struct model m2;
	struct bdev_wrap_crash *cur;
	struct t_hashset seen = { 0 };
	struct tj t2;
	size_t n;

	memset(&m2, 0, sizeof(m2));
	pthread_mutex_init(&m2.lock, NULL);
	attach(&t2, r->m->t, img);
	m2.t = &t2;
	run_on(&m2, &t2);
	check_order(&m2, !t2.cfg.async_commit);
	n = bdev_wrap_log_count(img);
	t_ok(bdev_wrap_crash_begin(img, &cur));
	for (size_t i = 0; i <= n; i++) {
		if (i < n && !bdev_wrap_log(img, i)->flush)
			continue;
		check_again(r, &m2, cur, first, i, BDEV_CUT_LOSE_ALL, 0, &seen);
		check_again(r, &m2, cur, first, i, BDEV_CUT_RANDOM, i, &seen);
		check_again(r, &m2, cur, first, i, BDEV_CUT_BLOCKS, i, &seen);
		check_again(r, &m2, cur, first, i, BDEV_CUT_BLOCKS, i * 7 + 1, &seen);
		check_again(r, &m2, cur, first, i + 1, BDEV_CUT_LOSE_ALL, 0, &seen);
	}
	bdev_wrap_crash_end(cur);
	t_hashset_free(&seen);
	detach(&t2);
	free_model(&m2);
}

/*
 * The image the cursor holds was just recovered into r->scratch.  Record
 * that recovery on a copy and cut it; then run on from its result and
 * cut again.
 */
static void sample_recovery(struct run *r, const struct state *s)
{
	uint8_t *first = malloc(r->scratch->size);
	struct jnl_recovery info;

	t_assert(first, "no memory");
	r->samples++;
	memcpy(first, s->img, r->scratch->size);
	check_emptied(r->m->t, first, s->what);
	t_ok(bdev_wrap_crash_copy(r->cur, r->rec));
	bdev_wrap_record(r->rec, true);
	t_ok(jnl_recover(r->rec, r->m->t->map, r->m->t->nblocks, 0, &info));
	bdev_wrap_record(r->rec, false);
	t_assert(!memcmp(bdev_mem_data(r->rec), first, r->scratch->size),
		 "%s: recovery is not deterministic", s->what);
	cut_recovery(r, r->rec, first);
	cut_second_session(r, r->scratch, first);
	free(first);
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Blocks journalled again in the transaction that revoked them. */
static uint32_t same_tx_reuses(const struct model *m)
{
	uint32_t n = 0;

	for (uint64_t blk = REV0; blk < REV0 + NREV; blk++)
		for (uint32_t i = m->rev_at[blk]; m->revoked_tid[blk] && i < m->nwrites[blk]; i++)
			n += m->writes[blk][i].tid == m->revoked_tid[blk];
	return n;
}

static void free_model(struct model *m)
{
	for (uint64_t b = 0; b < CHECK_END; b++)
		free(m->writes[b]);
	for (uint32_t k = 0; k < NINODE; k++)
		free(m->dirtied[k]);
	free(m->data);
	free(m->acks);
	free(m->durable_at);
	pthread_mutex_destroy(&m->lock);
}

/*
 * Each mode from the same start, the workload drawn afresh: as when it
 * runs alone, whichever case ran before it.
 */
static void run_mode(bool async_commit)
{
	static struct model m;
	struct run r = { .m = &m };
	struct tj t;
	double t0 = now_s(), t1;

	rng = RNG_SEED;
	memset(&m, 0, sizeof(m));
	pthread_mutex_init(&m.lock, NULL);
	m.t = &t;
	tj_setup(&t, BS, DEV_BLOCKS, JSTART, JBLOCKS, true);
	t.cfg.async_commit = async_commit;
	run_workload(&m);
	t1 = now_s();
	check_order(&m, !t.cfg.async_commit);
	t_assert(m.max_tid >= 300, "only %u transactions", m.max_tid);
	t_assert(m.ndata >= 50, "only %zu ordered data writes", m.ndata);
	r.scratch = t_dev_mem(t.bd->size, BS);
	r.rec = t_dev_mem(t.bd->size, BS);
	r.again = t_dev_mem(t.bd->size, BS);
	t_ok(bdev_wrap_crash_begin(t.bd, &r.cur));
	check_all_states(&r);
	printf("%u transactions, %zu log entries, %zu fsyncs, %zu ordered data writes, "
	       "%u writes of a block after its revoke in the same transaction\n",
	       m.max_tid, bdev_wrap_log_count(t.bd), m.nacks, m.ndata, same_tx_reuses(&m));
	printf("%lu crash states checked, %lu distinct; in %lu a commit block reached "
	       "the disk without all of its transaction\n", r.states, r.distinct,
	       r.early_commits);
	printf("recovery sampled in %u states: cut in recovery %lu (%lu distinct), "
	       "cut after running on %lu (%lu distinct)\n", r.samples, r.rec_states,
	       r.rec_distinct, r.again_states, r.again_distinct);
	printf("%.1f s: workload %.1f s, crash states %.1f s\n", now_s() - t0, t1 - t0,
	       now_s() - t1);
	bdev_wrap_crash_end(r.cur);
	bdev_close(r.scratch);
	bdev_close(r.rec);
	bdev_close(r.again);
	t_hashset_free(&r.seen);
	free_model(&m);
	tj_teardown(&t);
}

static void test_strict_commit(void)
{
	run_mode(false);
}

static void test_async_commit(void)
{
	run_mode(true);
}

T_MAIN_SETUP(mlog_set_level(MLOG_ERR), T_CASE(test_strict_commit), T_CASE(test_async_commit))
