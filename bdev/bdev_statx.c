/*
 * bdev_statx.c - direct I/O alignment through statx(STATX_DIOALIGN).
 *
 * The C library's struct statx (glibc 2.36) predates the alignment fields,
 * and <sys/stat.h> cannot be mixed with <linux/stat.h>, so this one call
 * lives alone with the kernel's definition.
 */
#include "bdev_i.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/stat.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

int bdev_dio_align(int fd, uint32_t *mem_align, uint32_t *off_align)
{
	struct statx st;

	memset(&st, 0, sizeof(st));
	if (syscall(SYS_statx, fd, "", AT_EMPTY_PATH, STATX_DIOALIGN, &st))
		return -errno;
	if (!(st.stx_mask & STATX_DIOALIGN))
		return -EOPNOTSUPP;
	*mem_align = st.stx_dio_mem_align;
	*off_align = st.stx_dio_offset_align;
	return 0;
}
