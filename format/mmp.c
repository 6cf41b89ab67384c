/*
 * mmp.c - multi-mount protection: one writer per filesystem across nodes.
 *
 * A file lock keeps two programs on one host from opening an image for
 * writing; an image on shared storage (an NBD export) is reached from
 * hosts that see no lock of each other.  So whoever opens it for writing
 * stamps a new sequence number into the MMP block every s_mmp_interval
 * seconds, and whoever wants to open it watches the block first:
 *
 *   CLEAN        nobody has it: write a random stamp of our own;
 *   anything     someone had it (and may have died): wait 2 * interval + 1
 *                seconds, long enough for a live owner to stamp at least
 *                once; a changed stamp refuses;
 *   then         after writing our stamp, wait as long again: another
 *                claimer who wrote after us (both saw CLEAN) changed it,
 *                and one of the two refuses.
 *
 * Once open, a thread stamps on, reading the block before each stamp:
 * a stamp that is not the last one written means another node took the
 * filesystem (it waited for a stamp this node failed to make in time), and
 * the device is fenced at once, so that nothing more of this node reaches
 * the disk the other node now owns.  Closing writes CLEAN.
 */
#include "fmt.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "util.h"

struct fmt_mmp {
	struct bdev *bd;
	struct mfs_super sb;             /* a copy: the caller's may change */
	char program[32];
	uint32_t seq;                   /* the last stamp written */
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t wake;
	bool stop, lost;                /* under lock */
	void (*on_lost)(void *arg);
	void *arg;
};

uint16_t fmt_mmp_interval(const struct mfs_super *sb)
{
	uint16_t s = le16toh(sb->s_mmp_interval);

	return s ? s : MFS_MMP_INTERVAL_DEFAULT;
}

static uint64_t mmp_off(const struct mfs_super *sb)
{
	return le64toh(sb->s_mmp_block) * fmt_block_size(sb);
}

int fmt_mmp_read(struct bdev *bd, const struct mfs_super *sb, struct mfs_mmp *m,
		 char *why, size_t len)
{
	uint32_t bs = fmt_block_size(sb);
	uint64_t blk = le64toh(sb->s_mmp_block);
	uint8_t *buf = bdev_alloc_buf(bs);
	int err = buf ? bdev_read(bd, mmp_off(sb), buf, bs) : -ENOMEM;

	if (err) {
		snprintf(why, len, "cannot read the MMP block %" PRIu64 ": %s", blk,
			 strerror(-err));
	} else if (le32toh(((struct mfs_mmp *)buf)->mmp_magic) != MFS_MMP_MAGIC) {
		err = ut_corrupt(why, len, "MMP block %" PRIu64 ": bad magic 0x%08" PRIx32,
				 blk, le32toh(((struct mfs_mmp *)buf)->mmp_magic));
	} else if (!fmt_block_csum_ok(sb, MFS_CSUM_MMP, blk, buf)) {
		err = ut_corrupt(why, len, "MMP block %" PRIu64 ": bad checksum", blk);
	} else {
		memcpy(m, buf, sizeof(*m));
	}
	bdev_free_buf(buf);
	return err;
}

void fmt_mmp_fill(struct mfs_mmp *m, uint32_t seq, const char *program,
		  uint16_t interval)
{
	struct utsname u;

	memset(m, 0, sizeof(*m));
	m->mmp_magic = htole32(MFS_MMP_MAGIC);
	m->mmp_seq = htole32(seq);
	m->mmp_time = htole64((uint64_t)time(NULL));
	if (uname(&u) == 0)
		memcpy(m->mmp_nodename, u.nodename,
		       strnlen(u.nodename, sizeof(m->mmp_nodename) - 1));
	memcpy(m->mmp_program, program, strnlen(program, sizeof(m->mmp_program) - 1));
	m->mmp_pid = htole32((uint32_t)getpid());
	m->mmp_interval = htole16(interval);
}

