/*
 * t_bmap - the block-map walker.  A walk costs what is on the disk, not
 * what i_size claims: inodes with checksums that match but sizes of 2^63
 * bytes, the largest file with only a triple-indirect block, or indirect
 * blocks that all point at one another, are walked by the library and by
 * miscfs-debug (verify, ls) under a hard time limit: a walk that steps
 * through holes one block at a time, or follows the same blocks a billion
 * times, fails by timing out.  And every mode of the walker, on a disk in
 * memory behind callbacks that check how they are called: allocation,
 * lookup and reading at the edges of every level, a punched hole and a
 * truncation in steps, a free that fails, damage, an edit.
 */
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bdev_test.h"
#include "mfs.h"
#include "t.h"
#include "util.h"

#define BS 4096u
#define LIMIT_S 20           /* per tool run; a correct walk takes well under 1 s */

enum { HUGE_FILE = 12, HUGE_DIR = 13, SPARSE_DIR = 14, SPARSE_FILE = 15, BAD_PTR = 16,
       LOOP_DIR = 17 };

static struct bdev *bd;
static uint8_t *img;
static struct mfs_super *sb;

static uint8_t *block(uint64_t blk)
{
	return img + blk * BS;
}

static struct mfs_group_desc *gdesc(uint32_t g)
{
	return (struct mfs_group_desc *)block(1) + g;
}

/* Take the first free block of group 0 and mark it in use. */
static uint64_t alloc_block(void)
{
	struct mfs_group_desc *gd = gdesc(0);
	uint8_t *map = block(le32toh(gd->bg_block_bitmap));

	for (uint32_t i = 0; i < fmt_group_nblocks(sb, 0); i++) {
		if (map[i / 8] & (1u << (i % 8)))
			continue;
		map[i / 8] |= (uint8_t)(1u << (i % 8));
		gd->bg_block_bitmap_csum = htole32(fmt_bitmap_csum(sb, MFS_CSUM_BBITMAP, 0, map));
		gd->bg_checksum = htole32(fmt_gdesc_csum(sb, 0, gd));
		memset(block(i), 0, BS);
		return i;
	}
	t_fail("group 0 is full");
}

/* An indirect block of @ino with pointer @ptr in slot @slot (0: none). */
static uint64_t indirect(uint32_t ino, uint32_t slot, uint64_t ptr)
{
	uint64_t blk = alloc_block();

	((uint32_t *)block(blk))[slot] = htole32((uint32_t)ptr);
	fmt_block_set_csum(sb, MFS_CSUM_INDIRECT, ino, block(blk));
	return blk;
}

/* An indirect block of @ino whose every slot points at @ptr. */
static uint64_t indirect_all(uint32_t ino, uint64_t ptr)
{
	uint64_t blk = alloc_block();

	for (uint32_t i = 0; i < fmt_addr_per_block(BS); i++)
		((uint32_t *)block(blk))[i] = htole32((uint32_t)ptr);
	fmt_block_set_csum(sb, MFS_CSUM_INDIRECT, ino, block(blk));
	return blk;
}

/* A directory block of @ino holding "." and "..". */
static uint64_t dir_block(uint32_t ino)
{
	uint64_t blk = alloc_block();
	uint8_t *b = block(blk);
	struct mfs_dirent *dot = (void *)b, *dotdot = (void *)(b + 12);
	struct mfs_dir_tail *t = (void *)(b + BS - MFS_DIR_TAIL_SIZE);

	dot->inode = htole32(ino);
	dot->rec_len = htole16(12);
	dot->name_len = 1;
	dot->file_type = MFS_FT_DIR;
	memcpy(dot->name, ".", 1);
	dotdot->inode = htole32(MFS_ROOT_INO);
	dotdot->rec_len = htole16(BS - 12 - MFS_DIR_TAIL_SIZE);
	dotdot->name_len = 2;
	dotdot->file_type = MFS_FT_DIR;
	memcpy(dotdot->name, "..", 2);
	t->det_rec_len = htole16(MFS_DIR_TAIL_SIZE);
	t->det_type = MFS_FT_DIR_TAIL;
	fmt_block_set_csum(sb, MFS_CSUM_DIR, ino, b);
	return blk;
}

