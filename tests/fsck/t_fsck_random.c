/*
 * t_fsck_random - random damage to the metadata of populated images.
 *
 * One image is populated through the filesystem (directories, small,
 * large and sparse files, symbolic links, hard links, special files,
 * xattrs in the inode and in a block, a region).  Its metadata blocks are
 * listed with what each is: superblocks, descriptors, bitmaps, the
 * inode-table blocks in use, directory, indirect and xattr blocks, the
 * region table and the journal's superblock.  For each seed a copy is
 * damaged in one of three ways, by seed % 3 (see "damage" below): random
 * bytes over one to a few of those blocks; one field of one structure set
 * to an extreme, its checksum resealed; two blocks of different kinds
 * swapped.  Then
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
 * [COUNT]] [CASE...] (default: seeds 0..549, every case: fsck_repairs,
 * fsck_regressions, mount_survives, mount_regressions); with --save DIR
 * first, the damaged images are only written to DIR/dmg-SEED.img, for
 * t_damage_mount.sh to mount through the daemon, and a line per image
 * says what its damage is.
 *
 * The cases fsck_regressions and mount_regressions run fsck_repairs and
 * mount_survives on the seeds in regression_seeds[] whatever FIRST and
 * COUNT say: seeds beyond the default range that once failed one of them.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "bdev_test.h"
#include "fsck.h"
#include "jnl.h"
#include "t_dev.h"
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

/* What a metadata block is, for the damage that reseals what it changes. */
enum mkind {
	MK_SUPER,       /* id: the group holding the copy */
	MK_GDT,         /* id: the block's index in its descriptor table */
	MK_BBITMAP,     /* id: the group */
	MK_IBITMAP,     /* id: the group */
	MK_ITABLE,      /* id: the block's first inode */
	MK_DIR,         /* id: the directory's inode */
	MK_IND,         /* id: the inode whose map holds it */
	MK_XATTR,       /* id: the inode naming it */
	MK_REGION,      /* id: 0 */
	MK_JSUPER,      /* id: 0 */
};

static const char *const mkind_name[] = {
	"superblock", "descriptor block", "block bitmap", "inode bitmap",
	"inode-table block", "directory block", "indirect block", "xattr block",
	"region table", "journal superblock",
};

struct mblk {
	uint64_t blk;
	uint32_t id;
	enum mkind kind;
};

struct meta {
	struct mblk *b;
	size_t n, cap;
	struct mfs_super sb;            /* the undamaged primary superblock */
	uint32_t inos[512];             /* the inodes in use */
	size_t ninos;
	struct fmt_raw *raw;
	uint32_t ino;                   /* whose block map is being walked */
};

static void add(struct meta *m, uint64_t blk, enum mkind kind, uint32_t id)
{
	if (m->n == m->cap) {
		m->cap = m->cap ? 2 * m->cap : 256;
		m->b = realloc(m->b, m->cap * sizeof(*m->b));
		t_assert(m->b, "no memory");
	}
	m->b[m->n++] = (struct mblk){ .blk = blk, .id = id, .kind = kind };
}

static int add_ind(void *arg, uint64_t blk, int depth)
{
	struct meta *m = arg;

	(void)depth;
	add(m, blk, MK_IND, m->ino);
	return 0;
}

static int add_data(void *arg, uint64_t lblk, uint64_t blk)
{
	struct meta *m = arg;

	(void)lblk;
	add(m, blk, MK_DIR, m->ino);
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
	struct fmt_bmap_walk w;

	fmt_raw_bmap_walk_init(m->raw, ino, in, &w);
	w.indirect = add_ind;
	w.data = S_ISDIR(le16toh(in->i_mode)) ? add_data : skip_data;
	w.ctx = m;
	m->ino = ino;
	/* The journal: its superblock only (the log is empty). */
	if (ino == MFS_JOURNAL_INO) {
		uint64_t jsb;

		t_ok(fmt_raw_bmap(m->raw, ino, in, 0, &jsb));
		add(m, jsb, MK_JSUPER, 0);
		return;
	}
	t_ok(fmt_bmap_walk(&w, 0, UINT64_MAX));
	if (in->i_xattr_block)
		add(m, le32toh(in->i_xattr_block), MK_XATTR, ino);
}

