/*
 * fsck.miscfs - check and repair a miscfs filesystem, with the options,
 * output and exit status of e2fsck that scripts and fsck(8) rely on.
 *
 * This file reads the options, takes the image's lock, runs the checker
 * (the fsck/ layer) and turns its result into the exit status.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include "bdev.h"
#include "fsck_cli.h"
#include "tools.h"
#include "util.h"

static const char usage_text[] =
"Usage: fsck.miscfs [-n|-y|-p|-a] [-f] [-D] [-v] [-C FD] [-j FILE] IMAGE\n"
"       fsck.miscfs --list-problems | -V | -h\n"
"\n"
"Check a miscfs filesystem (an image file, a block device or an NBD\n"
"export: nbd://HOST/EXPORT, nbd+unix:///EXPORT?socket=PATH) and repair it.\n"
"\n"
"Options:\n"
"  -n             open read-only and answer no to every question\n"
"  -y             answer yes to every question\n"
"  -p, -a         preen: fix what is safe to fix unattended, stop at the\n"
"                 first problem that is not\n"
"                 (without -n, -y or -p every question is asked on the terminal)\n"
"  -f             check even a filesystem marked clean\n"
"  -D             give every directory of more than one block a hashed\n"
"                 index (a filesystem with the dir_index feature)\n"
"  -v             detailed statistics at the end\n"
"  -C FD          progress: 0 a bar on the terminal, N>0 lines\n"
"                 \"pass current max image\" to file descriptor N\n"
"  -j, --json FILE  write a JSON report to FILE ('-': stdout; the text\n"
"                 output then goes to stderr)\n"
"  --list-problems  print every problem the checker knows and exit\n"
"  -V, --version  print the version and exit\n"
"  -h, --help     this help\n"
"\n"
"Exit status (bits, added): 0 no errors, 1 errors corrected, 4 errors left\n"
"uncorrected, 8 operational error, 16 usage error, 32 cancelled by the user.\n";

/* What parse_args leaves main to do. */
enum { ARGS_RUN = -1 };

static int usage_error(const char *fmt, const char *arg)
{
	if (fmt) {
		fprintf(stderr, "fsck.miscfs: ");
		fprintf(stderr, fmt, arg);
		fputc('\n', stderr);
	}
	fputs(usage_text, stderr);
	return FSCK_EXIT_USAGE;
}

static int set_mode(struct cli *c, int opt)
{
	static const struct { char opt; enum fsck_mode mode; } modes[] = {
		{ 'n', FSCK_NO }, { 'y', FSCK_YES }, { 'p', FSCK_PREEN },
		{ 'a', FSCK_PREEN },
	};

	for (size_t i = 0; i < UT_ARRAY_SIZE(modes); i++) {
		if (modes[i].opt != opt)
			continue;
		if (c->mode_opt && c->mode != modes[i].mode)
			return usage_error("only one of -n, -y and -p (or -a) may be given",
					   NULL);
		c->mode = modes[i].mode;
		c->mode_opt = (char)opt;
	}
	return ARGS_RUN;
}

/* -C FD as e2fsck takes it: 0 the bar, N > 0 lines to fd N; -N lines to fd
 * N, off until SIGUSR1 (fsck(8) hands that to its other checks). */
static int set_progress(struct cli *c, const char *arg)
{
	char *end;
	long fd;

	errno = 0;
	fd = strtol(arg, &end, 10);
	if (errno || end == arg || *end || fd > INT_MAX || fd < -INT_MAX)
		return usage_error("-C %s: not a file descriptor", arg);
	if (fd < 0) {
		fd = -fd;
		cli_progress_on = 0;
	}
	if (fd > 0 && fcntl((int)fd, F_GETFD) < 0)
		return usage_error("-C %s: that file descriptor is not open", arg);
	c->progress_fd = (int)fd;
	return ARGS_RUN;
}

