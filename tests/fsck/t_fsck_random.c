/*
 * t_fsck_random - random damage to the metadata of populated images.
 *
 * One image is populated through the filesystem (directories, small,
 * large and sparse files, symbolic links, hard links, special files,
 * xattrs in the inode and in a block, a region).  Its metadata blocks are
 * listed: superblocks, descriptors, bitmaps, the inode-table blocks in
 * use, directory, indirect and xattr blocks, the region table and the
 * journal's superblock.  For each seed, a copy gets random bytes of one
 * to a few of them overwritten (a few bytes, a run, or a whole block), and
 *
 *   - fsck -fn reports and writes nothing (the image stays as it was),
 *   - fsck -fy repairs it, and a second fsck -fn finds nothing,
 *   - the damaged copy (before repair) is mounted and a small workload
 *     runs on it: every call returns success or an error a damaged
 *     image may give (EUCLEAN, EIO, ...), never a crash, a hang or a
 *     leak; and the unmount returns.
 *
 * Under AddressSanitizer this also proves fsck and the mount free of
 * memory errors and leaks on every image.  Usage: t_fsck_random [FIRST
 * [COUNT]] [CASE...] (default: seeds 0..549, both cases: fsck_repairs and
 * mount_survives); with --save DIR first, the damaged images are only
 * written to DIR/dmg-SEED.img, for t_damage_mount.sh to mount through the
 * daemon.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>

#include "fsck.h"
#include "t_fs.h"
#include "util.h"

#define IMG_BYTES (12u << 20)
#define BS 1024u

/* ---- populating ------------------------------------------------------------- */

static uint64_t make(struct mfs_fs *fs, uint64_t dir, const char *name, mode_t mode)
{
	struct stat st;

	if (S_ISDIR(mode))
		t_ok(mfs_mkdir(fs, &tf_root, dir, name, mode, &st, NULL));
	else
		t_ok(mfs_mknod(fs, &tf_root, dir, name, mode, makedev(1, 3), &st, NULL));
	return st.st_ino;
}

static void populate(struct mfs_fs *fs)
{
	char name[32], val[600];
	struct stat st;
	uint64_t a = make(fs, MFS_ROOT_INO, "a", S_IFDIR | 0755);
	uint64_t b = make(fs, a, "b", S_IFDIR | 0755);
	uint64_t big = make(fs, b, "big", S_IFREG | 0644);
	uint64_t sparse = make(fs, a, "sparse", S_IFREG | 0644);
	uint64_t many = make(fs, MFS_ROOT_INO, "many", S_IFDIR | 0755);

	tf_write(fs, big, 0, 400u << 10, 1);               /* double indirect */
	tf_write(fs, sparse, 5u << 20, 3000, 2);
	for (int i = 0; i < 120; i++) {
		uint64_t f;

		snprintf(name, sizeof(name), "file-with-a-longer-name-%03d", i);
		f = make(fs, many, name, S_IFREG | 0644);
		tf_write(fs, f, 0, (size_t)(i % 7) * 700 + 1, (unsigned)i);
	}
	t_ok(mfs_symlink(fs, &tf_root, a, "fast", "b/big", &st, NULL));
	memset(val, 'x', sizeof(val));
	val[200] = 0;
	t_ok(mfs_symlink(fs, &tf_root, a, "slow", val, &st, NULL));
	t_ok(mfs_link(fs, &tf_root, big, a, "hard", &st, NULL));
	make(fs, a, "fifo", S_IFIFO | 0644);
	make(fs, a, "dev", S_IFCHR | 0644);
	t_ok(mfs_setxattr(fs, &tf_root, big, "user.small", "v", 1, 0));
	t_ok(mfs_setxattr(fs, &tf_root, sparse, "user.large", val, 500, 0));
}

/* ---- the metadata blocks ---------------------------------------------------- */

struct meta {
	uint64_t *blk;
	size_t n, cap;
	struct mfs_raw *raw;
};

static void add(struct meta *m, uint64_t blk)
{
	if (m->n == m->cap) {
		m->cap = m->cap ? 2 * m->cap : 256;
		m->blk = realloc(m->blk, m->cap * sizeof(*m->blk));
		t_assert(m->blk, "no memory");
	}
	m->blk[m->n++] = blk;
}

static int add_ind(void *arg, uint64_t blk, int depth)
{
	(void)depth;
	add(arg, blk);
	return 0;
}

static int add_data(void *arg, uint64_t lblk, uint64_t blk)
{
	(void)lblk;
	add(arg, blk);
	return 0;
}

static int skip_data(void *arg, uint64_t lblk, uint64_t blk)
{
	(void)arg;
	(void)lblk;
	(void)blk;
	return 0;
}

