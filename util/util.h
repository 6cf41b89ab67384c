/*
 * util.h - the few helpers every layer shares: logging, sizes, byte order.
 *
 * This is the bottom of the include graph: it includes only libc headers,
 * so the block layer, the page cache, the journal and the filesystem can all
 * use it without seeing each other.
 */
#ifndef MISCFS_UTIL_H
#define MISCFS_UTIL_H

#include <endian.h>
#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

/* ---- logging ------------------------------------------------------------ */

enum mlog_level { MLOG_ERR, MLOG_WARN, MLOG_INFO, MLOG_DEBUG };

/* Messages at or below @level are written; the default is MLOG_WARN. */
void mlog_set_level(enum mlog_level level);
enum mlog_level mlog_get_level(void);
/* Prefix of every line ("miscfs", "mkfs.miscfs", ...). */
void mlog_set_ident(const char *ident);
/*
 * Replace the sink (default: stderr).  Tests use this to capture what a
 * layer said about an error.  @fn NULL restores stderr.
 */
typedef void (*mlog_sink_fn)(enum mlog_level level, const char *line, void *arg);
void mlog_set_sink(mlog_sink_fn fn, void *arg);

void mlog(enum mlog_level level, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

#define mlog_err(...)   mlog(MLOG_ERR, __VA_ARGS__)
#define mlog_warn(...)  mlog(MLOG_WARN, __VA_ARGS__)
#define mlog_info(...)  mlog(MLOG_INFO, __VA_ARGS__)
#define mlog_dbg(...)   mlog(MLOG_DEBUG, __VA_ARGS__)

/* ---- arithmetic --------------------------------------------------------- */

#define UT_MIN(a, b) ((a) < (b) ? (a) : (b))
#define UT_MAX(a, b) ((a) > (b) ? (a) : (b))
#define UT_DIV_ROUND_UP(n, d) (((n) + (d) - 1) / (d))
#define UT_ROUND_UP(n, a) (UT_DIV_ROUND_UP(n, a) * (a))
#define UT_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define UT_IS_POW2(x) ((x) != 0 && ((x) & ((x) - 1)) == 0)

#define ut_container_of(ptr, type, member) \
	((type *)(void *)((char *)(ptr) - offsetof(type, member)))

/* ---- intrusive doubly linked list -------------------------------------- */

struct ut_list {
	struct ut_list *next, *prev;
};

static inline void ut_list_init(struct ut_list *l) { l->next = l->prev = l; }
static inline int ut_list_empty(const struct ut_list *l) { return l->next == l; }

static inline void ut_list_add_tail(struct ut_list *head, struct ut_list *n)
{
	n->prev = head->prev;
	n->next = head;
	head->prev->next = n;
	head->prev = n;
}

/* Unlink @n and leave it self-linked, so unlinking twice is harmless. */
static inline void ut_list_del(struct ut_list *n)
{
	n->prev->next = n->next;
	n->next->prev = n->prev;
	ut_list_init(n);
}

#define ut_list_entry(ptr, type, member) ut_container_of(ptr, type, member)
#define ut_list_first(head, type, member) \
	(ut_list_empty(head) ? NULL : ut_list_entry((head)->next, type, member))
/* Iterate where the body may unlink the current node. */
#define ut_list_for_each_safe(pos, tmp, head) \
	for (pos = (head)->next, tmp = pos->next; pos != (head); pos = tmp, tmp = pos->next)

/*
 * Parse "123", "64K", "10M", "2G", "1T" (binary multiples) into bytes.
 * Returns 0 or -EINVAL (not a number, unknown suffix, overflow).
 */
int ut_parse_size(const char *s, uint64_t *out);

/*
 * Say what is wrong with a structure read from disk: format the reason
 * into @why (if not NULL) and return -EUCLEAN, for
 * "return ut_corrupt(why, len, ...)".
 */
int ut_corrupt(char *why, size_t len, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Format @bytes as "4.0 MiB" etc. into @buf. */
const char *ut_format_size(uint64_t bytes, char *buf, size_t len);

/* Monotonic clock in nanoseconds. */
uint64_t ut_now_ns(void);

/*
 * A thread about to sleep on I/O or on another thread's progress calls
 * ut_blocking() first.  A thread may hook it for itself: the daemon's
 * request loop does, so that the thread reading requests hands that role
 * to another before it sleeps.  The hook is embedded in its owner's state,
 * which @blocking reaches with ut_container_of.  Unhooked, it costs a test.
 */
struct ut_blocker {
	void (*blocking)(struct ut_blocker *hook);
};

/* Thread-local, and safe so: it only tells the thread's owner that the
 * thread is about to sleep; the call that sleeps does the same with or
 * without it. */
extern _Thread_local struct ut_blocker *ut_block_hook;

static inline void ut_blocking(void)
{
	struct ut_blocker *hook = ut_block_hook;

	if (hook)
		hook->blocking(hook);
}

/* pthread_cond_wait() announced by ut_blocking(). */
static inline void ut_cond_wait(pthread_cond_t *cond, pthread_mutex_t *lock)
{
	ut_blocking();
	pthread_cond_wait(cond, lock);
}

/*
 * A pool of buffers of one size (a power of two), shared by all threads,
 * for blocks allocated on one thread and freed on another.  Buffers are
 * aligned to their size, up to a page; at most a quarter of a chunk
 * (1 MiB) each.  A chunk whose buffers have all come back goes back to
 * the system when a later one empties keep_ms (2 s) after it; the
 * newest empty chunk stays.
 */
struct ut_pool_chunk;
struct ut_pool {
	pthread_mutex_t lock;        /* everything below; a leaf lock */
	size_t size;
	struct ut_pool_chunk *chunks;  /* those in use with a buffer free */
	struct ut_pool_chunk *empty;   /* those with none in use, newest first */
	uint64_t used, total;        /* buffers handed out, buffers mapped */
	unsigned keep_ms;            /* set after init to change it */
};

int ut_pool_init(struct ut_pool *p, size_t size);
void ut_pool_destroy(struct ut_pool *p);
void *ut_pool_get(struct ut_pool *p);           /* NULL: out of memory */
void ut_pool_put(struct ut_pool *p, void *buf); /* NULL is fine */
/* Give back every chunk empty for keep_ms or more, the newest too: for
 * a user gone idle, which empties no chunk to do it. */
void ut_pool_trim(struct ut_pool *p);
/* Bytes handed out now, and bytes the pool holds. */
void ut_pool_usage(struct ut_pool *p, uint64_t *used, uint64_t *held);

#endif /* MISCFS_UTIL_H */
