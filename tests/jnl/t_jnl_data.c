/*
 * t_jnl_data - file data through the journal (jnl_journal_data): the
 * journal keeps the bytes the page held at the call, so a page changed
 * afterwards (a write filling it, uncommitted) reaches neither the log nor
 * the block's home; a reader finds the journalled bytes until they are
 * home; a revoke forgets them; and the block may come back as metadata.
 */
#include <endian.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "bdev_test.h"
#include "t_jnl.h"
#include "util.h"

#define BS      1024u
#define DEV     4096u
#define JSTART  2048u
#define JBLOCKS 1024u
#define X       80u               /* a block of file data */

static void setup(struct tj *t, struct pc_mapping **data)
{
	tj_setup(t, BS, DEV, JSTART, JBLOCKS, false);
	bdev_wrap_record(t->bd, true);
	tj_open(t);
	/* The file's pages: any mapping other than the journal's own. */
	t_ok(pc_mapping_create(t->cache, &pc_identity_ops, t->bd, data));
}

static struct pc_page *data_page(struct pc_mapping *m, uint64_t stamp)
{
	struct pc_page *pg;

	t_ok(pc_find_or_create_page(m, 0, &pg));
	tj_fill(pg->data, BS, X, stamp);
	SetPageUptodate(pg);
	pc_unlock_page(pg);
	return pg;
}

/* Journal the page as @stamp, then scribble @later over it, as a write of
 * the next transaction filling the page would. */
static uint32_t journal_then_change(struct tj *t, struct pc_page *pg, uint64_t stamp,
				    uint64_t later)
{
	struct jnl_handle h;
	uint32_t count = atomic_load(&pg->count);

	t_ok(jnl_start(t->j, 1, &h));
	pc_lock_page(pg);
	tj_fill(pg->data, BS, X, stamp);
	t_ok(jnl_journal_data(&h, pg, X));
	t_eq(atomic_load(&pg->count), count);      /* not pinned */
	tj_fill(pg->data, BS, X, later);
	pc_unlock_page(pg);
	t_ok(jnl_stop(&h));
	return h.h_tid;
}

static uint64_t read_stamp(struct tj *t)
{
	uint8_t *buf = bdev_alloc_buf(BS);
	uint64_t w[2], stamp = UINT64_MAX;

	if (jnl_read_data(t->j, X, buf) == 1) {
		memcpy(w, buf, sizeof(w));
		if (le64toh(w[1]) == X)
			stamp = le64toh(*(uint64_t *)(buf + 16));
	} else {
		stamp = 0;
	}
	bdev_free_buf(buf);
	return stamp;
}

static void test_copy_taken_at_the_call(void)
{
	struct tj t;
	struct pc_mapping *m;
	struct pc_page *pg;
	struct jnl_recovery info;
	struct bdev *img;

	setup(&t, &m);
	pg = data_page(m, 1);
	t_ok(jnl_commit_wait(t.j, journal_then_change(&t, pg, 7, 8)));
	t_eq(read_stamp(&t), 7);
	img = tj_crash_now(&t, &info);
	t_assert(tj_holds(img, BS, X, 7), "after a crash block %u holds %lu, not the "
		 "journalled 7: the log took the page as it was later", X,
		 (unsigned long)tj_stamp_of(img, BS, X));
	bdev_close(img);
	t_ok(jnl_checkpoint(t.j));
	t_assert(tj_holds(t.bd, BS, X, 7), "the checkpoint wrote %lu home, not the "
		 "journalled 7", (unsigned long)tj_stamp_of(t.bd, BS, X));
	t_eq(read_stamp(&t), 0);     /* home now: nothing to read from the journal */
	pc_put_page(pg);
	tj_close(&t);
	pc_mapping_destroy(m);
	tj_teardown(&t);
}

/* Journalled again before the commit: the newer copy replaces the older
 * one, in the same place of the transaction. */
static void test_again_in_same_tx(void)
{
	struct tj t;
	struct pc_mapping *m;
	struct pc_page *pg;
	struct jnl_handle h;
	struct jnl_stats st;
	struct jnl_recovery info;
	struct bdev *img;

	setup(&t, &m);
	pg = data_page(m, 1);
	t_ok(jnl_start(t.j, 1, &h));
	pc_lock_page(pg);
	for (uint64_t s = 2; s < 50; s++) {
		tj_fill(pg->data, BS, X, s);
		t_ok(jnl_journal_data(&h, pg, X));   /* one credit, used once */
	}
	pc_unlock_page(pg);
	t_ok(jnl_stop(&h));
	t_ok(jnl_commit_wait(t.j, h.h_tid));
	jnl_get_stats(t.j, &st);
	t_eq(st.blocks_logged, 1);
	img = tj_crash_now(&t, &info);
	t_assert(tj_holds(img, BS, X, 49), "block %u holds %lu, not the last copy", X,
		 (unsigned long)tj_stamp_of(img, BS, X));
	bdev_close(img);
	pc_put_page(pg);
	tj_close(&t);
	pc_mapping_destroy(m);
	tj_teardown(&t);
}

/* Freed: a reader of the block's next owner must not find the old
 * owner's bytes, and the block may be journalled as metadata next. */
static void test_revoke_then_metadata(void)
{
	struct tj t;
	struct pc_mapping *m;
	struct pc_page *pg;
	struct jnl_handle h;
	struct jnl_recovery info;
	struct bdev *img;

	setup(&t, &m);
	pg = data_page(m, 1);
	t_ok(jnl_commit_wait(t.j, journal_then_change(&t, pg, 3, 3)));
	t_ok(jnl_start(t.j, 2, &h));
	t_ok(jnl_revoke(&h, X));
	t_eq(read_stamp(&t), 0);
	tj_write(&t, &h, X, 5);      /* metadata now, through the journal's pages */
	t_ok(jnl_stop(&h));
	t_ok(jnl_commit_wait(t.j, h.h_tid));
	img = tj_crash_now(&t, &info);
	t_assert(tj_holds(img, BS, X, 5), "block %u holds %lu after a crash, not its "
		 "new owner's 5", X, (unsigned long)tj_stamp_of(img, BS, X));
	bdev_close(img);
	pc_put_page(pg);
	tj_close(&t);
	t_assert(tj_holds(t.bd, BS, X, 5), "block %u holds %lu at home", X,
		 (unsigned long)tj_stamp_of(t.bd, BS, X));
	pc_mapping_destroy(m);
	tj_teardown(&t);
}

T_MAIN_SETUP(mlog_set_level(MLOG_ERR), T_CASE(test_copy_taken_at_the_call),
	     T_CASE(test_again_in_same_tx), T_CASE(test_revoke_then_metadata))
