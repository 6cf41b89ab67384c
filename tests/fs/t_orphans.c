/*
 * t_orphans - the orphan list when its inodes cannot be freed.  An
 * unlinked file whose blocks cannot be freed (a damaged indirect block)
 * stays on the list, in memory as on the disk,
 * while its neighbours come and go through it; the unmount leaves it on
 * the disk's list, whole, for the next mount and fsck.  A damaged list
 * (a loop, an inode out of range) ends before the damage at mount, as an
 * error of the filesystem, and fsck finishes it.
 */
#include <fcntl.h>
#include <inttypes.h>

#include "fsck.h"
#include "t_dev.h"
#include "t_fs.h"
#include "util.h"

#define DEV_BYTES (8u << 20)
#define BIG_BYTES (200u << 10)     /* past the direct blocks of 1 KiB */

static void expect_logged(const char *text)
{
	t_assert(strstr(tf_log(), text), "the log lacks '%s':\n%s", text, tf_log());
}

static uint64_t make_file(struct mfs_fs *fs, const char *name, size_t len, unsigned seed)
{
	struct mfs_file *f;
	struct stat st;

	t_ok(mfs_create(fs, &tf_root, MFS_ROOT_INO, name, 0644, O_RDWR, &st, NULL, &f));
	t_ok(mfs_release(fs, f));
	mfs_forget(fs, st.st_ino, 1);
	tf_write(fs, st.st_ino, 0, len, seed);
	return st.st_ino;
}

/* unlink(2) and the kernel's FORGET of the last lookup. */
static void rm(struct mfs_fs *fs, const char *name)
{
	uint64_t ino = tf_ino(fs, name);

	t_ok(mfs_unlink(fs, &tf_root, MFS_ROOT_INO, name));
	mfs_forget(fs, ino, 1);
}

static struct mfs_inode raw_inode(struct bdev *bd, uint64_t ino)
{
	struct fmt_raw raw;
	struct mfs_inode in;

	t_ok(fmt_raw_open(bd, &raw));
	t_ok(fmt_raw_inode(&raw, (uint32_t)ino, &in));
	fmt_raw_close(&raw);
	return in;
}

static uint32_t orphan_head(struct bdev *bd)
{
	struct fmt_raw raw;
	uint32_t head;

	t_ok(fmt_raw_open(bd, &raw));
	head = le32toh(raw.sb.s_last_orphan);
	fmt_raw_close(&raw);
	return head;
}

static void set_orphan_head(struct bdev *bd, uint32_t ino)
{
	struct mfs_super *sb = (void *)((char *)bdev_mem_data(bd) + MFS_SB_OFFSET);

	sb->s_last_orphan = htole32(ino);
	fmt_sb_set_csum(sb);
}

/* One byte of @ino's indirect block flipped: its checksum fails. */
static void damage_indirect(struct bdev *bd, uint64_t ino)
{
	struct mfs_inode in = raw_inode(bd, ino);
	uint64_t blk = le32toh(in.i_block[MFS_IND_BLOCK]);

	t_assert(blk, "inode %" PRIu64 " has no indirect block", ino);
	((uint8_t *)bdev_mem_data(bd))[blk * bd->block_size + 100] ^= 0x40;
}

/* fsck -y repairs what is left, then the image is clean. */
static void repair(struct bdev *bd)
{
	struct fsck_opts o = { .mode = FSCK_YES, .force = true };
	struct fsck_result r;

	fsck_run(bd, &o, &r);
	t_assert(r.exit <= 1, "fsck -fy: exit status %d", r.exit);
	tf_check(bd, false);
}

/*
 * "big" cannot be freed; b, c and d are unlinked after it, one of them
 * while big is the list's head, and freed through it.
 */
static void test_free_fails(void)
{
	const struct mfs_mount_opts forced = { .cache_bytes = 4u << 20, .force = true };
	struct bdev *bd = tf_mkfs(1024, DEV_BYTES);
	struct mfs_fs *fs = tf_mount(bd);
	uint64_t big = make_file(fs, "big", BIG_BYTES, 1);
	uint64_t b = make_file(fs, "b", 3000, 2), c = make_file(fs, "c", 10, 3);
	struct mfs_inode in;
	char msg[64];

	make_file(fs, "d", 5000, 4);
	t_ok(mfs_unmount(fs));
	damage_indirect(bd, big);

	tf_log_capture();
	fs = tf_mount(bd);
	rm(fs, "b");
	rm(fs, "big");
	snprintf(msg, sizeof(msg), "inode %" PRIu64 ": cannot free it", big);
	expect_logged(msg);
	rm(fs, "c");
	rm(fs, "d");
	t_ok(mfs_unmount(fs));
	tf_log_release();

	/* On the disk: big alone on the list; b and c gone. */
	t_eq(orphan_head(bd), big);
	in = raw_inode(bd, big);
	t_eq(le32toh(in.i_next_orphan), 0);
	t_eq(le16toh(in.i_links_count), 0);
	t_assert(le64toh(raw_inode(bd, b).i_dtime), "b was not freed");
	t_assert(le64toh(raw_inode(bd, c).i_dtime), "c was not freed");

	/* The next mount (forced: the image is marked with errors) tries
	 * again, in vain, and keeps it. */
	tf_log_capture();
	fs = tf_mount_opts(bd, &forced);
	t_ok(mfs_unmount(fs));
	tf_log_release();
	expect_logged(msg);
	t_eq(orphan_head(bd), big);
	repair(bd);
	bdev_close(bd);
	printf("ok: an orphan that cannot be freed stays on the list\n");
}

