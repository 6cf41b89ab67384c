/*
 * jnl_journal.c - the journal object: opening, the commit thread, the log's
 * space and its superblock, closing.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "jnl_i.h"

uint32_t jnl_tx_reservation(const struct jnl *j, uint32_t credits)
{
	return credits ? jnl_log_blocks_needed(j->j_geom.bs, credits, credits) : 0;
}

uint32_t jnl_log_used(const struct jnl *j)
{
	return (j->j_head + j->j_loglen - j->j_tail) % j->j_loglen;
}

void *jnl_buf_data(const struct jnl_buf *jb)
{
	return jb->b_frozen ? jb->b_frozen : jb->b_page->data;
}

void jnl_buf_set_frozen(struct jnl *j, struct jnl_buf *jb, void *data)
{
	if (!jb->b_frozen != !data)
		atomic_fetch_add_explicit(&j->j_nfrozen, data ? 1 : -1,
					  memory_order_release);
	ut_pool_put(&j->j_copies, jb->b_frozen);
	jb->b_frozen = data;
}

void jnl_buf_drop_contents(struct jnl *j, struct jnl_buf *jb)
{
	if (jb->b_page)
		pc_put_page(jb->b_page);
	jb->b_page = NULL;
	jnl_buf_set_frozen(j, jb, NULL);
}

/* ---- buffers ------------------------------------------------------------- */

static uint32_t hash_of(const struct jnl *j, uint64_t home)
{
	return (uint32_t)((home * 0x9E3779B97F4A7C15ull) >> 32) & j->j_hash_mask;
}

struct jnl_buf *jnl_buf_find(struct jnl *j, uint64_t home)
{
	struct jnl_buf *jb = j->j_hash[hash_of(j, home)];

	while (jb && jb->b_home != home)
		jb = jb->b_hash_next;
	return jb;
}

struct jnl_buf *jnl_buf_get(struct jnl *j, struct pc_page *pg, uint64_t home)
{
	struct jnl_buf *jb = jnl_buf_find(j, home);
	uint32_t slot;

	if (jb)
		return jb;
	jb = calloc(1, sizeof(*jb));
	if (!jb)
		return NULL;
	if (++j->j_nbufs > j->j_stats.pinned_max)
		j->j_stats.pinned_max = j->j_nbufs;
	jb->b_home = home;
	jb->b_page = pg;
	if (pg)
		pc_get_page(pg);
	ut_list_init(&jb->b_tx_link);
	ut_list_init(&jb->b_cp_link);
	slot = hash_of(j, home);
	jb->b_hash_next = j->j_hash[slot];
	j->j_hash[slot] = jb;
	return jb;
}

void jnl_buf_release_if_idle(struct jnl *j, struct jnl_buf *jb)
{
	struct jnl_buf **pp;

	if (jb->b_tx || jb->b_cp_tx || jb->b_committing || jb->b_cp_busy)
		return;
	for (pp = &j->j_hash[hash_of(j, jb->b_home)]; *pp != jb; pp = &(*pp)->b_hash_next)
		;
	*pp = jb->b_hash_next;
	jnl_buf_drop_contents(j, jb);
	free(jb);
	j->j_nbufs--;
}

/* ---- the superblock ------------------------------------------------------ */

/* Where the log starts now: the oldest committed transaction, else the one
 * being committed if it has claimed its place, else nowhere (the log is
 * empty and may be reused from the head on). */
static void log_start(struct jnl *j, uint32_t *start, uint32_t *seq, uint32_t *tail)
{
	struct jnl_tx *t = ut_list_first(&j->j_checkpoint, struct jnl_tx, t_cp_link);

	if (!t && j->j_committing && j->j_committing->t_state == TX_COMMITTING)
		t = j->j_committing;
	*start = t ? t->t_log_start : 0;
	*seq = t ? t->t_tid : j->j_commit_done + 1;
	*tail = t ? t->t_log_start : j->j_head;
}

int jnl_sync_sb(struct jnl *j)
{
	uint32_t start, seq, tail;
	int err = 0;

	pthread_mutex_lock(&j->j_sb_mutex);
	pthread_mutex_lock(&j->j_lock);
	log_start(j, &start, &seq, &tail);
	pthread_mutex_unlock(&j->j_lock);
	/* The filesystem's flag must be on the disk before the log, which
	 * needs it, can hold a transaction. */
	if (!j->j_sb.s_start && start && j->j_cfg.log_in_use)
		err = j->j_cfg.log_in_use(j->j_cfg.arg);
	if (!err && (le32toh(j->j_sb.s_start) != start ||
		     le32toh(j->j_sb.s_sequence) != seq)) {
		j->j_sb.s_start = htole32(start);
		j->j_sb.s_sequence = htole32(seq);
		err = jnl_sb_write(&j->j_geom, &j->j_sb);
	}
	/* Only now may the log blocks before @tail be reused. */
	pthread_mutex_lock(&j->j_lock);
	if (!err)
		j->j_tail = tail;
	pthread_mutex_unlock(&j->j_lock);
	pthread_mutex_unlock(&j->j_sb_mutex);
	return err;
}

