/*
 * t_work.h - a workload that calls every kind of operation of the core
 * and takes any error, for filesystems that are meant to fail: a device
 * failing in the middle of it (t_faults), a damaged image (fuzz_mount).
 * A call that fails makes the later calls that need its result skip;
 * every failure is counted, and one outside the errnos a failing device
 * or a damaged image can give is reported through the caller's @bad.
 *
 * It needs nothing but the core (no test library), so a fuzz target can
 * link it.
 */
#ifndef MISCFS_T_WORK_H
#define MISCFS_T_WORK_H

#include <stdbool.h>
#include <stdint.h>

#include "mfs.h"

#define TW_KEPT_MAX 4

/* A file whose fsync returned 0, never changed after it: its contents
 * must survive whatever comes later. */
struct tw_kept {
	char name[16];               /* in the root */
	uint32_t len;
	unsigned int seed;           /* bytes: tw_pattern(off, seed) */
};

struct tw {
	struct mfs_fs *fs;
	/* Called for an errno no failing device or damaged image explains
	 * (@what names the call); NULL: ignored. */
	void (*bad)(void *arg, const char *what, int err);
	void *arg;
	unsigned int errors;         /* calls that failed */
	const char *first_fail;      /* the first of them */
	struct tw_kept kept[TW_KEPT_MAX];
	unsigned int nkept;
};

uint8_t tw_pattern(uint64_t pos, unsigned int seed);

/* Lookup, stat, read (files, symbolic links, xattrs) of everything
 * under the root, depth-first, at most @max entries. */
void tw_walk(struct tw *w, unsigned int max);
/* The fixed workload of new files: writes, appends, truncates,
 * fallocate, xattrs, the j flag, links, renames, unlinks of open files,
 * fsyncs (which fill w->kept), syncfs, readdir, statfs. */
void tw_run(struct tw *w);
/* Rename, then unlink or remove every entry under the root (but
 * /lost+found and the files in w->kept), at most @max. */
void tw_clear(struct tw *w, unsigned int max);

#endif /* MISCFS_T_WORK_H */
