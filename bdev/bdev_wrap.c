/*
 * bdev_wrap.c - a device stacked on another, as e2fsprogs stacks its test
 * and undo I/O managers: it forwards every request to the device below
 * and, on the way, fails chosen ones with -EIO and records every write
 * and flush that completes, in memory (crash tests) or in a log file.
 *
 * Each request goes below as a request of the wrapper's own (struct
 * wrap_req) whose end_io records it, then ends the caller's.  The order
 * of the log is the order of completion, with one exception that keeps
 * it truthful (bdev.h, "the recording wrapper"): a write that completes
 * while a flush that does not cover it is in flight is held back
 * (w->held) and enters the log right after that flush.  Which writes a
 * flush covers:
 *   - a BDEV_OP_FLUSH, those submitted before it: every request gets a
 *     number at submission (w->nsub), and the submission lock makes that
 *     the order the device below sees;
 *   - bdev_flush(), those completed before the call: every completed
 *     write gets a number (w->ncmp).
 * A held write covered by a flush that completes enters the log before
 * that flush's entry; the others wait until no flush in flight leaves
 * them out, in the order they completed.
 *
 * Lock order (docs/DESIGN.md, level 8): a lower io_uring device's
 * cq_lock (its end_io, which may submit to us again), then w->sub_lock,
 * then the locks of the device below, then w->lock.  sub_lock is
 * recursive: the device below may complete a request inline, inside the
 * submission, and its end_io may submit again.  Nothing below is called
 * with w->lock held, nor any end_io; under it only memory copies and the
 * log file's pwritev.
 */
#include "bdev_i.h"

#include "util.h"

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Batches up to this size are forwarded without allocating arrays. */
#define STACK_REQS 16u

struct wrap_fault {
	uint64_t off, len;
	unsigned int ops;
};

/* bdev_wrap_fail_nth(): requests of @ops numbered from 1 after the call;
 * those numbered [from, from + count) fail. */
struct wrap_nth {
	unsigned int ops;
	uint64_t seen, from, count;
};

/* A flush in flight below, and which writes it covers. */
struct wrap_flush {
	struct ut_list link;
	bool batch;            /* BDEV_OP_FLUSH: those submitted before it */
	uint64_t mark;         /* its w->nsub, or w->ncmp when called */
};

/* A completed write or flush on its way into the log. */
struct wrap_rec {
	struct ut_list link;   /* on w->held */
	uint64_t sub, cmp;
	struct bdev_wrap_log_entry e;
	uint8_t data[];
};

/* What goes below in place of a caller's request. */
struct wrap_req {
	struct bdev_req req;
	struct wrap_bdev *w;
	struct bdev_req *upper;
	uint64_t sub;
	struct wrap_flush fl;  /* a BDEV_OP_FLUSH's */
};

struct wrap_bdev {
	struct bdev bd;
	struct bdev *lower;
	/* Lock order: sub_lock, the device below's locks, lock. */
	pthread_mutex_t sub_lock;   /* numbers and forwards submissions */
	pthread_mutex_t lock;       /* every field below */
	struct wrap_fault *faults;
	size_t nfaults, faults_cap;
	struct wrap_nth nth;
	uint64_t counts[3];         /* submitted: reads, writes, flushes */
	uint64_t failed;            /* requests failed by a fault */
	uint64_t nsub, ncmp;        /* requests submitted, writes completed */
	struct ut_list flushes;     /* struct wrap_flush in flight */
	struct ut_list held;        /* struct wrap_rec not yet in the log */
	bool recording;             /* into log */
	struct bdev_log log;
	int log_fd;                 /* the log file, or -1 */
	char *log_path;
	uint64_t log_off, log_seq;
	int log_err;                /* first error writing the log file */
};

static const struct bdev_ops wrap_ops;

static struct wrap_bdev *to_wrap(struct bdev *bd)
{
	assert(bd->ops == &wrap_ops);
	return ut_container_of(bd, struct wrap_bdev, bd);
}

/* ---- faults ------------------------------------------------------------- */

static bool wrap_faulty(const struct wrap_bdev *w, uint64_t off, uint64_t len,
			unsigned int op)
{
	for (size_t i = 0; i < w->nfaults; i++) {
		const struct wrap_fault *f = &w->faults[i];

		if ((f->ops & op) && off < f->off + f->len && f->off < off + len)
			return true;
	}
	return false;
}

