/*
 * miscfs-debug - print the structures of a miscfs image.
 *
 * Output is one "key: value" per line and stays stable, so tests compare
 * it.  A damaged structure is named on stderr and the exit status is 1;
 * the tool never trusts a field it has not checked.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "jnl.h"
#include "fmt.h"
#include "tools.h"
#include "util.h"

#define EXIT_DAMAGED 1
#define EXIT_USAGE   2

static const char usage_text[] =
"Usage: miscfs-debug IMAGE [COMMAND [ARG]]\n"
"\n"
"Print the structures of a miscfs image (read-only): a file, a block device\n"
"or an NBD export (nbd://HOST/EXPORT, nbd+unix:///EXPORT?socket=PATH).\n"
"\n"
"Commands:\n"
"  super          the superblock (default); a backup is used if the\n"
"                 primary is damaged, and 'copy in group' says which;\n"
"                 then whether the journal needs recovery and errors\n"
"                 were recorded\n"
"  groups         every group descriptor, bitmap checksums verified\n"
"  inode N        inode N\n"
"  ls PATH|N      the directory at PATH (from /) or with inode number N\n"
"  dx PATH|N      that directory's hashed index (dir_index): its height,\n"
"                 blocks and records at each level, room maps\n"
"  regions        the reserved-region table\n"
"  journal        the journal superblock\n"
"  mmp            the multi-mount protection block: who has the image\n"
"                 open and when it last stamped it\n"
"  verify         check every checksum of every structure in use\n"
"\n"
"Exit status: 0 fine, 1 a damaged structure (named on stderr), 2 usage\n"
"or I/O error.\n";

struct dbg {
	struct fmt_raw raw;
	void *blk;                 /* one block buffer */
	FILE *out;                 /* stdout, or /dev/null while verifying */
	unsigned long problems;    /* for verify */
};

static int damaged(struct dbg *d)
{
	mlog_err("%s", d->raw.why);
	return EXIT_DAMAGED;
}

/* Map an error from the raw layer to an exit status. */
static int status_of(struct dbg *d, int err)
{
	if (err == -EUCLEAN)
		return damaged(d);
	if (err)
		mlog_err("I/O error: %s", strerror(-err));
	return err ? EXIT_USAGE : 0;
}


static int check_bitmap(struct dbg *d, uint32_t g, unsigned kind, uint64_t blk,
			uint32_t stored)
{
	int err = fmt_raw_read(&d->raw, blk, d->blk);

	if (err)
		return status_of(d, err);
	if (fmt_bitmap_csum(&d->raw.sb, kind, g, d->blk) == stored)
		return 0;
	snprintf(d->raw.why, sizeof(d->raw.why), "group %" PRIu32 ": %s bitmap "
		 "(block %" PRIu64 ") checksum mismatch", g,
		 kind == MFS_CSUM_BBITMAP ? "block" : "inode", blk);
	return damaged(d);
}

static int cmd_groups(struct dbg *d)
{
	int worst = 0;

	for (uint32_t g = 0; g < le32toh(d->raw.sb.s_groups_count); g++) {
		const struct mfs_group_desc *gd;
		int err = fmt_raw_gdesc(&d->raw, g, &gd), st;

		if (err) {
			worst = UT_MAX(worst, status_of(d, err));
			continue;
		}
		fmt_gdesc_print(g, gd, d->out);
		st = check_bitmap(d, g, MFS_CSUM_BBITMAP, le32toh(gd->bg_block_bitmap),
				  le32toh(gd->bg_block_bitmap_csum));
		worst = UT_MAX(worst, st);
		st = check_bitmap(d, g, MFS_CSUM_IBITMAP, le32toh(gd->bg_inode_bitmap),
				  le32toh(gd->bg_inode_bitmap_csum));
		worst = UT_MAX(worst, st);
	}
	return worst;
}

