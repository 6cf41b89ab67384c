/*
 * t_errors - what the superblock on the disk says about errors and the
 * journal.  Damage found while mounted marks it at once, before any
 * unmount; an aborted journal (a failed write to its log) marks it
 * directly and leaves its errno in the journal's superblock; an image so
 * marked is refused unless forced, in one line naming the problem.
 * INCOMPAT_RECOVER is on the disk whenever the log holds a transaction:
 * set at the first commit, kept when a checkpoint writes an older copy of
 * the superblock home, cleared by the replay and by a clean unmount.
 * Unknown incompat bits refuse the mount; unknown ro_compat bits mount it
 * read-only, writing nothing.
 */
#include <fcntl.h>
#include <inttypes.h>

#include "bdev_test.h"
#include "jnl.h"
#include "t_dev.h"
#include "t_fs.h"
#include "util.h"

#define DEV_BYTES (8u << 20)

/* The primary superblock as the device holds it now. */
static struct mfs_super *disk_sb(struct bdev *bd)
{
	return (void *)((char *)bdev_mem_data(bd) + MFS_SB_OFFSET);
}

static bool disk_errors(struct bdev *bd)
{
	return le16toh(disk_sb(bd)->s_state) & MFS_STATE_ERRORS;
}

static bool disk_recover(struct bdev *bd)
{
	return le32toh(disk_sb(bd)->s_feature_incompat) & MFS_FEATURE_INCOMPAT_RECOVER;
}

static void set_sb(struct bdev *bd, void (*fn)(struct mfs_super *))
{
	fn(disk_sb(bd));
	fmt_sb_set_csum(disk_sb(bd));
}

static void incompat(struct mfs_super *sb) { sb->s_feature_incompat |= htole32(0x80); }
static void rocompat(struct mfs_super *sb) { sb->s_feature_ro_compat |= htole32(0x80); }
static void errors_ro(struct mfs_super *sb) { sb->s_errors = htole16(MFS_ERRORS_RO); }

/* Device block of the journal's block @lblk. */
static uint64_t jblock(struct bdev *bd, uint64_t lblk)
{
	struct fmt_raw raw;
	struct mfs_inode in;
	uint64_t pblk;

	t_ok(fmt_raw_open(bd, &raw));
	t_ok(fmt_raw_inode(&raw, MFS_JOURNAL_INO, &in));
	t_ok(fmt_raw_bmap(&raw, MFS_JOURNAL_INO, &in, lblk, &pblk));
	fmt_raw_close(&raw);
	t_assert(pblk, "journal block %" PRIu64 " is mapped", lblk);
	return pblk;
}

static const struct jnl_superblock *disk_jsb(struct bdev *bd)
{
	return (void *)((char *)bdev_mem_data(bd) + jblock(bd, 0) * bd->block_size);
}

/* A device holding what a power cut (or kill -9) would leave now. */
static struct bdev *crash_copy(struct bdev *bd)
{
	struct bdev *copy;

	copy = t_dev_mem(DEV_BYTES, bd->block_size);
	memcpy(bdev_mem_data(copy), bdev_mem_data(bd), DEV_BYTES);
	return copy;
}

static uint64_t stat_value(struct mfs_fs *fs, const char *key)
{
	char buf[8192], *p;

	mfs_stats_format(fs, buf, sizeof(buf));
	p = strstr(buf, key);
	t_assert(p, "no %s in the statistics", key);
	return strtoull(p + strlen(key) + 2, NULL, 10);
}

/* The one error logged names the function that met it first, and the
 * statistics count it there. */
static void check_error_named(struct mfs_fs *fs)
{
	char func[64], key[96];
	const char *log = tf_log();
	size_t len = strcspn(log, ": ");

	t_assert(len && len < sizeof(func) && !strncmp(log + len, ": ", 2),
		 "no function first: %s", log);
	memcpy(func, log, len);
	func[len] = '\0';
	t_eq(stat_value(fs, "fs_errors"), 1);
	snprintf(key, sizeof(key), "fs_errors_in_%s", func);
	t_eq(stat_value(fs, key), 1);
}

/* The root's first block damaged: the lookup that finds it marks the
 * superblock on the disk before it returns. */
