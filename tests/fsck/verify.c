/*
 * verify.c - is every file the damage did not touch still there, whole?
 *
 * The image is mounted through the filesystem's own calls, read-only; an
 * image whose journal needs a replay is mounted read-write from a copy in
 * memory, so verify never changes it.  Each manifest entry not listed in
 * IMAGE.damaged must be found at its path, or, when the damage cut it
 * or a directory above it off, in /lost+found as "#INO" (the name fsck
 * gives an entry it reconnects), or below such a directory that is not a
 * file of the image (an old lost+found), with its type, size and contents.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bdev_test.h"
#include "mkdamage.h"
#include "util.h"

struct vfy {
	struct mfs_fs *fs;
	struct md_manifest man;
	char **damaged;
	unsigned int ndamaged;
	unsigned long checked, skipped, bad;
};

static int lookup(struct vfy *v, uint64_t dir, const char *name, uint64_t *ino)
{
	struct stat st;
	int err = mfs_lookup(v->fs, &md_root, dir, name, &st, NULL);

	if (!err) {
		*ino = st.st_ino;
		mfs_forget(v->fs, st.st_ino, 1);
	}
	return err;
}

/* Walk @path ("/x/y" or "x/y") from @dir. */
static int walk(struct vfy *v, uint64_t dir, const char *path, uint64_t *ino)
{
	char buf[256], *save = NULL;

	snprintf(buf, sizeof(buf), "%s", path);
	*ino = dir;
	for (char *c = strtok_r(buf, "/", &save); c; c = strtok_r(NULL, "/", &save)) {
		int err = lookup(v, *ino, c, ino);

		if (err)
			return err;
	}
	return 0;
}

/* The directories "#INO" of /lost+found (at most UT_ARRAY_SIZE(ino)). */
struct cutoff {
	uint64_t ino[64];
	unsigned int n;
};

static int note_cutoff(void *ctx, const char *name, size_t len, uint64_t ino,
		       unsigned int type, uint64_t next, const struct stat *st,
		       uint64_t gen)
{
	struct cutoff *co = ctx;

	(void)len, (void)next, (void)st, (void)gen;
	if (name[0] == '#' && type == MFS_FT_DIR && co->n < UT_ARRAY_SIZE(co->ino))
		co->ino[co->n++] = ino;
	return 0;
}

/* @path as a whole below any directory reconnected to /lost+found (one
 * the manifest does not know: an old lost+found that held it). */
static int find_below_cutoff(struct vfy *v, uint64_t lf, const char *path, uint64_t *ino)
{
	struct cutoff co = { .n = 0 };
	struct mfs_dir *d;
	int err = mfs_opendir(v->fs, &md_root, lf, &d);

	if (err)
		return err;
	err = mfs_readdir(v->fs, d, 0, false, note_cutoff, &co);
	mfs_releasedir(v->fs, d);
	for (unsigned int i = 0; !err && i < co.n; i++)
		if (!walk(v, co.ino[i], path, ino))
			return 0;
	return -ENOENT;
}

/* @path, or below an ancestor (or itself) reconnected to /lost+found, or
 * below a directory reconnected there that held it. */
static int find(struct vfy *v, const char *path, uint64_t *ino)
{
	char anc[256];
	uint64_t lf;

	if (!walk(v, MFS_ROOT_INO, path, ino))
		return 0;
	if (lookup(v, MFS_ROOT_INO, "lost+found", &lf))
		return -ENOENT;
	/* Try the entry itself, then each directory above it, deepest first. */
	snprintf(anc, sizeof(anc), "%s", path);
	for (;;) {
		const struct md_entry *e = md_manifest_find(&v->man, anc);
		char name[32];
		uint64_t top;
		char *slash;

		if (e) {
			snprintf(name, sizeof(name), "#%" PRIu32, e->ino);
			if (!lookup(v, lf, name, &top) &&
			    !walk(v, top, path + strlen(anc), ino))
				return 0;
		}
		slash = strrchr(anc, '/');
		if (!slash || slash == anc)
			return find_below_cutoff(v, lf, path, ino);
		*slash = 0;
	}
}

