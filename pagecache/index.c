/*
 * index.c - a mapping's index: page index -> page, read without locks.
 *
 * A chained hash table whose buckets and chain links are page ids (+1, so
 * that 0 ends a chain): 4 bytes a bucket, at most one page per bucket on
 * average before it doubles, so the index costs 4 to 8 bytes per page.
 * The bucket array is a list of segments that never move: doubling adds a
 * segment for the upper half and splits each old chain in two.  Segments
 * are freed only with the mapping, and page descriptors only with the
 * cache, so a reader never touches freed memory.
 *
 * Writers hold m->lock.  Readers take no lock:
 *   - a found page is taken with "get unless zero" and then checked to be
 *     still (m, index): a page that was freed, frozen by reclaim or reused
 *     elsewhere meanwhile fails one of the two and the lookup retries;
 *   - a miss is trusted only if m->seq did not change during the walk:
 *     writers make it odd while they unlink or move pages, which is when
 *     a reader can be led off its chain.  After a few retries the lookup
 *     takes m->lock.
 * Inserting at a chain's head needs no seq change: a reader either sees
 * the new page or walks the old chain, which is still intact.
 */
#include "pc_i.h"

#include <assert.h>
#include <errno.h>
#include <stdlib.h>

#define LOOKUP_TRIES 4
#define STEP_SLACK 64

static inline uint64_t mix(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ULL;
	x ^= x >> 33;
	return x;
}

static _Atomic uint32_t *bucket(struct pc_mapping *m, uint32_t b)
{
	unsigned int k;
	_Atomic uint32_t *seg;

	if (b < PC_SEG0)
		return &atomic_load_explicit(&m->seg[0], memory_order_acquire)[b];
	k = 32u - (unsigned int)__builtin_clz(b >> PC_SEG0_SHIFT);
	seg = atomic_load_explicit(&m->seg[k], memory_order_acquire);
	return &seg[b - (PC_SEG0 << (k - 1))];
}

static inline uint32_t nbuckets(uint32_t order)
{
	return PC_SEG0 << order;
}

static inline struct pc_page *id_page(struct pc_mapping *m, uint32_t id1)
{
	return &m->cache->pages[id1 - 1];
}

int pc_index_init(struct pc_mapping *m)
{
	_Atomic uint32_t *seg0 = calloc(PC_SEG0, sizeof(*seg0));

	if (!seg0)
		return -ENOMEM;
	atomic_store(&m->seg[0], seg0);
	atomic_fetch_add(&m->cache->index_bytes, PC_SEG0 * sizeof(*seg0));
	return 0;
}

void pc_index_free(struct pc_mapping *m)
{
	uint32_t order = atomic_load(&m->order);

	for (uint32_t k = 0; k <= order; k++)
		free((void *)atomic_load(&m->seg[k]));
	atomic_fetch_sub(&m->cache->index_bytes,
			 (uint64_t)nbuckets(order) * sizeof(uint32_t));
}

static inline bool same_page(struct pc_page *p, struct pc_mapping *m,
			     uint64_t index)
{
	return atomic_load_explicit(&p->mapping, memory_order_acquire) == m &&
	       atomic_load_explicit(&p->index, memory_order_relaxed) == index;
}

/* Walk one chain; *lost is set if it ran suspiciously long. */
static struct pc_page *chain_find(struct pc_mapping *m, uint64_t index,
				  bool *lost)
{
	uint32_t order = atomic_load_explicit(&m->order, memory_order_acquire);
	uint32_t n = nbuckets(order);
	uint64_t limit = atomic_load_explicit(&m->nrpages, memory_order_relaxed)
			 + STEP_SLACK;
	uint32_t id = atomic_load_explicit(bucket(m, (uint32_t)(mix(index) & (n - 1))),
					   memory_order_acquire);

	for (uint64_t steps = 0; id; steps++) {
		struct pc_page *p = id_page(m, id);

		if (steps > limit) {
			*lost = true;
			return NULL;
		}
		if (same_page(p, m, index))
			return p;
		id = atomic_load_explicit(&p->hash_next, memory_order_acquire);
	}
	return NULL;
}

/* Under m->lock: the page at @index with a reference, or NULL.  A page
 * frozen by reclaim (count 0) counts as absent. */
struct pc_page *pc_index_get_locked(struct pc_mapping *m, uint64_t index)
{
	uint32_t n = nbuckets(atomic_load(&m->order));
	uint32_t id = atomic_load(bucket(m, (uint32_t)(mix(index) & (n - 1))));

