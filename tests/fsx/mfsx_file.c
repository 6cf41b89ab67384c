/*
 * mfsx_file.c - file mode: random operations on one file, each checked
 * against a model of its bytes and size.
 *
 * The model is a set of windows: one window [0, maxlen) normally, four
 * windows of maxlen/4 straddling 0, 2 GiB, 4 GiB and 8 GiB with -B.  Every
 * write, truncate and mapping lies inside one window, so the model needs
 * only the windows' bytes: everything between them is a hole and reads as
 * zeros.  Invariant: model bytes at or past the model size are zero, so a
 * truncate up or a write past EOF needs no clearing.
 *
 * Written data is a pattern of (op number, file offset), so a wrong byte
 * in a report can be traced to the op that wrote it.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <linux/falloc.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "mfsx.h"
#include "mfsx_xattr.h"

enum fop {
	FOP_WRITE,
	FOP_READ,
	FOP_TRUNCATE,
	FOP_MAPREAD,
	FOP_MAPWRITE,
	FOP_FSYNC,
	FOP_FDATASYNC,
	FOP_REOPEN,
	FOP_APPEND,
	FOP_OTRUNC,
	FOP_FADVISE,
	FOP_XATTR,
	FOP_FALLOC,
	FOP_SEEK,
	FOP_NKINDS
};

const struct mfsx_opkind mfsx_file_kinds[] = {
	[FOP_WRITE] = { "write", 20 },
	[FOP_READ] = { "read", 16 },
	[FOP_TRUNCATE] = { "truncate", 8 },
	[FOP_MAPREAD] = { "mapread", 10 },
	[FOP_MAPWRITE] = { "mapwrite", 10 },
	[FOP_FSYNC] = { "fsync", 2 },
	[FOP_FDATASYNC] = { "fdatasync", 2 },
	[FOP_REOPEN] = { "reopen", 2 },
	[FOP_APPEND] = { "append", 2 },
	[FOP_OTRUNC] = { "otrunc", 1 },
	[FOP_FADVISE] = { "fadvise", 2 },
	[FOP_XATTR] = { "xattr", 4 },
	[FOP_FALLOC] = { "fallocate", 6 },
	[FOP_SEEK] = { "seek", 4 },
};
const unsigned mfsx_file_nkinds = FOP_NKINDS;

#define MAX_WINDOWS 4
/* Writes remembered to name the op behind a wrong byte. */
#define NRECENT 256
/* Full compares read this much at a time. */
#define CHUNK (1u << 20)

struct window {
	uint64_t base;
	uint64_t len;
	unsigned char *buf;
};

struct recent_write {
	unsigned long opno;
	uint64_t off;
	uint64_t len;
};

static struct {
	int fd;
	bool append;                 /* opened with O_APPEND: writes go to EOF */
	uint64_t size;               /* the model's file size */
	struct window win[MAX_WINDOWS];
	unsigned nwin;
	uint64_t page;
	unsigned char *data;         /* what the current op writes */
	unsigned char *rbuf;         /* what the current op reads back */
	unsigned char *chunk;        /* full compares */
	char path[PATH_MAX];
	struct recent_write recent[NRECENT];
	unsigned recent_next;
	const char *mapping;         /* the mapped op running, for SIGBUS */
} F;

static uint64_t min64(uint64_t a, uint64_t b)
{
	return a < b ? a : b;
}

static uint64_t round_up(uint64_t x, uint64_t page)
{
	return (x + page - 1) & ~(page - 1);
}

static uint64_t win_end(const struct window *w)
{
	return w->base + w->len;
}

/* The window holding byte off, or NULL in a gap between windows. */
static struct window *window_at(uint64_t off)
{
	for (unsigned i = 0; i < F.nwin; i++)
		if (off >= F.win[i].base && off < win_end(&F.win[i]))
			return &F.win[i];
	return NULL;
}

/* The window the size lies in (sizes always end inside or at a window). */
static struct window *size_window(void)
{
	for (unsigned i = 0; i < F.nwin; i++)
		if (F.size >= F.win[i].base && F.size <= win_end(&F.win[i]))
			return &F.win[i];
	mfsx_fail("internal: model size 0x%" PRIx64 " outside every window", F.size);
}

/* The model's bytes at off, or NULL where they are all zeros (a gap). */
static const unsigned char *model_at(uint64_t off)
{
	struct window *w = window_at(off);

	return w ? w->buf + (off - w->base) : NULL;
}

static unsigned char pattern_byte(unsigned long opno, uint64_t pos)
{
	return (unsigned char)(mfsx_mix(((uint64_t)opno << 40) ^ (pos >> 3)) >> (8 * (pos & 7)));
}

