/*
 * mfsx_tree.c - tree mode: random namespace operations in a directory
 * tree.  Before each call the model predicts its result (success or which
 * errno, in the order Linux checks them); the call's answer must match,
 * and a success is applied to the model and checked with lstat.  Every K
 * operations the whole tree is walked (mfsx_walk.c).
 *
 * Names come from a small pool so that operations meet existing entries
 * often; no operation follows a symlink, so their targets can be anything.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mfsx.h"
#include "mfsx_tree.h"

enum top {
	TOP_CREATE,
	TOP_MKDIR,
	TOP_MKFIFO,
	TOP_SYMLINK,
	TOP_LINK,
	TOP_UNLINK,
	TOP_RMDIR,
	TOP_RENAME,
	TOP_RENAME2,
	TOP_READLINK,
	TOP_TRUNCATE,
	TOP_WRITE,
	TOP_STAT,
	TOP_BADNAME,
	TOP_NKINDS
};

const struct mfsx_opkind mfsx_tree_kinds[] = {
	[TOP_CREATE] = { "create", 10 },
	[TOP_MKDIR] = { "mkdir", 6 },
	[TOP_MKFIFO] = { "mkfifo", 1 },
	[TOP_SYMLINK] = { "symlink", 5 },
	[TOP_LINK] = { "link", 6 },
	[TOP_UNLINK] = { "unlink", 8 },
	[TOP_RMDIR] = { "rmdir", 6 },
	[TOP_RENAME] = { "rename", 12 },
	[TOP_RENAME2] = { "rename2", 6 },
	[TOP_READLINK] = { "readlink", 3 },
	[TOP_TRUNCATE] = { "truncate", 4 },
	[TOP_WRITE] = { "write", 6 },
	[TOP_STAT] = { "stat", 4 },
	[TOP_BADNAME] = { "badname", 1 },
};
const unsigned mfsx_tree_nkinds = TOP_NKINDS;

struct tree_model tree;

/* Names operations pick from; the last two are set up at start. */
static char long_name[NAME_MAX + 1];     /* 255 bytes: the longest allowed */
static char too_long[NAME_MAX + 2];      /* 256 bytes: ENAMETOOLONG */
static const char *const pool[] = {
	"a", "b", "c", "d", "e", "f", "g", "sub", "file.txt", "UPPER", "with space", ".dot",
	long_name,
};
#define NPOOL (sizeof(pool) / sizeof(pool[0]))

/* An operation's target: a name in a directory, and what the model holds there. */
struct target {
	struct tnode *dir;
	struct tnode *node;          /* NULL: no such entry */
	char name[NAME_MAX + 1];
	char path[PATH_MAX];
};

static int saved_cwd = -1;
static char top_path[PATH_MAX];

/* ---- the model ---- */

static void *xrealloc(void *p, size_t n)
{
	p = realloc(p, n);
	if (!p)
		mfsx_fail("out of memory");
	return p;
}

static struct tnode *node_new(mode_t type)
{
	struct tnode *n = calloc(1, sizeof(*n));

	if (!n)
		mfsx_fail("out of memory");
	n->type = type;
	n->nlink = type == S_IFDIR ? 2 : 1;
	if (tree.nnodes == tree.cap) {
		tree.cap = tree.cap ? 2 * tree.cap : 64;
		tree.nodes = xrealloc(tree.nodes, tree.cap * sizeof(*tree.nodes));
	}
	n->index = tree.nnodes;
	tree.nodes[tree.nnodes++] = n;
	return n;
}

static void node_free(struct tnode *n)
{
	tree.nodes[n->index] = tree.nodes[--tree.nnodes];
	tree.nodes[n->index]->index = n->index;
	free(n->data);
	free(n->name);
	free(n->ents);
	free(n);
}

/* Makes room for size bytes (and a NUL, so symlink targets print). */
static void node_reserve(struct tnode *n, size_t size)
{
	if (size + 1 <= n->cap)
		return;
	n->data = xrealloc(n->data, size + 1);
	memset(n->data + n->cap, 0, size + 1 - n->cap);
	n->cap = size + 1;
}

static struct tent *ent_find(const struct tnode *dir, const char *name)
{
	for (size_t i = 0; i < dir->nents; i++)
		if (strcmp(dir->ents[i].name, name) == 0)
			return &dir->ents[i];
	return NULL;
}

