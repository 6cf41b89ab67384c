/*
 * dtype DIR: the d_type readdir gives for each entry of DIR, sorted by
 * name, next to the type lstat gives ("name: d_type / lstat").
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static const char *dname(unsigned char t)
{
	switch (t) {
	case DT_REG: return "reg";
	case DT_DIR: return "dir";
	case DT_LNK: return "lnk";
	case DT_FIFO: return "fifo";
	case DT_SOCK: return "sock";
	case DT_CHR: return "chr";
	case DT_BLK: return "blk";
	case DT_UNKNOWN: return "unknown";
	}
	return "?";
}

static const char *sname(mode_t m)
{
	if (S_ISREG(m)) return "reg";
	if (S_ISDIR(m)) return "dir";
	if (S_ISLNK(m)) return "lnk";
	if (S_ISFIFO(m)) return "fifo";
	if (S_ISSOCK(m)) return "sock";
	if (S_ISCHR(m)) return "chr";
	if (S_ISBLK(m)) return "blk";
	return "?";
}

static int cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int main(int argc, char **argv)
{
	struct dirent *de;
	char **lines = NULL;
	size_t n = 0, i;
	DIR *d;

	if (argc != 2) {
		fprintf(stderr, "usage: dtype DIR\n");
		return 2;
	}
	d = opendir(argv[1]);
	if (!d) {
		perror(argv[1]);
		return 2;
	}
	while ((de = readdir(d))) {
		char path[4096 + 256], *line;
		struct stat st;

		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		snprintf(path, sizeof(path), "%s/%s", argv[1], de->d_name);
		if (lstat(path, &st) < 0) {
			perror(path);
			return 1;
		}
		if (asprintf(&line, "%s: %s / %s", de->d_name, dname(de->d_type),
			     sname(st.st_mode)) < 0)
			return 1;
		lines = realloc(lines, (n + 1) * sizeof(*lines));
		if (!lines)
			return 1;
		lines[n++] = line;
	}
	closedir(d);
	qsort(lines, n, sizeof(*lines), cmp);
	for (i = 0; i < n; i++)
		puts(lines[i]);
	return 0;
}