	while (id) {
		struct pc_page *p = id_page(m, id);

		if (same_page(p, m, index) && pc_page_try_get(p))
			return p;
		id = atomic_load(&p->hash_next);
	}
	return NULL;
}

struct pc_page *pc_index_get(struct pc_mapping *m, uint64_t index)
{
	struct pc_page *p;

	for (int tries = 0; tries < LOOKUP_TRIES; tries++) {
		uint32_t s = atomic_load(&m->seq);
		bool lost = false;

		if (s & 1)
			continue;
		p = chain_find(m, index, &lost);
		if (p) {
			if (pc_page_try_get(p)) {
				if (same_page(p, m, index))
					return p;
				pc_put_page(p);
			}
			continue;
		}
		if (!lost && atomic_load(&m->seq) == s)
			return NULL;
	}
	pthread_mutex_lock(&m->lock);
	p = pc_index_get_locked(m, index);
	pthread_mutex_unlock(&m->lock);
	return p;
}

/* ---- writers (m->lock held) ---------------------------------------------- */

/* Split chain @b of a table of @n buckets into @b and @b + @n. */
static void split(struct pc_mapping *m, uint32_t b, uint32_t n)
{
	_Atomic uint32_t *stay = bucket(m, b), *move = bucket(m, b + n);
	uint32_t id = atomic_load(stay);

	while (id) {
		struct pc_page *p = id_page(m, id);
		uint32_t next = atomic_load(&p->hash_next);

		if (mix(atomic_load(&p->index)) & n) {
			atomic_store_explicit(move, id, memory_order_release);
			move = &p->hash_next;
		} else {
			atomic_store_explicit(stay, id, memory_order_release);
			stay = &p->hash_next;
		}
		id = next;
	}
	atomic_store_explicit(stay, 0, memory_order_release);
	atomic_store_explicit(move, 0, memory_order_release);
}

static void grow(struct pc_mapping *m)
{
	uint32_t order = atomic_load(&m->order);
	uint32_t n = nbuckets(order);
	_Atomic uint32_t *seg;

	if (order + 1 >= PC_NSEGS)
		return;
	seg = calloc(n, sizeof(*seg));
	if (!seg)
		return;         /* longer chains, still correct */
	atomic_store_explicit(&m->seg[order + 1], seg, memory_order_release);
	atomic_fetch_add(&m->seq, 1);
	for (uint32_t b = 0; b < n; b++)
		split(m, b, n);
	atomic_store_explicit(&m->order, order + 1, memory_order_release);
	atomic_fetch_add(&m->seq, 1);
	atomic_fetch_add(&m->cache->index_bytes, (uint64_t)n * sizeof(*seg));
}

/* Insert a page that nobody else can find yet; the index takes a reference. */
void pc_index_insert(struct pc_mapping *m, struct pc_page *p, uint64_t index)
{
	uint32_t n = nbuckets(atomic_load(&m->order));
	_Atomic uint32_t *b = bucket(m, (uint32_t)(mix(index) & (n - 1)));

	atomic_fetch_add(&p->count, 1);
	atomic_store_explicit(&p->index, index, memory_order_relaxed);
	atomic_store_explicit(&p->mapping, m, memory_order_release);
	atomic_store_explicit(&p->hash_next, atomic_load(b), memory_order_relaxed);
	atomic_store_explicit(b, pc_page_id(m->cache, p) + 1, memory_order_release);
	atomic_fetch_add(&m->cache->nr_pages, 1);
	if (atomic_fetch_add(&m->nrpages, 1) + 1 > n)
		grow(m);
}

/* Unlink a page; its own link stays, so readers standing on it go on. */
void pc_index_delete(struct pc_mapping *m, struct pc_page *p)
{
	uint32_t n = nbuckets(atomic_load(&m->order));
	uint64_t index = atomic_load(&p->index);
	_Atomic uint32_t *link = bucket(m, (uint32_t)(mix(index) & (n - 1)));
	uint32_t id = pc_page_id(m->cache, p) + 1, cur;

	atomic_fetch_add(&m->seq, 1);
	while ((cur = atomic_load(link)) != id) {
		assert(cur);
		link = &id_page(m, cur)->hash_next;
	}
	atomic_store_explicit(link, atomic_load(&p->hash_next),
			      memory_order_release);
	atomic_fetch_add(&m->seq, 1);
	atomic_fetch_sub(&m->nrpages, 1);
	atomic_fetch_sub(&m->cache->nr_pages, 1);
}