static void ent_add(struct tnode *dir, const char *name, struct tnode *n)
{
	if (dir->nents == dir->cap_ents) {
		dir->cap_ents = dir->cap_ents ? 2 * dir->cap_ents : 8;
		dir->ents = xrealloc(dir->ents, dir->cap_ents * sizeof(*dir->ents));
	}
	dir->ents[dir->nents].name = strdup(name);
	dir->ents[dir->nents++].node = n;
	if (!dir->ents[dir->nents - 1].name)
		mfsx_fail("out of memory");
	tree.nents++;
	if (n->type == S_IFDIR) {
		free(n->name);
		n->name = strdup(name);
		n->parent = dir;
		dir->nlink++;           /* the child's ".." */
		if (!n->name)
			mfsx_fail("out of memory");
	}
}

/* Takes the entry out, leaving the inode's own link count alone. */
static struct tnode *ent_detach(struct tnode *dir, const char *name)
{
	struct tent *e = ent_find(dir, name);
	struct tnode *n = e->node;

	free(e->name);
	*e = dir->ents[--dir->nents];
	tree.nents--;
	if (n->type == S_IFDIR)
		dir->nlink--;
	return n;
}

/* One name of n is gone: drop a link, and the inode with its last one. */
static void node_unlinked(struct tnode *n)
{
	if (n->type == S_IFDIR || --n->nlink == 0)
		node_free(n);
}

static bool is_ancestor_or_self(const struct tnode *a, const struct tnode *d)
{
	for (; d; d = d->parent)
		if (d == a)
			return true;
	return false;
}

static unsigned depth(const struct tnode *d)
{
	unsigned n = 0;

	for (; d != tree.top; d = d->parent)
		n++;
	return n;
}

/* Levels of directories from n down (0 for a non-directory). */
static unsigned height(const struct tnode *n)
{
	unsigned h = 0;

	if (n->type != S_IFDIR)
		return 0;
	for (size_t i = 0; i < n->nents; i++) {
		unsigned c = height(n->ents[i].node);

		h = c > h ? c : h;
	}
	return h + 1;
}

/* ---- choosing targets ---- */

static struct tnode *pick_dir(void)
{
	size_t ndirs = 0, k;

	for (size_t i = 0; i < tree.nnodes; i++)
		ndirs += tree.nodes[i]->type == S_IFDIR;
	k = mfsx_below(ndirs);
	for (size_t i = 0; i < tree.nnodes; i++)
		if (tree.nodes[i]->type == S_IFDIR && k-- == 0)
			return tree.nodes[i];
	return tree.top;
}

static void set_target(struct target *t, struct tnode *dir, const char *name)
{
	struct tent *e = ent_find(dir, name);

	t->dir = dir;
	snprintf(t->name, sizeof(t->name), "%s", name);
	t->node = e ? e->node : NULL;
	tree_path(dir, name, t->path, sizeof(t->path));
}

/* An existing entry with odds of in_eight out of 8, else a pool name that may exist. */
static void pick_target_odds(struct target *t, unsigned in_eight)
{
	struct tnode *dir = pick_dir();

	if (dir->nents > 0 && mfsx_below(8) < in_eight)
		set_target(t, dir, dir->ents[mfsx_below(dir->nents)].name);
	else
		set_target(t, dir, pool[mfsx_below(NPOOL)]);
}

/* Operations on an entry mostly find one. */
static void pick_target(struct target *t)
{
	pick_target_odds(t, 7);
}

/* Mostly a new name; with a full tree, one that exists, so the op gets EEXIST. */
static void pick_create_target(struct target *t)
{
	size_t k;

	if (tree.nents < mfsx_opt.maxents) {
		pick_target_odds(t, 1);
		return;
	}
	k = mfsx_below(tree.nents);
	for (size_t i = 0; i < tree.nnodes; i++) {
		struct tnode *d = tree.nodes[i];

		if (d->type != S_IFDIR)
			continue;
		if (k < d->nents) {
			set_target(t, d, d->ents[k].name);
			return;
		}
		k -= d->nents;
	}
}

/* ---- checking a call's answer ---- */

