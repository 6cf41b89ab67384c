/*
 * t_dirhash_mt - directory indexes under threads: two writers create,
 * unlink and rename names in two big directories while two readers look
 * names up and list them, with an index budget that holds one index.
 * Everybody works in one directory for a while, then in the other, so
 * that the idle one's index is dropped for the busy one's while lookups
 * and changes race with both.  Each writer owns its names and checks
 * every lookup of them; at the end the listings agree with the writers'
 * models and the image passes the check.  Also run under ThreadSanitizer.
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "t_fs.h"
#include "util.h"

#define WRITERS 2
#define READERS 2
#define IDS 1600u               /* names per writer */
#define OPS 2400u               /* changes per writer */
#define PHASE 400u              /* changes in one directory before the other */

static struct mfs_fs *fs;
static uint64_t dirs[2];
/* Where writer w's name i is: 0 absent, else 1 + directory. */
static uint8_t where[WRITERS][IDS];
static uint64_t inos[WRITERS][IDS];
static atomic_bool done;
static _Atomic unsigned phase;          /* the busy directory: phase % 2 */

static void wname(char *buf, size_t size, unsigned w, unsigned i)
{
	snprintf(buf, size, "w%u-%u-%.*s", w, i, (int)(i % 40), "qqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqq");
}

static unsigned next(unsigned *s)
{
	*s = *s * 1103515245u + 12345u;
	return (*s >> 8) & 0xffffff;
}

/* Lookups of writer @w's name @i in directory @d (2: both). */
static void check_one(unsigned w, unsigned i, unsigned which)
{
	char name[64];
	struct stat st;

	wname(name, sizeof(name), w, i);
	for (unsigned d = 0; d < 2; d++) {
		int err;

		if (which != 2 && d != which)
			continue;
		err = mfs_lookup(fs, &tf_root, dirs[d], name, &st, NULL);

		if (where[w][i] == d + 1) {
			t_assert(!err, "%s not found in %u (%d)", name, d, err);
			t_eq(st.st_ino, inos[w][i]);
			mfs_forget(fs, st.st_ino, 1);
		} else {
			t_assert(err == -ENOENT, "%s found in %u (%d)", name, d, err);
		}
	}
}

static void create(unsigned w, unsigned i, unsigned d)
{
	char name[64];
	struct stat st;

	wname(name, sizeof(name), w, i);
	t_ok(mfs_mknod(fs, &tf_root, dirs[d], name, S_IFREG | 0644, 0, &st, NULL));
	mfs_forget(fs, st.st_ino, 1);
	inos[w][i] = st.st_ino;
	where[w][i] = (uint8_t)(d + 1);
}

/* Create, unlink or rename (to another of its names) writer @w's name
 * @i in directory @d; a name in the other directory waits its turn. */
static void change(unsigned w, unsigned i, unsigned d, unsigned r)
{
	unsigned j = (i + 1 + r % 7) % IDS;
	char name[64], to[64];

	wname(name, sizeof(name), w, i);
	wname(to, sizeof(to), w, j);
	if (!where[w][i]) {
		create(w, i, d);
	} else if (where[w][i] != d + 1) {
		return;
	} else if (r % 3 == 0) {
		t_ok(mfs_unlink(fs, &tf_root, dirs[d], name));
		where[w][i] = 0;
	} else if (!where[w][j]) {
		t_ok(mfs_rename(fs, &tf_root, dirs[d], name, dirs[d], to, 0));
		where[w][j] = where[w][i];
		inos[w][j] = inos[w][i];
		where[w][i] = 0;
		check_one(w, j, d);
	}
}

static void *writer(void *arg)
{
	unsigned w = (unsigned)(uintptr_t)arg, s = 77 + w;

	for (unsigned k = 0; k < OPS; k++) {
		unsigned i = next(&s) % IDS, d = (k / PHASE) % 2;

		if (w == 0)
			atomic_store(&phase, d);
		change(w, i, d, next(&s));
		check_one(w, i, d);
	}
	return NULL;
}

