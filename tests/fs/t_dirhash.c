/*
 * t_dirhash - big directories: the work of a lookup, a create and an
 * unlink, counted in directory blocks walked (the statistic
 * dir_blocks_scanned), is the same in a directory of 100 entries and in
 * one of 100,000; and random creates, unlinks, renames and links in two
 * indexed directories agree with a model through lookups and readdir,
 * with the index's memory ample, tight (indexes dropped and rebuilt) and
 * nil (no index), on both block sizes; the image passes the check after
 * each run.  The same for the index on the disk (dir_index), whose cost
 * counts the index blocks read as well.
 *
 * MISCFS_T_ENTRIES sets the big directory's size (default 100,000; the
 * sanitizer builds pass less).
 */
#include <fcntl.h>
#include <inttypes.h>
#include <linux/fs.h>
#include <stdlib.h>

#include "bdev_test.h"
#include "fsck.h"
#include "t_dev.h"
#include "t_fs.h"
#include "util.h"

#define OPS 1000u               /* operations measured at each size */

/* ---- helpers ------------------------------------------------------------- */

static uint64_t mkdir_(struct mfs_fs *fs, uint64_t parent, const char *name)
{
	struct stat st;

	t_ok(mfs_mkdir(fs, &tf_root, parent, name, 0755, &st, NULL));
	mfs_forget(fs, st.st_ino, 1);
	return st.st_ino;
}

static int mknod_(struct mfs_fs *fs, uint64_t dir, const char *name, uint64_t *ino)
{
	struct stat st;
	int err = mfs_mknod(fs, &tf_root, dir, name, S_IFREG | 0644, 0, &st, NULL);

	if (!err) {
		mfs_forget(fs, st.st_ino, 1);
		*ino = st.st_ino;
	}
	return err;
}

static int lookup_(struct mfs_fs *fs, uint64_t dir, const char *name, uint64_t *ino)
{
	struct stat st;
	int err = mfs_lookup(fs, &tf_root, dir, name, &st, NULL);

	if (!err) {
		mfs_forget(fs, st.st_ino, 1);
		*ino = st.st_ino;
	}
	return err;
}

static unsigned entries_wanted(void)
{
	const char *v = getenv("MISCFS_T_ENTRIES");

	return v ? (unsigned)strtoul(v, NULL, 10) : 100000u;
}

/* ---- the cost of an operation -------------------------------------------- */

struct cost {
	double lookup, miss, create, unlink;
};

static void ename(char *buf, size_t size, unsigned i)
{
	snprintf(buf, size, "e%07u", i);
}

static void fill(struct mfs_fs *fs, uint64_t dir, unsigned n)
{
	char name[32];
	uint64_t ino;

	for (unsigned i = 0; i < n; i++) {
		ename(name, sizeof(name), i);
		t_ok(mknod_(fs, dir, name, &ino));
	}
}

/* Blocks walked per operation over @ops operations of each kind in @dir
 * of @n entries (names e0..e<n-1>). */
static struct cost measure(struct mfs_fs *fs, uint64_t dir, unsigned n, unsigned ops)
{
	struct cost c;
	char name[32];
	uint64_t ino, s = tf_counter(fs, "dir_blocks_scanned");

	for (unsigned i = 0; i < ops; i++) {
		ename(name, sizeof(name), (unsigned)(((uint64_t)i * 7919u) % n));
		t_ok(lookup_(fs, dir, name, &ino));
	}
	c.lookup = (double)(tf_counter(fs, "dir_blocks_scanned") - s) / ops;
	s = tf_counter(fs, "dir_blocks_scanned");
	for (unsigned i = 0; i < ops; i++) {
		snprintf(name, sizeof(name), "missing%u", i);
		t_eq(lookup_(fs, dir, name, &ino), -ENOENT);
	}
	c.miss = (double)(tf_counter(fs, "dir_blocks_scanned") - s) / ops;
	/* Each create undone at once: the directory keeps its size. */
	c.create = c.unlink = 0;
	for (unsigned i = 0; i < ops; i++) {
		snprintf(name, sizeof(name), "new%u", i);
		s = tf_counter(fs, "dir_blocks_scanned");
		t_ok(mknod_(fs, dir, name, &ino));
		c.create += (double)(tf_counter(fs, "dir_blocks_scanned") - s) / ops;
		s = tf_counter(fs, "dir_blocks_scanned");
		t_ok(mfs_unlink(fs, &tf_root, dir, name));
		c.unlink += (double)(tf_counter(fs, "dir_blocks_scanned") - s) / ops;
	}
	return c;
}

static void print_cost(const char *what, unsigned n, const struct cost *c)
{
	printf("%s, %u entries: blocks walked per lookup %.2f, failed lookup %.2f, "
	       "create %.2f, unlink %.2f\n", what, n, c->lookup, c->miss, c->create,
	       c->unlink);
}

/* The big side costs what the small side costs, give or take one block. */
static void same_cost(const struct cost *small, const struct cost *big)
{
	t_assert(big->lookup <= small->lookup + 1.0 && big->lookup <= 2.0,
		 "lookup: %.2f vs %.2f", big->lookup, small->lookup);
	t_assert(big->miss <= small->miss + 1.0 && big->miss <= 2.0,
		 "failed lookup: %.2f vs %.2f", big->miss, small->miss);
	t_assert(big->create <= small->create + 1.0 && big->create <= 4.0,
		 "create: %.2f vs %.2f", big->create, small->create);
	t_assert(big->unlink <= small->unlink + 1.5 && big->unlink <= 4.0,
		 "unlink: %.2f vs %.2f", big->unlink, small->unlink);
}

