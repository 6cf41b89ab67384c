/*
 * jnl_commit.c - committing a transaction.
 *
 * Invariants (see jnl_i.h for the states and docs/FORMAT.md for the write
 * ordering):
 *
 *   C1  A transaction leaves RUNNING only with j_lock held, and is not
 *       snapshotted before its last handle has stopped.
 *   C2  The snapshot copies every dirty buffer under j_lock, so the log
 *       holds exactly what the transaction's handles wrote; buffers are then
 *       free to join the next transaction.
 *   C3  Ordered data is written and waited for before the log blocks, so
 *       the flush that precedes the commit block covers it.
 *   C4  The journal superblock points at the log start before the first
 *       block of a transaction is written into an empty log.
 *   C5  Only after the commit block is durable do the buffers go on the
 *       transaction's checkpoint list and become due for their home.
 *   C6  A transaction never both logs and revokes one block: journalling
 *       a block again after its revoke cancels the revoke.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "jnl_i.h"

struct commit {
	struct jnl_log_block *blocks;
	struct jnl_buf **bufs;
	uint32_t n;
	struct jnl_inode **ordered;
	uint32_t nordered;
};

static void commit_free(struct jnl *j, struct commit *c)
{
	for (uint32_t i = 0; i < c->n; i++)
		ut_pool_put(&j->j_copies, (void *)c->blocks[i].data);
	free(c->blocks);
	free(c->bufs);
	free(c->ordered);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/*
 * C6: a block this transaction logs is not revoked by it (j_lock held).
 * jnl_revoke() takes a block out of the transaction, so a logged block
 * was journalled again after its last revoke: it was freed and reused,
 * and recovery must replay this copy, which a revoke record of the same
 * transaction would hide.  Revokes of earlier transactions still hide the
 * older copies.  Duplicate revokes go too.
 */
static int cancel_revokes(struct jnl_tx *t, const struct commit *c)
{
	uint32_t n = 0;
	bool *logged;

	if (!t->t_nrevokes)
		return 0;
	qsort(t->t_revokes, t->t_nrevokes, sizeof(*t->t_revokes), cmp_u64);
	for (uint32_t i = 0; i < t->t_nrevokes; i++)
		if (!n || t->t_revokes[n - 1] != t->t_revokes[i])
			t->t_revokes[n++] = t->t_revokes[i];
	t->t_nrevokes = n;
	logged = calloc(n, sizeof(*logged));
	if (!logged)
		return -ENOMEM;
	for (uint32_t i = 0; i < c->n; i++) {
		uint64_t *hit = bsearch(&c->blocks[i].home, t->t_revokes, n,
					sizeof(*hit), cmp_u64);

		if (hit)
			logged[hit - t->t_revokes] = true;
	}
	t->t_nrevokes = 0;
	for (uint32_t i = 0; i < n; i++)
		if (!logged[i])
			t->t_revokes[t->t_nrevokes++] = t->t_revokes[i];
	free(logged);
	return 0;
}

/* C2: copy the dirty buffers and detach every buffer (j_lock held). */
static int snapshot(struct jnl *j, struct jnl_tx *t, struct commit *c)
{
	struct ut_list *pos, *tmp;
	uint32_t bs = j->j_geom.bs;

	c->blocks = calloc(t->t_nbufs + 1, sizeof(*c->blocks));
	c->bufs = calloc(t->t_nbufs + 1, sizeof(*c->bufs));
	if (!c->blocks || !c->bufs)
		return -ENOMEM;
	ut_list_for_each_safe(pos, tmp, &t->t_bufs) {
		struct jnl_buf *jb = ut_list_entry(pos, struct jnl_buf, b_tx_link);
		void *copy = jb->b_dirty ? ut_pool_get(&j->j_copies) : NULL;

		if (jb->b_dirty && !copy)
			return -ENOMEM;
		ut_list_del(&jb->b_tx_link);
		jb->b_tx = NULL;
		if (!copy) {
			jnl_buf_release_if_idle(j, jb);
			continue;
		}
		memcpy(copy, jnl_buf_data(jb), bs);
		if (j->j_cfg.frozen)
			j->j_cfg.frozen(j->j_cfg.arg, jb->b_home, copy);
		jb->b_committing = true;
		c->blocks[c->n] = (struct jnl_log_block){ jb->b_home, copy };
		c->bufs[c->n++] = jb;
	}
	t->t_nbufs = 0;
	return 0;
}

