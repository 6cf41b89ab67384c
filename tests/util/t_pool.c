/*
 * t_pool.c - the pool of fixed-size buffers (util/pool.c): buffers are
 * distinct, aligned and hold what was written; memory goes back to the
 * system a chunk at a time as buffers come back (after a delay that
 * keeps them for the next burst), without mapping and unmapping a chunk
 * at each step when use hovers at a chunk's edge; and
 * threads taking and giving back at once agree on the counts.
 */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "t.h"
#include "util.h"

#define MIB (1u << 20)

static uint64_t held(struct ut_pool *p)
{
	uint64_t used, h;

	ut_pool_usage(p, &used, &h);
	return h;
}

static uint64_t used(struct ut_pool *p)
{
	uint64_t u, h;

	ut_pool_usage(p, &u, &h);
	return u;
}

/* 5 MiB of 4 KiB buffers taken, each aligned and distinct (a pattern
 * written into each reads back), then given back: with no delay, the
 * pool keeps at most the chunk it would take from next. */
static void test_back_to_system(void)
{
	struct ut_pool p;
	unsigned n = 5 * MIB / 4096;
	unsigned char **b = calloc(n, sizeof(*b));

	t_ok(ut_pool_init(&p, 4096));
	p.keep_ms = 0;
	for (unsigned i = 0; i < n; i++) {
		b[i] = ut_pool_get(&p);
		t_assert(b[i], "no buffer %u", i);
		t_eq((uintptr_t)b[i] % 4096, 0);
		memset(b[i], (int)(i * 7 + 1), 4096);
	}
	t_eq(used(&p), (uint64_t)n * 4096);
	t_assert(held(&p) >= (uint64_t)n * 4096 && held(&p) <= (uint64_t)n * 4096 + 2 * MIB,
		 "held %llu", (unsigned long long)held(&p));
	for (unsigned i = 0; i < n; i++)
		for (unsigned j = 0; j < 4096; j += 511)
			t_eq(b[i][j], (unsigned char)(i * 7 + 1));
	/* Every other one back, then the rest: chunks empty only at the
	 * end, and go back then. */
	for (unsigned i = 0; i < n; i += 2)
		ut_pool_put(&p, b[i]);
	t_assert(held(&p) >= (uint64_t)n * 4096 / 2, "chunks in use were unmapped");
	for (unsigned i = 1; i < n; i += 2)
		ut_pool_put(&p, b[i]);
	t_eq(used(&p), 0);
	t_assert(held(&p) <= MIB, "%llu bytes held with nothing in use",
		 (unsigned long long)held(&p));
	ut_pool_destroy(&p);
	free(b);
}

/* Use going up and down by one buffer at a chunk's edge keeps the same
 * chunks: what is held never falls below what is used, nor grows. */
static void test_edge(void)
{
	struct ut_pool p;
	unsigned per, n;
	void **b;
	uint64_t h0;

	t_ok(ut_pool_init(&p, 1024));
	b = calloc(4096, sizeof(*b));
	b[0] = ut_pool_get(&p);
	per = (unsigned)(held(&p) / 1024);          /* buffers in a chunk */
	for (n = 1; n < per; n++)
		b[n] = ut_pool_get(&p);
	h0 = held(&p);
	for (int round = 0; round < 1000; round++) {
		b[n] = ut_pool_get(&p);
		t_assert(held(&p) <= h0 + MIB, "grew at round %d", round);
		ut_pool_put(&p, b[n]);
	}
	t_assert(held(&p) <= h0 + MIB, "held %llu", (unsigned long long)held(&p));
	while (n--)
		ut_pool_put(&p, b[n]);
	t_eq(used(&p), 0);
	ut_pool_destroy(&p);
	free(b);
}

#define THREADS 4
#define ROUNDS 20000

struct worker {
	struct ut_pool *p;
	unsigned seed;
	unsigned char tag;
};

/* Each thread keeps up to 300 buffers, taking and giving back at
 * random; what it wrote into a buffer is there when it gives it back. */
