/*
 * miscfs-replay - rebuild an image from a copy of it and the write log
 * the daemon kept with -o writelog=FILE: as it stood at any flush, or at
 * any entry of the log with the writes since the last flush kept,
 * dropped, or kept in part as a power cut could leave them.
 *
 * The output starts as a copy of the base image; the log's writes are
 * laid onto a shared mapping of it (bdev_wrap_logfile_replay), so an
 * image of any size costs no more memory than the pages it touches.
 * BASE or OUTPUT may be an NBD export (nbd://, nbd+unix://): then the
 * image is built in memory, as large as the device.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bdev.h"
#include "tools.h"
#include "util.h"

#define EXIT_FAILED    1   /* nothing usable was made */
#define EXIT_USAGE     2
#define EXIT_LOG_ENDED 3   /* done, from the complete records of a log
                              that ends early */
#define COPY_CHUNK ((size_t)1 << 20)

static const char usage_text[] =
"Usage: miscfs-replay [--flush N | --entry N [--mode MODE] [--seed S]]\n"
"                     BASE LOG OUTPUT\n"
"       miscfs-replay --list LOG\n"
"       miscfs-replay --count LOG\n"
"\n"
"Rebuild into OUTPUT the image BASE became, from the write log LOG that\n"
"miscfs -o writelog=LOG recorded while BASE's original was mounted.\n"
"\n"
"  --flush N    the image as it stood when the N-th flush completed\n"
"               (0: BASE itself)\n"
"  --entry N    the image after the first N log entries, with the writes\n"
"               since the last flush among them chosen by --mode\n"
"  --mode MODE  keep (all survive, the default), drop (all are lost),\n"
"               random (each survives or not), torn (as random, and a\n"
"               survivor may be torn at a 512-byte boundary), blocks\n"
"               (each block of each write survives or not)\n"
"  --seed S     the seed of random, torn and blocks (default 0)\n"
"  --list       print the log's entries: INDEX write OFFSET LENGTH, or\n"
"               INDEX flush NUMBER\n"
"  --count      print the number of entries and of flushes\n"
"\n"
"Without --flush or --entry, OUTPUT is the image after the whole log.\n"
"BASE and OUTPUT may be exports of NBD servers (nbd://HOST[:PORT]/EXPORT,\n"
"nbd+unix:///EXPORT?socket=PATH); the image is then built in memory.\n"
"\n"
"Exit status: 0 done; 1 failed (bad log header, N beyond the log, I/O\n"
"error); 2 usage; 3 done, but the log ends early (a record cut short or\n"
"damaged, named with its offset): only its complete records were used.\n";

enum action { ACT_IMAGE, ACT_LIST, ACT_COUNT };

struct replay_args {
	enum action act;
	bool by_flush, by_entry;
	uint64_t n;
	enum bdev_cut mode;
	uint64_t seed;
	const char *base, *log, *out;
};

static int parse_mode(const char *s, enum bdev_cut *mode)
{
	if (bdev_cut_parse(s, mode))
		return tool_fail("--mode %s: use keep, drop, random, torn or blocks", s);
	return 0;
}

static int parse_number(const char *opt, const char *s, uint64_t *n)
{
	char *end;

	errno = 0;
	*n = strtoull(s, &end, 0);
	if (errno || !*s || *end || *s == '-')
		return tool_fail("%s %s: not a number", opt, s);
	return 0;
}

static int parse_option(int c, struct replay_args *a)
{
	switch (c) {
	case 'F':
		a->by_flush = true;
		return parse_number("--flush", optarg, &a->n);
	case 'E':
		a->by_entry = true;
		return parse_number("--entry", optarg, &a->n);
	case 'm':
		return parse_mode(optarg, &a->mode);
	case 's':
		return parse_number("--seed", optarg, &a->seed);
	case 'l':
		a->act = ACT_LIST;
		return 0;
	case 'c':
		a->act = ACT_COUNT;
		return 0;
	default:
		return -EINVAL;
	}
}