/* Write inode @ino with a matching checksum and mark it in use. */
static void put_inode(uint32_t ino, struct mfs_inode *in)
{
	struct mfs_group_desc *gd = gdesc(0);
	uint8_t *map = block(le32toh(gd->bg_inode_bitmap));
	uint32_t off;
	uint64_t blk = fmt_inode_block(sb, le32toh(gd->bg_inode_table), ino, &off);

	in->i_links_count = htole16(1);
	in->i_checksum = htole32(fmt_inode_csum(sb, ino, in));
	memcpy(block(blk) + off, in, sizeof(*in));
	map[(ino - 1) / 8] |= (uint8_t)(1u << ((ino - 1) % 8));
	gd->bg_inode_bitmap_csum = htole32(fmt_bitmap_csum(sb, MFS_CSUM_IBITMAP, 0, map));
	gd->bg_checksum = htole32(fmt_gdesc_csum(sb, 0, gd));
}

static struct mfs_inode new_inode(uint16_t mode, uint64_t size)
{
	struct mfs_inode in;

	memset(&in, 0, sizeof(in));
	in.i_mode = htole16(mode);
	in.i_size = htole64(size);
	return in;
}

static uint64_t max_blocks(void)
{
	return fmt_max_file_blocks(BS);
}

static uint64_t last_data;   /* the data block at the end of SPARSE_FILE */
static uint64_t bad_ind;     /* BAD_PTR's indirect block */
static char bad_why[128];    /* what is said about it */

static void craft(void)
{
	struct mfs_inode in;
	uint32_t last = fmt_addr_per_block(BS) - 1;

	t_assert(le32toh(sb->s_inodes_per_group) > LOOP_DIR, "inodes in group 0");
	in = new_inode(S_IFREG | 0644, 1ull << 63);
	in.i_block[MFS_TIND_BLOCK] = htole32((uint32_t)indirect(HUGE_FILE, 0, 0));
	put_inode(HUGE_FILE, &in);

	in = new_inode(S_IFDIR | 0755, 1ull << 63);
	in.i_block[0] = htole32((uint32_t)dir_block(HUGE_DIR));
	put_inode(HUGE_DIR, &in);

	/* The largest directory there can be, all holes after its first block. */
	in = new_inode(S_IFDIR | 0755, fmt_max_file_size(BS));
	in.i_block[0] = htole32((uint32_t)dir_block(SPARSE_DIR));
	in.i_block[MFS_DIND_BLOCK] = htole32((uint32_t)indirect(SPARSE_DIR, 0, 0));
	in.i_block[MFS_TIND_BLOCK] = htole32((uint32_t)indirect(SPARSE_DIR, 0, 0));
	put_inode(SPARSE_DIR, &in);

	/* The largest file, one block mapped at its very end. */
	last_data = alloc_block();
	in = new_inode(S_IFREG | 0644, fmt_max_file_size(BS));
	in.i_block[MFS_TIND_BLOCK] = htole32((uint32_t)indirect(SPARSE_FILE, last,
		indirect(SPARSE_FILE, last, indirect(SPARSE_FILE, last, last_data))));
	put_inode(SPARSE_FILE, &in);

	/* Slot 7 of the single-indirect block maps logical block 19. */
	in = new_inode(S_IFREG | 0644, 100 * BS);
	bad_ind = indirect(BAD_PTR, 7, 0xfffffff0u);
	in.i_block[MFS_IND_BLOCK] = htole32((uint32_t)bad_ind);
	put_inode(BAD_PTR, &in);
	snprintf(bad_why, sizeof(bad_why), "inode 16: indirect block %" PRIu64
		 " maps block 19 to 4294967280, outside the filesystem", bad_ind);

	/* Four blocks on disk that map one directory block a billion times. */
	in = new_inode(S_IFDIR | 0755, fmt_max_file_size(BS));
	in.i_block[0] = htole32((uint32_t)dir_block(LOOP_DIR));
	in.i_block[MFS_TIND_BLOCK] = htole32((uint32_t)indirect_all(LOOP_DIR,
		indirect_all(LOOP_DIR, indirect_all(LOOP_DIR, le32toh(in.i_block[0])))));
	put_inode(LOOP_DIR, &in);
}

