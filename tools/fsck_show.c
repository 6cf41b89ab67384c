/*
 * fsck_show.c - what fsck.miscfs shows while it checks: each problem with
 * its question and answer (or the question put to the user), the titles
 * of the passes, the progress bar or the progress lines of -C, and the
 * lines after the run, in the shape e2fsck gives them, which scripts and
 * fsck(8) expect.
 */
#include "fsck_cli.h"

#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>

#include "util.h"

#define BAR_WIDTH     40
#define BAR_LINE      (9 + 2 + BAR_WIDTH + 6)   /* what the bar line spans */
#define REDRAW_NS     100000000ull               /* at most 10 redraws a second */

volatile sig_atomic_t cli_cancel;
volatile sig_atomic_t cli_progress_on = 1;

const char *cli_pass_name(enum fsck_pass pass)
{
	switch (pass) {
	case FSCK_PASS_JOURNAL: return "journal";
	case FSCK_PASS_0: return "0";
	case FSCK_PASS_1: return "1";
	case FSCK_PASS_1B: return "1b";
	case FSCK_PASS_2: return "2";
	case FSCK_PASS_3: return "3";
	case FSCK_PASS_4: return "4";
	case FSCK_PASS_5: return "5";
	}
	return "?";
}

const char *cli_answer_name(enum fsck_answer a)
{
	switch (a) {
	case FSCK_ANSWER_YES: return "yes";
	case FSCK_ANSWER_NO: return "no";
	case FSCK_ANSWER_CANCEL: return "cancel";
	}
	return "?";
}

/* Preening prints one line per problem, named by the image, as fsck(8)
 * may run several checks at once on one terminal. */
static void prefix(const struct cli *c)
{
	if (c->mode == FSCK_PREEN)
		fprintf(c->out, "%s: ", c->image);
}

/* Messages are sentences without their full stop; the question follows. */
static const char *stop_after(const char *msg)
{
	size_t n = strlen(msg);

	return n && msg[n - 1] == '.' ? "  " : ".  ";
}

/* ---- asking -------------------------------------------------------------- */

/*
 * One key from the terminal, without Enter; -1 when the user cancels
 * (Ctrl-C raises SIGINT, which sets cli_cancel) or stdin ends.  poll with a
 * timeout rather than a blocking read, so the signal is seen even when the
 * read would be restarted.
 */
static int read_key(void)
{
	struct termios old, raw;
	bool tty = tcgetattr(STDIN_FILENO, &old) == 0;
	int key = -1;

	if (tty) {
		raw = old;
		raw.c_lflag &= ~(tcflag_t)(ICANON | ECHO);
		raw.c_cc[VMIN] = 1;
		raw.c_cc[VTIME] = 0;
		tcsetattr(STDIN_FILENO, TCSANOW, &raw);
	}
	while (!cli_cancel) {
		struct pollfd p = { .fd = STDIN_FILENO, .events = POLLIN };
		unsigned char ch;
		int n = poll(&p, 1, 200);

		if (n <= 0)
			continue;
		n = (int)read(STDIN_FILENO, &ch, 1);
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		key = n == 1 && ch != 4 ? ch : -1;     /* 4: Ctrl-D */
		break;
	}
	if (tty)
		tcsetattr(STDIN_FILENO, TCSANOW, &old);
	return cli_cancel ? -1 : key;
}

/* y yes, n no, a yes to this and all that follow, q or Ctrl-C cancel,
 * Enter or space the answer shown in <>; other keys are ignored. */
static enum fsck_answer ask(struct cli *c, const struct fsck_report *r)
{
	char dflt = r->proposed == FSCK_ANSWER_NO ? 'n' : 'y';

	fprintf(c->out, "%s%s%s<%c>? ", r->message, stop_after(r->message),
		r->question, dflt);
	fflush(c->out);
	for (;;) {
		int key = read_key();

		if (key == '\n' || key == '\r' || key == ' ')
			key = dflt;
		switch (key) {
		case 'y': case 'Y':
			fputs("yes\n", c->out);
			return FSCK_ANSWER_YES;
		case 'n': case 'N':
			fputs("no\n", c->out);
			return FSCK_ANSWER_NO;
		case 'a': case 'A':
			fputs("yes to all\n", c->out);
			c->yes_to_all = true;
			return FSCK_ANSWER_YES;
		case 'q': case 'Q': case -1:
			fputs("cancelled\n", c->out);
			return FSCK_ANSWER_CANCEL;
		}
	}
}

/* ---- the callbacks of fsck_run ------------------------------------------ */

