/*
 * mkfs.c - laying out a new filesystem.
 *
 * The layout is decided first, as arithmetic only (mkfs_layout), so that
 * the smallest workable size can be found by trying sizes.  Writing then
 * happens in an order that leaves no valid-looking filesystem behind if
 * it is interrupted: everything else first, a flush, the primary
 * superblock last, a flush.
 *
 * Blocks are handed out by a cursor that only moves forward and skips each
 * group's metadata, so "allocated" is exactly "data block below the
 * cursor", and the bitmaps can be computed one group at a time.
 */
#include "fmt.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "jnl.h"
#include "util.h"

/* A group needs this many data blocks beyond its metadata to be kept. */
#define MIN_GROUP_DATA 64u

struct mkfs_ctx {
	struct bdev *bd;
	const struct fmt_mkfs_opts *o;
	struct mfs_super sb;
	uint32_t bs;
	uint64_t cursor;           /* next block to hand out */
	uint64_t *jmap;            /* journal logical -> device block */
	uint64_t jind;             /* journal indirect blocks */
	uint64_t region_table;
	uint64_t mmp_block;
	uint64_t root_block, lf_block;
	void *buf;                 /* one block */
	bool reserve_failed;       /* opts->reserve said why */
};

static uint32_t opt_block_size(const struct fmt_mkfs_opts *o)
{
	return o->block_size ? o->block_size : 4096;
}

static uint64_t region_bytes(const struct fmt_mkfs_opts *o)
{
	uint64_t total = 0;

	for (unsigned i = 0; i < o->nregions; i++)
		total += UT_ROUND_UP(o->regions[i].bytes, MFS_REGION_ALIGN);
	return total;
}

static uint32_t default_journal_blocks(uint64_t fs_bytes, uint32_t bs)
{
	uint64_t blocks = fs_bytes / 64 / bs;

	return (uint32_t)UT_MIN(UT_MAX(blocks, JNL_MIN_BLOCKS), 32768u);
}

/* Blocks a map of @n data blocks needs for indirect blocks. */
static uint64_t map_overhead(uint64_t n, uint32_t apb)
{
	uint64_t ind = 0;

	if (n <= MFS_NDIR_BLOCKS)
		return 0;
	n -= MFS_NDIR_BLOCKS;
	ind += 1;                                  /* single */
	if (n <= apb)
		return ind;
	n -= apb;
	ind += 1 + UT_DIV_ROUND_UP(UT_MIN(n, (uint64_t)apb * apb), apb);
	if (n <= (uint64_t)apb * apb)
		return ind;
	n -= (uint64_t)apb * apb;
	ind += 1 + UT_DIV_ROUND_UP(n, (uint64_t)apb * apb) + UT_DIV_ROUND_UP(n, apb);
	return ind;
}

/* Inodes per group for @groups groups, or 0 if it cannot be done. */
static uint32_t pick_ipg(const struct fmt_mkfs_opts *o, uint64_t fs_bytes,
			 uint32_t bs, uint32_t groups)
{
	uint64_t bpi = o->bytes_per_inode ? o->bytes_per_inode :
		       fs_bytes < (512ull << 20) ? 4096 : 16384;
	uint64_t want = o->inodes ? o->inodes : fs_bytes / bpi;
	uint32_t ipb = bs / MFS_INODE_SIZE;
	uint64_t ipg = UT_DIV_ROUND_UP(want, groups);

	ipg = UT_ROUND_UP(UT_MAX(ipg, 16u), ipb);
	if (ipg > 8ull * bs)
		return 0;
	return (uint32_t)ipg;
}

static void fill_geometry(struct mfs_super *sb, uint32_t bs, uint64_t blocks,
			  uint32_t groups, uint32_t ipg)
{
	sb->s_log_block_size = htole32(__builtin_ctz(bs) - MFS_MIN_BLOCK_LOG);
	sb->s_first_data_block = htole32(bs == 1024);
	sb->s_blocks_per_group = htole32(8 * bs);
	sb->s_blocks_count = htole64(blocks);
	sb->s_groups_count = htole32(groups);
	sb->s_inodes_per_group = htole32(ipg);
	sb->s_inodes_count = htole32(groups * ipg);
	sb->s_gdt_blocks = htole16((uint16_t)UT_DIV_ROUND_UP(groups * MFS_DESC_SIZE, bs));
}

/* Groups and inodes for @blocks blocks; drops a last group too short to
 * carry its own metadata.  Returns 0, -ENOSPC, or -EOVERFLOW for more
 * inodes than the groups can hold. */
