/*
 * fsops.c - the timing-sensitive loops of bench/compare.sh, one
 * subcommand each, run on a mounted filesystem of any kind.
 *
 *   fsops seqwrite FILE SIZE        SIZE bytes in 1 MiB writes, then fsync
 *                                   -> MB/s, the fsync included
 *   fsops seqread FILE              the whole file in 1 MiB reads -> MB/s
 *   fsops create DIR N SIZE PERDIR  N files of SIZE bytes, PERDIR to a
 *                                   subdirectory (0: all in DIR), then
 *                                   syncfs and an fsync of each directory
 *                                   -> files/s, all included (sync_fs)
 *   fsops lookup DIR N PASSES       stat() each of the N names "create"
 *                                   made with PERDIR 0, in a random order,
 *                                   PASSES times -> lookups/s, one line a pass
 *   fsops meta DIR COUNT            COUNT rounds of mkdir d, create d/f,
 *                                   rename d/f d/g, rename d e, unlink e/g,
 *                                   rmdir e -> operations/s (six a round)
 *   fsops onedir OP DIR N STEP      N empty files in the one directory DIR:
 *                                   OP create (in order), stat (in the
 *                                   fixed random order of lookup) or
 *                                   unlink (in order) -> one line per STEP
 *                                   files, "FIRST-LAST OPS/s", then the
 *                                   whole run's OPS/s; create and unlink
 *                                   end with an fsync of DIR, inside the
 *                                   last step's time
 *
 * Each prints its figure alone on a line (MB are 10^6 bytes).  Every
 * system call is checked: the first failure is named on stderr and the
 * exit status is 1, so that a failing filesystem is never timed.
 */
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define CHUNK (1u << 20)

static void die(const char *what, const char *path)
{
	fprintf(stderr, "fsops: %s %s: %s\n", what, path, strerror(errno));
	exit(1);
}

static void usage(void)
{
	fprintf(stderr, "usage: fsops seqwrite FILE SIZE | seqread FILE |\n"
			"       create DIR N SIZE PERDIR | lookup DIR N PASSES |\n"
			"       meta DIR COUNT | onedir create|stat|unlink DIR N STEP\n");
	exit(2);
}

static uint64_t number(const char *s)
{
	uint64_t v;

	if (ut_parse_size(s, &v)) {
		fprintf(stderr, "fsops: not a number: %s\n", s);
		exit(2);
	}
	return v;
}

static double seconds_since(uint64_t t0)
{
	return (double)(ut_now_ns() - t0) / 1e9;
}

static char *chunk(void)
{
	char *buf = malloc(CHUNK);

	if (!buf) {
		fprintf(stderr, "fsops: out of memory\n");
		exit(1);
	}
	/* Not zeros, so that nothing on the way can take a shortcut. */
	for (size_t i = 0; i < CHUNK; i++)
		buf[i] = (char)(i * 7 + 1);
	return buf;
}

/* Writes all of @len, or dies: a short write is never a success. */
static void write_all(int fd, const char *buf, size_t len, const char *path)
{
	while (len) {
		ssize_t n = write(fd, buf, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			if (n == 0)
				errno = EIO;
			die("write", path);
		}
		buf += n;
		len -= (size_t)n;
	}
}

/* @size bytes of @buf's first CHUNK, over and over. */
static void write_size(int fd, const char *buf, uint64_t size, const char *path)
{
	while (size) {
		size_t n = size < CHUNK ? (size_t)size : CHUNK;

		write_all(fd, buf, n, path);
		size -= n;
	}
}

static int seqwrite(char **argv)
{
	const char *path = argv[0];
	uint64_t size = number(argv[1]), t0;
	char *buf = chunk();
	int fd;

	t0 = ut_now_ns();
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0)
		die("open", path);
	write_size(fd, buf, size, path);
	if (fsync(fd))
		die("fsync", path);
	if (close(fd))
		die("close", path);
	printf("%.1f\n", (double)size / 1e6 / seconds_since(t0));
	free(buf);
	return 0;
}

