/*
 * pass1.c - every inode: its fields, its block map, its xattr block.
 *
 * The inode tables are read in pieces, the next piece in flight while
 * this one is checked.  Each inode in use claims its blocks
 * in c->bused; a block claimed twice goes to c->bdup for pass 1b.  The
 * directories and their blocks are noted for pass 2; holes in a directory
 * are noted as blocks at 0, which pass 2 fills.
 */
#include "fsck_i.h"

#include <errno.h>
#include <pthread.h>

/* ---- reading the tables ahead --------------------------------------------- */

struct ahead {
	struct bdev_req req;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool busy;
	void *buf;
};

static void ahead_done(struct bdev_req *req)
{
	struct ahead *a = req->private;

	pthread_mutex_lock(&a->lock);
	a->busy = false;
	pthread_cond_signal(&a->cond);
	pthread_mutex_unlock(&a->lock);
}

/*
 * The inode tables are read in pieces of at most AHEAD_BYTES, the next in
 * flight while this one is checked: the memory is two pieces whatever
 * the size of a group's table.
 */
#define AHEAD_BYTES (256u << 10)

struct piece {
	uint32_t group, first, count;        /* table blocks [first, first+count) */
};

static bool next_piece(const struct fsck_ctx *c, struct piece *p)
{
	uint32_t per = UT_MAX(AHEAD_BYTES / c->bs, 1u), nblk = fmt_itable_blocks(&c->sb);

	p->first += p->count;
	if (p->first >= nblk) {
		if (++p->group >= c->ngroups)
			return false;
		p->first = 0;
	}
	p->count = UT_MIN(per, nblk - p->first);
	return true;
}

static int ahead_start(struct fsck_ctx *c, struct ahead *a, const struct piece *p)
{
	struct bdev_req *r = &a->req;
	int err;

	bdev_req_init(r, BDEV_OP_READ, (fsck_layout_itable(c, p->group) + p->first) * c->bs,
		      a->buf, (size_t)p->count * c->bs);
	r->end_io = ahead_done;
	r->private = a;
	a->busy = true;
	err = bdev_submit(c->bd, &r, 1);
	if (err)
		a->busy = false;         /* refused whole: no end_io comes */
	return err;
}

static int ahead_wait(struct ahead *a)
{
	pthread_mutex_lock(&a->lock);
	while (a->busy)
		pthread_cond_wait(&a->cond, &a->lock);
	pthread_mutex_unlock(&a->lock);
	return a->req.result;
}

/* ---- the inode's own fields ------------------------------------------------- */

struct inode_check {
	uint32_t ino;
	struct mfs_inode *in;
	bool dirty;
	uint64_t nblocks;            /* blocks it maps (data and indirect) */
	uint64_t last_lblk;          /* highest mapped data block + 1 */
	uint64_t last_pblk;
	bool frag;
};

/* Free the inode's slot (its blocks were not claimed yet); 1 or -errno. */
static int clear_inode(struct fsck_ctx *c, uint32_t ino, struct mfs_inode *in)
{
	uint32_t gen = le32toh(in->i_generation);
	int err;

	memset(in, 0, sizeof(*in));
	in->i_generation = htole32(gen + 1);
	in->i_dtime = htole64(c->now);
	c->istate[ino - 1] &= (uint8_t)~IS_TYPE_MASK;
	err = fsck_write_inode(c, ino, in);
	return err ? err : 1;
}

static bool reserved(uint32_t ino)
{
	return ino < MFS_FIRST_INO && ino != MFS_ROOT_INO && ino != MFS_JOURNAL_INO;
}

