/*
 * damage_dir.c - damage to directories: records, checksums, the '.' and
 * '..' entries, and the shape of the tree (loops, cut-off parts, names
 * twice, a directory with two names, lost+found gone).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "mkdamage.h"
#include "util.h"

static struct mfs_dirent *at(struct md_img *d, const struct md_dirent_pos *pos)
{
	return (void *)((char *)d->blk + pos->off);
}

/* Directory holding @path and the last component's name. */
static uint32_t parent_of(struct md_img *d, const char *path, char *name, size_t len)
{
	char dir[256];
	char *slash;

	snprintf(dir, sizeof(dir), "%s", path);
	slash = strrchr(dir, '/');
	snprintf(name, len, "%s", slash + 1);
	*slash = 0;
	return dir[0] ? md_ino(d, dir) : MFS_ROOT_INO;
}

/*
 * The empty files named in d->blk, a block of /many, may be lost: a
 * damaged block may cut their entries off, and fsck may free a
 * zero-length inode it finds unattached rather than reconnect it (as
 * e2fsck does).
 */
static void lost_empties(struct md_img *d)
{
	for (uint32_t off = 0; off < d->bs - MFS_DIR_TAIL_SIZE;) {
		const struct mfs_dirent *de = (void *)((char *)d->blk + off);
		const struct md_entry *e;
		char path[300];

		if (le16toh(de->rec_len) < MFS_DIRENT_LEN(0))
			break;
		off += le16toh(de->rec_len);
		if (!de->inode)
			continue;
		snprintf(path, sizeof(path), "/many/%.*s", de->name_len, de->name);
		e = md_manifest_find(&d->man, path);
		if (e && e->type == 'f' && !e->size)
			md_lost(d, path);
	}
}

/* An entry of /many chosen by the seed, from its second block on; the
 * empty files of its block may be lost. */
static int many_entry(struct md_img *d, uint32_t *dir, struct md_dirent_pos *pos)
{
	char name[64];
	int err;

	*dir = md_ino(d, "/many");
	snprintf(name, sizeof(name), "entry-%03u-with-a-longer-name", 30 + md_pick(d, 80));
	err = *dir ? md_find_entry(d, *dir, name, pos) : -ENOENT;
	if (!err)
		lost_empties(d);
	return err;
}

static int dirent_rec_len(struct md_img *d)
{
	struct md_dirent_pos pos;
	uint32_t dir, old, new;
	int err = many_entry(d, &dir, &pos);

	if (err)
		return err;
	old = le16toh(at(d, &pos)->rec_len);
	new = d->bs - pos.off + 8;
	at(d, &pos)->rec_len = htole16((uint16_t)new);
	md_say("directory %" PRIu32 " (/many) block %" PRIu64 " offset %" PRIu32 ": "
	       "rec_len %" PRIu32 " -> %" PRIu32 " (past the block's end)", dir,
	       pos.pblk, pos.off, old, new);
	return md_put_dirblock(d, dir, pos.pblk);
}

static int dirent_name_len(struct md_img *d)
{
	struct md_dirent_pos pos;
	uint32_t dir, old, new;
	int err = many_entry(d, &dir, &pos);

	if (err)
		return err;
	old = at(d, &pos)->name_len;
	new = UT_MIN(le16toh(at(d, &pos)->rec_len) - 8 + 4, 255);
	at(d, &pos)->name_len = (uint8_t)new;
	md_say("directory %" PRIu32 " (/many) block %" PRIu64 " offset %" PRIu32 ": "
	       "name_len %" PRIu32 " -> %" PRIu32 " (past its record)", dir, pos.pblk,
	       pos.off, old, new);
	return md_put_dirblock(d, dir, pos.pblk);
}

static int dirblock_csum(struct md_img *d)
{
	struct md_dirent_pos pos;
	uint32_t dir, *c;
	int err = many_entry(d, &dir, &pos);

	if (err)
		return err;
	c = (uint32_t *)((char *)d->blk + d->bs - 4);
	md_say("directory %" PRIu32 " (/many) block %" PRIu64 ": checksum 0x%08" PRIx32
	       " -> 0x%08" PRIx32, dir, pos.pblk, le32toh(*c), le32toh(*c) ^ 0x400);
	*c = htole32(le32toh(*c) ^ 0x400);
	return md_write_block(d, pos.pblk, d->blk);
}

