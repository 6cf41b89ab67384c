/*
 * main.c - the miscfs daemon: miscfs IMAGE MOUNTPOINT [-o opts] [-f] [-d].
 *
 * It locks the image (a second daemon is refused), opens it with the
 * filesystem's block size, mounts the filesystem, mounts it in the kernel
 * through /dev/fuse and serves requests from several threads until the
 * kernel unmounts it or a signal arrives; then it unmounts the filesystem
 * cleanly.  Without -f it detaches once the mount is up, and its exit
 * status says whether the mount came up (mount(8) and mount.fuse3 wait
 * for it).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <malloc.h>
#include <mntent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fuse_ops.h"
#include "util.h"

struct args {
	const char *image, *mountpoint;
	bool foreground, debug;
	bool remount;                /* change the flags of the kernel mount */
	bool atime_given;
	bool allow_other;            /* other users may use the mount */
	bool host_reads;             /* reads through the host's page cache */
	char *writelog;              /* record writes and flushes here */
	unsigned long mnt_set, mnt_clear;   /* MS_* the options name */
	struct mfs_mount_opts mo;
	struct mfs_fuse_cache kc;    /* what the kernel may cache */
	char kopts[1024];            /* options for the kernel mount */
	char fsname[PATH_MAX];
};

static int usage(void)
{
	fprintf(stderr,
		"usage: miscfs IMAGE MOUNTPOINT [-o OPTIONS] [-f] [-d]\n"
		"IMAGE: a file, a block device or an NBD URI (nbd://HOST/EXPORT,\n"
		"       nbd+unix:///EXPORT?socket=PATH)\n"
		"options: cache_size=SIZE data=ordered|writeback|journal commit=SECONDS ro rw\n"
		"         errors=continue|remount-ro force allow_other default_permissions\n"
		"         relatime strictatime noatime atime nodiratime diratime\n"
		"         nodev nosuid dev suid exec noexec sync dirsync defaults\n"
		"         writelog=FILE entry_timeout=S attr_timeout=S negative_timeout=S\n"
		"         keep_cache nokeep_cache writeback_cache nowriteback_cache\n"
		"         io_uring noio_uring host_cache nohost_cache kernel_readahead=SIZE\n");
	return 2;
}

static void kopt(struct args *a, const char *opt)
{
	size_t len = strlen(a->kopts);

	snprintf(a->kopts + len, sizeof(a->kopts) - len, "%s%s", len ? "," : "", opt);
}

static int opt_value(struct args *a, const char *key, const char *val)
{
	uint64_t n;

	if (!strcmp(key, "cache_size")) {
		if (ut_parse_size(val, &n) || n < (1u << 20))
			return mlog_err("cache_size=%s: not a size of 1M or more", val), -1;
		a->mo.cache_bytes = n;
	} else if (!strcmp(key, "data")) {
		if (!strcmp(val, "ordered"))
			a->mo.data = MFS_DATA_ORDERED;
		else if (!strcmp(val, "writeback"))
			a->mo.data = MFS_DATA_WRITEBACK;
		else if (!strcmp(val, "journal"))
			a->mo.data = MFS_DATA_JOURNAL;
		else
			return mlog_err("data=%s: unknown data mode", val), -1;
	} else if (!strcmp(key, "commit")) {
		char *end;
		unsigned long s = strtoul(val, &end, 10);

		if (*end || !*val || s > 3600)
			return mlog_err("commit=%s: not a number of seconds", val), -1;
		a->mo.commit_s = (unsigned)s;
	} else if (!strcmp(key, "errors")) {
		if (strcmp(val, "continue") && strcmp(val, "remount-ro"))
			return mlog_err("errors=%s: use continue or remount-ro", val), -1;
		a->mo.errors = strcmp(val, "remount-ro") ? MFS_ERRORS_CONTINUE : MFS_ERRORS_RO;
	} else if (!strcmp(key, "entry_timeout") || !strcmp(key, "attr_timeout") ||
		   !strcmp(key, "negative_timeout")) {
		char *end;
		double t = strtod(val, &end);

		if (*end || !*val || !(t >= 0 && t <= 1e9))
			return mlog_err("%s=%s: not a number of seconds", key, val), -1;
		*(key[0] == 'e' ? &a->kc.entry_s : key[0] == 'a' ? &a->kc.attr_s :
		  &a->kc.negative_s) = t;
	} else if (!strcmp(key, "kernel_readahead")) {
		uint64_t v;

		if (ut_parse_size(val, &v) || v > (64u << 20))
			return mlog_err("kernel_readahead=%s: not a size up to 64M", val), -1;
		a->kc.readahead_kb = (unsigned int)(v / 1024);
	} else if (!strcmp(key, "writelog")) {
		if (!*val)
			return mlog_err("writelog=: no file named"), -1;
		/* the option list is parsed in a copy that is freed */
		free(a->writelog);
		a->writelog = strdup(val);
		if (!a->writelog)
			return mlog_err("writelog=%s: %s", val, strerror(ENOMEM)), -1;
	} else if (!strcmp(key, "fsname") || !strcmp(key, "subtype")) {
		char buf[PATH_MAX + 16];

		snprintf(buf, sizeof(buf), "%s=%s", key, val);
		kopt(a, buf);
	} else {
		return mlog_err("unknown mount option '%s=%s'", key, val), -1;
	}
	return 0;
}

