/*
 * t_powercut - power cuts anywhere in seeded random workloads of the
 * mounted filesystem, each recovered image checked against a model of
 * what must have survived.
 *
 * A seed runs random operations over the recording memory device: create,
 * write (a few bytes to 24 KiB, at the end, inside, past the end leaving a
 * hole), truncate down and up (also by O_TRUNC), rename (over existing
 * entries, across directories, directories too, RENAME_EXCHANGE), link,
 * unlink (of open files too: the orphan list), mkdir, rmdir, symlink
 * (fast and slow), chmod, utimens, user xattrs set and removed (in the
 * inode and in a block), fallocate (preallocation, punched holes, zeroed
 * ranges), fsync and fdatasync of files, fsync of
 * directories, closing open files, now and then syncfs, and at the end
 * unmount.  The model notes what each operation did and which entries of
 * the device's log it spans.
 *
 * At every flush of the log, just before it (pending writes all lost,
 * random subsets, torn, each block on its own) and just after, and at a
 * random point between two flushes, the device is rebuilt as a power cut
 * would leave it; each distinct image is mounted (journal replay, orphan
 * list), compared with the model, unmounted, checked by tf_check (bitmaps,
 * counts, block maps, directories, link counts, orphan list emptied) and
 * for blocks mapped past the end of a file, then mounted again, where it
 * must show just what it showed the first time; there each file is grown
 * past its last block, and checked again.
 *
 * What is demanded follows from how the core commits: one running
 * transaction; every change of names is one handle; fsync commits the
 * transaction that holds the inode's last change, and with it every
 * earlier one.
 *
 * Names.  The namespace after a cut (every path with its inode number,
 * type, mode and symlink target) is exactly the one after some operation
 * k, kmin <= k <= kmax: operations are atomic and survive in order.  kmax
 * is the last operation begun before the cut.  kmin is the largest guard
 * of the fsyncs that had returned before it:
 *   fsync(file or directory x): the last operation that changed x's inode
 *     (for a directory: an entry added to or removed from it, a rename in
 *     or out of it, its mode or times; for a file: a write, a truncate,
 *     its mode or times, a link, an unlink or a rename of it);
 *   fdatasync(x): the last operation that created x or set its size;
 *   syncfs and unmount: every operation before them.
 * So a file fsynced after its creation is reachable by the name it had
 * then (or a later one), and an fsynced directory holds its entries as of
 * the fsync or as of a later operation.
 *
 * Data.  A regular file reachable after a cut is held against its
 * versions (one per write or truncate) from the one its last returned
 * fsync, fdatasync or syncfs saw (or its creation) to the newest an
 * operation begun before the cut made: its size must be one of theirs, or
 * between the sizes before and after a write (a write goes in chunks of
 * one handle each), and each byte must be what one of them held there.
 * A file not changed since its last returned fsync reads back exactly.
 *
 * Not demanded: operations after kmin may or may not survive; unfsynced
 * data may be any mix, byte by byte, of the versions since the last
 * fsync (writeback writes pages when it likes, a cut keeps any subset of
 * blocks); an unlinked open file is gone after the cut; times are not
 * compared.  Demanded always: the image mounts, tf_check finds nothing
 * wrong, no block is mapped past the end of a regular file, a clean
 * unmount and mount change nothing that was seen, and a file grown after
 * the cut reads zeros from its old end on (a cut may leave bytes past the
 * end on disk: a page written home before the size that covers it
 * committed; they must not come back).
 *
 * Torn writes (a survivor cut at a 512-byte sector) are tried at every
 * flush but those where a write of the filesystem superblock's block is
 * pending: the superblock spans two sectors under one checksum.  A tear
 * of its checkpoint write is mended by the replay (the mount finds the
 * journal through a backup; t_mount checks that), but one of its writes
 * in place (at mount and unmount, and of the errors and recovery flags)
 * leaves a superblock the mount refuses; only fsck and the backups can
 * help then.  That is a limit of the format, counted and reported rather
 * than checked.
 *
 * A failure names the seed, the cut (log prefix, mode, rng) and what
 * differed.  Environment:
 *   MISCFS_CRASH_SEED=S       run seed S only (otherwise seeds 1..N)
 *   MISCFS_CRASH_SEEDS=N      how many seeds (default 6)
 *   MISCFS_CRASH_OPS=N        operations per seed (default 170; every
 *                             third seed runs 2.5 times as many)
 *   MISCFS_CRASH_STATE=P:M:R  with a seed: check only the cut after P log
 *                             entries in mode M with rng R
 *   MISCFS_CRASH_MIN=N        crash states required in all (default 2000,
 *                             none with a seed given)
 */
#include <fcntl.h>
#include <linux/falloc.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <time.h>

#include "bdev_test.h"
#include "t_fs.h"
#include "t_dev.h"
#include "t_hashset.h"
#include "util.h"

#define BS          1024u
#define DEV_BYTES   (4u << 20)
#define MAX_FILE    (40u * 1024)
#define NAMES       10u             /* a directory's names are n0 .. n9 */
#define MAX_DEPTH   3u
#define MAX_OPEN    4u
#define LINE_MAX_   400u

/* The cache is small enough that writeback also runs under pressure,
 * between commits; no flusher thread, so that a seed always writes the
 * same log.  MISCFS_CRASH_DATA=journal mounts with data=journal. */
static struct mfs_mount_opts mount_opts = {
	.cache_bytes = 1u << 20, .no_flusher = true, .commit_s = 60,
	.atime = MFS_ATIME_NONE,
};

/* ---- randomness ---------------------------------------------------------- */

static uint64_t rng_state;

static uint64_t mix64(uint64_t x)
{
	x += 0x9E3779B97F4A7C15ull;
	x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
	x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
	return x ^ (x >> 31);
}

static uint32_t rnd(uint32_t n)
{
	rng_state = mix64(rng_state);
	return (uint32_t)(rng_state % n);
}

static bool chance(unsigned pct)
{
	return rnd(100) < pct;
}

static uint64_t fnv(const void *p, size_t len, uint64_t h)
{
	const uint8_t *b = p;

	for (size_t i = 0; i < len; i++)
		h = (h ^ b[i]) * 0x100000001B3ull;
	return h;
}

static void *xrealloc(void *p, size_t n)
{
	p = realloc(p, n ? n : 1);
	t_assert(p, "no memory");
	return p;
}

/* ---- where a failure happened -------------------------------------------- */

/* Printed when a check fails (t_fail exits): enough to run it again. */
static struct {
	bool workload, cut;
	uint64_t seed;
	uint32_t op;
	size_t prefix;
	int mode;
	uint64_t rng;
} where;

static void print_where(void)
{
	if (where.workload)
		fprintf(stderr, "seed %" PRIu64 ", workload, operation %" PRIu32 "\n",
			where.seed, where.op);
	if (where.cut)
		fprintf(stderr, "seed %" PRIu64 ", cut after %zu log entries, mode %d, rng %"
			PRIu64 "\nreproduce: MISCFS_CRASH_SEED=%" PRIu64
			" MISCFS_CRASH_STATE=%zu:%d:%" PRIu64 "\n", where.seed, where.prefix,
			where.mode, where.rng, where.seed, where.prefix, where.mode, where.rng);
}

/* ---- the model ----------------------------------------------------------- */

/* A regular file's contents after one operation: its pages, which hold
 * zeros past the end in the last one, as the page cache keeps them. */
struct ver {
	uint32_t op;
	uint32_t size, size_min;     /* a write passes through the sizes between */
	uint32_t pages;              /* bytes of whole pages */
	uint8_t *data;
};

/* An fsync of the file returned once the log held @log_end entries. */
struct durable {
	size_t log_end;
	uint32_t ver;
};

struct node {
	uint32_t ino, mode, nlink, nopen;
	uint32_t last_op;            /* last operation that wrote the inode */
	uint32_t last_size_op;       /* ... that created it or set its size */
	uint32_t size;               /* regular files: */
	uint8_t *data;               /* MAX_FILE bytes, zero past size */
	struct ver *ver;
	uint32_t nver;
	struct durable *dur;
	uint32_t ndur;
	char *target;                /* symbolic links */
	int ent[NAMES];              /* directories: node named n<i>, or -1 */
	int parent;
};