static int parse_ino(const char *s, uint32_t *ino)
{
	char *end;
	unsigned long v = strtoul(s, &end, 10);

	if (!*s || *end || v == 0 || v > UINT32_MAX) {
		mlog_err("'%s' is not an inode number", s);
		return -EINVAL;
	}
	*ino = (uint32_t)v;
	return 0;
}

static int cmd_inode(struct dbg *d, const char *arg)
{
	struct mfs_inode in;
	uint32_t ino;
	int err;

	if (!arg || parse_ino(arg, &ino))
		return EXIT_USAGE;
	if (ino > le32toh(d->raw.sb.s_inodes_count)) {
		mlog_err("inode %" PRIu32 " is out of range (1..%" PRIu32 ")", ino,
			 le32toh(d->raw.sb.s_inodes_count));
		return EXIT_USAGE;
	}
	err = fmt_raw_inode(&d->raw, ino, &in);
	if (err)
		return status_of(d, err);
	fmt_inode_print(ino, &in, d->out);
	/* Printed first: the fields are what one wants to see of a bad inode. */
	if (fmt_inode_check_size(&d->raw.sb, ino, &in, d->raw.why, sizeof(d->raw.why)))
		return damaged(d);
	return 0;
}

/* ---- directories --------------------------------------------------------- */

typedef int (*dirent_fn)(struct dbg *d, const struct mfs_dirent *de, void *arg);

struct dir_walk {
	struct dbg *d;
	uint32_t ino;
	dirent_fn fn;
	void *arg;
	unsigned long blocks;      /* directory blocks read */
};

/* Check directory block @pblk and call the walk's function for each of
 * its entries; a positive return stops the block-map walk. */
static int dir_block(void *arg, uint64_t lblk, uint64_t pblk)
{
	struct dir_walk *w = arg;
	struct dbg *d = w->d;
	int err = fmt_raw_read(&d->raw, pblk, d->blk), stop = 0;

	(void)lblk;
	if (!err)
		err = fmt_dirblock_check(&d->raw.sb, w->ino, d->blk, d->raw.why,
					 sizeof(d->raw.why));
	if (err)
		return err;
	w->blocks++;
	for (uint32_t off = 0; off < d->raw.bs - MFS_DIR_TAIL_SIZE && !stop;) {
		const struct mfs_dirent *de = (void *)((char *)d->blk + off);

		if (de->inode)
			stop = w->fn(d, de, w->arg);
		off += le16toh(de->rec_len);
	}
	return stop;
}

/*
 * Call @fn for each entry of directory @ino; stops early on non-zero.
 * Holes are skipped by the block-map walk, whatever i_size claims.
 */
static int walk_dir(struct dbg *d, uint32_t ino, dirent_fn fn, void *arg,
		    unsigned long *blocks)
{
	struct dir_walk dw = { .d = d, .ino = ino, .fn = fn, .arg = arg };
	struct fmt_bmap_walk w;
	struct mfs_inode in;
	int err = fmt_raw_inode(&d->raw, ino, &in);

	if (err)
		return err;
	if (!S_ISDIR(le16toh(in.i_mode))) {
		snprintf(d->raw.why, sizeof(d->raw.why), "inode %" PRIu32
			 " is not a directory", ino);
		return -ENOTDIR;
	}
	fmt_raw_bmap_walk_init(&d->raw, ino, &in, &w);
	w.data = dir_block;
	w.ctx = &dw;
	err = fmt_bmap_walk(&w, 0, le64toh(in.i_size) / d->raw.bs);
	if (blocks)
		*blocks += dw.blocks;
	return err > 0 ? 0 : err;
}

static int print_dirent(struct dbg *d, const struct mfs_dirent *de, void *arg)
{
	fprintf(d->out, "%" PRIu32 " %s %.*s\n", le32toh(de->inode), fmt_ft_name(de->file_type),
	       de->name_len, de->name);
	return 0;
}

struct lookup {
	const char *name;
	size_t len;
	uint32_t ino;
};