static void test_damage(void)
{
	struct mfs_mount_opts o = { .cache_bytes = 4u << 20 };
	struct bdev *bd = tf_mkfs(1024, DEV_BYTES);
	struct mfs_super sb;
	struct fmt_raw raw;
	struct mfs_inode in;
	struct mfs_fs *fs;
	struct stat st;
	uint32_t copy;
	uint64_t blk;

	t_ok(fmt_raw_open(bd, &raw));
	t_ok(fmt_raw_inode(&raw, MFS_ROOT_INO, &in));
	t_ok(fmt_raw_bmap(&raw, MFS_ROOT_INO, &in, 0, &blk));
	fmt_raw_close(&raw);
	((uint8_t *)bdev_mem_data(bd))[blk * 1024 + 4] ^= 0x40;
	set_sb(bd, errors_ro);               /* the superblock's default */
	fs = tf_mount(bd);
	t_assert(!disk_errors(bd), "a fresh mount is not marked");
	tf_log_capture();
	t_eq(mfs_lookup(fs, &tf_root, MFS_ROOT_INO, "lost+found", &st, NULL), -EIO);
	tf_log_release();
	t_assert(disk_errors(bd), "the damage is not on the disk");
	check_error_named(fs);
	t_ok(fmt_sb_load(bd, &sb, &copy));   /* checksum good, primary used */
	t_eq(copy, 0);
	t_assert(strstr(tf_log(), "remount-ro"), "s_errors ignored: %s", tf_log());
	t_eq(mfs_mkdir(fs, &tf_root, MFS_FIRST_INO, "d", 0755, NULL, NULL), -EROFS);
	t_ok(mfs_unmount(fs));
	t_assert(disk_errors(bd), "the clean unmount dropped the errors");
	t_assert(le16toh(disk_sb(bd)->s_state) & MFS_STATE_VALID, "not clean");

	tf_log_capture();
	t_eq(mfs_mount(bd, &o, &fs), -EROFS);
	tf_log_release();
	t_assert(strstr(tf_log(), "marked with errors") && strstr(tf_log(), "-o force"),
		 "refusal: %s", tf_log());
	t_assert(strchr(tf_log(), '\n') == tf_log() + strlen(tf_log()) - 1,
		 "one line only: %s", tf_log());
	o.read_only = true;
	t_ok(mfs_mount(bd, &o, &fs));
	t_ok(mfs_unmount(fs));
	o.read_only = false;
	o.force = true;
	t_ok(mfs_mount(bd, &o, &fs));
	t_ok(mfs_unmount(fs));
	t_assert(disk_errors(bd), "a forced mount dropped the errors");
	bdev_close(bd);
	printf("ok: damage found while mounted is on the disk at once\n");
}

/* Inode @ino of the image on @bd, in place: changed by the caller, then
 * resealed with inode_seal(). */
static struct mfs_inode *disk_inode(struct bdev *bd, uint32_t ino)
{
	const struct mfs_group_desc *gd;
	struct fmt_raw raw;
	uint32_t g, off;
	uint64_t blk;

	t_ok(fmt_raw_open(bd, &raw));
	g = (ino - 1) / le32toh(raw.sb.s_inodes_per_group);
	t_ok(fmt_raw_gdesc(&raw, g, &gd));
	blk = fmt_inode_block(&raw.sb, le32toh(gd->bg_inode_table), ino, &off);
	fmt_raw_close(&raw);
	return (void *)((char *)bdev_mem_data(bd) + blk * bd->block_size + off);
}

static void inode_seal(struct bdev *bd, uint32_t ino)
{
	struct mfs_inode *in = disk_inode(bd, ino);

	in->i_checksum = htole32(fmt_inode_csum(disk_sb(bd), ino, in));
}

/*
 * A file whose first block is a directory's (damage), then removed: the
 * bitmap calls the block free while the directory's page still stands for
 * it in the journal.  Handed out again, the block would have two owners
 * in one log; the journal refuses, and the filesystem says which block
 * and marks the superblock, as for any damage met.
 */
