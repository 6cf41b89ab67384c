/*
 * util.c - logging, size parsing and clocks shared by every layer.
 */
#include "util.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static enum mlog_level log_level = MLOG_WARN;
static const char *log_ident = "miscfs";
static mlog_sink_fn log_sink;
static void *log_sink_arg;
/* One line at a time, so that lines of concurrent threads never interleave. */
static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;

void mlog_set_level(enum mlog_level level) { log_level = level; }
enum mlog_level mlog_get_level(void) { return log_level; }
void mlog_set_ident(const char *ident) { log_ident = ident; }

void mlog_set_sink(mlog_sink_fn fn, void *arg)
{
	pthread_mutex_lock(&log_lock);
	log_sink = fn;
	log_sink_arg = arg;
	pthread_mutex_unlock(&log_lock);
}

void mlog(enum mlog_level level, const char *fmt, ...)
{
	static const char *const names[] = { "error", "warning", "info", "debug" };
	char line[1024];
	va_list ap;

	if (level > log_level && !log_sink)
		return;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);

	pthread_mutex_lock(&log_lock);
	if (log_sink)
		log_sink(level, line, log_sink_arg);
	else
		fprintf(stderr, "%s: %s: %s\n", log_ident, names[level], line);
	pthread_mutex_unlock(&log_lock);
}

int ut_parse_size(const char *s, uint64_t *out)
{
	char *end;
	unsigned long long v;
	unsigned shift = 0;

	if (!s || !isdigit((unsigned char)*s))
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno)
		return -EINVAL;
	switch (toupper((unsigned char)*end)) {
	case '\0': break;
	case 'K': shift = 10; break;
	case 'M': shift = 20; break;
	case 'G': shift = 30; break;
	case 'T': shift = 40; break;
	default: return -EINVAL;
	}
	if (*end && end[1] != '\0' && strcasecmp(end + 1, "iB") && strcasecmp(end + 1, "B"))
		return -EINVAL;
	if (shift && v > (UINT64_MAX >> shift))
		return -EINVAL;
	*out = (uint64_t)v << shift;
	return 0;
}

int ut_corrupt(char *why, size_t len, const char *fmt, ...)
{
	va_list ap;

	if (why && len) {
		va_start(ap, fmt);
		vsnprintf(why, len, fmt, ap);
		va_end(ap);
	}
	return -EUCLEAN;
}

const char *ut_format_size(uint64_t bytes, char *buf, size_t len)
{
	static const char *const units[] = { "B", "KiB", "MiB", "GiB", "TiB" };
	double v = (double)bytes;
	unsigned u = 0;

	while (v >= 1024.0 && u + 1 < UT_ARRAY_SIZE(units)) {
		v /= 1024.0;
		u++;
	}
	if (u == 0)
		snprintf(buf, len, "%" PRIu64 " B", bytes);
	else
		snprintf(buf, len, "%.1f %s", v, units[u]);
	return buf;
}

_Thread_local struct ut_blocker *ut_block_hook;

uint64_t ut_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}
