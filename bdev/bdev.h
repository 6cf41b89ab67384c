/*
 * bdev.h - the block I/O layer.
 *
 * Every byte miscfs reads from or writes to its image goes through a
 * struct bdev: a small ops table plus the device's geometry.  Three
 * backends sit behind it:
 *
 *   io_uring  batched asynchronous submission (the normal case);
 *             requests outlive the thread that submitted them,
 *   pread     plain pread/pwrite, used only when io_uring cannot be set up,
 *   mem       an in-memory test device that simulates a power cut (lose
 *             all writes since the last flush, or a random subset of
 *             them, whole, torn or block by block).  It completes
 *             requests inline, or, after bdev_mem_async(), late and out
 *             of order from its own thread.
 *
 * and a wrapper that stacks on any of them (bdev_wrap): it fails chosen
 * ranges with EIO and records every write and flush in order, in memory
 * for crash images or in a log file for miscfs-replay.
 *
 * Requests are asynchronous: bdev_submit() queues a batch and returns; each
 * request's end_io runs exactly once, on any thread, possibly before
 * bdev_submit() returns.  end_io may submit more requests but must not wait
 * for I/O on the same device (it may run on the thread that completes it).
 * A short transfer is never reported as success: the backend continues it
 * until it is complete or fails.  The synchronous helpers (bdev_read,
 * bdev_write, bdev_submit_wait ...) are built on that.  Backends never
 * modify a request's iovec array.
 *
 * Alignment: offsets and segment lengths are multiples of bd->block_size,
 * segment addresses are multiples of bd->dma_align (at least 512 on every
 * backend, so code tested on one works on all).  bdev_alloc_buf() returns
 * suitably aligned memory.  Misaligned requests fail with -EINVAL.
 *
 * Durability: bdev_flush() makes every write that has *completed* before
 * the call durable.  Writes still in flight are not covered; callers that
 * need ordering wait for completion first, then flush.  A flush end
 * (bdev_set_flush_end) narrows what a flush must cover to the bytes
 * before it.
 *
 * Errors are negative errno values.
 */
#ifndef MISCFS_BDEV_H
#define MISCFS_BDEV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

struct bdev;
struct bdev_req;
struct bdev_waiter;

enum bdev_op {
	BDEV_OP_READ,
	BDEV_OP_WRITE,
	/*
	 * A flush inside a batch: no segments (bdev_req_init with NULL, 0).
	 * It completes once every request submitted to the device before it
	 * -- earlier in its batch or in earlier batches -- has completed and
	 * the device has made the writes among them durable.  So a batch of
	 * writes that ends in a flush costs one round trip, not two.
	 */
	BDEV_OP_FLUSH,
};

typedef void (*bdev_end_io_fn)(struct bdev_req *req);

struct bdev_req {
	enum bdev_op op;
	uint64_t off;             /* byte offset on the device */
	struct iovec *iov;        /* the segments, in order */
	unsigned int iovcnt;
	int result;               /* 0 or -errno, valid in end_io */
	bdev_end_io_fn end_io;    /* may be NULL (fire and forget) */
	void *private;            /* the submitter's */

	/* backend state: bdev_req_init() clears it */
	size_t done;              /* bytes transferred so far */
	struct iovec one;         /* storage for a single-buffer request */
	struct bdev_req *next;    /* a backend's queue of waiting requests */
	struct bdev_waiter *waiter; /* set by bdev_submit_wait(): the thread
	                               waiting for it will outlive it */
};

/* A single-buffer request; @buf stays owned by the caller.  The request
 * points into itself: initialise it where it will live, do not copy it. */
void bdev_req_init(struct bdev_req *req, enum bdev_op op, uint64_t off,
		   void *buf, size_t len);
/* A vectored request; @iov must stay valid until end_io. */
void bdev_req_initv(struct bdev_req *req, enum bdev_op op, uint64_t off,
		    struct iovec *iov, unsigned int iovcnt);