/* Take the ordered inodes out of the transaction (j_lock held). */
static void take_ordered(struct jnl_tx *t, struct commit *c)
{
	c->ordered = t->t_ordered;
	c->nordered = t->t_nordered;
	t->t_ordered = NULL;
	t->t_nordered = t->t_cap_ordered = 0;
	for (uint32_t i = 0; i < c->nordered; i++)
		if (c->ordered[i])
			c->ordered[i]->ji_flushing = true;
}

/* Call @fn for every ordered inode; the first error. */
static int each_ordered(struct jnl *j, struct commit *c,
			int (*fn)(void *, struct jnl_inode *))
{
	int err = 0;

	for (uint32_t i = 0; i < c->nordered && fn; i++) {
		int rc = c->ordered[i] ? fn(j->j_cfg.arg, c->ordered[i]) : 0;

		err = err ? err : rc;
	}
	return err;
}

/*
 * C3, without j_lock: jnl_forget_inode() waits on ji_flushing.  Every
 * inode's data is submitted before any is waited for, so the writes of
 * all of them are in flight together.  Whatever the submit half returns,
 * the wait half runs: no write may still be in flight when the commit
 * gives up.
 */
static int write_ordered(struct jnl *j, struct commit *c)
{
	int err = each_ordered(j, c, j->j_cfg.submit_ordered);
	int werr = each_ordered(j, c, j->j_cfg.wait_ordered);

	err = err ? err : werr;
	pthread_mutex_lock(&j->j_lock);
	for (uint32_t i = 0; i < c->nordered; i++)
		if (c->ordered[i])
			c->ordered[i]->ji_flushing = false;
	pthread_cond_broadcast(&j->j_wait_done);
	pthread_mutex_unlock(&j->j_lock);
	return err;
}

/* C1: stop new handles joining and wait for the running ones. */
static int lock_tx(struct jnl *j, struct jnl_tx *t, struct commit *c)
{
	pthread_mutex_lock(&j->j_lock);
	if (j->j_running != t || j->j_committing) {
		pthread_mutex_unlock(&j->j_lock);
		return -EAGAIN;
	}
	t->t_state = TX_LOCKED;
	j->j_running = NULL;
	j->j_committing = t;
	while (t->t_updates)
		ut_cond_wait(&j->j_wait_updates, &j->j_lock);
	int err = snapshot(j, t, c);
	if (!err)
		err = cancel_revokes(t, c);
	if (!err)
		take_ordered(t, c);
	t->t_state = TX_FLUSHING;
	pthread_cond_broadcast(&j->j_wait_updates);    /* snapshot taken */
	pthread_mutex_unlock(&j->j_lock);
	return err;
}

/* C5: the buffers are now due for their home (j_lock held). */
static void file_checkpoint(struct jnl *j, struct jnl_tx *t, struct commit *c)
{
	for (uint32_t i = 0; i < c->n; i++) {
		struct jnl_buf *jb = c->bufs[i];

		jb->b_committing = false;
		/* A copy logged after the block's free is its new owner's. */
		if (jb->b_freed && !jnl_tid_before(t->t_tid, jb->b_freed_tid))
			jb->b_freed = false;
		if (jb->b_cp_tx)
			ut_list_del(&jb->b_cp_link);
		jb->b_cp_tx = t;
		ut_list_add_tail(&t->t_cp_bufs, &jb->b_cp_link);
	}
}

/* A commit's latency, for jnl_get_stats (j_lock held). */
static void count_commit(struct jnl *j, uint64_t t0)
{
	uint64_t ns = ut_now_ns() - t0;

	j->j_stats.commits++;
	j->j_stats.commit_ns_total += ns;
	if (ns > j->j_stats.commit_ns_max)
		j->j_stats.commit_ns_max = ns;
}

