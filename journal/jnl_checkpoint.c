/*
 * jnl_checkpoint.c - writing committed blocks home so the log can be reused.
 *
 * Invariants:
 *
 *   K1  A block is written home only from a copy taken under j_lock while
 *       no running or committing transaction holds it, so home never sees a
 *       change that is not committed.
 *   K2  A buffer that a newer transaction holds is not written by an older
 *       transaction's checkpoint: that newer transaction is committed first,
 *       and then its checkpoint owns the buffer.
 *   K3  The log start in the journal superblock moves past a transaction
 *       only after its home writes have completed and been flushed, and its
 *       log blocks are reused only after that superblock is durable.
 *   K4  A revoked block keeps its place on the checkpoint list until the
 *       transaction that freed it has committed: before that a crash
 *       undoes the free, so its last committed copy must stay in the log
 *       or reach home.  A checkpoint commits that transaction first (as in
 *       K2), then drops the block without writing it.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "jnl_i.h"

#define CP_BATCH 1024u

struct cp_batch {
	struct jnl_buf *bufs[CP_BATCH];
	void *copies[CP_BATCH];
	struct bdev_req reqs[CP_BATCH + 1];      /* and the flush */
	struct bdev_req *ptrs[CP_BATCH + 1];
	uint32_t n;
};

/* Does a newer transaction hold, or an uncommitted one free, one of @t's
 * buffers?  Which (j_lock held). */
static bool newer_holder(const struct jnl *j, struct jnl_tx *t, uint32_t *tid)
{
	struct ut_list *pos, *tmp;

	ut_list_for_each_safe(pos, tmp, &t->t_cp_bufs) {
		struct jnl_buf *jb = ut_list_entry(pos, struct jnl_buf, b_cp_link);

		if (jb->b_tx || jb->b_committing) {
			*tid = jb->b_tx ? jb->b_tx->t_tid : j->j_committing->t_tid;
			return true;
		}
		if (jb->b_freed && jnl_tid_before(j->j_commit_done, jb->b_freed_tid)) {
			*tid = jb->b_freed_tid;      /* K4 */
			return true;
		}
	}
	return false;
}

/* K1: copy up to a batch of @t's buffers (j_lock held). */
static int gather(struct jnl *j, struct jnl_tx *t, struct cp_batch *b)
{
	struct ut_list *pos, *tmp;
	uint32_t bs = j->j_geom.bs;

	ut_list_for_each_safe(pos, tmp, &t->t_cp_bufs) {
		struct jnl_buf *jb = ut_list_entry(pos, struct jnl_buf, b_cp_link);
		void *copy;

		if (b->n == CP_BATCH)
			break;
		if (jb->b_freed) {           /* K4: freed, and that committed */
			ut_list_del(&jb->b_cp_link);
			jb->b_cp_tx = NULL;
			jnl_buf_release_if_idle(j, jb);
			continue;
		}
		copy = ut_pool_get(&j->j_copies);
		if (!copy)
			return -ENOMEM;
		memcpy(copy, jnl_buf_data(jb), bs);
		if (j->j_cfg.frozen)
			j->j_cfg.frozen(j->j_cfg.arg, jb->b_home, copy);
		jb->b_cp_busy = true;
		b->bufs[b->n] = jb;
		b->copies[b->n] = copy;
		bdev_req_init(&b->reqs[b->n], BDEV_OP_WRITE, jb->b_home * bs, copy, bs);
		b->ptrs[b->n] = &b->reqs[b->n];
		b->n++;
	}
	return 0;
}

/* The copies are written (or failed): the buffers may go (j_lock held). */
static void release_batch(struct jnl *j, struct cp_batch *b)
{
	for (uint32_t i = 0; i < b->n; i++) {
		ut_pool_put(&j->j_copies, b->copies[i]);
		b->bufs[i]->b_cp_busy = false;
	}
}

/* The buffers written home leave @t (j_lock held); returns whether @t is
 * now fully home. */
