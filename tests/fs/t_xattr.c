/*
 * t_xattr - extended attributes and POSIX ACLs of the mounted filesystem,
 * on both block sizes: where entries go (the inode's 84 bytes, then the
 * block), the limits and errors of the system calls, what survives a
 * remount, the block freed with its last entry and with its inode, a
 * damaged block refused with EUCLEAN, ACL access decisions against a
 * table written by hand, inheritance of default ACLs and chmod, checks
 * while the ACL changes and while it moves between inode and block.
 */
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "t_fs.h"
#include "util.h"

static uint32_t bs;

static uint64_t mkfile(struct mfs_fs *fs, const struct mfs_cred *cr, uint64_t dir,
		       const char *name, mode_t mode)
{
	struct stat st;

	t_ok(mfs_mknod(fs, cr, dir, name, S_IFREG | mode, 0, &st, NULL));
	mfs_forget(fs, st.st_ino, 1);
	return st.st_ino;
}

static uint64_t mkdir_(struct mfs_fs *fs, const struct mfs_cred *cr, uint64_t dir,
		       const char *name, mode_t mode)
{
	struct stat st;

	t_ok(mfs_mkdir(fs, cr, dir, name, mode, &st, NULL));
	mfs_forget(fs, st.st_ino, 1);
	return st.st_ino;
}

static uint64_t blocks_of(struct mfs_fs *fs, uint64_t ino)
{
	struct stat st;

	t_ok(mfs_getattr(fs, ino, &st));
	return (uint64_t)st.st_blocks;
}

static mode_t mode_of(struct mfs_fs *fs, uint64_t ino)
{
	struct stat st;

	t_ok(mfs_getattr(fs, ino, &st));
	return st.st_mode & 07777;
}

static uint64_t free_blocks(struct mfs_fs *fs)
{
	struct statvfs sv;

	t_ok(mfs_statfs(fs, &sv));
	return sv.f_bfree;
}

static void set(struct mfs_fs *fs, uint64_t ino, const char *name, const char *value)
{
	t_ok(mfs_setxattr(fs, &tf_root, ino, name, value, strlen(value), 0));
}

static void expect(struct mfs_fs *fs, uint64_t ino, const char *name, const char *value)
{
	char buf[4096];
	ssize_t len = mfs_getxattr(fs, &tf_root, ino, name, buf, sizeof(buf));

	t_eq(len, (ssize_t)strlen(value));
	t_assert(!memcmp(buf, value, (size_t)len), "%s: wrong value", name);
}

static char *filled(size_t len, char c)
{
	char *v = malloc(len + 1);

	t_assert(v, "no memory");
	memset(v, c, len);
	v[len] = 0;
	return v;
}

/* ---- placement and persistence ----------------------------------------------- */

/* "user.a" with a 76-byte value is an 84-byte entry: the inode area
 * exactly; the next entry must go to the block. */
static void placement(struct mfs_fs *fs, struct bdev *bd)
{
	uint64_t f = mkfile(fs, &tf_root, MFS_ROOT_INO, "f", 0644);
	uint64_t base = blocks_of(fs, f), nfree = free_blocks(fs);
	char *v76 = filled(76, 'a'), *v200 = filled(200, 'b');

	set(fs, f, "user.a", v76);
	t_eq(blocks_of(fs, f), base);
	set(fs, f, "user.b", "x");
	t_eq(blocks_of(fs, f), base + bs / 512);
	set(fs, f, "user.c", v200);
	t_eq(blocks_of(fs, f), base + bs / 512);
	/* The block goes with its last entry. */
	t_ok(mfs_removexattr(fs, &tf_root, f, "user.b"));
	t_ok(mfs_removexattr(fs, &tf_root, f, "user.c"));
	t_eq(blocks_of(fs, f), base);
	t_ok(mfs_sync(fs));
	t_eq(free_blocks(fs), nfree);
	/* Freeing the inode area lets the next one in. */
	set(fs, f, "user.c", v200);
	t_ok(mfs_removexattr(fs, &tf_root, f, "user.a"));
	set(fs, f, "user.d", "small");
	t_eq(blocks_of(fs, f), base + bs / 512);
	fs = tf_mount((tf_unmount_check(fs, bd), bd));
	f = tf_ino(fs, "f");
	expect(fs, f, "user.c", v200);
	expect(fs, f, "user.d", "small");
	t_eq(mfs_getxattr(fs, &tf_root, f, "user.a", NULL, 0), -ENODATA);
	tf_unmount_check(fs, bd);
	free(v76);
	free(v200);
	printf("ok: placement (%u)\n", bs);
}

static void list_is(struct mfs_fs *fs, const struct mfs_cred *cr, uint64_t ino,
		    const char *want, size_t wantlen)
{
	char buf[1024];
	ssize_t len = mfs_listxattr(fs, cr, ino, NULL, 0);

	t_eq(len, (ssize_t)wantlen);
	t_eq(mfs_listxattr(fs, cr, ino, buf, sizeof(buf)), (ssize_t)wantlen);
	t_assert(!memcmp(buf, want, wantlen), "list differs");
	if (wantlen)
		t_eq(mfs_listxattr(fs, cr, ino, buf, wantlen - 1), -ERANGE);
}

