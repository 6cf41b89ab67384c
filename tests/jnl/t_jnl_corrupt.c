/*
 * t_jnl_corrupt - a flipped byte in a descriptor, data, revoke or commit
 * block of a transaction stops replay at that transaction, with a message
 * naming it; so does a commit block whose own seal or whose checksum over
 * the transaction's blocks is wrong.  A damaged journal superblock replays
 * nothing.
 */
#include <endian.h>
#include <inttypes.h>

#include "bdev_test.h"
#include "t_jnl.h"
#include "util.h"

#define BS      1024u
#define DEV     4096u
#define JSTART  2048u
#define JBLOCKS 1024u

/* Three committed transactions, left in the log (no checkpoint yet). */
static void build(struct tj *t, uint32_t tids[3])
{
	struct jnl_handle h;

	tj_setup(t, BS, DEV, JSTART, JBLOCKS, false);
	tj_open(t);
	t_ok(jnl_start(t->j, 4, &h));
	tj_write(t, &h, 10, 1);
	tj_write(t, &h, 11, 1);
	t_ok(jnl_stop(&h));
	t_ok(jnl_commit_wait(t->j, h.h_tid));
	tids[0] = h.h_tid;
	t_ok(jnl_start(t->j, 80, &h));                /* two descriptors */
	for (uint64_t b = 0; b < 70; b++)
		tj_write(t, &h, 100 + b, 2);
	t_ok(jnl_revoke(&h, 11));
	t_ok(jnl_stop(&h));
	t_ok(jnl_commit_wait(t->j, h.h_tid));
	tids[1] = h.h_tid;
	t_ok(jnl_start(t->j, 1, &h));
	tj_write(t, &h, 12, 3);
	t_ok(jnl_stop(&h));
	t_ok(jnl_commit_wait(t->j, h.h_tid));
	tids[2] = h.h_tid;
}

/* The first log block of transaction @tid with block type @type (0: a data
 * block, i.e. the one after the first descriptor). */
static uint32_t find_block(struct bdev *bd, const uint64_t *map, uint32_t tid,
			   uint32_t type)
{
	uint8_t *blk = bdev_alloc_buf(BS);
	uint32_t found = 0;

	for (uint32_t pos = 1; pos < JBLOCKS && !found; pos++) {
		const struct jnl_header *h = (const void *)blk;

		t_ok(bdev_read(bd, map[pos] * BS, blk, BS));
		if (le32toh(h->h_magic) != JNL_MAGIC || le32toh(h->h_sequence) != tid)
			continue;
		if (type == 0 && le32toh(h->h_blocktype) == JNL_BT_DESCRIPTOR)
			found = pos + 1;
		else if (le32toh(h->h_blocktype) == type)
			found = pos;
	}
	bdev_free_buf(blk);
	t_assert(found, "block type %u of transaction %u not found", type, tid);
	return found;
}

static void flip(struct bdev *bd, uint64_t blk, uint32_t off)
{
	uint8_t *b = bdev_mem_data(bd);

	b[blk * BS + off] ^= 0x20;
}

/* Seal a header block of transaction @tid again, as the writer would. */
static void reseal(struct bdev *bd, uint64_t blk, uint32_t tid)
{
	uint8_t *b = (uint8_t *)bdev_mem_data(bd) + blk * BS;
	uint32_t seal = htole32(jnl_csum(0xfeedbeefull + tid, b, BS - 4));

	memcpy(b + BS - 4, &seal, 4);
}

/*
 * Flip byte @off of the first block of @type in the middle transaction
 * (with @resealed, seal it again so that only what the byte means is
 * wrong), recover, and check that the log ended there, saying @text.
 */
static void check_damage_at(uint32_t type, uint32_t off, bool resealed,
			    const char *kind, const char *text)
{
	struct tj t;
	struct jnl_recovery info;
	struct bdev *img;
	uint32_t tids[3], pos;

	build(&t, tids);
	t_ok(bdev_mem_create(DEV * BS, BS, &img));      /* the device as it is */
	memcpy(bdev_mem_data(img), bdev_mem_data(t.bd), (size_t)DEV * BS);
	pos = find_block(img, t.map, tids[1], type);
	flip(img, t.map[pos], off);
	if (resealed)
		reseal(img, t.map[pos], tids[1]);
	t_ok(jnl_recover(img, t.map, t.nblocks, 0, &info));
	t_assert(info.transactions == 1, "%s: %u transactions accepted, the "
		 "damaged one ends the log after 1 (%s)", kind, info.transactions,
		 info.end);
	t_eq(info.last_tid, tids[0]);
	t_assert(strstr(info.end, text), "%s: '%s' lacks '%s'", kind, info.end, text);
	{
		char tid_text[32];

		snprintf(tid_text, sizeof(tid_text), "transaction %u", tids[1]);
		t_assert(strstr(info.end, tid_text), "%s: '%s' names transaction %u",
			 kind, info.end, tids[1]);
	}
	t_assert(tj_holds(img, BS, 10, 1) && tj_holds(img, BS, 11, 1), "first replayed");
	for (uint64_t b = 100; b < 170; b++)
		t_assert(tj_holds(img, BS, b, 0), "%s: block %" PRIu64 " of the damaged "
			 "transaction was written", kind, b);
	t_assert(tj_holds(img, BS, 12, 0), "%s: the transaction after it was written", kind);
	printf("ok: %s -> %s\n", kind, info.end);
	bdev_close(img);
	tj_teardown(&t);
}

static void check_damage(uint32_t type, const char *kind, const char *text)
{
	check_damage_at(type, type == JNL_BT_COMMIT ? 26 : 600, false, kind, text);
}

/* A damaged journal superblock: nothing replayed, and said so. */
static void test_superblock(void)
{
	struct tj t;
	struct jnl_recovery info;
	uint32_t tids[3];

	build(&t, tids);
	flip(t.bd, t.map[0], 30);
	t_eq(jnl_recover(t.bd, t.map, t.nblocks, 0, &info), -EUCLEAN);
	t_assert(tj_holds(t.bd, BS, 10, 0), "nothing replayed");
	/* The running journal still works from its own copy, and rewrites it. */
	tj_close(&t);
	tj_teardown(&t);
	printf("ok: damaged journal superblock refused\n");
}

static void test_descriptor(void)
{
	check_damage(JNL_BT_DESCRIPTOR, "descriptor", "descriptor block at log block");
}

static void test_data_block(void)
{
	check_damage(0, "data block", "data block at log block");
}

static void test_revoke_block(void)
{
	check_damage(JNL_BT_REVOKE, "revoke block", "revoke block at log block");
}

static void test_commit_block(void)
{
	check_damage(JNL_BT_COMMIT, "commit block", "commit block at log block");
}

/* The commit time is covered by the commit block's own seal only. */
static void test_commit_seal(void)
{
	check_damage_at(JNL_BT_COMMIT, 13, false, "commit block's seal",
			"commit block at log block");
}

/* A well-sealed commit block whose checksum over the transaction's
 * blocks is wrong: what an async commit's torn batch would leave. */
static void test_transaction_checksum(void)
{
	check_damage_at(JNL_BT_COMMIT, 28, true, "transaction checksum",
			"data checksum mismatch");
}

T_MAIN_SETUP(mlog_set_level(MLOG_ERR), T_CASE(test_descriptor), T_CASE(test_data_block),
	     T_CASE(test_revoke_block), T_CASE(test_commit_block), T_CASE(test_commit_seal),
	     T_CASE(test_transaction_checksum), T_CASE(test_superblock))
