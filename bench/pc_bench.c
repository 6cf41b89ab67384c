/*
 * pc_bench.c - the page cache's hit path and its memory overhead.
 *
 * Fills a cache with pages of one mapping, then has one and then two
 * threads look up random cached pages (pc_find_get_page + pc_put_page)
 * and reports lookups per second, and the metadata the cache spends per
 * cached page (descriptor and index; the data itself not counted).
 *
 *   pc_bench [PAGES [LOOKUPS_PER_THREAD]]
 */
#include "pc.h"

#include "util.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define BS 4096u

/* One cache line each: the workers must not share one. */
struct worker {
	_Alignas(64) struct pc_mapping *m;
	uint64_t pages, lookups, seed, found;
};

static void *lookup_loop(void *arg)
{
	struct worker *w = arg;
	uint64_t s = w->seed, found = 0;

	for (uint64_t i = 0; i < w->lookups; i++) {
		struct pc_page *p;

		s ^= s << 13;
		s ^= s >> 7;
		s ^= s << 17;
		p = pc_find_get_page(w->m, s % w->pages);
		if (p) {
			found++;
			pc_put_page(p);
		}
	}
	w->found = found;
	return NULL;
}

/* Lookups per second with @n threads. */
static double run(struct pc_mapping *m, uint64_t pages, uint64_t lookups,
		  unsigned int n)
{
	struct worker w[2];
	pthread_t t[2];
	uint64_t t0 = ut_now_ns(), dt;

	for (unsigned int i = 0; i < n; i++) {
		w[i] = (struct worker){ m, pages, lookups, 0x9e3779b97f4a7c15ULL * (i + 1), 0 };
		if (pthread_create(&t[i], NULL, lookup_loop, &w[i])) {
			fprintf(stderr, "pthread_create failed\n");
			exit(1);
		}
	}
	for (unsigned int i = 0; i < n; i++) {
		pthread_join(t[i], NULL);
		if (w[i].found != lookups) {
			fprintf(stderr, "a cached page was not found\n");
			exit(1);
		}
	}
	dt = ut_now_ns() - t0;
	return (double)lookups * n / ((double)dt / 1e9);
}

static int fill(struct pc_mapping *m, uint64_t pages)
{
	for (uint64_t i = 0; i < pages; i++) {
		struct pc_page *p;
		int rc = pc_find_or_create_page(m, i, &p);

		if (rc)
			return rc;
		SetPageUptodate(p);
		pc_unlock_page(p);
		pc_put_page(p);
	}
	return 0;
}

int main(int argc, char **argv)
{
	static const struct pc_mapping_ops none = { 0 };
	uint64_t pages = argc > 1 ? strtoull(argv[1], NULL, 0) : 65536;
	uint64_t lookups = argc > 2 ? strtoull(argv[2], NULL, 0) : 4000000;
	/* Room for every page beyond the pool's reserve. */
	struct pc_config cfg = {
		.block_size = BS,
		.budget = (pages + pages / 64 + 64) * (BS + sizeof(struct pc_page)),
		.no_flusher = true,
	};
	struct pc_cache *c;
	struct pc_mapping *m;
	struct pc_stats st;
	double one, two;

	if (pc_cache_create(&cfg, &c) || pc_mapping_create(c, &none, NULL, &m) ||
	    fill(m, pages)) {
		fprintf(stderr, "pc_bench: setup failed\n");
		return 1;
	}
	pc_get_stats(c, &st);
	one = run(m, pages, lookups, 1);
	two = run(m, pages, lookups, 2);
	printf("pages cached: %llu\n", (unsigned long long)st.pages);
	printf("hit lookups/s, 1 thread: %.0f\n", one);
	printf("hit lookups/s, 2 threads: %.0f\n", two);
	printf("descriptor bytes: %zu\n", sizeof(struct pc_page));
	printf("metadata bytes per cached page: %.1f\n",
	       (double)st.meta_bytes / (double)st.pages);
	pc_mapping_destroy(m);
	pc_cache_destroy(c);
	return 0;
}
