/*
 * fuzz_bmap - the block-map walker (fmt_bmap_*) over any block map of a
 * tiny filesystem.  Whatever the pointers:
 *
 *   - a read walk ends after at most as many blocks as the filesystem
 *     has, reports only blocks inside the range it was asked for, in
 *     order, each where following the map by hand finds it, and says why
 *     when it refuses;
 *   - fmt_bmap_find finds every block the read walk reported where it
 *     reported it, and any block where the hand does when it finds a way;
 *   - fmt_bmap_free of the range ends, in one step and in steps cut short
 *     by a budget of credits as a truncation counts them; it puts every
 *     block it gets and locks one block at a time; and where the range's
 *     blocks are each met once and sound, both ways free the same blocks
 *     in the same order and leave the same map, with nothing mapped in
 *     the range.
 *
 * Indirect blocks are resealed and pointers mostly folded into the
 * filesystem, so the fuzzer reaches the deep levels.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fmt.h"

#define BS        1024u
#define NBLOCKS   16u
#define INO       12u
#define MARGIN    10             /* a step stops below it, as a truncation's */
/* A step gets at most 5 blocks for writing before it frees one (those a
 * range covers in part on each side, and the way down to the next
 * block): with these credits over the margin it frees one, clearing a
 * slot; there are fewer slots than steps allowed. */
#define ROOM      5
#define MAX_STEPS 5000

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
const char *__asan_default_options(void);

/* Each walk frees a page-aligned buffer, which ASan's quarantine (256 MiB
 * by default, counted in bytes asked for) keeps at several times its size:
 * a smaller one keeps the run near 130 MiB instead of 800. */
const char *__asan_default_options(void)
{
	return "quarantine_size_mb=32";
}

static struct mfs_super sb;
static uint8_t disk[NBLOCKS + 4][BS];   /* room for pointers just outside */
static uint8_t copy[2][NBLOCKS][BS];     /* what each way of freeing changes */

struct seen {
	uint64_t first, end, count, last;
	bool any;
	struct mfs_inode *in;
};

static void require(int ok)
{
	if (!ok)
		abort();
}

static int read_block(void *ctx, uint64_t blk, void *buf)
{
	(void)ctx;
	require(blk < NBLOCKS);        /* the walk checks a pointer before reading */
	memcpy(buf, disk[blk], BS);
	return 0;
}

static uint32_t slot(uint64_t blk, uint32_t i)
{
	return le32toh(((const uint32_t *)disk[blk])[i]);
}

/* Logical block @lblk followed by hand, level by level (0: a hole). */
static uint64_t by_hand(const struct mfs_inode *in, uint64_t lblk)
{
	uint32_t off[4];
	int depth = fmt_block_to_path(fmt_addr_per_block(BS), lblk, off);
	uint64_t blk = le32toh(in->i_block[off[0]]);

	for (int level = 1; level < depth && blk; level++)
		blk = blk < NBLOCKS ? slot(blk, off[level]) : 0;
	return blk;
}

/* Blocks of [@first, @end) that following the map by hand finds. */
static uint64_t mapped_by_hand(const struct mfs_inode *in, uint64_t first, uint64_t end)
{
	uint64_t n = 0;

	for (uint64_t lblk = first; lblk < end && lblk < fmt_max_file_blocks(BS); lblk++)
		n += by_hand(in, lblk) != 0;
	return n;
}

/* ---- a disk in memory behind the walker's callbacks ---------------------- */

struct mem {
	uint8_t (*blocks)[BS];
	int per_step;                /* credits a step starts with; 0: no limit */
	int credits;
	int held, locked;
	uint64_t freed, trail;       /* how many, and a hash of which in order */
};

static int mem_get(void *ctx, struct fmt_bmap_ind *ind, enum fmt_bmap_get how)
{
	struct mem *m = ctx;

	require(ind->blk && ind->blk < NBLOCKS);   /* checked before it is got */
	require(ind->depth >= 1 && ind->depth <= FMT_BMAP_LEVELS);
	ind->ptrs = (uint32_t *)m->blocks[ind->blk];
	if (how == FMT_BMAP_WRITE)
		m->credits--;
	else
		m->held++;
	return 0;
}

static void mem_put(void *ctx, struct fmt_bmap_ind *ind)
{
	struct mem *m = ctx;

	(void)ind;
	m->held--;
}

static void mem_lock(void *ctx, struct fmt_bmap_ind *ind)
{
	struct mem *m = ctx;

	(void)ind;
	require(!m->locked++);
}

static void mem_unlock(void *ctx, struct fmt_bmap_ind *ind)
{
	struct mem *m = ctx;

	(void)ind;
	require(m->locked-- == 1);
}

