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

/* Lets the core drop the kernel's cached attributes of an inode through
 * session @se; before the session serves. */
void mfs_fuse_bind(struct mfs_fs *fs, struct fuse_session *se);

#endif /* MISCFS_FUSE_OPS_H */
