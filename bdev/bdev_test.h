/*
 * bdev_test.h - the block layer's calls for tests, benches and fuzzers:
 * the memory device (made empty or from a file, saved, cut at a power
 * failure, completing late and out of order), the wrapper's faults, its
 * write log in memory and the crash images built from that log, and a cap
 * on transfers that turns every request into short ones.  The code is in
 * the block layer's library with the rest; no production file (the daemon,
 * the tools, the filesystem, the journal, the page cache, the format
 * library, fsck) includes this header.  What a production tool needs of
 * the same machinery stays in bdev.h: the wrapper and its log file (the
 * daemon's -o writelog), reading and replaying a log file and the power
 * cut's modes (miscfs-replay), the memory device's contents (the page
 * cache's regions).
 */
#ifndef MISCFS_BDEV_TEST_H
#define MISCFS_BDEV_TEST_H

#include "bdev.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---- the in-memory test device ----------------------------------------- */

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
 * (see Durability in bdev.h), then waits for the requests in flight before
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

/* ---- the wrapper's faults ------------------------------------------------ */

/* Ops that bdev_wrap_fail() can target. */
#define BDEV_WRAP_FAIL_READ   0x1u
#define BDEV_WRAP_FAIL_WRITE  0x2u
#define BDEV_WRAP_FAIL_FLUSH  0x4u

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

/* ---- the wrapper's write log in memory, and crash images ----------------- */

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

/* ---- short transfers ----------------------------------------------------- */

/*
 * When nonzero, the file backends transfer at most this many bytes per
 * system call or ring entry, so that every request is continued as a
 * short transfer would be (buffered devices only: direct I/O needs whole
 * sectors); the NBD backend, opened while it is set, sends commands of
 * at most this many bytes.  Tests set it before submitting.
 */
extern size_t bdev_test_max_xfer;

#endif /* MISCFS_BDEV_TEST_H */
