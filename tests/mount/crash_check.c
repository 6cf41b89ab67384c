/*
 * crash_check.c - the crash states of t_crash_mount, checked in one
 * process.
 *
 *   crash_check BASE LOG STATES MODEL
 *
 * For each state the image is rebuilt in memory from the base image and
 * the write log, as miscfs-replay builds it, and mounted by the core on
 * the memory device with the daemon's default options (the mount replays
 * the journal).  Every file fsynced by the state's last flush must hold
 * exactly the bytes it was fsynced with, and a file of the model not
 * fsynced yet, if it is there, nothing it was not given; the unmount must
 * succeed, and fsck -fn (fsck_run, FSCK_NO, forced) must find nothing.
 * That is the check t_crash_mount makes through the daemon, without four
 * processes and a FUSE mount per state; the daemon's own I/O path
 * (io_uring on a file, FUSE) is left to the sample the script still
 * mounts.
 *
 * STATES holds the lines t_crash_mount writes, one per state:
 *   flush N keep 0 F        the image when the N-th flush completed
 *   entry N MODE SEED F     after N entries, the writes since the last
 *                           flush cut as miscfs-replay --mode MODE
 *                           --seed SEED cuts them
 * F being the flushes the image holds; "-" reads them from standard
 * input.  MODEL holds the files as they were fsynced and "list", lines
 * "FLUSHES SHA1 NAME": d/NAME was fsynced with FLUSHES flushes in the log.
 *
 * Every state is checked; failures are named by their lines (the first
 * twenty), so that one can be checked again alone.  Exit status: 0 all
 * passed, 1 some failed, 2 usage or unreadable input.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bdev.h"
#include "bdev_test.h"
#include "fsck.h"
#include "mfs.h"
#include "util.h"

#define EXIT_FAILED 1
#define EXIT_USAGE  2
/* Failures told in full, with what the mount and fsck said, and failures
 * named by their line; the rest are only counted. */
#define TOLD_IN_FULL 3
#define NAMED        20

static const struct mfs_cred root = { 0, 0, 022, 0, NULL };

struct model_file {
	uint64_t flushes;        /* in the log when its fsync returned */
	char name[64];
	uint8_t *data;
	size_t len;
};

struct state {
	char line[160];
	size_t prefix;           /* log entries the image is made of */
	enum bdev_cut mode;
	uint64_t seed;
	uint64_t flushes;        /* the image holds */
	bool at_flush;
};

struct checker {
	struct bdev_wrap_logfile *log;
	struct bdev_wrap_logfile_info info;
	size_t *flush_end;       /* [k]: entries up to the k-th flush, [0] = 0 */
	uint8_t *base;
	struct bdev *bd;         /* every state is rebuilt in its memory */
	struct model_file *files;
	size_t nfiles;
	uint8_t *readbuf;        /* a byte longer than the longest model file */
	size_t at_flush, between, failed;
	char why[512];
};

/* ---- what the core said ------------------------------------------------- */

/*
 * The mount's and fsck's lines for the state being checked: a torn
 * superblock or a replayed journal is to be expected in many states, so
 * they are printed only for a state that fails.  The core logs from its
 * own threads too.
 */
static struct {
	pthread_mutex_t lock;
	char buf[8192];
	size_t len;
} said = { .lock = PTHREAD_MUTEX_INITIALIZER };

static void say_line(const char *line)
{
	pthread_mutex_lock(&said.lock);
	if (said.len < sizeof(said.buf))
		said.len += (size_t)snprintf(said.buf + said.len, sizeof(said.buf) - said.len,
					     "  %s\n", line);
	said.len = UT_MIN(said.len, sizeof(said.buf));
	pthread_mutex_unlock(&said.lock);
}

static void said_reset(void)
{
	pthread_mutex_lock(&said.lock);
	said.len = 0;
	pthread_mutex_unlock(&said.lock);
}

/* Up to info: what the recovery did tells what a failure is about. */
static void log_sink(enum mlog_level level, const char *line, void *arg)
{
	if (level <= MLOG_INFO)
		say_line(line);
}

static int say(struct checker *c, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Keep why the check failed; returns @err. */
static int say(struct checker *c, int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(c->why, sizeof(c->why), fmt, ap);
	va_end(ap);
	return err;
}

/* ---- the inputs ----------------------------------------------------------- */

static int read_all(struct checker *c, const char *path, uint8_t **data, size_t *len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC), err = 0;
	struct stat st;
	size_t done = 0;
	ssize_t n;

	if (fd < 0 || fstat(fd, &st)) {
		err = -errno;
		if (fd >= 0)
			close(fd);
		return say(c, err, "%s: %s", path, strerror(-err));
	}
	*len = (size_t)st.st_size;
	*data = malloc(*len ? *len : 1);
	if (!*data)
		err = -ENOMEM;
	while (!err && done < *len) {
		n = read(fd, *data + done, *len - done);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			err = n < 0 ? -errno : -EIO;
		else
			done += (size_t)n;
	}
	close(fd);
	return err ? say(c, err, "%s: %s", path, strerror(-err)) : 0;
}

