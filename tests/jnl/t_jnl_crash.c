/*
 * t_jnl_crash - a recorded journal workload, cut at every flush.
 *
 * Run with "async" for the one-flush commit.
 *
 * Several hundred handles of mixed sizes (some fsynced, some revoking
 * blocks that are then reused as plain data) run over the memory device
 * with its write log on.  Then, for every flush in the log, the device is
 * rebuilt as a power cut there would leave it -- all pending writes lost,
 * and several random (also torn) subsets of them kept -- the journal is
 * recovered, and the test checks that
 *   - every transaction whose commit block was durable is fully present,
 *   - no transaction beyond those whose commit block was written at all is
 *     visible, not even in part,
 *   - a revoked block reused as data never gets an old copy back.
 */
#include <endian.h>
#include <inttypes.h>

#include "t_jnl.h"
#include "util.h"

#define BS          1024u
#define DEV_BLOCKS  4096u
#define HOME0       16u
#define NHOME       240u
#define REV0        400u        /* blocks journalled, revoked, then reused */
#define NREV        48u
#define JSTART      2048u
#define JBLOCKS     1024u
#define HANDLES     700u
#define MAX_TID     4096u

struct write_rec {
	uint32_t tid;
	uint64_t stamp;
};

struct model {
	/* every stamp written to each block, in order, with its tid */
	struct write_rec *writes[DEV_BLOCKS];
	uint32_t nwrites[DEV_BLOCKS];
	uint32_t revoked_tid[DEV_BLOCKS];       /* 0: not revoked */
	uint64_t raw_stamp[DEV_BLOCKS];         /* reused as data with this */
	size_t raw_flushed[DEV_BLOCKS];         /* log count after its flush */
	size_t commit_write[MAX_TID];           /* log entry of the commit block */
	size_t commit_flush[MAX_TID];           /* first flush after it */
	uint32_t max_tid;
};

static uint64_t rng = 0x2545F4914F6CDD1Dull;

static uint32_t rnd(uint32_t n)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (uint32_t)(rng % n);
}

static void record_write(struct model *m, uint64_t blk, uint32_t tid, uint64_t stamp)
{
	m->writes[blk] = realloc(m->writes[blk], (m->nwrites[blk] + 1) * sizeof(struct write_rec));
	t_assert(m->writes[blk], "no memory");
	m->writes[blk][m->nwrites[blk]++] = (struct write_rec){ tid, stamp };
	if (tid > m->max_tid)
		m->max_tid = tid;
}

/* ---- the workload -------------------------------------------------------- */

static void one_handle(struct tj *t, struct model *m, uint64_t *stamp)
{
	uint32_t credits = rnd(10) == 0 ? 60 + rnd(60) : 1 + rnd(24);
	uint32_t nwrites = 1 + rnd(credits), k;
	struct jnl_handle h;

	t_ok(jnl_start(t->j, credits, &h));
	t_assert(h.h_tid < MAX_TID, "tid %u", h.h_tid);
	for (k = 0; k < nwrites; k++) {
		uint64_t blk = HOME0 + rnd(NHOME);

		/* Early on, journal the blocks that will be revoked later. */
		if (rnd(4) == 0) {
			blk = REV0 + rnd(NREV);
			if (m->revoked_tid[blk])
				continue;
		}
		tj_write(t, &h, blk, ++*stamp);
		record_write(m, blk, h.h_tid, *stamp);
	}
	if (k < credits && rnd(3) == 0) {
		uint64_t blk = REV0 + rnd(NREV);

		if (!m->revoked_tid[blk] && m->nwrites[blk]) {
			t_ok(jnl_revoke(&h, blk));
			m->revoked_tid[blk] = h.h_tid;
		}
	}
	t_ok(jnl_stop(&h));
	if (rnd(2) == 0)
		t_ok(jnl_commit_wait(t->j, h.h_tid));
}

/* A revoked block whose revoke has committed is reused as plain data. */
static void reuse_revoked(struct tj *t, struct model *m, uint64_t *stamp)
{
	struct jnl_stats st;
	void *buf = bdev_alloc_buf(BS);

	jnl_get_stats(t->j, &st);
	for (uint64_t blk = REV0; blk < REV0 + NREV; blk++) {
		if (!m->revoked_tid[blk] || m->raw_stamp[blk] ||
		    (int32_t)(st.committed_tid - m->revoked_tid[blk]) < 0)
			continue;
		m->raw_stamp[blk] = (1ull << 40) + ++*stamp;
		tj_fill(buf, BS, blk, m->raw_stamp[blk]);
		t_ok(bdev_write(t->bd, blk * BS, buf, BS));
		t_ok(bdev_flush(t->bd));
		m->raw_flushed[blk] = bdev_mem_log_count(t->bd);
	}
	bdev_free_buf(buf);
}

static void run_workload(struct tj *t, struct model *m)
{
	uint64_t stamp = 0;

	bdev_mem_record(t->bd, true);
	tj_open(t);
	for (uint32_t i = 0; i < HANDLES; i++) {
		one_handle(t, m, &stamp);
		if (i % 7 == 0)
			reuse_revoked(t, m, &stamp);
	}
	t_ok(jnl_sync(t->j));
	reuse_revoked(t, m, &stamp);
	tj_close(t);
}

