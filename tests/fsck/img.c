/*
 * img.c - an image open for damage: structures are read through the raw
 * API (checked as they are read) and written back with pwrite, checksums
 * recomputed unless the damage is the checksum itself.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mkdamage.h"

/* ---- opening ------------------------------------------------------------- */

int md_img_open(struct md_img *d, const char *image, bool damaged)
{
	struct bdev_open_opts bo = { .block_size = 1024, .read_only = true,
				     .no_direct = true };
	char name[4096];
	int err = bdev_open(image, &bo, &d->bd);

	if (err)
		return err;
	err = fmt_raw_open(d->bd, &d->raw);
	if (!err && d->raw.sb_group) {
		fprintf(stderr, "mkdamage: %s: the primary superblock is damaged "
			"already\n", image);
		fmt_raw_close(&d->raw);
		err = -EINVAL;
	} else if (err) {
		fprintf(stderr, "mkdamage: %s: %s\n", image,
			err == -EUCLEAN ? d->raw.why : strerror(-err));
	}
	if (err) {
		bdev_close(d->bd);
		return err;
	}
	d->bs = d->raw.bs;
	d->fd = open(image, O_RDWR);
	d->blk = bdev_alloc_buf(d->bs);
	snprintf(name, sizeof(name), "%s.damaged", image);
	d->damaged = damaged ? fopen(name, "w") : NULL;
	if (d->fd < 0 || !d->blk || (damaged && !d->damaged))
		err = errno ? -errno : -ENOMEM;
	if (!err)
		err = md_manifest_load(&d->man, image);
	if (err)
		md_img_close(d);
	return err;
}

int md_img_close(struct md_img *d)
{
	int err = 0;

	if (d->damaged && fclose(d->damaged))
		err = -errno;
	if (d->fd >= 0 && (fsync(d->fd) || close(d->fd)) && !err)
		err = -errno;
	bdev_free_buf(d->blk);
	md_manifest_free(&d->man);
	fmt_raw_close(&d->raw);
	bdev_close(d->bd);
	return err;
}

/* The block size, and whether the superblock asks for a replay. */
int md_image_geometry(const char *image, uint32_t *bs, bool *recover)
{
	struct bdev_open_opts bo = { .block_size = 1024, .read_only = true };
	struct fmt_raw raw;
	struct bdev *bd;
	int err = bdev_open(image, &bo, &bd);

	if (err)
		return err;
	err = fmt_raw_open(bd, &raw);
	if (!err) {
		*bs = raw.bs;
		*recover = le32toh(raw.sb.s_feature_incompat) & MFS_FEATURE_INCOMPAT_RECOVER;
		fmt_raw_close(&raw);
	}
	bdev_close(bd);
	return err;
}

void md_say(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
}

void md_lost(struct md_img *d, const char *path)
{
	fprintf(d->damaged, "%s\n", path);
}

int md_write_at(struct md_img *d, uint64_t off, const void *buf, size_t len)
{
	ssize_t n = pwrite(d->fd, buf, len, (off_t)off);

	if (n < 0)
		return -errno;
	return (size_t)n == len ? 0 : -EIO;
}

int md_read_block(struct md_img *d, uint64_t blk, void *buf)
{
	return fmt_raw_read(&d->raw, blk, buf);
}

int md_write_block(struct md_img *d, uint64_t blk, const void *buf)
{
	return md_write_at(d, blk * d->bs, buf, d->bs);
}

int md_put_sb(struct md_img *d, struct mfs_super *sb, bool csum)
{
	if (csum)
		fmt_sb_set_csum(sb);
	return md_write_at(d, MFS_SB_OFFSET, sb, sizeof(*sb));
}

int md_put_gdesc(struct md_img *d, uint32_t g, struct mfs_group_desc *gd,
		 bool csum)
{
	uint32_t off;
	uint64_t blk = fmt_gdesc_block(&d->raw.sb, g, &off);

	if (csum)
		gd->bg_checksum = htole32(fmt_gdesc_csum(&d->raw.sb, g, gd));
	d->raw.gdt[g] = *gd;
	return md_write_at(d, blk * d->bs + off, gd, sizeof(*gd));
}