static void calls(struct mfs_fs *fs, struct bdev *bd)
{
	uint64_t f = mkfile(fs, &tf_root, MFS_ROOT_INO, "f", 0644);
	char buf[64], name[300];
	char *big = filled(bs, 'z'), *huge = filled(65537, 'h');

	set(fs, f, "user.a", "hello");
	t_eq(mfs_setxattr(fs, &tf_root, f, "user.a", "x", 1, XATTR_CREATE), -EEXIST);
	t_eq(mfs_setxattr(fs, &tf_root, f, "user.b", "x", 1, XATTR_REPLACE), -ENODATA);
	t_ok(mfs_setxattr(fs, &tf_root, f, "user.a", "again", 5, XATTR_REPLACE));
	t_ok(mfs_setxattr(fs, &tf_root, f, "user.b", "new", 3, XATTR_CREATE));
	expect(fs, f, "user.a", "again");
	t_eq(mfs_getxattr(fs, &tf_root, f, "user.a", NULL, 0), 5);
	t_eq(mfs_getxattr(fs, &tf_root, f, "user.a", buf, 4), -ERANGE);
	t_eq(mfs_getxattr(fs, &tf_root, f, "user.none", buf, sizeof(buf)), -ENODATA);
	t_eq(mfs_removexattr(fs, &tf_root, f, "user.none"), -ENODATA);
	t_ok(mfs_setxattr(fs, &tf_root, f, "user.empty", "", 0, 0));
	t_eq(mfs_getxattr(fs, &tf_root, f, "user.empty", buf, sizeof(buf)), 0);
	list_is(fs, &tf_root, f, "user.a\0user.b\0user.empty", 25);
	/* Names and sizes. */
	t_eq(mfs_setxattr(fs, &tf_root, f, "bogus.x", "y", 1, 0), -EOPNOTSUPP);
	t_eq(mfs_setxattr(fs, &tf_root, f, "system.other", "y", 1, 0), -EOPNOTSUPP);
	t_eq(mfs_setxattr(fs, &tf_root, f, "user.", "y", 1, 0), -EINVAL);
	memset(name, 'n', sizeof(name));
	memcpy(name, "user.", 5);
	name[255] = 0;
	t_ok(mfs_setxattr(fs, &tf_root, f, name, "long", 4, 0));
	name[255] = 'n';
	name[256] = 0;
	t_eq(mfs_setxattr(fs, &tf_root, f, name, "long", 4, 0), -ERANGE);
	t_eq(mfs_setxattr(fs, &tf_root, f, "user.huge", huge, 65537, 0), -E2BIG);
	t_eq(mfs_setxattr(fs, &tf_root, f, "user.big", big, bs, 0), -ENOSPC);
	/* A value that would fit neither place leaves the old one. */
	t_eq(mfs_setxattr(fs, &tf_root, f, "user.a", big, bs - 40, 0), -ENOSPC);
	expect(fs, f, "user.a", "again");
	/* Filling the block: ENOSPC, then everything still there. */
	{
		int i, err = 0;

		for (i = 0; i < 1000 && !err; i++) {
			snprintf(buf, sizeof(buf), "user.fill%d", i);
			err = mfs_setxattr(fs, &tf_root, f, buf, big, 100, XATTR_CREATE);
		}
		t_eq(err, -ENOSPC);
		t_assert(i > 2, "the block took only %d entries", i);
		fs = tf_mount((tf_unmount_check(fs, bd), bd));
		f = tf_ino(fs, "f");
		for (int k = 0; k < i - 1; k++) {
			snprintf(buf, sizeof(buf), "user.fill%d", k);
			t_eq(mfs_getxattr(fs, &tf_root, f, buf, NULL, 0), 100);
		}
		expect(fs, f, "user.a", "again");
	}
	tf_unmount_check(fs, bd);
	free(big);
	free(huge);
	printf("ok: calls (%u)\n", bs);
}

static const uint32_t grp1000[] = { 1000 }, grp2000[] = { 2000 };