static void fill_pattern(unsigned long opno, uint64_t off, unsigned char *buf, uint64_t len)
{
	uint64_t i = 0;

	while (i < len) {
		uint64_t pos = off + i;
		uint64_t word = mfsx_mix(((uint64_t)opno << 40) ^ (pos >> 3));

		for (unsigned b = pos & 7; b < 8 && i < len; b++, i++)
			buf[i] = (unsigned char)(word >> (8 * b));
	}
}

static void model_write(uint64_t off, const unsigned char *src, uint64_t len)
{
	struct window *w = window_at(off);

	memcpy(w->buf + (off - w->base), src, len);
	if (off + len > F.size)
		F.size = off + len;
	F.recent[F.recent_next] = (struct recent_write){ mfsx_opno, off, len };
	F.recent_next = (F.recent_next + 1) % NRECENT;
}

/* Cuts or extends the model; cut bytes become zeros (the invariant). */
static void model_truncate(uint64_t size)
{
	for (unsigned i = 0; size < F.size && i < F.nwin; i++) {
		struct window *w = &F.win[i];
		uint64_t lo = size > w->base ? size : w->base;
		uint64_t hi = min64(F.size, win_end(w));

		if (lo < hi)
			memset(w->buf + (lo - w->base), 0, hi - lo);
	}
	F.size = size;
}

/* ---- the failure report ---- */

static void dump_bytes(const char *label, uint64_t off, const unsigned char *p, uint64_t n)
{
	fprintf(stderr, "  %-8s 0x%09" PRIx64 ":", label, off);
	for (uint64_t i = 0; i < n; i++)
		fprintf(stderr, " %02x", p ? p[i] : 0);
	fprintf(stderr, "\n");
}

/* Names the op whose data the file holds at pos instead, if one of the recent ones. */
static void trace_stale(uint64_t pos, const unsigned char *got, uint64_t n)
{
	uint64_t zeros = 0;

	for (uint64_t i = 0; i < n; i++)
		zeros += got[i] == 0;
	for (unsigned k = 1; k <= NRECENT; k++) {
		const struct recent_write *r = &F.recent[(F.recent_next + NRECENT - k) % NRECENT];
		uint64_t i;

		if (r->opno == 0 || pos < r->off || pos >= r->off + r->len)
			continue;
		for (i = 0; i < n && pos + i < r->off + r->len; i++)
			if (got[i] != pattern_byte(r->opno, pos + i))
				break;
		if (i == n || pos + i == r->off + r->len) {
			fprintf(stderr, "  the file holds what op %lu wrote there (0x%" PRIx64
				" bytes at 0x%" PRIx64 "): a later write or truncate was lost\n",
				r->opno, r->len, r->off);
			return;
		}
	}
	if (zeros == n)
		fprintf(stderr, "  the file reads zeros there: written data lost, or a hole\n");
	else
		fprintf(stderr, "  the actual bytes match none of the last %u writes\n", NRECENT);
}

/* Writes the model's contents beside the file, for cmp(1) against it. */
static void save_expected(void)
{
	char path[PATH_MAX + 16];
	FILE *f;

	if (F.nwin != 1)
		return;
	snprintf(path, sizeof(path), "%s.expected", F.path);
	f = fopen(path, "w");
	if (!f || fwrite(F.win[0].buf, 1, F.size, f) != F.size || fclose(f) != 0) {
		fprintf(stderr, "  (could not write %s: %s)\n", path, strerror(errno));
		return;
	}
	fprintf(stderr, "  the expected contents are in %s\n", path);
}

static _Noreturn void report_mismatch(const char *how, uint64_t off, const unsigned char *got,
				      const unsigned char *exp, uint64_t len, uint64_t first)
{
	uint64_t ndiff = 0, last = first, lo = first & ~(uint64_t)15, n;

	for (uint64_t i = first; i < len; i++) {
		if (got[i] != (exp ? exp[i] : 0)) {
			ndiff++;
			last = i;
		}
	}
	mfsx_fail_begin("%s: data differs at file offset 0x%" PRIx64
			": expected 0x%02x, got 0x%02x", how, off + first, exp ? exp[first] : 0,
			got[first]);
	fprintf(stderr, "  %" PRIu64 " of 0x%" PRIx64 " bytes compared from 0x%" PRIx64
		" differ, the last at 0x%" PRIx64 "; model file size 0x%" PRIx64 "\n",
		ndiff, len, off, off + last, F.size);
	n = min64(32, len - lo);
	dump_bytes("expected", off + lo, exp ? exp + lo : NULL, n);
	dump_bytes("actual", off + lo, got + lo, n);
	trace_stale(off + first, got + first, min64(16, len - first));
	save_expected();
	mfsx_fail_end();
}