static int open_log(struct checker *c, const char *path)
{
	const struct bdev_wrap_log_entry *e;
	char why[160];
	size_t k = 0;
	int err;

	err = bdev_wrap_logfile_open(path, &c->log, &c->info, why, sizeof(why));
	if (err)
		return say(c, err, "%s: %s", path, err == -EUCLEAN ? why : strerror(-err));
	if (c->info.why[0])
		return say(c, -EUCLEAN, "%s: the log ends early: %s", path, c->info.why);
	c->flush_end = calloc(c->info.flushes + 1, sizeof(*c->flush_end));
	if (!c->flush_end)
		return say(c, -ENOMEM, "%s: %s", path, strerror(ENOMEM));
	for (size_t i = 0; i < c->info.entries; i++) {
		e = bdev_wrap_logfile_entry(c->log, i);
		if (e->flush)
			c->flush_end[++k] = i + 1;
	}
	return 0;
}

/* The memory device the states are rebuilt in, once for all of them. */
static int open_image(struct checker *c, const char *base)
{
	size_t len;
	int err;

	err = read_all(c, base, &c->base, &len);
	if (err)
		return err;
	if (len < c->info.dev_size)
		return say(c, -EINVAL, "%s: %zu bytes, the log's device has %" PRIu64,
			   base, len, c->info.dev_size);
	err = bdev_mem_create(c->info.dev_size, c->info.block_size, &c->bd);
	if (err)
		return say(c, err, "memory device: %s", strerror(-err));
	return 0;
}

static int load_file(struct checker *c, const char *dir, struct model_file *f)
{
	char path[4096];

	snprintf(path, sizeof(path), "%s/%s", dir, f->name);
	return read_all(c, path, &f->data, &f->len);
}

static int add_file(struct checker *c, const char *dir, uint64_t flushes, const char *name)
{
	struct model_file *f;
	int err;

	f = realloc(c->files, (c->nfiles + 1) * sizeof(*f));
	if (!f)
		return say(c, -ENOMEM, "model: %s", strerror(ENOMEM));
	c->files = f;
	f += c->nfiles;
	*f = (struct model_file){ .flushes = flushes };
	snprintf(f->name, sizeof(f->name), "%s", name);
	err = load_file(c, dir, f);
	if (!err)
		c->nfiles++;
	return err;
}

/* One byte more than the longest file: a read must end where it does. */
static int alloc_readbuf(struct checker *c)
{
	size_t longest = 0;

	for (size_t i = 0; i < c->nfiles; i++)
		longest = UT_MAX(longest, c->files[i].len);
	c->readbuf = malloc(longest + 1);
	return c->readbuf ? 0 : say(c, -ENOMEM, "model: %s", strerror(ENOMEM));
}

static int load_model(struct checker *c, const char *dir)
{
	char path[4096], name[64];
	uint64_t flushes;
	int err = 0;
	FILE *list;

	snprintf(path, sizeof(path), "%s/list", dir);
	list = fopen(path, "r");
	if (!list)
		return say(c, -errno, "%s: %s", path, strerror(errno));
	while (!err && fscanf(list, "%" SCNu64 " %*s %63s", &flushes, name) == 2)
		err = add_file(c, dir, flushes, name);
	if (!err && !feof(list))
		err = say(c, -EINVAL, "%s: line %zu is not FLUSHES SHA1 NAME", path,
			  c->nfiles + 1);
	fclose(list);
	return err ? err : alloc_readbuf(c);
}

static void unload(struct checker *c)
{
	for (size_t i = 0; i < c->nfiles; i++)
		free(c->files[i].data);
	free(c->files);
	free(c->readbuf);
	free(c->base);
	free(c->flush_end);
	if (c->bd)
		bdev_close(c->bd);
	bdev_wrap_logfile_close(c->log);
}

/* ---- a state's line ------------------------------------------------------- */

/* The flushes among the first @prefix entries. */
static uint64_t flushes_in(const struct checker *c, size_t prefix)
{
	uint64_t k = 0;

	while (k < c->info.flushes && c->flush_end[k + 1] <= prefix)
		k++;
	return k;
}