static int layout_groups(struct mfs_super *sb, const struct fmt_mkfs_opts *o,
			 uint32_t bs, uint64_t blocks)
{
	uint32_t fdb = bs == 1024, bpg = 8 * bs;
	uint64_t groups, ipg;

	if (blocks <= fdb + 16)
		return -ENOSPC;
	for (int pass = 0; pass < 2; pass++) {
		groups = UT_DIV_ROUND_UP(blocks - fdb, bpg);
		if (groups > UINT32_MAX / (8ull * bs))
			return -EOVERFLOW;
		ipg = pick_ipg(o, blocks * bs, bs, (uint32_t)groups);
		if (!ipg)
			return -EOVERFLOW;
		fill_geometry(sb, bs, blocks, (uint32_t)groups, (uint32_t)ipg);
		uint32_t last = (uint32_t)groups - 1;
		if (fmt_group_nblocks(sb, last) >=
		    fmt_group_meta_blocks(sb, last) + MIN_GROUP_DATA)
			return 0;
		if (groups == 1)
			return -ENOSPC;
		blocks = fdb + last * (uint64_t)bpg;
	}
	return -ENOSPC;
}

static uint64_t data_blocks(const struct mfs_super *sb)
{
	uint64_t total = 0;

	for (uint32_t g = 0; g < le32toh(sb->s_groups_count); g++)
		total += fmt_group_nblocks(sb, g) - fmt_group_meta_blocks(sb, g);
	return total;
}

/* What mkfs itself allocates besides the journal. */
static uint32_t fixed_blocks(const struct fmt_mkfs_opts *o)
{
	/* root, lost+found, region table, MMP block */
	return 2 + (o->nregions ? 1 : 0) + (o->mmp ? 1 : 0);
}

/* Decide the whole layout for a device of @device_bytes into @sb:
 * 0, -ENOSPC (too small), -EOVERFLOW (too many inodes) or -EFBIG (a journal
 * larger than a file can be). */
static int mkfs_layout(const struct fmt_mkfs_opts *o, uint64_t device_bytes,
		       struct mfs_super *sb)
{
	uint32_t bs = opt_block_size(o);
	uint64_t rbytes = region_bytes(o), rstart, blocks, jblocks;
	int err;

	memset(sb, 0, sizeof(*sb));
	if (device_bytes / bs > UINT32_MAX)
		device_bytes = (uint64_t)UINT32_MAX * bs;
	if (rbytes + (64ull << 10) >= device_bytes)
		return -ENOSPC;
	rstart = (device_bytes / bs * bs - rbytes) / MFS_REGION_ALIGN *
		 MFS_REGION_ALIGN / bs;
	err = layout_groups(sb, o, bs, rstart);
	if (err)
		return err;
	blocks = le64toh(sb->s_blocks_count);
	jblocks = o->journal_bytes ? o->journal_bytes / bs :
		  default_journal_blocks(blocks * bs, bs);
	if (jblocks > UINT32_MAX || fmt_max_file_size(bs) / bs < jblocks)
		return -EFBIG;
	if (data_blocks(sb) < jblocks + map_overhead(jblocks, fmt_addr_per_block(bs)) +
			      fixed_blocks(o) + MIN_GROUP_DATA)
		return -ENOSPC;
	sb->s_journal_blocks = htole32((uint32_t)jblocks);
	sb->s_regions_start = htole64(rstart);
	sb->s_device_blocks = htole64(rstart + rbytes / bs);
	return 0;
}

uint64_t fmt_mkfs_min_bytes(const struct fmt_mkfs_opts *opts)
{
	uint32_t bs = opt_block_size(opts);
	uint64_t lo = 16, hi = 64;
	struct mfs_super sb;

	/* Grow until it fits, then narrow down: fitting grows with size. */
	while (mkfs_layout(opts, hi * bs, &sb) == -ENOSPC) {
		lo = hi;
		if (hi > UINT32_MAX)
			return UINT64_MAX;
		hi *= 2;
	}
	while (lo + 1 < hi) {
		uint64_t mid = lo + (hi - lo) / 2;

		if (mkfs_layout(opts, mid * bs, &sb) == -ENOSPC)
			lo = mid;
		else
			hi = mid;
	}
	return UT_ROUND_UP(hi * bs, MFS_REGION_ALIGN);
}

/* ---- allocation ---------------------------------------------------------- */

static uint64_t group_data_start(const struct mfs_super *sb, uint32_t g)
{
	return fmt_group_first_block(sb, g) + fmt_group_meta_blocks(sb, g);
}