static struct bdev *mkfs_big(uint32_t bs, uint64_t bytes, uint32_t inodes, bool dx)
{
	struct fmt_mkfs_opts o = { .block_size = bs, .zeroed = true, .now = 1700000000,
				   .csum_seed = 0x5eed, .inodes = inodes, .dir_index = dx };
	struct bdev *bd;

	t_ok(bdev_mem_create(bytes, bs, &bd));
	t_ok(fmt_mkfs(bd, &o));
	return bd;
}

static void test_cost(void)
{
	unsigned big = entries_wanted(), ops = UT_MIN(OPS, big);
	struct bdev *bd = mkfs_big(4096, 512ull << 20, big + 3 * ops + 1024, false);
	struct mfs_mount_opts none = { .cache_bytes = 4u << 20, .dirhash_bytes = 1 };
	struct mfs_fs *fs = tf_mount(bd);
	uint64_t small_dir = mkdir_(fs, MFS_ROOT_INO, "small");
	uint64_t big_dir = mkdir_(fs, MFS_ROOT_INO, "big");
	struct cost cs, cb, cw;

	fill(fs, small_dir, 100);
	fill(fs, big_dir, big);
	cs = measure(fs, small_dir, 100, ops);
	cb = measure(fs, big_dir, big, ops);
	print_cost("small directory", 100, &cs);
	print_cost("big directory, indexed", big, &cb);
	same_cost(&cs, &cb);
	t_eq(tf_counter(fs, "dirhash_drops"), 0);
	t_eq(tf_counter(fs, "dirhash_builds"), 1);       /* the small one has none */
	t_assert(tf_counter(fs, "dirhash_hits") >= 4ull * ops, "index hits");
	t_assert(tf_counter(fs, "dirhash_bytes") > 0 && tf_counter(fs, "dirhash_dirs") == 1,
		 "index memory accounted");
	tf_unmount_check(fs, bd);

	/* The same work without an index: the counter sees the walks. */
	fs = tf_mount_opts(bd, &none);
	cw = measure(fs, big_dir, big, ops / 10);
	print_cost("big directory, no index", big, &cw);
	t_assert(cw.lookup > 10 * cb.lookup + 10, "walks not counted: %.2f", cw.lookup);
	t_eq(tf_counter(fs, "dirhash_builds"), 0);
	t_eq(tf_counter(fs, "dirhash_bytes"), 0);
	tf_unmount_check(fs, bd);

	/* Emptied through its index, the big directory can go. */
	fs = tf_mount(bd);
	for (unsigned i = 0; i < big; i++) {
		char name[32];

		ename(name, sizeof(name), i);
		t_ok(mfs_unlink(fs, &tf_root, big_dir, name));
	}
	t_ok(mfs_rmdir(fs, &tf_root, MFS_ROOT_INO, "big"));
	t_eq(tf_counter(fs, "dirhash_dirs"), 0);           /* gone with its inode */
	t_eq(tf_counter(fs, "dirhash_bytes"), 0);
	tf_unmount_check(fs, bd);
	bdev_close(bd);
}

/* The same with the index on the disk: a lookup reads the same number of
 * index blocks (the tree's height, at most 3) and walks one directory
 * block in a directory of 1,000 entries and in the big one, a create or
 * an unlink as few; nothing is built in memory, and after a mount the
 * first lookup costs what the others do. */
static void test_cost_dx(void)
{
	unsigned big = entries_wanted(), ops = UT_MIN(OPS, big);
	struct bdev *bd = mkfs_big(4096, 512ull << 20, big + 3 * ops + 4096, true);
	struct mfs_fs *fs = tf_mount(bd);
	uint64_t small_dir = mkdir_(fs, MFS_ROOT_INO, "small");
	uint64_t big_dir = mkdir_(fs, MFS_ROOT_INO, "big"), ino, s;
	struct cost cs, cb;
	double ixs, ixb;

	fill(fs, small_dir, 1000);
	fill(fs, big_dir, big);
	s = tf_counter(fs, "dir_index_blocks_read");
	cs = measure(fs, small_dir, 1000, ops);
	ixs = (double)(tf_counter(fs, "dir_index_blocks_read") - s) / (4 * ops);
	s = tf_counter(fs, "dir_index_blocks_read");
	cb = measure(fs, big_dir, big, ops);
	ixb = (double)(tf_counter(fs, "dir_index_blocks_read") - s) / (4 * ops);
	print_cost("1,000 entries, index on the disk", 1000, &cs);
	print_cost("big directory, index on the disk", big, &cb);
	printf("index blocks read per operation: %.2f (1,000 entries), %.2f (%u)\n",
	       ixs, ixb, big);
	same_cost(&cs, &cb);
	t_assert(cb.lookup <= 1.01 && cb.miss <= 0.01, "lookup walks %.2f, miss %.2f",
		 cb.lookup, cb.miss);
	/* A create walks the tree three times (the lookup, its reservation,
	 * the add): one level more costs at most 2.5 reads per operation. */
	t_assert(ixb <= ixs + 2.5 && ixb <= 10, "index reads %.2f vs %.2f", ixb, ixs);
	t_eq(tf_counter(fs, "dirhash_builds"), 0);
	tf_unmount_check(fs, bd);

	/* No build after a mount: the first lookup is like any other. */
	fs = tf_mount(bd);
	s = tf_counter(fs, "dir_blocks_scanned");
	t_ok(lookup_(fs, big_dir, "e0000007", &ino));
	t_assert(tf_counter(fs, "dir_blocks_scanned") - s <= 1, "first lookup walked %" PRIu64,
		 tf_counter(fs, "dir_blocks_scanned") - s);
	for (unsigned i = 0; i < big; i++) {
		char name[32];

		ename(name, sizeof(name), i);
		t_ok(mfs_unlink(fs, &tf_root, big_dir, name));
	}
	t_ok(mfs_rmdir(fs, &tf_root, MFS_ROOT_INO, "big"));
	tf_unmount_check(fs, bd);
	bdev_close(bd);
}

