#!/usr/bin/env bash
# Crash consistency of what the real mount writes.  A seeded random
# workload runs on a mount that records every write and flush
# (-o writelog=): files written and fsynced once (each then left alone),
# among files, renames, truncations, links and directories that are never
# synced, and a directory grown past its index's root splits, with
# renames and unlinks in it.  Then, for every flush of the log and for random points between
# flushes (the writes since the last flush kept, dropped, kept at random,
# torn at 512 bytes, or kept block by block), the image is rebuilt and
# mounted (which replays the journal): every file whose fsync had returned
# before that point must have exactly the bytes it was fsynced with, the
# unmount must be clean, and fsck -fn must find nothing.
#
# Every state is checked by crash_check in one process: the image rebuilt
# in memory and mounted by the core on the memory device, as the daemon
# mounts it.  It also reads the files whose fsync had not returned yet:
# each byte of them must be their own or zero, never another file's old
# data (data=ordered writes a file's blocks before the commit that gives
# them to it).  A sample of the states (evenly spread, and the last
# flushes, which hold every fsynced file) also goes the whole way, through
# the I/O path crash_check leaves out: miscfs-replay, the daemon and a
# FUSE mount, sha1sum, fusermount3 -u, fsck.miscfs -fn.
#
# MISCFS_CRASH_OPTS adds mount options (writeback_cache, io_uring).
# MISCFS_CRASH_STATES sets the number of states (default 1000),
# MISCFS_CRASH_MOUNTED how many of them are mounted for real as well
# (default 30; 0: none), MISCFS_SEED the workload's seed.  A seed gives the
# same workload, not the same log (the daemon's threads order its
# writes): a failure keeps the base image, the log, the model and the
# states, and says how to check a state of them again.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/mount.sh"
: "${REPLAY:?REPLAY must name miscfs-replay}"
: "${FSCK:?FSCK must name fsck.miscfs}"
: "${CRASH_CHECK:?CRASH_CHECK must name crash_check}"

states=${MISCFS_CRASH_STATES:-1000}
sample=${MISCFS_CRASH_MOUNTED:-30}
seed=${MISCFS_SEED:-7}
RANDOM=$seed
log=$T_DIR/wlog
base=$T_DIR/base
model=$T_DIR/model
pool=$T_DIR/pool
mkdir "$model"
head -c $((1 << 20)) /dev/urandom >"$pool"

# The flushes in the log so far: an fsync has returned once its flush is
# there (the log is written as requests complete).
flushes_now() {
	"$REPLAY" --count "$log" 2>/dev/null | sed -n 's/^flushes: //p'
}

# Bytes of the pool: $1 bytes from offset $2.
piece() { tail -c +$(($2 + 1)) "$pool" | head -c "$1"; }

synced=0
sync_file() {
	local name=s$synced len=$((RANDOM % 70000 + 1)) off=$((RANDOM * 17 % 900000))
	piece "$len" "$off" >"$model/$name"
	dd if="$model/$name" of="$mnt/d/$name" bs=8k conv=fsync status=none ||
		fail "writing $name"
	echo "$(flushes_now) $(cd "$model" && sha1sum "$name")" >>"$model/list"
	synced=$((synced + 1))
}

# The big directory b gains 80 names every 7th round of the workload,
# 480 in all, past its index's root split (at about 315 records), and
# churn renames and unlinks in it.
bign=0
bprefix=an-entry-of-the-big-directory-
grow_big() {
	local names=()
	for _ in $(seq 80); do
		names+=("$mnt/b/$bprefix$bign")
		bign=$((bign + 1))
	done
	touch "${names[@]}" || fail "touch in b"
}

