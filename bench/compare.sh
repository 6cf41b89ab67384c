#!/usr/bin/env bash
# miscfs next to fuse2fs, kernel ext4 and libfuse's passthrough_ll, on
# the same workloads, in interleaved rounds; prints a table of medians
# and ratios (markdown, for docs/PERFORMANCE.md).
#
#   bench/compare.sh                      everything, 5 rounds (long)
#   QUICK=1 bench/compare.sh              tiny sizes, 1 round: checks the harness
#   FS="miscfs ext4" WORKLOADS="tar finddu rm" ROUNDS=3 bench/compare.sh
#
# Each round takes, for each filesystem in turn (A B C A B C ...): a
# fresh image of $SIZE in $WORK, mounted, every workload run in order,
# unmounted, the image deleted.  The workloads that read "with cold
# caches" unmount, drop the kernel's caches and mount again first.
# Figures go to $OUT: table.md, raw.tsv (one line per figure and round),
# machine.txt, ratios.svg (gnuplot), log/ (each workload's output).
#
# Filesystems (FS, default all):
#   miscfs          build/daemon/miscfs IMG MNT -o cache_size=$CACHE
#   miscfs-journal  the same with -o data=journal
#   miscfs-base     $BASE_BUILD/daemon/miscfs, made by that build's mkfs,
#                   with miscfs's options: the same code at another
#                   commit, for an A/B pair (FS="miscfs miscfs-base";
#                   not in the default list)
#   miscfs-nbd      miscfs's daemon and options on an image served by
#                   nbdkit's file plugin on a Unix socket (libnbd in
#                   place of io_uring: the NBD backend's cost; not in the
#                   default list)
#   miscfs-uring    miscfs with -o io_uring: FUSE requests over io_uring
#                   (the script sets /sys/module/fuse/parameters/
#                   enable_uring for the run and puts it back at the end;
#                   not in the default list)
#   miscfs-nocache  miscfs with the kernel's caches as they were before
#                   they were kept coherent: entry_timeout=1,
#                   attr_timeout=1, negative_timeout=1, nokeep_cache (not
#                   in the default list)
#   miscfs-wb       miscfs with -o writeback_cache: the kernel's writeback
#                   cache (not in the default list)
#   miscfs-nohost   miscfs with -o nohost_cache: every read of the image
#                   direct, none through the host's page cache (not in
#                   the default list)
#   miscfs-kra      miscfs with -o kernel_readahead=0: the kernel's own
#                   readahead window for the mount (not in the default
#                   list)
#   fuse2fs         fuse2fs IMG MNT (e2fsprogs' FUSE driver, no options:
#                   root needs none); image made by mkfs.ext4
#   ext4            kernel ext4 on a loop device, -o data=ordered
#   ext4-journal    kernel ext4 on a loop device, -o data=journal
#   passthrough     libfuse's example passthrough_ll, compiled into $WORK
#                   from libfuse3-dev's documentation, with -o source=DIR
#                   only (its defaults otherwise: cache=auto, timeout=1,
#                   no writeback cache, multithreaded), DIR on kernel ext4
#                   (data=ordered) on a loop device: FUSE over ext4.  It
#                   keeps a descriptor open for each inode the kernel
#                   knows: it runs with the soft open-file limit raised to
#                   the hard one, the kernel's dentries and inodes are
#                   dropped before each of its workloads (so that it
#                   closes those of the one before), and a workload that
#                   needs more inodes at once than the limit fails on it
# A filesystem that cannot run here is reported as skipped.  The ext4
# images (all three kinds) are made with lazy_itable_init=0 so that no
# background initialisation runs during the workloads; every image gets
# the same number of inodes.
#
# Workloads (WORKLOADS, default all but the scaling ones):
#   seqwrite   $SEQ in 1 MiB writes, fsync included (fsops)      MB/s
#   seqread    that file read back, cold caches (fsops)          MB/s
#   randread   4 KiB psync random reads over it for $FIO_TIME s,
#              cold caches (fio)                                IOPS
#   randwrite  4 KiB random writes, fsync after each, $FIO_TIME s
#              (fio --fsync=1)                                  IOPS
#   smallfiles $NFILES files of 4 KiB, 1000 a directory, syncfs and
#              an fsync of each directory (syncfs reaches no FUSE daemon)
#              included (fsops create)                         files/s
#   tar        extract a tarball of /usr/include, then sync -f   s
#   finddu     cold caches, find | wc -l and du -s of that tree  s
#   rm         rm -rf of that tree, then sync -f                 s
#   meta       $NMETA rounds of mkdir, create, rename, rename,
#              unlink, rmdir (fsops meta)                       ops/s
#   dbench     dbench -t $DBENCH_TIME 4 (client.txt loadfile)    MB/s
#   lookup     $NLOOKUP empty files in one directory, then cold
#              caches and stat() of each in a random order; also
#              lookup-warm, a second pass (fsops lookup)     lookups/s
#   rss        the daemon's peak RSS (VmHWM) in the round        MiB
# With SCALE=1 (long), each on an image of its own, sized for it:
#   create10k, create100k, create1m   empty files, 1000 a directory,
#                                     syncfs and fsyncs included files/s
#   seq256m, seq1g, seq4g             sequential write          MB/s
#   onedir10k, onedir100k, onedir1m   empty files in ONE directory:
#                                     -create (fsync of it included),
#                                     then cold caches and -stat of each
#                                     in a random order, then -unlink of
#                                     all (fsops onedir; the rate of each
#                                     tenth is in the workload's log)
#                                                               files/s
#
# Environment: FS, WORKLOADS, ROUNDS (5), WORK (/var/tmp/miscfs-bench),
# OUT ($WORK/results), SIZE (image size, 2G), CACHE (miscfs cache_size,
# 256M; "default": none given, the daemon's own), SEQ (1G), NFILES
# (20000), NLOOKUP (100000), NMETA (10000), DBENCH_TIME (30), FIO_TIME
# (15), SCALE (0), TIMEOUT (1800 s for one command of a workload), BUILD
# (build), BASE_BUILD (for miscfs-base),
# MKFS_OPTS (more options for mkfs.miscfs, say "-O ^dir_index").
# REMAKE=1 runs nothing but makes table.md and ratios.svg again from
# $OUT/raw.tsv (after merging the lines of several runs into it, say).  QUICK=1 makes every default
# tiny (SEQ=64M NFILES=2000 NLOOKUP=5000 NMETA=2000 DBENCH_TIME=5
# FIO_TIME=3 ROUNDS=1) to check the harness in a minute or two.
#
# Needs root (drop_caches, loop devices, mounts), /dev/fuse, and the
# packages fuse3, e2fsprogs, fuse2fs, fio, dbench, python3, libfuse3-dev
# with pkg-config and a C compiler (for passthrough), gnuplot-nox (for
# the plot only).  The script installs nothing: it says what is missing.
#
# PEER_MEMORY (say 320M, unset by default) runs the daemons of the FUSE
# peers (fuse2fs, passthrough_ll) in a memory cgroup of that size, which
# also holds the host page cache they fill through the image or the lower
# directory: the same memory as miscfs's cache_size plus its daemon, for
# workloads (random reads of a file larger than the cache) that the host
# cache would otherwise answer for them.
# On any exit it unmounts what it mounted, stops its daemons and
# detaches its loop devices.
set -euo pipefail
shopt -s inherit_errexit

