/*
 * loop.c - the request loop: one thread reads and serves requests while
 * it can, others take over only while it sleeps.
 *
 * libfuse's multithreaded loop keeps several threads asleep in read() on
 * /dev/fuse, and the kernel wakes them in turn: every request lands on a
 * thread that was asleep, and a reply is followed by a thread going to
 * sleep, so each request costs a switch to another thread besides the one
 * to the caller.  Most requests are answered from the cache without
 * sleeping, so here the thread that reads a request serves it too and
 * then reads the next, as a single-threaded loop does.  Only when it is
 * about to sleep (on I/O, a commit, a page another thread holds:
 * ut_blocking(), which the layers below call before every such wait; a
 * mutex is held too briefly to count) does it hand the reading
 * to another thread, woken or started for it.  That one serves the
 * requests that come meanwhile, so a request that waits never holds up
 * the others, and a thread that has served its request and finds the
 * role taken waits until it is needed again.
 *
 * Over /dev/fuse there is one reader role.  FUSE over io_uring has a
 * ring per CPU queue (transport.c), and each ring its own role: a reader
 * per CPU, each serving its CPU's callers as above.
 *
 * Requests of one role that do not sleep are thus served one at a time.
 * Handing over whenever more requests are queued (poll() after each read)
 * served them in parallel, but on two CPUs it lost more to the switches
 * than it won: four processes creating files in parallel made 25% fewer
 * files a second (bench/compare.sh measures such workloads).
 *
 * Lock order: l->lock is a leaf.  ut_blocking() runs under any lock of
 * the layers below and takes l->lock alone (pthread_create included).
 */
#include "fuse_ops.h"

#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "util.h"

#define LOOP_MAX_THREADS 32
#define LOOP_MAX_ROLES 16

struct loop {
	struct fuse_session *se;
	pthread_mutex_t lock;        /* all below */
	pthread_cond_t wake;         /* a follower is wanted as a reader */
	unsigned int nroles;         /* mfs_fuse_transport_roles() */
	uint32_t reading;            /* the roles some thread holds, a bit each */
	unsigned int idle;           /* followers waiting on wake */
	unsigned int wanted;         /* wakes sent and not yet taken */
	unsigned int starting;       /* threads started, not yet looking */
	unsigned int nthreads;
	pthread_t threads[LOOP_MAX_THREADS];
	bool done;
	int err;                     /* the receive error that ended it */
	sem_t finished;              /* posted when the loop ends */
};

/* For the statistics file: one loop per daemon. */
static _Atomic uint64_t handovers;
static _Atomic uint32_t threads_started;

/* A thread of the loop, on its own stack: its loop, its role and whether
 * it holds it now.  Its hook (ut_blocking) hands the role over. */
struct loop_thread {
	struct ut_blocker hook;
	struct loop *l;
	unsigned int role;
	bool reader;
};

static void *worker(void *arg);

/* l->lock held.  A thread that cannot be made leaves the role free: the
 * thread that gave it up reads again when it is done. */
static bool start_thread(struct loop *l)
{
	int err;

	if (l->done || l->nthreads == LOOP_MAX_THREADS)
		return false;
	err = pthread_create(&l->threads[l->nthreads], NULL, worker, l);
	if (err) {
		mlog_warn("request loop: no thread started: %s", strerror(err));
		return false;
	}
	l->nthreads++;
	l->starting++;
	atomic_fetch_add(&threads_started, 1);
	return true;
}

/* l->lock held: the first role no thread holds, or -1. */
static int free_role(const struct loop *l)
{
	for (unsigned int r = 0; r < l->nroles; r++)
		if (!(l->reading & (1u << r)))
			return (int)r;
	return -1;
}

/* l->lock held: get a thread to each role no thread holds. */
static void want_reader(struct loop *l)
{
	unsigned int nfree = l->nroles - (unsigned int)__builtin_popcount(l->reading);

	while (l->wanted + l->starting < nfree) {
		if (l->idle > l->wanted) {
			l->wanted++;
			pthread_cond_signal(&l->wake);
		} else if (!start_thread(l)) {
			break;
		}
	}
}

/* ut_blocking(): the reader is about to sleep; hand the role over. */
static void hand_over(struct ut_blocker *hook)
{
	struct loop_thread *t = ut_container_of(hook, struct loop_thread, hook);
	struct loop *l = t->l;

	if (!t->reader)
		return;
	t->reader = false;
	mfs_fuse_uring_handover();
	atomic_fetch_add(&handovers, 1);
	pthread_mutex_lock(&l->lock);
	l->reading &= ~(1u << t->role);
	want_reader(l);
	pthread_mutex_unlock(&l->lock);
}

