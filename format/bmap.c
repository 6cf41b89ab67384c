/*
 * bmap.c - the one walk over an inode's block map.
 *
 * Its cost is bounded by what is on the disk, never by what a field
 * claims: a null pointer skips every block it would map in one step, so a
 * sparse file of any size costs as many steps as it has indirect blocks
 * and mapped slots, and an i_size no block map can reach is damage.
 */
#include "fmt.h"

#include <errno.h>
#include <inttypes.h>
#include <sys/stat.h>

#include "util.h"

#define MFS_MAX_DEPTH 3   /* indirect levels: single, double, triple */

struct walk {
	const struct fmt_bmap_walk *w;
	uint32_t apb;
	uint64_t first, end;         /* logical blocks wanted: [first, end) */
	uint64_t span[MFS_MAX_DEPTH + 1];  /* blocks under one pointer of a level */
	uint32_t *buf[MFS_MAX_DEPTH];      /* one indirect block per level */
	uint64_t visited, limit;     /* blocks met so far, and at most */
};

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

/*
 * A pointer read from the disk names a block of the groups past their
 * own metadata, or a hole.  A map that meets more blocks than the groups
 * hold points at some of
 * them more than once (indirect blocks can, in a damaged or hostile
 * image, all point at one another): that bounds a walk by the size of the
 * filesystem, whatever the pointers repeat.
 */
static int check_ptr(struct walk *s, uint64_t ptr, uint64_t lblk, uint64_t parent)
{
	const struct fmt_bmap_walk *w = s->w;
	const char *where;

	if (++s->visited > s->limit)
		return ut_corrupt(w->why, w->whylen, "inode %" PRIu32 ": the block map "
				  "meets more than the %" PRIu64 " blocks of the filesystem "
				  "(a block is mapped more than once)", w->ino, s->limit);
	if (ptr >= le64toh(w->sb->s_blocks_count))
		where = "outside the filesystem";
	else if (fmt_block_in_group_meta(w->sb, ptr))
		where = "on the metadata of its group";
	else
		return 0;
	if (!parent)
		return ut_corrupt(w->why, w->whylen, "inode %" PRIu32 ": i_block maps "
				  "block %" PRIu64 " to %" PRIu64 ", %s", w->ino, lblk, ptr,
				  where);
	return ut_corrupt(w->why, w->whylen, "inode %" PRIu32 ": indirect block %"
			  PRIu64 " maps block %" PRIu64 " to %" PRIu64 ", %s", w->ino,
			  parent, lblk, ptr, where);
}

static int visit_data(struct walk *s, uint64_t lblk, uint64_t ptr, uint64_t parent)
{
	int err = check_ptr(s, ptr, lblk, parent);

	return err ? err : s->w->data(s->w->ctx, lblk, ptr);
}

static int read_indirect(struct walk *s, uint64_t blk, int depth)
{
	const struct fmt_bmap_walk *w = s->w;
	uint32_t *ptrs = s->buf[depth - 1];
	int err = w->read_block(w->read_ctx, blk, ptrs);

	if (err)
		return err;
	if (!fmt_block_csum_ok(w->sb, MFS_CSUM_INDIRECT, w->ino, ptrs))
		return ut_corrupt(w->why, w->whylen, "indirect block %" PRIu64 " of inode %"
				  PRIu32 ": checksum mismatch", blk, w->ino);
	return w->indirect ? w->indirect(w->ctx, blk, depth) : 0;
}

/* Walk the tree of @depth levels under indirect block @blk, which maps the
 * logical blocks from @base on; the caller made sure it overlaps the range. */
static int walk_tree(struct walk *s, uint64_t blk, int depth, uint64_t base)
{
	uint64_t child = s->span[depth - 1];
	uint64_t i = s->first > base ? (s->first - base) / child : 0;
	uint64_t stop = UT_MIN((uint64_t)s->apb, UT_DIV_ROUND_UP(s->end - base, child));
	int err = read_indirect(s, blk, depth);

	for (; i < stop && !err; i++) {
		uint64_t ptr = le32toh(s->buf[depth - 1][i]), lblk = base + i * child;

		if (!ptr)
			continue;
		if (depth == 1)
			err = visit_data(s, lblk, ptr, blk);
		else
			err = check_ptr(s, ptr, lblk, blk);
		if (!err && depth > 1)
			err = walk_tree(s, ptr, depth - 1, lblk);
	}
	return err;
}

static int walk_top(struct walk *s, const struct mfs_inode *in)
{
	uint64_t base = MFS_NDIR_BLOCKS;
	int err = 0;

	for (uint64_t b = s->first; b < UT_MIN(s->end, (uint64_t)MFS_NDIR_BLOCKS) && !err; b++)
		if (in->i_block[b])
			err = visit_data(s, b, le32toh(in->i_block[b]), 0);
	for (int depth = 1; depth <= MFS_MAX_DEPTH && !err; depth++) {
		uint64_t ptr = le32toh(in->i_block[MFS_NDIR_BLOCKS + depth - 1]);

		if (ptr && s->first < base + s->span[depth] && s->end > base) {
			err = check_ptr(s, ptr, UT_MAX(base, s->first), 0);
			if (!err)
				err = walk_tree(s, ptr, depth, base);
		}
		base += s->span[depth];
	}
	return err;
}

/* A walk that stays in the direct blocks (most lookups, small files)
 * reads no indirect block and needs no buffer for one. */
static bool needs_indirect(const struct walk *s, const struct mfs_inode *in)
{
	return s->end > MFS_NDIR_BLOCKS && (in->i_block[MFS_IND_BLOCK] ||
	       in->i_block[MFS_DIND_BLOCK] || in->i_block[MFS_TIND_BLOCK]);
}

static int walk_init(struct walk *s, const struct fmt_bmap_walk *w)
{
	uint32_t bs = fmt_block_size(w->sb);
	uint8_t *bufs;

	s->w = w;
	s->apb = fmt_addr_per_block(bs);
	s->limit = le64toh(w->sb->s_blocks_count);
	s->span[0] = 1;
	for (int d = 1; d <= MFS_MAX_DEPTH; d++)
		s->span[d] = s->span[d - 1] * s->apb;
	if (!needs_indirect(s, w->in))
		return 0;
	bufs = bdev_alloc_buf((size_t)MFS_MAX_DEPTH * bs);
	if (!bufs)
		return -ENOMEM;
	for (int d = 0; d < MFS_MAX_DEPTH; d++)
		s->buf[d] = (uint32_t *)(bufs + (size_t)d * bs);
	return 0;
}

static void walk_fini(struct walk *s)
{
	bdev_free_buf(s->buf[0]);
}

int fmt_bmap_walk(const struct fmt_bmap_walk *w, uint64_t first, uint64_t end)
{
	struct walk s = { .first = first };
	int err = fmt_inode_check_size(w->sb, w->ino, w->in, w->why, w->whylen);

	s.end = UT_MIN(end, fmt_max_file_blocks(fmt_block_size(w->sb)));
	if (err || fmt_inode_is_fast_symlink(w->in) || s.first >= s.end)
		return err;
	err = walk_init(&s, w);
	if (!err)
		err = walk_top(&s, w->in);
	walk_fini(&s);
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
