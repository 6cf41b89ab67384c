/*
 * t_regions - the reserved regions as files "/.regions/NAME" in the core,
 * on the memory device: lookup and readdir find them (the root lists
 * ".regions" when there are regions), a file's bytes are the region's
 * bytes on the device both ways, with the region's size as its bounds
 * (-ENOSPC from the end on, short across it); nothing of them goes
 * through the device's requests (so neither the cache nor the journal);
 * names, size and times cannot change, permission bits and owners only
 * as documented; a read-only mount refuses writes; a damaged table shows
 * no region; the device's flushes stop where the regions begin.
 */
#include <fcntl.h>
#include <linux/fs.h>
#include <stdlib.h>
#include <unistd.h>

#include "bdev_test.h"
#include "t_fs.h"
#include "t_dev.h"
#include "util.h"

#define BS        4096u
#define BLOB_SIZE ((1u << 20) + 100)   /* not a whole number of blocks */

static uint64_t blob_ino = MFS_REGION_INO(0), two_ino = MFS_REGION_INO(1);

static struct bdev *mkfs_regions(void)
{
	struct fmt_mkfs_opts o = { .block_size = BS, .zeroed = true, .now = 1700000000,
				   .csum_seed = 0x5eed, .nregions = 2 };
	struct bdev *bd;

	strcpy(o.regions[0].name, "blob");
	o.regions[0].bytes = BLOB_SIZE;
	strcpy(o.regions[1].name, "two");
	o.regions[1].bytes = 8192;
	bd = t_dev_mem(32u << 20, BS);
	t_ok(fmt_mkfs(bd, &o));
	return bd;
}

/* Byte offset of region @i on the device, from its table. */
static uint64_t region_off(struct bdev *bd, unsigned i)
{
	struct fmt_raw raw;
	uint8_t *blk = bdev_alloc_buf(BS);
	const struct mfs_region_entry *e;
	uint64_t off;

	t_ok(fmt_raw_open(bd, &raw));
	t_ok(fmt_raw_read(&raw, le64toh(raw.sb.s_region_table), blk));
	e = (const void *)(blk + MFS_REGION_HDR_SIZE);
	off = le64toh(e[i].re_start) * BS;
	fmt_raw_close(&raw);
	bdev_free_buf(blk);
	return off;
}

static uint64_t regions_start(struct bdev *bd)
{
	struct fmt_raw raw;
	uint64_t start;

	t_ok(fmt_raw_open(bd, &raw));
	start = le64toh(raw.sb.s_regions_start) * BS;
	fmt_raw_close(&raw);
	return start;
}

static void names(struct mfs_fs *fs, struct bdev *bd)
{
	struct stat st;
	uint64_t gen = 1;
	char list[4096];

	(void)bd;
	t_ok(mfs_lookup(fs, &tf_user, MFS_ROOT_INO, MFS_REGIONS_DIR_NAME, &st, &gen));
	t_eq(st.st_ino, MFS_REGIONS_DIR_INO);
	t_eq(st.st_mode, S_IFDIR | 0755);
	t_eq(gen, 0);
	t_ok(mfs_lookup(fs, &tf_user, MFS_REGIONS_DIR_INO, "blob", &st, NULL));
	t_eq(st.st_ino, blob_ino);
	t_eq(st.st_mode, S_IFREG | 0600);
	t_eq(st.st_size, BLOB_SIZE);
	t_eq(st.st_uid, 0);
	t_eq(st.st_nlink, 1);
	t_ok(mfs_getattr(fs, two_ino, &st));
	t_eq(st.st_size, 8192);
	t_ok(mfs_lookup(fs, &tf_user, MFS_REGIONS_DIR_INO, "..", &st, NULL));
	t_eq(st.st_ino, MFS_ROOT_INO);
	mfs_forget(fs, MFS_ROOT_INO, 1);
	t_eq(mfs_lookup(fs, &tf_user, MFS_REGIONS_DIR_INO, "none", &st, NULL), -ENOENT);
	t_eq(mfs_lookup(fs, &tf_user, blob_ino, "x", &st, NULL), -ENOTDIR);
	t_eq(mfs_getattr(fs, MFS_REGION_INO(2), &st), -ENOENT);
	tf_list(fs, MFS_ROOT_INO, list, sizeof(list));
	t_assert(strstr(list, MFS_REGIONS_DIR_NAME), "the root does not list .regions: %s", list);
	t_assert(!strstr(list, MFS_CTL_DIR_NAME), "the root lists .miscfs: %s", list);
	tf_list(fs, MFS_REGIONS_DIR_INO, list, sizeof(list));
	t_assert(!strcmp(list, ".\n..\nblob\ntwo"), "/.regions lists %s", list);
	printf("ok: names\n");
}

