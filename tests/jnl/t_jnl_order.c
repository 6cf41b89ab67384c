/*
 * t_jnl_order.c - the lock order of the journal and the page cache.
 *
 * The scenario of the ordered-mode self-deadlock: fsync writes a file's
 * pages back; the owner's writepages (pages locked, the mapping's
 * writeback lock held) starts a handle; the running transaction is full,
 * so jnl_start commits it in the calling thread, and the commit writes
 * the ordered data of that very mapping.  It runs in a child process
 * with an alarm, so that a hang fails the test instead of stalling it.
 */
#include "bdev_test.h"
#include "t_jnl.h"

#include <endian.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "util.h"

#define BS       4096u
#define DEV      4096u
#define JSTART   100u
#define JBLOCKS  1024u
#define DATA0    2048u          /* file page i lives in device block DATA0 + i */
#define BITMAP   20u            /* the metadata block an allocation changes */
#define CHILD_ALARM 10u

/* Release builds do not check the lock order. */
#ifdef NDEBUG
static const bool checked = false;
#else
static const bool checked = true;
#endif

/* ---- a file whose writeback starts a handle (the old contract) ----------- */

struct file {
	struct tj *t;
	struct pc_mapping *m;
	struct jnl_inode ji;
};

static struct file F;

static int file_map(void *ctx, struct pc_mapping *m, uint64_t index,
		    bool write, uint64_t *block)
{
	*block = DATA0 + index;
	return 0;
}

/* Allocate the file's blocks at writeback time, under a handle. */
static int alloc_writepages(void *ctx, struct pc_mapping *m,
			    struct pc_page **pages, unsigned int n,
			    const struct pc_wbc *wbc)
{
	struct file *f = ctx;
	struct jnl_handle h;
	int err = jnl_start(f->t->j, 1, &h);

	if (!err) {
		tj_write(f->t, &h, BITMAP, 7);
		err = jnl_add_ordered(&h, &f->ji);
		int err2 = jnl_stop(&h);

		err = err ? err : err2;
	}
	if (err) {
		for (unsigned int i = 0; i < n; i++) {
			pc_set_page_dirty_default(pages[i]);
			pc_unlock_page(pages[i]);
		}
		return err;
	}
	return pc_block_writepages(f->t->bd, file_map, NULL, m, pages, n, wbc);
}

static int file_readpages(void *ctx, struct pc_mapping *m,
			  struct pc_page **pages, unsigned int n,
			  const struct pc_rdc *rdc)
{
	struct file *f = ctx;

	return pc_block_readpages(f->t->bd, file_map, NULL, m, pages, n, rdc);
}

static int file_readpage(void *ctx, struct pc_page *page)
{
	return file_readpages(ctx, pc_page_mapping(page), &page, 1, NULL);
}

static const struct pc_mapping_ops alloc_ops = {
	.readpage = file_readpage,
	.readpages = file_readpages,
	.writepages = alloc_writepages,
};

/* The old ordered-data callback: fsync the file. */
static int sync_ordered(void *arg, struct jnl_inode *ji)
{
	struct file *f = arg;

	return pc_sync_mapping(f->m);
}

/* ---- helpers --------------------------------------------------------------- */

static pthread_t t_thread_start(void *(*fn)(void *), void *arg)
{
	pthread_t th;

	t_assert(pthread_create(&th, NULL, fn, arg) == 0, "pthread_create");
	return th;
}

static void *jnl_stop_thunk(void *arg)
{
	jnl_stop(arg);
	return NULL;
}

/* The most credits one handle may ask for (jnl_start refuses more). */
static uint32_t max_credits(struct jnl *j)
{
	uint32_t lo = 1, hi = JBLOCKS;
	struct jnl_handle h;

	while (lo < hi) {
		uint32_t mid = (lo + hi + 1) / 2;

		if (jnl_start(j, mid, &h) == 0) {
			t_ok(jnl_stop(&h));
			lo = mid;
		} else {
			hi = mid - 1;
		}
	}
	return lo;
}

/* Dirty page @index of the file with version @stamp. */
static void dirty_page(struct file *f, uint64_t index, uint64_t stamp)
{
	struct pc_page *p;

	t_ok(pc_find_or_create_page(f->m, index, &p));
	tj_fill(p->data, BS, DATA0 + index, stamp);
	SetPageUptodate(p);
	pc_set_page_dirty(p);
	pc_unlock_page(p);
	pc_put_page(p);
}

/*
 * Run @fn in a child with an alarm; return its wait status, with what it
 * wrote to stderr in @out.
 */
static int in_child(void (*fn)(void), char *out, size_t outlen)
{
	int fd[2], status;
	size_t len = 0;
	ssize_t got;
	pid_t pid;

	t_assert(pipe(fd) == 0, "pipe");
	fflush(NULL);
	pid = fork();
	t_assert(pid >= 0, "fork");
	if (pid == 0) {
		close(fd[0]);
		dup2(fd[1], STDERR_FILENO);
		alarm(CHILD_ALARM);
		fn();
		_exit(0);
	}
	close(fd[1]);
	while (len + 1 < outlen &&
	       (got = read(fd[0], out + len, outlen - 1 - len)) > 0)
		len += (size_t)got;
	out[len] = 0;
	close(fd[0]);
	t_assert(waitpid(pid, &status, 0) == pid, "waitpid");
	return status;
}