static void who_may(struct mfs_fs *fs, struct bdev *bd)
{
	const struct mfs_cred user0 = { 1000, 1000, 0, 0, NULL };   /* no umask */
	uint64_t f, d, p, s, sd;
	struct stat st;
	char buf[64];

	f = mkfile(fs, &tf_user, MFS_ROOT_INO, "f", 0644);
	d = mkdir_(fs, &user0, MFS_ROOT_INO, "d", 0777);
	t_ok(mfs_mknod(fs, &tf_root, MFS_ROOT_INO, "p", S_IFIFO | 0666, 0, &st, NULL));
	p = st.st_ino;
	t_ok(mfs_symlink(fs, &tf_root, MFS_ROOT_INO, "s", "f", &st, NULL));
	s = st.st_ino;
	/* user.*: files and directories only, by their permissions. */
	t_eq(mfs_setxattr(fs, &tf_root, p, "user.x", "1", 1, 0), -EPERM);
	t_eq(mfs_getxattr(fs, &tf_root, p, "user.x", buf, sizeof(buf)), -ENODATA);
	t_eq(mfs_setxattr(fs, &tf_root, s, "user.x", "1", 1, 0), -EPERM);
	t_ok(mfs_setxattr(fs, &tf_root, p, "trusted.x", "1", 1, 0));
	t_ok(mfs_setxattr(fs, &tf_root, s, "security.x", "1", 1, 0));
	t_ok(mfs_setxattr(fs, &tf_user, f, "user.mine", "1", 1, 0));
	t_eq(mfs_setxattr(fs, &tf_other, f, "user.mine", "2", 1, 0), -EACCES);
	t_eq(mfs_removexattr(fs, &tf_other, f, "user.mine"), -EACCES);
	t_eq(mfs_getxattr(fs, &tf_other, f, "user.mine", buf, sizeof(buf)), 1);
	t_ok(mfs_setxattr(fs, &tf_other, d, "user.o", "1", 1, 0));
	sd = mkdir_(fs, &user0, MFS_ROOT_INO, "sticky", 01777);
	t_eq(mfs_setxattr(fs, &tf_other, sd, "user.o", "1", 1, 0), -EPERM);
	t_ok(mfs_setxattr(fs, &tf_user, sd, "user.o", "1", 1, 0));
	/* trusted.*: root's alone, not even listed for others. */
	t_ok(mfs_setxattr(fs, &tf_root, f, "trusted.t", "root", 4, 0));
	t_eq(mfs_setxattr(fs, &tf_user, f, "trusted.u", "x", 1, 0), -EPERM);
	t_eq(mfs_getxattr(fs, &tf_user, f, "trusted.t", buf, sizeof(buf)), -ENODATA);
	t_eq(mfs_removexattr(fs, &tf_user, f, "trusted.t"), -EPERM);
	list_is(fs, &tf_user, f, "user.mine", 10);
	list_is(fs, &tf_root, f, "user.mine\0trusted.t", 20);
	/* security.*: anybody reads, root changes. */
	t_eq(mfs_setxattr(fs, &tf_user, f, "security.x", "1", 1, 0), -EPERM);
	t_eq(mfs_getxattr(fs, &tf_user, s, "security.x", buf, sizeof(buf)), 1);
	/* The inodes that live in memory only take none. */
	t_eq(mfs_setxattr(fs, &tf_root, MFS_REGIONS_DIR_INO, "user.x", "1", 1, 0), -EPERM);
	t_eq(mfs_getxattr(fs, &tf_root, MFS_REGIONS_DIR_INO, "user.x", buf, sizeof(buf)),
	     -ENODATA);
	/* A region this filesystem has not is no inode at all. */
	t_eq(mfs_getxattr(fs, &tf_root, MFS_REGION_INO(0), "user.x", buf, sizeof(buf)),
	     -ENOENT);
	t_eq(mfs_setxattr(fs, &tf_root, MFS_CTL_DIR_INO, "user.x", "1", 1, 0), -EPERM);
	t_eq(mfs_removexattr(fs, &tf_root, MFS_STATS_INO, "user.x"), -EPERM);
	t_eq(mfs_getxattr(fs, &tf_root, MFS_STATS_INO, "user.x", buf, sizeof(buf)), -ENODATA);
	t_eq(mfs_listxattr(fs, &tf_root, MFS_CTL_DIR_INO, buf, sizeof(buf)), 0);
	tf_unmount_check(fs, bd);
	printf("ok: who may (%u)\n", bs);
}

/* ---- the block goes with the inode ------------------------------------------- */

static void freed(struct mfs_fs *fs, struct bdev *bd)
{
	uint64_t nfree, f;
	char *v = filled(300, 'q');
	struct mfs_file *fh;

	t_ok(mfs_sync(fs));
	nfree = free_blocks(fs);
	f = mkfile(fs, &tf_root, MFS_ROOT_INO, "f", 0644);
	set(fs, f, "user.big", v);
	t_ok(mfs_sync(fs));
	t_eq(free_blocks(fs), nfree - 1);
	t_ok(mfs_unlink(fs, &tf_root, MFS_ROOT_INO, "f"));
	t_ok(mfs_sync(fs));
	t_eq(free_blocks(fs), nfree);
	/* Open while unlinked: the orphan keeps it until its last close. */
	f = mkfile(fs, &tf_root, MFS_ROOT_INO, "g", 0644);
	set(fs, f, "user.big", v);
	t_ok(mfs_open(fs, &tf_root, f, O_RDONLY, &fh));
	t_ok(mfs_unlink(fs, &tf_root, MFS_ROOT_INO, "g"));
	t_ok(mfs_sync(fs));
	t_eq(free_blocks(fs), nfree - 1);
	t_ok(mfs_release(fs, fh));
	t_ok(mfs_sync(fs));
	t_eq(free_blocks(fs), nfree);
	tf_unmount_check(fs, bd);
	free(v);
	printf("ok: freed (%u)\n", bs);
}

/* ---- damage -------------------------------------------------------------------- */

/* Change inode @ino of the unmounted image with @fn, checksum kept right. */
static void edit_inode(struct bdev *bd, uint64_t ino, void (*fn)(struct mfs_inode *, uint32_t),
		       uint32_t arg)
{
	const struct mfs_group_desc *gd;
	struct fmt_raw raw;
	struct mfs_inode *in;
	uint32_t off;
	uint64_t blk;

	t_ok(fmt_raw_open(bd, &raw));
	t_ok(fmt_raw_gdesc(&raw, (uint32_t)(ino - 1) / le32toh(raw.sb.s_inodes_per_group), &gd));
	blk = fmt_inode_block(&raw.sb, le32toh(gd->bg_inode_table), (uint32_t)ino, &off);
	in = (void *)((uint8_t *)bdev_mem_data(bd) + blk * bs + off);
	fn(in, arg);
	in->i_checksum = htole32(fmt_inode_csum(&raw.sb, (uint32_t)ino, in));
	fmt_raw_close(&raw);
}

