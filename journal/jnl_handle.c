/*
 * jnl_handle.c - handles and what they add to the running transaction.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jnl_i.h"

/* ---- the lock order's debug check ---------------------------------------- */

#ifndef NDEBUG
/* Thread-local, and safe so: debug builds only, and read only by the lock
 * order's checks, which abort on a broken rule and change nothing else. */
static _Thread_local unsigned int tl_handles;

static _Noreturn void violation(const char *why, unsigned int n)
{
	mlog_err("lock order violated: %s (%u held; see \"Lock order\" in "
		 "docs/DESIGN.md)", why, n);
	abort();
}

void jnl_order_check_start(void)
{
	if (tl_handles)
		violation("jnl_start while this thread holds a handle: handles "
			  "never nest", tl_handles);
	if (pc_page_locks_held())
		violation("jnl_start while holding a page lock: a handle is "
			  "started before any page lock", pc_page_locks_held());
	if (pc_wb_locks_held())
		violation("jnl_start in writeback (a mapping's writeback lock "
			  "is held): writeback never starts a handle",
			  pc_wb_locks_held());
}

void jnl_order_check_wait(const char *what, bool handle_ok)
{
	char why[160];

	if (tl_handles && !handle_ok) {
		snprintf(why, sizeof(why), "%s while holding a handle: the "
			 "commit waits for the handle", what);
		violation(why, tl_handles);
	}
	if (pc_page_locks_held()) {
		snprintf(why, sizeof(why), "%s while holding a page lock: the "
			 "commit's ordered data may need it", what);
		violation(why, pc_page_locks_held());
	}
	if (pc_wb_locks_held()) {
		snprintf(why, sizeof(why), "%s in writeback (a mapping's "
			 "writeback lock is held)", what);
		violation(why, pc_wb_locks_held());
	}
}

void jnl_order_handle(int delta)
{
	if (delta < 0 && !tl_handles)
		violation("jnl_stop in a thread that did not start the handle", 0);
	tl_handles = (unsigned int)((int)tl_handles + delta);
}
#endif

/* ---- transactions -------------------------------------------------------- */

static struct jnl_tx *tx_new(struct jnl *j)
{
	struct jnl_tx *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	t->t_tid = j->j_next_tid++;
	t->t_state = TX_RUNNING;
	t->t_start_ns = ut_now_ns();
	ut_list_init(&t->t_bufs);
	ut_list_init(&t->t_cp_bufs);
	ut_list_init(&t->t_cp_link);
	return t;
}

void jnl_tx_free(struct jnl_tx *t)
{
	free(t->t_revokes);
	free(t->t_ordered);
	free(t);
}

static int grow_array(void **arr, uint32_t *cap, uint32_t n, size_t elem)
{
	uint32_t ncap;
	void *p;

	if (n < *cap)
		return 0;
	ncap = *cap ? *cap * 2 : 16;
	p = realloc(*arr, (size_t)ncap * elem);
	if (!p)
		return -ENOMEM;
	*arr = p;
	*cap = ncap;
	return 0;
}

/* Log blocks not promised to anyone.  One block always stays free, so a
 * full log (head on tail) never reads as an empty one; reservations are
 * worst cases, so this is the second guard, not the only one. */
static uint32_t log_free(const struct jnl *j)
{
	uint32_t used = jnl_log_used(j) + j->j_reserved + 1;

	return used >= j->j_loglen ? 0 : j->j_loglen - used;
}

/* Would pages pinned now, plus every credit of the running transaction,
 * pass the pin limit?  (Its pinned pages count twice: a safe bound.) */
static bool over_pin_limit(const struct jnl *j, uint32_t credits)
{
	return j->j_cfg.max_pinned && j->j_nbufs + credits > j->j_cfg.max_pinned;
}

/*
 * Make room in the log, with j_lock held (it is dropped on the way): write
 * the oldest transaction home if there is one, else let the commit that
 * holds the reservations finish.
 */
static int make_room(struct jnl *j)
{
	int done;

	j->j_stats.log_full_waits++;
	if (!ut_list_empty(&j->j_checkpoint)) {
		pthread_mutex_unlock(&j->j_lock);
		done = jnl_checkpoint_one(j);
		pthread_mutex_lock(&j->j_lock);
		return done < 0 ? done : 0;
	}
	if (j->j_committing) {
		ut_cond_wait(&j->j_wait_done, &j->j_lock);
		return 0;
	}
	if (j->j_running)
		return jnl_wait_commit_locked(j, j->j_running->t_tid);
	/* Only freed transactions hold the space: move the tail past them. */
	pthread_mutex_unlock(&j->j_lock);
	done = jnl_sync_sb(j);
	pthread_mutex_lock(&j->j_lock);
	return done;
}

