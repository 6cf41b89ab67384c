/*
 * bdev_mem.c - the in-memory test device.
 *
 * Reads see the newest completed writes.  Every write since the last
 * flush is kept as "pending" together with the bytes it overwrote, so a
 * power cut can roll the device back to the flushed state and then
 * replay a seeded choice of the pending writes.  When recording, every
 * write and flush is also appended to a log, and the contents at the
 * start of recording are kept, so that crash images can be rebuilt for
 * any prefix of the log.  One mutex guards everything; end_io runs
 * outside it.
 *
 * Asynchronous mode (bdev_mem_async) queues requests and carries them
 * out from a thread of the device, after random delays and in random
 * order.  A request takes effect when it completes: a write changes the
 * contents, becomes pending and enters the log then, so the log is the
 * order in which the device did things and a prefix of it is a moment a
 * power cut can strike.  A flush request waits until everything
 * submitted before it has completed, then covers every write completed by
 * then -- which may include writes submitted after it, as on a real
 * device.  bdev_flush() covers the writes completed when it is called and
 * then waits for the rest.  A write still queued is in no flush and in no
 * crash image; a power cut drops it (it completes with -EIO and changes
 * nothing).
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

struct mem_fault {
	uint64_t off, len;
	unsigned int ops;
};

/* A write since the last flush, with the bytes it replaced. */
struct mem_pending {
	uint64_t off;
	size_t len;
	uint8_t *data;
	uint8_t *old;
};

/* A log entry and its data in one allocation. */
struct mem_log_rec {
	struct bdev_mem_log_entry e;
	uint8_t data[];
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
	struct mem_fault *faults;
	size_t nfaults, faults_cap;
	struct mem_pending *pend;
	size_t npend, pend_cap;
	bool recording;
	uint8_t *base;                    /* contents when recording began */
	struct mem_log_rec **log;
	size_t nlog, log_cap;
};

static const struct bdev_ops mem_ops;