static int alloc_block(struct mkfs_ctx *c, uint64_t *blk)
{
	uint32_t bpg = le32toh(c->sb.s_blocks_per_group);
	uint32_t fdb = le32toh(c->sb.s_first_data_block);
	uint32_t g = (uint32_t)((c->cursor - fdb) / bpg);

	if (c->cursor < group_data_start(&c->sb, g))
		c->cursor = group_data_start(&c->sb, g);
	if (c->cursor >= le64toh(c->sb.s_blocks_count))
		return -ENOSPC;
	*blk = c->cursor++;
	return 0;
}

static int write_block(struct mkfs_ctx *c, uint64_t blk, const void *data)
{
	return bdev_write(c->bd, blk * c->bs, data, c->bs);
}

/* ---- the journal inode's block map --------------------------------------- */

/*
 * Allocate @n data blocks and their indirect blocks in logical order (an
 * indirect block just before the data it maps) and write the indirect
 * blocks.  @iblock receives the inode's 15 pointers.
 */
struct map_builder {
	struct mkfs_ctx *c;
	uint32_t ino;
	uint64_t *map;             /* data blocks, out */
	uint64_t next;             /* next logical block */
	uint64_t n;
	uint64_t nind;             /* indirect blocks allocated */
};

static int build_level(struct map_builder *b, int depth, uint32_t *slot);

static int build_indirect(struct map_builder *b, int depth, uint32_t *slot)
{
	uint32_t apb = fmt_addr_per_block(b->c->bs);
	uint32_t *ptrs;
	uint64_t blk;
	int err = alloc_block(b->c, &blk);

	if (err)
		return err;
	b->nind++;
	ptrs = bdev_alloc_buf(b->c->bs);
	if (!ptrs)
		return -ENOMEM;
	memset(ptrs, 0, b->c->bs);
	for (uint32_t i = 0; i < apb && b->next < b->n && !err; i++)
		err = build_level(b, depth - 1, &ptrs[i]);
	if (!err) {
		fmt_block_set_csum(&b->c->sb, MFS_CSUM_INDIRECT, b->ino, ptrs);
		err = write_block(b->c, blk, ptrs);
	}
	bdev_free_buf(ptrs);
	*slot = htole32((uint32_t)blk);
	return err;
}

static int build_level(struct map_builder *b, int depth, uint32_t *slot)
{
	uint64_t blk;
	int err;

	if (depth > 0)
		return build_indirect(b, depth, slot);
	err = alloc_block(b->c, &blk);
	if (err)
		return err;
	b->map[b->next++] = blk;
	*slot = htole32((uint32_t)blk);
	return 0;
}

static int build_map(struct map_builder *b, uint32_t iblock[MFS_N_BLOCKS])
{
	int err = 0;

	memset(iblock, 0, MFS_N_BLOCKS * sizeof(uint32_t));
	for (int i = 0; i < MFS_NDIR_BLOCKS && b->next < b->n && !err; i++)
		err = build_level(b, 0, &iblock[i]);
	for (int d = 1; d <= 3 && b->next < b->n && !err; d++)
		err = build_level(b, d, &iblock[MFS_NDIR_BLOCKS + d - 1]);
	return err;
}

/* ---- inodes and directories ---------------------------------------------- */

static int64_t mkfs_now(const struct mkfs_ctx *c)
{
	return c->o->now ? c->o->now : (int64_t)time(NULL);
}

static void inode_init(struct mkfs_ctx *c, struct mfs_inode *in, uint16_t mode,
		       uint16_t links, uint64_t size, uint64_t nblocks)
{
	int64_t now = mkfs_now(c);
	uint32_t gen;

	memset(in, 0, sizeof(*in));
	in->i_mode = htole16(mode);
	in->i_links_count = htole16(links);
	in->i_uid = htole32(getuid());
	in->i_gid = htole32(getgid());
	in->i_size = htole64(size);
	in->i_blocks = htole64(nblocks * (c->bs / 512));
	in->i_atime = in->i_mtime = in->i_ctime = in->i_crtime = htole64(now);
	if (getrandom(&gen, sizeof(gen), 0) != sizeof(gen))
		gen = (uint32_t)now;
	in->i_generation = htole32(gen);
}

/* Write inode @ino (of group 0) into its inode table block. */
static int write_inode(struct mkfs_ctx *c, uint32_t ino, struct mfs_inode *in)
{
	uint64_t itable = fmt_group_first_block(&c->sb, 0) +
			  fmt_group_super_blocks(&c->sb, 0) + 2;
	uint32_t off;
	uint64_t blk = fmt_inode_block(&c->sb, itable, ino, &off);
	int err;

	in->i_checksum = htole32(fmt_inode_csum(&c->sb, ino, in));
	err = bdev_read(c->bd, blk * c->bs, c->buf, c->bs);
	if (err)
		return err;
	memcpy((char *)c->buf + off, in, sizeof(*in));
	return write_block(c, blk, c->buf);
}