/* Total length of a request's segments. */
size_t bdev_req_len(const struct bdev_req *req);

struct bdev_ops {
	const char *name;
	int (*submit)(struct bdev *bd, struct bdev_req **reqs, unsigned int n);
	int (*flush)(struct bdev *bd);
	void (*close)(struct bdev *bd);
	/*
	 * Optional, for bdev_submit_wait(): help until @w's requests are
	 * done, by reaping completions in the calling thread when no one else
	 * is (a thread switch less per synchronous I/O).  It may return early;
	 * the caller then sleeps until another thread finishes the requests.
	 */
	void (*wait)(struct bdev *bd, struct bdev_waiter *w);
	/* Optional: the device a stacked one forwards to (bdev_wrap). */
	struct bdev *(*lower)(struct bdev *bd);
};

/* Counters kept by every backend. */
struct bdev_stats {
	uint64_t reads, writes, flushes;   /* requests */
	uint64_t read_bytes, write_bytes;
	uint64_t submits;                  /* submission calls (batches) */
	uint64_t retries;                  /* short I/O continuations, EAGAIN */
};

struct bdev {
	const struct bdev_ops *ops;
	uint64_t size;            /* bytes, a multiple of block_size */
	uint32_t block_size;      /* I/O granularity, a power of two >= 512 */
	uint32_t dma_align;       /* required buffer alignment */
	bool direct;              /* O_DIRECT is in use */
	bool read_only;
	int fd;                   /* the open image, -1 for the memory device;
	                             the page cache mmaps reserved regions of it */
	uint64_t flush_end;       /* flushes cover [0, flush_end); 0: all */
	char *path;               /* NULL for the memory device */
	struct bdev_stats stats;  /* updated with __atomic builtins; read them
	                             through bdev_get_stats() */
};

struct bdev_open_opts {
	uint32_t block_size;      /* 0: 1024 */
	unsigned int queue_depth; /* io_uring entries; 0: 64 */
	bool read_only;
	bool no_uring;            /* force the pread backend */
	bool no_direct;           /* never use O_DIRECT */
};

/*
 * Open an image file or block device.  Tries io_uring first and falls back
 * to pread/pwrite with one log line saying why.  O_DIRECT is used when the
 * target accepts it at this block size; the choice is logged once.
 */
int bdev_open(const char *path, const struct bdev_open_opts *opts,
	      struct bdev **out);
int bdev_open_uring(const char *path, const struct bdev_open_opts *opts,
		    struct bdev **out);
int bdev_open_pread(const char *path, const struct bdev_open_opts *opts,
		    struct bdev **out);

/* Queue a batch; end_io reports each request.  Returns 0, or -errno when
 * the batch could not even be queued: then no end_io is called.  A batch
 * holding one invalid request (-EINVAL, or -EROFS for a write to a
 * read-only device) is refused as a whole; that request's result says so. */
int bdev_submit(struct bdev *bd, struct bdev_req **reqs, unsigned int n);
/* Submit a batch and wait for all of it; returns the first error. */
int bdev_submit_wait(struct bdev *bd, struct bdev_req **reqs, unsigned int n);

int bdev_read(struct bdev *bd, uint64_t off, void *buf, size_t len);
int bdev_write(struct bdev *bd, uint64_t off, const void *buf, size_t len);
int bdev_writev(struct bdev *bd, uint64_t off, const struct iovec *iov,
		unsigned int iovcnt);
