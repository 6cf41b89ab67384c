#!/usr/bin/env bash
# The Debian package: built from the tree with dpkg-buildpackage, clean of
# lintian errors, installed, used the way an installation is (mkfs -t,
# fsck -t, mount -t fuse.miscfs, an fstab line), and removed with nothing
# of it left behind.
#
# It installs the package on this machine and removes it at the end, so
# it skips where a miscfs package is installed already (the user's own),
# where it is not root, or where the packaging tools are missing.
source "$(dirname "$0")/../lib.sh"
: "${SOURCE_ROOT:?SOURCE_ROOT must name the source tree}"

[ "$(id -u)" = 0 ] || skip "installing a package needs root"
for p in dpkg-buildpackage dh lintian git; do
	command -v "$p" >/dev/null || skip "no $p (packages dpkg-dev, debhelper, lintian, git)"
done
dpkg -s miscfs >/dev/null 2>&1 && skip "a miscfs package is installed already"
[ -c /dev/fuse ] || skip "no /dev/fuse"

version=$(dpkg-parsechangelog -l "$SOURCE_ROOT/debian/changelog" -S Version)
arch=$(dpkg --print-architecture)
deb=$T_DIR/miscfs_${version}_$arch.deb
mnt=$T_DIR/mnt img=$T_DIR/img
installed=

cleanup() {
	mountpoint -q "$mnt" && umount "$mnt"
	[ -n "$installed" ] && dpkg -P miscfs >/dev/null 2>&1
	t_cleanup
}
trap cleanup EXIT

# The tree as git sees it (tracked files and new ones not ignored): no
# build directory of the developer's goes into the package.
src=$T_DIR/miscfs-$version
mkdir "$src"
git -C "$SOURCE_ROOT" ls-files -z --cached --others --exclude-standard |
	(cd "$SOURCE_ROOT" && xargs -0 cp --parents -t "$src" 2>/dev/null) ||
	fail "copying the tree"
[ -f "$src/debian/rules" ] || fail "no debian/rules in the copy"

(cd "$src" && dpkg-buildpackage -us -uc -b) >"$T_DIR/build.log" 2>&1 ||
	{ tail -n 40 "$T_DIR/build.log"; fail "dpkg-buildpackage"; }
[ -f "$deb" ] || fail "no $deb: $(ls "$T_DIR")"
echo "built: $(basename "$deb"), $(stat -c %s "$deb") bytes"

# Lintian: no error (warnings and notes are printed, not fatal).
lintian --tag-display-limit 0 "$deb" >"$T_DIR/lintian.log" 2>&1
cat "$T_DIR/lintian.log"
grep -q '^E:' "$T_DIR/lintian.log" && fail "lintian reports errors"
echo "lintian: $(grep -c '^E:' "$T_DIR/lintian.log") errors, $(grep -c '^W:' "$T_DIR/lintian.log") warnings"

dpkg -i "$deb" >"$T_OUT" 2>&1 || { cat "$T_OUT"; fail "dpkg -i"; }
installed=1
dpkg -L miscfs >"$T_DIR/files"
for f in /usr/bin/miscfs /usr/bin/mkfs.miscfs /usr/bin/fsck.miscfs \
	/usr/bin/fsck.fuse.miscfs /usr/bin/miscfs-debug /usr/bin/miscfs-replay \
	/usr/share/man/man8/miscfs.8.gz /usr/share/man/man8/fsck.miscfs.8.gz \
	/usr/share/man/man8/fsck.fuse.miscfs.8.gz \
	/usr/share/doc/miscfs/FORMAT.md.gz /usr/share/doc/miscfs/copyright; do
	grep -qx "$f" "$T_DIR/files" || fail "the package has no $f"
done
[ "$(miscfs --version)" = "miscfs ${version%%-*}" ] || fail "miscfs --version: $(miscfs --version)"
echo "installed: $(grep -c . "$T_DIR/files") paths; $(grep -c '^/usr/bin/' "$T_DIR/files") programs:" \
	$(grep '^/usr/bin/' "$T_DIR/files" | sed 's|.*/||')

# The installed tools, found as an installation finds them: mkfs(8) and
# fsck(8) by type, the daemon by mount(8) through mount.fuse3, with the
# shell's default PATH (env -i).
env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin mkfs -t miscfs -q "$img" 32M >"$T_OUT" 2>&1 ||
	{ cat "$T_OUT"; fail "mkfs -t miscfs"; }
expect_status 0 env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin fsck -t miscfs -n "$img"
echo "ok: mkfs -t miscfs and fsck -t miscfs -n ran the installed tools"
mkdir "$mnt"
env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin mount -t fuse.miscfs "$img" "$mnt" >"$T_OUT" 2>&1 ||
	{ cat "$T_OUT"; fail "mount -t fuse.miscfs"; }
echo hello >"$mnt/f" || fail "write"
umount "$mnt" || fail "umount"
image_free "$img"
echo "ok: mount -t fuse.miscfs, a file written, umount"

# An fstab line (in a file of the test's own: mount -T).
echo "$img $mnt fuse.miscfs defaults,commit=1 0 0" >"$T_DIR/fstab"
env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin mount -T "$T_DIR/fstab" "$mnt" >"$T_OUT" 2>&1 ||
	{ cat "$T_OUT"; fail "mount through an fstab line"; }
[ "$(cat "$mnt/f")" = hello ] || fail "the file after the fstab mount"
umount "$mnt" || fail "umount (fstab)"
image_free "$img"
expect_status 0 env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin fsck -t fuse.miscfs -n "$img"
echo "ok: an fstab line mounted it, the file read back; fsck -t fuse.miscfs -n clean"

# Removed, every file of it gone.
dpkg -P miscfs >"$T_OUT" 2>&1 || { cat "$T_OUT"; fail "dpkg -P"; }
installed=
while read -r f; do
	[ -d "$f" ] && continue
	[ -e "$f" ] && fail "$f is left after dpkg -P"
done <"$T_DIR/files"
echo "ok: dpkg -P left none of its files"
echo "miscfs_${version}_$arch.deb: built, lintian clean of errors, installed, used, removed"