/* 1 KiB blocks: 10,000 names grow the index to its full height (a root
 * of 60 records over nodes over some 150 blocks of records); each lookup
 * then reads three index blocks;
 * every name is found and unlinked, and no split took more blocks than
 * the operation reserved; chattr leaves the index flag alone. */
static void test_deep_dx(void)
{
	unsigned n = 10000;
	struct bdev *bd = mkfs_big(1024, 256ull << 20, n + 1024, true);
	struct mfs_fs *fs = tf_mount(bd);
	uint64_t dir = mkdir_(fs, MFS_ROOT_INO, "deep"), ino, s;
	char name[32];

	tf_log_capture();
	fill(fs, dir, n);
	t_assert(!strstr(tf_log(), "reservation"), "the splits outran the reservation: %s",
		 tf_log());
	tf_log_release();
	tf_unmount_check(fs, bd);
	fs = tf_mount(bd);
	s = tf_counter(fs, "dir_index_blocks_read");
	for (unsigned i = 0; i < n; i++) {
		ename(name, sizeof(name), (unsigned)(((uint64_t)i * 7919u) % n));
		t_ok(lookup_(fs, dir, name, &ino));
	}
	t_eq((tf_counter(fs, "dir_index_blocks_read") - s) / n, 3);
	/* lsattr shows the index (I); what it showed goes back through
	 * chattr, which never changes it, even on an immutable directory. */
	uint32_t fl;
	t_ok(mfs_get_flags(fs, dir, &fl));
	t_eq(fl, MFS_INDEX_FL);
	for (int i = 0; i < 2; i++)
		t_ok(mfs_set_flags(fs, &tf_root, dir, fl | MFS_IMMUTABLE_FL));
	t_ok(mfs_set_flags(fs, &tf_root, dir, fl & ~MFS_INDEX_FL));
	t_ok(mfs_get_flags(fs, dir, &fl));
	t_eq(fl, MFS_INDEX_FL);
	for (unsigned i = 0; i < n; i++) {
		ename(name, sizeof(name), i);
		t_ok(mfs_unlink(fs, &tf_root, dir, name));
	}
	t_ok(mfs_rmdir(fs, &tf_root, MFS_ROOT_INO, "deep"));
	tf_unmount_check(fs, bd);
	bdev_close(bd);
}

/* ---- fsck and a damaged index -------------------------------------------- */

struct dxd {
	struct fmt_raw raw;
	uint32_t ino;
	struct mfs_inode in;
	uint64_t pblk;
	uint8_t *blk;
};

/* Block @lblk of directory @ino into d->blk. */
static void dxd_read(struct dxd *d, uint64_t lblk)
{
	t_ok(fmt_raw_bmap(&d->raw, d->ino, &d->in, lblk, &d->pblk));
	t_ok(fmt_raw_read(&d->raw, d->pblk, d->blk));
}

static void dxd_write(struct dxd *d)
{
	fmt_block_set_csum(&d->raw.sb, MFS_CSUM_DIR, d->ino, d->blk);
	t_ok(bdev_write(d->raw.bd, d->pblk * d->raw.bs, d->blk, d->raw.bs));
}

/* The root, then down the first records to a level-0 block. */
static void dxd_leaf(struct dxd *d)
{
	dxd_read(d, MFS_DX_ROOT_LBLK);
	while (fmt_dx_head(d->blk)->dx_level)
		dxd_read(d, le32toh(fmt_dx_recs(d->blk)[0].dr_lblk));
}

static void dmg_record_block(struct dxd *d)
{
	struct mfs_dx_rec *r;

	dxd_leaf(d);
	r = &fmt_dx_recs(d->blk)[1];
	r->dr_lblk = htole32(le32toh(r->dr_lblk) ? 0 : 3);
}

static void dmg_record_gone(struct dxd *d)
{
	dxd_leaf(d);
	fmt_dx_head(d->blk)->dx_count = htole16(le16toh(fmt_dx_head(d->blk)->dx_count) - 1);
}

static void dmg_records_order(struct dxd *d)
{
	struct mfs_dx_rec *r, t;

	dxd_leaf(d);
	r = fmt_dx_recs(d->blk);
	t = r[0];
	r[0] = r[2];
	r[2] = t;
}