static void expect(const char *what, int rc, int want)
{
	int got = rc < 0 ? errno : 0;

	if (got == want)
		return;
	mfsx_fail_begin("%s: expected %s, got %s", what, tree_errname(want), tree_errname(got));
	tree_dump();
	mfsx_fail_end();
}

/* A new inode takes the st_ino the filesystem gave it, then must look as modelled. */
static void record_new(struct tnode *n, const char *path)
{
	struct stat st;

	if (lstat(path, &st) != 0)
		mfsx_fail("lstat(%s) after creating it: %s", tree_show(path), tree_errname(errno));
	n->ino = st.st_ino;
	tree_check_entry(path, n, false);
}

static void log_op(const char *op, const struct target *t, int want)
{
	mfsx_log("%s \"%s\" (expect %s)", op, tree_show(t->path), tree_errname(want));
}

static void check_gone(const char *path)
{
	struct stat st;

	if (lstat(path, &st) == 0 || errno != ENOENT)
		mfsx_fail("%s: still there after the call (lstat: %s)", tree_show(path),
			  tree_errname(errno));
}

/* ---- the operations ---- */

static void op_create(void)
{
	struct target t;
	int want, fd;

	pick_create_target(&t);
	want = t.node ? EEXIST : 0;
	log_op("create O_EXCL", &t, want);
	fd = open(t.path, O_CREAT | O_EXCL | O_WRONLY, 0644);
	expect("open(O_CREAT | O_EXCL)", fd, want);
	if (fd < 0)
		return;
	if (close(fd) != 0)
		mfsx_fail("close: %s", strerror(errno));
	t.node = node_new(S_IFREG);
	ent_add(t.dir, t.name, t.node);
	record_new(t.node, t.path);
}

static void op_mkdir(void)
{
	struct target t;
	int want;

	pick_create_target(&t);
	want = t.node ? EEXIST : 0;
	if (want == 0 && depth(t.dir) + 1 > TREE_MAX_DEPTH) {
		mfsx_log("mkdir \"%s\" skipped: deep enough", tree_show(t.path));
		return;
	}
	log_op("mkdir", &t, want);
	expect("mkdir", mkdir(t.path, 0755), want);
	if (want)
		return;
	t.node = node_new(S_IFDIR);
	ent_add(t.dir, t.name, t.node);
	record_new(t.node, t.path);
	tree_check_entry(".", tree.top, false);
}

static void op_mkfifo(void)
{
	struct target t;
	int want;

	pick_create_target(&t);
	want = t.node ? EEXIST : 0;
	log_op("mkfifo", &t, want);
	expect("mknod(S_IFIFO)", mknod(t.path, S_IFIFO | 0644, 0), want);
	if (want)
		return;
	t.node = node_new(S_IFIFO);
	ent_add(t.dir, t.name, t.node);
	record_new(t.node, t.path);
}

/* Printable bytes with slashes and dots; mostly short, some past one block. */
static size_t make_target(char *buf, size_t cap)
{
	static const char chars[] = "abcxyz0189._-/";
	uint64_t r = mfsx_below(20);
	size_t len = r < 14 ? 1 + mfsx_below(40) :
		     r < 19 ? 41 + mfsx_below(260) : 301 + mfsx_below(700);

	len = len < cap ? len : cap - 1;
	for (size_t i = 0; i < len; i++)
		buf[i] = chars[mfsx_below(sizeof(chars) - 1)];
	buf[len] = '\0';
	return len;
}

static void op_symlink(void)
{
	char target[1024];
	size_t len;
	struct target t;
	int want;

	pick_create_target(&t);
	len = make_target(target, sizeof(target));
	want = t.node ? EEXIST : 0;
	mfsx_log("symlink \"%s\" -> %zu bytes \"%.40s%s\" (expect %s)", tree_show(t.path),
		 len, target,
		 len > 40 ? "..." : "", tree_errname(want));
	expect("symlink", symlink(target, t.path), want);
	if (want)
		return;
	t.node = node_new(S_IFLNK);
	node_reserve(t.node, len);
	memcpy(t.node->data, target, len + 1);
	t.node->size = len;
	ent_add(t.dir, t.name, t.node);
	record_new(t.node, t.path);
}

