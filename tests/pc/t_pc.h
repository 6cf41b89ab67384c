/*
 * t_pc.h - helpers shared by the page cache's tests: a memory device with
 * a known pattern, a cache over it, and an owner whose operations count
 * what the cache asks of them.
 */
#ifndef MISCFS_T_PC_H
#define MISCFS_T_PC_H

#include "t.h"
#include "t_dev.h"

#include "pc.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

/* The cost of @pages pages of @bs bytes: a budget that holds exactly them. */
#define T_BUDGET(pages, bs) ((uint64_t)(pages) * ((bs) + sizeof(struct pc_page)))

#define T_MAX_BATCHES 256

/* An owner over a bdev with the identity block map, counting calls. */
struct t_owner {
	struct bdev *bd;
	_Atomic unsigned int readpage_calls, readpages_calls, writepages_calls;
	_Atomic unsigned int pages_read, pages_written;
	_Atomic unsigned int released, invalidated;
	_Atomic bool decline_writes;      /* writepages redirties everything */
	_Atomic bool refuse_release;      /* releasepage says no */
	unsigned int read_batches[T_MAX_BATCHES];   /* sizes, in order */
	unsigned int write_batches[T_MAX_BATCHES];
	_Atomic unsigned int nread_batches, nwrite_batches;
	_Atomic bool unsorted;            /* a write batch was not in order */
	uint32_t last_inval_offset;
};

extern const struct pc_mapping_ops t_owner_ops;

struct t_env {
	struct bdev *bd;
	struct pc_cache *c;
	struct pc_mapping *m;
	struct t_owner own;
	uint32_t bs;
	void *dev_buf;            /* t_dev_block() off a memory device */
};

/* A memory device of @blocks blocks of @bs bytes holding the pattern, a
 * cache of @pages pages (with a flusher if @flusher) and one mapping of
 * the device through t_owner_ops. */
void t_env_init(struct t_env *e, uint32_t bs, uint64_t blocks, uint64_t pages,
		bool flusher);
/* The same with a configuration of one's own (block_size and budget are
 * filled in if zero). */
void t_env_init_cfg(struct t_env *e, uint32_t bs, uint64_t blocks,
		    struct pc_config *cfg);
void t_env_fini(struct t_env *e);

/* Block @i of the pattern: its first 8 bytes are i, then bytes from i. */
void t_pattern(void *buf, uint64_t i, uint32_t bs);
/* True if @buf holds block @i of the pattern. */
bool t_is_pattern(const void *buf, uint64_t i, uint32_t bs);
/* Device block @i as it is now; off a memory device, valid until the
 * next call. */
const void *t_dev_block(struct t_env *e, uint64_t i);

/* A thread that runs @fn(@arg), and joining it. */
pthread_t t_thread(void *(*fn)(void *), void *arg);
void t_join(pthread_t t);

/* Capture log lines; count the captured lines containing @s. */
void t_log_capture(void);
unsigned int t_log_count(const char *s);

#endif /* MISCFS_T_PC_H */