/* ---- the library walk ---------------------------------------------------- */

struct seen {
	unsigned long data, indirect;
	uint64_t lblk, pblk;
};

static int on_data(void *arg, uint64_t lblk, uint64_t pblk)
{
	struct seen *s = arg;

	s->data++;
	s->lblk = lblk;
	s->pblk = pblk;
	return 0;
}

static int on_indirect(void *arg, uint64_t blk, int depth)
{
	(void)blk;
	(void)depth;
	((struct seen *)arg)->indirect++;
	return 0;
}

static int walk(struct fmt_raw *raw, uint32_t ino, uint64_t first, uint64_t end,
		struct seen *s)
{
	struct mfs_inode in;
	struct fmt_bmap_walk w;

	t_ok(fmt_raw_inode(raw, ino, &in));
	fmt_raw_bmap_walk_init(raw, ino, &in, &w);
	w.data = on_data;
	w.indirect = on_indirect;
	w.ctx = s;
	memset(s, 0, sizeof(*s));
	return fmt_bmap_walk(&w, first, end);
}

static void expect_why(struct fmt_raw *raw, const char *text)
{
	t_assert(strstr(raw->why, text), "message '%s' lacks '%s'", raw->why, text);
	printf("ok: refused: %s\n", raw->why);
}

static void check_library(void)
{
	struct fmt_raw raw;
	struct mfs_inode in;
	struct seen s;
	uint64_t pblk;

	t_ok(fmt_raw_open(bd, &raw));
	t_eq(walk(&raw, HUGE_FILE, 0, UINT64_MAX, &s), -EUCLEAN);
	expect_why(&raw, "inode 12: i_size 9223372036854775808 is beyond the largest file");
	t_eq(walk(&raw, HUGE_DIR, 0, 1, &s), -EUCLEAN);
	expect_why(&raw, "inode 13: i_size");

	t_ok(walk(&raw, SPARSE_DIR, 0, UINT64_MAX, &s));
	t_eq(s.data, 1);
	t_eq(s.indirect, 2);
	t_ok(walk(&raw, SPARSE_FILE, 0, UINT64_MAX, &s));
	t_eq(s.data, 1);
	t_eq(s.indirect, 3);
	t_eq(s.lblk, max_blocks() - 1);
	t_eq(s.pblk, last_data);
	t_ok(walk(&raw, SPARSE_FILE, max_blocks() - 1, max_blocks(), &s));
	t_eq(s.data, 1);
	t_ok(walk(&raw, SPARSE_FILE, 0, max_blocks() - 1, &s));
	t_eq(s.data, 0);

	t_ok(fmt_raw_inode(&raw, SPARSE_FILE, &in));
	t_ok(fmt_raw_bmap(&raw, SPARSE_FILE, &in, max_blocks() - 1, &pblk));
	t_eq(pblk, last_data);
	t_ok(fmt_raw_bmap(&raw, SPARSE_FILE, &in, 5000, &pblk));
	t_eq(pblk, 0);
	t_eq(fmt_raw_bmap(&raw, SPARSE_FILE, &in, max_blocks(), &pblk), -EUCLEAN);

	t_eq(walk(&raw, BAD_PTR, 0, UINT64_MAX, &s), -EUCLEAN);
	expect_why(&raw, bad_why);
	t_ok(walk(&raw, BAD_PTR, 0, 19, &s));   /* the bad slot is not asked for */

	t_eq(walk(&raw, LOOP_DIR, 0, UINT64_MAX, &s), -EUCLEAN);
	expect_why(&raw, "inode 17: the block map meets more than the 2048 blocks");
	t_ok(walk(&raw, LOOP_DIR, max_blocks() - 1, max_blocks(), &s));
	t_eq(s.data, 1);
	fmt_raw_close(&raw);
	printf("ok: library walks\n");
}

/* ---- every mode of the walker, on a disk in memory ----------------------- */

