/*
 * t_wrap_log.c - the wrapper's log file: it holds what the memory log
 * holds, entry for entry, over the memory device and over io_uring; it
 * replays to the device's contents and to the crash images of the memory
 * log; a log cut anywhere gives its complete records and names the
 * offset of the first incomplete one; a damaged record ends the log
 * there; a bad header is refused; a log that cannot be created fails the
 * wrapper and leaves the device below untouched; one that cannot grow
 * stops there, and every later flush fails.
 */
#include "bdev_test.h"
#include "t_bdev.h"

#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#define BS 1024u
#define NBLK 128u
#define SIZE (NBLK * BS)
#define HDR 64u
#define REC 40u

static struct bdev *lower_dev(bool uring)
{
	struct bdev_open_opts o = { .block_size = BS };
	struct bdev *bd;
	char *path;

	if (!uring) {
		t_ok(bdev_mem_create(SIZE, BS, &bd));
		return bd;
	}
	path = t_image("log.img", SIZE);
	t_ok(bdev_open_uring(path, &o, &bd));
	free(path);
	return bd;
}

/* Batches of vectored writes, some ending in a flush, and single ones. */
static void workload(struct bdev *bd, unsigned char *buf)
{
	struct bdev_req reqs[5], *rp[5];
	struct iovec iov[4][2];
	uint64_t r = 77;

	for (unsigned int round = 0; round < 12; round++) {
		for (unsigned int i = 0; i < 4; i++) {
			uint64_t blk = t_rand(&r) % (NBLK - 3);

			iov[i][0] = (struct iovec){ buf + blk * BS, BS };
			iov[i][1] = (struct iovec){ buf + (blk + 1) * BS, 2 * BS };
			bdev_req_initv(&reqs[i], BDEV_OP_WRITE, blk * BS, iov[i], 2);
			rp[i] = &reqs[i];
		}
		bdev_req_init(&reqs[4], BDEV_OP_FLUSH, 0, NULL, 0);
		rp[4] = &reqs[4];
		t_fill(buf, SIZE, round);
		t_ok(bdev_submit_wait(bd, rp, round % 3 ? 5 : 4));
		t_ok(bdev_write(bd, (round % NBLK) * BS, buf, BS));
		if (round % 4 == 0)
			t_ok(bdev_flush(bd));
	}
}

static void same_entry(const struct bdev_wrap_log_entry *a,
		       const struct bdev_wrap_log_entry *b, size_t i)
{
	t_assert(a && b && a->seq == i && b->seq == i && a->flush == b->flush,
		 "entry %zu: kind differs", i);
	t_assert(a->flush || (a->off == b->off && a->len == b->len &&
			      !memcmp(a->data, b->data, a->len)),
		 "entry %zu: write differs", i);
}

/* Every flush of the file's log replays to the memory log's crash image. */
static void check_flush_images(struct bdev *bd, const struct bdev_wrap_logfile *l,
			       size_t n, const unsigned char *base)
{
	unsigned char *img = malloc(SIZE);
	struct bdev *want;

	for (size_t i = 0; i <= n; i++) {
		if (i < n && !bdev_wrap_logfile_entry(l, i)->flush)
			continue;
		memcpy(img, base, SIZE);
		bdev_wrap_logfile_replay(l, i + (i < n), BDEV_CUT_RANDOM_TORN, i, img);
		t_ok(bdev_wrap_crash_image(bd, i + (i < n), BDEV_CUT_RANDOM_TORN, i, &want));
		t_assert(t_diff(img, bdev_mem_data(want), SIZE) < 0,
			 "replay of %zu entries differs at %ld", i,
			 t_diff(img, bdev_mem_data(want), SIZE));
		bdev_close(want);
	}
	free(img);
}