/* Find or create the running transaction with room for @credits more. */
static int join_running(struct jnl *j, uint32_t credits, struct jnl_tx **out)
{
	for (;;) {
		struct jnl_tx *t = j->j_running;
		uint32_t have = t ? t->t_credits : 0, grow;

		if (j->j_aborted)
			return -EIO;
		/* While a transaction is locked for its snapshot, no new one
		 * starts: every buffer then belongs to it or to none. */
		if (!t && j->j_committing && j->j_committing->t_state == TX_LOCKED) {
			ut_cond_wait(&j->j_wait_updates, &j->j_lock);
			continue;
		}
		if (t && have + credits > j->j_max_tx) {
			int err = jnl_wait_commit_locked(j, t->t_tid);

			if (err)
				return err;
			continue;
		}
		grow = jnl_tx_reservation(j, have + credits) - jnl_tx_reservation(j, have);
		if (grow > log_free(j) || over_pin_limit(j, have + credits)) {
			int err = make_room(j);

			if (err)
				return err;
			continue;
		}
		if (!t && !(t = j->j_running = tx_new(j)))
			return -ENOMEM;
		t->t_credits += credits;
		t->t_reserved += grow;
		j->j_reserved += grow;
		*out = t;
		return 0;
	}
}

uint32_t jnl_max_credits(const struct jnl *j)
{
	return j->j_max_tx;
}

int jnl_start_by(struct jnl *j, uint32_t credits, struct jnl_handle *h,
		 const char *caller)
{
	int err;

	jnl_order_check_start();
	memset(h, 0, sizeof(*h));
	h->h_journal = j;
	h->h_credits = credits;
	h->h_caller = caller;
	if (credits > j->j_max_tx) {
		mlog_err("%s: a handle asks for %" PRIu32 " blocks; one transaction of "
			 "this journal holds at most %" PRIu32, caller, credits, j->j_max_tx);
		return -ENOSPC;
	}
	h->h_start_ns = ut_now_ns();
	pthread_mutex_lock(&j->j_lock);
	err = join_running(j, credits, &h->h_tx);
	if (!err) {
		h->h_tx->t_updates++;
		h->h_tid = h->h_tx->t_tid;
		j->j_stats.handles++;
	}
	pthread_mutex_unlock(&j->j_lock);
	if (!err) {
		jnl_order_handle(1);
		/* A page this thread allocates until jnl_stop must not wait
		 * for writeback that only a later transaction can do. */
		pc_nofs_begin();
	}
	return err;
}

/*
 * Credits a stopping handle did not use go back to its transaction (j_lock
 * held): reservations are worst cases, and kept they would fill the log
 * and end transactions long before their blocks do.  t_reserved stays the
 * reservation of t_credits.
 */
static void return_credits(struct jnl *j, struct jnl_handle *h)
{
	struct jnl_tx *t = h->h_tx;
	uint32_t unused = h->h_credits - UT_MIN(h->h_used, h->h_credits);
	uint32_t shrink;

	if (!unused)
		return;
	shrink = jnl_tx_reservation(j, t->t_credits) -
		 jnl_tx_reservation(j, t->t_credits - unused);
	t->t_credits -= unused;
	t->t_reserved -= shrink;
	j->j_reserved -= shrink;
}

/* The slot of @caller in j_callers, or NULL once the table is full. */
static struct jnl_caller_stats *caller_slot(struct jnl *j, const char *caller)
{
	uintptr_t start = ((uintptr_t)caller >> 3) % JNL_CALLERS;

	for (unsigned int i = 0; i < JNL_CALLERS; i++) {
		struct jnl_caller_stats *c = &j->j_callers[(start + i) % JNL_CALLERS];

		if (c->caller == caller || !c->caller) {
			c->caller = caller;
			return c;
		}
	}
	return NULL;
}

/* j_lock held. */
static void count_caller(struct jnl *j, const struct jnl_handle *h, uint64_t now)
{
	struct jnl_caller_stats *c = h->h_caller ? caller_slot(j, h->h_caller) : NULL;
	uint64_t held = now - h->h_start_ns;

	if (!c)
		return;
	c->handles++;
	c->held_ns_total += held;
	c->held_ns_max = UT_MAX(c->held_ns_max, held);
}

int jnl_stop(struct jnl_handle *h)
{
	struct jnl *j = h->h_journal;
	uint64_t now;

	if (!h->h_tx)
		return h->h_err ? h->h_err : -EINVAL;
	now = ut_now_ns();
	pthread_mutex_lock(&j->j_lock);
	count_caller(j, h, now);
	return_credits(j, h);
	if (--h->h_tx->t_updates == 0)
		pthread_cond_broadcast(&j->j_wait_updates);
	if (j->j_aborted && !h->h_err)
		h->h_err = -EIO;
	pthread_mutex_unlock(&j->j_lock);
	h->h_tx = NULL;
	jnl_order_handle(-1);
	pc_nofs_end();
	return h->h_err;
}

