/*
 * bdev_mem.c - the in-memory test device.
 *
 * Reads see the newest completed writes.  Every write since the last
 * flush is kept as "pending" together with the bytes it overwrote, so a
 * power cut can roll the device back to the flushed state and then
 * replay a seeded choice of the pending writes (bdev_cut.c chooses, as it
 * does for the crash images of a wrapper's log).  Faults and the write
 * log are the wrapper's (bdev_wrap.c), which stacks on this device as on
 * any other.  One mutex guards everything; end_io runs outside it.
 *
 * Asynchronous mode (bdev_mem_async) queues requests and carries them
 * out from a thread of the device, after random delays and in random
 * order.  A request takes effect when it completes: a write changes the
 * contents and becomes pending then.  A flush request waits until everything
 * submitted before it has completed, then covers every write completed by
 * then -- which may include writes submitted after it, as on a real
 * device.  bdev_flush() covers the writes completed when it is called and
 * then waits for the rest.  A write still queued is in no flush and in no
 * crash image; a power cut drops it (it completes with -EIO and changes
 * nothing).
 *
 * Lock order: m->lock is the innermost lock of the layer; nothing is
 * called with it held but memory copies.
 */
#include "bdev_i.h"

#include "util.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define SECTOR 512u
/* Asynchronous mode completes up to this many requests per delay. */
#define ASYNC_BURST 8u

/* A write since the last flush, with the bytes it replaced. */
struct mem_pending {
	uint64_t off;
	size_t len;
	uint8_t *data;
	uint8_t *old;
};

/* A request queued in asynchronous mode, with the power cycle it was
 * submitted in: a cut drops what an earlier cycle queued. */
struct mem_queued {
	struct bdev_req *req;
	uint64_t cycle;
	bool barrier;        /* bdev_flush's wait: the flush itself is done */
};

struct mem_bdev {
	struct bdev bd;
	pthread_mutex_t lock;
	/* asynchronous mode: the queue in submission order, and its thread */
	bool async, stopping;
	pthread_t thread;
	pthread_cond_t work, idle;
	struct mem_queued *queue;
	size_t nqueue, queue_cap;
	uint64_t cycle;                   /* power cuts so far */
	uint64_t rng;
	unsigned int max_delay_us;
	uint8_t *data;
	struct mem_pending *pend;
	size_t npend, pend_cap;
};

static const struct bdev_ops mem_ops;

/* The memory device of @bd, or at the bottom of @bd's stack. */
static struct mem_bdev *to_mem(struct bdev *bd)
{
	bd = bdev_bottom(bd);
	assert(bd->ops == &mem_ops);
	return ut_container_of(bd, struct mem_bdev, bd);
}

/* Room for element @n of a growing array: the array, or NULL. */
static void *grow(void *arr, size_t *cap, size_t n, size_t elem)
{
	size_t ncap = *cap ? *cap * 2 : 16;

	if (n < *cap)
		return arr;
	arr = realloc(arr, ncap * elem);
	if (arr)
		*cap = ncap;
	return arr;
}

/* ---- power cuts ----------------------------------------------------------- */

static void pending_clear(struct mem_bdev *m)
{
	for (size_t i = 0; i < m->npend; i++) {
		free(m->pend[i].data);
		free(m->pend[i].old);
	}
	m->npend = 0;
}

void bdev_mem_power_cut(struct bdev *bd, enum bdev_cut mode, uint64_t seed)
{
	struct mem_bdev *m = to_mem(bd);
	struct bdev_cut_state c;

	bdev_cut_init(&c, mode, seed, m->bd.block_size);
	pthread_mutex_lock(&m->lock);
	for (size_t i = m->npend; i-- > 0;)
		memcpy(m->data + m->pend[i].off, m->pend[i].old, m->pend[i].len);
	for (size_t i = 0; i < m->npend; i++)
		bdev_cut_apply(&c, m->data, m->pend[i].off, m->pend[i].data, m->pend[i].len);
	pending_clear(m);
	m->cycle++;
	pthread_mutex_unlock(&m->lock);
}