/* Inode @ino as the device holds it, to change in place; then reseal. */
static struct mfs_inode *disk_inode(struct bdev *bd, uint64_t ino)
{
	struct fmt_raw raw;
	const struct mfs_group_desc *gd;
	uint32_t ipg, isz;
	uint64_t off;

	t_ok(fmt_raw_open(bd, &raw));
	ipg = le32toh(raw.sb.s_inodes_per_group);
	isz = le16toh(raw.sb.s_inode_size);
	t_ok(fmt_raw_gdesc(&raw, (uint32_t)((ino - 1) / ipg), &gd));
	off = (uint64_t)le32toh(gd->bg_inode_table) * raw.bs + (ino - 1) % ipg * isz;
	fmt_raw_close(&raw);
	return (void *)((char *)bdev_mem_data(bd) + off);
}

static void reseal(struct bdev *bd, uint64_t ino)
{
	struct fmt_raw raw;
	struct mfs_inode *in = disk_inode(bd, ino);

	t_ok(fmt_raw_open(bd, &raw));
	in->i_checksum = htole32(fmt_inode_csum(&raw.sb, (uint32_t)ino, in));
	fmt_raw_close(&raw);
}

/* Files a (unlinked, 3000 bytes), b (linked, 5000 bytes, cut short
 * by a truncation to 1000) and c (unlinked) on the list: head a, then b,
 * then c, the last. */
static struct bdev *orphan_list(uint64_t *ino)
{
	struct bdev *bd = tf_mkfs(1024, DEV_BYTES);
	struct mfs_fs *fs = tf_mount(bd);
	struct mfs_inode *in;

	ino[0] = make_file(fs, "a", 3000, 1);
	ino[1] = make_file(fs, "b", 5000, 2);
	ino[2] = make_file(fs, "c", 7000, 3);
	t_ok(mfs_unmount(fs));
	set_orphan_head(bd, (uint32_t)ino[0]);
	for (int i = 0; i < 3; i++) {
		in = disk_inode(bd, ino[i]);
		in->i_next_orphan = htole32(i < 2 ? (uint32_t)ino[i + 1] : 0);
		if (i == 1)
			in->i_size = htole64(1000);
		else
			in->i_links_count = 0;
		reseal(bd, ino[i]);
	}
	return bd;
}

/* Damage: c's next is @next. */
static void set_next(struct bdev *bd, uint64_t c, uint32_t next)
{
	disk_inode(bd, c)->i_next_orphan = htole32(next);
	reseal(bd, c);
}

/* The mount ends the list before @bad, frees a and c, finishes b. */
static void mount_damaged_list(struct bdev *bd, const uint64_t *ino, uint64_t bad,
			       const char *what)
{
	struct mfs_fs *fs;
	char msg[96];
	struct stat st;

	tf_log_capture();
	fs = tf_mount(bd);
	snprintf(msg, sizeof(msg), "orphan list: %s inode %" PRIu64, what, bad);
	expect_logged(msg);
	t_ok(mfs_getattr(fs, ino[1], &st));
	t_eq(st.st_size, 1000);
	tf_verify(fs, ino[1], 0, 1000, 2);
	t_ok(mfs_unmount(fs));
	tf_log_release();
	t_eq(orphan_head(bd), 0);
	t_assert(le64toh(raw_inode(bd, ino[0]).i_dtime), "a was not freed");
	t_assert(le64toh(raw_inode(bd, ino[2]).i_dtime), "c was not freed");
	repair(bd);
	bdev_close(bd);
}

/* A loop in the list (c's next is a). */
static void test_loop(void)
{
	uint64_t ino[3];
	struct bdev *bd = orphan_list(ino);

	set_next(bd, ino[2], (uint32_t)ino[0]);
	mount_damaged_list(bd, ino, ino[0], "a loop back to");
	printf("ok: a loop in the orphan list ends at the mount\n");
}

/* An inode number past the last one. */
static void test_out_of_range(void)
{
	uint64_t ino[3];
	struct bdev *bd = orphan_list(ino);
	uint32_t n;
	struct fmt_raw raw;

	t_ok(fmt_raw_open(bd, &raw));
	n = le32toh(raw.sb.s_inodes_count) + 5;
	fmt_raw_close(&raw);
	set_next(bd, ino[2], n);
	mount_damaged_list(bd, ino, n, "cannot read");
	printf("ok: an inode out of range ends the orphan list at the mount\n");
}

T_MAIN(T_CASE(test_free_fails),
       T_CASE(test_loop),
       T_CASE(test_out_of_range))