static void show_problem(struct cli *c, const struct fsck_report *r, enum fsck_answer a)
{
	prefix(c);
	/* A problem preening may not fix ends the check: no question; the
	 * line telling to run fsck by hand follows after the run. */
	if (!r->question || (c->mode == FSCK_PREEN && !r->preen_ok))
		fprintf(c->out, "%s\n", r->message);
	else
		fprintf(c->out, "%s%s%s? %s\n", r->message, stop_after(r->message),
			r->question, cli_answer_name(a));
}

enum fsck_answer cli_on_problem(void *arg, const struct fsck_report *r)
{
	struct cli *c = arg;
	enum fsck_answer a = r->proposed;

	cli_bar_clear(c);
	if (c->mode == FSCK_ASK && r->question && c->yes_to_all)
		a = FSCK_ANSWER_YES;
	if (c->mode == FSCK_ASK && r->question && !c->yes_to_all)
		a = ask(c, r);
	else
		show_problem(c, r, a);
	if (c->json_on)
		cli_json_problem(&c->json, r, a);
	return a;
}

/* -n checks a filesystem whose journal holds transactions as it is on the
 * disk: said once, before the passes, since their findings may be what a
 * replay would have mended. */
static void tell_recovery(struct cli *c)
{
	if (c->told_recovery || c->mode != FSCK_NO || !c->res->needs_recovery)
		return;
	c->told_recovery = true;
	prefix(c);
	fprintf(c->out, "the journal needs recovery, which a read-only check does not "
		"do: the filesystem is checked as it stands, and problems the "
		"replay would mend may be reported\n");
}

void cli_on_pass(void *arg, enum fsck_pass pass, const char *title)
{
	struct cli *c = arg;

	cli_bar_clear(c);
	tell_recovery(c);
	if (c->mode != FSCK_PREEN)
		fprintf(c->out, "%s\n", title);
	c->bar.pass = pass;
	c->bar.last_ns = 0;
}

/* ---- progress ------------------------------------------------------------ */

void cli_bar_clear(struct cli *c)
{
	if (!c->bar.drawn)
		return;
	fprintf(c->out, "\r%*s\r", BAR_LINE, "");
	fflush(c->out);
	c->bar.drawn = false;
}

static unsigned int percent(uint64_t done, uint64_t total)
{
	if (!total || done >= total)
		return total ? 100 : 0;
	return (unsigned int)((double)done * 100.0 / (double)total);
}

static void draw_bar(struct cli *c, enum fsck_pass pass, uint64_t done, uint64_t total)
{
	unsigned int pct = percent(done, total);
	unsigned int fill = pct * BAR_WIDTH / 100;
	char bar[BAR_WIDTH + 1], label[16];

	for (unsigned int i = 0; i < BAR_WIDTH; i++)
		bar[i] = i < fill ? '=' : (i == fill ? '>' : ' ');
	bar[BAR_WIDTH] = 0;
	if (pass == FSCK_PASS_JOURNAL)
		snprintf(label, sizeof(label), "Journal:");
	else
		snprintf(label, sizeof(label), "Pass %s:", cli_pass_name(pass));
	fprintf(c->out, "\r%-9s [%s] %3u%%", label, bar, pct);
	fflush(c->out);
	c->bar.drawn = true;
}

/* The pass number of e2fsck's progress lines: 1 to 5; the journal and
 * pass 0 come before pass 1, and 1b is part of pass 1. */
static int line_pass(enum fsck_pass pass)
{
	if (pass <= FSCK_PASS_0)
		return 0;
	return pass <= FSCK_PASS_1B ? 1 : (int)pass - 1;
}

static void write_line(struct cli *c, enum fsck_pass pass, uint64_t done, uint64_t total)
{
	if (dprintf(c->progress_fd, "%d %" PRIu64 " %" PRIu64 " %s\n", line_pass(pass),
		    done, total, c->image) < 0)
		c->progress_fd = -1;            /* nobody listens: stop */
}

void cli_on_progress(void *arg, enum fsck_pass pass, uint64_t done, uint64_t total)
{
	struct cli *c = arg;
	uint64_t now = ut_now_ns();

	if (!cli_progress_on || c->progress_fd < 0 || (c->progress_fd == 0 && !c->bar.on))
		return;
	if (pass == c->bar.pass && c->bar.last_ns &&
	    (done == c->bar.last_done ||
	     (done < total && now - c->bar.last_ns < REDRAW_NS)))
		return;
	c->bar.pass = pass;
	c->bar.last_done = done;
	c->bar.last_ns = now;
	if (c->progress_fd > 0)
		write_line(c, pass, done, total);
	else
		draw_bar(c, pass, done, total);
}