static bool retire(struct jnl *j, struct jnl_tx *t, struct cp_batch *b)
{
	for (uint32_t i = 0; i < b->n; i++) {
		struct jnl_buf *jb = b->bufs[i];

		if (jb->b_cp_tx != t)
			continue;            /* revoked, or moved to a newer one */
		ut_list_del(&jb->b_cp_link);
		jb->b_cp_tx = NULL;
		jnl_buf_release_if_idle(j, jb);
	}
	j->j_stats.blocks_checkpointed += b->n;
	if (!ut_list_empty(&t->t_cp_bufs))
		return false;
	ut_list_del(&t->t_cp_link);
	jnl_tx_free(t);
	j->j_stats.checkpoints++;
	return true;
}

/*
 * The oldest transactions whose every block a newer committed one logged
 * again (or whose blocks were freed) hold nothing the log still needs:
 * they leave without a home write, and one superblock update moves the
 * log start past them all (j_lock held).  A file rewritten with fsync
 * after every write leaves one such transaction per commit.
 */
static bool drop_superseded(struct jnl *j)
{
	struct jnl_tx *t;
	bool dropped = false;

	while ((t = ut_list_first(&j->j_checkpoint, struct jnl_tx, t_cp_link)) &&
	       ut_list_empty(&t->t_cp_bufs)) {
		ut_list_del(&t->t_cp_link);
		jnl_tx_free(t);
		j->j_stats.checkpoints++;
		dropped = true;
	}
	return dropped;
}

/* Pick the oldest transaction and copy a batch of it, committing newer
 * holders first (K2).  Returns the transaction, NULL if none or if
 * superseded ones were dropped (*dropped: the superblock is then due),
 * with j_lock held. */
static struct jnl_tx *prepare(struct jnl *j, struct cp_batch *b, int *err,
			      bool *dropped)
{
	struct jnl_tx *t;
	uint32_t tid;

	pthread_mutex_lock(&j->j_lock);
	for (;;) {
		*dropped = drop_superseded(j);
		if (*dropped)
			return NULL;
		t = ut_list_first(&j->j_checkpoint, struct jnl_tx, t_cp_link);
		if (!t || j->j_aborted || !newer_holder(j, t, &tid))
			break;
		*err = jnl_wait_commit_locked(j, tid);
		if (*err)
			return NULL;
	}
	if (t && j->j_aborted)
		*err = -EIO;
	if (t && !*err)
		*err = gather(j, t, b);
	return *err ? NULL : t;
}

/* The copies and a flush, as one batch. */
static int write_home(struct jnl *j, struct cp_batch *b)
{
	bdev_req_init(&b->reqs[b->n], BDEV_OP_FLUSH, 0, NULL, 0);
	b->ptrs[b->n] = &b->reqs[b->n];
	return bdev_submit_wait(j->j_geom.bd, b->ptrs, b->n + 1);
}

int jnl_checkpoint_one(struct jnl *j)
{
	struct cp_batch *b = calloc(1, sizeof(*b));
	struct jnl_tx *t;
	bool dropped = false;
	int err = 0;

	if (!b)
		return -ENOMEM;
	pthread_mutex_lock(&j->j_cp_mutex);
	t = prepare(j, b, &err, &dropped);
	pthread_mutex_unlock(&j->j_lock);
	if (t)
		err = write_home(j, b);
	pthread_mutex_lock(&j->j_lock);
	if (err && !j->j_aborted && t)
		jnl_abort(j, err, "checkpoint");
	release_batch(j, b);
	if (t && !err)
		retire(j, t, b);
	pthread_cond_broadcast(&j->j_wait_done);
	pthread_mutex_unlock(&j->j_lock);
	if ((t || dropped) && !err)
		err = jnl_sync_sb(j);              /* K3 */
	pthread_mutex_unlock(&j->j_cp_mutex);
	free(b);
	if (err)
		jnl_report_abort(j);
	return err ? err : t || dropped ? 1 : 0;
}