churn() {
	local k=$((RANDOM % 12)) f="$mnt/u/f$((RANDOM % 10))" g="$mnt/u/f$((RANDOM % 10))"
	local x="$mnt/b/$bprefix$((RANDOM % (bign + 1)))"
	case $((RANDOM % 10)) in
	0) piece $((RANDOM % 30000)) $((RANDOM * 7)) >"$f" ;;
	1) piece $((RANDOM % 9000)) $((RANDOM)) >>"$f" ;;
	2) [ -e "$f" ] && truncate -s $((RANDOM % 20000)) "$f" ;;
	3) [ -e "$f" ] && [ "$f" != "$g" ] && mv "$f" "$g" ;;
	4) rm -f "$f" ;;
	5) mkdir -p "$mnt/u/d$k/e" ;;
	6) rm -rf "$mnt/u/d$k" ;;
	7) [ -e "$f" ] && ln -f "$f" "$mnt/u/l$k" ;;
	8) [ -e "$x" ] && mv "$x" "$x-renamed" ;;
	9) for _ in $(seq 10); do rm -f "$mnt/b/$bprefix$((RANDOM % (bign + 1)))"; done ;;
	esac
	return 0
}

workload() {
	mkdir "$mnt/d" "$mnt/u" "$mnt/b" || fail "mkdir"
	: >"$model/list"
	for round in $(seq 0 39); do
		[ $((round % 7)) -eq 0 ] && grow_big
		for _ in $(seq $((RANDOM % 4))); do churn; done
		sync_file
	done
}

expect_status 0 "$MKFS" -q -F "$img" 8M
cp "$img" "$base"
start -o "writelog=$log${MISCFS_CRASH_OPTS:+,$MISCFS_CRASH_OPTS}"
workload
unmount
# The big directory's index split its root: the states hold index blocks
# being split, records added and removed.
expect_status 0 "$DEBUGFS" "$img" dx /b
height=$(field height)
[ "$height" -ge 2 ] || { cat "$T_OUT"; fail "the index of b has height $height"; }
echo "b: $bign names made, index of height $height"

# The flush count at each entry of the log.
"$REPLAY" --list "$log" >"$T_DIR/list" || fail "miscfs-replay --list"
entries=$(wc -l <"$T_DIR/list")
mapfile -t after < <(awk '{ if ($2 == "flush") n++; print n + 0 }' "$T_DIR/list")
nflush=${after[$((entries - 1))]}
[ "$nflush" -ge 40 ] || fail "$nflush flushes for 40 fsyncs"

# One state, in slot $1 (its own image, mount point and files, so that two
# run at once on two cores): the image after the first $3 entries (or at
# flush $3), cut with mode $4 and seed $5; $6 the flushes it holds.  It
# runs in a subshell: fail ends only it, and the caller sees its status.
check_state() {
	local dir=$T_DIR/slot$1 st=$T_DIR/slot$1/img
	shift
	mnt=$dir/mnt
	mkdir -p "$mnt"
	if [ "$1" = flush ]; then
		"$REPLAY" --flush "$2" "$base" "$log" "$st" || fail "replay --flush $2"
	else
		"$REPLAY" --entry "$2" --mode "$3" --seed "$4" "$base" "$log" "$st" ||
			fail "replay --entry $2 --mode $3 --seed $4"
	fi
	"$MISCFS" "$st" "$mnt" -f 2>"$dir/daemon.err" &
	daemon=$!
	for _ in $(seq 3000); do
		mounted && break
		daemon_gone && { cat "$dir/daemon.err"; fail "state $*: not mounted"; }
		sleep 0.02
	done
	mounted || { cat "$dir/daemon.err"; fail "state $*: not mounted after 60 s"; }
	# The files fsynced by the state's last flush, as they were fsynced.
	awk -v n="$5" '$1 <= n { print $2 "  " $3 }' "$model/list" >"$dir/want"
	if [ -s "$dir/want" ]; then
		(cd "$mnt/d" && sha1sum --quiet -c "$dir/want") >"$dir/cmp.out" 2>&1 ||
			{ cat "$dir/cmp.out" >&2; stop; fail "state $*: files not as fsynced"; }
	fi
	fusermount3 -u "$mnt" || fail "state $*: fusermount3 -u"
	wait "$daemon" || { cat "$dir/daemon.err"; fail "state $*: the daemon exited $?"; }
	daemon=
	"$FSCK" -fn "$st" >"$dir/fsck.out" 2>&1 ||
		{ cat "$dir/fsck.out"; fail "state $*: fsck -fn exits $?"; }
}