/* ---- after the run ------------------------------------------------------- */

static double share(uint64_t part, uint64_t whole)
{
	return whole ? (double)part * 100.0 / (double)whole : 0.0;
}

static void show_stats(const struct cli *c, const struct fsck_result *r)
{
	FILE *f = c->out;
	uint64_t files = r->regular + r->directories + r->chrdevs + r->blkdevs +
			 r->fifos + r->symlinks + r->sockets + r->hard_links;

	fprintf(f, "\n%12" PRIu64 " inodes used (%.2f%%, out of %" PRIu64 ")\n",
		r->inodes_used, share(r->inodes_used, r->inodes_count), r->inodes_count);
	fprintf(f, "%12" PRIu64 " non-contiguous files (%.1f%%)\n", r->noncontig,
		share(r->noncontig, r->inodes_used));
	fprintf(f, "%12s indirect blocks: %" PRIu64 " single, %" PRIu64 " double, %"
		PRIu64 " triple\n", "", r->ind_blocks, r->dind_blocks, r->tind_blocks);
	fprintf(f, "%12" PRIu64 " extended-attribute blocks\n", r->xattr_blocks);
	fprintf(f, "%12" PRIu64 " blocks used (%.2f%%, out of %" PRIu64 ")\n",
		r->blocks_used, share(r->blocks_used, r->blocks_count), r->blocks_count);
	fprintf(f, "%12" PRIu64 " bytes in the largest file\n\n", r->largest_file);
	fprintf(f, "%12" PRIu64 " regular files\n", r->regular);
	fprintf(f, "%12" PRIu64 " directories\n", r->directories);
	fprintf(f, "%12" PRIu64 " character device files\n", r->chrdevs);
	fprintf(f, "%12" PRIu64 " block device files\n", r->blkdevs);
	fprintf(f, "%12" PRIu64 " fifos\n", r->fifos);
	fprintf(f, "%12" PRIu64 " hard links\n", r->hard_links);
	fprintf(f, "%12" PRIu64 " symbolic links (%" PRIu64 " fast symbolic links)\n",
		r->symlinks, r->fast_symlinks);
	fprintf(f, "%12" PRIu64 " sockets\n------------\n", r->sockets);
	fprintf(f, "%12" PRIu64 " files\n", files);
}

static void show_summary(const struct cli *c, const struct fsck_result *r)
{
	uint64_t tenths = r->inodes_used ? r->noncontig * 1000 / r->inodes_used : 0;

	fprintf(c->out, "%s: %" PRIu64 "/%" PRIu64 " files (%" PRIu64 ".%" PRIu64
		"%% non-contiguous), %" PRIu64 "/%" PRIu64 " blocks\n", c->image,
		r->inodes_used, r->inodes_count, tenths / 10, tenths % 10,
		r->blocks_used, r->blocks_count);
}

/* The run ended early: cancelled, halted by preening, or an error. */
static bool show_stop(const struct cli *c, const struct fsck_result *r)
{
	if (r->exit & FSCK_EXIT_CANCELED)
		fprintf(c->out, "\n%s: the check was cancelled; the filesystem was not "
			"fully checked\n", c->image);
	else if (r->preen_halted)
		fprintf(c->out, "\n\n%s: UNEXPECTED INCONSISTENCY; RUN fsck MANUALLY.\n"
			"\t(i.e., without -a or -p options)\n", c->image);
	else if (r->exit & FSCK_EXIT_OPERATIONAL)
		fprintf(c->out, "\n%s: the check stopped on an error (said above); the "
			"filesystem was not fully checked\n", c->image);
	else
		return false;
	return true;
}

void cli_show_result(struct cli *c, const struct fsck_result *r)
{
	cli_bar_clear(c);
	if (r->skipped_clean) {
		fprintf(c->out, "%s: clean, %" PRIu64 "/%" PRIu64 " files, %" PRIu64 "/%"
			PRIu64 " blocks\n", c->image, r->inodes_used, r->inodes_count,
			r->blocks_used, r->blocks_count);
		return;
	}
	tell_recovery(c);
	if (r->changed)
		fprintf(c->out, "\n%s: ***** FILE SYSTEM WAS MODIFIED *****\n", c->image);
	if (show_stop(c, r))
		return;
	if (r->exit & FSCK_EXIT_UNCORRECTED && c->mode != FSCK_PREEN)
		fprintf(c->out, "\n%s: ********** WARNING: Filesystem still has errors "
			"**********\n", c->image);
	if (c->verbose)
		show_stats(c, r);
	else
		show_summary(c, r);
}
