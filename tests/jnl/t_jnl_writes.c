/*
 * t_jnl_writes - the order of writes and flushes a commit issues, read from
 * the memory device's write log rather than from the state after a cut:
 * a flush between the log blocks and the commit block (strict commit), a
 * flush after the commit block before the fsync returns, ordered data
 * flushed before an asynchronous commit's batch; and the log's free-space
 * rule (one block always stays free).
 */
#include <endian.h>
#include <unistd.h>

#include "bdev_test.h"
#include "jnl_i.h"
#include "t_jnl.h"

#define BS      1024u
#define DEV     4096u
#define JSTART  2048u
#define JBLOCKS 1024u
#define NONE    SIZE_MAX

/* What a log entry of the device wrote, for one transaction. */
struct entry_kind {
	bool flush;
	bool body;                   /* a descriptor, data or revoke block */
	bool commit;                 /* the transaction's commit block */
	bool home;                   /* a block outside the journal */
};

static struct entry_kind classify(const struct bdev_wrap_log_entry *e, uint32_t tid)
{
	struct entry_kind k = { .flush = e->flush };
	uint64_t first = e->off / BS, n = e->len / BS;

	for (uint64_t b = first; !e->flush && b < first + n; b++) {
		const struct jnl_header *h = (const void *)((const char *)e->data +
							     (b - first) * BS);

		if (b < JSTART || b >= JSTART + JBLOCKS)
			k.home = true;
		else if (b == JSTART)
			continue;            /* the journal superblock */
		else if (le32toh(h->h_magic) == JNL_MAGIC &&
			 le32toh(h->h_blocktype) == JNL_BT_COMMIT &&
			 le32toh(h->h_sequence) == tid)
			k.commit = true;
		else
			k.body = true;
	}
	return k;
}

/* Log entries [from, to) of a commit of @tid: where its last body write,
 * its commit block and the flushes around them are. */
struct commit_trace {
	size_t last_body, commit, flush_before, flush_after;
};

static struct commit_trace trace(struct bdev *bd, size_t from, size_t to, uint32_t tid)
{
	struct commit_trace tr = { NONE, NONE, NONE, NONE };

	for (size_t i = from; i < to; i++) {
		struct entry_kind k = classify(bdev_wrap_log(bd, i), tid);

		if (k.body && tr.commit == NONE)
			tr.last_body = i;
		if (k.commit && tr.commit == NONE)
			tr.commit = i;
		if (k.flush && tr.commit == NONE)
			tr.flush_before = i;
		if (k.flush && tr.commit != NONE && tr.flush_after == NONE)
			tr.flush_after = i;
	}
	t_assert(tr.last_body != NONE && tr.commit != NONE,
		 "transaction %u: log blocks at %zu, commit block at %zu", tid,
		 tr.last_body, tr.commit);
	return tr;
}

static void setup(struct tj *t, bool async)
{
	tj_setup(t, BS, DEV, JSTART, JBLOCKS, false);
	t->cfg.async_commit = async;
	bdev_wrap_record(t->bd, true);
}

/* Commit @n blocks from @first on as version @stamp; returns the log
 * entries the commit issued in *from, *to (to: where the fsync returned). */
static uint32_t commit_blocks(struct tj *t, uint64_t first, unsigned n,
			      uint64_t stamp, size_t *from, size_t *to)
{
	struct jnl_handle h;

	t_ok(jnl_start(t->j, n, &h));
	for (unsigned i = 0; i < n; i++)
		tj_write(t, &h, first + i, stamp);
	t_ok(jnl_stop(&h));
	*from = bdev_wrap_log_count(t->bd);
	t_ok(jnl_commit_wait(t->j, h.h_tid));
	*to = bdev_wrap_log_count(t->bd);
	return h.h_tid;
}

/* Strict commit: log blocks, flush, commit block, flush, then the fsync
 * returns.  Two transactions: the first one also moves the journal
 * superblock (with its own flush), the second does not. */
static void test_strict_order(void)
{
	struct tj t;

	setup(&t, false);
	tj_open(&t);
	for (int round = 0; round < 2; round++) {
		size_t from, to;
		uint32_t tid = commit_blocks(&t, 10, 70, round + 1, &from, &to);
		struct commit_trace tr = trace(t.bd, from, to, tid);

		t_assert(tr.flush_before != NONE && tr.flush_before > tr.last_body,
			 "transaction %u: no flush between its last log block (entry "
			 "%zu) and its commit block (entry %zu)", tid, tr.last_body,
			 tr.commit);
		t_assert(tr.flush_after != NONE, "transaction %u: the fsync returned "
			 "(entry %zu) before a flush made the commit block (entry %zu) "
			 "durable", tid, to, tr.commit);
	}
	tj_teardown(&t);
	printf("ok: strict commit: log blocks, flush, commit block, flush, fsync\n");
}