/* ---- requests ------------------------------------------------------------- */

/* Apply a write, remembering it as pending. */
static int mem_write(struct mem_bdev *m, const struct bdev_req *req, size_t len)
{
	struct mem_pending p = { req->off, len, malloc(len), malloc(len) };
	struct mem_pending *pend = grow(m->pend, &m->pend_cap, m->npend, sizeof(p));
	if (pend)
		m->pend = pend;
	if (!p.data || !p.old || !pend)
		goto fail;
	bdev_req_gather(p.data, req);
	memcpy(p.old, m->data + p.off, len);
	memcpy(m->data + p.off, p.data, len);
	m->pend[m->npend++] = p;
	return 0;
fail:
	free(p.data);
	free(p.old);
	return -ENOMEM;
}

/* A read or write (lock held). */
static int mem_rw_locked(struct mem_bdev *m, struct bdev_req *req)
{
	bool rd = req->op == BDEV_OP_READ;
	size_t len = bdev_req_len(req);
	int err = 0;

	if (rd)
		bdev_req_scatter(req, m->data + req->off);
	else
		err = mem_write(m, req, len);
	req->done = err ? 0 : len;
	return err;
}

/* Make every completed write durable (lock held). */
static int mem_flush_locked(struct mem_bdev *m)
{
	pending_clear(m);
	return 0;
}

static int mem_rw_one(struct bdev *bd, struct bdev_req *req)
{
	struct mem_bdev *m = to_mem(bd);
	int err;

	pthread_mutex_lock(&m->lock);
	err = mem_rw_locked(m, req);
	pthread_mutex_unlock(&m->lock);
	return err;
}

/* ---- asynchronous mode ------------------------------------------------ */

/* Queue a batch for the device thread; all of it or, without memory,
 * none of it. */
static int mem_enqueue(struct mem_bdev *m, struct bdev_req **reqs, unsigned int n)
{
	struct mem_queued *q;
	size_t cap = m->queue_cap;

	while (cap < m->nqueue + n)
		cap = cap ? cap * 2 : 64;
	if (cap != m->queue_cap) {
		q = realloc(m->queue, cap * sizeof(*q));
		if (!q)
			return -ENOMEM;
		m->queue = q;
		m->queue_cap = cap;
	}
	for (unsigned int i = 0; i < n; i++)
		m->queue[m->nqueue++] = (struct mem_queued){ reqs[i], m->cycle, false };
	pthread_cond_signal(&m->work);
	return 0;
}

/* A random queued request that may complete now: a flush only once
 * everything submitted before it has completed (it is then first). */
static size_t mem_pick(struct mem_bdev *m)
{
	size_t i = (size_t)(bdev_rng_next(&m->rng) % m->nqueue);

	while (i > 0 && m->queue[i].req->op == BDEV_OP_FLUSH)
		i--;
	return i;
}

/* Carry out queued request @i and take it off the queue (lock held). */
static struct bdev_req *mem_complete(struct mem_bdev *m, size_t i)
{
	struct mem_queued q = m->queue[i];

	memmove(&m->queue[i], &m->queue[i + 1], (m->nqueue - i - 1) * sizeof(q));
	m->nqueue--;
	if (q.cycle != m->cycle)
		q.req->result = -EIO;  /* the power went while it was queued */
	else if (q.barrier)
		q.req->result = 0;
	else if (q.req->op == BDEV_OP_FLUSH)
		q.req->result = mem_flush_locked(m);
	else
		q.req->result = mem_rw_locked(m, q.req);
	return q.req;
}

/* Sleep up to max_delay_us without the lock. */
static void mem_delay(struct mem_bdev *m)
{
	uint64_t us = m->max_delay_us ? bdev_rng_next(&m->rng) % (m->max_delay_us + 1u) : 0;
	struct timespec ts = { (time_t)(us / 1000000u), (long)(us % 1000000u) * 1000 };

	pthread_mutex_unlock(&m->lock);
	if (us)
		nanosleep(&ts, NULL);
	pthread_mutex_lock(&m->lock);
}