struct op {
	char what[40];
	size_t log_start, log_end;
	uint32_t snap;               /* the namespace after it */
	uint32_t guard;              /* durable up to this op once it returned */
	uint32_t gmax;               /* largest guard up to here */
};

/* One line per path: "path ino mode[ -> target]". */
struct line {
	char *text;
	int node;                    /* model side: the node */
	uint32_t ino, mode;          /* image side: what getattr said */
	uint64_t size;
};

struct lines {
	struct line *v;
	uint32_t n, cap;
};

struct snap {
	char *text;
	uint64_t hash;
	int *node;                   /* per sorted line */
	uint32_t n;
};

struct openf {
	struct mfs_file *f;
	int node;
};

struct world {
	uint64_t seed;
	struct bdev *bd;
	struct mfs_fs *fs;
	struct node *n;
	uint32_t nn;
	struct op *op;
	uint32_t nop;
	struct snap *snap;
	uint32_t nsnap;
	struct openf open[MAX_OPEN];
	uint32_t nopen;
	uint32_t cur;                /* the operation running */
	struct lines base;           /* what mkfs made (lost+found) */
	unsigned long done[16];      /* operations run, by kind */
	uint64_t commits, checkpoints;
};

static bool is_dir(const struct node *n)  { return S_ISDIR(n->mode); }
static bool is_reg(const struct node *n)  { return S_ISREG(n->mode); }
static bool is_live(const struct node *n) { return n->nlink || n->nopen; }

static void ver_push(struct world *w, int id, uint32_t size_min)
{
	struct node *n = &w->n[id];
	struct ver *v;

	n->ver = xrealloc(n->ver, (n->nver + 1) * sizeof(*n->ver));
	v = &n->ver[n->nver++];
	v->op = w->cur;
	v->size = n->size;
	v->size_min = size_min;
	v->pages = (uint32_t)UT_ROUND_UP(n->size, BS);
	v->data = xrealloc(NULL, v->pages);
	memcpy(v->data, n->data, v->pages);
}

static int node_new(struct world *w, uint32_t ino, uint32_t mode)
{
	int id = (int)w->nn++;
	struct node *n;

	w->n = xrealloc(w->n, w->nn * sizeof(*w->n));
	n = &w->n[id];
	memset(n, 0, sizeof(*n));
	n->ino = ino;
	n->mode = mode;
	n->parent = -1;
	for (unsigned i = 0; i < NAMES; i++)
		n->ent[i] = -1;
	n->last_op = n->last_size_op = w->cur;
	if (S_ISREG(mode)) {
		n->data = calloc(1, MAX_FILE);
		t_assert(n->data, "no memory");
		ver_push(w, id, 0);
	}
	return id;
}

static void node_free(struct node *n)
{
	for (uint32_t i = 0; i < n->nver; i++)
		free(n->ver[i].data);
	free(n->ver);
	free(n->dur);
	free(n->data);
	free(n->target);
}

/* The inode of @id was written by the current operation. */
static void touched(struct world *w, int id)
{
	w->n[id].last_op = w->cur;
}

/* A returned fsync (or syncfs) makes the current version of @id durable. */
static void made_durable(struct world *w, int id, size_t log_end)
{
	struct node *n = &w->n[id];

	n->dur = xrealloc(n->dur, (n->ndur + 1) * sizeof(*n->dur));
	n->dur[n->ndur++] = (struct durable){ log_end, n->nver - 1 };
}

static void drop_link(struct world *w, int id)
{
	struct node *n = &w->n[id];

	n->nlink = is_dir(n) ? 0 : n->nlink - 1;
	touched(w, id);
}

static uint32_t depth_of(const struct world *w, int id)
{
	uint32_t d = 0;

	for (; w->n[id].parent >= 0; id = w->n[id].parent)
		d++;
	return d;
}

/* Is @id @anc or below it? */
static bool is_below(const struct world *w, int id, int anc)
{
	for (; id >= 0; id = w->n[id].parent)
		if (id == anc)
			return true;
	return false;
}

static bool dir_empty(const struct node *d)
{
	for (unsigned i = 0; i < NAMES; i++)
		if (d->ent[i] >= 0)
			return false;
	return true;
}

static void name_of(unsigned i, char *buf)
{
	snprintf(buf, 8, "n%u", i);
}

/* ---- lines and snapshots ------------------------------------------------- */

static void lines_add(struct lines *ls, const char *path, uint32_t ino, uint32_t mode,
		      const char *target, size_t tlen)
{
	char buf[LINE_MAX_];
	struct line *l;

	if (ls->n == ls->cap) {
		ls->cap = ls->cap ? ls->cap * 2 : 64;
		ls->v = xrealloc(ls->v, ls->cap * sizeof(*ls->v));
	}
	snprintf(buf, sizeof(buf), "%s %" PRIu32 " %o%s%.*s", path, ino, mode,
		 target ? " -> " : "", (int)tlen, target ? target : "");
	l = &ls->v[ls->n++];
	memset(l, 0, sizeof(*l));
	l->text = strdup(buf);
	t_assert(l->text, "no memory");
	l->ino = ino;
	l->mode = mode;
	l->node = -1;
}

static int line_cmp(const void *a, const void *b)
{
	return strcmp(((const struct line *)a)->text, ((const struct line *)b)->text);
}

/* Sort and join into one text. */
static char *lines_text(struct lines *ls, uint64_t *hash)
{
	size_t len = 1, at = 0;
	char *t;

	qsort(ls->v, ls->n, sizeof(*ls->v), line_cmp);
	for (uint32_t i = 0; i < ls->n; i++)
		len += strlen(ls->v[i].text) + 1;
	t = xrealloc(NULL, len);
	for (uint32_t i = 0; i < ls->n; i++)
		at += (size_t)sprintf(t + at, "%s\n", ls->v[i].text);
	t[at] = 0;
	*hash = fnv(t, at, 0xcbf29ce484222325ull);
	return t;
}

static void lines_free(struct lines *ls)
{
	for (uint32_t i = 0; i < ls->n; i++)
		free(ls->v[i].text);
	free(ls->v);
	memset(ls, 0, sizeof(*ls));
}

static void model_lines(const struct world *w, int dir, const char *path, struct lines *ls)
{
	for (unsigned i = 0; i < NAMES; i++) {
		int c = w->n[dir].ent[i];
		const struct node *n = c >= 0 ? &w->n[c] : NULL;
		char p[64];

		if (!n)
			continue;
		snprintf(p, sizeof(p), "%s/n%u", path, i);
		lines_add(ls, p, n->ino, n->mode, n->target, n->target ? strlen(n->target) : 0);
		ls->v[ls->n - 1].node = is_reg(n) ? c : -1;
		if (is_dir(n))
			model_lines(w, c, p, ls);
	}
}

/* The namespace now, as a snapshot (the previous one if unchanged). */
static uint32_t snapshot(struct world *w)
{
	struct lines ls = { 0 };
	struct snap s;

	for (uint32_t i = 0; i < w->base.n; i++) {
		const struct line *b = &w->base.v[i];

		lines_add(&ls, "", 0, 0, NULL, 0);
		free(ls.v[ls.n - 1].text);
		ls.v[ls.n - 1].text = strdup(b->text);
		t_assert(ls.v[ls.n - 1].text, "no memory");
	}
	model_lines(w, 0, "", &ls);
	s.text = lines_text(&ls, &s.hash);
	if (w->nsnap && !strcmp(s.text, w->snap[w->nsnap - 1].text)) {
		free(s.text);
		lines_free(&ls);
		return w->nsnap - 1;
	}
	s.n = ls.n;
	s.node = xrealloc(NULL, ls.n * sizeof(int));
	for (uint32_t i = 0; i < ls.n; i++)
		s.node[i] = ls.v[i].node;
	lines_free(&ls);
	w->snap = xrealloc(w->snap, (w->nsnap + 1) * sizeof(*w->snap));
	w->snap[w->nsnap] = s;
	return w->nsnap++;
}

