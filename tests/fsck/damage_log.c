/*
 * damage_log.c - damage to the journal: its superblock, and logs written
 * here block by block in the journal's own format (docs/FORMAT.md, "The
 * journal"): a committed transaction followed by a torn one, or a
 * committed one whose tag sends a block outside the groups.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "jnl.h"
#include "mkdamage.h"

struct jlog {
	struct mfs_inode jin;        /* inode 8 */
	struct jnl_superblock sb;
	uint64_t seed;               /* s_csum_seed */
	uint32_t pos;                /* next log block */
	uint32_t tid;
	uint32_t sums[8];            /* the transaction's block checksums */
	unsigned int nsums;
};

static int jblock(struct md_img *d, struct jlog *j, uint32_t pos, uint64_t *pblk)
{
	int err = fmt_raw_bmap(&d->raw, MFS_JOURNAL_INO, &j->jin, pos, pblk);

	return !err && !*pblk ? -EUCLEAN : err;
}

static int jwrite(struct md_img *d, struct jlog *j, const void *buf)
{
	uint64_t pblk;
	int err = jblock(d, j, j->pos, &pblk);

	if (!err)
		err = md_write_block(d, pblk, buf);
	j->pos++;
	return err;
}

static int jopen(struct md_img *d, struct jlog *j)
{
	uint64_t pblk;
	int err = md_get_inode(d, MFS_JOURNAL_INO, &j->jin);

	if (!err)
		err = jblock(d, j, 0, &pblk);
	if (!err)
		err = md_read_block(d, pblk, d->blk);
	if (err)
		return err;
	memcpy(&j->sb, d->blk, sizeof(j->sb));
	j->seed = le64toh(j->sb.s_csum_seed);
	j->pos = le32toh(j->sb.s_first);
	j->tid = le32toh(j->sb.s_sequence);
	return 0;
}

static int jput_sb(struct md_img *d, struct jlog *j, bool csum)
{
	uint64_t pblk;
	int err = jblock(d, j, 0, &pblk);

	if (csum)
		j->sb.s_checksum = htole32(fmt_csum(0, 0, &j->sb,
						    offsetof(struct jnl_superblock, s_checksum)));
	if (!err)
		err = md_write_at(d, pblk * d->bs, &j->sb, sizeof(j->sb));
	return err;
}

static void jheader(struct jlog *j, void *blk, uint32_t type, uint32_t bs)
{
	struct jnl_header *h = blk;

	memset(blk, 0, bs);
	h->h_magic = htole32(JNL_MAGIC);
	h->h_blocktype = htole32(type);
	h->h_sequence = htole32(j->tid);
}

static uint32_t jseal(struct md_img *d, struct jlog *j, void *blk)
{
	uint32_t s = fmt_csum(j->seed, j->tid, blk, d->bs - 4);

	*(uint32_t *)((char *)blk + d->bs - 4) = htole32(s);
	return s;
}

/* A descriptor with one tag sending @data home to @home, then @data. */
static int jtx_block(struct md_img *d, struct jlog *j, uint64_t home,
		     const uint8_t *data)
{
	uint8_t desc[4096];
	uint32_t tag[4];
	uint32_t dsum = fmt_csum(j->seed, j->tid, data, d->bs);
	int err;

	jheader(j, desc, JNL_BT_DESCRIPTOR, d->bs);
	tag[0] = htole32((uint32_t)home);
	tag[1] = htole32((uint32_t)(home >> 32));
	tag[2] = htole32(2);                     /* last tag; not escaped */
	tag[3] = htole32(dsum);
	memcpy(desc + sizeof(struct jnl_header), tag, sizeof(tag));
	j->nsums = 0;
	j->sums[j->nsums++] = htole32(jseal(d, j, desc));
	j->sums[j->nsums++] = htole32(dsum);
	md_say("journal: transaction %" PRIu32 ": descriptor at log block %" PRIu32
	       ", block %" PRIu64 " logged at %" PRIu32, j->tid, j->pos, home, j->pos + 1);
	err = jwrite(d, j, desc);
	return err ? err : jwrite(d, j, data);
}

static int jtx_commit(struct md_img *d, struct jlog *j, bool good)
{
	uint8_t c[4096];
	uint32_t v, seal;

	jheader(j, c, JNL_BT_COMMIT, d->bs);
	v = htole32(1700000000u);
	memcpy(c + 12, &v, 4);
	v = htole32(j->nsums);
	memcpy(c + 24, &v, 4);
	v = htole32(fmt_csum(j->seed, j->tid, j->sums, j->nsums * 4));
	memcpy(c + 28, &v, 4);
	seal = jseal(d, j, c);
	if (!good)
		*(uint32_t *)(c + d->bs - 4) = htole32(seal ^ 0x8000);
	md_say("journal: transaction %" PRIu32 ": commit block at log block %" PRIu32
	       "%s", j->tid, j->pos, good ? "" : ", its checksum wrong (torn)");
	j->tid++;
	return jwrite(d, j, c);
}

