/*
 * bdev_i.h - what the block layer's backends share; not part of the API.
 */
#ifndef MISCFS_BDEV_I_H
#define MISCFS_BDEV_I_H

#include "bdev.h"
#include "bdev_test.h"

#include <pthread.h>

/* Every backend demands at least this buffer alignment (see bdev.h). */
#define BDEV_MIN_DMA_ALIGN 512u

/* Add to a counter of bd->stats. */
#define bdev_stat_add(bd, field, n) \
	__atomic_fetch_add(&(bd)->stats.field, (uint64_t)(n), __ATOMIC_RELAXED)

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
/* A request's segments copied in order into @dst (nothing for NULL), or
 * filled in order from @src. */
void bdev_req_gather(void *dst, const struct bdev_req *req);
void bdev_req_scatter(const struct bdev_req *req, const void *src);

/* The file a backend works on: opens it and fills bd's geometry, fd,
 * direct, read_only and path.  Logs once whether O_DIRECT is used. */
int bdev_file_open(const char *path, const struct bdev_open_opts *opts,
		   struct bdev *bd);
void bdev_file_close(struct bdev *bd);
/* A power of two from 512 to 64 KiB. */
bool bdev_valid_block_size(uint32_t bs);

/* An export of an NBD server (bdev_nbd.c, when built with libnbd). */
int bdev_nbd_open(const char *uri, const struct bdev_open_opts *opts,
		  struct bdev **out);
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

/* bdev_submit() for a stacked device forwarding the requests of a thread
 * that waits for them in bdev_submit_wait() (@w, or NULL). */
int bdev_submit_for(struct bdev *bd, struct bdev_req **reqs, unsigned int n,
		    struct bdev_waiter *w);

/* The device at the bottom of a stack (bd itself if not stacked). */
struct bdev *bdev_bottom(struct bdev *bd);

/* ---- power cuts (bdev_cut.c) ---------------------------------------------- */

/* splitmix64: small, and a different seed gives an unrelated stream. */
uint64_t bdev_rng_next(uint64_t *state);

/* The choices of one power cut, drawn write after write in log order. */
struct bdev_cut_state {
	enum bdev_cut mode;
	uint64_t rng;
	uint64_t rate;               /* BLOCKS: survivors per 16 blocks */
	uint32_t bs;
};
void bdev_cut_init(struct bdev_cut_state *c, enum bdev_cut mode, uint64_t seed,
		   uint32_t bs);
/* Lay onto @img what the cut keeps of an unflushed write. */
void bdev_cut_apply(struct bdev_cut_state *c, uint8_t *img, uint64_t off,
		    const uint8_t *data, size_t len);
/* Lay entries [0, @prefix) of a log onto @img as a cut after them leaves
 * it: all writes up to the last flush, a choice of the rest. */
void bdev_log_replay(const struct bdev_wrap_log_entry *const *log, size_t prefix,
		     enum bdev_cut mode, uint64_t seed, uint32_t bs, uint8_t *img);

/* ---- a write log in memory (bdev_wrap.c, bdev_crash.c) ------------------ */

struct bdev_log {
	struct bdev_wrap_log_entry **ents;  /* each with its data after it */
	size_t n, cap;
	uint8_t *base;               /* contents when recording began, or NULL */
	uint64_t size;
	uint32_t bs;
};

/* A wrapper's log and the lock that guards it, for the crash cursor. */
int bdev_wrap_log_of(struct bdev *bd, struct bdev_log **log, pthread_mutex_t **lock);

/* Replace a memory device's contents, forgetting its unflushed writes. */
int bdev_mem_set_contents(struct bdev *bd, const void *data, uint64_t size,
			  uint32_t bs);

/* ---- the log file (bdev_logfile.c) -------------------------------------- */

/* Create or truncate @path and write its header: the open fd, or -errno. */
int bdev_logfile_create(const char *path, uint64_t size, uint32_t bs);
/* Append one entry at *@off (advanced past it). */
int bdev_logfile_append(int fd, uint64_t *off, const struct bdev_wrap_log_entry *e);

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