static void list_inode(struct meta *m, uint32_t ino, const struct mfs_inode *in)
{
	struct mfs_bmap_walk w;

	mfs_raw_bmap_walk_init(m->raw, ino, in, &w);
	w.indirect = add_ind;
	w.data = S_ISDIR(le16toh(in->i_mode)) ? add_data : skip_data;
	w.ctx = m;
	/* The journal: its superblock only (the log is empty). */
	if (ino == MFS_JOURNAL_INO) {
		uint64_t jsb;

		t_ok(mfs_raw_bmap(m->raw, ino, in, 0, &jsb));
		add(m, jsb);
		return;
	}
	t_ok(mfs_bmap_walk(&w, 0, UINT64_MAX));
	if (in->i_xattr_block)
		add(m, le32toh(in->i_xattr_block));
}

static void list_meta(struct bdev *bd, struct meta *m)
{
	struct mfs_raw raw;
	uint32_t ipb = BS / MFS_INODE_SIZE, last_used = 0;

	t_ok(mfs_raw_open(bd, &raw));
	m->raw = &raw;
	for (uint32_t ino = 1; ino <= le32toh(raw.sb.s_inodes_count); ino++) {
		struct mfs_inode in;

		t_ok(mfs_raw_inode(&raw, ino, &in));
		if (!in.i_mode || in.i_dtime)
			continue;
		last_used = ino;
		list_inode(m, ino, &in);
	}
	for (uint32_t g = 0; g < le32toh(raw.sb.s_groups_count); g++) {
		uint64_t first = mfs_group_first_block(&raw.sb, g);
		uint32_t meta = mfs_group_meta_blocks(&raw.sb, g) - mfs_itable_blocks(&raw.sb);
		uint32_t ipg = le32toh(raw.sb.s_inodes_per_group);

		for (uint32_t i = 0; i < meta; i++)
			add(m, first + i);
		/* The inode-table blocks up to the last inode in use. */
		for (uint32_t i = 0; g * ipg + i * ipb < last_used && i * ipb < ipg; i++)
			add(m, first + meta + i);
	}
	if (raw.sb.s_region_count)
		add(m, le64toh(raw.sb.s_region_table));
	mfs_raw_close(&raw);
	m->raw = NULL;
}

/* ---- damage ------------------------------------------------------------------ */

static uint64_t rng(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static void damage(uint8_t *img, const struct meta *m, uint64_t seed)
{
	uint64_t s = seed * 0x9E3779B97F4A7C15ull + 1;
	unsigned int blocks = 1 + rng(&s) % 3;

	for (unsigned int k = 0; k < blocks; k++) {
		uint8_t *b = img + m->blk[rng(&s) % m->n] * BS;
		unsigned int how = rng(&s) % 8, off = rng(&s) % BS;

		if (how < 5) {                         /* a few bytes */
			for (unsigned int i = 0, n = 1 + rng(&s) % 4; i < n; i++)
				b[rng(&s) % BS] = (uint8_t)rng(&s);
		} else if (how < 7) {                  /* a run */
			for (unsigned int i = off; i < UT_MIN(BS, off + 64); i++)
				b[i] = (uint8_t)rng(&s);
		} else {                               /* the whole block */
			for (unsigned int i = 0; i < BS; i++)
				b[i] = (uint8_t)rng(&s);
		}
	}
}

/* ---- fsck ------------------------------------------------------------------------ */

/* Counts the reports; T_FSCK_VERBOSE=1 prints them. */
static enum fsck_answer quiet(void *arg, const struct fsck_report *r)
{
	static int verbose = -1;

	if (verbose < 0)
		verbose = getenv("T_FSCK_VERBOSE") != NULL;
	if (verbose)
		fprintf(stderr, "  [%s] %s%s\n", r->code, r->message,
			r->proposed == FSCK_ANSWER_YES ? " (fixed)" : "");
	(*(unsigned *)arg)++;
	return r->proposed;
}

static int run_fsck(struct bdev *bd, enum fsck_mode mode, unsigned *reports)
{
	struct fsck_opts o = { .mode = mode, .force = true, .problem = quiet, .arg = reports };
	struct fsck_result r;

	return fsck_run(bd, &o, &r);
}

static struct bdev *copy_of(const uint8_t *img)
{
	struct bdev *bd;

	t_ok(bdev_mem_create(IMG_BYTES, BS, &bd));
	memcpy(bdev_mem_data(bd), img, IMG_BYTES);
	return bd;
}

static void check_fsck(const uint8_t *img, uint64_t seed)
{
	struct bdev *bd = copy_of(img);
	unsigned n1 = 0, n2 = 0, n3 = 0;
	int e1 = run_fsck(bd, FSCK_NO, &n1), e2, e3;

	t_assert(!memcmp(bdev_mem_data(bd), img, IMG_BYTES), "seed %" PRIu64 ": fsck -n "
		 "wrote to the image", seed);
	t_assert(e1 == 0 || e1 == 4 || e1 == 8, "seed %" PRIu64 ": fsck -n exit %d", seed, e1);
	e2 = run_fsck(bd, FSCK_YES, &n2);
	e3 = run_fsck(bd, FSCK_NO, &n3);
	/* No superblock at all is the one thing that cannot be repaired. */
	if (e1 != 8 || e2 != 8)
		t_assert(e3 == 0, "seed %" PRIu64 ": after fsck -y (exit %d, %u problems) "
			 "fsck -n exits %d with %u problems", seed, e2, n2, e3, n3);
	bdev_close(bd);
}

/* ---- the mount ----------------------------------------------------------------- */

static unsigned long logged;         /* error lines since the mount */

static void count_line(enum mlog_level level, const char *line, void *arg)
{
	(void)line;
	(void)arg;
	logged += level <= MLOG_ERR;
}

static bool damage_error(int err)
{
	switch (-err) {
	case EUCLEAN: case EIO: case EROFS: case ENOENT: case ESTALE: case ENOSPC:
	case ENOTDIR: case EISDIR: case ENOTEMPTY: case EEXIST: case EFBIG:
	case EMLINK: case ENODATA: case EOPNOTSUPP:
		return true;
	default:
		return false;
	}
}

/* An error of a damaged image, and damage named in the log. */
#define ALLOWED(seed, what, err) do {                                        \
	int e_ = (err) < 0 ? (int)(err) : 0;                                  \
	t_assert(!e_ || damage_error(e_), "seed %" PRIu64 ": %s: %s", seed,  \
		 what, strerror(-e_));                                        \
	t_assert((e_ != -EUCLEAN && e_ != -EIO) || logged, "seed %" PRIu64   \
		 ": %s: %s with nothing in the log", seed, what, strerror(-e_)); \
} while (0)

