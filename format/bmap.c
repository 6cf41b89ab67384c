/*
 * bmap.c - the one walker over an inode's block map (fmt.h), and the
 * checks that say whether an inode has one a walk can follow.
 *
 * Its cost is bounded by what is on the disk, never by what a field
 * claims: a null pointer skips every block it would map in one step, so a
 * sparse file of any size costs as many steps as it has indirect blocks
 * and mapped slots; a range read meets at most as many blocks as the
 * filesystem holds, however the pointers of a damaged or hostile image
 * repeat; the depth of the tree bounds the recursion.  It holds at most
 * one indirect block of each level at a time, so a caller may keep one
 * buffer per level.
 */
#include "fmt.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <sys/stat.h>

#include "util.h"

#define WHY_LEN 256

uint64_t fmt_max_file_blocks(uint32_t block_size)
{
	return fmt_max_file_size(block_size) / block_size;
}

bool fmt_inode_is_fast_symlink(const struct mfs_inode *in)
{
	return S_ISLNK(le16toh(in->i_mode)) &&
	       le64toh(in->i_size) < sizeof(in->i_block);
}

int fmt_inode_check_size(const struct mfs_super *sb, uint32_t ino,
			 const struct mfs_inode *in, char *why, size_t len)
{
	uint64_t size = le64toh(in->i_size), max = fmt_max_file_size(fmt_block_size(sb));

	if (size <= max)
		return 0;
	return ut_corrupt(why, len, "inode %" PRIu32 ": i_size %" PRIu64 " is beyond "
			  "the largest file of %" PRIu32 "-byte blocks (%" PRIu64 " bytes)",
			  ino, size, fmt_block_size(sb), max);
}

int fmt_inode_check(const struct mfs_super *sb, uint32_t ino,
		    const struct mfs_inode *in, char *why, size_t len)
{
	uint16_t mode = le16toh(in->i_mode);
	uint64_t size = le64toh(in->i_size);
	uint32_t bs = fmt_block_size(sb);

	if (!S_ISREG(mode) && !S_ISDIR(mode) && !S_ISLNK(mode) && !S_ISCHR(mode) &&
	    !S_ISBLK(mode) && !S_ISFIFO(mode) && !S_ISSOCK(mode))
		return ut_corrupt(why, len, "inode %" PRIu32 ": unknown file type in "
				  "mode 0%o", ino, mode);
	if (fmt_inode_check_size(sb, ino, in, why, len))
		return -EUCLEAN;
	if (S_ISDIR(mode) && size % bs)
		return ut_corrupt(why, len, "directory %" PRIu32 ": size %" PRIu64
				  " is not whole blocks", ino, size);
	if (S_ISLNK(mode) && (!size || size >= bs))
		return ut_corrupt(why, len, "symlink %" PRIu32 ": target of %" PRIu64
				  " bytes", ino, size);
	return 0;
}

/* ---- what every mode shares ---------------------------------------------- */

static uint32_t apb_of(const struct mfs_super *sb)
{
	return fmt_addr_per_block(fmt_block_size(sb));
}

/* The inode's i_block, as the walker holds an indirect block. */
static struct fmt_bmap_ind root_of(const struct fmt_bmap *bm)
{
	return (struct fmt_bmap_ind){ .depth = FMT_BMAP_LEVELS + 1,
				      .ptrs = bm->in->i_block };
}

/* Why non-zero pointer @ptr names no block a map may hold, or NULL. */
static const char *ptr_problem(const struct mfs_super *sb, uint64_t ptr)
{
	if (ptr >= le64toh(sb->s_blocks_count))
		return "outside the filesystem";
	if (fmt_block_in_group_meta(sb, ptr))
		return "on the metadata of its group";
	return NULL;
}

/* Word @bad in bm->why (or a buffer of its own) and let the caller judge:
 * the error to end with, or 0 to go on. */
static int damage(const struct fmt_bmap *bm, struct fmt_bmap_bad *bad,
		  const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static int damage(const struct fmt_bmap *bm, struct fmt_bmap_bad *bad,
		  const char *fmt, ...)
{
	char own[WHY_LEN];
	char *why = bm->why && bm->whylen ? bm->why : own;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, why == own ? sizeof(own) : bm->whylen, fmt, ap);
	va_end(ap);
	bad->why = why;
	return bm->ops->damage ? bm->ops->damage(bm->ctx, bad) : -EUCLEAN;
}