static int dirent_free_inode(struct md_img *d)
{
	uint32_t dir = md_ino(d, "/a");
	uint32_t ino = le32toh(d->raw.sb.s_inodes_count) - md_pick(d, 16);
	bool set;
	int err = dir ? md_test_bit(d, MFS_CSUM_IBITMAP, ino, &set) : -ENOENT;

	if (!err && set)
		err = -EEXIST;
	return err ? err : md_add_entry(d, dir, "ghost", ino, MFS_FT_REG_FILE);
}

static int dirent_file_type(struct md_img *d)
{
	const struct md_entry *e = md_pick_entry(d, md_is_data_file);
	struct md_dirent_pos pos;
	char name[256];
	uint32_t dir = e ? parent_of(d, e->path, name, sizeof(name)) : 0;
	int err = dir ? md_find_entry(d, dir, name, &pos) : -ENOENT;

	if (err)
		return err;
	md_say("directory %" PRIu32 " (%s): entry '%s' (inode %" PRIu32 ") file_type "
	       "%u -> %u", dir, md_path(d, dir), name, e->ino, at(d, &pos)->file_type,
	       MFS_FT_FIFO);
	at(d, &pos)->file_type = MFS_FT_FIFO;
	return md_put_dirblock(d, dir, pos.pblk);
}

/* Point entry @name of directory @dir at @ino. */
static int set_entry_in(struct md_img *d, uint32_t dir, const char *name, uint32_t ino)
{
	struct md_dirent_pos pos;
	int err = dir ? md_find_entry(d, dir, name, &pos) : -ENOENT;

	if (err)
		return err;
	md_say("directory %" PRIu32 " (%s): entry '%s' inode %" PRIu32 " -> %" PRIu32,
	       dir, md_path(d, dir), name, le32toh(at(d, &pos)->inode), ino);
	at(d, &pos)->inode = htole32(ino);
	return md_put_dirblock(d, dir, pos.pblk);
}

static int set_entry_ino(struct md_img *d, const char *path, const char *name,
			 uint32_t ino)
{
	return set_entry_in(d, md_ino(d, path), name, ino);
}

/* The inode /lost+found names (not in the manifest: fsck may remake it). */
static uint32_t lost_found_ino(struct md_img *d)
{
	struct md_dirent_pos pos;

	return md_find_entry(d, MFS_ROOT_INO, "lost+found", &pos) ? 0 :
	       le32toh(at(d, &pos)->inode);
}

static int dir_no_dot(struct md_img *d)
{
	return set_entry_ino(d, "/a/b", ".", 0);
}

static int dir_no_dotdot(struct md_img *d)
{
	return set_entry_ino(d, "/a/b/c", "..", 0);
}

static int dir_dotdot_wrong(struct md_img *d)
{
	uint32_t many = md_ino(d, "/many");

	return many ? set_entry_ino(d, "/a/b/c", "..", many) : -ENOENT;
}

/* /loopa leaves the root for /loopa/loopb: loopa -> loopb -> loopa. */
static int dir_loop(struct md_img *d)
{
	uint32_t a = md_ino(d, "/loopa"), b = md_ino(d, "/loopa/loopb");
	int err = a && b ? md_remove_entry(d, MFS_ROOT_INO, "loopa") : -ENOENT;

	if (!err) err = md_add_links(d, MFS_ROOT_INO, -1);
	if (!err) err = md_add_entry(d, b, "loopa", a, MFS_FT_DIR);
	if (!err) err = md_add_links(d, b, 1);
	if (!err) err = set_entry_ino(d, "/loopa", "..", b);
	return err;
}

static bool is_subdir(const struct md_img *d, const struct md_entry *e)
{
	return e->type == 'd' && strchr(e->path + 1, '/');
}

static int dir_unreachable(struct md_img *d)
{
	const struct md_entry *e = md_pick_entry(d, is_subdir);
	char name[256];
	uint32_t dir = e ? parent_of(d, e->path, name, sizeof(name)) : 0;
	int err = dir ? md_remove_entry(d, dir, name) : -ENOENT;

	return err ? err : md_add_links(d, dir, -1);
}