static unsigned int wrap_op_bit(enum bdev_op op)
{
	return op == BDEV_OP_READ ? BDEV_WRAP_FAIL_READ :
	       op == BDEV_OP_WRITE ? BDEV_WRAP_FAIL_WRITE : BDEV_WRAP_FAIL_FLUSH;
}

/* Count one request of kind @bit and say whether the counting fault takes
 * it (w->lock held). */
static bool wrap_count_nth(struct wrap_bdev *w, unsigned int bit)
{
	struct wrap_nth *n = &w->nth;

	w->counts[__builtin_ctz(bit)]++;
	if (!(n->ops & bit))
		return false;
	n->seen++;
	return n->seen >= n->from && n->seen - n->from < n->count;
}

/* Whether @req fails by a fault, counting it (w->lock held). */
static bool wrap_req_faulty(struct wrap_bdev *w, const struct bdev_req *req)
{
	unsigned int bit = wrap_op_bit(req->op);
	bool bad = wrap_count_nth(w, bit);

	if (req->op == BDEV_OP_FLUSH)
		bad = bad || wrap_faulty(w, 0, UINT64_MAX, bit);
	else
		bad = bad || wrap_faulty(w, req->off, bdev_req_len(req), bit);
	w->failed += bad;
	return bad;
}

/* Room for one more fault (w->lock held). */
static int faults_room(struct wrap_bdev *w)
{
	size_t cap = w->faults_cap ? w->faults_cap * 2 : 8;
	struct wrap_fault *f;

	if (w->nfaults < w->faults_cap)
		return 0;
	f = realloc(w->faults, cap * sizeof(*f));
	if (!f)
		return -ENOMEM;
	w->faults = f;
	w->faults_cap = cap;
	return 0;
}

int bdev_wrap_fail(struct bdev *bd, uint64_t off, uint64_t len, unsigned int ops)
{
	struct wrap_bdev *w = to_wrap(bd);
	int err = 0;

	pthread_mutex_lock(&w->lock);
	if (!len)
		w->nfaults = 0;
	else if (!(err = faults_room(w)))
		w->faults[w->nfaults++] = (struct wrap_fault){ off,
			UT_MIN(len, UINT64_MAX - off), ops };
	pthread_mutex_unlock(&w->lock);
	return err;
}

int bdev_wrap_fail_nth(struct bdev *bd, unsigned int ops, uint64_t nth, uint64_t count)
{
	struct wrap_bdev *w = to_wrap(bd);

	pthread_mutex_lock(&w->lock);
	w->nth = (struct wrap_nth){ .ops = nth ? ops : 0, .from = nth, .count = count };
	pthread_mutex_unlock(&w->lock);
	return 0;
}

uint64_t bdev_wrap_failed(struct bdev *bd)
{
	struct wrap_bdev *w = to_wrap(bd);
	uint64_t n;

	pthread_mutex_lock(&w->lock);
	n = w->failed;
	pthread_mutex_unlock(&w->lock);
	return n;
}

uint64_t bdev_wrap_count(struct bdev *bd, unsigned int ops)
{
	struct wrap_bdev *w = to_wrap(bd);
	uint64_t sum = 0;

	pthread_mutex_lock(&w->lock);
	for (unsigned int i = 0; i < 3; i++)
		if (ops & (1u << i))
			sum += w->counts[i];
	pthread_mutex_unlock(&w->lock);
	return sum;
}

/* ---- the log ------------------------------------------------------------ */

static bool wrap_logging(const struct wrap_bdev *w)
{
	return w->recording || (w->log_fd >= 0 && !w->log_err);
}

static void rec_free(struct bdev_wrap_log_entry *e)
{
	free(ut_container_of(e, struct wrap_rec, e));
}

static void log_clear(struct bdev_log *log)
{
	for (size_t i = 0; i < log->n; i++)
		rec_free(log->ents[i]);
	log->n = 0;
	free(log->base);
	log->base = NULL;
}