/* Complete a random burst of queued requests, then run their end_io
 * without the lock (they may submit more). */
static void mem_burst(struct mem_bdev *m)
{
	struct bdev_req *done[ASYNC_BURST];
	size_t n = 1 + (size_t)(bdev_rng_next(&m->rng) % ASYNC_BURST);

	n = UT_MIN(n, m->nqueue);
	for (size_t k = 0; k < n; k++)
		done[k] = mem_complete(m, mem_pick(m));
	pthread_mutex_unlock(&m->lock);
	for (size_t k = 0; k < n; k++)
		if (done[k]->end_io)
			done[k]->end_io(done[k]);
	pthread_mutex_lock(&m->lock);
}

static void *mem_thread(void *arg)
{
	struct mem_bdev *m = arg;

	pthread_mutex_lock(&m->lock);
	for (;;) {
		while (!m->nqueue && !m->stopping)
			ut_cond_wait(&m->work, &m->lock);
		if (!m->nqueue)
			break;
		mem_delay(m);
		mem_burst(m);
		if (!m->nqueue)
			pthread_cond_broadcast(&m->idle);
	}
	pthread_mutex_unlock(&m->lock);
	return NULL;
}

static void mem_flush_done(struct bdev_req *req)
{
	bdev_waiter_done(req->private);
}

/*
 * bdev_flush() in asynchronous mode covers the writes completed when it is
 * called, as bdev.h promises, and not those in flight; it returns once
 * those have completed too, as a flush of the io_uring backend does.  The
 * wait is a flush request through the queue that flushes nothing more.
 */
static int mem_flush_async(struct mem_bdev *m)
{
	struct bdev_req req, *r = &req;
	struct bdev_waiter w;
	int err;

	bdev_req_init(&req, BDEV_OP_FLUSH, 0, NULL, 0);
	req.end_io = mem_flush_done;
	req.private = &w;
	bdev_waiter_init(&w, 1);
	pthread_mutex_lock(&m->lock);
	err = mem_flush_locked(m);
	if (!err)
		err = mem_enqueue(m, &r, 1);
	if (!err)
		m->queue[m->nqueue - 1].barrier = true;
	pthread_mutex_unlock(&m->lock);
	if (err)
		w.left = 0;
	bdev_waiter_wait(&w);
	return err ? err : req.result;
}

int bdev_mem_async(struct bdev *bd, unsigned int max_delay_us, uint64_t seed)
{
	struct mem_bdev *m = to_mem(bd);
	int err = 0;

	pthread_mutex_lock(&m->lock);
	if (m->async) {
		err = -EINVAL;
	} else {
		m->rng = seed;
		m->max_delay_us = max_delay_us;
		err = -pthread_create(&m->thread, NULL, mem_thread, m);
		m->async = !err;
	}
	pthread_mutex_unlock(&m->lock);
	return err;
}

/* Wait until the queue is empty and stop the device thread. */
static void mem_stop(struct mem_bdev *m)
{
	pthread_mutex_lock(&m->lock);
	if (!m->async) {
		pthread_mutex_unlock(&m->lock);
		return;
	}
	while (m->nqueue)
		ut_cond_wait(&m->idle, &m->lock);
	m->stopping = true;
	pthread_cond_signal(&m->work);
	pthread_mutex_unlock(&m->lock);
	pthread_join(m->thread, NULL);
}

/* ---- the ops ----------------------------------------------------------- */

static int mem_flush(struct bdev *bd)
{
	struct mem_bdev *m = to_mem(bd);
	int err;

	pthread_mutex_lock(&m->lock);
	if (m->async) {
		pthread_mutex_unlock(&m->lock);
		return mem_flush_async(m);
	}
	err = mem_flush_locked(m);
	pthread_mutex_unlock(&m->lock);
	return err;
}