/* Compares bytes the file gave with the model's (exp NULL: zeros). */
static void check_bytes(const char *how, uint64_t off, const unsigned char *got,
			const unsigned char *exp, uint64_t len)
{
	static const unsigned char zeros[4096];

	for (uint64_t done = 0; done < len;) {
		uint64_t n = min64(len - done, exp ? len - done : sizeof(zeros));
		const unsigned char *e = exp ? exp + done : zeros;

		if (memcmp(got + done, e, n) != 0) {
			uint64_t i = 0;

			while (got[done + i] == e[i])
				i++;
			report_mismatch(how, off, got, exp, len, done + i);
		}
		done += n;
	}
}

static void check_size(void)
{
	struct stat st;

	if (fstat(F.fd, &st) != 0)
		mfsx_fail("fstat: %s", strerror(errno));
	if ((uint64_t)st.st_size != F.size)
		mfsx_fail("file size is 0x%" PRIx64 ", expected 0x%" PRIx64,
			  (uint64_t)st.st_size, F.size);
}

static void check_offset(uint64_t want)
{
	off_t pos = lseek(F.fd, 0, SEEK_CUR);

	if (pos < 0)
		mfsx_fail("lseek(SEEK_CUR): %s", strerror(errno));
	if ((uint64_t)pos != want)
		mfsx_fail("file position is 0x%" PRIx64 " after the call, expected 0x%" PRIx64,
			  (uint64_t)pos, want);
}

/* ---- system calls, each checked ---- */

static void seek_to(uint64_t off)
{
	if (lseek(F.fd, (off_t)off, SEEK_SET) != (off_t)off)
		mfsx_fail("lseek(0x%" PRIx64 "): %s", off, strerror(errno));
}

/* Splits buf into up to three pieces at random points. */
static int split_iov(struct iovec *iov, unsigned char *buf, uint64_t len)
{
	uint64_t a = mfsx_below(len + 1), b = mfsx_below(len + 1);

	if (a > b) {
		uint64_t t = a;

		a = b;
		b = t;
	}
	iov[0] = (struct iovec){ buf, a };
	iov[1] = (struct iovec){ buf + a, b - a };
	iov[2] = (struct iovec){ buf + b, len - b };
	return 3;
}

enum io_how { IO_POS, IO_SEEK, IO_VEC, IO_APPEND };
static const char *const io_name[] = { "pwrite", "lseek+write", "pwritev", "append write" };
static const char *const in_name[] = { "pread", "lseek+read", "preadv" };

static void do_write(unsigned char *buf, uint64_t len, uint64_t off, enum io_how how)
{
	struct iovec iov[3];
	ssize_t n;

	if (how == IO_VEC)
		split_iov(iov, buf, len);
	if (how == IO_SEEK)
		seek_to(off);
	if (how == IO_POS)
		n = pwrite(F.fd, buf, len, (off_t)off);
	else if (how == IO_VEC)
		n = pwritev(F.fd, iov, 3, (off_t)off);
	else
		n = write(F.fd, buf, len);
	if (n < 0)
		mfsx_fail("%s 0x%" PRIx64 " bytes at 0x%" PRIx64 ": %s", io_name[how], len, off,
			  strerror(errno));
	if ((uint64_t)n != len)
		mfsx_fail("%s: short write, %zd of 0x%" PRIx64 " bytes", io_name[how], n, len);
	if (how == IO_SEEK || how == IO_APPEND)
		check_offset(off + len);
}

/* Reads up to len bytes at off; returns the count, failing on an error. */
static uint64_t do_read(unsigned char *buf, uint64_t len, uint64_t off, enum io_how how)
{
	struct iovec iov[3];
	ssize_t n;

	if (how == IO_VEC)
		split_iov(iov, buf, len);
	if (how == IO_SEEK)
		seek_to(off);
	if (how == IO_POS)
		n = pread(F.fd, buf, len, (off_t)off);
	else if (how == IO_VEC)
		n = preadv(F.fd, iov, 3, (off_t)off);
	else
		n = read(F.fd, buf, len);
	if (n < 0)
		mfsx_fail("%s 0x%" PRIx64 " bytes at 0x%" PRIx64 ": %s", in_name[how], len, off,
			  strerror(errno));
	if (how == IO_SEEK)
		check_offset(off + (uint64_t)n);
	return (uint64_t)n;
}

