#!/usr/bin/env bash
# mkfs.miscfs and miscfs-debug on a real block device (a loop device over
# an image file): the size comes from the device, old data is cleared, and
# every structure reads back.  Skipped where no loop device can be set up.
source "$(dirname "$0")/../lib.sh"

command -v losetup >/dev/null || skip "losetup is not installed"
[ "$(id -u)" -eq 0 ] || skip "loop devices need root"
img=$T_DIR/backing
head -c 48M /dev/urandom >"$img"                 # old data everywhere
dev=$(losetup -f --show "$img" 2>/dev/null) || skip "no loop device available"
trap 'losetup -d "$dev"; t_cleanup' EXIT

expect_status 1 "$MKFS" "$dev" 64M
expect_in "$T_ERR" "SIZE is only for image files"
expect_status 0 "$MKFS" -q -b 1024 -L blockdev -R reg:256K "$dev"
expect_status 0 "$DEBUGFS" "$dev" super
[ "$(field label)" = blockdev ] || fail "label"
[ "$(field 'device blocks')" -le $((48 * 1024)) ] || fail "larger than the device"
expect_status 0 "$DEBUGFS" "$dev" verify
expect_in "$T_OUT" "problems: 0"
expect_status 0 "$DEBUGFS" "$dev" ls /
expect_in "$T_OUT" "11 dir lost+found"
# The region was cleared of the old random bytes.
expect_status 0 "$DEBUGFS" "$dev" regions
start=$(sed -n 's/^region reg: start \([0-9]*\),.*/\1/p' "$T_OUT")
[ -n "$start" ] || fail "no region start"
[ "$(dd if="$dev" bs=1024 skip="$start" count=256 status=none | tr -d '\0' | wc -c)" -eq 0 ] ||
	fail "region not zeroed"
expect_status 1 "$MKFS" -q "$dev"
expect_in "$T_ERR" "already holds a miscfs filesystem"
expect_status 0 "$MKFS" -q -F -b 4096 "$dev"
expect_status 0 "$DEBUGFS" "$dev" verify
echo ok
