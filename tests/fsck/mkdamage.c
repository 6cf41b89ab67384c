/*
 * mkdamage - makes the corruption corpus fsck.miscfs is tested against:
 * a populated image with a manifest, then one kind of damage done on
 * purpose on its bytes, then a check that every file the damage did not
 * touch came through the repair.  See tests/fsck/README.md.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mkdamage.h"
#include "t_fs.h"
#include "util.h"

static const char usage_text[] =
"Usage: mkdamage populate IMAGE [--seed S] [--block-size 1024|4096]\n"
"       mkdamage damage IMAGE KIND [--seed S]\n"
"       mkdamage kinds\n"
"       mkdamage verify IMAGE\n"
"       mkdamage check IMAGE\n"
"\n"
"populate  a fresh 16 MiB image filled through the filesystem, and\n"
"          IMAGE.manifest listing every file with a hash of its contents\n"
"damage    one kind of damage on the image's bytes; one line per change on\n"
"          stdout; IMAGE.damaged lists the files it may lose or alter\n"
"kinds     the kinds, one line each\n"
"verify    every manifest file not in IMAGE.damaged is still there, whole\n"
"          (mounted read-only; exit 1 naming the differences)\n"
"check     the tests' check of an unmounted image: marked clean, and\n"
"          fsck -fn finds nothing (tests/fs/t_fs.c, tf_check)\n";

static const struct md_kind *const tables[] = {
	md_kinds_meta, md_kinds_inode, md_kinds_dir, md_kinds_dx, md_kinds_log,
};

static const struct md_kind *find_kind(const char *name)
{
	for (unsigned int t = 0; t < UT_ARRAY_SIZE(tables); t++)
		for (const struct md_kind *k = tables[t]; k->name; k++)
			if (!strcmp(k->name, name))
				return k;
	return NULL;
}

static int cmd_kinds(void)
{
	for (unsigned int t = 0; t < UT_ARRAY_SIZE(tables); t++)
		for (const struct md_kind *k = tables[t]; k->name; k++)
			printf("%-22s %s\n", k->name, k->what);
	return 0;
}

static int cmd_damage(const char *image, const char *kind, uint64_t seed)
{
	const struct md_kind *k = find_kind(kind);
	struct md_img d = { .fd = -1, .seed = seed };
	int err, err2;

	if (!k) {
		fprintf(stderr, "mkdamage: no kind '%s'; see mkdamage kinds\n", kind);
		return 2;
	}
	err = md_img_open(&d, image, true);
	if (!err) {
		fprintf(d.damaged, "# %s, seed %" PRIu64 "\n", kind, seed);
		err = k->apply(&d);
		err2 = md_img_close(&d);
		err = err ? err : err2;
	}
	if (err)
		fprintf(stderr, "mkdamage: %s on %s: %s\n", kind, image, strerror(-err));
	return err ? 1 : 0;
}

/* tf_check, which runs fsck -fn: on a device of the image's block size,
 * as the journal is read in its own blocks. */
static int cmd_check(const char *image)
{
	struct bdev_open_opts bo = { .read_only = true };
	struct bdev *bd;
	bool recover;
	int err = md_image_geometry(image, &bo.block_size, &recover);

	if (!err)
		err = bdev_open(image, &bo, &bd);
	if (err) {
		fprintf(stderr, "mkdamage: cannot open %s: %s\n", image, strerror(-err));
		return 2;
	}
	tf_check(bd, true);     /* exits 1, naming the problem */
	bdev_close(bd);
	printf("check: %s is consistent\n", image);
	return 0;
}

static int parse_u64(const char *s, uint64_t *v)
{
	char *end;

	errno = 0;
	*v = strtoull(s, &end, 0);
	return !*s || *end || errno ? -EINVAL : 0;
}

/* --seed S and --block-size B anywhere after the subcommand. */
static int parse_opts(int *argc, char **argv, uint64_t *seed, uint64_t *bs)
{
	int out = 0;

	for (int i = 0; i < *argc; i++) {
		uint64_t *v = !strcmp(argv[i], "--seed") ? seed :
			      !strcmp(argv[i], "--block-size") ? bs : NULL;

		if (!v) {
			argv[out++] = argv[i];
			continue;
		}
		if (i + 1 >= *argc || parse_u64(argv[++i], v))
			return -EINVAL;
	}
	*argc = out;
	return 0;
}

static int run(int argc, char **argv, uint64_t seed, uint64_t bs)
{
	const char *cmd = argv[1];

	if (!strcmp(cmd, "kinds") && argc == 2)
		return cmd_kinds();
	if (!strcmp(cmd, "populate") && argc == 3)
		return bs == 1024 || bs == 4096 ? md_populate(argv[2], seed, (uint32_t)bs)
			? 1 : 0 : 2;
	if (!strcmp(cmd, "damage") && argc == 4)
		return cmd_damage(argv[2], argv[3], seed);
	if (!strcmp(cmd, "verify") && argc == 3) {
		int err = md_verify(argv[2]);

		return err < 0 ? 2 : err;
	}
	if (!strcmp(cmd, "check") && argc == 3)
		return cmd_check(argv[2]);
	fputs(usage_text, stderr);
	return 2;
}

int main(int argc, char **argv)
{
	uint64_t seed = 0, bs = 1024;

	mlog_set_ident("mkdamage");
	if (argc >= 2 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
		fputs(usage_text, stdout);
		return 0;
	}
	if (parse_opts(&argc, argv, &seed, &bs) || argc < 2) {
		fputs(usage_text, stderr);
		return 2;
	}
	return run(argc, argv, seed, bs);
}
