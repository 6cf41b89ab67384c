#!/usr/bin/env bash
# A damaged primary superblock is answered by a backup, and the damage is
# named; with every copy damaged, the tool says so and exits 1.
source "$(dirname "$0")/../lib.sh"

img=$T_DIR/img

check_copy() {   # check_copy GROUP TEXT: super comes from GROUP, TEXT on stderr
	expect_status 0 "$DEBUGFS" "$img" verify
	expect_in "$T_OUT" "problems: 0"
	expect_status 0 "$DEBUGFS" "$img" super
	[ "$(field 'copy in group')" = "$1" ] || fail "copy from group $(field 'copy in group'), expected $1"
	expect_in "$T_ERR" "$2"
	expect_in "$T_ERR" "using the backup superblock of group $1"
}

# 1 KiB blocks, 40 MiB: groups 0-4, backups in groups 1 and 3.
expect_status 0 "$MKFS" -q -b 1024 -L backup "$img" 40M
poke "$img" $((1024 + 200)) 58                      # one byte of the label
check_copy 1 "primary superblock: checksum mismatch"
[ "$(field label)" = backup ] || fail "label from backup"
dd if=/dev/zero of="$img" bs=1024 seek=1 count=1 conv=notrunc status=none
check_copy 1 "primary superblock: bad magic"
dd if=/dev/zero of="$img" bs=1024 seek=$((1 + 8192)) count=1 conv=notrunc status=none
check_copy 3 "primary superblock: bad magic"
dd if=/dev/zero of="$img" bs=1024 seek=$((1 + 3 * 8192)) count=1 conv=notrunc status=none
expect_status 1 "$DEBUGFS" "$img" super
expect_in "$T_ERR" "no valid superblock found"

# 4 KiB blocks: the backup of group 1 is at block 32768.
expect_status 0 "$MKFS" -q -F -b 4096 "$img" 300M
dd if=/dev/zero of="$img" bs=1024 seek=1 count=1 conv=notrunc status=none
check_copy 1 "primary superblock: bad magic"

# Garbage and truncated images never crash the tool.
head -c 4M /dev/urandom >"$img"
expect_status 1 "$DEBUGFS" "$img" super
expect_in "$T_ERR" "no valid superblock found"
head -c 1500 /dev/zero >"$img"
expect_status 1 "$DEBUGFS" "$img" super
echo ok