/* ---- range iteration ----------------------------------------------------- */

/* Probing index by index is cheaper than walking every bucket when the
 * range is no larger than the table. */
void pc_iter_init(struct pc_mapping *m, struct pc_iter *it, uint64_t start,
		  uint64_t end)
{
	it->start = start;
	it->end = end;
	it->next = start;
	it->bucket = 0;
	it->want = 0;
	it->done = start >= end;
	it->probe = end - start <= nbuckets(atomic_load(&m->order));
}

void pc_iter_want(struct pc_iter *it, uint32_t want)
{
	it->want = want;
}

static bool wanted(const struct pc_iter *it, struct pc_page *p)
{
	return !it->want || (atomic_load(&p->flags) & it->want);
}

static unsigned int iter_probe(struct pc_mapping *m, struct pc_iter *it,
			       struct pc_page **pages, unsigned int max)
{
	unsigned int n = 0;

	while (n < max && it->next < it->end) {
		struct pc_page *p = pc_index_get(m, it->next++);

		if (p && wanted(it, p))
			pages[n++] = p;
		else if (p)
			pc_put_page(p);
	}
	it->done = it->next >= it->end;
	return n;
}

static bool in_range(const struct pc_iter *it, struct pc_page *p)
{
	uint64_t idx = atomic_load(&p->index);

	return idx >= it->start && idx < it->end;
}

static unsigned int chain_matches(struct pc_mapping *m, struct pc_iter *it,
				  uint32_t id)
{
	unsigned int n = 0;

	for (; id; id = atomic_load(&id_page(m, id)->hash_next))
		n += in_range(it, id_page(m, id));
	return n;
}

static void take(struct pc_page *p, struct pc_page **pages, unsigned int *n)
{
	if (pc_page_try_get(p))
		pages[(*n)++] = p;
}

/*
 * A chain with more pages in range than a whole batch (absurd collisions
 * only): hand them out in index order, @max at a time, from it->next on.
 */
static unsigned int long_chain(struct pc_mapping *m, struct pc_iter *it,
			       uint32_t head, struct pc_page **pages,
			       unsigned int max)
{
	unsigned int n = 0;

	while (n < max) {
		struct pc_page *best = NULL;

		for (uint32_t id = head; id;
		     id = atomic_load(&id_page(m, id)->hash_next)) {
			struct pc_page *p = id_page(m, id);
			uint64_t idx = atomic_load(&p->index);

			if (in_range(it, p) && wanted(it, p) && idx >= it->next &&
			    (!best || idx < atomic_load(&best->index)))
				best = p;
		}
		if (!best)
			break;
		it->next = atomic_load(&best->index) + 1;
		take(best, pages, &n);
	}
	return n;
}

/*
 * Whole buckets in order, so that a caller removing the pages it got does
 * not shift what is left to visit.  A chain's count is of the pages in
 * range, wanted or not: flags change without m->lock, and the count must
 * bound what is taken.  Growth between calls only moves pages
 * to buckets further on, where they are seen (perhaps again).
 */
static unsigned int iter_walk(struct pc_mapping *m, struct pc_iter *it,
			      struct pc_page **pages, unsigned int max)
{
	unsigned int n = 0;

	pthread_mutex_lock(&m->lock);
	for (; it->bucket < nbuckets(atomic_load(&m->order)); it->bucket++) {
		uint32_t head = atomic_load(bucket(m, it->bucket));
		unsigned int count = chain_matches(m, it, head);

		if (n + count > max) {
			if (n)
				break;
			n = long_chain(m, it, head, pages, max);
			if (n)
				break;
		}
		for (uint32_t id = head; id;
		     id = atomic_load(&id_page(m, id)->hash_next))
			if (in_range(it, id_page(m, id)) && wanted(it, id_page(m, id)) &&
			    atomic_load(&id_page(m, id)->index) >= it->next)
				take(id_page(m, id), pages, &n);
		it->next = it->start;
	}
	it->done = it->bucket >= nbuckets(atomic_load(&m->order));
	pthread_mutex_unlock(&m->lock);
	return n;
}

unsigned int pc_iter_next(struct pc_mapping *m, struct pc_iter *it,
			  struct pc_page **pages, unsigned int max)
{
	if (it->done)
		return 0;
	return it->probe ? iter_probe(m, it, pages, max)
			 : iter_walk(m, it, pages, max);
}