/* Keep the first error writing the file; the log ends there. */
static void wrap_log_failed(struct wrap_bdev *w, int err)
{
	if (w->log_err)
		return;
	w->log_err = err;
	mlog_err("write log %s: %s; the log ends here and every later flush fails",
		 w->log_path ? w->log_path : "(memory)", strerror(-err));
}

static int log_push(struct bdev_log *log, struct wrap_rec *rec)
{
	struct bdev_wrap_log_entry **ents = log->ents;

	if (log->n == log->cap) {
		ents = realloc(ents, (log->cap ? log->cap * 2 : 64) * sizeof(*ents));
		if (!ents)
			return -ENOMEM;
		log->ents = ents;
		log->cap = log->cap ? log->cap * 2 : 64;
	}
	rec->e.seq = log->n;
	log->ents[log->n++] = &rec->e;
	return 0;
}

/* Put @rec at the end of the log: the file's, the memory's, or none
 * (w->lock held).  Takes @rec. */
static void wrap_append(struct wrap_bdev *w, struct wrap_rec *rec)
{
	int err;

	if (w->log_fd >= 0 && !w->log_err) {
		rec->e.seq = w->log_seq;
		err = bdev_logfile_append(w->log_fd, &w->log_off, &rec->e);
		if (err)
			wrap_log_failed(w, err);
		else
			w->log_seq++;
	}
	if (!w->recording || log_push(&w->log, rec)) {
		if (w->recording)
			wrap_log_failed(w, -ENOMEM);
		free(rec);
	}
}

static bool covers(const struct wrap_flush *fl, const struct wrap_rec *rec)
{
	return fl->batch ? rec->sub < fl->mark : rec->cmp < fl->mark;
}

/* Whether a flush in flight leaves @rec out (w->lock held). */
static bool wrap_blocked(const struct wrap_bdev *w, const struct wrap_rec *rec)
{
	struct ut_list *p;

	for (p = w->flushes.next; p != &w->flushes; p = p->next)
		if (!covers(ut_list_entry(p, struct wrap_flush, link), rec))
			return true;
	return false;
}

/* Move held writes into the log: those @fl covers (it just completed), or
 * with @fl NULL those no flush in flight leaves out, in order, up to the
 * first that one does (w->lock held). */
static void wrap_release(struct wrap_bdev *w, const struct wrap_flush *fl)
{
	struct ut_list *p, *t;

	ut_list_for_each_safe(p, t, &w->held) {
		struct wrap_rec *rec = ut_list_entry(p, struct wrap_rec, link);

		if (fl ? covers(fl, rec) : !wrap_blocked(w, rec)) {
			ut_list_del(&rec->link);
			wrap_append(w, rec);
		} else if (!fl) {
			break;
		}
	}
}

static struct wrap_rec *rec_new(const struct bdev_req *req)
{
	size_t len = req ? bdev_req_len(req) : 0;
	struct wrap_rec *rec = malloc(sizeof(*rec) + len);

	if (!rec)
		return NULL;
	*rec = (struct wrap_rec){ .e = { .flush = !req, .off = req ? req->off : 0,
					 .len = len, .data = rec->data } };
	ut_list_init(&rec->link);
	bdev_req_gather(rec->data, req);
	return rec;
}

/* A write of @r completed below: into the log, or held. */
static void wrap_write_done(struct wrap_bdev *w, const struct wrap_req *r)
{
	struct wrap_rec *rec;

	pthread_mutex_lock(&w->lock);
	w->ncmp++;
	if (wrap_logging(w)) {
		rec = rec_new(r->upper);
		if (!rec) {
			wrap_log_failed(w, -ENOMEM);
		} else {
			rec->sub = r->sub;
			rec->cmp = w->ncmp - 1;
			if (wrap_blocked(w, rec))
				ut_list_add_tail(&w->held, &rec->link);
			else
				wrap_append(w, rec);
		}
	}
	pthread_mutex_unlock(&w->lock);
}

static void wrap_flush_start(struct wrap_bdev *w, struct wrap_flush *fl, bool batch,
			     uint64_t mark)
{
	fl->batch = batch;
	fl->mark = mark;
	ut_list_add_tail(&w->flushes, &fl->link);
}

/* Flush @fl ended below with @err: its entry, after the writes it
 * covers; then whatever it held back.  Returns its result. */
