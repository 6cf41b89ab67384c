/*
 * jnl.h - the miscfs journal: JBD-style transactions over a bdev.
 *
 * The journal lives in blocks the filesystem hands over as a block map
 * (journal logical block i is device block map[i]); it knows nothing of the
 * filesystem's format beyond that, and nothing of FUSE.
 *
 * On-disk structures are little-endian and described in docs/FORMAT.md
 * ("The journal").
 */
#ifndef MISCFS_JNL_H
#define MISCFS_JNL_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "bdev.h"
#include "pc.h"

#define JNL_MAGIC               0x4C4E4A4Du   /* bytes "MJNL" */
#define JNL_MIN_BLOCKS          1024u

/* h_blocktype of every journal block that carries a header. */
#define JNL_BT_DESCRIPTOR       1u
#define JNL_BT_COMMIT           2u
#define JNL_BT_REVOKE           3u
#define JNL_BT_SUPERBLOCK       4u

/* The 12-byte header every metadata block of the journal starts with. */
struct jnl_header {
	uint32_t h_magic;
	uint32_t h_blocktype;
	uint32_t h_sequence;            /* transaction ID */
};

/*
 * Journal superblock: the first 512 bytes of journal block 0.  It fits one
 * sector, which a disk writes whole or not at all, so a power cut during
 * its update leaves either the old or the new one, never a torn mix.
 */
struct jnl_superblock {
	struct jnl_header s_header;     /*   0 */
	uint32_t s_block_size;          /*  12 */
	uint32_t s_maxlen;              /*  16: blocks, superblock included */
	uint32_t s_first;               /*  20: first log block (1) */
	uint32_t s_sequence;            /*  24: first transaction to replay */
	uint32_t s_start;               /*  28: its block; 0: log is empty */
	int32_t  s_errno;               /*  32: sticky error, 0 or -errno */
	uint32_t s_feature_compat;      /*  36 */
	uint32_t s_feature_incompat;    /*  40 */
	uint32_t s_feature_ro_compat;   /*  44 */
	uint8_t  s_uuid[16];            /*  48: the filesystem's */
	uint64_t s_csum_seed;           /*  64: seed of block checksums */
	uint32_t s_max_trans_blocks;    /*  72: largest transaction */
	uint8_t  s_reserved[432];       /*  76 */
	uint32_t s_checksum;            /* 508: seed 0 over bytes 0..507 */
};
_Static_assert(sizeof(struct jnl_superblock) == 512, "journal superblock");

/*
 * Write an empty journal over @nblocks blocks of @bd: a superblock in
 * map[0] saying the log is empty.  The log blocks are left as they are:
 * recovery accepts only blocks with the journal magic, the expected
 * sequence and a checksum seeded with @csum_seed, which stale data cannot
 * forge.  @bd's block size is the journal's.
 */
int jnl_format(struct bdev *bd, const uint64_t *map, uint32_t nblocks,
	       const uint8_t uuid[16], uint64_t csum_seed);

/*
 * Check a journal superblock read from disk: magic, type, checksum and
 * bounds against @nblocks and @block_size.  Returns 0 or -EUCLEAN, with
 * what is wrong in @why (if not NULL).
 */
int jnl_sb_check(const struct jnl_superblock *sb, uint32_t nblocks,
		 uint32_t block_size, char *why, size_t whylen);

/* Print a journal superblock in the stable "key: value" form of
 * miscfs-debug. */
void jnl_sb_print(const struct jnl_superblock *sb, FILE *out);

/* ---- the running journal ------------------------------------------------- */

struct jnl;
struct jnl_tx;

/*
 * An inode whose file data must reach its home blocks before the commit of
 * a transaction that changed its metadata (ordered data mode).  Embedded in
 * the filesystem's inode; the journal owns the fields.
 */
struct jnl_inode {
	uint64_t ji_ino;              /* the filesystem's, for submit_ordered */
	uint32_t ji_tid;              /* newest transaction listing it */
	bool ji_listed;               /* ji_tid is valid */
	bool ji_flushing;             /* a commit is writing its data */
};