static int parse_args(int argc, char **argv, struct replay_args *a)
{
	static const struct option longopts[] = {
		{ "flush", required_argument, NULL, 'F' },
		{ "entry", required_argument, NULL, 'E' },
		{ "mode", required_argument, NULL, 'm' },
		{ "seed", required_argument, NULL, 's' },
		{ "list", no_argument, NULL, 'l' },
		{ "count", no_argument, NULL, 'c' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c, left;

	*a = (struct replay_args){ .mode = BDEV_CUT_KEEP_ALL };
	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1)
		if (c == 'h' || parse_option(c, a))
			return -EINVAL;
	left = argc - optind;
	if (a->by_flush && a->by_entry)
		return tool_fail("--flush and --entry exclude each other");
	if (a->act != ACT_IMAGE) {
		a->log = argv[optind];
		return left == 1 ? 0 : -EINVAL;
	}
	if (left != 3)
		return -EINVAL;
	a->base = argv[optind];
	a->log = argv[optind + 1];
	a->out = argv[optind + 2];
	return 0;
}

/* ---- the log --------------------------------------------------------------- */

static void list_log(const struct bdev_wrap_logfile *l, size_t n)
{
	const struct bdev_wrap_log_entry *e;
	size_t flushes = 0;

	for (size_t i = 0; i < n; i++) {
		e = bdev_wrap_logfile_entry(l, i);
		if (e->flush)
			printf("%zu flush %zu\n", i, ++flushes);
		else
			printf("%zu write %" PRIu64 " %zu\n", i, e->off, e->len);
	}
}

/* The number of entries the image is made from. */
static int choose_prefix(const struct replay_args *a, const struct bdev_wrap_logfile *l,
			 const struct bdev_wrap_logfile_info *info, size_t *prefix)
{
	size_t flushes = 0;

	if (!a->by_flush) {
		if (a->by_entry && a->n > info->entries)
			return tool_fail("--entry %" PRIu64 ": the log holds %zu entries",
					 a->n, info->entries);
		*prefix = a->by_entry ? (size_t)a->n : info->entries;
		return 0;
	}
	if (a->n > info->flushes)
		return tool_fail("--flush %" PRIu64 ": the log holds %zu flushes", a->n,
				 info->flushes);
	*prefix = 0;
	while (flushes < a->n)
		flushes += bdev_wrap_logfile_entry(l, (*prefix)++)->flush;
	return 0;
}

/* ---- the image ------------------------------------------------------------- */

static int copy_fallback(int in, int out, uint64_t done, uint64_t size)
{
	char *buf = malloc(COPY_CHUNK);
	ssize_t n = 0;

	if (!buf)
		return -ENOMEM;
	while (done < size) {
		n = pread(in, buf, UT_MIN(COPY_CHUNK, size - done), (off_t)done);
		if (n > 0)
			n = pwrite(out, buf, (size_t)n, (off_t)done);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		done += (uint64_t)n;
	}
	free(buf);
	return done == size ? 0 : n < 0 ? -errno : -EIO;
}

static int copy_file(int in, int out, uint64_t size)
{
	uint64_t done = 0;
	ssize_t n;

	while (done < size) {
		n = copy_file_range(in, NULL, out, NULL, size - done, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return copy_fallback(in, out, done, size);
		done += (uint64_t)n;
	}
	return 0;
}

/* Open BASE and a fresh OUTPUT (never BASE itself); copy one to the other. */
static int make_output(const struct replay_args *a, uint64_t dev_size, int *fd)
{
	struct stat bst, ost;
	int in = open(a->base, O_RDONLY | O_CLOEXEC), err;

	if (in < 0 || fstat(in, &bst))
		return tool_fail("%s: %s", a->base, strerror(errno));
	if ((uint64_t)bst.st_size < dev_size) {
		close(in);
		return tool_fail("%s: %" PRIu64 " bytes, the log's device has %" PRIu64,
				 a->base, (uint64_t)bst.st_size, dev_size);
	}
	if (!stat(a->out, &ost) && ost.st_dev == bst.st_dev && ost.st_ino == bst.st_ino) {
		close(in);
		return tool_fail("%s: the output would overwrite the base image", a->out);
	}
	*fd = open(a->out, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	err = *fd < 0 ? -errno : copy_file(in, *fd, (uint64_t)bst.st_size);
	close(in);
	if (err)
		return tool_fail("%s: %s", a->out, strerror(-err));
	return 0;
}

static int replay_into(int fd, const struct replay_args *a, const struct bdev_wrap_logfile *l,
		       uint64_t dev_size, size_t prefix)
{
	void *img = dev_size ? mmap(NULL, dev_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)
			     : NULL;

	if (img == MAP_FAILED)
		return tool_fail("%s: mmap: %s", a->out, strerror(errno));
	bdev_wrap_logfile_replay(l, prefix, a->mode, a->seed, img);
	if (img && (msync(img, dev_size, MS_SYNC) || munmap(img, dev_size)))
		return tool_fail("%s: %s", a->out, strerror(errno));
	if (fsync(fd))
		return tool_fail("%s: %s", a->out, strerror(errno));
	return 0;
}

/* ---- NBD exports: the image is built in memory -------------------------- */

/* Read or write [0, @len) of @path, an NBD export or a file, into or from
 * @img; a written one is flushed. */
static int transfer(const char *path, bool write, uint32_t bs, char *img, uint64_t len)
{
	struct bdev_open_opts o = { .block_size = bs, .read_only = !write };
	struct bdev *bd;
	uint64_t size;
	int err = bdev_open(path, &o, &bd);

	if (err)
		return tool_fail("%s: %s", path, strerror(-err));
	size = bd->size;
	for (uint64_t at = 0; size >= len && !err && at < len; at += COPY_CHUNK) {
		size_t n = (size_t)UT_MIN(COPY_CHUNK, len - at);

		err = write ? bdev_write(bd, at, img + at, n) : bdev_read(bd, at, img + at, n);
	}
	if (!err && write && size >= len)
		err = bdev_flush(bd);
	bdev_close(bd);
	if (size < len)
		return tool_fail("%s: %" PRIu64 " bytes, the log's device has %" PRIu64,
				 path, size, len);
	return err ? tool_fail("%s: %s", path, strerror(-err)) : 0;
}

/* BASE or OUTPUT is an export of an NBD server: no file to map, so the
 * image is read whole into memory, replayed there and written out. */
static int build_in_memory(const struct replay_args *a, const struct bdev_wrap_logfile *l,
			   const struct bdev_wrap_logfile_info *info, size_t prefix)
{
	uint64_t len = info->dev_size;
	char *img;
	int err;

	if (!strcmp(a->base, a->out))
		return tool_fail("%s: the output would overwrite the base image", a->out);
	img = len ? mmap(NULL, len, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0) : NULL;
	if (img == MAP_FAILED)
		return tool_fail("%" PRIu64 " bytes of memory for the image: %s", len,
				 strerror(errno));
	err = transfer(a->base, false, info->block_size, img, len);
	if (!err && !bdev_is_remote(a->out)) {
		int fd = open(a->out, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

		if (fd < 0 || ftruncate(fd, (off_t)len) || close(fd))
			err = tool_fail("%s: %s", a->out, strerror(errno));
	}
	if (!err)
		bdev_wrap_logfile_replay(l, prefix, a->mode, a->seed, img);
	if (!err)
		err = transfer(a->out, true, info->block_size, img, len);
	if (img)
		munmap(img, len);
	return err;
}

static int build_image(const struct replay_args *a, const struct bdev_wrap_logfile *l,
		       const struct bdev_wrap_logfile_info *info)
{
	size_t prefix = 0;
	int fd = -1, err;

	err = choose_prefix(a, l, info, &prefix);
	if (!err && (bdev_is_remote(a->base) || bdev_is_remote(a->out)))
		return build_in_memory(a, l, info, prefix);
	if (!err)
		err = make_output(a, info->dev_size, &fd);
	if (!err)
		err = replay_into(fd, a, l, info->dev_size, prefix);
	if (fd >= 0 && close(fd) && !err)
		err = tool_fail("%s: %s", a->out, strerror(errno));
	return err;
}

int main(int argc, char **argv)
{
	struct bdev_wrap_logfile_info info;
	struct bdev_wrap_logfile *l;
	struct replay_args a;
	char why[160];
	int err;

	mlog_set_ident("miscfs-replay");
	if (parse_args(argc, argv, &a)) {
		fputs(usage_text, stderr);
		return EXIT_USAGE;
	}
	err = bdev_wrap_logfile_open(a.log, &l, &info, why, sizeof(why));
	if (err) {
		tool_fail("%s: %s", a.log, err == -EUCLEAN ? why : strerror(-err));
		return EXIT_FAILED;
	}
	if (info.why[0])
		mlog_warn("%s: the log ends early: %s; using its %zu complete entries",
			  a.log, info.why, info.entries);
	if (a.act == ACT_LIST)
		list_log(l, info.entries);
	else if (a.act == ACT_COUNT)
		printf("entries: %zu\nflushes: %zu\n", info.entries, info.flushes);
	else
		err = build_image(&a, l, &info);
	bdev_wrap_logfile_close(l);
	if (err)
		return EXIT_FAILED;
	return info.why[0] ? EXIT_LOG_ENDED : 0;
}
