/*
 * t_nbd.c - the NBD backend against a real server: nbdkit, started here
 * on a Unix socket (memory plugin), with filters that slow it down, cut
 * its requests small or make it read-only.
 *
 * - what is written, whole, vectored or cut into several commands, reads
 *   back, from four threads at once;
 * - a flush in a batch ends after every request submitted before it
 *   (the server, slowed, replies after the flush's own reply would come);
 * - a write with its flush after it, alone on the device, goes out as one
 *   write with FUA; after a write no flush has covered, the flush goes;
 * - the server killed with requests in flight: each ends with -EIO, one
 *   log line names the lost server, later requests fail at once, close
 *   returns;
 * - the server gone while the device's thread is busy, so that a
 *   submitting thread finds it first: that request and every later one
 *   end with -EIO, not libnbd's refusal of a dead handle (EINVAL);
 * - a read-only export is read-only; a URI nobody serves is an error
 *   naming it.
 *
 * Skipped (exit 77) where nbdkit is not installed.
 */
#include "bdev_test.h"
#include "t_bdev.h"

#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define BS 4096u
#define SIZE (16u << 20)

static pid_t server;
static char uri[512];

static void unserve(void)
{
	if (server <= 0)
		return;
	kill(server, SIGKILL);
	for (int i = 0; i < 500 && !kill(server, 0); i++)
		usleep(10000);
	server = 0;
}

/*
 * Start nbdkit with @args (plugin, filters, parameters) on a new socket.
 * Without -f it returns once it listens (a socket file alone may not be
 * listening yet); its daemon writes its pid.
 */
static void serve(const char *const *args)
{
	static unsigned int n;
	static bool registered;
	char sock[300], pidfile[300];
	const char *argv[32] = { "nbdkit", "-U", sock, "-P", pidfile };
	unsigned int a = 5;
	int status;
	pid_t pid;
	FILE *f;

	snprintf(sock, sizeof(sock), "%s/nbd%u.sock", t_workdir(), n);
	snprintf(pidfile, sizeof(pidfile), "%s/nbd%u.pid", t_workdir(), n++);
	for (; *args; args++)
		argv[a++] = *args;
	pid = fork();
	t_assert(pid >= 0, "fork");
	if (!pid) {
		execvp("nbdkit", (char *const *)argv);
		_exit(127);
	}
	t_assert(waitpid(pid, &status, 0) == pid && WIFEXITED(status) &&
		 !WEXITSTATUS(status), "nbdkit did not start");
	/* The daemon writes it, maybe after its parent has returned. */
	server = 0;
	for (int i = 0; i < 1000 && server <= 0; i++) {
		f = fopen(pidfile, "r");
		if (!f || fscanf(f, "%d", &server) != 1)
			usleep(5000);
		if (f)
			fclose(f);
	}
	t_assert(server > 0, "nbdkit wrote no pid in %s", pidfile);
	if (!registered)
		atexit(unserve);        /* a failing case leaves no server */
	registered = true;
	snprintf(uri, sizeof(uri), "nbd+unix:///?socket=%s", sock);
}

static struct bdev *open_uri(void)
{
	struct bdev_open_opts o = { .block_size = BS };
	struct bdev *bd;

	t_ok(bdev_open(uri, &o, &bd));
	t_eq(bd->fd, -1);
	t_eq(bd->size, (uint64_t)SIZE);
	return bd;
}

/* ---- data ---------------------------------------------------------------- */

/* Write @blocks blocks at block @first as one request of @segs segments
 * (the last takes the rest), read them back as one plain request. */
static void roundtrip(struct bdev *bd, uint64_t first, unsigned int blocks,
		      unsigned int segs, uint64_t seed)
{
	size_t len = (size_t)blocks * BS;
	unsigned char *src = t_alloc(len), *dst = t_alloc(len);
	struct iovec iov[8];
	size_t at = 0;

	t_fill(src, len, seed);
	for (unsigned int i = 0; i < segs; i++) {
		size_t n = i + 1 < segs ? BS : len - at;

		iov[i] = (struct iovec){ src + at, n };
		at += n;
	}
	t_ok(bdev_writev(bd, first * BS, iov, segs));
	memset(dst, 0, len);
	t_ok(bdev_read(bd, first * BS, dst, len));
	t_eq(t_diff(src, dst, len), -1L);
	bdev_free_buf(src);
	bdev_free_buf(dst);
}

