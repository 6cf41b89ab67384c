/*
 * dxindex.c - the blocks of a directory's hashed index (FORMAT.md,
 * "Directory index"): their layout, the check of a block as read, and the
 * operations on a block's sorted records that the mount and fsck share.
 * Nothing here reads or writes a device.
 */
#include "fmt.h"

#include <errno.h>
#include <inttypes.h>
#include <string.h>

#include <xxhash.h>

#include "util.h"

uint64_t fmt_dx_hash(const struct mfs_super *sb, const char *name, size_t len)
{
	return XXH3_64bits_withSeed(name, len, le64toh(sb->s_csum_seed) +
				    MFS_SALT(MFS_HASH_DIR, 0));
}

/* Bytes between the head and the checksum tail. */
static uint32_t body_bytes(const struct mfs_super *sb)
{
	return fmt_block_size(sb) - MFS_DX_HEAD_OFF - sizeof(struct mfs_dx_head) -
	       MFS_DIR_TAIL_SIZE;
}

uint32_t fmt_dx_limit(const struct mfs_super *sb, unsigned kind)
{
	uint32_t body = body_bytes(sb);

	if (kind == MFS_DX_FMAP)
		return body;
	if (kind == MFS_DX_ROOT)
		body -= sizeof(struct mfs_dx_root_info);
	return body / sizeof(struct mfs_dx_rec);
}

struct mfs_dx_head *fmt_dx_head(void *blk)
{
	return (struct mfs_dx_head *)((char *)blk + MFS_DX_HEAD_OFF);
}

struct mfs_dx_root_info *fmt_dx_root(void *blk)
{
	return (struct mfs_dx_root_info *)(fmt_dx_head(blk) + 1);
}

struct mfs_dx_rec *fmt_dx_recs(void *blk)
{
	struct mfs_dx_head *h = fmt_dx_head(blk);

	if (h->dx_kind == MFS_DX_ROOT)
		return (struct mfs_dx_rec *)(fmt_dx_root(blk) + 1);
	return (struct mfs_dx_rec *)(h + 1);
}

uint8_t *fmt_dx_fmap(void *blk)
{
	return (uint8_t *)(fmt_dx_head(blk) + 1);
}

void fmt_dx_init(const struct mfs_super *sb, void *blk, unsigned kind,
		 unsigned level, uint32_t lblk)
{
	uint32_t bs = fmt_block_size(sb), end = bs - MFS_DIR_TAIL_SIZE;
	struct mfs_dirent *de = blk;
	struct mfs_dir_tail *t = (void *)((char *)blk + end);
	struct mfs_dx_head *h = fmt_dx_head(blk);

	memset(blk, 0, bs);
	de->rec_len = htole16((uint16_t)end);
	t->det_rec_len = htole16(MFS_DIR_TAIL_SIZE);
	t->det_type = MFS_FT_DIR_TAIL;
	h->dx_magic = htole32(MFS_DX_MAGIC);
	h->dx_kind = (uint8_t)kind;
	h->dx_level = (uint8_t)level;
	h->dx_lblk = htole32(lblk);
	if (kind == MFS_DX_FMAP)
		h->dx_count = htole16((uint16_t)fmt_dx_limit(sb, kind));
}

static const char *kind_name(unsigned kind)
{
	return kind == MFS_DX_ROOT ? "root" : kind == MFS_DX_NODE ? "node" :
	       kind == MFS_DX_FMAP ? "room map" : "unknown";
}

/* The unused record that hides the index from a linear walk. */
static bool hidden(const struct mfs_super *sb, const void *blk)
{
	const struct mfs_dirent *de = blk;

	return !de->inode && !de->name_len && !de->file_type &&
	       le16toh(de->rec_len) == fmt_block_size(sb) - MFS_DIR_TAIL_SIZE;
}

int fmt_dx_check(const struct mfs_super *sb, uint32_t ino, const void *blk,
		 uint32_t lblk, unsigned kind, char *why, size_t len)
{
	const struct mfs_dx_head *h = fmt_dx_head((void *)blk);
	uint32_t limit = fmt_dx_limit(sb, kind), count = le16toh(h->dx_count);

	if (!hidden(sb, blk) || le32toh(h->dx_magic) != MFS_DX_MAGIC)
		return ut_corrupt(why, len, "directory %" PRIu32 ": block %" PRIu32
				  " is not an index block", ino, lblk);
	if (h->dx_kind != kind || le32toh(h->dx_lblk) != lblk || h->dx_zero)
		return ut_corrupt(why, len, "directory %" PRIu32 ": index block %" PRIu32
				  " is a %s of block %" PRIu32 ", not a %s", ino, lblk,
				  kind_name(h->dx_kind), le32toh(h->dx_lblk), kind_name(kind));
	if (kind == MFS_DX_FMAP ? count != limit || h->dx_level :
	    count > limit || h->dx_level > MFS_DX_MAX_LEVEL)
		return ut_corrupt(why, len, "directory %" PRIu32 ": index %s %" PRIu32
				  " has level %u and %" PRIu32 " records (at most %u and %"
				  PRIu32 ")", ino, kind_name(kind), lblk, h->dx_level,
				  count, MFS_DX_MAX_LEVEL, limit);
	if (kind == MFS_DX_ROOT &&
	    le32toh(fmt_dx_root((void *)blk)->dr_fmap_count) > MFS_DX_FMAP_MAX)
		return ut_corrupt(why, len, "directory %" PRIu32 ": index root lists %"
				  PRIu32 " room map blocks (at most %u)", ino,
				  le32toh(fmt_dx_root((void *)blk)->dr_fmap_count),
				  MFS_DX_FMAP_MAX);
	return 0;
}

