/*
 * t_fs.c - helpers of the tests of the mounted filesystem.
 */
#include "t_fs.h"
#include "t_dev.h"

#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>

#include "fsck.h"
#include "util.h"

static const uint32_t user_groups[] = { 1000 };

const struct mfs_cred tf_root = { 0, 0, 022, 0, NULL };
const struct mfs_cred tf_user = { 1000, 1000, 022, 0, NULL };
const struct mfs_cred tf_other = { 1001, 1001, 022, 1, user_groups };

struct bdev *tf_mkfs(uint32_t bs, uint64_t bytes)
{
	struct mfs_mkfs_opts o = { .block_size = bs, .zeroed = true, .now = 1700000000,
				   .csum_seed = 0x5eed };
	struct bdev *bd;

	bd = t_dev_mem(bytes, bs);
	t_ok(mfs_mkfs(bd, &o));
	return bd;
}

struct mfs_fs *tf_mount_opts(struct bdev *bd, const struct mfs_mount_opts *o)
{
	struct mfs_fs *fs;

	t_ok(mfs_mount(bd, o, &fs));
	return fs;
}

struct mfs_fs *tf_mount(struct bdev *bd)
{
	struct mfs_mount_opts o = { .cache_bytes = 4u << 20 };

	return tf_mount_opts(bd, &o);
}

void tf_unmount_check(struct mfs_fs *fs, struct bdev *bd)
{
	t_ok(mfs_unmount(fs));
	tf_check(bd, true);
}

/* ---- the image check ----------------------------------------------------- */

struct chk {
	struct mfs_raw raw;
	uint8_t *used;               /* blocks referenced, one byte each */
	uint64_t nused;              /* how many */
	uint32_t *links;             /* entries naming each inode */
	uint8_t *inuse;              /* inode bitmap bits */
	uint64_t nblocks;
	uint32_t ninodes;
	uint32_t cur;                /* inode being walked */
};

static void mark(struct chk *c, uint64_t blk, const char *what)
{
	t_assert(blk < c->nblocks, "%s: block %" PRIu64 " out of range", what, blk);
	t_assert(!c->used[blk], "%s: block %" PRIu64 " (inode %" PRIu32 ") used twice",
		 what, blk, c->cur);
	c->used[blk] = 1;
	c->nused++;
}

static int walk_data(void *ctx, uint64_t lblk, uint64_t pblk)
{
	(void)lblk;
	mark(ctx, pblk, "data");
	return 0;
}

static int walk_ind(void *ctx, uint64_t blk, int depth)
{
	(void)depth;
	mark(ctx, blk, "indirect");
	return 0;
}

static void mark_meta(struct chk *c)
{
	uint32_t groups = le32toh(c->raw.sb.s_groups_count);

	for (uint32_t g = 0; g < groups; g++) {
		uint64_t first = mfs_group_first_block(&c->raw.sb, g);

		for (uint32_t i = 0; i < mfs_group_meta_blocks(&c->raw.sb, g); i++)
			mark(c, first + i, "group metadata");
	}
	for (uint32_t b = 0; b < le32toh(c->raw.sb.s_first_data_block); b++)
		mark(c, b, "boot");
	if (c->raw.sb.s_region_count)
		mark(c, le64toh(c->raw.sb.s_region_table), "region table");
}

static void check_dir_block(struct chk *c, uint32_t ino, const uint8_t *blk,
			    uint64_t lblk, uint32_t *subdirs)
{
	char why[256];
	uint32_t end = c->raw.bs - MFS_DIR_TAIL_SIZE;

	t_assert(!mfs_dirblock_check(&c->raw.sb, ino, blk, why, sizeof(why)),
		 "directory %" PRIu32 " block %" PRIu64 ": %s", ino, lblk, why);
	for (uint32_t off = 0; off < end;) {
		const struct mfs_dirent *de = (const void *)(blk + off);
		uint32_t child = le32toh(de->inode);

		off += le16toh(de->rec_len);
		if (!child)
			continue;
		if (de->name_len == 1 && de->name[0] == '.') {
			t_eq(child, ino);
			continue;
		}
		if (de->name_len == 2 && !memcmp(de->name, "..", 2))
			continue;
		c->links[child]++;
		if (de->file_type == MFS_FT_DIR)
			(*subdirs)++;
	}
}

