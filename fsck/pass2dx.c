/*
 * pass2dx.c - the hashed index of a directory (FORMAT.md, "Directory
 * index"), checked against the directory's entries as pass 2 leaves them.
 *
 * Pass 2 hands over each block of an indexed directory after its checks
 * and fixes: the entries give the records the index must hold, one per
 * entry, and each block's room.  When the directory's last block is done,
 * the index is walked from its root (read from the image) and must hold
 * exactly those records, sorted, in blocks of one depth whose hashes stay
 * in their parent's range, with a room map that never overstates a
 * block's room.  An index that fails is dropped (the flag cleared): the
 * directory's blocks stay valid as they are, read by their entries.
 */
#include "fsck_i.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>

struct dx_rec {
	uint64_t hash;
	uint32_t lblk;
};

struct dx_state {
	struct fsck_ctx *c;
	uint32_t ino;
	bool on;                     /* the directory has the flag */
	const struct fsck_dblock *run;  /* its blocks in the block list */
	size_t nrun;
	uint64_t nblocks;
	struct dx_rec *want, *got;   /* from the entries; from the index */
	size_t nwant, ngot, capwant, capgot;
	uint16_t *room;              /* per block: room, or ROOM_INDEX */
	uint8_t *seen;               /* per block: reached by the walk */
	char why[200];
	uint8_t *buf;
};

#define ROOM_INDEX UINT16_MAX

static int push(struct dx_rec **v, size_t *n, size_t *cap, uint64_t hash, uint32_t lblk)
{
	if (*n == *cap) {
		size_t ncap = *cap ? *cap * 2 : 1024;
		struct dx_rec *nv = realloc(*v, ncap * sizeof(**v));

		if (!nv)
			return -ENOMEM;
		*v = nv;
		*cap = ncap;
	}
	(*v)[(*n)++] = (struct dx_rec){ hash, lblk };
	return 0;
}

static int bad(struct dx_state *s, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(s->why, sizeof(s->why), fmt, ap);
	va_end(ap);
	return 1;
}

/* Is @blk an index block (the unused record and the magic)? */
static bool is_index(const struct fsck_ctx *c, uint8_t *blk)
{
	const struct mfs_dirent *de = (const void *)blk;

	return !de->inode && le16toh(de->rec_len) == c->bs - MFS_DIR_TAIL_SIZE &&
	       le32toh(fmt_dx_head(blk)->dx_magic) == MFS_DX_MAGIC;
}

void fsck_dx_block(struct fsck_dx *dx, uint32_t lblk, uint8_t *blk)
{
	struct dx_state *s = (struct dx_state *)dx;
	struct fsck_ctx *c = s->c;
	uint32_t end = c->bs - MFS_DIR_TAIL_SIZE, room = 0;

	if (!s || !s->on || lblk >= s->nblocks || s->c->stop)
		return;
	if (is_index(c, blk)) {
		s->room[lblk] = ROOM_INDEX;
		return;
	}
	for (uint32_t off = 0; off < end;) {
		const struct mfs_dirent *de = (const void *)(blk + off);
		uint32_t rec = le16toh(de->rec_len), used = de->inode ?
			MFS_DIRENT_LEN(de->name_len) : 0;

		if (rec < MFS_DIRENT_LEN(0) || off + rec > end)
			break;          /* a block pass 2 left bad: the walk says so */
		room = UT_MAX(room, rec - used);
		if (de->inode && push(&s->want, &s->nwant, &s->capwant,
				      fmt_dx_hash(&c->sb, de->name, de->name_len), lblk))
			c->stop = -ENOMEM;
		off += rec;
	}
	s->room[lblk] = (uint16_t)room;
}

/* Read block @lblk of the directory into s->buf (0), or say why not. */
static int read_lblk(struct dx_state *s, uint64_t lblk)
{
	size_t lo = 0, hi = s->nrun;

	if (lblk >= s->nblocks)
		return bad(s, "names block %" PRIu64 ", beyond the directory's %" PRIu64,
			   lblk, s->nblocks);
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (s->run[mid].lblk < lblk)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == s->nrun || s->run[lo].lblk != lblk || !s->run[lo].pblk)
		return bad(s, "names block %" PRIu64 ", a hole", lblk);
	if (s->seen[lblk]++)
		return bad(s, "reaches block %" PRIu64 " twice", lblk);
	return fsck_read(s->c, s->run[lo].pblk, s->buf) < 0 ? -EIO : 0;
}

