#!/usr/bin/env bash
# -o writelog=FILE and miscfs-replay: a workload of files made, renamed,
# removed and fsynced on a mount that records its writes; the log replayed
# onto a copy of the image taken before the mount gives, at every flush,
# an image that passes the check once recovered, and at the last flush
# the final image byte for byte; so does a power cut before each flush
# that keeps part of the writes since the last one.  A log cut short or
# damaged, one that cannot be created, and one left by a killed daemon.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/mount.sh"
: "${REPLAY:?REPLAY must name miscfs-replay}"
: "${FSCK:?FSCK must name fsck.miscfs}"

# The check every replayed state must pass ($1: the image).
CHECK='"$FSCK" -fn "$1" && "$DEBUGFS" "$1" verify'
# A state between two writes of a checkpoint may hold a new bitmap whose
# checksum is in a descriptor not yet written home: the journal still has
# both, and recovery puts them right.  So the check runs on the image as
# the next mount leaves it, recovered (a mount and an unmount).
check_state() {
	local saved=$img
	if "$DEBUGFS" "$1" super | grep -q "^recovery: needs recovery"; then
		img=$1
		start
		unmount
		img=$saved
	fi
	eval "$CHECK"
}

log=$T_DIR/wlog
base=$T_DIR/base
# The sanitizer builds check every MISCFS_CRASH_EVERY-th state (and the last).
every=${MISCFS_CRASH_EVERY:-1}

workload() {
	mkdir "$mnt/d" "$mnt/e" || fail "mkdir"
	for i in 1 2 3 4 5 6; do
		head -c $((i * 37000)) /dev/urandom >"$T_DIR/f$i"
		dd if="$T_DIR/f$i" of="$mnt/d/f$i" bs=16k conv=fsync status=none ||
			fail "writing f$i"
	done
	mv "$mnt/d/f2" "$mnt/e/g2" || fail "mv"
	rm "$mnt/d/f3" || fail "rm"
	head -c 5000 /dev/urandom >>"$mnt/d/f4" || fail "append"
	sync "$mnt/d/f4" || fail "fsync"
	ln -s f1 "$mnt/d/link" || fail "ln"
	sync -f "$mnt" || fail "syncfs"
}

expect_status 0 "$MKFS" -q -F "$img" 32M
cp "$img" "$base"
start -o "writelog=$log"
workload
unmount

expect_status 0 "$REPLAY" --count "$log"
entries=$(field entries)
flushes=$(field flushes)
[ "$flushes" -ge 8 ] || fail "$flushes flushes for 8 fsyncs"
expect_status 0 "$REPLAY" --list "$log"
[ "$(wc -l <"$T_OUT")" -eq "$entries" ] || fail "--list: not $entries lines"
[ "$(grep -c ' flush ' "$T_OUT")" -eq "$flushes" ] || fail "--list: not $flushes flushes"

# Every flush's image passes the check; the last one is the image.
for n in $(seq 0 "$flushes"); do
	[ $((n % every)) -eq 0 ] || [ "$n" -eq "$flushes" ] || continue
	expect_status 0 "$REPLAY" --flush "$n" "$base" "$log" "$T_DIR/at"
	check_state "$T_DIR/at" >"$T_OUT" 2>&1 || { cat "$T_OUT"; fail "flush $n: the check fails"; }
done
cmp "$T_DIR/at" "$img" || fail "the image at the last flush is not the final image"
expect_status 0 "$REPLAY" --flush 0 "$base" "$log" "$T_DIR/zero"
cmp "$T_DIR/zero" "$base" || fail "flush 0 is not the base"

# A power cut just before each flush, the writes since the one before
# kept in part (torn, or block by block): recovered, it passes the check
# too.
expect_status 0 "$REPLAY" --list "$log"
awk '$2 == "flush" { print $1 }' "$T_OUT" >"$T_DIR/flush_at"
prev=0
k=0
while read -r at; do
	if [ $((at - prev)) -ge 3 ] && [ $((k % every)) -eq 0 ]; then
		mode=$([ $((k % 2)) -eq 0 ] && echo blocks || echo torn)
		expect_status 0 "$REPLAY" --entry "$at" --mode "$mode" --seed "$k" \
			"$base" "$log" "$T_DIR/cut"
		check_state "$T_DIR/cut" >"$T_OUT" 2>&1 ||
			{ cat "$T_OUT"; fail "entry $at, $mode, seed $k: the check fails"; }
	fi
	prev=$at
	k=$((k + 1))