static void test_roundtrip(void)
{
	static const char *const args[] = { "memory", "16M", NULL };
	struct bdev *bd;

	serve(args);
	bd = open_uri();
	roundtrip(bd, 0, 1, 1, 1);
	roundtrip(bd, 10, 16, 4, 2);                 /* vectored: bounced */
	bdev_test_max_xfer = 2 * BS;                  /* cut into commands */
	bd->ops->close(bd);
	bd = open_uri();
	roundtrip(bd, 100, 9, 1, 3);
	roundtrip(bd, 200, 12, 3, 4);
	bdev_test_max_xfer = 0;
	t_ok(bdev_flush(bd));
	bdev_close(bd);
	unserve();
	printf("ok: whole, vectored and cut requests read back\n");
}

struct worker {
	struct bdev *bd;
	unsigned int id;
};

static void *work(void *arg)
{
	struct worker *w = arg;

	for (unsigned int r = 0; r < 20; r++)
		roundtrip(w->bd, w->id * 512 + (r % 8) * 32, 1 + r % 24, 1 + r % 4,
			  w->id * 100 + r);
	return NULL;
}

static void test_threads(void)
{
	static const char *const args[] = { "--filter=delay", "memory", "16M",
					    "delay-write=1ms", "delay-read=1ms", NULL };
	struct worker w[4];
	pthread_t th[4];
	struct bdev *bd;

	serve(args);
	bd = open_uri();
	for (unsigned int i = 0; i < 4; i++) {
		w[i] = (struct worker){ bd, i };
		t_assert(!pthread_create(&th[i], NULL, work, &w[i]), "thread");
	}
	for (unsigned int i = 0; i < 4; i++)
		pthread_join(th[i], NULL);
	bdev_close(bd);
	unserve();
	printf("ok: four threads at once\n");
}

/* ---- flushes -------------------------------------------------------------- */

#define FLUSH_BATCH 24u

struct order {
	pthread_mutex_t lock;
	unsigned int ended;          /* requests ended so far */
	unsigned int flush_saw;      /* how many had ended when the flush did */
	struct t_batch batch;
};

static void order_end_io(struct bdev_req *req)
{
	struct order *o = req->private;

	pthread_mutex_lock(&o->lock);
	if (req->op == BDEV_OP_FLUSH)
		o->flush_saw = o->ended;
	o->ended++;
	pthread_mutex_unlock(&o->lock);
	t_assert(!req->result, "request failed: %d", req->result);
	req->private = &o->batch;
	t_batch_end_io(req);
}

static void test_flush_waits(void)
{
	/* Writes slowed by 20 ms each; flushes not. */
	static const char *const args[] = { "--filter=delay", "memory", "16M",
					    "delay-write=20ms", NULL };
	struct bdev_req reqs[FLUSH_BATCH + 1], *rp[FLUSH_BATCH + 1];
	unsigned char *buf = t_alloc(FLUSH_BATCH * BS);
	struct order o = { .lock = PTHREAD_MUTEX_INITIALIZER };
	struct bdev *bd;

	serve(args);
	bd = open_uri();
	t_fill(buf, FLUSH_BATCH * BS, 7);
	t_batch_init(&o.batch, FLUSH_BATCH + 1);
	for (unsigned int i = 0; i <= FLUSH_BATCH; i++) {
		if (i < FLUSH_BATCH)
			bdev_req_init(&reqs[i], BDEV_OP_WRITE, (uint64_t)i * 7 * BS,
				      buf + (size_t)i * BS, BS);
		else
			bdev_req_init(&reqs[i], BDEV_OP_FLUSH, 0, NULL, 0);
		reqs[i].end_io = order_end_io;
		reqs[i].private = &o;
		rp[i] = &reqs[i];
	}
	t_ok(bdev_submit(bd, rp, FLUSH_BATCH + 1));
	t_batch_wait(&o.batch);
	t_eq(o.flush_saw, FLUSH_BATCH);
	bdev_close(bd);
	unserve();
	bdev_free_buf(buf);
	printf("ok: a flush in a batch ends after the %u writes before it\n", FLUSH_BATCH);
}