/* Damage no walk goes on past. */
static int fatal(int err)
{
	return err ? err : -EUCLEAN;
}

/*
 * Pointer @ptr, of indirect block @parent (0: of i_block), mapping from
 * logical block @lblk on (@shown in the sentence), names no block a map
 * may hold: it is never followed.
 */
static int bad_ptr(const struct fmt_bmap *bm, uint64_t parent, uint64_t lblk,
		   uint64_t shown, uint64_t ptr, const char *where)
{
	struct fmt_bmap_bad bad = { .lblk = lblk, .ptr = ptr, .where = where };

	if (!parent)
		return fatal(damage(bm, &bad, "inode %" PRIu32 ": i_block maps block %"
				    PRIu64 " to %" PRIu64 ", %s", bm->ino, shown, ptr,
				    where));
	return fatal(damage(bm, &bad, "inode %" PRIu32 ": indirect block %" PRIu64
			    " maps block %" PRIu64 " to %" PRIu64 ", %s", bm->ino, parent,
			    shown, ptr, where));
}

/* Indirect block @blk fails its checksum: 0 when the caller takes it. */
static int bad_csum(const struct fmt_bmap *bm, uint64_t blk)
{
	struct fmt_bmap_bad bad = { 0 };

	return damage(bm, &bad, "indirect block %" PRIu64 " of inode %" PRIu32
		      ": checksum mismatch", blk, bm->ino);
}

static bool csum_ok(const struct fmt_bmap *bm, const struct fmt_bmap_ind *ind)
{
	return fmt_block_csum_ok(bm->sb, MFS_CSUM_INDIRECT, bm->ino, ind->ptrs);
}

static int get(const struct fmt_bmap *bm, struct fmt_bmap_ind *ind,
	       enum fmt_bmap_get how)
{
	return bm->ops->get(bm->ctx, ind, how);
}

/* i_block is never got, so never put. */
static void put(const struct fmt_bmap *bm, struct fmt_bmap_ind *ind)
{
	if (ind->blk && bm->ops->put)
		bm->ops->put(bm->ctx, ind);
}

static void lock(const struct fmt_bmap *bm, struct fmt_bmap_ind *ind)
{
	if (bm->ops->lock)
		bm->ops->lock(bm->ctx, ind);
}

static void unlock(const struct fmt_bmap *bm, struct fmt_bmap_ind *ind)
{
	if (bm->ops->unlock)
		bm->ops->unlock(bm->ctx, ind);
}

static int changed(const struct fmt_bmap *bm, struct fmt_bmap_ind *ind)
{
	return bm->ops->changed ? bm->ops->changed(bm->ctx, ind) : 0;
}

/* Seal indirect block @ind (held for writing) with its checksum and have
 * the caller record it. */
static int reseal(const struct fmt_bmap *bm, struct fmt_bmap_ind *ind)
{
	lock(bm, ind);
	fmt_block_set_csum(bm->sb, MFS_CSUM_INDIRECT, bm->ino, ind->ptrs);
	unlock(bm, ind);
	return changed(bm, ind);
}

/* ---- one path: looking up, allocating -------------------------------------- */

/* Pointer @ptr of @parent (0: i_block) on the way to @lblk must name a
 * block a map may hold. */
static int path_check(const struct fmt_bmap *bm, uint64_t parent, uint64_t lblk,
		      uint64_t ptr)
{
	const char *where = ptr_problem(bm->sb, ptr);

	return where ? bad_ptr(bm, parent, lblk, lblk, ptr, where) : 0;
}

/* Follow @ptr of @parent to the indirect block of @depth it names, into
 * @ind, checked; on an error @ind is not held. */
static int path_down(const struct fmt_bmap *bm, uint64_t parent, uint64_t lblk,
		     uint64_t ptr, int depth, struct fmt_bmap_ind *ind)
{
	int err = path_check(bm, parent, lblk, ptr);

	*ind = (struct fmt_bmap_ind){ .blk = ptr, .depth = depth };
	if (!err)
		err = get(bm, ind, FMT_BMAP_READ);
	if (err)
		return err;
	if (!csum_ok(bm, ind))
		err = bad_csum(bm, ptr);
	if (err)
		put(bm, ind);
	return err;
}