static void test_shared_block(void)
{
	struct bdev *bd = tf_mkfs(1024, DEV_BYTES);
	struct mfs_fs *fs = tf_mount(bd);
	uint64_t d, f, dblk;
	struct stat st;
	int err;

	t_ok(mfs_mkdir(fs, &tf_root, MFS_ROOT_INO, "d", 0755, &st, NULL));
	d = st.st_ino;
	mfs_forget(fs, d, 1);
	t_ok(mfs_mknod(fs, &tf_root, MFS_ROOT_INO, "f", S_IFREG | 0644, 0, &st, NULL));
	f = st.st_ino;
	mfs_forget(fs, f, 1);
	tf_write(fs, f, 0, 1024, 1);
	t_ok(mfs_unmount(fs));
	dblk = le32toh(disk_inode(bd, (uint32_t)d)->i_block[0]);
	disk_inode(bd, (uint32_t)f)->i_block[0] = htole32((uint32_t)dblk);
	inode_seal(bd, (uint32_t)f);

	fs = tf_mount(bd);
	t_ok(mfs_mknod(fs, &tf_root, d, "x", S_IFREG | 0644, 0, &st, NULL));
	mfs_forget(fs, st.st_ino, 1);
	t_ok(mfs_unlink(fs, &tf_root, MFS_ROOT_INO, "f"));
	t_ok(mfs_fsync(fs, d, false));       /* commits; no checkpoint */
	tf_log_capture();
	err = mfs_mkdir(fs, &tf_root, MFS_ROOT_INO, "e", 0755, &st, NULL);
	tf_log_release();
	t_eq(err, -EUCLEAN);
	t_assert(strstr(tf_log(), "two owners"), "log: %s", tf_log());
	t_assert(disk_errors(bd), "the damage is not on the disk");
	t_ok(mfs_unmount(fs));
	bdev_close(bd);
	printf("ok: a block freed by one owner while another's page stands for it\n");
}

static int count_entries(void *ctx, const char *name, size_t len, uint64_t ino,
			 unsigned type, uint64_t next, const struct stat *st,
			 uint64_t gen)
{
	unsigned int *n = ctx;

	(void)type;
	(void)next;
	(void)gen;
	if (len == 1 && name[0] == 'f')
		t_assert(ino == MFS_ROOT_INO && !st, "f reported with attributes");
	(*n)++;
	return 0;
}

/*
 * An entry of a subdirectory names the root (damage): the root has no
 * other name, and a kernel answers such a lookup with EIO and nothing in
 * any log.  The filesystem calls it damage itself: its lookup is
 * -EUCLEAN with a line naming the entry, and readdir with attributes
 * reports the entry without them, as it does "." and "..".
 */
static void test_entry_names_root(void)
{
	struct bdev *bd = tf_mkfs(1024, DEV_BYTES);
	struct mfs_fs *fs = tf_mount(bd);
	struct mfs_super *sb = disk_sb(bd);
	unsigned int entries = 0;
	struct mfs_dirent *de;
	struct mfs_dir *dir;
	struct stat st;
	uint64_t d, blk;
	char *b;

	t_ok(mfs_mkdir(fs, &tf_root, MFS_ROOT_INO, "d", 0755, &st, NULL));
	d = st.st_ino;
	t_ok(mfs_mknod(fs, &tf_root, d, "f", S_IFREG | 0644, 0, &st, NULL));
	mfs_forget(fs, st.st_ino, 1);
	t_ok(mfs_unmount(fs));
	blk = le32toh(disk_inode(bd, (uint32_t)d)->i_block[0]);
	b = (char *)bdev_mem_data(bd) + blk * 1024;
	for (uint32_t off = 0; off < 1024 - MFS_DIR_TAIL_SIZE; off += le16toh(de->rec_len)) {
		de = (struct mfs_dirent *)(b + off);
		if (de->name_len == 1 && de->name[0] == 'f')
			de->inode = htole32(MFS_ROOT_INO);
	}
	fmt_block_set_csum(sb, MFS_CSUM_DIR, d, b);

	fs = tf_mount(bd);
	tf_log_capture();
	t_eq(mfs_lookup(fs, &tf_root, d, "f", &st, NULL), -EUCLEAN);
	tf_log_release();
	t_assert(strstr(tf_log(), "entry 'f' names the root"), "log: %s", tf_log());
	t_assert(disk_errors(bd), "the damage is not on the disk");
	t_ok(mfs_opendir(fs, &tf_root, d, &dir));
	tf_log_capture();
	t_ok(mfs_readdir(fs, dir, 0, true, count_entries, &entries));
	tf_log_release();
	t_eq(entries, 3);
	mfs_releasedir(fs, dir);
	t_ok(mfs_unmount(fs));
	bdev_close(bd);
	printf("ok: an entry naming the root is damage\n");
}

