/*
 * istub.c - what is left of an inode the kernel still knows and nothing
 * else uses: its number and the kernel's lookup count, eight bytes in an
 * open-addressed table (linear probing, deletion by shifting back, no
 * tombstones).  A million inodes in the kernel's dentry cache cost 16 MiB
 * here instead of a full node and mapping each; the node is read back
 * from the inode table when it is used again.  Under fs->icache_lock.
 *
 * The table is mapped on its own, not taken from malloc: when it shrinks
 * (the kernel forgot its inodes, say after drop_caches) its memory goes
 * back to the system at once, where a heap would keep it.
 */
#include "mfs_i.h"
#include "icache.h"

#include <errno.h>
#include <stdlib.h>
#include <sys/mman.h>

/* A slot: the inode number in the low 32 bits, the lookup count in the
 * high 32; 0 is empty (no inode 0). */
#define SLOT_INO(s) ((uint32_t)(s))
#define SLOT_N(s) ((uint32_t)((s) >> 32))
#define SLOT(ino, n) ((uint64_t)(n) << 32 | (ino))
/* The table starts at 2^MIN_BITS slots, doubles past half full and halves
 * below an eighth: its memory follows the kernel's. */
#define MIN_BITS 10u

static uint32_t home(const struct mfs_stubs *t, uint32_t ino)
{
	return (ino * 2654435761u) >> (32 - t->bits);
}

static uint32_t probe(const struct mfs_stubs *t, uint32_t ino)
{
	uint32_t i = home(t, ino);

	while (t->slot[i] && SLOT_INO(t->slot[i]) != ino)
		i = (i + 1) & t->mask;
	return i;
}

static void table_unmap(struct mfs_stubs *t)
{
	if (t->slot)
		munmap(t->slot, ((size_t)t->mask + 1) * sizeof(*t->slot));
}

static int resize(struct mfs_stubs *t, unsigned bits)
{
	struct mfs_stubs n = { .bits = bits, .mask = (1u << bits) - 1, .count = t->count };
	void *mem = mmap(NULL, ((size_t)1 << bits) * sizeof(*n.slot), PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (mem == MAP_FAILED)
		return -ENOMEM;
	n.slot = mem;                    /* zeroed: every slot empty */
	for (uint32_t i = 0; t->slot && i <= t->mask; i++)
		if (t->slot[i])
			n.slot[probe(&n, SLOT_INO(t->slot[i]))] = t->slot[i];
	table_unmap(t);
	*t = n;
	return 0;
}

int mfs_stub_put(struct mfs_stubs *t, uint32_t ino, uint64_t nlookup)
{
	uint32_t i;

	if (!ino || !nlookup || nlookup > UINT32_MAX)
		return -EINVAL;
	if (!t->slot || (t->count + 1) * 2 > t->mask + 1) {
		int err = resize(t, t->slot ? t->bits + 1 : MIN_BITS);

		if (err)
			return err;
	}
	i = probe(t, ino);
	t->count += !t->slot[i];
	t->slot[i] = SLOT(ino, nlookup);
	return 0;
}

/* Empty slot @i, shifting back the ones after it that probed past it. */
static void remove_at(struct mfs_stubs *t, uint32_t i)
{
	for (uint32_t j = (i + 1) & t->mask; t->slot[j]; j = (j + 1) & t->mask) {
		uint32_t h = home(t, SLOT_INO(t->slot[j]));

		/* j's entry may move to i if its home is not in (i, j]. */
		if (((j - h) & t->mask) >= ((j - i) & t->mask)) {
			t->slot[i] = t->slot[j];
			i = j;
		}
	}
	t->slot[i] = 0;
	t->count--;
	if (t->bits > MIN_BITS && t->count * 8 < t->mask + 1)
		resize(t, t->bits - 1);     /* without memory: stays as it is */
}

uint64_t mfs_stub_take(struct mfs_stubs *t, uint32_t ino)
{
	uint32_t i;
	uint64_t n;

	if (!t->slot || !ino)
		return 0;
	i = probe(t, ino);
	if (!t->slot[i])
		return 0;
	n = SLOT_N(t->slot[i]);
	remove_at(t, i);
	return n;
}

bool mfs_stub_forget(struct mfs_stubs *t, uint32_t ino, uint64_t nlookup)
{
	uint32_t i;

	if (!t->slot || !ino)
		return false;
	i = probe(t, ino);
	if (!t->slot[i])
		return false;
	if (SLOT_N(t->slot[i]) <= nlookup)
		remove_at(t, i);
	else
		t->slot[i] = SLOT(ino, SLOT_N(t->slot[i]) - nlookup);
	return true;
}

size_t mfs_stub_bytes(const struct mfs_stubs *t)
{
	return t->slot ? ((size_t)t->mask + 1) * sizeof(*t->slot) : 0;
}

void mfs_stub_free(struct mfs_stubs *t)
{
	table_unmap(t);
	*t = (struct mfs_stubs){ 0 };
}