static int match_dirent(struct dbg *d, const struct mfs_dirent *de, void *arg)
{
	struct lookup *l = arg;

	if (de->name_len != l->len || memcmp(de->name, l->name, l->len))
		return 0;
	l->ino = le32toh(de->inode);
	return 1;
}

static int resolve(struct dbg *d, const char *path, uint32_t *ino)
{
	*ino = MFS_ROOT_INO;
	while (*path) {
		struct lookup l = { .name = path };
		int err;

		while (*l.name == '/')
			l.name++;
		l.len = strcspn(l.name, "/");
		path = l.name + l.len;
		if (!l.len)
			break;
		err = walk_dir(d, *ino, match_dirent, &l, NULL);
		if (err)
			return err;
		if (!l.ino) {
			snprintf(d->raw.why, sizeof(d->raw.why), "'%.*s' not found",
				 (int)l.len, l.name);
			return -ENOENT;
		}
		*ino = l.ino;
	}
	return 0;
}

static int cmd_ls(struct dbg *d, const char *arg)
{
	uint32_t ino;
	int err;

	if (!arg)
		return EXIT_USAGE;
	if (arg[0] == '/')
		err = resolve(d, arg, &ino);
	else
		err = parse_ino(arg, &ino) ? -EINVAL : 0;
	if (!err)
		err = walk_dir(d, ino, print_dirent, NULL, NULL);
	if (err == -ENOENT || err == -ENOTDIR) {
		mlog_err("%s", d->raw.why);
		return EXIT_USAGE;
	}
	return err == -EINVAL ? EXIT_USAGE : status_of(d, err);
}

/* ---- directory index ----------------------------------------------------- */

struct dx_walk {
	struct dbg *d;
	uint32_t ino;
	struct mfs_inode in;
	unsigned long blocks[MFS_DX_MAX_LEVEL + 1], recs[MFS_DX_MAX_LEVEL + 1];
};

/* Index block @lblk of the directory, checked as a @kind, into d->blk. */
static int dx_read(struct dx_walk *w, uint64_t lblk, unsigned kind)
{
	struct dbg *d = w->d;
	uint64_t pblk;
	int err = lblk < le64toh(w->in.i_size) / d->raw.bs ? 0 : -EUCLEAN;

	if (err)
		snprintf(d->raw.why, sizeof(d->raw.why), "directory %" PRIu32 ": index "
			 "names block %" PRIu64 ", beyond its end", w->ino, lblk);
	if (!err)
		err = fmt_raw_bmap(&d->raw, w->ino, &w->in, lblk, &pblk);
	if (!err)
		err = fmt_raw_read(&d->raw, pblk, d->blk);
	if (!err)
		err = fmt_dirblock_check(&d->raw.sb, w->ino, d->blk, d->raw.why,
					 sizeof(d->raw.why));
	if (!err)
		err = fmt_dx_check(&d->raw.sb, w->ino, d->blk, (uint32_t)lblk, kind,
				   d->raw.why, sizeof(d->raw.why));
	return err;
}

/* Count the tree under block @lblk of @level (the root: -1). */
static int dx_count(struct dx_walk *w, uint64_t lblk, int level)
{
	struct mfs_dx_head *h = fmt_dx_head(w->d->blk);
	int err = dx_read(w, lblk, level < 0 ? MFS_DX_ROOT : MFS_DX_NODE);
	uint32_t n, *child;

	if (err)
		return err;
	if (level >= 0 && h->dx_level != level) {
		snprintf(w->d->raw.why, sizeof(w->d->raw.why), "directory %" PRIu32
			 ": index node %" PRIu64 " has level %u, not %d", w->ino, lblk,
			 h->dx_level, level);
		return -EUCLEAN;
	}
	level = h->dx_level;
	n = le16toh(h->dx_count);
	w->blocks[level]++;
	w->recs[level] += n;
	if (!level)
		return 0;
	child = malloc((n ? n : 1) * sizeof(*child));
	if (!child)
		return -ENOMEM;
	for (uint32_t i = 0; i < n; i++)
		child[i] = le32toh(fmt_dx_recs(w->d->blk)[i].dr_lblk);
	for (uint32_t i = 0; i < n && !err; i++)
		err = dx_count(w, child[i], level - 1);
	free(child);
	return err;
}