/* How many of the @n slots of @leaf from @i on continue slot @i's run: the
 * next block each (each one a block a map may hold), or holes, at most
 * @max.  A slot that breaks the run is left to its own lookup. */
static uint32_t run_of(const struct fmt_bmap *bm, const uint32_t *leaf,
		       uint32_t i, uint32_t n, uint32_t max)
{
	uint64_t first = le32toh(leaf[i]);
	uint32_t k = 1;

	for (; k < max && i + k < n; k++) {
		uint64_t p = le32toh(leaf[i + k]);

		if (first ? p != first + k || ptr_problem(bm->sb, p) : p != 0)
			break;
	}
	return k;
}

int fmt_bmap_find_run(const struct fmt_bmap *bm, uint64_t lblk, uint32_t max,
		      uint64_t *pblk, uint32_t *run)
{
	uint32_t off[4];
	int depth = fmt_block_to_path(apb_of(bm->sb), lblk, off);
	uint64_t parent = 0, ptr;
	int err = 0;

	*pblk = 0;
	*run = 1;
	if (!depth)
		return -EFBIG;
	ptr = le32toh(bm->in->i_block[off[0]]);
	if (depth == 1)
		*run = run_of(bm, bm->in->i_block, off[0], MFS_NDIR_BLOCKS, max);
	for (int d = 1; d < depth && ptr && !err; d++) {
		struct fmt_bmap_ind ind;

		err = path_down(bm, parent, lblk, ptr, depth - d, &ind);
		if (!err) {
			parent = ptr;
			ptr = le32toh(ind.ptrs[off[d]]);
			if (d == depth - 1)
				*run = run_of(bm, ind.ptrs, off[d], apb_of(bm->sb), max);
			put(bm, &ind);
		}
	}
	if (!err && ptr)
		err = path_check(bm, parent, lblk, ptr);
	if (!err)
		*pblk = ptr;
	else
		*run = 1;
	return err;
}

int fmt_bmap_find(const struct fmt_bmap *bm, uint64_t lblk, uint64_t *pblk)
{
	uint32_t run;

	return fmt_bmap_find_run(bm, lblk, 1, pblk, &run);
}

/* Slot @i of @ind (held to read; i_block needs no get) becomes @blk. */
static int set_slot(const struct fmt_bmap *bm, struct fmt_bmap_ind *ind, uint32_t i,
		    uint64_t blk)
{
	int err = ind->blk ? get(bm, ind, FMT_BMAP_WRITE) : 0;

	if (err)
		return err;
	lock(bm, ind);
	ind->ptrs[i] = htole32((uint32_t)blk);
	if (ind->blk)
		fmt_block_set_csum(bm->sb, MFS_CSUM_INDIRECT, bm->ino, ind->ptrs);
	unlock(bm, ind);
	return changed(bm, ind);
}

/*
 * Slot @i of @parent is a hole: a new block there, of @child's depth (0:
 * data).  A new indirect block is sealed empty and recorded before the
 * slot names it, and @child then holds it; on an error it is not held.
 */
static int fill(const struct fmt_bmap *bm, struct fmt_bmap_ind *parent, uint32_t i,
		struct fmt_bmap_ind *child, uint64_t *blk, bool *isnew)
{
	int err = bm->ops->alloc(bm->ctx, child->depth, blk);

	if (err)
		return err;
	*isnew = !child->depth;
	if (child->depth) {
		child->blk = *blk;
		err = get(bm, child, FMT_BMAP_NEW);
		if (err)
			return err;
		err = reseal(bm, child);
	}
	if (!err)
		err = set_slot(bm, parent, i, *blk);
	if (err)
		put(bm, child);
	return err;
}