static void *work(void *arg)
{
	struct worker *w = arg;
	unsigned char *mine[300];
	unsigned have = 0;

	for (int r = 0; r < ROUNDS; r++) {
		unsigned x = rand_r(&w->seed);

		if (have < 300 && (x & 1 || !have)) {
			mine[have] = ut_pool_get(w->p);
			t_assert(mine[have], "no buffer");
			memset(mine[have], w->tag, 64);
			have++;
		} else {
			unsigned i = x % have;

			t_eq(mine[i][63], w->tag);
			ut_pool_put(w->p, mine[i]);
			mine[i] = mine[--have];
		}
	}
	while (have)
		ut_pool_put(w->p, mine[--have]);
	return NULL;
}

static void test_threads(void)
{
	struct ut_pool p;
	struct worker w[THREADS];
	pthread_t t[THREADS];

	t_ok(ut_pool_init(&p, 2048));
	p.keep_ms = 0;
	for (int i = 0; i < THREADS; i++) {
		w[i] = (struct worker){ &p, 0x100u * (unsigned)i + 7, (unsigned char)(i + 1) };
		t_eq(pthread_create(&t[i], NULL, work, &w[i]), 0);
	}
	for (int i = 0; i < THREADS; i++)
		pthread_join(t[i], NULL);
	t_eq(used(&p), 0);
	t_assert(held(&p) <= MIB, "%llu bytes held with nothing in use",
		 (unsigned long long)held(&p));
	ut_pool_destroy(&p);
}

/* Chunks emptied by a burst stay for keep_ms, for the next burst; an
 * emptying after that gives them back.  keep_ms is long enough that a
 * loaded machine does not age a chunk between two steps. */
static void test_keep(void)
{
	struct ut_pool p;
	unsigned n = 3 * MIB / 4096;
	void **b = calloc(n, sizeof(*b));
	struct timespec ts = { 1, 500 * 1000 * 1000 };

	t_ok(ut_pool_init(&p, 4096));
	p.keep_ms = 1000;
	for (unsigned i = 0; i < n; i++)
		b[i] = ut_pool_get(&p);
	for (unsigned i = 0; i < n; i++)
		ut_pool_put(&p, b[i]);
	t_assert(held(&p) >= 3 * (uint64_t)MIB - 3 * 4096, "a burst's chunks went at once");
	for (unsigned i = 0; i < n; i++)          /* the next burst maps nothing */
		b[i] = ut_pool_get(&p);
	t_assert(held(&p) <= 4 * (uint64_t)MIB, "held %llu", (unsigned long long)held(&p));
	for (unsigned i = 0; i < n; i++)
		ut_pool_put(&p, b[i]);
	nanosleep(&ts, NULL);
	ut_pool_put(&p, ut_pool_get(&p));
	t_assert(held(&p) <= MIB, "%llu bytes held %d ms after the burst",
		 (unsigned long long)held(&p), 1500);
	/* A trim gives back the newest empty chunk too, once it is old. */
	ut_pool_trim(&p);
	t_assert(held(&p) > 0, "a fresh chunk went at once");
	nanosleep(&ts, NULL);
	ut_pool_trim(&p);
	t_eq(held(&p), 0);
	ut_pool_destroy(&p);
	free(b);
}

static void test_sizes(void)
{
	struct ut_pool p;

	t_eq(ut_pool_init(&p, 3000), -EINVAL);
	t_eq(ut_pool_init(&p, 4), -EINVAL);
	t_eq(ut_pool_init(&p, MIB), -EINVAL);
	t_ok(ut_pool_init(&p, 65536));
	void *b = ut_pool_get(&p);
	t_eq((uintptr_t)b % 4096, 0);
	ut_pool_put(&p, b);
	ut_pool_put(&p, NULL);
	ut_pool_destroy(&p);
}

T_MAIN(T_CASE(test_back_to_system), T_CASE(test_edge), T_CASE(test_keep),
       T_CASE(test_threads), T_CASE(test_sizes))