struct jnl_config {
	unsigned int commit_interval_ms;   /* 0: 5000 */
	/* One batch and one flush per commit instead of two flushes; the
	 * transaction checksum stands in for the first flush. */
	bool async_commit;
	/*
	 * The most page-cache pages the journal may pin (0: no limit).  Pinned
	 * pages cannot be evicted, so the filesystem sets this below the
	 * cache's budget; handles then wait for checkpoints to unpin pages.
	 * Transactions are kept to half of it.
	 */
	uint32_t max_pinned;
	/*
	 * How full the log may get, in percent, before the commit thread
	 * writes the oldest committed transactions home on its own, so that
	 * writers seldom find the log full and wait (0: 50; 100: never, the
	 * log is then made room for only when a handle needs it).
	 */
	unsigned int checkpoint_percent;
	/*
	 * Ordered mode, in two halves as jbd2 has them: submit_ordered starts
	 * writing inode @ji's dirty data home (pc_write_range), then, once
	 * every inode of the transaction is submitted, wait_ordered waits for
	 * it (pc_wait_range); either may be NULL.  They run before the
	 * transaction's log blocks, in whichever thread commits: the commit
	 * thread, or any thread in jnl_start, jnl_commit_wait, jnl_sync,
	 * jnl_checkpoint or jnl_close (making room commits and checkpoints).
	 * So they must not take a lock such a caller may hold; by the lock
	 * order (docs/DESIGN.md) those callers hold no page lock and no
	 * mapping writeback lock, and the halves above take neither the
	 * mapping's writeback lock nor any page lock while sleeping on another.
	 * An error aborts the journal.
	 */
	int (*submit_ordered)(void *arg, struct jnl_inode *ji);
	int (*wait_ordered)(void *arg, struct jnl_inode *ji);
	/*
	 * Called before the journal superblock first says that the log holds
	 * a transaction, after it said the log was empty (the first commit of
	 * the journal, and the first after a checkpoint emptied the log).  It
	 * runs under the superblock's mutex, holding no other lock of the
	 * journal; an error fails the commit.  May be NULL.  The filesystem
	 * sets its "needs recovery" flag on the disk here.
	 */
	int (*log_in_use)(void *arg);
	/*
	 * Called on every copy of a block the journal is about to write, to
	 * the log (the commit's snapshot) or home (a checkpoint), before its
	 * checksum is taken: it may change the copy.  It runs under j_lock,
	 * so it must neither sleep nor take a lock.  May be NULL.  The
	 * filesystem keeps its sticky superblock flags in every copy of the
	 * superblock, so that neither a checkpoint nor a replay clears them.
	 */
	void (*frozen)(void *arg, uint64_t home, void *data);
	/*
	 * Called once, holding no lock of the journal, after the journal
	 * aborted with @err (the error is also in the journal superblock's
	 * s_errno, if that could be written).  May be NULL.
	 */
	void (*aborted)(void *arg, int err);
	void *arg;
};

/*
 * A handle: one atomic filesystem operation.  Lives on the caller's stack
 * between jnl_start() and jnl_stop(), which one thread calls.  The lock
 * order (docs/DESIGN.md): a handle is started before any page lock is
 * taken, so a thread holding a page lock or a mapping's writeback lock
 * (inside writepage(s)) never starts one; writeback never needs a handle,
 * since the filesystem allocates blocks when the write happens, as ext3
 * does.  Handles never nest, and a thread holding one never waits for a
 * commit (jnl_commit_wait, jnl_sync ...): the commit waits for the
 * handle.  Debug builds abort at once on any of these, naming the rule.
 * While a thread holds a handle its page allocations never wait for
 * writeback that needs the journal (pc_nofs_begin).
 */
struct jnl_handle {
	struct jnl *h_journal;
	struct jnl_tx *h_tx;
	uint32_t h_tid;
	uint32_t h_credits;           /* blocks the caller reserved */
	uint32_t h_used;              /* blocks it has added so far */
	int h_err;
	const char *h_caller;         /* the function that started it */
	uint64_t h_start_ns;
};

/* Handles by the function that started them: how many stopped, and how
 * long each was held from its start to its stop, in all and at most. */
