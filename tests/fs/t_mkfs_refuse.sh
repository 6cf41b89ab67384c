#!/usr/bin/env bash
# mkfs.miscfs refuses bad requests with one line naming the problem and
# exit status 1, and leaves an existing filesystem alone.
source "$(dirname "$0")/../lib.sh"

img=$T_DIR/img

refuse() {   # refuse TEXT ARGS...: exit 1 with TEXT on stderr, one line
	local text=$1
	shift
	expect_status 1 "$MKFS" "$@"
	expect_in "$T_ERR" "$text"
	[ "$(wc -l <"$T_ERR")" -eq 1 ] || fail "more than one line: $(cat "$T_ERR")"
}

refuse "too small: the minimum for these options is" "$img" 100K
refuse "block size 3000 is not supported" -b 3000 "$img" 64M
refuse "does not fit on a device" -R big:100M "$img" 64M
refuse "is too small" -R big:60M "$img" 64M
refuse "region 'x': expected NAME:SIZE" -R x "$img" 64M
refuse "may hold only" -R "a/b:1M" "$img" 64M
refuse "is used twice" -R a:1M -R a:2M "$img" 64M
refuse "cannot name a region" -R ..:1M "$img" 64M
refuse "cannot name a region" -R .:1M "$img" 64M
refuse "is not a UUID" -U nope "$img" 64M
refuse "longer than 32 bytes" -L 0123456789012345678901234567890123 "$img" 64M
refuse "journal size 'x' is not a size" -J x "$img" 64M
refuse "is below the minimum" -b 4096 -J 1M "$img" 64M
refuse "too many inodes: 4294967295 asked for (-N), at most 32768 fit" -N 4294967295 "$img" 64M
refuse "too many inodes: 65536 asked for (by bytes per inode)" -i 1024 "$img" 64M
refuse "larger than a file can be at 1024-byte blocks" -b 1024 -J 20G "$img" 64M
refuse "-E lazy: unknown (lazy_journal_init[=0|1], mmp_update_interval=SECONDS)" -E lazy "$img" 64M
refuse "does not exist; give a SIZE" "$T_DIR/none"
refuse "expected IMAGE [SIZE]"

# An existing filesystem is kept unless -F is given.
expect_status 0 "$MKFS" -q -L first "$img" 64M
refuse "already holds a miscfs filesystem; use -F" -L second "$img" 64M
expect_status 0 "$DEBUGFS" "$img" super
[ "$(field label)" = first ] || fail "the refused mkfs changed the image"
expect_status 0 "$MKFS" -q -F -L second "$img"
expect_status 0 "$DEBUGFS" "$img" super
[ "$(field label)" = second ] || fail "-F did not rewrite"

if command -v mkfs.ext4 >/dev/null; then
	mkfs.ext4 -q -F "$T_DIR/ext" 16M
	refuse "already holds a ext2/3/4 filesystem" "$T_DIR/ext"
fi

# A target in use (the daemon holds this lock while mounted) is refused.
if command -v flock >/dev/null; then
	exec 9<"$img"
	flock -x 9
	refuse "is in use by another process" -F "$img"
	exec 9<&-
	expect_status 0 "$MKFS" -q -F "$img"
fi
echo ok