/* Note the handle's first error and return it. */
static int handle_error(struct jnl_handle *h, int err)
{
	if (!h->h_err)
		h->h_err = err;
	return err;
}

/*
 * A freed block may come back through another page (as another mapping's
 * data, say) while older transactions still hold its old copy.  A commit
 * writes from its snapshot, and a checkpoint never writes a freed block
 * from its page (K4 of jnl_checkpoint.c), so the buffer needs the old page
 * (or frozen data) no more: it takes the new page (j_lock held).  Any
 * other second page for one block means two owners claim it: a block
 * that the bitmap says is free while a directory or metadata page of its
 * old owner still stands for it (an image whose block maps share a
 * block).  The journal refuses it (-EUCLEAN) rather than log either.
 */
static bool take_page(struct jnl *j, struct jnl_buf *jb, struct pc_page *pg)
{
	if (jb->b_tx || !jb->b_freed)
		return false;
	pc_get_page(pg);
	jnl_buf_drop_contents(j, jb);
	jb->b_page = pg;
	return true;
}

/* Put @jb in the handle's transaction unless it is there already, using
 * one of the handle's credits (j_lock held). */
static int join_buf(struct jnl_handle *h, struct jnl_buf *jb)
{
	if (jb->b_tx == h->h_tx)
		return 0;
	if (h->h_used >= h->h_credits)
		return -ENOSPC;
	jb->b_tx = h->h_tx;
	jb->b_dirty = false;
	ut_list_add_tail(&h->h_tx->t_bufs, &jb->b_tx_link);
	h->h_tx->t_nbufs++;
	h->h_used++;
	return 0;
}

static int credits_error(struct jnl_handle *h, int err)
{
	if (err == -ENOSPC)
		mlog_err("%s: its handle of transaction %" PRIu32 " used up its %"
			 PRIu32 " credits", h->h_caller, h->h_tid, h->h_credits);
	return err ? handle_error(h, err) : 0;
}

int jnl_get_write_access(struct jnl_handle *h, struct pc_page *pg, uint64_t home)
{
	struct jnl *j = h->h_journal;
	struct jnl_buf *jb;
	int err;

	if (!h->h_tx)
		return -EINVAL;
	pthread_mutex_lock(&j->j_lock);
	jb = jnl_buf_get(j, pg, home);
	if (!jb)
		err = -ENOMEM;
	else if (jb->b_page != pg && !take_page(j, jb, pg))
		err = -EUCLEAN;      /* two owners of one block: damage */
	else
		err = join_buf(h, jb);
	pthread_mutex_unlock(&j->j_lock);
	return credits_error(h, err);
}

int jnl_dirty(struct jnl_handle *h, uint64_t home)
{
	struct jnl *j = h->h_journal;
	struct jnl_buf *jb;
	int err = 0;

	pthread_mutex_lock(&j->j_lock);
	jb = jnl_buf_find(j, home);
	if (!jb || jb->b_tx != h->h_tx)
		err = -EINVAL;       /* no write access was asked for */
	else
		jb->b_dirty = true;
	pthread_mutex_unlock(&j->j_lock);
	return err ? handle_error(h, err) : 0;
}

/*
 * The copy replaces whatever the buffer held: the frozen data of an older
 * journalling (a transaction that committed or is committing has its own
 * snapshot), or the page of a freed metadata block that comes back as
 * file data.  A live metadata block is a caller bug.
 */
static int freeze(struct jnl *j, struct jnl_handle *h, struct jnl_buf *jb,
		  void **copy)
{
	int err;

	if (jb->b_page && !(jb->b_freed && !jb->b_tx))
		return -EINVAL;
	err = join_buf(h, jb);
	if (err)
		return err;
	if (jb->b_page) {
		pc_put_page(jb->b_page);
		jb->b_page = NULL;
	}
	jnl_buf_set_frozen(j, jb, *copy);
	*copy = NULL;
	jb->b_dirty = true;
	return 0;
}

int jnl_journal_data(struct jnl_handle *h, struct pc_page *pg, uint64_t home)
{
	struct jnl *j = h->h_journal;
	struct jnl_buf *jb;
	void *copy;
	int err;

	if (!h->h_tx)
		return -EINVAL;
	copy = ut_pool_get(&j->j_copies);
	if (!copy)
		return handle_error(h, -ENOMEM);
	memcpy(copy, pg->data, j->j_geom.bs);
	pthread_mutex_lock(&j->j_lock);
	jb = jnl_buf_get(j, NULL, home);
	err = jb ? freeze(j, h, jb, &copy) : -ENOMEM;
	if (err && jb)
		jnl_buf_release_if_idle(j, jb);      /* one made for nothing */
	pthread_mutex_unlock(&j->j_lock);
	ut_pool_put(&j->j_copies, copy);
	return credits_error(h, err);
}

