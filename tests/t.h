/*
 * t.h - the few helpers every C test uses.
 *
 * A test is one executable: exit 0 passes, 1 fails, 77 skips.  A failed
 * check prints where and why and exits at once.
 *
 * A test is a table of named cases, run by T_MAIN():
 *
 *   T_MAIN(T_CASE(test_wrap), T_CASE(test_revoke))
 *
 *   t_jnl_api                 every case, in the table's order
 *   t_jnl_api wrap revoke     only these (the "test_" prefix may be left off)
 *   t_jnl_api --list          the names, one per line
 *
 * A name that is not in the table exits 2, so a misspelt case never
 * passes by running nothing.  A case that cannot run where it is (no
 * io_uring, not the memory device) calls t_skip_case(), which ends it and
 * goes on with the next; a run whose every case skipped exits 77.  The
 * skip jumps back to the case's start: call it from the case's own thread,
 * in the test's own file (a shared helper library sees no running case
 * and ends the whole run as skipped), before anything is allocated.
 */
#ifndef MISCFS_T_H
#define MISCFS_T_H

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define T_SKIP 77

#define t_fail(...) do {                                                  \
	fprintf(stderr, "%s:%d: FAIL: ", __FILE__, __LINE__);             \
	fprintf(stderr, __VA_ARGS__);                                     \
	fprintf(stderr, "\n");                                            \
	exit(1);                                                          \
} while (0)

#define t_assert(cond, ...) do {                                          \
	if (!(cond))                                                      \
		t_fail("%s: " "%s", #cond, t_fmt_(__VA_ARGS__));          \
} while (0)

/* t_ok(expr): expr returns 0 or -errno. */
#define t_ok(expr) do {                                                   \
	long t_rc_ = (long)(expr);                                        \
	if (t_rc_ != 0)                                                   \
		t_fail("%s returned %ld (%s)", #expr, t_rc_,              \
		       t_rc_ < 0 ? strerror((int)-t_rc_) : "non-zero");  \
} while (0)

#define t_eq(a, b) do {                                                   \
	long long t_a_ = (long long)(a), t_b_ = (long long)(b);           \
	if (t_a_ != t_b_)                                                 \
		t_fail("%s == %s: %lld != %lld", #a, #b, t_a_, t_b_);     \
} while (0)

static inline const char *t_fmt_(const char *fmt, ...)
	__attribute__((format(printf, 1, 2)));

#include <stdarg.h>
static inline const char *t_fmt_(const char *fmt, ...)
{
	static char buf[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	return buf;
}

/* ---- named cases ------------------------------------------------------- */

#include <setjmp.h>
#include <signal.h>
#include <stdbool.h>
#include <time.h>
#include <unistd.h>

/* ---- a watchdog: a hang fails the test, naming what hung ----------------- */

static const char *t_watchdog_msg_;

static inline void t_watchdog_fire_(int sig)
{
	(void)sig;
	if (write(2, "FAIL: ", 6) < 0 ||
	    write(2, t_watchdog_msg_, strlen(t_watchdog_msg_)) < 0 || write(2, "\n", 1) < 0)
		_exit(1);
	_exit(1);
}

/* Unless t_watchdog_off() comes within @seconds, fail with @msg. */
static inline void t_watchdog(unsigned int seconds, const char *msg)
{
	t_watchdog_msg_ = msg;
	signal(SIGALRM, t_watchdog_fire_);
	alarm(seconds);
}

static inline void t_watchdog_off(void)
{
	alarm(0);
}

struct t_case {
	const char *name;
	void (*fn)(void);
};

#define T_CASE(fn) { #fn, fn }

/* Where t_skip_case() returns to: set while a case runs. */
static jmp_buf *t_case_skip_;

/* End the running case as skipped, saying why. */
#define t_skip_case(...) do {                                             \
	fprintf(stderr, "%s:%d: SKIP: ", __FILE__, __LINE__);             \
	fprintf(stderr, __VA_ARGS__);                                     \
	fprintf(stderr, "\n");                                            \
	if (!t_case_skip_)                                                \
		exit(T_SKIP);                                             \
	longjmp(*t_case_skip_, 1);                                        \
} while (0)

static inline const char *t_case_short_(const char *name)
{
	return strncmp(name, "test_", 5) == 0 ? name + 5 : name;
}

/* "test_wrap" answers to "test_wrap" and to "wrap". */
static inline bool t_case_is_(const char *name, const char *want)
{
	return strcmp(name, want) == 0 || strcmp(t_case_short_(name), want) == 0;
}

/* Run one case; false when it skipped. */
static inline bool t_case_run_(const struct t_case *c, bool say)
{
	struct timespec t0, t1;
	jmp_buf env;

	if (say)
		printf("case %s\n", t_case_short_(c->name));
	fflush(stdout);
	if (setjmp(env)) {
		t_case_skip_ = NULL;
		return false;
	}
	t_case_skip_ = &env;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	c->fn();
	clock_gettime(CLOCK_MONOTONIC, &t1);
	t_case_skip_ = NULL;
	/* The time of each case, so that the slow ones are found from a log. */
	if (say)
		printf("case %s: %.1f s\n", t_case_short_(c->name),
		       (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9);
	return true;
}

static inline int t_main(int argc, char **argv, const struct t_case *cases, size_t n)
{
	size_t ran = 0, skipped = 0;

	if (argc == 2 && (strcmp(argv[1], "--list") == 0 || strcmp(argv[1], "-l") == 0)) {
		for (size_t i = 0; i < n; i++)
			printf("%s\n", t_case_short_(cases[i].name));
		return 0;
	}
	for (int a = 1; a < argc; a++) {
		size_t i = 0;

		while (i < n && !t_case_is_(cases[i].name, argv[a]))
			i++;
		if (i == n) {
			fprintf(stderr, "%s: no case '%s' (--list names them)\n", argv[0], argv[a]);
			return 2;
		}
	}
	for (size_t i = 0; i < n; i++) {
		bool want = argc == 1;

		for (int a = 1; a < argc && !want; a++)
			want = t_case_is_(cases[i].name, argv[a]);
		if (!want)
			continue;
		ran++;
		if (!t_case_run_(&cases[i], n > 1))
			skipped++;
	}
	return ran > 0 && skipped == ran ? T_SKIP : 0;
}

/*
 * main(): the setup the cases share, if any, in @setup, then the cases.
 * @setup sees main's argc and argv by those names, and may take options
 * of the test's own off their front before the case names.
 */
#define T_MAIN(...) T_MAIN_SETUP((void)0, __VA_ARGS__)
#define T_MAIN_SETUP(setup, ...)                                          \
int main(int argc, char **argv)                                           \
{                                                                         \
	static const struct t_case t_cases_[] = { __VA_ARGS__ };          \
	setup;                                                            \
	return t_main(argc, argv, t_cases_,                               \
		      sizeof(t_cases_) / sizeof(t_cases_[0]));            \
}

#endif /* MISCFS_T_H */
