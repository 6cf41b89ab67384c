/*
 * t_jnl_api - each part of the journal on its own: handles and credits,
 * commit and fsync, escaping, multi-descriptor transactions, revoke,
 * ordered data, wrapping with checkpoints, close, and I/O errors.
 */
#include <endian.h>
#include <inttypes.h>
#include <unistd.h>

#include "bdev_test.h"
#include "t_jnl.h"
#include "util.h"

#define BS      1024u
#define DEV     4096u
#define JSTART  2048u
#define JBLOCKS 1024u

static void setup(struct tj *t)
{
	tj_setup(t, BS, DEV, JSTART, JBLOCKS, false);
	if (t_dev_is_mem())
		bdev_wrap_record(t->bd, true);
	tj_open(t);
}

/* Before the case allocates anything: a skip leaves the case. */
static void need_mem(void)
{
	if (!t_dev_is_mem())
		t_skip_case("needs the memory device's log or faults");
}

static void test_commit_and_recover(void)
{
	struct tj t;
	struct jnl_handle h;
	struct jnl_recovery info;
	struct bdev *img;

	need_mem();
	setup(&t);
	t_ok(jnl_start(t.j, 3, &h));
	tj_write(&t, &h, 10, 1);
	tj_write(&t, &h, 11, 2);
	tj_write(&t, &h, 10, 3);              /* again: no second credit */
	t_eq(h.h_used, 2);
	t_ok(jnl_stop(&h));
	t_assert(tj_holds(t.bd, BS, 10, 0), "home untouched before checkpoint");
	t_ok(jnl_commit_wait(t.j, h.h_tid));
	t_assert(tj_holds(t.bd, BS, 10, 0), "commit writes only the log");
	img = tj_crash_now(&t, &info);
	t_eq(info.transactions, 1);
	t_eq(info.replayed, 2);
	t_assert(tj_holds(img, BS, 10, 3) && tj_holds(img, BS, 11, 2), "replayed");
	bdev_close(img);
	tj_close(&t);
	t_assert(tj_holds(t.bd, BS, 10, 3) && tj_holds(t.bd, BS, 11, 2), "home after close");
	img = tj_crash_now(&t, &info);
	t_assert(info.was_empty, "log empty after close");
	bdev_close(img);
	tj_teardown(&t);
	printf("ok: commit, fsync, recovery, close\n");
}

static void test_limits(void)
{
	struct tj t;
	struct jnl_handle h;
	struct jnl_stats st;

	setup(&t);
	jnl_get_stats(t.j, &st);
	t_eq(jnl_start(t.j, JBLOCKS, &h), -ENOSPC);     /* more than a transaction */
	t_ok(jnl_start(t.j, 2, &h));
	tj_write(&t, &h, 20, 1);
	tj_write(&t, &h, 21, 1);
	{
		struct pc_page *pg;

		t_ok(pc_read_cache_page(t.meta, 22, &pg));
		t_eq(jnl_get_write_access(&h, pg, 22), -ENOSPC);
		pc_put_page(pg);
	}
	t_eq(jnl_revoke(&h, 30), -ENOSPC);
	t_eq(jnl_dirty(&h, 23), -EINVAL);              /* no write access asked */
	t_eq(jnl_stop(&h), -ENOSPC);
	tj_teardown(&t);
	printf("ok: credit limits\n");
}

static char logged[1024];

static void keep_line(enum mlog_level level, const char *line, void *arg)
{
	(void)level;
	(void)arg;
	snprintf(logged, sizeof(logged), "%s", line);
}

/* Two callers, one of which holds its handles longer. */
static void quick_caller(struct tj *t)
{
	struct jnl_handle h;

	t_ok(jnl_start(t->j, 1, &h));
	t_ok(jnl_stop(&h));
}

static void slow_caller(struct tj *t)
{
	struct jnl_handle h;

	t_ok(jnl_start(t->j, 1, &h));
	usleep(20000);
	t_ok(jnl_stop(&h));
}

/* Each handle is counted by the function that started it; the callers
 * that held one longest come first, and a handle that overruns its
 * credits is named by its caller. */