static int mem_free(void *ctx, uint64_t blk, int depth)
{
	struct mem *m = ctx;

	require(blk && blk < NBLOCKS && depth >= 0 && depth <= FMT_BMAP_LEVELS);
	m->credits--;
	m->freed++;
	m->trail = m->trail * 1000003u + (blk << 2 | (uint64_t)depth);
	return 0;
}

static bool mem_stop(void *ctx)
{
	struct mem *m = ctx;

	return m->per_step && m->credits < MARGIN;
}

static const struct fmt_bmap_ops mem_ops = {
	.get = mem_get, .put = mem_put, .lock = mem_lock, .unlock = mem_unlock,
	.free = mem_free, .stop = mem_stop,
};

static struct fmt_bmap mem_bmap(struct mfs_inode *in, struct mem *m)
{
	return (struct fmt_bmap){ .sb = &sb, .ino = INO, .in = in, .ops = &mem_ops,
				  .ctx = m };
}

/* ---- the checks ---------------------------------------------------------- */

static int on_data(void *arg, uint64_t lblk, uint64_t pblk)
{
	struct seen *s = arg;
	struct mem m = { .blocks = disk };
	struct fmt_bmap bm = mem_bmap(s->in, &m);
	uint64_t found;

	require(lblk >= s->first && lblk < s->end);
	require(!s->any || lblk > s->last);
	require(pblk && pblk < NBLOCKS);
	require(by_hand(s->in, lblk) == pblk);
	require(fmt_bmap_find(&bm, lblk, &found) == 0 && found == pblk && !m.held);
	s->any = true;
	s->last = lblk;
	s->count++;
	return 0;
}

/* fmt_bmap_find agrees with the hand wherever it finds a way. */
static void check_find(struct mfs_inode *in, uint64_t lblk)
{
	struct mem m = { .blocks = disk };
	struct fmt_bmap bm = mem_bmap(in, &m);
	uint64_t found;
	int err = fmt_bmap_find(&bm, lblk, &found);

	require(!m.held && !m.locked);
	if (lblk >= fmt_max_file_blocks(BS)) {
		require(err == -EFBIG);
		return;
	}
	require(err == 0 || err == -EUCLEAN);
	if (!err && !fmt_inode_is_fast_symlink(in))
		require(found == by_hand(in, lblk));
}

static int no_data(void *arg, uint64_t lblk, uint64_t pblk)
{
	(void)arg;
	(void)lblk;
	(void)pblk;
	abort();
}

/* Nothing is mapped in [@first, @end) of copy[0]. */
static int read_range(struct mfs_inode *in, uint64_t first, uint64_t end)
{
	struct mem m = { .blocks = copy[0] };
	struct fmt_bmap bm = mem_bmap(in, &m);

	return fmt_bmap_read(&bm, first, end, no_data, NULL, NULL);
}

struct once {
	uint8_t seen[NBLOCKS];
	bool twice;
};

static void note(struct once *o, uint64_t blk)
{
	if (blk >= NBLOCKS || o->seen[blk]++)
		o->twice = true;
}

static int once_data(void *arg, uint64_t lblk, uint64_t pblk)
{
	(void)lblk;
	note(arg, pblk);
	return 0;
}

static int once_indirect(void *arg, uint64_t blk, int depth)
{
	(void)depth;
	note(arg, blk);
	return 0;
}

/*
 * Whether a walk of [@first, @end) meets each block once, and no damage.
 * Where a block repeats, one may be another's ancestor: freeing under it
 * then changes what the walk is in, and where a step was cut short
 * changes what is left -- as on a damaged disk, whose frees the bitmaps
 * refuse.
 */
static bool met_once(const struct mfs_inode *in0, uint64_t first, uint64_t end)
{
	struct mfs_inode in = *in0;
	struct once o = { .twice = false };
	struct mem m = { .blocks = disk };
	struct fmt_bmap bm = mem_bmap(&in, &m);

	if (!fmt_inode_is_fast_symlink(&in))
		in.i_size = htole64(fmt_max_file_size(BS));     /* sizes are not freed */
	return !fmt_bmap_read(&bm, first, end, once_data, once_indirect, &o) && !o.twice;
}

/* Free [@first, @end) in as many steps as @m's credits make it take. */
static int free_range(struct mfs_inode *in, struct mem *m, uint64_t first, uint64_t end)
{
	struct fmt_bmap bm = mem_bmap(in, m);
	bool stopped = true;
	int err = 0, steps = 0;

	while (stopped && !err) {
		require(++steps <= MAX_STEPS);
		m->credits = m->per_step;
		err = fmt_bmap_free(&bm, first, end, &stopped);
		require(!m->held && !m->locked);
	}
	return err;
}