int bdev_flush(struct bdev *bd);
/*
 * Flushes (bdev_flush, BDEV_OP_FLUSH) need cover only writes to bytes
 * [0, @end): what lies at and after @end belongs to someone who makes it
 * durable himself -- the reserved regions after the filesystem's groups,
 * mapped shared over the same file and synced with msync.  Without it a
 * flush of an image file also writes back every page of such a mapping
 * that is dirty at the time, and a commit would wait for that.
 * @end is a multiple of the block size up to the device's size; 0 (the
 * default) or the size: the whole device.  Set it before I/O starts.
 *   io_uring  an fsync of [0, @end) (IORING_OP_FSYNC's offset and length);
 *             its length is 32-bit: beyond 4 GiB, a direct device (whose
 *             writes leave no page in the kernel's cache) syncs the first
 *             4 GiB of pages and the metadata, a buffered one the whole
 *             file, as before;
 *   pread     no system call syncs a range with the disk's cache and the
 *             file's metadata (sync_file_range does neither), so the
 *             whole file is synced, regions included: correct, slower;
 *   mem       a flush covers every write, as before: the filesystem never
 *             writes past @end through the device, so its crash images
 *             are those it had (regions are stored into its memory
 *             directly and are outside the simulation anyway).
 * -EINVAL for an @end the device cannot take.
 */
int bdev_set_flush_end(struct bdev *bd, uint64_t end);
void bdev_close(struct bdev *bd);

static inline uint64_t bdev_size(const struct bdev *bd) { return bd->size; }
static inline uint32_t bdev_block_size(const struct bdev *bd) { return bd->block_size; }

/* Memory aligned for any backend (4096 bytes); free with bdev_free_buf(). */
void *bdev_alloc_buf(size_t len);
void bdev_free_buf(void *buf);

/* ---- the in-memory test device ----------------------------------------- */

/* What survives of the writes since the last flush when the power goes. */
enum bdev_cut {
	BDEV_CUT_LOSE_ALL,     /* every write since the last flush is lost */
	BDEV_CUT_RANDOM,       /* each such write survives or not, by seed */
	BDEV_CUT_RANDOM_TORN,  /* as RANDOM, and a survivor may be torn at a
	                          512-byte sector boundary */
	BDEV_CUT_BLOCKS,       /* each block of each such write survives or
	                          not on its own, as a volatile write cache may
	                          destage them in any order; the seed also sets
	                          how many survive, from few to nearly all */
	BDEV_CUT_KEEP_ALL,     /* every write survives: what the device showed
	                          (crash images and replays only) */
};

/* The mode a tool or test names as keep, drop, random, torn or blocks;
 * -EINVAL for any other name. */
int bdev_cut_parse(const char *name, enum bdev_cut *mode);

/*
 * The functions of this section take the memory device itself or a
 * device stacked on it (bdev_wrap): they act on the memory device at the
 * bottom of the stack.
 */

/*
 * Complete this device's requests asynchronously, as a real device does:
 * from a thread of the device, after a random delay of up to
 * @max_delay_us microseconds, in an order chosen at random from @seed.
 * Requests take effect when they complete, not when they are submitted:
 * only then is a write visible and pending.  A flush in a batch waits
 * until every request submitted before it has completed and then covers
 * every write completed by then, possibly including some submitted after
 * it.  bdev_flush() covers only the writes completed when it is called
 * (see Durability above), then waits for the requests in flight before
 * returning.  A power cut drops the requests still queued: they complete
 * with -EIO and change nothing.  Call it before the first request; it
 * stays on until the device is closed.  -EINVAL if it is on already.
 */
int bdev_mem_async(struct bdev *bd, unsigned int max_delay_us, uint64_t seed);

/* A zero-filled device of @size bytes. */
int bdev_mem_create(uint64_t size, uint32_t block_size, struct bdev **out);
/* A device holding a copy of an image file. */
int bdev_mem_load(const char *path, uint32_t block_size, struct bdev **out);
/* Write the device's current contents to a file. */
int bdev_mem_save(struct bdev *bd, const char *path);

/* Cut the power: writes since the last completed flush are lost, or kept
 * by a seeded random choice.  The device stays usable (as after a
 * reboot).  A write log of a wrapper above is left as it was. */
void bdev_mem_power_cut(struct bdev *bd, enum bdev_cut mode, uint64_t seed);

