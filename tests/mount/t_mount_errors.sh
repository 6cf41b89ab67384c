#!/usr/bin/env bash
# Errors reach the disk through a real mount: a damaged directory block
# found while mounted marks the superblock at once (miscfs-debug shows it
# before the unmount); the clean unmount keeps the mark; the next mount is
# refused in one line unless forced, and read-only mounts are allowed.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/mount.sh"

bs=1024
expect_status 0 "$MKFS" -q -F -b $bs "$img" 16M
start
mkdir "$mnt/x" || fail "mkdir"
echo data >"$mnt/x/file" || fail "write"
ino=$(stat -c %i "$mnt/x")
unmount

expect_status 0 "$DEBUGFS" "$img" super
[ "$(field errors)" = none ] || fail "errors: $(field errors)"
expect_status 0 "$DEBUGFS" "$img" inode "$ino"
blk=$(field 'block map' | cut -d' ' -f1)
poke "$img" $((blk * bs + 4)) 40         # rec_len of "."

start -o errors=continue
ls "$mnt/x" >/dev/null 2>&1 && fail "listed a damaged directory"
expect_status 0 "$DEBUGFS" "$img" super
[ "$(field errors)" = "marked in the superblock" ] || fail "errors: $(field errors)"
echo more >"$mnt/other" || fail "errors=continue stopped writing"
unmount

expect_status 0 "$DEBUGFS" "$img" super
[ "$(field state)" = "clean with errors" ] || fail "state: $(field state)"

# In the foreground a mount that wrongly comes up would never return.
expect_status 1 timeout 20 "$MISCFS" "$img" "$mnt" -f
expect_in "$T_ERR" "cannot mount: the filesystem is marked with errors"
expect_in "$T_ERR" "-o force"
[ "$(wc -l <"$T_ERR")" -eq 1 ] || fail "more than one line: $(cat "$T_ERR")"

start -o ro
[ "$(cat "$mnt/other")" = more ] || fail "read-only mount"
unmount
start -o force
echo again >"$mnt/other" || fail "write after -o force"
unmount
expect_status 0 "$DEBUGFS" "$img" super
[ "$(field state)" = "clean with errors" ] || fail "the forced mount dropped the errors"
