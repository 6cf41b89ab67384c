/*
 * mkfs.miscfs - create a miscfs filesystem on an image file or device.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fmt.h"
#include "tools.h"
#include "util.h"

static const char usage_text[] =
"Usage: mkfs.miscfs [options] IMAGE [SIZE]\n"
"\n"
"Create a miscfs filesystem on IMAGE, an image file, a block device or an\n"
"NBD export (nbd://HOST/EXPORT, nbd+unix:///EXPORT?socket=PATH).\n"
"With SIZE, an image file is created (or resized) to SIZE bytes first.\n"
"Sizes take the suffixes K, M, G and T (powers of 1024).\n"
"\n"
"Options:\n"
"  -b SIZE        block size: 1024, 2048 or 4096 (default 4096)\n"
"  -N COUNT       number of inodes\n"
"  -i BYTES       bytes per inode (default 16384; 4096 below 512M)\n"
"  -L LABEL       volume label, up to 32 bytes\n"
"  -U UUID        filesystem UUID (xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx)\n"
"  -J SIZE        journal size (also -J size=SIZE); at least 1024 blocks\n"
"  -R NAME:SIZE   reserve a region of SIZE bytes named NAME (repeatable);\n"
"                 NAME is 1-31 characters of [A-Za-z0-9._-], not . or ..\n"
"  -o OPTS        defaults stored for the mount, comma-separated:\n"
"                 data=ordered|journal|writeback, errors=continue|remount-ro\n"
"  -O FEATURES    features on (NAME) or off (^NAME), comma-separated:\n"
"                 mmp: multi-mount protection, on by default for an NBD\n"
"                 export, off for files and devices\n"
"                 dir_index: a hashed index on the disk for each directory\n"
"                 past one block (on by default)\n"
"  -E OPTS        extended options, comma-separated:\n"
"                 lazy_journal_init[=0|1]: leave the journal sparse in an\n"
"                 image file (by default it is allocated on the host)\n"
"                 mmp_update_interval=SECONDS: how often the MMP block is\n"
"                 stamped (1-300, default 5); mounts wait 2x this + 1 s\n"
"  -F             force: overwrite an existing filesystem\n"
"  -q             quiet\n"
"  -h             this help\n"
"  -V             version\n"
"\n"
"Exit status: 0 success, 1 failure (one line on stderr names the problem).\n";

struct mkfs_args {
	struct fmt_mkfs_opts o;
	const char *image;
	uint64_t size;          /* 0: use the target's size */
	bool force, quiet;
	bool lazy_journal;      /* -E lazy_journal_init: no journal allocation */
	int mmp;                /* -O mmp: 1, -O ^mmp: 0, neither: -1 */
	int fd;                 /* the target, while mkfs runs */
};

static int parse_uuid(const char *s, uint8_t out[16])
{
	unsigned n = 0;

	for (; *s && n < 32; s++) {
		if (*s == '-')
			continue;
		if (!isxdigit((unsigned char)*s))
			return -EINVAL;
		int v = isdigit((unsigned char)*s) ? *s - '0' : tolower(*s) - 'a' + 10;
		out[n / 2] = (uint8_t)(n % 2 ? (out[n / 2] | v) : (v << 4));
		n++;
	}
	return (n == 32 && !*s) ? 0 : -EINVAL;
}

static int parse_region(const char *arg, struct fmt_mkfs_opts *o)
{
	const char *colon = strchr(arg, ':');
	size_t len = colon ? (size_t)(colon - arg) : 0;
	struct fmt_region_spec *r;

	if (!colon || len == 0 || len >= MFS_REGION_NAME_LEN)
		return tool_fail("region '%s': expected NAME:SIZE with a name of "
				 "1-%u characters", arg, MFS_REGION_NAME_LEN - 1);
	for (size_t i = 0; i < len; i++)
		if (!isalnum((unsigned char)arg[i]) && !strchr("._-", arg[i]))
			return tool_fail("region '%s': the name may hold only "
					 "[A-Za-z0-9._-]", arg);
	/* The region is the file /.regions/NAME: "." and ".." name no file. */
	if ((len == 1 && arg[0] == '.') || (len == 2 && !strncmp(arg, "..", 2)))
		return tool_fail("region '%s': '.' and '..' cannot name a region", arg);
	if (o->nregions >= FMT_MAX_REGIONS_ARG)
		return tool_fail("too many regions (at most %d)", FMT_MAX_REGIONS_ARG);
	r = &o->regions[o->nregions];
	memset(r->name, 0, sizeof(r->name));
	memcpy(r->name, arg, len);
	if (ut_parse_size(colon + 1, &r->bytes) || !r->bytes)
		return tool_fail("region '%s': '%s' is not a size", arg, colon + 1);
	o->nregions++;
	return 0;
}

