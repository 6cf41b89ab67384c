/*
 * dx.c - a directory's hashed index on the disk (FORMAT.md, "Directory
 * index"): one record per name, (hash, block), in a tree of index blocks
 * rooted at the directory's block 1, and a room map of one byte per block.
 *
 * The entries themselves never move (dir.c puts them where the room map
 * says there is room), so a readdir position stays good across inserts
 * and a linear walk of the blocks still sees every entry: index blocks
 * look to it like empty blocks.  A lookup reads the root, a node or two,
 * and the one block its record names, whatever the directory's size.
 *
 * Everything here runs under the directory's rwsem (for writing when it
 * changes the index, under a journal handle: index blocks are journalled
 * like every directory block).  Each index block's head is checked every
 * time the walk reaches it (constant time); its checksum and layout as a
 * directory block once, when it is read (dir.c).
 */
#include "mfs_i.h"
#include "blockmap.h"
#include "dir.h"

#include <errno.h>
#include <inttypes.h>
#include <string.h>

struct dx_step {
	uint64_t lblk;
	uint32_t at;                 /* the record taken to the next level */
};

/* The blocks from the root (s[0]) down to the level-0 block. */
struct dx_path {
	unsigned depth;
	struct dx_step s[MFS_DX_MAX_LEVEL + 1];
};

static int fmap_list(struct mfs_node *dir, uint32_t *n, uint32_t *lblks);

bool mfs_dx_on(struct mfs_node *dir)
{
	uint32_t flags;

	if (!fmt_has_dir_index(&dir->fs->sb))
		return false;
	pthread_mutex_lock(&dir->lock);
	flags = le32toh(dir->raw.i_flags);
	pthread_mutex_unlock(&dir->lock);
	return flags & MFS_INDEX_FL;
}

static struct mfs_dx_head *head(struct pc_page *pg)
{
	return fmt_dx_head(pg->data);
}

static uint32_t count(struct pc_page *pg)
{
	return le16toh(head(pg)->dx_count);
}

static void set_count(struct pc_page *pg, uint32_t n)
{
	head(pg)->dx_count = htole16((uint16_t)n);
}

/* Index block @lblk of @dir as a @kind at @level (-1: any), referenced. */
static int dx_get(struct mfs_node *dir, uint64_t lblk, unsigned kind, int level,
		  struct pc_page **pg)
{
	struct mfs_fs *fs = dir->fs;
	char why[256];
	int err;

	if (lblk >= mfs_dir_blocks(dir) || lblk > UINT32_MAX)
		return mfs_error(fs, "directory %" PRIu64 ": index names block %" PRIu64
				 ", beyond its end", dir->ino, lblk);
	err = mfs_dir_page(dir, lblk, pg);
	if (err)
		return err;
	atomic_fetch_add_explicit(&fs->st.dx_reads, 1, memory_order_relaxed);
	err = fmt_dx_check(&fs->sb, (uint32_t)dir->ino, (*pg)->data, (uint32_t)lblk,
			   kind, why, sizeof(why));
	if (!err && level >= 0 && head(*pg)->dx_level != level)
		err = mfs_error(fs, "directory %" PRIu64 ": index node %" PRIu64
				" has level %u, its parent says %d", dir->ino, lblk,
				head(*pg)->dx_level, level);
	else if (!err && kind != MFS_DX_FMAP && head(*pg)->dx_level && !count(*pg))
		err = mfs_error(fs, "directory %" PRIu64 ": index node %" PRIu64
				" has no records", dir->ino, lblk);
	else if (err)
		err = mfs_error(fs, "%s", why);
	if (err)
		pc_put_page(*pg);
	return err;
}

/* Walk from the root to the level-0 block for @hash, referenced. */
static int dx_walk(struct mfs_node *dir, uint64_t hash, struct dx_path *p,
		   struct pc_page **leaf)
{
	uint64_t lblk = MFS_DX_ROOT_LBLK;
	unsigned kind = MFS_DX_ROOT;
	int level = -1, err;
	struct pc_page *pg;