static char *round_trip(bool uring)
{
	unsigned char *buf = t_alloc(SIZE), *base = t_alloc(SIZE), *now = t_alloc(SIZE);
	char *path;
	struct bdev_wrap_opts o;
	struct bdev_wrap_logfile_info info;
	struct bdev_wrap_logfile *l;
	struct bdev *bd;
	char why[160];
	size_t n;

	t_assert(asprintf(&path, "%s/%s.wlog", t_workdir(), uring ? "uring" : "mem") > 0, "path");
	o = (struct bdev_wrap_opts){ .log_path = path };
	t_ok(bdev_wrap(lower_dev(uring), &o, &bd));
	bdev_wrap_record(bd, true);
	t_ok(bdev_read(bd, 0, base, SIZE));
	workload(bd, buf);
	n = bdev_wrap_log_count(bd);
	t_ok(bdev_wrap_logfile_open(path, &l, &info, why, sizeof(why)));
	t_assert(info.entries == n && !info.why[0] && info.end == info.file_size &&
		 info.dev_size == SIZE && info.block_size == BS,
		 "file: %zu entries (memory %zu) %s", info.entries, n, info.why);
	for (size_t i = 0; i < n; i++)
		same_entry(bdev_wrap_logfile_entry(l, i), bdev_wrap_log(bd, i), i);
	t_assert(!bdev_wrap_logfile_entry(l, n), "an entry past the end");
	check_flush_images(bd, l, n, base);
	memcpy(now, base, SIZE);
	bdev_wrap_logfile_replay(l, n, BDEV_CUT_KEEP_ALL, 0, now);
	t_ok(bdev_read(bd, 0, buf, SIZE));
	t_assert(t_diff(buf, now, SIZE) < 0, "the whole log replays to other contents");
	bdev_wrap_logfile_close(l);
	t_eq(bdev_wrap_log_error(bd), 0);
	bdev_close(bd);
	bdev_free_buf(buf);
	bdev_free_buf(base);
	bdev_free_buf(now);
	return path;
}

static size_t file_bytes(const char *path, unsigned char **data)
{
	struct stat st;
	int fd = open(path, O_RDONLY);

	t_assert(fd >= 0 && !fstat(fd, &st), "%s", path);
	*data = malloc((size_t)st.st_size);
	t_assert(read(fd, *data, (size_t)st.st_size) == st.st_size, "reading %s", path);
	close(fd);
	return (size_t)st.st_size;
}

static void put_file(const char *path, const unsigned char *data, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);

	t_assert(fd >= 0 && write(fd, data, len) == (ssize_t)len, "writing %s", path);
	close(fd);
}

/* Record start offsets of a whole log, from its index. */
static size_t record_starts(const char *path, uint64_t *starts, size_t max)
{
	struct bdev_wrap_logfile_info info;
	struct bdev_wrap_logfile *l;
	uint64_t at = HDR;
	char why[160];

	t_ok(bdev_wrap_logfile_open(path, &l, &info, why, sizeof(why)));
	t_assert(info.entries < max, "%zu entries", info.entries);
	for (size_t i = 0; i < info.entries; i++) {
		starts[i] = at;
		at += REC + bdev_wrap_logfile_entry(l, i)->len;
	}
	starts[info.entries] = at;
	bdev_wrap_logfile_close(l);
	return info.entries;
}

static void expect_cut(const char *path, size_t want, uint64_t bad_at, const char *what)
{
	struct bdev_wrap_logfile_info info;
	struct bdev_wrap_logfile *l;
	char why[160], off[48];

	t_ok(bdev_wrap_logfile_open(path, &l, &info, why, sizeof(why)));
	snprintf(off, sizeof(off), "at offset %llu:", (unsigned long long)bad_at);
	t_assert(info.entries == want && strstr(info.why, off) && strstr(info.why, what),
		 "%zu entries (want %zu), \"%s\" (want \"%s\" \"%s\")", info.entries, want,
		 info.why, off, what);
	bdev_wrap_logfile_close(l);
}

/* A log cut at any byte keeps its complete records. */
static void check_truncated(const char *whole)
{
	static uint64_t starts[4096];
	unsigned char *data;
	size_t len = file_bytes(whole, &data), n = record_starts(whole, starts, 4096);
	char *cut;
	char why[160];
	struct bdev_wrap_logfile_info info;
	struct bdev_wrap_logfile *l;

	t_assert(asprintf(&cut, "%s/cut.wlog", t_workdir()) > 0, "path");
	for (size_t i = 0; i < n; i++) {
		uint64_t in_hdr = starts[i] + 1 + i % (REC - 1);
		uint64_t in_data = starts[i + 1] - 1 - i % 7;

		put_file(cut, data, (size_t)in_hdr);
		expect_cut(cut, i, starts[i], "header cut short");
		put_file(cut, data, (size_t)in_data);
		expect_cut(cut, i, starts[i], in_data < starts[i] + REC ? "header cut short" :
			   "data cut short");
	}
	put_file(cut, data, HDR - 1);
	t_eq(bdev_wrap_logfile_open(cut, &l, &info, why, sizeof(why)), -EUCLEAN);
	t_assert(strstr(why, "offset 0") != NULL, "%s", why);
	t_assert(len == starts[n], "%zu bytes, records end at %llu", len,
		 (unsigned long long)starts[n]);
	free(cut);
	free(data);
}

