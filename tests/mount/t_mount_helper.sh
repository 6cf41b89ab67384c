#!/usr/bin/env bash
# mount -t fuse.miscfs and an fstab line, as an installed miscfs gets
# them: mount(8) runs mount.fuse3, which runs "miscfs SOURCE MOUNTPOINT
# -o OPTIONS" from the default PATH (mount drops the caller's).  The test
# installs with meson install --destdir and, in a mount namespace of its
# own, binds the installed bin directory over /usr/local/bin, so nothing
# outside the test is touched (no /etc/fstab, no /usr/local).  The mount
# shows type "fuse" and the image path as its source, as fstests wants.
if [ -z "${T_IN_NS:-}" ]; then
	command -v unshare >/dev/null || { echo "SKIP: no unshare" >&2; exit 77; }
	unshare -m --propagation private true 2>/dev/null ||
		{ echo "SKIP: cannot make a mount namespace" >&2; exit 77; }
	exec unshare -m --propagation private env T_IN_NS=1 "$0" "$@"
fi
source "$(dirname "$0")/../lib.sh"
: "${MISCFS:?MISCFS must name the daemon}"

[ -c /dev/fuse ] && [ -r /dev/fuse ] && [ -w /dev/fuse ] || skip "no usable /dev/fuse"
[ -x /sbin/mount.fuse3 ] || [ -x /sbin/mount.fuse ] || skip "no mount.fuse3"
[ "$(id -u)" -eq 0 ] || skip "mount(8) of a FUSE type needs root"

img=$T_DIR/img
mnt=$T_DIR/mnt
mkdir "$mnt"
mounted() { grep -q " $mnt fuse" /proc/self/mounts; }
cleanup() {
	mounted && umount -l "$mnt"
	[ -e "$img" ] && flock -w 10 "$img" true
	t_cleanup
}
trap cleanup EXIT

# What meson install puts in bindir, else the daemon of the build tree.
bin=$T_DIR/bin
if [ -n "${MESON:-}" ] && [ -n "${BUILD_ROOT:-}" ]; then
	expect_status 0 "$MESON" install -C "$BUILD_ROOT" --no-rebuild --quiet \
		--destdir "$T_DIR/dest"
	daemon=$(find "$T_DIR/dest" -type f -name miscfs | head -n1)
	[ -x "$daemon" ] || fail "meson install put no miscfs daemon"
	bin=$(dirname "$daemon")
	for tool in mkfs.miscfs miscfs-debug; do
		[ -x "$bin/$tool" ] || fail "meson install put no $tool beside the daemon"
	done
else
	mkdir "$bin"
	cp "$MISCFS" "$bin/miscfs"
fi
mount --bind "$bin" /usr/local/bin || skip "cannot bind over /usr/local/bin"

expect_status 0 "$MKFS" -q -F "$img" 32M

# mount -t, with what mount(8) passes for "-o rw,relatime".
expect_status 0 mount -t fuse.miscfs "$img" "$mnt" -o rw,relatime
mounted || fail "not mounted"
echo "through mount(8)" >"$mnt/hello" || fail "write"
mkdir "$mnt/dir" || fail "mkdir"
[ "$(cat "$mnt/hello")" = "through mount(8)" ] || fail "read"
[ "$(findmnt -n -o FSTYPE "$mnt")" = fuse ] || fail "type $(findmnt -n -o FSTYPE "$mnt")"
[ "$(findmnt -n -o SOURCE "$mnt")" = "$img" ] || fail "source $(findmnt -n -o SOURCE "$mnt")"
grep -q "^$img $mnt fuse " /proc/self/mounts || fail "/proc/mounts: $(grep " $mnt " /proc/self/mounts)"
[ "$(df -T "$mnt" | awk 'NR == 2 { print $2 }')" = fuse ] || fail "df -T: $(df -T "$mnt")"

# A second mount of the image is refused, in one line, through mount(8).
mkdir "$T_DIR/mnt2"
expect_status 1 mount -t fuse.miscfs "$img" "$T_DIR/mnt2"
expect_in "$T_ERR" "in use by another miscfs daemon"
[ "$(wc -l <"$T_ERR")" -eq 1 ] || fail "more than one line: $(cat "$T_ERR")"

expect_status 0 umount "$mnt"
image_free "$img"
expect_status 0 "$DEBUGFS" "$img" super
[ "$(field state)" = clean ] || fail "state $(field state)"

# Read-only through mount(8).
expect_status 0 mount -t fuse.miscfs "$img" "$mnt" -o ro
findmnt -n -o OPTIONS "$mnt" | grep -q '^ro,' || fail "not ro: $(findmnt -n -o OPTIONS "$mnt")"
echo x 2>/dev/null >"$mnt/new" && fail "wrote to a read-only mount"
expect_status 0 umount "$mnt"
image_free "$img"

# An fstab line, from a file of the test's own.
echo "$img $mnt fuse.miscfs defaults 0 0" >"$T_DIR/fstab"
expect_status 0 mount --fstab "$T_DIR/fstab" "$mnt"
mounted || fail "not mounted from the fstab line"
[ "$(cat "$mnt/hello")" = "through mount(8)" ] || fail "read through the fstab mount"
[ -d "$mnt/dir" ] || fail "mkdir lost"
touch "$mnt/dir/new" || fail "write through the fstab mount"
expect_status 0 umount "$mnt"
image_free "$img"
expect_status 0 "$DEBUGFS" "$img" verify
expect_in "$T_OUT" "problems: 0"
expect_in "$T_OUT" "recovery: not needed"