static void mnt_flag(struct args *a, unsigned long flag, bool set)
{
	a->mnt_set = set ? a->mnt_set | flag : a->mnt_set & ~flag;
	a->mnt_clear = set ? a->mnt_clear & ~flag : a->mnt_clear | flag;
}

static int opt_flag(struct args *a, const char *opt)
{
	static const char *const kernel[] = { "allow_other", "default_permissions",
		"nodev", "nosuid", "dev", "suid", "exec", "noexec", "sync", "dirsync",
		NULL };
	/* Standard options mount(8) and mount.fuse3 pass on that change
	 * nothing here: atime is the filesystem's (relatime and friends). */
	static const char *const ignored[] = { "defaults", "auto", "noauto",
		"user", "nouser", "users", "_netdev", "nofail", "async", "lazytime",
		"nolazytime", "nomand", "iversion", "noiversion", "loud", "silent", NULL };

	static const struct { const char *name; unsigned long flag; bool set; } flags[] = {
		{ "nodev", MS_NODEV, true }, { "dev", MS_NODEV, false },
		{ "nosuid", MS_NOSUID, true }, { "suid", MS_NOSUID, false },
		{ "noexec", MS_NOEXEC, true }, { "exec", MS_NOEXEC, false },
	};

	for (size_t i = 0; i < sizeof(flags) / sizeof(flags[0]); i++)
		if (!strcmp(opt, flags[i].name))
			mnt_flag(a, flags[i].flag, flags[i].set);
	if (!strcmp(opt, "default_permissions"))
		mfs_fuse_kernel_checks(true);
	if (!strcmp(opt, "allow_other"))
		a->allow_other = true;
	for (int i = 0; kernel[i]; i++)
		if (!strcmp(opt, kernel[i]))
			return kopt(a, opt), 0;
	if (!strcmp(opt, "remount"))
		a->remount = true;
	else if (!strcmp(opt, "ro"))
		a->mo.read_only = true, mnt_flag(a, MS_RDONLY, true);
	else if (!strcmp(opt, "rw"))
		a->mo.read_only = false, mnt_flag(a, MS_RDONLY, false);
	else if (!strcmp(opt, "force"))
		a->mo.force = true;
	else if (!strcmp(opt, "keep_cache") || !strcmp(opt, "nokeep_cache"))
		a->kc.keep_cache = opt[0] == 'k';
	else if (!strcmp(opt, "writeback_cache") || !strcmp(opt, "nowriteback_cache"))
		a->kc.writeback = opt[0] == 'w';
	else if (!strcmp(opt, "host_cache") || !strcmp(opt, "nohost_cache"))
		a->host_reads = opt[0] == 'h';
	else if (!strcmp(opt, "io_uring") || !strcmp(opt, "noio_uring"))
		mfs_fuse_uring_want(opt[0] == 'i');
	else if (!strcmp(opt, "relatime"))
		a->mo.atime = MFS_ATIME_RELATIME, a->atime_given = true;
	else if (!strcmp(opt, "strictatime"))
		a->mo.atime = MFS_ATIME_STRICT, a->atime_given = true;
	else if (!strcmp(opt, "noatime"))
		a->mo.atime = MFS_ATIME_NONE, a->atime_given = true;
	else if (!strcmp(opt, "atime") || !strcmp(opt, "norelatime") ||
		 !strcmp(opt, "nostrictatime"))      /* the default again */
		a->mo.atime = MFS_ATIME_RELATIME, a->atime_given = true;
	else if (!strcmp(opt, "nodiratime"))
		a->mo.nodiratime = true, mnt_flag(a, MS_NODIRATIME, true);
	else if (!strcmp(opt, "diratime"))
		a->mo.nodiratime = false, mnt_flag(a, MS_NODIRATIME, false);
	else {
		for (int i = 0; ignored[i]; i++)
			if (!strcmp(opt, ignored[i]))
				return 0;
		return mlog_err("unknown mount option '%s'", opt), -1;
	}
	return 0;
}