/* The block, then a flush: a stamp another node cannot see is no stamp. */
int fmt_mmp_write(struct bdev *bd, const struct mfs_super *sb, const struct mfs_mmp *m)
{
	uint32_t bs = fmt_block_size(sb);
	uint8_t *buf = bdev_alloc_buf(bs);
	int err;

	if (!buf)
		return -ENOMEM;
	memset(buf, 0, bs);
	memcpy(buf, m, sizeof(*m));
	fmt_block_set_csum(sb, MFS_CSUM_MMP, le64toh(sb->s_mmp_block), buf);
	err = bdev_write(bd, mmp_off(sb), buf, bs);
	if (!err)
		err = bdev_flush(bd);
	bdev_free_buf(buf);
	return err;
}

int fmt_mmp_release(struct bdev *bd, const struct mfs_super *sb, const char *program)
{
	struct mfs_mmp m;

	fmt_mmp_fill(&m, MFS_MMP_SEQ_CLEAN, program, fmt_mmp_interval(sb));
	return fmt_mmp_write(bd, sb, &m);
}

void fmt_mmp_describe(const struct mfs_mmp *m, char *buf, size_t len)
{
	int64_t age = (int64_t)time(NULL) - (int64_t)le64toh(m->mmp_time);

	snprintf(buf, len, "%.*s (pid %" PRIu32 ") on node %.*s, stamped %" PRId64
		 " s ago", (int)sizeof(m->mmp_program), m->mmp_program,
		 le32toh(m->mmp_pid), (int)sizeof(m->mmp_nodename), m->mmp_nodename,
		 age < 0 ? 0 : age);
}