/* ---- records ------------------------------------------------------------- */

uint64_t fmt_dx_rec_hash(const struct mfs_dx_rec *r)
{
	return (uint64_t)le32toh(r->dr_hash_hi) << 32 | le32toh(r->dr_hash_lo);
}

void fmt_dx_rec_set(struct mfs_dx_rec *r, uint64_t hash, uint32_t lblk)
{
	r->dr_hash_lo = htole32((uint32_t)hash);
	r->dr_hash_hi = htole32((uint32_t)(hash >> 32));
	r->dr_lblk = htole32(lblk);
}

static int rec_cmp(const struct mfs_dx_rec *r, uint64_t hash, uint32_t lblk)
{
	uint64_t rh = fmt_dx_rec_hash(r);

	if (rh != hash)
		return rh < hash ? -1 : 1;
	if (le32toh(r->dr_lblk) != lblk)
		return le32toh(r->dr_lblk) < lblk ? -1 : 1;
	return 0;
}

uint32_t fmt_dx_lower(const struct mfs_dx_rec *r, uint32_t n, uint64_t hash,
		      uint32_t lblk)
{
	uint32_t lo = 0, hi = n;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (rec_cmp(&r[mid], hash, lblk) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

uint32_t fmt_dx_child(const struct mfs_dx_rec *r, uint32_t n, uint64_t hash)
{
	uint32_t lo = 1, hi = n;

	/* The first record's hash bounds nothing: it takes all below the
	 * second's. */
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (fmt_dx_rec_hash(&r[mid]) <= hash)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo - 1;
}

void fmt_dx_insert(struct mfs_dx_rec *r, uint32_t n, uint32_t at, uint64_t hash,
		   uint32_t lblk)
{
	memmove(&r[at + 1], &r[at], (n - at) * sizeof(*r));
	fmt_dx_rec_set(&r[at], hash, lblk);
}

void fmt_dx_delete(struct mfs_dx_rec *r, uint32_t n, uint32_t at)
{
	memmove(&r[at], &r[at + 1], (n - at - 1) * sizeof(*r));
}

uint32_t fmt_dx_split_at(const struct mfs_dx_rec *r, uint32_t n)
{
	/* Outward from the middle, the first place between two hashes. */
	for (uint32_t d = 0; d <= n / 2; d++) {
		uint32_t up = n / 2 + d, down = n / 2 - d;

		if (up < n && up > 0 && fmt_dx_rec_hash(&r[up - 1]) != fmt_dx_rec_hash(&r[up]))
			return up;
		if (down > 0 && fmt_dx_rec_hash(&r[down - 1]) != fmt_dx_rec_hash(&r[down]))
			return down;
	}
	return 0;
}

int fmt_dx_sorted(const struct mfs_dx_rec *r, uint32_t n, bool leaf)
{
	for (uint32_t i = 1; i < n; i++) {
		uint64_t a = fmt_dx_rec_hash(&r[i - 1]), b = fmt_dx_rec_hash(&r[i]);

		if (leaf ? rec_cmp(&r[i - 1], b, le32toh(r[i].dr_lblk)) > 0 : a >= b)
			return (int)i;
	}
	return 0;
}

/* ---- the room map -------------------------------------------------------- */

/* A byte of the room map says room >> shift, so that 255 is a whole
 * block's room. */
static unsigned room_shift(const struct mfs_super *sb)
{
	return 10 + le32toh(sb->s_log_block_size) - 8;
}

uint8_t fmt_dx_room_code(const struct mfs_super *sb, uint32_t room)
{
	return (uint8_t)UT_MIN(room >> room_shift(sb), 255u);
}

bool fmt_dx_room_fits(const struct mfs_super *sb, uint8_t code, uint32_t need)
{
	return ((uint32_t)code << room_shift(sb)) >= need;
}