top=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${BUILD:-$top/build}" && pwd)
base_build=${BASE_BUILD:+$(cd "$BASE_BUILD" && pwd)}
# The build whose daemon and mkfs serve miscfs filesystem FS.
build_of() { if [ "$1" = miscfs-base ]; then echo "$base_build"; else echo "$build"; fi; }
if [ "${QUICK:-0}" = 1 ]; then
	: "${SEQ:=64M}" "${NFILES:=2000}" "${NLOOKUP:=5000}" "${NMETA:=2000}"
	: "${DBENCH_TIME:=5}" "${FIO_TIME:=3}" "${ROUNDS:=1}"
fi
ALL_FS="miscfs miscfs-journal fuse2fs ext4 ext4-journal passthrough"
EXTRA_FS="miscfs-base miscfs-nbd miscfs-uring miscfs-nocache miscfs-nohost miscfs-wb miscfs-kra"
BASE_WL="seqwrite seqread randread randwrite smallfiles tar finddu rm meta dbench lookup rss"
SCALE_WL="create10k create100k create1m seq256m seq1g seq4g onedir10k onedir100k onedir1m"
FS=${FS:-$ALL_FS}
SCALE=${SCALE:-0}
if [ -z "${WORKLOADS:-}" ]; then
	WORKLOADS=$BASE_WL
	[ "$SCALE" = 1 ] && WORKLOADS="$WORKLOADS $SCALE_WL"
fi
ROUNDS=${ROUNDS:-5}
WORK=${WORK:-/var/tmp/miscfs-bench}
OUT=${OUT:-$WORK/results}
SIZE=${SIZE:-2G}
CACHE=${CACHE:-256M}
SEQ=${SEQ:-1G}
NFILES=${NFILES:-20000}
NLOOKUP=${NLOOKUP:-100000}
NMETA=${NMETA:-10000}
DBENCH_TIME=${DBENCH_TIME:-30}
FIO_TIME=${FIO_TIME:-15}
TIMEOUT=${TIMEOUT:-1800}

say() { printf '%s\n' "$*" >&2; }
die() { say "compare.sh: $*"; exit 1; }
bytes() { numfmt --from=iec "$1"; }
now() { echo "$EPOCHREALTIME"; }
since() { awk -v a="$1" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.2f\n", b - a }'; }
# A workload's command, killed if it hangs.
tmo() { timeout -k 10 "$TIMEOUT" "$@"; }
# try CMD...: runs CMD in a subshell that stops at its first error, and
# leaves its exit status in $try_rc (bash ignores errexit inside a
# function called from an if or a || list, so never test try itself).
# The subshell runs in the background so that a signal reaches our trap
# at once instead of when the workload ends; the trap then stops it.
try_pid=
try() {
	set +e
	(
		set -e
		"$@"
	) &
	try_pid=$!
	wait "$try_pid"
	try_rc=$?
	try_pid=
	set -e
}

# PID and everything it started (a detached daemon is no longer among them).
kill_tree() {
	local c
	for c in $(ps -o pid= --ppid "$1"); do
		kill_tree "$c"
	done
	kill -KILL "$1" 2>/dev/null || true
}

# ---------------------------------------------------------------- checks

REMAKE=${REMAKE:-0}
if [ "$(id -u)" != 0 ] && [ "$REMAKE" != 1 ]; then
	say "compare.sh needs root: it drops the kernel's caches and uses loop devices"
	exit 77
fi

missing=()
need() { command -v "$1" >/dev/null || missing+=("$1 (package $2)"); }
need fusermount3 fuse3
need mkfs.ext4 e2fsprogs
need fio fio
need dbench dbench
need python3 python3
need numfmt coreutils
need losetup mount
[ ${#missing[@]} -eq 0 ] || die "missing: ${missing[*]}"
[ -x "$build/bench/fsops" ] || die "no $build/bench/fsops: build first (ninja -C build)"
for w in $WORKLOADS; do
	case " $BASE_WL $SCALE_WL " in
	*" $w "*) ;;
	*) die "unknown workload $w (known: $BASE_WL $SCALE_WL)" ;;
	esac
done
for f in $FS; do
	case " $ALL_FS $EXTRA_FS " in
	*" $f "*) ;;
	*) die "unknown filesystem $f (known: $ALL_FS $EXTRA_FS)" ;;
	esac
done

