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
	bool indexed;                /* the directory has the flag */
	bool on;                     /* it does, or -D will give it one */
	const struct fsck_dblock *run;  /* its blocks in the block list */
	size_t nrun;
	uint64_t nblocks;
	struct dx_rec *want, *got;   /* from the entries; from the index */
	size_t nwant, ngot, capwant, capgot;
	uint16_t *room;              /* per block: the largest record it takes */
	uint8_t *seen;               /* per block: SEEN_NODE, SEEN_FMAP or 0 */
	char why[200];
	uint8_t *buf;
};

/* What the walk of the index found a block to be. */
#define SEEN_NODE 1
#define SEEN_FMAP 2

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

void fsck_dx_block(struct fsck_dx *dx, uint32_t lblk, uint8_t *blk)
{
	struct dx_state *s = (struct dx_state *)dx;
	struct fsck_ctx *c;
	uint32_t end, room = 0;

	if (!s || !s->on || lblk >= s->nblocks || s->c->stop)
		return;
	c = s->c;
	end = c->bs - MFS_DIR_TAIL_SIZE;
	for (uint32_t off = 0; off < end;) {
		const struct mfs_dirent *de = (const void *)(blk + off);
		uint32_t rec = le16toh(de->rec_len), used = de->inode ?
			MFS_DIRENT_LEN(de->name_len) : 0;

		/* A block -n left bad: its entries count up to the damage, and
		 * the index then disagrees, as it should. */
		if (rec < MFS_DIRENT_LEN(0) || rec % 4 || off + rec > end || rec < used)
			break;
		room = UT_MAX(room, rec - used);
		if (de->inode && push(&s->want, &s->nwant, &s->capwant,
				      fmt_dx_hash(&c->sb, de->name, de->name_len), lblk))
			c->stop = -ENOMEM;
		off += rec;
	}
	s->room[lblk] = (uint16_t)room;
}

/* Device block of directory block @lblk: an old one from the list, a new
 * one of a rebuild from @newp; 0 for a hole. */
static uint64_t pblk_of(struct dx_state *s, const uint64_t *newp, uint64_t lblk)
{
	size_t lo = 0, hi = s->nrun;

	if (lblk >= s->nblocks)
		return newp[lblk - s->nblocks];
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (s->run[mid].lblk < lblk)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < s->nrun && s->run[lo].lblk == lblk ? s->run[lo].pblk : 0;
}

/* Read block @lblk of the directory, an index block of @seen's kind, into
 * s->buf (0), or say why not. */