/* Submit a write of block @blk and a flush after it in one batch. */
static void write_then_flush(struct bdev *bd, void *buf, uint64_t blk)
{
	struct bdev_req reqs[2], *rp[2] = { &reqs[0], &reqs[1] };

	bdev_req_init(&reqs[0], BDEV_OP_WRITE, blk * BS, buf, BS);
	bdev_req_init(&reqs[1], BDEV_OP_FLUSH, 0, NULL, 0);
	t_ok(bdev_submit_wait(bd, rp, 2));
}

/* How many lines of nbdkit's log name @what (and @also, if given). */
static unsigned int logged(const char *path, const char *what, const char *also)
{
	char line[512];
	unsigned int n = 0;
	FILE *f = fopen(path, "r");

	t_assert(f != NULL, "%s: %s", path, strerror(errno));
	while (fgets(line, sizeof(line), f))
		n += strstr(line, what) && (!also || strstr(line, also)) &&
		     !strstr(line, "return=");
	fclose(f);
	return n;
}

static void test_fua(void)
{
	char log[300], arg[320];
	const char *args[] = { "--filter=log", "memory", "16M", arg, NULL };
	unsigned char *buf = t_alloc(BS);
	struct bdev *bd;

	snprintf(log, sizeof(log), "%s/nbdkit.log", t_workdir());
	snprintf(arg, sizeof(arg), "logfile=%s", log);
	serve(args);
	bd = open_uri();
	t_fill(buf, BS, 9);
	write_then_flush(bd, buf, 1);        /* alone: one FUA write */
	t_ok(bdev_write(bd, 2 * BS, buf, BS));
	write_then_flush(bd, buf, 3);        /* block 2 unflushed: a flush */
	bdev_close(bd);
	unserve();
	t_eq(logged(log, "Write", "fua=1"), 1u);
	t_eq(logged(log, "Write", NULL), 3u);
	t_eq(logged(log, "Flush", NULL), 1u);
	bdev_free_buf(buf);
	printf("ok: a write alone with its flush is one FUA write; after an unflushed one, a flush\n");
}

/* ---- a lost server ------------------------------------------------------- */

static void test_server_killed(void)
{
	static const char *const args[] = { "--filter=delay", "memory", "16M",
					    "delay-write=30", NULL };
	struct bdev_req reqs[8], *rp[8];
	unsigned char *buf = t_alloc(8 * BS);
	struct t_batch b;
	struct bdev *bd;

	serve(args);
	bd = open_uri();
	t_log_capture();
	t_batch_init(&b, 8);
	for (unsigned int i = 0; i < 8; i++) {
		bdev_req_init(&reqs[i], BDEV_OP_WRITE, (uint64_t)i * BS, buf + i * BS, BS);
		reqs[i].end_io = t_batch_end_io;
		reqs[i].private = &b;
		rp[i] = &reqs[i];
	}
	t_ok(bdev_submit(bd, rp, 8));
	usleep(200000);                   /* all sent, none answered */
	unserve();
	t_batch_wait(&b);
	t_eq(b.errors, 8u);
	t_eq(b.first_error, -EIO);
	t_eq(bdev_read(bd, 0, buf, BS), -EIO);
	t_eq(bdev_write(bd, 0, buf, BS), -EIO);
	/* A batch's flush waits for a write that fails at once. */
	bdev_req_init(&reqs[0], BDEV_OP_WRITE, 0, buf, BS);
	bdev_req_init(&reqs[1], BDEV_OP_FLUSH, 0, NULL, 0);
	t_eq(bdev_submit_wait(bd, rp, 2), -EIO);
	t_eq(reqs[1].result, -EIO);
	t_assert(bdev_flush(bd) == -EIO || bdev_flush(bd) == 0, "flush");
	t_eq(t_log_count("connection to the NBD server lost"), 1u);
	bdev_close(bd);
	t_log_reset();
	bdev_free_buf(buf);
	printf("ok: a killed server fails what was in flight and what follows\n");
}

