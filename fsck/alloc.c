/*
 * alloc.c - what repairs create: blocks, inodes, directory entries and
 * directories, and the lists of directories the passes keep.
 *
 * Allocation takes from what pass 1 found free (c->bused, c->istate), so
 * it is only used from pass 1b on; pass 5 then writes the bitmaps from the
 * same maps, new blocks included.
 */
#include "fsck_i.h"

#include <errno.h>

/* ---- blocks and inodes ------------------------------------------------------ */

/*
 * Set or clear bit @bit of group @g's block or inode bitmap on the disk,
 * with its checksum and the free counts of the group and the superblock,
 * as the mount's allocator does: what fsck allocates or frees is then no
 * difference for pass 5 to report.
 */
static int account(struct fsck_ctx *c, bool inodes, uint32_t g, uint32_t bit, bool used,
		   bool dir)
{
	struct mfs_group_desc *gd = &c->gdt[g];
	uint64_t blk = inodes ? fsck_layout_ibitmap(c, g) : fsck_layout_bbitmap(c, g);
	uint32_t *count = inodes ? &gd->bg_free_inodes_count : &gd->bg_free_blocks_count;
	uint8_t *map = bdev_alloc_buf(c->bs);
	int err = map ? fsck_read(c, blk, map) : -ENOMEM;
	int delta = used ? -1 : 1;

	if (!err && bit_test(map, bit) != used) {
		if (used)
			bit_set(map, bit);
		else
			bit_clear(map, bit);
		*count = htole32(le32toh(*count) + delta);
		if (inodes) {
			gd->bg_inode_bitmap_csum = htole32(fmt_bitmap_csum(&c->sb,
							   MFS_CSUM_IBITMAP, g, map));
			c->sb.s_free_inodes_count = htole32(le32toh(c->sb.s_free_inodes_count) +
							    delta);
			if (dir)
				gd->bg_used_dirs_count = htole32(le32toh(gd->bg_used_dirs_count) -
								 delta);
		} else {
			gd->bg_block_bitmap_csum = htole32(fmt_bitmap_csum(&c->sb,
							   MFS_CSUM_BBITMAP, g, map));
			c->sb.s_free_blocks_count = htole64(le64toh(c->sb.s_free_blocks_count) +
							    delta);
		}
		c->gdt_dirty = c->sb_dirty = true;
		err = fsck_write(c, blk, map);
	}
	bdev_free_buf(map);
	return err;
}

static int account_block(struct fsck_ctx *c, uint64_t blk, bool used)
{
	uint64_t rel = blk - c->fdb;

	return account(c, false, (uint32_t)(rel / c->bpg), (uint32_t)(rel % c->bpg), used,
		       false);
}

int fsck_release_block(struct fsck_ctx *c, uint64_t blk)
{
	if (!fsck_block_ok(c, blk))
		return 0;
	bit_clear(c->bused, blk);
	return account_block(c, blk, false);
}

int fsck_release_inode(struct fsck_ctx *c, uint32_t ino, bool dir)
{
	c->istate[ino - 1] &= (uint8_t)~IS_TYPE_MASK;
	return account(c, true, (ino - 1) / c->ipg, (ino - 1) % c->ipg, false, dir);
}

int fsck_alloc_block(struct fsck_ctx *c, uint64_t goal, uint64_t *blk)
{
	uint64_t n = c->nblocks;

	goal = goal >= c->fdb && goal < n ? goal : c->fdb;
	for (uint64_t i = 0; i < n; i++) {
		uint64_t b = goal + i < n ? goal + i : goal + i - n + c->fdb;

		if (b < n && !bit_test(c->bused, b) && fsck_block_ok(c, b)) {
			bit_set(c->bused, b);
			*blk = b;
			return account_block(c, b, true);
		}
	}
	return -ENOSPC;
}

