/*
 * t_mem_async.c - the memory device in asynchronous mode, under the
 * recording wrapper: requests complete from another thread, out of order;
 * a write enters the log when it completes, so the log's order is the
 * completion order; a flush completes only after everything submitted
 * before it, and the log puts every one of those writes before it;
 * bdev_flush covers only the writes completed when it is called, and
 * returns after the rest; a power cut drops queued writes (-EIO, no
 * change) and loses the unflushed ones; faults still fail their requests.
 */
#include "bdev_test.h"
#include "t_bdev.h"
#include "t_dev.h"

#include <stdatomic.h>
#include <string.h>

#define BS 1024u
#define NBLK 64u
#define SIZE (4 * NBLK * BS)
/* The most requests the device completes before it reports them. */
#define ASYNC_BURST 8u

/* Completion order of one batch: order[k] is the k-th request to finish. */
struct order {
	struct bdev_req reqs[NBLK + 1];
	struct bdev_req *rp[NBLK + 1];
	unsigned int order[NBLK + 1];
	atomic_uint n;
	struct t_batch batch;
};

static void order_end_io(struct bdev_req *req)
{
	struct order *o = req->private;

	o->order[atomic_fetch_add(&o->n, 1)] = (unsigned int)(req - o->reqs);
	req->private = &o->batch;
	t_batch_end_io(req);
}

/* Prepare @n one-block writes of @buf to blocks first.., with a flush at
 * position @flush_at (none if > n). */
static unsigned int prepare(struct order *o, unsigned char *buf, unsigned int first,
			    unsigned int n, unsigned int flush_at)
{
	unsigned int k = 0;

	t_assert(n < sizeof(o->reqs) / sizeof(o->reqs[0]), "%u requests", n);
	atomic_store(&o->n, 0);
	for (unsigned int i = 0; i < n; i++) {
		if (i == flush_at)
			bdev_req_init(&o->reqs[k++], BDEV_OP_FLUSH, 0, NULL, 0);
		bdev_req_init(&o->reqs[k++], BDEV_OP_WRITE, (uint64_t)(first + i) * BS,
			      buf + (size_t)i * BS, BS);
	}
	for (unsigned int i = 0; i < k; i++) {
		o->reqs[i].end_io = order_end_io;
		o->reqs[i].private = o;
		o->rp[i] = &o->reqs[i];
	}
	t_batch_init(&o->batch, k);
	return k;
}

static struct bdev *async_dev(unsigned int delay_us, uint64_t seed)
{
	struct bdev *bd;

	bd = t_dev_mem(SIZE, BS);
	t_ok(bdev_mem_async(bd, delay_us, seed));
	t_eq(bdev_mem_async(bd, delay_us, seed), -EINVAL);
	return bd;
}

/* Out of order, from another thread; the log follows completion. */
static void test_order_and_log(void)
{
	static struct order o;
	unsigned char *buf = t_alloc(NBLK * BS), *got = t_alloc(NBLK * BS);
	struct bdev *bd = async_dev(50, 1);
	unsigned int n, inversions = 0;

	t_fill(buf, NBLK * BS, 7);
	bdev_wrap_record(bd, true);
	n = prepare(&o, buf, 0, NBLK, UINT32_MAX);
	t_ok(bdev_submit(bd, o.rp, n));
	t_batch_wait(&o.batch);
	t_eq(o.batch.errors, 0);
	for (unsigned int k = 1; k < n; k++)
		inversions += o.order[k] < o.order[k - 1];
	t_assert(inversions > 0, "%u requests completed in submission order", n);
	t_eq(bdev_wrap_log_count(bd), n);
	for (unsigned int k = 0; k < n; k++)
		t_assert(bdev_wrap_log(bd, k)->off == (uint64_t)o.order[k] * BS,
			"log entry %u is block %llu, the %u-th completion was %u", k,
			(unsigned long long)(bdev_wrap_log(bd, k)->off / BS), k, o.order[k]);
	t_ok(bdev_read(bd, 0, got, NBLK * BS));
	t_assert(t_diff(buf, got, NBLK * BS) < 0, "read back differs");
	bdev_close(bd);
	bdev_free_buf(buf);
	bdev_free_buf(got);
}

/* A flush in a batch completes after everything before it, and covers it. */
static void test_flush_in_batch(void)
{
	static struct order o;
	unsigned char *buf = t_alloc(NBLK * BS);
	struct bdev *bd, *img;
	unsigned int n, half = NBLK / 2, flush_pos = 0, flush_log = 0;

	for (uint64_t seed = 1; seed <= 20; seed++) {
		bd = async_dev(20, seed);
		t_fill(buf, NBLK * BS, seed);
		bdev_wrap_record(bd, true);
		n = prepare(&o, buf, 0, NBLK, half);
		t_ok(bdev_submit(bd, o.rp, n));
		t_batch_wait(&o.batch);
		t_eq(o.batch.errors, 0);
		for (unsigned int k = 0; k < n; k++)
			if (o.order[k] == half)
				flush_pos = k;
		for (unsigned int k = flush_pos + 1; k < n; k++)
			t_assert(o.order[k] > half, "request %u (before the flush) "
				"completed after it", o.order[k]);
		for (unsigned int k = 0; k < bdev_wrap_log_count(bd); k++)
			if (bdev_wrap_log(bd, k)->flush)
				flush_log = k;
		t_assert(flush_log >= half, "flush at log entry %u", flush_log);
		/* What the flush covers survives a cut right after it. */
		t_ok(bdev_wrap_crash_image(bd, flush_log + 1, BDEV_CUT_LOSE_ALL, 0, &img));
		t_assert(t_diff(buf, bdev_mem_data(img), half * BS) < 0,
			"seed %llu: a write before the flush is not durable",
			(unsigned long long)seed);
		bdev_close(img);
		bdev_close(bd);
	}
	bdev_free_buf(buf);
}