static int parse_opts(struct args *a, const char *list)
{
	char *copy = strdup(list), *save, *opt;
	int err = copy ? 0 : -1;

	for (opt = copy ? strtok_r(copy, ",", &save) : NULL; opt && !err;
	     opt = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(opt, '=');

		if (eq) {
			*eq = 0;
			err = opt_value(a, opt, eq + 1);
		} else {
			err = opt_flag(a, opt);
		}
	}
	free(copy);
	return err;
}

static int parse_args(int argc, char **argv, struct args *a)
{
	for (int i = 1; i < argc; i++) {
		const char *s = argv[i];

		if (!strcmp(s, "-o") && i + 1 < argc) {
			if (parse_opts(a, argv[++i]))
				return -1;
		} else if (!strncmp(s, "-o", 2) && s[2]) {
			if (parse_opts(a, s + 2))
				return -1;
		} else if (!strcmp(s, "-f")) {
			a->foreground = true;
		} else if (!strcmp(s, "-d")) {
			a->foreground = a->debug = true;
		} else if (s[0] == '-') {
			return -1;
		} else if (!a->image) {
			a->image = s;
		} else if (!a->mountpoint) {
			a->mountpoint = s;
		} else {
			return -1;
		}
	}
	return a->image && a->mountpoint ? 0 : -1;
}

/* ---- users other than root ---------------------------------------------- */

/* fusermount3's configuration, where "user_allow_other" lets users who
 * are not root mount with allow_other. */
#define FUSE_CONF "/etc/fuse.conf"

static bool fuse_conf_allows_other(void)
{
	FILE *f = fopen(FUSE_CONF, "r");
	char line[256];
	bool found = false;

	if (!f)
		return false;
	while (!found && fgets(line, sizeof(line), f)) {
		char word[32];

		found = sscanf(line, " %31[^# \t\n]", word) == 1 &&
			!strcmp(word, "user_allow_other");
	}
	fclose(f);
	return found;
}

/* Refused here, before the image is locked, replayed or mounted, rather
 * than by fusermount3 once all of that is done. */
static int check_allow_other(const struct args *a)
{
	if (!a->allow_other || geteuid() == 0 || fuse_conf_allows_other())
		return 0;
	mlog_err("allow_other: only root may let other users into the mount, "
		 "unless %s has a line \"user_allow_other\"", FUSE_CONF);
	return -1;
}

/* ---- the image ----------------------------------------------------------- */

/*
 * An exclusive flock on the image for the daemon's life: no second daemon
 * and no tool works on the image meanwhile.  A FUSE unmount returns before
 * the daemon has written back and closed the image, so a mount right after
 * one finds the image locked by a daemon whose kernel mount is gone: it
 * waits for that daemon to finish (LOCK_WAIT_S at most) instead of
 * failing.  An image that is mounted (its path is the source of a FUSE
 * mount) is in use, and a second daemon is refused at once.
 */
#define LOCK_WAIT_S 120

static bool image_mounted(const char *path)
{
	char real[PATH_MAX];
	struct mntent *m;
	bool found = false;
	FILE *f;

	if (!realpath(path, real))
		return false;
	f = setmntent("/proc/self/mounts", "r");
	if (!f)
		return true;                 /* cannot tell: do not wait */
	while (!found && (m = getmntent(f)))
		found = !strncmp(m->mnt_type, "fuse", 4) && !strcmp(m->mnt_fsname, real);
	endmntent(f);
	return found;
}

#define NO_LOCK (-2)