struct dent {
	const char *name;
	uint32_t ino;
	uint8_t type;
};

/* A directory block holding @n entries, the last stretched to the tail. */
static void format_dir_block(struct mkfs_ctx *c, uint32_t dir_ino,
			     const struct dent *d, unsigned n)
{
	uint32_t end = c->bs - MFS_DIR_TAIL_SIZE, off = 0;
	struct mfs_dir_tail *tail = (void *)((char *)c->buf + end);

	memset(c->buf, 0, c->bs);
	for (unsigned i = 0; i < n; i++) {
		struct mfs_dirent *de = (void *)((char *)c->buf + off);
		uint32_t len = MFS_DIRENT_LEN(strlen(d[i].name));

		if (i == n - 1)
			len = end - off;
		de->inode = htole32(d[i].ino);
		de->rec_len = htole16((uint16_t)len);
		de->name_len = (uint8_t)strlen(d[i].name);
		de->file_type = d[i].type;
		memcpy(de->name, d[i].name, de->name_len);
		off += len;
	}
	tail->det_rec_len = htole16(MFS_DIR_TAIL_SIZE);
	tail->det_type = MFS_FT_DIR_TAIL;
	fmt_block_set_csum(&c->sb, MFS_CSUM_DIR, dir_ino, c->buf);
}

static int make_dir(struct mkfs_ctx *c, uint32_t ino, uint16_t mode,
		    uint16_t links, uint64_t blk, const struct dent *d, unsigned n)
{
	struct mfs_inode in;
	int err;

	format_dir_block(c, ino, d, n);
	err = write_block(c, blk, c->buf);
	if (err)
		return err;
	inode_init(c, &in, S_IFDIR | mode, links, c->bs, 1);
	in.i_block[0] = htole32((uint32_t)blk);
	return write_inode(c, ino, &in);
}

static int make_root_and_lost_found(struct mkfs_ctx *c)
{
	const struct dent root[] = {
		{ ".", MFS_ROOT_INO, MFS_FT_DIR },
		{ "..", MFS_ROOT_INO, MFS_FT_DIR },
		{ "lost+found", MFS_FIRST_INO, MFS_FT_DIR },
	};
	const struct dent lf[] = {
		{ ".", MFS_FIRST_INO, MFS_FT_DIR },
		{ "..", MFS_ROOT_INO, MFS_FT_DIR },
	};
	int err = make_dir(c, MFS_ROOT_INO, 0755, 3, c->root_block, root, 3);

	return err ? err : make_dir(c, MFS_FIRST_INO, 0700, 2, c->lf_block, lf, 2);
}

/* Hand the journal's runs of contiguous blocks to opts->reserve. */
static int reserve_journal(struct mkfs_ctx *c, uint32_t n)
{
	uint64_t start = 0;
	int err = 0;

	for (uint32_t i = 1; i <= n && !err; i++) {
		if (i < n && c->jmap[i] == c->jmap[i - 1] + 1)
			continue;
		err = c->o->reserve(c->o->reserve_arg, FMT_RESERVE_JOURNAL,
				    c->jmap[start] * c->bs,
				    (c->jmap[i - 1] + 1 - c->jmap[start]) * c->bs);
		start = i;
	}
	c->reserve_failed = err != 0;
	return err;
}

static int make_journal(struct mkfs_ctx *c)
{
	uint32_t n = le32toh(c->sb.s_journal_blocks);
	struct map_builder b = { .c = c, .ino = MFS_JOURNAL_INO, .n = n };
	struct mfs_inode in;
	int err;

	c->jmap = calloc(n, sizeof(*c->jmap));
	if (!c->jmap)
		return -ENOMEM;
	b.map = c->jmap;
	inode_init(c, &in, S_IFREG | 0600, 1, (uint64_t)n * c->bs, 0);
	err = build_map(&b, in.i_block);
	if (err)
		return err;
	in.i_blocks = htole64((n + b.nind) * (uint64_t)(c->bs / 512));
	err = write_inode(c, MFS_JOURNAL_INO, &in);
	if (!err && c->o->reserve)
		err = reserve_journal(c, n);
	if (err)
		return err;
	return jnl_format(c->bd, c->jmap, n, c->sb.s_uuid, le64toh(c->sb.s_csum_seed));
}

/* ---- reserved regions ---------------------------------------------------- */

