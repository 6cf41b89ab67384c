/*
 * t_fs.h - what the tests of the mounted filesystem share: a fresh image
 * on the memory device, mounting it, the callers' credentials, and a check
 * of a whole image by fsck itself.
 */
#ifndef MISCFS_T_FS_H
#define MISCFS_T_FS_H

#include <sys/stat.h>

#include "mfs.h"
#include "t.h"

extern const struct mfs_cred tf_root;
extern const struct mfs_cred tf_user;    /* uid 1000, gid 1000 */
extern const struct mfs_cred tf_other;   /* uid 1001, gid 1001, groups 1000 */

/* A memory device of @bytes with a fresh filesystem of @bs-byte blocks. */
struct bdev *tf_mkfs(uint32_t bs, uint64_t bytes);
struct mfs_fs *tf_mount(struct bdev *bd);
struct mfs_fs *tf_mount_opts(struct bdev *bd, const struct mfs_mount_opts *o);
/* Unmount, then check the image; fails the test on any inconsistency. */
void tf_unmount_check(struct mfs_fs *fs, struct bdev *bd);
/* Check an unmounted image: fsck -fn (fsck_run) must find nothing.
 * @clean: and it must be as a clean unmount leaves it (marked valid, so
 * that fsck holds the free counts exact; no log; no orphans). */
void tf_check(struct bdev *bd, bool clean);

/* The log's lines from tf_log_capture() on, "\n"-terminated, until
 * tf_log_release() (lines past its 16 KiB are dropped). */
void tf_log_capture(void);
void tf_log_release(void);
const char *tf_log(void);

/* Inode number of @path's last component under the root ("a/b/c"). */
uint64_t tf_ino(struct mfs_fs *fs, const char *path);
/* Write @len bytes of a pattern of @seed at @off through a new open. */
void tf_write(struct mfs_fs *fs, uint64_t ino, uint64_t off, size_t len, unsigned seed);
/* Read back and compare what tf_write wrote. */
void tf_verify(struct mfs_fs *fs, uint64_t ino, uint64_t off, size_t len, unsigned seed);
uint8_t tf_pattern(uint64_t pos, unsigned seed);
/* The value of @key in the filesystem's statistics (/.miscfs/stats). */
uint64_t tf_counter(struct mfs_fs *fs, const char *key);
/* Entry names of a directory, "\n"-separated and sorted, into @buf. */
void tf_list(struct mfs_fs *fs, uint64_t dir, char *buf, size_t size);

#endif /* MISCFS_T_FS_H */