static int dx_print(struct dx_walk *w)
{
	struct dbg *d = w->d;
	struct mfs_dx_root_info *ri = fmt_dx_root(d->blk);
	uint32_t per = fmt_dx_limit(&d->raw.sb, MFS_DX_FMAP), nfmap, fmap[MFS_DX_FMAP_MAX];
	uint64_t nblocks = le64toh(w->in.i_size) / d->raw.bs, room = 0;
	unsigned top;
	int err = dx_read(w, MFS_DX_ROOT_LBLK, MFS_DX_ROOT);

	if (err)
		return err;
	top = fmt_dx_head(d->blk)->dx_level;
	nfmap = le32toh(ri->dr_fmap_count);
	for (uint32_t j = 0; j < nfmap; j++)
		fmap[j] = le32toh(ri->dr_fmap[j]);
	err = dx_count(w, MFS_DX_ROOT_LBLK, -1);
	for (uint32_t j = 0; j < nfmap && !err; j++) {
		err = dx_read(w, fmap[j], MFS_DX_FMAP);
		for (uint32_t i = 0; !err && i < per && (uint64_t)j * per + i < nblocks; i++)
			room += fmt_dx_fmap(d->blk)[i] != 0;
	}
	if (err)
		return err;
	fprintf(d->out, "height: %u\n", top + 1);
	for (int l = (int)top; l >= 0; l--)
		fprintf(d->out, "level %d: %lu blocks, %lu records (%.0f%% full)\n", l,
			w->blocks[l], w->recs[l], 100.0 * (double)w->recs[l] /
			((double)w->blocks[l] * fmt_dx_limit(&d->raw.sb, l == (int)top ?
							     MFS_DX_ROOT : MFS_DX_NODE)));
	fprintf(d->out, "entries: %lu\nroom maps: %" PRIu32 "\n"
		"blocks with room: %" PRIu64 " of %" PRIu64 "\n", w->recs[0], nfmap, room,
		nblocks);
	return 0;
}

static int cmd_dx(struct dbg *d, const char *arg)
{
	struct dx_walk w = { .d = d };
	int err;

	if (!arg)
		return EXIT_USAGE;
	if (arg[0] == '/')
		err = resolve(d, arg, &w.ino);
	else
		err = parse_ino(arg, &w.ino) ? -EINVAL : 0;
	if (!err)
		err = fmt_raw_inode(&d->raw, w.ino, &w.in);
	if (err == -ENOENT) {
		mlog_err("%s", d->raw.why);
		return EXIT_USAGE;
	}
	if (err)
		return err == -EINVAL ? EXIT_USAGE : status_of(d, err);
	fprintf(d->out, "directory: %" PRIu32 "\n", w.ino);
	if (!S_ISDIR(le16toh(w.in.i_mode)) || !(le32toh(w.in.i_flags) & MFS_INDEX_FL)) {
		fprintf(d->out, "index: none\n");
		return 0;
	}
	fprintf(d->out, "index: yes\n");
	return status_of(d, dx_print(&w));
}

/* ---- regions and journal ------------------------------------------------- */