static void check_dir(struct chk *c, uint32_t ino, const struct mfs_inode *in)
{
	uint8_t *blk = bdev_alloc_buf(c->raw.bs);
	uint64_t n = le64toh(in->i_size) / c->raw.bs;
	uint32_t subdirs = 0;

	for (uint64_t b = 0; b < n; b++) {
		uint64_t p;

		t_ok(mfs_raw_bmap(&c->raw, ino, in, b, &p));
		t_assert(p, "directory %" PRIu32 " has a hole at %" PRIu64, ino, b);
		t_ok(mfs_raw_read(&c->raw, p, blk));
		check_dir_block(c, ino, blk, b, &subdirs);
	}
	t_eq(le16toh(in->i_links_count), 2 + subdirs);
	bdev_free_buf(blk);
}

/* The xattr block is the inode's too: counted in i_blocks, checked. */
static void check_xattr_block(struct chk *c, uint32_t ino, const struct mfs_inode *in)
{
	uint64_t blk = le32toh(in->i_xattr_block);
	uint8_t *buf;
	char why[160];

	if (!blk)
		return;
	mark(c, blk, "xattr");
	buf = bdev_alloc_buf(c->raw.bs);
	t_assert(buf, "no memory");
	t_ok(mfs_raw_read(&c->raw, blk, buf));
	t_assert(!mfs_xattr_block_check(&c->raw.sb, blk, buf, why, sizeof(why)),
		 "inode %" PRIu32 ": %s", ino, why);
	bdev_free_buf(buf);
}

static void check_inode(struct chk *c, uint32_t ino, uint64_t *dirs)
{
	struct mfs_inode in;
	struct mfs_bmap_walk w;
	uint64_t before = 0, after = 0;

	t_ok(mfs_raw_inode(&c->raw, ino, &in));
	t_assert(in.i_links_count, "inode %" PRIu32 " in use with no links", ino);
	c->cur = ino;
	before = c->nused;
	mfs_raw_bmap_walk_init(&c->raw, ino, &in, &w);
	w.data = walk_data;
	w.indirect = walk_ind;
	w.ctx = c;
	t_ok(mfs_bmap_walk(&w, 0, UINT64_MAX));
	check_xattr_block(c, ino, &in);
	after = c->nused;
	t_eq((after - before) * (c->raw.bs / 512), le64toh(in.i_blocks));
	if (S_ISDIR(le16toh(in.i_mode))) {
		(*dirs)++;
		check_dir(c, ino, &in);
	}
}

static void check_bitmaps(struct chk *c, uint64_t *free_b, uint64_t *free_i)
{
	uint32_t groups = le32toh(c->raw.sb.s_groups_count);
	uint32_t ipg = le32toh(c->raw.sb.s_inodes_per_group);
	uint8_t *map = bdev_alloc_buf(c->raw.bs);

	for (uint32_t g = 0; g < groups; g++) {
		const struct mfs_group_desc *gd;
		uint64_t first = mfs_group_first_block(&c->raw.sb, g);
		uint32_t n = mfs_group_nblocks(&c->raw.sb, g), fb = 0, fi = 0;

		t_ok(mfs_raw_gdesc(&c->raw, g, &gd));
		t_ok(mfs_raw_read(&c->raw, le32toh(gd->bg_block_bitmap), map));
		t_eq(mfs_bitmap_csum(&c->raw.sb, MFS_CSUM_BBITMAP, g, map),
		     le32toh(gd->bg_block_bitmap_csum));
		for (uint32_t i = 0; i < n; i++) {
			bool set = map[i / 8] >> (i % 8) & 1;

			t_assert(set == c->used[first + i], "block %" PRIu64 ": bitmap %d,"
				 " referenced %d", first + i, set, c->used[first + i]);
			fb += !set;
		}
		t_eq(fb, le32toh(gd->bg_free_blocks_count));
		*free_b += fb;
		t_ok(mfs_raw_read(&c->raw, le32toh(gd->bg_inode_bitmap), map));
		t_eq(mfs_bitmap_csum(&c->raw.sb, MFS_CSUM_IBITMAP, g, map),
		     le32toh(gd->bg_inode_bitmap_csum));
		for (uint32_t i = 0; i < ipg; i++) {
			c->inuse[g * ipg + i + 1] = map[i / 8] >> (i % 8) & 1;
			fi += !c->inuse[g * ipg + i + 1];
		}
		t_eq(fi, le32toh(gd->bg_free_inodes_count));
		*free_i += fi;
	}
	bdev_free_buf(map);
}