/* Async commit: one batch, one flush, and that flush before the fsync
 * returns. */
static void test_async_order(void)
{
	struct tj t;

	setup(&t, true);
	tj_open(&t);
	for (int round = 0; round < 2; round++) {
		size_t from, to;
		uint32_t tid = commit_blocks(&t, 10, 70, round + 1, &from, &to);
		struct commit_trace tr = trace(t.bd, from, to, tid);

		t_assert(tr.flush_after != NONE, "transaction %u: the fsync returned "
			 "(entry %zu) before a flush made the commit block (entry %zu) "
			 "durable", tid, to, tr.commit);
	}
	tj_teardown(&t);
	printf("ok: async commit: the commit block is flushed before fsync returns\n");
}

/* ---- ordered data -------------------------------------------------------- */

struct ordered_ctx {
	struct tj *t;
	size_t data_at;              /* log entry of the data write */
};

static int write_ordered(void *arg, struct jnl_inode *ji)
{
	struct ordered_ctx *o = arg;
	void *buf = bdev_alloc_buf(BS);
	int err = buf ? 0 : -ENOMEM;

	if (!err) {
		tj_fill(buf, BS, ji->ji_ino, 4242);
		err = bdev_write(o->t->bd, ji->ji_ino * BS, buf, BS);
		bdev_free_buf(buf);
	}
	o->data_at = bdev_wrap_log_count(o->t->bd) - 1;
	return err;
}

/*
 * Async commit writes the log blocks and the commit block in one batch, so
 * a commit block can land while the data it depends on has not: the data
 * must be durable before any of the batch is written.  The second
 * transaction leaves the journal superblock as it is, so no superblock
 * flush can stand in for that one.
 */
static void test_async_ordered_flush(void)
{
	struct tj t;
	struct ordered_ctx o = { .t = &t, .data_at = NONE };
	struct jnl_inode ji = { .ji_ino = 500 };
	struct jnl_handle h;
	size_t from, to, first_log = NONE;

	setup(&t, true);
	t.cfg.submit_ordered = write_ordered;
	t.cfg.arg = &o;
	tj_open(&t);
	commit_blocks(&t, 10, 2, 1, &from, &to);
	t_ok(jnl_start(t.j, 1, &h));
	tj_write(&t, &h, 20, 2);
	t_ok(jnl_add_ordered(&h, &ji));
	t_ok(jnl_stop(&h));
	t_ok(jnl_commit_wait(t.j, h.h_tid));
	to = bdev_wrap_log_count(t.bd);
	t_assert(o.data_at != NONE, "the ordered data was written");
	for (size_t i = o.data_at + 1; i < to && first_log == NONE; i++) {
		struct entry_kind k = classify(bdev_wrap_log(t.bd, i), h.h_tid);

		if (k.body || k.commit)
			first_log = i;
	}
	t_assert(first_log != NONE, "the transaction was logged");
	{
		bool flushed = false;

		for (size_t i = o.data_at + 1; i < first_log; i++)
			flushed |= bdev_wrap_log(t.bd, i)->flush;
		t_assert(flushed, "async commit: no flush between the ordered data "
			 "(entry %zu) and the first log block (entry %zu)", o.data_at,
			 first_log);
	}
	jnl_forget_inode(t.j, &ji);
	tj_teardown(&t);
	printf("ok: async commit flushes ordered data before its batch\n");
}

/* ---- log space ----------------------------------------------------------- */

/*
 * The log keeps one block free, so its head never meets its tail (a full
 * log would look empty).  Reservations are worst cases, so fill the log
 * with committed transactions, then reserve exactly up to the last free
 * block but one (no wait), then one block more (a wait: the oldest
 * transaction is written home to make room).
 */
