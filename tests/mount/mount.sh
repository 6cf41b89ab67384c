# Sourced by the mount tests after ../lib.sh: the daemon in the
# foreground as the test's child on $mnt, and its clean exit.
: "${MISCFS:?MISCFS must name the daemon}"

[ -c /dev/fuse ] && [ -r /dev/fuse ] && [ -w /dev/fuse ] || skip "no usable /dev/fuse"
command -v fusermount3 >/dev/null || skip "no fusermount3"

img=$T_DIR/img
mnt=$T_DIR/mnt
mkdir "$mnt"
daemon=

mounted() { grep -q " $mnt fuse" /proc/self/mounts; }

# stat_of KEY: the value of KEY in the mount's statistics file.
stat_of() { sed -n "s/^$1: //p" "$mnt/.miscfs/stats"; }

# The daemon is our child: wait for it, and look at /proc in case the
# machine leaves exited children as zombies.
daemon_gone() {
	local state
	# No state read: gone, or reaped between the look and the read.
	state=$(sed 's/^.*) //' "/proc/$daemon/stat" 2>/dev/null | cut -d' ' -f1)
	[ -z "$state" ] || [ "$state" = Z ] || [ "$state" = X ]
}

stop() {
	if [ -n "$daemon" ] && mounted; then
		fusermount3 -u "$mnt" 2>/dev/null || fusermount3 -u -z "$mnt" 2>/dev/null
	fi
	for _ in $(seq 100); do
		[ -z "$daemon" ] || daemon_gone && break
		sleep 0.1
	done
}
trap 'stop; t_cleanup' EXIT

# $mount_wait: the seconds a mount may take (60 by default: a loaded
# machine and a sanitizer build; multi-mount protection waits more).
start() {
	"$MISCFS" "$img" "$mnt" -f "$@" 2>"$T_DIR/daemon.err" &
	daemon=$!
	for _ in $(seq $((${mount_wait:-60} * 50))); do
		mounted && return 0
		daemon_gone && { cat "$T_DIR/daemon.err"; fail "the daemon exited"; }
		sleep 0.02
	done
	fail "not mounted after ${mount_wait:-60} s"
}

# An unclean stop: the daemon killed with SIGKILL, its mount detached.
kill_daemon() {
	kill -9 "$daemon"
	wait "$daemon" 2>/dev/null
	daemon=
	fusermount3 -u -z "$mnt" 2>/dev/null || umount -l "$mnt"
}

unmount() {
	fusermount3 -u "$mnt" || fail "fusermount3 -u"
	local rc=0
	wait "$daemon" || rc=$?
	[ "$rc" -eq 0 ] || { cat "$T_DIR/daemon.err"; fail "the daemon exited $rc"; }
	daemon=
	mounted && fail "still mounted"
	return 0
}
