#!/usr/bin/env bash
# kill -9 of the daemon after a commit: the image says it needs recovery
# (the RECOVER flag and a log that is not empty, as miscfs-debug shows in
# its summary and in verify); the next mount replays it, and the clean
# unmount leaves nothing to recover.  And a superblock torn by the power
# cut on an image of one group (no backup) still leads to the journal,
# and is mounted (and written whole) when the replay did not mend it.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/mount.sh"

expect_status 0 "$MKFS" -q -F "$img" 32M
start -o commit=60
expect_status 0 "$DEBUGFS" "$img" super
[ "$(field recovery)" = "not needed" ] || fail "recovery after mount: $(field recovery)"

head -c 200000 /dev/urandom >"$T_DIR/data"
mkdir "$mnt/d" || fail "mkdir"
cp "$T_DIR/data" "$mnt/d/data" || fail "cp"
sync "$mnt/d/data" || fail "fsync"            # commits: the log holds it

kill_daemon

expect_status 0 "$DEBUGFS" "$img" super
[ "$(field recovery)" = "needs recovery (the log is not empty, RECOVER flag set)" ] ||
	fail "recovery after kill -9: $(field recovery)"
[ "$(field state)" = "not clean" ] || fail "state: $(field state)"
expect_status 0 "$DEBUGFS" "$img" journal
[ "$(field 'journal start')" != 0 ] || fail "the log is empty"
expect_status 0 "$DEBUGFS" "$img" verify
expect_in "$T_OUT" "recovery: needs recovery"

start
cmp "$T_DIR/data" "$mnt/d/data" || fail "the file after the replay"
unmount
expect_status 0 "$DEBUGFS" "$img" super
[ "$(field recovery)" = "not needed" ] || fail "recovery after unmount: $(field recovery)"
[ "$(field state)" = clean ] || fail "state: $(field state)"
expect_status 0 "$DEBUGFS" "$img" verify
expect_in "$T_OUT" "recovery: not needed"
expect_in "$T_OUT" "problems: 0"

# A power cut that tears the primary superblock while a checkpoint writes
# it home (its second sector still the older copy's).  This image has one
# group, so no backup: the torn primary's own geometry must locate the
# journal, whose replay writes the superblock whole again.
expect_status 0 "$MKFS" -q -F "$img" 32M
cp "$img" "$T_DIR/old"
start -o commit=60
mkdir "$mnt/e" || fail "mkdir"
cp "$T_DIR/data" "$mnt/e/data" || fail "cp"
# A shrinking truncate passes through the orphan list, whose head is in
# the superblock: the log then holds a copy of it.
truncate -s 100000 "$mnt/e/data" || fail "truncate"
sync "$mnt/e/data" || fail "fsync"
kill_daemon
sector() { dd if="$1" bs=512 skip=3 count=1 status=none | od -An -tx1; }
[ "$(sector "$img")" != "$(sector "$T_DIR/old")" ] ||
	fail "the superblock's second sector did not change: nothing to tear"
dd if="$T_DIR/old" of="$img" bs=512 skip=3 seek=3 count=1 conv=notrunc status=none
start
head -c 100000 "$T_DIR/data" | cmp - "$mnt/e/data" ||
	fail "the file after a replay past a torn superblock"
unmount
expect_status 0 "$DEBUGFS" "$img" verify
expect_in "$T_OUT" "problems: 0"

# Torn by the clean unmount's own write of the superblock: the log is
# empty and holds no copy.  Every field lies in the superblock's first
# sector, so what is there is one copy, whole, and only the checksum in
# the second sector is stale: the mount takes it and writes it again.
expect_status 0 "$MKFS" -q -F "$img" 32M
cp "$img" "$T_DIR/old"
start
cp "$T_DIR/data" "$mnt/data" || fail "cp"
unmount
[ "$(sector "$img")" != "$(sector "$T_DIR/old")" ] ||
	fail "the superblock's second sector did not change: nothing to tear"
dd if="$T_DIR/old" of="$img" bs=512 skip=3 seek=3 count=1 conv=notrunc status=none
cp "$img" "$T_DIR/torn"
# fsck names it and, allowed, writes it again.
expect_status 4 "$FSCK" -fn "$img"
expect_in "$T_OUT" "torn by a power cut"
expect_status 1 "$FSCK" -p "$T_DIR/torn"
expect_status 0 "$FSCK" -fn "$T_DIR/torn"
start
cmp "$T_DIR/data" "$mnt/data" || fail "the file after a torn clean unmount"
unmount
expect_status 0 "$DEBUGFS" "$img" verify
expect_in "$T_OUT" "problems: 0"
