/*
 * t_jnl_revoke - what a revoke hides and what it must not: a block freed
 * and journalled again in the same transaction or a later one (through
 * the same page or another) keeps its new content after a crash, a revoke
 * still hides the copies logged before it, a revoke waits for a checkpoint
 * write of the block that is already on its way home, and until the
 * revoke is durable a crash finds the block's last committed content.
 */
#include <endian.h>
#include <pthread.h>
#include <time.h>

#include "bdev_test.h"
#include "t_jnl.h"
#include "util.h"

#define BS      1024u
#define DEV     4096u
#define JSTART  2048u
#define JBLOCKS 1024u
#define X       80u               /* the block freed and reused */
#define Y       81u               /* a neighbour that is never revoked */

static void setup(struct tj *t)
{
	tj_setup(t, BS, DEV, JSTART, JBLOCKS, false);
	bdev_wrap_record(t->bd, true);
	tj_open(t);
}

/* One committed transaction that journals X and Y as version @stamp. */
static void commit_xy(struct tj *t, uint64_t stamp)
{
	struct jnl_handle h;

	t_ok(jnl_start(t->j, 2, &h));
	tj_write(t, &h, X, stamp);
	tj_write(t, &h, Y, stamp);
	t_ok(jnl_stop(&h));
	t_ok(jnl_commit_wait(t->j, h.h_tid));
}

static void commit_revoke(struct tj *t, uint64_t blk)
{
	struct jnl_handle h;

	t_ok(jnl_start(t->j, 1, &h));
	t_ok(jnl_revoke(&h, blk));
	t_ok(jnl_stop(&h));
	t_ok(jnl_commit_wait(t->j, h.h_tid));
}

/* Crash now and check that X holds @x and Y holds @y after recovery and,
 * without a crash, after close. */
static void check_xy(struct tj *t, uint64_t x, uint64_t y, const char *what)
{
	struct jnl_recovery info;
	struct bdev *img = tj_crash_now(t, &info);

	t_assert(tj_holds(img, BS, X, x), "%s: after a crash block %u holds %lu, "
		 "expected %lu (replayed %lu, revoked %lu)", what, X,
		 (unsigned long)tj_stamp_of(img, BS, X), (unsigned long)x,
		 (unsigned long)info.replayed, (unsigned long)info.revoked);
	t_assert(tj_holds(img, BS, Y, y), "%s: after a crash block %u", what, Y);
	bdev_close(img);
	tj_close(t);
	t_assert(tj_holds(t->bd, BS, X, x), "%s: after close block %u holds %lu, "
		 "expected %lu", what, X, (unsigned long)tj_stamp_of(t->bd, BS, X),
		 (unsigned long)x);
	tj_teardown(t);
}

/* Freed and allocated again by one handle: the new content wins. */
static void test_reuse_same_handle(void)
{
	struct tj t;
	struct jnl_handle h;

	setup(&t);
	commit_xy(&t, 1);
	t_ok(jnl_start(t.j, 2, &h));
	t_ok(jnl_revoke(&h, X));
	tj_write(&t, &h, X, 2);
	t_ok(jnl_stop(&h));
	t_ok(jnl_commit_wait(t.j, h.h_tid));     /* the fsync returned */
	check_xy(&t, 2, 1, "revoke then reuse, one handle");
	printf("ok: a block revoked and journalled again by one handle keeps "
	       "its new content\n");
}

/* Freed by one handle, allocated by another of the same transaction; the
 * block was never journalled before, so its home was zeros. */
static void test_reuse_same_tx(void)
{
	struct tj t;
	struct jnl_handle h1, h2;

	setup(&t);
	t_ok(jnl_start(t.j, 1, &h1));
	t_ok(jnl_revoke(&h1, X));
	t_ok(jnl_stop(&h1));
	t_ok(jnl_start(t.j, 2, &h2));
	tj_write(&t, &h2, X, 3);
	tj_write(&t, &h2, Y, 3);
	t_ok(jnl_stop(&h2));
	t_eq(h1.h_tid, h2.h_tid);
	t_ok(jnl_commit_wait(t.j, h2.h_tid));
	check_xy(&t, 3, 3, "revoke then reuse, two handles");
	printf("ok: a block revoked and journalled again by another handle of "
	       "the transaction keeps its new content\n");
}

/* Journalled, freed again: the last word is the revoke, so neither the
 * transaction's own copy nor the older one is replayed. */