void jnl_abort(struct jnl *j, int err, const char *what)
{
	if (!j->j_aborted) {
		mlog_err("journal aborted: %s failed: %s; the filesystem must be "
			 "checked", what, strerror(-err));
		j->j_aborted = err;
	}
	pthread_cond_broadcast(&j->j_wait_done);
	pthread_cond_broadcast(&j->j_wait_updates);
}

void jnl_report_abort(struct jnl *j)
{
	int err;

	pthread_mutex_lock(&j->j_lock);
	err = j->j_abort_reported ? 0 : j->j_aborted;
	if (err)
		j->j_abort_reported = true;
	pthread_mutex_unlock(&j->j_lock);
	if (!err)
		return;
	/* As JBD does: the error outlives the daemon in the journal's own
	 * superblock, which no replay rewrites, whatever becomes of the
	 * filesystem's.  The log may be what failed, so this is a try. */
	pthread_mutex_lock(&j->j_sb_mutex);
	j->j_sb.s_errno = htole32((uint32_t)err);
	if (jnl_sb_write(&j->j_geom, &j->j_sb))
		mlog_err("journal: cannot record the abort in its superblock");
	pthread_mutex_unlock(&j->j_sb_mutex);
	if (j->j_cfg.aborted)
		j->j_cfg.aborted(j->j_cfg.arg, err);
}

/* ---- the commit thread --------------------------------------------------- */

static bool commit_due(const struct jnl *j, uint64_t now)
{
	const struct jnl_tx *t = j->j_running;
	uint64_t interval = (uint64_t)j->j_cfg.commit_interval_ms * 1000000ull;

	if (!t)
		return false;
	if (j->j_commit_wanted && (int32_t)(j->j_commit_request - t->t_tid) >= 0)
		return true;
	if (!t->t_nbufs && !t->t_nrevokes && !t->t_nordered)
		return false;
	return j->j_stop || now - t->t_start_ns >= interval ||
	       t->t_credits >= j->j_max_tx;
}

/* More than half the log holds transactions that could go home: the
 * commit thread writes the oldest home now, while writers still have
 * room, rather than a writer when the log is full and it has to wait. */
bool jnl_checkpoint_due(const struct jnl *j)
{
	return !j->j_stop && !j->j_aborted && !ut_list_empty(&j->j_checkpoint) &&
	       (uint64_t)jnl_log_used(j) * 100 >
		       (uint64_t)j->j_loglen * j->j_cfg.checkpoint_percent;
}

static void wait_for_work(struct jnl *j)
{
	struct timespec until;

	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_nsec += (long)(j->j_cfg.commit_interval_ms % 1000) * 1000000;
	until.tv_sec += j->j_cfg.commit_interval_ms / 1000 + until.tv_nsec / 1000000000;
	until.tv_nsec %= 1000000000;
	pthread_cond_timedwait(&j->j_wait_commit, &j->j_lock, &until);
}

static void *commit_thread(void *arg)
{
	struct jnl *j = arg;

	pthread_mutex_lock(&j->j_lock);
	for (;;) {
		while (!j->j_stop && (j->j_aborted || !commit_due(j, ut_now_ns())) &&
		       !jnl_checkpoint_due(j)) {
			wait_for_work(j);
			/* Idle: the copies of the last burst go back. */
			ut_pool_trim(&j->j_copies);
		}
		if (commit_due(j, ut_now_ns()) && !j->j_aborted) {
			struct jnl_tx *t = j->j_running;

			pthread_mutex_unlock(&j->j_lock);
			jnl_commit_tx(j, t);
			pthread_mutex_lock(&j->j_lock);
			continue;
		}
		if (jnl_checkpoint_due(j)) {
			int done;

			j->j_stats.early_checkpoints++;
			pthread_mutex_unlock(&j->j_lock);
			done = jnl_checkpoint_one(j);
			pthread_mutex_lock(&j->j_lock);
			/* Nothing went home: no spinning.  But a stop or a commit
			 * asked for while the lock was dropped signalled no one,
			 * and must not wait out the interval. */
			if (done <= 0 && !j->j_stop && !commit_due(j, ut_now_ns()))
				wait_for_work(j);
			continue;
		}
		if (j->j_stop)
			break;
	}
	pthread_mutex_unlock(&j->j_lock);
	return NULL;
}