#define LAB_BLOCKS 64u
#define LAB_INO    20u
#define LAB_MARGIN 10

static uint8_t lab_disk[LAB_BLOCKS][BS];
static struct mfs_super lab_sb;       /* 64 blocks, no group metadata */
static struct mfs_inode lab_in;

/* What the walker asked of its callbacks. */
struct lab {
	uint64_t next;               /* the next block allocate hands out */
	int held, locked, writes, changed, root_changed;
	uint64_t freed[LAB_BLOCKS];
	unsigned nfreed;
	int credits, per_step;       /* per_step 0: never stop */
	unsigned fail_free;          /* the free that fails (1 = first; 0: none) */
	bool take_bad_csum;          /* damage: go on with a bad checksum */
	struct fmt_bmap_bad bad;     /* the last damage */
	char why[200];
};

static struct lab lab;

static int lab_get(void *ctx, struct fmt_bmap_ind *ind, enum fmt_bmap_get how)
{
	(void)ctx;
	t_assert(ind->blk && ind->blk < LAB_BLOCKS, "got block %" PRIu64, ind->blk);
	ind->ptrs = (uint32_t *)lab_disk[ind->blk];
	if (how == FMT_BMAP_WRITE) {
		lab.writes++;
		lab.credits--;
		return 0;
	}
	if (how == FMT_BMAP_NEW)
		memset(ind->ptrs, 0, BS);
	lab.held++;
	return 0;
}

static void lab_put(void *ctx, struct fmt_bmap_ind *ind)
{
	(void)ctx;
	(void)ind;
	lab.held--;
}

static void lab_lock(void *ctx, struct fmt_bmap_ind *ind)
{
	(void)ctx;
	(void)ind;
	t_assert(!lab.locked++, "two blocks locked at once");
}

static void lab_unlock(void *ctx, struct fmt_bmap_ind *ind)
{
	(void)ctx;
	(void)ind;
	t_assert(lab.locked-- == 1, "unlock without lock");
}

static int lab_changed(void *ctx, struct fmt_bmap_ind *ind)
{
	(void)ctx;
	t_assert(!lab.locked, "recorded while locked");
	if (!ind->blk)
		lab.root_changed++;
	else if (fmt_block_csum_ok(&lab_sb, MFS_CSUM_INDIRECT, LAB_INO, ind->ptrs))
		lab.changed++;
	else
		t_fail("indirect block %" PRIu64 " recorded unsealed", ind->blk);
	return 0;
}

static int lab_alloc(void *ctx, int depth, uint64_t *blk)
{
	(void)ctx;
	(void)depth;
	t_assert(lab.next < LAB_BLOCKS, "the lab's disk is full");
	*blk = lab.next++;
	return 0;
}

static int lab_free(void *ctx, uint64_t blk, int depth)
{
	(void)ctx;
	(void)depth;
	lab.credits--;
	if (lab.fail_free && lab.fail_free-- == 1)
		return -EIO;
	t_assert(lab.nfreed < LAB_BLOCKS, "too many frees");
	lab.freed[lab.nfreed++] = blk;
	return 0;
}

static bool lab_stop(void *ctx)
{
	(void)ctx;
	return lab.per_step && lab.credits < LAB_MARGIN;
}

static int lab_damage(void *ctx, const struct fmt_bmap_bad *bad)
{
	(void)ctx;
	lab.bad = *bad;
	snprintf(lab.why, sizeof(lab.why), "%s", bad->why);
	return lab.take_bad_csum && !bad->where ? 0 : -EUCLEAN;
}

static const struct fmt_bmap_ops lab_ops = {
	.get = lab_get, .put = lab_put, .lock = lab_lock, .unlock = lab_unlock,
	.changed = lab_changed, .alloc = lab_alloc, .free = lab_free, .stop = lab_stop,
	.damage = lab_damage,
};

static const struct fmt_bmap lab_bm = {
	.sb = &lab_sb, .ino = LAB_INO, .in = &lab_in, .ops = &lab_ops, .ctx = NULL,
};

