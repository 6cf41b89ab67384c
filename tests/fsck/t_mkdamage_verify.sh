#!/usr/bin/env bash
# mkdamage verify finds a file that fsck reconnected: the file itself, or
# a directory above it, as /lost+found/#INO; a file under any other name
# is missing.  The moves are made through a real mount, as fsck would
# leave them.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/../mount/mount.sh"
: "${MKDAMAGE:?MKDAMAGE must name mkdamage}"

expect_status 0 "$MKDAMAGE" populate "$img"
ino() { awk -v p="$1" '$6 == p { print $2; exit }' "$img.manifest"; }
s2=$(ino /a/small2.txt)
b=$(ino /a/b)

start
mv "$mnt/a/small2.txt" "$mnt/lost+found/#$s2" || fail "mv small2.txt"
mv "$mnt/a/b" "$mnt/lost+found/#$b" || fail "mv b"
unmount
expect_status 0 "$MKDAMAGE" verify "$img"
expect_in "$T_OUT" "143 checked, 0 skipped as damaged, 0 differ"

# Under another name, it is lost.
start
mv "$mnt/lost+found/#$s2" "$mnt/lost+found/other" || fail "mv other"
unmount
expect_status 1 "$MKDAMAGE" verify "$img"
expect_in "$T_OUT" "differs: /a/small2.txt: not found"
expect_in "$T_OUT" "1 differ"
echo ok
