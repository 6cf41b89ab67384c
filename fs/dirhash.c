/*
 * dirhash.c - the in-memory index of a big directory (docs/DESIGN.md,
 * "Big directories"): names to their place, and the room in each block.
 *
 * Names are found through an open-addressed table of (hash, place)
 * slots: 32 bits of the name's XXH3 hash, seeded per mount so that
 * nobody can choose names that collide, and the place packed as
 * block << shift | offset / 4.  The table keeps no names; a caller checks
 * each candidate against the block, so a collision costs one more block.
 * Linear probing with deletion by backward shift leaves no tombstones, so
 * a directory that churns never needs a rebuild.
 *
 * Each block's room (the largest record an insert could place in it) is
 * kept, and blocks are linked in lists by room in 4-byte steps, so that
 * finding a block with room for a name is a walk over at most 67 list
 * heads, whatever the directory's size.
 *
 * Memory is charged against the mount's budget (fs->dh_max); when a new
 * index or a growing one does not fit, the least recently used indexes
 * of other directories are dropped: only those not used lately
 * (MFS_DH_AGE) and whose dh_lock is free at once (a trylock, so no lock
 * order is implied).  The caller holds the directory's dh_lock for
 * everything here.
 */
#include "mfs_i.h"
#include "dir.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

/* Rooms from 0 to the largest record, in 4-byte classes. */
#define ROOM_CAP MFS_DIRENT_LEN(MFS_NAME_LEN)
#define NCLASS (ROOM_CAP / 4 + 1)
#define NIL UINT32_MAX
#define MIN_SLOTS 64u

struct dh_slot {
	uint32_t h;                      /* 0: empty */
	uint32_t loc;
};

struct mfs_dirhash {
	struct mfs_node *dir;
	struct dh_slot *slot;
	uint32_t mask, count;            /* slots - 1; names */
	uint32_t shift;                  /* loc = lblk << shift | off / 4 */
	uint32_t nblocks, cap_blocks;
	uint16_t *room;                  /* per block */
	uint32_t *next, *prev;           /* the block lists by room class */
	uint32_t head[NCLASS];
	size_t bytes;                    /* charged to fs->dh_bytes */
	uint64_t used;                   /* fs->dh_clock at the last use */
	struct ut_list lru;              /* fs->dh_lru, under fs->dh_list_lock */
};

uint64_t mfs_dh_hash(struct mfs_fs *fs, const char *name, size_t len)
{
	return XXH3_64bits_withSeed(name, len, fs->dh_seed);
}

static uint32_t slot_hash(uint64_t hash)
{
	uint32_t h = (uint32_t)hash;

	return h ? h : 1;
}

/* ---- memory -------------------------------------------------------------- */

/* Drop @dh from the LRU and give its bytes back (dh_list_lock held). */
static void unlist(struct mfs_fs *fs, struct mfs_dirhash *dh)
{
	ut_list_del(&dh->lru);
	fs->dh_bytes -= dh->bytes;
	fs->dh_count--;
}

static void dh_free(struct mfs_dirhash *dh)
{
	free(dh->slot);
	free(dh->room);
	free(dh->next);
	free(dh->prev);
	free(dh);
}

/* Drop the least recently used index other than @self, if it has not
 * been used lately and its directory lock is free now; false if there is
 * none (dh_list_lock held). */
static bool reclaim_one(struct mfs_fs *fs, struct mfs_dirhash *self)
{
	uint64_t now = atomic_load(&fs->dh_clock);
	struct ut_list *pos, *tmp;

	ut_list_for_each_safe(pos, tmp, &fs->dh_lru) {
		struct mfs_dirhash *dh = ut_list_entry(pos, struct mfs_dirhash, lru);
		struct mfs_node *dir = dh->dir;

		if (now - dh->used < MFS_DH_AGE)
			break;          /* this one and all after it are in use */
		if (dh == self || pthread_mutex_trylock(&dir->dh_lock))
			continue;
		unlist(fs, dh);
		dir->dh = NULL;
		pthread_mutex_unlock(&dir->dh_lock);
		dh_free(dh);
		atomic_fetch_add(&fs->st.dirhash_drops, 1);
		return true;
	}
	return false;
}

/* Charge @bytes more to @dh, dropping other indexes to make room;
 * -ENOMEM if the budget cannot hold it. */
static int charge(struct mfs_dirhash *dh, size_t bytes)
{
	struct mfs_fs *fs = dh->dir->fs;
	int err = 0;

	pthread_mutex_lock(&fs->dh_list_lock);
	while (!err && fs->dh_bytes + bytes > fs->dh_max)
		if (!reclaim_one(fs, dh))
			err = -ENOMEM;
	if (!err) {
		fs->dh_bytes += bytes;
		dh->bytes += bytes;
	}
	pthread_mutex_unlock(&fs->dh_list_lock);
	return err;
}