/* The inode flags as chattr(1) sets them. */
static void put_flags(struct mfs_inode *in, uint32_t flags)
{
	in->i_flags = htole32(flags);
}

static void set_flags(struct bdev *bd, uint64_t ino, uint32_t flags)
{
	edit_inode(bd, ino, put_flags, flags);
}

static char logged[4096];

static void sink(enum mlog_level level, const char *line, void *arg)
{
	(void)level;
	(void)arg;
	strncat(logged, line, sizeof(logged) - strlen(logged) - 2);
	strcat(logged, "\n");
}

static void long_entry(struct mfs_inode *in, uint32_t arg)
{
	(void)arg;
	in->i_xattr[1] = 200;           /* the first entry's name length */
}

static uint64_t xattr_block(struct bdev *bd, uint64_t ino)
{
	struct fmt_raw raw;
	struct mfs_inode in;
	uint64_t blk;

	t_ok(fmt_raw_open(bd, &raw));
	t_ok(fmt_raw_inode(&raw, (uint32_t)ino, &in));
	blk = le32toh(in.i_xattr_block);
	fmt_raw_close(&raw);
	return blk;
}

static void damaged(struct mfs_fs *fs, struct bdev *bd)
{
	uint64_t f = mkfile(fs, &tf_root, MFS_ROOT_INO, "f", 0644), blk;
	char *v = filled(300, 'd'), buf[512];

	set(fs, f, "user.big", v);
	set(fs, f, "user.small", "s");
	tf_unmount_check(fs, bd);
	blk = xattr_block(bd, f);
	t_assert(blk, "no xattr block");
	((uint8_t *)bdev_mem_data(bd))[blk * bs + 40] ^= 0x20;
	fs = tf_mount(bd);
	logged[0] = 0;
	mlog_set_sink(sink, NULL);
	t_eq(mfs_getxattr(fs, &tf_root, f, "user.big", buf, sizeof(buf)), -EUCLEAN);
	t_eq(mfs_getxattr(fs, &tf_root, f, "user.small", buf, sizeof(buf)), -EUCLEAN);
	t_eq(mfs_listxattr(fs, &tf_root, f, buf, sizeof(buf)), -EUCLEAN);
	t_eq(mfs_setxattr(fs, &tf_root, f, "user.new", "n", 1, 0), -EUCLEAN);
	/* A permission check that needs the ACL fails the same way. */
	t_eq(mfs_access(fs, &tf_user, f, R_OK), -EUCLEAN);
	mlog_set_sink(NULL, NULL);
	t_assert(strstr(logged, "xattr block") && strstr(logged, "checksum mismatch"),
		 "the log does not name the block: %s", logged);
	t_ok(mfs_unmount(fs));
	/* An in-inode entry running past the 84 bytes. */
	edit_inode(bd, f, long_entry, 0);
	fs = tf_mount_opts(bd, &(struct mfs_mount_opts){ .force = true });
	logged[0] = 0;
	mlog_set_sink(sink, NULL);
	t_eq(mfs_getxattr(fs, &tf_root, f, "user.small", buf, sizeof(buf)), -EUCLEAN);
	t_eq(mfs_listxattr(fs, &tf_root, f, buf, sizeof(buf)), -EUCLEAN);
	mlog_set_sink(NULL, NULL);
	t_assert(strstr(logged, "in-inode xattrs") && strstr(logged, "past the end"),
		 "the log does not say what is wrong: %s", logged);
	t_ok(mfs_unmount(fs));
	free(v);
	printf("ok: damaged block and in-inode entries (%u)\n", bs);
}

/* ---- ACLs ---------------------------------------------------------------------- */

/*
 * An ACL in user space's xattr form from acl(5)'s short text:
 * "u::rw-,u:1001:r--,g::r--,m::r--,o::---".
 */
static size_t acl_value(const char *text, uint8_t *out)
{
	size_t len = 4;
	uint32_t v = htole32(2);
	char *copy = strdup(text), *save = NULL;

	memcpy(out, &v, 4);
	for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		char *id = strchr(tok, ':') + 1, *perm = strchr(id, ':') + 1;
		uint16_t tag, p = (uint16_t)((perm[0] == 'r') * 4 + (perm[1] == 'w') * 2 +
					     (perm[2] == 'x'));
		uint32_t idv = *id == ':' ? UINT32_MAX : (uint32_t)atoi(id);

		switch (tok[0]) {
		case 'u': tag = *id == ':' ? 0x01 : 0x02; break;
		case 'g': tag = *id == ':' ? 0x04 : 0x08; break;
		case 'm': tag = 0x10; break;
		default: tag = 0x20;
		}
		tag = htole16(tag);
		p = htole16(p);
		idv = htole32(idv);
		memcpy(out + len, &tag, 2);
		memcpy(out + len + 2, &p, 2);
		memcpy(out + len + 4, &idv, 4);
		len += 8;
	}
	free(copy);
	return len;
}

static int set_acl(struct mfs_fs *fs, const struct mfs_cred *cr, uint64_t ino,
		   const char *name, const char *text)
{
	uint8_t v[256];
	size_t len = acl_value(text, v);

	return mfs_setxattr(fs, cr, ino, name, v, len, 0);
}