/* l->lock held: wait until a role is free, or the loop is over; other
 * free roles (the transport may have just made more) get a thread too. */
static bool take_role(struct loop_thread *t)
{
	struct loop *l = t->l;
	int role;

	l->nroles = UT_MIN(mfs_fuse_transport_roles(), LOOP_MAX_ROLES);
	while ((role = free_role(l)) < 0 && !l->done) {
		l->idle++;
		pthread_cond_wait(&l->wake, &l->lock);
		l->idle--;
		if (l->wanted)
			l->wanted--;
	}
	if (l->done)
		return false;
	l->reading |= 1u << role;
	t->role = (unsigned int)role;
	t->reader = true;
	want_reader(l);
	return true;
}

/* l->lock held. */
static void finish(struct loop *l, int err)
{
	if (!l->done) {
		l->done = true;
		l->err = err;
		pthread_cond_broadcast(&l->wake);
		sem_post(&l->finished);
	}
}

static void free_buf(void *arg)
{
	free(((struct fuse_buf *)arg)->mem);
}

/* One request: read it (the only point where the thread may be
 * cancelled) and serve it.  Returns what the read returned. */
static int serve_one(struct loop *l, struct fuse_buf *buf)
{
	int res;

	pthread_setcancelstate(PTHREAD_CANCEL_ENABLE, NULL);
	res = fuse_session_receive_buf(l->se, buf);
	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, NULL);
	if (res > 0)
		fuse_session_process_buf(l->se, buf);
	return res;
}

static void *worker(void *arg)
{
	struct loop *l = arg;
	struct loop_thread t = { .hook.blocking = hand_over, .l = l };
	struct fuse_buf buf = { 0 };
	int res;

	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, NULL);
	ut_block_hook = &t.hook;
	pthread_cleanup_push(free_buf, &buf);
	pthread_mutex_lock(&l->lock);
	l->starting--;
	while (take_role(&t)) {
		pthread_mutex_unlock(&l->lock);
		mfs_fuse_transport_take(t.role);
		res = serve_one(l, &buf);
		pthread_mutex_lock(&l->lock);
		if (t.reader) {
			t.reader = false;
			l->reading &= ~(1u << t.role);
		}
		if (fuse_session_exited(l->se))
			finish(l, 0);
		else if (res < 0 && res != -EINTR && res != -EAGAIN)
			finish(l, res);
	}
	pthread_mutex_unlock(&l->lock);
	pthread_cleanup_pop(1);
	ut_block_hook = NULL;           /* t goes with this frame */
	return NULL;
}

void mfs_fuse_loop_stats(uint64_t *nhandovers, uint32_t *nthreads)
{
	*nhandovers = atomic_load(&handovers);
	*nthreads = atomic_load(&threads_started);
}

/* Sleep until the loop ends or a signal comes (false: it ended).  A
 * signal caught just before the sleep began is seen a second later. */
static bool wait_finished(struct loop *l)
{
	struct timespec until;

	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec++;
	return sem_timedwait(&l->finished, &until) != 0;
}

/*
 * Serve requests until the kernel ends the session or a signal asks to
 * stop.  The threads block the signals libfuse's handlers catch, so these
 * reach this thread, asleep in sem_timedwait() until then.  Stopping cancels
 * the thread asleep in read() and lets the others finish what they serve.
 */
int mfs_fuse_loop(struct fuse_session *se)
{
	struct loop l = { .se = se, .nroles = 1 };
	sigset_t block, old;

	pthread_mutex_init(&l.lock, NULL);
	pthread_cond_init(&l.wake, NULL);
	sem_init(&l.finished, 0, 0);
	sigemptyset(&block);
	sigaddset(&block, SIGINT);
	sigaddset(&block, SIGTERM);
	sigaddset(&block, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &block, &old);
	pthread_mutex_lock(&l.lock);
	start_thread(&l);
	if (!l.nthreads)
		finish(&l, -EAGAIN);
	pthread_mutex_unlock(&l.lock);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	while (!fuse_session_exited(se) && wait_finished(&l))
		;
	pthread_mutex_lock(&l.lock);
	finish(&l, 0);
	pthread_mutex_unlock(&l.lock);
	/* No thread is started once the loop is done: the list is final. */
	for (unsigned int i = 0; i < l.nthreads; i++) {
		pthread_cancel(l.threads[i]);
		pthread_join(l.threads[i], NULL);
	}
	sem_destroy(&l.finished);
	pthread_cond_destroy(&l.wake);
	pthread_mutex_destroy(&l.lock);
	return l.err;
}