static void dmg_level(struct dxd *d)
{
	dxd_read(d, MFS_DX_ROOT_LBLK);
	fmt_dx_head(d->blk)->dx_level++;
}

static void dmg_room(struct dxd *d)
{
	dxd_read(d, MFS_DX_ROOT_LBLK);
	dxd_read(d, le32toh(fmt_dx_root(d->blk)->dr_fmap[0]));
	memset(fmt_dx_fmap(d->blk), 255, 8);
}

static void dmg_room_unmapped(struct dxd *d)
{
	dxd_read(d, MFS_DX_ROOT_LBLK);
	fmt_dx_root(d->blk)->dr_fmap_count = 0;
}

static const struct {
	const char *name;
	void (*fn)(struct dxd *d);
} dx_damage[] = {
	{ "a record names the wrong block", dmg_record_block },
	{ "a record is missing", dmg_record_gone },
	{ "records out of order", dmg_records_order },
	{ "the root's level raised", dmg_level },
	{ "the room map overstates", dmg_room },
	{ "no room map", dmg_room_unmapped },
};

static unsigned dx_problems;

static enum fsck_answer count_dx(void *arg, const struct fsck_report *r)
{
	(void)arg;
	printf("  fsck: [%s] %s\n", r->code, r->message);
	dx_problems += !strcmp(r->code, "2.DX_BAD");
	return r->proposed;
}

static int fsck_mode(struct bdev *bd, enum fsck_mode mode)
{
	struct fsck_opts o = { .mode = mode, .force = true, .problem = count_dx };
	struct fsck_result r;

	dx_problems = 0;
	return fsck_run(bd, &o, &r);
}

/* Every name e0..e<n-1> of @dir is found, through the index (with the
 * flag) in a few blocks read each; the directory takes 100 more. */
static void all_found(struct bdev *bd, uint32_t dir, unsigned n)
{
	struct mfs_fs *fs = tf_mount(bd);
	uint64_t ino, s = tf_counter(fs, "dir_index_blocks_read");
	char name[32];

	for (unsigned i = 0; i < n; i++) {
		ename(name, sizeof(name), i);
		t_ok(lookup_(fs, dir, name, &ino));
	}
	t_assert(tf_counter(fs, "dir_index_blocks_read") - s >= 2ull * n, "index not used");
	fill(fs, mkdir_(fs, dir, "more"), 100);
	tf_unmount_check(fs, bd);
}

/* Each kind of damage to the index: fsck -fn finds it (and nothing
 * else), -fy rebuilds the index, and then the image is clean and every
 * name is found through it. */
static void test_fsck_dx(void)
{
	unsigned n = 3000;

	for (size_t k = 0; k < sizeof(dx_damage) / sizeof(dx_damage[0]); k++) {
		struct bdev *bd = mkfs_big(1024, 64u << 20, 0, true);
		struct mfs_fs *fs = tf_mount(bd);
		struct dxd d = { .blk = bdev_alloc_buf(1024) };

		d.ino = (uint32_t)mkdir_(fs, MFS_ROOT_INO, "d");
		fill(fs, d.ino, n);
		tf_unmount_check(fs, bd);
		t_ok(fmt_raw_open(bd, &d.raw));
		t_ok(fmt_raw_inode(&d.raw, d.ino, &d.in));
		t_assert(le32toh(d.in.i_flags) & MFS_INDEX_FL, "no index made");
		dx_damage[k].fn(&d);
		dxd_write(&d);
		fmt_raw_close(&d.raw);
		printf("%s:\n", dx_damage[k].name);
		t_eq(fsck_mode(bd, FSCK_NO), 4);
		t_eq(dx_problems, 1);
		t_eq(fsck_mode(bd, FSCK_YES) & ~1, 0);
		t_eq(dx_problems, 1);
		tf_check(bd, true);
		all_found(bd, d.ino, n);
		bdev_free_buf(d.blk);
		bdev_close(bd);
	}
}

/* An image made without the feature gains it (the superblock's bit, as
 * tune2fs -O dir_index would set it) and fsck -D indexes its big
 * directories: block 1's entries move to the end for the root.  A second
 * fsck finds the index right. */
static void test_fsck_build(void)
{
	struct fsck_opts o = { .mode = FSCK_YES, .force = true, .dir_index = true,
			       .problem = count_dx };
	struct fsck_result r;

	for (uint32_t bs = 1024; bs <= 4096; bs *= 4) {
		struct bdev *bd = mkfs_big(bs, 64u << 20, 8000, false);
		struct mfs_fs *fs = tf_mount(bd);
		uint32_t dir = (uint32_t)mkdir_(fs, MFS_ROOT_INO, "d");
		struct fmt_raw raw;
		struct mfs_super *sb;
		uint8_t *blk = bdev_alloc_buf(bs);

		printf("%u-byte blocks:\n", bs);
		fill(fs, dir, 5000);
		fill(fs, mkdir_(fs, MFS_ROOT_INO, "two-blocks"), bs / 12);
		tf_unmount_check(fs, bd);
		t_ok(bdev_read(bd, 0, blk, bs));
		sb = (void *)(blk + (bs == 1024 ? 0 : 1024));
		if (bs == 1024)
			t_ok(bdev_read(bd, 1024, blk, bs));
		sb->s_feature_ro_compat |= htole32(MFS_FEATURE_RO_COMPAT_DIR_INDEX);
		fmt_sb_set_csum(sb);
		t_ok(bdev_write(bd, bs == 1024 ? 1024 : 0, blk, bs));
		t_eq(fsck_run(bd, &o, &r) & ~1, 0);
		t_ok(fmt_raw_open(bd, &raw));
		struct mfs_inode in;
		t_ok(fmt_raw_inode(&raw, dir, &in));
		fmt_raw_close(&raw);
		t_assert(le32toh(in.i_flags) & MFS_INDEX_FL, "no index built");
		tf_check(bd, true);
		all_found(bd, dir, 5000);
		bdev_free_buf(blk);
		bdev_close(bd);
	}
}