struct walk {
	struct mfs_fs *fs;
	uint64_t seed;
	int depth;
	uint64_t inos[64];
	unsigned int n;
};

static int collect(void *ctx, const char *name, size_t len, uint64_t ino, unsigned type,
		   uint64_t next, const struct stat *st, uint64_t gen)
{
	struct walk *w = ctx;

	(void)type;
	(void)next;
	(void)st;
	(void)gen;
	if ((len == 1 && name[0] == '.') || (len == 2 && !memcmp(name, "..", 2)))
		return 0;
	if (w->n < UT_ARRAY_SIZE(w->inos))
		w->inos[w->n++] = ino;
	return 0;
}

static void read_file(struct mfs_fs *fs, uint64_t ino, uint64_t seed)
{
	static char buf[65536];
	struct mfs_file *f;
	int err = mfs_open(fs, &tf_root, ino, O_RDONLY, &f);
	ssize_t n = 1;

	ALLOWED(seed, "open", err);
	for (uint64_t off = 0; !err && n > 0 && off < (8u << 20); off += (uint64_t)n) {
		n = mfs_read(fs, f, buf, sizeof(buf), off);
		ALLOWED(seed, "read", n);
	}
	if (!err)
		mfs_release(fs, f);
}

static void walk_tree(struct mfs_fs *fs, uint64_t dir, uint64_t seed, int depth)
{
	struct walk w = { .fs = fs, .seed = seed };
	struct mfs_dir *d;
	int err = mfs_opendir(fs, &tf_root, dir, &d);

	ALLOWED(seed, "opendir", err);
	if (err)
		return;
	ALLOWED(seed, "readdir", mfs_readdir(fs, d, 0, true, collect, &w));
	mfs_releasedir(fs, d);
	for (unsigned int i = 0; i < w.n; i++) {
		struct stat st;

		err = mfs_getattr(fs, w.inos[i], &st);
		ALLOWED(seed, "getattr", err);
		if (!err && S_ISDIR(st.st_mode) && depth < 8)
			walk_tree(fs, w.inos[i], seed, depth + 1);
		else if (!err && S_ISREG(st.st_mode))
			read_file(fs, w.inos[i], seed);
	}
	/* Each entry reported with @plus counted a lookup. */
	for (unsigned int i = 0; i < w.n; i++)
		mfs_forget(fs, w.inos[i], 1);
}