mkdir -p "$WORK/img" "$WORK/mnt" "$OUT/log"
state=$(mktemp -d "$WORK/state.XXXXXX")
raw=$OUT/raw.tsv
if [ "$REMAKE" != 1 ]; then
	printf 'fs\tworkload\tround\tvalue\tunit\n' > "$raw"
	: > "$OUT/skipped.txt"
fi

# ---------------------------------------------------------------- cleanup

# The daemon serving MNT: a process of ours with MNT as an argument.
daemon_pid() {
	local mnt=$1 p args a comm
	for p in /proc/[0-9]*; do
		read -r comm 2>/dev/null < "$p/comm" || continue
		case $comm in miscfs | fuse2fs | passthrough_ll) ;; *) continue ;; esac
		mapfile -d "" args 2>/dev/null < "$p/cmdline" || continue
		for a in "${args[@]:1}"; do
			[ "$a" = "$mnt" ] && { echo "${p#/proc/}"; return 0; }
		done
	done
	return 0
}

# Gone, or a zombie nobody reaped (a detached daemon is not our child).
pid_gone() {
	local state
	# No state read: gone, or reaped between the look and the read.
	state=$(sed 's/^.*) //' "/proc/$1/stat" 2>/dev/null | cut -d' ' -f1)
	[ -z "$state" ] || [ "$state" = Z ] || [ "$state" = X ]
}

wait_gone() {
	local pid=$1 limit=$2
	for _ in $(seq $((limit * 10))); do
		pid_gone "$pid" && return 0
		sleep 0.1
	done
	return 1
}

our_mounts() {
	awk -v w="$WORK/mnt/" 'index($2, w) == 1 { print $3, $2 }' /proc/self/mounts
}

