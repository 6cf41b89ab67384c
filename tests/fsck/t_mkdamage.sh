#!/usr/bin/env bash
# mkdamage: every kind of damage is real (miscfs-debug sees the changed
# field or the failed checksum, or fsck -fn through the tests' image check
# reports the broken rule), the same seed
# makes the same image, populated or damaged, and verify passes on a
# whole image and names a file whose data changed.
source "$(dirname "$0")/../lib.sh"
: "${MKDAMAGE:?MKDAMAGE must name mkdamage}"

pristine=$T_DIR/pristine
img=$T_DIR/img
bs=1024

expect_status 0 "$MKDAMAGE" populate "$pristine"
expect_status 0 "$MKDAMAGE" check "$pristine"
# The same seed makes the same bytes (times included), another seed others.
expect_status 0 "$MKDAMAGE" populate "$img"
cmp "$pristine" "$img" || fail "populate is not deterministic"
expect_status 0 "$MKDAMAGE" populate "$img" --seed 1
cmp -s "$pristine" "$img" && fail "the seed changes nothing"
cmp -s "$pristine.manifest" "$img.manifest" && fail "the seed changes no contents"
expect_status 0 "$MKDAMAGE" verify "$pristine"
expect_in "$T_OUT" "0 differ"

# ino PATH: the inode number the manifest gives PATH.
ino() { awk -v p="$1" '$6 == p { print $2; exit }' "$pristine.manifest"; }
# dbg ARGS...: miscfs-debug on the damaged image, any exit status.
dbg() { "$DEBUGFS" "$img" "$@" >"$T_OUT" 2>"$T_ERR" || true; }
# dbg_fails ARGS... TEXT: miscfs-debug exits 1 naming TEXT on stderr.
dbg_fails() {
	local text=${!#}
	expect_status 1 "$DEBUGFS" "$img" "${@:1:$#-1}"
	expect_in "$T_ERR" "$text"
}
# check_fails TEXT: the tests' image check (fsck -fn) reports TEXT.
check_fails() {
	expect_status 1 "$MKDAMAGE" check "$img"
	expect_in "$T_ERR" "$1"
}
# has FIELD VALUE: "FIELD: VALUE" in $T_OUT.
has() { [ "$(field "$1")" = "$2" ] || { cat "$T_OUT"; fail "$1 is '$(field "$1")', not '$2'"; }; }
# ls_has DIR LINE / ls_lacks DIR NAME: an entry of DIR as miscfs-debug lists it.
ls_has() { dbg ls "$1"; grep -qx -- "$2" "$T_OUT" || { cat "$T_OUT"; fail "no '$2' in $1"; }; }
ls_lacks() { dbg ls "$1"; ! grep -q " $2\$" "$T_OUT" || { cat "$T_OUT"; fail "'$2' still in $1"; }; }
# u16 OFFSET: a little-endian field of the damaged image.
u16() { od -An -tu2 -j "$1" -N2 "$img" | tr -d ' '; }
# group_field G KEY: "KEY N" of group G in miscfs-debug groups.
group_field() { dbg groups; sed -n "s/^group $1: .*$2 \([0-9]*\).*/\1/p" "$T_OUT"; }
# flipped: the block whose bit the damage flipped in a block bitmap.
flipped() { sed -n "s/.* block bitmap bit of block \([0-9]*\) .*/\1/p" "$T_DIR/said" | head -n1; }

s2=$(ino /a/small2.txt)
s1=$(ino /a/small1.txt)
notes=$(ino /a/b/notes.txt)
many=$(ino /many)
expect_status 0 "$DEBUGFS" "$pristine" super
ninodes=$(field inodes)
ipg=$(field "inodes per group")
blocks=$(field blocks)
expect_status 0 "$DEBUGFS" "$pristine" inode "$(ino /xattr_blk)"
xblk=$(field "xattr block")
expect_status 0 "$DEBUGFS" "$pristine" groups
free0=$(sed -n 's/^group 0: .*free blocks \([0-9]*\).*/\1/p' "$T_OUT")
ifree0=$(sed -n 's/^group 0: .*free inodes \([0-9]*\).*/\1/p' "$T_OUT")
ifree1=$(sed -n 's/^group 1: .*free inodes \([0-9]*\).*/\1/p' "$T_OUT")

# The checks of one kind, on $img just damaged; its stdout is in $T_DIR/said.
check_kind() {
	case $1 in
	sb-inodes-per-group)
		dbg super; has "copy in group" 1; expect_in "$T_ERR" "inode count";;
	sb-free-blocks)
		dbg super; has "copy in group" 1; expect_in "$T_ERR" "free counts exceed totals";;
	sb-csum)
		dbg super; has "copy in group" 1; expect_in "$T_ERR" "primary superblock: checksum mismatch";;
	gd-bitmap-outside) dbg_fails groups "group descriptor 0: bitmaps or inode table outside the group";;
	gd-free-count)
		[ "$(group_field 0 'free blocks')" = $((free0 - 7)) ] || fail "free count"
		check_fails "group 0: $((free0 - 7)) free blocks recorded, $free0 counted";;
	gd-csum) dbg_fails groups "group descriptor 0: checksum mismatch";;
	bbitmap-used-clear) check_fails "block bitmap of group 1 differs: +$(flipped)";;
	bbitmap-free-set) check_fails "block bitmap of group 1 differs: -$(flipped)";;
	ibitmap-used-clear)
		[ "$(group_field 1 'free inodes')" = $((ifree1 + 1)) ] || fail "free inodes"
		check_fails "inode bitmap of group 1 differs: +$s2";;
	ibitmap-free-set) check_fails "inode bitmap of group 1 differs: -$ninodes";;
	bbitmap-csum) dbg_fails groups "group 0: block bitmap (block 3) checksum mismatch";;
	ibitmap-csum) dbg_fails groups "group 0: inode bitmap (block 4) checksum mismatch";;
	region-overlap-group)
		dbg regions; expect_in "$T_OUT" "region blob: start $(( (blocks - 64) & ~7 )),";;
	region-overlap-region)
		dbg regions; expect_in "$T_OUT" "region log: start $((blocks + 4)),";;
	region-csum) dbg_fails regions "region table (block";;
	orphan-loop)
		dbg super; has "orphan list head" "$s2"
		dbg inode "$s2"; has "next orphan" "$notes"
		dbg inode "$notes"; has "next orphan" "$s2";;
	orphan-free-inode)
		dbg super; has "orphan list head" "$ninodes"
		dbg inode "$ninodes"; has mode 0000;;
	block-out-of-range) dbg_fails verify "inode $s2: i_block maps block 0 to";;
	block-shared)
		dbg inode "$s2"; local a; a=$(field "block map" | cut -d' ' -f1)
		dbg inode "$notes"; [ "$(field "block map" | cut -d' ' -f1)" = "$a" ] || fail "not shared"
		check_fails "inode $notes shares 1 blocks with other inodes";;
	ind-out-of-range) dbg_fails verify "inode $(ino /big): indirect block";;
	ind-csum) dbg_fails verify "of inode $(ino /big): checksum mismatch";;
	size-beyond-max) dbg_fails inode "$s2" "beyond the largest file";;
	dir-size-unaligned) dbg inode "$(ino /a)"; has size $((bs + 100));;
	blocks-wrong) dbg inode "$s2"; has sectors 6; check_fails "inode $s2: i_blocks is 6, should be 4";;
	mode-bad-type) dbg inode "$s2"; has type invalid; has mode 0644;;
	inode-csum) dbg_fails inode "$s2" "inode $s2 (block";;
	links-high) dbg inode "$s2"; has links 3; check_fails "inode $s2: link count is 3, should be 1";;
	links-low) dbg inode "$s1"; has links 1; check_fails "inode $s1: link count is 1, should be 2";;
	links-zero) dbg inode "$s2"; has links 0; check_fails "inode $s2: link count is 0, should be 1";;
	nsec-too-big) dbg inode "$s2"; expect_in "$T_OUT" ".1000000000";;
	root-not-dir) dbg inode 2; has type file; expect_status 2 "$DEBUGFS" "$img" ls /;;
	xattr-csum) dbg_fails verify "xattr block $xblk: checksum mismatch";;
	xattr-value-beyond) dbg_fails verify "xattr block $xblk: entry at byte 0 runs past the end";;
	xattr-shared)
		dbg inode "$s2"; has "xattr block" "$xblk"; check_fails "inode $s2: xattr block $xblk is also claimed by another inode";;
	ixattr-beyond)
		# e_value_size of the first in-inode entry of /xattr_in.
		local x; x=$(ino /xattr_in)
		dbg groups
		local it; it=$(sed -n "s/^group $(( (x - 1) / ipg )): .*inode table \([0-9]*\).*/\1/p" "$T_OUT")
		[ "$(u16 $(( it * bs + (x - 1) % ipg * 256 + 170 )))" = 200 ] || fail "e_value_size";;
	dirent-rec-len)
		dbg_fails ls /many "rec_len 924 at offset 108 is misaligned or too long"
		# An empty file of the block, which fsck may free once cut off.
		grep -qx /many/entry-035-with-a-longer-name "$img.damaged" || fail "empty file";;
	dirent-name-len) dbg_fails ls /many "name_len 32 at offset 108 does not fit rec_len 36";;
	dirblock-csum) dbg_fails ls /many "directory $many: checksum mismatch";;
	dirent-free-inode)
		ls_has /a "$ninodes file ghost"
		check_fails "entry 'ghost' in directory $(ino /a) names inode $ninodes, which is not in use";;
	dirent-file-type) ls_has /a "$s2 fifo small2.txt";;
	dir-no-dot) ls_lacks /a/b "\\.";;
	dir-no-dotdot) ls_lacks /a/b/c "\\.\\.";;
	dir-dotdot-wrong) ls_has /a/b/c "$many dir ..";;
	dir-loop)
		ls_lacks / loopa
		ls_has "$(ino /loopa/loopb)" "$(ino /loopa) dir loopa"
		ls_has "$(ino /loopa)" "$(ino /loopa/loopb) dir ..";;
	dir-unreachable)
		ls_lacks /a b
		check_fails "directory $(ino /a/b) (its '..' says $(ino /a)) is not reachable from the root";;
	file-unreachable) ls_lacks /a small2.txt; check_fails "inode $s2: link count is 1, should be 0";;
	dup-names)
		dbg ls /many
		[ "$(grep -c ' entry-000-with-a-longer-name$' "$T_OUT")" = 2 ] || fail "no duplicate";;
	dir-hardlink)
		ls_has /a "$many dir many-again"
		check_fails "entry 'many-again' in directory $(ino /a) is a second link to directory $many";;
	lost-found-missing)
		ls_lacks / lost+found; dbg inode 11; has mode 0000
		[ "$(group_field 0 'free inodes')" = $((ifree0 + 1)) ] || fail "free inodes"
		# The rest is consistent: only the missing directory is reported.
		check_fails "/lost+found is missing";;
	lost-found-not-dir)
		local f
		f=$(sed -n "s/.*entry 'lost+found' -> inode \([0-9]*\) added.*/\1/p" "$T_DIR/said")
		ls_has / "$f file lost+found"
		check_fails "/lost+found is inode $f, which is not a directory";;
	lost-found-unreachable)
		ls_lacks / lost+found
		check_fails "directory 11 (its '..' says 2) is not reachable from the root";;
	lost-found-loop)
		ls_lacks / lost+found; ls_lacks / loopa
		ls_has "$(ino /loopa/loopb)" "11 dir lost+found"
		ls_has 11 "$(ino /loopa) dir loopa"
		check_fails "directory 11 is in a loop of directories";;
	lost-found-full)
		dbg ls 11; expect_in "$T_OUT" "fifo-link-0000"
		check_fails "inode $s2 (a regular file, ";;
	dx-csum) check_fails "directory $many block 1 (";;
	dx-record-block) check_fails "directory $many: its index has no record of an entry";;
	dx-record-gone) check_fails "directory $many: its index holds 121 records for 122";;
	dx-records-order) check_fails "has its records out of order";;
	dx-level) check_fails "where 1 belongs";;
	dx-room-overstated) check_fails "directory $many: its index says block 0 has more room";;
	dx-room-unmapped) check_fails "directory $many: its index maps no room for block 0";;
	dx-flag-no-index)
		dbg inode "$(ino /a/b)"; has flags 0x00001000
		check_fails "directory $(ino /a/b) has one block and the index flag";;
	journal-torn|journal-tag-outside)
		dbg super; has recovery "needs recovery (the log is not empty, RECOVER flag set)"
		dbg journal; has "journal start" 1;;
	journal-sb-csum) dbg_fails journal "journal superblock: checksum mismatch";;
	*) fail "no check for kind $1";;
	esac
}

