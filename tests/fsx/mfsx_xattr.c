/*
 * mfsx_xattr.c - the file mode's extended attribute operations: set (plain,
 * XATTR_CREATE or XATTR_REPLACE), get, list and remove of user.* names
 * from a small pool, with values of random sizes, each checked against a
 * model of the file's attributes.
 *
 * A filesystem may run out of room for attributes at its own point; a set
 * may fail with ENOSPC only once the model holds more than MIN_ROOM bytes
 * of names and values, which every filesystem this runs on can hold.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/xattr.h>

#include "mfsx.h"
#include "mfsx_xattr.h"

#define NNAMES 6
#define MAX_VALUE 600
#define MIN_ROOM 900

static struct {
	bool set;
	size_t len;
	unsigned char value[MAX_VALUE];
} X[NNAMES];

static void name_of(unsigned i, char *buf, size_t size)
{
	snprintf(buf, size, "user.mfsx%u", i);
}

static size_t model_bytes(void)
{
	size_t n = 0;

	for (unsigned i = 0; i < NNAMES; i++)
		if (X[i].set)
			n += strlen("user.mfsx0") + X[i].len;
	return n;
}

/* The value bytes name the op that wrote them, as file data does. */
static void fill(unsigned char *buf, size_t len)
{
	for (size_t i = 0; i < len; i++)
		buf[i] = (unsigned char)mfsx_mix(((uint64_t)mfsx_opno << 20) ^ i);
}

static void check_value(int fd, unsigned i, const char *how)
{
	unsigned char got[MAX_VALUE + 1];
	char name[32];
	ssize_t n;

	name_of(i, name, sizeof(name));
	n = fgetxattr(fd, name, got, sizeof(got));
	if (!X[i].set) {
		if (n >= 0 || errno != ENODATA)
			mfsx_fail("%s: getxattr %s: %s, expected ENODATA", how, name,
				  n >= 0 ? "a value" : strerror(errno));
		return;
	}
	if (n < 0)
		mfsx_fail("%s: getxattr %s: %s", how, name, strerror(errno));
	if ((size_t)n != X[i].len || memcmp(got, X[i].value, X[i].len))
		mfsx_fail("%s: getxattr %s: %zd bytes, expected %zu%s", how, name, n,
			  X[i].len, (size_t)n == X[i].len ? " (bytes differ)" : "");
}

static void op_set(int fd, unsigned i)
{
	static const char *const fname[] = { "", " create", " replace" };
	static const int flags[] = { 0, XATTR_CREATE, XATTR_REPLACE };
	unsigned char value[MAX_VALUE];
	unsigned how = (unsigned)mfsx_below(3);
	size_t len = (size_t)mfsx_below(MAX_VALUE + 1);
	int want = 0, err;
	char name[32];

	name_of(i, name, sizeof(name));
	fill(value, len);
	if (how == 1 && X[i].set)
		want = EEXIST;
	else if (how == 2 && !X[i].set)
		want = ENODATA;
	mfsx_log("setxattr %s %zu bytes%s", name, len, fname[how]);
	err = fsetxattr(fd, name, value, len, flags[how]) ? errno : 0;
	if (err == ENOSPC && !want &&
	    model_bytes() - (X[i].set ? strlen(name) + X[i].len : 0) + strlen(name) + len >
	    MIN_ROOM)
		return;              /* full: the model stays as it was */
	if (err != want)
		mfsx_fail("setxattr %s: %s, expected %s", name, err ? strerror(err) : "success",
			  want ? strerror(want) : "success");
	if (!want) {
		X[i].set = true;
		X[i].len = len;
		memcpy(X[i].value, value, len);
	}
}

static void op_remove(int fd, unsigned i)
{
	char name[32];
	int err;

	name_of(i, name, sizeof(name));
	mfsx_log("removexattr %s", name);
	err = fremovexattr(fd, name) ? errno : 0;
	if (err != (X[i].set ? 0 : ENODATA))
		mfsx_fail("removexattr %s: %s, expected %s", name,
			  err ? strerror(err) : "success", X[i].set ? "success" : "ENODATA");
	X[i].set = false;
}

/* Every pool name listed exactly when the model has it. */
static void check_list(int fd, const char *how)
{
	char buf[NNAMES * 32 + 1024], name[32];
	ssize_t n = flistxattr(fd, buf, sizeof(buf));
	bool seen[NNAMES] = { false };

	if (n < 0)
		mfsx_fail("%s: listxattr: %s", how, strerror(errno));
	for (char *p = buf; p < buf + n; p += strlen(p) + 1) {
		unsigned i;

		if (sscanf(p, "user.mfsx%u", &i) != 1 || i >= NNAMES)
			continue;
		name_of(i, name, sizeof(name));
		if (strcmp(p, name) || seen[i] || !X[i].set)
			mfsx_fail("%s: listxattr shows %s%s", how, p,
				  seen[i] ? " twice" : " which is not set");
		seen[i] = true;
	}
	for (unsigned i = 0; i < NNAMES; i++)
		if (X[i].set && !seen[i])
			mfsx_fail("%s: listxattr misses user.mfsx%u", how, i);
}

void mfsx_xattr_op(int fd)
{
	unsigned i = (unsigned)mfsx_below(NNAMES);

	switch (mfsx_below(6)) {
	case 0:
	case 1:
	case 2: op_set(fd, i); break;
	case 3: op_remove(fd, i); break;
	case 4:
		mfsx_log("getxattr user.mfsx%u", i);
		check_value(fd, i, "getxattr");
		return;
	default:
		mfsx_log("listxattr");
		check_list(fd, "listxattr");
		return;
	}
	check_value(fd, i, "read back");
}

void mfsx_xattr_check(int fd, const char *how)
{
	for (unsigned i = 0; i < NNAMES; i++)
		check_value(fd, i, how);
	check_list(fd, how);
}

void mfsx_xattr_reset(int fd)
{
	char name[32];

	for (unsigned i = 0; i < NNAMES; i++) {
		name_of(i, name, sizeof(name));
		if (fremovexattr(fd, name) && errno != ENODATA && errno != ENOTSUP)
			mfsx_fail("removexattr %s: %s", name, strerror(errno));
	}
}