/* What a read of [off, off + len) must return: all of it up to EOF. */
static uint64_t expected_count(uint64_t off, uint64_t len)
{
	return off >= F.size ? 0 : min64(len, F.size - off);
}

/* How much of [off, off + max) lies before the next window edge. */
static uint64_t piece(uint64_t off, uint64_t max)
{
	for (unsigned i = 0; i < F.nwin; i++) {
		if (off < F.win[i].base)
			return min64(max, F.win[i].base - off);
		if (off < win_end(&F.win[i]))
			return min64(max, win_end(&F.win[i]) - off);
	}
	return max;
}

/* Reads [off, off + len) back and compares it, a window or gap at a time. */
static void check_range(const char *how, uint64_t off, uint64_t len)
{
	while (len > 0) {
		uint64_t n = piece(off, min64(len, mfsx_opt.maxoplen));
		uint64_t want = expected_count(off, n), got;

		got = do_read(F.rbuf, n, off, IO_POS);
		if (got != want)
			mfsx_fail("%s: reading back 0x%" PRIx64 " bytes at 0x%" PRIx64
				  " returned 0x%" PRIx64 ", expected 0x%" PRIx64,
				  how, n, off, got, want);
		check_bytes(how, off, F.rbuf, model_at(off), got);
		off += n;
		len -= n;
	}
}

/* ---- choosing ranges ---- */

/* A range inside one window; a quarter of them start near EOF. */
static void pick_range(uint64_t *off, uint64_t *len)
{
	const struct window *w;
	uint64_t o, max = mfsx_opt.maxoplen;

	if (mfsx_below(4) == 0) {
		uint64_t lo, hi;

		w = size_window();
		lo = F.size > w->base + max ? F.size - max : w->base;
		hi = min64(F.size + max, win_end(w) - 1);
		o = lo + mfsx_below(hi - lo + 1);
	} else {
		w = &F.win[mfsx_below(F.nwin)];
		o = w->base + mfsx_below(w->len);
	}
	*off = o;
	*len = 1 + mfsx_below(min64(win_end(w) - o, max));
}

/* A size inside a window; a third of them within two pages of the old one. */
static uint64_t pick_size(void)
{
	const struct window *w;

	if (mfsx_below(3) == 0) {
		uint64_t d = mfsx_below(2 * F.page + 1), s;

		w = size_window();
		s = mfsx_below(2) ? F.size + d : F.size - min64(d, F.size);
		return s < w->base ? w->base : min64(s, win_end(w));
	}
	w = &F.win[mfsx_below(F.nwin)];
	return w->base + mfsx_below(w->len + 1);
}

/* ---- the operations ---- */

/*
 * The data an op writes: its pattern, into the model first; then for -Z,
 * the first write at or after that op number gets one byte wrong, to show
 * what a report looks like.
 */
static void make_data(uint64_t off, uint64_t len)
{
	static bool injected;

	fill_pattern(mfsx_opno, off, F.data, len);
	model_write(off, F.data, len);
	if (mfsx_opt.inject_op && !injected && mfsx_opno >= mfsx_opt.inject_op) {
		F.data[len / 2] ^= 0x5a;
		injected = true;
	}
}

static void op_write(void)
{
	enum io_how how = IO_APPEND;
	uint64_t off, len;

	if (F.append) {
		uint64_t room = win_end(size_window()) - F.size;

		off = F.size;
		len = room ? 1 + mfsx_below(min64(room, mfsx_opt.maxoplen)) : 0;
	} else {
		pick_range(&off, &len);
		how = (enum io_how)mfsx_below(3);
	}
	if (len == 0) {
		mfsx_log("append write skipped: EOF 0x%" PRIx64 " at the end of its window", off);
		return;
	}
	mfsx_log("%s 0x%" PRIx64 "..0x%" PRIx64 " (0x%" PRIx64 " bytes)%s", io_name[how], off,
		 off + len, len, off > F.size ? ", past EOF" : "");
	make_data(off, len);
	do_write(F.data, len, off, how);
	check_range("write, read back", off, len);
}

/* A read in a gap between windows (with -B): the hole must read zeros. */
static void pick_gap(uint64_t *off, uint64_t *len)
{
	unsigned i = (unsigned)mfsx_below(F.nwin);
	uint64_t lo = win_end(&F.win[i]);
	uint64_t hi = i + 1 < F.nwin ? F.win[i + 1].base : lo + F.win[i].len;

	*off = lo + mfsx_below(hi - lo);
	*len = 1 + mfsx_below(min64(hi - *off, mfsx_opt.maxoplen));
}