static int mem_submit(struct bdev *bd, struct bdev_req **reqs, unsigned int n)
{
	struct mem_bdev *m = to_mem(bd);
	int err;

	pthread_mutex_lock(&m->lock);
	if (!m->async) {
		pthread_mutex_unlock(&m->lock);
		return bdev_submit_inline(bd, reqs, n, mem_rw_one);
	}
	err = mem_enqueue(m, reqs, n);
	pthread_mutex_unlock(&m->lock);
	if (!err)
		bdev_stat_add(bd, submits, 1);
	return err;
}

static void mem_close(struct bdev *bd)
{
	struct mem_bdev *m = to_mem(bd);

	mem_stop(m);
	pending_clear(m);
	free(m->queue);
	free(m->pend);
	free(m->data);
	pthread_cond_destroy(&m->work);
	pthread_cond_destroy(&m->idle);
	pthread_mutex_destroy(&m->lock);
	free(m);
}

static const struct bdev_ops mem_ops = {
	.name = "mem",
	.submit = mem_submit,
	.flush = mem_flush,
	.close = mem_close,
};

/* ---- creating, loading, saving ---------------------------------------- */

int bdev_mem_create(uint64_t size, uint32_t block_size, struct bdev **out)
{
	struct mem_bdev *m;

	block_size = block_size ? block_size : 1024;
	if (!UT_IS_POW2(block_size) || block_size < SECTOR)
		return -EINVAL;
	size -= size % block_size;
	m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	m->data = calloc(1, size ? (size_t)size : 1);
	if (!m->data) {
		free(m);
		return -ENOMEM;
	}
	pthread_mutex_init(&m->lock, NULL);
	pthread_cond_init(&m->work, NULL);
	pthread_cond_init(&m->idle, NULL);
	m->bd.ops = &mem_ops;
	m->bd.size = size;
	m->bd.block_size = block_size;
	m->bd.dma_align = BDEV_MIN_DMA_ALIGN;
	m->bd.fd = -1;
	*out = &m->bd;
	return 0;
}

/* Read or write all of [buf, buf+len) at file offset 0. */
static int file_xfer(int fd, bool rd, uint8_t *buf, size_t len)
{
	size_t done = 0;
	ssize_t n;

	while (done < len) {
		n = rd ? pread(fd, buf + done, len - done, (off_t)done)
		       : pwrite(fd, buf + done, len - done, (off_t)done);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		done += (size_t)n;
	}
	return 0;
}

int bdev_mem_load(const char *path, uint32_t block_size, struct bdev **out)
{
	struct stat st;
	struct bdev *bd;
	int fd, err;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	err = fstat(fd, &st) ? -errno : bdev_mem_create((uint64_t)st.st_size, block_size, &bd);
	if (!err) {
		err = file_xfer(fd, true, to_mem(bd)->data, bd->size);
		if (err)
			bdev_close(bd);
		else
			*out = bd;
	}
	close(fd);
	return err;
}

int bdev_mem_save(struct bdev *bd, const char *path)
{
	struct mem_bdev *m = to_mem(bd);
	int fd, err;

	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return -errno;
	pthread_mutex_lock(&m->lock);
	err = file_xfer(fd, false, m->data, m->bd.size);
	pthread_mutex_unlock(&m->lock);
	if (close(fd) && !err)
		err = -errno;
	return err;
}

/* ---- access ------------------------------------------------------------ */

int bdev_mem_set_contents(struct bdev *bd, const void *data, uint64_t size,
			  uint32_t bs)
{
	struct mem_bdev *d = to_mem(bd);

	if (d->bd.size != size || d->bd.block_size != bs)
		return -EINVAL;
	pthread_mutex_lock(&d->lock);
	pending_clear(d);
	memcpy(d->data, data, size);
	pthread_mutex_unlock(&d->lock);
	return 0;
}

void *bdev_mem_data(struct bdev *bd)
{
	return bdev_bottom(bd)->ops == &mem_ops ? to_mem(bd)->data : NULL;
}
