/*
 * jdata.c - journalled file data: every regular file of a data=journal
 * mount, and files with the j attribute (chattr +j, FS_JOURNAL_DATA_FL)
 * on any mount.
 *
 * Deferred journalled writeback.  On a file's pages PG_fs_misc means
 * "awaiting journalling" (on a directory's it means "validated": one bit,
 * its meaning set by the mapping's kind).  A write into blocks the file
 * has, within its size, only copies into the page, marks it dirty and sets
 * the flag (mfs_jdata_set_page_dirty); it journals no data.  Later this
 * file's thread (each commit interval, or when the page cache's writeback
 * meets such pages and declines them), fsync, sync, eviction and unmount
 * gather every such page of the file into the running transaction: a
 * handle first, then the mapping's writeback pass hands the dirty pages
 * over locked, and each is journalled once and its flag cleared with
 * end_page_fs_misc.  A page rewritten a thousand times before that is
 * logged once.  The journal writes it home at checkpoint time.
 *
 * A page is not changed under the journal's feet because the journal
 * copies it (jnl_journal_data) under its page lock, which every write
 * holds while it fills the page: the log never holds a torn copy, and a
 * checkpoint writes that copy home, never bytes written since.  Nothing
 * sleeps on PG_fs_misc itself: the page lock is what keeps a page still.
 *
 * A write that gives the file a block or makes it longer journals the
 * pages it touches at once, in its own handle (file.c): the transaction
 * that maps the block or grows i_size then carries the bytes too, so a
 * crash never shows the new block or size with stale contents.
 *
 * A pending page carries PG_private (the node), so that a truncation
 * calls invalidatepage and its pending state ends there.  A page dropped
 * from the cache after journalling is read back from the journal's copy
 * until the block is home (mfs_jdata_readpages).  Freed blocks of a
 * journalled file are revoked, as metadata blocks are: an old copy in the
 * log must not land on the block's next owner at replay.
 *
 * Lock order: jd->round (one gathering of the queue), the handle, then
 * the mapping's writeback lock (taken by pc_write_and_wait_range_for),
 * page locks, j_lock; jd->lock is a leaf.
 */
#include "mfs_i.h"
#include "blockmap.h"
#include "icache.h"
#include "jdata.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Pages one gathering handle journals at most, fewer where the journal's
 * transactions are smaller. */
#define JD_CREDITS 128u

struct mfs_jdata {
	/* One gathering of the queue at a time, held across it, before any
	 * handle: a sync waits for the files the thread has taken. */
	pthread_mutex_t round;
	pthread_mutex_t lock;        /* leaf: everything below */
	pthread_cond_t cond;
	uint32_t *queue;             /* inodes with pages awaiting journalling */
	size_t n, cap;
	bool kicked, stop, started;
	unsigned int interval_ms;
	pthread_t thread;
};

/*
 * One gathering pass (mfs_jdata_flush): its own writeback pass of the
 * file's mapping, and what it may journal under its handle.  The page
 * cache hands that pass's batches to w.writepages (gather_pages), which
 * gets back here with ut_container_of; every other pass (the flusher, a
 * sync of the cache or of the file, a commit's ordered data) goes to the
 * mapping's own writepages, which has no handle and declines.  So the
 * handle reaches only the function of the pass that started it, with its
 * type, and nothing any other pass sees says whether one is about: no
 * untyped pointer in the page cache's pass state that every writepages
 * would have to test and cast.
 */
struct jd_pass {
	struct pc_writer w;
	struct mfs_node *n;
	struct mfs_handle *h;
	uint32_t left;               /* pages it may still take */
	uint32_t done;
	bool more;                   /* pages were left for another handle */
};

bool mfs_jdata_wanted(const struct mfs_node *n)
{
	return S_ISREG(le16toh(n->raw.i_mode)) &&
	       (n->fs->opts.data == MFS_DATA_JOURNAL ||
		(le32toh(n->raw.i_flags) & MFS_JOURNAL_DATA_FL));
}

