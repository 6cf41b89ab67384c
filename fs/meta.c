/*
 * meta.c - metadata blocks of the mounted filesystem: reading them through
 * the metadata mapping, changing them under a journal handle, the group
 * descriptors, and the one path every detected error takes.
 */
#include "mfs_i.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

static void count_error(struct mfs_fs *fs, const char *func)
{
	atomic_fetch_add(&fs->st.errors, 1);
	pthread_mutex_lock(&fs->error_lock);
	for (unsigned int i = 0; i < MFS_ERROR_FUNCS; i++) {
		if (fs->error_at[i].func && fs->error_at[i].func != func)
			continue;
		fs->error_at[i].func = func;
		fs->error_at[i].count++;
		break;
	}
	pthread_mutex_unlock(&fs->error_lock);
}

int mfs_error_at(struct mfs_fs *fs, const char *func, const char *fmt, ...)
{
	char line[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	mlog_err("%s: %s", func, line);
	count_error(fs, func);
	atomic_store(&fs->had_error, true);
	if (fs->opts.errors == MFS_ERRORS_RO && !atomic_exchange(&fs->ro, true))
		mlog_err("errors=remount-ro: the filesystem is now read-only");
	mfs_error_record(fs);
	return -EUCLEAN;
}

int mfs_check_rw(struct mfs_fs *fs)
{
	return atomic_load(&fs->ro) ? -EROFS : 0;
}

int mfs_meta_read(struct mfs_fs *fs, uint64_t blk, struct pc_page **pg)
{
	int err;

	if (blk >= fs->nblocks)
		return mfs_error(fs, "metadata block %" PRIu64 " is outside the "
				 "filesystem", blk);
	err = pc_read_cache_page(fs->meta, blk, pg);
	if (err == -EIO)
		mlog_err("cannot read metadata block %" PRIu64, blk);
	return err;
}

int mfs_journal_access(struct mfs_fs *fs, struct mfs_handle *h,
		       struct pc_page *pg, uint64_t blk)
{
	int err = jnl_get_write_access(&h->jh, pg, blk);

	if (err == -EUCLEAN)
		return mfs_error(fs, "block %" PRIu64 " has two owners: the journal "
				 "holds it for another still", blk);
	return err;
}

/* A block that gets new content from scratch: no read, zeroed under its
 * page lock after the journal knows about it. */
static int meta_fresh(struct mfs_fs *fs, struct mfs_handle *h, uint64_t blk,
		      struct pc_page **out)
{
	struct pc_page *pg;
	int err = pc_find_or_create_page(fs->meta, blk, &pg);

	if (err)
		return err;
	err = mfs_journal_access(fs, h, pg, blk);
	if (!err) {
		memset(pg->data, 0, fs->bs);
		SetPageUptodate(pg);
		ClearPageError(pg);
	}
	pc_unlock_page(pg);
	if (err) {
		pc_put_page(pg);
		return err;
	}
	*out = pg;
	return 0;
}

int mfs_meta_access(struct mfs_fs *fs, struct mfs_handle *h, uint64_t blk,
		    bool fresh, struct pc_page **pg)
{
	int err;

	if (blk >= fs->nblocks)
		return mfs_error(fs, "metadata block %" PRIu64 " is outside the "
				 "filesystem", blk);
	if (fresh)
		return meta_fresh(fs, h, blk, pg);
	err = mfs_meta_read(fs, blk, pg);
	if (err)
		return err;
	err = mfs_journal_access(fs, h, *pg, blk);
	if (err)
		pc_put_page(*pg);
	return err;
}

int mfs_meta_dirty(struct mfs_fs *fs, struct mfs_handle *h, uint64_t blk,
		   struct pc_page *pg)
{
	(void)fs;
	(void)pg;
	return jnl_dirty(&h->jh, blk);
}

int mfs_jstart_by(struct mfs_fs *fs, uint32_t credits, struct mfs_resv *resv,
		  struct mfs_handle *h, const char *caller)
{
	int err = mfs_check_rw(fs);

	if (err)
		return err;
	h->resv = resv;
	atomic_fetch_add(&fs->st.handles, 1);
	return jnl_start_by(fs->j, credits, &h->jh, caller);
}

int mfs_jstop(struct mfs_fs *fs, struct mfs_handle *h, int err)
{
	int e = jnl_stop(&h->jh);

	(void)fs;
	return err ? err : e;
}

/* ---- group descriptors --------------------------------------------------- */

struct mfs_group_desc *mfs_gdesc(struct mfs_fs *fs, uint32_t g,
				 struct pc_page **pg)
{
	uint32_t per_block = fs->bs / MFS_DESC_SIZE;
	struct pc_page *p = fs->gdt[g / per_block];
	uint32_t off = (g % per_block) * MFS_DESC_SIZE;

	if (pg)
		*pg = p;
	return (struct mfs_group_desc *)((char *)p->data + off);
}

static int gdesc_check(struct mfs_fs *fs, uint32_t g,
		       const struct mfs_group_desc *gd)
{
	uint64_t first = fmt_group_first_block(&fs->sb, g);
	uint64_t end = first + fmt_group_nblocks(&fs->sb, g);
	uint64_t bb = le32toh(gd->bg_block_bitmap), ib = le32toh(gd->bg_inode_bitmap);
	uint64_t it = le32toh(gd->bg_inode_table);

	if (le32toh(gd->bg_checksum) != fmt_gdesc_csum(&fs->sb, g, gd))
		return mfs_error(fs, "group descriptor %" PRIu32 ": checksum mismatch", g);
	if (bb < first || bb >= end || ib < first || ib >= end || it < first ||
	    it + fmt_itable_blocks(&fs->sb) > end)
		return mfs_error(fs, "group descriptor %" PRIu32 ": bitmaps or inode "
				 "table outside the group", g);
	if (le32toh(gd->bg_free_blocks_count) > fmt_group_nblocks(&fs->sb, g) ||
	    le32toh(gd->bg_free_inodes_count) > fs->ipg ||
	    le32toh(gd->bg_used_dirs_count) > fs->ipg)
		return mfs_error(fs, "group descriptor %" PRIu32 ": counts exceed the "
				 "group's size", g);
	return 0;
}

/* Read and check every descriptor; the free counts of the superblock are
 * recomputed from them (docs/FORMAT.md, "Free counts"). */
int mfs_gdt_load(struct mfs_fs *fs)
{
	uint32_t n = le16toh(fs->sb.s_gdt_blocks), off;
	uint64_t first = fmt_gdesc_block(&fs->sb, 0, &off);
	struct pc_page **pages = fs->gdt;
	int err = 0;

	for (uint32_t i = 0; i < n && !err; i++)
		err = mfs_meta_read(fs, first + i, &pages[i]);
	for (uint32_t g = 0; g < fs->ngroups && !err; g++) {
		const struct mfs_group_desc *gd = mfs_gdesc(fs, g, NULL);

		err = gdesc_check(fs, g, gd);
		fs->free_blocks += le32toh(gd->bg_free_blocks_count);
		fs->free_inodes += le32toh(gd->bg_free_inodes_count);
	}
	return err;
}

void mfs_gdt_put(struct mfs_fs *fs)
{
	uint32_t n = le16toh(fs->sb.s_gdt_blocks);
	struct pc_page **pages = fs->gdt;

	for (uint32_t i = 0; i < n; i++) {
		if (pages[i])
			pc_put_page(pages[i]);
		pages[i] = NULL;
	}
}

/* ---- the superblock under the journal ------------------------------------ */

static struct mfs_super *sb_in_page(struct pc_page *pg)
{
	return (struct mfs_super *)((char *)pg->data +
				    MFS_SB_OFFSET % pc_block_size(
					    pc_mapping_cache(pc_page_mapping(pg))));
}

int mfs_sb_journal(struct mfs_fs *fs, struct mfs_handle *h)
{
	uint64_t blk = MFS_SB_OFFSET / fs->bs;
	struct mfs_super *sb;
	struct pc_page *pg;
	int err = mfs_meta_access(fs, h, blk, false, &pg);

	if (err)
		return err;
	pc_lock_page(pg);
	sb = sb_in_page(pg);
	sb->s_last_orphan = htole32(fs->orphan_head);   /* orphan_lock held */
	fmt_sb_set_csum(sb);
	pc_unlock_page(pg);
	err = mfs_meta_dirty(fs, h, blk, pg);
	pc_put_page(pg);
	return err;
}
