/*
 * fuzz_mount - damaged images through the mounted filesystem, as
 * syzkaller treats kernel filesystems.  Each input damages a populated
 * image, which is then mounted through the core on the memory device; a
 * workload (tests/fs/t_work.h) reads everything on it, runs every kind of
 * operation on new files, renames and removes everything it found, and
 * syncs; then the image is unmounted.  No crash, no sanitizer report, no
 * leak, no hang (libFuzzer's -timeout), and every call that fails gives
 * an errno a damaged image explains (otherwise: abort).
 *
 * The image is the corruption corpus's populated one (tests/fsck,
 * populate.c: 16 MiB of 1 KiB blocks, every kind of file), made once at
 * start-up.  Its metadata blocks are listed with their kind: the
 * superblock, descriptors, bitmaps, inode-table blocks in use, directory,
 * indirect and xattr blocks.  An input is a list of records:
 *
 *   1 byte   length n (low 7 bits); bit 7: reseal the block after
 *   2 bytes  block (little-endian): with bit 15, the (rest mod count)-th
 *            metadata block; without, device block (rest mod blocks)
 *   2 bytes  offset in the block (little-endian, mod the block size)
 *   n bytes  XORed over the block from there (cut at its end)
 *
 * Resealing recomputes the block's checksum as the filesystem would, so
 * the damage reaches the checks behind the checksum and the code behind
 * the checks.
 *
 * A corpus directory given empty gets the seeds first: one input per kind
 * of damage of the corruption corpus (its damaged image's differences
 * from the populated one, as records).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <unistd.h>

#include "bdev_test.h"
#include "mfs.h"
#include "mkdamage.h"
#include "t_work.h"

#define BS 1024u

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);
const char *__asan_default_options(void);

/* Every run frees megabytes of pages and nodes, which ASan's quarantine
 * would keep for good at its default size. */
const char *__asan_default_options(void)
{
	return "quarantine_size_mb=64";
}

enum kind { K_SB, K_GDT, K_BBITMAP, K_IBITMAP, K_ITABLE, K_DIR, K_IND, K_XATTR };

struct meta {
	uint32_t blk;
	uint8_t kind;
	uint32_t owner;              /* group, inode, or first inode of the block */
};

static uint8_t *base;                /* the populated image */
static uint64_t nblocks;
static struct mfs_super sb;          /* its superblock, for the checksums */
static struct meta *metas;
static size_t nmetas;
static struct bdev *dev;             /* the memory device every run uses */

static void require(bool ok, const char *what)
{
	if (!ok) {
		fprintf(stderr, "fuzz_mount: %s\n", what);
		abort();
	}
}

static void bad_errno(void *arg, const char *what, int err)
{
	(void)arg;
	fprintf(stderr, "fuzz_mount: %s returned %d (%s)\n", what, err, strerror(-err));
	abort();
}

/* ---- the metadata blocks of the image ------------------------------------ */

static void add_meta(uint64_t blk, enum kind kind, uint32_t owner)
{
	if (!blk || blk >= nblocks)
		return;
	metas = realloc(metas, (nmetas + 1) * sizeof(*metas));
	require(metas, "no memory");
	metas[nmetas++] = (struct meta){ (uint32_t)blk, (uint8_t)kind, owner };
}

struct walk_ctx {
	uint32_t ino;
	bool dir;
};

static int read_block(void *ctx, uint64_t blk, void *buf)
{
	(void)ctx;
	if (blk >= nblocks)
		return -EIO;
	memcpy(buf, base + blk * BS, BS);
	return 0;
}

static int on_indirect(void *ctx, uint64_t blk, int depth)
{
	(void)depth;
	add_meta(blk, K_IND, ((struct walk_ctx *)ctx)->ino);
	return 0;
}

static int on_data(void *ctx, uint64_t lblk, uint64_t pblk)
{
	struct walk_ctx *c = ctx;

	(void)lblk;
	if (c->dir)
		add_meta(pblk, K_DIR, c->ino);
	return 0;
}

static void list_inode_blocks(uint32_t ino, const struct mfs_inode *in)
{
	struct walk_ctx c = { ino, S_ISDIR(le16toh(in->i_mode)) };
	char why[128];
	struct fmt_bmap_walk w = { .sb = &sb, .ino = ino, .in = in, .read_block = read_block,
				   .indirect = on_indirect, .data = on_data, .ctx = &c,
				   .why = why, .whylen = sizeof(why) };

	if (le32toh(in->i_xattr_block))
		add_meta(le32toh(in->i_xattr_block), K_XATTR, le32toh(in->i_xattr_block));
	if (!fmt_inode_is_fast_symlink(in))
		(void)fmt_bmap_walk(&w, 0, UINT64_MAX);
}