int mfs_jdata_setup(struct mfs_node *n)
{
	bool want = mfs_jdata_wanted(n);
	int err = n->map ? mfs_map_set_journalled(n, want) : 0;

	if (!err)
		atomic_store(&n->jdata, want && n->map);
	return err;
}

int mfs_jdata_prepare_switch(struct mfs_node *n)
{
	struct mfs_fs *fs = n->fs;
	int err = mfs_jdata_flush(n);

	if (!err && n->map)
		err = pc_sync_mapping(n->map);
	if (!err && fs->j)
		err = jnl_sync(fs->j);
	if (!err && fs->j)
		err = jnl_checkpoint(fs->j);
	return err;
}

/* ---- the queue ----------------------------------------------------------- */

static void queue_node(struct mfs_node *n)
{
	struct mfs_jdata *jd = n->fs->jd;

	if (!jd)
		return;
	pthread_mutex_lock(&jd->lock);
	if (!n->jd_queued && jd->n == jd->cap) {
		size_t cap = jd->cap ? jd->cap * 2 : 64;
		uint32_t *q = realloc(jd->queue, cap * sizeof(*q));

		if (q) {
			jd->queue = q;
			jd->cap = cap;
		}
	}
	/* Without room the node stays off the queue; its next page dirtied
	 * or declined tries again, and eviction journals it anyway. */
	if (!n->jd_queued && jd->n < jd->cap) {
		jd->queue[jd->n++] = n->ino;
		n->jd_queued = true;
	}
	pthread_mutex_unlock(&jd->lock);
}

static void kick(struct mfs_fs *fs)
{
	struct mfs_jdata *jd = fs->jd;

	if (!jd)
		return;
	pthread_mutex_lock(&jd->lock);
	jd->kicked = true;
	pthread_cond_signal(&jd->cond);
	pthread_mutex_unlock(&jd->lock);
}

/* ---- pages --------------------------------------------------------------- */

/* The page (locked) is no longer awaiting journalling. */
static void end_pending(struct mfs_node *n, struct pc_page *pg)
{
	if (PagePrivate(pg) && pg->private == n)
		pc_detach_private(pg);
	if (PageMiscFS(pg)) {
		end_page_fs_misc(pg);
		atomic_fetch_sub(&n->fs->st.jdata_pending, 1);
	}
}

int mfs_jdata_set_page_dirty(struct mfs_node *n, struct pc_page *pg)
{
	if (!TestSetPageMiscFS(pg)) {
		if (!PagePrivate(pg))
			pc_attach_private(pg, n);
		atomic_fetch_add(&n->fs->st.jdata_pending, 1);
		queue_node(n);
	}
	return pc_set_page_dirty_default(pg);
}

void mfs_jdata_invalidatepage(struct mfs_node *n, struct pc_page *pg,
			      uint32_t offset)
{
	if (!offset)
		end_pending(n, pg);
}

static void note_tid(struct mfs_node *n, uint32_t tid)
{
	pthread_mutex_lock(&n->lock);
	n->last_tid = n->last_data_tid = tid;
	n->dirty_tid = true;
	pthread_mutex_unlock(&n->lock);
}

/* Journal one locked page under the pass's handle.  A page with no block
 * lies past the end of the file: there is nothing to keep. */
static int journal_page(struct mfs_node *n, struct jd_pass *p, struct pc_page *pg)
{
	uint64_t pblk;
	int err = mfs_bmap_lookup(n, pc_page_index(pg), &pblk);

	if (!err && pblk)
		err = jnl_journal_data(&p->h->jh, pg, pblk);
	if (err)
		return err;
	/* Before the page stops pending: an fsync that finds it clean must
	 * wait for this handle's transaction. */
	note_tid(n, p->h->jh.h_tid);
	end_pending(n, pg);
	p->left--;
	p->done++;
	atomic_fetch_add(&n->fs->st.jdata_journalled, 1);
	return 0;
}

/*
 * Writeback of a journalled file in any pass but its gathering (the
 * flusher, a sync of the cache or of the file): it runs where no handle
 * may start, so it declines the pages, which stay dirty, and wakes this
 * file's thread to journal them.
 */
