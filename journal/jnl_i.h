/*
 * jnl_i.h - what the journal's files share; not part of the API.
 */
#ifndef MISCFS_JNL_I_H
#define MISCFS_JNL_I_H

#include <pthread.h>
#include <stdatomic.h>

#include "jnl_disk.h"
#include "util.h"

/* One block of a transaction: its home and its content. */
struct jnl_log_block {
	uint64_t home;
	const void *data;            /* block size bytes, 512-aligned */
};

/* What one commit writes into the log. */
struct jnl_tx_io {
	uint32_t tid;
	uint32_t start;              /* log position of its first block */
	const struct jnl_log_block *blocks;
	uint32_t nblocks;
	const uint64_t *revokes;
	uint32_t nrevokes;
};

/* Log blocks a transaction of @nblocks blocks and @nrevokes revokes takes,
 * descriptor, revoke and commit blocks included. */
uint32_t jnl_log_blocks_needed(uint32_t bs, uint32_t nblocks, uint32_t nrevokes);

/*
 * Write @io into the log with the ordering of jnl_log.c (@async: one batch
 * and one flush); when it returns 0 the transaction is committed and *end
 * is the log position after it.
 */
int jnl_log_write(const struct jnl_geom *g, const struct jnl_tx_io *io,
		  bool async, uint32_t *end);

/* ---- transactions ---------------------------------------------------------
 *
 *   RUNNING -> LOCKED -> FLUSHING -> COMMITTING -> COMMITTED -> (freed)
 *
 * RUNNING    handles join it and add buffers;
 * LOCKED     no new handles, and no new transaction either; waits for its
 *            handles to stop, then snapshots every buffer and detaches
 *            them (buffers may join the next transaction from here on);
 * FLUSHING   ordered data is written home;
 * COMMITTING its log blocks and commit block are written (jnl_log.c);
 * COMMITTED  on the checkpoint list until all its buffers are home.
 *
 * Lock order: j_cp_mutex, then j_sb_mutex, then j_lock; the daemon's
 * whole order is in docs/DESIGN.md ("Lock order").  A handle comes before
 * all of them.  j_cp_mutex and j_sb_mutex are taken only by threads that
 * hold no page lock and no mapping writeback lock (jnl_start, commit
 * waits, the commit thread), and a commit run under them takes page locks
 * for ordered data (pc_write_range), so they come before page locks.
 * j_lock may be taken holding page locks; it is never held while sleeping
 * on a page or on I/O, and under it the journal only puts page references
 * (which may reach the cache's pool lock).  Ordered data is written
 * without j_lock and without any mapping's writeback lock.
 */
enum jnl_tx_state {
	TX_RUNNING,
	TX_LOCKED,
	TX_FLUSHING,
	TX_COMMITTING,
	TX_COMMITTED,
};

struct jnl_tx {
	uint32_t t_tid;
	enum jnl_tx_state t_state;
	int t_updates;               /* handles not yet stopped */
	uint32_t t_credits;          /* reserved by its handles */
	uint32_t t_reserved;         /* log blocks reserved for it */
	struct ut_list t_bufs;       /* jnl_buf.b_tx_link */
	uint32_t t_nbufs;
	uint64_t *t_revokes;
	uint32_t t_nrevokes, t_cap_revokes;
	struct jnl_inode **t_ordered; /* NULL entries: forgotten inodes */
	uint32_t t_nordered, t_cap_ordered;
	uint64_t t_start_ns;
	/* once it has claimed its place in the log */
	uint32_t t_log_start, t_log_len;
	struct ut_list t_cp_bufs;    /* jnl_buf.b_cp_link: still to write home */
	struct ut_list t_cp_link;    /* in j_checkpoint, oldest first */
};

/* The journal's state for one block it is responsible for. */
struct jnl_buf {
	uint64_t b_home;
	/* Metadata: the page, pinned while the buffer exists, whose data the
	 * handles change in place.  Journalled file data: NULL, and b_frozen
	 * holds the block as it was journalled last (see jnl_journal_data). */
	struct pc_page *b_page;
	void *b_frozen;
	struct jnl_tx *b_tx;         /* running transaction holding it */
	struct jnl_tx *b_cp_tx;      /* committed transaction to write it home */
	bool b_dirty;                /* changed in b_tx */
	bool b_committing;           /* in the log image being written */
	bool b_freed;                /* revoked by b_freed_tid: see K4 */
	uint32_t b_freed_tid;
	bool b_cp_busy;              /* a checkpoint is writing a copy home */
	struct ut_list b_tx_link, b_cp_link;
	struct jnl_buf *b_hash_next;
};

struct jnl {
	struct jnl_geom j_geom;
	struct jnl_config j_cfg;
	struct jnl_superblock j_sb;      /* as last written */
	uint32_t j_max_tx;               /* credits per transaction */
	uint32_t j_loglen;               /* s_maxlen - s_first */