static void op_read(void)
{
	enum io_how how;
	uint64_t off, len, want, got;

	if (F.nwin > 1 && mfsx_below(8) == 0)
		pick_gap(&off, &len);
	else
		pick_range(&off, &len);
	how = (enum io_how)mfsx_below(3);
	want = expected_count(off, len);
	mfsx_log("%s 0x%" PRIx64 "..0x%" PRIx64 " (0x%" PRIx64 " bytes)%s", in_name[how], off,
		 off + len, len, want < len ? ", past EOF" : "");
	got = do_read(F.rbuf, len, off, how);
	if (got != want)
		mfsx_fail("%s returned 0x%" PRIx64 " bytes, expected 0x%" PRIx64 " (model size 0x%"
			  PRIx64 ")", in_name[how], got, want, F.size);
	check_bytes(in_name[how], off, F.rbuf, model_at(off), got);
}

/* Zeros must read back where a truncate up extended the file: both ends. */
static void check_zeros(uint64_t lo, uint64_t hi)
{
	uint64_t n = min64(hi - lo, mfsx_opt.maxoplen);

	check_range("truncate up, new bytes", lo, n);
	if (hi - n >= lo + n)
		check_range("truncate up, new bytes", hi - n, n);
}

static void op_truncate(void)
{
	uint64_t old = F.size, size = pick_size();

	mfsx_log("ftruncate 0x%" PRIx64 " -> 0x%" PRIx64 " (%s)", old, size,
		 size < old ? "down" : size > old ? "up" : "same");
	if (ftruncate(F.fd, (off_t)size) != 0)
		mfsx_fail("ftruncate(0x%" PRIx64 "): %s", size, strerror(errno));
	model_truncate(size);
	if (size < old && window_at(size & ~(F.page - 1)))
		check_range("truncate down, last page", size & ~(F.page - 1), size % F.page);
	else if (size > old)
		check_zeros(old, size);
}

static void on_sigbus(int sig)
{
	(void)sig;
	/* Not async-signal-safe, but the process only reports and exits. */
	mfsx_fail("SIGBUS in %s: a mapped page could not be read or written", F.mapping);
}

static unsigned char *map_file(uint64_t pg, uint64_t len, int prot)
{
	void *p = mmap(NULL, len, prot, MAP_SHARED, F.fd, (off_t)pg);

	if (p == MAP_FAILED)
		mfsx_fail("mmap 0x%" PRIx64 " bytes at 0x%" PRIx64 ": %s", len, pg,
			  strerror(errno));
	return p;
}

static void unmap_file(unsigned char *p, uint64_t len)
{
	if (munmap(p, len) != 0)
		mfsx_fail("munmap: %s", strerror(errno));
	F.mapping = NULL;
}

static void op_mapread(void)
{
	unsigned nwin = 0;
	uint64_t hi, off, len, pg, end;
	const struct window *w;
	unsigned char *p;

	while (nwin < F.nwin && F.win[nwin].base < F.size)
		nwin++;
	if (nwin == 0) {
		mfsx_log("mapread skipped: empty file");
		return;
	}
	w = &F.win[mfsx_below(nwin)];
	hi = min64(win_end(w), F.size);
	off = w->base + mfsx_below(hi - w->base);
	len = 1 + mfsx_below(min64(hi - off, mfsx_opt.maxoplen));
	pg = off & ~(F.page - 1);
	/* Through the end of the page holding EOF, whose tail must read zeros. */
	end = min64(round_up(off + len, F.page), round_up(F.size, F.page));
	mfsx_log("mapread 0x%" PRIx64 "..0x%" PRIx64 " (0x%" PRIx64 " bytes)", off, off + len, len);
	F.mapping = "mapread";
	p = map_file(pg, end - pg, PROT_READ);
	check_bytes("mapread", off, p + (off - pg), model_at(off), len);
	if (end > F.size)
		check_bytes("mapread, page tail past EOF", F.size, p + (F.size - pg), NULL,
			    end - F.size);
	unmap_file(p, end - pg);
}

static const char *const sync_name[] = { "msync(MS_SYNC)", "msync(MS_ASYNC)", "munmap only" };