static int walk(struct dx_state *s, uint64_t lblk, unsigned kind, int level,
		uint64_t lo, uint64_t hi, bool bounded);

/* The records of one index block, copied out of s->buf. */
static int walk_recs(struct dx_state *s, unsigned level, uint64_t lo, uint64_t hi,
		     bool bounded)
{
	struct mfs_dx_head *h = fmt_dx_head(s->buf);
	uint32_t n = le16toh(h->dx_count);
	struct dx_rec *r = malloc((n ? n : 1) * sizeof(*r));
	int err = r ? 0 : -ENOMEM;

	for (uint32_t i = 0; i < n && r; i++)
		r[i] = (struct dx_rec){ fmt_dx_rec_hash(&fmt_dx_recs(s->buf)[i]),
					le32toh(fmt_dx_recs(s->buf)[i].dr_lblk) };
	if (!err && fmt_dx_sorted(fmt_dx_recs(s->buf), n, !level))
		err = bad(s, "block %" PRIu32 " has its records out of order",
			  le32toh(h->dx_lblk));
	if (!err && level && (!n || r[0].hash))
		err = bad(s, "node %" PRIu32 " has no first record of hash 0",
			  le32toh(h->dx_lblk));
	for (uint32_t i = 0; i < n && !err; i++) {
		uint64_t rlo = i ? r[i].hash : lo, rhi = i + 1 < n ? r[i + 1].hash : hi;
		bool rb = i + 1 < n || bounded;

		if ((i && r[i].hash < lo) || (bounded && r[i].hash >= hi))
			err = bad(s, "block %" PRIu32 " holds a hash outside its parent's range",
				  le32toh(h->dx_lblk));
		else if (level)
			err = walk(s, r[i].lblk, MFS_DX_NODE, (int)level - 1, rlo, rhi, rb);
		else if (r[i].lblk >= s->nblocks || s->room[r[i].lblk] == ROOM_INDEX)
			err = bad(s, "names block %" PRIu32 " for an entry, not a block of "
				  "entries", r[i].lblk);
		else if (push(&s->got, &s->ngot, &s->capgot, r[i].hash, r[i].lblk))
			err = -ENOMEM;
	}
	free(r);
	return err;
}

static int walk(struct dx_state *s, uint64_t lblk, unsigned kind, int level,
		uint64_t lo, uint64_t hi, bool bounded)
{
	struct mfs_dx_head *h = fmt_dx_head(s->buf);
	int err = read_lblk(s, lblk);

	if (!err && fmt_dx_check(&s->c->sb, s->ino, s->buf, (uint32_t)lblk, kind,
				 s->why, sizeof(s->why)))
		err = 1;
	if (!err && level >= 0 && h->dx_level != level)
		err = bad(s, "node %" PRIu64 " has level %u where %d belongs", lblk,
			  h->dx_level, level);
	if (!err)
		err = walk_recs(s, h->dx_level, lo, hi, bounded);
	return err;
}

