/*
 * t_uring_wake.c - no completion is left in the ring with nobody woken.
 *
 * A thread waiting in bdev_submit_wait() reaps with the eventfd switched
 * off and switches it on again when its own requests are done; a
 * completion that lands in that moment belongs to another thread, whose
 * only hope is that the device thread wakes.  Here synchronous writers
 * (each reaping for itself whenever the queue is free), a thread whose
 * asynchronous requests nobody reaps but the device thread, and a
 * flusher all run at once on a buffered file, where completions are fast
 * enough to fall into that moment.  A watchdog fails the test when
 * nothing has completed for WATCHDOG_S seconds and prints the ring.
 */
#include "t_bdev.h"

#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define BS 4096u
#define NTHREADS 2u
#define ROUNDS 5000u
#define NASYNC 4u                /* requests of each asynchronous batch */
#define WATCHDOG_S 10

static atomic_ulong progress;
static atomic_bool finished;

struct writer {
	struct bdev *bd;
	unsigned int id;
	unsigned char *buf;
};

/*
 * Each round queues a batch that nobody waits for inside the block layer,
 * then writes one block synchronously (reaping with the eventfd off), then
 * waits for the batch: a completion of the batch that lands as the
 * synchronous write leaves can only reach it through the device thread.
 */
static void *writer_main(void *arg)
{
	struct writer *w = arg;
	struct bdev_req reqs[NASYNC], *rp[NASYNC];
	uint64_t first = (uint64_t)w->id * (NASYNC + 1);
	struct t_batch b;

	for (unsigned int r = 0; r < ROUNDS; r++) {
		t_batch_init(&b, NASYNC);
		for (unsigned int i = 0; i < NASYNC; i++) {
			bdev_req_init(&reqs[i], BDEV_OP_WRITE, (first + i) * BS,
				      w->buf, BS);
			reqs[i].end_io = t_batch_end_io;
			reqs[i].private = &b;
			rp[i] = &reqs[i];
		}
		t_ok(bdev_submit(w->bd, rp, NASYNC));
		t_ok(bdev_write(w->bd, (first + NASYNC) * BS, w->buf, BS));
		t_batch_wait(&b);
		t_assert(b.errors == 0, "asynchronous write failed: %d", b.first_error);
		atomic_fetch_add(&progress, 1);
	}
	return NULL;
}

static void *flusher(void *arg)
{
	struct bdev *bd = arg;

	while (!atomic_load(&finished)) {
		t_ok(bdev_flush(bd));
		atomic_fetch_add(&progress, 1);
	}
	return NULL;
}

static void *watchdog(void *arg)
{
	struct bdev *bd = arg;
	unsigned long last = (unsigned long)-1;
	int still = 0;

	while (!atomic_load(&finished)) {
		unsigned long now = atomic_load(&progress);

		still = now == last ? still + 1 : 0;
		last = now;
		if (still >= WATCHDOG_S * 10) {
			struct bdev_stats st;

			bdev_get_stats(bd, &st);
			fprintf(stderr, "no request completed for %d s after %lu operations "
				"(%llu writes, %llu flushes, %llu submissions): a completion "
				"waits in the ring and nobody was woken\n", WATCHDOG_S, now,
				(unsigned long long)st.writes, (unsigned long long)st.flushes,
				(unsigned long long)st.submits);
			_exit(1);
		}
		usleep(100 * 1000);
	}
	return NULL;
}

static void test_no_completion_left_unwoken(void)
{
	struct bdev_open_opts o = { .block_size = BS, .queue_depth = 16 };
	char *path = t_image("img", (uint64_t)NTHREADS * (NASYNC + 1) * BS);
	struct writer w[NTHREADS];
	pthread_t th[NTHREADS], fl, wd;
	struct bdev *bd;

	t_ok(bdev_open_uring(path, &o, &bd));
	t_assert(!pthread_create(&wd, NULL, watchdog, bd), "pthread_create");
	t_assert(!pthread_create(&fl, NULL, flusher, bd), "pthread_create");
	for (unsigned int i = 0; i < NTHREADS; i++) {
		w[i] = (struct writer){ .bd = bd, .id = i, .buf = t_alloc(BS) };
		memset(w[i].buf, 0x5a, BS);
		t_assert(!pthread_create(&th[i], NULL, writer_main, &w[i]), "pthread_create");
	}
	for (unsigned int i = 0; i < NTHREADS; i++)
		pthread_join(th[i], NULL);
	atomic_store(&finished, true);
	pthread_join(fl, NULL);
	pthread_join(wd, NULL);
	fprintf(stderr, "%u rounds, %lu operations in all (direct I/O: %s)\n",
		NTHREADS * ROUNDS, atomic_load(&progress), bd->direct ? "yes" : "no");
	bdev_close(bd);
	for (unsigned int i = 0; i < NTHREADS; i++)
		bdev_free_buf(w[i].buf);
	free(path);
}

T_MAIN(T_CASE(test_no_completion_left_unwoken))