static void acl_is(struct mfs_fs *fs, uint64_t ino, const char *name, const char *text)
{
	uint8_t want[256], got[256];
	size_t len = acl_value(text, want);

	t_eq(mfs_getxattr(fs, &tf_root, ino, name, got, sizeof(got)), (ssize_t)len);
	t_assert(!memcmp(want, got, len), "%s is not %s", name, text);
}

static const uint32_t g1002[] = { 1002 }, g1000_1002[] = { 1000, 1002 };
static const struct mfs_cred c_owner = { 1000, 1000, 022, 0, NULL };
static const struct mfs_cred c_named = { 1001, 1001, 022, 0, NULL };
static const struct mfs_cred c_group = { 1003, 1003, 022, 1, grp1000 };
static const struct mfs_cred c_ngroup = { 1004, 1004, 022, 1, g1002 };
static const struct mfs_cred c_both = { 1006, 1006, 022, 2, g1000_1002 };
static const struct mfs_cred c_nobody = { 1005, 1005, 022, 0, NULL };

static const struct {
	const char *acl;
	mode_t mode;                 /* what setting it makes of 0644 */
	const struct mfs_cred *cr;
	int mask, want;
} table[] = {
	/* Named user, owning group and named group, all under mask r-x. */
#define A "u::rw-,u:1001:rw-,g::r--,g:1002:rwx,m::r-x,o::---"
	{ A, 0650, &c_owner, R_OK | W_OK, 0 },
	{ A, 0650, &c_owner, X_OK, -EACCES },
	{ A, 0650, &c_named, R_OK, 0 },
	{ A, 0650, &c_named, W_OK, -EACCES },    /* rw- masked to r-- */
	{ A, 0650, &c_group, R_OK, 0 },
	{ A, 0650, &c_group, X_OK, -EACCES },
	{ A, 0650, &c_ngroup, R_OK | X_OK, 0 },  /* rwx masked to r-x */
	{ A, 0650, &c_ngroup, W_OK, -EACCES },
	{ A, 0650, &c_both, X_OK, 0 },           /* the named group grants it */
	{ A, 0650, &c_both, W_OK, -EACCES },
	{ A, 0650, &c_nobody, R_OK, -EACCES },
	/* A matching group that does not grant: no fall back to other. */
#define B "u::rw-,u:1001:rw-,g::---,m::rwx,o::r--"
	{ B, 0674, &c_named, R_OK | W_OK, 0 },
	{ B, 0674, &c_group, R_OK, -EACCES },
	{ B, 0674, &c_nobody, R_OK, 0 },
	{ B, 0674, &c_nobody, W_OK, -EACCES },
	/* Mask ---: group bits clear, so the ACL is not consulted and the
	 * named user gets other's bits (Linux's generic_permission). */
#define C "u::rw-,u:1001:rwx,g::rw-,m::---,o::r--"
	{ C, 0604, &c_named, R_OK, 0 },
	{ C, 0604, &c_named, W_OK, -EACCES },
	{ C, 0604, &c_group, R_OK, -EACCES },  /* group bits --- before other's */
	/* Only the base entries: kept as the mode alone. */
#define D "u::rwx,g::r-x,o::--x"
	{ D, 0751, &c_group, R_OK | X_OK, 0 },
	{ D, 0751, &c_nobody, R_OK, -EACCES },
	{ D, 0751, &c_nobody, X_OK, 0 },
};

static void acl_checks(struct mfs_fs *fs, struct bdev *bd)
{
	char name[32];

	for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++) {
		uint64_t f;

		snprintf(name, sizeof(name), "f%zu", i);
		f = mkfile(fs, &c_owner, MFS_ROOT_INO, name, 0644);
		t_ok(set_acl(fs, &c_owner, f, "system.posix_acl_access", table[i].acl));
		t_eq(mode_of(fs, f), table[i].mode);
		t_assert(mfs_access(fs, table[i].cr, f, table[i].mask) == table[i].want,
			 "row %zu: uid %u mask %d: %d, not %d", i, table[i].cr->uid,
			 table[i].mask, mfs_access(fs, table[i].cr, f, table[i].mask),
			 table[i].want);
	}
	/* The same decisions after a remount, from the disk. */
	fs = tf_mount((tf_unmount_check(fs, bd), bd));
	for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++) {
		snprintf(name, sizeof(name), "f%zu", i);
		t_eq(mfs_access(fs, table[i].cr, tf_ino(fs, name), table[i].mask),
		     table[i].want);
	}
	t_eq(mfs_getxattr(fs, &tf_root, tf_ino(fs, "f0"), "system.posix_acl_access",
			  NULL, 0), 4 + 6 * 8);
	acl_is(fs, tf_ino(fs, "f0"), "system.posix_acl_access", A);
	t_eq(mfs_getxattr(fs, &tf_root, tf_ino(fs, "f19"), "system.posix_acl_access",
			  NULL, 0), -ENODATA);
	tf_unmount_check(fs, bd);
	printf("ok: ACL decisions (%u)\n", bs);
}