/* The superblock says the journal needs a replay, the journal says from
 * where. */
static int jmark(struct md_img *d, struct jlog *j, uint32_t first_tid)
{
	struct mfs_super *sb = &d->raw.sb;
	int err;

	j->sb.s_start = j->sb.s_first;
	j->sb.s_sequence = htole32(first_tid);
	md_say("journal superblock: s_start 0 -> %" PRIu32 ", s_sequence %" PRIu32,
	       le32toh(j->sb.s_start), first_tid);
	err = jput_sb(d, j, true);
	sb->s_feature_incompat |= htole32(MFS_FEATURE_INCOMPAT_RECOVER);
	md_say("superblock: RECOVER set");
	return err ? err : md_put_sb(d, sb, true);
}

/* Block 0 of @path, and its device block. */
static int file_block0(struct md_img *d, const char *path, uint64_t *pblk)
{
	uint32_t ino = strcmp(path, "/") ? md_ino(d, path) : MFS_ROOT_INO;
	struct mfs_inode in;
	int err = ino ? md_get_inode(d, ino, &in) : -ENOENT;

	if (!err)
		err = fmt_raw_bmap(&d->raw, ino, &in, 0, pblk);
	return err;
}

/*
 * Transaction 1 logs the root directory's first block as it is, and
 * commits; transaction 2 logs new bytes for deep.txt's block and its
 * commit block is torn: a replay must take 1 and drop 2.
 */
static int journal_torn(struct md_img *d)
{
	struct jlog j;
	uint8_t data[4096];
	uint64_t root, deep;
	uint32_t tid;
	int err = jopen(d, &j);

	if (!err) err = file_block0(d, "/", &root);
	if (!err) err = file_block0(d, "/a/b/c/d/deep.txt", &deep);
	if (!err) err = md_read_block(d, root, d->blk);
	if (err)
		return err;
	memcpy(data, d->blk, d->bs);
	tid = j.tid;
	err = jtx_block(d, &j, root, data);
	if (!err) err = jtx_commit(d, &j, true);
	for (uint32_t i = 0; i < d->bs; i++)
		data[i] = (uint8_t)(i * 7 + 1 + md_pick(d, 100));
	if (!err) err = jtx_block(d, &j, deep, data);
	if (!err) err = jtx_commit(d, &j, false);
	return err ? err : jmark(d, &j, tid);
}

/* One committed transaction whose only tag sends a block to the first
 * block of a reserved region, which no journal may cover. */
static int journal_tag_outside(struct md_img *d)
{
	struct mfs_region_entry *e = (void *)((char *)d->blk + MFS_REGION_HDR_SIZE);
	struct jlog j;
	uint8_t data[4096];
	uint64_t home;
	uint32_t tid;
	int err = md_read_block(d, le64toh(d->raw.sb.s_region_table), d->blk);

	if (err)
		return err;
	home = le64toh(e[md_pick(d, 2)].re_start);
	err = jopen(d, &j);
	if (err)
		return err;
	tid = j.tid;
	memset(data, 0xA5, sizeof(data));
	md_say("# journal: block %" PRIu64 " lies in a reserved region, beyond "
	       "s_blocks_count %" PRIu64, home, le64toh(d->raw.sb.s_blocks_count));
	err = jtx_block(d, &j, home, data);
	if (!err) err = jtx_commit(d, &j, true);
	return err ? err : jmark(d, &j, tid);
}

static int journal_sb_csum(struct md_img *d)
{
	struct jlog j;
	int err = jopen(d, &j);
	uint32_t old;

	if (err)
		return err;
	old = le32toh(j.sb.s_checksum);
	j.sb.s_checksum = htole32(old ^ 0x40);
	md_say("journal superblock: s_checksum 0x%08" PRIx32 " -> 0x%08" PRIx32,
	       old, old ^ 0x40);
	return jput_sb(d, &j, false);
}

const struct md_kind md_kinds_log[] = {
	{ "journal-torn", "a committed transaction, then one whose commit block is "
	  "torn (superblock says RECOVER)", journal_torn },
	{ "journal-tag-outside", "a committed transaction logging a block of a "
	  "reserved region, outside the groups", journal_tag_outside },
	{ "journal-sb-csum", "journal superblock checksum wrong", journal_sb_csum },
	{ NULL, NULL, NULL },
};