static void test_reuse_then_free(void)
{
	struct tj t;
	struct jnl_handle h;

	setup(&t);
	commit_xy(&t, 1);
	t_ok(jnl_start(t.j, 4, &h));
	t_ok(jnl_revoke(&h, X));
	tj_write(&t, &h, X, 2);
	t_ok(jnl_revoke(&h, X));
	t_ok(jnl_stop(&h));
	t_ok(jnl_commit_wait(t.j, h.h_tid));
	check_xy(&t, 0, 1, "revoke, reuse, revoke");
	printf("ok: a block freed again after its reuse stays revoked\n");
}

/* A revoke committed in one transaction hides the copies logged before
 * it, and only those: a later transaction's copy is replayed. */
static void test_reuse_later_tx(void)
{
	struct tj t;
	struct jnl_handle h;

	setup(&t);
	commit_xy(&t, 1);
	commit_revoke(&t, X);
	{
		struct jnl_recovery info;
		struct bdev *img = tj_crash_now(&t, &info);

		t_assert(tj_holds(img, BS, X, 0), "the copy before the revoke is "
			 "hidden (block holds %lu)", (unsigned long)tj_stamp_of(img, BS, X));
		t_eq(info.revoked, 1);
		bdev_close(img);
	}
	t_ok(jnl_start(t.j, 1, &h));
	tj_write(&t, &h, X, 4);
	t_ok(jnl_stop(&h));
	t_ok(jnl_commit_wait(t.j, h.h_tid));
	check_xy(&t, 4, 1, "revoke committed, reuse in a later transaction");
	printf("ok: a revoke hides only the copies logged before it\n");
}

/* ---- revokes against writes in flight --------------------------------------
 *
 * A device in front of the memory device that holds back the first batch
 * writing one chosen block until the test lets it go.
 */
struct hold_dev {
	struct bdev bd;
	struct bdev *inner;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	uint64_t off;                 /* the byte offset held back */
	bool armed, holding, released;
};

static bool batch_writes(const struct hold_dev *d, struct bdev_req **reqs,
			 unsigned int n)
{
	for (unsigned int i = 0; i < n; i++)
		if (reqs[i]->op == BDEV_OP_WRITE && reqs[i]->off <= d->off &&
		    d->off < reqs[i]->off + bdev_req_len(reqs[i]))
			return true;
	return false;
}

static int hold_submit(struct bdev *bd, struct bdev_req **reqs, unsigned int n)
{
	struct hold_dev *d = (struct hold_dev *)bd;

	pthread_mutex_lock(&d->lock);
	if (d->armed && batch_writes(d, reqs, n)) {
		d->armed = false;
		d->holding = true;
		pthread_cond_broadcast(&d->cond);
		while (!d->released)
			pthread_cond_wait(&d->cond, &d->lock);
		d->holding = false;
	}
	pthread_mutex_unlock(&d->lock);
	return bdev_submit(d->inner, reqs, n);
}

static int hold_flush(struct bdev *bd)
{
	return bdev_flush(((struct hold_dev *)bd)->inner);
}

static void hold_close(struct bdev *bd)
{
	(void)bd;
}

static const struct bdev_ops hold_ops = {
	.name = "hold", .submit = hold_submit, .flush = hold_flush,
	.close = hold_close,
};

static void hold_init(struct hold_dev *d, struct bdev *inner)
{
	memset(d, 0, sizeof(*d));
	d->bd = (struct bdev){ .ops = &hold_ops, .size = inner->size,
			       .block_size = inner->block_size,
			       .dma_align = inner->dma_align, .fd = -1 };
	d->inner = inner;
	pthread_mutex_init(&d->lock, NULL);
	pthread_cond_init(&d->cond, NULL);
}

static void hold_wait(struct hold_dev *d)
{
	pthread_mutex_lock(&d->lock);
	while (!d->holding)
		pthread_cond_wait(&d->cond, &d->lock);
	pthread_mutex_unlock(&d->lock);
}

static void hold_release(struct hold_dev *d)
{
	pthread_mutex_lock(&d->lock);
	d->released = true;
	pthread_cond_broadcast(&d->cond);
	pthread_mutex_unlock(&d->lock);
}

struct revoker {
	struct jnl *j;
	int err;
	bool done;                    /* jnl_revoke has returned */
	pthread_mutex_t lock;
};

static void *checkpoint_thread(void *arg)
{
	return (void *)(intptr_t)jnl_checkpoint(arg);
}

