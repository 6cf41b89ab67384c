/*
 * bdev_i.h - what the block layer's backends share; not part of the API.
 */
#ifndef MISCFS_BDEV_I_H
#define MISCFS_BDEV_I_H

#include "bdev.h"

#include <pthread.h>

/* Every backend demands at least this buffer alignment (see bdev.h). */
#define BDEV_MIN_DMA_ALIGN 512u

/* Add to a counter of bd->stats. */
#define bdev_stat_add(bd, field, n) \
	__atomic_fetch_add(&(bd)->stats.field, (uint64_t)(n), __ATOMIC_RELAXED)

/*
 * Test hook: when nonzero, the file backends transfer at most this many
 * bytes per system call or ring entry, so that every request is
 * continued as a short transfer would be (buffered devices only: direct
 * I/O needs whole sectors).  Tests set it before submitting.
 */
extern size_t bdev_test_max_xfer;

/*
 * A transfer that made no progress, or a direct one that stopped off a
 * sector boundary (which only the end of the file does), cannot be
 * continued: the image is shorter than the device.
 */
static inline bool bdev_xfer_ended(const struct bdev *bd, const struct bdev_req *req,
				   size_t n)
{
	return n == 0 || (bd->direct && (req->done + n) % 512);
}

/* What remains of a request after req->done bytes: whole segments, or a
 * piece of one segment (then iov points at piece and cnt is 1). */
struct bdev_rest {
	struct iovec *iov;
	unsigned int cnt;
	struct iovec piece;
	uint64_t off;
};
void bdev_req_rest(struct bdev_req *req, struct bdev_rest *rest);

/* The file a backend works on: opens it and fills bd's geometry, fd,
 * direct, read_only and path.  Logs once whether O_DIRECT is used. */
int bdev_file_open(const char *path, const struct bdev_open_opts *opts,
		   struct bdev *bd);
void bdev_file_close(struct bdev *bd);
/* STATX_DIOALIGN of @fd: 0 with the alignments, -EOPNOTSUPP if unknown. */
int bdev_dio_align(int fd, uint32_t *mem_align, uint32_t *off_align);

/*
 * Backends over a file opened by bdev_file_open(): on success they take
 * over @file (fd and path) and return the new device in @out; on failure
 * @file is untouched and *what names the step that failed.
 */
int bdev_uring_setup(struct bdev *file, unsigned int depth,
		     struct bdev **out, const char **what);
int bdev_pread_setup(struct bdev *file, struct bdev **out, const char **what);

/*
 * Carry out a batch in order, in the submitting thread, for the backends
 * without a queue (pread, memory): @rw does one read or write, a flush
 * request calls the backend's flush; end_io runs before this returns.
 */
int bdev_submit_inline(struct bdev *bd, struct bdev_req **reqs, unsigned int n,
		       int (*rw)(struct bdev *bd, struct bdev_req *req));

/* Wait for a number of completions. */
struct bdev_waiter {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	unsigned int left;
};
void bdev_waiter_init(struct bdev_waiter *w, unsigned int count);
void bdev_waiter_done(struct bdev_waiter *w);
bool bdev_waiter_pending(struct bdev_waiter *w);
void bdev_waiter_wait(struct bdev_waiter *w);  /* and destroy it */

#endif /* MISCFS_BDEV_I_H */
