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
 * What only tests, benches and fuzzers use -- making and cutting the
 * memory device, the wrapper's faults, its log in memory and the crash
 * images built from it -- is declared in bdev_test.h, which no production
 * file includes; the code is in the same library.
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
/* The descriptor @req goes to: read_fd for a read of one block when
 * host_reads is on, fd otherwise. */
int bdev_req_fd(const struct bdev *bd, const struct bdev_req *req);

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
	uint64_t host_waited;              /* host_reads: a lone read its caller
					      waited for, missed by the host's
					      cache, read on the caller's thread */
};

struct bdev {
	const struct bdev_ops *ops;
	uint64_t size;            /* bytes, a multiple of block_size */
	uint32_t block_size;      /* I/O granularity, a power of two >= 512 */
	uint32_t dma_align;       /* required buffer alignment */
	bool direct;              /* O_DIRECT is in use */
	bool read_only;
	bool fenced;              /* bdev_fence(); __atomic builtins */
	int fd;                   /* the open image, -1 for the memory device;
	                             the page cache mmaps reserved regions of it */
	int read_fd;              /* fd, or a buffered descriptor of the image
	                             for single-block reads (host_reads) */
	bool host_reads;          /* read_fd is that buffered descriptor */
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
	/* Reads of one block (a random read's miss) go through the host's
	 * page cache, a second, buffered descriptor, and its read-around;
	 * longer reads (readahead) and every write stay direct.  A direct
	 * write drops the host's copy of what it overwrites, and the caller
	 * never reads a block while writing it.  A read the host holds
	 * completes at once, on the submitting thread; so does a lone one
	 * its caller waits for (bdev_submit_wait), read there. */
	bool host_reads;
};

/*
 * Open an image file or block device.  Tries io_uring first and falls back
 * to pread/pwrite with one log line saying why.  O_DIRECT is used when the
 * target accepts it at this block size; the choice is logged once.
 *
 * An NBD URI (bdev_is_remote) opens an export of a network block device
 * server instead, through libnbd (bdev_nbd.c): nbd://HOST[:PORT]/EXPORT,
 * nbd+unix:///EXPORT?socket=PATH, nbds:// and the other forms libnbd
 * takes.  It has no fd (-1) and no file to lock; queue_depth, no_uring
 * and no_direct do not apply.  A build without libnbd refuses it with
 * -EPROTONOSUPPORT and a log line saying so.
 */
int bdev_open(const char *path, const struct bdev_open_opts *opts,
	      struct bdev **out);
/* Whether @path names an NBD export rather than a file ("nbd:", "nbds:",
 * "nbd+unix:" ... URIs). */
bool bdev_is_remote(const char *path);
/* Whether this build can open NBD exports. */
bool bdev_has_nbd(void);
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
/*
 * From now on every write and flush submitted to @bd fails with -EIO
 * (reads go on): the filesystem on it belongs to someone else now
 * (multi-mount protection lost it), and nothing of this process may reach
 * it any more, whichever layer tries.  Requests already submitted finish.
 */
void bdev_fence(struct bdev *bd);
bool bdev_is_fenced(const struct bdev *bd);
void bdev_close(struct bdev *bd);

static inline uint64_t bdev_size(const struct bdev *bd) { return bd->size; }
static inline uint32_t bdev_block_size(const struct bdev *bd) { return bd->block_size; }

/* Memory aligned for any backend (4096 bytes); free with bdev_free_buf(). */
void *bdev_alloc_buf(size_t len);
void bdev_free_buf(void *buf);

/* ---- power cuts --------------------------------------------------------- */

/* What survives of the writes since the last flush when the power goes
 * (a crash image, a replay of a write log, the memory device's cut). */
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
 * Direct access to the current contents of the memory device (bdev_test.h
 * makes one) at the bottom of @bd's stack; NULL if another device is
 * there.  Public because the page
 * cache maps a reserved region straight onto it on that device (it has no
 * file to mmap); tests read and change the contents with it.
 */
void *bdev_mem_data(struct bdev *bd);

/* ---- the recording wrapper ---------------------------------------------
 *
 * bdev_wrap() stacks a device on any other (io_uring, pread, memory, or
 * another wrapper) and forwards every request to it.  On the way it can
 * fail chosen requests with -EIO, and record every write and flush that
 * completes, in the order they complete, in memory (for crash tests) or
 * appended to a log file (-o writelog, replayed by miscfs-replay).  The
 * daemon uses the log file; faults and the log in memory are for tests
 * (bdev_test.h).
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

/* One entry of a write log. */
struct bdev_wrap_log_entry {
	uint64_t seq;          /* position in the log, from 0 */
	bool flush;            /* a completed flush; off/len/data unused */
	uint64_t off;
	size_t len;
	const void *data;      /* the bytes written (owned by the log) */
};

/* 0, or the first error writing the log file. */
int bdev_wrap_log_error(struct bdev *bd);

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
 * as bdev_wrap_crash_image() (bdev_test.h) does. */
void bdev_wrap_logfile_replay(const struct bdev_wrap_logfile *l, size_t prefix,
			      enum bdev_cut mode, uint64_t seed, void *img);
void bdev_wrap_logfile_close(struct bdev_wrap_logfile *l);

/* A consistent-enough snapshot of bd->stats. */
void bdev_get_stats(struct bdev *bd, struct bdev_stats *st);

#endif /* MISCFS_BDEV_H */
