/*
 * mfsx - a random-operation exerciser for a mounted filesystem.
 *
 * File mode runs reads, writes, truncates, mapped reads and writes, syncs
 * and reopens on one file and checks every byte and the size against a
 * model in memory; tree mode (-T) runs namespace operations on a directory
 * tree and checks each result and errno, and the whole tree now and then,
 * against a model tree.  This file holds what both share: options, the
 * generator, the operation log and the failure report.
 */
#include <errno.h>
#include <ftw.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "mfsx.h"

struct mfsx_opts mfsx_opt = {
	.nops = 10000,
	.maxlen = 1 << 20,
	.maxoplen = 64 << 10,
	.maxents = 64,
	.dir = NULL,
};

unsigned long mfsx_opno;

static uint64_t rng_state;

struct log_line {
	unsigned long opno;
	char text[256];
};

/* The last lines logged, oldest overwritten first. */
static struct log_line log_ring[MFSX_LOG_SHOWN];
static unsigned log_next;
static unsigned long log_count;

uint64_t mfsx_mix(uint64_t x)
{
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

uint64_t mfsx_rand(void)
{
	rng_state += 0x9e3779b97f4a7c15ULL;
	return mfsx_mix(rng_state);
}

uint64_t mfsx_below(uint64_t n)
{
	/* The modulo bias is below 2^-40 for every n this program uses. */
	return mfsx_rand() % n;
}

unsigned mfsx_pick_kind(const struct mfsx_opkind *kinds, unsigned n)
{
	uint64_t total = 0, r;

	for (unsigned i = 0; i < n; i++)
		if (!(mfsx_opt.disabled & (1ULL << i)))
			total += kinds[i].weight;
	r = mfsx_below(total);
	for (unsigned i = 0; i < n; i++) {
		if (mfsx_opt.disabled & (1ULL << i))
			continue;
		if (r < kinds[i].weight)
			return i;
		r -= kinds[i].weight;
	}
	return 0;       /* not reached: total covers every enabled weight */
}

void mfsx_log(const char *fmt, ...)
{
	struct log_line *l = &log_ring[log_next];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(l->text, sizeof(l->text), fmt, ap);
	va_end(ap);
	l->opno = mfsx_opno;
	log_next = (log_next + 1) % MFSX_LOG_SHOWN;
	log_count++;
	if (mfsx_opt.verbose)
		printf("%8lu %s\n", l->opno, l->text);
}

static void print_log(void)
{
	unsigned n = log_count < MFSX_LOG_SHOWN ? (unsigned)log_count : MFSX_LOG_SHOWN;
	unsigned i = (log_next + MFSX_LOG_SHOWN - n) % MFSX_LOG_SHOWN;

	fprintf(stderr, "mfsx: the last %u operations, oldest first:\n", n);
	for (; n > 0; n--, i = (i + 1) % MFSX_LOG_SHOWN)
		fprintf(stderr, "  %8lu %s\n", log_ring[i].opno, log_ring[i].text);
}

/* Every option spelled out, so the line replays the run whatever the defaults. */
static void print_command(FILE *f)
{
	const struct mfsx_opts *o = &mfsx_opt;

	fprintf(f, "%s%s%s -N %lu -S %" PRIu64, o->prog, o->tree ? " -T" : "",
		o->big ? " -B" : "", o->nops, o->seed);
	if (o->tree)
		fprintf(f, " -n %lu", o->maxents);
	else
		fprintf(f, " -l %" PRIu64 " -o %" PRIu64, o->maxlen, o->maxoplen);
	fprintf(f, " -k %lu", o->check_every);
	if (o->reopen_every)
		fprintf(f, " -c %lu", o->reopen_every);
	if (o->xlist)
		fprintf(f, " -x %s", o->xlist);
	if (o->inject_op)
		fprintf(f, " -Z %lu", o->inject_op);
	if (o->name)
		fprintf(f, " -f %s", o->name);
	fprintf(f, " %s\n", o->dir);
}

void mfsx_fail_begin(const char *fmt, ...)
{
	va_list ap;

	fflush(stdout);
	fprintf(stderr, "mfsx: FAILED at operation %lu of %lu, seed %" PRIu64 "\n",
		mfsx_opno, mfsx_opt.nops, mfsx_opt.seed);
	fprintf(stderr, "mfsx: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n");
}

void mfsx_fail_end(void)
{
	print_log();
	fprintf(stderr, "mfsx: reproduce with (-v prints every operation):\n  ");
	print_command(stderr);
	exit(1);
}

void mfsx_fail(const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	mfsx_fail_begin("%s", msg);
	mfsx_fail_end();
}

static int remove_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	return flag == FTW_DP ? rmdir(path) : unlink(path);
}