struct jnl_caller_stats {
	const char *caller;
	uint64_t handles, held_ns_total, held_ns_max;
};

struct jnl_stats {
	uint64_t commits, handles, blocks_logged, revokes;
	uint64_t checkpoints, blocks_checkpointed, log_full_waits;
	uint64_t early_checkpoints;        /* batches before the log was full */
	/* Commits from locking the transaction to its commit block on disk:
	 * the sum (mean = commit_ns_total / commits) and the longest. */
	uint64_t commit_ns_total, commit_ns_max;
	uint32_t pinned, pinned_max;       /* pages held now, and at most */
	uint32_t committed_tid, running_tid;
	uint32_t log_used, log_size;
	/* Bytes of block copies in use (frozen file data, a commit's and a
	 * checkpoint's snapshots), and the most ever held for them. */
	uint64_t copy_bytes, copy_bytes_held;
};

/*
 * Start using the journal in @nblocks blocks of @bd (journal block i is
 * device block map[i]; @map must stay valid).  The log must be empty:
 * run jnl_recover() first.  Starts the commit thread.
 */
int jnl_open(struct bdev *bd, const uint64_t *map, uint32_t nblocks,
	     const struct jnl_config *cfg, struct jnl **out);
/* Commit everything, write it home, mark the log empty, stop the thread. */
int jnl_close(struct jnl *j);

/*
 * Start a handle that will change at most @credits blocks (a revoke counts
 * as one).  Waits while the log is too full; refuses with -ENOSPC a
 * request larger than one transaction may ever be, and with -EIO when the
 * journal has been aborted by an I/O error.
 */
int jnl_start_by(struct jnl *j, uint32_t credits, struct jnl_handle *h,
		 const char *caller);
/* @caller is the function that calls: messages about the handle name it,
 * and the statistics by caller count it. */
#define jnl_start(j, credits, h) jnl_start_by(j, credits, h, __func__)
/* The most credits one handle may ask for: a small log, or a small cache
 * the journal may pin only half of, makes it smaller. */
uint32_t jnl_max_credits(const struct jnl *j);
/* End the handle; returns its first error, if any. */
int jnl_stop(struct jnl_handle *h);

/*
 * Declare that the handle is about to change block @home, cached in @pg
 * (a page of block size whose data is the block).  Call it before touching
 * the data; the page stays pinned while the journal needs it.  Never mark
 * such a page dirty in the page cache: the journal writes it home.
 * -EUCLEAN when another page still stands for @home in the journal, not
 * freed (jnl_forget): two owners claim the block, which only a damaged
 * image makes.
 */
int jnl_get_write_access(struct jnl_handle *h, struct pc_page *pg, uint64_t home);
/* The handle changed block @home (after jnl_get_write_access). */
int jnl_dirty(struct jnl_handle *h, uint64_t home);
/*
 * Journal file data (data=journal): block @home now holds @pg's data.  The
 * journal takes a copy at once, so the caller holds the page lock (or
 * otherwise keeps the data still) across the call, and may change the
 * page as soon as it returns; the page is not pinned.  Commits log that
 * copy and checkpoints write it home, so neither ever reads a page a
 * write() may be filling, nor puts uncommitted bytes home.  Until the
 * block is home, jnl_read_data() gives it to a reader of the block.
 * Calling it again replaces the copy (in the same transaction, no more
 * log space).
 */
int jnl_journal_data(struct jnl_handle *h, struct pc_page *pg, uint64_t home);
/*
 * If the journal holds file data for block @home that is not home yet,
 * copy it into @buf (block size) and return 1; else 0, and the block's
 * home has its newest contents.  A page read back after eviction must
 * take it from here rather than from the disk.
 */
int jnl_read_data(struct jnl *j, uint64_t home, void *buf);
/*
 * Block @home was freed: recovery replays no copy of it logged by this
 * transaction or an earlier one, and once this transaction has committed
 * no older copy of it is written home.  Until then a crash undoes the
 * free, so the last committed copy stays in the log or goes home.  A
 * checkpoint write of the block already under way is waited for.
 *
 * The block may be journalled again at once, by this transaction or a
 * later one, through its old page or another (a freed metadata block may
 * come back as another mapping's data): a block the transaction dirties
 * after its revoke is logged and not revoked, and its new copy is the one
 * recovery replays.  Written home without the journal (as file data), it
 * must wait until this transaction has committed, or a crash would give
 * the old owner the new owner's bytes.
 */