/* ---- power cuts ----------------------------------------------------------- */

#define CRASH_NAMES 400u
#define CRASH_KEPT 150u         /* names the churn after the fsync leaves */

static void cname(char *buf, size_t size, unsigned i)
{
	snprintf(buf, size, "name-%04u-of-the-big-directory", i);
}

static int count_fill(void *ctx, const char *name, size_t len, uint64_t ino,
		      unsigned type, uint64_t next, const struct stat *st, uint64_t gen)
{
	char **names = ctx;

	(void)type; (void)next; (void)st; (void)gen; (void)ino;
	if ((len == 1 && name[0] == '.') || (len == 2 && !memcmp(name, "..", 2)))
		return 0;
	t_assert(len < 64, "a name of %zu bytes", len);
	for (unsigned i = 0; i < 2 * CRASH_NAMES; i++)
		if (!names[i]) {
			names[i] = strndup(name, len);
			return 0;
		}
	t_fail("more than %u names listed", 2 * CRASH_NAMES);
}

/* A cut image: it mounts; every name readdir lists is found by a lookup
 * (the index agrees with the blocks) and none twice; the names fsynced and
 * left alone are there once the fsync is in; the directory takes 50 more
 * names; and fsck, which checks the index against the entries, finds
 * nothing. */
static void dx_cut_check(struct bdev *img, bool synced)
{
	struct mfs_fs *fs = tf_mount(img);
	uint64_t d = tf_ino(fs, "d"), ino;
	char **names = calloc(2 * CRASH_NAMES, sizeof(*names)), name[64];
	struct mfs_dir *dd;
	unsigned n = 0;

	t_ok(mfs_opendir(fs, &tf_root, d, &dd));
	t_ok(mfs_readdir(fs, dd, 0, false, count_fill, names));
	t_ok(mfs_releasedir(fs, dd));
	for (; n < 2 * CRASH_NAMES && names[n]; n++) {
		t_ok(lookup_(fs, d, names[n], &ino));
		for (unsigned k = 0; k < n; k++)
			t_assert(strcmp(names[k], names[n]), "%s listed twice", names[n]);
	}
	for (unsigned i = 0; synced && i < CRASH_KEPT; i++) {
		cname(name, sizeof(name), i);
		t_ok(lookup_(fs, d, name, &ino));
	}
	t_eq(lookup_(fs, d, "never-made", &ino), -ENOENT);
	for (unsigned i = 0; i < 50; i++) {
		snprintf(name, sizeof(name), "after-the-cut-%u", i);
		t_ok(mknod_(fs, d, name, &ino));
	}
	tf_unmount_check(fs, img);
	for (unsigned i = 0; i < n; i++)
		free(names[i]);
	free(names);
}

/*
 * A directory grows an index and splits it (1 KiB blocks: the root holds
 * 60 records), fsynced every 100 names, then loses names, renames them in
 * place and out and back, and grows again; the power is cut at points all along
 * the log, with writes after the last flush lost, kept at random or by
 * whole blocks.
 */
static void test_dx_crash(void)
{
	struct mfs_mount_opts o = { .cache_bytes = 2u << 20, .no_flusher = true,
				    .commit_s = 60 };
	struct fmt_mkfs_opts mo = { .block_size = 1024, .zeroed = true, .now = 1700000000,
				    .csum_seed = 0x5eed, .dir_index = true };
	const char *every = getenv("MISCFS_CRASH_EVERY");
	struct bdev *bd = t_dev_mem(16u << 20, 1024), *img;
	struct mfs_fs *fs;
	uint64_t d, e, ino;
	size_t synced_at = 0, n, step, images = 0;
	char a[64], b[64];

	t_ok(fmt_mkfs(bd, &mo));
	fs = tf_mount_opts(bd, &o);
	d = mkdir_(fs, MFS_ROOT_INO, "d");
	e = mkdir_(fs, MFS_ROOT_INO, "e");
	t_ok(mfs_sync(fs));
	bdev_wrap_record(bd, true);
	for (unsigned i = 0; i < CRASH_NAMES; i++) {
		cname(a, sizeof(a), i);
		t_ok(mknod_(fs, d, a, &ino));
		if (i % 100 == 99)
			t_ok(mfs_fsync(fs, d, false));
		if (i == CRASH_KEPT + 49)
			synced_at = bdev_wrap_log_count(bd);
	}
	for (unsigned i = CRASH_KEPT; i < CRASH_NAMES; i++) {
		cname(a, sizeof(a), i);
		snprintf(b, sizeof(b), "renamed-%u", i);
		if (i % 3 == 0)
			t_ok(mfs_unlink(fs, &tf_root, d, a));
		else if (i % 3 == 1)
			t_ok(mfs_rename(fs, &tf_root, d, a, d, b, 0));
		else {
			t_ok(mfs_rename(fs, &tf_root, d, a, e, b, 0));
			t_ok(mfs_rename(fs, &tf_root, e, b, d, a, 0));
		}
	}
	for (unsigned i = CRASH_NAMES; i < CRASH_NAMES + 200; i++) {
		cname(a, sizeof(a), i);
		t_ok(mknod_(fs, d, a, &ino));
	}
	t_ok(mfs_unmount(fs));
	bdev_wrap_record(bd, false);
	n = bdev_wrap_log_count(bd);
	step = (1 + n / 97) * (every && atoi(every) > 1 ? (size_t)atoi(every) : 1);
	for (size_t p = 0; p <= n; p += step)
		for (int mode = 0; mode < 3; mode++) {
			t_ok(bdev_wrap_crash_image(bd, p, mode == 0 ? BDEV_CUT_LOSE_ALL :
						  mode == 1 ? BDEV_CUT_RANDOM : BDEV_CUT_BLOCKS,
						  p * 31 + (size_t)mode, &img));
			dx_cut_check(img, p >= synced_at);
			bdev_close(img);
			images++;
		}
	printf("ok: %zu cut images of a log of %zu entries (fsynced at %zu)\n", images, n,
	       synced_at);
	tf_check(bd, true);
	bdev_close(bd);
}