int fmt_bmap_alloc(const struct fmt_bmap *bm, uint64_t lblk, uint64_t *pblk,
		   bool *isnew)
{
	uint32_t off[4];
	int depth = fmt_block_to_path(apb_of(bm->sb), lblk, off);
	struct fmt_bmap_ind cur = root_of(bm);
	uint64_t ptr = 0;
	int err = 0;

	*isnew = false;
	if (!depth)
		return -EFBIG;
	for (int d = 0; d < depth && !err; d++) {
		struct fmt_bmap_ind next = { .depth = depth - 1 - d };

		ptr = le32toh(cur.ptrs[off[d]]);
		if (!ptr)
			err = fill(bm, &cur, off[d], &next, &ptr, isnew);
		else if (next.depth)
			err = path_down(bm, cur.blk, lblk, ptr, next.depth, &next);
		else
			err = path_check(bm, cur.blk, lblk, ptr);
		put(bm, &cur);
		cur = next;
	}
	*pblk = ptr;
	return err;
}

/* ---- a range: reading, freeing, editing ------------------------------------- */

/* A block the range walk holds, and whether its pointers changed. */
struct held {
	struct fmt_bmap_ind ind;
	bool dirty;
};

struct walk {
	const struct fmt_bmap *bm;
	const struct fmt_bmap_visit *v;
	uint32_t apb;
	uint64_t first, end;         /* logical blocks walked: [first, end) */
	uint64_t span[FMT_BMAP_LEVELS + 1];  /* blocks under one pointer of a level */
	uint64_t visited, limit;     /* pointers met, and at most (the mode's) */
	bool edit;                   /* the visitor judges damage */
	bool write;                  /* blocks are got to be changed */
	bool reseal_all;             /* and every one of them is resealed */
	bool stopped;
	/* fmt_bmap_read's */
	int (*data)(void *arg, uint64_t lblk, uint64_t pblk);
	int (*indirect)(void *arg, uint64_t blk, int depth);
	void *arg;
	int ret;                     /* the positive value that ended it */
};

static void walk_init(struct walk *s, const struct fmt_bmap *bm,
		      const struct fmt_bmap_visit *v, uint64_t first, uint64_t end)
{
	s->bm = bm;
	s->v = v;
	s->apb = apb_of(bm->sb);
	s->first = first;
	s->end = UT_MIN(end, fmt_max_file_blocks(fmt_block_size(bm->sb)));
	s->span[0] = 1;
	for (int d = 1; d <= FMT_BMAP_LEVELS; d++)
		s->span[d] = s->span[d - 1] * s->apb;
}

/* Asked before every pointer: once true, true for the rest of the walk. */
static bool stopped(struct walk *s)
{
	const struct fmt_bmap_ops *ops = s->bm->ops;

	if (!s->stopped && ops->stop)
		s->stopped = ops->stop(s->bm->ctx);
	return s->stopped;
}

/* Slot @i of @h becomes @v (little-endian): i_block is recorded at once,
 * an indirect block when the walk leaves it. */
static int store(struct walk *s, struct held *h, uint32_t i, uint32_t v)
{
	lock(s->bm, &h->ind);
	h->ind.ptrs[i] = v;
	unlock(s->bm, &h->ind);
	if (!h->ind.blk)
		return changed(s->bm, &h->ind);
	h->dirty = true;
	return 0;
}

/* What a visitor's answer @r makes of slot @i of @parent, now *@v. */
static int settle(struct walk *s, struct held *parent, uint32_t i, int r, uint32_t *v)
{
	if (r == FMT_BMAP_ZERO)
		*v = 0;
	if (r == FMT_BMAP_STOP)
		s->stopped = true;
	return *v != parent->ind.ptrs[i] ? store(s, parent, i, *v) : 0;
}

/* Every pointer met counts: a map that meets more blocks than the limit
 * maps some of them more than once. */
static int count(struct walk *s, uint64_t lblk)
{
	struct fmt_bmap_bad bad = { .lblk = lblk };

	if (++s->visited <= s->limit)
		return 0;
	return fatal(damage(s->bm, &bad, "inode %" PRIu32 ": the block map meets more "
			    "than the %" PRIu64 " blocks of the filesystem (a block is "
			    "mapped more than once)", s->bm->ino, s->limit));
}

/* Pointer @ptr of @parent, mapping from @lblk on, names no block a map
 * may hold (@where): damage, unless the visitor judges it. */
static int range_bad_ptr(struct walk *s, const struct held *parent, uint64_t lblk,
			 uint64_t ptr, const char *where)
{
	uint64_t blk = parent->ind.blk;

	return bad_ptr(s->bm, blk, lblk, blk ? lblk : UT_MAX(lblk, s->first), ptr, where);
}