static int cmd_regions(struct dbg *d)
{
	const struct mfs_region_header *h = d->blk;
	const struct mfs_region_entry *e = (const void *)(h + 1);
	uint32_t n = le32toh(d->raw.sb.s_region_count);
	uint64_t tbl = le64toh(d->raw.sb.s_region_table);
	int err;

	fprintf(d->out, "regions: %" PRIu32 "\n", n);
	if (!n)
		return 0;
	err = fmt_raw_read(&d->raw, tbl, d->blk);
	if (err)
		return status_of(d, err);
	if (le32toh(h->rh_magic) != MFS_REGION_MAGIC || le32toh(h->rh_count) != n ||
	    n > (d->raw.bs - MFS_REGION_HDR_SIZE - 4) / MFS_REGION_ENTRY_SIZE ||
	    !fmt_block_csum_ok(&d->raw.sb, MFS_CSUM_REGION, 0, d->blk)) {
		snprintf(d->raw.why, sizeof(d->raw.why), "region table (block %" PRIu64
			 "): bad magic, count or checksum", tbl);
		return damaged(d);
	}
	for (uint32_t i = 0; i < n; i++, e++)
		fprintf(d->out, "region %.*s: start %" PRIu64 ", blocks %" PRIu64 ", bytes %"
		       PRIu64 "\n", (int)MFS_REGION_NAME_LEN, e->re_name,
		       le64toh(e->re_start), le64toh(e->re_blocks), le64toh(e->re_bytes));
	return 0;
}

/* The journal superblock into d->blk, checked; its device block in
 * @pblk.  -EUCLEAN with d->raw.why set when it is damaged. */
static int read_jsb(struct dbg *d, uint64_t *pblk)
{
	uint32_t nblocks = le32toh(d->raw.sb.s_journal_blocks);
	struct mfs_inode in;
	int err = fmt_raw_inode(&d->raw, MFS_JOURNAL_INO, &in);

	if (!err)
		err = fmt_raw_bmap(&d->raw, MFS_JOURNAL_INO, &in, 0, pblk);
	if (!err && !*pblk) {
		snprintf(d->raw.why, sizeof(d->raw.why), "journal inode maps no block 0");
		err = -EUCLEAN;
	}
	if (!err)
		err = fmt_raw_read(&d->raw, *pblk, d->blk);
	if (!err)
		err = jnl_sb_check(d->blk, nblocks, d->raw.bs, d->raw.why,
				   sizeof(d->raw.why));
	return err;
}

static int cmd_journal(struct dbg *d)
{
	uint64_t pblk;
	int err = read_jsb(d, &pblk);

	if (err)
		return status_of(d, err);
	fprintf(d->out, "journal inode: %u\njournal superblock block: %" PRIu64 "\n",
		MFS_JOURNAL_INO, pblk);
	jnl_sb_print(d->blk, d->out);
	return 0;
}

/*
 * What a mount would find: a log to replay (the journal superblock says
 * it holds transactions, or the superblock's RECOVER flag says it may),
 * and errors (the superblock's state, or an abort the journal recorded
 * that the superblock does not show yet).  A damaged journal superblock
 * is named here and left to "journal" and "verify" to report as damage.
 */
static void print_state(struct dbg *d, FILE *out)
{
	const struct jnl_superblock *js = d->blk;
	bool flag = le32toh(d->raw.sb.s_feature_incompat) & MFS_FEATURE_INCOMPAT_RECOVER;
	bool marked = le16toh(d->raw.sb.s_state) & MFS_STATE_ERRORS;
	uint64_t pblk;
	int err = read_jsb(d, &pblk);
	uint32_t start = err ? 0 : le32toh(js->s_start);
	int32_t jerr = err ? 0 : (int32_t)le32toh(js->s_errno);

	if (start || flag)
		fprintf(out, "recovery: needs recovery (%s%s%s)\n",
			start ? "the log is not empty" : "",
			start && flag ? ", " : "", flag ? "RECOVER flag set" : "");
	else
		fprintf(out, "recovery: %s\n", err ? "unknown" : "not needed");
	if (err)
		fprintf(out, "journal: cannot be read: %s\n",
			err == -EUCLEAN ? d->raw.why : strerror(-err));
	if (!marked && !jerr)
		fprintf(out, "errors: none\n");
	else
		fprintf(out, "errors: %s%s%s%s\n", marked ? "marked in the superblock" : "",
			marked && jerr ? "; " : "", jerr ? "journal aborted: " : "",
			jerr ? strerror(-jerr) : "");
}

static int cmd_super(struct dbg *d)
{
	fmt_sb_print(&d->raw.sb, d->out);
	print_state(d, d->out);
	return 0;
}