static void check_links(struct chk *c)
{
	struct mfs_inode in;

	for (uint32_t ino = MFS_FIRST_INO; ino <= c->ninodes; ino++) {
		if (!c->inuse[ino]) {
			t_assert(!c->links[ino], "free inode %" PRIu32 " is named", ino);
			continue;
		}
		t_ok(mfs_raw_inode(&c->raw, ino, &in));
		if (!S_ISDIR(le16toh(in.i_mode)))
			t_assert(le16toh(in.i_links_count) == c->links[ino],
				 "inode %" PRIu32 ": %u links, %u entries", ino,
				 le16toh(in.i_links_count), c->links[ino]);
		else
			t_assert(c->links[ino] == 1, "directory %" PRIu32 " named %u "
				 "times", ino, c->links[ino]);
	}
}

static enum fsck_answer fsck_report(void *arg, const struct fsck_report *r)
{
	(void)arg;
	fprintf(stderr, "fsck: [%s] %s\n", r->code, r->message);
	return r->proposed;
}

/* fsck -fn on the image: nothing to report. */
static void fsck_clean(struct bdev *bd)
{
	struct fsck_opts o = { .mode = FSCK_NO, .force = true, .problem = fsck_report };
	struct fsck_result r;

	t_assert(fsck_run(bd, &o, &r) == 0, "fsck -fn: exit status %d, %" PRIu64
		 " problems", r.exit, r.problems);
}

void tf_check(struct bdev *bd, bool clean)
{
	struct chk c = { 0 };
	uint64_t free_b = 0, free_i = 0, dirs = 0;

	t_ok(mfs_raw_open(bd, &c.raw));
	c.nblocks = le64toh(c.raw.sb.s_blocks_count);
	c.ninodes = le32toh(c.raw.sb.s_inodes_count);
	c.used = calloc(c.nblocks, 1);
	c.links = calloc(c.ninodes + 1, sizeof(*c.links));
	c.inuse = calloc(c.ninodes + 1, 1);
	t_assert(c.used && c.links && c.inuse, "no memory");
	mark_meta(&c);
	/* The inode bitmaps first: they say which inodes to walk. */
	for (uint32_t g = 0; g < le32toh(c.raw.sb.s_groups_count); g++) {
		const struct mfs_group_desc *gd;
		uint8_t *map = bdev_alloc_buf(c.raw.bs);
		uint32_t ipg = le32toh(c.raw.sb.s_inodes_per_group);

		t_ok(mfs_raw_gdesc(&c.raw, g, &gd));
		t_ok(mfs_raw_read(&c.raw, le32toh(gd->bg_inode_bitmap), map));
		for (uint32_t i = 0; i < ipg; i++)
			c.inuse[g * ipg + i + 1] = map[i / 8] >> (i % 8) & 1;
		bdev_free_buf(map);
	}
	c.links[MFS_ROOT_INO] = 1;   /* the root names itself */
	for (uint32_t ino = 1; ino <= c.ninodes; ino++)
		if (c.inuse[ino] && (ino == MFS_ROOT_INO || ino == MFS_JOURNAL_INO ||
				     ino >= MFS_FIRST_INO))
			check_inode(&c, ino, &dirs);
	check_bitmaps(&c, &free_b, &free_i);
	check_links(&c);
	if (clean) {
		t_eq(le64toh(c.raw.sb.s_free_blocks_count), free_b);
		t_eq(le32toh(c.raw.sb.s_free_inodes_count), free_i);
		t_assert(le16toh(c.raw.sb.s_state) & MFS_STATE_VALID, "not marked clean");
		t_assert(!(le32toh(c.raw.sb.s_feature_incompat) & MFS_FEATURE_INCOMPAT_RECOVER),
			 "still needs recovery");
		t_eq(le32toh(c.raw.sb.s_last_orphan), 0);
	}
	mfs_raw_close(&c.raw);
	free(c.used);
	free(c.links);
	free(c.inuse);
	fsck_clean(bd);
}