static void op_link(void)
{
	struct target from, to;
	int want;

	pick_target(&from);
	pick_create_target(&to);
	/* linkat looks up the source, then the new name, then refuses directories. */
	want = !from.node ? ENOENT : to.node ? EEXIST : from.node->type == S_IFDIR ? EPERM : 0;
	mfsx_log("link \"%s\" -> new name \"%s\" (expect %s)", tree_show(from.path),
		 tree_show(to.path),
		 tree_errname(want));
	expect("link", link(from.path, to.path), want);
	if (want)
		return;
	from.node->nlink++;
	ent_add(to.dir, to.name, from.node);
	tree_check_entry(to.path, from.node, false);
	tree_check_entry(from.path, from.node, false);
}

static void op_unlink(void)
{
	struct target t;
	int want;

	pick_target(&t);
	want = !t.node ? ENOENT : t.node->type == S_IFDIR ? EISDIR : 0;
	log_op("unlink", &t, want);
	expect("unlink", unlink(t.path), want);
	if (want)
		return;
	ent_detach(t.dir, t.name);
	node_unlinked(t.node);
	check_gone(t.path);
}

/* Mostly an empty directory, so that some removals succeed. */
static void pick_rmdir_target(struct target *t)
{
	if (mfsx_below(2) == 0) {
		struct tnode *d = pick_dir();

		if (d != tree.top && d->nents == 0) {
			set_target(t, d->parent, d->name);
			return;
		}
	}
	pick_target(t);
}

static void op_rmdir(void)
{
	struct target t;
	int want;

	pick_rmdir_target(&t);
	want = !t.node ? ENOENT : t.node->type != S_IFDIR ? ENOTDIR : t.node->nents ? ENOTEMPTY : 0;
	log_op("rmdir", &t, want);
	expect("rmdir", rmdir(t.path), want);
	if (want)
		return;
	ent_detach(t.dir, t.name);
	node_unlinked(t.node);
	check_gone(t.path);
	tree_check_entry(".", tree.top, false);
}

/*
 * What renameat2 answers, in the order Linux checks: flags, source exists,
 * NOREPLACE / EXCHANGE against the target, the source an ancestor of the
 * target's directory, the target an ancestor of the source's directory,
 * the same inode (nothing to do), then the kinds of the two entries.
 */
static int rename_errno(const struct target *s, const struct target *d, unsigned flags)
{
	if ((flags & RENAME_NOREPLACE) && (flags & RENAME_EXCHANGE))
		return EINVAL;
	if (!s->node)
		return ENOENT;
	if ((flags & RENAME_NOREPLACE) && d->node)
		return EEXIST;
	if ((flags & RENAME_EXCHANGE) && !d->node)
		return ENOENT;
	if (s->node->type == S_IFDIR && is_ancestor_or_self(s->node, d->dir))
		return EINVAL;
	if (d->node && d->node->type == S_IFDIR && is_ancestor_or_self(d->node, s->dir))
		return flags & RENAME_EXCHANGE ? EINVAL : ENOTEMPTY;
	if (d->node == s->node || !d->node || (flags & RENAME_EXCHANGE))
		return 0;
	if (s->node->type == S_IFDIR && d->node->type != S_IFDIR)
		return ENOTDIR;
	if (s->node->type != S_IFDIR && d->node->type == S_IFDIR)
		return EISDIR;
	return d->node->type == S_IFDIR && d->node->nents ? ENOTEMPTY : 0;
}

/* The target: sometimes inside the source (EINVAL), an empty directory, or a sibling. */
static void pick_rename_dest(const struct target *s, struct target *d)
{
	uint64_t r = mfsx_below(8);

	if (r == 0 && s->node && s->node->type == S_IFDIR) {
		struct tnode *in = pick_dir();

		if (is_ancestor_or_self(s->node, in)) {
			set_target(d, in, pool[mfsx_below(NPOOL)]);
			return;
		}
	}
	if (r == 1) {
		struct tnode *e = pick_dir();

		if (e != tree.top && e->nents == 0) {
			set_target(d, e->parent, e->name);
			return;
		}
	}
	if (r == 2)
		set_target(d, s->dir, pool[mfsx_below(NPOOL)]);
	else
		pick_target(d);
}