/* The fd holding the lock, NO_LOCK for an NBD export (no file to lock:
 * README, "Images on NBD"), or -1. */
static int lock_image(const char *path, bool ro)
{
	uint64_t start = ut_now_ns();
	bool told = false;
	int fd;

	if (bdev_is_remote(path))
		return NO_LOCK;
	fd = open(path, (ro ? O_RDONLY : O_RDWR) | O_CLOEXEC);
	if (fd < 0) {
		mlog_err("%s: %s", path, strerror(errno));
		return -1;
	}
	while (flock(fd, LOCK_EX | LOCK_NB)) {
		uint64_t waited = ut_now_ns() - start;

		if (errno != EWOULDBLOCK) {
			mlog_err("%s: cannot lock: %s", path, strerror(errno));
		} else if (image_mounted(path)) {
			mlog_err("%s is in use by another miscfs daemon", path);
		} else if (waited >= LOCK_WAIT_S * 1000000000ull) {
			mlog_err("%s: the miscfs daemon that used it is still writing it "
				 "back after %d s", path, LOCK_WAIT_S);
		} else {
			if (!told && waited >= 1000000000ull) {
				mlog_info("%s: waiting for the miscfs daemon that used it "
					  "to finish", path);
				told = true;
			}
			usleep(20000);
			continue;
		}
		close(fd);
		return -1;
	}
	return fd;
}

/*
 * -o writelog=FILE: every write and flush the device completes is appended
 * to FILE, for miscfs-replay to rebuild the image at any flush from a copy
 * of the image taken before the mount.
 */
static int stack_writelog(const struct args *a, struct bdev **bd)
{
	struct bdev_wrap_opts o = { .log_path = a->writelog };
	struct bdev *wrapped;
	struct stat lst, ist;
	int err;

	/* The log is truncated: never the image itself. */
	if (!stat(a->writelog, &lst) && (*bd)->fd >= 0 && !fstat((*bd)->fd, &ist) &&
	    lst.st_dev == ist.st_dev && lst.st_ino == ist.st_ino)
		err = -EEXIST;
	else
		err = bdev_wrap(*bd, &o, &wrapped);
	if (err) {
		mlog_err("writelog=%s: cannot create the write log: %s", a->writelog,
			 err == -EEXIST ? "it is the image" : strerror(-err));
		bdev_close(*bd);
		*bd = NULL;
		return err;
	}
	mlog_info("%s: recording every write and flush in %s", a->image, a->writelog);
	*bd = wrapped;
	return 0;
}

/* Open the device with the filesystem's block size, read from the
 * superblock through a first open with 1 KiB blocks. */
static int open_image(const struct args *a, struct bdev **out)
{
	struct bdev_open_opts o = { .block_size = 1024, .read_only = a->mo.read_only,
				    .host_reads = a->host_reads };
	struct mfs_super sb;
	uint32_t copy;
	bool torn;
	struct bdev *bd;
	int err = bdev_open(a->image, &o, &bd);

	if (err) {
		mlog_err("%s: %s", a->image, strerror(-err));
		return err;
	}
	err = fmt_sb_load_torn(bd, &sb, &copy, &torn);   /* the mount decides */
	bdev_close(bd);
	if (err)
		return err;
	o.block_size = fmt_block_size(&sb);
	err = bdev_open(a->image, &o, out);
	if (err)
		mlog_err("%s: %s", a->image, strerror(-err));
	else if (a->writelog)
		err = stack_writelog(a, out);
	return err;
}

/* ---- FUSE ---------------------------------------------------------------- */

static struct fuse_session *session_new(struct args *a, struct mfs_fs *fs)
{
	char opts[sizeof(a->kopts) + PATH_MAX + 32];
	char *argv[6];
	int argc = 0;
	struct fuse_args fa;
	struct fuse_session *se;
	struct statvfs sv;