/* A pointer met, checked here for every mode: named bad in @sl->bad if it
 * names no block a map may hold. */
static int check_slot(struct walk *s, const struct held *parent,
		      struct fmt_bmap_slot *sl)
{
	uint64_t ptr = le32toh(*sl->ptr);
	int err = count(s, sl->lblk);

	if (err)
		return err;
	sl->bad = ptr_problem(s->bm->sb, ptr);
	if (!sl->bad || s->edit)
		return 0;
	return range_bad_ptr(s, parent, sl->lblk, ptr, sl->bad);
}

static int walk_ptrs(struct walk *s, struct held *h, uint64_t base);

/* Indirect block @h failed its checksum: KEEP walks it as it is. */
static int bad_indirect(struct walk *s, struct fmt_bmap_slot *sl)
{
	if (!s->edit)
		return bad_csum(s->bm, le32toh(*sl->ptr));
	return s->v->bad_indirect ? s->v->bad_indirect(s->v->arg, sl) : FMT_BMAP_SKIP;
}

/* The indirect block slot @i of @parent names (@sl), and what it maps. */
static int walk_indirect(struct walk *s, struct held *parent, uint32_t i,
			 struct fmt_bmap_slot *sl)
{
	struct held h = { .ind = { .blk = le32toh(*sl->ptr), .depth = sl->depth } };
	int e, err = get(s->bm, &h.ind, FMT_BMAP_READ);

	if (err)
		return err;
	if (!csum_ok(s->bm, &h.ind)) {
		int r = bad_indirect(s, sl);

		if (r != FMT_BMAP_KEEP) {
			put(s->bm, &h.ind);
			return r < 0 ? r : settle(s, parent, i, r, sl->ptr);
		}
		h.dirty = s->edit;       /* walked as it is, and resealed */
	}
	if (s->write)
		err = get(s->bm, &h.ind, FMT_BMAP_WRITE);
	if (err) {
		put(s->bm, &h.ind);
		return err;
	}
	if (s->v->enter)
		err = s->v->enter(s->v->arg, sl);
	if (err == FMT_BMAP_STOP)
		s->stopped = true;
	if (err >= 0)
		err = walk_ptrs(s, &h, sl->lblk);
	/* What changed is recorded even when a later step failed: the block
	 * the caller holds and the one it writes must say the same. */
	if (h.dirty || s->reseal_all) {
		e = reseal(s->bm, &h.ind);
		err = err ? err : e;
	}
	put(s->bm, &h.ind);
	return err;
}

/* Non-zero slot @i of @parent, of @depth, mapping from @lblk on. */
static int walk_slot(struct walk *s, struct held *parent, uint32_t i, uint64_t lblk,
		     int depth)
{
	uint32_t old = parent->ind.ptrs[i], v = old;
	struct fmt_bmap_slot sl = { .lblk = lblk, .span = s->span[depth],
				    .depth = depth, .ptr = &v };
	int err, r = check_slot(s, parent, &sl);

	if (!r)
		r = s->v->visit(s->v->arg, &sl);
	if (r < 0)
		return r;
	err = settle(s, parent, i, r, &v);
	if (err || r != FMT_BMAP_KEEP || !depth || !v)
		return err;
	/* Never read what is not a block of the groups' data. */
	if (v == old ? sl.bad : ptr_problem(s->bm->sb, le32toh(v)))
		return 0;
	err = walk_indirect(s, parent, i, &sl);
	v = parent->ind.ptrs[i];
	if (err || !v || !s->v->leave)
		return err;
	r = s->v->leave(s->v->arg, &sl);
	return r < 0 ? r : settle(s, parent, i, r, &v);
}

static int ended(struct walk *s, int r);

/* A data block of a read walk goes straight to the reader: the visitor's
 * machinery is for walks that change the map, and would cost a read walk
 * (the write path asks where holes are) half as much again per block. */
static int read_data(struct walk *s, const struct held *parent, uint64_t lblk,
		     uint64_t ptr)
{
	const char *where = ptr_problem(s->bm->sb, ptr);
	int r = count(s, lblk);

	if (!r && where)
		r = range_bad_ptr(s, parent, lblk, ptr, where);
	if (!r)
		r = ended(s, s->data(s->arg, lblk, ptr));
	if (r == FMT_BMAP_STOP)
		s->stopped = true;
	return r < 0 ? r : 0;
}