int mfs_jdata_writepages(struct mfs_node *n, struct pc_page **pages,
			 unsigned int nr, const struct pc_wbc *wbc)
{
	(void)wbc;
	for (unsigned int i = 0; i < nr; i++) {
		pc_set_page_dirty_default(pages[i]);
		pc_unlock_page(pages[i]);
	}
	queue_node(n);
	kick(n->fs);
	return 0;
}

/* The gathering pass's writepages: journal the pages under its handle,
 * up to its credits; the rest stay dirty for the next handle. */
static int gather_pages(struct pc_writer *w, struct pc_mapping *m,
			struct pc_page **pages, unsigned int nr,
			const struct pc_wbc *wbc)
{
	struct jd_pass *p = ut_container_of(w, struct jd_pass, w);
	int err = 0;

	(void)m;
	(void)wbc;
	for (unsigned int i = 0; i < nr; i++) {
		struct pc_page *pg = pages[i];
		int e = p->left ? journal_page(p->n, p, pg) : 1;

		if (e) {
			pc_set_page_dirty_default(pg);
			p->more = true;
			if (e < 0 && !err)
				err = e;
		}
		pc_unlock_page(pg);
	}
	return err;
}

/*
 * Only within i_size, as map_page() reads: a truncation sets the size,
 * drops the pages and then frees the blocks, and a page read in between
 * must come back as a hole, not from the journal's copy of a block about
 * to go (it would stay cached past the end, and show when the file grows).
 */
bool mfs_jdata_read_page(struct mfs_node *n, struct pc_page *pg)
{
	uint64_t pblk = 0;

	if (mfs_page_past_eof(n, pc_page_index(pg)) ||
	    mfs_bmap_lookup(n, pc_page_index(pg), &pblk) || !pblk ||
	    jnl_read_data(n->fs->j, pblk, pg->data) != 1)
		return false;
	pc_end_read(pg, 0);
	return true;
}

/* ---- gathering ----------------------------------------------------------- */

int mfs_jdata_flush(struct mfs_node *n)
{
	struct mfs_fs *fs = n->fs;
	struct jd_pass p;
	uint32_t credits;
	int err;

	if (!atomic_load(&n->jdata) || !fs->j)
		return 0;
	credits = UT_MIN(JD_CREDITS, jnl_max_credits(fs->j));
	do {
		struct mfs_handle h;

		p = (struct jd_pass){ .w.writepages = gather_pages, .n = n,
				      .h = &h, .left = credits };
		err = mfs_jstart(fs, credits, &h);
		if (err)
			return err;
		err = pc_write_and_wait_range_for(n->map, 0, UINT64_MAX, &p.w);
		err = mfs_jstop(fs, &h, err);
	} while (!err && p.more);
	return err;
}

/*
 * Nothing but a handle cleans a pending page, and a writer allocates its
 * pages inside one: when every page of the cache awaits journalling, its
 * allocation fails.  The thread, woken by declined writeback, may not
 * keep up with a big rewrite, so the writer journals its file itself.
 */
int mfs_jdata_balance(struct mfs_node *n)
{
	struct pc_stats st;

	if (!atomic_load(&n->jdata))
		return 0;
	pc_get_stats(n->fs->cache, &st);
	if (atomic_load(&n->fs->st.jdata_pending) <= st.max_pages / 4)
		return 0;
	return mfs_jdata_flush(n);
}

/* Take the queue, leaving it empty. */
static uint32_t *take_queue(struct mfs_jdata *jd, size_t *n)
{
	uint32_t *q;

	pthread_mutex_lock(&jd->lock);
	q = jd->queue;
	*n = jd->n;
	jd->queue = NULL;
	jd->n = jd->cap = 0;
	pthread_mutex_unlock(&jd->lock);
	return q;
}