int jnl_read_data(struct jnl *j, uint64_t home, void *buf)
{
	struct jnl_buf *jb;
	bool found;

	if (!atomic_load_explicit(&j->j_nfrozen, memory_order_acquire))
		return 0;
	pthread_mutex_lock(&j->j_lock);
	jb = jnl_buf_find(j, home);
	found = jb && jb->b_frozen;
	if (found)
		memcpy(buf, jb->b_frozen, j->j_geom.bs);
	pthread_mutex_unlock(&j->j_lock);
	return found;
}

static int add_revoke(struct jnl_tx *t, uint64_t home)
{
	int err = grow_array((void **)&t->t_revokes, &t->t_cap_revokes,
			     t->t_nrevokes, sizeof(*t->t_revokes));

	if (!err)
		t->t_revokes[t->t_nrevokes++] = home;
	return err;
}

/*
 * Block freed by transaction @tid: that transaction no longer logs it.
 * Older copies stay where they are until the free has committed, since a
 * crash before that undoes the free (K4 of jnl_checkpoint.c).
 */
static void forget_buf(struct jnl *j, struct jnl_buf *jb, uint32_t tid)
{
	if (jb->b_tx) {
		ut_list_del(&jb->b_tx_link);
		jb->b_tx->t_nbufs--;
		jb->b_tx = NULL;
	}
	jb->b_freed = true;
	jb->b_freed_tid = tid;
	/* No commit or checkpoint reads a freed block's copy again, and a
	 * read of the block's next owner must not find it. */
	jnl_buf_set_frozen(j, jb, NULL);
	jnl_buf_release_if_idle(j, jb);
}

int jnl_revoke(struct jnl_handle *h, uint64_t home)
{
	struct jnl *j = h->h_journal;
	struct jnl_buf *jb;
	int err;

	if (!h->h_tx)
		return -EINVAL;
	if (h->h_used >= h->h_credits) {
		mlog_err("%s: its handle of transaction %" PRIu32 " used up its %"
			 PRIu32 " credits", h->h_caller, h->h_tid, h->h_credits);
		return handle_error(h, -ENOSPC);
	}
	pthread_mutex_lock(&j->j_lock);
	err = add_revoke(h->h_tx, home);
	if (!err) {
		h->h_used++;
		j->j_stats.revokes++;
		/* A checkpoint write already under way is waited for, so the
		 * block's next owner never sees it land after its own. */
		while ((jb = jnl_buf_find(j, home)) && jb->b_cp_busy)
			ut_cond_wait(&j->j_wait_done, &j->j_lock);
		if (jb)
			forget_buf(j, jb, h->h_tid);
	}
	pthread_mutex_unlock(&j->j_lock);
	return err ? handle_error(h, err) : 0;
}

int jnl_add_ordered(struct jnl_handle *h, struct jnl_inode *ji)
{
	struct jnl *j = h->h_journal;
	struct jnl_tx *t = h->h_tx;
	int err = 0;

	if (!t)
		return -EINVAL;
	pthread_mutex_lock(&j->j_lock);
	if (!ji->ji_listed || ji->ji_tid != t->t_tid) {
		err = grow_array((void **)&t->t_ordered, &t->t_cap_ordered,
				 t->t_nordered, sizeof(*t->t_ordered));
		if (!err) {
			t->t_ordered[t->t_nordered++] = ji;
			ji->ji_tid = t->t_tid;
			ji->ji_listed = true;
		}
	}
	pthread_mutex_unlock(&j->j_lock);
	return err ? handle_error(h, err) : 0;
}

static void unlist(struct jnl_tx *t, const struct jnl_inode *ji)
{
	for (uint32_t i = 0; t && i < t->t_nordered; i++)
		if (t->t_ordered[i] == ji)
			t->t_ordered[i] = NULL;
}

void jnl_forget_inode(struct jnl *j, struct jnl_inode *ji)
{
	/* The ordered data being written is a committing transaction's,
	 * whose handles have all stopped: a handle may wait for it, a page
	 * lock may not. */
	jnl_order_check_wait("jnl_forget_inode", true);
	pthread_mutex_lock(&j->j_lock);
	/* A commit may be writing its data right now: let it finish. */
	while (ji->ji_flushing)
		ut_cond_wait(&j->j_wait_done, &j->j_lock);
	unlist(j->j_running, ji);
	unlist(j->j_committing, ji);
	ji->ji_listed = false;
	pthread_mutex_unlock(&j->j_lock);
}