/* An empty file on an empty disk; block 0 is never handed out. */
static void lab_reset(void)
{
	memset(lab_disk, 0, sizeof(lab_disk));
	memset(&lab_sb, 0, sizeof(lab_sb));
	lab_sb.s_blocks_count = htole64(LAB_BLOCKS);
	lab_sb.s_log_block_size = htole32(2);
	lab_sb.s_csum_seed = htole64(0x1ab);
	lab_in = new_inode(S_IFREG | 0644, fmt_max_file_size(BS));
	memset(&lab, 0, sizeof(lab));
	lab.next = 1;
}

/* Nothing held or locked between calls, and every block got for writing
 * was recorded sealed. */
static void lab_settled(void)
{
	t_eq(lab.held, 0);
	t_eq(lab.locked, 0);
}

static uint64_t lab_find(uint64_t lblk)
{
	uint64_t pblk;

	t_ok(fmt_bmap_find(&lab_bm, lblk, &pblk));
	lab_settled();
	return pblk;
}

/* Logical blocks at the edges of every level of the map. */
static uint64_t edges[8];

static void lab_edges(void)
{
	uint64_t apb = fmt_addr_per_block(BS), d = MFS_NDIR_BLOCKS + apb;

	memcpy(edges, (uint64_t[8]){ 0, 11, 12, d - 1, d, d + apb * apb - 1,
				     d + apb * apb, max_blocks() - 1 }, sizeof(edges));
}

/* Map every edge; returns the data blocks, in @pblk. */
static void lab_map_edges(uint64_t pblk[8])
{
	/* Blocks each edge makes: data, and the indirect blocks on its way. */
	static const unsigned made[8] = { 1, 1, 2, 1, 3, 2, 4, 3 };
	bool isnew;

	lab_edges();
	for (int i = 0; i < 8; i++) {
		uint64_t before = lab.next;

		t_ok(fmt_bmap_alloc(&lab_bm, edges[i], &pblk[i], &isnew));
		lab_settled();
		t_assert(isnew, "edge %d was new", i);
		t_eq(lab.next - before, made[i]);
		t_eq(pblk[i], lab.next - 1);     /* data comes after its indirect blocks */
	}
}

static int list_data(void *arg, uint64_t lblk, uint64_t pblk)
{
	uint64_t *seen = arg;

	t_eq(lblk, edges[seen[0]]);
	seen[1 + seen[0]++] = pblk;
	return 0;
}

static int count_indirect(void *arg, uint64_t blk, int depth)
{
	(void)blk;
	(void)depth;
	((uint64_t *)arg)[9]++;
	return 0;
}

static int any_data(void *arg, uint64_t lblk, uint64_t pblk)
{
	(void)arg;
	(void)lblk;
	(void)pblk;
	return 0;
}

static bool was_freed(uint64_t blk)
{
	unsigned n = 0;

	for (unsigned i = 0; i < lab.nfreed; i++)
		n += lab.freed[i] == blk;
	t_assert(n <= 1, "block %" PRIu64 " freed %u times", blk, n);
	return n;
}

/* Allocation makes each level once, finds what it made, and reads back. */
static void test_alloc(void)
{
	uint64_t pblk[8], seen[10] = { 0 }, again;
	bool isnew;

	lab_reset();
	lab_map_edges(pblk);
	t_eq(lab.root_changed, 5);       /* two direct slots, three roots */
	for (int i = 0; i < 8; i++) {
		t_eq(lab_find(edges[i]), pblk[i]);
		t_ok(fmt_bmap_alloc(&lab_bm, edges[i], &again, &isnew));
		t_assert(!isnew && again == pblk[i], "edge %d mapped once", i);
	}
	t_eq(lab.next, 18);
	t_eq(lab_find(edges[2] + 1), 0);
	t_eq(fmt_bmap_find(&lab_bm, max_blocks(), &again), -EFBIG);
	t_eq(fmt_bmap_alloc(&lab_bm, max_blocks(), &again, &isnew), -EFBIG);
	t_ok(fmt_bmap_read(&lab_bm, 0, UINT64_MAX, list_data, count_indirect, seen));
	t_eq(seen[0], 8);
	t_eq(seen[9], 9);                /* 1 + 3 + 5 indirect blocks */
	t_assert(!memcmp(seen + 1, pblk, sizeof(pblk)), "read as mapped");
	lab_settled();
	printf("ok: allocation, lookup and reading agree at every level's edges\n");
}