static int make_region_table(struct mkfs_ctx *c)
{
	struct mfs_region_header *h = c->buf;
	struct mfs_region_entry *e = (void *)(h + 1);
	uint64_t start = le64toh(c->sb.s_regions_start);

	memset(c->buf, 0, c->bs);
	h->rh_magic = htole32(MFS_REGION_MAGIC);
	h->rh_count = htole32(c->o->nregions);
	h->rh_entry_size = htole32(MFS_REGION_ENTRY_SIZE);
	for (unsigned i = 0; i < c->o->nregions; i++, e++) {
		uint64_t bytes = c->o->regions[i].bytes;
		uint64_t blocks = UT_ROUND_UP(bytes, MFS_REGION_ALIGN) / c->bs;

		memcpy(e->re_name, c->o->regions[i].name, MFS_REGION_NAME_LEN);
		e->re_start = htole64(start);
		e->re_blocks = htole64(blocks);
		e->re_bytes = htole64(bytes);
		start += blocks;
	}
	fmt_block_set_csum(&c->sb, MFS_CSUM_REGION, 0, c->buf);
	return write_block(c, c->region_table, c->buf);
}

/* ---- multi-mount protection ----------------------------------------------- */

/* Released: the first mount claims it without waiting for a stamp. */
static int make_mmp(struct mkfs_ctx *c)
{
	return fmt_mmp_release(c->bd, &c->sb, "mkfs.miscfs");
}

/* ---- zeroing --------------------------------------------------------------- */

#define ZERO_CHUNK (1u << 20)

static int zero_range(struct mkfs_ctx *c, uint64_t blk, uint64_t count)
{
	uint64_t off = blk * c->bs, end = (blk + count) * c->bs;
	void *zero = bdev_alloc_buf(ZERO_CHUNK);
	int err = 0;

	if (!zero)
		return -ENOMEM;
	memset(zero, 0, ZERO_CHUNK);
	while (off < end && !err) {
		size_t len = (size_t)UT_MIN((uint64_t)ZERO_CHUNK, end - off);

		err = bdev_write(c->bd, off, zero, len);
		off += len;
	}
	bdev_free_buf(zero);
	return err;
}

/* A device that may hold old data gets its inode tables and regions
 * cleared, so no stale inode or stale region byte shows through. */
static int zero_old_data(struct mkfs_ctx *c)
{
	uint64_t rstart = le64toh(c->sb.s_regions_start);
	int err = 0;

	if (c->o->zeroed)
		return 0;
	for (uint32_t g = 0; g < le32toh(c->sb.s_groups_count) && !err; g++)
		err = zero_range(c, fmt_group_first_block(&c->sb, g) +
				 fmt_group_super_blocks(&c->sb, g) + 2,
				 fmt_itable_blocks(&c->sb));
	if (!err)
		err = zero_range(c, rstart, le64toh(c->sb.s_device_blocks) - rstart);
	return err;
}

/* ---- bitmaps, descriptors, superblocks ------------------------------------ */

static void set_bits(uint8_t *map, uint32_t from, uint32_t to)
{
	for (uint32_t i = from; i < to; i++)
		map[i / 8] |= (uint8_t)(1u << (i % 8));
}

static uint32_t block_bitmap(struct mkfs_ctx *c, uint32_t g, uint8_t *map)
{
	uint32_t n = fmt_group_nblocks(&c->sb, g);
	uint64_t first = fmt_group_first_block(&c->sb, g);
	uint32_t used = fmt_group_meta_blocks(&c->sb, g);

	if (c->cursor > first + used)
		used = (uint32_t)UT_MIN(c->cursor - first, (uint64_t)n);
	memset(map, 0, c->bs);
	set_bits(map, 0, used);
	set_bits(map, n, 8 * c->bs);       /* past the group's end */
	return n - used;
}

static uint32_t inode_bitmap(struct mkfs_ctx *c, uint32_t g, uint8_t *map)
{
	uint32_t ipg = le32toh(c->sb.s_inodes_per_group);
	uint32_t used = g == 0 ? MFS_FIRST_INO : 0;

	memset(map, 0, c->bs);
	set_bits(map, 0, used);
	set_bits(map, ipg, 8 * c->bs);
	return ipg - used;
}

