/*
 * fuse_ops.h - the FUSE low-level operations over a mounted miscfs: the
 * one place that translates FUSE requests into mfs_* calls.
 */
#ifndef MISCFS_FUSE_OPS_H
#define MISCFS_FUSE_OPS_H

#define FUSE_USE_VERSION 34
#include <fuse_lowlevel.h>

#include "mfs.h"

extern const struct fuse_lowlevel_ops mfs_fuse_ops;

/* The kernel checks permissions (-o default_permissions): it is then
 * told about POSIX ACLs (FUSE_CAP_POSIX_ACL).  Before the session starts. */
void mfs_fuse_kernel_checks(bool on);

/* How long the kernel may trust the names, attributes and missing names
 * it caches (seconds), whether a file's pages may stay cached from one
 * open to the next when the core allows it, and whether the kernel may
 * hold written pages back (FUSE_CAP_WRITEBACK_CACHE).  Before the session
 * starts. */
#define MFS_FUSE_CACHE_TIMEOUT 86400.0
#define MFS_FUSE_READAHEAD_KB 1024   /* the largest request: 256 pages */
struct mfs_fuse_cache {
	double entry_s, attr_s, negative_s;
	bool keep_cache;
	bool writeback;              /* the kernel's writeback cache */
	unsigned int readahead_kb;   /* the mount's readahead; 0: the kernel's */
};
#define MFS_FUSE_CACHE_DEFAULTS { .entry_s = MFS_FUSE_CACHE_TIMEOUT,        \
	.attr_s = MFS_FUSE_CACHE_TIMEOUT, .negative_s = MFS_FUSE_CACHE_TIMEOUT, \
	.keep_cache = true, .writeback = false,                             \
	.readahead_kb = MFS_FUSE_READAHEAD_KB }
void mfs_fuse_set_cache(const struct mfs_fuse_cache *c);

/* The kernel's device number of the mount (after it is mounted), and the
 * INIT reply gone to the kernel (transport.c): the mount's readahead is
 * set then, when the kernel no longer lowers it to what INIT offered. */
void mfs_fuse_set_mount_dev(unsigned int major, unsigned int minor);
void mfs_fuse_init_replied(void);

/* mfs_attr_changed_fn for a session (@arg): the kernel drops its cached
 * attributes of the inode. */
void mfs_fuse_attr_changed(void *arg, uint64_t ino);

/* Serve the session's requests until it ends (loop.c); 0 or -errno. */
int mfs_fuse_loop(struct fuse_session *se);
/* How often a reading thread handed over before sleeping, and how many
 * threads serve requests. */
void mfs_fuse_loop_stats(uint64_t *handovers, uint32_t *threads);

/*
 * The transport (transport.c): set up on the mounted session's /dev/fuse
 * and torn down after the session is gone.  FUSE over io_uring is asked
 * for before (-o io_uring), and taken if the kernel offers it at INIT
 * (else a log line, and /dev/fuse as before).
 */
int mfs_fuse_transport_attach(struct fuse_session *se);
void mfs_fuse_transport_detach(void);
void mfs_fuse_uring_want(bool on);
/* How many threads may read requests at once: 1, or once FUSE over
 * io_uring carries them, one per ring.  The loop's readers each take a
 * role below that (mfs_fuse_transport_take) before they read. */
unsigned int mfs_fuse_transport_roles(void);
void mfs_fuse_transport_take(unsigned int role);
/* The calling thread stops reading requests (loop.c hand_over): a reply
 * it sends later is passed to the thread that reads. */
void mfs_fuse_uring_handover(void);
/* Requests that came over the rings and through /dev/fuse; the rings, and
 * how many of them carried a request. */
struct mfs_fuse_uring_stats {
	uint64_t ring_requests, dev_requests;
	unsigned int rings, rings_used;
};
void mfs_fuse_uring_stats(struct mfs_fuse_uring_stats *st);

#endif /* MISCFS_FUSE_OPS_H */
