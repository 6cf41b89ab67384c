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
 * its own free buffers, a buffer is taken from a chunk already in use
 * before an empty one, and a chunk whose buffers all came back is
 * unmapped (unless the others have few free: kept for the next burst).  What the pool holds
 * follows what is in use, not its peak.
 */
#include "util.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>

/* Bytes mapped at once, at an address that is a multiple of it: a
 * buffer's chunk is its address rounded down.  The chunk's head takes
 * its first buffer's place. */
#define POOL_CHUNK_BYTES ((size_t)1 << 20)

struct ut_pool_chunk {
	struct ut_pool_chunk *next, *prev;   /* the pool's chunks with free buffers */
	void *free;                          /* linked through each one's first word */
	uint32_t used, count;
};

int ut_pool_init(struct ut_pool *p, size_t size)
{
	if (size < sizeof(void *) || (size & (size - 1)) || size > POOL_CHUNK_BYTES / 4)
		return -EINVAL;
	*p = (struct ut_pool){ .size = size };
	return -pthread_mutex_init(&p->lock, NULL);
}

static void chunk_unmap(struct ut_pool_chunk *c)
{
	munmap(c, POOL_CHUNK_BYTES);
}

void ut_pool_destroy(struct ut_pool *p)
{
	while (p->chunks) {
		struct ut_pool_chunk *c = p->chunks;

		p->chunks = c->next;
		chunk_unmap(c);
	}
	pthread_mutex_destroy(&p->lock);
}

/* A chunk aligned to its size: twice the size mapped, the rest given
 * back. */
static struct ut_pool_chunk *chunk_map(size_t size)
{
	size_t head_len = UT_MAX(size, sizeof(struct ut_pool_chunk));
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
	c->count = (uint32_t)((POOL_CHUNK_BYTES - head_len) / size);
	c->used = 0;
	for (uint32_t i = 0; i < c->count; i++) {
		char *buf = (char *)c + head_len + (size_t)i * size;

		*(void **)buf = i + 1 < c->count ? buf + size : NULL;
	}
	c->free = (char *)c + head_len;
	return c;
}

static void link_chunk(struct ut_pool *p, struct ut_pool_chunk *c)
{
	c->prev = NULL;
	c->next = p->chunks;
	if (p->chunks)
		p->chunks->prev = c;
	p->chunks = c;
}

static void unlink_chunk(struct ut_pool *p, struct ut_pool_chunk *c)
{
	if (c->prev)
		c->prev->next = c->next;
	else
		p->chunks = c->next;
	if (c->next)
		c->next->prev = c->prev;
}

/* The chunk to take from: one in use before an empty one, so that the
 * empty ones can go back. */
static struct ut_pool_chunk *pick(struct ut_pool *p)
{
	struct ut_pool_chunk *c = p->chunks;

	if (c && !c->used && c->next)
		c = c->next;
	return c;
}

void *ut_pool_get(struct ut_pool *p)
{
	struct ut_pool_chunk *c;
	void *buf;

	pthread_mutex_lock(&p->lock);
	c = pick(p);
	if (!c) {
		/* Unlocked: the mmap may take a while, and another thread
		 * may free buffers meanwhile. */
		pthread_mutex_unlock(&p->lock);
		c = chunk_map(p->size);
		if (!c)
			return NULL;
		pthread_mutex_lock(&p->lock);
		link_chunk(p, c);
		p->total += c->count;
	}
	buf = c->free;
	c->free = *(void **)buf;
	c->used++;
	if (!c->free)
		unlink_chunk(p, c);        /* full: off the list until a put */
	p->used++;
	pthread_mutex_unlock(&p->lock);
	return buf;
}

void ut_pool_put(struct ut_pool *p, void *buf)
{
	struct ut_pool_chunk *c, *gone = NULL;

	if (!buf)
		return;
	c = (void *)((uintptr_t)buf & ~(uintptr_t)(POOL_CHUNK_BYTES - 1));
	pthread_mutex_lock(&p->lock);
	if (!c->free)
		link_chunk(p, c);
	*(void **)buf = c->free;
	c->free = buf;
	c->used--;
	p->used--;
	/* Empty: it goes back while the other chunks have a chunk's worth
	 * of buffers free, so that use going up and down by a few buffers
	 * does not map and unmap a chunk each time. */
	if (!c->used && p->total - p->used - c->count >= c->count) {
		unlink_chunk(p, c);
		p->total -= c->count;
		gone = c;
	}
	pthread_mutex_unlock(&p->lock);
	if (gone)
		chunk_unmap(gone);
}

void ut_pool_usage(struct ut_pool *p, uint64_t *used, uint64_t *held)
{
	pthread_mutex_lock(&p->lock);
	*used = p->used * p->size;
	*held = p->total * p->size;
	pthread_mutex_unlock(&p->lock);
}