/* Non-zero slot @i of @h, of @depth, mapping from @lblk on. */
static int walk_one(struct walk *s, struct held *h, uint32_t i, uint64_t lblk, int depth)
{
	if (!depth && s->data)
		return read_data(s, h, lblk, le32toh(h->ind.ptrs[i]));
	return walk_slot(s, h, i, lblk, depth);
}

/* The pointers of @h, which maps from @base on, that reach the range. */
static int walk_ptrs(struct walk *s, struct held *h, uint64_t base)
{
	int depth = h->ind.depth;
	uint64_t child = s->span[depth - 1];
	uint32_t i = s->first > base ? (uint32_t)((s->first - base) / child) : 0;
	int err = 0;

	for (; i < s->apb && !err && !stopped(s); i++) {
		uint64_t lblk = base + i * child;

		if (lblk >= s->end)
			break;
		if (h->ind.ptrs[i])
			err = walk_one(s, h, i, lblk, depth - 1);
	}
	return err;
}

static int walk_top(struct walk *s)
{
	struct held root = { .ind = root_of(s->bm) };
	uint32_t *slot = root.ind.ptrs;
	uint64_t base = MFS_NDIR_BLOCKS;
	int err = 0;

	for (uint64_t b = s->first; b < UT_MIN(s->end, (uint64_t)MFS_NDIR_BLOCKS) && !err &&
	     !stopped(s); b++)
		if (slot[b])
			err = walk_one(s, &root, (uint32_t)b, b, 0);
	for (int d = 1; d <= FMT_BMAP_LEVELS && !err && !stopped(s); d++) {
		uint32_t i = MFS_NDIR_BLOCKS + d - 1;

		if (slot[i] && s->first < base + s->span[d] && s->end > base)
			err = walk_slot(s, &root, i, base, d);
		base += s->span[d];
	}
	return err;
}

/* A positive value from a reader's callback ends the walk as its result. */
static int ended(struct walk *s, int r)
{
	if (r <= 0)
		return r;
	s->ret = r;
	return FMT_BMAP_STOP;
}

/* Only indirect blocks come here (read_data takes the others). */
static int read_visit(void *arg, struct fmt_bmap_slot *sl)
{
	(void)arg;
	(void)sl;
	return FMT_BMAP_KEEP;
}

static int read_enter(void *arg, struct fmt_bmap_slot *sl)
{
	struct walk *s = arg;

	if (!s->indirect)
		return 0;
	return ended(s, s->indirect(s->arg, le32toh(*sl->ptr), sl->depth));
}

int fmt_bmap_read(const struct fmt_bmap *bm, uint64_t first, uint64_t end,
		  int (*data)(void *arg, uint64_t lblk, uint64_t pblk),
		  int (*indirect)(void *arg, uint64_t blk, int depth), void *arg)
{
	struct walk s = { .data = data, .indirect = indirect, .arg = arg,
			  .limit = le64toh(bm->sb->s_blocks_count) };
	struct fmt_bmap_visit v = { .visit = read_visit, .enter = read_enter, .arg = &s };
	char why[WHY_LEN];
	int err;

	if (fmt_inode_check_size(bm->sb, bm->ino, bm->in, why, sizeof(why))) {
		struct fmt_bmap_bad bad = { 0 };

		return fatal(damage(bm, &bad, "%s", why));
	}
	walk_init(&s, bm, &v, first, end);
	if (fmt_inode_is_fast_symlink(bm->in) || s.first >= s.end)
		return 0;
	err = walk_top(&s);
	return err ? err : s.ret;
}

static int free_visit(void *arg, struct fmt_bmap_slot *sl)
{
	struct walk *s = arg;
	int err;

	if (sl->depth)
		return FMT_BMAP_KEEP;
	err = s->bm->ops->free(s->bm->ctx, le32toh(*sl->ptr), 0);
	return err ? err : FMT_BMAP_ZERO;
}

/* An indirect block goes only when its whole span is freed: one the range
 * covers in part stays, even if left empty. */