/* What is written at 4096 + 7 of "blob", and read back. */
static void pattern(uint8_t *buf, size_t len)
{
	for (size_t i = 0; i < len; i++)
		buf[i] = (uint8_t)(i * 7 + 1);
}

/* Bytes written through the file are the device's at the region's
 * offset, and the other way round; the bounds are the region's size. */
static void contents(struct mfs_fs *fs, struct bdev *bd)
{
	uint8_t *dev = bdev_mem_data(bd), buf[300], back[300];
	uint64_t off = region_off(bd, 0);
	struct mfs_file *f;

	pattern(buf, sizeof(buf));
	t_eq(mfs_open(fs, &tf_user, blob_ino, O_RDONLY, &f), -EACCES);
	t_ok(mfs_open(fs, &tf_root, blob_ino, O_RDWR, &f));
	t_assert(!mfs_file_direct(f), "a region file is read through the caller's cache");
	t_eq(mfs_write(fs, &tf_root, f, buf, sizeof(buf), 4096 + 7, MFS_WRITE_AT), sizeof(buf));
	t_assert(!memcmp(dev + off + 4096 + 7, buf, sizeof(buf)), "not on the device");
	memset(dev + off + 9000, 0xab, 300);
	t_eq(mfs_read(fs, f, back, sizeof(back), 9000), sizeof(back));
	for (size_t i = 0; i < sizeof(back); i++)
		t_eq(back[i], 0xab);
	/* The end: short across it, nothing from it on. */
	t_eq(mfs_write(fs, &tf_root, f, buf, 100, BLOB_SIZE - 10, MFS_WRITE_AT), 10);
	t_eq(dev[off + BLOB_SIZE - 1], buf[9]);
	t_eq(dev[off + BLOB_SIZE], 0);
	t_eq(mfs_write(fs, &tf_root, f, buf, 1, BLOB_SIZE, MFS_WRITE_AT), -ENOSPC);
	t_eq(mfs_write(fs, &tf_root, f, buf, 1, BLOB_SIZE + 5000, MFS_WRITE_AT), -ENOSPC);
	t_eq(mfs_write(fs, &tf_root, f, buf, 0, BLOB_SIZE + 5000, MFS_WRITE_AT), 0);
	t_eq(mfs_read(fs, f, back, 100, BLOB_SIZE - 10), 10);
	t_eq(mfs_read(fs, f, back, 100, BLOB_SIZE), 0);
	t_ok(mfs_fsync(fs, blob_ino, false));
	t_ok(mfs_release(fs, f));
	t_ok(mfs_open(fs, &tf_root, blob_ino, O_RDONLY, &f));
	t_eq(mfs_write(fs, &tf_root, f, buf, 1, 0, MFS_WRITE_AT), -EBADF);
	t_ok(mfs_release(fs, f));
	printf("ok: contents\n");
}

/* Region bytes never travel as device requests, and no request of the
 * filesystem reaches the regions; flushes stop where they begin. */
static void apart(struct mfs_fs *fs, struct bdev *bd)
{
	uint64_t start = regions_start(bd), ino;
	struct mfs_file *f;
	uint8_t buf[4096] = { 1 };
	struct stat st;
	size_t n;

	t_eq(bd->flush_end, start);
	bdev_wrap_record(bd, true);
	t_ok(mfs_open(fs, &tf_root, two_ino, O_WRONLY, &f));
	t_eq(mfs_write(fs, &tf_root, f, buf, sizeof(buf), 0, MFS_WRITE_AT), sizeof(buf));
	t_ok(mfs_fsync(fs, two_ino, true));
	t_ok(mfs_release(fs, f));
	t_eq(bdev_wrap_log_count(bd), 0);
	t_ok(mfs_mknod(fs, &tf_root, MFS_ROOT_INO, "f", S_IFREG | 0644, 0, &st, NULL));
	ino = st.st_ino;
	tf_write(fs, ino, 0, 20000, 3);
	t_ok(mfs_sync(fs));
	n = bdev_wrap_log_count(bd);
	t_assert(n > 0, "nothing logged");
	for (size_t i = 0; i < n; i++) {
		const struct bdev_wrap_log_entry *e = bdev_wrap_log(bd, i);

		t_assert(e->flush || e->off + e->len <= start,
			 "a write at %llu reaches the regions (from %llu)",
			 (unsigned long long)e->off, (unsigned long long)start);
	}
	bdev_wrap_record(bd, false);
	mfs_forget(fs, ino, 1);
	printf("ok: apart\n");
}