/* Free [@first, @end) in steps of @per_step credits; returns the steps. */
static int lab_free_range(uint64_t first, uint64_t end, int per_step)
{
	bool stopped = true;
	int steps = 0;

	lab.per_step = per_step;
	while (stopped) {
		lab.credits = per_step;
		lab.writes = lab.changed = 0;
		t_ok(fmt_bmap_free(&lab_bm, first, end, &stopped));
		lab_settled();
		t_eq(lab.changed, lab.writes);   /* every block got to write, resealed */
		t_assert(++steps < 100, "the free goes on");
	}
	return steps;
}

/* A punched hole frees the indirect blocks whose whole span it covers and
 * keeps the others; a truncation in steps frees the rest, each once. */
static void test_free(void)
{
	uint64_t pblk[8], ind[10];
	int steps;

	lab_reset();
	lab_map_edges(pblk);
	ind[0] = le32toh(lab_in.i_block[MFS_IND_BLOCK]);
	ind[1] = le32toh(lab_in.i_block[MFS_DIND_BLOCK]);
	ind[2] = le32toh(lab_in.i_block[MFS_TIND_BLOCK]);
	ind[3] = le32toh(((uint32_t *)lab_disk[ind[1]])[0]);      /* under edges[4] */

	lab_free_range(5, edges[4] + 1, 0);
	t_eq(lab.nfreed, 5);             /* edges 1 to 4, and the single-indirect block */
	for (int i = 1; i <= 4; i++)
		t_assert(was_freed(pblk[i]), "edge %d freed", i);
	t_assert(was_freed(ind[0]) && !lab_in.i_block[MFS_IND_BLOCK], "single-indirect gone");
	t_assert(!was_freed(ind[3]), "a block the hole covers in part stays");
	t_eq(lab_find(edges[0]), pblk[0]);
	t_eq(lab_find(edges[4]), 0);
	t_eq(lab_find(edges[5]), pblk[5]);

	lab.nfreed = 0;
	steps = lab_free_range(edges[4], UINT64_MAX, LAB_MARGIN + 6);
	t_assert(steps > 1, "credits ran out (%d steps)", steps);
	t_eq(lab.nfreed, 3 + 8);         /* edges 5 to 7, what was left of the map */
	for (int i = 5; i < 8; i++)
		t_assert(was_freed(pblk[i]), "edge %d freed", i);
	t_assert(was_freed(ind[1]) && was_freed(ind[2]) && was_freed(ind[3]), "levels gone");
	t_assert(!lab_in.i_block[MFS_DIND_BLOCK] && !lab_in.i_block[MFS_TIND_BLOCK], "roots");
	t_eq(lab_find(edges[0]), pblk[0]);
	printf("ok: a hole and a truncation in %d steps free each block once\n", steps);
}

/* A free that fails leaves the slots of what it freed cleared, the rest
 * mapped, and the block it changed resealed and recorded. */
static void test_free_fails(void)
{
	uint64_t pblk[8], sind;

	lab_reset();
	lab_map_edges(pblk);
	sind = le32toh(lab_in.i_block[MFS_IND_BLOCK]);
	lab.fail_free = 2;
	lab.writes = lab.changed = 0;
	t_eq(fmt_bmap_free(&lab_bm, 11, edges[3] + 1, &(bool){ false }), -EIO);
	lab_settled();
	t_eq(lab.nfreed, 1);             /* edges[1] */
	t_eq(lab.writes, 1);
	t_eq(lab.changed, 1);
	t_assert(fmt_block_csum_ok(&lab_sb, MFS_CSUM_INDIRECT, LAB_INO, lab_disk[sind]), "sealed");
	t_eq(lab_find(edges[1]), 0);
	t_eq(lab_find(edges[2]), pblk[2]);
	printf("ok: a failed free keeps memory and the record alike\n");
}

/* Damage is refused in the walker's words, or taken when the caller says
 * so; a bad pointer is never followed. */