static void acl_rules(struct mfs_fs *fs, struct bdev *bd)
{
	uint64_t f = mkfile(fs, &tf_user, MFS_ROOT_INO, "f", 0644), l;
	struct mfs_setattr sa = { .valid = MFS_SET_MODE };
	const struct mfs_setattr chgrp = { .valid = MFS_SET_GID, .gid = 2000 };
	const struct mfs_cred in2000 = { 1000, 1000, 022, 1, grp2000 };
	struct stat st;
	char buf[64];

	/* Owner or root only; sane ACLs only; default ACLs on directories. */
	t_eq(set_acl(fs, &tf_other, f, "system.posix_acl_access", A), -EPERM);
	t_eq(set_acl(fs, &tf_user, f, "system.posix_acl_access", "u::rw-,g::r--"), -EINVAL);
	t_eq(set_acl(fs, &tf_user, f, "system.posix_acl_access",
		     "u::rw-,u:5:r--,g::r--,o::---"), -EINVAL);    /* no mask */
	t_eq(set_acl(fs, &tf_user, f, "system.posix_acl_access",
		     "u::rw-,u:7:r--,u:5:r--,g::r--,m::rwx,o::---"), -EINVAL);
	t_eq(set_acl(fs, &tf_user, f, "system.posix_acl_default", A), -EACCES);
	t_ok(mfs_removexattr(fs, &tf_user, f, "system.posix_acl_default"));
	t_ok(mfs_symlink(fs, &tf_root, MFS_ROOT_INO, "l", "f", &st, NULL));
	l = st.st_ino;
	t_eq(set_acl(fs, &tf_root, l, "system.posix_acl_access", A), -EOPNOTSUPP);
	t_eq(mfs_getxattr(fs, &tf_root, l, "system.posix_acl_access", buf, sizeof(buf)),
	     -EOPNOTSUPP);
	/* chmod carries the owner, mask and other bits into the ACL. */
	t_ok(set_acl(fs, &tf_user, f, "system.posix_acl_access", A));
	sa.mode = 0704;
	t_ok(mfs_setattr(fs, &tf_user, f, &sa, NULL));
	acl_is(fs, f, "system.posix_acl_access",
	       "u::rwx,u:1001:rw-,g::r--,g:1002:rwx,m::---,o::r--");
	t_eq(mfs_access(fs, &c_named, f, W_OK), -EACCES);
	sa.mode = 0670;
	t_ok(mfs_setattr(fs, &tf_user, f, &sa, NULL));
	t_eq(mfs_access(fs, &c_named, f, W_OK), 0);
	t_eq(mfs_access(fs, &c_nobody, f, R_OK), -EACCES);
	/* Removing the access ACL leaves the mode as it is. */
	t_ok(mfs_removexattr(fs, &tf_user, f, "system.posix_acl_access"));
	t_eq(mode_of(fs, f), 0670);
	t_eq(mfs_access(fs, &c_named, f, R_OK), -EACCES);
	/* Set-gid goes when the setter is outside the group (generic/375). */
	t_ok(mfs_setattr(fs, &tf_root, f, &chgrp, NULL));
	sa.mode = 02770;
	t_ok(mfs_setattr(fs, &tf_root, f, &sa, NULL));
	t_ok(set_acl(fs, &tf_user, f, "system.posix_acl_access", "u::rwx,g::r-x,o::---"));
	t_eq(mode_of(fs, f), 0750);
	t_ok(mfs_setattr(fs, &tf_root, f, &sa, NULL));
	t_ok(set_acl(fs, &in2000, f, "system.posix_acl_access", "u::rwx,g::r-x,o::---"));
	t_eq(mode_of(fs, f), 02750);
	t_ok(set_acl(fs, &tf_root, f, "system.posix_acl_access", "u::rwx,g::rwx,o::---"));
	t_eq(mode_of(fs, f), 02770);
	tf_unmount_check(fs, bd);
	printf("ok: ACL rules (%u)\n", bs);
}

#define DFLT "u::rwx,u:1001:rwx,g::r-x,m::rwx,o::---"

static void inherit(struct mfs_fs *fs, struct bdev *bd)
{
	const struct mfs_cred mask077 = { 1000, 1000, 077, 0, NULL };
	uint64_t d = mkdir_(fs, &tf_user, MFS_ROOT_INO, "d", 0755), f, sub, b;
	struct stat st;

	t_ok(set_acl(fs, &tf_user, d, "system.posix_acl_default", DFLT));
	/* The default ACL masks the mode; the umask does not count. */
	f = mkfile(fs, &tf_user, d, "f", 0666);
	t_eq(mode_of(fs, f), 0660);
	acl_is(fs, f, "system.posix_acl_access", "u::rw-,u:1001:rwx,g::r-x,m::rw-,o::---");
	t_eq(mfs_access(fs, &c_named, f, W_OK), 0);
	t_eq(mfs_access(fs, &c_named, f, X_OK), -EACCES);
	t_eq(mfs_getxattr(fs, &tf_root, f, "system.posix_acl_default", NULL, 0), -ENODATA);
	sub = mkdir_(fs, &mask077, d, "sub", 0777);
	t_eq(mode_of(fs, sub), 0770);
	acl_is(fs, sub, "system.posix_acl_access", DFLT);
	acl_is(fs, sub, "system.posix_acl_default", DFLT);
	/* ... and down again from the inherited default. */
	f = mkfile(fs, &mask077, sub, "g", 0640);
	t_eq(mode_of(fs, f), 0640);
	acl_is(fs, f, "system.posix_acl_access", "u::rw-,u:1001:rwx,g::r-x,m::r--,o::---");
	t_ok(mfs_symlink(fs, &tf_user, d, "l", "f", &st, NULL));
	mfs_forget(fs, st.st_ino, 1);
	t_eq(st.st_mode & 0777, 0777);
	/* A default of the base entries only: the mode, no access ACL. */
	b = mkdir_(fs, &tf_user, MFS_ROOT_INO, "b", 0755);
	t_ok(set_acl(fs, &tf_user, b, "system.posix_acl_default", "u::rwx,g::r-x,o::r-x"));
	f = mkfile(fs, &mask077, b, "f", 0666);
	t_eq(mode_of(fs, f), 0644);
	t_eq(mfs_getxattr(fs, &tf_root, f, "system.posix_acl_access", NULL, 0), -ENODATA);
	/* Without a default ACL the umask applies. */
	f = mkfile(fs, &mask077, MFS_ROOT_INO, "plain", 0666);
	t_eq(mode_of(fs, f), 0600);
	fs = tf_mount((tf_unmount_check(fs, bd), bd));
	acl_is(fs, tf_ino(fs, "d/sub/g"), "system.posix_acl_access",
	       "u::rw-,u:1001:rwx,g::r-x,m::r--,o::---");
	tf_unmount_check(fs, bd);
	printf("ok: inheritance (%u)\n", bs);
}