static int file_unreachable(struct md_img *d)
{
	const struct md_entry *e = md_pick_entry(d, md_is_data_file);
	char name[256];
	uint32_t dir = e ? parent_of(d, e->path, name, sizeof(name)) : 0;

	return dir ? md_remove_entry(d, dir, name) : -ENOENT;
}

/* An entry of /many takes the name of the one before it. */
static int dup_names(struct md_img *d)
{
	struct md_dirent_pos pos;
	char name[64], want[64];
	uint32_t dir = md_ino(d, "/many"), i = 1 + md_pick(d, 100);
	int err;

	snprintf(name, sizeof(name), "entry-%03u-with-a-longer-name", i);
	snprintf(want, sizeof(want), "entry-%03u-with-a-longer-name", i - 1);
	err = dir ? md_find_entry(d, dir, name, &pos) : -ENOENT;
	if (err)
		return err;
	memcpy(at(d, &pos)->name, want, strlen(want));
	md_say("directory %" PRIu32 " (/many): entry '%s' (inode %" PRIu32 ") renamed"
	       " '%s', a name already there", dir, name, le32toh(at(d, &pos)->inode), want);
	snprintf(name, sizeof(name), "/many/entry-%03u-with-a-longer-name", i);
	md_lost(d, name);
	snprintf(name, sizeof(name), "/many/entry-%03u-with-a-longer-name", i - 1);
	md_lost(d, name);
	return md_put_dirblock(d, dir, pos.pblk);
}

static int dir_hardlink(struct md_img *d)
{
	uint32_t dir = md_ino(d, "/a"), many = md_ino(d, "/many");

	return dir && many ? md_add_entry(d, dir, "many-again", many, MFS_FT_DIR) : -ENOENT;
}

/* lost+found goes as rmdir would: entry, blocks, inode, counts. */
static int free_lost_found(struct md_img *d, uint32_t ino)
{
	struct mfs_inode in, zero = { 0 };
	uint32_t g = (ino - 1) / le32toh(d->raw.sb.s_inodes_per_group);
	struct mfs_group_desc gd;
	int err = md_get_inode(d, ino, &in);

	for (int i = 0; !err && i < MFS_NDIR_BLOCKS; i++)
		if (in.i_block[i])
			err = md_set_bit(d, MFS_CSUM_BBITMAP, le32toh(in.i_block[i]), false);
	if (!err)
		err = md_set_bit(d, MFS_CSUM_IBITMAP, ino, false);
	if (!err) {
		md_say("inode %" PRIu32 ": cleared", ino);
		err = md_put_inode(d, ino, &zero, false);
	}
	gd = d->raw.gdt[g];
	gd.bg_used_dirs_count = htole32(le32toh(gd.bg_used_dirs_count) - 1);
	return err ? err : md_put_gdesc(d, g, &gd, true);
}

static int lost_found_missing(struct md_img *d)
{
	struct md_dirent_pos pos;
	uint32_t ino;
	int err = md_find_entry(d, MFS_ROOT_INO, "lost+found", &pos);

	if (err)
		return err;
	ino = le32toh(at(d, &pos)->inode);
	err = md_remove_entry(d, MFS_ROOT_INO, "lost+found");
	if (!err)
		err = md_add_links(d, MFS_ROOT_INO, -1);
	return err ? err : free_lost_found(d, ino);
}

/* /lost+found's entry goes from the root, the directory stays. */
static int lost_found_cut(struct md_img *d, uint32_t *lf)
{
	int err;

	*lf = lost_found_ino(d);
	if (!*lf)
		return -ENOENT;
	err = md_remove_entry(d, MFS_ROOT_INO, "lost+found");
	return err ? err : md_add_links(d, MFS_ROOT_INO, -1);
}

/* The name lost+found taken by a file that has no other, the directory
 * gone, and a directory to reconnect. */