static void refusals(struct mfs_fs *fs, struct bdev *bd)
{
	struct mfs_setattr sa = { .valid = MFS_SET_SIZE };
	struct mfs_file *f;
	struct stat st;
	uint64_t file;

	(void)bd;
	t_ok(mfs_mknod(fs, &tf_root, MFS_ROOT_INO, "g", S_IFREG | 0644, 0, &st, NULL));
	file = st.st_ino;
	t_eq(mfs_unlink(fs, &tf_root, MFS_REGIONS_DIR_INO, "blob"), -EPERM);
	t_eq(mfs_unlink(fs, &tf_root, MFS_REGIONS_DIR_INO, "none"), -ENOENT);
	t_eq(mfs_unlink(fs, &tf_root, MFS_ROOT_INO, MFS_REGIONS_DIR_NAME), -EPERM);
	t_eq(mfs_rmdir(fs, &tf_root, MFS_ROOT_INO, MFS_REGIONS_DIR_NAME), -EPERM);
	t_eq(mfs_rename(fs, &tf_root, MFS_REGIONS_DIR_INO, "blob", MFS_REGIONS_DIR_INO,
			"b", 0), -EPERM);
	t_eq(mfs_rename(fs, &tf_root, MFS_REGIONS_DIR_INO, "blob", MFS_ROOT_INO, "b", 0),
	     -EPERM);
	t_eq(mfs_rename(fs, &tf_root, MFS_ROOT_INO, "g", MFS_REGIONS_DIR_INO, "blob", 0),
	     -EPERM);
	t_eq(mfs_rename(fs, &tf_root, MFS_ROOT_INO, MFS_REGIONS_DIR_NAME, MFS_ROOT_INO,
			"r", 0), -EPERM);
	t_eq(mfs_link(fs, &tf_root, blob_ino, MFS_ROOT_INO, "l", &st, NULL), -EPERM);
	t_eq(mfs_link(fs, &tf_root, file, MFS_REGIONS_DIR_INO, "l", &st, NULL), -EPERM);
	t_eq(mfs_mknod(fs, &tf_root, MFS_REGIONS_DIR_INO, "new", S_IFREG | 0600, 0, &st,
		       NULL), -EPERM);
	t_eq(mfs_mkdir(fs, &tf_root, MFS_REGIONS_DIR_INO, "d", 0755, &st, NULL), -EPERM);
	t_eq(mfs_mkdir(fs, &tf_root, MFS_ROOT_INO, MFS_REGIONS_DIR_NAME, 0755, &st, NULL),
	     -EEXIST);
	t_eq(mfs_create(fs, &tf_root, MFS_REGIONS_DIR_INO, "blob", 0600,
			O_CREAT | O_EXCL | O_RDWR, &st, NULL, &f), -EEXIST);
	t_eq(mfs_setattr(fs, &tf_root, blob_ino, &sa, &st), -EPERM);
	t_eq(mfs_open(fs, &tf_root, blob_ino, O_WRONLY | O_TRUNC, &f), -EPERM);
	t_eq(mfs_open(fs, &tf_root, blob_ino, O_RDONLY | O_TRUNC, &f), -EPERM);
	t_eq(mfs_create(fs, &tf_root, MFS_REGIONS_DIR_INO, "blob", 0600,
			O_CREAT | O_RDONLY | O_TRUNC, &st, NULL, &f), -EPERM);
	t_eq(mfs_open(fs, &tf_user, blob_ino, O_RDONLY | O_TRUNC, &f), -EACCES);
	t_ok(mfs_create(fs, &tf_root, MFS_REGIONS_DIR_INO, "blob", 0600, O_CREAT | O_RDWR,
			&st, NULL, &f));
	t_eq(st.st_ino, blob_ino);
	t_ok(mfs_release(fs, f));
	t_eq(mfs_setattr(fs, &tf_root, MFS_REGIONS_DIR_INO,
			 &(struct mfs_setattr){ .valid = MFS_SET_MODE, .mode = 0777 }, &st),
	     -EPERM);
	sa = (struct mfs_setattr){ .valid = MFS_SET_MTIME_NOW | MFS_SET_MTIME };
	t_eq(mfs_setattr(fs, &tf_root, blob_ino, &sa, &st), -EPERM);
	t_eq(mfs_readlink(fs, blob_ino, (char[8]){ 0 }, 8), -EINVAL);
	t_ok(mfs_unlink(fs, &tf_root, MFS_ROOT_INO, "g"));
	mfs_forget(fs, file, 1);
	printf("ok: refusals\n");
}