static int wrap_flush_done(struct wrap_bdev *w, struct wrap_flush *fl, int err)
{
	struct wrap_rec *rec;

	pthread_mutex_lock(&w->lock);
	ut_list_del(&fl->link);
	if (!err && wrap_logging(w)) {
		wrap_release(w, fl);
		rec = rec_new(NULL);
		if (rec)
			wrap_append(w, rec);
		else
			wrap_log_failed(w, -ENOMEM);
	}
	wrap_release(w, NULL);
	if (!err && w->log_err)
		err = -EIO;
	pthread_mutex_unlock(&w->lock);
	return err;
}

/* ---- requests ----------------------------------------------------------- */

static void wrap_end_io(struct bdev_req *lreq)
{
	struct wrap_req *r = ut_container_of(lreq, struct wrap_req, req);
	struct bdev_req *up = r->upper;
	int res = lreq->result;

	if (lreq->op == BDEV_OP_WRITE && !res)
		wrap_write_done(r->w, r);
	else if (lreq->op == BDEV_OP_FLUSH)
		res = wrap_flush_done(r->w, &r->fl, res);
	up->result = res;
	up->done = res ? 0 : bdev_req_len(up);
	free(r);
	if (up->end_io)
		up->end_io(up);
}

static struct wrap_req *wrap_req_new(struct wrap_bdev *w, struct bdev_req *up)
{
	struct wrap_req *r = malloc(sizeof(*r));

	if (!r)
		return NULL;
	bdev_req_initv(&r->req, up->op, up->off, up->iov, up->iovcnt);
	r->req.end_io = wrap_end_io;
	r->w = w;
	r->upper = up;
	ut_list_init(&r->fl.link);
	return r;
}

/* Number the batch, sort out the faulty requests into @bad and the rest
 * into @low, and enter its flushes (sub_lock held).  Returns how many go
 * below. */
static unsigned int wrap_prepare(struct wrap_bdev *w, struct wrap_req **rs, unsigned int n,
				 struct bdev_req **low, struct wrap_req **bad,
				 unsigned int *nbad)
{
	unsigned int k = 0;

	*nbad = 0;
	pthread_mutex_lock(&w->lock);
	for (unsigned int i = 0; i < n; i++) {
		rs[i]->sub = w->nsub++;
		if (wrap_req_faulty(w, rs[i]->upper)) {
			bad[(*nbad)++] = rs[i];
			continue;
		}
		if (rs[i]->req.op == BDEV_OP_FLUSH)
			wrap_flush_start(w, &rs[i]->fl, true, rs[i]->sub);
		low[k++] = &rs[i]->req;
	}
	pthread_mutex_unlock(&w->lock);
	return k;
}

/* The device below refused the batch: nothing of it was done. */
static void wrap_unprepare(struct wrap_bdev *w, struct wrap_req **rs, unsigned int n)
{
	pthread_mutex_lock(&w->lock);
	for (unsigned int i = 0; i < n; i++) {
		ut_list_del(&rs[i]->fl.link);
		rs[i]->upper->result = rs[i]->req.result;
	}
	pthread_mutex_unlock(&w->lock);
}

static void wrap_fail_reqs(struct wrap_req **bad, unsigned int n)
{
	for (unsigned int i = 0; i < n; i++) {
		struct bdev_req *up = bad[i]->upper;

		free(bad[i]);
		up->result = -EIO;
		up->done = 0;
		if (up->end_io)
			up->end_io(up);
	}
}

/* Forward a batch whose wrap_reqs are made (@rs); -errno if the device
 * below refused it, and then no end_io ran and @rs is still ours. */
static int wrap_forward(struct wrap_bdev *w, struct wrap_req **rs, unsigned int n,
			struct bdev_waiter *waiter, struct wrap_req **bad,
			struct bdev_req **low)
{
	unsigned int k, nbad;
	int err = 0;

	pthread_mutex_lock(&w->sub_lock);
	k = wrap_prepare(w, rs, n, low, bad, &nbad);
	if (k)
		err = bdev_submit_for(w->lower, low, k, waiter);
	if (err)
		wrap_unprepare(w, rs, n);
	pthread_mutex_unlock(&w->sub_lock);
	if (!err)
		wrap_fail_reqs(bad, nbad);
	return err;
}