static void test_callers(void)
{
	struct jnl_caller_stats c[4];
	struct jnl_handle h;
	struct tj t;
	unsigned int n;

	setup(&t);
	for (int i = 0; i < 3; i++)
		quick_caller(&t);
	slow_caller(&t);
	n = jnl_get_caller_stats(t.j, c, 4);
	t_eq(n, 2);
	t_assert(!strcmp(c[0].caller, "slow_caller") && !strcmp(c[1].caller, "quick_caller"),
		 "order: %s, %s", c[0].caller, c[1].caller);
	t_eq(c[0].handles, 1);
	t_eq(c[1].handles, 3);
	t_assert(c[0].held_ns_max >= 20000000 && c[0].held_ns_max >= c[1].held_ns_max,
		 "slow held %" PRIu64 " ns, quick %" PRIu64, c[0].held_ns_max,
		 c[1].held_ns_max);
	t_assert(c[1].held_ns_total >= c[1].held_ns_max, "total below max");
	t_eq(jnl_get_caller_stats(t.j, c, 1), 1);
	t_assert(!strcmp(c[0].caller, "slow_caller"), "first: %s", c[0].caller);

	mlog_set_sink(keep_line, NULL);
	t_ok(jnl_start(t.j, 1, &h));
	tj_write(&t, &h, 20, 1);
	{
		struct pc_page *pg;

		t_ok(pc_read_cache_page(t.meta, 21, &pg));
		t_eq(jnl_get_write_access(&h, pg, 21), -ENOSPC);
		pc_put_page(pg);
	}
	t_eq(jnl_stop(&h), -ENOSPC);
	mlog_set_sink(NULL, NULL);
	t_assert(strstr(logged, "test_callers: its handle"), "log: %s", logged);
	tj_teardown(&t);
	printf("ok: handles by caller\n");
}

/*
 * Handles ask for their worst case and mostly use a little of it: what a
 * handle leaves unused goes back at jnl_stop, so a thousand handles that
 * each reserve a quarter of a transaction and change one block share one
 * transaction, with no commit forced and no wait for log space.
 */
static void test_unused_credits(void)
{
	uint32_t max;
	struct tj t;
	struct jnl_handle h;
	struct jnl_stats st;
	struct jnl_recovery info;
	struct bdev *img;

	need_mem();
	setup(&t);
	max = jnl_max_credits(t.j);
	for (uint32_t i = 0; i < 1000; i++) {
		t_ok(jnl_start(t.j, max / 4, &h));
		tj_write(&t, &h, 100 + i % 50, i);
		t_ok(jnl_stop(&h));
	}
	jnl_get_stats(t.j, &st);
	t_eq(st.commits, 0);
	t_eq(st.log_full_waits, 0);
	t_ok(jnl_commit_wait(t.j, h.h_tid));
	img = tj_crash_now(&t, &info);
	t_eq(info.transactions, 1);
	t_eq(info.replayed, 50);
	for (uint32_t b = 0; b < 50; b++)
		t_assert(tj_holds(img, BS, 100 + b, 950 + b), "block %u", 100 + b);
	bdev_close(img);
	tj_teardown(&t);
	printf("ok: unused credits go back to the transaction\n");
}

/* Blocks that start with the journal magic survive the log unchanged. */
static void test_escape_and_big(void)
{
	struct tj t;
	struct jnl_handle h;
	struct jnl_recovery info;
	struct pc_page *pg;
	struct bdev *img;
	uint32_t magic = htole32(JNL_MAGIC);
	uint8_t *want, *got;

	need_mem();
	want = bdev_alloc_buf(BS);
	got = bdev_alloc_buf(BS);
	setup(&t);
	t_ok(jnl_start(t.j, 200, &h));
	for (uint64_t b = 100; b < 299; b++)        /* over three descriptors */
		tj_write(&t, &h, b, b);
	t_ok(pc_read_cache_page(t.meta, 50, &pg));
	t_ok(jnl_get_write_access(&h, pg, 50));
	tj_fill(pg->data, BS, 50, 9);
	memcpy(pg->data, &magic, 4);
	memcpy(want, pg->data, BS);
	t_ok(jnl_dirty(&h, 50));
	pc_put_page(pg);
	t_ok(jnl_stop(&h));
	t_ok(jnl_commit_wait(t.j, h.h_tid));
	img = tj_crash_now(&t, &info);
	t_eq(info.replayed, 200);
	t_ok(bdev_read(img, 50 * BS, got, BS));
	t_assert(!memcmp(got, want, BS), "escaped block restored");
	for (uint64_t b = 100; b < 299; b++)
		t_assert(tj_holds(img, BS, b, b), "block %lu", (unsigned long)b);
	bdev_close(img);
	bdev_free_buf(want);
	bdev_free_buf(got);
	tj_teardown(&t);
	printf("ok: escaping, a transaction over several descriptors\n");
}