	for (p->depth = 0;; p->depth++) {
		struct mfs_dx_rec *r;

		err = dx_get(dir, lblk, kind, level, &pg);
		if (err)
			return err;
		p->s[p->depth] = (struct dx_step){ lblk, 0 };
		level = head(pg)->dx_level;
		if (!level) {
			p->depth++;
			*leaf = pg;
			return 0;
		}
		r = fmt_dx_recs(pg->data);
		p->s[p->depth].at = fmt_dx_child(r, count(pg), hash);
		lblk = le32toh(r[p->s[p->depth].at].dr_lblk);
		pc_put_page(pg);
		kind = MFS_DX_NODE;
		level--;
	}
}

int mfs_dx_lookup(struct mfs_node *dir, uint64_t hash, uint64_t *lblks, int max)
{
	struct dx_path p;
	struct pc_page *pg;
	struct mfs_dx_rec *r;
	uint32_t i, n;
	int found = 0, err = dx_walk(dir, hash, &p, &pg);

	if (err)
		return err;
	r = fmt_dx_recs(pg->data);
	n = count(pg);
	for (i = fmt_dx_lower(r, n, hash, 0); i < n && fmt_dx_rec_hash(&r[i]) == hash;
	     i++, found++)
		if (found < max)
			lblks[found] = le32toh(r[i].dr_lblk);
	pc_put_page(pg);
	return found;
}

/* ---- growing the index --------------------------------------------------- */

/* A new index block of @kind at @level at the directory's end: locked,
 * under journal access, its place in @lblk. */
static int dx_new(struct mfs_node *dir, struct mfs_handle *h, unsigned kind,
		  unsigned level, uint64_t *lblk, struct pc_page **pg, uint64_t *pblk)
{
	int err;

	*lblk = mfs_dir_blocks(dir);
	if (*lblk > UINT32_MAX)
		return -EFBIG;
	err = mfs_dir_new_block(dir, h, *lblk, pg, pblk);
	if (!err)
		fmt_dx_init(&dir->fs->sb, (*pg)->data, kind, level, (uint32_t)*lblk);
	return err;
}

/* Page locked: seal, unlock, and dirty it in the handle. */
static int dx_done(struct mfs_node *dir, struct mfs_handle *h, uint64_t pblk,
		   struct pc_page *pg)
{
	mfs_dir_seal(dir, pg);
	pc_unlock_page(pg);
	return mfs_dir_done(dir, h, pblk, pg);
}

/* Index block @lblk under journal access, checked again, locked. */
static int dx_access(struct mfs_node *dir, struct mfs_handle *h, uint64_t lblk,
		     unsigned kind, struct pc_page **pg, uint64_t *pblk)
{
	struct pc_page *chk;
	int err = dx_get(dir, lblk, kind, -1, &chk);

	if (err)
		return err;
	pc_put_page(chk);
	err = mfs_dir_access(dir, h, lblk, pg, pblk);
	if (!err)
		pc_lock_page(*pg);
	return err;
}

/* Where a record goes in a block of @n records: a name's by its order, a
 * node's right after the child it was split from (@at). */
static uint32_t place(struct pc_page *pg, uint64_t hash, uint32_t lblk, uint32_t at)
{
	if (!head(pg)->dx_level)
		return fmt_dx_lower(fmt_dx_recs(pg->data), count(pg), hash, lblk);
	return at + 1;
}

static void add_rec(struct pc_page *pg, uint32_t at, uint64_t hash, uint32_t lblk)
{
	fmt_dx_insert(fmt_dx_recs(pg->data), count(pg), at, hash, lblk);
	set_count(pg, count(pg) + 1);
}

/* Move the records of @from from @m on into the empty @to; a node's
 * first record bounds nothing, so its hash is 0.  The hash that divides
 * the two. */
static uint64_t move_upper(struct pc_page *from, struct pc_page *to, uint32_t m)
{
	struct mfs_dx_rec *r = fmt_dx_recs(from->data), *t = fmt_dx_recs(to->data);
	uint32_t n = count(from);
	uint64_t sep = fmt_dx_rec_hash(&r[m]);

	memcpy(t, &r[m], (n - m) * sizeof(*r));
	set_count(to, n - m);
	set_count(from, m);
	if (head(to)->dx_level)
		fmt_dx_rec_set(&t[0], 0, le32toh(t[0].dr_lblk));
	return sep;
}

