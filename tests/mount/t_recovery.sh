#!/usr/bin/env bash
# kill -9 of the daemon after a commit: the image says it needs recovery
# (the RECOVER flag and a log that is not empty, as miscfs-debug shows in
# its summary and in verify); the next mount replays it, and the clean
# unmount leaves nothing to recover.
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