	pthread_mutex_t j_lock;          /* everything below; after page
	                                    locks, before the cache's own */
	pthread_cond_t j_wait_updates;   /* a handle stopped */
	pthread_cond_t j_wait_commit;    /* the commit thread has work */
	pthread_cond_t j_wait_done;      /* a commit or checkpoint finished */
	struct jnl_tx *j_running;
	struct jnl_tx *j_committing;
	struct ut_list j_checkpoint;     /* committed transactions */
	uint32_t j_next_tid;             /* of the next transaction created */
	uint32_t j_commit_done;          /* newest committed tid */
	uint32_t j_commit_request;       /* commit up to this tid */
	bool j_commit_wanted;
	uint32_t j_head;                 /* next log position */
	uint32_t j_tail;                 /* start of the oldest live transaction */
	uint32_t j_reserved;             /* log blocks reserved by open transactions */
	uint64_t j_flush_issued;         /* commits' flushes: counted before */
	uint64_t j_flush_done;           /* issue, and the newest one done */
	int j_aborted;                   /* 0 or the -errno that stopped it */
	bool j_abort_reported;           /* jnl_report_abort() has run */
	bool j_stop;
	struct jnl_buf **j_hash;
	uint32_t j_hash_mask;
	uint32_t j_nbufs;                /* buffers: pages pinned and
	                                    frozen copies of file data */
	_Atomic uint32_t j_nfrozen;      /* buffers with a frozen copy: a
	                                    read needs no j_lock without one */
	struct ut_pool j_copies;         /* frozen, commit and checkpoint
	                                    copies of blocks; its lock is a
	                                    leaf, taken under j_lock */
	struct jnl_stats j_stats;
	/* By caller (jnl_handle.c), open addressing on the name's address;
	 * j_lock. */
	struct jnl_caller_stats j_callers[JNL_CALLERS];

	pthread_mutex_t j_cp_mutex;      /* one checkpointer at a time;
	                                    before page locks */
	pthread_mutex_t j_sb_mutex;      /* one superblock writer at a time */
	pthread_t j_thread;
};

/* Space a transaction of @credits credits may take in the log. */
uint32_t jnl_tx_reservation(const struct jnl *j, uint32_t credits);
/* Log blocks in use by committed transactions (j_lock held). */
uint32_t jnl_log_used(const struct jnl *j);
bool jnl_checkpoint_due(const struct jnl *j);   /* j_lock held */

struct jnl_buf *jnl_buf_find(struct jnl *j, uint64_t home);
/* The buffer of block @home, created (pinning @pg, unless NULL) if there
 * is none. */
struct jnl_buf *jnl_buf_get(struct jnl *j, struct pc_page *pg, uint64_t home);
/* Replace the frozen copy of @jb by @data (NULL: none), freeing the old
 * one (j_lock held). */
void jnl_buf_set_frozen(struct jnl *j, struct jnl_buf *jb, void *data);
/* Unpin the page and free the frozen copy (j_lock held). */
void jnl_buf_drop_contents(struct jnl *j, struct jnl_buf *jb);
/* Drop @jb if no transaction needs it any more (j_lock held). */
void jnl_buf_release_if_idle(struct jnl *j, struct jnl_buf *jb);
/* The block's bytes as the journal has them: the frozen copy of file
 * data, else the metadata page. */
void *jnl_buf_data(const struct jnl_buf *jb);

/* Commit (the commit thread, or jnl_close). */
int jnl_commit_tx(struct jnl *j, struct jnl_tx *t);
void jnl_tx_free(struct jnl_tx *t);
/* Bring the on-disk superblock in line with the log (takes j_sb_mutex). */
int jnl_sync_sb(struct jnl *j);
/* Write the oldest committed transaction home, or drop the oldest ones
 * that newer transactions superseded; 0 when there was none left, 1 when
 * some went, or -errno. */
int jnl_checkpoint_one(struct jnl *j);
/*
 * The lock order's debug check (docs/DESIGN.md, "Lock order"): each thread
 * counts the handles it holds; jnl_start and every wait for a commit check
 * that count and the page cache's (pc_page_locks_held, pc_wb_locks_held)
 * and abort at once, naming the rule, on a violation.  Release builds keep
 * no count and check nothing.
 */
#ifndef NDEBUG
void jnl_order_check_start(void);
void jnl_order_check_wait(const char *what, bool handle_ok);
void jnl_order_handle(int delta);
#else
static inline void jnl_order_check_start(void) {}
static inline void jnl_order_check_wait(const char *what, bool handle_ok)
{
	(void)what;
	(void)handle_ok;
}
static inline void jnl_order_handle(int delta) { (void)delta; }
#endif

/* Wake the commit thread for @tid and wait for it (j_lock held). */
int jnl_wait_commit_locked(struct jnl *j, uint32_t tid);
void jnl_abort(struct jnl *j, int err, const char *what);
/* After an abort, once: s_errno to the journal superblock and the
 * configuration's aborted() (no lock of the journal held). */
void jnl_report_abort(struct jnl *j);

/* Transaction IDs wrap: is @a older than @b? */
static inline bool jnl_tid_before(uint32_t a, uint32_t b)
{
	return (int32_t)(a - b) < 0;
}

#endif /* MISCFS_JNL_I_H */