static int read_lblk(struct dx_state *s, uint64_t lblk, uint8_t seen)
{
	uint64_t pblk;

	if (lblk >= s->nblocks)
		return bad(s, "names block %" PRIu64 ", beyond the directory's %" PRIu64,
			   lblk, s->nblocks);
	pblk = pblk_of(s, NULL, lblk);
	if (!pblk)
		return bad(s, "names block %" PRIu64 ", a hole", lblk);
	if (s->seen[lblk])
		return bad(s, "reaches block %" PRIu64 " twice", lblk);
	s->seen[lblk] = seen;
	return fsck_read(s->c, pblk, s->buf) < 0 ? -EIO : 0;
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
		else if (r[i].lblk >= s->nblocks)
			err = bad(s, "names block %" PRIu32 " for an entry, beyond the "
				  "directory's end", r[i].lblk);
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
	int err = read_lblk(s, lblk, SEEN_NODE);

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

/* The room map: every block of entries mapped, no byte above its room,
 * and 0 for every index block. */
static int check_room(struct dx_state *s)
{
	uint32_t per = fmt_dx_limit(&s->c->sb, MFS_DX_FMAP), n, lblks[MFS_DX_FMAP_MAX];
	struct mfs_dx_root_info *ri = fmt_dx_root(s->buf);
	int err = fsck_read(s->c, pblk_of(s, NULL, MFS_DX_ROOT_LBLK), s->buf);

	if (err)
		return err;
	n = le32toh(ri->dr_fmap_count);
	for (uint32_t j = 0; j < n; j++)
		lblks[j] = le32toh(ri->dr_fmap[j]);
	for (uint32_t j = 0; j < n && !err; j++) {
		err = read_lblk(s, lblks[j], SEEN_FMAP);
		if (!err && fmt_dx_check(&s->c->sb, s->ino, s->buf, lblks[j], MFS_DX_FMAP,
					 s->why, sizeof(s->why)))
			err = 1;
	}
	for (uint64_t b = (uint64_t)n * per; b < s->nblocks && !err; b++)
		if (!s->seen[b])
			err = bad(s, "maps no room for block %" PRIu64, b);
	for (uint32_t j = 0; j < n && !err; j++) {
		err = fsck_read(s->c, pblk_of(s, NULL, lblks[j]), s->buf);
		for (uint32_t i = 0; i < per && !err && (uint64_t)j * per + i < s->nblocks; i++) {
			uint64_t b = (uint64_t)j * per + i;
			uint8_t code = fmt_dx_fmap(s->buf)[i];

			if (code && (s->seen[b] ||
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
	int err;

	if (s->nwant)
		qsort(s->want, s->nwant, sizeof(*s->want), cmp_rec);
	err = walk(s, MFS_DX_ROOT_LBLK, MFS_DX_ROOT, -1, 0, 0, false);

	if (!err)
		err = check_room(s);
	if (err)
		return err;
	for (size_t i = 0; i < s->ngot; i++)
		if (s->seen[s->got[i].lblk])
			return bad(s, "names index block %" PRIu32 " for an entry",
				   s->got[i].lblk);
	if (s->ngot != s->nwant)
		return bad(s, "holds %zu records for %zu entries", s->ngot, s->nwant);
	for (size_t i = 0; i < s->ngot; i++)
		if (cmp_rec(&s->got[i], &s->want[i]))
			return bad(s, "has no record of an entry in block %" PRIu32,
				   s->want[i].lblk);
	return 0;
}

/* ---- rebuilding ----------------------------------------------------------- */

/* One block of the new index: its records s->want[first, first + n), or
 * for a node the first records of the blocks below. */
struct dx_part {
	size_t first, n;
	uint32_t lblk;
};

struct dx_plan {
	struct dx_part *leaf, *mid;  /* level 0 and 1 below the root */
	size_t nleaf, nmid;
	unsigned level;              /* the root's */
	uint32_t nfmap;
	uint32_t *lblks;             /* every block the index takes but the root */
	size_t nlblks;
};

/* Cut @n records into blocks of at most @limit, records of one hash
 * together (@recs, or none for nodes); 0 parts when it cannot. */
static size_t cut(const struct dx_rec *recs, size_t n, uint32_t limit,
		  struct dx_part *parts)
{
	size_t np = 0;

	for (size_t at = 0; at < n;) {
		size_t end = UT_MIN(at + limit, n);

		while (recs && end < n && end > at && recs[end - 1].hash == recs[end].hash)
			end--;
		if (end == at)
			return 0;
		parts[np++] = (struct dx_part){ at, end - at, 0 };
		at = end;
	}
	return np;
}

/* The tree's shape for s->want; -ENOSPC when it cannot hold them. */
static int plan_tree(struct dx_state *s, struct dx_plan *p)
{
	struct mfs_super *sb = &s->c->sb;
	uint32_t rl = fmt_dx_limit(sb, MFS_DX_ROOT), nl = fmt_dx_limit(sb, MFS_DX_NODE);

	p->level = 0;
	if (s->nwant <= rl)
		return 0;
	p->leaf = calloc(s->nwant, sizeof(*p->leaf));
	if (!p->leaf)
		return -ENOMEM;
	p->nleaf = cut(s->want, s->nwant, nl, p->leaf);
	p->level = 1;
	if (!p->nleaf)
		return -ENOSPC;
	if (p->nleaf <= rl)
		return 0;
	p->mid = calloc(p->nleaf, sizeof(*p->mid));
	if (!p->mid)
		return -ENOMEM;
	p->nmid = cut(NULL, p->nleaf, nl, p->mid);
	p->level = 2;
	return p->nmid <= rl ? 0 : -ENOSPC;
}


struct dx_build {
	struct dx_state *s;
	struct dx_plan p;
	struct mfs_inode in;
	uint64_t total;              /* the directory's blocks after */
	uint64_t *newp;              /* device blocks from s->nblocks on */
	uint32_t *pool;              /* old index blocks past the root */
	size_t npool;
	uint8_t *code;               /* room map bytes of every block */
};

/* Blocks the index needs, how many come new, and the room maps. */
static int size_up(struct dx_build *b, bool move)
{
	struct dx_state *s = b->s;
	uint32_t per = fmt_dx_limit(&s->c->sb, MFS_DX_FMAP);
	size_t need = 0, fresh = 0;

	b->p.nfmap = 1;
	for (int i = 0; i < 3; i++) {
		need = b->p.nleaf + b->p.nmid + b->p.nfmap;
		fresh = (move ? 1 : 0) + (need > b->npool ? need - b->npool : 0);
		b->total = s->nblocks + fresh;
		b->p.nfmap = (uint32_t)((b->total + per - 1) / per);
	}
	if (b->p.nfmap > MFS_DX_FMAP_MAX || b->total > UINT32_MAX)
		return -ENOSPC;
	b->p.nlblks = need;
	b->p.lblks = calloc(need, sizeof(*b->p.lblks));
	b->newp = calloc(fresh + 1, sizeof(*b->newp));
	b->code = calloc(b->total, 1);
	return b->p.lblks && b->newp && b->code ? 0 : -ENOMEM;
}

/* New blocks at the end of the directory, mapped, the inode updated (not
 * written). */
static int grow_dir(struct dx_build *b)
{
	struct dx_state *s = b->s;
	uint64_t goal = 0, added;
	int err = 0;

	for (uint64_t l = s->nblocks; l < b->total && !err; l++) {
		uint64_t *pb = &b->newp[l - s->nblocks];

		added = 1;
		err = fsck_alloc_block(s->c, goal, pb);
		if (!err)
			err = fsck_bmap_set(s->c, s->ino, &b->in, l, *pb, &added);
		b->in.i_blocks = htole64(le64toh(b->in.i_blocks) + added * (s->c->bs / 512));
		goal = *pb;
	}
	b->in.i_size = htole64(b->total * s->c->bs);
	return err;
}

static int put(struct dx_build *b, uint64_t lblk)
{
	struct dx_state *s = b->s;

	fmt_block_set_csum(&s->c->sb, MFS_CSUM_DIR, s->ino, s->buf);
	return fsck_write(s->c, pblk_of(s, b->newp, lblk), s->buf);
}

/* Index block @lblk: @n records, of entries (@parts NULL: s->want from
 * @first) or of the blocks @parts[first..]. */
static int put_index(struct dx_build *b, unsigned kind, unsigned level, uint64_t lblk,
		     const struct dx_part *parts, size_t first, size_t n)
{
	struct dx_state *s = b->s;
	struct mfs_dx_rec *r;

	fmt_dx_init(&s->c->sb, s->buf, kind, level, (uint32_t)lblk);
	r = fmt_dx_recs(s->buf);
	for (size_t i = 0; i < n; i++) {
		const struct dx_part *pt = parts ? &parts[first + i] : NULL;
		uint64_t h = pt ? (i ? s->want[level > 1 ? b->p.leaf[pt->first].first :
						 pt->first].hash : 0) : s->want[first + i].hash;

		fmt_dx_rec_set(&r[i], h, pt ? pt->lblk : s->want[first + i].lblk);
	}
	fmt_dx_head(s->buf)->dx_count = htole16((uint16_t)n);
	if (kind == MFS_DX_ROOT) {
		struct mfs_dx_root_info *ri = fmt_dx_root(s->buf);
		size_t base = b->p.nleaf + b->p.nmid;

		/* fmt_dx_recs placed the records after the root's list. */
		ri->dr_fmap_count = htole32(b->p.nfmap);
		for (uint32_t j = 0; j < b->p.nfmap; j++)
			ri->dr_fmap[j] = htole32(b->p.lblks[base + j]);
	}
	return put(b, lblk);
}

/* Block 1 becomes the root: entries there move to a new last block. */
static int move_block1(struct dx_build *b)
{
	struct dx_state *s = b->s;
	uint64_t to = s->nblocks;
	int err = fsck_read(s->c, pblk_of(s, b->newp, 1), s->buf);

	if (!err)
		err = fsck_write(s->c, pblk_of(s, b->newp, to), s->buf);
	for (size_t i = 0; i < s->nwant; i++)
		if (s->want[i].lblk == 1)
			s->want[i].lblk = (uint32_t)to;
	if (s->nwant)
		qsort(s->want, s->nwant, sizeof(*s->want), cmp_rec);
	b->code[to] = fmt_dx_room_code(&s->c->sb, s->room[1]);
	return err;
}

/* Places for the index's blocks: old index blocks (those the check
 * reached) first, then new ones (after a moved block 1); the room map
 * bytes of the old blocks. */
static void place_blocks(struct dx_build *b, bool move)
{
	struct dx_state *s = b->s;
	uint64_t next = s->nblocks + (move ? 1 : 0);
	size_t k = 0, i;

	for (i = 0; i < b->p.nlblks; i++)
		b->p.lblks[i] = i < b->npool ? b->pool[i] : (uint32_t)next++;
	for (i = 0; i < b->p.nleaf; i++)
		b->p.leaf[i].lblk = b->p.lblks[k++];
	for (i = 0; i < b->p.nmid; i++)
		b->p.mid[i].lblk = b->p.lblks[k++];
	for (uint64_t l = 0; l < s->nblocks; l++)
		if (!s->seen[l] && l != MFS_DX_ROOT_LBLK)
			b->code[l] = fmt_dx_room_code(&s->c->sb, s->room[l]);
}

/* Old index blocks the new index does not take: empty blocks again. */
static int free_pool(struct dx_build *b)
{
	struct dx_state *s = b->s;
	int err = 0;

	for (size_t i = b->p.nlblks; i < b->npool && !err; i++) {
		fsck_dirblock_init(s->c, s->buf, s->ino, 0);
		b->code[b->pool[i]] = fmt_dx_room_code(&s->c->sb,
						       s->c->bs - MFS_DIR_TAIL_SIZE);
		err = put(b, b->pool[i]);
	}
	return err;
}

static int write_index(struct dx_build *b)
{
	struct dx_state *s = b->s;
	uint32_t per = fmt_dx_limit(&s->c->sb, MFS_DX_FMAP);
	size_t base = b->p.nleaf + b->p.nmid;
	int err = 0;

	for (size_t i = 0; i < b->p.nleaf && !err; i++)
		err = put_index(b, MFS_DX_NODE, 0, b->p.leaf[i].lblk, NULL,
				b->p.leaf[i].first, b->p.leaf[i].n);
	for (size_t i = 0; i < b->p.nmid && !err; i++)
		err = put_index(b, MFS_DX_NODE, 1, b->p.mid[i].lblk, b->p.leaf,
				b->p.mid[i].first, b->p.mid[i].n);
	for (uint32_t j = 0; j < b->p.nfmap && !err; j++) {
		uint64_t from = (uint64_t)j * per;

		fmt_dx_init(&s->c->sb, s->buf, MFS_DX_FMAP, 0, b->p.lblks[base + j]);
		memcpy(fmt_dx_fmap(s->buf), b->code + from, UT_MIN(per, b->total - from));
		err = put(b, b->p.lblks[base + j]);
	}
	if (err)
		return err;
	if (b->p.level == 0)
		return put_index(b, MFS_DX_ROOT, 0, MFS_DX_ROOT_LBLK, NULL, 0, s->nwant);
	if (b->p.level == 1)
		return put_index(b, MFS_DX_ROOT, 1, MFS_DX_ROOT_LBLK, b->p.leaf, 0,
				 b->p.nleaf);
	return put_index(b, MFS_DX_ROOT, 2, MFS_DX_ROOT_LBLK, b->p.mid, 0, b->p.nmid);
}

/* A new index for the directory from its entries (s->want, sorted),
 * in its old index blocks and new ones at its end; -ENOSPC when the
 * entries are more than an index holds. */
static int rebuild(struct dx_state *s)
{
	struct dx_build b = { .s = s };
	bool move = s->seen[MFS_DX_ROOT_LBLK] != SEEN_NODE;
	int err = fsck_read_inode(s->c, s->ino, &b.in);

	b.pool = calloc(s->nblocks, sizeof(*b.pool));
	if (!err && !b.pool)
		err = -ENOMEM;
	for (uint64_t l = MFS_DX_ROOT_LBLK + 1; !err && l < s->nblocks; l++)
		if (s->seen[l])
			b.pool[b.npool++] = (uint32_t)l;
	if (!err)
		err = plan_tree(s, &b.p);
	if (!err)
		err = size_up(&b, move);
	if (!err)
		err = grow_dir(&b);
	if (!err && move)
		err = move_block1(&b);
	if (!err) {
		place_blocks(&b, move);
		err = free_pool(&b);
	}
	if (!err)
		err = write_index(&b);
	if (!err) {
		b.in.i_flags = htole32(le32toh(b.in.i_flags) | MFS_INDEX_FL);
		err = fsck_write_inode(s->c, s->ino, &b.in);
	}
	free(b.p.leaf);
	free(b.p.mid);
	free(b.p.lblks);
	free(b.newp);
	free(b.pool);
	free(b.code);
	return err;
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
	/* The blocks pass 1 listed, not what a damaged i_size says (pass 1
	 * brings the size to them). */
	s->nblocks = UT_MIN(le64toh(in.i_size) / c->bs, (uint64_t)run[s->nrun - 1].lblk + 1);
	s->indexed = le32toh(in.i_flags) & MFS_INDEX_FL;
	s->on = fmt_has_dir_index(&c->sb) && S_ISDIR(le16toh(in.i_mode)) &&
		(s->indexed || (c->o->dir_index && s->nblocks > 1));
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

/* Check the index, and rebuild one that is wrong (or was not there, for
 * -D); an index that cannot hold the entries is dropped. */
static int settle(struct dx_state *s, struct fsck_pctx *p)
{
	int err;

	/* No block for a root: the directory gains its index when it grows
	 * past one block, as the filesystem gives it. */
	if (s->indexed && s->nblocks <= MFS_DX_ROOT_LBLK)
		return fsck_fix(s->c, PR_DX_ONE_BLOCK, p) ? drop(s) : 0;
	err = s->indexed ? verify(s) : 1;

	if (err == 1 && s->indexed && !fsck_fix(s->c, PR_DX_BAD, p))
		return 0;
	if (err == 1 && !s->indexed && s->nwant)
		qsort(s->want, s->nwant, sizeof(*s->want), cmp_rec);
	if (err == 1)
		err = rebuild(s);
	if (!err && !s->indexed)
		fsck_fix(s->c, PR_DX_BUILT, p);
	if (err == -ENOSPC && s->indexed) {
		fsck_fix(s->c, PR_DX_TOO_BIG, p);
		return drop(s);
	}
	return err == -ENOSPC ? 0 : err;
}

int fsck_dx_end(struct fsck_dx *dx, bool check)
{
	struct dx_state *s = (struct dx_state *)dx;
	struct fsck_pctx p = { .ino = s ? s->ino : 0, .str = s ? s->why : NULL };
	int err = 0;

	if (!s)
		return 0;
	if (check && s->on && !s->c->stop)
		err = settle(s, &p);
	free(s->want);
	free(s->got);
	free(s->room);
	free(s->seen);
	free(s->buf);
	free(s);
	return err;
}