/* Add (@hash, @lblk) to the full block @pg at @at, split into @pg and
 * @right at @m. */
static void add_split(struct pc_page *pg, struct pc_page *right, uint32_t m,
		      uint64_t sep, uint32_t at, uint64_t hash, uint32_t lblk)
{
	if (!head(pg)->dx_level) {
		if (hash < sep)
			add_rec(pg, fmt_dx_lower(fmt_dx_recs(pg->data), count(pg), hash, lblk),
				hash, lblk);
		else
			add_rec(right, fmt_dx_lower(fmt_dx_recs(right->data), count(right),
						    hash, lblk), hash, lblk);
	} else if (at <= m) {
		add_rec(pg, at, hash, lblk);
	} else {
		add_rec(right, at - m, hash, lblk);
	}
}

static uint32_t split_point(struct pc_page *pg)
{
	if (!head(pg)->dx_level)
		return fmt_dx_split_at(fmt_dx_recs(pg->data), count(pg));
	return count(pg) / 2;
}

static int add_at(struct mfs_node *dir, struct mfs_handle *h, struct dx_path *p,
		  unsigned d, uint64_t hash, uint32_t lblk);

/* The root is full: its records go down into two new blocks, and it rises
 * a level over them. */
static int split_root(struct mfs_node *dir, struct mfs_handle *h, struct pc_page *root,
		      uint32_t at, uint64_t hash, uint32_t lblk)
{
	struct pc_page *a, *b;
	uint64_t la, lb, pa, pb, sep;
	unsigned level = head(root)->dx_level;
	uint32_t m = split_point(root);
	int err = dx_new(dir, h, MFS_DX_NODE, level, &la, &a, &pa);

	if (err)
		return err;
	err = dx_new(dir, h, MFS_DX_NODE, level, &lb, &b, &pb);
	if (err) {
		dx_done(dir, h, pa, a);
		return err;
	}
	memcpy(fmt_dx_recs(a->data), fmt_dx_recs(root->data),
	       count(root) * sizeof(struct mfs_dx_rec));
	set_count(a, count(root));
	sep = move_upper(a, b, m);
	add_split(a, b, m, sep, at, hash, lblk);
	head(root)->dx_level = (uint8_t)(level + 1);
	set_count(root, 2);
	fmt_dx_rec_set(&fmt_dx_recs(root->data)[0], 0, (uint32_t)la);
	fmt_dx_rec_set(&fmt_dx_recs(root->data)[1], sep, (uint32_t)lb);
	err = dx_done(dir, h, pa, a);
	return mfs_dir_err(err, dx_done(dir, h, pb, b));
}

/* Block s[@d] of the path is full: split it, and add the new block's
 * record to its parent. */
static int split_node(struct mfs_node *dir, struct mfs_handle *h, struct dx_path *p,
		      unsigned d, struct pc_page *pg, uint32_t at, uint64_t hash,
		      uint32_t lblk)
{
	struct pc_page *right;
	uint64_t lr, pr, sep;
	uint32_t m = split_point(pg);
	int err = dx_new(dir, h, MFS_DX_NODE, head(pg)->dx_level, &lr, &right, &pr);

	if (err)
		return err;
	sep = move_upper(pg, right, m);
	add_split(pg, right, m, sep, at, hash, lblk);
	err = dx_done(dir, h, pr, right);
	if (!err)
		err = add_at(dir, h, p, d - 1, sep, (uint32_t)lr);
	/* The upper half has left this block and its parent has no word of
	 * it: the index cannot be trusted from here. */
	if (err && err != -EUCLEAN)
		mfs_error(dir->fs, "directory %" PRIu64 ": index block %" PRIu64
			  " split, and its parent not told (%s)", dir->ino, lr,
			  strerror(-err));
	return err;
}