int fsck_alloc_inode(struct fsck_ctx *c, unsigned type, uint32_t *ino)
{
	for (uint32_t i = MFS_FIRST_INO; i <= c->ninodes; i++) {
		if (istate_type(c, i) || (c->istate[i - 1] & IS_BAD))
			continue;
		c->istate[i - 1] = (uint8_t)type;
		*ino = i;
		return account(c, true, (i - 1) / c->ipg, (i - 1) % c->ipg, true,
			       type == MFS_FT_DIR);
	}
	return -ENOSPC;
}

/* ---- the lists -------------------------------------------------------------- */

struct fsck_dir *fsck_dir_find(struct fsck_ctx *c, uint32_t ino)
{
	size_t lo = 0, hi = c->ndirs;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (c->dirs[mid].ino == ino)
			return &c->dirs[mid];
		if (c->dirs[mid].ino < ino)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

static int grow(void **arr, size_t *cap, size_t n, size_t elem)
{
	size_t cap2;
	void *p;

	if (n < *cap)
		return 0;
	cap2 = *cap ? *cap * 2 : 256;
	p = realloc(*arr, cap2 * elem);
	if (!p)
		return -ENOMEM;
	*arr = p;
	*cap = cap2;
	return 0;
}

int fsck_dir_insert(struct fsck_ctx *c, uint32_t ino)
{
	size_t at = c->ndirs;
	int err = grow((void **)&c->dirs, &c->dirs_cap, c->ndirs, sizeof(*c->dirs));

	if (err)
		return err;
	while (at && c->dirs[at - 1].ino > ino)
		at--;
	memmove(&c->dirs[at + 1], &c->dirs[at], (c->ndirs - at) * sizeof(*c->dirs));
	c->dirs[at] = (struct fsck_dir){ .ino = ino };
	c->ndirs++;
	return 0;
}

int fsck_dblist_add(struct fsck_ctx *c, uint32_t ino, uint64_t lblk, uint64_t pblk)
{
	int err = grow((void **)&c->dblist, &c->db_cap, c->ndb, sizeof(*c->dblist));

	if (err)
		return err;
	c->dblist[c->ndb++] = (struct fsck_dblock){ .ino = ino, .lblk = (uint32_t)lblk,
						     .pblk = (uint32_t)pblk };
	return 0;
}

/* ---- directory blocks ------------------------------------------------------------ */

static struct mfs_dirent *dirent_at(void *blk, uint32_t off)
{
	return (struct mfs_dirent *)((char *)blk + off);
}

static void set_dirent(struct mfs_dirent *de, uint32_t ino, uint16_t rec,
		       const char *name, size_t len, unsigned type)
{
	de->inode = htole32(ino);
	de->rec_len = htole16(rec);
	de->name_len = (uint8_t)len;
	de->file_type = (uint8_t)type;
	memcpy(de->name, name, len);
}

void fsck_dirblock_init(struct fsck_ctx *c, void *blk, uint32_t ino, uint32_t parent)
{
	uint32_t end = c->bs - MFS_DIR_TAIL_SIZE;
	struct mfs_dir_tail *t = (void *)((char *)blk + end);

	memset(blk, 0, c->bs);
	if (parent) {
		set_dirent(dirent_at(blk, 0), ino, 12, ".", 1, MFS_FT_DIR);
		set_dirent(dirent_at(blk, 12), parent, (uint16_t)(end - 12), "..", 2,
			   MFS_FT_DIR);
	} else {
		dirent_at(blk, 0)->rec_len = htole16((uint16_t)end);
	}
	t->det_rec_len = htole16(MFS_DIR_TAIL_SIZE);
	t->det_type = MFS_FT_DIR_TAIL;
	fmt_block_set_csum(&c->sb, MFS_CSUM_DIR, ino, blk);
}

/* What is done to one directory block; true when it was done there. */
struct edit {
	bool (*fn)(struct fsck_ctx *c, void *blk, const struct edit *e);
	const char *name;            /* the entry to add (or remove), */
	unsigned type;
	uint32_t child;              /* and the inode it names (add, remove) */
	bool done;
};

/* Put the entry in a record with room to spare. */
static bool insert_in_block(struct fsck_ctx *c, void *blk, const struct edit *e)
{
	uint32_t end = c->bs - MFS_DIR_TAIL_SIZE, len = (uint32_t)strlen(e->name);

	for (uint32_t off = 0; off < end; ) {
		struct mfs_dirent *de = dirent_at(blk, off);
		uint32_t rec = le16toh(de->rec_len);
		uint32_t used = de->inode ? MFS_DIRENT_LEN(de->name_len) : 0;

		if (rec < MFS_DIRENT_LEN(0) || off + rec > end)
			return false;
		if (rec - used >= MFS_DIRENT_LEN(len)) {
			if (used) {
				de->rec_len = htole16((uint16_t)used);
				de = dirent_at(blk, off + used);
			}
			set_dirent(de, e->child, (uint16_t)(rec - used), e->name, len, e->type);
			return true;
		}
		off += rec;
	}
	return false;
}

/* Take out the record naming e->child (never "." or ".."). */
static bool remove_in_block(struct fsck_ctx *c, void *blk, const struct edit *e)
{
	uint32_t end = c->bs - MFS_DIR_TAIL_SIZE, prev = end;

	for (uint32_t off = 0; off < end; ) {
		struct mfs_dirent *de = dirent_at(blk, off);
		bool dots = (de->name_len == 1 && de->name[0] == '.') ||
			    (de->name_len == 2 && !memcmp(de->name, "..", 2));

		if (le32toh(de->inode) == e->child && !dots &&
		    (!e->name || (de->name_len == strlen(e->name) &&
				  !memcmp(de->name, e->name, de->name_len)))) {
			if (prev < end)
				dirent_at(blk, prev)->rec_len = htole16((uint16_t)
					(le16toh(dirent_at(blk, prev)->rec_len) +
					 le16toh(de->rec_len)));
			else
				de->inode = 0;
			return true;
		}
		prev = off;
		off += le16toh(de->rec_len);
	}
	return false;
}

/* Each sound block of the directory in turn, until the edit is done. */
static int edit_visit(struct fsck_map_walk *w, struct fmt_bmap_slot *s)
{
	struct edit *e = w->arg;
	struct fsck_ctx *c = w->c;
	uint64_t blk = le32toh(*s->ptr);
	int err;

	if (e->done || s->bad)
		return FMT_BMAP_SKIP;
	if (s->depth || s->lblk >= le64toh(w->in->i_size) / c->bs)
		return FMT_BMAP_KEEP;
	err = fsck_read(c, blk, c->buf2);
	if (err || fmt_dirblock_check(&c->sb, w->ino, c->buf2, NULL, 0))
		return err;
	if (!e->fn(c, c->buf2, e))
		return FMT_BMAP_KEEP;
	fmt_block_set_csum(&c->sb, MFS_CSUM_DIR, w->ino, c->buf2);
	e->done = true;
	return fsck_write(c, blk, c->buf2);
}

static int dir_edit(struct fsck_ctx *c, uint32_t dir, struct mfs_inode *in,
		    struct edit *e)
{
	struct fsck_map_walk w = { .c = c, .ino = dir, .in = in, .visit = edit_visit, .arg = e };
	int err = fsck_read_inode(c, dir, in);