/*
 * bdev_flush covers the writes completed when it is called and no others,
 * though it returns after all of them: after a cut, every write the log
 * has before its flush survives, and of those after it only the few the
 * device had completed but not yet reported when the flush was called
 * (one burst: the log puts a write whose end_io had not run after the
 * flush, which is true, if more than the device promised).
 */
static void test_bdev_flush(void)
{
	static struct order o;
	unsigned char *buf = t_alloc(NBLK * BS), *zero = t_alloc(BS);
	struct bdev *bd = async_dev(2000, 3);
	unsigned int n, late = 0, kept_late = 0;
	bool before = true;

	memset(zero, 0, BS);
	t_fill(buf, NBLK * BS, 11);
	bdev_wrap_record(bd, true);
	n = prepare(&o, buf, 0, NBLK, UINT32_MAX);
	t_ok(bdev_submit(bd, o.rp, n));
	t_ok(bdev_flush(bd));
	t_eq(atomic_load(&o.n), n);
	t_batch_wait(&o.batch);
	bdev_mem_power_cut(bd, BDEV_CUT_LOSE_ALL, 0);
	for (size_t k = 0; k < bdev_wrap_log_count(bd); k++) {
		const struct bdev_wrap_log_entry *e = bdev_wrap_log(bd, k);
		bool kept = !memcmp((char *)bdev_mem_data(bd) + e->off, buf + e->off, BS);

		if (e->flush) {
			before = false;
			continue;
		}
		late += !before;
		kept_late += !before && kept;
		t_assert(!before || kept, "block %llu, before the flush, lost",
			 (unsigned long long)(e->off / BS));
		t_assert(kept || !memcmp((char *)bdev_mem_data(bd) + e->off, zero, BS),
			 "block %llu holds neither", (unsigned long long)(e->off / BS));
	}
	t_assert(late > 0, "no write was still in flight at bdev_flush");
	t_assert(kept_late <= ASYNC_BURST, "%u writes after the flush survived", kept_late);
	bdev_close(bd);
	bdev_free_buf(buf);
	bdev_free_buf(zero);
}

/* A power cut drops queued writes and loses completed unflushed ones. */
static void test_power_cut(void)
{
	static struct order o;
	unsigned char *buf = t_alloc(NBLK * BS), *zero = t_alloc(NBLK * BS);
	struct bdev *bd = async_dev(20000, 5);
	unsigned int n;

	memset(zero, 0, NBLK * BS);
	t_fill(buf, NBLK * BS, 13);
	n = prepare(&o, buf, 0, NBLK, UINT32_MAX);
	t_ok(bdev_submit(bd, o.rp, n));
	bdev_mem_power_cut(bd, BDEV_CUT_LOSE_ALL, 0);
	t_batch_wait(&o.batch);
	t_assert(o.batch.errors > 0 && o.batch.first_error == -EIO,
		"%u queued writes failed, first with %d", o.batch.errors, o.batch.first_error);
	t_assert(t_diff(zero, bdev_mem_data(bd), NBLK * BS) < 0,
		"a write survived the cut");
	/* The device works on after the cut. */
	t_ok(bdev_write(bd, 0, buf, NBLK * BS));
	t_ok(bdev_flush(bd));
	bdev_mem_power_cut(bd, BDEV_CUT_LOSE_ALL, 0);
	t_assert(t_diff(buf, bdev_mem_data(bd), NBLK * BS) < 0, "flushed data lost");
	bdev_close(bd);
	bdev_free_buf(buf);
	bdev_free_buf(zero);
}

static void test_faults(void)
{
	unsigned char *buf = t_alloc(4 * BS);
	struct bdev *bd = async_dev(10, 9);

	t_fill(buf, 4 * BS, 17);
	t_ok(bdev_wrap_fail(bd, 2 * BS, BS, BDEV_WRAP_FAIL_WRITE | BDEV_WRAP_FAIL_FLUSH));
	t_eq(bdev_write(bd, 0, buf, 4 * BS), -EIO);
	t_ok(bdev_write(bd, 4 * BS, buf, 4 * BS));
	t_eq(bdev_flush(bd), -EIO);
	t_ok(bdev_wrap_fail(bd, 0, 0, 0));
	t_ok(bdev_flush(bd));
	bdev_close(bd);
	bdev_free_buf(buf);
}

T_MAIN(T_CASE(test_order_and_log), T_CASE(test_flush_in_batch), T_CASE(test_bdev_flush),
       T_CASE(test_power_cut), T_CASE(test_faults))
