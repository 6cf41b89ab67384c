/*
 * fsck.h - the checker and repairer of miscfs images (prefix fsck_).
 *
 * fsck_run() checks an unmounted image in passes, as e2fsck does:
 *
 *   journal  replay a log that holds transactions (with FSCK_NO: say the
 *            image needs recovery and check it as it stands)
 *   0        superblock and its backups, group descriptors, features,
 *            the reserved-region table
 *   orphans  finish deleting or truncating the inodes of the orphan list
 *   1        every inode: mode, flags, times, size against its blocks,
 *            the block map (blocks out of range, claimed twice, bad
 *            indirect blocks), the xattr block; blocks claimed by two
 *            inodes are copied so each keeps its own (pass 1b)
 *   2        every directory block with the mount's own check
 *            (fmt_dirblock_check), ".", "..", duplicate names, entries of
 *            free inodes, file types against the inodes
 *   3        every directory reachable from the root, no loops; what is
 *            not is reconnected in /lost+found (made if missing)
 *   4        link counts against the entries; unattached inodes go to
 *            /lost+found, or are freed when they hold nothing
 *   5        block and inode bitmaps against what is in use, free counts
 *            per group and in the superblock
 *
 * It uses the format code of the filesystem itself (mfs.h: checksums,
 * geometry, the superblock, directory-block and xattr-block checks, the
 * block-map walk), so what fsck accepts is what a mount accepts.
 *
 * Every problem is an entry of one table (problem.c): a code, a message
 * naming the object, the question and whether preening may fix it.  The
 * caller sees each problem through a callback and answers it.  Repairs are
 * written straight to the device as they are made, and flushed at the end;
 * with FSCK_NO nothing at all is written.  Memory is bitmaps of the blocks
 * and inodes and compact arrays (a few bytes per inode, 12 per directory,
 * 12 per directory block), never a copy of the metadata.
 *
 * The filesystem core knows nothing of this layer; this layer prints
 * nothing itself (it logs I/O errors through mlog) and knows no terminal.
 */
#ifndef MISCFS_FSCK_H
#define MISCFS_FSCK_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>

#include "bdev.h"

/* Exit status bits, as fsck(8) combines them. */
#define FSCK_EXIT_OK            0
#define FSCK_EXIT_CORRECTED     1   /* errors found and all corrected */
#define FSCK_EXIT_UNCORRECTED   4   /* errors left uncorrected */
#define FSCK_EXIT_OPERATIONAL   8   /* could not check: I/O, memory ... */
#define FSCK_EXIT_USAGE         16
#define FSCK_EXIT_CANCELED      32  /* stopped by the user */

enum fsck_mode {
	FSCK_ASK,        /* the answer callback asks the user */
	FSCK_NO,         /* -n: answer no to all, open read-only, write nothing */
	FSCK_YES,        /* -y: answer yes to all */
	FSCK_PREEN,      /* -p: fix what is safe to fix unattended, stop at the
	                    first problem that is not */
};

enum fsck_answer {
	FSCK_ANSWER_NO,
	FSCK_ANSWER_YES,
	FSCK_ANSWER_CANCEL,   /* stop now: exit status gets FSCK_EXIT_CANCELED */
};

/* The passes, for progress and reports. */
enum fsck_pass {
	FSCK_PASS_JOURNAL = -1,
	FSCK_PASS_0 = 0,         /* superblock, descriptors, regions, orphans */
	FSCK_PASS_1,
	FSCK_PASS_1B,            /* blocks claimed twice */
	FSCK_PASS_2,
	FSCK_PASS_3,
	FSCK_PASS_4,
	FSCK_PASS_5,
};

/*
 * One problem, as the caller sees it.  Strings point into fsck's memory and
 * are valid during the callback only.  Fields that do not apply are 0 (and
 * @name NULL).
 */
