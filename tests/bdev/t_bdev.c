/*
 * t_bdev.c - helpers shared by the block layer's tests.
 */
#include "t_bdev.h"

#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <string.h>
#include <unistd.h>

/* ---- work directory ------------------------------------------------------ */

static char workdir[256];

static int remove_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	return remove(path);
}

static void remove_workdir(void)
{
	if (workdir[0])
		nftw(workdir, remove_one, 16, FTW_DEPTH | FTW_PHYS);
}

const char *t_workdir(void)
{
	const char *tmp = getenv("TMPDIR");

	if (workdir[0])
		return workdir;
	snprintf(workdir, sizeof(workdir), "%s/t_bdev.XXXXXX", tmp ? tmp : "/tmp");
	if (!mkdtemp(workdir))
		t_fail("mkdtemp %s: %s", workdir, strerror(errno));
	atexit(remove_workdir);
	return workdir;
}

char *t_image(const char *name, uint64_t size)
{
	char *path;
	int fd;

	if (asprintf(&path, "%s/%s", t_workdir(), name) < 0)
		t_fail("out of memory");
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
	if (fd < 0 || ftruncate(fd, (off_t)size))
		t_fail("creating %s: %s", path, strerror(errno));
	close(fd);
	return path;
}

/* ---- data ------------------------------------------------------------------ */

uint64_t t_rand(uint64_t *state)
{
	uint64_t x = *state ? *state : 0x2545f4914f6cdd1dull;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return *state = x;
}

void t_fill(void *buf, size_t len, uint64_t seed)
{
	uint64_t st = seed * 0x9e3779b97f4a7c15ull + 1;
	unsigned char *p = buf;

	for (size_t i = 0; i < len; i++)
		p[i] = (unsigned char)(t_rand(&st) >> 24);
}

long t_diff(const void *a, const void *b, size_t len)
{
	const unsigned char *x = a, *y = b;

	for (size_t i = 0; i < len; i++)
		if (x[i] != y[i])
			return (long)i;
	return -1;
}

void *t_alloc(size_t len)
{
	void *p = bdev_alloc_buf(len);

	if (!p)
		t_fail("bdev_alloc_buf(%zu) failed", len);
	return p;
}

/* ---- asynchronous batches ---------------------------------------------------- */

void t_batch_init(struct t_batch *b, unsigned int count)
{
	pthread_mutex_init(&b->lock, NULL);
	pthread_cond_init(&b->cond, NULL);
	b->left = count;
	b->errors = 0;
	b->first_error = 0;
}

void t_batch_end_io(struct bdev_req *req)
{
	struct t_batch *b = req->private;

	pthread_mutex_lock(&b->lock);
	if (req->result) {
		b->errors++;
		if (!b->first_error)
			b->first_error = req->result;
	}
	if (b->left == 0)
		t_fail("end_io called more often than requests were submitted");
	if (--b->left == 0)
		pthread_cond_broadcast(&b->cond);
	pthread_mutex_unlock(&b->lock);
}

void t_batch_wait(struct t_batch *b)
{
	pthread_mutex_lock(&b->lock);
	while (b->left)
		pthread_cond_wait(&b->cond, &b->lock);
	pthread_mutex_unlock(&b->lock);
	pthread_cond_destroy(&b->cond);
	pthread_mutex_destroy(&b->lock);
}

/* ---- log capture -------------------------------------------------------------- */

#define MAX_LINES 64
static char log_lines[MAX_LINES][256];
static unsigned int log_n;

static void capture(enum mlog_level level, const char *line, void *arg)
{
	fprintf(stderr, "log: %s\n", line);
	if (log_n < MAX_LINES)
		snprintf(log_lines[log_n++], sizeof(log_lines[0]), "%s", line);
}

void t_log_capture(void)
{
	mlog_set_level(MLOG_INFO);
	mlog_set_sink(capture, NULL);
}

unsigned int t_log_count(const char *s)
{
	unsigned int n = 0;

	for (unsigned int i = 0; i < log_n; i++)
		n += strstr(log_lines[i], s) != NULL;
	return n;
}

void t_log_reset(void)
{
	log_n = 0;
}
