/*
 * tools.h - what the command-line tools share: failing with one clear
 * line, and finding out whether an image is mounted.
 */
#ifndef MISCFS_TOOLS_H
#define MISCFS_TOOLS_H

/* Log @fmt as an error and return -EINVAL, for "return tool_fail(...)". */
int tool_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/*
 * The mount point where @path (an image file or device) is mounted, from
 * /proc/self/mounts, or NULL.  The result is valid until the next call.
 */
const char *tool_mounted_on(const char *path);

#endif /* MISCFS_TOOLS_H */
