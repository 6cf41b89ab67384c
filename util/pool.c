/*
 * pool.c - pools of fixed-size buffers.
 *
 * The journal copies blocks on one thread (a request writing file data,
 * the commit thread, a checkpointer) and frees them on another.  Through
 * malloc every thread takes its copies from an arena of its own and the
 * arenas keep what was freed to them, so the process ends up holding the
 * sum of every arena's peak; aligned allocations of a block also waste
 * most of a block each.  A pool hands out buffers from one free list
 * shared by all threads, carved from chunks mapped whole: what it holds
 * is the peak of buffers in use at once, and nothing more.
 */
#include "util.h"

#include <errno.h>
#include <stdlib.h>
#include <sys/mman.h>

/* Bytes mapped at once. */
#define POOL_CHUNK_BYTES (1u << 20)

struct ut_pool_chunk {
	struct ut_pool_chunk *next;
	void *mem;
	size_t len;
};

int ut_pool_init(struct ut_pool *p, size_t size)
{
	if (size < sizeof(void *) || (size & (size - 1)))
		return -EINVAL;
	*p = (struct ut_pool){ .size = size };
	return -pthread_mutex_init(&p->lock, NULL);
}

void ut_pool_destroy(struct ut_pool *p)
{
	while (p->chunks) {
		struct ut_pool_chunk *c = p->chunks;

		p->chunks = c->next;
		munmap(c->mem, c->len);
		free(c);
	}
	pthread_mutex_destroy(&p->lock);
}

/* Map a chunk and thread its buffers onto a list; @*n gets their count. */
static struct ut_pool_chunk *new_chunk(size_t size, void **head, void **tail,
				       uint64_t *n)
{
	struct ut_pool_chunk *c = malloc(sizeof(*c));
	size_t count = UT_MAX((size_t)1, POOL_CHUNK_BYTES / size);
	char *mem;

	if (!c)
		return NULL;
	c->len = count * size;
	/* mmap's page alignment is the buffers' alignment (up to a page). */
	c->mem = mmap(NULL, c->len, PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (c->mem == MAP_FAILED) {
		free(c);
		return NULL;
	}
	mem = c->mem;
	for (size_t i = 0; i + 1 < count; i++)
		*(void **)(mem + i * size) = mem + (i + 1) * size;
	*(void **)(mem + (count - 1) * size) = NULL;
	*head = mem;
	*tail = mem + (count - 1) * size;
	*n = count;
	return c;
}

void *ut_pool_get(struct ut_pool *p)
{
	void *buf;

	pthread_mutex_lock(&p->lock);
	if (!p->free) {
		struct ut_pool_chunk *c;
		void *head, *tail;
		uint64_t n;

		/* Unlocked: the mmap may take a while, and another thread
		 * may free buffers meanwhile. */
		pthread_mutex_unlock(&p->lock);
		c = new_chunk(p->size, &head, &tail, &n);
		if (!c)
			return NULL;
		pthread_mutex_lock(&p->lock);
		c->next = p->chunks;
		p->chunks = c;
		*(void **)tail = p->free;
		p->free = head;
		p->total += n;
	}
	buf = p->free;
	p->free = *(void **)buf;
	p->used++;
	pthread_mutex_unlock(&p->lock);
	return buf;
}

void ut_pool_put(struct ut_pool *p, void *buf)
{
	if (!buf)
		return;
	pthread_mutex_lock(&p->lock);
	*(void **)buf = p->free;
	p->free = buf;
	p->used--;
	pthread_mutex_unlock(&p->lock);
}

void ut_pool_usage(struct ut_pool *p, uint64_t *used, uint64_t *held)
{
	pthread_mutex_lock(&p->lock);
	*used = p->used * p->size;
	*held = p->total * p->size;
	pthread_mutex_unlock(&p->lock);
}