static int cmd_mmp(struct dbg *d)
{
	struct mfs_mmp m;
	int err;

	if (!fmt_has_mmp(&d->raw.sb)) {
		fprintf(d->out, "mmp: off\n");
		return 0;
	}
	err = fmt_mmp_read(d->raw.bd, &d->raw.sb, &m, d->raw.why, sizeof(d->raw.why));
	if (err)
		return status_of(d, err);
	fmt_mmp_print(&d->raw.sb, &m, d->out);
	return 0;
}

/* ---- verify -------------------------------------------------------------- */

struct tally {
	unsigned long inodes, dir_blocks, indirect, xattr;
};

static int count_indirect(void *arg, uint64_t blk, int depth)
{
	(void)blk;
	(void)depth;
	((struct tally *)arg)->indirect++;
	return 0;
}

static int any_block(void *arg, uint64_t lblk, uint64_t pblk)
{
	(void)arg;
	(void)lblk;
	(void)pblk;
	return 0;
}

/* Check every indirect block of @in's map, mapped beyond i_size or not. */
static int verify_map(struct dbg *d, uint32_t ino, const struct mfs_inode *in,
		      struct tally *t)
{
	struct fmt_bmap_walk w;

	fmt_raw_bmap_walk_init(&d->raw, ino, in, &w);
	w.indirect = count_indirect;
	w.data = any_block;
	w.ctx = t;
	return fmt_bmap_walk(&w, 0, UINT64_MAX);
}

static int count_dirent(struct dbg *d, const struct mfs_dirent *de, void *arg)
{
	return 0;
}

/* The inode's xattr block: inside the filesystem, checksum and entries. */
static int verify_xattr(struct dbg *d, uint32_t ino, const struct mfs_inode *in,
			struct tally *t)
{
	uint64_t blk = le32toh(in->i_xattr_block);
	char why[160];
	int err;

	if (!blk)
		return 0;
	if (blk >= le64toh(d->raw.sb.s_blocks_count)) {
		snprintf(d->raw.why, sizeof(d->raw.why), "inode %" PRIu32 ": xattr block %"
			 PRIu64 " is outside the filesystem", ino, blk);
		return -EUCLEAN;
	}
	err = fmt_raw_read(&d->raw, blk, d->blk);
	if (!err)
		err = fmt_xattr_block_check(&d->raw.sb, blk, d->blk, why, sizeof(why));
	if (err == -EUCLEAN)
		snprintf(d->raw.why, sizeof(d->raw.why), "inode %" PRIu32 ": %s", ino, why);
	t->xattr += !err;
	return err;
}

static int verify_inode(struct dbg *d, uint32_t ino, struct tally *t)
{
	struct mfs_inode in;
	uint16_t mode;
	int err = fmt_raw_inode(&d->raw, ino, &in);

	if (err)
		return err;
	mode = le16toh(in.i_mode);
	if (!mode)
		return 0;
	t->inodes++;
	err = verify_map(d, ino, &in, t);
	if (!err)
		err = verify_xattr(d, ino, &in, t);
	if (!err && S_ISDIR(mode))
		err = walk_dir(d, ino, count_dirent, NULL, &t->dir_blocks);
	return err;
}

/* Count a failed check and keep going, so one run lists every problem. */
static void note(struct dbg *d, int err)
{
	if (!err)
		return;
	d->problems++;
	mlog_err("%s", err == -EUCLEAN || err == -ENOTDIR ? d->raw.why : strerror(-err));
}