int md_get_inode(struct md_img *d, uint32_t ino, struct mfs_inode *in)
{
	int err = fmt_raw_inode(&d->raw, ino, in);

	if (err)
		fprintf(stderr, "mkdamage: inode %" PRIu32 ": %s\n", ino,
			err == -EUCLEAN ? d->raw.why : strerror(-err));
	return err;
}

int md_put_inode(struct md_img *d, uint32_t ino, struct mfs_inode *in, bool csum)
{
	uint32_t g = (ino - 1) / le32toh(d->raw.sb.s_inodes_per_group), off;
	uint64_t blk = fmt_inode_block(&d->raw.sb, le32toh(d->raw.gdt[g].bg_inode_table),
				       ino, &off);

	if (csum)
		in->i_checksum = htole32(fmt_inode_csum(&d->raw.sb, ino, in));
	return md_write_at(d, blk * d->bs + off, in, sizeof(*in));
}

int md_add_links(struct md_img *d, uint32_t ino, int delta)
{
	struct mfs_inode in;
	int err = md_get_inode(d, ino, &in);
	unsigned int old = le16toh(in.i_links_count);

	if (err)
		return err;
	in.i_links_count = htole16((uint16_t)(old + delta));
	md_say("inode %" PRIu32 " (%s): i_links_count %u -> %u", ino, md_path(d, ino),
	       old, old + delta);
	return md_put_inode(d, ino, &in, true);
}

const char *md_path(const struct md_img *d, uint32_t ino)
{
	if (ino == MFS_ROOT_INO)
		return "/";
	for (unsigned int i = 0; i < d->man.n; i++)
		if (d->man.e[i].ino == ino)
			return d->man.e[i].path;
	return "?";
}

uint32_t md_ino(const struct md_img *d, const char *path)
{
	const struct md_entry *e = md_manifest_find(&d->man, path);

	if (!e)
		fprintf(stderr, "mkdamage: %s is not in the manifest\n", path);
	return e ? e->ino : 0;
}

unsigned int md_names(const struct md_img *d, uint32_t ino)
{
	unsigned int n = 0;

	for (unsigned int i = 0; i < d->man.n; i++)
		n += d->man.e[i].ino == ino;
	return n;
}

bool md_is_data_file(const struct md_img *d, const struct md_entry *e)
{
	return e->type == 'f' && e->size > 0 && md_names(d, e->ino) == 1;
}

const struct md_entry *md_pick_entry(struct md_img *d, md_filter_fn ok)
{
	unsigned int n = 0, k;

	for (unsigned int i = 0; i < d->man.n; i++)
		n += ok(d, &d->man.e[i]);
	k = md_pick(d, n);
	for (unsigned int i = 0; i < d->man.n; i++)
		if (ok(d, &d->man.e[i]) && !k--)
			return &d->man.e[i];
	fprintf(stderr, "mkdamage: nothing in the manifest to damage\n");
	return NULL;
}

/* ---- bitmaps ------------------------------------------------------------- */

static void bit_place(struct md_img *d, unsigned kind, uint64_t nr, uint32_t *g,
		      uint32_t *i)
{
	const struct mfs_super *sb = &d->raw.sb;

	if (kind == MFS_CSUM_IBITMAP) {
		*g = (uint32_t)((nr - 1) / le32toh(sb->s_inodes_per_group));
		*i = (uint32_t)((nr - 1) % le32toh(sb->s_inodes_per_group));
	} else {
		*g = (uint32_t)((nr - le32toh(sb->s_first_data_block)) /
				le32toh(sb->s_blocks_per_group));
		*i = (uint32_t)(nr - fmt_group_first_block(sb, *g));
	}
}