/* fsync waits for its own transaction only; handles group-commit. */
static void test_fsync_scope(void)
{
	struct tj t;
	struct jnl_handle h1, h2;
	struct jnl_stats st;

	setup(&t);
	for (int i = 0; i < 5; i++) {
		t_ok(jnl_start(t.j, 1, &h1));
		tj_write(&t, &h1, 60 + i, 1);
		t_ok(jnl_stop(&h1));
	}
	t_ok(jnl_commit_wait(t.j, h1.h_tid));
	jnl_get_stats(t.j, &st);
	t_eq(st.commits, 1);                         /* five handles, one commit */
	t_assert(st.commit_ns_max > 0 && st.commit_ns_total == st.commit_ns_max,
		 "one commit's latency: %llu ns, total %llu",
		 (unsigned long long)st.commit_ns_max, (unsigned long long)st.commit_ns_total);
	t_ok(jnl_start(t.j, 1, &h2));
	tj_write(&t, &h2, 70, 1);
	t_ok(jnl_stop(&h2));
	t_assert(h2.h_tid != h1.h_tid, "a new transaction");
	t_ok(jnl_commit_wait(t.j, h1.h_tid));        /* already done */
	jnl_get_stats(t.j, &st);
	t_eq(st.commits, 1);
	t_eq(st.running_tid, h2.h_tid);
	tj_teardown(&t);
	printf("ok: fsync scope and group commit\n");
}

static void test_revoke(void)
{
	struct tj t;
	struct jnl_handle h;
	struct jnl_recovery info;
	struct bdev *img;
	void *buf;

	need_mem();
	buf = bdev_alloc_buf(BS);
	setup(&t);
	t_ok(jnl_start(t.j, 2, &h));
	tj_write(&t, &h, 80, 1);
	tj_write(&t, &h, 81, 1);
	t_ok(jnl_stop(&h));
	t_ok(jnl_commit_wait(t.j, h.h_tid));
	t_ok(jnl_start(t.j, 1, &h));
	t_ok(jnl_revoke(&h, 80));
	t_ok(jnl_stop(&h));
	t_ok(jnl_commit_wait(t.j, h.h_tid));
	tj_fill(buf, BS, 80, 777);                   /* reused as plain data */
	t_ok(bdev_write(t.bd, 80 * BS, buf, BS));
	t_ok(bdev_flush(t.bd));
	img = tj_crash_now(&t, &info);
	t_eq(info.transactions, 2);
	t_eq(info.revoked, 1);
	t_assert(tj_holds(img, BS, 80, 777), "revoked block not resurrected");
	t_assert(tj_holds(img, BS, 81, 1), "neighbour replayed");
	bdev_close(img);
	tj_close(&t);
	t_assert(tj_holds(t.bd, BS, 80, 777), "checkpoint skipped the revoked block");
	bdev_free_buf(buf);
	tj_teardown(&t);
	printf("ok: revoke\n");
}

/* ---- ordered data -------------------------------------------------------- */

struct ordered_ctx {
	struct tj *t;
	unsigned calls;
	size_t data_done;            /* log count after the data write */
};

static int write_ordered(void *arg, struct jnl_inode *ji)
{
	struct ordered_ctx *o = arg;
	void *buf = bdev_alloc_buf(BS);
	int err;

	tj_fill(buf, BS, ji->ji_ino, 4242);
	err = bdev_write(o->t->bd, ji->ji_ino * BS, buf, BS);
	bdev_free_buf(buf);
	o->calls++;
	o->data_done = bdev_wrap_log_count(o->t->bd);
	return err;
}

static void test_ordered(void)
{
	struct tj t;
	struct ordered_ctx o = { .t = &t };
	struct jnl_inode ji = { .ji_ino = 500 };
	struct jnl_handle h;
	size_t commit_at = 0;

	need_mem();
	tj_setup(&t, BS, DEV, JSTART, JBLOCKS, false);
	t.cfg.submit_ordered = write_ordered;
	t.cfg.arg = &o;
	bdev_wrap_record(t.bd, true);
	tj_open(&t);
	t_ok(jnl_start(t.j, 1, &h));
	tj_write(&t, &h, 90, 1);
	t_ok(jnl_add_ordered(&h, &ji));
	t_ok(jnl_add_ordered(&h, &ji));              /* listed once */
	t_ok(jnl_stop(&h));
	t_ok(jnl_commit_wait(t.j, h.h_tid));
	t_eq(o.calls, 1);
	for (size_t i = 0; i < bdev_wrap_log_count(t.bd); i++) {
		const struct bdev_wrap_log_entry *e = bdev_wrap_log(t.bd, i);
		const struct jnl_header *hd = e->data;

		if (!e->flush && le32toh(hd->h_magic) == JNL_MAGIC &&
		    le32toh(hd->h_blocktype) == JNL_BT_COMMIT)
			commit_at = i + 1;
	}
	t_assert(commit_at > o.data_done, "data (log entry %zu) before commit (%zu)",
		 o.data_done, commit_at);
	jnl_forget_inode(t.j, &ji);
	tj_teardown(&t);
	printf("ok: ordered data reaches home before the commit block\n");
}