/* @what failed, if @err: the log line names it. */
static void finish(struct jnl *j, struct jnl_tx *t, struct commit *c,
		   uint32_t end, int err, const char *what, uint64_t t0)
{
	uint32_t tid = t->t_tid;

	pthread_mutex_lock(&j->j_lock);
	j->j_reserved -= t->t_reserved;
	j->j_committing = NULL;
	if (err) {
		for (uint32_t i = 0; i < c->n; i++)
			c->bufs[i]->b_committing = false;
		jnl_abort(j, err, what);
		jnl_tx_free(t);
	} else {
		t->t_state = TX_COMMITTED;
		j->j_head = end;
		t->t_log_len = (end + j->j_loglen - t->t_log_start) % j->j_loglen;
		file_checkpoint(j, t, c);
		if (ut_list_empty(&t->t_cp_bufs))
			jnl_tx_free(t);
		else
			ut_list_add_tail(&j->j_checkpoint, &t->t_cp_link);
		count_commit(j, t0);
		j->j_stats.blocks_logged += c->n;
		if (jnl_checkpoint_due(j))     /* committed by a writer */
			pthread_cond_signal(&j->j_wait_commit);
	}
	j->j_commit_done = tid;   /* even on error: waiters see j_aborted */
	pthread_cond_broadcast(&j->j_wait_done);
	pthread_mutex_unlock(&j->j_lock);
}

/* A commit's last flush is about to be issued (j_lock held): its number,
 * for flush_done and jnl_flushed_since. */
static uint64_t flush_issue(struct jnl *j)
{
	return ++j->j_flush_issued;
}

static int flush_done(struct jnl *j, uint64_t n, int err)
{
	if (!err) {
		pthread_mutex_lock(&j->j_lock);
		j->j_flush_done = UT_MAX(j->j_flush_done, n);
		pthread_mutex_unlock(&j->j_lock);
	}
	return err;
}

/* Nothing to log: only ordered data, if any, to make durable. */
static int flush_ordered(struct jnl *j, struct commit *c)
{
	uint64_t n;

	if (!c->nordered)
		return 0;
	pthread_mutex_lock(&j->j_lock);
	n = flush_issue(j);
	pthread_mutex_unlock(&j->j_lock);
	return flush_done(j, n, bdev_flush(j->j_geom.bd));
}

static int write_log(struct jnl *j, struct jnl_tx *t, struct commit *c,
		     uint32_t *end)
{
	struct jnl_tx_io io = { .tid = t->t_tid, .blocks = c->blocks, .nblocks = c->n,
				.revokes = t->t_revokes, .nrevokes = t->t_nrevokes };
	uint64_t n;
	int err;

	if (!c->n && !t->t_nrevokes) {
		*end = j->j_head;
		return flush_ordered(j, c);
	}
	pthread_mutex_lock(&j->j_lock);
	t->t_state = TX_COMMITTING;
	t->t_log_start = io.start = j->j_head;
	n = flush_issue(j);
	pthread_mutex_unlock(&j->j_lock);
	err = jnl_sync_sb(j);                         /* C4 */
	/* C3 with an async commit: no flush separates the data from the
	 * commit block any more, so flush the data first. */
	if (!err && j->j_cfg.async_commit && c->nordered)
		err = bdev_flush(j->j_geom.bd);
	if (!err)
		err = jnl_log_write(&j->j_geom, &io, j->j_cfg.async_commit, end);
	return flush_done(j, n, err);
}

int jnl_commit_tx(struct jnl *j, struct jnl_tx *t)
{
	struct commit c = { 0 };
	uint32_t end = 0;
	uint64_t t0 = ut_now_ns();
	const char *what = "commit";
	int err = lock_tx(j, t, &c);

	if (err == -EAGAIN)
		return 0;
	/* The log line says which failed: the data on its way home (a full
	 * host, say, under a log that has its blocks) or the log itself. */
	if (!err && (err = write_ordered(j, &c)))
		what = "writing a commit's ordered data";
	if (!err)
		err = write_log(j, t, &c, &end);
	finish(j, t, &c, end, err, what, t0);
	commit_free(j, &c);
	if (err)
		jnl_report_abort(j);
	return err;
}
