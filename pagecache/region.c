/*
 * region.c - reserved regions: ranges of the device served by
 * mmap(MAP_SHARED) of the device, outside the cache.  A device with no
 * file and no memory of its own (an NBD export) has nothing to map: its
 * region is a copy in memory, read in whole when mapped, whose stores are
 * noted (pc_region_dirty) and written back by pc_region_sync.
 *
 * This is the VM_RESERVED side of removing PageReserved: reserved-ness
 * belongs to the region, not to a page flag.  Region pages have
 * descriptors of their own (so code that works on a struct pc_page can
 * read them) but they are not in the pool: no LRU, no budget, no
 * reference counting, no flusher.  Freeing one through pc_put_page() is
 * caught by the pool check in pc_page_free() (the bad_page analogue), and
 * a range that is not on the device is refused with a log line naming it
 * (the invalid_pfn analogue).
 */
#include "pc_i.h"

#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

struct pc_region {
	struct pc_cache *cache;
	struct bdev *bd;
	void *map;                 /* what mmap returned (NULL: memory device) */
	size_t map_len;
	char *data;                /* byte @off of the device */
	uint64_t off, len;
	uint64_t npages;
	struct pc_page *pages;
	/* A copy (map is anonymous memory): its blocks stored into since
	 * they were last written back, one bit each. */
	bool copy;
	pthread_mutex_t dirty_lock;
	uint64_t *dirty;
};

static int check_region(struct pc_cache *c, struct bdev *bd, uint64_t off,
			uint64_t len, unsigned int flags)
{
	if ((flags & PC_REGION_PRIVATE) && (flags & PC_REGION_WRITE))
		return -EACCES;
	if (!len || off > bd->size || len > bd->size - off) {
		mlog_err("page cache: region [%llu, %llu) lies outside the device "
			 "(%llu bytes)", (unsigned long long)off,
			 (unsigned long long)(off + len),
			 (unsigned long long)bd->size);
		return -EINVAL;
	}
	if (off % c->block_size || len % c->block_size) {
		mlog_err("page cache: region [%llu, %llu) is not aligned to "
			 "%u-byte blocks", (unsigned long long)off,
			 (unsigned long long)(off + len), c->block_size);
		return -EINVAL;
	}
	if ((flags & PC_REGION_WRITE) && bd->read_only)
		return -EROFS;
	return 0;
}

/*
 * Give a writable region of an image file its blocks on the host before
 * it is mapped: a store into a hole of a shared mapping that the host has
 * no room for is SIGBUS, which would kill the process.  Already allocated
 * (mkfs.miscfs allocates the regions), this changes nothing.  A host
 * without fallocate is only warned about.
 */
static int reserve_file(struct pc_region *r)
{
	const char *path = r->bd->path ? r->bd->path : "the device";
	struct stat st;
	int err;

	if (fstat(r->bd->fd, &st) || !S_ISREG(st.st_mode))
		return 0;
	do
		err = fallocate(r->bd->fd, 0, (off_t)r->off, (off_t)r->len) ? -errno : 0;
	while (err == -EINTR);
	if (err == -EOPNOTSUPP) {
		mlog_warn("page cache: region [%llu, %llu) of %s cannot be allocated "
			  "on its host (no fallocate): a store into it may fail "
			  "when the host is full", (unsigned long long)r->off,
			  (unsigned long long)(r->off + r->len), path);
		return 0;
	}
	if (err)
		mlog_err("page cache: cannot allocate region [%llu, %llu) of %s on "
			 "its host: %s", (unsigned long long)r->off,
			 (unsigned long long)(r->off + r->len), path, strerror(-err));
	return err;
}

/* mmap the device file around [off, off + len); mmap wants page offsets. */
static int map_file(struct pc_region *r, unsigned int flags)
{
	uint64_t pg = (uint64_t)sysconf(_SC_PAGESIZE);
	uint64_t start = r->off / pg * pg;
	int prot = PROT_READ | (flags & PC_REGION_WRITE ? PROT_WRITE : 0);
	int share = flags & PC_REGION_PRIVATE ? MAP_PRIVATE : MAP_SHARED;
	void *a;
	int err;

	if ((flags & PC_REGION_WRITE) && (err = reserve_file(r)))
		return err;
	r->map_len = (size_t)(r->off + r->len - start);
	a = mmap(NULL, r->map_len, prot, share, r->bd->fd, (off_t)start);
	if (a == MAP_FAILED) {
		err = -errno;
		mlog_err("page cache: cannot map region [%llu, %llu) of %s: %s",
			 (unsigned long long)r->off,
			 (unsigned long long)(r->off + r->len),
			 r->bd->path ? r->bd->path : "the device", strerror(-err));
		return err;
	}
	r->map = a;
	r->data = (char *)a + (r->off - start);
	return 0;
}

/* On the memory device the region is the device's own memory. */
static int map_mem(struct pc_region *r)
{
	char *base = bdev_mem_data(r->bd);

	if (!base)
		return -EOPNOTSUPP;
	r->data = base + r->off;
	return 0;
}