/* Permission bits by the owner or root, owners by root, for the mount. */
static void modes(struct mfs_fs *fs, struct bdev *bd)
{
	struct mfs_setattr sa = { .valid = MFS_SET_MODE, .mode = S_IFREG | 04600 };
	struct mfs_file *f;
	struct stat st;

	(void)bd;
	t_eq(mfs_setattr(fs, &tf_root, blob_ino, &sa, &st), -EPERM);
	sa.mode = S_IFREG | 01600;
	t_eq(mfs_setattr(fs, &tf_root, blob_ino, &sa, &st), -EPERM);
	sa.mode = S_IFREG | 0644;
	t_eq(mfs_setattr(fs, &tf_user, blob_ino, &sa, &st), -EPERM);
	t_ok(mfs_setattr(fs, &tf_root, blob_ino, &sa, &st));
	t_eq(st.st_mode, S_IFREG | 0644);
	t_ok(mfs_open(fs, &tf_user, blob_ino, O_RDONLY, &f));
	t_ok(mfs_release(fs, f));
	t_eq(mfs_open(fs, &tf_user, blob_ino, O_RDWR, &f), -EACCES);
	t_eq(mfs_access(fs, &tf_user, blob_ino, W_OK), -EACCES);
	sa = (struct mfs_setattr){ .valid = MFS_SET_UID | MFS_SET_GID, .uid = 1000, .gid = 1000 };
	t_eq(mfs_setattr(fs, &tf_user, blob_ino, &sa, &st), -EPERM);
	t_ok(mfs_setattr(fs, &tf_root, blob_ino, &sa, &st));
	t_eq(st.st_uid, 1000);
	sa = (struct mfs_setattr){ .valid = MFS_SET_MODE, .mode = S_IFREG | 0600 };
	t_eq(mfs_setattr(fs, &tf_other, blob_ino, &sa, &st), -EPERM);
	t_ok(mfs_setattr(fs, &tf_user, blob_ino, &sa, &st));
	t_ok(mfs_open(fs, &tf_user, blob_ino, O_RDWR, &f));
	t_ok(mfs_release(fs, f));
	t_ok(mfs_access(fs, &tf_user, blob_ino, R_OK | W_OK));
	t_eq(mfs_access(fs, &tf_other, blob_ino, R_OK), -EACCES);
	printf("ok: modes\n");
}

/* A mount that writes the pattern and gives "blob" another owner and mode. */
static void last_mount(struct bdev *bd)
{
	struct mfs_setattr sa = { .valid = MFS_SET_MODE | MFS_SET_UID | MFS_SET_GID,
				  .mode = S_IFREG | 0644, .uid = 1000, .gid = 1000 };
	struct mfs_fs *fs = tf_mount(bd);
	struct mfs_file *f;
	uint8_t buf[300];

	pattern(buf, sizeof(buf));
	t_ok(mfs_open(fs, &tf_root, blob_ino, O_RDWR, &f));
	t_eq(mfs_write(fs, &tf_root, f, buf, sizeof(buf), 4096 + 7, MFS_WRITE_AT), sizeof(buf));
	t_ok(mfs_release(fs, f));
	t_ok(mfs_setattr(fs, &tf_root, blob_ino, &sa, NULL));
	tf_unmount_check(fs, bd);
}