static int lost_found_not_dir(struct md_img *d)
{
	const struct md_entry *e = md_pick_entry(d, md_is_data_file);
	char name[256];
	uint32_t dir = e ? parent_of(d, e->path, name, sizeof(name)) : 0;
	int err = dir ? lost_found_missing(d) : -ENOENT;

	if (!err) err = md_remove_entry(d, dir, name);
	if (!err) err = md_add_entry(d, MFS_ROOT_INO, "lost+found", e->ino, MFS_FT_REG_FILE);
	return err ? err : dir_unreachable(d);
}

/* lost+found itself cut off from the root. */
static int lost_found_unreachable(struct md_img *d)
{
	uint32_t lf;

	return lost_found_cut(d, &lf);
}

/* lost+found in a loop cut off from the root: loopa -> loopb ->
 * lost+found -> loopa. */
static int lost_found_loop(struct md_img *d)
{
	uint32_t a = md_ino(d, "/loopa"), b = md_ino(d, "/loopa/loopb"), lf;
	int err = a && b ? lost_found_cut(d, &lf) : -ENOENT;

	if (!err) err = md_remove_entry(d, MFS_ROOT_INO, "loopa");
	if (!err) err = md_add_links(d, MFS_ROOT_INO, -1);
	if (!err) err = md_add_entry(d, b, "lost+found", lf, MFS_FT_DIR);
	if (!err) err = md_add_links(d, b, 1);
	if (!err) err = set_entry_in(d, lf, "..", b);
	if (!err) err = md_add_entry(d, lf, "loopa", a, MFS_FT_DIR);
	if (!err) err = md_add_links(d, lf, 1);
	return err ? err : set_entry_ino(d, "/loopa", "..", lf);
}

/* Every block of lost+found full (of links to /fifo), and a file to
 * reconnect: fsck must grow it. */
static int lost_found_full(struct md_img *d)
{
	uint32_t lf = lost_found_ino(d), fifo = md_ino(d, "/fifo");
	char name[32];
	int err = lf && fifo ? 0 : -ENOENT, n = 0;

	while (!err) {
		snprintf(name, sizeof(name), "fifo-link-%04d", n);
		err = md_add_entry(d, lf, name, fifo, MFS_FT_FIFO);
		n += !err;
	}
	if (err != -ENOSPC)
		return err;
	md_say("# /lost+found holds %d links to /fifo and has no room left", n);
	err = md_add_links(d, fifo, n);
	return err ? err : file_unreachable(d);
}

const struct md_kind md_kinds_dir[] = {
	{ "dirent-rec-len", "a record of /many whose rec_len runs past its block",
	  dirent_rec_len },
	{ "dirent-name-len", "a record of /many whose name_len runs past its rec_len",
	  dirent_name_len },
	{ "dirblock-csum", "a block of /many with a wrong checksum", dirblock_csum },
	{ "dirent-free-inode", "an entry of /a names a free inode", dirent_free_inode },
	{ "dirent-file-type", "a file's entry says fifo", dirent_file_type },
	{ "dir-no-dot", "/a/b has no '.' (its record unused)", dir_no_dot },
	{ "dir-no-dotdot", "/a/b/c has no '..' (its record unused)", dir_no_dotdot },
	{ "dir-dotdot-wrong", "/a/b/c's '..' names /many", dir_dotdot_wrong },
	{ "dir-loop", "/loopa and /loopa/loopb contain each other, cut off from the root",
	  dir_loop },
	{ "dir-unreachable", "a directory's entry removed from its parent",
	  dir_unreachable },
	{ "file-unreachable", "a file's only entry removed", file_unreachable },
	{ "dup-names", "two entries of /many with the same name", dup_names },
	{ "dir-hardlink", "a second entry naming a directory (/a/many-again)",
	  dir_hardlink },
	{ "lost-found-missing", "lost+found removed (entry, inode and blocks freed)",
	  lost_found_missing },
	{ "lost-found-not-dir", "lost+found names a file, and a directory is unreachable",
	  lost_found_not_dir },
	{ "lost-found-unreachable", "lost+found's entry removed from the root",
	  lost_found_unreachable },
	{ "lost-found-loop", "lost+found in a loop of directories cut off from the root",
	  lost_found_loop },
	{ "lost-found-full", "lost+found has no room left, and a file is unreachable",
	  lost_found_full },
	{ NULL, NULL, NULL },
};