/* Many more blocks than the log holds: handles wait for checkpoints, and
 * every block ends up home with its last content. */
static void test_wrap(void)
{
	static uint64_t last[700];
	struct tj t;
	struct jnl_handle h;
	struct jnl_stats st;
	uint64_t stamp = 0;

	setup(&t);
	for (int i = 0; i < 300; i++) {
		t_ok(jnl_start(t.j, 40, &h));
		for (uint64_t b = 0; b < 40; b++) {
			uint64_t blk = 100 + (i * 7 + b) % 600;

			tj_write(&t, &h, blk, ++stamp);
			last[blk] = stamp;
		}
		t_ok(jnl_stop(&h));
		if (i % 5 == 0)
			t_ok(jnl_commit_wait(t.j, h.h_tid));
	}
	jnl_get_stats(t.j, &st);
	t_assert(st.checkpoints > 0 && st.blocks_logged > 3 * JBLOCKS,
		 "%lu checkpoints, %lu blocks logged", (unsigned long)st.checkpoints,
		 (unsigned long)st.blocks_logged);
	tj_close(&t);
	for (uint64_t blk = 100; blk < 700; blk++)
		t_assert(tj_holds(t.bd, BS, blk, last[blk]), "block %lu holds %lu, "
			 "expected %lu", (unsigned long)blk,
			 (unsigned long)tj_stamp_of(t.bd, BS, blk), (unsigned long)last[blk]);
	tj_teardown(&t);
	printf("ok: %lu blocks through a %u-block log, %lu checkpoints\n",
	       (unsigned long)st.blocks_logged, JBLOCKS, (unsigned long)st.checkpoints);
}

/* With a pin limit the journal never holds more pages than it allows,
 * and nothing written is lost on the way. */
static void test_pin_limit(void)
{
	static uint64_t last[700];
	struct tj t;
	struct jnl_handle h;
	struct jnl_stats st;
	uint64_t stamp = 0;

	tj_setup(&t, BS, DEV, JSTART, JBLOCKS, false);
	t.cfg.max_pinned = 64;
	tj_open(&t);
	t_eq(jnl_start(t.j, 40, &h), -ENOSPC);       /* over half the limit */
	for (int i = 0; i < 200; i++) {
		t_ok(jnl_start(t.j, 10, &h));
		for (uint64_t b = 0; b < 10; b++) {
			uint64_t blk = 100 + (i * 13 + b * 7) % 600;

			tj_write(&t, &h, blk, ++stamp);
			last[blk] = stamp;
		}
		t_ok(jnl_stop(&h));
	}
	jnl_get_stats(t.j, &st);
	t_assert(st.pinned_max <= 64, "pinned %u pages, limit 64", st.pinned_max);
	tj_close(&t);
	for (uint64_t blk = 100; blk < 700; blk++)
		t_assert(tj_holds(t.bd, BS, blk, last[blk]), "block %lu", (unsigned long)blk);
	tj_teardown(&t);
	printf("ok: at most %u pages pinned under a limit of 64\n", st.pinned_max);
}

static void test_io_error(void)
{
	struct tj t;
	struct jnl_handle h;

	need_mem();
	setup(&t);
	t_ok(bdev_wrap_fail(t.bd, (uint64_t)JSTART * BS, (uint64_t)JBLOCKS * BS,
			   BDEV_WRAP_FAIL_WRITE));
	t_ok(jnl_start(t.j, 1, &h));
	tj_write(&t, &h, 95, 1);
	t_ok(jnl_stop(&h));
	t_eq(jnl_commit_wait(t.j, h.h_tid), -EIO);
	t_eq(jnl_start(t.j, 1, &h), -EIO);
	t_ok(bdev_wrap_fail(t.bd, 0, 0, 0));
	t_assert(jnl_close(t.j) < 0, "close reports the abort");
	t.j = NULL;
	tj_teardown(&t);
	printf("ok: a failed commit aborts the journal\n");
}

