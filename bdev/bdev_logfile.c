/*
 * bdev_logfile.c - the write log file of a wrapper (docs/FORMAT.md, "Write
 * log"): a header, then one record per completed write or flush, appended
 * in log order.  Each record carries its own checksum, so a reader takes
 * every complete record of a log whose writer was killed mid-append and
 * stops, saying where, at the first one cut short or damaged.
 */
#include "bdev_i.h"

#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#define LOG_MAGIC "MFSWRLOG"
#define LOG_VERSION 1u
#define HDR_SIZE 64u
#define REC_MAGIC 0x43455257u   /* "WREC" read as little-endian */
#define REC_HDR 40u
#define REC_WRITE 1u
#define REC_FLUSH 2u

/* The checksum of headers and records: 64-bit words, little-endian, a
 * last partial word padded with zeros. */
static uint64_t log_sum(uint64_t h, const void *p, size_t len)
{
	const uint8_t *b = p;
	uint64_t w;

	for (size_t i = 0; i < len; i += 8) {
		w = 0;
		memcpy(&w, b + i, UT_MIN((size_t)8, len - i));
		h = (h ^ le64toh(w)) * 0xbf58476d1ce4e5b9ull;
		h ^= h >> 29;
	}
	return h;
}

#define SUM_SEED 0x6d69736366736c67ull

static void put32(uint8_t *p, uint32_t v) { v = htole32(v); memcpy(p, &v, 4); }
static void put64(uint8_t *p, uint64_t v) { v = htole64(v); memcpy(p, &v, 8); }
static uint32_t get32(const uint8_t *p) { uint32_t v; memcpy(&v, p, 4); return le32toh(v); }
static uint64_t get64(const uint8_t *p) { uint64_t v; memcpy(&v, p, 8); return le64toh(v); }