/* A successful move must not take a directory deeper than the limit. */
static bool too_deep(const struct target *s, const struct target *d, unsigned flags)
{
	if (depth(d->dir) + height(s->node) > TREE_MAX_DEPTH)
		return true;
	return (flags & RENAME_EXCHANGE) && depth(s->dir) + height(d->node) > TREE_MAX_DEPTH;
}

static void apply_rename(struct target *s, struct target *d, unsigned flags)
{
	struct tnode *sn, *dn;

	if (d->node == s->node)
		return;
	if (flags & RENAME_EXCHANGE) {
		sn = ent_detach(s->dir, s->name);
		dn = ent_detach(d->dir, d->name);
		ent_add(s->dir, s->name, dn);
		ent_add(d->dir, d->name, sn);
		return;
	}
	if (d->node) {
		ent_detach(d->dir, d->name);
		node_unlinked(d->node);
	}
	ent_add(d->dir, d->name, ent_detach(s->dir, s->name));
}

static const char *flags_name(unsigned flags)
{
	switch (flags) {
	case 0: return "";
	case RENAME_NOREPLACE: return " NOREPLACE";
	case RENAME_EXCHANGE: return " EXCHANGE";
	default: return " NOREPLACE|EXCHANGE";
	}
}

/* After the move: the names hold what the model says, a moved-away name is gone. */
static void check_renamed(const struct target *s, const struct target *d, unsigned flags)
{
	struct tent *e = ent_find(d->dir, d->name);

	tree_check_entry(d->path, e->node, false);
	if ((flags & RENAME_EXCHANGE) || d->node == s->node)
		tree_check_entry(s->path, ent_find(s->dir, s->name)->node, false);
	else
		check_gone(s->path);
	tree_check_entry(".", tree.top, false);
}

static void do_rename(unsigned flags)
{
	struct target s, d;
	int want, rc;

	pick_target(&s);
	pick_rename_dest(&s, &d);
	want = rename_errno(&s, &d, flags);
	if (want == 0 && too_deep(&s, &d, flags)) {
		mfsx_log("rename \"%s\" -> \"%s\" skipped: too deep", tree_show(s.path),
			 tree_show(d.path));
		return;
	}
	mfsx_log("rename%s \"%s\" -> \"%s\" (expect %s)", flags_name(flags),
		 tree_show(s.path), tree_show(d.path),
		 tree_errname(want));
	if (flags == 0 && mfsx_below(2))
		rc = rename(s.path, d.path);
	else
		rc = renameat2(AT_FDCWD, s.path, AT_FDCWD, d.path, flags);
	expect(flags ? "renameat2" : "rename", rc, want);
	if (want)
		return;
	apply_rename(&s, &d, flags);
	check_renamed(&s, &d, flags);
}

static void op_rename2(void)
{
	static const unsigned flags[8] = {
		RENAME_NOREPLACE, RENAME_NOREPLACE, RENAME_NOREPLACE, RENAME_EXCHANGE,
		RENAME_EXCHANGE, RENAME_EXCHANGE, RENAME_EXCHANGE,
		RENAME_NOREPLACE | RENAME_EXCHANGE,
	};

	do_rename(flags[mfsx_below(8)]);
}

static void op_readlink(void)
{
	char buf[PATH_MAX];
	struct target t;
	ssize_t n;
	int want;

	pick_target(&t);
	want = !t.node ? ENOENT : t.node->type != S_IFLNK ? EINVAL : 0;
	log_op("readlink", &t, want);
	n = readlink(t.path, buf, sizeof(buf));
	expect("readlink", n < 0 ? -1 : 0, want);
	if (want)
		return;
	if ((size_t)n != t.node->size || memcmp(buf, t.node->data, t.node->size) != 0)
		mfsx_fail("readlink(%s): %zd bytes \"%.*s\", expected %zu bytes \"%s\"",
			  tree_show(t.path), n,
			  (int)n, buf, t.node->size, (char *)t.node->data);
}

/* A path truncate and open for writing would follow: skip symlinks and fifos. */
static bool follows(const struct target *t, const char *op)
{
	if (!t->node || (t->node->type != S_IFLNK && t->node->type != S_IFIFO))
		return false;
	mfsx_log("%s \"%s\" skipped: would follow a symlink or block on a fifo", op,
		 tree_show(t->path));
	return true;
}

