/*
 * pool.c - pools of fixed-size buffers.
 *
 * The journal copies blocks on one thread (a request writing file data,
 * the commit thread, a checkpointer) and frees them on another.  Through
 * malloc every thread takes its copies from an arena of its own and the
 * arenas keep what was freed to them, so the process ends up holding the
 * sum of every arena's peak; aligned allocations of a block also waste
 * most of a block each.  A pool hands out buffers shared by all threads
 * from chunks mapped whole, as a slab allocator does: each chunk keeps
 * its own free buffers, a buffer comes from a chunk in use before an
 * empty one, and a chunk whose buffers all came back goes back to the
 * system once it has stayed empty for keep_ms (at the next emptying, or
 * at a trim an idle user calls now and then).  The journal's use comes
 * in bursts (a commit copies its blocks, then frees them all): the delay
 * keeps the chunks of bursts that follow each other, mapped and faulted
 * in once, and gives back those of a burst that had no successor.
 */
#include "util.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>

/* Bytes mapped at once, at an address that is a multiple of it: a
 * buffer's chunk is its address rounded down.  The chunk's head takes
 * its first buffer's place. */
#define POOL_CHUNK_BYTES ((size_t)1 << 20)
#define POOL_KEEP_MS 2000u

struct ut_pool_chunk {
	struct ut_pool_chunk *next, *prev;   /* on p->chunks or p->empty */
	void *free;                          /* given back, linked through their first word */
	uint32_t used, count;
	uint32_t fresh;                      /* buffers from here on never handed out */
	uint64_t empty_since;                /* ms, on p->empty */
};

int ut_pool_init(struct ut_pool *p, size_t size)
{
	if (size < sizeof(void *) || (size & (size - 1)) || size > POOL_CHUNK_BYTES / 4)
		return -EINVAL;
	*p = (struct ut_pool){ .size = size, .keep_ms = POOL_KEEP_MS };
	return -pthread_mutex_init(&p->lock, NULL);
}

static void chunk_unmap(struct ut_pool_chunk *c)
{
	munmap(c, POOL_CHUNK_BYTES);
}

/* Every chunk of a list linked through ->next. */
static void unmap_all(struct ut_pool_chunk *gone)
{
	while (gone) {
		struct ut_pool_chunk *c = gone;

		gone = c->next;
		chunk_unmap(c);
	}
}

void ut_pool_destroy(struct ut_pool *p)
{
	unmap_all(p->chunks);
	unmap_all(p->empty);
	pthread_mutex_destroy(&p->lock);
}

static size_t head_len(size_t size)
{
	return UT_MAX(size, sizeof(struct ut_pool_chunk));
}

/* A chunk aligned to its size: twice the size mapped, the rest given
 * back.  Its buffers are not touched: each page is faulted in when a
 * buffer on it is first used. */
static struct ut_pool_chunk *chunk_map(size_t size)
{
	uintptr_t start, aligned;
	struct ut_pool_chunk *c;
	char *mem = mmap(NULL, 2 * POOL_CHUNK_BYTES, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (mem == MAP_FAILED)
		return NULL;
	start = (uintptr_t)mem;
	aligned = (start + POOL_CHUNK_BYTES - 1) & ~(uintptr_t)(POOL_CHUNK_BYTES - 1);
	if (aligned > start)
		munmap(mem, aligned - start);
	munmap((void *)(aligned + POOL_CHUNK_BYTES), start + POOL_CHUNK_BYTES - aligned);
	c = (void *)aligned;
	*c = (struct ut_pool_chunk){
		.count = (uint32_t)((POOL_CHUNK_BYTES - head_len(size)) / size),
	};
	return c;
}

static void list_add(struct ut_pool_chunk **head, struct ut_pool_chunk *c)
{
	c->prev = NULL;
	c->next = *head;
	if (*head)
		(*head)->prev = c;
	*head = c;
}

static void list_del(struct ut_pool_chunk **head, struct ut_pool_chunk *c)
{
	if (c->prev)
		c->prev->next = c->next;
	else
		*head = c->next;
	if (c->next)
		c->next->prev = c->prev;
}

static bool chunk_full(const struct ut_pool_chunk *c)
{
	return !c->free && c->fresh == c->count;
}

static void *chunk_take(struct ut_pool *p, struct ut_pool_chunk *c)
{
	void *buf = c->free;

	if (buf)
		c->free = *(void **)buf;
	else
		buf = (char *)c + head_len(p->size) + (size_t)c->fresh++ * p->size;
	c->used++;
	return buf;
}

void *ut_pool_get(struct ut_pool *p)
{
	struct ut_pool_chunk *c;
	void *buf;

	pthread_mutex_lock(&p->lock);
	c = p->chunks;
	if (!c && p->empty) {            /* the most recently emptied */
		c = p->empty;
		list_del(&p->empty, c);
		list_add(&p->chunks, c);
	}
	if (!c) {
		/* Unlocked: the mmap may take a while, and another thread
		 * may free buffers meanwhile. */
		pthread_mutex_unlock(&p->lock);
		c = chunk_map(p->size);
		if (!c)
			return NULL;
		pthread_mutex_lock(&p->lock);
		list_add(&p->chunks, c);
		p->total += c->count;
	}
	buf = chunk_take(p, c);
	if (chunk_full(c))
		list_del(&p->chunks, c);        /* off every list until a put */
	p->used++;
	pthread_mutex_unlock(&p->lock);
	return buf;
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* The empty chunks older than keep_ms, off the list into @gone, but the
 * newest empty one if @keep_newest (lock held). */
static struct ut_pool_chunk *expire(struct ut_pool *p, uint64_t now, bool keep_newest)
{
	struct ut_pool_chunk *c = p->empty, *gone = NULL;

	if (c && keep_newest)
		c = c->next;
	while (c) {
		struct ut_pool_chunk *next = c->next;

		if (now - c->empty_since >= p->keep_ms) {
			list_del(&p->empty, c);
			p->total -= c->count;
			c->next = gone;
			gone = c;
		}
		c = next;
	}
	return gone;
}

void ut_pool_put(struct ut_pool *p, void *buf)
{
	struct ut_pool_chunk *c, *gone = NULL;

	if (!buf)
		return;
	c = (void *)((uintptr_t)buf & ~(uintptr_t)(POOL_CHUNK_BYTES - 1));
	pthread_mutex_lock(&p->lock);
	if (chunk_full(c))
		list_add(&p->chunks, c);
	*(void **)buf = c->free;
	c->free = buf;
	c->used--;
	p->used--;
	if (!c->used) {
		c->empty_since = now_ms();
		list_del(&p->chunks, c);
		list_add(&p->empty, c);
		gone = expire(p, c->empty_since, true);
	}
	pthread_mutex_unlock(&p->lock);
	unmap_all(gone);
}

void ut_pool_trim(struct ut_pool *p)
{
	struct ut_pool_chunk *gone;

	pthread_mutex_lock(&p->lock);
	gone = expire(p, now_ms(), false);
	pthread_mutex_unlock(&p->lock);
	unmap_all(gone);
}

void ut_pool_usage(struct ut_pool *p, uint64_t *used, uint64_t *held)
{
	pthread_mutex_lock(&p->lock);
	*used = p->used * p->size;
	*held = p->total * p->size;
	pthread_mutex_unlock(&p->lock);
}