static void op_mapwrite(void)
{
	uint64_t off, len, pg;
	unsigned how;
	unsigned char *p;

	pick_range(&off, &len);
	how = (unsigned)mfsx_below(3);
	pg = off & ~(F.page - 1);
	mfsx_log("mapwrite 0x%" PRIx64 "..0x%" PRIx64 " (0x%" PRIx64 " bytes), %s%s", off,
		 off + len, len, sync_name[how], off + len > F.size ? ", extends first" : "");
	if (off + len > F.size) {
		if (ftruncate(F.fd, (off_t)(off + len)) != 0)
			mfsx_fail("ftruncate(0x%" PRIx64 "): %s", off + len, strerror(errno));
		model_truncate(off + len);
	}
	F.mapping = "mapwrite";
	p = map_file(pg, off + len - pg, PROT_READ | PROT_WRITE);
	check_bytes("mapwrite, contents before writing", pg, p, model_at(pg), off + len - pg);
	make_data(off, len);
	memcpy(p + (off - pg), F.data, len);
	if (how < 2 && msync(p, off + len - pg, how == 0 ? MS_SYNC : MS_ASYNC) != 0)
		mfsx_fail("%s: %s", sync_name[how], strerror(errno));
	unmap_file(p, off + len - pg);
	check_range("mapwrite, read back", off, len);
}

static void op_sync(bool data_only)
{
	mfsx_log("%s", data_only ? "fdatasync" : "fsync");
	if ((data_only ? fdatasync(F.fd) : fsync(F.fd)) != 0)
		mfsx_fail("%s: %s", data_only ? "fdatasync" : "fsync", strerror(errno));
}

static void open_file(int flags)
{
	F.fd = open(F.path, flags, 0644);
	if (F.fd < 0)
		mfsx_fail("open(%s): %s", F.path, strerror(errno));
	F.append = flags & O_APPEND;
}

static void op_reopen(enum fop kind, const char *why)
{
	int flags = O_RDWR | (kind == FOP_APPEND ? O_APPEND : 0) |
		    (kind == FOP_OTRUNC ? O_TRUNC : 0);

	mfsx_log("close, reopen%s%s%s", kind == FOP_APPEND ? " O_APPEND" : "",
		 kind == FOP_OTRUNC ? " O_TRUNC" : "", why);
	if (close(F.fd) != 0)
		mfsx_fail("close: %s", strerror(errno));
	open_file(flags);
	if (kind == FOP_OTRUNC)
		model_truncate(0);
}

static void op_fadvise(void)
{
	int err;

	mfsx_log("fadvise DONTNEED: drop the cached pages");
	err = posix_fadvise(F.fd, 0, 0, POSIX_FADV_DONTNEED);
	if (err != 0)
		mfsx_fail("posix_fadvise: %s", strerror(err));
}

/* ---- fallocate and SEEK_DATA / SEEK_HOLE ---- */

static const struct {
	int mode;
	const char *name;
} falloc_modes[] = {
	{ 0, "allocate" },
	{ FALLOC_FL_KEEP_SIZE, "allocate, keep size" },
	{ FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, "punch hole" },
	{ FALLOC_FL_ZERO_RANGE, "zero range" },
	{ FALLOC_FL_ZERO_RANGE | FALLOC_FL_KEEP_SIZE, "zero range, keep size" },
};

/* Modes the filesystem refused with EOPNOTSUPP are not tried again. */
static unsigned falloc_unsupported;

/* Punch and zero range turn the model's bytes in range to zeros; the
 * modes without KEEP_SIZE grow it like a write. */
static void model_falloc(int mode, uint64_t off, uint64_t len)
{
	uint64_t end = off + len;

	if (mode & (FALLOC_FL_PUNCH_HOLE | FALLOC_FL_ZERO_RANGE)) {
		struct window *w = window_at(off);
		uint64_t hi = min64(end, F.size);

		if (w && off < hi)
			memset(w->buf + (off - w->base), 0, hi - off);
	}
	if (!(mode & FALLOC_FL_KEEP_SIZE) && end > F.size)
		F.size = end;
}

static void op_falloc(void)
{
	unsigned k = (unsigned)mfsx_below(sizeof(falloc_modes) / sizeof(falloc_modes[0]));
	int mode = falloc_modes[k].mode;
	uint64_t off, len;

	if (falloc_unsupported & (1u << k))
		return;
	pick_range(&off, &len);
	mfsx_log("fallocate %s 0x%" PRIx64 "..0x%" PRIx64 " (0x%" PRIx64 " bytes)%s",
		 falloc_modes[k].name, off, off + len, len, off + len > F.size ? ", past EOF" : "");
	if (fallocate(F.fd, mode, (off_t)off, (off_t)len) != 0) {
		if (errno != EOPNOTSUPP)
			mfsx_fail("fallocate %s: %s", falloc_modes[k].name, strerror(errno));
		mfsx_log("fallocate %s: not supported here", falloc_modes[k].name);
		falloc_unsupported |= 1u << k;
		return;
	}
	model_falloc(mode, off, len);
	check_size();
	check_range("fallocate, read back", off, len);
}

