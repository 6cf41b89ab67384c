/*
 * fuzz_bmap - fmt_bmap_walk() over any block map of a tiny filesystem.
 * Whatever the pointers, the walk ends after at most as many blocks as
 * the filesystem has, reports only blocks inside the range it was asked
 * for, in order, each where following the map by hand finds it, and says
 * why when it refuses.  Indirect blocks are resealed and pointers mostly
 * folded into the filesystem, so the fuzzer reaches the deep levels.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fmt.h"

#define BS      1024u
#define NBLOCKS 16u
#define INO     12u

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
const char *__asan_default_options(void);

/* Each walk frees a page-aligned buffer, which ASan's quarantine (256 MiB
 * by default, counted in bytes asked for) keeps at several times its size:
 * a smaller one keeps the run near 130 MiB instead of 800. */
const char *__asan_default_options(void)
{
	return "quarantine_size_mb=32";
}

static uint8_t disk[NBLOCKS + 4][BS];   /* room for pointers just outside */

struct seen {
	uint64_t first, end, count, last;
	bool any;
	const struct mfs_inode *in;
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

static int on_data(void *arg, uint64_t lblk, uint64_t pblk)
{
	struct seen *s = arg;

	require(lblk >= s->first && lblk < s->end);
	require(!s->any || lblk > s->last);
	require(pblk && pblk < NBLOCKS);
	require(by_hand(s->in, lblk) == pblk);
	s->any = true;
	s->last = lblk;
	s->count++;
	return 0;
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
static void setup(struct mfs_super *sb, struct mfs_inode *in, const uint8_t *data,
		  size_t size)
{
	uint32_t apb = fmt_addr_per_block(BS);

	memset(sb, 0, sizeof(*sb));
	sb->s_blocks_count = htole64(NBLOCKS);
	sb->s_csum_seed = htole64(0x5eed);
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
		fmt_block_set_csum(sb, MFS_CSUM_INDIRECT, INO, disk[b]);
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
	struct mfs_super sb;
	struct mfs_inode in;
	struct seen s = { .in = &in };
	char why[256] = "";
	struct fmt_bmap_walk w = {
		.sb = &sb, .ino = INO, .in = &in, .read_block = read_block,
		.data = on_data, .ctx = &s, .why = why, .whylen = sizeof(why),
	};
	int err;

	setup(&sb, &in, data, size);
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
	return 0;
}