static void op_truncate(void)
{
	struct target t;
	uint64_t size;
	int want;

	pick_target(&t);
	size = mfsx_below(4) ? mfsx_below(16385) : mfsx_below(65537);
	if (t.node && t.node->type == S_IFLNK) {
		mfsx_log("truncate \"%s\" skipped: would follow a symlink", tree_show(t.path));
		return;
	}
	want = !t.node ? ENOENT : t.node->type == S_IFDIR ? EISDIR :
	       t.node->type == S_IFIFO ? EINVAL : 0;
	mfsx_log("truncate \"%s\" to %llu (expect %s)", tree_show(t.path), (unsigned long long)size,
		 tree_errname(want));
	expect("truncate", truncate(t.path, (off_t)size), want);
	if (want)
		return;
	node_reserve(t.node, size);
	if (size < t.node->size)
		memset(t.node->data + size, 0, t.node->size - size);
	t.node->size = size;
	tree_check_entry(t.path, t.node, true);
}

/* Writes len pattern bytes through fd and into the model's inode; -Z damages one. */
static void write_data(int fd, struct tnode *n, uint64_t off, size_t len, bool append)
{
	static bool injected;
	unsigned char buf[4096];
	ssize_t got;

	for (size_t i = 0; i < len; i++)
		buf[i] = (unsigned char)(mfsx_mix((uint64_t)mfsx_opno << 20 | i) >> 8);
	off = append ? n->size : off;
	node_reserve(n, off + len);
	memcpy(n->data + off, buf, len);
	n->size = off + len > n->size ? off + len : n->size;
	if (mfsx_opt.inject_op && !injected && mfsx_opno >= mfsx_opt.inject_op) {
		buf[len / 2] ^= 0x5a;
		injected = true;
	}
	got = append ? write(fd, buf, len) : pwrite(fd, buf, len, (off_t)off);
	if (got != (ssize_t)len)
		mfsx_fail("write of %zu bytes: %s", len, got < 0 ? strerror(errno) : "short write");
}

static void op_write(void)
{
	struct target t;
	uint64_t off, r;
	size_t len;
	int want, fd, flags;

	pick_target(&t);
	if (follows(&t, "write"))
		return;
	off = mfsx_below(16384);
	len = 1 + mfsx_below(4096);
	r = mfsx_below(8);
	flags = O_WRONLY | (r == 0 ? O_TRUNC : 0) | (r == 1 ? O_APPEND : 0);
	want = !t.node ? ENOENT : t.node->type == S_IFDIR ? EISDIR : 0;
	mfsx_log("write \"%s\" %zu bytes at %s%llu%s (expect %s)", tree_show(t.path), len,
		 r == 1 ? "EOF, not " : "", (unsigned long long)off, r == 0 ? " after O_TRUNC" : "",
		 tree_errname(want));
	fd = open(t.path, flags);
	expect("open(O_WRONLY)", fd, want);
	if (want)
		return;
	if (r == 0 && t.node->size > 0) {
		memset(t.node->data, 0, t.node->size);
		t.node->size = 0;
	}
	write_data(fd, t.node, off, len, r == 1);
	if (close(fd) != 0)
		mfsx_fail("close: %s", strerror(errno));
	tree_check_entry(t.path, t.node, true);
}

static void op_stat(void)
{
	struct target t;
	struct stat st;

	pick_target(&t);
	log_op("lstat", &t, t.node ? 0 : ENOENT);
	if (t.node)
		tree_check_entry(t.path, t.node, true);
	else
		expect("lstat", lstat(t.path, &st), ENOENT);
}

