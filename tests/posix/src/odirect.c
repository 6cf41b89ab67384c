/*
 * odirect write|read|check FILE MIB
 *
 *   write  writes MIB MiB of a pattern with O_DIRECT from an aligned
 *          buffer, in 1 MiB and 4 KiB requests at aligned offsets
 *   read   reads the file back with O_DIRECT and checks the pattern
 *   check  opens FILE with O_DIRECT only, to see whether it is allowed
 *
 * Prints nothing on success for write/read; exit status 1 on a failure,
 * 3 if the filesystem refuses O_DIRECT (EINVAL at open).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MIB (1024 * 1024)
#define ALIGN 4096

static void fill(unsigned char *buf, size_t len, uint64_t off)
{
	size_t i;

	for (i = 0; i < len; i += 8) {
		uint64_t v = (off + i) * 0x9e3779b97f4a7c15ULL;

		memcpy(buf + i, &v, 8);
	}
}

static int open_direct(const char *path, int flags)
{
	int fd = open(path, flags | O_DIRECT, 0644);

	if (fd < 0) {
		if (errno == EINVAL) {
			fprintf(stderr, "%s: O_DIRECT refused\n", path);
			exit(3);
		}
		perror(path);
		exit(1);
	}
	return fd;
}

int main(int argc, char **argv)
{
	unsigned char *buf, *want;
	long mib;
	off_t off, total;
	int fd;

	if (argc != 4) {
		fprintf(stderr, "usage: odirect write|read|check FILE MIB\n");
		return 2;
	}
	mib = atol(argv[3]);
	total = (off_t)mib * MIB;
	if (posix_memalign((void **)&buf, ALIGN, MIB) ||
	    posix_memalign((void **)&want, ALIGN, MIB)) {
		perror("posix_memalign");
		return 1;
	}

	if (strcmp(argv[1], "check") == 0) {
		fd = open_direct(argv[2], O_RDONLY);
		close(fd);
		return 0;
	}
	if (strcmp(argv[1], "write") == 0) {
		fd = open_direct(argv[2], O_WRONLY | O_CREAT | O_TRUNC);
		for (off = 0; off < total;) {
			/* alternate 1 MiB requests with runs of 4 KiB ones */
			size_t len = (off / MIB) % 2 ? ALIGN : MIB;
			ssize_t n;

			if (off + (off_t)len > total)
				len = total - off;
			fill(buf, len, off);
			n = pwrite(fd, buf, len, off);
			if (n != (ssize_t)len) {
				fprintf(stderr, "pwrite at %lld: %zd (%s)\n",
					(long long)off, n, n < 0 ? strerror(errno) : "short");
				return 1;
			}
			off += len;
		}
		if (fsync(fd) < 0) {
			perror("fsync");
			return 1;
		}
		close(fd);
		return 0;
	}
	if (strcmp(argv[1], "read") == 0) {
		fd = open_direct(argv[2], O_RDONLY);
		for (off = 0; off < total; off += MIB) {
			ssize_t n = pread(fd, buf, MIB, off);

			if (n != MIB) {
				fprintf(stderr, "pread at %lld: %zd (%s)\n",
					(long long)off, n, n < 0 ? strerror(errno) : "short");
				return 1;
			}
			fill(want, MIB, off);
			if (memcmp(buf, want, MIB) != 0) {
				fprintf(stderr, "wrong data in the MiB at %lld\n",
					(long long)off);
				return 1;
			}
		}
		/* at the end of the file, a read returns 0 */
		if (pread(fd, buf, MIB, total) != 0) {
			fprintf(stderr, "read at the end of the file returned data\n");
			return 1;
		}
		close(fd);
		return 0;
	}
	fprintf(stderr, "odirect: unknown command %s\n", argv[1]);
	return 2;
}