/* Add (@hash, @lblk) to block s[@d] of the path, splitting as needed. */
static int add_at(struct mfs_node *dir, struct mfs_handle *h, struct dx_path *p,
		  unsigned d, uint64_t hash, uint32_t lblk)
{
	unsigned kind = d ? MFS_DX_NODE : MFS_DX_ROOT;
	uint32_t limit = fmt_dx_limit(&dir->fs->sb, kind), at;
	struct pc_page *pg;
	uint64_t pblk;
	int err = dx_access(dir, h, p->s[d].lblk, kind, &pg, &pblk);

	if (err)
		return err;
	at = place(pg, hash, lblk, d + 1 < p->depth ? p->s[d].at : 0);
	if (count(pg) < limit)
		add_rec(pg, at, hash, lblk);
	else if (!d)
		err = split_root(dir, h, pg, at, hash, lblk);
	else
		err = split_node(dir, h, p, d, pg, at, hash, lblk);
	return mfs_dir_err(err, dx_done(dir, h, pblk, pg));
}

/* Whether an add could not be done: the index at its height, or a block
 * of one hash (names a seeded 64-bit hash does not tell apart).  Checked
 * before anything changes. */
static int add_fits(struct mfs_node *dir, struct dx_path *p, struct pc_page *leaf)
{
	struct mfs_fs *fs = dir->fs;
	struct pc_page *pg;
	int err;

	if (count(leaf) < fmt_dx_limit(&fs->sb, p->depth > 1 ? MFS_DX_NODE : MFS_DX_ROOT))
		return 0;
	if (!fmt_dx_split_at(fmt_dx_recs(leaf->data), count(leaf))) {
		mlog_warn("directory %" PRIu64 ": %" PRIu32 " names share one hash: no room "
			  "for another", dir->ino, count(leaf));
		return -ENOSPC;
	}
	for (unsigned d = p->depth - 1; d-- > 0;) {
		err = dx_get(dir, p->s[d].lblk, d ? MFS_DX_NODE : MFS_DX_ROOT, -1, &pg);
		if (err)
			return err;
		err = count(pg) < fmt_dx_limit(&fs->sb, d ? MFS_DX_NODE : MFS_DX_ROOT);
		pc_put_page(pg);
		if (err)
			return 0;
	}
	if (p->depth - 1 < MFS_DX_MAX_LEVEL)
		return 0;
	mlog_warn("directory %" PRIu64 ": its index is full", dir->ino);
	return -ENOSPC;
}

int mfs_dx_add(struct mfs_node *dir, struct mfs_handle *h, uint64_t hash, uint64_t lblk)
{
	struct dx_path p;
	struct pc_page *leaf;
	int err = dx_walk(dir, hash, &p, &leaf);

	if (err)
		return err;
	err = add_fits(dir, &p, leaf);
	pc_put_page(leaf);
	return err ? err : add_at(dir, h, &p, p.depth - 1, hash, (uint32_t)lblk);
}

/* New index blocks an add of @hash makes: each full block on the path
 * from level 0 up splits in two, and a full root into two below it. */
static int splits_for(struct mfs_node *dir, uint64_t hash, uint64_t *blocks)
{
	struct dx_path p;
	struct pc_page *pg;
	int err = dx_walk(dir, hash, &p, &pg);

	*blocks = 0;
	for (unsigned d = p.depth; !err && d-- > 0;) {
		unsigned kind = d ? MFS_DX_NODE : MFS_DX_ROOT;
		bool full;

		if (d + 1 < p.depth)
			err = dx_get(dir, p.s[d].lblk, kind, -1, &pg);
		if (err)
			break;
		full = count(pg) >= fmt_dx_limit(&dir->fs->sb, kind);
		pc_put_page(pg);
		if (!full)
			break;
		*blocks += d ? 1 : 2;
	}
	return err;
}