static void check_free(const struct mfs_inode *in0, uint64_t first, uint64_t end,
		       int per_step)
{
	struct mfs_inode in[2] = { *in0, *in0 };
	struct mem m[2] = { { .blocks = copy[0] }, { .blocks = copy[1], .per_step = per_step } };
	int err[2];

	for (int i = 0; i < 2; i++) {
		memcpy(copy[i], disk, sizeof(copy[i]));
		err[i] = free_range(&in[i], &m[i], first, end);
		require(err[i] == 0 || err[i] == -EUCLEAN);
	}
	if (!met_once(in0, first, end))
		return;
	require(!err[0] && !err[1]);
	require(m[0].freed == m[1].freed && m[0].trail == m[1].trail);
	require(!memcmp(&in[0], &in[1], sizeof(in[0])));
	require(!memcmp(copy[0], copy[1], sizeof(copy[0])));
	if (!fmt_inode_check_size(&sb, INO, &in[0], NULL, 0))
		require(read_range(&in[0], first, end) == 0);
}

/* Fold i_block into 0 .. NBLOCKS + 3 and keep i_size mostly possible, so
 * the walk does not end before it starts. */
static void fold(struct mfs_inode *in)
{
	in->i_size = htole64(le64toh(in->i_size) % (fmt_max_file_size(BS) + 2));
	for (int i = 0; i < MFS_N_BLOCKS; i++)
		in->i_block[i] = htole32(le32toh(in->i_block[i]) % (NBLOCKS + 4));
}

/*
 * The input is an inode, then triples (block, slot, pointer) that fill
 * the indirect blocks: three bytes set any slot of any block, where raw
 * blocks would take a kilobyte each.  An odd first byte folds the inode
 * and seals every block as an indirect block of the inode.
 */
static void setup(struct mfs_inode *in, const uint8_t *data, size_t size)
{
	uint32_t apb = fmt_addr_per_block(BS);

	memset(&sb, 0, sizeof(sb));
	sb.s_blocks_count = htole64(NBLOCKS);
	sb.s_csum_seed = htole64(0x5eed);
	memset(in, 0, sizeof(*in));
	in->i_mode = htole16(0100644);
	memcpy(in, data, size < sizeof(*in) ? size : sizeof(*in));
	memset(disk, 0, sizeof(disk));
	for (size_t i = sizeof(*in); i + 3 <= size; i += 3)
		((uint32_t *)disk[data[i] % NBLOCKS])[data[i + 1] % apb] =
			htole32(data[i + 2] % (NBLOCKS + 4));
	if (!size || !(data[0] & 1))
		return;
	fold(in);
	for (uint32_t b = 0; b < NBLOCKS; b++)
		fmt_block_set_csum(&sb, MFS_CSUM_INDIRECT, INO, disk[b]);
}

/*
 * An end of the range to walk, from a field the walk does not read: near
 * where a level of the map begins or ends, where off-by-one errors live,
 * or anywhere up to just past the largest file.
 */
static uint64_t endpoint(const uint8_t *b)
{
	uint64_t apb = fmt_addr_per_block(BS), max = fmt_max_file_blocks(BS);
	uint64_t level[] = { 0, MFS_NDIR_BLOCKS, MFS_NDIR_BLOCKS + apb,
			     MFS_NDIR_BLOCKS + apb + apb * apb, max };
	int64_t near = (int64_t)level[b[0] % 5] + (int8_t)b[1];

	if (b[0] & 0x80)
		return (b[2] | (uint64_t)b[3] << 8 | (uint64_t)b[4] << 16) % (max + 2);
	return near < 0 ? 0 : (uint64_t)near;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct mfs_inode in;
	struct seen s = { .in = &in };
	char why[256] = "";
	struct fmt_bmap_walk w = {
		.sb = &sb, .ino = INO, .in = &in, .read_block = read_block,
		.data = on_data, .ctx = &s, .why = why, .whylen = sizeof(why),
	};
	int err;

	setup(&in, data, size);
	s.first = endpoint((const uint8_t *)&in.i_atime);
	s.end = endpoint((const uint8_t *)&in.i_mtime);
	if (s.end < s.first)
		s.end = s.first;
	err = fmt_bmap_walk(&w, s.first, s.end);
	require(err == 0 || err == -EUCLEAN);
	require(err == 0 || why[0]);
	require(s.count <= NBLOCKS);
	if (fmt_inode_is_fast_symlink(&in))
		require(s.count == 0);     /* i_block holds the target's text */
	else if (!err && s.end - s.first <= 4 * BS)
		require(s.count == mapped_by_hand(&in, s.first, s.end));
	check_find(&in, s.first);
	check_find(&in, s.end);
	/* A field the walks do not read sets a step's credits. */
	check_free(&in, s.first, s.end, MARGIN + ROOM + ((const uint8_t *)&in.i_ctime)[0] % 32);
	return 0;
}