static int parse_state(struct checker *c, const char *line, struct state *s)
{
	char kind[16], mode[16];
	uint64_t n;

	snprintf(s->line, sizeof(s->line), "%.*s", (int)strcspn(line, "\n"), line);
	if (sscanf(line, "%15s %" SCNu64 " %15s %" SCNu64 " %" SCNu64, kind, &n, mode,
		   &s->seed, &s->flushes) != 5 || bdev_cut_parse(mode, &s->mode))
		return say(c, -EINVAL, "not a state");
	s->at_flush = !strcmp(kind, "flush");
	if (!s->at_flush && strcmp(kind, "entry"))
		return say(c, -EINVAL, "not a state: %s", kind);
	if (s->at_flush ? n > c->info.flushes : n > c->info.entries)
		return say(c, -EINVAL, "%" PRIu64 " is beyond the log's %zu %s", n,
			   s->at_flush ? c->info.flushes : c->info.entries,
			   s->at_flush ? "flushes" : "entries");
	s->prefix = s->at_flush ? c->flush_end[n] : (size_t)n;
	/* The files the state expects follow from F: a wrong F would check
	 * the wrong ones. */
	if (flushes_in(c, s->prefix) != s->flushes)
		return say(c, -EINVAL, "the image holds %" PRIu64 " flushes, not %" PRIu64,
			   flushes_in(c, s->prefix), s->flushes);
	return 0;
}

/* ---- one state ------------------------------------------------------------ */

static size_t first_difference(const uint8_t *a, const uint8_t *b, size_t len)
{
	size_t i = 0;

	while (i < len && a[i] == b[i])
		i++;
	return i;
}

/* The file's bytes into c->readbuf, one more asked for than it was given
 * so that a longer file shows; their number, or -errno. */
static ssize_t read_file(struct checker *c, struct mfs_fs *fs, uint64_t ino,
			 const struct model_file *m)
{
	struct mfs_file *f;
	ssize_t n;
	int err;

	err = mfs_open(fs, &root, ino, O_RDONLY, &f);
	if (err)
		return say(c, err, "d/%s: open: %s", m->name, strerror(-err));
	n = mfs_read(fs, f, c->readbuf, m->len + 1, 0);
	err = mfs_release(fs, f);
	if (n < 0)
		return say(c, (int)n, "d/%s: read: %s", m->name, strerror((int)-n));
	if (err)
		return say(c, err, "d/%s: release: %s", m->name, strerror(-err));
	return n;
}

/* Fsynced by the state's last flush: exactly as it was fsynced. */
static int compare_synced(struct checker *c, const struct model_file *m, size_t n)
{
	if (n != m->len)
		return say(c, -EUCLEAN, "d/%s: %zu bytes, fsynced with %zu", m->name, n, m->len);
	if (memcmp(c->readbuf, m->data, n))
		return say(c, -EUCLEAN, "d/%s: byte %zu differs from what was fsynced",
			   m->name, first_difference(c->readbuf, m->data, n));
	return 0;
}

/*
 * Not fsynced yet: it may be missing, short or whole, but holds nothing
 * it was not given.  Each byte is its own or zero (a hole, or a block no
 * file had used); any other is another file's old data, which data=ordered
 * must never show: its blocks are written and flushed before the commit
 * that gives them to the file.
 */
static int compare_unsynced(struct checker *c, const struct model_file *m, size_t n)
{
	size_t i = 0;

	if (n > m->len)
		return say(c, -EUCLEAN, "d/%s (not fsynced yet): %zu bytes, more than the "
			   "%zu written", m->name, n, m->len);
	while (i < n && (c->readbuf[i] == m->data[i] || !c->readbuf[i]))
		i++;
	if (i < n)
		return say(c, -EUCLEAN, "d/%s (not fsynced yet): byte %zu is neither its own "
			   "nor zero", m->name, i);
	return 0;
}

static int check_file(struct checker *c, struct mfs_fs *fs, uint64_t dir,
		      const struct model_file *m, bool synced)
{
	struct stat st;
	ssize_t n;
	int err;

	err = mfs_lookup(fs, &root, dir, m->name, &st, NULL);
	if (err == -ENOENT && !synced)
		return 0;
	if (err)
		return say(c, err, "d/%s: lookup: %s", m->name, strerror(-err));
	n = read_file(c, fs, st.st_ino, m);
	mfs_forget(fs, st.st_ino, 1);
	if (n < 0)
		return (int)n;
	return synced ? compare_synced(c, m, (size_t)n) : compare_unsynced(c, m, (size_t)n);
}

static bool any_fsynced(const struct checker *c, uint64_t flushes)
{
	for (size_t i = 0; i < c->nfiles; i++)
		if (c->files[i].flushes <= flushes)
			return true;
	return false;
}

/* Every file of the model: those fsynced by the state's last flush as they
 * were fsynced, the others as far as they got. */