/* No file and no memory of the device's own: a copy in memory. */
static int map_copy(struct pc_region *r)
{
	uint32_t bs = r->cache->block_size;
	uint64_t blocks = r->len / bs;
	int err = 0;

	r->map_len = (size_t)r->len;
	r->map = mmap(NULL, r->map_len, PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (r->map == MAP_FAILED) {
		r->map = NULL;
		return -ENOMEM;
	}
	r->data = r->map;
	r->copy = true;
	r->dirty = calloc((size_t)((blocks + 63) / 64), sizeof(uint64_t));
	if (!r->dirty)
		err = -ENOMEM;
	for (uint64_t at = 0; !err && at < r->len; at += 1u << 20)
		err = bdev_read(r->bd, r->off + at, r->data + at,
				(size_t)UT_MIN(r->len - at, 1u << 20));
	if (err) {
		mlog_err("page cache: cannot read region [%llu, %llu) of %s: %s",
			 (unsigned long long)r->off, (unsigned long long)(r->off + r->len),
			 r->bd->path ? r->bd->path : "the device", strerror(-err));
		free(r->dirty);
		munmap(r->map, r->map_len);
		r->map = NULL;
		return err;
	}
	pthread_mutex_init(&r->dirty_lock, NULL);
	return 0;
}

static int init_pages(struct pc_region *r)
{
	uint32_t bs = r->cache->block_size;

	r->npages = r->len / bs;
	r->pages = calloc(r->npages, sizeof(*r->pages));
	if (!r->pages)
		return -ENOMEM;
	for (uint64_t i = 0; i < r->npages; i++) {
		struct pc_page *p = &r->pages[i];

		atomic_init(&p->flags, PF(PG_uptodate) | PF(PG_mappedtodisk));
		/* One "reference" that nobody owns: a put reaches the free
		 * path at once, where the pool check catches it. */
		atomic_init(&p->count, 1);
		atomic_init(&p->index, i);
		p->data = r->data + i * bs;
		p->lru_prev = p->lru_next = PC_NIL;
	}
	return 0;
}

int pc_region_map(struct pc_cache *c, struct bdev *bd, uint64_t off,
		  uint64_t len, unsigned int flags, struct pc_region **out)
{
	struct pc_region *r;
	int rc = check_region(c, bd, off, len, flags);

	if (rc)
		return rc;
	r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	*r = (struct pc_region){ .cache = c, .bd = bd, .off = off, .len = len };
	if (bd->fd >= 0)
		rc = map_file(r, flags);
	else
		rc = bdev_mem_data(bd) ? map_mem(r) : map_copy(r);
	if (!rc && (rc = init_pages(r)) && r->map)
		munmap(r->map, r->map_len);
	if (rc) {
		free(r);
		return rc;
	}
	atomic_fetch_add(&c->region_bytes, len);
	atomic_fetch_add(&c->nr_regions, 1);
	*out = r;
	return 0;
}

void pc_region_unmap(struct pc_region *r)
{
	if (r->map)
		munmap(r->map, r->map_len);
	if (r->copy) {
		free(r->dirty);
		pthread_mutex_destroy(&r->dirty_lock);
	}
	atomic_fetch_sub(&r->cache->region_bytes, r->len);
	atomic_fetch_sub(&r->cache->nr_regions, 1);
	free(r->pages);
	free(r);
}

void *pc_region_data(const struct pc_region *r)
{
	return r->data;
}

uint64_t pc_region_len(const struct pc_region *r)
{
	return r->len;
}

struct pc_page *pc_region_page(struct pc_region *r, uint64_t i)
{
	return i < r->npages ? &r->pages[i] : NULL;
}

void pc_region_dirty(struct pc_region *r, uint64_t off, uint64_t len)
{
	uint32_t bs = r->cache->block_size;

	if (!r->copy || !len || off >= r->len)
		return;
	len = UT_MIN(len, r->len - off);
	pthread_mutex_lock(&r->dirty_lock);
	for (uint64_t b = off / bs; b <= (off + len - 1) / bs; b++)
		r->dirty[b / 64] |= 1ull << (b % 64);
	pthread_mutex_unlock(&r->dirty_lock);
}

/* Take the bit of block @b: whether it was set. */
static bool take_dirty(struct pc_region *r, uint64_t b)
{
	bool was;

	pthread_mutex_lock(&r->dirty_lock);
	was = r->dirty[b / 64] & (1ull << (b % 64));
	r->dirty[b / 64] &= ~(1ull << (b % 64));
	pthread_mutex_unlock(&r->dirty_lock);
	return was;
}

/* Write the copy's dirty blocks of [off, off + len) back, runs at a time,
 * then flush.  A bit is taken before its block is written, so a store
 * that comes meanwhile marks it again; a run that fails is marked again
 * for the next sync. */
static int sync_copy(struct pc_region *r, uint64_t off, uint64_t len)
{
	uint32_t bs = r->cache->block_size;
	uint64_t b = off / bs, end = (off + len + bs - 1) / bs;
	int err = 0;

	while (b < end) {
		uint64_t run = 0;

		while (b + run < end && run < 256 && take_dirty(r, b + run))
			run++;
		if (run) {
			int e = bdev_write(r->bd, r->off + b * bs, r->data + b * bs,
					   (size_t)(run * bs));

			if (e)
				pc_region_dirty(r, b * bs, run * bs);
			err = err ? err : e;
		}
		b += run ? run : 1;
	}
	return err ? err : bdev_flush(r->bd);
}

int pc_region_sync(struct pc_region *r, uint64_t off, uint64_t len)
{
	uint64_t pg = (uint64_t)sysconf(_SC_PAGESIZE);
	uintptr_t a, start;

	if (off > r->len || len > r->len - off)
		return -EINVAL;
	if (!r->map)
		return 0;
	if (!len)
		len = r->len - off;
	if (r->copy)
		return sync_copy(r, off, len);
	a = (uintptr_t)(r->data + off);
	start = a / pg * pg;
	if (msync((void *)start, len + (a - start), MS_SYNC))
		return -errno;
	return 0;
}