/* ---- random changes against a model -------------------------------------- */

#define IDS 4000u               /* names per directory */
#define NDIRS 2

struct model {
	struct mfs_fs *fs;
	uint64_t dir[NDIRS];
	uint64_t ino[NDIRS][IDS];    /* 0: absent */
	unsigned seed;
};

static unsigned rnd(struct model *m)
{
	m->seed = m->seed * 1103515245u + 12345u;
	return (m->seed >> 8) & 0xffffff;
}

/* Name @id: "r<id>." then 'x' up to a length from 3 to 255 that depends
 * on @id, so that records of every size come and go. */
static void rname(char *buf, unsigned id)
{
	size_t len = 3 + (id * 7919u) % 253, n;

	n = (size_t)snprintf(buf, 256, "r%u.", id);
	memset(buf + n, 'x', len > n ? len - n : 0);
	buf[len > n ? len : n] = 0;
}

static unsigned rid(const char *name, size_t len)
{
	char buf[256];

	memcpy(buf, name, len);
	buf[len] = 0;
	t_assert(buf[0] == 'r', "unexpected name %s", buf);
	return (unsigned)strtoul(buf + 1, NULL, 10);
}

static void op_create(struct model *m, unsigned d, unsigned id)
{
	char name[256];
	uint64_t ino;
	int err;

	rname(name, id);
	err = mknod_(m->fs, m->dir[d], name, &ino);
	if (m->ino[d][id]) {
		t_eq(err, -EEXIST);
		return;
	}
	t_ok(err);
	m->ino[d][id] = ino;
}

static void op_unlink(struct model *m, unsigned d, unsigned id)
{
	char name[256];

	rname(name, id);
	t_eq(mfs_unlink(m->fs, &tf_root, m->dir[d], name), m->ino[d][id] ? 0 : -ENOENT);
	m->ino[d][id] = 0;
}

/* Rename (d1, a) to (d2, b), replacing b if it exists. */
static void op_rename(struct model *m, unsigned d1, unsigned a, unsigned d2, unsigned b)
{
	char na[256], nb[256];
	int err;

	rname(na, a);
	rname(nb, b);
	err = mfs_rename(m->fs, &tf_root, m->dir[d1], na, m->dir[d2], nb, 0);
	if (!m->ino[d1][a]) {
		t_eq(err, -ENOENT);
		return;
	}
	t_ok(err);
	/* Two names of one inode: rename(2) leaves both. */
	if ((d1 == d2 && a == b) || m->ino[d2][b] == m->ino[d1][a])
		return;
	m->ino[d2][b] = m->ino[d1][a];
	m->ino[d1][a] = 0;
}

static void op_exchange(struct model *m, unsigned d1, unsigned a, unsigned d2, unsigned b)
{
	char na[256], nb[256];
	uint64_t t;
	int err;

	rname(na, a);
	rname(nb, b);
	err = mfs_rename(m->fs, &tf_root, m->dir[d1], na, m->dir[d2], nb, RENAME_EXCHANGE);
	if (!m->ino[d1][a] || !m->ino[d2][b]) {
		t_eq(err, -ENOENT);
		return;
	}
	t_ok(err);
	t = m->ino[d2][b];
	m->ino[d2][b] = m->ino[d1][a];
	m->ino[d1][a] = t;
}

static void op_link(struct model *m, unsigned d1, unsigned a, unsigned d2, unsigned b)
{
	char nb[256];
	struct stat st;
	int err;

	if (!m->ino[d1][a])
		return;
	rname(nb, b);
	err = mfs_link(m->fs, &tf_root, m->ino[d1][a], m->dir[d2], nb, &st, NULL);
	if (m->ino[d2][b]) {
		t_eq(err, -EEXIST);
		return;
	}
	t_ok(err);
	mfs_forget(m->fs, st.st_ino, 1);
	m->ino[d2][b] = m->ino[d1][a];
}

