/*
 * region.c - reserved regions: ranges of the device served by
 * mmap(MAP_SHARED) of the device, outside the cache.
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
	rc = bd->fd < 0 ? map_mem(r) : map_file(r, flags);
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
	a = (uintptr_t)(r->data + off);
	start = a / pg * pg;
	if (msync((void *)start, len + (a - start), MS_SYNC))
		return -errno;
	return 0;
}