static int flush_ino(struct mfs_fs *fs, uint32_t ino)
{
	struct mfs_node *n;
	int err;

	/* Evicted, it was journalled first; freed since, it is no file at
	 * all (reading it back would take its free slot for damage). */
	if (mfs_iget_cached(fs, ino, &n))
		return 0;
	pthread_mutex_lock(&fs->jd->lock);
	n->jd_queued = false;        /* pages dirtied from now on queue it again */
	pthread_mutex_unlock(&fs->jd->lock);
	err = mfs_jdata_flush(n);
	/* A filesystem that stopped writing has said so once already. */
	if (err && err != -EROFS)
		mlog_err("inode %" PRIu32 ": journalling its data failed: %s",
			 ino, strerror(-err));
	mfs_iput(n);
	return err;
}

int mfs_jdata_flush_all(struct mfs_fs *fs)
{
	size_t n;
	uint32_t *q;
	int err = 0;

	if (!fs->jd)
		return 0;
	pthread_mutex_lock(&fs->jd->round);
	q = take_queue(fs->jd, &n);
	for (size_t i = 0; i < n; i++) {
		int e = flush_ino(fs, q[i]);

		err = err ? err : e;
	}
	pthread_mutex_unlock(&fs->jd->round);
	free(q);
	return err;
}

/* ---- the thread ---------------------------------------------------------- */

static void *jd_thread(void *arg)
{
	struct mfs_fs *fs = arg;
	struct mfs_jdata *jd = fs->jd;

	pthread_mutex_lock(&jd->lock);
	while (!jd->stop) {
		if (!jd->kicked) {
			struct timespec until;

			clock_gettime(CLOCK_MONOTONIC, &until);
			until.tv_sec += jd->interval_ms / 1000;
			until.tv_nsec += (long)(jd->interval_ms % 1000) * 1000000;
			until.tv_sec += until.tv_nsec / 1000000000;
			until.tv_nsec %= 1000000000;
			pthread_cond_timedwait(&jd->cond, &jd->lock, &until);
		}
		jd->kicked = false;
		if (jd->stop || !jd->n)
			continue;
		pthread_mutex_unlock(&jd->lock);
		mfs_jdata_flush_all(fs);
		pthread_mutex_lock(&jd->lock);
	}
	pthread_mutex_unlock(&jd->lock);
	return NULL;
}

int mfs_jdata_start(struct mfs_fs *fs)
{
	struct mfs_jdata *jd = calloc(1, sizeof(*jd));
	pthread_condattr_t ca;
	int err;

	if (!jd)
		return -ENOMEM;
	pthread_mutex_init(&jd->round, NULL);
	pthread_mutex_init(&jd->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&jd->cond, &ca);
	pthread_condattr_destroy(&ca);
	jd->interval_ms = (fs->opts.commit_s ? fs->opts.commit_s : 5) * 1000u;
	fs->jd = jd;
	err = -pthread_create(&jd->thread, NULL, jd_thread, fs);
	jd->started = !err;
	if (err)
		mlog_err("cannot start the journalled-data thread: %s", strerror(-err));
	return err;
}

void mfs_jdata_stop(struct mfs_fs *fs)
{
	struct mfs_jdata *jd = fs->jd;

	if (!jd)
		return;
	pthread_mutex_lock(&jd->lock);
	jd->stop = true;
	pthread_cond_signal(&jd->cond);
	pthread_mutex_unlock(&jd->lock);
	if (jd->started)
		pthread_join(jd->thread, NULL);
	jd->started = false;
	mfs_jdata_flush_all(fs);
	/* Eviction at unmount journals whatever is queued from now on.  The
	 * queue itself stays: the flusher and a commit's writeback may still
	 * add to it (queue_node, kick) until the page cache stops. */
}

void mfs_jdata_free(struct mfs_fs *fs)
{
	struct mfs_jdata *jd = fs->jd;

	if (!jd)
		return;
	fs->jd = NULL;
	free(jd->queue);
	pthread_cond_destroy(&jd->cond);
	pthread_mutex_destroy(&jd->lock);
	pthread_mutex_destroy(&jd->round);
	free(jd);
}
