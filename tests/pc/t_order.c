/*
 * t_order.c - the page cache's side of the daemon's lock order.
 *
 * pc_write_range / pc_wait_range, the halves a journal commit uses for
 * ordered data: the first must not wait behind another thread's writeback
 * pass (it takes no mapping writeback lock), the second must wait for
 * writes that pass started, and both must cover pages a pass has taken
 * but not yet handed to the owner.  And the per-thread lock counts the debug
 * check relies on: page locks taken and released, handed to readpage(s)
 * and writepage(s), the writeback lock inside writepages.
 */
#include "t_pc.h"

#include <errno.h>
#include <sched.h>
#include <unistd.h>

#define BS 4096u

/* Release builds keep no lock counts. */
#ifdef NDEBUG
static const bool counting = false;
#else
static const bool counting = true;
#endif

/* An owner whose writes of page 0 stay in flight until released. */
static struct {
	struct t_env e;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool in_pass, release;
	struct pc_page *held;            /* page 0, under writeback */
	_Atomic unsigned int locks_seen, wb_seen;
} S = { .lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER };

static int writepages(void *ctx, struct pc_mapping *m, struct pc_page **pages,
		      unsigned int n, const struct pc_wbc *wbc)
{
	struct pc_page *stall = NULL;

	(void)ctx;
	atomic_store(&S.locks_seen, pc_page_locks_held());
	atomic_store(&S.wb_seen, pc_wb_locks_held());
	for (unsigned int i = 0; i < n; i++) {
		if (pc_page_index(pages[i]) == 0 && !stall) {
			stall = pages[i];
			pc_set_page_writeback(stall);
			pc_unlock_page(stall);
			continue;
		}
		t_ok(pc_block_writepages(S.e.bd, pc_block_map_identity, NULL, m,
					 &pages[i], 1, wbc));
	}
	if (!stall)
		return 0;
	/* The pass (and the mapping's writeback lock) stays here until the
	 * test lets it go. */
	pthread_mutex_lock(&S.lock);
	S.in_pass = true;
	S.held = stall;
	pthread_cond_broadcast(&S.cond);
	while (!S.release)
		pthread_cond_wait(&S.cond, &S.lock);
	pthread_mutex_unlock(&S.lock);
	memcpy((char *)bdev_mem_data(S.e.bd), stall->data, BS);
	pc_end_page_writeback(stall, 0);
	return 0;
}

static int readpage(void *ctx, struct pc_page *p)
{
	(void)ctx;
	return pc_block_readpages(S.e.bd, pc_block_map_identity, NULL,
				  pc_page_mapping(p), &p, 1, NULL);
}

static int readpages(void *ctx, struct pc_mapping *m, struct pc_page **pages,
		     unsigned int n, const struct pc_rdc *rdc)
{
	(void)ctx;
	return pc_block_readpages(S.e.bd, pc_block_map_identity, NULL, m,
				  pages, n, rdc);
}

static const struct pc_mapping_ops ops = {
	.readpage = readpage,
	.readpages = readpages,
	.writepages = writepages,
};

static void dirty(struct pc_mapping *m, uint64_t index, unsigned char fill)
{
	struct pc_page *p;

	t_ok(pc_find_or_create_page(m, index, &p));
	memset(p->data, fill, BS);
	SetPageUptodate(p);
	pc_set_page_dirty(p);
	pc_unlock_page(p);
	pc_put_page(p);
}

static bool dev_holds(uint64_t block, unsigned char fill)
{
	const unsigned char *b = t_dev_block(&S.e, block);

	for (uint32_t i = 0; i < BS; i++)
		if (b[i] != fill)
			return false;
	return true;
}

static void *sync_page0(void *arg)
{
	struct pc_mapping *m = arg;

	t_ok(pc_write_and_wait_range(m, 0, BS));
	return NULL;
}

static _Atomic bool waited;

static void *wait_page0(void *arg)
{
	struct pc_mapping *m = arg;

	t_ok(pc_wait_range(m, 0, BS));
	atomic_store(&waited, true);
	return NULL;
}

/* A commit writes ordered data while another thread's pass is stuck. */
static void test_write_range(void)
{
	struct pc_config cfg = { .budget = T_BUDGET(256, BS), .no_flusher = true };
	struct pc_mapping *m;
	pthread_t sync_th, wait_th;

	t_env_init_cfg(&S.e, BS, 512, &cfg);
	t_ok(pc_mapping_create(S.e.c, &ops, NULL, &m));
	dirty(m, 0, 0xa0);
	dirty(m, 10, 0xa1);
	dirty(m, 11, 0xa2);

	sync_th = t_thread(sync_page0, m);
	pthread_mutex_lock(&S.lock);
	while (!S.in_pass)
		pthread_cond_wait(&S.cond, &S.lock);
	pthread_mutex_unlock(&S.lock);
	t_eq(atomic_load(&S.wb_seen), counting);

	/* The pass holds the mapping's writeback lock; this must not wait. */
	t_ok(pc_write_range(m, 10 * BS, 12 * BS));
	t_ok(pc_wait_range(m, 10 * BS, 12 * BS));
	t_assert(dev_holds(10, 0xa1) && dev_holds(11, 0xa2),
		 "pc_write_range wrote the range");
	t_eq(pc_page_locks_held(), 0);
	t_eq(pc_wb_locks_held(), 0);

	/* Page 0's write, started by the pass, is still in flight. */
	wait_th = t_thread(wait_page0, m);
	usleep(100 * 1000);
	t_assert(!atomic_load(&waited), "pc_wait_range waits for other passes");
	pthread_mutex_lock(&S.lock);
	S.release = true;
	pthread_cond_broadcast(&S.cond);
	pthread_mutex_unlock(&S.lock);
	t_join(wait_th);
	t_join(sync_th);
	t_assert(dev_holds(0, 0xa0), "page 0 written");
	t_ok(pc_write_range(m, 0, UINT64_MAX));        /* nothing dirty */
	pc_mapping_destroy(m);
	t_env_fini(&S.e);
	printf("ok: pc_write_range never waits behind a writeback pass\n");
}