/* One default of -o: data=MODE or errors=BEHAVIOUR. */
static int parse_default(const char *opt, struct mkfs_args *a)
{
	struct fmt_mkfs_opts *o = &a->o;
	static const struct { const char *name; bool data; uint32_t v; } known[] = {
		{ "data=ordered", true, MFS_DEFM_DATA_ORDERED },
		{ "data=journal", true, MFS_DEFM_DATA_JOURNAL },
		{ "data=writeback", true, MFS_DEFM_DATA_WRITEBACK },
		{ "errors=continue", false, MFS_ERRORS_CONTINUE },
		{ "errors=remount-ro", false, MFS_ERRORS_RO },
	};

	for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++) {
		if (strcmp(opt, known[i].name))
			continue;
		if (known[i].data)
			o->default_mount_opts = (o->default_mount_opts & ~MFS_DEFM_DATA_MASK) |
						known[i].v;
		else
			o->errors = (uint16_t)known[i].v;
		return 0;
	}
	return tool_fail("-o %s: unknown (data=ordered|journal|writeback, "
			 "errors=continue|remount-ro)", opt);
}

/* Each item of the comma-separated list @arg (-o, -O, -E) through @one. */
static int parse_list(const char *arg, int (*one)(const char *t, struct mkfs_args *a),
		      struct mkfs_args *a)
{
	char *copy = strdup(arg), *save = NULL;
	int err = copy ? 0 : -ENOMEM;

	for (char *t = copy ? strtok_r(copy, ",", &save) : NULL; t && !err;
	     t = strtok_r(NULL, ",", &save))
		err = one(t, a);
	free(copy);
	return err;
}

static int parse_mmp_interval(const char *v, struct mkfs_args *a)
{
	uint64_t s;

	if (ut_parse_size(v, &s) || s < 1 || s > MFS_MMP_INTERVAL_MAX)
		return tool_fail("-E mmp_update_interval=%s: not a number of seconds "
				 "from 1 to %u", v, MFS_MMP_INTERVAL_MAX);
	a->o.mmp_interval = (uint16_t)s;
	return 0;
}

/* One feature of -O, named as mke2fs names it. */
static int parse_feature(const char *t, struct mkfs_args *a)
{
	if (!strcmp(t, "mmp"))
		a->mmp = 1;
	else if (!strcmp(t, "^mmp"))
		a->mmp = 0;
	else if (!strcmp(t, "dir_index"))
		a->o.dir_index = true;
	else if (!strcmp(t, "^dir_index"))
		a->o.dir_index = false;
	else
		return tool_fail("-O %s: unknown feature (mmp, dir_index, ^NAME)", t);
	return 0;
}

/* One extended option of -E; lazy_journal_init is named as mke2fs names it. */
static int parse_extended(const char *t, struct mkfs_args *a)
{
	if (!strcmp(t, "lazy_journal_init") || !strcmp(t, "lazy_journal_init=1"))
		a->lazy_journal = true;
	else if (!strcmp(t, "lazy_journal_init=0"))
		a->lazy_journal = false;
	else if (!strncmp(t, "mmp_update_interval=", 20))
		return parse_mmp_interval(t + 20, a);
	else
		return tool_fail("-E %s: unknown (lazy_journal_init[=0|1], "
				 "mmp_update_interval=SECONDS)", t);
	return 0;
}