struct hooks {
	int in_use, aborted, abort_err;
	unsigned int frozen;
};

static int hook_in_use(void *arg)
{
	((struct hooks *)arg)->in_use++;
	return 0;
}

/* Block 96's copies get a mark the cached page never has. */
static void hook_frozen(void *arg, uint64_t home, void *data)
{
	((struct hooks *)arg)->frozen++;
	if (home == 96)
		memcpy(data, "FROZEN!", 8);
}

static void hook_aborted(void *arg, int err)
{
	struct hooks *k = arg;

	k->aborted++;
	k->abort_err = err;
}

static int32_t disk_errno(struct tj *t)
{
	const struct jnl_superblock *sb =
		(void *)((char *)bdev_mem_data(t->bd) + (uint64_t)JSTART * BS);

	return (int32_t)le32toh(sb->s_errno);
}

/* log_in_use once per empty log, frozen on every copy (log and home),
 * aborted once, and the abort's errno in the journal superblock until
 * jnl_clear_errno. */
static void test_hooks(void)
{
	struct hooks k = { 0 };
	struct jnl_recovery info;
	struct jnl_handle h;
	struct tj t;

	need_mem();
	tj_setup(&t, BS, DEV, JSTART, JBLOCKS, false);
	t.cfg.log_in_use = hook_in_use;
	t.cfg.frozen = hook_frozen;
	t.cfg.aborted = hook_aborted;
	t.cfg.arg = &k;
	tj_open(&t);
	for (int i = 1; i <= 2; i++) {
		t_ok(jnl_start(t.j, 2, &h));
		tj_write(&t, &h, 95, i);
		tj_write(&t, &h, 96, i);
		t_ok(jnl_stop(&h));
		t_ok(jnl_commit_wait(t.j, h.h_tid));
		t_eq(k.in_use, 1);
	}
	t_eq(k.frozen, 4);
	t_ok(jnl_checkpoint(t.j));                /* the log is empty again */
	t_eq(k.frozen, 6);
	t_assert(tj_holds(t.bd, BS, 95, 2), "block 95 home");
	t_assert(!memcmp((char *)bdev_mem_data(t.bd) + 96 * BS, "FROZEN!", 8),
		 "the checkpoint wrote the unchanged copy");
	t_ok(jnl_start(t.j, 1, &h));
	tj_write(&t, &h, 95, 3);
	t_ok(jnl_stop(&h));
	t_ok(jnl_commit_wait(t.j, h.h_tid));
	t_eq(k.in_use, 2);

	/* The log fails, its superblock does not. */
	t_ok(bdev_wrap_fail(t.bd, (uint64_t)(JSTART + 1) * BS, (uint64_t)(JBLOCKS - 1) * BS,
			   BDEV_WRAP_FAIL_WRITE));
	t_ok(jnl_start(t.j, 1, &h));
	tj_write(&t, &h, 97, 1);
	t_ok(jnl_stop(&h));
	t_eq(jnl_commit_wait(t.j, h.h_tid), -EIO);
	t_eq(k.aborted, 1);
	t_eq(k.abort_err, -EIO);
	t_eq(disk_errno(&t), -EIO);
	t_eq(jnl_commit_wait(t.j, h.h_tid), -EIO);
	t_assert(jnl_close(t.j) < 0, "close reports the abort");
	t.j = NULL;
	t_eq(k.aborted, 1);
	t_ok(bdev_wrap_fail(t.bd, 0, 0, 0));
	t_ok(jnl_recover(t.bd, t.map, JBLOCKS, 0, &info));
	t_eq(info.jnl_errno, -EIO);
	t_ok(jnl_clear_errno(t.bd, t.map, JBLOCKS));
	t_eq(disk_errno(&t), 0);
	t_ok(jnl_recover(t.bd, t.map, JBLOCKS, 0, &info));
	t_eq(info.jnl_errno, 0);
	tj_teardown(&t);
	printf("ok: the filesystem's hooks and the abort's errno\n");
}

T_MAIN_SETUP(mlog_set_level(MLOG_ERR), T_CASE(test_limits), T_CASE(test_fsync_scope),
	     T_CASE(test_wrap), T_CASE(test_pin_limit), T_CASE(test_commit_and_recover),
	     T_CASE(test_escape_and_big), T_CASE(test_unused_credits), T_CASE(test_revoke),
	     T_CASE(test_ordered), T_CASE(test_io_error), T_CASE(test_hooks),
	     T_CASE(test_callers))