/*
 * A pass hands its batch over some time after taking the pages (the
 * owner maps blocks first, maybe reading them): until then the pages are
 * locked, neither written nor under writeback.  A commit's
 * pc_write_range + pc_wait_range running meanwhile must still cover
 * them, or the commit block could reach the disk before ordered data
 * that a background pass happened to hold.
 */
static struct {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool taken, release;
} H = { .lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER };

static int slow_writepages(void *ctx, struct pc_mapping *m, struct pc_page **pages,
			   unsigned int n, const struct pc_wbc *wbc)
{
	(void)ctx;
	pthread_mutex_lock(&H.lock);
	H.taken = true;
	pthread_cond_broadcast(&H.cond);
	while (!H.release)
		pthread_cond_wait(&H.cond, &H.lock);
	pthread_mutex_unlock(&H.lock);
	return pc_block_writepages(S.e.bd, pc_block_map_identity, NULL, m, pages, n,
				   wbc);
}

static const struct pc_mapping_ops slow_ops = {
	.readpages = readpages,
	.writepages = slow_writepages,
};

static _Atomic bool commit_done, data_was_there;

static void *commit_page0(void *arg)
{
	struct pc_mapping *m = arg;

	t_ok(pc_write_range(m, 0, BS));
	t_ok(pc_wait_range(m, 0, BS));
	atomic_store(&data_was_there, dev_holds(0, 0xb0));
	atomic_store(&commit_done, true);
	return NULL;
}

static void test_pass_holding_pages(void)
{
	struct pc_config cfg = { .budget = T_BUDGET(256, BS), .no_flusher = true };
	struct pc_mapping *m;
	pthread_t pass_th, commit_th;

	t_env_init_cfg(&S.e, BS, 512, &cfg);
	t_ok(pc_mapping_create(S.e.c, &slow_ops, NULL, &m));
	dirty(m, 0, 0xb0);
	pass_th = t_thread(sync_page0, m);
	pthread_mutex_lock(&H.lock);
	while (!H.taken)
		pthread_cond_wait(&H.cond, &H.lock);
	pthread_mutex_unlock(&H.lock);
	commit_th = t_thread(commit_page0, m);
	usleep(100 * 1000);
	t_assert(!atomic_load(&commit_done), "pc_wait_range returned while "
		 "another pass held page 0, not yet written");
	pthread_mutex_lock(&H.lock);
	H.release = true;
	pthread_cond_broadcast(&H.cond);
	pthread_mutex_unlock(&H.lock);
	t_join(commit_th);
	t_join(pass_th);
	t_assert(atomic_load(&data_was_there), "page 0 was not on the device "
		 "when pc_wait_range returned");
	pc_mapping_destroy(m);
	t_env_fini(&S.e);
	printf("ok: pc_write_range and pc_wait_range cover pages a pass holds\n");
}

/* The counts the lock order's debug check reads. */
static void test_counts(void)
{
	struct pc_config cfg = { .budget = T_BUDGET(256, BS), .no_flusher = true };
	struct pc_mapping *m;
	struct pc_ra_state ra;
	struct pc_page *p, *q;

	if (!counting)
		t_skip_case("a release build keeps no lock counts");
	t_env_init_cfg(&S.e, BS, 512, &cfg);
	S.release = true;
	t_ok(pc_mapping_create(S.e.c, &ops, NULL, &m));
	t_eq(pc_page_locks_held(), 0);
	t_ok(pc_find_or_create_page(m, 3, &p));
	t_eq(pc_page_locks_held(), 1);
	t_ok(pc_find_or_create_page(m, 4, &q));
	t_eq(pc_page_locks_held(), 2);
	pc_unlock_page(q);
	pc_put_page(q);
	t_eq(pc_page_locks_held(), 1);
	pc_unlock_page(p);
	t_assert(pc_trylock_page(p), "trylock");
	t_eq(pc_page_locks_held(), 1);
	memset(p->data, 0x33, BS);
	SetPageUptodate(p);
	pc_set_page_dirty(p);
	pc_unlock_page(p);
	pc_put_page(p);
	t_eq(pc_page_locks_held(), 0);

	/* Reads hand the lock to the owner; readahead too. */
	t_ok(pc_read_cache_page(m, 20, &p));
	pc_put_page(p);
	pc_ra_init(&ra);
	t_ok(pc_read_page_ra(m, &ra, 0, 8, 64, &p));
	pc_put_page(p);
	t_eq(pc_page_locks_held(), 0);

	/* Writeback: the owner gets the pages locked, under the mapping's
	 * writeback lock, and both are gone when the pass returns. */
	t_ok(pc_sync_mapping(m));
	t_eq(atomic_load(&S.locks_seen), 1);
	t_eq(atomic_load(&S.wb_seen), 1);
	t_eq(pc_page_locks_held(), 0);
	t_eq(pc_wb_locks_held(), 0);
	t_assert(dev_holds(3, 0x33), "page 3 written");
	pc_mapping_destroy(m);
	t_env_fini(&S.e);
	printf("ok: page and writeback lock counts per thread\n");
}

/* A hang fails rather than stalls. */
T_MAIN_SETUP(alarm(30), T_CASE(test_write_range), T_CASE(test_pass_holding_pages),
	     T_CASE(test_counts))
