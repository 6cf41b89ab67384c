/*
 * mfsx_walk.c - compares the real tree with tree mode's model: every
 * directory is read with readdir and every entry is lstat'ed, so names,
 * types, sizes, link counts, symlink targets, file contents and the
 * sharing of inodes between hard links are all checked.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mfsx.h"
#include "mfsx_tree.h"

struct real_ent {
	char *name;
	unsigned char d_type;
};

const char *tree_errname(int e)
{
	const char *s = e ? strerrorname_np(e) : "success";

	return s ? s : "unknown errno";
}

const char *tree_show(const char *path)
{
	static char bufs[4][PATH_MAX];
	static unsigned next;
	char *out = bufs[next++ % 4];
	size_t at = 0;

	while (*path && at < PATH_MAX - 64) {
		size_t n = strcspn(path, "/");

		if (n > 32)
			at += (size_t)snprintf(out + at, PATH_MAX - at, "%.8s...[%zu bytes]",
					       path, n);
		else
			at += (size_t)snprintf(out + at, PATH_MAX - at, "%.*s", (int)n, path);
		path += n;
		if (*path == '/')
			out[at++] = *path++;
	}
	out[at] = '\0';
	return out;
}

/* Appends "/" (unless at the start) and part at *at; paths never outgrow PATH_MAX here. */
static void append_part(char *buf, size_t len, size_t *at, const char *part)
{
	size_t n = strlen(part);

	if (*at + n + 2 > len)
		mfsx_fail("internal: a path grew past %zu bytes", len);
	if (*at > 0)
		buf[(*at)++] = '/';
	memcpy(buf + *at, part, n + 1);
	*at += n;
}

void tree_path(const struct tnode *dir, const char *name, char *buf, size_t len)
{
	const struct tnode *chain[TREE_MAX_DEPTH + 2];
	unsigned n = 0;
	size_t at = 0;

	for (; dir && dir != tree.top && n < TREE_MAX_DEPTH + 2; dir = dir->parent)
		chain[n++] = dir;
	buf[0] = '\0';
	while (n > 0)
		append_part(buf, len, &at, chain[--n]->name);
	if (name)
		append_part(buf, len, &at, name);
	if (at == 0)
		append_part(buf, len, &at, ".");
}

static const char *type_name(mode_t type)
{
	switch (type) {
	case S_IFREG: return "file";
	case S_IFDIR: return "directory";
	case S_IFLNK: return "symlink";
	case S_IFIFO: return "fifo";
	default: return "other";
	}
}

static _Noreturn void walk_fail(const char *path, const char *fmt, const char *want,
				const char *got)
{
	mfsx_fail_begin("%s: %s: expected %s, got %s", tree_show(path), fmt, want, got);
	tree_dump();
	mfsx_fail_end();
}

static void check_num(const char *path, const char *what, unsigned long long want,
		      unsigned long long got)
{
	char w[32], g[32];

	if (want == got)
		return;
	snprintf(w, sizeof(w), "%llu", want);
	snprintf(g, sizeof(g), "%llu", got);
	walk_fail(path, what, w, g);
}

static void check_target(const char *path, const struct tnode *n)
{
	char buf[PATH_MAX + 1];
	ssize_t len = readlink(path, buf, sizeof(buf));

	if (len < 0)
		walk_fail(path, "readlink", (const char *)n->data, strerror(errno));
	buf[len] = '\0';
	if ((size_t)len != n->size || memcmp(buf, n->data, n->size) != 0)
		walk_fail(path, "symlink target", (const char *)n->data, buf);
}

static void check_contents(const char *path, const struct tnode *n)
{
	unsigned char *buf = malloc(n->size + 1);
	int fd = open(path, O_RDONLY | O_NOFOLLOW);
	ssize_t got;
	size_t i;

	if (!buf)
		mfsx_fail("out of memory");
	if (fd < 0)
		walk_fail(path, "open for reading", "success", strerror(errno));
	got = pread(fd, buf, n->size + 1, 0);
	if (got < 0)
		walk_fail(path, "pread", "success", strerror(errno));
	close(fd);
	check_num(path, "bytes read", n->size, (unsigned long long)got);
	for (i = 0; i < n->size && buf[i] == n->data[i]; i++)
		;
	if (i < n->size) {
		char what[128], w[16], g[16];

		/* Hard links show in the listing under the same ino. */
		snprintf(what, sizeof(what), "the byte at offset %zu of %zu (ino %llu, %u names)",
			 i, n->size, (unsigned long long)n->ino, n->nlink);
		snprintf(w, sizeof(w), "0x%02x", n->data[i]);
		snprintf(g, sizeof(g), "0x%02x", buf[i]);
		walk_fail(path, what, w, g);
	}
	free(buf);
}

void tree_check_entry(const char *path, const struct tnode *n, bool contents)
{
	struct stat st;

	if (lstat(path, &st) != 0)
		walk_fail(path, "lstat", "success", tree_errname(errno));
	if ((st.st_mode & S_IFMT) != n->type)
		walk_fail(path, "type", type_name(n->type), type_name(st.st_mode & S_IFMT));
	check_num(path, "st_ino (the inode recorded at creation)", n->ino, st.st_ino);
	check_num(path, "st_nlink", n->nlink, st.st_nlink);
	if (n->type == S_IFREG || n->type == S_IFLNK)
		check_num(path, "st_size", n->size, (unsigned long long)st.st_size);
	if (n->type == S_IFLNK)
		check_target(path, n);
	if (n->type == S_IFREG && contents)
		check_contents(path, n);
}

