/*
 * manifest.c - IMAGE.manifest: every file of a populated image, with a
 * hash of its contents, one line each, so an image repaired by fsck can be
 * compared with what it held before the damage.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mkdamage.h"

int md_manifest_add(struct md_manifest *m, const struct md_entry *e)
{
	if (m->n == m->cap) {
		unsigned int cap = m->cap ? 2 * m->cap : 64;
		struct md_entry *ne = realloc(m->e, cap * sizeof(*ne));

		if (!ne)
			return -ENOMEM;
		m->e = ne;
		m->cap = cap;
	}
	m->e[m->n++] = *e;
	return 0;
}

static FILE *open_beside(const char *image, const char *ext, const char *mode)
{
	char name[4096];

	snprintf(name, sizeof(name), "%s.%s", image, ext);
	return fopen(name, mode);
}

int md_manifest_save(const struct md_manifest *m, const char *image)
{
	FILE *f = open_beside(image, "manifest", "w");
	int err;

	if (!f)
		return -errno;
	fprintf(f, "# type ino size hash xattr-hash path\n");
	for (unsigned int i = 0; i < m->n; i++) {
		const struct md_entry *e = &m->e[i];

		fprintf(f, "%c %" PRIu32 " %" PRIu64 " %016" PRIx64 " %016" PRIx64 " %s\n",
			e->type, e->ino, e->size, e->hash, e->xhash, e->path);
	}
	err = ferror(f) ? -EIO : 0;
	if (fclose(f) && !err)
		err = -errno;
	return err;
}

static int parse_line(const char *line, struct md_entry *e)
{
	int n = sscanf(line, "%c %" SCNu32 " %" SCNu64 " %" SCNx64 " %" SCNx64 " %255s",
		       &e->type, &e->ino, &e->size, &e->hash, &e->xhash, e->path);

	return n == 6 ? 0 : -EINVAL;
}

int md_manifest_load(struct md_manifest *m, const char *image)
{
	FILE *f = open_beside(image, "manifest", "r");
	char line[512];
	int err = 0;

	if (!f) {
		fprintf(stderr, "mkdamage: cannot read %s.manifest: %s\n", image,
			strerror(errno));
		return -errno;
	}
	while (!err && fgets(line, sizeof(line), f)) {
		struct md_entry e;

		if (line[0] == '#')
			continue;
		err = parse_line(line, &e);
		if (err)
			fprintf(stderr, "mkdamage: bad manifest line: %s", line);
		else
			err = md_manifest_add(m, &e);
	}
	fclose(f);
	return err;
}

void md_manifest_free(struct md_manifest *m)
{
	free(m->e);
	*m = (struct md_manifest){ 0 };
}

const struct md_entry *md_manifest_find(const struct md_manifest *m,
					const char *path)
{
	for (unsigned int i = 0; i < m->n; i++)
		if (!strcmp(m->e[i].path, path))
			return &m->e[i];
	return NULL;
}