	/* The filesystem may be read-only without -o ro (unknown ro_compat
	 * features): the kernel mount says so too. */
	if (mfs_statfs(fs, &sv))
		sv.f_flag = 0;
	snprintf(opts, sizeof(opts), "fsname=%s%s%s%s", a->fsname,
		 a->kopts[0] ? "," : "", a->kopts,
		 a->mo.read_only || (sv.f_flag & ST_RDONLY) ? ",ro" : "");
	argv[argc++] = (char *)"miscfs";
	argv[argc++] = (char *)"-o";
	argv[argc++] = opts;
	if (a->debug)
		argv[argc++] = (char *)"-d";
	argv[argc] = NULL;
	fa = (struct fuse_args)FUSE_ARGS_INIT(argc, argv);
	se = fuse_session_new(&fa, &mfs_fuse_ops, sizeof(mfs_fuse_ops), fs);
	if (se)
		mfs_set_attr_changed(fs, mfs_fuse_attr_changed, se);
	/* Parsing rebuilds the arguments in memory of their own; the session
	 * keeps copies of what it needs. */
	fuse_opt_free_args(&fa);
	return se;
}

/* Tell the waiting parent whether the mount came up, then detach. */
static void report(int fd, char status)
{
	int null;

	if (fd < 0)
		return;
	if (write(fd, &status, 1) != 1)
		status = 1;
	close(fd);
	if (status)
		return;
	null = open("/dev/null", O_RDWR);
	if (null >= 0) {
		dup2(null, 0);
		dup2(null, 1);
		dup2(null, 2);
		if (null > 2)
			close(null);
	}
}

/* Octal escapes (\040) of a path in /proc/self/mountinfo, undone in place. */
static void unescape(char *s)
{
	char *o = s;

	for (; *s; s++, o++) {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' && s[2] >= '0' &&
		    s[2] <= '7' && s[3] >= '0' && s[3] <= '7') {
			*o = (char)((s[1] - '0') * 64 + (s[2] - '0') * 8 + (s[3] - '0'));
			s += 3;
		} else {
			*o = *s;
		}
	}
	*o = 0;
}

/* The device number of the newest mount on @path (canonical), from
 * /proc/self/mountinfo: asking the mount itself would wait for INIT. */
static void find_mount_dev(const char *path)
{
	FILE *f = fopen("/proc/self/mountinfo", "r");
	unsigned int major = 0, minor = 0, ma, mi;
	char line[PATH_MAX * 2], mnt[PATH_MAX * 2];

	while (f && fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%*u %*u %u:%u %*s %s", &ma, &mi, mnt) != 3)
			continue;
		unescape(mnt);
		if (!strcmp(mnt, path))
			major = ma, minor = mi;
	}
	if (f)
		fclose(f);
	if (major || minor)
		mfs_fuse_set_mount_dev(major, minor);
}

static int run(struct args *a, int status_fd)
{
	char canon[PATH_MAX];
	struct fuse_session *se = NULL;
	struct mfs_fs *fs = NULL;
	struct bdev *bd = NULL;
	int lock = lock_image(a->image, a->mo.read_only), err = -1;

	if (lock != -1 && !open_image(a, &bd) && !mfs_mount(bd, &a->mo, &fs))
		se = session_new(a, fs);
	if (se && fuse_set_signal_handlers(se) == 0) {
		bool canonical = realpath(a->mountpoint, canon) != NULL;

		if (fuse_session_mount(se, a->mountpoint) == 0) {
			if (canonical)
				find_mount_dev(canon);
			mfs_fuse_transport_attach(se);
			report(status_fd, 0);
			status_fd = -1;
			err = mfs_fuse_loop(se);
			fuse_session_unmount(se);
		}
		fuse_remove_signal_handlers(se);
	}
	if (fs && mfs_unmount(fs)) {
		mlog_err("%s: unmount failed; the journal will be replayed at the "
			 "next mount", a->image);
		err = -1;
	}
	if (se)
		fuse_session_destroy(se);
	mfs_fuse_transport_detach();
	if (bd && a->writelog && bdev_wrap_log_error(bd)) {
		mlog_err("writelog=%s: the log is incomplete", a->writelog);
		err = -1;
	}
	if (bd)
		bdev_close(bd);
	if (lock >= 0)
		close(lock);
	report(status_fd, 1);
	return err ? 1 : 0;
}

/*
 * mount -o remount: the filesystem is served by the daemon that mounted it,
 * so this changes only the kernel mount's flags (read-only or not, nodev,
 * nosuid, noexec, the atime rule) with mount(2), as mount(8) would for a
 * kernel filesystem.  The daemon keeps its own mode: a filesystem it
 * serves read-write refuses writes while the mount is read-only, and one
 * mounted read-only stays so.
 */