static int check_files(struct checker *c, struct mfs_fs *fs, uint64_t flushes)
{
	struct stat st;
	int err;

	err = mfs_lookup(fs, &root, MFS_ROOT_INO, "d", &st, NULL);
	if (err == -ENOENT && !any_fsynced(c, flushes))
		return 0;
	if (err)
		return say(c, err, "d: lookup: %s", strerror(-err));
	for (size_t i = 0; i < c->nfiles && !err; i++)
		err = check_file(c, fs, st.st_ino, &c->files[i],
				 c->files[i].flushes <= flushes);
	mfs_forget(fs, st.st_ino, 1);
	return err;
}

static enum fsck_answer fsck_said(void *arg, const struct fsck_report *r)
{
	char line[512];

	snprintf(line, sizeof(line), "fsck: [%s] %s", r->code, r->message);
	say_line(line);
	return r->proposed;
}

static int fsck_clean(struct checker *c)
{
	struct fsck_opts o = { .mode = FSCK_NO, .force = true, .problem = fsck_said };
	struct fsck_result r;
	int rc = fsck_run(c->bd, &o, &r);

	if (rc || r.problems)
		return say(c, -EUCLEAN, "fsck -fn: exit status %d, %" PRIu64 " problems",
			   rc, r.problems);
	return 0;
}

static int check_state(struct checker *c, const struct state *s)
{
	struct mfs_mount_opts mo = { 0 };   /* the daemon's defaults */
	struct mfs_fs *fs;
	int err, uerr;

	/* The memory device keeps its writes since the last flush, with the
	 * bytes they replaced, for a power cut; a failed state may leave
	 * some: drop them before the contents are replaced under it. */
	err = bdev_flush(c->bd);
	if (err)
		return say(c, err, "flush: %s", strerror(-err));
	memcpy(bdev_mem_data(c->bd), c->base, c->info.dev_size);
	bdev_wrap_logfile_replay(c->log, s->prefix, s->mode, s->seed, bdev_mem_data(c->bd));
	err = mfs_mount(c->bd, &mo, &fs);
	if (err)
		return say(c, err, "mount: %s", strerror(-err));
	err = check_files(c, fs, s->flushes);
	uerr = mfs_unmount(fs);
	if (err)
		return err;
	if (uerr)
		return say(c, uerr, "unmount: %s", strerror(-uerr));
	return fsck_clean(c);
}

/* ---- all of them ---------------------------------------------------------- */

static void report_failure(struct checker *c, const struct state *s)
{
	c->failed++;
	if (c->failed <= NAMED)
		fprintf(stderr, "FAIL: state %s: %s\n", s->line, c->why);
	if (c->failed <= TOLD_IN_FULL && said.len)
		fprintf(stderr, "%.*s", (int)said.len, said.buf);
}

static int run_states(struct checker *c, FILE *in)
{
	struct state s;
	char line[256];

	while (fgets(line, sizeof(line), in)) {
		if (parse_state(c, line, &s)) {
			fprintf(stderr, "crash_check: state '%s': %s\n", s.line, c->why);
			return -EINVAL;
		}
		said_reset();
		if (check_state(c, &s))
			report_failure(c, &s);
		if (s.at_flush)
			c->at_flush++;
		else
			c->between++;
	}
	return ferror(in) ? -EIO : 0;
}

static int load(struct checker *c, char **argv)
{
	int err = open_log(c, argv[2]);

	if (!err)
		err = open_image(c, argv[1]);
	if (!err)
		err = load_model(c, argv[4]);
	return err;
}

int main(int argc, char **argv)
{
	struct checker c = { 0 };
	FILE *in;
	int err;

	if (argc != 5) {
		fprintf(stderr, "usage: crash_check BASE LOG STATES|- MODEL\n");
		return EXIT_USAGE;
	}
	mlog_set_ident("crash_check");
	err = load(&c, argv);
	in = err ? NULL : strcmp(argv[3], "-") ? fopen(argv[3], "r") : stdin;
	if (!err && !in)
		err = say(&c, -errno, "%s: %s", argv[3], strerror(errno));
	if (err) {
		fprintf(stderr, "crash_check: %s\n", c.why);
		unload(&c);
		return EXIT_USAGE;
	}
	mlog_set_sink(log_sink, NULL);
	err = run_states(&c, in);
	mlog_set_sink(NULL, NULL);
	if (in != stdin)
		fclose(in);
	printf("%zu crash states in process (%zu at a flush, %zu between flushes; "
	       "%zu log entries, %zu flushes, %zu files fsynced)%s\n",
	       c.at_flush + c.between, c.at_flush, c.between, c.info.entries,
	       c.info.flushes, c.nfiles, c.failed ? "" : ": all passed");
	if (c.failed)
		fprintf(stderr, "%zu of them failed%s\n", c.failed,
			c.failed > NAMED ? " (the first named above)" : "");
	unload(&c);
	return err ? EXIT_USAGE : c.failed ? EXIT_FAILED : 0;
}