static void list_meta(struct bdev *bd, struct meta *m)
{
	struct fmt_raw raw;
	uint32_t ipb = BS / MFS_INODE_SIZE, last_used = 0;

	t_ok(fmt_raw_open(bd, &raw));
	m->raw = &raw;
	m->sb = raw.sb;
	for (uint32_t ino = 1; ino <= le32toh(raw.sb.s_inodes_count); ino++) {
		struct mfs_inode in;

		t_ok(fmt_raw_inode(&raw, ino, &in));
		if (!in.i_mode || in.i_dtime)
			continue;
		last_used = ino;
		if (m->ninos < UT_ARRAY_SIZE(m->inos))
			m->inos[m->ninos++] = ino;
		list_inode(m, ino, &in);
	}
	for (uint32_t g = 0; g < le32toh(raw.sb.s_groups_count); g++) {
		const struct mfs_group_desc *gd = &raw.gdt[g];
		uint64_t first = fmt_group_first_block(&raw.sb, g);
		uint32_t meta = fmt_group_meta_blocks(&raw.sb, g) - fmt_itable_blocks(&raw.sb);
		uint32_t ipg = le32toh(raw.sb.s_inodes_per_group);

		for (uint32_t i = 0; i < meta; i++) {
			uint64_t blk = first + i;

			if (blk == le32toh(gd->bg_block_bitmap))
				add(m, blk, MK_BBITMAP, g);
			else if (blk == le32toh(gd->bg_inode_bitmap))
				add(m, blk, MK_IBITMAP, g);
			else if (i == 0 && fmt_group_has_super(g))
				add(m, blk, MK_SUPER, g);
			else
				add(m, blk, MK_GDT, i - 1);
		}
		/* The inode-table blocks up to the last inode in use. */
		for (uint32_t i = 0; g * ipg + i * ipb < last_used && i * ipb < ipg; i++)
			add(m, first + meta + i, MK_ITABLE, g * ipg + i * ipb + 1);
	}
	if (raw.sb.s_region_count)
		add(m, le64toh(raw.sb.s_region_table), MK_REGION, 0);
	fmt_raw_close(&raw);
	m->raw = NULL;
}

/* ---- damage ------------------------------------------------------------------ */

/*
 * The seed picks one of three kinds of damage (seed % 3):
 *
 *   0  random bytes over one to a few metadata blocks: a few bytes, a run,
 *      or a whole block, checksums left as they fall;
 *   1  one field of one structure set to an extreme: 0, 1, all ones, the
 *      last value allowed or the first one past it (a block number, an
 *      inode number, a count, a length), or for a block or inode number
 *      another metadata block or an inode in use; the structure's
 *      checksum resealed, so the value reaches the checks behind it;
 *   2  two metadata blocks of different kinds swapped, each resealed as
 *      what its new place holds (three seeds in four) or not.
 *
 * what[] says what was done, for the messages.
 */
static char what[256];