static uint64_t bitmap_block(const struct mfs_group_desc *gd, unsigned kind)
{
	return le32toh(kind == MFS_CSUM_IBITMAP ? gd->bg_inode_bitmap : gd->bg_block_bitmap);
}

int md_test_bit(struct md_img *d, unsigned kind, uint64_t nr, bool *set)
{
	const struct mfs_group_desc *gd;
	uint32_t g, i;
	int err;

	bit_place(d, kind, nr, &g, &i);
	err = fmt_raw_gdesc(&d->raw, g, &gd);
	if (!err)
		err = md_read_block(d, bitmap_block(gd, kind), d->blk);
	if (!err)
		*set = ((uint8_t *)d->blk)[i / 8] >> (i % 8) & 1;
	return err;
}

/* The superblock's free counts follow the descriptors'. */
static int sb_free_add(struct md_img *d, unsigned kind, int delta)
{
	struct mfs_super *sb = &d->raw.sb;

	if (kind == MFS_CSUM_IBITMAP)
		sb->s_free_inodes_count = htole32(le32toh(sb->s_free_inodes_count) + delta);
	else
		sb->s_free_blocks_count = htole64(le64toh(sb->s_free_blocks_count) + delta);
	return md_put_sb(d, sb, true);
}

int md_set_bit(struct md_img *d, unsigned kind, uint64_t nr, bool set)
{
	struct mfs_group_desc gd;
	uint8_t *map = d->blk;
	uint32_t g, i, *free;
	bool old;
	int err = md_test_bit(d, kind, nr, &old);

	if (err || old == set)
		return err;
	bit_place(d, kind, nr, &g, &i);
	gd = d->raw.gdt[g];
	map[i / 8] ^= (uint8_t)(1u << (i % 8));
	free = kind == MFS_CSUM_IBITMAP ? &gd.bg_free_inodes_count : &gd.bg_free_blocks_count;
	*free = htole32(le32toh(*free) + (set ? -1 : 1));
	if (kind == MFS_CSUM_IBITMAP)
		gd.bg_inode_bitmap_csum = htole32(fmt_bitmap_csum(&d->raw.sb, kind, g, map));
	else
		gd.bg_block_bitmap_csum = htole32(fmt_bitmap_csum(&d->raw.sb, kind, g, map));
	md_say("group %" PRIu32 ": %s bitmap bit of %s %" PRIu64 " %d -> %d", g,
	       kind == MFS_CSUM_IBITMAP ? "inode" : "block",
	       kind == MFS_CSUM_IBITMAP ? "inode" : "block", nr, old, set);
	err = md_write_block(d, bitmap_block(&gd, kind), map);
	if (!err)
		err = md_put_gdesc(d, g, &gd, true);
	if (!err)
		err = sb_free_add(d, kind, set ? -1 : 1);
	return err;
}

/* ---- directories --------------------------------------------------------- */

typedef int (*dirblock_fn)(struct md_img *d, uint32_t dir, uint64_t pblk, void *arg);

/* Call @fn with each block of directory @dir read into d->blk; a
 * positive return stops the walk. */
static int each_dirblock(struct md_img *d, uint32_t dir, dirblock_fn fn, void *arg)
{
	struct mfs_inode in;
	int err = md_get_inode(d, dir, &in);

	for (uint64_t b = 0; !err && b < le64toh(in.i_size) / d->bs; b++) {
		uint64_t pblk;

		err = fmt_raw_bmap(&d->raw, dir, &in, b, &pblk);
		if (!err && pblk)
			err = md_read_block(d, pblk, d->blk);
		if (!err && pblk)
			err = fn(d, dir, pblk, arg);
	}
	return err > 0 ? 0 : err ? err : -ENOENT;
}

struct find_arg {
	const char *name;
	struct md_dirent_pos *pos;
};