	return err ? err : fsck_map_walk(&w);
}

/* A new last block holding only the entry. */
static int dir_grow(struct fsck_ctx *c, uint32_t dir, struct mfs_inode *in,
		    const struct edit *e)
{
	uint64_t lblk = le64toh(in->i_size) / c->bs, blk, added = 1;
	int err = fsck_alloc_block(c, le32toh(in->i_block[0]), &blk);

	if (err)
		return err;
	fsck_dirblock_init(c, c->buf2, dir, 0);
	insert_in_block(c, c->buf2, e);
	fmt_block_set_csum(&c->sb, MFS_CSUM_DIR, dir, c->buf2);
	err = fsck_write(c, blk, c->buf2);
	if (!err)
		err = fsck_bmap_set(c, dir, in, lblk, blk, &added);
	if (err)
		return err;
	in->i_size = htole64((lblk + 1) * c->bs);
	in->i_blocks = htole64(le64toh(in->i_blocks) + added * (c->bs / 512));
	return fsck_dblist_add(c, dir, lblk, blk);
}

/* An edit of an indexed directory leaves its index behind: the flag goes
 * (the blocks stay valid as blocks of entries).  True if it was set. */
static bool unindex(struct fsck_ctx *c, uint32_t dir, struct mfs_inode *in)
{
	struct fsck_pctx p = { .ino = dir };

	if (!(le32toh(in->i_flags) & MFS_INDEX_FL))
		return false;
	in->i_flags = htole32(le32toh(in->i_flags) & ~MFS_INDEX_FL);
	fsck_fix(c, PR_DX_DROPPED, &p);
	return true;
}

int fsck_dir_add(struct fsck_ctx *c, uint32_t dir, const char *name, uint32_t child,
		 unsigned type)
{
	struct edit e = { .fn = insert_in_block, .name = name, .child = child, .type = type };
	struct mfs_inode in;
	bool grown = false;
	int err = dir_edit(c, dir, &in, &e);

	if (!err && !e.done) {
		err = dir_grow(c, dir, &in, &e);
		grown = true;
	}
	if (!err && (unindex(c, dir, &in) || grown))
		err = fsck_write_inode(c, dir, &in);
	return err;
}

int fsck_dir_remove(struct fsck_ctx *c, uint32_t dir, uint32_t child, const char *name)
{
	struct edit e = { .fn = remove_in_block, .child = child, .name = name };
	struct mfs_inode in;
	int err = dir_edit(c, dir, &in, &e);

	if (!err && e.done && unindex(c, dir, &in))
		err = fsck_write_inode(c, dir, &in);
	return err ? err : e.done ? 0 : -ENOENT;
}

/* ---- new directories ---------------------------------------------------------------- */

int fsck_adjust_links(struct fsck_ctx *c, uint32_t ino, int by)
{
	struct mfs_inode in;
	int err = fsck_read_inode(c, ino, &in);

	if (err)
		return err;
	in.i_links_count = htole16((uint16_t)(le16toh(in.i_links_count) + by));
	c->links_disk[ino - 1] = le16toh(in.i_links_count);
	return fsck_write_inode(c, ino, &in);
}

int fsck_mkdir(struct fsck_ctx *c, uint32_t ino, uint32_t parent, uint16_t perm)
{
	struct mfs_inode in;
	uint64_t blk;
	int err = fsck_read_inode(c, ino, &in);
	uint32_t gen = err ? 0 : le32toh(in.i_generation) + 1;

	if (!err)
		err = fsck_alloc_block(c, 0, &blk);
	if (err)
		return err;
	fsck_dirblock_init(c, c->buf2, ino, parent);
	err = fsck_write(c, blk, c->buf2);
	memset(&in, 0, sizeof(in));
	in.i_mode = htole16(S_IFDIR | perm);
	in.i_links_count = htole16(2);
	in.i_size = htole64(c->bs);
	in.i_blocks = htole64(c->bs / 512);
	in.i_atime = in.i_mtime = in.i_ctime = in.i_crtime = htole64(c->now);
	in.i_generation = htole32(gen);
	in.i_block[0] = htole32((uint32_t)blk);
	if (!err)
		err = fsck_write_inode(c, ino, &in);
	if (!err)
		err = fsck_dir_insert(c, ino);
	if (err)
		return err;
	c->istate[ino - 1] = MFS_FT_DIR;
	c->links_disk[ino - 1] = 2;
	c->links_found[ino - 1] = 1;         /* its "." */
	fsck_dir_find(c, ino)->dotdot = parent;
	if (ino != parent)
		err = fsck_adjust_links(c, parent, 1);
	return err ? err : fsck_dblist_add(c, ino, 0, blk);
}