static int parse_opt(int c, const char *arg, struct mkfs_args *a)
{
	uint64_t v;

	switch (c) {
	case 'b':
		if (ut_parse_size(arg, &v) || v > UINT32_MAX)
			return tool_fail("block size '%s' is not a number", arg);
		a->o.block_size = (uint32_t)v;
		return 0;
	case 'N':
	case 'i':
		if (ut_parse_size(arg, &v) || !v || v > UINT32_MAX)
			return tool_fail("-%c '%s' is not a positive number", c, arg);
		*(c == 'N' ? &a->o.inodes : &a->o.bytes_per_inode) = (uint32_t)v;
		return 0;
	case 'L':
		if (strlen(arg) > MFS_LABEL_LEN)
			return tool_fail("label '%s' is longer than %u bytes", arg,
					 MFS_LABEL_LEN);
		strcpy(a->o.label, arg);
		return 0;
	case 'U':
		if (parse_uuid(arg, a->o.uuid))
			return tool_fail("'%s' is not a UUID", arg);
		a->o.uuid_set = true;
		return 0;
	case 'J':
		if (!strncmp(arg, "size=", 5))
			arg += 5;
		if (ut_parse_size(arg, &a->o.journal_bytes) || !a->o.journal_bytes)
			return tool_fail("journal size '%s' is not a size", arg);
		return 0;
	case 'R':
		return parse_region(arg, &a->o);
	case 'o':
		return parse_list(arg, parse_default, a);
	case 'E':
		return parse_list(arg, parse_extended, a);
	case 'O':
		return parse_list(arg, parse_feature, a);
	case 'F': a->force = true; return 0;
	case 'q': a->quiet = true; return 0;
	}
	return -EINVAL;
}

static int parse_args(int argc, char **argv, struct mkfs_args *a)
{
	int c, err;

	while ((c = getopt(argc, argv, "b:N:i:L:U:J:R:o:E:O:Fqh?V")) != -1) {
		if (c == 'h' || c == '?') {
			fputs(usage_text, c == 'h' ? stdout : stderr);
			exit(c == 'h' ? 0 : 1);
		}
		if (c == 'V') {
			printf("mkfs.miscfs %s\n", MISCFS_VERSION);
			exit(0);
		}
		err = parse_opt(c, optarg, a);
		if (err)
			return err;
	}
	if (optind >= argc || argc - optind > 2)
		return tool_fail("expected IMAGE [SIZE]; see mkfs.miscfs -h");
	a->image = argv[optind];
	if (optind + 1 < argc && (ut_parse_size(argv[optind + 1], &a->size) || !a->size))
		return tool_fail("size '%s' is not a size", argv[optind + 1]);
	return 0;
}

/* The bytes existing_fs() looks at: the signatures' offsets lie in them. */
#define HEAD_BYTES (72u << 10)

/* Known signatures at fixed offsets of the first HEAD_BYTES of a target,
 * so mkfs does not silently destroy an existing filesystem. */
static const char *existing_fs(const char *head)
{
	static const struct { uint64_t off; const char *magic; size_t len; const char *name; } sigs[] = {
		{ 1024, "MFS1", 4, "miscfs" },
		{ 1080, "\x53\xef", 2, "ext2/3/4" },
		{ 0, "XFSB", 4, "xfs" },
		{ 65600, "_BHRfS_M", 8, "btrfs" },
		{ 4086, "SWAPSPACE2", 10, "swap" },
		{ 3, "NTFS    ", 8, "ntfs" },
		{ 82, "FAT32   ", 8, "vfat" },
	};

	for (size_t i = 0; i < UT_ARRAY_SIZE(sigs); i++)
		if (!memcmp(head + sigs[i].off, sigs[i].magic, sigs[i].len))
			return sigs[i].name;
	return NULL;
}

/* existing_fs() of what -F does not force: an error if one is found. */
static int refuse_existing(const struct mkfs_args *a, const char *head)
{
	const char *fs = existing_fs(head);

	if (fs && !a->force)
		return tool_fail("%s already holds a %s filesystem; use -F to "
				 "overwrite it", a->image, fs);
	return 0;
}

/* refuse_existing() of an image file or block device. */
static int check_file_head(const struct mkfs_args *a, int fd)
{
	char *head = calloc(1, HEAD_BYTES);
	size_t got = 0;
	ssize_t n = 0;
	int err;

	if (!head)
		return tool_fail("out of memory");
	while (got < HEAD_BYTES &&
	       ((n = pread(fd, head + got, HEAD_BYTES - got, (off_t)got)) > 0 ||
		(n < 0 && errno == EINTR)))
		got += n > 0 ? (size_t)n : 0;
	err = n < 0 ? tool_fail("cannot read %s: %s", a->image, strerror(errno)) :
	      refuse_existing(a, head);
	free(head);
	return err;
}