static int write_group(struct mkfs_ctx *c, uint32_t g, struct mfs_group_desc *gd)
{
	uint64_t bb = fmt_group_first_block(&c->sb, g) + fmt_group_super_blocks(&c->sb, g);
	uint32_t free_blocks, free_inodes;
	int err;

	memset(gd, 0, sizeof(*gd));
	gd->bg_block_bitmap = htole32((uint32_t)bb);
	gd->bg_inode_bitmap = htole32((uint32_t)bb + 1);
	gd->bg_inode_table = htole32((uint32_t)bb + 2);
	free_blocks = block_bitmap(c, g, c->buf);
	gd->bg_block_bitmap_csum = htole32(fmt_bitmap_csum(&c->sb, MFS_CSUM_BBITMAP, g, c->buf));
	err = write_block(c, bb, c->buf);
	if (err)
		return err;
	free_inodes = inode_bitmap(c, g, c->buf);
	gd->bg_inode_bitmap_csum = htole32(fmt_bitmap_csum(&c->sb, MFS_CSUM_IBITMAP, g, c->buf));
	err = write_block(c, bb + 1, c->buf);
	gd->bg_free_blocks_count = htole32(free_blocks);
	gd->bg_free_inodes_count = htole32(free_inodes);
	gd->bg_used_dirs_count = htole32(g == 0 ? 2 : 0);
	gd->bg_checksum = htole32(fmt_gdesc_csum(&c->sb, g, gd));
	return err;
}

static int write_groups(struct mkfs_ctx *c, struct mfs_group_desc *gdt)
{
	uint64_t free_blocks = 0, free_inodes = 0;
	int err = 0;

	for (uint32_t g = 0; g < le32toh(c->sb.s_groups_count) && !err; g++) {
		err = write_group(c, g, &gdt[g]);
		free_blocks += le32toh(gdt[g].bg_free_blocks_count);
		free_inodes += le32toh(gdt[g].bg_free_inodes_count);
	}
	c->sb.s_free_blocks_count = htole64(free_blocks);
	c->sb.s_free_inodes_count = htole32((uint32_t)free_inodes);
	return err;
}

/* Superblock copy and descriptor table at the start of backup group @g. */
static int write_backup(struct mkfs_ctx *c, uint32_t g, const void *gdt)
{
	uint64_t first = fmt_group_first_block(&c->sb, g);
	uint32_t gdt_blocks = le16toh(c->sb.s_gdt_blocks);
	struct mfs_super copy = c->sb;
	int err;

	copy.s_block_group_nr = htole16((uint16_t)g);
	fmt_sb_set_csum(&copy);
	memset(c->buf, 0, c->bs);
	memcpy(c->buf, &copy, sizeof(copy));
	err = write_block(c, first, c->buf);
	if (!err)
		err = bdev_write(c->bd, (first + 1) * c->bs, gdt,
				 (size_t)gdt_blocks * c->bs);
	return err;
}

/* The primary: gdt at first_data_block + 1, superblock at byte 1024. */
static int write_primary(struct mkfs_ctx *c, const void *gdt)
{
	uint32_t gdt_blocks = le16toh(c->sb.s_gdt_blocks);
	uint64_t sb_block = MFS_SB_OFFSET / c->bs;
	int err;

	err = bdev_write(c->bd, (sb_block + 1) * c->bs, gdt, (size_t)gdt_blocks * c->bs);
	if (!err)
		err = bdev_flush(c->bd);
	if (err)
		return err;
	fmt_sb_set_csum(&c->sb);
	memset(c->buf, 0, c->bs);
	memcpy((char *)c->buf + MFS_SB_OFFSET % c->bs, &c->sb, sizeof(c->sb));
	err = write_block(c, sb_block, c->buf);
	return err ? err : bdev_flush(c->bd);
}

static int write_super_copies(struct mkfs_ctx *c)
{
	uint32_t groups = le32toh(c->sb.s_groups_count);
	size_t gdt_bytes = (size_t)le16toh(c->sb.s_gdt_blocks) * c->bs;
	struct mfs_group_desc *gdt = bdev_alloc_buf(gdt_bytes);
	int err;

	if (!gdt)
		return -ENOMEM;
	memset(gdt, 0, gdt_bytes);
	err = write_groups(c, gdt);
	for (uint32_t g = 1; g < groups && !err; g++)
		if (fmt_group_has_super(g))
			err = write_backup(c, g, gdt);
	if (!err)
		err = write_primary(c, gdt);
	bdev_free_buf(gdt);
	return err;
}

/* ---- putting it together ------------------------------------------------- */

