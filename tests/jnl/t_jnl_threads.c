/*
 * t_jnl_threads - handles from several threads at once, with fsyncs,
 * revokes, a log small enough to force checkpoints, and the commit thread
 * running: every block ends up home with its last content.  Run under
 * ThreadSanitizer too.
 */
#include <pthread.h>

#include "t_jnl.h"
#include "util.h"

#define BS        1024u
#define DEV       4096u
#define JSTART    2048u
#define JBLOCKS   1024u
#define THREADS   4
#define PER       60u              /* blocks of each thread */
#define SHARED0   1000u            /* blocks every thread touches */
#define ROUNDS    250

struct worker {
	struct tj *t;
	int id;
	uint64_t last[PER];
	uint64_t rng;
};

static uint32_t rnd(struct worker *w, uint32_t n)
{
	w->rng ^= w->rng << 13;
	w->rng ^= w->rng >> 7;
	w->rng ^= w->rng << 17;
	return (uint32_t)(w->rng % n);
}

static void one_round(struct worker *w, int round)
{
	uint32_t n = 1 + rnd(w, 20);
	struct jnl_handle h;

	t_ok(jnl_start(w->t->j, n + 2, &h));
	for (uint32_t k = 0; k < n; k++) {
		uint32_t i = rnd(w, PER);
		uint64_t stamp = ((uint64_t)w->id << 32) | (uint64_t)(round * 32 + k + 1);

		tj_write(w->t, &h, 100 + w->id * PER + i, stamp);
		w->last[i] = stamp;
	}
	/* A block everyone writes: contention on one buffer. */
	tj_write(w->t, &h, SHARED0 + rnd(w, 4), (uint64_t)w->id + 1);
	if (rnd(w, 8) == 0)
		t_ok(jnl_revoke(&h, 2000 - 50 + rnd(w, 40)));   /* never journalled */
	t_ok(jnl_stop(&h));
	if (rnd(w, 4) == 0)
		t_ok(jnl_commit_wait(w->t->j, h.h_tid));
	if (rnd(w, 50) == 0)
		t_ok(jnl_sync(w->t->j));
}

static void *run(void *arg)
{
	struct worker *w = arg;

	for (int r = 0; r < ROUNDS; r++)
		one_round(w, r);
	return NULL;
}

static void test_threads_last_content_home(void)
{
	static struct worker w[THREADS];
	pthread_t th[THREADS];
	struct jnl_stats st;
	struct tj t;

	tj_setup(&t, BS, DEV, JSTART, JBLOCKS, true);
	t.cfg.commit_interval_ms = 5;
	t.cfg.max_pinned = 160;
	tj_open(&t);
	for (int i = 0; i < THREADS; i++) {
		w[i] = (struct worker){ .t = &t, .id = i, .rng = 0x9E3779B97F4A7C15ull * (i + 1) };
		t_assert(!pthread_create(&th[i], NULL, run, &w[i]), "thread");
	}
	for (int i = 0; i < THREADS; i++)
		pthread_join(th[i], NULL);
	jnl_get_stats(t.j, &st);
	t_assert(st.pinned_max <= 160, "pinned %u pages, limit 160", st.pinned_max);
	tj_close(&t);
	for (int i = 0; i < THREADS; i++)
		for (uint32_t b = 0; b < PER; b++)
			t_assert(tj_holds(t.bd, BS, 100 + i * PER + b, w[i].last[b]),
				 "thread %d block %u", i, b);
	for (uint32_t b = 0; b < 4; b++) {
		uint64_t s = tj_stamp_of(t.bd, BS, SHARED0 + b);

		t_assert(s >= 1 && s <= THREADS, "shared block %u holds %lu", b,
			 (unsigned long)s);
	}
	printf("ok: %lu handles, %lu commits, %lu checkpoints, %lu waits for room, "
	       "at most %u pages pinned\n", (unsigned long)st.handles,
	       (unsigned long)st.commits, (unsigned long)st.checkpoints,
	       (unsigned long)st.log_full_waits, st.pinned_max);
	tj_teardown(&t);
}

T_MAIN_SETUP(mlog_set_level(MLOG_ERR), T_CASE(test_threads_last_content_home))