expect_status 0 "$MKDAMAGE" kinds
cp "$T_OUT" "$T_DIR/kinds"
[ "$(wc -l <"$T_DIR/kinds")" -ge 30 ] || fail "fewer than 30 kinds"
# MKDAMAGE_EVERY=N (the sampled sanitizer trees: 2) checks every N-th
# kind only.
every=${MKDAMAGE_EVERY:-1} nth=0
while read -r kind _; do
	nth=$((nth + 1))
	[ $(((nth - 1) % every)) -eq 0 ] || continue
	cp "$pristine" "$img"
	cp "$pristine.manifest" "$img.manifest"
	expect_status 0 "$MKDAMAGE" damage "$img" "$kind"
	[ -s "$T_OUT" ] || fail "$kind said nothing"
	cp "$T_OUT" "$T_DIR/said"
	head -n1 "$img.damaged" | grep -qx "# $kind, seed 0" || fail "$kind: $img.damaged"
	check_kind "$kind"
	# The same seed makes the same bytes.
	cp "$img" "$T_DIR/first"
	cp "$pristine" "$img"
	expect_status 0 "$MKDAMAGE" damage "$img" "$kind"
	cmp -s "$img" "$T_DIR/first" || fail "$kind: not deterministic"
done <"$T_DIR/kinds"