static void change(struct mfs_fs *fs, uint64_t seed)
{
	static const char data[5000] = "new";
	struct mfs_file *f;
	struct stat st;
	int err = mfs_create(fs, &tf_root, MFS_ROOT_INO, "new", S_IFREG | 0644,
			     O_RDWR, &st, NULL, &f);

	ALLOWED(seed, "create", err);
	if (!err) {
		ALLOWED(seed, "write", mfs_write(fs, &tf_root, f, data, sizeof(data), 0, 0));
		ALLOWED(seed, "fsync", mfs_fsync(fs, st.st_ino, false));
		mfs_release(fs, f);
		mfs_forget(fs, st.st_ino, 1);
		ALLOWED(seed, "unlink", mfs_unlink(fs, &tf_root, MFS_ROOT_INO, "new"));
	}
	err = mfs_mkdir(fs, &tf_root, MFS_ROOT_INO, "newdir", S_IFDIR | 0755, &st, NULL);
	ALLOWED(seed, "mkdir", err);
	if (!err) {
		mfs_forget(fs, st.st_ino, 1);
		ALLOWED(seed, "rmdir", mfs_rmdir(fs, &tf_root, MFS_ROOT_INO, "newdir"));
	}
	ALLOWED(seed, "rename", mfs_rename(fs, &tf_root, MFS_ROOT_INO, "a", MFS_ROOT_INO,
					   "a2", 0));
}

static void check_mount(const uint8_t *img, uint64_t seed)
{
	struct mfs_mount_opts o = { .cache_bytes = 2u << 20, .force = true };
	struct bdev *bd = copy_of(img);
	struct mfs_fs *fs;
	int err;

	logged = 0;
	err = mfs_mount(bd, &o, &fs);
	ALLOWED(seed, "mount", err);
	if (!err) {
		walk_tree(fs, MFS_ROOT_INO, seed, 0);
		change(fs, seed);
		ALLOWED(seed, "unmount", mfs_unmount(fs));
	}
	bdev_close(bd);
}

/* The damaged image of @seed as the file DIR/dmg-SEED.img. */
static void save(const uint8_t *img, const char *dir, uint64_t seed)
{
	char path[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/dmg-%" PRIu64 ".img", dir, seed);
	f = fopen(path, "w");
	t_assert(f && fwrite(img, 1, IMG_BYTES, f) == IMG_BYTES && !fclose(f),
		 "cannot write %s", path);
}

/* ---- the cases ------------------------------------------------------------------ */

static uint64_t first, count = 550;      /* the seeds */
static const char *save_dir;             /* --save DIR */

/* The populated image, its metadata blocks, and a buffer for a damaged
 * copy: made by the first case that asks, kept to the exit. */
static struct bdev *base_bd;
static struct meta base_meta;
static uint8_t *damaged;

static void base(void)
{
	struct mfs_fs *fs;

	if (base_bd)
		return;
	base_bd = tf_mkfs(BS, IMG_BYTES);
	damaged = malloc(IMG_BYTES);
	t_assert(damaged, "no memory");
	fs = tf_mount(base_bd);
	populate(fs);
	t_ok(mfs_unmount(fs));
	/* Clean before the damage, or the damage proves nothing. */
	tf_check(base_bd, true);
	list_meta(base_bd, &base_meta);
}

/* @fn on the damaged copy of every seed, the log counted, not printed. */
static void each_damaged(void (*fn)(const uint8_t *img, uint64_t seed))
{
	base();
	mlog_set_sink(count_line, NULL);
	for (uint64_t seed = first; seed < first + count; seed++) {
		memcpy(damaged, bdev_mem_data(base_bd), IMG_BYTES);
		damage(damaged, &base_meta, seed);
		fn(damaged, seed);
	}
	mlog_set_sink(NULL, NULL);
	printf("%" PRIu64 " damaged images, %zu metadata blocks to damage\n", count,
	       base_meta.n);
}

/* fsck -fn writes nothing, -fy repairs, and -fn then finds nothing. */
static void test_fsck_repairs(void)
{
	each_damaged(check_fsck);
}

/* The damaged image mounts or is refused; calls on it fail only as damage may. */
static void test_mount_survives(void)
{
	each_damaged(check_mount);
}

static void save_one(const uint8_t *img, uint64_t seed)
{
	save(img, save_dir, seed);
}

/*
 * The arguments before the case names: [--save DIR] [FIRST [COUNT]].
 * They are taken off the front of main's argc and argv (as T_MAIN_SETUP
 * names them), so that the cases see only their names.  With --save only
 * the damaged images are written, and no case runs.
 */
static void setup(int *argc, char ***argv)
{
	char **v = *argv;
	int a = 1;

	if (*argc > 2 && !strcmp(v[1], "--save")) {
		save_dir = v[2];
		a = 3;
	}
	if (a < *argc && isdigit((unsigned char)v[a][0]))
		first = strtoull(v[a++], NULL, 0);
	if (a < *argc && isdigit((unsigned char)v[a][0]))
		count = strtoull(v[a++], NULL, 0);
	if (save_dir) {
		each_damaged(save_one);
		exit(0);
	}
	v[a - 1] = v[0];
	*argv = v + a - 1;
	*argc -= a - 1;
}

T_MAIN_SETUP(setup(&argc, &argv),
	     T_CASE(test_fsck_repairs),
	     T_CASE(test_mount_survives))