static int cmp_real(const void *a, const void *b)
{
	return strcmp(((const struct real_ent *)a)->name, ((const struct real_ent *)b)->name);
}

static int cmp_tent(const void *a, const void *b)
{
	return strcmp(((const struct tent *)a)->name, ((const struct tent *)b)->name);
}

/* Every name readdir gives, "." and ".." left out, sorted. */
static struct real_ent *read_dir(const char *path, size_t *count)
{
	DIR *d = opendir(path);
	struct real_ent *v = NULL;
	struct dirent *de;
	size_t n = 0, cap = 0;

	if (!d)
		walk_fail(path, "opendir", "success", tree_errname(errno));
	for (errno = 0; (de = readdir(d)) != NULL; errno = 0) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		if (n == cap) {
			cap = cap ? 2 * cap : 16;
			v = realloc(v, cap * sizeof(*v));
			if (!v)
				mfsx_fail("out of memory");
		}
		v[n].name = strdup(de->d_name);
		v[n++].d_type = de->d_type;
		if (!v[n - 1].name)
			mfsx_fail("out of memory");
	}
	if (errno != 0)
		walk_fail(path, "readdir", "success", tree_errname(errno));
	closedir(d);
	if (n > 0)
		qsort(v, n, sizeof(*v), cmp_real);
	*count = n;
	return v;
}

static unsigned char dtype_of(mode_t type)
{
	return type == S_IFDIR ? DT_DIR : type == S_IFLNK ? DT_LNK :
	       type == S_IFIFO ? DT_FIFO : DT_REG;
}

/* The sorted names of both sides must be the same list. */
static void compare_names(const char *path, const struct tent *m, size_t nm,
			  const struct real_ent *r, size_t nr)
{
	for (size_t i = 0; i < nm || i < nr; i++) {
		int c = i >= nm ? 1 : i >= nr ? -1 : strcmp(m[i].name, r[i].name);

		if (c < 0)
			walk_fail(path, "readdir misses an entry", m[i].name, "nothing");
		if (c > 0)
			walk_fail(path, "readdir shows an extra entry", "nothing", r[i].name);
		if (r[i].d_type != DT_UNKNOWN && r[i].d_type != dtype_of(m[i].node->type))
			check_num(r[i].name, "readdir d_type", dtype_of(m[i].node->type),
				  r[i].d_type);
	}
}

static void walk_dir(const struct tnode *dir)
{
	char path[PATH_MAX], child[PATH_MAX];
	struct tent *m = malloc((dir->nents + 1) * sizeof(*m));
	struct real_ent *r;
	size_t nr;

	if (!m)
		mfsx_fail("out of memory");
	tree_path(dir, NULL, path, sizeof(path));
	if (dir->nents > 0) {
		memcpy(m, dir->ents, dir->nents * sizeof(*m));
		qsort(m, dir->nents, sizeof(*m), cmp_tent);
	}
	r = read_dir(path, &nr);
	compare_names(path, m, dir->nents, r, nr);
	for (size_t i = 0; i < dir->nents; i++) {
		tree_path(dir, m[i].name, child, sizeof(child));
		tree_check_entry(child, m[i].node, true);
		if (m[i].node->type == S_IFDIR)
			walk_dir(m[i].node);
	}
	for (size_t i = 0; i < nr; i++)
		free(r[i].name);
	free(r);
	free(m);
}

static int cmp_ino(const void *a, const void *b)
{
	ino_t x = (*(const struct tnode *const *)a)->ino;
	ino_t y = (*(const struct tnode *const *)b)->ino;

	return x < y ? -1 : x > y;
}

/* Two live inodes of the model must never have the same st_ino. */
static void check_unique_inos(void)
{
	struct tnode **v = malloc(tree.nnodes * sizeof(*v));

	if (!v)
		mfsx_fail("out of memory");
	memcpy(v, tree.nodes, tree.nnodes * sizeof(*v));
	qsort(v, tree.nnodes, sizeof(*v), cmp_ino);
	for (size_t i = 1; i < tree.nnodes; i++) {
		if (v[i]->ino == v[i - 1]->ino) {
			mfsx_fail_begin("two different inodes share st_ino %llu",
					(unsigned long long)v[i]->ino);
			tree_dump();
			mfsx_fail_end();
		}
	}
	free(v);
}

void tree_walk(const char *why)
{
	mfsx_log("%s: readdir and lstat of the whole tree, %zu inodes, %zu names", why,
		 tree.nnodes, tree.nents);
	tree_check_entry(".", tree.top, false);
	check_unique_inos();
	walk_dir(tree.top);
}

static void dump_dir(const struct tnode *dir, unsigned *lines)
{
	char path[PATH_MAX];

	for (size_t i = 0; i < dir->nents && *lines < 100; i++, (*lines)++) {
		const struct tnode *n = dir->ents[i].node;

		tree_path(dir, dir->ents[i].name, path, sizeof(path));
		fprintf(stderr, "  %-9s nlink %u ino %-8llu size %-6zu %s%s%.60s\n",
			type_name(n->type),
			n->nlink, (unsigned long long)n->ino, n->size, tree_show(path),
			n->type == S_IFLNK ? " -> " : "",
			n->type == S_IFLNK ? (char *)n->data : "");
		if (n->type == S_IFDIR)
			dump_dir(n, lines);
	}
}

void tree_dump(void)
{
	unsigned lines = 0;

	fprintf(stderr, "mfsx: the model tree (top: nlink %u, ino %llu; first 100 entries):\n",
		tree.top->nlink, (unsigned long long)tree.top->ino);
	dump_dir(tree.top, &lines);
}
