/*
 * mkdamage.h - what the parts of the corruption-corpus tool share: the
 * manifest of a populated image, and the image open for damage with the
 * helpers that read a structure, change it and write it back.
 */
#ifndef MISCFS_MKDAMAGE_H
#define MISCFS_MKDAMAGE_H

#include <stdbool.h>
#include <stdint.h>

#include "mfs.h"

/* ---- the manifest -------------------------------------------------------- */

/* One file of the populated image: "TYPE INO SIZE HASH XHASH PATH". */
struct md_entry {
	char type;                   /* f d l p c b (file, dir, link, ...) */
	uint32_t ino;
	uint64_t size;
	uint64_t hash;               /* XXH64 of data, target or rdev */
	uint64_t xhash;              /* XXH64 of the xattrs, 0: none */
	char path[256];              /* from the root, "/a/b" */
};

struct md_manifest {
	struct md_entry *e;
	unsigned int n, cap;
};

int md_manifest_add(struct md_manifest *m, const struct md_entry *e);
int md_manifest_save(const struct md_manifest *m, const char *image);
int md_manifest_load(struct md_manifest *m, const char *image);
void md_manifest_free(struct md_manifest *m);
const struct md_entry *md_manifest_find(const struct md_manifest *m,
					const char *path);

/* ---- populate and verify ------------------------------------------------- */

extern const struct mfs_cred md_root;
/* @path's entry as the mounted filesystem @fs shows inode @ino. */
int md_describe(struct mfs_fs *fs, uint64_t ino, const char *path,
		struct md_entry *e);

int md_populate(const char *image, uint64_t seed, uint32_t bs);
int md_verify(const char *image);

/* ---- an image open for damage -------------------------------------------- */

struct md_img {
	struct fmt_raw raw;          /* reads, through a 1 KiB bdev */
	struct bdev *bd;
	int fd;                      /* writes */
	uint32_t bs;
	uint64_t seed;
	struct md_manifest man;
	FILE *damaged;               /* IMAGE.damaged */
	void *blk;                   /* one scratch block */
};

/*
 * Open @image (and its manifest) for changes; with @damaged, start
 * IMAGE.damaged.  The primary superblock must be good.  On failure
 * nothing is left open.
 */
int md_img_open(struct md_img *d, const char *image, bool damaged);
int md_img_close(struct md_img *d);
/* The block size of @image, and whether its superblock asks for a
 * journal replay. */
int md_image_geometry(const char *image, uint32_t *bs, bool *recover);

/* A number in [0, n) chosen by the seed (the default seed: 0). */
static inline unsigned int md_pick(const struct md_img *d, unsigned int n)
{
	return n ? (unsigned int)(d->seed % n) : 0;
}

/* Say one change on stdout, as "inode 14 (/a/x): i_links_count 1 -> 3";
 * a line that only explains the next starts with "# ". */
void md_say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* The damage may lose or alter @path's contents. */
void md_lost(struct md_img *d, const char *path);

int md_read_block(struct md_img *d, uint64_t blk, void *buf);
int md_write_block(struct md_img *d, uint64_t blk, const void *buf);
int md_write_at(struct md_img *d, uint64_t off, const void *buf, size_t len);

/* The primary superblock, its checksum recomputed when @csum. */
int md_put_sb(struct md_img *d, struct mfs_super *sb, bool csum);
/* The primary descriptor of @g (d->raw.gdt too). */
int md_put_gdesc(struct md_img *d, uint32_t g, struct mfs_group_desc *gd,
		 bool csum);
int md_get_inode(struct md_img *d, uint32_t ino, struct mfs_inode *in);
int md_put_inode(struct md_img *d, uint32_t ino, struct mfs_inode *in, bool csum);
/* Set or clear a bit of a bitmap (kind MFS_CSUM_BBITMAP/IBITMAP) for block
 * or inode @nr, keeping the descriptor's free count and checksums right. */
int md_set_bit(struct md_img *d, unsigned kind, uint64_t nr, bool set);
int md_test_bit(struct md_img *d, unsigned kind, uint64_t nr, bool *set);
/* A path of inode @ino by the manifest ("/" for the root, "?" if none). */
const char *md_path(const struct md_img *d, uint32_t ino);
/* Inode number of @path, by the manifest. */
uint32_t md_ino(const struct md_img *d, const char *path);

/* Names the manifest gives inode @ino. */
unsigned int md_names(const struct md_img *d, uint32_t ino);
typedef bool (*md_filter_fn)(const struct md_img *d, const struct md_entry *e);
/* A regular file with data and one name. */
bool md_is_data_file(const struct md_img *d, const struct md_entry *e);
/* The entry the seed picks among those @ok accepts; NULL if none. */
const struct md_entry *md_pick_entry(struct md_img *d, md_filter_fn ok);

/* A directory entry found by name: its block (in d->blk) and offset. */
struct md_dirent_pos {
	uint64_t pblk;
	uint32_t off;
	uint32_t prev;               /* offset of the record before, or UINT32_MAX */
};
int md_find_entry(struct md_img *d, uint32_t dir, const char *name,
		  struct md_dirent_pos *pos);
/* Write back d->blk as block @pblk of directory @dir, checksum fixed. */
int md_put_dirblock(struct md_img *d, uint32_t dir, uint64_t pblk);
/* Remove @name from @dir (its record joins the one before). */
int md_remove_entry(struct md_img *d, uint32_t dir, const char *name);
/* Add an entry @name -> @ino of @type to @dir where a record has room. */
int md_add_entry(struct md_img *d, uint32_t dir, const char *name,
		 uint32_t ino, uint8_t type);
/* Add @delta to the link count of @ino (checksum fixed). */
int md_add_links(struct md_img *d, uint32_t ino, int delta);

/* ---- the kinds ------------------------------------------------ */

struct md_kind {
	const char *name;
	const char *what;
	int (*apply)(struct md_img *d);
};

/* Each table ends with an entry whose name is NULL. */
extern const struct md_kind md_kinds_meta[];    /* damage_meta.c */
extern const struct md_kind md_kinds_inode[];   /* damage_inode.c */
extern const struct md_kind md_kinds_dir[];     /* damage_dir.c */
extern const struct md_kind md_kinds_log[];     /* damage_log.c */
extern const struct md_kind md_kinds_dx[];      /* damage_dx.c */

#endif /* MISCFS_MKDAMAGE_H */
