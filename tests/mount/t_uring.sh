#!/usr/bin/env bash
# FUSE over io_uring (-o io_uring), run under ../with_uring.sh:
# - the requests go over the ring (the statistics count them), with
#   large writes and reads, an xattr of 3000 bytes, directories and four
#   writers at once, and every byte comes back;
# - a writer on each CPU is served by that CPU's ring;
# - SIGTERM stops the daemon within seconds and leaves a clean image;
# - with the kernel's switch off, one log line says why and the mount
#   works through /dev/fuse.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/mount.sh"
: "${FSCK:?FSCK must name fsck.miscfs}"

expect_status 0 "$MKFS" -q -F "$img" 64M
start -o cache_size=8M,io_uring

head -c 3145728 /dev/urandom >"$T_DIR/big"
dd if="$T_DIR/big" of="$mnt/big" bs=1M status=none || fail "dd of 1 MiB writes"
cmp "$T_DIR/big" "$mnt/big" || fail "a file written in 1 MiB writes reads back wrong"
head -c 3000 /dev/urandom | base64 -w0 | head -c 3000 >"$T_DIR/val"
setfattr -n user.big -v "$(cat "$T_DIR/val")" "$mnt/big" || fail "setfattr of 3000 bytes"
getfattr --only-values -n user.big "$mnt/big" >"$T_DIR/got" || fail getfattr
cmp "$T_DIR/val" "$T_DIR/got" || fail "a big xattr reads back wrong"
pids=()
for w in 1 2 3 4; do
	(
		mkdir "$mnt/w$w" || exit 1
		for i in $(seq 300); do
			echo "$w $i" >"$mnt/w$w/f$i" || exit 1
		done
		mv "$mnt/w$w/f1" "$mnt/w$w/g1" && rm "$mnt/w$w/f2"
	) &
	pids+=($!)
done
for p in "${pids[@]}"; do
	wait "$p" || fail "a writer failed"
done
for w in 1 2 3 4; do
	[ "$(ls "$mnt/w$w" | wc -l)" = 299 ] || fail "w$w: $(ls "$mnt/w$w" | wc -l) names"
	[ "$(cat "$mnt/w$w/f300")" = "$w 300" ] || fail "w$w/f300 reads back wrong"
done
ring=$(stat_of fuse_uring_requests)
[ "$ring" -gt 2000 ] || fail "only $ring requests came over the ring"
# A writer on each CPU this test may use: each CPU's queue has a ring
# and a reader of its own, and every one of them serves.
cpus=()
for part in $(taskset -c -p $$ | sed 's/.*: //; s/,/ /g'); do
	cpus+=($(seq "${part%-*}" "${part#*-}"))
done
pids=()
for c in "${cpus[@]}"; do
	taskset -c "$c" bash -c 'mkdir "$1" && for i in $(seq 100); do
		echo "$2 $i" >"$1/f$i" || exit 1; done' - "$mnt/cpu$c" "$c" &
	pids+=($!)
done
for p in "${pids[@]}"; do
	wait "$p" || fail "a writer pinned to a CPU failed"
done
for c in "${cpus[@]}"; do
	[ "$(cat "$mnt/cpu$c/f100")" = "$c 100" ] || fail "cpu$c/f100 reads back wrong"
done
rings=$(stat_of fuse_uring_rings)
used=$(stat_of fuse_uring_rings_used)
want=$((${#cpus[@]} < rings ? ${#cpus[@]} : rings))
[ "$used" -ge "$want" ] ||
	fail "$used of $rings rings carried requests from writers on ${#cpus[@]} CPUs"
# An idle mount: the reader's waits end by their timeout, some with a
# commit submitted and no completion.
sleep 2.5
stat "$mnt/big" >/dev/null || fail "stat after 2.5 s idle"
sleep 2.5
cmp "$T_DIR/big" "$mnt/big" || fail "the file reads back wrong after 5 s idle"
kill -TERM "$daemon"
for _ in $(seq 600); do
	daemon_gone && break
	sleep 0.05
done
daemon_gone || fail "the daemon still runs 30 s after SIGTERM"
wait "$daemon" || fail "the daemon exited $? after SIGTERM"
daemon=
mounted && fail "still mounted after SIGTERM"
image_free "$img"
expect_status 0 "$FSCK" -fn "$img"

# The kernel's switch off (alone: no other test of with_uring.sh may
# mount meanwhile): a log line, and /dev/fuse.
flock -x 9 || fail "the lock of with_uring.sh"
[ -e "$URING_SAVED" ] || cat /sys/module/fuse/parameters/enable_uring >"$URING_SAVED"
echo N >/sys/module/fuse/parameters/enable_uring
start -o cache_size=8M,io_uring
cmp "$T_DIR/big" "$mnt/big" || fail "the file reads back wrong through /dev/fuse"
[ "$(stat_of fuse_uring_requests)" = 0 ] || fail "requests over the ring with the switch off"
unmount
echo Y >/sys/module/fuse/parameters/enable_uring
flock -s 9
expect_in "$T_DIR/daemon.err" "does not offer FUSE over io_uring"
expect_in "$T_DIR/daemon.err" "requests go through /dev/fuse"
exit 0
