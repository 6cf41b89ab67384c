/*
 * fhandle - file handles from the command line, for the posix tests.
 *
 *   fhandle save PATH HANDLEFILE   name_to_handle_at(PATH) into HANDLEFILE
 *   fhandle read MOUNT HANDLEFILE  open_by_handle_at through MOUNT, and
 *                                  print the first bytes of a file or the
 *                                  entries of a directory, or the error
 *
 * Prints "OK ..." or the error's symbolic name; the exit status is 0
 * unless the program itself is misused.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *ename(int e)
{
	switch (e) {
	case ESTALE: return "ESTALE";
	case ENOENT: return "ENOENT";
	case EOPNOTSUPP: return "EOPNOTSUPP";
	case EPERM: return "EPERM";
	case EINVAL: return "EINVAL";
	case EBADF: return "EBADF";
	default: return strerror(e);
	}
}

static int save(const char *path, const char *out)
{
	char buf[sizeof(struct file_handle) + MAX_HANDLE_SZ];
	struct file_handle *fh = (struct file_handle *)buf;
	int mount_id;
	FILE *f;

	fh->handle_bytes = MAX_HANDLE_SZ;
	if (name_to_handle_at(AT_FDCWD, path, fh, &mount_id, 0)) {
		printf("name_to_handle_at %s: %s\n", path, ename(errno));
		return 0;
	}
	f = fopen(out, "w");
	if (!f || fwrite(fh, sizeof(*fh) + fh->handle_bytes, 1, f) != 1 || fclose(f)) {
		perror(out);
		return 1;
	}
	printf("name_to_handle_at %s: OK\n", path);
	return 0;
}

static void show(int fd)
{
	struct stat st;
	char data[64];
	ssize_t n;

	fstat(fd, &st);
	if (S_ISDIR(st.st_mode)) {
		DIR *d = fdopendir(fd);
		struct dirent *e;
		int count = 0;

		while (d && (e = readdir(d)))
			count++;
		printf("OK directory with %d entries\n", count);
		if (d)
			closedir(d);
		return;
	}
	n = read(fd, data, sizeof(data) - 1);
	data[n > 0 ? n : 0] = 0;
	data[strcspn(data, "\n")] = 0;
	printf("OK file: %s\n", n < 0 ? ename(errno) : data);
	close(fd);
}

static int reopen(const char *mnt, const char *in)
{
	char buf[sizeof(struct file_handle) + MAX_HANDLE_SZ];
	struct file_handle *fh = (struct file_handle *)buf;
	FILE *f = fopen(in, "r");
	int mfd, fd;

	if (!f || fread(fh, 1, sizeof(buf), f) < sizeof(*fh)) {
		perror(in);
		return 1;
	}
	fclose(f);
	mfd = open(mnt, O_RDONLY | O_DIRECTORY);
	if (mfd < 0) {
		perror(mnt);
		return 1;
	}
	fd = open_by_handle_at(mfd, fh, O_RDONLY);
	if (fd < 0)
		printf("open_by_handle_at: %s\n", ename(errno));
	else
		show(fd);
	close(mfd);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 4 && !strcmp(argv[1], "save"))
		return save(argv[2], argv[3]);
	if (argc == 4 && !strcmp(argv[1], "read"))
		return reopen(argv[2], argv[3]);
	fprintf(stderr, "usage: fhandle save PATH FILE | fhandle read MOUNT FILE\n");
	return 2;
}