/* refuse_existing() of an NBD export (at most its first HEAD_BYTES). */
static int check_bdev_head(const struct mkfs_args *a, struct bdev *bd)
{
	size_t len = (size_t)UT_MIN(bd->size, HEAD_BYTES);
	char *head = bdev_alloc_buf(HEAD_BYTES);
	int err;

	if (!head)
		return tool_fail("out of memory");
	memset(head, 0, HEAD_BYTES);
	err = bdev_read(bd, 0, head, len);
	err = err ? tool_fail("cannot read %s: %s", a->image, strerror(-err)) :
	      refuse_existing(a, head);
	bdev_free_buf(head);
	return err;
}

/* Open the target, refusing one that is mounted or holds a filesystem. */
static int open_target(struct mkfs_args *a, bool *is_file)
{
	struct stat st;
	const char *where;
	int fd = open(a->image, O_RDWR | O_CLOEXEC), err;

	if (fd < 0 && errno == ENOENT && a->size)
		fd = open(a->image, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	else if (fd < 0 && errno == ENOENT)
		return tool_fail("%s does not exist; give a SIZE to create it", a->image);
	if (fd < 0)
		return tool_fail("cannot open %s: %s", a->image, strerror(errno));
	if (fstat(fd, &st) || (!S_ISREG(st.st_mode) && !S_ISBLK(st.st_mode))) {
		close(fd);
		return tool_fail("%s is neither a regular file nor a block device", a->image);
	}
	*is_file = S_ISREG(st.st_mode);
	where = tool_mounted_on(a->image);
	if (where || flock(fd, LOCK_EX | LOCK_NB)) {
		close(fd);
		if (where)
			return tool_fail("%s is mounted on %s", a->image, where);
		return tool_fail("%s is in use by another process (mounted?)", a->image);
	}
	err = check_file_head(a, fd);
	if (err) {
		close(fd);
		return err;
	}
	return fd;
}

/* An image file is emptied and regrown: every byte then reads zero, and
 * mkfs need not write the inode tables. */
static int size_target(struct mkfs_args *a, int fd, bool is_file)
{
	struct stat st;

	if (!is_file) {
		if (a->size)
			return tool_fail("SIZE is only for image files; %s is a "
					 "block device", a->image);
		return 0;
	}
	if (fstat(fd, &st))
		return tool_fail("%s: %s", a->image, strerror(errno));
	if (!a->size)
		a->size = (uint64_t)st.st_size;
	if (!a->size)
		return tool_fail("%s is empty; give a SIZE to create the image", a->image);
	if (ftruncate(fd, 0) || ftruncate(fd, (off_t)a->size))
		return tool_fail("cannot size %s to %" PRIu64 " bytes: %s", a->image,
				 a->size, strerror(errno));
	a->o.zeroed = true;
	return 0;
}

/* Zeros over [off, off + len) of @fd, for a host without fallocate. */
static int write_zeros(int fd, uint64_t off, uint64_t len)
{
	static const char zero[1 << 16];
	ssize_t n;

	while (len) {
		n = pwrite(fd, zero, (size_t)UT_MIN(len, sizeof(zero)), (off_t)off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? errno : EIO;
		off += (uint64_t)n;
		len -= (uint64_t)n;
	}
	return 0;
}

/*
 * fmt_mkfs_opts.reserve for an image file: the journal and the regions
 * get their blocks on the host now, so that no write there depends on the
 * host's free space -- a host that fills up then fails file data and
 * metadata on their way home, never the log, and never a store into a
 * region's shared mapping (which would be SIGBUS).  fallocate, as mke2fs's
 * zeroing of its journal allocates it on an ext4 host; zeros where the
 * host has no fallocate (nothing is written there yet: zeros change
 * nothing).
 */
static int reserve_range(void *arg, enum fmt_reserve what, uint64_t off, uint64_t len)
{
	struct mkfs_args *a = arg;
	const char *name = what == FMT_RESERVE_JOURNAL ? "the journal" :
			   "the reserved regions";
	int err;

	if (what == FMT_RESERVE_JOURNAL && a->lazy_journal)
		return 0;
	do
		err = fallocate(a->fd, 0, (off_t)off, (off_t)len) ? errno : 0;
	while (err == EINTR);
	if (err == EOPNOTSUPP)
		err = write_zeros(a->fd, off, len);
	if (err == ENOSPC || err == EDQUOT)
		return tool_fail("%s: the host has no room for %s (%s)%s", a->image,
				 name, strerror(err), what == FMT_RESERVE_JOURNAL ?
				 "; -E lazy_journal_init leaves it sparse" : "");
	if (err)
		return tool_fail("%s: cannot allocate %s on the host: %s", a->image,
				 name, strerror(err));
	return 0;
}

static void print_summary(const struct mkfs_args *a, struct bdev *bd)
{
	struct fmt_raw raw;
	char buf[32];

	if (fmt_raw_open(bd, &raw))
		return;
	printf("Created a miscfs filesystem on %s\n", a->image);
	printf("  %" PRIu64 " blocks of %" PRIu32 " bytes (%s), %" PRIu32 " inodes, "
	       "%" PRIu32 " groups\n", le64toh(raw.sb.s_blocks_count), raw.bs,
	       ut_format_size(le64toh(raw.sb.s_blocks_count) * raw.bs, buf, sizeof(buf)),
	       le32toh(raw.sb.s_inodes_count), le32toh(raw.sb.s_groups_count));
	printf("  journal: %" PRIu32 " blocks%s\n", le32toh(raw.sb.s_journal_blocks),
	       a->o.reserve && a->lazy_journal ? " (sparse in the image)" : "");
	printf("  superblock backups in groups:");
	for (uint32_t g = 1; g < le32toh(raw.sb.s_groups_count); g++)
		if (fmt_group_has_super(g))
			printf(" %" PRIu32, g);
	printf("\n");
	for (unsigned i = 0; i < a->o.nregions; i++)
		printf("  region %s: %s\n", a->o.regions[i].name,
		       ut_format_size(a->o.regions[i].bytes, buf, sizeof(buf)));
	fmt_raw_close(&raw);
}

static int format(struct mkfs_args *a, struct bdev *bd)
{
	int err = fmt_mkfs(bd, &a->o);

	if (!err && !a->quiet)
		print_summary(a, bd);
	bdev_close(bd);
	return err;
}

/* An NBD export: its size is the server's, and there is no file to lock
 * against a daemon or tool using it meanwhile. */
static int run_remote(struct mkfs_args *a, const struct bdev_open_opts *bo)
{
	struct bdev *bd;
	int err;

	if (a->size)
		return tool_fail("SIZE is only for image files; %s is an NBD export",
				 a->image);
	err = bdev_open(a->image, bo, &bd);
	if (err)
		return err;
	err = check_bdev_head(a, bd);
	if (err) {
		bdev_close(bd);
		return err;
	}
	return format(a, bd);
}

static int run(struct mkfs_args *a)
{
	struct bdev_open_opts bo = { .block_size = a->o.block_size ? a->o.block_size : 4096 };
	struct bdev *bd;
	bool is_file = false;
	int fd, err;

	if (bo.block_size != 1024 && bo.block_size != 2048 && bo.block_size != 4096)
		return tool_fail("block size %" PRIu32 " is not supported (use 1024, "
				 "2048 or 4096)", bo.block_size);
	/* An export is what other hosts reach too: protected unless told. */
	a->o.mmp = a->mmp < 0 ? bdev_is_remote(a->image) : a->mmp;
	if (a->o.mmp_interval && !a->o.mmp)
		return tool_fail("-E mmp_update_interval needs multi-mount protection "
				 "(-O mmp)");
	if (bdev_is_remote(a->image))
		return run_remote(a, &bo);
	fd = open_target(a, &is_file);
	if (fd < 0)
		return fd;
	err = size_target(a, fd, is_file);
	a->fd = fd;
	if (is_file) {
		a->o.reserve = reserve_range;
		a->o.reserve_arg = a;
	}
	if (!err)
		err = bdev_open(a->image, &bo, &bd);
	if (!err)
		err = format(a, bd);
	close(fd);      /* drops the lock only now: no one raced the format */
	return err;
}

int main(int argc, char **argv)
{
	struct mkfs_args a = { .mmp = -1, .o.dir_index = true };

	mlog_set_ident("mkfs.miscfs");
	if (parse_args(argc, argv, &a))
		return 1;
	return run(&a) ? 1 : 0;
}