/* A 256-byte name, or a regular file used as a directory. */
static void op_badname(void)
{
	char path[PATH_MAX + NAME_MAX + 2];
	struct target t;
	struct stat st;
	uint64_t r = mfsx_below(4);

	pick_target(&t);
	if (r == 0 && t.node && t.node->type == S_IFREG) {
		snprintf(path, sizeof(path), "%s/x", t.path);
		mfsx_log("create \"%s\" under a file (expect ENOTDIR)", tree_show(path));
		expect("open(O_CREAT) under a file", open(path, O_CREAT | O_WRONLY, 0644), ENOTDIR);
		return;
	}
	tree_path(t.dir, NULL, path, sizeof(path));
	mfsx_log("%s a 256-byte name in \"%s\" (expect ENAMETOOLONG)",
		 r == 1 ? "mkdir" : r == 2 ? "lstat" : "create", tree_show(path));
	tree_path(t.dir, too_long, path, sizeof(path));
	if (r == 1)
		expect("mkdir (256-byte name)", mkdir(path, 0755), ENAMETOOLONG);
	else if (r == 2)
		expect("lstat (256-byte name)", lstat(path, &st), ENAMETOOLONG);
	else
		expect("open(O_CREAT) (256-byte name)", open(path, O_CREAT | O_WRONLY, 0644),
		       ENAMETOOLONG);
}

static bool creates(enum top kind)
{
	return kind == TOP_CREATE || kind == TOP_MKDIR || kind == TOP_MKFIFO ||
	       kind == TOP_SYMLINK || kind == TOP_LINK;
}

/* A full tree turns most creating ops into removals, so it keeps changing. */
static enum top pick_op(void)
{
	enum top kind = (enum top)mfsx_pick_kind(mfsx_tree_kinds, TOP_NKINDS);
	uint64_t r;

	if (!creates(kind) || tree.nents < mfsx_opt.maxents)
		return kind;
	r = mfsx_below(4);
	if (r == 1 && !(mfsx_opt.disabled & (1ULL << TOP_UNLINK)))
		return TOP_UNLINK;
	if (r >= 2 && !(mfsx_opt.disabled & (1ULL << TOP_RMDIR)))
		return TOP_RMDIR;
	return kind;
}

static void run_op(void)
{
	switch (pick_op()) {
	case TOP_CREATE: op_create(); break;
	case TOP_MKDIR: op_mkdir(); break;
	case TOP_MKFIFO: op_mkfifo(); break;
	case TOP_SYMLINK: op_symlink(); break;
	case TOP_LINK: op_link(); break;
	case TOP_UNLINK: op_unlink(); break;
	case TOP_RMDIR: op_rmdir(); break;
	case TOP_RENAME: do_rename(0); break;
	case TOP_RENAME2: op_rename2(); break;
	case TOP_READLINK: op_readlink(); break;
	case TOP_TRUNCATE: op_truncate(); break;
	case TOP_WRITE: op_write(); break;
	case TOP_STAT: op_stat(); break;
	case TOP_BADNAME: op_badname(); break;
	case TOP_NKINDS: break;
	}
}

/* A fresh, empty top directory, made the working directory. */
static void setup(void)
{
	struct stat st;

	memset(long_name, 'L', NAME_MAX);
	memset(too_long, 'T', NAME_MAX + 1);
	snprintf(top_path, sizeof(top_path), "%s/%s", mfsx_opt.dir,
		 mfsx_opt.name ? mfsx_opt.name : "mfsx.tree");
	saved_cwd = open(".", O_RDONLY | O_DIRECTORY);
	if (saved_cwd < 0)
		mfsx_fail("open(.): %s", strerror(errno));
	if (mfsx_remove_all(top_path) != 0)
		mfsx_fail("removing the old %s: %s", top_path, strerror(errno));
	if (mkdir(top_path, 0755) != 0 || chdir(top_path) != 0 || lstat(".", &st) != 0)
		mfsx_fail("setting up %s: %s", top_path, strerror(errno));
	tree.top = node_new(S_IFDIR);
	tree.top->ino = st.st_ino;
}

static void finish(void)
{
	mfsx_opno = mfsx_opt.nops;
	tree_walk("final walk");
	if (fchdir(saved_cwd) != 0)
		mfsx_fail("fchdir: %s", strerror(errno));
	if (!mfsx_opt.keep && mfsx_remove_all(top_path) != 0)
		mfsx_fail("removing %s: %s", top_path, strerror(errno));
	close(saved_cwd);
}

int mfsx_tree_run(void)
{
	setup();
	for (mfsx_opno = 1; mfsx_opno <= mfsx_opt.nops; mfsx_opno++) {
		run_op();
		if (mfsx_opno % mfsx_opt.check_every == 0)
			tree_walk("periodic walk");
	}
	finish();
	return 0;
}