static bool died_of(int status, int sig)
{
	return WIFSIGNALED(status) && WTERMSIG(status) == sig;
}

/* ---- the self-deadlock ------------------------------------------------------ */

static void deadlock_child(void)
{
	struct tj t;
	struct jnl_handle h;
	uint32_t max;

	tj_setup(&t, BS, DEV, JSTART, JBLOCKS, false);
	F = (struct file){ .t = &t, .ji = { .ji_ino = 1 } };
	t.cfg.submit_ordered = sync_ordered;
	t.cfg.arg = &F;
	tj_open(&t);
	t_ok(pc_mapping_create(t.cache, &alloc_ops, &F, &F.m));
	max = max_credits(t.j);
	/* A transaction with no room left, listing the file as ordered. */
	t_ok(jnl_start(t.j, max, &h));
	tj_write(&t, &h, BITMAP, 1);
	t_ok(jnl_add_ordered(&h, &F.ji));
	t_ok(jnl_stop(&h));
	dirty_page(&F, 0, 1);
	/* fsync: writepages' handle finds the transaction full. */
	pc_sync_mapping(F.m);
	fprintf(stderr, "fsync returned\n");
	_exit(0);
}

static void test_deadlock(void)
{
	char out[4096];
	int status;

	if (!checked)
		t_skip_case("release builds do not check the lock order");
	status = in_child(deadlock_child, out, sizeof(out));

	t_assert(!died_of(status, SIGALRM),
		 "fsync hung (ordered data of a mapping in writeback): %s", out);
	/* writepages must not start a handle: the debug build says so. */
	t_assert(died_of(status, SIGABRT) && strstr(out, "lock order"),
		 "status %#x, stderr: %s", status, out);
	printf("ok: a handle started in writeback stops at once, naming the rule\n");
}

/* ---- the order as the filesystem keeps it -------------------------------- */

/* Writeback only maps: blocks were allocated when the write happened. */
static int map_writepages(void *ctx, struct pc_mapping *m,
			  struct pc_page **pages, unsigned int n,
			  const struct pc_wbc *wbc)
{
	struct file *f = ctx;

	return pc_block_writepages(f->t->bd, file_map, NULL, m, pages, n, wbc);
}

static const struct pc_mapping_ops file_ops = {
	.readpage = file_readpage,
	.readpages = file_readpages,
	.writepages = map_writepages,
};

static pthread_t submitter;      /* the thread that ran the commit */

static int submit_ordered(void *arg, struct jnl_inode *ji)
{
	struct file *f = arg;

	submitter = pthread_self();
	return pc_write_range(f->m, 0, UINT64_MAX);
}

static int wait_ordered(void *arg, struct jnl_inode *ji)
{
	struct file *f = arg;

	return pc_wait_range(f->m, 0, UINT64_MAX);
}

/* write(): handle first, then the page lock; the block is allocated
 * (the bitmap changes) under the handle. */
static void fs_write(struct file *f, struct jnl_handle *h, uint64_t index,
		     uint64_t stamp)
{
	tj_write(f->t, h, BITMAP, stamp);
	t_ok(jnl_add_ordered(h, &f->ji));
	dirty_page(f, index, stamp);
}

static struct {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool holding;
} H = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, false };

/* A reader holding the dirty page's lock while the commit runs. */
static void *hold_page(void *arg)
{
	struct file *f = arg;
	struct pc_page *p = pc_find_get_page(f->m, 0);

	t_assert(p, "page 0 cached");
	pc_lock_page(p);
	pthread_mutex_lock(&H.lock);
	H.holding = true;
	pthread_cond_broadcast(&H.cond);
	pthread_mutex_unlock(&H.lock);
	usleep(300 * 1000);
	pc_unlock_page(p);
	pc_put_page(p);
	return NULL;
}

/* Log position of the first commit block, and of the last write of @blk. */
static void find_writes(struct bdev *bd, uint64_t blk, size_t *commit,
			size_t *data)
{
	*commit = *data = SIZE_MAX;
	for (size_t i = 0; i < bdev_wrap_log_count(bd); i++) {
		const struct bdev_wrap_log_entry *e = bdev_wrap_log(bd, i);
		const struct jnl_header *hd = e->data;

		if (e->flush)
			continue;
		if (e->off <= blk * BS && e->off + e->len > blk * BS)
			*data = i;
		if (*commit == SIZE_MAX && le32toh(hd->h_magic) == JNL_MAGIC &&
		    le32toh(hd->h_blocktype) == JNL_BT_COMMIT)
			*commit = i;
	}
}

/*
 * Ordered data reaches home before the commit block although another
 * thread holds the dirty page's lock when the commit starts, and the
 * commit runs in a writer's jnl_start (the transaction is full) while
 * that writer holds no lock of the cache.
 */