static void *revoke_thread(void *arg)
{
	struct revoker *r = arg;
	struct jnl_handle h;
	int err = jnl_start(r->j, 1, &h);

	if (!err)
		err = jnl_revoke(&h, X);
	pthread_mutex_lock(&r->lock);
	r->done = true;
	pthread_mutex_unlock(&r->lock);
	if (!err)
		err = jnl_stop(&h);
	r->err = err;
	return NULL;
}

static bool revoker_done(struct revoker *r)
{
	bool done;

	pthread_mutex_lock(&r->lock);
	done = r->done;
	pthread_mutex_unlock(&r->lock);
	return done;
}

static void test_revoke_waits_for_checkpoint(void)
{
	struct tj t;
	struct hold_dev d;
	struct revoker r = { .lock = PTHREAD_MUTEX_INITIALIZER };
	struct jnl_handle h;
	pthread_t cp, rv;
	void *cp_ret;

	tj_setup(&t, BS, DEV, JSTART, JBLOCKS, false);
	hold_init(&d, t.bd);
	t_ok(jnl_open(&d.bd, t.map, t.nblocks, &t.cfg, &t.j));
	r.j = t.j;
	t_ok(jnl_start(t.j, 1, &h));
	tj_write(&t, &h, X, 1);
	t_ok(jnl_stop(&h));
	t_ok(jnl_commit_wait(t.j, h.h_tid));
	pthread_mutex_lock(&d.lock);
	d.off = (uint64_t)X * BS;
	d.armed = true;
	pthread_mutex_unlock(&d.lock);
	t_ok(-pthread_create(&cp, NULL, checkpoint_thread, t.j));
	hold_wait(&d);
	/* The checkpoint's write of X is in flight: X is freed now. */
	t_ok(-pthread_create(&rv, NULL, revoke_thread, &r));
	nanosleep(&(struct timespec){ .tv_nsec = 100 * 1000 * 1000 }, NULL);
	t_assert(!revoker_done(&r), "jnl_revoke returned while the checkpoint "
		 "write of the freed block was still in flight");
	hold_release(&d);
	pthread_join(rv, NULL);
	pthread_join(cp, &cp_ret);
	t_ok(r.err);
	t_ok((intptr_t)cp_ret);
	t_assert(revoker_done(&r), "the revoke finished");
	tj_teardown(&t);
	pthread_cond_destroy(&d.cond);
	pthread_mutex_destroy(&d.lock);
	printf("ok: a revoke waits for the checkpoint write of its block\n");
}

/*
 * The freed block comes back through another page (file data of another
 * mapping, say) while the transaction that logged its old copy is still
 * being written: the revoked buffer waits only for that commit, so the
 * new page takes its place.
 */
struct committer {
	struct jnl *j;
	uint32_t tid;
	int err;
};

static void *commit_thread(void *arg)
{
	struct committer *c = arg;

	c->err = jnl_commit_wait(c->j, c->tid);
	return NULL;
}

/* A transaction that journals X, left committing in thread @th: the
 * device holds its first log block until hold_release(). */
static void start_held_commit(struct tj *t, struct hold_dev *d, struct committer *c,
			      pthread_t *th)
{
	struct jnl_handle h;

	t_ok(jnl_start(t->j, 1, &h));
	tj_write(t, &h, X, 1);
	t_ok(jnl_stop(&h));
	pthread_mutex_lock(&d->lock);
	d->off = t->map[1] * BS;                  /* its first log block */
	d->armed = true;
	pthread_mutex_unlock(&d->lock);
	*c = (struct committer){ t->j, h.h_tid, 0 };
	t_ok(-pthread_create(th, NULL, commit_thread, c));
	hold_wait(d);
}