/* Every write to the log fails: the commit aborts the journal, and the
 * errors reach both superblocks without it. */
static void test_abort_on_log_error(void)
{
	struct mfs_mount_opts o = { .cache_bytes = 4u << 20 };
	struct bdev *bd = tf_mkfs(1024, DEV_BYTES);
	struct mfs_fs *fs = tf_mount(bd);
	struct stat st;

	for (uint64_t l = 1; l < 64; l++)
		t_ok(bdev_wrap_fail(bd, jblock(bd, l) * 1024, 1024, BDEV_WRAP_FAIL_WRITE));
	t_ok(mfs_mkdir(fs, &tf_root, MFS_ROOT_INO, "d", 0755, &st, NULL));
	mfs_forget(fs, st.st_ino, 1);
	tf_log_capture();
	t_eq(mfs_sync(fs), -EIO);
	tf_log_release();
	t_assert(strstr(tf_log(), "journal aborted"), "log: %s", tf_log());
	t_assert(disk_errors(bd), "the abort is not in the superblock");
	t_eq((int32_t)le32toh(disk_jsb(bd)->s_errno), -EIO);
	t_eq(mfs_mkdir(fs, &tf_root, MFS_ROOT_INO, "e", 0755, NULL, NULL), -EROFS);
	tf_log_capture();
	t_assert(mfs_unmount(fs) != 0, "unmount after an abort succeeded");
	tf_log_release();
	t_ok(bdev_wrap_fail(bd, 0, 0, 0));
	t_assert(!(le16toh(disk_sb(bd)->s_state) & MFS_STATE_VALID), "marked clean");

	tf_log_capture();
	t_eq(mfs_mount(bd, &o, &fs), -EROFS);
	tf_log_release();
	t_assert(strstr(tf_log(), "marked with errors (the journal was aborted"),
		 "refusal: %s", tf_log());
	t_eq((int32_t)le32toh(disk_jsb(bd)->s_errno), 0);
	t_assert(disk_errors(bd), "errors lost");
	o.force = true;
	t_ok(mfs_mount(bd, &o, &fs));
	t_ok(mfs_mkdir(fs, &tf_root, MFS_ROOT_INO, "e", 0755, &st, NULL));
	mfs_forget(fs, st.st_ino, 1);
	t_ok(mfs_unmount(fs));
	t_assert(disk_errors(bd), "errors lost by the forced mount");
	tf_check(bd, true);
	bdev_close(bd);
	printf("ok: an aborted journal marks both superblocks\n");
}

/* A crash after a commit: the flag and the log say so; the replay and the
 * clean unmount clear it. */
static void test_recover_flag(void)
{
	struct bdev *bd = tf_mkfs(1024, DEV_BYTES), *crashed;
	struct mfs_fs *fs = tf_mount(bd);
	struct stat st;

	t_assert(!disk_recover(bd), "set before any commit");
	t_eq(disk_jsb(bd)->s_start, 0);
	t_ok(mfs_mkdir(fs, &tf_root, MFS_ROOT_INO, "d", 0755, &st, NULL));
	mfs_forget(fs, st.st_ino, 1);
	t_ok(mfs_sync(fs));
	t_assert(disk_jsb(bd)->s_start != 0, "the log is empty after a commit");
	t_assert(disk_recover(bd), "the log holds a transaction, the flag is clear");
	crashed = crash_copy(bd);
	t_ok(mfs_unmount(fs));
	t_assert(!disk_recover(bd), "a clean unmount left the flag");
	t_eq(disk_jsb(bd)->s_start, 0);
	bdev_close(bd);

	/* A read-only mount of a writable device replays, and writes nothing
	 * else: the replay itself clears the flag. */
	fs = tf_mount_opts(crashed, &(struct mfs_mount_opts){ .cache_bytes = 4u << 20,
							       .read_only = true });
	t_assert(!disk_recover(crashed), "the replay left the flag");
	t_eq(disk_jsb(crashed)->s_start, 0);
	t_ok(mfs_unmount(fs));
	fs = tf_mount(crashed);
	t_ok(mfs_lookup(fs, &tf_root, MFS_ROOT_INO, "d", &st, NULL));
	mfs_forget(fs, st.st_ino, 1);
	tf_unmount_check(fs, crashed);
	bdev_close(crashed);
	printf("ok: INCOMPAT_RECOVER from the first commit to the clean unmount\n");
}