# The states to check, one per line: every flush, then random points.
modes=(drop keep random torn blocks)
for f in $(seq "$nflush"); do
	[ "$f" -le "$states" ] && echo "flush $f keep 0 $f"
done >"$T_DIR/states"
listed=$(wc -l <"$T_DIR/states")
for _ in $(seq $((states - listed))); do
	n=$((RANDOM * 32768 + RANDOM))
	n=$((n % entries + 1))
	echo "entry $n ${modes[$((RANDOM % 5))]} $RANDOM ${after[$((n - 1))]}"
done >>"$T_DIR/states"

# lib.sh's rerun line, with the values this run took by default too.
rerun_line() {
	MISCFS_SEED=$seed MISCFS_CRASH_STATES=$states MISCFS_CRASH_MOUNTED=$sample t_rerun_line
}

# The log is not made again by a rerun: keep what the failed state was
# rebuilt from, out of $T_DIR, and say how to check it again.
keep_inputs() {
	local keep
	keep=$(mktemp -d "${TMPDIR:-/tmp}/miscfs-crash.XXXXXX") || return
	cp -r "$base" "$log" "$model" "$T_DIR/states" "$keep/" || return
	echo "kept in $keep: base, wlog, model, states" >&2
	echo "every state again: $CRASH_CHECK $keep/base $keep/wlog $keep/states $keep/model" >&2
	echo "one state again: echo 'LINE' | $CRASH_CHECK $keep/base $keep/wlog - $keep/model" >&2
	echo "its image: $REPLAY --entry N --mode MODE --seed SEED (or --flush N)" \
		"$keep/base $keep/wlog IMAGE" >&2
	rerun_line >&2
}

# Every state in process, half of them in each of two checkers.
checkers=()
for k in 0 1; do
	awk -v k=$k 'NR % 2 == k' "$T_DIR/states" |
		"$CRASH_CHECK" "$base" "$log" - "$model" >"$T_DIR/check$k.out" 2>&1 &
	checkers[k]=$!
done
failed=
for k in 0 1; do
	wait "${checkers[k]}" || failed=1
	cat "$T_DIR/check$k.out"
done
[ -z "$failed" ] || { keep_inputs; fail "crash_check: states not as they should be"; }
inproc=$(awk '/crash states in process/ { n += $1 } END { print n + 0 }' "$T_DIR"/check[01].out)
[ "$inproc" -eq "$(wc -l <"$T_DIR/states")" ] || fail "crash_check checked $inproc states"

# The sample mounted for real: the last flushes listed (up to 4; fewer
# states than flushes list only the first), and states evenly spread over
# the list for the rest.
last_flush=$(awk '$1 == "flush" { n = $2 } END { print n + 0 }' "$T_DIR/states")
awk -v m="$sample" -v total="$states" -v nflush="$last_flush" '
	BEGIN {
		last = m < 4 ? m : 4
		rest = m - last
		step = rest ? int(total / rest) : 0
		if (rest && step < 1)
			step = 1
	}
	$1 == "flush" && $2 > nflush - last { print; next }
	step && NR % step == 0 && NR / step <= rest { print }
' "$T_DIR/states" >"$T_DIR/sample"

# Two at a time, one per core.
real=0
while read -r a1 a2 a3 a4 a5; do
	(check_state 0 "$a1" "$a2" "$a3" "$a4" "$a5") & pa=$!
	pb=
	if read -r b1 b2 b3 b4 b5; then
		(check_state 1 "$b1" "$b2" "$b3" "$b4" "$b5") & pb=$!
	fi
	wait $pa || { keep_inputs; fail "state $a1 $a2 $a3 $a4 $a5"; }
	real=$((real + 1))
	[ -z "$pb" ] && continue
	wait $pb || { keep_inputs; fail "state $b1 $b2 $b3 $b4 $b5"; }
	real=$((real + 1))
done <"$T_DIR/sample"
echo "$inproc crash states ($nflush flushes, $entries log entries, $synced files fsynced):" \
	"$inproc in process by crash_check, $real of them through a real mount as well"
rerun_line