static int seqread(char **argv)
{
	const char *path = argv[0];
	char *buf = chunk();
	uint64_t total = 0, t0;
	struct stat st;
	ssize_t n;
	int fd;

	t0 = ut_now_ns();
	fd = open(path, O_RDONLY);
	if (fd < 0)
		die("open", path);
	while ((n = read(fd, buf, CHUNK)) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			die("read", path);
		total += (uint64_t)n;
	}
	if (fstat(fd, &st))
		die("fstat", path);
	if (total != (uint64_t)st.st_size) {
		fprintf(stderr, "fsops: read %" PRIu64 " bytes of %s, its size is %lld\n",
			total, path, (long long)st.st_size);
		return 1;
	}
	if (close(fd))
		die("close", path);
	printf("%.1f\n", (double)total / 1e6 / seconds_since(t0));
	free(buf);
	return 0;
}

/* Subdirectory @d of "create" with PERDIR. */
static void dir_name(char *buf, size_t len, const char *dir, uint64_t d)
{
	snprintf(buf, len, "%s/d%05" PRIu64, dir, d);
}

static void file_name(char *buf, size_t len, const char *dir, uint64_t i,
		      uint64_t perdir)
{
	if (perdir)
		snprintf(buf, len, "%s/d%05" PRIu64 "/f%07" PRIu64, dir, i / perdir, i);
	else
		snprintf(buf, len, "%s/f%07" PRIu64, dir, i);
}

static void make_file(const char *path, const char *data, uint64_t size)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0644);

	if (fd < 0)
		die("create", path);
	write_size(fd, data, size, path);
	if (close(fd))
		die("close", path);
}

/* @op (fsync, syncfs) on the directory @path, named @what in a failure. */
static void on_dir(const char *path, int (*op)(int fd), const char *what)
{
	int fd = open(path, O_RDONLY | O_DIRECTORY);

	if (fd < 0)
		die("open", path);
	if (op(fd))
		die(what, path);
	if (close(fd))
		die("close", path);
}

/*
 * Everything made durable: syncfs, which writes back a kernel
 * filesystem, then an fsync of every directory made and of DIR, since
 * syncfs reaches no FUSE daemon (virtiofs aside) and would cost them
 * nothing.  On miscfs and fuse2fs the first of those fsyncs commits
 * everything, the rest find nothing left; passthrough_ll's lower
 * filesystem syncs the directories alone.
 */
static void sync_fs(const char *dir, uint64_t n, uint64_t perdir)
{
	char path[4096];

	on_dir(dir, syncfs, "syncfs");
	for (uint64_t d = 0; perdir && d * perdir < n; d++) {
		dir_name(path, sizeof(path), dir, d);
		on_dir(path, fsync, "fsync");
	}
	on_dir(dir, fsync, "fsync");
}

static int create(char **argv)
{
	const char *dir = argv[0];
	uint64_t n = number(argv[1]), size = number(argv[2]);
	uint64_t perdir = number(argv[3]), t0;
	char *data = chunk(), path[4096];

	t0 = ut_now_ns();
	for (uint64_t i = 0; i < n; i++) {
		if (perdir && i % perdir == 0) {
			dir_name(path, sizeof(path), dir, i / perdir);
			if (mkdir(path, 0755))
				die("mkdir", path);
		}
		file_name(path, sizeof(path), dir, i, perdir);
		make_file(path, data, size);
	}
	sync_fs(dir, n, perdir);
	printf("%.1f\n", (double)n / seconds_since(t0));
	free(data);
	return 0;
}

/* A fixed order, the same on every filesystem: Fisher-Yates, xorshift. */
static uint64_t *shuffled(uint64_t n)
{
	uint64_t *order = malloc(n * sizeof(*order)), s = 0x9e3779b97f4a7c15ULL;

	if (!order) {
		fprintf(stderr, "fsops: out of memory\n");
		exit(1);
	}
	for (uint64_t i = 0; i < n; i++)
		order[i] = i;
	for (uint64_t i = n; i > 1; i--) {
		uint64_t j, t;

		s ^= s << 13;
		s ^= s >> 7;
		s ^= s << 17;
		j = s % i;
		t = order[i - 1];
		order[i - 1] = order[j];
		order[j] = t;
	}
	return order;
}