static void fill_identity(struct mkfs_ctx *c)
{
	struct mfs_super *sb = &c->sb;
	uint32_t compat = MFS_FEATURE_COMPAT_HAS_JOURNAL | MFS_FEATURE_COMPAT_EXT_ATTR;
	uint64_t seed = c->o->csum_seed;

	if (c->o->nregions)
		compat |= MFS_FEATURE_COMPAT_REGIONS;
	sb->s_magic = htole32(MFS_MAGIC);
	sb->s_rev_level = htole32(MFS_REV_LEVEL);
	sb->s_feature_compat = htole32(compat);
	sb->s_feature_incompat = htole32(MFS_FEATURE_INCOMPAT_FILETYPE |
					 (c->o->mmp ? MFS_FEATURE_INCOMPAT_MMP : 0));
	if (c->o->mmp)
		sb->s_mmp_interval = htole16(c->o->mmp_interval ? c->o->mmp_interval :
					     MFS_MMP_INTERVAL_DEFAULT);
	sb->s_feature_ro_compat = htole32(MFS_FEATURE_RO_COMPAT_SPARSE_SUPER |
					  MFS_FEATURE_RO_COMPAT_LARGE_FILE |
					  MFS_FEATURE_RO_COMPAT_METADATA_CSUM |
					  (c->o->dir_index ? MFS_FEATURE_RO_COMPAT_DIR_INDEX : 0));
	sb->s_inode_size = htole16(MFS_INODE_SIZE);
	sb->s_desc_size = htole16(MFS_DESC_SIZE);
	sb->s_state = htole16(MFS_STATE_VALID);
	sb->s_errors = htole16(c->o->errors ? c->o->errors : MFS_ERRORS_CONTINUE);
	sb->s_default_mount_opts = htole32(c->o->default_mount_opts);
	sb->s_max_mnt_count = htole16((uint16_t)-1);
	sb->s_first_ino = htole32(MFS_FIRST_INO);
	sb->s_journal_inum = htole32(MFS_JOURNAL_INO);
	sb->s_region_count = htole32(c->o->nregions);
	sb->s_mkfs_time = sb->s_wtime = htole64(mkfs_now(c));
	if (c->o->uuid_set) {
		memcpy(sb->s_uuid, c->o->uuid, 16);
	} else if (getrandom(sb->s_uuid, 16, 0) == 16) {
		sb->s_uuid[6] = (sb->s_uuid[6] & 0x0f) | 0x40;   /* version 4 */
		sb->s_uuid[8] = (sb->s_uuid[8] & 0x3f) | 0x80;   /* RFC 4122 */
	}
	while (!seed && getrandom(&seed, sizeof(seed), 0) != sizeof(seed))
		;
	sb->s_csum_seed = htole64(seed);
	memcpy(sb->s_volume_name, c->o->label, strnlen(c->o->label, MFS_LABEL_LEN));
}

static int check_opts(const struct fmt_mkfs_opts *o)
{
	uint32_t bs = opt_block_size(o);
	unsigned max = (bs - MFS_REGION_HDR_SIZE - 4) / MFS_REGION_ENTRY_SIZE;

	if (bs != 1024 && bs != 2048 && bs != 4096) {
		mlog_err("block size %" PRIu32 " is not supported (use 1024, 2048 "
			 "or 4096)", bs);
		return -EINVAL;
	}
	if (o->journal_bytes && o->journal_bytes / bs < JNL_MIN_BLOCKS) {
		mlog_err("a journal of %" PRIu64 " blocks is below the minimum of "
			 "%u blocks", o->journal_bytes / bs, JNL_MIN_BLOCKS);
		return -EINVAL;
	}
	if (o->mmp_interval > MFS_MMP_INTERVAL_MAX) {
		mlog_err("an MMP interval of %u s is above the maximum of %u s",
			 o->mmp_interval, MFS_MMP_INTERVAL_MAX);
		return -EINVAL;
	}
	if (o->nregions > max) {
		mlog_err("%u reserved regions requested; %u fit in the region table "
			 "at block size %" PRIu32, o->nregions, max, bs);
		return -EINVAL;
	}
	for (unsigned i = 0; i < o->nregions; i++) {
		if (!o->regions[i].name[0] || !o->regions[i].bytes) {
			mlog_err("reserved region %u needs a name and a size", i + 1);
			return -EINVAL;
		}
		/* Each is the file /.regions/NAME when mounted. */
		if (!strcmp(o->regions[i].name, ".") || !strcmp(o->regions[i].name, "..")) {
			mlog_err("reserved region %u: '.' and '..' cannot name a region", i + 1);
			return -EINVAL;
		}
		for (unsigned j = 0; j < i; j++)
			if (!strncmp(o->regions[i].name, o->regions[j].name,
				     MFS_REGION_NAME_LEN)) {
				mlog_err("reserved region name '%.32s' is used twice",
					 o->regions[i].name);
				return -EINVAL;
			}
	}
	return 0;
}