/* No byte of the model in [lo, hi) is other than zero. */
static bool model_zero(uint64_t lo, uint64_t hi)
{
	for (uint64_t off = lo; off < hi;) {
		uint64_t n = piece(off, hi - off);
		const unsigned char *m = model_at(off);

		for (uint64_t i = 0; m && i < n; i++)
			if (m[i])
				return false;
		off += n;
	}
	return true;
}

/*
 * SEEK_DATA may take a preallocated or a zeroed range for data or a hole
 * (filesystems differ), but never skips a byte that is not zero, and a
 * byte that is not zero is data.
 */
static void op_seek(void)
{
	uint64_t off, len;
	off_t data, hole;

	pick_range(&off, &len);
	data = lseek(F.fd, (off_t)off, SEEK_DATA);
	hole = lseek(F.fd, (off_t)off, SEEK_HOLE);
	mfsx_log("seek 0x%" PRIx64 ": data at 0x%jx, hole at 0x%jx", off, (intmax_t)data,
		 (intmax_t)hole);
	if (off >= F.size) {
		if (data >= 0 || hole >= 0 || errno != ENXIO)
			mfsx_fail("SEEK_DATA/SEEK_HOLE at or past EOF 0x%" PRIx64 " gave 0x%jx, "
				  "0x%jx, not ENXIO", F.size, (intmax_t)data, (intmax_t)hole);
		return;
	}
	if (hole < 0 || (uint64_t)hole < off || (uint64_t)hole > F.size)
		mfsx_fail("SEEK_HOLE from 0x%" PRIx64 " gave 0x%jx (size 0x%" PRIx64 ")", off,
			  (intmax_t)hole, F.size);
	if (data < 0 && errno != ENXIO)
		mfsx_fail("SEEK_DATA from 0x%" PRIx64 ": %s", off, strerror(errno));
	if (data >= 0 && ((uint64_t)data < off || (uint64_t)data >= F.size))
		mfsx_fail("SEEK_DATA from 0x%" PRIx64 " gave 0x%jx (size 0x%" PRIx64 ")", off,
			  (intmax_t)data, F.size);
	if (!model_zero(off, data < 0 ? F.size : (uint64_t)data))
		mfsx_fail("SEEK_DATA from 0x%" PRIx64 " skipped to 0x%jx over bytes that are "
			  "not zero", off, (intmax_t)data);
	if (!model_zero(off, off + 1) && (data < 0 || (uint64_t)data != off))
		mfsx_fail("byte 0x%" PRIx64 " is data, SEEK_DATA says 0x%jx", off, (intmax_t)data);
}

static void run_op(void)
{
	enum fop kind;

	if (mfsx_opt.reopen_every && mfsx_opno % mfsx_opt.reopen_every == 0) {
		op_reopen(FOP_REOPEN, " (-c)");
		return;
	}
	kind = (enum fop)mfsx_pick_kind(mfsx_file_kinds, FOP_NKINDS);
	switch (kind) {
	case FOP_WRITE: op_write(); break;
	case FOP_READ: op_read(); break;
	case FOP_TRUNCATE: op_truncate(); break;
	case FOP_MAPREAD: op_mapread(); break;
	case FOP_MAPWRITE: op_mapwrite(); break;
	case FOP_FSYNC: op_sync(false); break;
	case FOP_FDATASYNC: op_sync(true); break;
	case FOP_REOPEN:
	case FOP_APPEND:
	case FOP_OTRUNC: op_reopen(kind, ""); break;
	case FOP_FADVISE: op_fadvise(); break;
	case FOP_XATTR: mfsx_xattr_op(F.fd); break;
	case FOP_FALLOC: op_falloc(); break;
	case FOP_SEEK: op_seek(); break;
	case FOP_NKINDS: break;
	}
}

/* ---- full compares ---- */

static void compare_span(const char *how, uint64_t lo, uint64_t hi)
{
	for (uint64_t off = lo; off < hi;) {
		uint64_t n = piece(off, min64(hi - off, CHUNK));
		ssize_t got = pread(F.fd, F.chunk, n, (off_t)off);

		if (got < 0)
			mfsx_fail("%s: pread 0x%" PRIx64 " bytes at 0x%" PRIx64 ": %s", how, n, off,
				  strerror(errno));
		if ((uint64_t)got != n)
			mfsx_fail("%s: pread at 0x%" PRIx64 " returned 0x%zx bytes, expected 0x%"
				  PRIx64, how, off, got, n);
		check_bytes(how, off, F.chunk, model_at(off), n);
		off += n;
	}
}

