/*
 * t.h - the few helpers every C test uses.
 *
 * A test is one executable: exit 0 passes, 1 fails, 77 skips.  A failed
 * check prints where and why and exits at once.
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

#endif /* MISCFS_T_H */