static void uncharge(struct mfs_dirhash *dh, size_t bytes)
{
	struct mfs_fs *fs = dh->dir->fs;

	pthread_mutex_lock(&fs->dh_list_lock);
	fs->dh_bytes -= bytes;
	dh->bytes -= bytes;
	pthread_mutex_unlock(&fs->dh_list_lock);
}

/* ---- the table ----------------------------------------------------------- */

static void put_slot(struct mfs_dirhash *dh, uint32_t h, uint32_t loc)
{
	uint32_t i = h & dh->mask;

	while (dh->slot[i].h)
		i = (i + 1) & dh->mask;
	dh->slot[i] = (struct dh_slot){ h, loc };
}

/* Twice the slots when the table would pass three quarters full. */
static int grow_table(struct mfs_dirhash *dh)
{
	uint32_t old = dh->mask + 1, n = old * 2;
	size_t bytes = (size_t)n * sizeof(struct dh_slot);
	struct dh_slot *prev = dh->slot, *slot;
	int err;

	if ((dh->count + 1) * 4ull <= old * 3ull)
		return 0;
	err = old >= (1u << 31) ? -ENOMEM : charge(dh, bytes);
	if (err)
		return err;
	slot = calloc(n, sizeof(*slot));
	if (!slot) {
		uncharge(dh, bytes);
		return -ENOMEM;
	}
	dh->slot = slot;
	dh->mask = n - 1;
	for (uint32_t i = 0; i < old; i++)
		if (prev[i].h)
			put_slot(dh, prev[i].h, prev[i].loc);
	free(prev);
	uncharge(dh, (size_t)old * sizeof(struct dh_slot));
	return 0;
}

static bool fits(const struct mfs_dirhash *dh, uint64_t lblk)
{
	return lblk < (1ull << (32 - dh->shift));
}

int mfs_dh_add(struct mfs_dirhash *dh, uint64_t hash, uint64_t lblk, uint32_t off)
{
	int err = fits(dh, lblk) ? grow_table(dh) : -EFBIG;

	if (err)
		return err;
	put_slot(dh, slot_hash(hash), (uint32_t)(lblk << dh->shift) | off / 4);
	dh->count++;
	return 0;
}

/* Slot @i is empty now: move back every later slot of its run that may
 * live there (its home is not cyclically in (i, j]). */
static void close_gap(struct mfs_dirhash *dh, uint32_t i)
{
	for (uint32_t j = (i + 1) & dh->mask; dh->slot[j].h; j = (j + 1) & dh->mask) {
		uint32_t home = dh->slot[j].h & dh->mask;
		bool stays = i < j ? (home > i && home <= j) : (home > i || home <= j);

		if (stays)
			continue;
		dh->slot[i] = dh->slot[j];
		i = j;
	}
	dh->slot[i].h = 0;
}

int mfs_dh_del(struct mfs_dirhash *dh, uint64_t hash, uint64_t lblk, uint32_t off)
{
	uint32_t h = slot_hash(hash), i = h & dh->mask;
	uint32_t loc = (uint32_t)(lblk << dh->shift) | off / 4;

	if (!fits(dh, lblk))
		return -ENOENT;
	while (dh->slot[i].h && (dh->slot[i].h != h || dh->slot[i].loc != loc))
		i = (i + 1) & dh->mask;
	if (!dh->slot[i].h)
		return -ENOENT;
	close_gap(dh, i);
	dh->count--;
	return 0;
}

int mfs_dh_lookup(const struct mfs_dirhash *dh, uint64_t hash,
		  struct mfs_dh_place *out, int max)
{
	uint32_t h = slot_hash(hash), i = h & dh->mask, mask = (1u << dh->shift) - 1;
	int n = 0;

	for (; dh->slot[i].h; i = (i + 1) & dh->mask) {
		if (dh->slot[i].h != h)
			continue;
		if (n < max)
			out[n] = (struct mfs_dh_place){ dh->slot[i].loc >> dh->shift,
							(dh->slot[i].loc & mask) * 4 };
		n++;
	}
	return n;
}

uint32_t mfs_dh_count(const struct mfs_dirhash *dh)
{
	return dh->count;
}

/* ---- room per block ------------------------------------------------------ */

static uint32_t room_class(uint32_t room)
{
	return (room < ROOM_CAP ? room : ROOM_CAP) / 4;
}