/* The checks a bad checksum makes decisive: 1 when the inode is cleared. */
static int check_basics(struct fsck_ctx *c, struct inode_check *k)
{
	struct mfs_inode *in = k->in;
	bool csum_ok = le32toh(in->i_checksum) == fmt_inode_csum(&c->sb, k->ino, in);
	char why[200];
	struct fsck_pctx p = { .ino = k->ino, .str = why, .num = le16toh(in->i_mode) };
	int bad = fmt_inode_check(&c->sb, k->ino, in, why, sizeof(why));
	uint64_t size = le64toh(in->i_size);

	if (reserved(k->ino))
		return fsck_fix(c, PR_INODE_RESERVED, &p) ? clear_inode(c, k->ino, in) : 0;
	if (!csum_ok && bad)
		return fsck_fix(c, PR_INODE_GARBAGE, &p) ? clear_inode(c, k->ino, in) : 0;
	if (!csum_ok && fsck_fix(c, PR_INODE_CSUM, &p))
		k->dirty = true;
	if (bad && S_ISDIR(le16toh(in->i_mode)) && size % c->bs &&
	    !fmt_inode_check_size(&c->sb, k->ino, in, NULL, 0)) {
		/* Only the size is wrong: pass 1 sets it from the blocks. */
		return 0;
	}
	if (bad)
		return fsck_fix(c, PR_INODE_BAD, &p) ? clear_inode(c, k->ino, in) : 0;
	if (k->ino == MFS_ROOT_INO && !S_ISDIR(le16toh(in->i_mode))) {
		if (!fsck_fix(c, PR_ROOT_NOT_DIR, &p))
			return 0;
		c->root_bad = true;
		return clear_inode(c, k->ino, in);
	}
	return 0;
}

static void check_nsec(struct fsck_ctx *c, struct inode_check *k)
{
	uint32_t *f[4] = { &k->in->i_atime_nsec, &k->in->i_mtime_nsec,
			   &k->in->i_ctime_nsec, &k->in->i_crtime_nsec };

	for (int i = 0; i < 4; i++) {
		struct fsck_pctx p = { .ino = k->ino, .num = le32toh(*f[i]) };

		if (le32toh(*f[i]) >= 1000000000u && fsck_fix(c, PR_INODE_NSEC, &p)) {
			*f[i] = 0;
			k->dirty = true;
		}
	}
}

static void check_fields(struct fsck_ctx *c, struct inode_check *k)
{
	struct mfs_inode *in = k->in;
	uint32_t flags = le32toh(in->i_flags), known = MFS_USER_FL_MASK;
	struct fsck_pctx p = { .ino = k->ino };
	char why[200];

	/* The index flag belongs to directories, with the feature; pass 2
	 * judges the index itself. */
	if (fmt_has_dir_index(&c->sb) && S_ISDIR(le16toh(in->i_mode)))
		known |= MFS_INDEX_FL;
	p.num = flags & ~known;
	if (p.num && fsck_fix(c, PR_INODE_FLAGS, &p)) {
		in->i_flags = htole32(flags & known);
		k->dirty = true;
	}
	check_nsec(c, k);
	p.num = le32toh(in->i_next_orphan);
	if (p.num && !(c->istate[k->ino - 1] & IS_ORPHAN) && fsck_fix(c, PR_NEXT_ORPHAN, &p)) {
		in->i_next_orphan = 0;
		k->dirty = true;
	}
	p.str = why;
	if (fmt_xattr_inode_check(k->ino, in, why, sizeof(why)) &&
	    fsck_fix(c, PR_XATTR_INODE, &p)) {
		memset(in->i_xattr, 0, sizeof(in->i_xattr));
		k->dirty = true;
	}
}

/* Devices, fifos and sockets map nothing; a fast symlink keeps its target
 * in i_block. */
static void check_no_map(struct fsck_ctx *c, struct inode_check *k)
{
	struct mfs_inode *in = k->in;
	uint16_t mode = le16toh(in->i_mode);
	static const uint32_t zero[MFS_N_BLOCKS];
	struct fsck_pctx p = { .ino = k->ino, .str = S_ISFIFO(mode) ? "a fifo" :
			       S_ISSOCK(mode) ? "a socket" : "a device" };

	if ((!in->i_size && !memcmp(in->i_block, zero, sizeof(zero))) ||
	    !fsck_fix(c, PR_INODE_NO_MAP, &p))
		return;
	in->i_size = 0;
	memset(in->i_block, 0, sizeof(in->i_block));
	k->dirty = true;
}

/* ---- the xattr block ---------------------------------------------------------- */