done <"$T_DIR/flush_at"

# An entry cut with the unflushed writes dropped is the flush before it.
expect_status 0 "$REPLAY" --list "$log"
# (the entries up to the next flush, which they leave out)
cut_at=$(awk -v nth=$((flushes / 2 + 1)) '$2 == "flush" && $3 == nth { print $1; exit }' "$T_OUT")
expect_status 0 "$REPLAY" --entry "$cut_at" --mode drop "$base" "$log" "$T_DIR/drop"
expect_status 0 "$REPLAY" --flush $((flushes / 2)) "$base" "$log" "$T_DIR/half"
cmp "$T_DIR/drop" "$T_DIR/half" || fail "--entry $cut_at --mode drop is not flush $((flushes / 2))"
expect_status 0 "$REPLAY" --entry "$cut_at" --mode torn --seed 5 "$base" "$log" "$T_DIR/t1"
expect_status 0 "$REPLAY" --entry "$cut_at" --mode torn --seed 5 "$base" "$log" "$T_DIR/t2"
cmp "$T_DIR/t1" "$T_DIR/t2" || fail "the same seed gave two images"

# Beyond the log, the base as output, bad arguments.
expect_status 1 "$REPLAY" --flush $((flushes + 1)) "$base" "$log" "$T_DIR/x"
expect_in "$T_ERR" "the log holds $flushes flushes"
expect_status 1 "$REPLAY" --entry $((entries + 1)) "$base" "$log" "$T_DIR/x"
expect_status 1 "$REPLAY" --flush 1 "$base" "$log" "$base"
expect_in "$T_ERR" "would overwrite the base image"
expect_status 2 "$REPLAY" --mode sideways "$base" "$log" "$T_DIR/x"
expect_status 2 "$REPLAY" --flush 1 --entry 2 "$base" "$log" "$T_DIR/x"

# A log cut short: its complete records, and the offset where it ends.
size=$(stat -c %s "$log")
head -c $((size - 10)) "$log" >"$T_DIR/short"
expect_status 3 "$REPLAY" --count "$T_DIR/short"
expect_in "$T_ERR" "at offset"
expect_in "$T_ERR" "cut short"
[ "$(field entries)" -eq $((entries - 1)) ] || fail "cut log: $(field entries) entries"
expect_status 3 "$REPLAY" --flush 3 "$base" "$T_DIR/short" "$T_DIR/s3"
expect_status 0 "$REPLAY" --flush 3 "$base" "$log" "$T_DIR/f3"
cmp "$T_DIR/s3" "$T_DIR/f3" || fail "flush 3 of the cut log differs"
# A damaged header is refused, naming the offset.
cp "$log" "$T_DIR/bad"
poke "$T_DIR/bad" 0 58
expect_status 1 "$REPLAY" --count "$T_DIR/bad"
expect_in "$T_ERR" "offset 0"

# A log that cannot be created: no mount.
expect_status 1 "$MISCFS" "$img" "$mnt" -f -o writelog=/nonexistent/dir/log
expect_in "$T_ERR" "cannot create the write log"
mounted && fail "mounted without its log"
# Nor one that is the image itself, which it would truncate.
cp "$img" "$T_DIR/img.copy"
expect_status 1 "$MISCFS" "$img" "$mnt" -f -o "writelog=$img"
expect_in "$T_ERR" "it is the image"
cmp "$img" "$T_DIR/img.copy" || fail "the image changed"

# A killed daemon leaves every record it wrote: the last flush in it
# passes the check after recovery would run.
cp "$img" "$base"
start -o "writelog=$log"
head -c 300000 /dev/urandom >"$T_DIR/k"
dd if="$T_DIR/k" of="$mnt/k" bs=64k conv=fsync status=none || fail "writing k"
kill_daemon
rc=0
"$REPLAY" --count "$log" >"$T_OUT" 2>"$T_ERR" || rc=$?
[ "$rc" -eq 0 ] || [ "$rc" -eq 3 ] || { cat "$T_ERR"; fail "--count after a kill exited $rc"; }
expect_status "$rc" "$REPLAY" --flush "$(field flushes)" "$base" "$log" "$T_DIR/killed"
check_state "$T_DIR/killed" >"$T_OUT" 2>&1 || { cat "$T_OUT"; fail "after a kill: the check fails"; }
start
cmp "$T_DIR/k" "$mnt/k" || fail "the fsynced file after the kill"
unmount
exit 0