/* Immutable and append-only inodes take no xattr change, root's neither. */
static void flags(struct mfs_fs *fs, struct bdev *bd)
{
	uint64_t i = mkfile(fs, &tf_root, MFS_ROOT_INO, "i", 0644);
	uint64_t a = mkfile(fs, &tf_root, MFS_ROOT_INO, "a", 0644);
	char buf[8];

	set(fs, i, "user.x", "1");
	set(fs, a, "user.x", "1");
	tf_unmount_check(fs, bd);
	set_flags(bd, i, MFS_IMMUTABLE_FL);
	set_flags(bd, a, MFS_APPEND_FL);
	fs = tf_mount(bd);
	for (uint64_t f = i; f <= a; f++) {
		t_eq(mfs_setxattr(fs, &tf_root, f, "user.y", "1", 1, 0), -EPERM);
		t_eq(mfs_removexattr(fs, &tf_root, f, "user.x"), -EPERM);
		t_eq(set_acl(fs, &tf_root, f, "system.posix_acl_access", A), -EPERM);
		t_eq(mfs_getxattr(fs, &tf_root, f, "user.x", buf, sizeof(buf)), 1);
	}
	tf_unmount_check(fs, bd);
	printf("ok: immutable and append-only (%u)\n", bs);
}

/* A full filesystem takes what fits in the inode, and no block. */
static void full(struct mfs_fs *fs, struct bdev *bd)
{
	uint64_t f = mkfile(fs, &tf_root, MFS_ROOT_INO, "f", 0644);
	uint64_t g = mkfile(fs, &tf_root, MFS_ROOT_INO, "filler", 0644);
	char *v = filled(300, 'f'), *chunk = filled(1 << 16, 'c');
	struct mfs_file *fh;
	uint64_t off = 0, spare[64];
	char name[16];
	ssize_t n;

	for (int i = 0; i < 64; i++) {
		snprintf(name, sizeof(name), "s%d", i);
		spare[i] = mkfile(fs, &tf_root, MFS_ROOT_INO, name, 0644);
	}
	t_ok(mfs_open(fs, &tf_root, g, O_WRONLY, &fh));
	while ((n = mfs_write(fs, &tf_root, fh, chunk, 1 << 16, off, 0)) > 0)
		off += (uint64_t)n;
	t_eq(n, -ENOSPC);
	t_ok(mfs_release(fs, fh));
	/* The last few blocks, an xattr block each. */
	for (int i = 0, err = 0; !err; i++) {
		t_assert(i < 64, "still room after 64 xattr blocks");
		err = mfs_setxattr(fs, &tf_root, spare[i], "user.big", v, 300, 0);
		t_assert(!err || err == -ENOSPC, "setxattr: %d", err);
	}
	t_eq(free_blocks(fs), 0);
	t_eq(mfs_setxattr(fs, &tf_root, f, "user.big", v, 300, 0), -ENOSPC);
	set(fs, f, "user.small", "fits in the inode");
	t_ok(set_acl(fs, &tf_root, f, "system.posix_acl_access", A));
	expect(fs, f, "user.small", "fits in the inode");
	t_eq(blocks_of(fs, f), 0);
	t_ok(mfs_unlink(fs, &tf_root, MFS_ROOT_INO, "filler"));
	t_ok(mfs_sync(fs));
	set(fs, f, "user.big", v);
	tf_unmount_check(fs, bd);
	free(v);
	free(chunk);
	printf("ok: a full filesystem (%u)\n", bs);
}

/* ---- a check while the ACL changes ---------------------------------------------- */

struct race {
	struct mfs_fs *fs;
	uint64_t f;
	atomic_bool stop;
};

static void *toggle(void *arg)
{
	struct race *r = arg;

	for (int i = 0; i < 300; i++) {
		t_ok(set_acl(r->fs, &c_owner, r->f, "system.posix_acl_access", B));
		t_ok(mfs_removexattr(r->fs, &c_owner, r->f, "system.posix_acl_access"));
	}
	atomic_store(&r->stop, true);
	return NULL;
}

/* The cached ACL is never a stale one kept past a change: with the ACL
 * the named user may write, without it (mode 674: other r--) not, and
 * once the changes stop the answer is the last one's. */