/* An end_io that keeps the device's thread until told to go on. */
static atomic_int held;

static void hold_end_io(struct bdev_req *req)
{
	atomic_store(&held, 1);
	while (atomic_load(&held) == 1)
		usleep(1000);
	t_batch_end_io(req);
}

static void test_lost_while_busy(void)
{
	struct bdev_req hold, w1, w2, *rp;
	unsigned char *buf = t_alloc(3 * BS);
	struct t_batch b;
	struct bdev *bd;

	serve((const char *const[]){ "memory", "16M", NULL });
	bd = open_uri();
	t_log_capture();
	t_batch_init(&b, 3);
	bdev_req_init(&hold, BDEV_OP_READ, 0, buf, BS);
	hold.end_io = hold_end_io;
	hold.private = &b;
	rp = &hold;
	t_ok(bdev_submit(bd, &rp, 1));
	while (!atomic_load(&held))
		usleep(1000);
	unserve();                /* its socket closed; nobody polls ours */
	bdev_req_init(&w1, BDEV_OP_WRITE, BS, buf + BS, BS);
	bdev_req_init(&w2, BDEV_OP_WRITE, 2 * BS, buf + 2 * BS, BS);
	w1.end_io = w2.end_io = t_batch_end_io;
	w1.private = w2.private = &b;
	rp = &w1;
	t_ok(bdev_submit(bd, &rp, 1));  /* its send finds the server gone */
	rp = &w2;
	t_ok(bdev_submit(bd, &rp, 1));  /* on a handle libnbd calls dead */
	atomic_store(&held, 2);
	t_batch_wait(&b);
	t_eq(hold.result, 0);
	t_eq(w1.result, -EIO);
	t_eq(w2.result, -EIO);
	t_eq(bdev_write(bd, 0, buf, BS), -EIO);
	t_eq(t_log_count("connection to the NBD server lost"), 1u);
	bdev_close(bd);
	t_log_reset();
	bdev_free_buf(buf);
	printf("ok: a server lost while the device's thread is busy\n");
}

/* ---- refusals ------------------------------------------------------------ */

static void test_read_only(void)
{
	static const char *const args[] = { "-r", "memory", "16M", NULL };
	unsigned char *buf = t_alloc(BS);
	struct bdev *bd;

	serve(args);
	bd = open_uri();
	t_assert(bd->read_only, "a read-only export opens read-only");
	t_ok(bdev_read(bd, 0, buf, BS));
	t_eq(bdev_write(bd, 0, buf, BS), -EROFS);
	bdev_close(bd);
	unserve();
	bdev_free_buf(buf);
	printf("ok: a read-only export\n");
}

static void test_nobody_serves(void)
{
	struct bdev_open_opts o = { .block_size = BS };
	struct bdev *bd;
	int err;

	snprintf(uri, sizeof(uri), "nbd+unix:///?socket=%s/none.sock", t_workdir());
	t_log_capture();
	err = bdev_open(uri, &o, &bd);
	t_assert(err < 0, "open of a socket nobody serves: %d", err);
	t_eq(t_log_count("cannot connect to the NBD server"), 1u);
	t_log_reset();
	t_assert(bdev_is_remote("nbd://host/export") && bdev_is_remote(uri) &&
		 !bdev_is_remote("/tmp/nbd.img") && !bdev_is_remote("nbd.img"),
		 "bdev_is_remote");
	printf("ok: no server at the URI: %s\n", strerror(-err));
}

static int setup(void)
{
	if (!bdev_has_nbd() || system("nbdkit --version >/dev/null 2>&1")) {
		printf("SKIP: %s\n", bdev_has_nbd() ? "nbdkit is not installed" :
		       "built without libnbd");
		exit(77);
	}
	return 0;
}

T_MAIN_SETUP(setup(), T_CASE(test_roundtrip), T_CASE(test_threads),
	     T_CASE(test_flush_waits), T_CASE(test_fua), T_CASE(test_server_killed),
	     T_CASE(test_lost_while_busy),
	     T_CASE(test_read_only), T_CASE(test_nobody_serves))