static void test_reuse_other_page(void)
{
	struct tj t;
	struct hold_dev d;
	struct committer c = { 0 };
	struct pc_mapping *file;
	struct pc_page *pg;
	struct jnl_handle h;
	pthread_t th;

	tj_setup(&t, BS, DEV, JSTART, JBLOCKS, false);
	bdev_wrap_record(t.bd, true);
	hold_init(&d, t.bd);
	t_ok(pc_mapping_create(t.cache, &pc_identity_ops, t.bd, &file));
	t_ok(jnl_open(&d.bd, t.map, t.nblocks, &t.cfg, &t.j));
	start_held_commit(&t, &d, &c, &th);
	t_ok(jnl_start(t.j, 2, &h));
	t_ok(jnl_revoke(&h, X));
	t_ok(pc_read_cache_page(file, X, &pg));
	t_assert(pg != NULL, "a page");
	t_ok(jnl_get_write_access(&h, pg, X));
	pc_lock_page(pg);
	tj_fill(pg->data, BS, X, 5);
	pc_unlock_page(pg);
	t_ok(jnl_dirty(&h, X));
	pc_put_page(pg);
	t_ok(jnl_stop(&h));
	hold_release(&d);
	pthread_join(th, NULL);
	t_ok(c.err);
	t_ok(jnl_commit_wait(t.j, h.h_tid));
	{
		struct jnl_recovery info;
		struct bdev *img = tj_crash_now(&t, &info);

		t_assert(tj_holds(img, BS, X, 5), "block %u holds %lu after a crash",
			 X, (unsigned long)tj_stamp_of(img, BS, X));
		bdev_close(img);
	}
	tj_close(&t);
	t_assert(tj_holds(t.bd, BS, X, 5), "block %u holds %lu after close", X,
		 (unsigned long)tj_stamp_of(t.bd, BS, X));
	pc_mapping_destroy(file);
	tj_teardown(&t);
	pthread_cond_destroy(&d.cond);
	pthread_mutex_destroy(&d.lock);
	printf("ok: a freed block reused through another page while its old "
	       "copy commits\n");
}

/* ---- the old copy lives until the revoke commits --------------------------
 *
 * Until the transaction that frees a block has committed, a crash undoes
 * the free, so the block's last committed content must survive: in the
 * log, or at home.  Checked at every crash point (every prefix of the
 * device's write log) from @from until the revoking transaction @tid is
 * durable.
 */
static size_t durable_at(struct bdev *bd, size_t from, uint32_t tid)
{
	size_t n = bdev_wrap_log_count(bd), commit = SIZE_MAX;

	for (size_t i = from; i < n; i++) {
		const struct bdev_wrap_log_entry *e = bdev_wrap_log(bd, i);

		if (e->flush && commit != SIZE_MAX)
			return i + 1;
		for (size_t off = 0; !e->flush && off < e->len; off += BS) {
			const uint32_t *w = (const void *)((const char *)e->data + off);

			if (e->off + off >= (uint64_t)JSTART * BS &&
			    le32toh(w[0]) == JNL_MAGIC && le32toh(w[1]) == JNL_BT_COMMIT &&
			    le32toh(w[2]) == tid)
				commit = i;
		}
	}
	t_fail("transaction %u never became durable", tid);
}

static void check_until_durable(struct tj *t, size_t from, uint32_t tid,
				uint64_t stamp)
{
	size_t until = durable_at(t->bd, from, tid);

	for (size_t p = from; p < until; p++) {
		struct jnl_recovery info;
		struct bdev *img;

		t_ok(bdev_wrap_crash_image(t->bd, p, BDEV_CUT_LOSE_ALL, 0, &img));
		t_ok(jnl_recover(img, t->map, t->nblocks, 0, &info));
		t_assert(tj_holds(img, BS, X, stamp), "a crash after %zu writes, "
			 "before the revoke of transaction %u is durable (%zu): block "
			 "%u holds %lu, not its committed %lu (%s)", p, tid, until, X,
			 (unsigned long)tj_stamp_of(img, BS, X), (unsigned long)stamp,
			 info.end);
		bdev_close(img);
	}
}

/*
 * The log fills while a revoke waits in the running transaction: making
 * room writes the oldest transaction, which logged the freed block, home.
 */
static void test_free_then_checkpoint(void)
{
	struct tj t;
	struct jnl_handle h;
	struct jnl_stats st;
	size_t from;
	uint32_t tid;

	setup(&t);
	commit_xy(&t, 1);
	for (;;) {
		jnl_get_stats(t.j, &st);
		if (st.log_used + 64 + 4 >= st.log_size - 1)
			break;
		t_ok(jnl_start(t.j, 61, &h));
		for (uint64_t b = 0; b < 61; b++)
			tj_write(&t, &h, 400 + b, 2);
		t_ok(jnl_stop(&h));
		t_ok(jnl_commit_wait(t.j, h.h_tid));
	}
	from = bdev_wrap_log_count(t.bd);
	t_ok(jnl_start(t.j, 1, &h));
	t_ok(jnl_revoke(&h, X));
	t_ok(jnl_stop(&h));
	tid = h.h_tid;
	t_ok(jnl_start(t.j, 200, &h));            /* room: checkpoints */
	t_ok(jnl_stop(&h));
	jnl_get_stats(t.j, &st);
	t_assert(st.checkpoints > 0, "the log was full");
	t_ok(jnl_commit_wait(t.j, tid));
	check_until_durable(&t, from, tid, 1);
	tj_teardown(&t);
	printf("ok: a checkpoint keeps a freed block's copy until the free commits\n");
}