static void verify_group_inodes(struct dbg *d, uint32_t g, struct tally *t)
{
	uint32_t ipg = le32toh(d->raw.sb.s_inodes_per_group);
	const struct mfs_group_desc *gd;
	uint8_t *map = malloc(d->raw.bs);
	int err = fmt_raw_gdesc(&d->raw, g, &gd);

	if (!map) {
		note(d, -ENOMEM);
		return;
	}
	if (!err)
		err = fmt_raw_read(&d->raw, le32toh(gd->bg_inode_bitmap), d->blk);
	if (!err)
		memcpy(map, d->blk, d->raw.bs);
	for (uint32_t i = 0; i < ipg && !err; i++)
		if (map[i / 8] & (1u << (i % 8)))
			note(d, verify_inode(d, g * ipg + i + 1, t));
	note(d, err);
	free(map);
}

static int cmd_verify(struct dbg *d)
{
	struct tally t = { 0 };
	uint32_t groups = le32toh(d->raw.sb.s_groups_count);

	d->out = fopen("/dev/null", "w");
	if (!d->out)
		return EXIT_USAGE;
	if (cmd_groups(d))
		d->problems++;
	for (uint32_t g = 0; g < groups; g++)
		verify_group_inodes(d, g, &t);
	if (cmd_regions(d))
		d->problems++;
	if (cmd_journal(d))
		d->problems++;
	if (cmd_mmp(d))
		d->problems++;
	fclose(d->out);
	d->out = stdout;
	printf("groups: %" PRIu32 "\ninodes: %lu\ndirectory blocks: %lu\n"
	       "indirect blocks: %lu\nxattr blocks: %lu\nproblems: %lu\n", groups,
	       t.inodes, t.dir_blocks, t.indirect, t.xattr, d->problems);
	/* Not problems of the image: what its next mount will do. */
	print_state(d, stdout);
	return d->problems ? EXIT_DAMAGED : 0;
}

/* ---- main ---------------------------------------------------------------- */

static int run_command(struct dbg *d, const char *cmd, const char *arg)
{
	if (!strcmp(cmd, "super"))
		return cmd_super(d);
	if (!strcmp(cmd, "groups"))
		return cmd_groups(d);
	if (!strcmp(cmd, "inode"))
		return cmd_inode(d, arg);
	if (!strcmp(cmd, "ls"))
		return cmd_ls(d, arg);
	if (!strcmp(cmd, "dx"))
		return cmd_dx(d, arg);
	if (!strcmp(cmd, "regions"))
		return cmd_regions(d);
	if (!strcmp(cmd, "journal"))
		return cmd_journal(d);
	if (!strcmp(cmd, "verify"))
		return cmd_verify(d);
	if (!strcmp(cmd, "mmp"))
		return cmd_mmp(d);
	mlog_err("unknown command '%s'; see miscfs-debug -h", cmd);
	return EXIT_USAGE;
}

static int open_image(const char *path, struct dbg *d, struct bdev **bd)
{
	/* 1024-byte granularity reads every structure of every block size. */
	struct bdev_open_opts bo = { .block_size = 1024, .read_only = true };
	int err = bdev_open(path, &bo, bd);

	if (err) {
		mlog_err("cannot open %s: %s", path, strerror(-err));
		return EXIT_USAGE;
	}
	err = fmt_raw_open(*bd, &d->raw);
	if (err) {
		if (err != -EUCLEAN)
			mlog_err("cannot read %s: %s", path, strerror(-err));
		bdev_close(*bd);
		return err == -EUCLEAN ? EXIT_DAMAGED : EXIT_USAGE;
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct dbg d = { .out = stdout };
	struct bdev *bd;
	int st;

	mlog_set_ident("miscfs-debug");
	if (argc >= 2 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
		fputs(usage_text, stdout);
		return 0;
	}
	if (argc < 2 || argc > 4) {
		fputs(usage_text, stderr);
		return EXIT_USAGE;
	}
	st = open_image(argv[1], &d, &bd);
	if (st)
		return st;
	d.blk = bdev_alloc_buf(d.raw.bs);
	st = d.blk ? run_command(&d, argc > 2 ? argv[2] : "super", argc > 3 ? argv[3] : NULL)
		   : EXIT_USAGE;
	bdev_free_buf(d.blk);
	fmt_raw_close(&d.raw);
	bdev_close(bd);
	return st;
}
