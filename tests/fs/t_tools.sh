#!/usr/bin/env bash
# mkfs.miscfs for each block size, with and without regions; miscfs-debug
# reads back every structure with checksums verified.
source "$(dirname "$0")/../lib.sh"

img=$T_DIR/img
for bs in 1024 2048 4096; do
	expect_status 0 "$MKFS" -q -F -b "$bs" -L "lab$bs" -U 0123abcd-0000-4000-8000-00000000beef "$img" 64M
	[ -s "$T_OUT" ] && fail "-q printed: $(cat "$T_OUT")"
	expect_status 0 "$DEBUGFS" "$img" super
	[ "$(field 'block size')" = "$bs" ] || fail "block size $(field 'block size') != $bs"
	[ "$(field label)" = "lab$bs" ] || fail "label"
	[ "$(field uuid)" = "0123abcd-0000-4000-8000-00000000beef" ] || fail "uuid $(field uuid)"
	[ "$(field state)" = "clean" ] || fail "state"
	[ "$(field 'copy in group')" = "0" ] || fail "copy"
	expect_status 0 "$DEBUGFS" "$img" groups
	[ "$(grep -c '^group ' "$T_OUT")" -ge 1 ] || fail "no groups listed"
	expect_status 0 "$DEBUGFS" "$img" inode 2
	[ "$(field type)" = dir ] && [ "$(field links)" = 3 ] || fail "root inode"
	expect_status 0 "$DEBUGFS" "$img" ls /
	expect_in "$T_OUT" "11 dir lost+found"
	expect_in "$T_OUT" "2 dir .."
	expect_status 0 "$DEBUGFS" "$img" ls /lost+found/
	expect_in "$T_OUT" "11 dir ."
	expect_status 0 "$DEBUGFS" "$img" ls 11
	expect_status 0 "$DEBUGFS" "$img" journal
	[ "$(field 'journal block size')" = "$bs" ] || fail "journal block size"
	[ "$(field 'journal start')" = 0 ] || fail "journal not empty"
	expect_status 0 "$DEBUGFS" "$img" regions
	expect_in "$T_OUT" "regions: 0"
	expect_status 0 "$DEBUGFS" "$img" verify
	expect_in "$T_OUT" "problems: 0"

	expect_status 0 "$MKFS" -F -b "$bs" -R ring:1M -R small.cfg:10K -J 5M "$img" 48M
	expect_in "$T_OUT" "region ring: 1.0 MiB"
	expect_status 0 "$DEBUGFS" "$img" regions
	expect_in "$T_OUT" "regions: 2"
	expect_in "$T_OUT" "region ring: start"
	grep -q "region small.cfg: .*bytes 10240$" "$T_OUT" || fail "small.cfg entry: $(cat "$T_OUT")"
	expect_status 0 "$DEBUGFS" "$img" super
	[ "$(field "journal blocks")" = $((5242880 / bs)) ] || fail "journal blocks"
	expect_status 0 "$DEBUGFS" "$img" verify
	expect_in "$T_OUT" "problems: 0"
	echo "ok: $bs-byte blocks"
done

# Options in every spelling: -J size=, -N, -i.
expect_status 0 "$MKFS" -q -F -J size=4M -N 5000 "$img" 64M
expect_status 0 "$DEBUGFS" "$img" super
inodes=$(field inodes)
[ "$inodes" -ge 5000 ] && [ "$inodes" -lt 6000 ] || fail "-N 5000 gave $inodes inodes"
expect_status 0 "$MKFS" -q -F -i 65536 "$img" 64M
expect_status 0 "$DEBUGFS" "$img" super
[ "$(field inodes)" -le 1100 ] || fail "-i 65536 gave $(field inodes) inodes"

# Help and version.
expect_status 0 "$MKFS" -h
expect_in "$T_OUT" "Usage: mkfs.miscfs"
expect_status 0 "$MKFS" -V
expect_status 0 "$DEBUGFS" -h
expect_in "$T_OUT" "Usage: miscfs-debug"

# The manual pages render without a warning.
if command -v groff >/dev/null; then
	for page in "$(dirname "$FORMAT_MD")"/man/*.8; do
		groff -man -Tutf8 -ww -z "$page" 2>"$T_ERR" || fail "groff failed on $page"
		[ -s "$T_ERR" ] && fail "$page: $(cat "$T_ERR")"
	done
fi
echo "ok"
