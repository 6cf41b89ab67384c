/*
 * t_jnl_replay - recovery against blocks left in the log by earlier
 * passes over it: a journalled data block that looks like a journal block
 * is escaped, so it cannot pass for the next transaction once the log has
 * wrapped past it; and after a replay the next transaction ID is moved
 * past every ID still in the log, so a stale transaction cannot pass for
 * the next one.  A journal that covers only part of the device replays
 * nothing into the rest.
 */
#include <endian.h>

#include "bdev_test.h"
#include "jnl_disk.h"
#include "t_jnl.h"
#include "util.h"

#define BS      1024u
#define DEV     4096u
#define JSTART  2048u
#define JBLOCKS 1024u
#define SEED    0xfeedbeefull     /* tj_setup's */
#define Z       350u              /* the block the forged revoke names */

static uint8_t *log_block(struct tj *t, uint32_t pos)
{
	return (uint8_t *)bdev_mem_data(t->bd) + t->map[pos] * BS;
}

/* A copy of @t's device as a power cut right now would leave it (every
 * write of the journal is flushed), recovered. */
static struct bdev *crash_copy(struct tj *t, struct jnl_recovery *info)
{
	struct bdev *img;

	t_ok(bdev_mem_create((uint64_t)DEV * BS, BS, &img));
	memcpy(bdev_mem_data(img), bdev_mem_data(t->bd), (size_t)DEV * BS);
	t_ok(jnl_recover(img, t->map, t->nblocks, 0, info));
	return img;
}

static void seal(uint8_t *blk, uint32_t tid)
{
	uint32_t le = htole32(jnl_csum(SEED + tid, blk, BS - 4));

	memcpy(blk + BS - 4, &le, 4);
}

static uint32_t seal_of(const uint8_t *blk)
{
	uint32_t le;

	memcpy(&le, blk + BS - 4, 4);
	return le32toh(le);
}

static void header(uint8_t *blk, uint32_t type, uint32_t tid)
{
	struct jnl_header h = { htole32(JNL_MAGIC), htole32(type), htole32(tid) };

	memset(blk, 0, BS);
	memcpy(blk, &h, sizeof(h));
}

/* A revoke block and a commit block of transaction @tid that revoke Z:
 * a well-formed transaction, as file data. */
static void forge(uint8_t *rev, uint8_t *commit, uint32_t tid)
{
	struct jnl_commit_block c;
	uint64_t blk = htole64(Z);
	uint32_t count = htole32(JNL_REVOKE_FIRST + 8), sum;

	header(rev, JNL_BT_REVOKE, tid);
	memcpy(rev + 12, &count, 4);
	memcpy(rev + JNL_REVOKE_FIRST, &blk, 8);
	seal(rev, tid);
	sum = htole32(seal_of(rev));
	header(commit, JNL_BT_COMMIT, tid);
	memcpy(&c, commit, sizeof(c));
	c.c_blocks = htole32(1);
	c.c_data_checksum = htole32(jnl_csum(SEED + tid, &sum, 4));
	memcpy(commit, &c, sizeof(c));
	seal(commit, tid);
}

/* Journal block @blk with the bytes @data in handle @h. */
static void write_raw(struct tj *t, struct jnl_handle *h, uint64_t blk,
		      const void *data)
{
	struct pc_page *pg;

	t_ok(pc_read_cache_page(t->meta, blk, &pg));
	t_ok(jnl_get_write_access(h, pg, blk));
	pc_lock_page(pg);
	memcpy(pg->data, data, BS);
	pc_unlock_page(pg);
	t_ok(jnl_dirty(h, blk));
	pc_put_page(pg);
}

static uint32_t commit_fill(struct tj *t, uint64_t first, uint32_t n, uint64_t stamp)
{
	struct jnl_handle h;

	t_ok(jnl_start(t->j, n, &h));
	for (uint32_t i = 0; i < n; i++)
		tj_write(t, &h, first + i, stamp);
	t_ok(jnl_stop(&h));
	t_ok(jnl_commit_wait(t->j, h.h_tid));
	return h.h_tid;
}

/* The log copy of the forged revoke block: escaped in its tag, and its
 * first bytes (the magic) stored as zeros. */
static void check_escaped(struct tj *t, const uint8_t *rev)
{
	const uint8_t *desc = log_block(t, 1), *copy = log_block(t, 4);
	struct jnl_tag tag;

	memcpy(&tag, desc + sizeof(struct jnl_header) + 2 * sizeof(tag), sizeof(tag));
	t_eq(le64toh(tag.t_blocknr), 300);
	t_assert(le32toh(tag.t_flags) & JNL_TAG_ESCAPED, "the tag of a data block "
		 "that begins with the journal magic is not marked escaped");
	t_assert(!memcmp(copy, "\0\0\0\0", 4) && !memcmp(copy + 4, rev + 4, BS - 4),
		 "the log copy of a data block that begins with the journal magic "
		 "does not have the magic zeroed");
}

/*
 * T1 logs, as file data, a revoke block and a commit block forged for a
 * future transaction F, at log positions 4 and 5.  Fillers take the log
 * round to position 1, where T(F-1) logs Z in three blocks (1-3); the
 * scan after it reads position 4.  Unescaped, the forged pair would pass
 * for transaction F and hide the committed copy of Z.
 */