static struct mem_bdev *to_mem(struct bdev *bd)
{
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

/* splitmix64: small, and a different seed gives an unrelated stream. */
static uint64_t rng_next(uint64_t *state)
{
	uint64_t z = (*state += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* How many leading bytes of an unflushed write of @len survive a cut. */
static size_t cut_keep(uint64_t *rng, enum bdev_mem_cut mode, size_t len)
{
	uint64_t r;
	size_t sectors = len / SECTOR;

	if (mode == BDEV_CUT_LOSE_ALL)
		return 0;
	r = rng_next(rng);
	if (!(r & 1))
		return 0;
	if (mode != BDEV_CUT_RANDOM_TORN || sectors < 2 || !(r & 2))
		return len;
	return (size_t)(1 + (r >> 8) % (sectors - 1)) * SECTOR;
}

/* The choices of one power cut, drawn write after write in log order. */
struct cut {
	enum bdev_mem_cut mode;
	uint64_t rng;
	uint64_t rate;               /* BLOCKS: survivors per 16 blocks */
	uint32_t bs;
};

static void cut_init(struct cut *c, enum bdev_mem_cut mode, uint64_t seed, uint32_t bs)
{
	*c = (struct cut){ .mode = mode, .rng = seed, .bs = bs };
	/* From a cache that destaged almost nothing to one that lost a
	 * single block: both ends matter to a journal. */
	if (mode == BDEV_CUT_BLOCKS)
		c->rate = 1 + rng_next(&c->rng) % 15;
}

/* Lay onto @img what the cut keeps of an unflushed write. */
static void cut_apply(struct cut *c, uint8_t *img, uint64_t off,
		      const uint8_t *data, size_t len)
{
	if (c->mode != BDEV_CUT_BLOCKS) {
		memcpy(img + off, data, cut_keep(&c->rng, c->mode, len));
		return;
	}
	for (size_t at = 0; at < len; at += c->bs)
		if (rng_next(&c->rng) % 16 < c->rate)
			memcpy(img + off + at, data + at, UT_MIN((size_t)c->bs, len - at));
}

static void pending_clear(struct mem_bdev *m)
{
	for (size_t i = 0; i < m->npend; i++) {
		free(m->pend[i].data);
		free(m->pend[i].old);
	}
	m->npend = 0;
}

void bdev_mem_power_cut(struct bdev *bd, enum bdev_mem_cut mode, uint64_t seed)
{
	struct mem_bdev *m = to_mem(bd);
	struct cut c;

	cut_init(&c, mode, seed, bd->block_size);
	pthread_mutex_lock(&m->lock);
	for (size_t i = m->npend; i-- > 0;)
		memcpy(m->data + m->pend[i].off, m->pend[i].old, m->pend[i].len);
	for (size_t i = 0; i < m->npend; i++)
		cut_apply(&c, m->data, m->pend[i].off, m->pend[i].data, m->pend[i].len);
	pending_clear(m);
	m->cycle++;
	pthread_mutex_unlock(&m->lock);
}

/* ---- requests ------------------------------------------------------------- */

static bool mem_faulty(struct mem_bdev *m, uint64_t off, uint64_t len,
		       unsigned int op)
{
	for (size_t i = 0; i < m->nfaults; i++) {
		const struct mem_fault *f = &m->faults[i];

		if ((f->ops & op) && off < f->off + f->len && f->off < off + len)
			return true;
	}
	return false;
}

static void gather(uint8_t *dst, const struct bdev_req *req)
{
	for (unsigned int i = 0; i < req->iovcnt; i++) {
		memcpy(dst, req->iov[i].iov_base, req->iov[i].iov_len);
		dst += req->iov[i].iov_len;
	}
}

static void scatter(const struct bdev_req *req, const uint8_t *src)
{
	for (unsigned int i = 0; i < req->iovcnt; i++) {
		memcpy(req->iov[i].iov_base, src, req->iov[i].iov_len);
		src += req->iov[i].iov_len;
	}
}

static int log_append(struct mem_bdev *m, bool flush, uint64_t off,
		      const uint8_t *data, size_t len)
{
	struct mem_log_rec **log = grow(m->log, &m->log_cap, m->nlog, sizeof(*log));
	struct mem_log_rec *rec;

	if (!log)
		return -ENOMEM;
	m->log = log;
	rec = malloc(sizeof(*rec) + len);
	if (!rec)
		return -ENOMEM;
	rec->e = (struct bdev_mem_log_entry){ .seq = m->nlog, .flush = flush,
					      .off = off, .len = len, .data = rec->data };
	if (len)
		memcpy(rec->data, data, len);
	m->log[m->nlog++] = rec;
	return 0;
}

/* Apply a write, remembering it as pending (and in the log). */
static int mem_write(struct mem_bdev *m, const struct bdev_req *req, size_t len)
{
	struct mem_pending p = { req->off, len, malloc(len), malloc(len) };
	struct mem_pending *pend = grow(m->pend, &m->pend_cap, m->npend, sizeof(p));
	int err = -ENOMEM;

	if (pend)
		m->pend = pend;
	if (!p.data || !p.old || !pend)
		goto fail;
	gather(p.data, req);
	if (m->recording && (err = log_append(m, false, p.off, p.data, len)))
		goto fail;
	memcpy(p.old, m->data + p.off, len);
	memcpy(m->data + p.off, p.data, len);
	m->pend[m->npend++] = p;
	return 0;
fail:
	free(p.data);
	free(p.old);
	return err;
}

/* A read or write (lock held). */
static int mem_rw_locked(struct mem_bdev *m, struct bdev_req *req)
{
	bool rd = req->op == BDEV_OP_READ;
	size_t len = bdev_req_len(req);
	int err = 0;

	if (mem_faulty(m, req->off, len, rd ? BDEV_MEM_FAIL_READ : BDEV_MEM_FAIL_WRITE))
		err = -EIO;
	else if (rd)
		scatter(req, m->data + req->off);
	else
		err = mem_write(m, req, len);
	req->done = err ? 0 : len;
	return err;
}

/* Make every completed write durable (lock held).  A flush covers the
 * whole device, so any flush fault fails it. */
static int mem_flush_locked(struct mem_bdev *m)
{
	int err = 0;

	if (mem_faulty(m, 0, UINT64_MAX, BDEV_MEM_FAIL_FLUSH))
		err = -EIO;
	else if (m->recording)
		err = log_append(m, true, 0, NULL, 0);
	if (!err)
		pending_clear(m);
	return err;
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
	size_t i = (size_t)(rng_next(&m->rng) % m->nqueue);

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
	uint64_t us = m->max_delay_us ? rng_next(&m->rng) % (m->max_delay_us + 1u) : 0;
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
	size_t n = 1 + (size_t)(rng_next(&m->rng) % ASYNC_BURST);

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
			pthread_cond_wait(&m->work, &m->lock);
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
		pthread_cond_wait(&m->idle, &m->lock);
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

static void log_clear(struct mem_bdev *m)
{
	for (size_t i = 0; i < m->nlog; i++)
		free(m->log[i]);
	m->nlog = 0;
	free(m->base);
	m->base = NULL;
}

static void mem_close(struct bdev *bd)
{
	struct mem_bdev *m = to_mem(bd);

	mem_stop(m);
	pending_clear(m);
	log_clear(m);
	free(m->queue);
	free(m->pend);
	free(m->log);
	free(m->faults);
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
	err = file_xfer(fd, false, m->data, bd->size);
	pthread_mutex_unlock(&m->lock);
	if (close(fd) && !err)
		err = -errno;
	return err;
}

/* ---- faults and the log ------------------------------------------------- */

int bdev_mem_fail(struct bdev *bd, uint64_t off, uint64_t len, unsigned int ops)
{
	struct mem_bdev *m = to_mem(bd);
	struct mem_fault *f;
	int err = 0;

	pthread_mutex_lock(&m->lock);
	if (!len) {
		m->nfaults = 0;
	} else if ((f = grow(m->faults, &m->faults_cap, m->nfaults, sizeof(*f)))) {
		m->faults = f;
		f[m->nfaults++] = (struct mem_fault){ off, UT_MIN(len, UINT64_MAX - off), ops };
	} else {
		err = -ENOMEM;
	}
	pthread_mutex_unlock(&m->lock);
	return err;
}

void bdev_mem_record(struct bdev *bd, bool on)
{
	struct mem_bdev *m = to_mem(bd);

	pthread_mutex_lock(&m->lock);
	if (on) {
		log_clear(m);
		m->base = malloc(bd->size ? bd->size : 1);
		if (m->base)
			memcpy(m->base, m->data, bd->size);
		else
			mlog_err("memory device: no memory to record");
	}
	m->recording = on && m->base;
	pthread_mutex_unlock(&m->lock);
}

size_t bdev_mem_log_count(struct bdev *bd)
{
	struct mem_bdev *m = to_mem(bd);
	size_t n;

	pthread_mutex_lock(&m->lock);
	n = m->nlog;
	pthread_mutex_unlock(&m->lock);
	return n;
}

const struct bdev_mem_log_entry *bdev_mem_log(struct bdev *bd, size_t i)
{
	struct mem_bdev *m = to_mem(bd);
	const struct bdev_mem_log_entry *e;

	pthread_mutex_lock(&m->lock);
	e = i < m->nlog ? &m->log[i]->e : NULL;
	pthread_mutex_unlock(&m->lock);
	return e;
}

/* Replay log entries [0, prefix) of @m onto @img as a cut would leave them. */
static void replay(const struct mem_bdev *m, size_t prefix, enum bdev_mem_cut mode,
		   uint64_t seed, uint8_t *img)
{
	size_t durable = 0;
	struct cut c;

	cut_init(&c, mode, seed, m->bd.block_size);
	for (size_t i = 0; i < prefix; i++)
		if (m->log[i]->e.flush)
			durable = i + 1;
	for (size_t i = 0; i < prefix; i++) {
		const struct bdev_mem_log_entry *e = &m->log[i]->e;

		if (e->flush)
			continue;
		if (i < durable)
			memcpy(img + e->off, e->data, e->len);
		else
			cut_apply(&c, img, e->off, e->data, e->len);
	}
}

int bdev_mem_crash_image(struct bdev *bd, size_t prefix, enum bdev_mem_cut mode,
			 uint64_t seed, struct bdev **out)
{
	struct mem_bdev *m = to_mem(bd);
	struct bdev *nbd;
	int err;

	err = bdev_mem_create(bd->size, bd->block_size, &nbd);
	if (err)
		return err;
	pthread_mutex_lock(&m->lock);
	if (m->base) {
		memcpy(to_mem(nbd)->data, m->base, bd->size);
		replay(m, UT_MIN(prefix, m->nlog), mode, seed, to_mem(nbd)->data);
	} else {
		err = -EINVAL;  /* nothing was ever recorded */
	}
	pthread_mutex_unlock(&m->lock);
	if (err)
		bdev_close(nbd);
	else
		*out = nbd;
	return err;
}

/* ---- crash images in order ------------------------------------------- */

struct bdev_mem_crash {
	struct mem_bdev *m;
	uint32_t bs;
	size_t nblk;
	size_t at;                   /* entries [0, at) are in durable; a
	                                flush ends entry at - 1, or at is 0 */
	uint8_t *durable;            /* base and every write before at */
	uint8_t *work;               /* durable and what the cut kept */
	uint64_t *bhash;             /* each block's hash in durable */
	uint64_t sum;                /* the hash of durable */
	uint32_t *seen, epoch;       /* blocks counted in this image's hash */
	size_t from, to;             /* the unflushed entries laid on work */
};

static uint64_t block_hash(const uint8_t *p, size_t len)
{
	uint64_t h = 0x9e3779b97f4a7c15ull ^ len, w;

	for (size_t i = 0; i + 8 <= len; i += 8) {
		memcpy(&w, p + i, 8);
		h = (h ^ w) * 0xbf58476d1ce4e5b9ull;
		h ^= h >> 31;
	}
	return h;
}

/* A block's share of an image hash: a sum of shares, so that changing a
 * block costs one block's hash and not the image's. */
static uint64_t share(size_t blk, uint64_t h)
{
	uint64_t s = h ^ (blk * 0x94d049bb133111ebull);

	return rng_next(&s);
}

static void crash_set_block(struct bdev_mem_crash *c, size_t blk)
{
	uint64_t h = block_hash(c->durable + blk * c->bs, c->bs);

	c->sum += share(blk, h) - share(blk, c->bhash[blk]);
	c->bhash[blk] = h;
}

static void crash_reset(struct bdev_mem_crash *c)
{
	memcpy(c->durable, c->m->base, c->m->bd.size);
	memcpy(c->work, c->m->base, c->m->bd.size);
	c->sum = 0;
	for (size_t b = 0; b < c->nblk; b++) {
		c->bhash[b] = block_hash(c->durable + b * c->bs, c->bs);
		c->sum += share(b, c->bhash[b]);
	}
	c->at = c->from = c->to = 0;
}

int bdev_mem_crash_begin(struct bdev *bd, struct bdev_mem_crash **out)
{
	struct mem_bdev *m = to_mem(bd);
	struct bdev_mem_crash *c = calloc(1, sizeof(*c));
	size_t size = bd->size ? bd->size : 1;
	int err = -ENOMEM;

	if (!c)
		return err;
	*c = (struct bdev_mem_crash){ .m = m, .bs = bd->block_size,
				      .nblk = bd->size / bd->block_size };
	c->durable = malloc(size);
	c->work = malloc(size);
	c->bhash = calloc(c->nblk + 1, sizeof(*c->bhash));
	c->seen = calloc(c->nblk + 1, sizeof(*c->seen));
	pthread_mutex_lock(&m->lock);
	if (c->durable && c->work && c->bhash && c->seen)
		err = m->base ? 0 : -EINVAL;  /* -EINVAL: never recorded */
	if (!err)
		crash_reset(c);
	pthread_mutex_unlock(&m->lock);
	if (err)
		bdev_mem_crash_end(c);
	else
		*out = c;
	return err;
}

void bdev_mem_crash_end(struct bdev_mem_crash *c)
{
	if (!c)
		return;
	free(c->durable);
	free(c->work);
	free(c->bhash);
	free(c->seen);
	free(c);
}

/* Make work equal durable again (m->lock held). */
static void crash_undo(struct bdev_mem_crash *c)
{
	for (size_t i = c->from; i < c->to; i++) {
		const struct bdev_mem_log_entry *e = &c->m->log[i]->e;

		if (!e->flush)
			memcpy(c->work + e->off, c->durable + e->off, e->len);
	}
	c->from = c->to = c->at;
}

/* One past the last flush among the first @prefix entries, or c->at if
 * none lies at or after it (m->lock held). */
static size_t crash_durable_end(const struct bdev_mem_crash *c, size_t prefix)
{
	for (size_t i = prefix; i > c->at; i--)
		if (c->m->log[i - 1]->e.flush)
			return i;
	return c->at;
}

/* Carry durable and work forward to entry @to (m->lock held). */
static void crash_advance(struct bdev_mem_crash *c, size_t to)
{
	for (; c->at < to; c->at++) {
		const struct bdev_mem_log_entry *e = &c->m->log[c->at]->e;

		if (e->flush)
			continue;
		memcpy(c->durable + e->off, e->data, e->len);
		memcpy(c->work + e->off, e->data, e->len);
		for (size_t b = e->off / c->bs; b < (e->off + e->len) / c->bs; b++)
			crash_set_block(c, b);
	}
	c->from = c->to = c->at;
}

/* The hash of work: durable's, with the blocks the cut touched redone. */
static uint64_t crash_hash(struct bdev_mem_crash *c)
{
	uint64_t h = c->sum;

	if (++c->epoch == 0) {
		memset(c->seen, 0, (c->nblk + 1) * sizeof(*c->seen));
		c->epoch = 1;
	}
	for (size_t i = c->from; i < c->to; i++) {
		const struct bdev_mem_log_entry *e = &c->m->log[i]->e;

		for (size_t b = e->off / c->bs; !e->flush && b < (e->off + e->len) / c->bs; b++) {
			if (c->seen[b] == c->epoch)
				continue;
			c->seen[b] = c->epoch;
			h += share(b, block_hash(c->work + b * c->bs, c->bs)) -
			     share(b, c->bhash[b]);
		}
	}
	return h;
}

int bdev_mem_crash_next(struct bdev_mem_crash *c, size_t prefix,
			enum bdev_mem_cut mode, uint64_t seed, uint64_t *hash)
{
	struct mem_bdev *m = c->m;
	struct cut cut;
	size_t durable;

	pthread_mutex_lock(&m->lock);
	if (!m->base) {
		pthread_mutex_unlock(&m->lock);
		return -EINVAL;
	}
	prefix = UT_MIN(prefix, m->nlog);
	crash_undo(c);
	if (prefix < c->at)
		crash_reset(c);
	durable = crash_durable_end(c, prefix);
	crash_advance(c, durable);
	cut_init(&cut, mode, seed, c->bs);
	for (size_t i = durable; i < prefix; i++) {
		const struct bdev_mem_log_entry *e = &m->log[i]->e;

		if (!e->flush)
			cut_apply(&cut, c->work, e->off, e->data, e->len);
	}
	c->to = prefix;
	*hash = crash_hash(c);
	pthread_mutex_unlock(&m->lock);
	return 0;
}

int bdev_mem_crash_copy(struct bdev_mem_crash *c, struct bdev *img)
{
	struct mem_bdev *d = to_mem(img);

	if (img->size != c->m->bd.size || img->block_size != c->bs)
		return -EINVAL;
	pthread_mutex_lock(&d->lock);
	pending_clear(d);
	memcpy(d->data, c->work, img->size);
	pthread_mutex_unlock(&d->lock);
	return 0;
}

void *bdev_mem_data(struct bdev *bd)
{
	return to_mem(bd)->data;
}