static int wrap_submit(struct bdev *bd, struct bdev_req **reqs, unsigned int n)
{
	struct wrap_bdev *w = to_wrap(bd);
	struct wrap_req *stack_rs[STACK_REQS], *stack_bad[STACK_REQS];
	struct bdev_req *stack_low[STACK_REQS];
	struct wrap_req **rs = stack_rs, **bad = stack_bad;
	struct bdev_req **low = stack_low;
	unsigned int made = 0;
	int err = -ENOMEM;

	if (n > STACK_REQS) {
		rs = malloc(n * sizeof(*rs));
		bad = malloc(n * sizeof(*bad));
		low = malloc(n * sizeof(*low));
	}
	if (rs && bad && low)
		for (made = 0; made < n && (rs[made] = wrap_req_new(w, reqs[made])); made++)
			;
	if (made == n)
		err = wrap_forward(w, rs, n, reqs[0]->waiter, bad, low);
	if (err)
		for (unsigned int i = 0; i < made; i++)
			free(rs[i]);
	else
		bdev_stat_add(bd, submits, 1);
	if (rs != stack_rs) {
		free(rs);
		free(bad);
		free(low);
	}
	return err;
}

static int wrap_flush(struct bdev *bd)
{
	struct wrap_bdev *w = to_wrap(bd);
	struct wrap_flush fl;
	bool faulty;

	pthread_mutex_lock(&w->lock);
	faulty = wrap_count_nth(w, BDEV_WRAP_FAIL_FLUSH) ||
		 wrap_faulty(w, 0, UINT64_MAX, BDEV_WRAP_FAIL_FLUSH);
	w->failed += faulty;
	if (!faulty)
		wrap_flush_start(w, &fl, false, w->ncmp);
	pthread_mutex_unlock(&w->lock);
	if (faulty)
		return -EIO;
	return wrap_flush_done(w, &fl, bdev_flush(w->lower));
}

static void wrap_wait(struct bdev *bd, struct bdev_waiter *waiter)
{
	struct wrap_bdev *w = to_wrap(bd);

	if (w->lower->ops->wait)
		w->lower->ops->wait(w->lower, waiter);
}

static struct bdev *wrap_lower(struct bdev *bd)
{
	return to_wrap(bd)->lower;
}

/* The log file is complete once the device below is closed: nothing is
 * in flight, so nothing is held back. */
static void wrap_close_file(struct wrap_bdev *w)
{
	if (w->log_fd < 0)
		return;
	if (fsync(w->log_fd))
		wrap_log_failed(w, -errno);
	if (close(w->log_fd))
		wrap_log_failed(w, -errno);
	w->log_fd = -1;
}

static void wrap_close(struct bdev *bd)
{
	struct wrap_bdev *w = to_wrap(bd);

	bdev_close(w->lower);
	pthread_mutex_lock(&w->lock);
	wrap_release(w, NULL);
	wrap_close_file(w);
	log_clear(&w->log);
	pthread_mutex_unlock(&w->lock);
	free(w->log.ents);
	free(w->faults);
	free(w->log_path);
	pthread_mutex_destroy(&w->lock);
	pthread_mutex_destroy(&w->sub_lock);
	free(w);
}

static const struct bdev_ops wrap_ops = {
	.name = "wrap",
	.submit = wrap_submit,
	.flush = wrap_flush,
	.close = wrap_close,
	.wait = wrap_wait,
	.lower = wrap_lower,
};

/* ---- setting up ---------------------------------------------------------- */

static int wrap_open_log(struct wrap_bdev *w, const char *path)
{
	int fd;

	w->log_path = strdup(path);
	if (!w->log_path)
		return -ENOMEM;
	fd = bdev_logfile_create(path, w->bd.size, w->bd.block_size);
	if (fd < 0)
		return fd;
	w->log_fd = fd;
	w->log_off = 64;  /* the header's size */
	return 0;
}

static void wrap_init_locks(struct wrap_bdev *w)
{
	pthread_mutexattr_t attr;

	pthread_mutexattr_init(&attr);
	pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_RECURSIVE);
	pthread_mutex_init(&w->sub_lock, &attr);
	pthread_mutexattr_destroy(&attr);
	pthread_mutex_init(&w->lock, NULL);
}