static int count_fill(void *ctx, const char *name, size_t len, uint64_t ino,
		      unsigned type, uint64_t nx, const struct stat *st,
		      uint64_t gen)
{
	(void)name; (void)len; (void)ino; (void)type; (void)nx; (void)st;
	(*(unsigned *)ctx)++;
	return 0;
}

static unsigned listed(uint64_t dir)
{
	struct mfs_dir *d;
	unsigned n = 0;

	t_ok(mfs_opendir(fs, &tf_root, dir, &d));
	t_ok(mfs_readdir(fs, d, 0, false, count_fill, &n));
	t_ok(mfs_releasedir(fs, d));
	return n - 2;
}

static uint64_t counter(const char *key)
{
	static char buf[16384];
	size_t klen = strlen(key);

	mfs_stats_format(fs, buf, sizeof(buf));
	for (char *p = buf; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
		if (!strncmp(p, key, klen) && p[klen] == ':')
			return strtoull(p + klen + 1, NULL, 10);
	t_fail("no %s", key);
}

static void *reader(void *arg)
{
	unsigned s = 991 + (unsigned)(uintptr_t)arg;
	char name[64];
	struct stat st;

	while (!atomic_load(&done)) {
		unsigned r = next(&s), d = atomic_load(&phase);

		wname(name, sizeof(name), r % WRITERS, (r >> 4) % IDS);
		if (!mfs_lookup(fs, &tf_root, dirs[d], name, &st, NULL))
			mfs_forget(fs, st.st_ino, 1);
		if (r % 256 == 0)
			listed(dirs[d]);
	}
	return NULL;
}

/* The two directories, each with half of every writer's names. */
static void populate(void)
{
	struct stat st;

	for (unsigned d = 0; d < 2; d++) {
		t_ok(mfs_mkdir(fs, &tf_root, MFS_ROOT_INO, d ? "b" : "a", 0755, &st, NULL));
		mfs_forget(fs, st.st_ino, 1);
		dirs[d] = st.st_ino;
	}
	for (unsigned w = 0; w < WRITERS; w++)
		for (unsigned i = 0; i < IDS; i += 2)
			create(w, i, (i / 2) % 2);
}

/* The writers until they are through, the readers until then. */
static void race(void)
{
	pthread_t t[WRITERS + READERS];

	for (uintptr_t i = 0; i < WRITERS + READERS; i++)
		t_eq(pthread_create(&t[i], NULL, i < WRITERS ? writer : reader, (void *)i), 0);
	for (unsigned i = 0; i < WRITERS; i++)
		pthread_join(t[i], NULL);
	atomic_store(&done, true);
	for (unsigned i = WRITERS; i < WRITERS + READERS; i++)
		pthread_join(t[i], NULL);
}

/* Every name where its writer's model has it, and nothing more listed. */
static void check_models(void)
{
	unsigned want[2] = { 0, 0 };

	for (unsigned w = 0; w < WRITERS; w++)
		for (unsigned i = 0; i < IDS; i++) {
			check_one(w, i, 2);
			if (where[w][i])
				want[where[w][i] - 1]++;
		}
	t_eq(listed(dirs[0]), want[0]);
	t_eq(listed(dirs[1]), want[1]);
	printf("%u and %u entries; index builds %" PRIu64 ", drops %" PRIu64 "\n",
	       want[0], want[1], counter("dirhash_builds"), counter("dirhash_drops"));
}

/* Two busy directories and a budget for one index: the two indexes take
 * each other's memory in turns while lookups and changes race. */
static void test_indexes_take_turns(void)
{
	struct mfs_mount_opts o = { .cache_bytes = 4u << 20, .dirhash_bytes = 40u << 10 };
	struct bdev *bd = tf_mkfs(1024, 64u << 20);

	fs = tf_mount_opts(bd, &o);
	populate();
	race();
	check_models();
	t_assert(counter("dirhash_drops") > 0, "no index dropped");
	tf_unmount_check(fs, bd);
	bdev_close(bd);
}

T_MAIN(T_CASE(test_indexes_take_turns))