cleanup() {
	local rc=$? m pid img loop pids=()
	set +e
	trap - EXIT INT TERM
	exec 2>&3 # a signal can come while a workload's log is stderr
	if [ -n "$try_pid" ]; then
		say "cleanup: stopping the running workload"
		kill_tree "$try_pid"
		wait "$try_pid" 2>/dev/null
	fi
	# FUSE mounts first: passthrough's daemon holds its lower ext4 busy.
	while read -r _ m; do
		[ -n "$m" ] || continue
		pid=$(daemon_pid "$m")
		[ -n "$pid" ] && pids+=("$pid")
		say "cleanup: unmounting $m"
		fusermount3 -u "$m" 2>/dev/null || umount "$m" 2>/dev/null || umount -l "$m"
	done < <(our_mounts | grep '^fuse' | sort -r -k2)
	for m in "$WORK"/mnt/*; do
		pid=$(daemon_pid "$m")
		[ -n "$pid" ] && pids+=("$pid")
	done
	for pid in "${pids[@]}"; do
		wait_gone "$pid" 120 || { kill -TERM "$pid"; wait_gone "$pid" 30; } ||
			kill -KILL "$pid"
	done
	while read -r _ m; do
		[ -n "$m" ] || continue
		say "cleanup: unmounting $m"
		umount "$m" 2>/dev/null || umount -l "$m"
	done < <(our_mounts | sort -r -k2)
	for img in "$WORK"/img/*.img; do
		[ -e "$img" ] || continue
		for loop in $(losetup -j "$img" | cut -d: -f1); do
			losetup -d "$loop"
		done
		rm -f "$img"
	done
	rm -rf "$state"
	[ -n "$peer_cg" ] && rmdir "$peer_cg" 2>/dev/null
	[ -n "$uring_was" ] && echo "$uring_was" >"$uring_param"
	exit "$rc"
}
# miscfs-uring needs the kernel's FUSE over io_uring switched on.
uring_param=/sys/module/fuse/parameters/enable_uring
uring_was=
case " $FS " in
*" miscfs-uring "*)
	[ -w "$uring_param" ] || die "miscfs-uring: no writable $uring_param (Linux 6.14 or later)"
	uring_was=$(cat "$uring_param")
	echo Y >"$uring_param" ;;
esac
exec 3>&2
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# ------------------------------------------------------------ filesystems

img_of() { echo "$WORK/img/$1.img"; }
mnt_of() { echo "$WORK/mnt/$1"; }
loop_of() { losetup -j "$(img_of "$1")" | cut -d: -f1 | head -n1; }

drop_caches() {
	sync
	echo 3 > /proc/sys/vm/drop_caches
}

# The daemon's peak RSS so far (kB), kept for the round's "rss" figure.
note_rss() {
	local pid=$1
	awk '/^VmHWM:/ { print $2 }' "/proc/$pid/status" >> "$state/rss" 2>/dev/null || true
}

# fs_make FS SIZE INODES: a fresh image of SIZE bytes, and its loop device if it needs one.
fs_make() {
	local fs=$1 size=$2 inodes=$3 img
	img=$(img_of "$fs")
	rm -f "$img"
	case $fs in
	miscfs | miscfs-*)
		# shellcheck disable=SC2086
		"$(build_of "$fs")/tools/mkfs.miscfs" -F -q -N "$inodes" ${MKFS_OPTS:-} "$img" "$size" ;;
	*)
		# A bare number would be a count of blocks to mkfs.ext4.
		mkfs.ext4 -F -q -N "$inodes" -E lazy_itable_init=0,lazy_journal_init=0 \
			"$img" "$((size / 1024))k" ;;
	esac
	# Every filesystem gets the same room.
	[ "$(stat -c %s "$img")" -eq "$size" ] ||
		{ echo "$img: $(stat -c %s "$img") bytes, not $size"; return 1; }
	case $fs in
	ext4 | ext4-journal | passthrough) losetup -f --show "$img" >/dev/null ;;
	miscfs-nbd) nbd_serve "$img" ;;
	esac
}

# The image served by nbdkit on $WORK/nbd.sock for miscfs-nbd; without -f
# nbdkit returns once it listens.
nbd_uri() { echo "nbd+unix:///?socket=$WORK/nbd.sock"; }
nbd_serve() {
	rm -f "$WORK/nbd.sock"
	nbdkit -U "$WORK/nbd.sock" -P "$WORK/nbdkit.pid" file "$1"
}
nbd_stop() {
	local pid
	pid=$(cat "$WORK/nbdkit.pid" 2>/dev/null) || return 0
	kill "$pid" 2>/dev/null
	wait_gone "$pid" 30 || true
	rm -f "$WORK/nbdkit.pid" "$WORK/nbd.sock"
}

fs_destroy() {
	local fs=$1 loop
	[ "$fs" = miscfs-nbd ] && nbd_stop
	for loop in $(losetup -j "$(img_of "$fs")" | cut -d: -f1); do
		losetup -d "$loop"
	done
	rm -f "$(img_of "$fs")"
}

wait_mounted() {
	local mnt=$1
	for _ in $(seq 100); do
		mountpoint -q "$mnt" && return 0
		sleep 0.1
	done
	say "$mnt: not mounted after 10 s"
	return 1
}

# The peers' memory cgroup (PEER_MEMORY), v2 or v1.
peer_cg=
peer_cg_setup() {
	local limit
	[ -n "${PEER_MEMORY:-}" ] || return 0
	limit=$(bytes "$PEER_MEMORY")
	if [ -f /sys/fs/cgroup/cgroup.controllers ]; then
		peer_cg=/sys/fs/cgroup/miscfs-bench-peers
		echo +memory >/sys/fs/cgroup/cgroup.subtree_control 2>/dev/null || true
		mkdir -p "$peer_cg" && echo "$limit" >"$peer_cg/memory.max"
	elif [ -d /sys/fs/cgroup/memory ]; then
		peer_cg=/sys/fs/cgroup/memory/miscfs-bench-peers
		mkdir -p "$peer_cg" && echo "$limit" >"$peer_cg/memory.limit_in_bytes"
	else
		die "PEER_MEMORY: this machine has no memory cgroup"
	fi || die "PEER_MEMORY: cannot set up $peer_cg"
}

# CMD... as a peer's daemon: in the peers' memory cgroup, if there is one.
as_peer() {
	if [ -z "$peer_cg" ]; then
		"$@"
	else
		sh -c 'echo $$ >"$0/cgroup.procs" && exec "$@"' "$peer_cg" "$@"
	fi
}

# miscfs's cache option: CACHE=default leaves the daemon its own default.
cache_opt() {
	if [ "$CACHE" = default ]; then echo defaults; else echo "cache_size=$CACHE"; fi
}

fs_mount() {
	local fs=$1 mnt img lower
	mnt=$(mnt_of "$fs")
	img=$(img_of "$fs")
	mkdir -p "$mnt"
	case $fs in
	miscfs | miscfs-base)
		"$(build_of "$fs")/daemon/miscfs" "$img" "$mnt" -o "$(cache_opt)" ;;
	miscfs-nbd) "$build/daemon/miscfs" "$(nbd_uri)" "$mnt" -o "$(cache_opt)" ;;
	miscfs-journal) "$build/daemon/miscfs" "$img" "$mnt" -o "$(cache_opt),data=journal" ;;
	miscfs-uring) "$build/daemon/miscfs" "$img" "$mnt" -o "$(cache_opt),io_uring" ;;
	miscfs-nohost) "$build/daemon/miscfs" "$img" "$mnt" -o "$(cache_opt),nohost_cache" ;;
	miscfs-wb) "$build/daemon/miscfs" "$img" "$mnt" -o "$(cache_opt),writeback_cache" ;;
	miscfs-kra) "$build/daemon/miscfs" "$img" "$mnt" -o "$(cache_opt),kernel_readahead=0" ;;
	miscfs-nocache)
		"$build/daemon/miscfs" "$img" "$mnt" -o \
			"$(cache_opt),entry_timeout=1,attr_timeout=1,negative_timeout=1,nokeep_cache" ;;
	fuse2fs) as_peer fuse2fs "$img" "$mnt" ;;
	ext4) mount -t ext4 -o data=ordered "$(loop_of "$fs")" "$mnt" ;;
	ext4-journal) mount -t ext4 -o data=journal "$(loop_of "$fs")" "$mnt" ;;
	passthrough)
		lower=$(mnt_of passthrough-lower)
		mkdir -p "$lower"
		mount -t ext4 -o data=ordered "$(loop_of "$fs")" "$lower"
		mkdir -p "$lower/data"
		# It holds a descriptor for each inode the kernel knows.
		(
			ulimit -n "$(ulimit -Hn)"
			as_peer "$WORK/passthrough/passthrough_ll" -o "source=$lower/data" "$mnt"
		) ;;
	esac
	wait_mounted "$mnt"
}

# Unmounts, and for a FUSE filesystem waits until its daemon has written
# everything back and exited (a FUSE unmount returns before that).
fs_umount() {
	local fs=$1 mnt pid
	mnt=$(mnt_of "$fs")
	case $fs in
	ext4 | ext4-journal) umount "$mnt"; return ;;
	esac
	pid=$(daemon_pid "$mnt")
	[ -n "$pid" ] && note_rss "$pid"
	if mountpoint -q "$mnt"; then
		fusermount3 -u "$mnt"
	else
		# A daemon that died leaves a mount that answers ENOTCONN.
		fusermount3 -u -z "$mnt" 2>/dev/null || true
	fi
	if [ -n "$pid" ] && ! wait_gone "$pid" 600; then
		say "$fs: the daemon $pid is still running 600 s after the unmount"
		return 1
	fi
	[ "$fs" = passthrough ] && umount "$(mnt_of passthrough-lower)"
	return 0
}

# Unmount, drop every cache, mount again.
cold() {
	fs_umount "$FS_NOW"
	drop_caches
	fs_mount "$FS_NOW"
}

# Brings a filesystem whose workload failed back to mounted, if it can.
fs_recover() {
	local fs=$1 mnt
	mnt=$(mnt_of "$fs")
	mountpoint -q "$mnt" && return 0
	say "$fs: not mounted after a failure, mounting again"
	fs_umount "$fs" >/dev/null 2>&1 || true
	grep -q " $mnt " /proc/self/mounts && umount -l "$mnt"
	if [ "$fs" = passthrough ] && mountpoint -q "$(mnt_of passthrough-lower)"; then
		umount "$(mnt_of passthrough-lower)"
	fi
	fs_mount "$fs"
}

build_passthrough() {
	local src=/usr/share/doc/libfuse3-dev/examples dir=$WORK/passthrough f
	mkdir -p "$dir"
	for f in passthrough_ll.c passthrough_helpers.h; do
		if [ -f "$src/$f" ]; then
			cp "$src/$f" "$dir/"
		elif [ -f "$src/$f.gz" ]; then
			gzip -dc "$src/$f.gz" > "$dir/$f"
		else
			echo "no $src/$f (package libfuse3-dev)"
			return 1
		fi
	done
	command -v cc >/dev/null || { echo "no C compiler"; return 1; }
	command -v pkg-config >/dev/null || { echo "no pkg-config"; return 1; }
	# shellcheck disable=SC2046
	cc -O2 -o "$dir/passthrough_ll" "$dir/passthrough_ll.c" \
		$(pkg-config --cflags --libs fuse3)
}

loop_works() {
	local img=$state/loop-check.img loop
	truncate -s 64M "$img"
	loop=$(losetup -f --show "$img" 2>/dev/null) || { rm -f "$img"; return 1; }
	losetup -d "$loop"
	rm -f "$img"
}

# Prints why FS cannot run here, or nothing.
why_not() {
	case $1 in
	miscfs*)
		local b
		b=$(build_of "$1")
		[ -n "$b" ] || echo "no BASE_BUILD"
		[ -x "$b/daemon/miscfs" ] || echo "no $b/daemon/miscfs"
		[ -x "$b/tools/mkfs.miscfs" ] || echo "no $b/tools/mkfs.miscfs"
		[ -c /dev/fuse ] || echo "no /dev/fuse"
		if [ "$1" = miscfs-nbd ]; then
			command -v nbdkit >/dev/null || echo "no nbdkit (package nbdkit)"
			if "$b/tools/mkfs.miscfs" -q "nbd+unix:///?socket=$WORK/none.sock" 2>&1 |
				grep -q "no NBD support"; then
				echo "$b was built without libnbd"
			fi
		fi ;;
	fuse2fs)
		command -v fuse2fs >/dev/null || echo "no fuse2fs (package fuse2fs)"
		[ -c /dev/fuse ] || echo "no /dev/fuse" ;;
	ext4*) loop_works || echo "no loop device works" ;;
	passthrough)
		loop_works || echo "no loop device works"
		[ -c /dev/fuse ] || echo "no /dev/fuse"
		build_passthrough > "$OUT/log/passthrough-build.log" 2>&1 ||
			echo "passthrough_ll does not build (see $OUT/log/passthrough-build.log)" ;;
	esac
}

# -------------------------------------------------------------- workloads

# Each runs in a subshell with errexit, on $MNT of $FS_NOW, and reports
# its figure(s) with emit.
emit() { printf '%s\t%s\n' "$1" "$2" >> "$state/fig"; }
# emit_cmd NAME CMD...: the figure CMD prints (a failing CMD fails the
# workload, which emit NAME "$(CMD)" would not).
emit_cmd() {
	local v
	v=$("${@:2}")
	emit "$1" "$v"
}

# What a workload left for the next ones: only what it finished counts.
made() { touch "$state/made-$FS_NOW-$1"; }
was_made() { [ -e "$state/made-$FS_NOW-$1" ]; }

have_seq() {
	was_made seq && return 0
	rm -f "$MNT/seq"
	"$build/bench/fsops" seqwrite "$MNT/seq" "$SEQ"
	made seq
}

have_tree() {
	was_made tree && return 0
	rm -rf "$MNT/tree"
	mkdir "$MNT/tree"
	tar -C "$MNT/tree" -xf "$WORK/include.tar"
	made tree
}

fio_iops() {
	local dir=$1
	shift
	tmo fio --output-format=json --output="$state/fio.json" --name=b \
		--filename="$MNT/seq" --size="$(bytes "$SEQ")" --bs=4k \
		--ioengine=psync --runtime="$FIO_TIME" --time_based "$@"
	python3 -c 'import json, sys
print("%.1f" % json.load(open(sys.argv[1]))["jobs"][0][sys.argv[2]]["iops"])' \
		"$state/fio.json" "$dir"
}

wl_seqwrite() {
	emit_cmd seqwrite tmo "$build/bench/fsops" seqwrite "$MNT/seq" "$SEQ"
	made seq
}

wl_seqread() {
	have_seq
	cold
	emit_cmd seqread tmo "$build/bench/fsops" seqread "$MNT/seq"
}

wl_randread() {
	have_seq
	cold
	emit_cmd randread fio_iops read --rw=randread
}

wl_randwrite() {
	have_seq
	emit_cmd randwrite fio_iops write --rw=randwrite --fsync=1
}

wl_smallfiles() {
	mkdir "$MNT/small"
	emit_cmd smallfiles tmo "$build/bench/fsops" create "$MNT/small" "$NFILES" 4096 1000
}

wl_tar() {
	local t0
	mkdir "$MNT/tree"
	t0=$(now)
	tmo tar -C "$MNT/tree" -xf "$WORK/include.tar"
	sync -f "$MNT"
	emit tar "$(since "$t0")"
	made tree
}

wl_finddu() {
	local t0
	have_tree
	cold
	t0=$(now)
	(cd "$MNT/tree" && tmo find . | wc -l && tmo du -s .)
	emit finddu "$(since "$t0")"
}

wl_rm() {
	local t0
	have_tree
	rm -f "$state/made-$FS_NOW-tree"
	t0=$(now)
	tmo rm -rf "$MNT/tree"
	sync -f "$MNT"
	emit rm "$(since "$t0")"
}

wl_meta() {
	mkdir "$MNT/meta"
	emit_cmd meta tmo "$build/bench/fsops" meta "$MNT/meta" "$NMETA"
}

wl_dbench() {
	local tp
	mkdir "$MNT/dbench"
	tmo dbench -D "$MNT/dbench" -c "$DBENCH_LOADFILE" -t "$DBENCH_TIME" 4 | tee "$state/dbench.out"
	tp=$(awk '$1 == "Throughput" { print $2 }' "$state/dbench.out")
	[ -n "$tp" ] || { echo "no Throughput line"; return 1; }
	rm -rf "$MNT/dbench"
	emit dbench "$tp"
}

wl_lookup() {
	local out
	mkdir "$MNT/lookup"
	tmo "$build/bench/fsops" create "$MNT/lookup" "$NLOOKUP" 0 0
	cold
	out=$(tmo "$build/bench/fsops" lookup "$MNT/lookup" "$NLOOKUP" 2)
	emit lookup "$(sed -n 1p <<< "$out")"
	emit lookup-warm "$(sed -n 2p <<< "$out")"
}

wl_create() { # N
	emit_cmd "$WL" tmo "$build/bench/fsops" create "$MNT" "$1" 0 1000
}
wl_create10k() { wl_create 10000; }
wl_create100k() { wl_create 100000; }
wl_create1m() { wl_create 1000000; }
# N files in one directory: created, stated cold, unlinked; each pass's
# rate per tenth goes to the log, its whole rate is the figure.
wl_onedir() { # N
	local op out
	mkdir "$MNT/one"
	for op in create stat unlink; do
		[ "$op" = stat ] && cold
		out=$(tmo "$build/bench/fsops" onedir "$op" "$MNT/one" "$1" $(($1 / 10)))
		echo "$op:" $out
		emit "$WL-$op" "$(tail -n1 <<< "$out")"
	done
}
wl_onedir10k() { wl_onedir 10000; }
wl_onedir100k() { wl_onedir 100000; }
wl_onedir1m() { wl_onedir 1000000; }
wl_seq() { emit_cmd "$WL" tmo "$build/bench/fsops" seqwrite "$MNT/seq" "$1"; }
wl_seq256m() { wl_seq 256M; }
wl_seq1g() { wl_seq 1G; }
wl_seq4g() { wl_seq 4G; }

# The figures a workload reports, with unit and direction (H: higher is
# better, L: lower is better).
figures_of() {
	case $1 in
	lookup) echo lookup lookup-warm ;;
	onedir*) echo "$1-create $1-stat $1-unlink" ;;
	*) echo "$1" ;;
	esac
}
unit_of() {
	case $1 in
	seqwrite | seqread | dbench | seq256m | seq1g | seq4g) echo "MB/s H" ;;
	randread | randwrite) echo "IOPS H" ;;
	smallfiles | create* | onedir*) echo "files/s H" ;;
	tar | finddu | rm) echo "s L" ;;
	meta) echo "ops/s H" ;;
	lookup | lookup-warm) echo "lookups/s H" ;;
	rss) echo "MiB L" ;;
	esac
}

record() { # FS WORKLOAD ROUND VALUE
	local u
	u=$(unit_of "$2")
	printf '%s\t%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$4" "${u% *}" >> "$raw"
}

in_workload() { # FS WL
	FS_NOW=$1 MNT=$(mnt_of "$1") WL=$2
	"wl_$2"
}

# run_workload FS WL ROUND: runs it, records its figures or "failed",
# and leaves 0 or its exit status in $wl_rc.
run_workload() {
	local fs=$1 wl=$2 r=$3 log f v shown=
	log=$OUT/log/$fs-$wl-r$r.log
	printf '[round %d/%d] %s: %s ... ' "$r" "$ROUNDS" "$fs" "$wl" >&2
	: > "$state/fig"
	# passthrough_ll closes its descriptors when the kernel forgets.
	[ "$fs" != passthrough ] || echo 2 > /proc/sys/vm/drop_caches
	try in_workload "$fs" "$wl" > "$log" 2>&1
	wl_rc=$try_rc
	for f in $(figures_of "$wl"); do
		v=$(awk -F'\t' -v f="$f" '$1 == f { print $2 }' "$state/fig")
		[ "$wl_rc" -eq 0 ] && [ -n "$v" ] || v=failed
		record "$fs" "$f" "$r" "$v"
		shown="$shown $v $(unit_of "$f" | cut -d' ' -f1)"
	done
	if [ "$wl_rc" -ne 0 ]; then
		say "failed (exit $wl_rc, see $log)"
	else
		say "${shown# }"
	fi
}

# ----------------------------------------------------------------- rounds

inodes_base=$((NLOOKUP + NFILES + 100000))
size_base=$(bytes "$SIZE")
seq_need=$(($(bytes "$SEQ") + (1 << 30)))
[ "$size_base" -ge "$seq_need" ] || size_base=$seq_need

# Size and inodes of the image of a scaling workload.
scale_image() {
	case $1 in
	create10k) echo "$size_base 20000" ;;
	create100k) echo "$size_base 110000" ;;
	create1m) echo "$((size_base + (4 << 30))) 1010000" ;;
	onedir10k) echo "$size_base 20000" ;;
	onedir100k) echo "$size_base 110000" ;;
	onedir1m) echo "$((size_base + (2 << 30))) 1010000" ;;
	seq256m | seq1g) echo "$((size_base + (1 << 30))) $inodes_base" ;;
	seq4g) echo "$((size_base + (5 << 30))) $inodes_base" ;;
	esac
}

fs_make_mount() {
	fs_make "$@"
	fs_mount "$1"
}

# One session: fresh image, mount, the workloads, unmount, image gone.
session() { # FS ROUND SIZE INODES WORKLOADS...
	local fs=$1 r=$2 size=$3 inodes=$4 wl failed=
	shift 4
	: > "$state/rss"
	rm -f "$state/made-$fs-"*
	try fs_make_mount "$fs" "$size" "$inodes" > "$OUT/log/$fs-mkfs-r$r.log" 2>&1
	if [ "$try_rc" -ne 0 ]; then
		say "[round $r/$ROUNDS] $fs: mkfs or mount failed (see $OUT/log/$fs-mkfs-r$r.log)"
		failed=all
	fi
	for wl in "$@"; do
		if [ -n "$failed" ]; then
			for f in $(figures_of "$wl"); do record "$fs" "$f" "$r" failed; done
			continue
		fi
		run_workload "$fs" "$wl" "$r"
		[ "$wl_rc" -eq 0 ] && continue
		try fs_recover "$fs" >> "$OUT/log/$fs-$wl-r$r.log" 2>&1
		[ "$try_rc" -eq 0 ] || failed=all
	done
	try fs_umount "$fs" >> "$OUT/log/$fs-umount-r$r.log" 2>&1
	[ "$try_rc" -eq 0 ] || [ -n "$failed" ] ||
		say "[round $r/$ROUNDS] $fs: unmount failed (see $OUT/log/$fs-umount-r$r.log)"
	try fs_destroy "$fs" >> "$OUT/log/$fs-umount-r$r.log" 2>&1
}

rss_figure() { # FS ROUND
	case $1 in ext4 | ext4-journal) return ;; esac
	case " $WORKLOADS " in *" rss "*) ;; *) return ;; esac
	local kb
	kb=$(sort -n "$state/rss" | tail -n1)
	if [ -n "$kb" ]; then
		record "$1" rss "$2" "$(awk -v k="$kb" 'BEGIN { printf "%.1f", k / 1024 }')"
		say "[round $2/$ROUNDS] $1: rss $(tail -n1 "$raw" | cut -f4) MiB"
	else
		record "$1" rss "$2" failed
	fi
}

round() {
	local r=$1 fs base=() wl
	for wl in $WORKLOADS; do
		case " $BASE_WL " in *" $wl "*) [ "$wl" = rss ] || base+=("$wl") ;; esac
	done
	for fs in $RUN_FS; do
		: > "$state/rss-all"
		if [ ${#base[@]} -gt 0 ]; then
			session "$fs" "$r" "$size_base" "$inodes_base" "${base[@]}"
			cat "$state/rss" >> "$state/rss-all"
		fi
		for wl in $WORKLOADS; do
			case " $SCALE_WL " in *" $wl "*) ;; *) continue ;; esac
			# shellcheck disable=SC2046
			session "$fs" "$r" $(scale_image "$wl") "$wl"
			cat "$state/rss" >> "$state/rss-all"
		done
		cp "$state/rss-all" "$state/rss"
		rss_figure "$fs" "$r"
	done
}

machine() {
	local dev
	echo "date: $(date -u '+%Y-%m-%d %H:%M UTC')"
	echo "commit: $(git -C "$top" describe --always --dirty 2>/dev/null) $(git -C "$top" log -1 --format=%s 2>/dev/null)"
	echo "build: $build ($(python3 -c 'import json, sys
for o in json.load(open(sys.argv[1])):
    if o["name"] in ("buildtype", "b_ndebug", "b_sanitize"):
        print(" %s=%s" % (o["name"], o["value"]), end="")' "$build/meson-info/intro-buildoptions.json" 2>/dev/null || true))"
	echo "kernel: $(uname -r)"
	echo "cpu: $(nproc) x $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n1)"
	echo "memory: $(awk '/^MemTotal:/ { printf "%.1f GiB", $2 / 1048576 }' /proc/meminfo)"
	echo "load average at the start: $(cut -d' ' -f1-3 /proc/loadavg) (other work on the machine skews the figures)"
	dev=$(findmnt -no SOURCE -T "$WORK" 2>/dev/null || true)
	echo "disk: $WORK on $dev, $(findmnt -no FSTYPE -T "$WORK" 2>/dev/null || true); $(lsblk -dno SIZE,ROTA "$dev" 2>/dev/null | awk '{ print $1 ", rotational: " ($2 ? "yes" : "no") }' || true)"
	echo "packages: $(dpkg-query -W -f '${Package} ${Version}, ' fuse3 libfuse3-3 e2fsprogs fuse2fs fio dbench 2>/dev/null | sed 's/, $//' || true)"
	echo "settings: ROUNDS=$ROUNDS SIZE=$SIZE CACHE=$CACHE SEQ=$SEQ NFILES=$NFILES NLOOKUP=$NLOOKUP NMETA=$NMETA DBENCH_TIME=$DBENCH_TIME FIO_TIME=$FIO_TIME SCALE=$SCALE${PEER_MEMORY:+ PEER_MEMORY=$PEER_MEMORY}"
	echo "filesystems: $FS"
	echo "workloads: $WORKLOADS"
	[ -s "$OUT/skipped.txt" ] && sed 's/^/skipped: /' "$OUT/skipped.txt"
	return 0
}

# ----------------------------------------------------------------- report

report() {
	rm -f "$OUT/ratios.tsv" "$OUT/ratios.svg"
	python3 - "$raw" "$OUT/table.md" "$OUT/ratios.tsv" "$FS" "$WORKLOADS" \
		"$OUT/skipped.txt" <<'EOF'
import statistics, sys
raw, table, ratios_out, fs_list, wl_list, skipped_file = sys.argv[1:7]
fs_list = fs_list.split()
skipped = {l.split(":")[0] for l in open(skipped_file) if l.strip()}
better = {}
vals = {}
order = []
for i, line in enumerate(open(raw)):
    if i == 0:
        continue
    fs, wl, rnd, v, unit = line.rstrip("\n").split("\t")
    if wl not in order:
        order.append(wl)
    better.setdefault(wl, unit)
    vals.setdefault((fs, wl), []).append(v)
lower = {"s", "MiB"}

def med(fs, wl):
    v = [float(x) for x in vals.get((fs, wl), []) if x != "failed"]
    return statistics.median(v) if v else None

def fmt(x):
    if x >= 100:
        return "%.0f" % x
    if x >= 10:
        return "%.1f" % x
    return "%.2f" % x

def cell(fs, wl):
    if fs in skipped:
        return "skipped"
    got = vals.get((fs, wl))
    if not got:
        return "-"
    m = med(fs, wl)
    if m is None:
        return "failed"
    bad = sum(1 for x in got if x == "failed")
    return fmt(m) + (" (%d failed)" % bad if bad else "")

def ratio(a, b, wl):
    x, y = med(a, wl), med(b, wl)
    if x is None or y is None or x == 0 or y == 0:
        return None
    return y / x if better[wl] in lower else x / y

pairs = [(a, b) for a, b in [("miscfs", "fuse2fs"), ("miscfs", "ext4"),
         ("miscfs", "passthrough"), ("miscfs-journal", "miscfs"),
         ("miscfs", "miscfs-base"), ("miscfs-nbd", "miscfs"),
         ("miscfs-uring", "miscfs"), ("miscfs", "miscfs-nocache"),
         ("miscfs", "miscfs-nohost"), ("miscfs-wb", "miscfs"),
         ("miscfs", "miscfs-kra")]
         if a in fs_list and b in fs_list and a not in skipped and b not in skipped]
head = ["workload", "unit"] + fs_list + ["%s/%s" % p for p in pairs]
lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
rdat = ["workload\t" + "\t".join("%s/%s" % p for p in pairs)]
for wl in order:
    unit = better[wl] + (" (lower is better)" if better[wl] in lower else "")
    row = [wl, unit] + [cell(fs, wl) for fs in fs_list]
    rs = [ratio(a, b, wl) for a, b in pairs]
    row += ["%.2f" % r if r else "-" for r in rs]
    lines.append("| " + " | ".join(row) + " |")
    rdat.append(wl + "\t" + "\t".join("%.4f" % r if r else "-" for r in rs))
with open(table, "w") as f:
    f.write("\n".join(lines) + "\n\n")
    f.write("Medians of the rounds.  Ratios are oriented so that a ratio"
            " above 1 means the first named is better (miscfs faster or"
            " smaller): for rates first/second, for seconds and MiB"
            " second/first.\n")
if pairs:
    with open(ratios_out, "w") as f:
        f.write("\n".join(rdat) + "\n")
EOF
}

plot() {
	if ! command -v gnuplot >/dev/null; then
		say "no gnuplot (package gnuplot-nox): $OUT/ratios.svg skipped"
		return 0
	fi
	[ -f "$OUT/ratios.tsv" ] || {
		say "no ratio to plot (one filesystem only): no $OUT/ratios.svg"
		return 0
	}
	gnuplot > "$OUT/log/gnuplot.log" 2>&1 <<EOF || say "gnuplot failed (see $OUT/log/gnuplot.log): no plot"
set terminal svg size 1100,520 dynamic font 'sans,11' background '#ffffff'
set output '$OUT/ratios.svg'
set datafile separator '\t'
set datafile missing '-'
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.85 border -1
set logscale y 2
set grid ytics
set ylabel 'ratio (above 1: the first named is better)'
set xtics rotate by -30 nomirror
set key outside top center horizontal
set title 'miscfs next to its peers (medians of the rounds)'
set arrow 1 from graph 0, first 1 to graph 1, first 1 nohead lw 2 lc rgb '#000000' front
n = $(head -n1 "$OUT/ratios.tsv" | awk -F'\t' '{ print NF }')
plot for [i=2:n] '$OUT/ratios.tsv' using i:xtic(1) title columnheader(i)
EOF
}

# ------------------------------------------------------------------- main

if [ "$REMAKE" = 1 ]; then
	[ -f "$raw" ] || die "no $raw to make the table from"
	touch "$OUT/skipped.txt"
	report
	plot
	cat "$OUT/table.md"
	exit 0
fi
RUN_FS=
for fs in $FS; do
	why=$(why_not "$fs")
	if [ -n "$why" ]; then
		say "$fs: skipped: $(echo "$why" | paste -sd ';')"
		echo "$fs: $(echo "$why" | paste -sd ';')" >> "$OUT/skipped.txt"
	else
		RUN_FS="$RUN_FS $fs"
	fi
done
[ -n "$RUN_FS" ] || die "no filesystem can run here"
case " $WORKLOADS " in
*" dbench "*)
	DBENCH_LOADFILE=/usr/share/dbench/client.txt
	if [ ! -f "$DBENCH_LOADFILE" ]; then
		[ -f "$DBENCH_LOADFILE.gz" ] || die "no dbench loadfile $DBENCH_LOADFILE"
		gzip -dc "$DBENCH_LOADFILE.gz" > "$WORK/client.txt"
		DBENCH_LOADFILE=$WORK/client.txt
	fi ;;
esac
if [ ! -s "$WORK/include.tar" ]; then
	say "making $WORK/include.tar from /usr/include"
	tar -C /usr -cf "$WORK/include.tar.new" include
	mv "$WORK/include.tar.new" "$WORK/include.tar"
fi
peer_cg_setup
machine > "$OUT/machine.txt"
start=$(now)
for r in $(seq "$ROUNDS"); do
	round "$r"
done
say "all rounds done in $(awk -v s="$(since "$start")" 'BEGIN { printf "%d min %d s", s / 60, s % 60 }')"
echo "run time: $(since "$start") s" >> "$OUT/machine.txt"
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)" >> "$OUT/machine.txt"
report
plot
cat "$OUT/table.md"
say "results in $OUT: $(cd "$OUT" && for f in table.md raw.tsv machine.txt ratios.svg log; do [ -e "$f" ] && echo "$f"; done | paste -sd ' ')"