static int remount(const struct args *a)
{
	static const struct { unsigned long st, ms; } keep[] = {
		{ ST_RDONLY, MS_RDONLY }, { ST_NOSUID, MS_NOSUID },
		{ ST_NODEV, MS_NODEV }, { ST_NOEXEC, MS_NOEXEC },
		{ ST_NOATIME, MS_NOATIME }, { ST_NODIRATIME, MS_NODIRATIME },
		{ ST_RELATIME, MS_RELATIME },
	};
	unsigned long flags = 0;
	struct statvfs sv;

	/* What the options do not name stays as it is. */
	if (statvfs(a->mountpoint, &sv)) {
		mlog_err("%s: %s", a->mountpoint, strerror(errno));
		return 1;
	}
	for (size_t i = 0; i < sizeof(keep) / sizeof(keep[0]); i++)
		if (sv.f_flag & keep[i].st)
			flags |= keep[i].ms;
	if (!(flags & (MS_NOATIME | MS_RELATIME)))
		flags |= MS_STRICTATIME;
	if (a->atime_given) {
		flags &= ~(MS_NOATIME | MS_RELATIME | MS_STRICTATIME);
		flags |= a->mo.atime == MFS_ATIME_NONE ? MS_NOATIME :
			 a->mo.atime == MFS_ATIME_STRICT ? MS_STRICTATIME : MS_RELATIME;
	}
	flags = (flags & ~a->mnt_clear) | a->mnt_set;
	if (mount(NULL, a->mountpoint, NULL, MS_REMOUNT | flags, NULL)) {
		mlog_err("%s: remount: %s", a->mountpoint, strerror(errno));
		return 1;
	}
	return 0;
}

/* Without -f: the child mounts and serves; the parent exits with the
 * status the child reports once the mount is up (or has failed). */
static int detach(int *status_fd)
{
	int p[2];
	pid_t pid;
	char status = 1;

	if (pipe(p))
		return -1;
	pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		close(p[0]);
		setsid();
		*status_fd = p[1];
		return 0;
	}
	close(p[1]);
	if (read(p[0], &status, 1) != 1)
		status = 1;
	_exit(status);
}

/*
 * Two malloc arenas, unless MALLOC_ARENA_MAX says otherwise.  By default
 * each request thread gets its own; memory one thread freed (nodes the
 * kernel forgot, a burst of journal bookkeeping) then stays in that
 * thread's arena for it alone.  A million files created, stated cold
 * and unlinked in one directory (cache_size 64M) peaked at 128.2 MiB
 * with the default and 126.6 MiB with two, and ran no slower (one run
 * each: 6,247 / 6,420 creates/s, 4,194 / 4,491 stats/s, 6,797 / 7,451
 * unlinks/s).
 */
static void few_arenas(void)
{
	if (!getenv("MALLOC_ARENA_MAX"))
		mallopt(M_ARENA_MAX, 2);
}

int main(int argc, char **argv)
{
	struct args a = { .kc = MFS_FUSE_CACHE_DEFAULTS, .host_reads = true };
	int status_fd = -1, rc;

	few_arenas();
	mlog_set_ident("miscfs");
	/* Mounted by root, device files and set-id programs work as on a
	 * kernel filesystem unless nodev or nosuid says otherwise (they come
	 * later and win); libfuse's own default is nodev,nosuid. */
	if (geteuid() == 0)
		kopt(&a, "dev,suid");
	if (argc == 2 && (!strcmp(argv[1], "-V") || !strcmp(argv[1], "--version"))) {
		printf("miscfs %s\n", MISCFS_VERSION);
		return 0;
	}
	if (parse_args(argc, argv, &a)) {
		free(a.writelog);
		return usage();
	}
	if (a.remount && a.writelog) {
		mlog_err("writelog= is set at mount time, not by a remount");
		free(a.writelog);
		return 1;
	}
	if (a.remount)
		return remount(&a);
	mfs_fuse_set_cache(&a.kc);
	if (check_allow_other(&a)) {
		free(a.writelog);
		return 1;
	}
	if (bdev_is_remote(a.image) || !realpath(a.image, a.fsname))
		snprintf(a.fsname, sizeof(a.fsname), "%s", a.image);
	if (!a.foreground && detach(&status_fd))
		return 1;
	rc = run(&a, status_fd);
	free(a.writelog);
	return rc;
}