static void list_group(uint32_t g)
{
	uint32_t off, ipg = le32toh(sb.s_inodes_per_group);
	const struct mfs_group_desc *gd = (const void *)(base +
		fmt_gdesc_block(&sb, g, &off) * BS + off);
	uint64_t last = 0;

	add_meta(le32toh(gd->bg_block_bitmap), K_BBITMAP, g);
	add_meta(le32toh(gd->bg_inode_bitmap), K_IBITMAP, g);
	for (uint32_t ino = g * ipg + 1; ino <= (g + 1) * ipg; ino++) {
		uint64_t blk = fmt_inode_block(&sb, le32toh(gd->bg_inode_table), ino, &off);
		const struct mfs_inode *in = (const void *)(base + blk * BS + off);

		if (!in->i_mode)
			continue;
		if (blk != last)
			add_meta(blk, K_ITABLE, ino);
		last = blk;
		if (in->i_links_count)
			list_inode_blocks(ino, in);
	}
}

static uint32_t groups(void)
{
	return le32toh(sb.s_inodes_count) / le32toh(sb.s_inodes_per_group);
}

static void list_metas(void)
{
	uint32_t ngroups = groups(), off;

	add_meta(MFS_SB_OFFSET / BS, K_SB, 0);
	for (uint32_t g = 0; g < ngroups; g++)
		add_meta(fmt_gdesc_block(&sb, g, &off), K_GDT, g);
	for (uint32_t g = 0; g < ngroups; g++)
		list_group(g);
}

/* ---- resealing ------------------------------------------------------------ */

static struct mfs_group_desc *gdesc(uint8_t *img, uint32_t g)
{
	uint32_t off;
	uint64_t blk = fmt_gdesc_block(&sb, g, &off);

	return (void *)(img + blk * BS + off);
}

static void reseal_gdt(uint8_t *img, uint32_t first)
{
	uint32_t per = BS / sizeof(struct mfs_group_desc), ngroups = groups();

	for (uint32_t g = first - first % per; g < ngroups && g < first - first % per + per; g++)
		gdesc(img, g)->bg_checksum = htole32(fmt_gdesc_csum(&sb, g, gdesc(img, g)));
}

static void reseal(uint8_t *img, const struct meta *m)
{
	uint8_t *b = img + (uint64_t)m->blk * BS;

	switch (m->kind) {
	case K_SB:
		fmt_sb_set_csum((struct mfs_super *)b);
		break;
	case K_GDT:
		reseal_gdt(img, m->owner);
		break;
	case K_BBITMAP:
	case K_IBITMAP: {
		unsigned kind = m->kind == K_BBITMAP ? MFS_CSUM_BBITMAP : MFS_CSUM_IBITMAP;
		uint32_t csum = htole32(fmt_bitmap_csum(&sb, kind, m->owner, b));

		if (m->kind == K_BBITMAP)
			gdesc(img, m->owner)->bg_block_bitmap_csum = csum;
		else
			gdesc(img, m->owner)->bg_inode_bitmap_csum = csum;
		reseal_gdt(img, m->owner);
		break;
	}
	case K_ITABLE:
		for (uint32_t i = 0; i < BS / sizeof(struct mfs_inode); i++) {
			struct mfs_inode *in = (void *)(b + i * sizeof(*in));

			if (in->i_mode)
				in->i_checksum = htole32(fmt_inode_csum(&sb, m->owner + i, in));
		}
		break;
	case K_DIR:
		fmt_block_set_csum(&sb, MFS_CSUM_DIR, m->owner, b);
		break;
	case K_IND:
		fmt_block_set_csum(&sb, MFS_CSUM_INDIRECT, m->owner, b);
		break;
	case K_XATTR:
		fmt_block_set_csum(&sb, MFS_CSUM_XATTR, m->owner, b);
		break;
	}
}

/* ---- applying an input ------------------------------------------------------ */

static void apply(uint8_t *img, const uint8_t *data, size_t size)
{
	while (size >= 5) {
		unsigned n = data[0] & 0x7f;
		bool seal = data[0] & 0x80;
		uint16_t b = (uint16_t)(data[1] | data[2] << 8);
		uint32_t off = (uint32_t)(data[3] | data[4] << 8) % BS;
		const struct meta *m = b & 0x8000 ? &metas[(b & 0x7fff) % nmetas] : NULL;
		uint64_t blk = m ? m->blk : b % nblocks;

		data += 5;
		size -= 5;
		n = n < size ? n : (unsigned)size;
		for (unsigned i = 0; i < n && off + i < BS; i++)
			img[blk * BS + off + i] ^= data[i];
		if (m && seal)
			reseal(img, m);
		data += n;
		size -= n;
	}
}

/* ---- the seeds: the corpus's damage as records ------------------------------ */

static uint8_t *load(const char *path, uint64_t bytes)
{
	uint8_t *img = malloc(bytes);
	int fd = open(path, O_RDONLY);

	require(img && fd >= 0 && pread(fd, img, bytes, 0) == (ssize_t)bytes, path);
	close(fd);
	return img;
}

static void save(const char *path, const uint8_t *img)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);

	require(fd >= 0 && pwrite(fd, img, nblocks * BS, 0) == (ssize_t)(nblocks * BS), path);
	close(fd);
}