/* ---- reading the log ----------------------------------------------------- */

/* Find each commit block written, and the flush that made it durable. */
static void index_commits(struct tj *t, struct model *m)
{
	size_t n = bdev_mem_log_count(t->bd);

	for (size_t i = 0; i < n; i++) {
		const struct bdev_mem_log_entry *e = bdev_mem_log(t->bd, i);

		for (size_t off = 0; !e->flush && off < e->len; off += BS) {
			const struct jnl_header *hd = (const void *)((const char *)e->data + off);
			uint32_t tid = le32toh(hd->h_sequence);

			if (le32toh(hd->h_magic) != JNL_MAGIC ||
			    le32toh(hd->h_blocktype) != JNL_BT_COMMIT || tid >= MAX_TID)
				continue;
			m->commit_write[tid] = i + 1;
			for (size_t f = i + 1; f < n; f++)
				if (bdev_mem_log(t->bd, f)->flush) {
					m->commit_flush[tid] = f + 1;
					break;
				}
		}
	}
}

/* Newest tid whose log entry (1-based, 0: never) lies within @prefix. */
static uint32_t newest_within(const size_t *at, size_t prefix)
{
	uint32_t best = 0;

	for (uint32_t tid = 1; tid < MAX_TID; tid++)
		if (at[tid] && at[tid] <= prefix)
			best = tid;
	return best;
}

/* ---- checking one crash state --------------------------------------------- */

static uint64_t expected_stamp(const struct model *m, uint64_t blk, uint32_t upto)
{
	uint64_t stamp = 0;

	for (uint32_t i = 0; i < m->nwrites[blk]; i++)
		if (m->writes[blk][i].tid <= upto)
			stamp = m->writes[blk][i].stamp;
	return stamp;
}

static void check_state(struct tj *t, struct model *m, size_t prefix,
			enum bdev_mem_cut mode, uint64_t seed)
{
	struct jnl_recovery info;
	struct bdev *img;
	uint32_t durable = newest_within(m->commit_flush, prefix);
	uint32_t written = newest_within(m->commit_write, prefix);
	uint32_t got;

	t_ok(bdev_mem_crash_image(t->bd, prefix, mode, seed, &img));
	t_ok(jnl_recover(img, t->map, t->nblocks, 0, &info));
	got = info.transactions ? info.last_tid : info.first_tid - 1;
	t_assert(got >= durable && got <= written, "prefix %zu mode %d: recovered up "
		 "to tid %u, durable %u, written %u (%s)", prefix, mode, got, durable,
		 written, info.end);
	for (uint64_t blk = HOME0; blk < REV0 + NREV; blk++) {
		uint64_t have = tj_stamp_of(img, BS, blk);

		if (blk >= REV0 && m->revoked_tid[blk]) {
			t_assert(!m->raw_flushed[blk] || m->raw_flushed[blk] > prefix ||
				 have == m->raw_stamp[blk], "prefix %zu: revoked block %"
				 PRIu64 " holds %" PRIu64 ", not its new data", prefix, blk, have);
			continue;
		}
		t_assert(have == expected_stamp(m, blk, got), "prefix %zu mode %d seed %"
			 PRIu64 ": block %" PRIu64 " holds stamp %" PRIu64 ", expected %"
			 PRIu64 " (transactions up to %u)", prefix, mode, seed, blk, have,
			 expected_stamp(m, blk, got), got);
	}
	bdev_close(img);
}

int main(int argc, char **argv)
{
	static struct model m;
	struct tj t;
	unsigned long states = 0;
	size_t n;

	mlog_set_level(MLOG_ERR);
	tj_setup(&t, BS, DEV_BLOCKS, JSTART, JBLOCKS, true);
	t.cfg.async_commit = argc > 1 && !strcmp(argv[1], "async");
	run_workload(&t, &m);
	index_commits(&t, &m);
	n = bdev_mem_log_count(t.bd);
	t_assert(m.max_tid >= 300, "only %u transactions", m.max_tid);
	for (size_t i = 0; i < n; i++) {
		if (!bdev_mem_log(t.bd, i)->flush)
			continue;
		check_state(&t, &m, i, BDEV_CUT_LOSE_ALL, 0);
		check_state(&t, &m, i + 1, BDEV_CUT_LOSE_ALL, 0);
		for (uint64_t seed = 1; seed <= 3; seed++)
			check_state(&t, &m, i, BDEV_CUT_RANDOM, seed * 7919 + i);
		check_state(&t, &m, i, BDEV_CUT_RANDOM_TORN, i);
		states += 6;
	}
	check_state(&t, &m, n, BDEV_CUT_LOSE_ALL, 0);
	states++;
	printf("%u transactions, %zu log entries\n", m.max_tid, n);
	printf("%lu crash states checked\n", states);
	for (uint64_t b = 0; b < DEV_BLOCKS; b++)
		free(m.writes[b]);
	tj_teardown(&t);
	return 0;
}