static void sleep_s(unsigned int s)
{
	struct timespec ts = { .tv_sec = s };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

static uint32_t random_seq(void)
{
	uint32_t seq = 0;

	while (getrandom(&seq, sizeof(seq), 0) != sizeof(seq))
		;
	return seq % MFS_MMP_SEQ_MAX + 1;
}

static uint32_t next_seq(uint32_t seq)
{
	return seq >= MFS_MMP_SEQ_MAX ? 1 : seq + 1;
}

/* -EBUSY with the owner named, or the read's error with its reason. */
static int reread(struct fmt_mmp *mp, uint32_t expect, const char *when)
{
	struct mfs_mmp m;
	char why[160], who[160];
	int err = fmt_mmp_read(mp->bd, &mp->sb, &m, why, sizeof(why));

	if (err) {
		mlog_err("%s", why);
		return err;
	}
	if (le32toh(m.mmp_seq) == expect)
		return 0;
	fmt_mmp_describe(&m, who, sizeof(who));
	mlog_err("the filesystem is in use by %s: its MMP block changed %s; "
		 "refusing to open it", who, when);
	return -EBUSY;
}

static int claim(struct fmt_mmp *mp)
{
	struct mfs_mmp m;
	char why[160], who[160];
	unsigned int wait;
	uint32_t seq;
	int err = fmt_mmp_read(mp->bd, &mp->sb, &m, why, sizeof(why));

	if (err) {
		mlog_err("%s%s", why, err == -EUCLEAN ? "; run fsck.miscfs" : "");
		return err;
	}
	seq = le32toh(m.mmp_seq);
	wait = 2u * UT_MAX(fmt_mmp_interval(&mp->sb), le16toh(m.mmp_interval)) + 1;
	if (seq != MFS_MMP_SEQ_CLEAN) {
		fmt_mmp_describe(&m, who, sizeof(who));
		mlog_warn("the MMP block says %s and was not released: waiting %u s "
			  "to see whether it is still in use", who, wait);
		sleep_s(wait);
		err = reread(mp, seq, "while this node waited");
		if (err)
			return err;
	}
	mp->seq = random_seq();
	fmt_mmp_fill(&m, mp->seq, mp->program, fmt_mmp_interval(&mp->sb));
	err = fmt_mmp_write(mp->bd, &mp->sb, &m);
	if (err) {
		mlog_err("cannot write the MMP block: %s", strerror(-err));
		return err;
	}
	mlog_warn("multi-mount protection: waiting %u s for any other node's claim", wait);
	sleep_s(wait);
	return reread(mp, mp->seq, "after this node claimed it");
}

/* Another node has the filesystem, or ours cannot be shown: nothing more
 * of this node may reach the disk. */
static void lose(struct fmt_mmp *mp, const char *why)
{
	mlog_err("multi-mount protection: %s; no more writes reach the device", why);
	bdev_fence(mp->bd);
	pthread_mutex_lock(&mp->lock);
	mp->lost = true;
	pthread_mutex_unlock(&mp->lock);
	if (mp->on_lost)
		mp->on_lost(mp->arg);
}

/* One stamp: false once the filesystem is lost. */
static bool stamp(struct fmt_mmp *mp)
{
	struct mfs_mmp m;
	char why[160], who[200], line[260];
	int err = fmt_mmp_read(mp->bd, &mp->sb, &m, why, sizeof(why));

	if (err) {
		lose(mp, why);
		return false;
	}
	if (le32toh(m.mmp_seq) != mp->seq) {
		fmt_mmp_describe(&m, who, sizeof(who));
		snprintf(line, sizeof(line), "the MMP block was written by %s", who);
		lose(mp, line);
		return false;
	}
	mp->seq = next_seq(mp->seq);
	fmt_mmp_fill(&m, mp->seq, mp->program, fmt_mmp_interval(&mp->sb));
	err = fmt_mmp_write(mp->bd, &mp->sb, &m);
	if (err) {
		snprintf(line, sizeof(line), "cannot stamp the MMP block: %s",
			 strerror(-err));
		lose(mp, line);
		return false;
	}
	return true;
}

static void *stamper(void *arg)
{
	struct fmt_mmp *mp = arg;
	struct timespec until;

	pthread_mutex_lock(&mp->lock);
	while (!mp->stop) {
		clock_gettime(CLOCK_MONOTONIC, &until);
		until.tv_sec += fmt_mmp_interval(&mp->sb);
		while (!mp->stop &&
		       pthread_cond_timedwait(&mp->wake, &mp->lock, &until) != ETIMEDOUT)
			;
		if (mp->stop)
			break;
		pthread_mutex_unlock(&mp->lock);
		if (!stamp(mp)) {
			pthread_mutex_lock(&mp->lock);
			break;
		}
		pthread_mutex_lock(&mp->lock);
	}
	pthread_mutex_unlock(&mp->lock);
	return NULL;
}

static void mmp_free(struct fmt_mmp *mp)
{
	pthread_cond_destroy(&mp->wake);
	pthread_mutex_destroy(&mp->lock);
	free(mp);
}

int fmt_mmp_start(struct bdev *bd, const struct mfs_super *sb, const char *program,
		  void (*on_lost)(void *arg), void *arg, struct fmt_mmp **out)
{
	struct fmt_mmp *mp = calloc(1, sizeof(*mp));
	pthread_condattr_t ca;
	int err;

	if (!mp)
		return -ENOMEM;
	mp->bd = bd;
	mp->sb = *sb;
	mp->on_lost = on_lost;
	mp->arg = arg;
	memcpy(mp->program, program, strnlen(program, sizeof(mp->program) - 1));
	pthread_mutex_init(&mp->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&mp->wake, &ca);
	pthread_condattr_destroy(&ca);
	err = claim(mp);
	if (!err)
		err = -pthread_create(&mp->thread, NULL, stamper, mp);
	if (err) {
		mmp_free(mp);
		return err;
	}
	*out = mp;
	return 0;
}

int fmt_mmp_stop(struct fmt_mmp *mp)
{
	int err = 0;

	if (!mp)
		return 0;
	pthread_mutex_lock(&mp->lock);
	mp->stop = true;
	pthread_cond_signal(&mp->wake);
	pthread_mutex_unlock(&mp->lock);
	pthread_join(mp->thread, NULL);
	/* A lost filesystem is another node's: its block is not ours to clear. */
	if (!mp->lost) {
		err = fmt_mmp_release(mp->bd, &mp->sb, mp->program);
		if (err)
			mlog_err("cannot release the MMP block: %s", strerror(-err));
	}
	mmp_free(mp);
	return err;
}