/* Direct access to the current contents (tests only). */
void *bdev_mem_data(struct bdev *bd);

/* ---- the recording wrapper ---------------------------------------------
 *
 * bdev_wrap() stacks a device on any other (io_uring, pread, memory, or
 * another wrapper) and forwards every request to it.  On the way it can
 * fail chosen requests with -EIO, and record every write and flush that
 * completes, in the order they complete, in memory (for crash tests) or
 * appended to a log file (-o writelog, replayed by miscfs-replay).
 *
 * What the log says: a flush entry at position p means that every write
 * before p was durable once that flush completed.  A write enters the log
 * when it completes; one that completes while a flush it is not covered
 * by is in flight (bdev.h's Durability: a BDEV_OP_FLUSH covers the writes
 * submitted before it, bdev_flush() those completed before the call)
 * waits and enters right after that flush.  So the writes before the
 * last flush of a prefix of the log were durable at that point, those
 * after it could still be lost, and every crash image built from a
 * prefix is a state a power cut could have left.  Two writes to the
 * same block in flight at once have no defined order, on a real device
 * as here.
 *
 * Any error writing the log file is kept: the log stops there, every
 * later flush fails with -EIO (the log could not say what it covers) and
 * bdev_wrap_log_error() reports it.
 */

/* Ops that bdev_wrap_fail() can target. */
#define BDEV_WRAP_FAIL_READ   0x1u
#define BDEV_WRAP_FAIL_WRITE  0x2u
#define BDEV_WRAP_FAIL_FLUSH  0x4u

struct bdev_wrap_opts {
	/* Append every write and flush to this file, created or truncated,
	 * from the first request on (see docs/FORMAT.md, "Write log"). */
	const char *log_path;
};

/*
 * Stack a wrapper on @lower (@o may be NULL).  On success the wrapper owns
 * @lower and closes it when it is closed; it has @lower's geometry, fd and
 * path.  On failure @lower is untouched.
 */
int bdev_wrap(struct bdev *lower, const struct bdev_wrap_opts *o, struct bdev **out);

/* Fail @ops on any request touching [off, off+len) with -EIO; len 0
 * clears every fault.  A failed write changes nothing.  A flush covers the
 * whole device, so any fault with BDEV_WRAP_FAIL_FLUSH fails every flush
 * (and the writes it would have made durable stay pending below). */
int bdev_wrap_fail(struct bdev *bd, uint64_t off, uint64_t len, unsigned int ops);

/*
 * Fail the @nth request (from 1) of the kinds in @ops submitted after this
 * call, and the @count - 1 of those kinds after it (UINT64_MAX: every
 * later one), with -EIO, as the kernel's fail_make_request does; a flush
 * by bdev_flush() counts as one.  @nth 0 clears it.  Independent of the
 * ranges of bdev_wrap_fail(); a failed write changes nothing.
 */
int bdev_wrap_fail_nth(struct bdev *bd, unsigned int ops, uint64_t nth, uint64_t count);
/* Requests of the kinds in @ops submitted since the wrapper was made. */
uint64_t bdev_wrap_count(struct bdev *bd, unsigned int ops);
/* Requests failed by either kind of fault since the wrapper was made. */
uint64_t bdev_wrap_failed(struct bdev *bd);

/* One entry of a write log. */
struct bdev_wrap_log_entry {
	uint64_t seq;          /* position in the log, from 0 */
	bool flush;            /* a completed flush; off/len/data unused */
	uint64_t off;
	size_t len;
	const void *data;      /* the bytes written (owned by the log) */
};

/* Record every write and flush in memory from now on (off by default).
 * Turning it on starts a new, empty log from a copy of the current
 * contents (read from the device below; a write completing meanwhile is
 * in the copy, or in the log if it completes later); turning it off
 * keeps the log for the crash images. */
void bdev_wrap_record(struct bdev *bd, bool on);
size_t bdev_wrap_log_count(struct bdev *bd);
/* Entry @i, or NULL past the end; valid until recording restarts or the
 * device is closed. */