/*
 * The superblock is tf_log() (an open file unlinked goes on the orphan
 * list), then enough transactions follow for checkpoints to write that
 * copy home while the log still holds newer ones: the flag must stay.
 */
static void test_recover_through_checkpoints(void)
{
	struct bdev *bd = tf_mkfs(1024, DEV_BYTES);
	struct mfs_fs *fs = tf_mount(bd);
	struct mfs_file *f;
	struct stat st;
	char name[32];
	int i;

	t_ok(mfs_create(fs, &tf_root, MFS_ROOT_INO, "orphan", 0644, O_RDWR, &st,
			NULL, &f));
	t_ok(mfs_unlink(fs, &tf_root, MFS_ROOT_INO, "orphan"));
	t_ok(mfs_sync(fs));
	/* Only the orphan list journals the superblock: these operations
	 * leave its tf_log() copy where it is until a checkpoint takes it home,
	 * which the orphan head on the disk shows. */
	for (i = 0; i < 1500; i++) {
		struct stat dst;

		snprintf(name, sizeof(name), "n%d", i);
		t_ok(mfs_mkdir(fs, &tf_root, MFS_ROOT_INO, name, 0755, &dst, NULL));
		mfs_forget(fs, dst.st_ino, 1);
		t_ok(mfs_sync(fs));
		if (!disk_jsb(bd)->s_start)
			continue;
		t_assert(disk_recover(bd), "the log holds transactions after %d "
			 "operations, the flag is clear", i + 1);
		if (le32toh(disk_sb(bd)->s_last_orphan) == st.st_ino)
			break;
	}
	t_assert(i < 1500, "the superblock never went home (%d checkpoints)",
		 (int)stat_value(fs, "jnl_checkpoints"));
	t_ok(mfs_release(fs, f));
	mfs_forget(fs, st.st_ino, 1);
	t_ok(mfs_unmount(fs));
	t_assert(!disk_recover(bd), "a clean unmount left the flag");
	bdev_close(bd);
	printf("ok: INCOMPAT_RECOVER kept by the checkpoint of an older copy (%d "
	       "operations)\n", i + 1);
}

/*
 * The log holds a copy of the superblock from before an error that was
 * then written straight to the disk; a crash, and the replay writes that
 * older copy home: the mount must still find the errors.
 */
static void test_errors_survive_replay(void)
{
	struct mfs_mount_opts o = { .cache_bytes = 4u << 20 };
	struct bdev *bd = tf_mkfs(1024, DEV_BYTES), *crashed;
	struct mfs_fs *fs = tf_mount(bd);
	struct mfs_file *f;
	struct fmt_raw raw;
	struct mfs_inode in;
	struct stat st;
	uint64_t x, blk;

	t_ok(mfs_mkdir(fs, &tf_root, MFS_ROOT_INO, "x", 0755, &st, NULL));
	x = st.st_ino;
	mfs_forget(fs, x, 1);
	tf_unmount_check(fs, bd);
	t_ok(fmt_raw_open(bd, &raw));
	t_ok(fmt_raw_inode(&raw, (uint32_t)x, &in));
	t_ok(fmt_raw_bmap(&raw, (uint32_t)x, &in, 0, &blk));
	fmt_raw_close(&raw);
	((uint8_t *)bdev_mem_data(bd))[blk * 1024 + 4] ^= 0x40;

	fs = tf_mount(bd);
	t_ok(mfs_create(fs, &tf_root, MFS_ROOT_INO, "orphan", 0644, O_RDWR, &st,
			NULL, &f));
	t_ok(mfs_unlink(fs, &tf_root, MFS_ROOT_INO, "orphan"));
	t_ok(mfs_sync(fs));
	tf_log_capture();
	t_eq(mfs_lookup(fs, &tf_root, x, "anything", NULL, NULL), -EIO);
	tf_log_release();
	t_assert(disk_errors(bd), "the damage is not on the disk");
	crashed = crash_copy(bd);
	t_ok(mfs_release(fs, f));
	mfs_forget(fs, st.st_ino, 1);
	t_ok(mfs_unmount(fs));
	bdev_close(bd);

	tf_log_capture();
	t_eq(mfs_mount(crashed, &o, &fs), -EROFS);
	tf_log_release();
	t_assert(strstr(tf_log(), "marked with errors"), "refusal: %s", tf_log());
	t_assert(disk_errors(crashed), "the replay dropped the errors");
	bdev_close(crashed);
	printf("ok: errors on the disk survive the replay of an older superblock\n");
}