static void check_xattr_block(struct fsck_ctx *c, struct inode_check *k)
{
	uint64_t blk = le32toh(k->in->i_xattr_block);
	char why[160];
	struct fsck_pctx p = { .ino = k->ino, .blk = blk, .str = why };

	if (!blk)
		return;
	if (!fsck_block_ok(c, blk))
		snprintf(why, sizeof(why), "is outside the data blocks");
	else if (bit_test(c->bused, blk))
		snprintf(why, sizeof(why), "is also claimed by another inode");
	else if (fsck_read(c, blk, c->buf))
		snprintf(why, sizeof(why), "cannot be read");
	else if (fmt_xattr_block_check(&c->sb, blk, c->buf, why, sizeof(why)))
		;
	else {
		bit_set(c->bused, blk);
		k->nblocks++;
		c->res->xattr_blocks++;
		return;
	}
	if (fsck_fix(c, PR_XATTR_BLOCK, &p)) {
		k->in->i_xattr_block = 0;
		k->dirty = true;
	} else if (fsck_block_ok(c, blk)) {
		bit_set(c->bused, blk);          /* kept: it stays in use */
		k->nblocks++;
	}
}

/* ---- the block map ------------------------------------------------------------ */

static void claim(struct fsck_ctx *c, uint64_t blk)
{
	if (!bit_test(c->bused, blk)) {
		bit_set(c->bused, blk);
		return;
	}
	if (!c->bdup)
		c->bdup = calloc(1, c->nblocks / 8 + 1);
	if (c->bdup && !bit_test(c->bdup, blk)) {
		bit_set(c->bdup, blk);
		c->ndup++;
	}
}

static int p1_visit(struct fsck_map_walk *w, struct fmt_bmap_slot *s)
{
	struct fsck_ctx *c = w->c;
	struct inode_check *k = w->arg;
	uint64_t blk = le32toh(*s->ptr);
	struct fsck_pctx p = { .ino = w->ino, .num = s->lblk, .blk = blk, .str = s->bad };

	if (s->bad)
		return fsck_fix(c, PR_BLOCK_BAD, &p) ? FMT_BMAP_ZERO : FMT_BMAP_SKIP;
	claim(c, blk);
	k->nblocks++;
	if (s->depth) {
		uint64_t *n[3] = { &c->res->ind_blocks, &c->res->dind_blocks,
				   &c->res->tind_blocks };

		(*n[s->depth - 1])++;
		return FMT_BMAP_KEEP;
	}
	if (k->last_pblk && blk != k->last_pblk + 1)
		k->frag = true;
	k->last_pblk = blk;
	k->last_lblk = s->lblk + 1;
	if (istate_type(c, w->ino) == MFS_FT_DIR)
		return fsck_dblist_add(c, w->ino, s->lblk, blk);
	return FMT_BMAP_KEEP;
}

static int p1_bad_indirect(struct fsck_map_walk *w, struct fmt_bmap_slot *s)
{
	struct fsck_ctx *c = w->c;
	struct inode_check *k = w->arg;
	uint64_t blk = le32toh(*s->ptr);
	struct fsck_pctx p = { .ino = w->ino, .num = s->lblk, .blk = blk };

	if (!fsck_fix(c, PR_IND_CSUM, &p))
		return FMT_BMAP_SKIP;
	/* It was claimed when met: give it back unless another owns it too. */
	if (!c->bdup || !bit_test(c->bdup, blk))
		bit_clear(c->bused, blk);
	k->nblocks--;
	return FMT_BMAP_ZERO;
}

/* Directory blocks must run from 0 to the size without a hole: the
 * missing ones are noted for pass 2 to fill. */
static int check_dir_blocks(struct fsck_ctx *c, struct inode_check *k, size_t first_db)
{
	uint64_t want = UT_MAX(k->last_lblk, 1), next = 0;
	size_t end = c->ndb;
	struct fsck_pctx p = { .ino = k->ino, .num = le64toh(k->in->i_size),
			       .num2 = want * c->bs };
	int err = 0;

	for (size_t i = first_db; i < end && !err; i++) {
		for (; next < c->dblist[i].lblk && !err; next++)
			err = fsck_dblist_add(c, k->ino, next, 0);
		next = c->dblist[i].lblk + 1;
	}
	for (; next < want && !err; next++)
		err = fsck_dblist_add(c, k->ino, next, 0);
	if (!err && p.num != p.num2 && fsck_fix(c, PR_DIR_SIZE, &p)) {
		k->in->i_size = htole64(p.num2);
		k->dirty = true;
	}
	return err;
}