/* Write all of @iov at @off. */
static int write_all(int fd, uint64_t off, struct iovec *iov, int cnt)
{
	ssize_t n;

	while (cnt > 0) {
		n = pwritev(fd, iov, cnt, (off_t)off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		off += (uint64_t)n;
		for (; cnt > 0 && (size_t)n >= iov->iov_len; iov++, cnt--)
			n -= (ssize_t)iov->iov_len;
		if (cnt > 0) {
			iov->iov_base = (char *)iov->iov_base + n;
			iov->iov_len -= (size_t)n;
		}
	}
	return 0;
}

int bdev_logfile_create(const char *path, uint64_t size, uint32_t bs)
{
	uint8_t hdr[HDR_SIZE] = { 0 };
	struct iovec iov = { hdr, sizeof(hdr) };
	int fd, err;

	memcpy(hdr, LOG_MAGIC, 8);
	put32(hdr + 8, LOG_VERSION);
	put32(hdr + 12, bs);
	put64(hdr + 16, size);
	put64(hdr + 56, log_sum(SUM_SEED, hdr, 56));
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return -errno;
	err = write_all(fd, 0, &iov, 1);
	if (err) {
		close(fd);
		return err;
	}
	return fd;
}

int bdev_logfile_append(int fd, uint64_t *off, const struct bdev_wrap_log_entry *e)
{
	uint8_t hdr[REC_HDR];
	struct iovec iov[2] = { { hdr, sizeof(hdr) }, { (void *)e->data, e->len } };
	int err;

	put32(hdr, REC_MAGIC);
	put32(hdr + 4, e->flush ? REC_FLUSH : REC_WRITE);
	put64(hdr + 8, e->seq);
	put64(hdr + 16, e->flush ? 0 : e->off);
	put64(hdr + 24, e->flush ? 0 : e->len);
	put64(hdr + 32, log_sum(log_sum(SUM_SEED, hdr, 32), e->data, e->flush ? 0 : e->len));
	err = write_all(fd, *off, iov, e->flush ? 1 : 2);
	if (!err)
		*off += REC_HDR + (e->flush ? 0 : e->len);
	return err;
}

/* ---- reading ------------------------------------------------------------ */

struct bdev_wrap_logfile {
	const uint8_t *map;
	size_t map_len;
	uint32_t bs;
	struct bdev_wrap_log_entry *ents;
	const struct bdev_wrap_log_entry **ptrs;
	size_t n, cap;
};

static int check_header(const uint8_t *p, size_t len, struct bdev_wrap_logfile_info *info,
			char *why, size_t whylen)
{
	if (len < HDR_SIZE)
		return ut_corrupt(why, whylen, "offset 0: the header is cut short (%zu of %u bytes)",
				  len, HDR_SIZE);
	if (memcmp(p, LOG_MAGIC, 8))
		return ut_corrupt(why, whylen, "offset 0: not a miscfs write log (bad magic)");
	if (get64(p + 56) != log_sum(SUM_SEED, p, 56))
		return ut_corrupt(why, whylen, "offset 56: header checksum mismatch");
	if (get32(p + 8) != LOG_VERSION)
		return ut_corrupt(why, whylen, "offset 8: version %u, this reads %u",
				  get32(p + 8), LOG_VERSION);
	info->block_size = get32(p + 12);
	info->dev_size = get64(p + 16);
	if (!UT_IS_POW2(info->block_size) || info->block_size < 512 ||
	    info->dev_size % info->block_size)
		return ut_corrupt(why, whylen, "offset 12: block size %u, device size %llu",
				  info->block_size, (unsigned long long)info->dev_size);
	return 0;
}

/* Why the record at @at cannot be read (NULL: it can); fills @e. */
static const char *read_record(const uint8_t *p, size_t len, uint64_t at,
			       const struct bdev_wrap_logfile_info *info, uint64_t seq,
			       struct bdev_wrap_log_entry *e)
{
	const uint8_t *r = p + at;
	uint32_t type;

	if (len - at < REC_HDR)
		return "record header cut short";
	type = get32(r + 4);
	if (get32(r) != REC_MAGIC || (type != REC_WRITE && type != REC_FLUSH))
		return "bad record magic or type";
	*e = (struct bdev_wrap_log_entry){ .seq = get64(r + 8), .flush = type == REC_FLUSH,
					   .off = get64(r + 16), .len = (size_t)get64(r + 24),
					   .data = r + REC_HDR };
	if (e->flush ? e->off || e->len :
	    !e->len || e->off % info->block_size || e->len % info->block_size ||
	    e->off > info->dev_size || e->len > info->dev_size - e->off)
		return "write outside the device or misaligned";
	if (e->len > len - at - REC_HDR)
		return "record data cut short";
	if (get64(r + 32) != log_sum(log_sum(SUM_SEED, r, 32), e->data, e->len))
		return "record checksum mismatch";
	if (e->seq != seq)
		return "record out of sequence";
	return NULL;
}

static int logfile_push(struct bdev_wrap_logfile *l, const struct bdev_wrap_log_entry *e)
{
	struct bdev_wrap_log_entry *ents;

	if (l->n == l->cap) {
		l->cap = l->cap ? l->cap * 2 : 256;
		ents = realloc(l->ents, l->cap * sizeof(*ents));
		if (!ents)
			return -ENOMEM;
		l->ents = ents;
	}
	l->ents[l->n++] = *e;
	return 0;
}

/* Index the records after the header; stop at the first bad one. */
static int logfile_scan(struct bdev_wrap_logfile *l, struct bdev_wrap_logfile_info *info)
{
	struct bdev_wrap_log_entry e;
	uint64_t at = HDR_SIZE;
	const char *bad;
	int err;

	while (at < l->map_len) {
		bad = read_record(l->map, l->map_len, at, info, l->n, &e);
		if (bad) {
			snprintf(info->why, sizeof(info->why), "record %zu at offset %llu: %s",
				 l->n, (unsigned long long)at, bad);
			break;
		}
		err = logfile_push(l, &e);
		if (err)
			return err;
		info->flushes += e.flush;
		at += REC_HDR + e.len;
	}
	info->entries = l->n;
	info->end = at;
	l->ptrs = malloc((l->n + 1) * sizeof(*l->ptrs));
	if (!l->ptrs)
		return -ENOMEM;
	for (size_t i = 0; i < l->n; i++)
		l->ptrs[i] = &l->ents[i];
	return 0;
}

static int logfile_map(const char *path, struct bdev_wrap_logfile *l, uint64_t *size)
{
	struct stat st;
	int fd = open(path, O_RDONLY | O_CLOEXEC), err = 0;
	void *p;

	if (fd < 0)
		return -errno;
	if (fstat(fd, &st))
		err = -errno;
	else if (!S_ISREG(st.st_mode))
		err = -EINVAL;
	*size = err ? 0 : (uint64_t)st.st_size;
	if (!err && *size) {
		p = mmap(NULL, (size_t)*size, PROT_READ, MAP_PRIVATE, fd, 0);
		if (p == MAP_FAILED)
			err = -errno;
		else
			l->map = p;
	}
	l->map_len = err ? 0 : (size_t)*size;
	close(fd);
	return err;
}

int bdev_wrap_logfile_open(const char *path, struct bdev_wrap_logfile **out,
			   struct bdev_wrap_logfile_info *info, char *why, size_t whylen)
{
	struct bdev_wrap_logfile *l = calloc(1, sizeof(*l));
	int err;

	if (!l)
		return -ENOMEM;
	memset(info, 0, sizeof(*info));
	err = logfile_map(path, l, &info->file_size);
	if (!err)
		err = check_header(l->map, l->map_len, info, why, whylen);
	if (!err) {
		l->bs = info->block_size;
		err = logfile_scan(l, info);
	}
	if (err)
		bdev_wrap_logfile_close(l);
	else
		*out = l;
	return err;
}

const struct bdev_wrap_log_entry *bdev_wrap_logfile_entry(const struct bdev_wrap_logfile *l,
							   size_t i)
{
	return i < l->n ? &l->ents[i] : NULL;
}

void bdev_wrap_logfile_replay(const struct bdev_wrap_logfile *l, size_t prefix,
			      enum bdev_cut mode, uint64_t seed, void *img)
{
	bdev_log_replay(l->ptrs, UT_MIN(prefix, l->n), mode, seed, l->bs, img);
}

void bdev_wrap_logfile_close(struct bdev_wrap_logfile *l)
{
	if (!l)
		return;
	if (l->map)
		munmap((void *)l->map, l->map_len);
	free(l->ents);
	free(l->ptrs);
	free(l);
}