static void op_lookup(struct model *m, unsigned d, unsigned id)
{
	char name[256];
	uint64_t ino = 0;
	int err;

	rname(name, id);
	err = lookup_(m->fs, m->dir[d], name, &ino);
	if (!m->ino[d][id]) {
		t_assert(err == -ENOENT, "dir %u: %s found (%d)", d, name, err);
		return;
	}
	t_assert(!err, "dir %u: %s not found (%d)", d, name, err);
	t_eq(ino, m->ino[d][id]);
}

struct seen {
	struct model *m;
	unsigned d, n;
	uint8_t hit[IDS];
};

static int seen_fill(void *ctx, const char *name, size_t len, uint64_t ino,
		     unsigned type, uint64_t next, const struct stat *st,
		   uint64_t gen)
{
	struct seen *s = ctx;
	unsigned id;

	(void)type; (void)next; (void)st;
	if ((len == 1 && name[0] == '.') || (len == 2 && !memcmp(name, "..", 2)))
		return 0;
	id = rid(name, len);
	t_assert(id < IDS && !s->hit[id], "dir %u: %u listed twice or unknown", s->d, id);
	t_eq(ino, s->m->ino[s->d][id]);
	s->hit[id] = 1;
	s->n++;
	return 0;
}

static void check_listing(struct model *m, unsigned d)
{
	struct seen *s = calloc(1, sizeof(*s));
	struct mfs_dir *dd;
	unsigned want = 0;

	s->m = m;
	s->d = d;
	t_ok(mfs_opendir(m->fs, &tf_root, m->dir[d], &dd));
	t_ok(mfs_readdir(m->fs, dd, 0, false, seen_fill, s));
	t_ok(mfs_releasedir(m->fs, dd));
	for (unsigned id = 0; id < IDS; id++)
		want += m->ino[d][id] != 0;
	t_eq(s->n, want);
	free(s);
}

static void random_op(struct model *m)
{
	unsigned d1 = rnd(m) % NDIRS, d2 = rnd(m) % NDIRS;
	unsigned a = rnd(m) % IDS, b = rnd(m) % IDS, r = rnd(m) % 100;

	if (r < 35)
		op_create(m, d1, a);
	else if (r < 55)
		op_unlink(m, d1, a);
	else if (r < 70)
		op_rename(m, d1, a, d1, b);
	else if (r < 78)
		op_rename(m, d1, a, d2, b);
	else if (r < 82)
		op_exchange(m, d1, a, d2, b);
	else if (r < 86)
		op_link(m, d1, a, d2, b);
	else
		op_lookup(m, d1, a);
}

static void random_run(uint32_t bs, uint64_t budget, unsigned ops, bool dx,
		       const char *what)
{
	struct bdev *bd = mkfs_big(bs, 64u << 20, 0, dx);
	struct mfs_mount_opts o = { .cache_bytes = 4u << 20, .dirhash_bytes = budget };
	struct model *m = calloc(1, sizeof(*m));

	m->fs = tf_mount_opts(bd, &o);
	m->seed = bs + (unsigned)budget;
	m->dir[0] = mkdir_(m->fs, MFS_ROOT_INO, "d0");
	m->dir[1] = mkdir_(m->fs, MFS_ROOT_INO, "d1");
	for (unsigned i = 1; i <= ops; i++) {
		random_op(m);
		if (i % (ops / 8) == 0) {
			for (unsigned d = 0; d < NDIRS; d++)
				check_listing(m, d);
			for (unsigned k = 0; k < 200; k++)
				op_lookup(m, k % NDIRS, rnd(m) % IDS);
		}
	}
	printf("%s (%u-byte blocks): %" PRIu64 " builds, %" PRIu64 " drops, %" PRIu64
	       " hits\n", what, bs, tf_counter(m->fs, "dirhash_builds"),
	       tf_counter(m->fs, "dirhash_drops"), tf_counter(m->fs, "dirhash_hits"));
	if (dx)
		printf("%s (%u-byte blocks): %" PRIu64 " index blocks read\n", what, bs,
		       tf_counter(m->fs, "dir_index_blocks_read"));
	t_assert(!dx || tf_counter(m->fs, "dir_index_blocks_read") > ops, "index unused");
	if (budget == 1 || dx)
		t_eq(tf_counter(m->fs, "dirhash_builds"), 0);
	else
		t_assert(tf_counter(m->fs, "dirhash_builds") >= NDIRS, "indexes built");
	if (budget == 0)
		t_eq(tf_counter(m->fs, "dirhash_drops"), 0);
	tf_unmount_check(m->fs, bd);

	/* Mounted again, a fresh index agrees with the model. */
	m->fs = tf_mount_opts(bd, &o);
	for (unsigned d = 0; d < NDIRS; d++) {
		check_listing(m, d);
		for (unsigned id = 0; id < IDS; id++)
			op_lookup(m, d, id);
	}
	tf_unmount_check(m->fs, bd);
	bdev_close(bd);
	free(m);
}

/* Fill the filesystem: a file as far as fallocate goes, then a chain of
 * directories, each made in the last (which has room for its entry), so
 * each takes exactly its one block, until none is left. */
