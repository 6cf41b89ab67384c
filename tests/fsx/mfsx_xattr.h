/*
 * mfsx_xattr.h - extended attribute operations of the file mode, on the
 * open file @fd, checked against their own model.
 */
#ifndef MFSX_XATTR_H
#define MFSX_XATTR_H

/* Drop the pool's names a kept file may still carry: the model starts empty. */
void mfsx_xattr_reset(int fd);
/* One random set, get, list or remove. */
void mfsx_xattr_op(int fd);
/* Every name of the pool and the list against the model. */
void mfsx_xattr_check(int fd, const char *how);

#endif