static bool is_damaged(const struct vfy *v, const char *path)
{
	for (unsigned int i = 0; i < v->ndamaged; i++)
		if (!strcmp(v->damaged[i], path))
			return true;
	return false;
}

static void differ(struct vfy *v, const char *path, const char *what)
{
	printf("differs: %s: %s\n", path, what);
	v->bad++;
}

static void check_entry(struct vfy *v, const struct md_entry *want)
{
	struct md_entry got;
	uint64_t ino;
	int err;

	if (is_damaged(v, want->path)) {
		v->skipped++;
		return;
	}
	v->checked++;
	if (find(v, want->path, &ino)) {
		differ(v, want->path, "not found");
		return;
	}
	err = md_describe(v->fs, ino, want->path, &got);
	if (err)
		differ(v, want->path, strerror(-err));
	else if (got.ino != want->ino)
		differ(v, want->path, "another inode");
	else if (got.type != want->type)
		differ(v, want->path, "type");
	else if (got.size != want->size)
		differ(v, want->path, "size");
	else if (got.hash != want->hash)
		differ(v, want->path, "contents");
	else if (got.xhash != want->xhash)
		differ(v, want->path, "xattrs");
}

static int load_damaged(struct vfy *v, const char *image)
{
	char name[4096], line[512];
	FILE *f;

	snprintf(name, sizeof(name), "%s.damaged", image);
	f = fopen(name, "r");
	if (!f)
		return errno == ENOENT ? 0 : -errno;
	while (fgets(line, sizeof(line), f)) {
		char **nd;

		line[strcspn(line, "\n")] = 0;
		if (!line[0] || line[0] == '#')
			continue;
		nd = realloc(v->damaged, (v->ndamaged + 1) * sizeof(*nd));
		if (!nd || !(nd[v->ndamaged] = strdup(line))) {
			v->damaged = nd ? nd : v->damaged;
			fclose(f);
			return -ENOMEM;
		}
		v->damaged = nd;
		v->ndamaged++;
	}
	fclose(f);
	return 0;
}

/* Read-only; if the journal needs a replay, read-write on a memory copy. */
static int mount_image(struct vfy *v, const char *image, struct bdev **bd)
{
	struct mfs_mount_opts mo = { .read_only = true, .no_flusher = true };
	struct bdev_open_opts bo = { .read_only = true, .no_direct = true };
	bool recover = false;
	int err = md_image_geometry(image, &bo.block_size, &recover);

	if (!err && !recover) {
		err = bdev_open(image, &bo, bd);
		if (err)
			return err;
		err = mfs_mount(*bd, &mo, &v->fs);
		if (err)
			bdev_close(*bd);
	}
	if (err != -EROFS && !recover)
		return err;
	printf("verify: the journal needs a replay: mounting a copy in memory\n");
	mo.read_only = false;
	err = bdev_mem_load(image, bo.block_size, bd);
	if (!err && (err = mfs_mount(*bd, &mo, &v->fs)))
		bdev_close(*bd);
	return err;
}

int md_verify(const char *image)
{
	struct vfy v = { 0 };
	struct bdev *bd;
	int err = md_manifest_load(&v.man, image);

	if (!err)
		err = load_damaged(&v, image);
	if (!err && (err = mount_image(&v, image, &bd)))
		fprintf(stderr, "mkdamage: cannot mount %s: %s\n", image, strerror(-err));
	if (!err) {
		for (unsigned int i = 0; i < v.man.n; i++)
			check_entry(&v, &v.man.e[i]);
		err = mfs_unmount(v.fs);
		bdev_close(bd);
		printf("verify: %lu checked, %lu skipped as damaged, %lu differ\n",
		       v.checked, v.skipped, v.bad);
	}
	for (unsigned int i = 0; i < v.ndamaged; i++)
		free(v.damaged[i]);
	free(v.damaged);
	md_manifest_free(&v.man);
	return err ? err : v.bad ? 1 : 0;
}