int mfsx_remove_all(const char *path)
{
	if (access(path, F_OK) != 0 && errno == ENOENT)
		return 0;
	return nftw(path, remove_one, 16, FTW_DEPTH | FTW_PHYS);
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: mfsx [options] DIR\n"
		"  -T       tree mode: namespace operations (default: file mode)\n"
		"  -N ops   operations to run (10000)\n"
		"  -S seed  generator seed, 0 = pick one and print it (0)\n"
		"  -l len   largest file size, k/m/g suffixes (1m)\n"
		"  -o len   longest single read or write (64k)\n"
		"  -B       sparse big file: four windows of len/4 at 0, 2 GiB, 4 GiB, 8 GiB\n"
		"  -k K     full compare (file) or full walk (tree) every K ops (scaled)\n"
		"  -c N     close and reopen the file every N ops (never)\n"
		"  -n N     most entries in the tree (64)\n"
		"  -x a,b   disable the named op kinds (see below)\n"
		"  -W       no mapped writes (= -x mapwrite)\n"
		"  -R       no mapped reads (= -x mapread)\n"
		"  -f name  file or tree name inside DIR (mfsx.file / mfsx.tree)\n"
		"  -Z op    self-test: one wrong byte in the first write from that op on\n"
		"  -K       keep the file or tree after a passing run\n"
		"  -q       quiet: print only a failure\n"
		"  -v       print every operation\n");
	fprintf(f, "file op kinds:");
	for (unsigned i = 0; i < mfsx_file_nkinds; i++)
		fprintf(f, " %s", mfsx_file_kinds[i].name);
	fprintf(f, "\ntree op kinds:");
	for (unsigned i = 0; i < mfsx_tree_nkinds; i++)
		fprintf(f, " %s", mfsx_tree_kinds[i].name);
	fprintf(f, "\n");
}

/* A size with an optional k, m or g suffix (powers of 1024). */
static uint64_t parse_size(const char *s, char opt)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno != 0 || end == s)
		goto bad;
	switch (*end) {
	case 'k': case 'K': v <<= 10; end++; break;
	case 'm': case 'M': v <<= 20; end++; break;
	case 'g': case 'G': v <<= 30; end++; break;
	default: break;
	}
	if (*end == '\0')
		return v;
bad:
	fprintf(stderr, "mfsx: -%c: bad number '%s'\n", opt, s);
	exit(2);
}

/* Turns the -x list (and -W/-R) into bits of the chosen mode's op kinds. */
static void resolve_disabled(char *const *names, unsigned nnames)
{
	const struct mfsx_opkind *kinds = mfsx_opt.tree ? mfsx_tree_kinds : mfsx_file_kinds;
	unsigned nkinds = mfsx_opt.tree ? mfsx_tree_nkinds : mfsx_file_nkinds;
	unsigned left = nkinds;

	for (unsigned i = 0; i < nnames; i++) {
		unsigned k;

		for (k = 0; k < nkinds && strcmp(kinds[k].name, names[i]) != 0; k++)
			;
		if (k == nkinds) {
			fprintf(stderr, "mfsx: -x: no op kind '%s' in this mode\n", names[i]);
			exit(2);
		}
		mfsx_opt.disabled |= 1ULL << k;
	}
	for (unsigned k = 0; k < nkinds; k++)
		left -= !!(mfsx_opt.disabled & (1ULL << k));
	if (left == 0) {
		fprintf(stderr, "mfsx: every op kind is disabled\n");
		exit(2);
	}
}

/* Splits the -x list, after -W and -R have been folded into it. */
static void parse_disabled(bool no_mapwrite, bool no_mapread)
{
	char *names[64], *copy, *tok, *save = NULL;
	unsigned n = 0;

	if (no_mapwrite || no_mapread) {
		size_t len = (mfsx_opt.xlist ? strlen(mfsx_opt.xlist) : 0) + 32;
		char *x = malloc(len);

		if (!x) {
			perror("mfsx: malloc");
			exit(2);
		}
		snprintf(x, len, "%s%s%s%s", mfsx_opt.xlist ? mfsx_opt.xlist : "",
			 mfsx_opt.xlist ? "," : "", no_mapwrite ? "mapwrite," : "",
			 no_mapread ? "mapread" : "");
		if (x[strlen(x) - 1] == ',')
			x[strlen(x) - 1] = '\0';
		mfsx_opt.xlist = x;
	}
	if (!mfsx_opt.xlist) {
		resolve_disabled(NULL, 0);
		return;
	}
	copy = strdup(mfsx_opt.xlist);
	if (!copy) {
		perror("mfsx: strdup");
		exit(2);
	}
	for (tok = strtok_r(copy, ",", &save); tok && n < 64; tok = strtok_r(NULL, ",", &save))
		names[n++] = tok;
	resolve_disabled(names, n);
	free(copy);
}