static void test_read_only(void)
{
	struct mfs_mount_opts ro = { .cache_bytes = 4u << 20, .read_only = true };
	struct bdev *bd = mkfs_regions();
	struct mfs_setattr sa = { .valid = MFS_SET_MODE, .mode = S_IFREG | 0644 };
	struct mfs_fs *fs;
	struct mfs_file *f;
	struct stat st;
	uint8_t b[300], want[300];

	last_mount(bd);
	fs = tf_mount_opts(bd, &ro);
	pattern(want, sizeof(want));

	/* Owner and mode were the last mount's only. */
	t_ok(mfs_getattr(fs, blob_ino, &st));
	t_eq(st.st_uid, 0);
	t_eq(st.st_mode, S_IFREG | 0600);
	t_eq(mfs_open(fs, &tf_root, blob_ino, O_RDWR, &f), -EROFS);
	t_eq(mfs_open(fs, &tf_root, blob_ino, O_WRONLY, &f), -EROFS);
	t_eq(mfs_access(fs, &tf_root, blob_ino, W_OK), -EROFS);
	t_eq(mfs_setattr(fs, &tf_root, blob_ino, &sa, &st), -EROFS);
	t_ok(mfs_open(fs, &tf_root, blob_ino, O_RDONLY, &f));
	t_eq(mfs_read(fs, f, b, sizeof(b), 4096 + 7), sizeof(b));
	for (size_t i = 0; i < sizeof(b); i++)
		t_eq(b[i], want[i]);
	t_ok(mfs_release(fs, f));
	t_ok(mfs_unmount(fs));
	bdev_close(bd);
	printf("ok: read-only\n");
}

/* Without regions: an empty directory that the root does not list, and
 * flushes of the whole device. */
static void test_none(void)
{
	struct bdev *bd = tf_mkfs(BS, 32u << 20);
	struct mfs_fs *fs = tf_mount(bd);
	struct stat st;
	char list[4096];

	t_eq(bd->flush_end, 0);
	t_ok(mfs_lookup(fs, &tf_user, MFS_ROOT_INO, MFS_REGIONS_DIR_NAME, &st, NULL));
	t_eq(st.st_mode, S_IFDIR | 0755);
	tf_list(fs, MFS_ROOT_INO, list, sizeof(list));
	t_assert(!strstr(list, MFS_REGIONS_DIR_NAME), "the root lists .regions: %s", list);
	tf_list(fs, MFS_REGIONS_DIR_INO, list, sizeof(list));
	t_assert(!strcmp(list, ".\n.."), "/.regions lists %s", list);
	t_eq(mfs_getattr(fs, MFS_REGION_INO(0), &st), -ENOENT);
	tf_unmount_check(fs, bd);
	bdev_close(bd);
	printf("ok: no regions\n");
}

/* A table whose checksum fails shows no region, and says so. */
static void test_damaged(void)
{
	struct mfs_mount_opts o = { .cache_bytes = 4u << 20, .force = true };
	struct bdev *bd = mkfs_regions();
	struct fmt_raw raw;
	uint64_t table;
	struct mfs_fs *fs;
	struct stat st;
	char list[4096];

	t_ok(fmt_raw_open(bd, &raw));
	table = le64toh(raw.sb.s_region_table);
	fmt_raw_close(&raw);
	((uint8_t *)bdev_mem_data(bd))[table * BS + MFS_REGION_HDR_SIZE + 40] ^= 1;
	fs = tf_mount_opts(bd, &o);
	t_eq(mfs_lookup(fs, &tf_root, MFS_REGIONS_DIR_INO, "blob", &st, NULL), -ENOENT);
	tf_list(fs, MFS_ROOT_INO, list, sizeof(list));
	t_assert(!strstr(list, MFS_REGIONS_DIR_NAME), "the root lists .regions: %s", list);
	t_ok(mfs_unmount(fs));
	bdev_close(bd);
	printf("ok: damaged table\n");
}

/* @fn on a mount of a fresh image with regions, checked after. */
static void on_regions(void (*fn)(struct mfs_fs *, struct bdev *))
{
	struct bdev *bd = mkfs_regions();
	struct mfs_fs *fs = tf_mount(bd);

	fn(fs, bd);
	tf_unmount_check(fs, bd);
	bdev_close(bd);
}

static void test_names(void) { on_regions(names); }
static void test_contents(void) { on_regions(contents); }
static void test_apart(void) { on_regions(apart); }
static void test_refusals(void) { on_regions(refusals); }
static void test_modes(void) { on_regions(modes); }

T_MAIN(T_CASE(test_names),
       T_CASE(test_contents),
       T_CASE(test_apart),
       T_CASE(test_refusals),
       T_CASE(test_modes),
       T_CASE(test_read_only),
       T_CASE(test_none),
       T_CASE(test_damaged))