/* The room map: every block of entries mapped, no byte above its room. */
static int check_room(struct dx_state *s)
{
	uint32_t per = fmt_dx_limit(&s->c->sb, MFS_DX_FMAP), n, lblks[MFS_DX_FMAP_MAX];
	struct mfs_dx_root_info *ri = fmt_dx_root(s->buf);
	int err;

	memset(s->seen, 0, s->nblocks);
	err = read_lblk(s, MFS_DX_ROOT_LBLK);
	if (err)
		return err;
	n = le32toh(ri->dr_fmap_count);
	for (uint32_t j = 0; j < n; j++)
		lblks[j] = le32toh(ri->dr_fmap[j]);
	for (uint64_t b = (uint64_t)n * per; b < s->nblocks; b++)
		if (s->room[b] != ROOM_INDEX)
			return bad(s, "maps no room for block %" PRIu64, b);
	for (uint32_t j = 0; j < n && !err; j++) {
		err = read_lblk(s, lblks[j]);
		if (!err && fmt_dx_check(&s->c->sb, s->ino, s->buf, lblks[j], MFS_DX_FMAP,
					 s->why, sizeof(s->why)))
			err = 1;
		for (uint32_t i = 0; i < per && !err && (uint64_t)j * per + i < s->nblocks; i++) {
			uint64_t b = (uint64_t)j * per + i;
			uint8_t code = fmt_dx_fmap(s->buf)[i];

			if (code && (s->room[b] == ROOM_INDEX ||
				     fmt_dx_room_code(&s->c->sb, s->room[b]) < code))
				err = bad(s, "says block %" PRIu64 " has more room than it has", b);
		}
	}
	return err;
}

static int cmp_rec(const void *a, const void *b)
{
	const struct dx_rec *x = a, *y = b;

	if (x->hash != y->hash)
		return x->hash < y->hash ? -1 : 1;
	return x->lblk < y->lblk ? -1 : x->lblk > y->lblk;
}

/* 0: the index matches; 1: it does not (s->why); -errno. */
static int verify(struct dx_state *s)
{
	int err = walk(s, MFS_DX_ROOT_LBLK, MFS_DX_ROOT, -1, 0, 0, false);

	if (!err)
		err = check_room(s);
	if (err)
		return err;
	qsort(s->want, s->nwant, sizeof(*s->want), cmp_rec);
	if (s->ngot != s->nwant)
		return bad(s, "holds %zu records for %zu entries", s->ngot, s->nwant);
	for (size_t i = 0; i < s->ngot; i++)
		if (cmp_rec(&s->got[i], &s->want[i]))
			return bad(s, "has no record of an entry in block %" PRIu32,
				   s->want[i].lblk);
	return 0;
}

int fsck_dx_begin(struct fsck_ctx *c, const struct fsck_dblock *run, size_t left,
		  struct fsck_dx **out)
{
	struct dx_state *s = calloc(1, sizeof(*s));
	struct mfs_inode in;
	int err = s ? fsck_read_inode(c, run->ino, &in) : -ENOMEM;

	if (err) {
		free(s);
		return err;
	}
	s->c = c;
	s->ino = run->ino;
	s->run = run;
	while (s->nrun < left && run[s->nrun].ino == run->ino)
		s->nrun++;
	s->nblocks = le64toh(in.i_size) / c->bs;
	s->on = fmt_has_dir_index(&c->sb) && (le32toh(in.i_flags) & MFS_INDEX_FL) &&
		S_ISDIR(le16toh(in.i_mode));
	if (s->on) {
		s->room = calloc(s->nblocks + 1, sizeof(*s->room));
		s->seen = calloc(s->nblocks + 1, 1);
		s->buf = bdev_alloc_buf(c->bs);
		if (!s->room || !s->seen || !s->buf)
			err = -ENOMEM;
	}
	*out = (struct fsck_dx *)s;
	return err;
}

/* Clear the index flag: the blocks are read by their entries from now. */
static int drop(struct dx_state *s)
{
	struct mfs_inode in;
	int err = fsck_read_inode(s->c, s->ino, &in);

	if (err)
		return err;
	in.i_flags = htole32(le32toh(in.i_flags) & ~MFS_INDEX_FL);
	return fsck_write_inode(s->c, s->ino, &in);
}

int fsck_dx_end(struct fsck_dx *dx, bool check)
{
	struct dx_state *s = (struct dx_state *)dx;
	struct fsck_pctx p = { .ino = s ? s->ino : 0, .str = s ? s->why : NULL };
	int err = 0;

	if (!s)
		return 0;
	if (check && s->on && !s->c->stop) {
		err = verify(s);
		if (err == 1)
			err = fsck_fix(s->c, PR_DX_BAD, &p) ? drop(s) : 0;
	}
	free(s->want);
	free(s->got);
	free(s->room);
	free(s->seen);
	free(s->buf);
	free(s);
	return err;
}
