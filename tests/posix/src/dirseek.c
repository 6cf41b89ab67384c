/*
 * dirseek DIR: telldir/seekdir/rewinddir on DIR.
 *
 * Reads the whole directory, remembering telldir() before each entry,
 * then checks that seekdir() to each remembered position (in a scrambled
 * order) gives back the same entry, that reading on from a position in
 * the middle gives the same tail, and that rewinddir() gives the same
 * entries again.  Prints one line per check; exit status 1 on a mismatch.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct ent {
	long pos;
	char name[256];
};

static size_t read_all(DIR *d, struct ent **out)
{
	size_t n = 0, cap = 256;
	struct ent *v = malloc(cap * sizeof(*v));
	struct dirent *de;

	for (;;) {
		long pos = telldir(d);

		de = readdir(d);
		if (!de)
			break;
		if (n == cap) {
			cap *= 2;
			v = realloc(v, cap * sizeof(*v));
		}
		if (!v) {
			perror("realloc");
			exit(2);
		}
		v[n].pos = pos;
		snprintf(v[n].name, sizeof(v[n].name), "%s", de->d_name);
		n++;
	}
	*out = v;
	return n;
}

int main(int argc, char **argv)
{
	struct ent *v, *w;
	struct dirent *de;
	size_t n, m, i, k, bad = 0;
	unsigned long x = 12345;
	DIR *d;

	if (argc != 2) {
		fprintf(stderr, "usage: dirseek DIR\n");
		return 2;
	}
	d = opendir(argv[1]);
	if (!d) {
		perror(argv[1]);
		return 2;
	}
	n = read_all(d, &v);
	printf("entries: %zu\n", n);

	/* every position, in a scrambled order */
	for (k = 0; k < n; k++) {
		x = x * 6364136223846793005UL + 1442695040888963407UL;
		i = (x >> 33) % n;
		seekdir(d, v[i].pos);
		de = readdir(d);
		if (!de || strcmp(de->d_name, v[i].name) != 0) {
			if (bad++ < 5)
				printf("seekdir to entry %zu (%s) read %s\n", i,
				       v[i].name, de ? de->d_name : "(end)");
		}
	}
	printf("seekdir to each position: %s\n", bad ? "MISMATCH" : "ok");

	/* from the middle to the end */
	if (n > 0) {
		size_t mid = n / 2, bad2 = 0;

		seekdir(d, v[mid].pos);
		for (i = mid; i < n; i++) {
			de = readdir(d);
			if (!de || strcmp(de->d_name, v[i].name) != 0)
				bad2++;
		}
		if (readdir(d))
			bad2++;
		printf("seekdir to the middle, read to the end: %s\n",
		       bad2 ? "MISMATCH" : "ok");
		bad += bad2;
	}

	/* seek to the position after the last entry: end of directory */
	if (n > 0) {
		seekdir(d, v[n - 1].pos);
		readdir(d);
	}
	{
		long end = telldir(d);

		rewinddir(d);
		seekdir(d, end);
		de = readdir(d);
		printf("seekdir to the end: %s\n", de ? "MISMATCH" : "ok");
		if (de)
			bad++;
	}

	rewinddir(d);
	m = read_all(d, &w);
	k = m == n;
	for (i = 0; k && i < n; i++)
		k = strcmp(v[i].name, w[i].name) == 0;
	printf("rewinddir gives the same entries: %s\n", k ? "ok" : "MISMATCH");
	if (!k)
		bad++;
	closedir(d);
	free(v);
	free(w);
	return bad ? 1 : 0;
}