static void test_features(void)
{
	struct mfs_mount_opts o = { .cache_bytes = 4u << 20 };
	struct bdev *bd = tf_mkfs(1024, DEV_BYTES), *crashed;
	struct statvfs sv;
	struct mfs_fs *fs;
	void *before;
	struct stat st;

	set_sb(bd, incompat);
	tf_log_capture();
	t_eq(mfs_mount(bd, &o, &fs), -EOPNOTSUPP);
	tf_log_release();
	t_assert(strstr(tf_log(), "unknown incompatible features 0x80"), "%s", tf_log());
	bdev_close(bd);

	bd = tf_mkfs(1024, DEV_BYTES);
	set_sb(bd, rocompat);
	before = malloc(DEV_BYTES);
	t_assert(before, "memory");
	memcpy(before, bdev_mem_data(bd), DEV_BYTES);
	tf_log_capture();
	t_ok(mfs_mount(bd, &o, &fs));
	tf_log_release();
	t_assert(strstr(tf_log(), "features 0x80: mounting read-only"), "%s", tf_log());
	t_ok(mfs_statfs(fs, &sv));
	t_assert(sv.f_flag & ST_RDONLY, "statfs says read-write");
	t_eq(mfs_mkdir(fs, &tf_root, MFS_ROOT_INO, "d", 0755, NULL, NULL), -EROFS);
	t_ok(mfs_lookup(fs, &tf_root, MFS_ROOT_INO, "lost+found", &st, NULL));
	mfs_forget(fs, st.st_ino, 1);
	t_ok(mfs_unmount(fs));
	t_assert(!memcmp(before, bdev_mem_data(bd), DEV_BYTES), "the image changed");
	free(before);
	bdev_close(bd);

	/* Read-only by its features, it cannot replay a journal. */
	bd = tf_mkfs(1024, DEV_BYTES);
	fs = tf_mount(bd);
	t_ok(mfs_mkdir(fs, &tf_root, MFS_ROOT_INO, "d", 0755, &st, NULL));
	mfs_forget(fs, st.st_ino, 1);
	t_ok(mfs_sync(fs));
	crashed = crash_copy(bd);
	t_ok(mfs_unmount(fs));
	bdev_close(bd);
	set_sb(crashed, rocompat);
	tf_log_capture();
	t_eq(mfs_mount(crashed, &o, &fs), -EROFS);
	tf_log_release();
	t_assert(strstr(tf_log(), "needs replaying and unknown read-only compatible "
			"features 0x80"), "%s", tf_log());
	t_assert(strchr(tf_log(), '\n') == tf_log() + strlen(tf_log()) - 1,
		 "one line only: %s", tf_log());
	bdev_close(crashed);
	printf("ok: unknown features: incompat refused, ro_compat read-only\n");
}

T_MAIN(T_CASE(test_damage),
       T_CASE(test_shared_block),
       T_CASE(test_entry_names_root),
       T_CASE(test_abort_on_log_error),
       T_CASE(test_recover_flag),
       T_CASE(test_recover_through_checkpoints),
       T_CASE(test_errors_survive_replay),
       T_CASE(test_features))
