/*
 * t_fs.c - helpers of the tests of the mounted filesystem.
 */
#include "t_fs.h"
#include "t_dev.h"

#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>

#include "fsck.h"
#include "util.h"

static const uint32_t user_groups[] = { 1000 };

const struct mfs_cred tf_root = { 0, 0, 022, 0, NULL };
const struct mfs_cred tf_user = { 1000, 1000, 022, 0, NULL };
const struct mfs_cred tf_other = { 1001, 1001, 022, 1, user_groups };

struct bdev *tf_mkfs(uint32_t bs, uint64_t bytes)
{
	struct fmt_mkfs_opts o = { .block_size = bs, .zeroed = true, .now = 1700000000,
				   .csum_seed = 0x5eed };
	struct bdev *bd;

	bd = t_dev_mem(bytes, bs);
	t_ok(fmt_mkfs(bd, &o));
	return bd;
}

struct mfs_fs *tf_mount_opts(struct bdev *bd, const struct mfs_mount_opts *o)
{
	struct mfs_fs *fs;

	t_ok(mfs_mount(bd, o, &fs));
	return fs;
}

struct mfs_fs *tf_mount(struct bdev *bd)
{
	struct mfs_mount_opts o = { .cache_bytes = 4u << 20 };

	return tf_mount_opts(bd, &o);
}

void tf_unmount_check(struct mfs_fs *fs, struct bdev *bd)
{
	t_ok(mfs_unmount(fs));
	tf_check(bd, true);
}

/* ---- the image check ----------------------------------------------------- */

static enum fsck_answer fsck_report(void *arg, const struct fsck_report *r)
{
	(void)arg;
	fprintf(stderr, "fsck: [%s] %s\n", r->code, r->message);
	return r->proposed;
}

/* fsck -fn on the image: nothing to report. */
static void fsck_clean(struct bdev *bd)
{
	struct fsck_opts o = { .mode = FSCK_NO, .force = true, .problem = fsck_report };
	struct fsck_result r;

	t_assert(fsck_run(bd, &o, &r) == 0, "fsck -fn: exit status %d, %" PRIu64
		 " problems", r.exit, r.problems);
}

/*
 * What a clean unmount leaves, which fsck accepts without it: the
 * superblock marked valid, no log to replay, no orphan list.  Marked
 * valid, the superblock's free counts must be exact, and fsck says so
 * when they are not.
 */
static void unmounted_clean(struct bdev *bd)
{
	struct fmt_raw raw;

	t_ok(fmt_raw_open(bd, &raw));
	t_assert(le16toh(raw.sb.s_state) & MFS_STATE_VALID, "not marked clean");
	t_assert(!(le32toh(raw.sb.s_feature_incompat) & MFS_FEATURE_INCOMPAT_RECOVER),
		 "still needs recovery");
	t_eq(le32toh(raw.sb.s_last_orphan), 0);
	fmt_raw_close(&raw);
}

void tf_check(struct bdev *bd, bool clean)
{
	if (clean)
		unmounted_clean(bd);
	fsck_clean(bd);
}

/* ---- the log --------------------------------------------------------------- */

static char logged[16384];

static void log_sink(enum mlog_level level, const char *line, void *arg)
{
	size_t used = strlen(logged);

	(void)level;
	(void)arg;
	if (used + strlen(line) + 2 <= sizeof(logged))
		snprintf(logged + used, sizeof(logged) - used, "%s\n", line);
}

void tf_log_capture(void)
{
	logged[0] = 0;
	mlog_set_sink(log_sink, NULL);
}

void tf_log_release(void)
{
	mlog_set_sink(NULL, NULL);
}

const char *tf_log(void)
{
	return logged;
}

/* ---- file helpers -------------------------------------------------------- */

uint64_t tf_ino(struct mfs_fs *fs, const char *path)
{
	char buf[1024], *save, *part;
	uint64_t ino = MFS_ROOT_INO;
	struct stat st;

	snprintf(buf, sizeof(buf), "%s", path);
	for (part = strtok_r(buf, "/", &save); part; part = strtok_r(NULL, "/", &save)) {
		t_ok(mfs_lookup(fs, &tf_root, ino, part, &st, NULL));
		mfs_forget(fs, st.st_ino, 1);
		ino = st.st_ino;
	}
	return ino;
}

uint8_t tf_pattern(uint64_t pos, unsigned seed)
{
	uint64_t x = (pos + 1) * 0x9E3779B97F4A7C15ull ^ seed;

	return (uint8_t)(x >> 29);
}

void tf_write(struct mfs_fs *fs, uint64_t ino, uint64_t off, size_t len, unsigned seed)
{
	struct mfs_file *f;
	uint8_t *buf = malloc(len ? len : 1);

	t_assert(buf, "no memory");
	for (size_t i = 0; i < len; i++)
		buf[i] = tf_pattern(off + i, seed);
	t_ok(mfs_open(fs, &tf_root, ino, O_RDWR, &f));
	t_eq(mfs_write(fs, &tf_root, f, buf, len, off, 0), (ssize_t)len);
	t_ok(mfs_release(fs, f));
	free(buf);
}

void tf_verify(struct mfs_fs *fs, uint64_t ino, uint64_t off, size_t len, unsigned seed)
{
	struct mfs_file *f;
	uint8_t *buf = malloc(len ? len : 1);

	t_assert(buf, "no memory");
	t_ok(mfs_open(fs, &tf_root, ino, O_RDONLY, &f));
	t_eq(mfs_read(fs, f, buf, len, off), (ssize_t)len);
	for (size_t i = 0; i < len; i++)
		t_assert(buf[i] == tf_pattern(off + i, seed), "inode %" PRIu64
			 " byte %" PRIu64 ": %u, expected %u", ino, off + i, buf[i],
			 tf_pattern(off + i, seed));
	t_ok(mfs_release(fs, f));
	free(buf);
}

struct names {
	char *buf;
	size_t size, len;
	char *v[4096];
	unsigned n;
};

static int collect(void *ctx, const char *name, size_t len, uint64_t ino,
		   unsigned type, uint64_t next, const struct stat *st, uint64_t gen)
{
	struct names *nm = ctx;

	(void)ino; (void)type; (void)next; (void)st; (void)gen;
	t_assert(nm->n < 4096, "too many names");
	nm->v[nm->n] = strndup(name, len);
	nm->n++;
	return 0;
}

static int cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

void tf_list(struct mfs_fs *fs, uint64_t dir, char *buf, size_t size)
{
	struct names *nm = calloc(1, sizeof(*nm));
	struct mfs_dir *d;
	size_t len = 0;

	t_ok(mfs_opendir(fs, &tf_root, dir, &d));
	t_ok(mfs_readdir(fs, d, 0, false, collect, nm));
	t_ok(mfs_releasedir(fs, d));
	qsort(nm->v, nm->n, sizeof(char *), cmp);
	buf[0] = 0;
	for (unsigned i = 0; i < nm->n; i++) {
		len += (size_t)snprintf(buf + UT_MIN(len, size), size - UT_MIN(len, size),
					"%s%s", i ? "\n" : "", nm->v[i]);
		free(nm->v[i]);
	}
	free(nm);
}

uint64_t tf_counter(struct mfs_fs *fs, const char *key)
{
	static char buf[16384];
	size_t n = mfs_stats_format(fs, buf, sizeof(buf)), klen = strlen(key);

	t_assert(n < sizeof(buf), "statistics of %zu bytes", n);
	for (char *p = buf; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
		if (!strncmp(p, key, klen) && p[klen] == ':')
			return strtoull(p + klen + 1, NULL, 10);
	t_fail("no %s in the statistics", key);
}