static uint64_t rng(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static void damage_bytes(uint8_t *img, const struct meta *m, uint64_t *s)
{
	unsigned int blocks = 1 + rng(s) % 3;
	int len = snprintf(what, sizeof(what), "random bytes in block");

	for (unsigned int k = 0; k < blocks; k++) {
		const struct mblk *mb = &m->b[rng(s) % m->n];
		uint8_t *b = img + mb->blk * BS;
		unsigned int how = rng(s) % 8, off = rng(s) % BS;

		if (len < (int)sizeof(what))
			len += snprintf(what + len, sizeof(what) - (size_t)len, " %" PRIu64
					" (%s)", mb->blk, mkind_name[mb->kind]);
		if (how < 5) {                         /* a few bytes */
			for (unsigned int i = 0, n = 1 + rng(s) % 4; i < n; i++)
				b[rng(s) % BS] = (uint8_t)rng(s);
		} else if (how < 7) {                  /* a run */
			for (unsigned int i = off; i < UT_MIN(BS, off + 64); i++)
				b[i] = (uint8_t)rng(s);
		} else {                               /* the whole block */
			for (unsigned int i = 0; i < BS; i++)
				b[i] = (uint8_t)rng(s);
		}
	}
}

/* A metadata block: its kind first, each kind alike, so that the few
 * blocks of a kind (the superblocks, the region table) are hit as often as
 * the many (the inode-table blocks); then a block of that kind. */
static const struct mblk *pick(const struct meta *m, uint64_t *s)
{
	unsigned int kinds[MK_JSUPER + 1] = { 0 }, present = 0, k, nth;

	for (size_t i = 0; i < m->n; i++)
		present += !kinds[m->b[i].kind]++;
	nth = (unsigned int)(rng(s) % present);
	for (k = 0; !kinds[k] || nth--; k++)
		;
	nth = (unsigned int)(rng(s) % kinds[k]);
	for (size_t i = 0; i < m->n; i++)
		if (m->b[i].kind == k && !nth--)
			return &m->b[i];
	return NULL;
}

static void put_le(uint8_t *p, unsigned int size, uint64_t v)
{
	for (unsigned int i = 0; i < size; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

/* Reseal the block at @mb's place as what that place holds. */
static void reseal(uint8_t *img, const struct meta *m, const struct mblk *mb)
{
	const struct mfs_super *sb = &m->sb;
	uint8_t *b = img + mb->blk * BS;

	switch (mb->kind) {
	case MK_SUPER:
		fmt_sb_set_csum((struct mfs_super *)b);
		break;
	case MK_GDT:
		for (uint32_t i = 0; i < BS / MFS_DESC_SIZE; i++) {
			struct mfs_group_desc *gd = (void *)(b + i * MFS_DESC_SIZE);
			uint32_t g = mb->id * (BS / MFS_DESC_SIZE) + i;

			if (g < le32toh(sb->s_groups_count))
				gd->bg_checksum = htole32(fmt_gdesc_csum(sb, g, gd));
		}
		break;
	case MK_BBITMAP:
	case MK_IBITMAP: {
		/* The bitmap's checksum is in the primary descriptor. */
		uint32_t off, g = mb->id;
		uint64_t blk = fmt_gdesc_block(sb, g, &off);
		struct mfs_group_desc *gd = (void *)(img + blk * BS + off);
		uint32_t c = fmt_bitmap_csum(sb, mb->kind == MK_BBITMAP ? MFS_CSUM_BBITMAP :
					     MFS_CSUM_IBITMAP, g, b);

		if (mb->kind == MK_BBITMAP)
			gd->bg_block_bitmap_csum = htole32(c);
		else
			gd->bg_inode_bitmap_csum = htole32(c);
		gd->bg_checksum = htole32(fmt_gdesc_csum(sb, g, gd));
		break;
	}
	case MK_ITABLE:
		for (uint32_t i = 0; i < BS / MFS_INODE_SIZE; i++) {
			struct mfs_inode *in = (void *)(b + i * MFS_INODE_SIZE);

			if (!fmt_inode_never_used(in))
				in->i_checksum = htole32(fmt_inode_csum(sb, mb->id + i, in));
		}
		break;
	case MK_DIR:
		fmt_block_set_csum(sb, MFS_CSUM_DIR, mb->id, b);
		break;
	case MK_IND:
		fmt_block_set_csum(sb, MFS_CSUM_INDIRECT, mb->id, b);
		break;
	case MK_XATTR:
		fmt_block_set_csum(sb, MFS_CSUM_XATTR, mb->blk, b);
		break;
	case MK_REGION:
		fmt_block_set_csum(sb, MFS_CSUM_REGION, 0, b);
		break;
	case MK_JSUPER: {
		struct jnl_superblock *j = (void *)b;

		j->s_checksum = htole32(jnl_csum(0, j, offsetof(struct jnl_superblock,
								 s_checksum)));
		break;
	}
	}
}

/* One field of a structure, where a damaging value may go. */
struct field {
	char name[48];
	uint32_t off;                   /* in the block */
	uint8_t size;                   /* bytes */
	uint64_t lim;                   /* the first value past what is allowed; 0: none */
	enum { V_PLAIN, V_BLOCK, V_INODE } also; /* another metadata block or inode */
};

struct fields {
	struct field f[48];
	unsigned int n;
};

static void fld(struct fields *fs, uint32_t base, uint32_t off, uint8_t size, uint64_t lim,
		int also, const char *fmt, ...) __attribute__((format(printf, 7, 8)));

static void fld(struct fields *fs, uint32_t base, uint32_t off, uint8_t size, uint64_t lim,
		int also, const char *fmt, ...)
{
	struct field *f = &fs->f[fs->n++];
	va_list ap;

	t_assert(fs->n <= UT_ARRAY_SIZE(fs->f), "too many fields");
	va_start(ap, fmt);
	vsnprintf(f->name, sizeof(f->name), fmt, ap);
	va_end(ap);
	f->off = base + off;
	f->size = size;
	f->lim = lim;
	f->also = also;
}

#define FLD(fs, base, type, member, lim, also)                               \
	fld(fs, base, offsetof(type, member), sizeof(((type *)0)->member), lim, also, \
	    "%s", #member)

/* A field of the structure at offset 0, base or r in the block. */
#define SB(m, lim, also) FLD(fs, 0, struct mfs_super, m, lim, also)
#define GD(m, lim, also) FLD(fs, base, struct mfs_group_desc, m, lim, also)
#define IN(m, lim, also) FLD(fs, base, struct mfs_inode, m, lim, also)
#define DE(m, lim, also) FLD(fs, r, struct mfs_dirent, m, lim, also)
#define XH(m, lim, also) FLD(fs, 0, struct mfs_xattr_header, m, lim, also)
#define RH(m, lim, also) FLD(fs, 0, struct mfs_region_header, m, lim, also)
#define JS(m, lim, also) FLD(fs, 0, struct jnl_superblock, m, lim, also)

/* The fields of the structures of @mb's block worth an extreme value;
 * @where is set to the structure's name. */
static void fields_of(const uint8_t *img, const struct meta *m, const struct mblk *mb,
		      uint64_t *s, struct fields *fs, char *where, size_t wlen)
{
	const struct mfs_super *sb = &m->sb;
	const uint8_t *b = img + mb->blk * BS;
	uint64_t blocks = le64toh(sb->s_blocks_count), dev = le64toh(sb->s_device_blocks);
	uint32_t inodes = le32toh(sb->s_inodes_count), ipg = le32toh(sb->s_inodes_per_group);

	fs->n = 0;
	switch (mb->kind) {
	case MK_SUPER:
		snprintf(where, wlen, "superblock of group %" PRIu32, mb->id);
		SB(s_magic, 0, V_PLAIN);
		SB(s_rev_level, MFS_REV_LEVEL + 1, V_PLAIN);
		SB(s_feature_compat, MFS_FEATURE_COMPAT_SUPP + 1, V_PLAIN);
		SB(s_feature_incompat, MFS_FEATURE_INCOMPAT_SUPP + 1, V_PLAIN);
		SB(s_feature_ro_compat, MFS_FEATURE_RO_COMPAT_SUPP + 1, V_PLAIN);
		SB(s_log_block_size, MFS_MAX_BLOCK_LOG - MFS_MIN_BLOCK_LOG + 1, V_PLAIN);
		SB(s_blocks_count, dev + 1, V_PLAIN);
		SB(s_free_blocks_count, blocks + 1, V_PLAIN);
		SB(s_r_blocks_count, blocks + 1, V_PLAIN);
		SB(s_inodes_count, inodes + 1, V_PLAIN);
		SB(s_free_inodes_count, inodes + 1, V_PLAIN);
		SB(s_first_data_block, 2, V_PLAIN);
		SB(s_blocks_per_group, BS * 8 + 1, V_PLAIN);
		SB(s_inodes_per_group, BS * 8 + 1, V_PLAIN);
		SB(s_groups_count, le32toh(sb->s_groups_count) + 1, V_PLAIN);
		SB(s_inode_size, MFS_INODE_SIZE + 1, V_PLAIN);
		SB(s_desc_size, MFS_DESC_SIZE + 1, V_PLAIN);
		SB(s_state, 4, V_PLAIN);
		SB(s_errors, MFS_ERRORS_RO + 1, V_PLAIN);
		SB(s_gdt_blocks, le16toh(sb->s_gdt_blocks) + 1, V_PLAIN);
		SB(s_first_ino, inodes + 1, V_INODE);
		SB(s_journal_inum, inodes + 1, V_INODE);
		SB(s_journal_blocks, le32toh(sb->s_journal_blocks) + 1, V_PLAIN);
		SB(s_last_orphan, inodes + 1, V_INODE);
		SB(s_default_mount_opts, MFS_DEFM_DATA_MASK + 1, V_PLAIN);
		SB(s_region_count, le32toh(sb->s_region_count) + 1, V_PLAIN);
		SB(s_region_table, dev, V_BLOCK);
		SB(s_regions_start, dev + 1, V_BLOCK);
		SB(s_device_blocks, IMG_BYTES / BS + 1, V_PLAIN);
		break;
	case MK_GDT: {
		uint32_t per = BS / MFS_DESC_SIZE, first = mb->id * per;
		uint32_t n = le32toh(sb->s_groups_count) - first, g = first + rng(s) % n;
		uint32_t base = (g - first) * MFS_DESC_SIZE;

		snprintf(where, wlen, "descriptor of group %" PRIu32 " in block %" PRIu64, g,
			 mb->blk);
		GD(bg_block_bitmap, blocks, V_BLOCK);
		GD(bg_inode_bitmap, blocks, V_BLOCK);
		GD(bg_inode_table, blocks, V_BLOCK);
		GD(bg_free_blocks_count, fmt_group_nblocks(sb, g) + 1, V_PLAIN);
		GD(bg_free_inodes_count, ipg + 1, V_PLAIN);
		GD(bg_used_dirs_count, ipg + 1, V_PLAIN);
		GD(bg_flags, 1, V_PLAIN);
		break;
	}
	case MK_BBITMAP:
	case MK_IBITMAP: {
		/* A byte, or (as a field of BS bytes) the whole bitmap. */
		uint32_t off = (uint32_t)(rng(s) % BS);

		snprintf(where, wlen, "%s of group %" PRIu32, mkind_name[mb->kind], mb->id);
		fld(fs, 0, off, 1, 0, V_PLAIN, "byte %" PRIu32, off);
		fld(fs, 0, 0, 0, 0, V_PLAIN, "every byte");
		break;
	}
	case MK_ITABLE: {
		uint32_t ipb = BS / MFS_INODE_SIZE, i = (uint32_t)(rng(s) % ipb), base;
		const struct mfs_inode *in;

		/* An inode in use, if the block has one. */
		for (uint32_t k = 0; k < ipb; k++) {
			in = (const void *)(b + ((i + k) % ipb) * MFS_INODE_SIZE);
			if (in->i_mode) {
				i = (i + k) % ipb;
				break;
			}
		}
		base = i * MFS_INODE_SIZE;
		in = (const void *)(b + base);
		snprintf(where, wlen, "inode %" PRIu32 " (mode 0%o)", mb->id + i,
			 le16toh(in->i_mode));
		IN(i_mode, 0170000, V_PLAIN);
		IN(i_links_count, MFS_LINK_MAX + 1, V_PLAIN);
		IN(i_uid, 0, V_PLAIN);
		IN(i_flags, MFS_USER_FL_MASK + 1, V_PLAIN);
		IN(i_size, fmt_max_file_size(BS) + 1, V_PLAIN);
		IN(i_blocks, 2 * blocks + 1, V_PLAIN);
		IN(i_mtime_nsec, 1000000000, V_PLAIN);
		IN(i_xattr_block, blocks, V_BLOCK);
		IN(i_next_orphan, inodes + 1, V_INODE);
		IN(i_dtime, 0, V_PLAIN);
		IN(i_rdev, 0, V_PLAIN);
		for (int k = 0; k < MFS_N_BLOCKS; k++)
			fld(fs, base, offsetof(struct mfs_inode, i_block) + 4 * (uint32_t)k, 4,
			    blocks, V_BLOCK, "i_block[%d]", k);
		/* The first in-inode xattr entry's index, name length, value size. */
		fld(fs, base, offsetof(struct mfs_inode, i_xattr), 1, 8, V_PLAIN,
		    "i_xattr e_name_index");
		fld(fs, base, offsetof(struct mfs_inode, i_xattr) + 1, 1, 0, V_PLAIN,
		    "i_xattr e_name_len");
		fld(fs, base, offsetof(struct mfs_inode, i_xattr) + 2, 2,
		    MFS_INODE_XATTR_SIZE + 1, V_PLAIN, "i_xattr e_value_size");
		break;
	}
	case MK_DIR: {
		uint32_t recs[BS / MFS_DIRENT_HEADER], n = 0, off = 0, r;
		uint16_t rl;

		while (off + MFS_DIRENT_HEADER <= BS) {
			memcpy(&rl, b + off + 4, 2);
			recs[n++] = off;
			if (le16toh(rl) < MFS_DIRENT_HEADER)
				break;
			off += le16toh(rl);
		}
		r = recs[rng(s) % n];
		memcpy(&rl, b + r + 4, 2);
		snprintf(where, wlen, "entry at byte %" PRIu32 " of directory %" PRIu32
			 " (block %" PRIu64 ")", r, mb->id, mb->blk);
		DE(inode, inodes + 1, V_INODE);
		DE(rec_len, BS - r + 4, V_PLAIN);
		DE(name_len, le16toh(rl) - MFS_DIRENT_HEADER + 1u, V_PLAIN);
		DE(file_type, MFS_FT_MAX, V_PLAIN);
		break;
	}
	case MK_IND: {
		uint32_t apb = fmt_addr_per_block(BS), k = (uint32_t)(rng(s) % apb), p;

		/* Two times in three a pointer in use, if the block has one. */
		for (uint32_t j = 0, search = rng(s) % 3; search && j < apb; j++) {
			memcpy(&p, b + 4 * ((k + j) % apb), 4);
			if (p) {
				k = (k + j) % apb;
				break;
			}
		}
		snprintf(where, wlen, "indirect block %" PRIu64 " of inode %" PRIu32, mb->blk,
			 mb->id);
		fld(fs, 0, 4 * k, 4, blocks, V_BLOCK, "pointer %" PRIu32, k);
		break;
	}
	case MK_XATTR:
		snprintf(where, wlen, "xattr block %" PRIu64 " of inode %" PRIu32, mb->blk,
			 mb->id);
		XH(h_magic, 0, V_PLAIN);
		XH(h_refcount, 2, V_PLAIN);
		XH(h_used, BS - 20 + 1, V_PLAIN);
		XH(h_reserved, 0, V_PLAIN);
		fld(fs, 16, 0, 1, 8, V_PLAIN, "e_name_index");
		fld(fs, 16, 1, 1, 0, V_PLAIN, "e_name_len");
		fld(fs, 16, 2, 2, BS, V_PLAIN, "e_value_size");
		break;
	case MK_REGION: {
		struct mfs_region_header h;
		uint32_t k, base;

		memcpy(&h, b, sizeof(h));
		k = le32toh(h.rh_count) ? (uint32_t)(rng(s) % le32toh(h.rh_count)) : 0;
		base = MFS_REGION_HDR_SIZE + k * MFS_REGION_ENTRY_SIZE;
		snprintf(where, wlen, "region table (block %" PRIu64 ")", mb->blk);
		RH(rh_magic, 0, V_PLAIN);
		RH(rh_count, (BS - MFS_REGION_HDR_SIZE) / MFS_REGION_ENTRY_SIZE + 1, V_PLAIN);
		RH(rh_entry_size, MFS_REGION_ENTRY_SIZE + 1, V_PLAIN);
		fld(fs, base, offsetof(struct mfs_region_entry, re_start), 8, dev, V_BLOCK,
		    "entry %" PRIu32 " re_start", k);
		fld(fs, base, offsetof(struct mfs_region_entry, re_blocks), 8, dev, V_PLAIN,
		    "entry %" PRIu32 " re_blocks", k);
		fld(fs, base, offsetof(struct mfs_region_entry, re_bytes), 8, 0, V_PLAIN,
		    "entry %" PRIu32 " re_bytes", k);
		fld(fs, base, offsetof(struct mfs_region_entry, re_flags), 4, 1, V_PLAIN,
		    "entry %" PRIu32 " re_flags", k);
		fld(fs, base, 0, 1, 0, V_PLAIN, "entry %" PRIu32 " re_name[0]", k);
		break;
	}
	case MK_JSUPER: {
		struct jnl_superblock j;

		memcpy(&j, b, sizeof(j));
		snprintf(where, wlen, "journal superblock (block %" PRIu64 ")", mb->blk);
		JS(s_header.h_blocktype, JNL_BT_SUPERBLOCK + 1, V_PLAIN);
		JS(s_block_size, BS + 1, V_PLAIN);
		JS(s_maxlen, le32toh(j.s_maxlen) + 1, V_PLAIN);
		JS(s_first, le32toh(j.s_maxlen), V_PLAIN);
		JS(s_sequence, 0, V_PLAIN);
		JS(s_start, le32toh(j.s_maxlen), V_PLAIN);
		JS(s_errno, 0, V_PLAIN);
		JS(s_feature_incompat, 1, V_PLAIN);
		JS(s_max_trans_blocks, le32toh(j.s_maxlen) + 1, V_PLAIN);
		break;
	}
	}
}

static void damage_field(uint8_t *img, const struct meta *m, uint64_t *s)
{
	static struct fields fs;
	const struct mblk *mb = pick(m, s);
	const struct field *f;
	char where[96];
	uint64_t v, ones;
	unsigned int nv;

	fields_of(img, m, mb, s, &fs, where, sizeof(where));
	f = &fs.f[rng(s) % fs.n];
	if (!f->size) {                            /* a whole bitmap */
		v = rng(s) % 2 ? 0xff : 0;
		memset(img + mb->blk * BS, (int)v, BS);
		snprintf(what, sizeof(what), "%s: every byte 0x%02" PRIx64, where, v);
		reseal(img, m, mb);
		return;
	}
	ones = f->size == 8 ? UINT64_MAX : (1ull << (8 * f->size)) - 1;
	nv = f->also != V_PLAIN ? 6 : f->lim ? 5 : 3;
	switch (rng(s) % nv) {
	case 0: v = 0; break;
	case 1: v = 1; break;
	case 2: v = ones; break;
	case 3: v = f->lim - 1; break;              /* the last value allowed */
	case 4: v = f->lim; break;                  /* the first past it */
	default:
		if (f->also == V_BLOCK)
			v = m->b[rng(s) % m->n].blk;
		else
			v = m->inos[rng(s) % m->ninos];
		break;
	}
	v &= ones;
	put_le(img + mb->blk * BS + f->off, f->size, v);
	snprintf(what, sizeof(what), "%s: %s = %" PRIu64 " (0x%" PRIx64 ")", where, f->name,
		 v, v);
	reseal(img, m, mb);
}

static void damage_swap(uint8_t *img, const struct meta *m, uint64_t *s)
{
	const struct mblk *a = pick(m, s), *b = a, *first, *second;
	static uint8_t tmp[BS];
	bool resealed = rng(s) % 4 != 0;

	while (b->kind == a->kind)
		b = pick(m, s);
	memcpy(tmp, img + a->blk * BS, BS);
	memcpy(img + a->blk * BS, img + b->blk * BS, BS);
	memcpy(img + b->blk * BS, tmp, BS);
	snprintf(what, sizeof(what), "blocks %" PRIu64 " (%s) and %" PRIu64 " (%s) swapped%s",
		 a->blk, mkind_name[a->kind], b->blk, mkind_name[b->kind],
		 resealed ? ", resealed" : "");
	if (!resealed)
		return;
	/* A bitmap's checksum is in a descriptor: reseal the descriptors first. */
	first = b->kind == MK_BBITMAP || b->kind == MK_IBITMAP ? a : b;
	second = first == a ? b : a;
	reseal(img, m, first);
	reseal(img, m, second);
}

static void damage(uint8_t *img, const struct meta *m, uint64_t seed)
{
	uint64_t s = seed * 0x9E3779B97F4A7C15ull + 1;

	switch (seed % 3) {
	case 0: damage_bytes(img, m, &s); break;
	case 1: damage_field(img, m, &s); break;
	default: damage_swap(img, m, &s); break;
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

	t_assert(!memcmp(bdev_mem_data(bd), img, IMG_BYTES), "seed %" PRIu64 " (%s): fsck -n "
		 "wrote to the image", seed, what);
	t_assert(e1 == 0 || e1 == 4 || e1 == 8, "seed %" PRIu64 " (%s): fsck -n exit %d", seed,
		 what, e1);
	e2 = run_fsck(bd, FSCK_YES, &n2);
	e3 = run_fsck(bd, FSCK_NO, &n3);
	/* No superblock at all is the one thing that cannot be repaired. */
	if (e1 != 8 || e2 != 8)
		t_assert(e3 == 0, "seed %" PRIu64 " (%s): after fsck -y (exit %d, %u "
			 "problems) fsck -n exits %d with %u problems", seed, what, e2, n2,
			 e3, n3);
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
	case EPERM:     /* damaged i_flags: immutable or append-only */
		return true;
	default:
		return false;
	}
}

/* An error of a damaged image, and damage named in the log (@err is
 * evaluated once: it may be the call). */
#define ALLOWED(seed, op, err) do {                                        \
	long r_ = (long)(err);                                                \
	int e_ = r_ < 0 ? (int)r_ : 0;                                        \
	t_assert(!e_ || damage_error(e_), "seed %" PRIu64 " (%s): %s: %s",    \
		 seed, what, op, strerror(-e_));                              \
	t_assert((e_ != -EUCLEAN && e_ != -EIO) || logged, "seed %" PRIu64   \
		 " (%s): %s: %s with nothing in the log", seed, what, op,     \
		 strerror(-e_));                                              \
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

struct names {
	char name[64][MFS_NAME_LEN + 1];
	bool dir[64];
	unsigned int n;
};

static int collect_name(void *ctx, const char *name, size_t len, uint64_t ino,
			unsigned type, uint64_t next, const struct stat *st, uint64_t gen)
{
	struct names *w = ctx;

	(void)ino;
	(void)next;
	(void)st;
	(void)gen;
	if ((len == 1 && name[0] == '.') || (len == 2 && !memcmp(name, "..", 2)) ||
	    w->n == UT_ARRAY_SIZE(w->name) || len > MFS_NAME_LEN)
		return 0;
	memcpy(w->name[w->n], name, len);
	w->name[w->n][len] = '\0';
	w->dir[w->n++] = type == MFS_FT_DIR;
	return 0;
}

/* rm -rf of what @dir holds (the directories of memory refuse, as they
 * should): the frees that follow meet whatever the damage shares. */
static void remove_tree(struct mfs_fs *fs, uint64_t dir, uint64_t seed, int depth)
{
	static struct names levels[9];
	struct names *w = &levels[depth];
	struct mfs_dir *d;
	struct stat st;
	int err = mfs_opendir(fs, &tf_root, dir, &d);

	w->n = 0;
	if (err)
		return;
	ALLOWED(seed, "readdir", mfs_readdir(fs, d, 0, false, collect_name, w));
	mfs_releasedir(fs, d);
	for (unsigned int i = 0; i < w->n; i++) {
		const char *name = w->name[i];

		if (dir == MFS_ROOT_INO && (!strcmp(name, MFS_CTL_DIR_NAME) ||
					    !strcmp(name, MFS_REGIONS_DIR_NAME)))
			continue;
		if (!w->dir[i]) {
			ALLOWED(seed, "unlink", mfs_unlink(fs, &tf_root, dir, name));
			continue;
		}
		err = mfs_lookup(fs, &tf_root, dir, name, &st, NULL);
		if (!err && depth < 8)
			remove_tree(fs, st.st_ino, seed, depth + 1);
		if (!err)
			mfs_forget(fs, st.st_ino, 1);
		ALLOWED(seed, "rmdir", mfs_rmdir(fs, &tf_root, dir, name));
	}
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
		remove_tree(fs, MFS_ROOT_INO, seed, 0);
		change(fs, seed);
		ALLOWED(seed, "unmount", mfs_unmount(fs));
	}
	bdev_close(bd);
}

/* The damaged image of @seed as the file DIR/dmg-SEED.img, its zero
 * blocks left as holes; a line on stdout says what the damage is. */
static void save(const uint8_t *img, const char *dir, uint64_t seed)
{
	static const uint8_t zero[4096];
	char path[4096];
	int fd;

	snprintf(path, sizeof(path), "%s/dmg-%" PRIu64 ".img", dir, seed);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	t_assert(fd >= 0, "cannot create %s", path);
	for (size_t off = 0; off < IMG_BYTES; off += sizeof(zero))
		if (memcmp(img + off, zero, sizeof(zero)))
			t_assert(pwrite(fd, img + off, sizeof(zero), (off_t)off) ==
				 (ssize_t)sizeof(zero), "cannot write %s", path);
	t_assert(!ftruncate(fd, IMG_BYTES) && !close(fd), "cannot write %s", path);
	printf("dmg-%" PRIu64 ": %s\n", seed, what);
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
	/* tf_mkfs's filesystem, with a region and directory indexes. */
	struct fmt_mkfs_opts o = { .block_size = BS, .zeroed = true, .now = 1700000000,
				   .csum_seed = 0x5eed, .nregions = 1, .dir_index = true };
	struct mfs_fs *fs;

	if (base_bd)
		return;
	base_bd = t_dev_mem(IMG_BYTES, BS);
	snprintf(o.regions[0].name, sizeof(o.regions[0].name), "blob");
	o.regions[0].bytes = 64u << 10;
	t_ok(fmt_mkfs(base_bd, &o));
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

/*
 * Seeds beyond the default range that once failed fsck_repairs or
 * mount_survives (what their damage is depends on the populated image and
 * the damage code: if either changes, what each seed makes is printed by
 * --save and should be checked again).  Both cases run on each.
 */
static const uint64_t regression_seeds[] = {
	853,    /* the journal superblock's s_first leaves a log of one block:
		 * the mount waited forever for room in it, fsck saw nothing */
	2551,   /* the journal inode maps a block of an inode table: pass 1
		 * cleared the pointer, leaving the journal a hole */
	2908,   /* the superblock's journal flag clear: was unfixable */
	13150,  /* an indirect block mapped twice by its owner: pass 1b
		 * copied the data blocks under it, never the block itself */
	23605,  /* a directory's block is another file's indirect block: the
		 * same, then pass 2 rewrote the block both still shared */
	657,    /* a directory inode's i_size of 2^63 under -n: the index
		 * check sized its tables by it and ran out of memory */
};

static void each_regression(void (*fn)(const uint8_t *img, uint64_t seed))
{
	uint64_t f = first, n = count;

	for (size_t i = 0; i < UT_ARRAY_SIZE(regression_seeds); i++) {
		first = regression_seeds[i];
		count = 1;
		each_damaged(fn);
	}
	first = f;
	count = n;
}

static void test_fsck_regressions(void)
{
	each_regression(check_fsck);
}

/* The damaged image mounts or is refused; calls on it fail only as damage may. */
static void test_mount_survives(void)
{
	each_damaged(check_mount);
}

static void test_mount_regressions(void)
{
	each_regression(check_mount);
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
	     T_CASE(test_fsck_regressions),
	     T_CASE(test_mount_survives),
	     T_CASE(test_mount_regressions))