static int free_leave(void *arg, struct fmt_bmap_slot *sl)
{
	struct walk *s = arg;
	int err;

	if (s->stopped || sl->lblk < s->first || sl->lblk + sl->span > s->end)
		return FMT_BMAP_KEEP;
	err = s->bm->ops->free(s->bm->ctx, le32toh(*sl->ptr), sl->depth);
	return err ? err : FMT_BMAP_ZERO;
}

int fmt_bmap_free(const struct fmt_bmap *bm, uint64_t from, uint64_t end,
		  bool *stopped_early)
{
	struct walk s = { .write = true, .reseal_all = true, .limit = UINT64_MAX };
	struct fmt_bmap_visit v = { .visit = free_visit, .leave = free_leave, .arg = &s };
	int err = 0;

	walk_init(&s, bm, &v, from, end);
	if (!fmt_inode_is_fast_symlink(bm->in) && s.first < s.end)
		err = walk_top(&s);
	*stopped_early = s.stopped;
	return err;
}

int fmt_bmap_edit(const struct fmt_bmap *bm, const struct fmt_bmap_visit *v)
{
	struct walk s = { .edit = true, .write = true, .limit = UINT64_MAX };

	if (fmt_inode_is_fast_symlink(bm->in))
		return 0;
	walk_init(&s, bm, v, 0, UINT64_MAX);
	return walk_top(&s);
}

/* ---- reads without a cache ---------------------------------------------------- */

struct raw_walk {
	const struct fmt_bmap_walk *w;
	uint8_t *bufs;               /* one block per level */
	uint32_t bs;
};

static int raw_get(void *ctx, struct fmt_bmap_ind *ind, enum fmt_bmap_get how)
{
	struct raw_walk *r = ctx;

	(void)how;                   /* a read walk only reads */
	ind->ptrs = (uint32_t *)(r->bufs + (size_t)(ind->depth - 1) * r->bs);
	return r->w->read_block(r->w->read_ctx, ind->blk, ind->ptrs);
}

static const struct fmt_bmap_ops raw_ops = { .get = raw_get };

/* A walk that stays in the direct blocks (most lookups, small files)
 * reads no indirect block and needs no buffer for one. */
static bool needs_indirect(const struct mfs_inode *in, uint64_t end)
{
	return end > MFS_NDIR_BLOCKS && !fmt_inode_is_fast_symlink(in) &&
	       (in->i_block[MFS_IND_BLOCK] || in->i_block[MFS_DIND_BLOCK] ||
		in->i_block[MFS_TIND_BLOCK]);
}

int fmt_bmap_walk(const struct fmt_bmap_walk *w, uint64_t first, uint64_t end)
{
	struct mfs_inode in = *w->in;
	struct raw_walk r = { .w = w, .bs = fmt_block_size(w->sb) };
	struct fmt_bmap bm = { .sb = w->sb, .ino = w->ino, .in = &in, .ops = &raw_ops,
			       .ctx = &r, .why = w->why, .whylen = w->whylen };
	int err;

	if (needs_indirect(&in, end)) {
		r.bufs = bdev_alloc_buf((size_t)FMT_BMAP_LEVELS * r.bs);
		if (!r.bufs)
			return -ENOMEM;
	}
	err = fmt_bmap_read(&bm, first, end, w->data, w->indirect, w->ctx);
	bdev_free_buf(r.bufs);
	return err;
}

struct map_all {
	const struct fmt_bmap_walk *w;
	uint64_t *map;
	uint64_t n, got;
};

static int map_one(void *arg, uint64_t lblk, uint64_t pblk)
{
	struct map_all *m = arg;

	if (lblk != m->got)
		return ut_corrupt(m->w->why, m->w->whylen, "inode %" PRIu32 ": hole at "
				  "block %" PRIu64, m->w->ino, m->got);
	m->map[m->got++] = pblk;
	return 0;
}

int fmt_bmap_map_all(const struct fmt_bmap_walk *w, uint64_t *map, uint64_t n)
{
	struct map_all m = { .w = w, .map = map, .n = n };
	struct fmt_bmap_walk walk = *w;
	int err;

	walk.data = map_one;
	walk.ctx = &m;
	err = fmt_bmap_walk(&walk, 0, n);
	if (!err && m.got != n)
		err = ut_corrupt(w->why, w->whylen, "inode %" PRIu32 " maps %" PRIu64
				 " of its %" PRIu64 " blocks", w->ino, m.got, n);
	return err;
}