/* The block is freed while the transaction that logged it commits. */
static void test_free_while_committing(void)
{
	struct tj t;
	struct hold_dev d;
	struct committer c;
	struct jnl_handle h;
	pthread_t th;
	size_t from;

	tj_setup(&t, BS, DEV, JSTART, JBLOCKS, false);
	bdev_wrap_record(t.bd, true);
	hold_init(&d, t.bd);
	t_ok(jnl_open(&d.bd, t.map, t.nblocks, &t.cfg, &t.j));
	t_ok(jnl_start(t.j, 1, &h));
	tj_write(&t, &h, X, 1);
	t_ok(jnl_stop(&h));
	pthread_mutex_lock(&d.lock);
	d.off = t.map[1] * BS;
	d.armed = true;
	pthread_mutex_unlock(&d.lock);
	c = (struct committer){ t.j, h.h_tid, 0 };
	t_ok(-pthread_create(&th, NULL, commit_thread, &c));
	hold_wait(&d);
	t_ok(jnl_start(t.j, 1, &h));
	t_ok(jnl_revoke(&h, X));
	t_ok(jnl_stop(&h));
	hold_release(&d);
	pthread_join(th, NULL);
	t_ok(c.err);
	from = bdev_wrap_log_count(t.bd);           /* X's copy is committed */
	t_ok(jnl_commit_wait(t.j, h.h_tid));
	check_until_durable(&t, from, h.h_tid, 1);
	tj_teardown(&t);
	pthread_cond_destroy(&d.cond);
	pthread_mutex_destroy(&d.lock);
	printf("ok: a block freed while its copy commits keeps that copy until "
	       "the free commits\n");
}

/*
 * jnl_sync while another thread is committing the only transaction (its
 * log write held on the device): it must wait for that commit, or a
 * checkpoint and a clean unmount behind it pass over changes that then
 * reach only the log.
 */
static void *sync_thread(void *arg)
{
	struct revoker *r = arg;
	int err = jnl_sync(r->j);

	pthread_mutex_lock(&r->lock);
	r->done = true;
	r->err = err;
	pthread_mutex_unlock(&r->lock);
	return NULL;
}

static void test_sync_waits_for_committing(void)
{
	struct tj t;
	struct hold_dev d;
	struct committer c = { 0 };
	struct revoker r = { .lock = PTHREAD_MUTEX_INITIALIZER };
	pthread_t th, sy;

	tj_setup(&t, BS, DEV, JSTART, JBLOCKS, false);
	hold_init(&d, t.bd);
	t_ok(jnl_open(&d.bd, t.map, t.nblocks, &t.cfg, &t.j));
	r.j = t.j;
	start_held_commit(&t, &d, &c, &th);       /* committing, nothing running */
	t_ok(-pthread_create(&sy, NULL, sync_thread, &r));
	nanosleep(&(struct timespec){ .tv_nsec = 100 * 1000 * 1000 }, NULL);
	t_assert(!revoker_done(&r), "jnl_sync returned while the only transaction "
		 "was still being committed");
	hold_release(&d);
	pthread_join(sy, NULL);
	pthread_join(th, NULL);
	t_ok(c.err);
	t_ok(r.err);
	tj_close(&t);
	tj_teardown(&t);
	pthread_cond_destroy(&d.cond);
	pthread_mutex_destroy(&d.lock);
	printf("ok: a sync waits for the transaction being committed\n");
}

T_MAIN_SETUP(mlog_set_level(MLOG_ERR), T_CASE(test_sync_waits_for_committing),
	     T_CASE(test_reuse_same_handle), T_CASE(test_reuse_same_tx),
	     T_CASE(test_reuse_then_free), T_CASE(test_reuse_later_tx),
	     T_CASE(test_revoke_waits_for_checkpoint), T_CASE(test_reuse_other_page),
	     T_CASE(test_free_then_checkpoint), T_CASE(test_free_while_committing))