static void walk(struct mfs_fs *fs, uint64_t dir, const char *path, unsigned depth,
		 struct lines *ls);

/* ---- operations ---------------------------------------------------------- */

static bool trace;                /* MISCFS_CRASH_TRACE: print each operation */
/* File data goes through the journal: each block after a cut is whole
 * from one version, never a mix of two writes. */
static bool data_journalled;
/* MISCFS_CRASH_DATA=jflag: an ordered mount whose root has the j
 * attribute, which every file and directory made below it inherits. */
static bool jflag;

static void op_begin(struct world *w, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void op_begin(struct world *w, const char *fmt, ...)
{
	va_list ap;

	w->op = xrealloc(w->op, (w->nop + 1) * sizeof(*w->op));
	w->cur = w->nop;
	where.op = w->cur;
	w->op[w->cur] = (struct op){ .log_start = bdev_wrap_log_count(w->bd) };
	va_start(ap, fmt);
	vsnprintf(w->op[w->cur].what, sizeof(w->op[w->cur].what), fmt, ap);
	va_end(ap);
}

static void op_end(struct world *w)
{
	struct op *o = &w->op[w->cur];

	o->log_end = bdev_wrap_log_count(w->bd);
	o->snap = snapshot(w);
	o->gmax = UT_MAX(o->guard, w->cur ? w->op[w->cur - 1].gmax : 0);
	if (trace)
		printf("op %" PRIu32 ": %s, log %zu..%zu, guard %" PRIu32 "\n", w->cur,
		       o->what, o->log_start, o->log_end, o->guard);
	w->nop++;
}

typedef bool (*pick_fn)(const struct world *w, int id);

/* A random node that @ok accepts, or -1. */
static int pick(const struct world *w, pick_fn ok)
{
	int got = -1;
	uint32_t seen = 0;

	for (uint32_t i = 0; i < w->nn; i++)
		if (ok(w, (int)i) && rnd(++seen) == 0)
			got = (int)i;
	return got;
}

static bool live_dir(const struct world *w, int id)
{
	return is_dir(&w->n[id]) && w->n[id].nlink;
}

static bool dir_with_room(const struct world *w, int id)
{
	if (!live_dir(w, id))
		return false;
	for (unsigned i = 0; i < NAMES; i++)
		if (w->n[id].ent[i] < 0)
			return true;
	return false;
}

static bool dir_with_entry(const struct world *w, int id)
{
	return live_dir(w, id) && !dir_empty(&w->n[id]);
}

static bool live_reg(const struct world *w, int id)
{
	return is_reg(&w->n[id]) && is_live(&w->n[id]);
}

static bool linked_reg(const struct world *w, int id)
{
	return is_reg(&w->n[id]) && w->n[id].nlink;
}

static bool live_not_link(const struct world *w, int id)
{
	return is_live(&w->n[id]) && !S_ISLNK(w->n[id].mode);
}

/* A random free (@want_free) or used name of @dir. */
static int pick_name(const struct world *w, int dir, bool want_free)
{
	int got = -1;
	uint32_t seen = 0;

	for (unsigned i = 0; i < NAMES; i++)
		if ((w->n[dir].ent[i] < 0) == want_free && rnd(++seen) == 0)
			got = (int)i;
	return got;
}

static void random_bytes(uint8_t *buf, size_t len)
{
	for (size_t i = 0; i < len; i++)
		buf[i] = (uint8_t)rnd(256);
}

/* The open file of @id, if the workload holds one. */
static struct mfs_file *open_of(struct world *w, int id)
{
	for (uint32_t i = 0; i < w->nopen; i++)
		if (w->open[i].node == id)
			return w->open[i].f;
	return NULL;
}

static void keep_open(struct world *w, int id, struct mfs_file *f)
{
	w->open[w->nopen++] = (struct openf){ f, id };
	w->n[id].nopen++;
}

static bool do_create(struct world *w)
{
	static const mode_t modes[] = { 0644, 0600, 0755 };
	int dir = pick(w, dir_with_room), nm, id;
	mode_t mode = modes[rnd(3)];
	struct mfs_file *f;
	struct stat st;
	char name[8];

	if (dir < 0)
		return false;
	nm = pick_name(w, dir, true);
	name_of((unsigned)nm, name);
	op_begin(w, "create %s in %" PRIu32, name, w->n[dir].ino);
	t_ok(mfs_create(w->fs, &tf_root, w->n[dir].ino, name, mode,
			O_RDWR | O_CREAT | O_EXCL, &st, NULL, &f));
	mfs_forget(w->fs, st.st_ino, 1);
	id = node_new(w, (uint32_t)st.st_ino, S_IFREG | (mode & ~tf_root.umask));
	t_eq(st.st_mode, w->n[id].mode);
	w->n[dir].ent[nm] = id;
	w->n[id].nlink = 1;
	touched(w, dir);
	if (w->nopen < MAX_OPEN && chance(40))
		keep_open(w, id, f);
	else
		t_ok(mfs_release(w->fs, f));
	op_end(w);
	return true;
}

static uint32_t write_len(void)
{
	switch (rnd(5)) {
	case 0: return 1 + rnd(100);
	case 1: return BS * (1 + rnd(3)) - 50 + rnd(100);
	case 2: return 1 + rnd(6000);
	case 3: return 16 * 1024 + rnd(8 * 1024);  /* more than one handle */
	default: return 1 + rnd(2500);
	}
}

static uint32_t write_off(const struct node *n)
{
	switch (rnd(5)) {
	case 0:
	case 1: return n->size;
	case 2: return rnd(n->size + 1);
	case 3: return n->size + rnd(9000);       /* a hole before it */
	default: return 0;
	}
}

/* Write @len bytes at @off to @id through its open file or a new one. */
static void write_file(struct world *w, int id, uint32_t off, uint32_t len)
{
	struct mfs_file *f = open_of(w, id), *mine = NULL;
	uint8_t *buf = xrealloc(NULL, len);

	random_bytes(buf, len);
	if (!f || (w->n[id].nlink && chance(30))) {
		t_ok(mfs_open(w->fs, &tf_root, w->n[id].ino, O_RDWR, &mine));
		f = mine;
	}
	t_eq(mfs_write(w->fs, &tf_root, f, buf, len, off, 0), len);
	if (mine)
		t_ok(mfs_release(w->fs, mine));
	memcpy(w->n[id].data + off, buf, len);
	free(buf);
}

static bool do_write(struct world *w)
{
	int id = pick(w, live_reg);
	struct node *n = id >= 0 ? &w->n[id] : NULL;
	uint32_t off, len, old;

	if (!n || (!n->nlink && !open_of(w, id)))
		return false;
	off = write_off(n);              /* UT_MIN would draw twice */
	off = UT_MIN(off, MAX_FILE - 1);
	len = write_len();
	len = UT_MIN(len, MAX_FILE - off);
	op_begin(w, "write %" PRIu32 " at %" PRIu32 " to %" PRIu32, len, off, n->ino);
	write_file(w, id, off, len);
	n = &w->n[id];
	old = n->size;
	n->size = UT_MAX(n->size, off + len);
	ver_push(w, id, old);
	touched(w, id);
	if (n->size != old)
		n->last_size_op = w->cur;
	op_end(w);
	return true;
}

static uint32_t new_size(const struct node *n)
{
	uint32_t up = n->size + 1 + rnd(9000);

	switch (rnd(4)) {
	case 0: return 0;
	case 1: return UT_MIN(up, MAX_FILE);
	default: return rnd(n->size + 1);
	}
}

/* Truncate through open(O_TRUNC), which leaves an empty file alone. */
static void trunc_by_open(struct world *w, int id)
{
	struct mfs_file *f;

	t_ok(mfs_open(w->fs, &tf_root, w->n[id].ino, O_RDWR | O_TRUNC, &f));
	t_ok(mfs_release(w->fs, f));
}

static void trunc_by_setattr(struct world *w, int id, uint32_t size)
{
	struct mfs_setattr sa = { .valid = MFS_SET_SIZE, .size = size };
	struct stat st;

	if (open_of(w, id))
		sa.valid |= MFS_SET_BY_FILE;
	t_ok(mfs_setattr(w->fs, &tf_root, w->n[id].ino, &sa, &st));
	t_eq(st.st_size, size);
}

static bool do_truncate(struct world *w)
{
	int id = pick(w, live_reg);
	struct node *n = id >= 0 ? &w->n[id] : NULL;
	uint32_t size;

	if (!n)
		return false;
	size = new_size(n);
	op_begin(w, "truncate %" PRIu32 " to %" PRIu32, n->ino, size);
	if (!size && n->size && n->nlink && chance(40))
		trunc_by_open(w, id);
	else
		trunc_by_setattr(w, id, size);
	if (size < n->size)
		memset(n->data + size, 0, n->size - size);
	n->size = size;
	ver_push(w, id, size);
	touched(w, id);
	n->last_size_op = w->cur;
	op_end(w);
	return true;
}

/* fallocate: preallocation (the size grows through the chunks' sizes, as
 * a write's), a punched hole, a zeroed range; never past the end with
 * KEEP_SIZE alone, which would leave blocks past the end. */
static bool do_falloc(struct world *w)
{
	static const int modes[] = { 0, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
				     FALLOC_FL_ZERO_RANGE };
	int id = pick(w, live_reg), mode = modes[rnd(3)];
	struct node *n = id >= 0 ? &w->n[id] : NULL;
	struct mfs_file *f;
	uint32_t off, len, old;

	if (!n || !n->nlink)
		return false;
	off = write_off(n);              /* UT_MIN would draw twice */
	off = UT_MIN(off, MAX_FILE - 1);
	len = write_len();
	len = UT_MIN(len, MAX_FILE - off);
	op_begin(w, "fallocate %d %" PRIu32 " at %" PRIu32 " to %" PRIu32, mode, len, off,
		 n->ino);
	t_ok(mfs_open(w->fs, &tf_root, n->ino, O_RDWR, &f));
	t_ok(mfs_fallocate(w->fs, &tf_root, f, mode, off, len));
	t_ok(mfs_release(w->fs, f));
	n = &w->n[id];
	old = n->size;
	if (mode && off < n->size)
		memset(n->data + off, 0, UT_MIN(off + len, n->size) - off);
	if (!(mode & FALLOC_FL_KEEP_SIZE))
		n->size = UT_MAX(n->size, off + len);
	ver_push(w, id, old);
	touched(w, id);
	if (n->size != old)
		n->last_size_op = w->cur;
	op_end(w);
	return true;
}

/* Levels of directories below @id. */
static uint32_t height_of(const struct world *w, int id)
{
	uint32_t h = 0;

	for (unsigned i = 0; i < NAMES; i++) {
		int c = w->n[id].ent[i];
		uint32_t below = c >= 0 && is_dir(&w->n[c]) ? 1 + height_of(w, c) : 0;

		h = UT_MAX(h, below);
	}
	return h;
}

/* Can @src move to a name of @ddir whose entry is @dst?  Trees stay at
 * most MAX_DEPTH + 1 levels deep. */
static bool rename_ok(const struct world *w, int src, int ddir, int dst)
{
	if (dst == src)
		return false;        /* two names of one inode: rename does nothing */
	if (!is_dir(&w->n[src]))
		return dst < 0 || !is_dir(&w->n[dst]);
	if (is_below(w, ddir, src) ||
	    depth_of(w, ddir) + 1 + height_of(w, src) > MAX_DEPTH + 1)
		return false;
	return dst < 0 || (is_dir(&w->n[dst]) && dir_empty(&w->n[dst]));
}

static void model_move(struct world *w, int sdir, int sn, int ddir, int dn)
{
	int src = w->n[sdir].ent[sn], dst = w->n[ddir].ent[dn];

	w->n[sdir].ent[sn] = -1;
	if (dst >= 0)
		drop_link(w, dst);
	w->n[ddir].ent[dn] = src;
	if (is_dir(&w->n[src]))
		w->n[src].parent = ddir;
	touched(w, src);
	touched(w, sdir);
	touched(w, ddir);
}

static bool do_rename(struct world *w)
{
	int sdir = pick(w, dir_with_entry), ddir = pick(w, live_dir), sn, dn, src, dst;
	char a[8], b[8];
	bool xchg;

	if (sdir < 0)
		return false;
	sn = pick_name(w, sdir, false);
	dn = (int)rnd(NAMES);
	src = w->n[sdir].ent[sn];
	dst = w->n[ddir].ent[dn];
	if ((sdir == ddir && sn == dn) || !rename_ok(w, src, ddir, dst))
		return false;
	xchg = dst >= 0 && !is_dir(&w->n[src]) && !is_dir(&w->n[dst]) && chance(25);
	name_of((unsigned)sn, a);
	name_of((unsigned)dn, b);
	op_begin(w, "rename %" PRIu32 "/%s %" PRIu32 "/%s%s", w->n[sdir].ino, a,
		 w->n[ddir].ino, b, xchg ? " exchange" : "");
	t_ok(mfs_rename(w->fs, &tf_root, w->n[sdir].ino, a, w->n[ddir].ino, b,
			xchg ? RENAME_EXCHANGE : 0));
	if (xchg) {
		w->n[sdir].ent[sn] = dst;
		w->n[ddir].ent[dn] = src;
		touched(w, dst);
		touched(w, src);
		touched(w, sdir);
		touched(w, ddir);
	} else {
		model_move(w, sdir, sn, ddir, dn);
	}
	op_end(w);
	return true;
}

static bool do_link(struct world *w)
{
	int id = pick(w, linked_reg), dir = pick(w, dir_with_room), nm;
	struct stat st;
	char name[8];

	if (id < 0 || dir < 0)
		return false;
	nm = pick_name(w, dir, true);
	name_of((unsigned)nm, name);
	op_begin(w, "link %" PRIu32 " as %" PRIu32 "/%s", w->n[id].ino, w->n[dir].ino, name);
	t_ok(mfs_link(w->fs, &tf_root, w->n[id].ino, w->n[dir].ino, name, &st, NULL));
	mfs_forget(w->fs, st.st_ino, 1);
	w->n[dir].ent[nm] = id;
	w->n[id].nlink++;
	t_eq(st.st_nlink, w->n[id].nlink);
	touched(w, id);
	touched(w, dir);
	op_end(w);
	return true;
}

/* Remove name @nm of @dir: unlink, or rmdir for an (empty) directory. */
static bool remove_entry(struct world *w, int dir, int nm)
{
	int id = w->n[dir].ent[nm];
	char name[8];

	if (is_dir(&w->n[id]) && !dir_empty(&w->n[id]))
		return false;
	name_of((unsigned)nm, name);
	op_begin(w, "remove %" PRIu32 "/%s", w->n[dir].ino, name);
	if (is_dir(&w->n[id]))
		t_ok(mfs_rmdir(w->fs, &tf_root, w->n[dir].ino, name));
	else
		t_ok(mfs_unlink(w->fs, &tf_root, w->n[dir].ino, name));
	w->n[dir].ent[nm] = -1;
	drop_link(w, id);
	touched(w, dir);
	op_end(w);
	return true;
}

static bool do_unlink(struct world *w)
{
	int dir = pick(w, dir_with_entry);

	return dir >= 0 && remove_entry(w, dir, pick_name(w, dir, false));
}

static bool do_mkdir(struct world *w)
{
	int dir = pick(w, dir_with_room), nm, id;
	struct stat st;
	char name[8];

	if (dir < 0 || depth_of(w, dir) >= MAX_DEPTH)
		return false;
	nm = pick_name(w, dir, true);
	name_of((unsigned)nm, name);
	op_begin(w, "mkdir %" PRIu32 "/%s", w->n[dir].ino, name);
	t_ok(mfs_mkdir(w->fs, &tf_root, w->n[dir].ino, name, 0755, &st, NULL));
	mfs_forget(w->fs, st.st_ino, 1);
	id = node_new(w, (uint32_t)st.st_ino, S_IFDIR | 0755);
	w->n[id].nlink = 1;
	w->n[id].parent = dir;
	w->n[dir].ent[nm] = id;
	touched(w, dir);
	op_end(w);
	return true;
}

static bool do_symlink(struct world *w)
{
	int dir = pick(w, dir_with_room), nm, id;
	uint32_t len = chance(50) ? 1 + rnd(59) : 60 + rnd(300);
	char name[8], target[400];
	struct stat st;

	if (dir < 0)
		return false;
	nm = pick_name(w, dir, true);
	name_of((unsigned)nm, name);
	for (uint32_t i = 0; i < len; i++)
		target[i] = (char)('a' + rnd(26));
	target[len] = 0;
	op_begin(w, "symlink %" PRIu32 "/%s (%" PRIu32 ")", w->n[dir].ino, name, len);
	t_ok(mfs_symlink(w->fs, &tf_root, w->n[dir].ino, name, target, &st, NULL));
	mfs_forget(w->fs, st.st_ino, 1);
	id = node_new(w, (uint32_t)st.st_ino, S_IFLNK | 0777);
	w->n[id].target = strdup(target);
	w->n[id].nlink = 1;
	w->n[dir].ent[nm] = id;
	touched(w, dir);
	op_end(w);
	return true;
}

/* chmod, or utimens with given times. */
static bool do_setattr(struct world *w)
{
	static const mode_t modes[] = { 0600, 0644, 0640, 0755, 0700, 0444, 0711 };
	int id = pick(w, live_not_link);
	struct mfs_setattr sa = { .valid = MFS_SET_MODE, .mode = modes[rnd(7)] };
	struct stat st;

	if (id < 0 || id == 0)
		return false;
	if (chance(40)) {
		sa.valid = MFS_SET_ATIME | MFS_SET_MTIME;
		sa.atime.tv_sec = 1600000000 + rnd(1000000);
		sa.mtime.tv_sec = 1600000000 + rnd(1000000);
	}
	op_begin(w, "%s %" PRIu32, sa.valid & MFS_SET_MODE ? "chmod" : "utimens", w->n[id].ino);
	t_ok(mfs_setattr(w->fs, &tf_root, w->n[id].ino, &sa, &st));
	if (sa.valid & MFS_SET_MODE)
		w->n[id].mode = (w->n[id].mode & S_IFMT) | sa.mode;
	t_eq(st.st_mode, w->n[id].mode);
	touched(w, id);
	op_end(w);
	return true;
}

/*
 * An xattr of a file set (in the inode or, when long, in its block) or
 * removed.  Names and data do not change, so the model does not follow
 * it; tf_check on every recovered image finds the block whole, owned
 * once and counted, or freed.
 */
static bool do_xattr(struct world *w)
{
	static uint8_t value[900];
	int id = pick(w, live_reg);
	char name[16];
	size_t len = chance(50) ? rnd(60) : rnd(sizeof(value));
	int err;

	if (id < 0)
		return false;
	snprintf(name, sizeof(name), "user.x%u", rnd(3));
	if (chance(30)) {
		op_begin(w, "removexattr %" PRIu32 " %s", w->n[id].ino, name);
		err = mfs_removexattr(w->fs, &tf_root, w->n[id].ino, name);
		t_assert(!err || err == -ENODATA, "removexattr: %d", err);
	} else {
		random_bytes(value, len);
		op_begin(w, "setxattr %" PRIu32 " %s %zu", w->n[id].ino, name, len);
		err = mfs_setxattr(w->fs, &tf_root, w->n[id].ino, name, value, len, 0);
		t_assert(!err || err == -ENOSPC, "setxattr: %d", err);
	}
	op_end(w);
	return true;
}

static bool do_fsync(struct world *w)
{
	int id = pick(w, live_reg);
	bool datasync = chance(40);

	if (id < 0)
		return false;
	op_begin(w, "%s %" PRIu32, datasync ? "fdatasync" : "fsync", w->n[id].ino);
	t_ok(mfs_fsync(w->fs, w->n[id].ino, datasync));
	w->op[w->cur].guard = datasync ? w->n[id].last_size_op : w->n[id].last_op;
	op_end(w);
	made_durable(w, id, w->op[w->nop - 1].log_end);
	return true;
}

static bool do_fsync_dir(struct world *w)
{
	int id = pick(w, live_dir);

	op_begin(w, "fsync directory %" PRIu32, w->n[id].ino);
	t_ok(mfs_fsync(w->fs, w->n[id].ino, false));
	w->op[w->cur].guard = w->n[id].last_op;
	op_end(w);
	return true;
}

static void close_one(struct world *w, uint32_t i)
{
	int id = w->open[i].node;

	op_begin(w, "close %" PRIu32, w->n[id].ino);
	t_ok(mfs_release(w->fs, w->open[i].f));
	w->open[i] = w->open[--w->nopen];
	w->n[id].nopen--;
}

static bool do_close(struct world *w)
{
	if (!w->nopen)
		return false;
	close_one(w, rnd(w->nopen));
	op_end(w);
	return true;
}

/* After syncfs or unmount: everything so far is durable. */
static void all_durable(struct world *w)
{
	struct op *o = &w->op[w->nop - 1];

	for (uint32_t i = 0; i < w->nn; i++)
		if (live_reg(w, (int)i))
			made_durable(w, (int)i, o->log_end);
}

static bool do_syncfs(struct world *w)
{
	op_begin(w, "syncfs");
	t_ok(mfs_sync(w->fs));
	w->op[w->cur].guard = w->cur;
	op_end(w);
	all_durable(w);
	return true;
}

static const struct {
	bool (*fn)(struct world *w);
	unsigned weight;
} kinds[] = {
	{ do_create, 12 }, { do_write, 22 }, { do_truncate, 6 }, { do_rename, 9 },
	{ do_link, 4 }, { do_unlink, 7 }, { do_mkdir, 4 }, { do_symlink, 4 },
	{ do_setattr, 5 }, { do_fsync, 11 }, { do_fsync_dir, 4 }, { do_close, 4 },
	{ do_syncfs, 1 }, { do_xattr, 4 }, { do_falloc, 5 },
};
#define NKINDS (sizeof(kinds) / sizeof(kinds[0]))

static void one_op(struct world *w)
{
	for (;;) {
		unsigned total = 0, r;
		size_t k;

		for (k = 0; k < NKINDS; k++)
			total += kinds[k].weight;
		r = rnd(total);
		for (k = 0; r >= kinds[k].weight; k++)
			r -= kinds[k].weight;
		if (kinds[k].fn(w)) {
			w->done[k]++;
			return;
		}
	}
}

/* ---- the workload -------------------------------------------------------- */

static void world_start(struct world *w)
{
	struct stat st;
	int root;

	w->bd = tf_mkfs(BS, DEV_BYTES);
	w->fs = tf_mount_opts(w->bd, &mount_opts);
	if (jflag)
		t_ok(mfs_set_flags(w->fs, &tf_root, MFS_ROOT_INO, MFS_JOURNAL_DATA_FL));
	t_ok(mfs_getattr(w->fs, MFS_ROOT_INO, &st));
	walk(w->fs, MFS_ROOT_INO, "", 0, &w->base);
	op_begin(w, "mkfs");
	root = node_new(w, MFS_ROOT_INO, st.st_mode);
	w->n[root].nlink = 1;
	op_end(w);
	bdev_wrap_record(w->bd, true);
}

/* A counter of mfs_stats_format's. */
static uint64_t stat_of(struct mfs_fs *fs, const char *key)
{
	char buf[4096], *at;

	mfs_stats_format(fs, buf, sizeof(buf));
	at = strstr(buf, key);
	t_assert(at, "no statistic %s", key);
	return strtoull(at + strlen(key) + 2, NULL, 10);
}

static void world_finish(struct world *w)
{
	while (w->nopen) {
		close_one(w, 0);
		op_end(w);
	}
	w->commits = stat_of(w->fs, "jnl_commits");
	w->checkpoints = stat_of(w->fs, "jnl_checkpoints");
	op_begin(w, "unmount");
	t_ok(mfs_unmount(w->fs));
	w->fs = NULL;
	w->op[w->cur].guard = w->cur;
	op_end(w);
	all_durable(w);
	bdev_wrap_record(w->bd, false);
}

static void run_workload(struct world *w, uint32_t nops)
{
	where.workload = true;
	world_start(w);
	for (uint32_t i = 0; i < nops; i++)
		one_op(w);
	world_finish(w);
	where.workload = false;
}

static void world_free(struct world *w)
{
	for (uint32_t i = 0; i < w->nn; i++)
		node_free(&w->n[i]);
	for (uint32_t i = 0; i < w->nsnap; i++) {
		free(w->snap[i].text);
		free(w->snap[i].node);
	}
	free(w->n);
	free(w->snap);
	free(w->op);
	lines_free(&w->base);
	bdev_close(w->bd);
}

/* ---- what a cut must show ------------------------------------------------- */

struct cut {
	size_t prefix;
	enum bdev_cut mode;
	uint64_t rng;
	uint32_t kmin, kmax;         /* operations that may have survived */
};

/* Ops whose log_end (or log_start) passes @prefix form a suffix. */
static uint32_t ops_before(const struct world *w, size_t prefix, bool by_end)
{
	uint32_t lo = 0, hi = w->nop;

	while (lo < hi) {
		uint32_t mid = (lo + hi) / 2;
		size_t at = by_end ? w->op[mid].log_end : w->op[mid].log_start;

		if (by_end ? at <= prefix : at < prefix)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static void cut_bounds(const struct world *w, struct cut *c)
{
	uint32_t ended = ops_before(w, c->prefix, true);
	uint32_t begun = ops_before(w, c->prefix, false);

	c->kmin = ended ? w->op[ended - 1].gmax : 0;
	c->kmax = UT_MAX(begun ? begun - 1 : 0, c->kmin);
}

/* Versions of @n a cut may show: from the durable one on. */
static void ver_bounds(const struct node *n, const struct cut *c, uint32_t *lo,
		       uint32_t *hi)
{
	*lo = 0;
	for (uint32_t i = 0; i < n->ndur && n->dur[i].log_end <= c->prefix; i++)
		*lo = UT_MAX(*lo, n->dur[i].ver);
	*hi = *lo;
	while (*hi + 1 < n->nver && n->ver[*hi + 1].op <= c->kmax)
		(*hi)++;
}

static bool size_ok(const struct node *n, uint32_t lo, uint32_t hi, uint64_t size)
{
	for (uint32_t v = lo; v <= hi; v++)
		if (size >= n->ver[v].size_min && size <= n->ver[v].size)
			return true;
	return false;
}

/* Does byte @i hold what some version held in its pages?  A page
 * written back after a truncation or a write may sit under an older size
 * (ordered mode writes data before the commit that may not come). */
static bool byte_ok(const struct node *n, uint32_t lo, uint32_t hi, uint32_t i,
		    uint8_t b)
{
	for (uint32_t v = lo; v <= hi; v++)
		if (i < n->ver[v].pages && n->ver[v].data[i] == b)
			return true;
	return false;
}

/* Block [@from, @to) whole from one version: the quick way. */
static bool range_ok(const struct node *n, uint32_t lo, uint32_t hi, uint32_t from,
		     uint32_t to, const uint8_t *got)
{
	for (uint32_t v = hi + 1; v-- > lo;)
		if (to <= n->ver[v].pages && !memcmp(n->ver[v].data + from, got + from, to - from))
			return true;
	return false;
}

static void versions_say(const struct node *n, uint32_t lo, uint32_t hi, uint32_t i)
{
	for (uint32_t v = lo; v <= hi; v++) {
		fprintf(stderr, "  version %" PRIu32 " (operation %" PRIu32 "): size %" PRIu32,
			v, n->ver[v].op, n->ver[v].size);
		if (i < n->ver[v].pages)
			fprintf(stderr, ", byte %" PRIu32 " = %u", i, n->ver[v].data[i]);
		fprintf(stderr, "\n");
	}
}

static void check_bytes(const struct node *n, uint32_t lo, uint32_t hi,
			const struct line *l, const uint8_t *got)
{
	uint32_t size = (uint32_t)l->size;

	for (uint32_t from = 0; from < size; from += BS) {
		uint32_t to = UT_MIN(from + BS, size);

		if (range_ok(n, lo, hi, from, to, got))
			continue;
		if (data_journalled) {
			versions_say(n, lo, hi, from);
			t_fail("%s: block %" PRIu32 " is whole from no version from %"
			       PRIu32 " to %" PRIu32 " (data=journal)", l->text,
			       from / BS, lo, hi);
		}
		for (uint32_t i = from; i < to; i++) {
			if (byte_ok(n, lo, hi, i, got[i]))
				continue;
			versions_say(n, lo, hi, i);
			t_fail("%s: byte %" PRIu32 " is %u, which no version from %" PRIu32
			       " to %" PRIu32 " held there", l->text, i, got[i], lo, hi);
		}
	}
}

static uint64_t read_all(struct mfs_fs *fs, const struct line *l, uint8_t *buf)
{
	struct mfs_file *f;

	t_assert(l->size <= MAX_FILE, "%s: size %" PRIu64 " is beyond any the workload "
		 "made", l->text, l->size);
	t_ok(mfs_open(fs, &tf_root, l->ino, O_RDONLY, &f));
	t_eq(mfs_read(fs, f, buf, MAX_FILE, 0), l->size);
	t_ok(mfs_release(fs, f));
	return fmt_csum(0, 0, buf, l->size);
}

static void check_file(const struct world *w, const struct cut *c, int id,
		       const struct line *l, const uint8_t *got)
{
	const struct node *n = &w->n[id];
	uint32_t lo, hi;

	ver_bounds(n, c, &lo, &hi);
	if (!size_ok(n, lo, hi, l->size)) {
		versions_say(n, lo, hi, UINT32_MAX);
		t_fail("%s: size %" PRIu64 ", which no version from %" PRIu32 " to %" PRIu32
		       " had", l->text, l->size, lo, hi);
	}
	check_bytes(n, lo, hi, l, got);
}

/* ---- reading an image ---------------------------------------------------- */

struct entry {
	char name[MFS_NAME_LEN + 1];
	uint64_t ino;
};

struct entries {
	struct entry v[NAMES + 8];
	unsigned n;
};

static int collect(void *ctx, const char *name, size_t len, uint64_t ino,
		   unsigned type, uint64_t next, const struct stat *st,
		   uint64_t gen)
{
	struct entries *e = ctx;

	(void)type; (void)next; (void)st;
	if ((len == 1 && name[0] == '.') || (len == 2 && !memcmp(name, "..", 2)))
		return 0;
	t_assert(e->n < NAMES + 8 && len <= MFS_NAME_LEN, "a directory holds more "
		 "entries than the workload makes");
	memcpy(e->v[e->n].name, name, len);
	e->v[e->n].name[len] = 0;
	e->v[e->n++].ino = ino;
	return 0;
}

static void walk(struct mfs_fs *fs, uint64_t dir, const char *path, unsigned depth,
		 struct lines *ls)
{
	struct entries e = { .n = 0 };
	struct mfs_dir *d;

	t_assert(depth <= MAX_DEPTH + 2, "%s: directories nested deeper than the "
		 "workload makes them", path);
	t_ok(mfs_opendir(fs, &tf_root, dir, &d));
	t_ok(mfs_readdir(fs, d, 0, false, collect, &e));
	t_ok(mfs_releasedir(fs, d));
	for (unsigned i = 0; i < e.n; i++) {
		char p[64], target[LINE_MAX_];
		struct stat st;
		ssize_t tl = 0;

		snprintf(p, sizeof(p), "%s/%s", path, e.v[i].name);
		t_ok(mfs_getattr(fs, e.v[i].ino, &st));
		if (S_ISLNK(st.st_mode))
			t_assert((tl = mfs_readlink(fs, e.v[i].ino, target, sizeof(target))) >= 0,
				 "%s: readlink: %zd", p, tl);
		lines_add(ls, p, (uint32_t)st.st_ino, st.st_mode, S_ISLNK(st.st_mode) ?
			  target : NULL, (size_t)tl);
		ls->v[ls->n - 1].size = (uint64_t)st.st_size;
		if (S_ISDIR(st.st_mode))
			walk(fs, e.v[i].ino, p, depth + 1, ls);
	}
}

/* What one mount of an image showed. */
struct seen_fs {
	struct lines ls;
	char *text;
	uint64_t hash;
	uint64_t *digest;            /* per line: the contents of files */
};

static void seen_free(struct seen_fs *s)
{
	lines_free(&s->ls);
	free(s->text);
	free(s->digest);
}

static void look(struct mfs_fs *fs, struct seen_fs *s)
{
	walk(fs, MFS_ROOT_INO, "", 0, &s->ls);
	s->text = lines_text(&s->ls, &s->hash);
	s->digest = xrealloc(NULL, (s->ls.n + 1) * sizeof(uint64_t));
}

/* ---- matching the namespace ---------------------------------------------- */

static unsigned text_diff(const char *a, const char *b, bool print)
{
	unsigned n = 0;

	for (const char *l = a; *l; l = strchr(l, '\n') + 1) {
		size_t len = (size_t)(strchr(l, '\n') - l);
		bool found = false;

		for (const char *m = b; *m && !found; m = strchr(m, '\n') + 1)
			found = (size_t)(strchr(m, '\n') - m) == len && !memcmp(l, m, len);
		if (!found && print && n < 12)
			fprintf(stderr, "    %.*s\n", (int)len, l);
		n += !found;
	}
	return n;
}

static void no_match(const struct world *w, const struct cut *c, const char *text)
{
	uint32_t best = c->kmin;
	unsigned best_d = UINT32_MAX;

	for (uint32_t k = c->kmin; k <= c->kmax; k++) {
		const char *t = w->snap[w->op[k].snap].text;
		unsigned d = text_diff(text, t, false) + text_diff(t, text, false);

		if (d < best_d) {
			best_d = d;
			best = k;
		}
	}
	fprintf(stderr, "closest: after operation %" PRIu32 "; the image has\n", best);
	text_diff(text, w->snap[w->op[best].snap].text, true);
	fprintf(stderr, "  and lacks\n");
	text_diff(w->snap[w->op[best].snap].text, text, true);
	t_fail("the namespace is that of no operation from %" PRIu32 " (durable) to %"
	       PRIu32 " (the last begun)", c->kmin, c->kmax);
}

/* The snapshot the image's namespace is, between kmin and kmax. */
static const struct snap *match(const struct world *w, const struct cut *c,
				const struct seen_fs *s)
{
	for (uint32_t k = c->kmin; k <= c->kmax; k++) {
		const struct snap *sn = &w->snap[w->op[k].snap];

		if (sn->hash == s->hash && !strcmp(sn->text, s->text))
			return sn;
	}
	no_match(w, c, s->text);
	return NULL;
}

/* Read every file the walk found; against the model, given a snapshot. */
static void read_files(const struct world *w, const struct cut *c, const struct snap *sn,
		       struct mfs_fs *fs, struct seen_fs *s, uint8_t *buf)
{
	for (uint32_t i = 0; i < s->ls.n; i++) {
		const struct line *l = &s->ls.v[i];

		s->digest[i] = 0;
		if (!S_ISREG(l->mode))
			continue;
		s->digest[i] = read_all(fs, l, buf);
		if (sn)
			check_file(w, c, sn->node[i], l, buf);
	}
}

/* ---- the image after unmount ---------------------------------------------- */

static int past_end(void *ctx, uint64_t lblk, uint64_t pblk)
{
	const struct line *l = ctx;

	t_fail("%s: block %" PRIu64 " is mapped (to %" PRIu64 ") past the end of the "
	       "file (%" PRIu64 " bytes)", l->text, lblk, pblk, l->size);
}

/* No regular file maps a block at or past its end. */
static void check_ends(struct bdev *img, const struct seen_fs *s)
{
	struct fmt_raw raw;

	t_ok(fmt_raw_open(img, &raw));
	for (uint32_t i = 0; i < s->ls.n; i++) {
		const struct line *l = &s->ls.v[i];
		struct fmt_bmap_walk bw;
		struct mfs_inode in;

		if (!S_ISREG(l->mode))
			continue;
		t_ok(fmt_raw_inode(&raw, l->ino, &in));
		fmt_raw_bmap_walk_init(&raw, l->ino, &in, &bw);
		bw.data = past_end;
		bw.ctx = (void *)l;
		t_ok(fmt_bmap_walk(&bw, UT_DIV_ROUND_UP(l->size, BS), UINT64_MAX));
	}
	fmt_raw_close(&raw);
}

/* Grown by truncation past the end of its last block, a file must read
 * zeros from its old end on: whatever a cut left on disk past the end
 * (newer data written back before the size that covers it committed)
 * must not come back. */
static void grow_files(struct mfs_fs *fs, const struct seen_fs *s, uint8_t *buf)
{
	for (uint32_t i = 0; i < s->ls.n; i++) {
		const struct line *l = &s->ls.v[i];
		uint64_t to = UT_ROUND_UP(l->size, BS) + BS;
		struct mfs_setattr sa = { .valid = MFS_SET_SIZE, .size = to };
		struct mfs_file *f;
		struct stat st;

		if (!S_ISREG(l->mode) || l->size % BS == 0 || to > MAX_FILE)
			continue;
		t_ok(mfs_setattr(fs, &tf_root, l->ino, &sa, &st));
		t_ok(mfs_open(fs, &tf_root, l->ino, O_RDONLY, &f));
		t_eq(mfs_read(fs, f, buf, to - l->size, l->size), to - l->size);
		t_ok(mfs_release(fs, f));
		for (uint64_t k = 0; k < to - l->size; k++)
			t_assert(!buf[k], "%s: grown to %" PRIu64 ", byte %" PRIu64 " is %u, not "
				 "zero", l->text, to, l->size + k, buf[k]);
	}
}

static void same_again(const struct seen_fs *a, const struct seen_fs *b)
{
	if (strcmp(a->text, b->text)) {
		fprintf(stderr, "first mount only:\n");
		text_diff(a->text, b->text, true);
		fprintf(stderr, "second mount only:\n");
		text_diff(b->text, a->text, true);
		t_fail("the namespace changed over a clean unmount and mount");
	}
	for (uint32_t i = 0; i < a->ls.n; i++)
		t_assert(a->digest[i] == b->digest[i], "%s: the contents changed over a "
			 "clean unmount and mount", a->ls.v[i].text);
}

static struct mfs_fs *mount_image(struct bdev *img)
{
	struct mfs_fs *fs;
	int err = mfs_mount(img, &mount_opts, &fs);

	t_assert(!err, "the image does not mount: %s", strerror(-err));
	return fs;
}

/* Mount, compare with the model, unmount, check, mount and compare again. */
static void check_image(const struct world *w, const struct cut *c, struct bdev *img,
			uint8_t *buf)
{
	struct mfs_fs *fs = mount_image(img);
	struct seen_fs first = { 0 }, again = { 0 };
	const struct snap *sn;

	look(fs, &first);
	sn = match(w, c, &first);
	read_files(w, c, sn, fs, &first, buf);
	t_ok(mfs_unmount(fs));
	tf_check(img, true);
	check_ends(img, &first);
	fs = mount_image(img);
	look(fs, &again);
	read_files(w, c, NULL, fs, &again, buf);
	same_again(&first, &again);
	grow_files(fs, &again, buf);
	t_ok(mfs_unmount(fs));
	tf_check(img, true);
	seen_free(&first);
	seen_free(&again);
}

/* ---- crash states --------------------------------------------------------- */

struct checker {
	const struct world *w;
	struct bdev_wrap_crash *cur;
	struct bdev *img;
	uint8_t *buf;
	struct t_hashset seen;
	unsigned long states, distinct;
	unsigned long torn_skipped;  /* torn cuts not made: see the top */
};

static void check_cut(struct checker *ck, size_t prefix, enum bdev_cut mode,
		      uint64_t rng)
{
	struct cut c = { .prefix = prefix, .mode = mode, .rng = rng };
	uint64_t h;

	ck->states++;
	t_ok(bdev_wrap_crash_next(ck->cur, prefix, mode, rng, &h));
	if (!t_hashset_add(&ck->seen, h))
		return;
	ck->distinct++;
	where.cut = true;
	where.prefix = prefix;
	where.mode = (int)mode;
	where.rng = rng;
	t_ok(bdev_wrap_crash_copy(ck->cur, ck->img));
	cut_bounds(ck->w, &c);
	check_image(ck->w, &c, ck->img, ck->buf);
	where.cut = false;
}

static uint64_t cut_rng(const struct checker *ck, size_t prefix, unsigned k)
{
	return mix64(ck->w->seed * 1000003u + prefix * 16 + k);
}

/* Is a write of the superblock's block among entries [@from, @to)? */
static bool sb_pending(const struct checker *ck, size_t from, size_t to)
{
	for (size_t i = from; i < to; i++) {
		const struct bdev_wrap_log_entry *e = bdev_wrap_log(ck->w->bd, i);

		if (e->off < MFS_SB_OFFSET + MFS_SB_SIZE && e->off + e->len > MFS_SB_OFFSET)
			return true;
	}
	return false;
}

/*
 * The cuts up to flush @i; the writes pending then are entries [@from,
 * @i).  Each random choice of which survive is tried about once per
 * pending write (up to 3 ways), since fewer writes allow fewer outcomes.
 */
static void cuts_at_flush(struct checker *ck, size_t from, size_t i)
{
	unsigned tries = (unsigned)UT_MIN(i - from, 3u);

	if (i > from + 1) {          /* somewhere between, not at a flush */
		size_t p = from + 1 + mix64(cut_rng(ck, i, 0)) % (i - from - 1);

		check_cut(ck, p, BDEV_CUT_RANDOM, cut_rng(ck, p, 1));
		check_cut(ck, p, BDEV_CUT_BLOCKS, cut_rng(ck, p, 2));
	}
	check_cut(ck, i, BDEV_CUT_LOSE_ALL, 0);
	for (unsigned k = 0; k < tries; k++) {
		check_cut(ck, i, BDEV_CUT_RANDOM, cut_rng(ck, i, 3 + k));
		check_cut(ck, i, BDEV_CUT_BLOCKS, cut_rng(ck, i, 6 + k));
	}
	if (tries && !sb_pending(ck, from, i))
		check_cut(ck, i, BDEV_CUT_RANDOM_TORN, cut_rng(ck, i, 9));
	else if (tries)
		ck->torn_skipped++;
	check_cut(ck, i + 1, BDEV_CUT_LOSE_ALL, 0);
}

/* Every flush that made writes durable (one that found nothing pending
 * leaves the image as the flush before it did). */
static void check_all_cuts(struct checker *ck)
{
	size_t n = bdev_wrap_log_count(ck->w->bd), from = 0;

	for (size_t i = 0; i < n; i++) {
		if (!bdev_wrap_log(ck->w->bd, i)->flush)
			continue;
		if (i > from)
			cuts_at_flush(ck, from, i);
		from = i + 1;
	}
	check_cut(ck, n, BDEV_CUT_LOSE_ALL, 0);
}

/* ---- main ----------------------------------------------------------------- */

struct config {
	uint64_t seed;               /* 0: seeds 1..nseeds */
	uint32_t nseeds, nops;
	unsigned long min_states;
	bool one_cut;
	size_t prefix;
	int mode;
	uint64_t rng;
};

static uint64_t env_num(const char *name, uint64_t dflt)
{
	const char *s = getenv(name);
	char *end;
	uint64_t v;

	if (!s || !*s)
		return dflt;
	v = strtoull(s, &end, 0);
	t_assert(!*end, "%s=%s is not a number", name, s);
	return v;
}

static void read_config(struct config *cf)
{
	const char *st = getenv("MISCFS_CRASH_STATE");

	cf->seed = env_num("MISCFS_CRASH_SEED", 0);
	cf->nseeds = (uint32_t)env_num("MISCFS_CRASH_SEEDS", 6);
	cf->nops = (uint32_t)env_num("MISCFS_CRASH_OPS", 170);
	cf->min_states = (unsigned long)env_num("MISCFS_CRASH_MIN", 2000);
	trace = env_num("MISCFS_CRASH_TRACE", 0);
	if (getenv("MISCFS_CRASH_DATA")) {
		const char *d = getenv("MISCFS_CRASH_DATA");

		t_assert(!strcmp(d, "journal") || !strcmp(d, "jflag"),
			 "MISCFS_CRASH_DATA=%s: journal or jflag", d);
		if (!strcmp(d, "journal"))
			mount_opts.data = MFS_DATA_JOURNAL;
		else
			jflag = true;
		data_journalled = true;
	}
	if (st && *st) {
		t_assert(cf->seed, "MISCFS_CRASH_STATE needs MISCFS_CRASH_SEED");
		t_assert(sscanf(st, "%zu:%d:%" SCNu64, &cf->prefix, &cf->mode, &cf->rng) == 3,
			 "MISCFS_CRASH_STATE=%s is not prefix:mode:rng", st);
		cf->one_cut = true;
		cf->min_states = 1;
	}
	if (cf->seed) {              /* one seed, to look into it */
		cf->nseeds = 1;
		cf->min_states = (unsigned long)env_num("MISCFS_CRASH_MIN", 0);
	}
}

struct totals {
	unsigned long states, distinct, log, flushes;
};

static size_t count_flushes(struct bdev *bd)
{
	size_t n = 0;

	for (size_t i = 0; i < bdev_wrap_log_count(bd); i++)
		n += bdev_wrap_log(bd, i)->flush;
	return n;
}

static void run_seed(const struct config *cf, uint64_t seed, struct totals *t)
{
	struct world w = { .seed = seed };
	struct checker ck = { .w = &w };

	where.seed = seed;
	rng_state = mix64(seed);
	/* Every third seed runs long enough to fill the log: checkpoints,
	 * and the log wrapping round, under the cuts too. */
	run_workload(&w, seed % 3 ? cf->nops : cf->nops * 5 / 2);
	ck.img = t_dev_mem(DEV_BYTES, BS);
	ck.buf = xrealloc(NULL, MAX_FILE);
	t_ok(bdev_wrap_crash_begin(w.bd, &ck.cur));
	if (cf->one_cut)
		check_cut(&ck, cf->prefix, (enum bdev_cut)cf->mode, cf->rng);
	else
		check_all_cuts(&ck);
	printf("seed %" PRIu64 ": %" PRIu32 " operations, %" PRIu64 " commits, %" PRIu64
	       " checkpoints, %zu log entries, %zu flushes; %lu crash states, %lu distinct "
	       "(%lu torn cuts left out)\n", seed, w.nop, w.commits, w.checkpoints,
	       bdev_wrap_log_count(w.bd), count_flushes(w.bd), ck.states, ck.distinct,
	       ck.torn_skipped);
	t->states += ck.states;
	t->distinct += ck.distinct;
	bdev_wrap_crash_end(ck.cur);
	bdev_close(ck.img);
	free(ck.buf);
	t_hashset_free(&ck.seen);
	world_free(&w);
}

static struct config cf;

/* The environment's choices, for every case. */
static void setup(void)
{
	mlog_set_level(MLOG_ERR);
	atexit(print_where);
	read_config(&cf);
}

/* Every cut of every seed's workload recovers to what the model allows. */
static void test_cuts_match_model(void)
{
	struct totals t = { 0 };
	struct timespec t0, t1;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (uint32_t i = 0; i < cf.nseeds; i++)
		run_seed(&cf, cf.seed ? cf.seed : i + 1, &t);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	printf("%lu crash states, %lu distinct, in %.1f s\n", t.states, t.distinct,
	       (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9);
	t_assert(t.states >= cf.min_states, "only %lu crash states, %lu wanted", t.states,
		 cf.min_states);
}

T_MAIN_SETUP(setup(), T_CASE(test_cuts_match_model))