static void unlink_block(struct mfs_dirhash *dh, uint32_t b)
{
	uint32_t c = room_class(dh->room[b]);

	if (dh->prev[b] != NIL)
		dh->next[dh->prev[b]] = dh->next[b];
	else
		dh->head[c] = dh->next[b];
	if (dh->next[b] != NIL)
		dh->prev[dh->next[b]] = dh->prev[b];
}

static void link_block(struct mfs_dirhash *dh, uint32_t b)
{
	uint32_t c = room_class(dh->room[b]);

	dh->prev[b] = NIL;
	dh->next[b] = dh->head[c];
	if (dh->head[c] != NIL)
		dh->prev[dh->head[c]] = b;
	dh->head[c] = b;
}

static int resize_blocks(struct mfs_dirhash *dh, uint32_t n)
{
	size_t per = sizeof(*dh->room) + sizeof(*dh->next) + sizeof(*dh->prev);
	uint16_t *room;
	uint32_t *next, *prev;
	int err = charge(dh, (size_t)(n - dh->cap_blocks) * per);

	if (err)
		return err;
	room = realloc(dh->room, n * sizeof(*room));
	if (room)
		dh->room = room;
	next = room ? realloc(dh->next, n * sizeof(*next)) : NULL;
	if (next)
		dh->next = next;
	prev = next ? realloc(dh->prev, n * sizeof(*prev)) : NULL;
	if (prev)
		dh->prev = prev;
	if (!prev) {
		uncharge(dh, (size_t)(n - dh->cap_blocks) * per);
		return -ENOMEM;
	}
	dh->cap_blocks = n;
	return 0;
}

int mfs_dh_set_room(struct mfs_dirhash *dh, uint64_t lblk, uint32_t room)
{
	uint32_t b = (uint32_t)lblk;
	int err = 0;

	if (!fits(dh, lblk) || lblk > dh->nblocks)
		return -EFBIG;       /* blocks come in order, and must fit a loc */
	if (b == dh->cap_blocks)
		err = resize_blocks(dh, b < 8 ? 16 : b * 2);
	if (err)
		return err;
	if (b < dh->nblocks)
		unlink_block(dh, b);
	else
		dh->nblocks++;
	dh->room[b] = (uint16_t)room;
	link_block(dh, b);
	return 0;
}

int64_t mfs_dh_find_room(const struct mfs_dirhash *dh, uint32_t need)
{
	for (uint32_t c = room_class(need); c < NCLASS; c++)
		if (dh->head[c] != NIL)
			return dh->head[c];
	return -1;
}

/* ---- life ---------------------------------------------------------------- */

int mfs_dh_create(struct mfs_node *dir, struct mfs_dirhash **out)
{
	struct mfs_fs *fs = dir->fs;
	struct mfs_dirhash *dh = calloc(1, sizeof(*dh));
	size_t bytes = sizeof(*dh) + MIN_SLOTS * sizeof(struct dh_slot);
	int err;

	if (!dh)
		return -ENOMEM;
	dh->dir = dir;
	dh->used = atomic_load(&fs->dh_clock);
	dh->shift = (uint32_t)__builtin_ctz(fs->bs / 4);
	dh->mask = MIN_SLOTS - 1;
	for (uint32_t c = 0; c < NCLASS; c++)
		dh->head[c] = NIL;
	ut_list_init(&dh->lru);
	pthread_mutex_lock(&fs->dh_list_lock);
	ut_list_add_tail(&fs->dh_lru, &dh->lru);
	fs->dh_count++;
	pthread_mutex_unlock(&fs->dh_list_lock);
	dh->slot = calloc(MIN_SLOTS, sizeof(*dh->slot));
	err = dh->slot ? charge(dh, bytes) : -ENOMEM;
	if (err) {
		mfs_dh_destroy(dh);
		return err;
	}
	*out = dh;
	return 0;
}

void mfs_dh_destroy(struct mfs_dirhash *dh)
{
	struct mfs_fs *fs = dh->dir->fs;

	pthread_mutex_lock(&fs->dh_list_lock);
	unlist(fs, dh);
	pthread_mutex_unlock(&fs->dh_list_lock);
	dh_free(dh);
}

/* Most recently used last: reclaim takes the oldest first. */
void mfs_dh_touch(struct mfs_dirhash *dh, uint64_t now)
{
	struct mfs_fs *fs = dh->dir->fs;

	pthread_mutex_lock(&fs->dh_list_lock);
	dh->used = now;
	ut_list_del(&dh->lru);
	ut_list_add_tail(&fs->dh_lru, &dh->lru);
	pthread_mutex_unlock(&fs->dh_list_lock);
}