# Another seed makes another choice.
cp "$pristine" "$img"
expect_status 0 "$MKDAMAGE" damage "$img" links-high --seed 5
grep -q "^inode $s2:" "$T_OUT" && fail "seed 5 chose the same inode"
expect_status 2 "$MKDAMAGE" damage "$img" no-such-kind

# The files the damage lists are the ones verify skips.
cp "$pristine" "$img"
expect_status 0 "$MKDAMAGE" damage "$img" block-out-of-range
grep -qx /a/small2.txt "$img.damaged" || fail "block-out-of-range lists no file"

# verify itself: a byte of notes.txt changed is named; listed as damaged,
# it is skipped.
cp "$pristine" "$img"
: >"$img.damaged"
expect_status 0 "$DEBUGFS" "$img" inode "$notes"
poke "$img" $(( $(field "block map" | cut -d' ' -f2) * bs + 17 )) 5a
expect_status 1 "$MKDAMAGE" verify "$img"
expect_in "$T_OUT" "differs: /a/b/notes.txt: contents"
expect_in "$T_OUT" "1 differ"
echo /a/b/notes.txt >"$img.damaged"
expect_status 0 "$MKDAMAGE" verify "$img"
expect_in "$T_OUT" "1 skipped as damaged, 0 differ"

# A torn transaction is dropped by the replay and the committed one taken.
cp "$pristine" "$img"
: >"$img.damaged"
expect_status 0 "$MKDAMAGE" damage "$img" journal-torn
expect_status 0 "$MKDAMAGE" verify "$img"
expect_in "$T_OUT" "the journal needs a replay"

# A root that is no directory refuses the mount, and the refusal leaves
# nothing behind (the sanitizer build's leak check fails the exit status).
cp "$pristine" "$img"
expect_status 0 "$MKDAMAGE" damage "$img" root-not-dir
expect_status 2 "$MKDAMAGE" verify "$img"
expect_in "$T_ERR" "the root inode is not a directory"

# The 4 KiB variant populates and takes damage too.
expect_status 0 "$MKDAMAGE" populate "$img" --block-size 4096 --seed 3
expect_status 0 "$MKDAMAGE" check "$img"
expect_status 0 "$DEBUGFS" "$img" super
has "block size" 4096
cp "$img" "$T_DIR/four"
cp "$img" "$T_DIR/four.orig"
cp "$img.manifest" "$T_DIR/four.manifest"
expect_status 0 "$MKDAMAGE" damage "$img" ind-out-of-range
dbg_fails verify "indirect block"
# It has one group: no backup superblock to repair the primary from.
expect_status 1 "$MKDAMAGE" damage "$T_DIR/four" sb-csum
expect_in "$T_ERR" "no backup superblock"
cmp "$T_DIR/four" "$T_DIR/four.orig" || fail "sb-csum changed the image"
echo ok