static void test_damage(void)
{
	uint64_t pblk[8], sind, got;
	uint32_t *ptrs;
	char want[160];
	bool isnew;

	lab_reset();
	lab_map_edges(pblk);
	sind = le32toh(lab_in.i_block[MFS_IND_BLOCK]);
	ptrs = (uint32_t *)lab_disk[sind];
	ptrs[5] = htole32(999);          /* logical block 17, outside the 64 blocks */
	t_eq(fmt_bmap_find(&lab_bm, 17, &got), -EUCLEAN);
	t_assert(!lab.bad.where && strstr(lab.why, "checksum mismatch"), "%s", lab.why);
	lab.take_bad_csum = true;        /* past the checksum, to the pointer */
	t_eq(fmt_bmap_find(&lab_bm, 17, &got), -EUCLEAN);
	t_assert(lab.bad.where && !strcmp(lab.bad.where, "outside the filesystem"), "where");
	t_eq(lab.bad.lblk, 17);
	t_eq(lab.bad.ptr, 999);
	snprintf(want, sizeof(want), "inode %u: indirect block %" PRIu64 " maps block 17 "
		 "to 999, outside the filesystem", LAB_INO, sind);
	t_assert(!strcmp(lab.why, want), "%s", lab.why);
	t_ok(fmt_bmap_alloc(&lab_bm, 16, &got, &isnew));
	t_assert(isnew && fmt_block_csum_ok(&lab_sb, MFS_CSUM_INDIRECT, LAB_INO, ptrs),
		 "a block taken as it was is resealed when it changes");
	lab.take_bad_csum = false;
	t_eq(fmt_bmap_read(&lab_bm, 0, UINT64_MAX, any_data, NULL, NULL), -EUCLEAN);
	t_assert(!strcmp(lab.why, want), "%s", lab.why);
	lab_settled();
	printf("ok: damage refused: %s\n", lab.why);
}

/* An edit's visitor may change any pointer, bad ones too. */
static int zero_odd(void *arg, struct fmt_bmap_slot *s)
{
	(void)arg;
	if (s->bad)
		return FMT_BMAP_ZERO;
	return !s->depth && s->lblk % 2 ? FMT_BMAP_ZERO : FMT_BMAP_KEEP;
}

static void test_edit(void)
{
	struct fmt_bmap_visit v = { .visit = zero_odd };
	uint64_t pblk[8], sind;

	lab_reset();
	lab_map_edges(pblk);
	sind = le32toh(lab_in.i_block[MFS_IND_BLOCK]);
	((uint32_t *)lab_disk[sind])[6] = htole32(999);
	fmt_block_set_csum(&lab_sb, MFS_CSUM_INDIRECT, LAB_INO, lab_disk[sind]);
	lab.changed = lab.root_changed = 0;
	t_ok(fmt_bmap_edit(&lab_bm, &v));
	lab_settled();
	t_eq(lab.root_changed, 1);       /* edges[1], logical block 11 */
	t_eq(lab.changed, 3);            /* the bad pointer's, edges[4]'s and [5]'s */
	for (int i = 0; i < 8; i++)
		t_eq(lab_find(edges[i]), edges[i] % 2 ? 0 : pblk[i]);
	t_eq(lab_find(18), 0);
	printf("ok: an edit's changes are resealed and recorded\n");
}

/* ---- miscfs-debug, with a hard time limit ------------------------------- */

static char dir[64], image[96], out[96], err[96];

static void child(char *const argv[])
{
	int o = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	int e = open(err, O_WRONLY | O_CREAT | O_TRUNC, 0600);

	if (o < 0 || e < 0 || dup2(o, 1) < 0 || dup2(e, 2) < 0)
		_exit(126);
	execv(argv[0], argv);
	_exit(127);
}