static void racing(struct mfs_fs *fs, struct bdev *bd)
{
	struct race r = { fs, mkfile(fs, &c_owner, MFS_ROOT_INO, "f", 0644), false };
	unsigned long yes = 0, no = 0;
	pthread_t t;

	t_eq(pthread_create(&t, NULL, toggle, &r), 0);
	while (!atomic_load(&r.stop)) {
		int err = mfs_access(fs, &c_named, r.f, W_OK);
		char buf[64];
		ssize_t len = mfs_getxattr(fs, &tf_root, r.f, "system.posix_acl_access",
					   buf, sizeof(buf));

		t_assert(err == 0 || err == -EACCES, "access: %d", err);
		t_assert(len == 44 || len == -ENODATA, "getxattr: %zd", len);
		err ? no++ : yes++;
	}
	t_eq(pthread_join(t, NULL), 0);
	t_eq(mfs_access(fs, &c_named, r.f, W_OK), -EACCES);
	t_ok(set_acl(fs, &c_owner, r.f, "system.posix_acl_access", B));
	t_eq(mfs_access(fs, &c_named, r.f, W_OK), 0);
	tf_unmount_check(fs, bd);
	printf("ok: checks while the ACL changes (%lu allowed, %lu refused) (%u)\n", yes,
	       no, bs);
}

/* Two ACLs that refuse c_group write while its group bits (the mask)
 * would allow it: the small one fits in the inode beside user.x, the
 * large one does not. */
#define ACL_S "u::rw-,u:1003:r--,g::rwx,m::rwx,o::r--"
#define ACL_L "u::rw-,u:1003:r--,u:2001:r--,u:2002:r--,u:2003:r--,u:2004:r--," \
	      "u:2005:r--,g::rwx,m::rwx,o::r--"

static void *move_acl(void *arg)
{
	struct race *r = arg;

	for (int i = 0; i < 2000; i++) {
		t_ok(set_acl(r->fs, &c_owner, r->f, "system.posix_acl_access", ACL_L));
		t_ok(set_acl(r->fs, &c_owner, r->f, "system.posix_acl_access", ACL_S));
	}
	atomic_store(&r->stop, true);
	return NULL;
}

/* An ACL moving between the inode and the block (which keeps another
 * entry) is seen in one place or the other by a check that reads it
 * from the disk, never in neither: that would grant by the group bits. */
static void moving(struct mfs_fs *fs, struct bdev *bd)
{
	struct race r = { fs, mkfile(fs, &c_owner, MFS_ROOT_INO, "f", 0664), false };
	char *big = filled(200, 'y');
	unsigned long checks = 0;
	pthread_t t;

	set(fs, r.f, "user.x", "twenty bytes of text");
	set(fs, r.f, "user.y", big);
	t_ok(set_acl(fs, &c_owner, r.f, "system.posix_acl_access", ACL_S));
	t_eq(pthread_create(&t, NULL, move_acl, &r), 0);
	while (!atomic_load(&r.stop)) {
		t_eq(mfs_access(fs, &c_group, r.f, W_OK), -EACCES);
		checks++;
	}
	t_eq(pthread_join(t, NULL), 0);
	tf_unmount_check(fs, bd);
	free(big);
	printf("ok: %lu checks while the ACL moves between inode and block (%u)\n",
	       checks, bs);
}

/* One image of @bytes for @fn: everybody's files go in the root. */
static void one(void (*fn)(struct mfs_fs *, struct bdev *), uint64_t bytes)
{
	struct bdev *bd = tf_mkfs(bs, bytes);
	struct mfs_fs *fs = tf_mount(bd);
	const struct mfs_setattr open_root = { .valid = MFS_SET_MODE, .mode = 0777 };

	t_ok(mfs_setattr(fs, &tf_root, MFS_ROOT_INO, &open_root, NULL));
	fn(fs, bd);
	bdev_close(bd);
}

/* @fn at 1 KiB blocks, then at 4 KiB blocks. */
static void each(void (*fn)(struct mfs_fs *, struct bdev *), uint64_t bytes)
{
	static const uint32_t sizes[] = { 1024, 4096 };

	for (unsigned i = 0; i < 2; i++) {
		bs = sizes[i];
		one(fn, bytes);
	}
}

static void test_placement(void) { each(placement, 16u << 20); }
static void test_calls(void) { each(calls, 16u << 20); }
static void test_who_may(void) { each(who_may, 16u << 20); }
static void test_freed(void) { each(freed, 16u << 20); }
static void test_damaged(void) { each(damaged, 16u << 20); }
static void test_acl_checks(void) { each(acl_checks, 16u << 20); }
static void test_acl_rules(void) { each(acl_rules, 16u << 20); }
static void test_inherit(void) { each(inherit, 16u << 20); }
static void test_flags(void) { each(flags, 16u << 20); }
static void test_racing(void) { each(racing, 16u << 20); }
static void test_full(void) { each(full, 8u << 20); }
static void test_moving(void) { each(moving, 16u << 20); }

T_MAIN(T_CASE(test_placement),
       T_CASE(test_calls),
       T_CASE(test_who_may),
       T_CASE(test_freed),
       T_CASE(test_damaged),
       T_CASE(test_acl_checks),
       T_CASE(test_acl_rules),
       T_CASE(test_inherit),
       T_CASE(test_flags),
       T_CASE(test_racing),
       T_CASE(test_full),
       T_CASE(test_moving))