static void report_inodes(const struct fmt_mkfs_opts *o, uint64_t size)
{
	uint32_t bs = opt_block_size(o);
	uint64_t blocks = UT_MIN(size / bs, (uint64_t)UINT32_MAX);
	uint64_t groups = UT_DIV_ROUND_UP(blocks, 8ull * bs);
	uint64_t bpi = o->bytes_per_inode ? o->bytes_per_inode :
		       size < (512ull << 20) ? 4096 : 16384;

	mlog_err("too many inodes: %" PRIu64 " asked for (%s), at most %" PRIu64
		 " fit on this device at %" PRIu32 "-byte blocks",
		 o->inodes ? (uint64_t)o->inodes : blocks * bs / bpi,
		 o->inodes ? "-N" : "by bytes per inode",
		 UT_MIN(groups * 8 * bs, (uint64_t)UINT32_MAX), bs);
}

static int report_layout_error(const struct fmt_mkfs_opts *o, uint64_t size, int err)
{
	char have[32], need[32];

	if (err == -ENOSPC && region_bytes(o) + (64ull << 10) >= size)
		mlog_err("reserved regions take %s, which does not fit on a device "
			 "of %s", ut_format_size(region_bytes(o), need, sizeof(need)),
			 ut_format_size(size, have, sizeof(have)));
	else if (err == -ENOSPC)
		mlog_err("device of %" PRIu64 " KiB (%s) is too small: the minimum "
			 "for these options is %" PRIu64 " KiB (%s)", size >> 10,
			 ut_format_size(size, have, sizeof(have)),
			 fmt_mkfs_min_bytes(o) >> 10,
			 ut_format_size(fmt_mkfs_min_bytes(o), need, sizeof(need)));
	else if (err == -EOVERFLOW)
		report_inodes(o, size);
	else
		mlog_err("a journal of %" PRIu64 " blocks is larger than a file can be "
			 "at %" PRIu32 "-byte blocks (%" PRIu64 " blocks)",
			 o->journal_bytes / opt_block_size(o), opt_block_size(o),
			 fmt_max_file_size(opt_block_size(o)) / opt_block_size(o));
	return err;
}

static int allocate_fixed(struct mkfs_ctx *c)
{
	int err = 0;

	c->cursor = group_data_start(&c->sb, 0);
	if (c->o->nregions)
		err = alloc_block(c, &c->region_table);
	if (!err && c->o->mmp)
		err = alloc_block(c, &c->mmp_block);
	if (!err)
		err = alloc_block(c, &c->root_block);
	if (!err)
		err = alloc_block(c, &c->lf_block);
	c->sb.s_region_table = htole64(c->region_table);
	c->sb.s_mmp_block = htole64(c->mmp_block);
	return err;
}

static int mkfs_write(struct mkfs_ctx *c)
{
	int err = zero_old_data(c);

	if (!err)
		err = allocate_fixed(c);
	if (!err && c->o->nregions)
		err = make_region_table(c);
	if (!err && c->o->mmp)
		err = make_mmp(c);
	if (!err)
		err = make_root_and_lost_found(c);
	if (!err)
		err = make_journal(c);
	if (!err && c->o->nregions && c->o->reserve) {
		err = c->o->reserve(c->o->reserve_arg, FMT_RESERVE_REGIONS,
				    le64toh(c->sb.s_regions_start) * c->bs,
				    (le64toh(c->sb.s_device_blocks) -
				     le64toh(c->sb.s_regions_start)) * c->bs);
		c->reserve_failed = err != 0;
	}
	if (!err)
		err = write_super_copies(c);
	return err;
}

int fmt_mkfs(struct bdev *bd, const struct fmt_mkfs_opts *opts)
{
	struct mkfs_ctx c = { .bd = bd, .o = opts, .bs = opt_block_size(opts) };
	int err = check_opts(opts);

	if (err)
		return err;
	if (bd->block_size != c.bs) {
		mlog_err("device opened with %" PRIu32 "-byte blocks for a %" PRIu32
			 "-byte filesystem", bd->block_size, c.bs);
		return -EINVAL;
	}
	err = mkfs_layout(opts, bd->size, &c.sb);
	if (err)
		return report_layout_error(opts, bd->size, err);
	fill_identity(&c);
	c.buf = bdev_alloc_buf(c.bs);
	if (!c.buf)
		return -ENOMEM;
	err = mkfs_write(&c);
	if (err && !c.reserve_failed)
		mlog_err("writing the filesystem failed: %s", strerror(-err));
	bdev_free_buf(c.buf);
	free(c.jmap);
	return err;
}