static void test_log_space(void)
{
	struct tj t;
	struct jnl_handle h;
	struct jnl_stats st;
	uint32_t c = 0, left;
	size_t from, to;

	tj_setup(&t, BS, DEV, JSTART, JBLOCKS, false);
	tj_open(&t);
	for (;;) {
		jnl_get_stats(t.j, &st);
		if (st.log_used + jnl_log_blocks_needed(BS, 60, 60) >= st.log_size - 1)
			break;
		commit_blocks(&t, 100, 60, 1, &from, &to);
	}
	t_eq(st.log_full_waits, 0);
	left = st.log_size - st.log_used - 1;     /* blocks a reservation may take */
	while (jnl_log_blocks_needed(BS, c + 1, c + 1) <= left)
		c++;
	t_assert(c > 0 && jnl_log_blocks_needed(BS, c, c) == left &&
		 jnl_log_blocks_needed(BS, c + 1, c + 1) == left + 1,
		 "credits %u reserve exactly the %u free blocks but one", c, left);
	t_ok(jnl_start(t.j, c, &h));
	for (uint32_t i = 0; i < c; i++)         /* used: none go back */
		tj_write(&t, &h, 500 + i, 1);
	t_ok(jnl_stop(&h));
	jnl_get_stats(t.j, &st);
	t_assert(st.log_full_waits == 0 && st.checkpoints == 0, "a reservation of "
		 "all free blocks but one waited (%lu waits)",
		 (unsigned long)st.log_full_waits);
	t_ok(jnl_start(t.j, 1, &h));              /* the last free block */
	t_ok(jnl_stop(&h));
	jnl_get_stats(t.j, &st);
	t_assert(st.log_full_waits == 1 && st.checkpoints >= 1, "a reservation "
		 "that leaves no free block did not wait for room (%lu waits, %lu "
		 "checkpoints)", (unsigned long)st.log_full_waits,
		 (unsigned long)st.checkpoints);
	tj_teardown(&t);
	printf("ok: the log keeps one block free (%u credits fit, %u do not)\n",
	       c, c + 1);
}

/*
 * Past the checkpoint threshold, the commit thread writes old transactions
 * home by itself: with the log filled to three quarters by committed
 * transactions and no handle asking for room, its use falls back to half
 * or less, and no handle ever waited.
 */
static void test_early_checkpoint(void)
{
	struct tj t;
	struct jnl_stats st;
	size_t from, to;

	tj_setup(&t, BS, DEV, JSTART, JBLOCKS, false);
	t.cfg.checkpoint_percent = 50;
	tj_open(&t);
	for (int i = 0; i < 1000; i++) {
		commit_blocks(&t, 100, 20, 1, &from, &to);
		jnl_get_stats(t.j, &st);
		if (st.log_used * 4 >= st.log_size * 3)
			break;
	}
	for (int waited_ms = 0; waited_ms < 5000; waited_ms += 10) {
		jnl_get_stats(t.j, &st);
		if (st.log_used * 2 <= st.log_size)
			break;
		usleep(10000);
	}
	t_assert(st.log_used * 2 <= st.log_size && st.early_checkpoints > 0 &&
		 st.log_full_waits == 0, "the log stayed %u of %u blocks full "
		 "(%lu early checkpoints, %lu waits for room)", st.log_used,
		 st.log_size, (unsigned long)st.early_checkpoints,
		 (unsigned long)st.log_full_waits);
	tj_teardown(&t);
	printf("ok: the commit thread checkpoints once the log is half full\n");
}

/*
 * A block rewritten and committed again and again (a file overwritten
 * with fsync after every write) leaves each older transaction with
 * nothing the log needs: one checkpoint drops them all together, with no
 * home write, and the log then holds only the newest.
 */
static void test_superseded_dropped(void)
{
	struct tj t;
	struct jnl_stats st;
	size_t from, to, cp_from, cp_to;
	uint32_t first_log_used = 0;

	tj_setup(&t, BS, DEV, JSTART, JBLOCKS, false);
	tj_open(&t);
	for (int i = 0; i < 50; i++) {
		commit_blocks(&t, 100, 1, (uint64_t)i + 1, &from, &to);
		if (!i) {
			jnl_get_stats(t.j, &st);
			first_log_used = st.log_used;
		}
	}
	cp_from = bdev_wrap_log_count(t.bd);
	t_assert(jnl_checkpoint_one(t.j) == 1, "the checkpoint did nothing");
	cp_to = bdev_wrap_log_count(t.bd);
	for (size_t e = cp_from; e < cp_to; e++) {
		const struct bdev_wrap_log_entry *le = bdev_wrap_log(t.bd, e);

		t_assert(!classify(le, 0).home, "a superseded copy was written home "
			 "(log entry %zu)", e);
	}
	jnl_get_stats(t.j, &st);
	t_assert(st.log_used <= first_log_used && st.checkpoints == 49,
		 "after one checkpoint the log holds %u blocks (one transaction "
		 "takes %u) and %lu of 49 superseded transactions left it",
		 st.log_used, first_log_used, (unsigned long)st.checkpoints);
	tj_teardown(&t);
	printf("ok: transactions a newer one superseded leave the log together\n");
}

T_MAIN_SETUP(mlog_set_level(MLOG_ERR), T_CASE(test_strict_order), T_CASE(test_async_order),
	     T_CASE(test_async_ordered_flush), T_CASE(test_log_space),
	     T_CASE(test_early_checkpoint), T_CASE(test_superseded_dropped))