static int lookup(char **argv)
{
	const char *dir = argv[0];
	uint64_t n = number(argv[1]), passes = number(argv[2]);
	uint64_t *order = shuffled(n);
	char path[4096];
	struct stat st;

	for (uint64_t p = 0; p < passes; p++) {
		uint64_t t0 = ut_now_ns();

		for (uint64_t i = 0; i < n; i++) {
			file_name(path, sizeof(path), dir, order[i], 0);
			if (stat(path, &st))
				die("stat", path);
		}
		printf("%.1f\n", (double)n / seconds_since(t0));
	}
	free(order);
	return 0;
}

static void meta_round(const char *dir)
{
	char d[4096], e[4096], f[4096], g[4096];
	int fd;

	snprintf(d, sizeof(d), "%s/d", dir);
	snprintf(e, sizeof(e), "%s/e", dir);
	snprintf(f, sizeof(f), "%s/d/f", dir);
	snprintf(g, sizeof(g), "%s/d/g", dir);
	if (mkdir(d, 0755))
		die("mkdir", d);
	fd = open(f, O_WRONLY | O_CREAT | O_EXCL, 0644);
	if (fd < 0)
		die("create", f);
	if (close(fd))
		die("close", f);
	if (rename(f, g))
		die("rename", f);
	if (rename(d, e))
		die("rename", d);
	snprintf(g, sizeof(g), "%s/e/g", dir);
	if (unlink(g))
		die("unlink", g);
	if (rmdir(e))
		die("rmdir", e);
}

static int meta(char **argv)
{
	const char *dir = argv[0];
	uint64_t count = number(argv[1]), t0 = ut_now_ns();

	for (uint64_t i = 0; i < count; i++)
		meta_round(dir);
	printf("%.1f\n", (double)count * 6 / seconds_since(t0));
	return 0;
}

/* One file of "onedir": create, stat or unlink @path. */
static void onedir_op(char op, const char *path)
{
	struct stat st;
	int fd;

	if (op == 'c') {
		fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0644);
		if (fd < 0 || close(fd))
			die("create", path);
	} else if (op == 's') {
		if (stat(path, &st))
			die("stat", path);
	} else if (unlink(path)) {
		die("unlink", path);
	}
}

static int onedir(char **argv)
{
	const char *op = argv[0], *dir = argv[1];
	uint64_t n = number(argv[2]), step = number(argv[3]);
	uint64_t *order = strcmp(op, "stat") ? NULL : shuffled(n), t0, ts;
	char path[4096];

	if ((strcmp(op, "create") && strcmp(op, "stat") && strcmp(op, "unlink")) || !step)
		usage();
	t0 = ts = ut_now_ns();
	for (uint64_t i = 0; i < n; i++) {
		file_name(path, sizeof(path), dir, order ? order[i] : i, 0);
		onedir_op(op[0], path);
		if (i + 1 == n && op[0] != 's')
			on_dir(dir, fsync, "fsync");
		if ((i + 1) % step == 0 || i + 1 == n) {
			printf("%" PRIu64 "-%" PRIu64 " %.1f\n", i - i % step, i,
			       (double)(i % step + 1) / seconds_since(ts));
			fflush(stdout);
			ts = ut_now_ns();
		}
	}
	printf("%.1f\n", (double)n / seconds_since(t0));
	free(order);
	return 0;
}

int main(int argc, char **argv)
{
	static const struct {
		const char *name;
		int args;
		int (*fn)(char **argv);
	} cmds[] = {
		{ "seqwrite", 2, seqwrite },
		{ "seqread", 1, seqread },
		{ "create", 4, create },
		{ "lookup", 3, lookup },
		{ "meta", 2, meta },
		{ "onedir", 4, onedir },
	};

	if (argc < 2)
		usage();
	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
		if (!strcmp(argv[1], cmds[i].name)) {
			if (argc != cmds[i].args + 2)
				usage();
			return cmds[i].fn(argv + 2);
		}
	usage();
}