/* Run miscfs-debug IMAGE @cmd @arg; fail if it runs past LIMIT_S. */
static int run_debug(const char *cmd, const char *arg)
{
	char *argv[] = { getenv("DEBUGFS"), image, (char *)cmd, (char *)arg, NULL };
	struct timespec tick = { 0, 10 * 1000 * 1000 };
	uint64_t start = ut_now_ns();
	int status;
	pid_t pid = fork();

	t_assert(pid >= 0, "fork: %s", strerror(errno));
	if (pid == 0)
		child(argv);
	while (waitpid(pid, &status, WNOHANG) == 0) {
		if (ut_now_ns() - start > LIMIT_S * 1000000000ull) {
			kill(pid, SIGKILL);
			waitpid(pid, &status, 0);
			t_fail("miscfs-debug %s %s did not finish in %d s", cmd,
			       arg ? arg : "", LIMIT_S);
		}
		nanosleep(&tick, NULL);
	}
	t_assert(WIFEXITED(status), "miscfs-debug %s died of signal %d", cmd, WTERMSIG(status));
	printf("ok: miscfs-debug %s %s: exit %d in %.2f s\n", cmd, arg ? arg : "",
	       WEXITSTATUS(status), (ut_now_ns() - start) / 1e9);
	return WEXITSTATUS(status);
}

static void expect_file(const char *path, const char *text)
{
	static char buf[1 << 16];
	FILE *f = fopen(path, "r");
	size_t n;

	t_assert(f, "%s: %s", path, strerror(errno));
	n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = 0;
	fclose(f);
	t_assert(strstr(buf, text), "'%s' not in:\n%s", text, buf);
}

static void write_image(void)
{
	FILE *f;

	snprintf(dir, sizeof(dir), "%s/t_bmap.XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	t_assert(mkdtemp(dir), "mkdtemp: %s", strerror(errno));
	snprintf(image, sizeof(image), "%s/img", dir);
	snprintf(out, sizeof(out), "%s/out", dir);
	snprintf(err, sizeof(err), "%s/err", dir);
	f = fopen(image, "w");
	t_assert(f && fwrite(img, 1, bd->size, f) == bd->size && !fclose(f),
		 "writing %s", image);
}

static void test_tool(void)
{
	if (!getenv("DEBUGFS"))
		t_skip_case("DEBUGFS does not name miscfs-debug");
	write_image();
	t_eq(run_debug("verify", NULL), 1);
	expect_file(out, "problems: 4");
	expect_file(err, "inode 17: the block map meets more than the 2048 blocks");
	expect_file(err, "inode 12: i_size 9223372036854775808 is beyond the largest file");
	expect_file(err, "inode 13: i_size 9223372036854775808 is beyond the largest file");
	expect_file(err, bad_why);
	t_eq(run_debug("ls", "13"), 1);
	expect_file(err, "inode 13: i_size 9223372036854775808 is beyond the largest file");
	t_eq(run_debug("ls", "14"), 0);
	expect_file(out, "2 dir ..");
	t_eq(run_debug("ls", "17"), 1);
	expect_file(err, "inode 17: the block map meets more than the 2048 blocks");
	/* The fields are shown, and the impossible size is damage. */
	t_eq(run_debug("inode", "12"), 1);
	expect_file(out, "size: 9223372036854775808");
	expect_file(err, "inode 12: i_size 9223372036854775808 is beyond the largest file");
	unlink(image);
	unlink(out);
	unlink(err);
	rmdir(dir);
}

/* The library walks must not step through holes. */
static void test_library(void)
{
	t_watchdog(LIMIT_S, "a library walk did not finish in time");
	check_library();
	t_watchdog_off();
}

/* The crafted image both cases walk; it stays open until the exit. */
static void setup(void)
{
	struct fmt_mkfs_opts o = { .block_size = BS, .zeroed = true };

	mlog_set_level(MLOG_ERR);
	t_ok(bdev_mem_create(8u << 20, BS, &bd));
	t_ok(fmt_mkfs(bd, &o));
	img = bdev_mem_data(bd);
	sb = (struct mfs_super *)(img + MFS_SB_OFFSET);
	craft();
}

T_MAIN_SETUP(setup(),
	     T_CASE(test_library),
	     T_CASE(test_tool),
	     T_CASE(test_alloc),
	     T_CASE(test_free),
	     T_CASE(test_free_fails),
	     T_CASE(test_damage),
	     T_CASE(test_edit))