static void test_escape_after_wrap(void)
{
	struct tj t;
	struct jnl_handle h;
	struct jnl_recovery info;
	struct bdev *img;
	uint8_t *rev = bdev_alloc_buf(BS), *commit = bdev_alloc_buf(BS);
	const uint32_t fill_tx = 17, forged_tid = 1 + fill_tx + 2;
	uint32_t tid;

	tj_setup(&t, BS, DEV, JSTART, JBLOCKS, false);
	tj_open(&t);
	forge(rev, commit, forged_tid);
	t_ok(jnl_start(t.j, 4, &h));
	tj_write(&t, &h, 200, 1);
	tj_write(&t, &h, 201, 1);
	write_raw(&t, &h, 300, rev);
	write_raw(&t, &h, 301, commit);
	t_ok(jnl_stop(&h));
	t_ok(jnl_commit_wait(t.j, h.h_tid));
	t_eq(h.h_tid, 1);
	check_escaped(&t, rev);
	/* Positions 7 .. JBLOCKS - 1: sixteen transactions of 63 log blocks
	 * and one of 9. */
	for (uint32_t i = 0; i < fill_tx; i++)
		commit_fill(&t, 400, i < 16 ? 61 : 7, 10 + i);
	tid = commit_fill(&t, Z, 1, 99);
	t_eq(tid, forged_tid - 1);
	t_eq(le32toh(((struct jnl_header *)log_block(&t, 1))->h_sequence), tid);
	img = crash_copy(&t, &info);
	t_assert(tj_holds(img, BS, Z, 99), "block %u, committed by transaction %u, "
		 "holds %lu after recovery: a data block forged transaction %u "
		 "(%u transactions up to %u; %s)", Z, tid,
		 (unsigned long)tj_stamp_of(img, BS, Z), forged_tid, info.transactions,
		 info.last_tid, info.end);
	t_eq(info.last_tid, tid);
	bdev_close(img);
	bdev_free_buf(rev);
	bdev_free_buf(commit);
	tj_teardown(&t);
	printf("ok: a data block shaped like a transaction is escaped in the log\n");
}

/*
 * A log whose scan ends early (here a damaged data block in its first
 * transaction) leaves complete transactions behind its end.  After that
 * replay, the next session starts at the log's first block again; its
 * IDs must not meet the stale ones, or the stale transaction after its
 * first commit would pass for its second.
 */
static void test_ids_after_replay(void)
{
	struct tj t, t2;
	struct jnl_recovery info;
	struct bdev *img;
	uint32_t tid;

	tj_setup(&t, BS, DEV, JSTART, JBLOCKS, false);
	tj_open(&t);
	commit_fill(&t, 10, 1, 1);                  /* log blocks 1-3 */
	commit_fill(&t, 11, 1, 2);                  /* log blocks 4-6 */
	commit_fill(&t, 12, 1, 3);                  /* log blocks 7-9 */
	tj_setup(&t2, BS, DEV, JSTART, JBLOCKS, false);
	memcpy(bdev_mem_data(t2.bd), bdev_mem_data(t.bd), (size_t)DEV * BS);
	tj_teardown(&t);
	log_block(&t2, 2)[600] ^= 0x20;             /* the first data block */
	t_ok(jnl_recover(t2.bd, t2.map, t2.nblocks, 0, &info));
	t_eq(info.transactions, 0);
	tj_open(&t2);
	tid = commit_fill(&t2, 10, 1, 5);            /* log blocks 1-3 again */
	img = crash_copy(&t2, &info);
	t_assert(info.transactions == 1 && tj_holds(img, BS, 11, 0),
		 "after the first commit of transaction %u a stale transaction "
		 "was replayed (%u transactions up to %u; block 11 holds %lu)",
		 tid, info.transactions, info.last_tid,
		 (unsigned long)tj_stamp_of(img, BS, 11));
	t_assert(tj_holds(img, BS, 10, 5), "the new transaction replayed");
	bdev_close(img);
	tj_teardown(&t2);
	printf("ok: after a replay, new transaction IDs pass the stale ones\n");
}

/*
 * A journal covering only the blocks below 1000 (a filesystem's groups,
 * its reserved regions above them): the transaction that logs block 1500
 * ends the log, as a torn one does; the one before it is replayed, and
 * neither it nor a later one reaches block 1500 or anything past it.
 */
static void test_home_end(void)
{
	struct tj t, t2;
	struct jnl_recovery info;

	tj_setup(&t, BS, DEV, JSTART, JBLOCKS, false);
	tj_open(&t);
	commit_fill(&t, 10, 1, 1);
	commit_fill(&t, 1500, 1, 2);
	commit_fill(&t, 20, 1, 3);
	tj_setup(&t2, BS, DEV, JSTART, JBLOCKS, false);
	memcpy(bdev_mem_data(t2.bd), bdev_mem_data(t.bd), (size_t)DEV * BS);
	tj_teardown(&t);
	t_ok(jnl_recover_within(t2.bd, t2.map, t2.nblocks, 1000,
				JNL_RECOVER_CHECK_ONLY, &info));
	t_eq(info.transactions, 1);
	t_assert(strstr(info.end, "names block 1500"), "log ended: %s", info.end);
	t_ok(jnl_recover_within(t2.bd, t2.map, t2.nblocks, 1000, 0, &info));
	t_assert(tj_holds(t2.bd, BS, 10, 1), "the first transaction replayed");
	t_assert(!tj_holds(t2.bd, BS, 1500, 2), "block 1500 written by a replay");
	t_assert(!tj_holds(t2.bd, BS, 20, 3), "a transaction after the bad one replayed");
	tj_teardown(&t2);
	printf("ok: recovery writes nothing past the blocks the journal covers\n");
}

T_MAIN_SETUP(mlog_set_level(MLOG_ERR), T_CASE(test_escape_after_wrap),
	     T_CASE(test_ids_after_replay), T_CASE(test_home_end))