int jnl_wait_commit_locked(struct jnl *j, uint32_t tid)
{
	jnl_order_check_wait("waiting for a commit", false);
	while (!j->j_aborted && (int32_t)(j->j_commit_done - tid) < 0) {
		struct jnl_tx *t = j->j_running;

		/* Nothing is being committed: commit here rather than wake the
		 * commit thread and sleep until it is done (two thread switches
		 * less per fsync).  jnl_commit_tx() lets only one commit run;
		 * callers hold no handle, so this cannot wait on themselves. */
		if (t && t->t_tid == tid && !j->j_committing) {
			pthread_mutex_unlock(&j->j_lock);
			jnl_commit_tx(j, t);
			pthread_mutex_lock(&j->j_lock);
			continue;
		}
		if (!j->j_commit_wanted || (int32_t)(tid - j->j_commit_request) > 0)
			j->j_commit_request = tid;
		j->j_commit_wanted = true;
		pthread_cond_signal(&j->j_wait_commit);
		ut_cond_wait(&j->j_wait_done, &j->j_lock);
	}
	return j->j_aborted ? -EIO : 0;
}

int jnl_commit_wait(struct jnl *j, uint32_t tid)
{
	int err;

	pthread_mutex_lock(&j->j_lock);
	err = jnl_wait_commit_locked(j, tid);
	pthread_mutex_unlock(&j->j_lock);
	return err;
}

uint64_t jnl_flush_mark(struct jnl *j)
{
	uint64_t mark;

	pthread_mutex_lock(&j->j_lock);
	mark = j->j_flush_issued;
	pthread_mutex_unlock(&j->j_lock);
	return mark;
}

bool jnl_flushed_since(struct jnl *j, uint64_t mark)
{
	bool done;

	pthread_mutex_lock(&j->j_lock);
	done = j->j_flush_done > mark;
	pthread_mutex_unlock(&j->j_lock);
	return done;
}

int jnl_sync(struct jnl *j)
{
	uint32_t tid;

	/* A transaction the commit thread is committing right now counts:
	 * returning before it is done would let a checkpoint and a clean
	 * unmount pass over changes that reach only the log. */
	pthread_mutex_lock(&j->j_lock);
	tid = j->j_running ? j->j_running->t_tid :
	      j->j_committing ? j->j_committing->t_tid : j->j_commit_done;
	pthread_mutex_unlock(&j->j_lock);
	return jnl_commit_wait(j, tid);
}

int jnl_checkpoint(struct jnl *j)
{
	int err = jnl_sync(j), done;

	while (!err && (done = jnl_checkpoint_one(j)) != 0)
		err = done < 0 ? done : 0;
	if (!err)
		err = jnl_sync_sb(j);
	return err;
}

void jnl_get_stats(struct jnl *j, struct jnl_stats *st)
{
	pthread_mutex_lock(&j->j_lock);
	*st = j->j_stats;
	st->pinned = j->j_nbufs;
	st->committed_tid = j->j_commit_done;
	st->running_tid = j->j_running ? j->j_running->t_tid : 0;
	st->log_used = jnl_log_used(j);
	st->log_size = j->j_loglen;
	pthread_mutex_unlock(&j->j_lock);
	ut_pool_usage(&j->j_copies, &st->copy_bytes, &st->copy_bytes_held);
}

static int by_longest(const void *a, const void *b)
{
	const struct jnl_caller_stats *x = a, *y = b;

	return (x->held_ns_max < y->held_ns_max) - (x->held_ns_max > y->held_ns_max);
}

unsigned int jnl_get_caller_stats(struct jnl *j, struct jnl_caller_stats *out,
				  unsigned int max)
{
	struct jnl_caller_stats all[JNL_CALLERS];
	unsigned int n = 0;

	pthread_mutex_lock(&j->j_lock);
	for (unsigned int i = 0; i < JNL_CALLERS; i++)
		if (j->j_callers[i].handles)
			all[n++] = j->j_callers[i];
	pthread_mutex_unlock(&j->j_lock);
	qsort(all, n, sizeof(all[0]), by_longest);
	n = UT_MIN(n, max);
	memcpy(out, all, n * sizeof(all[0]));
	return n;
}

/* ---- open and close ------------------------------------------------------ */

static int load_sb(struct jnl *j, struct bdev *bd, const uint64_t *map,
		   uint32_t nblocks)
{
	char why[200];
	void *blk = bdev_alloc_buf(bd->block_size);
	int err;

	if (!blk)
		return -ENOMEM;
	j->j_geom = (struct jnl_geom){ .bd = bd, .map = map, .nblocks = nblocks,
				       .bs = bd->block_size };
	err = jnl_read_block(&j->j_geom, 0, blk);
	if (!err)
		memcpy(&j->j_sb, blk, sizeof(j->j_sb));
	bdev_free_buf(blk);
	if (!err && jnl_sb_check(&j->j_sb, nblocks, bd->block_size, why, sizeof(why))) {
		mlog_err("%s", why);
		err = -EUCLEAN;
	}
	if (!err && j->j_sb.s_start) {
		mlog_err("journal needs recovery before it can be used");
		err = -EUCLEAN;
	}
	return err;
}