static int check_map(struct fsck_ctx *c, struct inode_check *k)
{
	struct fsck_map_walk w = { .c = c, .ino = k->ino, .in = k->in, .visit = p1_visit,
				   .bad_indirect = p1_bad_indirect, .arg = k };
	size_t first_db = c->ndb;
	int err = fsck_map_walk(&w);

	k->dirty |= w.inode_dirty;
	if (!err && istate_type(c, k->ino) == MFS_FT_DIR)
		err = check_dir_blocks(c, k, first_db);
	return err;
}

static int check_symlink(struct fsck_ctx *c, struct inode_check *k)
{
	struct fsck_pctx p = { .ino = k->ino };

	if (fmt_inode_is_fast_symlink(k->in)) {
		c->istate[k->ino - 1] |= IS_FAST_LINK;
		return 0;
	}
	if (k->last_lblk || !fsck_fix(c, PR_SLOW_LINK, &p))
		return 0;
	return clear_inode(c, k->ino, k->in);
}

static void check_blocks_count(struct fsck_ctx *c, struct inode_check *k)
{
	struct fsck_pctx p = { .ino = k->ino, .num = le64toh(k->in->i_blocks),
			       .num2 = k->nblocks * (c->bs / 512) };

	if (p.num != p.num2 && fsck_fix(c, PR_I_BLOCKS, &p)) {
		k->in->i_blocks = htole64(p.num2);
		k->dirty = true;
	}
}

static void tally(struct fsck_ctx *c, struct inode_check *k)
{
	if (k->frag)
		c->res->noncontig++;
	if (S_ISREG(le16toh(k->in->i_mode)))
		c->res->largest_file = UT_MAX(c->res->largest_file, le64toh(k->in->i_size));
}

static int check_used(struct fsck_ctx *c, struct inode_check *k)
{
	uint16_t mode = le16toh(k->in->i_mode);
	unsigned type = fmt_mode_to_ft(mode);
	int err;

	c->istate[k->ino - 1] = (uint8_t)((c->istate[k->ino - 1] & ~IS_TYPE_MASK) | type);
	c->links_disk[k->ino - 1] = le16toh(k->in->i_links_count);
	check_fields(c, k);
	if (type == MFS_FT_DIR && (err = fsck_dir_insert(c, k->ino)))
		return err;
	if (type == MFS_FT_CHRDEV || type == MFS_FT_BLKDEV || type == MFS_FT_FIFO ||
	    type == MFS_FT_SOCK)
		check_no_map(c, k);
	check_xattr_block(c, k);
	err = check_map(c, k);
	if (!err && type == MFS_FT_SYMLINK && (err = check_symlink(c, k)))
		return err < 0 ? err : 0;
	if (err)
		return err;
	check_blocks_count(c, k);
	tally(c, k);
	return k->dirty ? fsck_write_inode(c, k->ino, k->in) : 0;
}

/*
 * The journal inode is never cleared: one that cannot be used is replaced
 * by a new journal (fsck_journal_rebuild), and until then claims nothing.
 * 1 when it is not to be checked as an inode.
 */
static int check_journal_inode(struct fsck_ctx *c, const struct mfs_inode *in)
{
	char why[200];
	struct fsck_pctx p = { .ino = MFS_JOURNAL_INO, .str = why };

	if (c->journal_rebuild)
		return 1;
	if (!fsck_slot_in_use(in))
		snprintf(why, sizeof(why), "is not in use");
	else if (!S_ISREG(le16toh(in->i_mode)))
		snprintf(why, sizeof(why), "is not a regular file");
	else if (fmt_inode_check(&c->sb, MFS_JOURNAL_INO, in, why, sizeof(why)) == 0)
		return 0;
	if (fsck_fix(c, PR_JOURNAL_INODE, &p))
		c->journal_rebuild = true;
	return 1;
}