int mfs_dx_add_need(struct mfs_node *dir, uint64_t hash, uint32_t need, uint64_t *blocks)
{
	uint32_t per = fmt_dx_limit(&dir->fs->sb, MFS_DX_FMAP), n, lblks[MFS_DX_FMAP_MAX];
	uint64_t end = mfs_dir_blocks(dir), lblk;
	int room = mfs_dx_find_room(dir, need, &lblk), err;

	if (room < 0)
		return room;
	err = splits_for(dir, hash, blocks);
	if (!err && !room)
		err = fmap_list(dir, &n, lblks);
	if (err)
		return err;
	if (!room)              /* a new block, and a room map block for it */
		*blocks += 1 + (end / per >= n ? 1 : 0);
	*blocks = mfs_bmap_append_worst(dir->fs, end, *blocks);
	return 0;
}

/* The place of record (@hash, @lblk) in @pg, or -1. */
static int64_t rec_at(struct pc_page *pg, uint64_t hash, uint64_t lblk)
{
	struct mfs_dx_rec *r = fmt_dx_recs(pg->data);
	uint32_t at = fmt_dx_lower(r, count(pg), hash, (uint32_t)lblk);

	if (at < count(pg) && fmt_dx_rec_hash(&r[at]) == hash &&
	    le32toh(r[at].dr_lblk) == lblk)
		return at;
	return -1;
}

int mfs_dx_remove(struct mfs_node *dir, struct mfs_handle *h, uint64_t hash,
		  uint64_t lblk)
{
	struct dx_path p;
	struct pc_page *pg;
	uint64_t pblk;
	int64_t at;
	int err = dx_walk(dir, hash, &p, &pg);

	if (err)
		return err;
	at = rec_at(pg, hash, lblk);
	pc_put_page(pg);
	if (at < 0)
		return mfs_error(dir->fs, "directory %" PRIu64 ": index has no record of "
				 "an entry in block %" PRIu64, dir->ino, lblk);
	err = dx_access(dir, h, p.s[p.depth - 1].lblk, p.depth > 1 ? MFS_DX_NODE :
			MFS_DX_ROOT, &pg, &pblk);
	if (err)
		return err;
	fmt_dx_delete(fmt_dx_recs(pg->data), count(pg), (uint32_t)at);
	set_count(pg, count(pg) - 1);
	return dx_done(dir, h, pblk, pg);
}

/* ---- the room map -------------------------------------------------------- */

/* The root's list of room map blocks, copied out. */
static int fmap_list(struct mfs_node *dir, uint32_t *n, uint32_t *lblks)
{
	struct pc_page *pg;
	struct mfs_dx_root_info *ri;
	int err = dx_get(dir, MFS_DX_ROOT_LBLK, MFS_DX_ROOT, -1, &pg);

	if (err)
		return err;
	ri = fmt_dx_root(pg->data);
	*n = le32toh(ri->dr_fmap_count);
	for (uint32_t i = 0; i < *n; i++)
		lblks[i] = le32toh(ri->dr_fmap[i]);
	pc_put_page(pg);
	return 0;
}

/* First fit from the first block that may have room: the blocks before
 * it are full, as a directory filled in order has most of its blocks. */
int mfs_dx_find_room(struct mfs_node *dir, uint32_t need, uint64_t *lblk)
{
	struct mfs_super *sb = &dir->fs->sb;
	uint32_t per = fmt_dx_limit(sb, MFS_DX_FMAP), n, lblks[MFS_DX_FMAP_MAX];
	uint64_t blocks = mfs_dir_blocks(dir), from = UT_MIN(dir->dx_room_from, blocks);
	uint64_t first_room = blocks;
	int err = fmap_list(dir, &n, lblks), found = 0;

	for (uint32_t j = (uint32_t)(from / per); !err && !found && j < n; j++) {
		struct pc_page *pg;
		const uint8_t *m;
		uint64_t first = (uint64_t)j * per;

		err = dx_get(dir, lblks[j], MFS_DX_FMAP, -1, &pg);
		if (err)
			break;
		m = fmt_dx_fmap(pg->data);
		for (uint64_t i = UT_MAX(from, first) - first; i < per && first + i < blocks &&
		     !found; i++) {
			if (!m[i])
				continue;
			first_room = UT_MIN(first_room, first + i);
			if (fmt_dx_room_fits(sb, m[i], need)) {
				*lblk = first + i;
				found = 1;
			}
		}
		pc_put_page(pg);
	}
	if (!err)
		dir->dx_room_from = first_room;
	return err ? err : found;
}