int bdev_wrap(struct bdev *lower, const struct bdev_wrap_opts *o, struct bdev **out)
{
	struct wrap_bdev *w = calloc(1, sizeof(*w));
	int err = 0;

	if (!w)
		return -ENOMEM;
	w->bd = (struct bdev){ .ops = &wrap_ops, .size = lower->size,
			       .block_size = lower->block_size, .dma_align = lower->dma_align,
			       .direct = lower->direct, .read_only = lower->read_only,
			       .fd = lower->fd, .flush_end = lower->flush_end,
			       .path = lower->path };
	w->lower = lower;
	w->log_fd = -1;
	w->log.size = lower->size;
	w->log.bs = lower->block_size;
	ut_list_init(&w->flushes);
	ut_list_init(&w->held);
	if (o && o->log_path)
		err = wrap_open_log(w, o->log_path);
	if (err) {
		free(w->log_path);
		free(w);
		return err;
	}
	wrap_init_locks(w);
	*out = &w->bd;
	return 0;
}

/* ---- recording in memory --------------------------------------------------- */

/* The whole contents of the device below, or NULL. */
static uint8_t *read_all(struct wrap_bdev *w)
{
	uint8_t *buf = bdev_alloc_buf(w->bd.size);
	int err;

	if (!buf || !w->bd.size)
		return buf;
	err = bdev_read(w->lower, 0, buf, w->bd.size);
	if (err) {
		mlog_err("write log: reading the contents to start from: %s", strerror(-err));
		bdev_free_buf(buf);
		return NULL;
	}
	return buf;
}

/* Lay the writes logged so far onto @base (if any) and empty the log
 * (w->lock held). */
static void log_fold(struct bdev_log *log, uint8_t *base)
{
	for (size_t i = 0; i < log->n; i++) {
		const struct bdev_wrap_log_entry *e = log->ents[i];

		if (base && !e->flush)
			memcpy(base + e->off, e->data, e->len);
		rec_free(log->ents[i]);
	}
	log->n = 0;
}

/*
 * The copy is read while writes may still complete below (a journal's
 * checkpoint writing home, say).  One that lands on a block already read
 * and completes before recording is on would be in neither the copy nor
 * the log, and a crash image would lose it while keeping what followed
 * (the superblock saying the log no longer needs it).  So the log starts
 * before the read, and the writes it caught meanwhile go into the copy:
 * every completed write is in one or the other.
 */
void bdev_wrap_record(struct bdev *bd, bool on)
{
	struct wrap_bdev *w = to_wrap(bd);
	uint8_t *base;

	pthread_mutex_lock(&w->lock);
	if (on)
		log_clear(&w->log);
	w->recording = on;
	pthread_mutex_unlock(&w->lock);
	if (!on)
		return;
	base = read_all(w);
	if (!base)
		mlog_err("write log: no memory to record");
	pthread_mutex_lock(&w->lock);
	log_fold(&w->log, base);
	w->log.base = base;
	w->recording = base != NULL;
	pthread_mutex_unlock(&w->lock);
}

size_t bdev_wrap_log_count(struct bdev *bd)
{
	struct wrap_bdev *w = to_wrap(bd);
	size_t n;

	pthread_mutex_lock(&w->lock);
	n = w->log.n;
	pthread_mutex_unlock(&w->lock);
	return n;
}

const struct bdev_wrap_log_entry *bdev_wrap_log(struct bdev *bd, size_t i)
{
	struct wrap_bdev *w = to_wrap(bd);
	const struct bdev_wrap_log_entry *e;

	pthread_mutex_lock(&w->lock);
	e = i < w->log.n ? w->log.ents[i] : NULL;
	pthread_mutex_unlock(&w->lock);
	return e;
}

int bdev_wrap_log_error(struct bdev *bd)
{
	struct wrap_bdev *w = to_wrap(bd);
	int err;

	pthread_mutex_lock(&w->lock);
	err = w->log_err;
	pthread_mutex_unlock(&w->lock);
	return err;
}

int bdev_wrap_log_of(struct bdev *bd, struct bdev_log **log, pthread_mutex_t **lock)
{
	struct wrap_bdev *w = to_wrap(bd);

	*log = &w->log;
	*lock = &w->lock;
	return 0;
}
