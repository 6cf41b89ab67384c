#!/usr/bin/env bash
# miscfs-debug names each damaged structure (which one, which checksum),
# exits 1, and never crashes; the rest of the image stays readable.
source "$(dirname "$0")/../lib.sh"

img=$T_DIR/img
bs=1024
fresh() { expect_status 0 "$MKFS" -q -F -b $bs -R reg:64K "$img" 24M; }
num() { sed -n "s/.*$1 \([0-9]*\).*/\1/p" "$T_OUT" | head -n1; }

# Where things are, from the tool itself.
fresh
expect_status 0 "$DEBUGFS" "$img" groups
itable=$(num "inode table")
bbitmap=$(num "block bitmap")
expect_status 0 "$DEBUGFS" "$img" inode 2
rootblk=$(field 'block map' | cut -d' ' -f1)
expect_status 0 "$DEBUGFS" "$img" journal
jsb=$(field 'journal superblock block')
expect_status 0 "$DEBUGFS" "$img" super
rtable=$(field 'region table block')

# Inode 2: its checksum no longer matches.
poke "$img" $((itable * bs + 256 + 16)) 77
expect_status 1 "$DEBUGFS" "$img" inode 2
expect_in "$T_ERR" "inode 2 (block $itable): checksum mismatch"
expect_status 1 "$DEBUGFS" "$img" ls /
expect_status 0 "$DEBUGFS" "$img" inode 11        # the rest is still readable
expect_status 1 "$DEBUGFS" "$img" verify
expect_in "$T_OUT" "problems: 1"

# The root directory block.
fresh
poke "$img" $((rootblk * bs + 20)) ff
expect_status 1 "$DEBUGFS" "$img" ls /
expect_in "$T_ERR" "directory 2: checksum mismatch"
expect_status 1 "$DEBUGFS" "$img" verify
expect_in "$T_ERR" "directory 2: checksum mismatch"

# A group descriptor.
fresh
poke "$img" $((2 * bs + 12)) 01
expect_status 1 "$DEBUGFS" "$img" groups
expect_in "$T_ERR" "group descriptor 0: checksum mismatch"

# A block bitmap.
fresh
poke "$img" $((bbitmap * bs + 100)) 55
expect_status 1 "$DEBUGFS" "$img" groups
expect_in "$T_ERR" "group 0: block bitmap (block $bbitmap) checksum mismatch"

# The journal superblock.
fresh
poke "$img" $((jsb * bs + 16)) 01
expect_status 1 "$DEBUGFS" "$img" journal
expect_in "$T_ERR" "journal superblock: checksum mismatch"

# The region table.
fresh
poke "$img" $((rtable * bs + 40)) 01
expect_status 1 "$DEBUGFS" "$img" regions
expect_in "$T_ERR" "region table (block $rtable): bad magic, count or checksum"

# Usage errors are told apart from damage.
fresh
expect_status 2 "$DEBUGFS" "$img" inode 0
expect_status 2 "$DEBUGFS" "$img" inode 99999999
expect_status 2 "$DEBUGFS" "$img" ls /nope
expect_in "$T_ERR" "'nope' not found"
expect_status 2 "$DEBUGFS" "$img" frobnicate
expect_status 2 "$DEBUGFS" "$T_DIR/missing"

# Random damage anywhere in the metadata never crashes the tool.  verify
# runs what super, groups, regions and journal run, and more; the rounds
# start from a copy of one image.  Both keep this test far inside its
# timeout under ASan on a loaded machine (it took 74 s of 120).
fresh
cp "$img" "$T_DIR/pristine"
for i in $(seq 40); do
	cp "$T_DIR/pristine" "$img"
	off=$(( (RANDOM * 32768 + RANDOM) % (itable * bs + 8 * bs) ))
	poke "$img" "$off" $(printf '%02x' $((RANDOM % 256))) $(printf '%02x' $((RANDOM % 256)))
	for cmd in "inode 2" "ls /" verify; do
		st=0
		# shellcheck disable=SC2086
		"$DEBUGFS" "$img" $cmd >/dev/null 2>"$T_ERR" || st=$?
		[ $st -le 2 ] || fail "'$cmd' after a hit at $off exited $st: $(cat "$T_ERR")"
	done
done
echo ok