int mfs_dx_set_room(struct mfs_node *dir, struct mfs_handle *h, uint64_t lblk,
		    uint32_t room)
{
	struct mfs_super *sb = &dir->fs->sb;
	uint32_t per = fmt_dx_limit(sb, MFS_DX_FMAP), n, lblks[MFS_DX_FMAP_MAX];
	uint8_t code = fmt_dx_room_code(sb, room), *m;
	struct pc_page *pg;
	uint64_t pblk;
	int err = fmap_list(dir, &n, lblks);

	if (err)
		return err;
	if (lblk / per >= n)
		return mfs_error(dir->fs, "directory %" PRIu64 ": block %" PRIu64
				 " is beyond its room map", dir->ino, lblk);
	err = dx_get(dir, lblks[lblk / per], MFS_DX_FMAP, -1, &pg);
	if (err)
		return err;
	if (code && lblk < dir->dx_room_from)
		dir->dx_room_from = lblk;
	m = fmt_dx_fmap(pg->data);
	if (m[lblk % per] == code) {
		pc_put_page(pg);
		return 0;
	}
	pc_put_page(pg);
	err = dx_access(dir, h, lblks[lblk / per], MFS_DX_FMAP, &pg, &pblk);
	if (err)
		return err;
	fmt_dx_fmap(pg->data)[lblk % per] = code;
	return dx_done(dir, h, pblk, pg);
}

/* A room map block for the blocks from @first on, listed in the root. */
static int fmap_add(struct mfs_node *dir, struct mfs_handle *h, uint32_t n)
{
	struct pc_page *pg, *root;
	struct mfs_dx_root_info *ri;
	uint64_t lblk, pblk, rblk;
	int err;

	if (n >= MFS_DX_FMAP_MAX) {
		mlog_warn("directory %" PRIu64 ": at the most blocks its index can map",
			  dir->ino);
		return -ENOSPC;
	}
	err = dx_access(dir, h, MFS_DX_ROOT_LBLK, MFS_DX_ROOT, &root, &rblk);
	if (err)
		return err;
	err = dx_new(dir, h, MFS_DX_FMAP, 0, &lblk, &pg, &pblk);
	if (!err) {
		ri = fmt_dx_root(root->data);
		ri->dr_fmap[n] = htole32((uint32_t)lblk);
		ri->dr_fmap_count = htole32(n + 1);
		err = dx_done(dir, h, pblk, pg);
	}
	return mfs_dir_err(err, dx_done(dir, h, rblk, root));
}

int mfs_dx_grow(struct mfs_node *dir, struct mfs_handle *h, uint64_t *lblk)
{
	uint32_t per = fmt_dx_limit(&dir->fs->sb, MFS_DX_FMAP), n, lblks[MFS_DX_FMAP_MAX];
	int err = fmap_list(dir, &n, lblks);

	while (!err && mfs_dir_blocks(dir) / per >= n) {
		err = fmap_add(dir, h, n);
		if (!err)
			n++;
	}
	*lblk = mfs_dir_blocks(dir);
	return err;
}

int mfs_dx_init(struct mfs_node *dir, struct mfs_handle *h)
{
	struct pc_page *root;
	uint64_t lblk, pblk;
	int err;

	if (mfs_dir_blocks(dir) != MFS_DX_ROOT_LBLK)
		return -EINVAL;
	err = dx_new(dir, h, MFS_DX_ROOT, 0, &lblk, &root, &pblk);
	if (err)
		return err;
	err = dx_done(dir, h, pblk, root);
	if (!err) {
		pthread_mutex_lock(&dir->lock);
		dir->raw.i_flags = htole32(le32toh(dir->raw.i_flags) | MFS_INDEX_FL);
		pthread_mutex_unlock(&dir->lock);
		err = mfs_dx_grow(dir, h, &lblk);
	}
	return err;
}