int jnl_revoke(struct jnl_handle *h, uint64_t home);
/* Ordered mode: @ji's data goes home before this transaction commits. */
int jnl_add_ordered(struct jnl_handle *h, struct jnl_inode *ji);
/* Before freeing an inode: take @ji off any transaction. */
void jnl_forget_inode(struct jnl *j, struct jnl_inode *ji);

/* Wait until transaction @tid (from h_tid) is committed, asking for its
 * commit if it is still running.  This is fsync. */
int jnl_commit_wait(struct jnl *j, uint32_t tid);
/* Commit whatever is running and wait for it. */
int jnl_sync(struct jnl *j);
/*
 * For a caller that needs writes it has completed to be durable and waits
 * for a commit anyway (fsync): a mark taken once they have completed, then
 * jnl_flushed_since() says whether a commit has since flushed the device
 * with a flush issued after the mark, which covers them too; if not, the
 * caller flushes the device itself.
 */
uint64_t jnl_flush_mark(struct jnl *j);
bool jnl_flushed_since(struct jnl *j, uint64_t mark);
/* Write every committed block home and empty the log. */
int jnl_checkpoint(struct jnl *j);

void jnl_get_stats(struct jnl *j, struct jnl_stats *st);
/* The callers whose handles were held longest (by the longest one) first:
 * up to @max of them into @out; returns how many.  The first
 * JNL_CALLERS functions to start a handle are counted. */
#define JNL_CALLERS 64u
unsigned int jnl_get_caller_stats(struct jnl *j, struct jnl_caller_stats *out,
				  unsigned int max);

/* ---- recovery ------------------------------------------------------------ */

struct jnl_recovery {
	bool was_empty;              /* s_start was 0: nothing to do */
	uint32_t transactions;       /* complete transactions found */
	uint32_t first_tid, last_tid;
	uint64_t replayed;           /* blocks written home */
	uint64_t revoked;            /* block copies skipped as revoked */
	int32_t jnl_errno;           /* s_errno: the journal was aborted */
	char end[256];               /* why the scan stopped */
};

/* Only find and check the transactions; write nothing. */
#define JNL_RECOVER_CHECK_ONLY  0x1u

/*
 * Bring the filesystem up to date from its journal, in three passes: scan
 * (the run of complete transactions from s_start; the first torn or
 * mismatching one ends it), revoke (collect revoked blocks), replay (write
 * the newest committed copy of each block home unless revoked by the same
 * or a later transaction).  Then flush and mark the log empty.
 *
 * Returns 0 (see @info, whose @end says why the scan stopped), -EUCLEAN if
 * the journal superblock is damaged (nothing is replayed), or -errno.
 */
int jnl_recover(struct bdev *bd, const uint64_t *map, uint32_t nblocks,
		unsigned int flags, struct jnl_recovery *info);
/*
 * The same, for a journal that covers only device blocks [0, @home_end)
 * (0: the whole device): a transaction logging a block at or past it is
 * damage, and ends the log there as a torn one does, so nothing past it
 * -- a filesystem's reserved regions, which the journal never covers --
 * is ever written by a replay.
 */
int jnl_recover_within(struct bdev *bd, const uint64_t *map, uint32_t nblocks,
		       uint64_t home_end, unsigned int flags,
		       struct jnl_recovery *info);

/*
 * Clear the journal superblock's s_errno, left by an abort, once the
 * filesystem has recorded the error where it keeps it (its superblock).
 * 0 if it was clear already; -EUCLEAN if the superblock is damaged.
 */
int jnl_clear_errno(struct bdev *bd, const uint64_t *map, uint32_t nblocks);

/* The journal's checksum: low 32 bits of XXH3-64 with @seed. */
uint32_t jnl_csum(uint64_t seed, const void *buf, size_t len);

#endif /* MISCFS_JNL_H */