/* ---- file helpers -------------------------------------------------------- */

uint64_t tf_ino(struct mfs_fs *fs, const char *path)
{
	char buf[1024], *save, *part;
	uint64_t ino = MFS_ROOT_INO;
	struct stat st;

	snprintf(buf, sizeof(buf), "%s", path);
	for (part = strtok_r(buf, "/", &save); part; part = strtok_r(NULL, "/", &save)) {
		t_ok(mfs_lookup(fs, &tf_root, ino, part, &st, NULL));
		mfs_forget(fs, st.st_ino, 1);
		ino = st.st_ino;
	}
	return ino;
}

uint8_t tf_pattern(uint64_t pos, unsigned seed)
{
	uint64_t x = (pos + 1) * 0x9E3779B97F4A7C15ull ^ seed;

	return (uint8_t)(x >> 29);
}

void tf_write(struct mfs_fs *fs, uint64_t ino, uint64_t off, size_t len, unsigned seed)
{
	struct mfs_file *f;
	uint8_t *buf = malloc(len ? len : 1);

	t_assert(buf, "no memory");
	for (size_t i = 0; i < len; i++)
		buf[i] = tf_pattern(off + i, seed);
	t_ok(mfs_open(fs, &tf_root, ino, O_RDWR, &f));
	t_eq(mfs_write(fs, &tf_root, f, buf, len, off, 0), (ssize_t)len);
	t_ok(mfs_release(fs, f));
	free(buf);
}

void tf_verify(struct mfs_fs *fs, uint64_t ino, uint64_t off, size_t len, unsigned seed)
{
	struct mfs_file *f;
	uint8_t *buf = malloc(len ? len : 1);

	t_assert(buf, "no memory");
	t_ok(mfs_open(fs, &tf_root, ino, O_RDONLY, &f));
	t_eq(mfs_read(fs, f, buf, len, off), (ssize_t)len);
	for (size_t i = 0; i < len; i++)
		t_assert(buf[i] == tf_pattern(off + i, seed), "inode %" PRIu64
			 " byte %" PRIu64 ": %u, expected %u", ino, off + i, buf[i],
			 tf_pattern(off + i, seed));
	t_ok(mfs_release(fs, f));
	free(buf);
}

struct names {
	char *buf;
	size_t size, len;
	char *v[4096];
	unsigned n;
};

static int collect(void *ctx, const char *name, size_t len, uint64_t ino,
		   unsigned type, uint64_t next, const struct stat *st, uint64_t gen)
{
	struct names *nm = ctx;

	(void)ino; (void)type; (void)next; (void)st; (void)gen;
	t_assert(nm->n < 4096, "too many names");
	nm->v[nm->n] = strndup(name, len);
	nm->n++;
	return 0;
}

static int cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

void tf_list(struct mfs_fs *fs, uint64_t dir, char *buf, size_t size)
{
	struct names *nm = calloc(1, sizeof(*nm));
	struct mfs_dir *d;
	size_t len = 0;

	t_ok(mfs_opendir(fs, &tf_root, dir, &d));
	t_ok(mfs_readdir(fs, d, 0, false, collect, nm));
	t_ok(mfs_releasedir(fs, d));
	qsort(nm->v, nm->n, sizeof(char *), cmp);
	buf[0] = 0;
	for (unsigned i = 0; i < nm->n; i++) {
		len += (size_t)snprintf(buf + UT_MIN(len, size), size - UT_MIN(len, size),
					"%s%s", i ? "\n" : "", nm->v[i]);
		free(nm->v[i]);
	}
	free(nm);
}