struct fsck_report {
	const char *code;        /* stable identifier, e.g. "1.BLOCK_RANGE" */
	enum fsck_pass pass;
	const char *message;     /* one sentence naming the object */
	const char *question;    /* "Clear", "Fix", "Connect to lost+found" ...;
	                            NULL for a note that asks nothing */
	bool preen_ok;           /* -p may fix it without asking */
	enum fsck_answer proposed; /* what the mode answers; FSCK_ASK proposes
	                              yes */
	/* The objects, also in the message. */
	uint32_t ino;            /* inode */
	uint32_t dir;            /* directory holding the entry */
	uint64_t block;
	uint32_t group;
	const char *name;        /* entry name: @name_len bytes, not terminated,
	                            any byte but '/' and NUL */
	size_t name_len;
};

struct fsck_opts {
	enum fsck_mode mode;
	bool force;              /* -f: check even an image marked clean */
	bool dir_index;          /* -D: index every directory past one block
	                            (dir_index feature), as e2fsck -D */
	/*
	 * Called for every problem, in the order found; returns the answer.
	 * For FSCK_NO, FSCK_YES and FSCK_PREEN the answer should be
	 * r->proposed (the caller only prints); FSCK_ASK asks.  A problem
	 * with no question is a note: its answer is ignored.  NULL: every
	 * problem gets its proposed answer.
	 */
	enum fsck_answer (*problem)(void *arg, const struct fsck_report *r);
	/* A pass starts (@title as e2fsck prints it: "Pass 1: Checking
	 * inodes, blocks, and sizes"); may be NULL. */
	void (*pass_start)(void *arg, enum fsck_pass pass, const char *title);
	/* Progress within a pass: @done of @total units; may be NULL. */
	void (*progress)(void *arg, enum fsck_pass pass, uint64_t done,
			 uint64_t total);
	void *arg;
	/* Set (by a signal handler) to stop at the next problem or unit of
	 * work, as a cancel answer does.  May be NULL. */
	volatile sig_atomic_t *cancel;
	/* Check time ("now") for timestamps in the future and s_lastcheck;
	 * 0: the clock.  Tests pin it. */
	int64_t now;
};

struct fsck_result {
	int exit;                /* FSCK_EXIT_* bits */
	bool skipped_clean;      /* marked clean, no -f: nothing checked */
	bool recovered;          /* the journal was replayed */
	bool needs_recovery;     /* FSCK_NO found a log to replay */
	bool preen_halted;       /* -p met a problem it may not fix */
	bool changed;            /* something was written */
	uint64_t problems;       /* problems found */
	uint64_t fixed;          /* ... and fixed */
	/* What the image holds (after repairs), for -v and the "clean" line. */
	uint64_t inodes_used, inodes_count;
	uint64_t blocks_used, blocks_count;
	uint64_t regular, directories, symlinks, fast_symlinks;
	uint64_t chrdevs, blkdevs, fifos, sockets;
	uint64_t hard_links;     /* entries beyond each inode's first */
	uint64_t noncontig;      /* files whose data blocks are not in one run */
	uint64_t ind_blocks, dind_blocks, tind_blocks;
	uint64_t xattr_blocks;
	uint64_t largest_file;   /* bytes */
	char label[33];
};

/*
 * Open the image or device at @path for fsck_run: read-only for FSCK_NO,
 * else read-write, with the block size of the filesystem on it (read from
 * its superblock, or a backup's).  Logs what went wrong and returns
 * -errno; -EUCLEAN when no superblock is found.
 */
int fsck_open(const char *path, bool read_only, struct bdev **out);

/*
 * Check (and repair, by the answers) the filesystem on @bd, opened as
 * fsck_open does (a read-only device makes every answer no).  Fills @res;
 * returns res->exit as well.  Never aborts on any image contents.
 */
int fsck_run(struct bdev *bd, const struct fsck_opts *opts,
	     struct fsck_result *res);

/* Every problem code and its message template, for documentation and the
 * tests: calls @fn for each entry of the table; stops on non-zero. */
int fsck_problem_foreach(int (*fn)(void *arg, const char *code,
				   enum fsck_pass pass, const char *fmt,
				   const char *question, bool preen_ok),
			 void *arg);

#endif /* MISCFS_FSCK_H */