static void test_ordered(void)
{
	struct tj t;
	struct jnl_handle h;
	size_t commit, data;
	pthread_t th;
	uint32_t max;

	tj_setup(&t, BS, DEV, JSTART, JBLOCKS, false);
	F = (struct file){ .t = &t, .ji = { .ji_ino = 1 } };
	t.cfg.submit_ordered = submit_ordered;
	t.cfg.wait_ordered = wait_ordered;
	t.cfg.arg = &F;
	tj_open(&t);
	t_ok(pc_mapping_create(t.cache, &file_ops, &F, &F.m));
	max = max_credits(t.j);
	bdev_wrap_record(t.bd, true);

	t_ok(jnl_start(t.j, max, &h));
	fs_write(&F, &h, 0, 5);
	t_ok(jnl_stop(&h));
	th = t_thread_start(hold_page, &F);
	pthread_mutex_lock(&H.lock);
	while (!H.holding)
		pthread_cond_wait(&H.cond, &H.lock);
	pthread_mutex_unlock(&H.lock);
	/* The next write's handle does not fit: it commits the one before. */
	t_ok(jnl_start(t.j, max, &h));
	t_assert(pthread_equal(submitter, pthread_self()),
		 "the commit ran in the writer's jnl_start");
	t_ok(jnl_stop(&h));
	pthread_join(th, NULL);

	find_writes(t.bd, DATA0, &commit, &data);
	t_assert(commit != SIZE_MAX, "the transaction committed");
	t_assert(data < commit, "file data (log entry %zd) before the commit "
		 "block (%zd)", data == SIZE_MAX ? (ssize_t)-1 : (ssize_t)data,
		 (ssize_t)commit);
	t_assert(tj_holds(t.bd, BS, DATA0, 5), "the data is home");
	jnl_forget_inode(t.j, &F.ji);
	pc_mapping_destroy(F.m);
	tj_teardown(&t);
	printf("ok: ordered data goes home before the commit block, past a "
	       "locked page, from a writer's jnl_start\n");
}

/* ---- each rule, broken on purpose ------------------------------------------ */

static struct tj V;

static void v_setup(void)
{
	tj_setup(&V, BS, DEV, JSTART, JBLOCKS, false);
	tj_open(&V);
}

static struct pc_page *v_locked_page(void)
{
	struct pc_page *p;

	t_ok(pc_read_cache_page(V.meta, 30, &p));
	pc_lock_page(p);
	return p;
}

static void v_start_under_page_lock(void)
{
	struct jnl_handle h;

	v_setup();
	v_locked_page();
	jnl_start(V.j, 1, &h);
}

static void v_nested_handle(void)
{
	struct jnl_handle h, h2;

	v_setup();
	t_ok(jnl_start(V.j, 1, &h));
	jnl_start(V.j, 1, &h2);
}

static void v_commit_wait_under_handle(void)
{
	struct jnl_handle h;

	v_setup();
	t_ok(jnl_start(V.j, 1, &h));
	tj_write(&V, &h, 40, 1);
	jnl_commit_wait(V.j, h.h_tid);
}

static void v_sync_under_page_lock(void)
{
	v_setup();
	v_locked_page();
	jnl_sync(V.j);
}

static void v_fsync_under_page_lock(void)
{
	v_setup();
	v_locked_page();
	pc_sync_mapping(V.meta);
}

static void v_stop_in_other_thread(void)
{
	static struct jnl_handle h;
	pthread_t th;

	v_setup();
	t_ok(jnl_start(V.j, 1, &h));
	th = t_thread_start(jnl_stop_thunk, &h);
	pthread_join(th, NULL);
}

static const struct {
	const char *name;
	void (*fn)(void);
	const char *rule;
} violations[] = {
	{ "jnl_start holding a page lock", v_start_under_page_lock,
	  "a handle is started before any page lock" },
	{ "a second handle", v_nested_handle, "handles never nest" },
	{ "jnl_commit_wait holding a handle", v_commit_wait_under_handle,
	  "waiting for a commit while holding a handle" },
	{ "jnl_sync holding a page lock", v_sync_under_page_lock,
	  "waiting for a commit while holding a page lock" },
	{ "pc_sync_mapping holding a page lock", v_fsync_under_page_lock,
	  "pc_sync_mapping while holding a page lock" },
	{ "jnl_stop in another thread", v_stop_in_other_thread,
	  "jnl_stop in a thread that did not start the handle" },
};

static void test_violations(void)
{
	if (!checked)
		t_skip_case("release builds do not check the lock order");
	for (size_t i = 0; i < sizeof(violations) / sizeof(violations[0]); i++) {
		char out[4096];
		int status = in_child(violations[i].fn, out, sizeof(out));

		t_assert(died_of(status, SIGABRT) &&
			 strstr(out, "lock order violated") &&
			 strstr(out, violations[i].rule),
			 "%s: status %#x, stderr: %s", violations[i].name,
			 status, out);
		printf("ok: %s aborts: %s\n", violations[i].name,
		       violations[i].rule);
	}
}

/* A hang fails rather than stalls. */
T_MAIN_SETUP(alarm(100), T_CASE(test_ordered), T_CASE(test_deadlock), T_CASE(test_violations))
