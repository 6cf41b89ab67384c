/*
 * tools.c - helpers shared by mkfs.miscfs, miscfs-debug and fsck.miscfs.
 */
#include "tools.h"

#include <errno.h>
#include <limits.h>
#include <mntent.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

int tool_fail(const char *fmt, ...)
{
	char line[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	mlog_err("%s", line);
	return -EINVAL;
}

const char *tool_mounted_on(const char *path)
{
	static char dir[PATH_MAX];
	char want[PATH_MAX], have[PATH_MAX];
	struct mntent *m;
	FILE *f;
	const char *found = NULL;

	if (!realpath(path, want))
		return NULL;
	f = setmntent("/proc/self/mounts", "r");
	if (!f)
		return NULL;
	while (!found && (m = getmntent(f))) {
		if (strcmp(m->mnt_fsname, path) &&
		    (!realpath(m->mnt_fsname, have) || strcmp(have, want)))
			continue;
		snprintf(dir, sizeof(dir), "%s", m->mnt_dir);
		found = dir;
	}
	endmntent(f);
	return found;
}