static int find_in_block(struct md_img *d, uint32_t dir, uint64_t pblk, void *arg)
{
	struct find_arg *fa = arg;
	uint32_t prev = UINT32_MAX;

	for (uint32_t off = 0; off < d->bs - MFS_DIR_TAIL_SIZE;) {
		struct mfs_dirent *de = (void *)((char *)d->blk + off);

		if (de->inode && de->name_len == strlen(fa->name) &&
		    !memcmp(de->name, fa->name, de->name_len)) {
			*fa->pos = (struct md_dirent_pos){ pblk, off, prev };
			return 1;
		}
		prev = off;
		off += le16toh(de->rec_len);
	}
	return 0;
}

int md_find_entry(struct md_img *d, uint32_t dir, const char *name,
		  struct md_dirent_pos *pos)
{
	struct find_arg fa = { name, pos };
	int err;

	pos->pblk = 0;
	err = each_dirblock(d, dir, find_in_block, &fa);
	if (err == -ENOENT && pos->pblk)
		err = 0;
	if (err)
		fprintf(stderr, "mkdamage: no entry '%s' in directory %" PRIu32 "\n",
			name, dir);
	return err;
}

int md_put_dirblock(struct md_img *d, uint32_t dir, uint64_t pblk)
{
	fmt_block_set_csum(&d->raw.sb, MFS_CSUM_DIR, dir, d->blk);
	return md_write_block(d, pblk, d->blk);
}

int md_remove_entry(struct md_img *d, uint32_t dir, const char *name)
{
	struct md_dirent_pos pos;
	struct mfs_dirent *de, *prev;
	int err = md_find_entry(d, dir, name, &pos);

	if (err)
		return err;
	de = (void *)((char *)d->blk + pos.off);
	md_say("directory %" PRIu32 " (%s): entry '%s' (inode %" PRIu32 ") removed "
	       "from block %" PRIu64, dir, md_path(d, dir), name, le32toh(de->inode),
	       pos.pblk);
	if (pos.prev == UINT32_MAX) {
		de->inode = 0;
	} else {
		prev = (void *)((char *)d->blk + pos.prev);
		prev->rec_len = htole16(le16toh(prev->rec_len) + le16toh(de->rec_len));
	}
	return md_put_dirblock(d, dir, pos.pblk);
}

struct add_arg {
	const char *name;
	uint32_t ino;
	uint8_t type;
};

static int add_in_block(struct md_img *d, uint32_t dir, uint64_t pblk, void *arg)
{
	struct add_arg *aa = arg;
	uint32_t need = MFS_DIRENT_LEN(strlen(aa->name));
	int err;

	for (uint32_t off = 0; off < d->bs - MFS_DIR_TAIL_SIZE;) {
		struct mfs_dirent *de = (void *)((char *)d->blk + off), *ne;
		uint32_t rec = le16toh(de->rec_len);
		uint32_t used = de->inode ? MFS_DIRENT_LEN(de->name_len) : 0;

		if (rec - used >= need) {
			if (used)
				de->rec_len = htole16((uint16_t)used);
			ne = (void *)((char *)de + used);
			ne->inode = htole32(aa->ino);
			ne->rec_len = htole16((uint16_t)(rec - used));
			ne->name_len = (uint8_t)strlen(aa->name);
			ne->file_type = aa->type;
			memcpy(ne->name, aa->name, ne->name_len);
			md_say("directory %" PRIu32 " (%s): entry '%s' -> inode %" PRIu32
			       " added in block %" PRIu64, dir, md_path(d, dir), aa->name,
			       aa->ino, pblk);
			err = md_put_dirblock(d, dir, pblk);
			return err ? err : 1;
		}
		off += rec;
	}
	return 0;
}

int md_add_entry(struct md_img *d, uint32_t dir, const char *name,
		 uint32_t ino, uint8_t type)
{
	struct add_arg aa = { name, ino, type };
	int err = each_dirblock(d, dir, add_in_block, &aa);

	return err == -ENOENT ? -ENOSPC : err;
}