/* A damaged record ends the log there; a damaged header is refused. */
static void check_corrupt(const char *whole)
{
	static uint64_t starts[4096];
	unsigned char *data;
	size_t len = file_bytes(whole, &data), n = record_starts(whole, starts, 4096), k = n / 2;
	struct bdev_wrap_logfile_info info;
	struct bdev_wrap_logfile *l;
	char *bad, why[160];

	t_assert(asprintf(&bad, "%s/bad.wlog", t_workdir()) > 0, "path");
	data[starts[k + 1] - 1] ^= 0x10;      /* the last byte of record k */
	put_file(bad, data, len);
	expect_cut(bad, k, starts[k], "checksum mismatch");
	data[starts[k + 1] - 1] ^= 0x10;
	data[starts[k] + 8] ^= 1;             /* its sequence number */
	put_file(bad, data, len);
	expect_cut(bad, k, starts[k], "checksum mismatch");
	data[starts[k] + 8] ^= 1;
	data[20] ^= 1;                         /* the device size */
	put_file(bad, data, len);
	t_eq(bdev_wrap_logfile_open(bad, &l, &info, why, sizeof(why)), -EUCLEAN);
	t_assert(strstr(why, "offset 56: header checksum") != NULL, "%s", why);
	memcpy(data, "NOTALOG!", 8);
	put_file(bad, data, len);
	t_eq(bdev_wrap_logfile_open(bad, &l, &info, why, sizeof(why)), -EUCLEAN);
	t_assert(strstr(why, "bad magic") != NULL, "%s", why);
	free(bad);
	free(data);
}

static void test_create_fails(void)
{
	struct bdev_wrap_opts o = { .log_path = "/nonexistent/dir/x.wlog" };
	struct bdev *low = lower_dev(false), *bd = NULL;
	unsigned char *buf = t_alloc(BS);

	t_eq(bdev_wrap(low, &o, &bd), -ENOENT);
	t_assert(!bd, "a wrapper came back");
	t_ok(bdev_write(low, 0, buf, BS));
	bdev_close(low);
	bdev_free_buf(buf);
}

/* The file size limit stops the log after a few records: the writes go
 * on, the flushes fail, the error stays. */
static void test_log_full(void)
{
	struct rlimit old, lim = { .rlim_cur = HDR + 3 * (REC + BS), .rlim_max = RLIM_INFINITY };
	struct bdev_wrap_opts o;
	unsigned char *buf = t_alloc(BS);
	struct bdev *bd;
	char *path;

	t_assert(asprintf(&path, "%s/full.wlog", t_workdir()) > 0, "path");
	o = (struct bdev_wrap_opts){ .log_path = path };
	t_ok(bdev_wrap(lower_dev(false), &o, &bd));
	signal(SIGXFSZ, SIG_IGN);
	t_assert(!getrlimit(RLIMIT_FSIZE, &old) && (lim.rlim_max = old.rlim_max, 1) &&
		 !setrlimit(RLIMIT_FSIZE, &lim), "setrlimit");
	for (unsigned int i = 0; i < 3; i++)
		t_ok(bdev_write(bd, (uint64_t)i * BS, buf, BS));
	t_ok(bdev_wrap_log_error(bd));
	t_ok(bdev_write(bd, 3 * BS, buf, BS));
	t_eq(bdev_wrap_log_error(bd), -EFBIG);
	t_eq(bdev_flush(bd), -EIO);
	t_ok(bdev_write(bd, 4 * BS, buf, BS));
	t_eq(bdev_flush(bd), -EIO);
	t_assert(!setrlimit(RLIMIT_FSIZE, &old), "setrlimit");
	bdev_close(bd);
	bdev_free_buf(buf);
	free(path);
}

/*
 * The log file of a round trip over the memory device or io_uring, made
 * once: by the round trip's own case, or by the first case that reads it
 * when that one runs alone.
 */
static const char *log_of(bool uring)
{
	static char *path[2];

	if (!path[uring])
		path[uring] = round_trip(uring);
	return path[uring];
}

static void test_round_trip_mem(void)
{
	log_of(false);
}

static void test_round_trip_uring(void)
{
	log_of(true);
}

static void test_truncated(void)
{
	check_truncated(log_of(false));
}

static void test_corrupt(void)
{
	check_corrupt(log_of(true));
}

T_MAIN(T_CASE(test_round_trip_mem), T_CASE(test_round_trip_uring), T_CASE(test_truncated),
       T_CASE(test_corrupt), T_CASE(test_create_fails), T_CASE(test_log_full))