static uint64_t random_seed(void)
{
	uint64_t s = 0;

	if (getrandom(&s, sizeof(s), 0) != (ssize_t)sizeof(s))
		s = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32);
	/* Short seeds are easier to type back in; zero means "pick one". */
	s %= 1000000000;
	return s ? s : 1;
}

/* Defaults that depend on other options, then sanity checks. */
static void finish_options(void)
{
	struct mfsx_opts *o = &mfsx_opt;

	if (o->seed == 0)
		o->seed = random_seed();
	rng_state = o->seed;
	if (o->check_every == 0) {
		/* About 8 KiB of full-compare reading per op, at least every 1000 ops. */
		uint64_t k = o->maxlen / 8192;

		o->check_every = o->tree ? 50 : (unsigned long)(k < 64 ? 64 : k > 1000 ? 1000 : k);
	}
	if (o->maxlen < 4096 || (o->big && o->maxlen < 64 << 10)) {
		fprintf(stderr, "mfsx: -l too small (4k at least, 64k with -B)\n");
		exit(2);
	}
	if (o->maxoplen == 0 || o->maxoplen > (1u << 30)) {
		fprintf(stderr, "mfsx: -o must be between 1 and 1g\n");
		exit(2);
	}
	if (o->maxents < 4 || o->maxents > 10000) {
		fprintf(stderr, "mfsx: -n must be between 4 and 10000\n");
		exit(2);
	}
}

static void parse_options(int argc, char **argv)
{
	bool no_mapwrite = false, no_mapread = false;
	int c;

	mfsx_opt.prog = argv[0];
	while ((c = getopt(argc, argv, "TN:S:l:o:Bk:c:n:x:WRf:Z:Kqvh")) != -1) {
		switch (c) {
		case 'T': mfsx_opt.tree = true; break;
		case 'N': mfsx_opt.nops = parse_size(optarg, c); break;
		case 'S': mfsx_opt.seed = parse_size(optarg, c); break;
		case 'l': mfsx_opt.maxlen = parse_size(optarg, c); break;
		case 'o': mfsx_opt.maxoplen = parse_size(optarg, c); break;
		case 'B': mfsx_opt.big = true; break;
		case 'k': mfsx_opt.check_every = parse_size(optarg, c); break;
		case 'c': mfsx_opt.reopen_every = parse_size(optarg, c); break;
		case 'n': mfsx_opt.maxents = parse_size(optarg, c); break;
		case 'x': mfsx_opt.xlist = optarg; break;
		case 'W': no_mapwrite = true; break;
		case 'R': no_mapread = true; break;
		case 'f': mfsx_opt.name = optarg; break;
		case 'Z': mfsx_opt.inject_op = parse_size(optarg, c); break;
		case 'K': mfsx_opt.keep = true; break;
		case 'q': mfsx_opt.quiet = true; break;
		case 'v': mfsx_opt.verbose = true; break;
		case 'h': usage(stdout); exit(0);
		default: usage(stderr); exit(2);
		}
	}
	if (optind != argc - 1) {
		usage(stderr);
		exit(2);
	}
	mfsx_opt.dir = argv[optind];
	parse_disabled(no_mapwrite, no_mapread);
	finish_options();
}

int main(int argc, char **argv)
{
	struct timespec t0, t1;
	int rc;

	parse_options(argc, argv);
	/* Unbuffered lines keep -v output and a failure report in order. */
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (!mfsx_opt.quiet) {
		printf("mfsx: seed %" PRIu64 ", command: ", mfsx_opt.seed);
		print_command(stdout);
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	rc = mfsx_opt.tree ? mfsx_tree_run() : mfsx_file_run();
	clock_gettime(CLOCK_MONOTONIC, &t1);
	if (!mfsx_opt.quiet && rc == 0)
		printf("mfsx: %lu operations passed in %.2f s\n", mfsx_opt.nops,
		       (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9);
	return rc;
}