static int init_state(struct jnl *j, const struct jnl_config *cfg)
{
	uint32_t buckets = 64;

	j->j_cfg = *cfg;
	if (!j->j_cfg.commit_interval_ms)
		j->j_cfg.commit_interval_ms = 5000;
	if (!j->j_cfg.checkpoint_percent)
		j->j_cfg.checkpoint_percent = 50;
	j->j_geom.first = le32toh(j->j_sb.s_first);
	j->j_geom.seed = le64toh(j->j_sb.s_csum_seed);
	j->j_loglen = j->j_geom.nblocks - j->j_geom.first;
	j->j_max_tx = le32toh(j->j_sb.s_max_trans_blocks);
	/* A transaction's worst case must fit a quarter of the log, and its
	 * pages half of what the journal may pin. */
	while (j->j_max_tx > 1 && jnl_tx_reservation(j, j->j_max_tx) > j->j_loglen / 4)
		j->j_max_tx--;
	if (j->j_cfg.max_pinned)
		j->j_max_tx = UT_MAX(1u, UT_MIN(j->j_max_tx, j->j_cfg.max_pinned / 2));
	j->j_head = j->j_tail = j->j_geom.first;
	j->j_next_tid = le32toh(j->j_sb.s_sequence);
	j->j_commit_done = j->j_next_tid - 1;
	ut_list_init(&j->j_checkpoint);
	while (buckets < j->j_geom.nblocks / 2)
		buckets *= 2;
	j->j_hash = calloc(buckets, sizeof(*j->j_hash));
	j->j_hash_mask = buckets - 1;
	if (!j->j_hash)
		return -ENOMEM;
	return ut_pool_init(&j->j_copies, j->j_geom.bs);
}

static void init_sync(struct jnl *j)
{
	pthread_mutex_init(&j->j_lock, NULL);
	pthread_mutex_init(&j->j_cp_mutex, NULL);
	pthread_mutex_init(&j->j_sb_mutex, NULL);
	pthread_cond_init(&j->j_wait_updates, NULL);
	pthread_cond_init(&j->j_wait_commit, NULL);
	pthread_cond_init(&j->j_wait_done, NULL);
}

static void destroy(struct jnl *j)
{
	pthread_mutex_destroy(&j->j_lock);
	pthread_mutex_destroy(&j->j_cp_mutex);
	pthread_mutex_destroy(&j->j_sb_mutex);
	pthread_cond_destroy(&j->j_wait_updates);
	pthread_cond_destroy(&j->j_wait_commit);
	pthread_cond_destroy(&j->j_wait_done);
	free(j->j_hash);
	ut_pool_destroy(&j->j_copies);
	free(j);
}

int jnl_open(struct bdev *bd, const uint64_t *map, uint32_t nblocks,
	     const struct jnl_config *cfg, struct jnl **out)
{
	struct jnl *j = calloc(1, sizeof(*j));
	int err;

	if (!j)
		return -ENOMEM;
	init_sync(j);
	err = load_sb(j, bd, map, nblocks);
	if (!err)
		err = init_state(j, cfg);
	if (!err)
		err = -pthread_create(&j->j_thread, NULL, commit_thread, j);
	if (err) {
		destroy(j);
		return err;
	}
	*out = j;
	return 0;
}

/* Buffers can outlive a failed journal; drop them so pages are unpinned. */
static void drop_all(struct jnl *j)
{
	for (uint32_t i = 0; i <= j->j_hash_mask; i++) {
		while (j->j_hash[i]) {
			struct jnl_buf *jb = j->j_hash[i];

			j->j_hash[i] = jb->b_hash_next;
			jnl_buf_drop_contents(j, jb);
			free(jb);
		}
	}
	while (!ut_list_empty(&j->j_checkpoint)) {
		struct jnl_tx *t = ut_list_first(&j->j_checkpoint, struct jnl_tx, t_cp_link);

		ut_list_del(&t->t_cp_link);
		jnl_tx_free(t);
	}
	if (j->j_running)
		jnl_tx_free(j->j_running);
}

int jnl_close(struct jnl *j)
{
	int err = jnl_checkpoint(j);

	pthread_mutex_lock(&j->j_lock);
	j->j_stop = true;
	pthread_cond_signal(&j->j_wait_commit);
	pthread_mutex_unlock(&j->j_lock);
	pthread_join(j->j_thread, NULL);
	jnl_report_abort(j);
	if (!err && j->j_aborted)
		err = -EIO;
	drop_all(j);
	destroy(j);
	return err;
}