const struct bdev_wrap_log_entry *bdev_wrap_log(struct bdev *bd, size_t i);
/* 0, or the first error writing the log file. */
int bdev_wrap_log_error(struct bdev *bd);

/*
 * A new memory device in the state a power cut would leave if it struck
 * after the first @prefix entries of @bd's log: the state recording
 * started from, plus every write up to the last flush within the prefix,
 * plus the writes after that flush chosen by @mode and @seed.  This lets
 * a crash test replay any prefix of one recorded workload.  For the whole
 * log of a recording over a memory device that began right after a flush,
 * with one thread writing, the same @mode and @seed give what
 * bdev_mem_power_cut() would leave.  -EINVAL if @bd never recorded.
 */
int bdev_wrap_crash_image(struct bdev *bd, size_t prefix, enum bdev_cut mode,
			  uint64_t seed, struct bdev **out);

/*
 * Crash images of a recorded log, one after the other.  A cursor keeps the
 * durable state of the last flush it reached, so a test that walks the log
 * forward pays for each write once rather than once per image, and it
 * hashes every image, so the test can skip the states it has seen.
 */
struct bdev_wrap_crash;
/* -EINVAL if @bd never recorded.  The cursor reads @bd's log: end it
 * before the log is restarted or the device closed. */
int bdev_wrap_crash_begin(struct bdev *bd, struct bdev_wrap_crash **out);
/*
 * Prepare the image bdev_wrap_crash_image() would build for @prefix, @mode
 * and @seed, and give its hash: equal images have equal hashes, and
 * different ones different hashes but for a 64-bit collision.  Cheap when
 * @prefix does not go back past the last flush of the previous call.
 */
int bdev_wrap_crash_next(struct bdev_wrap_crash *c, size_t prefix,
			 enum bdev_cut mode, uint64_t seed, uint64_t *hash);
/* Load the prepared image into @img, a memory device (or a stack on one)
 * of the recorded one's size and block size; @img's own unflushed writes
 * are forgotten. */
int bdev_wrap_crash_copy(struct bdev_wrap_crash *c, struct bdev *img);
void bdev_wrap_crash_end(struct bdev_wrap_crash *c);

/* ---- reading a write log file ---------------------------------------- */

struct bdev_wrap_logfile;

struct bdev_wrap_logfile_info {
	uint64_t dev_size;        /* from the header */
	uint32_t block_size;
	size_t entries, flushes;  /* the complete records */
	uint64_t end;             /* bytes of header and complete records */
	uint64_t file_size;
	/* Why reading stopped before file_size (empty if it did not): a
	 * record cut short, as a killed writer leaves it, or a bad one. */
	char why[160];
};

/*
 * Open a log file and index its records.  -EUCLEAN (with @why, of
 * @whylen bytes, naming the offset) when the header is bad; a bad or
 * incomplete record only ends the log there (info->why says so).
 */
int bdev_wrap_logfile_open(const char *path, struct bdev_wrap_logfile **out,
			   struct bdev_wrap_logfile_info *info, char *why, size_t whylen);
/* Entry @i, or NULL past the end; data lives as long as @l. */
const struct bdev_wrap_log_entry *bdev_wrap_logfile_entry(const struct bdev_wrap_logfile *l,
							   size_t i);
/* Apply entries [0, @prefix) onto @img (the base image, dev_size bytes)
 * as bdev_wrap_crash_image() does. */
void bdev_wrap_logfile_replay(const struct bdev_wrap_logfile *l, size_t prefix,
			      enum bdev_cut mode, uint64_t seed, void *img);
void bdev_wrap_logfile_close(struct bdev_wrap_logfile *l);

/* A consistent-enough snapshot of bd->stats. */
void bdev_get_stats(struct bdev *bd, struct bdev_stats *st);

#endif /* MISCFS_BDEV_H */
