/*
 * problem.c - the one table of problems, their messages and answers.
 *
 * The passes never print: they name a problem and its objects, and this
 * file formats the message, hands it to the caller, takes the answer the
 * mode gives (or the user's) and keeps the counts the exit status comes
 * from.
 */
#include "fsck_i.h"

#define P_PREEN      0x1u
#define P_UNFIXABLE  0x2u
#define P_INFO       0x4u

struct problem {
	const char *code;
	enum fsck_pass pass;
	unsigned int flags;
	const char *question;
	const char *fmt;
};

static const struct problem problems[PR_COUNT] = {
#define FSCK_PROBLEM(c, p, f, q, m) \
	[PR_##c] = { #p "." #c, FSCK_PASS_##p, f, q, m },
#include "problems.h"
#undef FSCK_PROBLEM
};

struct out {
	char *p;
	size_t left;
};

static void put(struct out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void put(struct out *o, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (o->left <= 1)
		return;
	va_start(ap, fmt);
	n = vsnprintf(o->p, o->left, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	n = UT_MIN((size_t)n, o->left - 1);
	o->p += n;
	o->left -= n;
}

/* Entry names may hold any byte but '/' and NUL: control bytes and
 * non-ASCII print as \xNN, so every message is one line of text. */
static void put_name(struct out *o, const char *name, size_t len)
{
	for (size_t i = 0; i < len; i++) {
		unsigned char ch = (unsigned char)name[i];

		if (ch < 0x20 || ch >= 0x7f || ch == '\\' || ch == '\'')
			put(o, "\\x%02x", ch);
		else
			put(o, "%c", ch);
	}
}

static void put_token(struct out *o, char t, const struct fsck_pctx *p)
{
	switch (t) {
	case 'i': put(o, "%" PRIu32, p->ino); break;
	case 'I': put(o, "%" PRIu32, p->ino2); break;
	case 'd': put(o, "%" PRIu32, p->dir); break;
	case 'b': put(o, "%" PRIu64, p->blk); break;
	case 'B': put(o, "%" PRIu64, p->blk2); break;
	case 'N': put(o, "%" PRIu64, p->num); break;
	case 'x': put(o, "%" PRIx64, p->num); break;
	case 'M': put(o, "%" PRIu64, p->num2); break;
	case 'g': put(o, "%" PRIu32, p->group); break;
	case 'n': put_name(o, p->name ? p->name : "", p->name ? p->namelen : 0); break;
	case 's': put(o, "%s", p->str ? p->str : ""); break;
	case '%': put(o, "%%"); break;
	default: put(o, "%%%c", t); break;
	}
}

static void format(char *buf, size_t size, const char *fmt, const struct fsck_pctx *p)
{
	struct out o = { buf, size };

	buf[0] = 0;
	for (const char *s = fmt; *s; s++) {
		if (*s == '%' && s[1])
			put_token(&o, *++s, p);
		else
			put(&o, "%c", *s);
	}
}

static enum fsck_answer proposed(const struct fsck_ctx *c, const struct problem *pr)
{
	if (!c->rw)
		return FSCK_ANSWER_NO;
	if (c->o->mode == FSCK_PREEN && !(pr->flags & P_PREEN))
		return FSCK_ANSWER_NO;
	return FSCK_ANSWER_YES;
}

static enum fsck_answer deliver(struct fsck_ctx *c, const struct problem *pr,
				const struct fsck_pctx *p)
{
	static const struct fsck_pctx none;
	struct fsck_report r = {
		.code = pr->code, .pass = pr->pass, .message = c->msg,
		.question = pr->question, .preen_ok = pr->flags & P_PREEN,
		.proposed = proposed(c, pr),
	};

	p = p ? p : &none;
	r.ino = p->ino;
	r.dir = p->dir;
	r.block = p->blk;
	r.group = p->group;
	r.name = p->name;
	r.name_len = p->name ? p->namelen : 0;
	format(c->msg, sizeof(c->msg), pr->fmt, p);
	if (!c->o->problem)
		return r.proposed;
	return c->o->problem(c->o->arg, &r);
}

static bool cancelled(struct fsck_ctx *c)
{
	if (c->o->cancel && *c->o->cancel) {
		c->res->exit |= FSCK_EXIT_CANCELED;
		c->stop = true;
	}
	return c->stop;
}

bool fsck_fix(struct fsck_ctx *c, enum fsck_code code, const struct fsck_pctx *p)
{
	const struct problem *pr = &problems[code];
	enum fsck_answer a;

	if (!pr->question) {
		fsck_note(c, code, p);
		return false;
	}
	c->res->problems++;
	if (cancelled(c))
		return false;
	a = deliver(c, pr, p);
	/* Only a read-write check can carry out a yes. */
	if (a == FSCK_ANSWER_YES && c->rw) {
		c->res->fixed++;
		c->res->exit |= FSCK_EXIT_CORRECTED;
		return true;
	}
	c->res->exit |= FSCK_EXIT_UNCORRECTED;
	if (a == FSCK_ANSWER_CANCEL) {
		c->res->exit |= FSCK_EXIT_CANCELED;
		c->stop = true;
	} else if (c->o->mode == FSCK_PREEN && c->rw) {
		c->res->preen_halted = true;
		c->stop = true;
	}
	return false;
}

void fsck_note(struct fsck_ctx *c, enum fsck_code code, const struct fsck_pctx *p)
{
	const struct problem *pr = &problems[code];

	if (!(pr->flags & P_INFO)) {
		c->res->problems++;
		c->res->exit |= FSCK_EXIT_UNCORRECTED;
	}
	if (!cancelled(c))
		deliver(c, pr, p);
}

void fsck_unfixed(struct fsck_ctx *c)
{
	if (c->res->fixed)
		c->res->fixed--;
	c->res->exit |= FSCK_EXIT_UNCORRECTED;
}

int fsck_problem_foreach(int (*fn)(void *arg, const char *code,
				   enum fsck_pass pass, const char *fmt,
				   const char *question, bool preen_ok),
			 void *arg)
{
	for (size_t i = 0; i < PR_COUNT; i++) {
		const struct problem *pr = &problems[i];
		int r = fn(arg, pr->code, pr->pass, pr->fmt, pr->question,
			   pr->flags & P_PREEN);

		if (r)
			return r;
	}
	return 0;
}