static int check_inode(struct fsck_ctx *c, uint32_t ino, const void *slot)
{
	struct mfs_inode in;
	struct inode_check k = { .ino = ino, .in = &in };
	int r;

	memcpy(&in, slot, sizeof(in));
	if (ino == MFS_JOURNAL_INO &&
	    (le32toh(c->sb.s_feature_compat) & MFS_FEATURE_COMPAT_HAS_JOURNAL) &&
	    check_journal_inode(c, &in))
		return 0;
	if (fmt_inode_never_used(&in) || !fsck_slot_in_use(&in))
		return 0;
	r = check_basics(c, &k);
	if (r)
		return r < 0 ? r : 0;
	return check_used(c, &k);
}

/* ---- the groups' own blocks ------------------------------------------------- */

static void claim_meta(struct fsck_ctx *c)
{
	uint64_t rt = le64toh(c->sb.s_region_table);

	for (uint32_t g = 0; g < c->ngroups; g++) {
		uint64_t first = fmt_group_first_block(&c->sb, g);
		uint32_t n = fmt_group_meta_blocks(&c->sb, g);

		for (uint32_t i = 0; i < n && first + i < c->nblocks; i++)
			bit_set(c->bused, first + i);
	}
	if (le32toh(c->sb.s_region_count) && fsck_block_ok(c, rt))
		claim(c, rt);
	if (fmt_has_mmp(&c->sb) && fsck_block_ok(c, le64toh(c->sb.s_mmp_block)))
		claim(c, le64toh(c->sb.s_mmp_block));
}

static int scan_piece(struct fsck_ctx *c, const struct piece *p, const uint8_t *table)
{
	uint32_t per = c->bs / MFS_INODE_SIZE;
	uint32_t first = p->group * c->ipg + p->first * per + 1;
	uint32_t n = UT_MIN(p->count * per, c->ipg - p->first * per);
	int err = 0;

	for (uint32_t i = 0; i < n && !err && !c->stop; i++)
		err = check_inode(c, first + i, table + (size_t)i * MFS_INODE_SIZE);
	return err;
}

int fsck_pass1(struct fsck_ctx *c)
{
	struct ahead a[2] = { { .lock = PTHREAD_MUTEX_INITIALIZER,
				.cond = PTHREAD_COND_INITIALIZER },
			      { .lock = PTHREAD_MUTEX_INITIALIZER,
				.cond = PTHREAD_COND_INITIALIZER } };
	struct piece cur = { 0 }, next;
	bool more;
	int err = 0;

	c->pass = FSCK_PASS_1;
	if (c->o->pass_start)
		c->o->pass_start(c->o->arg, FSCK_PASS_1,
				 "Pass 1: Checking inodes, blocks, and sizes");
	claim_meta(c);
	a[0].buf = bdev_alloc_buf(AHEAD_BYTES);
	a[1].buf = bdev_alloc_buf(AHEAD_BYTES);
	if (!a[0].buf || !a[1].buf)
		err = -ENOMEM;
	more = next_piece(c, &cur);
	if (!err && more)
		err = ahead_start(c, &a[0], &cur);
	for (unsigned int k = 0; more && !err; k++, cur = next) {
		next = cur;
		more = next_piece(c, &next);
		err = ahead_wait(&a[k % 2]);
		if (!err && more)
			err = ahead_start(c, &a[(k + 1) % 2], &next);
		if (!err && !c->stop)
			err = scan_piece(c, &cur, a[k % 2].buf);
		if (cur.first + cur.count >= fmt_itable_blocks(&c->sb))
			fsck_progress(c, cur.group + 1, c->ngroups);
	}
	ahead_wait(&a[0]);
	ahead_wait(&a[1]);
	bdev_free_buf(a[0].buf);
	bdev_free_buf(a[1].buf);
	if (!err && c->ndup)
		fsck_note(c, PR_DUP_FOUND, &(struct fsck_pctx){ .num = c->ndup });
	return err;
}