static int list_one(void *arg, const char *code, enum fsck_pass pass, const char *fmt,
		    const char *question, bool preen_ok)
{
	printf("%s\t%s\t%s\t%s\t%s\n", code, cli_pass_name(pass), preen_ok ? "preen" : "-",
	       question ? question : "-", fmt);
	return 0;
}

static int parse_opt(struct cli *c, int opt, const char *arg)
{
	switch (opt) {
	case 'n': case 'y': case 'p': case 'a':
		return set_mode(c, opt);
	case 'f': c->force = true; return ARGS_RUN;
	case 'D': c->dir_index = true; return ARGS_RUN;
	case 'v': c->verbose = true; return ARGS_RUN;
	case 'C': return set_progress(c, arg);
	case 'j': c->json_path = arg; return ARGS_RUN;
	case 'L':
		fsck_problem_foreach(list_one, NULL);
		return FSCK_EXIT_OK;
	case 'V':
		printf("fsck.miscfs %s\n", MISCFS_VERSION);
		return FSCK_EXIT_OK;
	case 'h':
		fputs(usage_text, stdout);
		return FSCK_EXIT_OK;
	}
	return usage_error(NULL, NULL);        /* getopt said what was wrong */
}

/* Returns ARGS_RUN, or the exit status when there is nothing to check. */
static int parse_args(int argc, char **argv, struct cli *c)
{
	static const struct option longs[] = {
		{ "json", required_argument, NULL, 'j' },
		{ "list-problems", no_argument, NULL, 'L' },
		{ "version", no_argument, NULL, 'V' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	int opt, r = ARGS_RUN;

	while (r == ARGS_RUN &&
	       (opt = getopt_long(argc, argv, "nypafDvC:j:Vh", longs, NULL)) != -1)
		r = parse_opt(c, opt, optarg);
	if (r != ARGS_RUN)
		return r;
	if (optind != argc - 1)
		return usage_error(optind < argc ? "one IMAGE only" : "no IMAGE given",
				   NULL);
	c->image = argv[optind];
	if (c->dir_index && c->mode == FSCK_NO)
		return usage_error("-D changes the filesystem: it cannot go with -n", NULL);
	if (c->progress_fd == STDOUT_FILENO && c->json_path && !strcmp(c->json_path, "-"))
		return usage_error("-C 1 and -j - would both write to stdout", NULL);
	return ARGS_RUN;
}

/* ---- running the check --------------------------------------------------- */

/* The first signal asks the checker to stop where it may; a second one,
 * from a user who will not wait, ends the program at once. */
static void on_cancel(int sig)
{
	if (cli_cancel) {
		signal(sig, SIG_DFL);
		raise(sig);
	}
	cli_cancel = 1;
}

static void on_usr1(int sig) { cli_progress_on = 1; }
static void on_usr2(int sig) { cli_progress_on = 0; }

/* SA_RESTART: the checker's I/O goes on; the flag is what stops it. */
static void catch_signals(void)
{
	static const struct { int sig; void (*fn)(int); } h[] = {
		{ SIGINT, on_cancel }, { SIGTERM, on_cancel },
		{ SIGUSR1, on_usr1 }, { SIGUSR2, on_usr2 },
	};
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_flags = SA_RESTART;
	sigemptyset(&sa.sa_mask);
	for (size_t i = 0; i < UT_ARRAY_SIZE(h); i++) {
		sa.sa_handler = h[i].fn;
		sigaction(h[i].sig, &sa, NULL);
	}
}

/*
 * The daemon holds an exclusive flock on its image while it is mounted.  A
 * repair takes one as well, kept until the end, so neither ever runs under
 * the other; a read-only check takes a shared one and only warns when the
 * image is in use, since what it reads may be changing.  Returns the fd
 * holding the lock, NO_LOCK for an image that is no file, or -1 with
 * *error set.
 */
#define NO_LOCK (-2)

static int lock_image(struct cli *c, const char **error)
{
	bool ro = c->mode == FSCK_NO;
	const char *where;
	int fd;

	/* An NBD export has no file to lock: multi-mount protection, where
	 * the image has it, keeps a second host out (fsck_mmp_start). */
	if (bdev_is_remote(c->image))
		return NO_LOCK;
	where = tool_mounted_on(c->image);
	fd = open(c->image, O_RDONLY | O_CLOEXEC);

	if (fd < 0) {
		*error = strerror(errno);
		mlog_err("cannot open %s: %s", c->image, *error);
		return -1;
	}
	if (!where && !flock(fd, (ro ? LOCK_SH : LOCK_EX) | LOCK_NB))
		return fd;
	if (!where && errno != EWOULDBLOCK) {
		*error = strerror(errno);
		mlog_err("cannot lock %s: %s", c->image, *error);
	} else if (!ro) {
		*error = "in use";
		if (where)
			mlog_err("%s is in use (mounted on %s)", c->image, where);
		else
			mlog_err("%s is in use (mounted by a miscfs daemon?)", c->image);
	} else {
		mlog_warn("%s is in use (mounted by a miscfs daemon?): it may change "
			  "while it is read, and what is reported may be wrong", c->image);
		return fd;
	}
	close(fd);
	return -1;
}

static int run(struct cli *c, struct fsck_result *res, const char **error)
{
	struct fsck_opts o = {
		.mode = c->mode, .force = c->force, .dir_index = c->dir_index,
		.problem = cli_on_problem,
		.pass_start = cli_on_pass, .progress = cli_on_progress, .arg = c,
		.cancel = &cli_cancel,
	};
	struct bdev *bd;
	int err = fsck_open(c->image, c->mode == FSCK_NO, &bd);

	if (err) {              /* fsck_open said what went wrong */
		*error = err == -EUCLEAN ? "no valid superblock" : strerror(-err);
		return FSCK_EXIT_OPERATIONAL;
	}
	fsck_run(bd, &o, res);
	bdev_close(bd);
	cli_show_result(c, res);
	return res->exit;
}

static int check(struct cli *c)
{
	struct fsck_result res = { 0 };
	const char *error = NULL;
	int status = FSCK_EXIT_OPERATIONAL, lock;

	c->res = &res;
	lock = lock_image(c, &error);
	if (lock >= 0 || lock == NO_LOCK)
		status = run(c, &res, &error);
	if (lock >= 0)
		close(lock);
	if (c->json_on) {
		int err = cli_json_close(&c->json, status, &res, !error, error);

		if (err) {
			mlog_err("cannot write the report %s: %s", c->json_path,
				 strerror(-err));
			status |= FSCK_EXIT_OPERATIONAL;
		}
	}
	return status;
}

int main(int argc, char **argv)
{
	static const char *const mode_names[] = {
		[FSCK_ASK] = "ask", [FSCK_NO] = "no", [FSCK_YES] = "yes",
		[FSCK_PREEN] = "preen",
	};
	struct cli c = { .mode = FSCK_ASK, .progress_fd = -1 };
	int r;

	mlog_set_ident("fsck.miscfs");
	setvbuf(stdout, NULL, _IOLBF, 0);
	r = parse_args(argc, argv, &c);
	if (r != ARGS_RUN)
		return r;
	c.out = c.json_path && !strcmp(c.json_path, "-") ? stderr : stdout;
	c.bar.on = c.progress_fd == 0 && isatty(fileno(c.out));
	if (c.mode == FSCK_ASK && !isatty(STDIN_FILENO)) {
		mlog_err("need terminal for interactive repairs (give -n, -y or -p)");
		return FSCK_EXIT_OPERATIONAL;
	}
	if (c.json_path) {
		r = cli_json_open(&c.json, c.json_path, c.image, mode_names[c.mode]);
		if (r) {
			mlog_err("cannot write %s: %s", c.json_path, strerror(-r));
			return FSCK_EXIT_OPERATIONAL;
		}
		c.json_on = true;
	}
	catch_signals();
	return check(&c);
}
