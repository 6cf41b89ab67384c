#!/usr/bin/env bash
# A real mount through /dev/fuse: mkfs, the daemon in the foreground as
# our child, ordinary programs on the mount, a second daemon refused,
# fusermount3 -u, and the daemon exiting 0 with the image left clean.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/mount.sh"

expect_status 0 "$MKFS" -q -F "$img" 32M
start -o cache_size=8M,data=ordered,commit=1,relatime,nodev,nosuid,default_permissions

ls -la "$mnt" >"$T_OUT" || fail "ls"
expect_in "$T_OUT" "lost+found"
[ "$(stat -c %F "$mnt/lost+found")" = directory ] || fail "stat lost+found"
[ "$(stat -c %i "$mnt/lost+found")" = 11 ] || fail "inode of lost+found"
grep " $mnt " /proc/self/mounts | grep -q "^$img " || fail "fsname is not the image"

echo "hello, miscfs" >"$mnt/hello" || fail "write"
[ "$(cat "$mnt/hello")" = "hello, miscfs" ] || fail "cat"
mkdir -p "$mnt/a/b/c" || fail "mkdir -p"
head -c 300000 /dev/urandom >"$T_DIR/big"
cp "$T_DIR/big" "$mnt/a/b/c/big" || fail "cp"
cmp "$T_DIR/big" "$mnt/a/b/c/big" || fail "cmp"
ln -s a/b/c/big "$mnt/link" || fail "symlink"
[ "$(readlink "$mnt/link")" = a/b/c/big ] || fail "readlink"
df "$mnt" >/dev/null || fail "df"

# A second daemon on the same image is refused in one line.
expect_status 1 "$MISCFS" "$img" "$T_DIR" -f
expect_in "$T_ERR" "in use by another miscfs daemon"
[ "$(wc -l <"$T_ERR")" -eq 1 ] || fail "more than one line: $(cat "$T_ERR")"

# An unknown data mode is refused with a clear message.
expect_status 2 "$MISCFS" "$img" "$T_DIR" -f -o data=everything
expect_in "$T_ERR" "data=everything: unknown data mode"

unmount
expect_status 0 "$DEBUGFS" "$img" super
[ "$(field state)" = clean ] || fail "state $(field state)"
expect_status 0 "$DEBUGFS" "$img" verify
expect_in "$T_OUT" "problems: 0"

# Mount again: everything is still there.
start -o ro
cmp "$T_DIR/big" "$mnt/a/b/c/big" || fail "cmp after remount"
[ "$(cat "$mnt/hello")" = "hello, miscfs" ] || fail "cat after remount"
touch "$mnt/new" 2>/dev/null && fail "wrote to a read-only mount"
unmount

# The atime options mount(8) and fstests pass: nodiratime keeps a
# directory's atime while a file's still moves (relatime, the default
# again after "atime"); the options with nothing to do are accepted.
start -o nodiratime,atime,lazytime,async,nomand
mkdir "$mnt/d" && echo x >"$mnt/d/f" || fail "mkdir"
dir_at=$(stat -c %x "$mnt/d"); file_at=$(stat -c %x "$mnt/d/f")
sleep 1.2
ls "$mnt/d" >/dev/null && cat "$mnt/d/f" >/dev/null || fail "ls, cat"
sleep 1.2
[ "$(stat -c %x "$mnt/d")" = "$dir_at" ] || fail "nodiratime: the directory's atime moved"
[ "$(stat -c %x "$mnt/d/f")" != "$file_at" ] || fail "the file's atime did not move"
unmount

# A mount right after an unmount, while the first daemon may still be
# writing back, waits for it rather than failing.
start
head -c 20000000 /dev/urandom >"$mnt/wb" || fail "write"
old=$daemon
fusermount3 -u "$mnt" || fail "fusermount3 -u"
start
wait "$old" || fail "the first daemon exited $?"
cmp -n 20000000 "$mnt/wb" "$mnt/wb" || fail "read back"
[ "$(stat -c %s "$mnt/wb")" = 20000000 ] || fail "size after the second mount"
unmount

# -o remount (mount(8) runs the daemon with it) changes the kernel mount's
# flags and leaves the rest as it was; no second daemon starts.
if [ "$(id -u)" = 0 ]; then
	start -o nosuid,nodev
	expect_status 0 "$MISCFS" "$img" "$mnt" -o remount,ro
	opts=$(awk -v m="$mnt" '$2 == m { print $4 }' /proc/self/mounts)
	case ",$opts," in *,ro,*nosuid,nodev,*) ;; *) fail "after remount,ro: $opts" ;; esac
	touch "$mnt/ro" 2>/dev/null && fail "wrote after remount,ro"
	[ "$(cat "$mnt/hello")" = "hello, miscfs" ] || fail "cat after remount,ro"
	expect_status 0 "$MISCFS" "$img" "$mnt" -o remount,rw
	touch "$mnt/rw" || fail "no write after remount,rw"
	unmount
fi

# Mounted by root without nodev, a device file works as on a kernel
# filesystem.
if [ "$(id -u)" = 0 ]; then
	start
	mknod "$mnt/null" c 1 3 && chmod 666 "$mnt/null" || fail "mknod"
	echo fred >"$mnt/null" || fail "a device file on a mount without nodev"
	unmount
fi