/* Reads the whole file (with -B: the windows and a few samples of the gaps). */
static void compare_all(const char *how)
{
	unsigned char byte;
	ssize_t got;

	for (unsigned i = 0; i < F.nwin && F.win[i].base < F.size; i++)
		compare_span(how, F.win[i].base, min64(win_end(&F.win[i]), F.size));
	for (unsigned i = 0; F.nwin > 1 && F.size > 0 && i < 4; i++) {
		/* A hash, not the generator: compares must not change the op sequence. */
		uint64_t pos = mfsx_mix(mfsx_opt.seed ^ (mfsx_opno * 4 + i)) % F.size;

		if (window_at(pos) == NULL)
			compare_span(how, pos, min64(pos + 4096, F.size));
	}
	got = pread(F.fd, &byte, 1, (off_t)F.size);
	if (got != 0)
		mfsx_fail("%s: a read at EOF 0x%" PRIx64 " returned %zd, expected 0", how,
			  F.size, got);
}

/* ---- setting up and finishing ---- */

static void *alloc_or_die(size_t n)
{
	void *p = calloc(1, n);

	if (!p)
		mfsx_fail("out of memory for 0x%zx bytes", n);
	return p;
}

static void setup_windows(void)
{
	static const uint64_t centre[MAX_WINDOWS] = { 0, 1ULL << 31, 1ULL << 32, 1ULL << 33 };
	uint64_t w = (mfsx_opt.maxlen / 4) & ~(2 * F.page - 1);

	if (!mfsx_opt.big) {
		F.nwin = 1;
		F.win[0] = (struct window){ 0, mfsx_opt.maxlen, alloc_or_die(mfsx_opt.maxlen) };
		return;
	}
	if (w > (1ULL << 30))
		mfsx_fail("-B: -l at most 4g");
	F.nwin = MAX_WINDOWS;
	F.win[0] = (struct window){ 0, w, alloc_or_die(w) };
	for (unsigned i = 1; i < MAX_WINDOWS; i++)
		F.win[i] = (struct window){ centre[i] - w / 2, w, alloc_or_die(w) };
}

static void setup(void)
{
	struct sigaction sa = { .sa_handler = on_sigbus };

	F.page = (uint64_t)sysconf(_SC_PAGESIZE);
	setup_windows();
	F.data = alloc_or_die(mfsx_opt.maxoplen);
	F.rbuf = alloc_or_die(mfsx_opt.maxoplen);
	F.chunk = alloc_or_die(CHUNK);
	snprintf(F.path, sizeof(F.path), "%s/%s", mfsx_opt.dir,
		 mfsx_opt.name ? mfsx_opt.name : "mfsx.file");
	if (sigaction(SIGBUS, &sa, NULL) != 0)
		mfsx_fail("sigaction: %s", strerror(errno));
	open_file(O_RDWR | O_CREAT | O_TRUNC);
	check_size();
	if (!(mfsx_opt.disabled & (1ULL << FOP_XATTR)))
		mfsx_xattr_reset(F.fd);
}

/* Everything reaches the file, a fresh open sees all of it. */
static void finish(void)
{
	mfsx_opno = mfsx_opt.nops;
	mfsx_log("final: fsync, close, reopen, full compare");
	op_sync(false);
	if (close(F.fd) != 0)
		mfsx_fail("close: %s", strerror(errno));
	open_file(O_RDONLY);
	check_size();
	compare_all("final full compare");
	if (!(mfsx_opt.disabled & (1ULL << FOP_XATTR)))
		mfsx_xattr_check(F.fd, "final xattr compare");
	if (close(F.fd) != 0)
		mfsx_fail("close: %s", strerror(errno));
	if (!mfsx_opt.keep && unlink(F.path) != 0)
		mfsx_fail("unlink(%s): %s", F.path, strerror(errno));
}

int mfsx_file_run(void)
{
	setup();
	for (mfsx_opno = 1; mfsx_opno <= mfsx_opt.nops; mfsx_opno++) {
		run_op();
		check_size();
		if (mfsx_opno % mfsx_opt.check_every == 0)
			compare_all("periodic full compare");
		if (mfsx_opno % mfsx_opt.check_every == 0 &&
		    !(mfsx_opt.disabled & (1ULL << FOP_XATTR)))
			mfsx_xattr_check(F.fd, "periodic xattr compare");
	}
	finish();
	return 0;
}