/* Records for every byte of @img that differs from the base. */
static size_t diff(const uint8_t *img, uint8_t *out, size_t cap)
{
	size_t len = 0;

	for (uint64_t blk = 0; blk < nblocks && blk < 0x8000; blk++) {
		if (!memcmp(img + blk * BS, base + blk * BS, BS))
			continue;
		for (uint32_t off = 0; off < BS; off++) {
			uint32_t n = 0;

			while (off + n < BS && n < 0x7f && img[blk * BS + off + n] != base[blk * BS + off + n])
				n++;
			if (!n || len + 5 + n > cap)
				continue;
			out[len++] = (uint8_t)n;
			out[len++] = (uint8_t)blk;
			out[len++] = (uint8_t)(blk >> 8);
			out[len++] = (uint8_t)off;
			out[len++] = (uint8_t)(off >> 8);
			for (uint32_t i = 0; i < n; i++)
				out[len++] = img[blk * BS + off + i] ^ base[blk * BS + off + i];
			off += n;
		}
	}
	return len;
}

/* Put the base's blocks back where @img differs from it (in @tmp). */
static void restore(const char *tmp, const uint8_t *img)
{
	int fd = open(tmp, O_WRONLY);

	require(fd >= 0, tmp);
	for (uint64_t blk = 0; blk < nblocks; blk++)
		if (memcmp(img + blk * BS, base + blk * BS, BS))
			require(pwrite(fd, base + blk * BS, BS, (off_t)(blk * BS)) == BS, tmp);
	close(fd);
}

/* @tmp holds the base image before and after. */
static void seed_kind(const char *dir, const char *tmp, const struct md_kind *k)
{
	struct md_img d = { .fd = -1 };
	static uint8_t rec[1 << 16];
	char path[4096];
	uint8_t *img;
	size_t len;
	FILE *f;
	int err;

	if (md_img_open(&d, tmp, true))   /* the kinds note what they did */
		return;
	err = k->apply(&d);
	md_img_close(&d);
	img = load(tmp, nblocks * BS);
	len = diff(img, rec, sizeof(rec));
	restore(tmp, img);
	free(img);
	if (err)
		return;
	snprintf(path, sizeof(path), "%s/%s", dir, k->name);
	f = fopen(path, "w");
	require(f && fwrite(rec, 1, len, f) == len && !fclose(f), path);
}

static void write_seeds(const char *dir, const char *tmp)
{
	const struct md_kind *tables[] = { md_kinds_meta, md_kinds_inode, md_kinds_dir,
					   md_kinds_log };
	unsigned count = 0;

	save(tmp, base);
	for (size_t t = 0; t < sizeof(tables) / sizeof(tables[0]); t++)
		for (const struct md_kind *k = tables[t]; k->name; k++, count++)
			seed_kind(dir, tmp, k);
	printf("fuzz_mount: %u seeds in %s\n", count, dir);
}

/* ---- set-up and one run --------------------------------------------------- */

/* The first corpus directory on the command line, if it is empty. */
static const char *empty_corpus(int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		DIR *d = argv[i][0] == '-' ? NULL : opendir(argv[i]);
		struct dirent *e;
		bool empty = true;

		if (!d)
			continue;
		while (empty && (e = readdir(d)))
			empty = e->d_name[0] == '.';
		closedir(d);
		return empty ? argv[i] : NULL;
	}
	return NULL;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	/* In memory where there is a tmpfs: the kinds fsync what they write. */
	char tmp[64] = "/dev/shm/fuzz_mount.XXXXXX";
	const char *seeds = empty_corpus(*argc, *argv);
	struct bdev *mem;
	int fd = mkstemp(tmp);

	if (fd < 0) {
		snprintf(tmp, sizeof(tmp), "/tmp/fuzz_mount.XXXXXX");
		fd = mkstemp(tmp);
	}

	require(fd >= 0, "cannot make a temporary file");
	close(fd);
	require(!md_populate(tmp, 1, BS), "cannot populate the image");
	nblocks = (16u << 20) / BS;
	base = load(tmp, nblocks * BS);
	memcpy(&sb, base + MFS_SB_OFFSET, sizeof(sb));
	list_metas();
	if (seeds)
		write_seeds(seeds, tmp);
	unlink(tmp);
	for (const char *ext = ".manifest"; ext; ext = ext[1] == 'm' ? ".damaged" : NULL) {
		char side[80];

		snprintf(side, sizeof(side), "%s%s", tmp, ext);
		unlink(side);
	}
	require(!bdev_mem_create(nblocks * BS, BS, &mem) && !bdev_wrap(mem, NULL, &dev),
		"no memory device");
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* errors=continue: the workload goes on past the first damage it
	 * meets, into the code behind it. */
	struct mfs_mount_opts o = { .cache_bytes = 4u << 20, .no_flusher = true,
				    .force = true, .errors = MFS_ERRORS_CONTINUE };
	struct tw w = { .bad = bad_errno };

	memcpy(bdev_mem_data(dev), base, nblocks * BS);
	apply(bdev_mem_data(dev), data, size);
	if (mfs_mount(dev, &o, &w.fs))
		return 0;
	tw_walk(&w, 2000);
	tw_run(&w);
	tw_clear(&w, 2000);
	(void)mfs_sync(w.fs);
	(void)mfs_unmount(w.fs);
	return 0;
}