static void fill_blocks(struct mfs_fs *fs)
{
	uint64_t dir = MFS_ROOT_INO, off = 0, chunk = 256 << 10;
	struct mfs_file *f;
	struct statvfs sv;
	struct stat st;
	int err;

	t_ok(mfs_create(fs, &tf_root, MFS_ROOT_INO, "space", 0644, O_RDWR, &st, NULL, &f));
	for (; chunk >= 1024; chunk /= 2)
		while (!(err = mfs_fallocate(fs, &tf_root, f, 0, off, chunk)))
			off += chunk;
	t_eq(err, -ENOSPC);
	t_ok(mfs_release(fs, f));
	mfs_forget(fs, st.st_ino, 1);
	while (!(err = mfs_mkdir(fs, &tf_root, dir, "x", 0755, &st, NULL))) {
		mfs_forget(fs, st.st_ino, 1);
		dir = st.st_ino;
	}
	t_eq(err, -ENOSPC);
	t_ok(mfs_statfs(fs, &sv));
	t_eq(sv.f_bfree, 0);
}

/* A full filesystem: an entry that fits in a block of its directory
 * needs no block, so it goes in (a create, a link, a rename), indexed
 * directory or not; one that needs a new block gets ENOSPC, and nothing
 * outran its reservation. */
static void test_full_dx(void)
{
	struct bdev *bd = mkfs_big(1024, 8ull << 20, 8192, true);
	struct mfs_fs *fs = tf_mount(bd);
	uint64_t dir = mkdir_(fs, MFS_ROOT_INO, "d"), small = mkdir_(fs, MFS_ROOT_INO, "s");
	uint64_t ino;
	unsigned made = 0;
	char name[32];
	struct stat st;
	int err = 0;

	fill(fs, dir, 300);
	t_ok(mknod_(fs, small, "keep", &ino));
	tf_log_capture();
	fill_blocks(fs);
	for (unsigned i = 0; i < 20; i++) {
		snprintf(name, sizeof(name), "f%u", i);
		t_ok(mknod_(fs, small, name, &ino));
	}
	t_ok(mfs_link(fs, &tf_root, ino, dir, "a-link", &st, NULL));
	mfs_forget(fs, st.st_ino, 1);
	t_ok(mfs_rename(fs, &tf_root, small, "keep", dir, "kept", 0));
	while (!err) {
		snprintf(name, sizeof(name), "more%u", made);
		err = mknod_(fs, dir, name, &ino);
		made += !err;
	}
	t_eq(err, -ENOSPC);
	printf("entries added to the full indexed directory: %u\n", made);
	t_assert(made > 0, "no room found in the indexed directory");
	t_assert(!strstr(tf_log(), "reservation"), "%s", tf_log());
	tf_log_release();
	tf_unmount_check(fs, bd);
	bdev_close(bd);
}

static uint64_t dir_size(struct mfs_fs *fs, uint64_t dir)
{
	struct stat st;

	t_ok(mfs_getattr(fs, dir, &st));
	return (uint64_t)st.st_size;
}

/* Room freed anywhere in an indexed directory is taken again before the
 * directory grows: half the names of 4,000 unlinked, as many new ones
 * of the same length fit in the blocks it has. */
static void test_reuse_dx(void)
{
	struct bdev *bd = mkfs_big(4096, 256ull << 20, 16384, true);
	struct mfs_fs *fs = tf_mount(bd);
	uint64_t dir = mkdir_(fs, MFS_ROOT_INO, "d"), size, ino;
	char name[64];

	fill(fs, dir, 4000);
	size = dir_size(fs, dir);
	for (unsigned i = 0; i < 4000; i += 2) {
		ename(name, sizeof(name), i);
		t_ok(mfs_unlink(fs, &tf_root, dir, name));
	}
	for (unsigned i = 0; i < 2000; i++) {
		snprintf(name, sizeof(name), "n%07u", i);
		t_ok(mknod_(fs, dir, name, &ino));
	}
	t_eq(dir_size(fs, dir), size);
	tf_unmount_check(fs, bd);
	bdev_close(bd);
}

/* Random operations: as many as the big directory has entries, / 5. */
static unsigned random_ops(void)
{
	return UT_MAX(entries_wanted() / 5, 4000u);
}

static void test_random_ample(void)
{
	random_run(4096, 0, random_ops(), false, "ample index memory");
}

/* Room for about one of the two indexes: they take turns. */
static void test_random_tight(void)
{
	random_run(1024, 40u << 10, random_ops(), false, "tight index memory");
}

static void test_random_no_index(void)
{
	random_run(1024, 1, random_ops() / 4, false, "no index");
}

/* With the index on the disk; 1 KiB blocks split its blocks often and
 * grow it to its full height. */
static void test_random_dx(void)
{
	random_run(4096, 0, random_ops(), true, "index on the disk");
	random_run(1024, 0, random_ops(), true, "index on the disk");
}

T_MAIN(T_CASE(test_cost),
       T_CASE(test_random_ample),
       T_CASE(test_random_tight),
       T_CASE(test_random_no_index),
       T_CASE(test_cost_dx),
       T_CASE(test_deep_dx),
       T_CASE(test_fsck_dx),
       T_CASE(test_fsck_build),
       T_CASE(test_dx_crash),
       T_CASE(test_full_dx),
       T_CASE(test_reuse_dx),
       T_CASE(test_random_dx))
