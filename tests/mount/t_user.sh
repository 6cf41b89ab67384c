#!/usr/bin/env bash
# A user who is not root (nobody) makes, mounts, uses, unmounts and checks
# an image of their own on a directory of their own, through the set-uid
# fusermount3, as on stock Debian: the mount is theirs (root is kept out
# of it without allow_other), the image lock holds against root, and
# allow_other is refused in one clear line, before the image is touched,
# unless /etc/fuse.conf says user_allow_other (shown in a mount namespace
# of the test's own whose /etc/fuse.conf says it).
#
# Where /dev/fuse is tighter than Debian's 0666 the test opens it up for
# its run and puts the mode back at the end.
source "$(dirname "$0")/../lib.sh"
: "${MISCFS:?MISCFS must name the daemon}"
: "${FSCK:?FSCK must name fsck.miscfs}"

[ "$(id -u)" = 0 ] || skip "becoming another user needs root"
[ -c /dev/fuse ] || skip "no /dev/fuse"
command -v setpriv >/dev/null || skip "no setpriv"
fm=$(command -v fusermount3) || skip "no fusermount3"
[ -u "$fm" ] || skip "fusermount3 is not set-uid"
uid=$(id -u nobody) gid=$(id -g nobody) || skip "no user nobody"

fuse_mode=$(stat -c %a /dev/fuse)
restore() { chmod "$fuse_mode" /dev/fuse; }
[ "$fuse_mode" = 666 ] || chmod 0666 /dev/fuse

# The user's world: the programs and a home they own, under a directory
# they can reach.
chmod 0755 "$T_DIR"
bin=$T_DIR/bin home=$T_DIR/home
mkdir "$bin" "$home"
cp "$MKFS" "$bin/mkfs.miscfs"
cp "$MISCFS" "$bin/miscfs"
cp "$FSCK" "$bin/fsck.miscfs"
chown "$uid:$gid" "$home"
img=$home/img mnt=$home/mnt
daemon=

as_user() {
	setpriv --reuid="$uid" --regid="$gid" --clear-groups --inh-caps=-all \
		env HOME="$home" PATH="$bin:/usr/bin:/bin" "$@"
}
mounted() { grep -q " $mnt fuse" /proc/self/mounts; }
cleanup() {
	mounted && { fusermount3 -u "$mnt" 2>/dev/null || umount -l "$mnt"; }
	[ -n "$daemon" ] && wait "$daemon" 2>/dev/null
	restore
	t_cleanup
}
trap cleanup EXIT

# start OPTIONS: the daemon as the user, in the foreground, our child.
start() {
	as_user miscfs "$img" "$mnt" -f "$@" 2>"$T_DIR/daemon.err" &
	daemon=$!
	for _ in $(seq 500); do
		mounted && return 0
		[ -d "/proc/$daemon" ] || { cat "$T_DIR/daemon.err"; fail "the daemon exited"; }
		sleep 0.02
	done
	fail "not mounted after 10 s"
}
stop() {
	as_user fusermount3 -u "$mnt" || fail "fusermount3 -u as the user"
	local rc=0
	wait "$daemon" || rc=$?
	daemon=
	[ "$rc" -eq 0 ] || { cat "$T_DIR/daemon.err"; fail "the daemon exited $rc"; }
}

expect_status 0 as_user mkfs.miscfs -q "$img" 32M
as_user mkdir "$mnt" || fail "mkdir as the user"
[ "$(stat -c %u "$img")" = "$uid" ] || fail "the image is not the user's"

start
grep " $mnt " /proc/self/mounts | grep -q "nosuid,nodev" ||
	fail "a user's mount is not nosuid,nodev: $(grep " $mnt " /proc/self/mounts)"
as_user sh -c "echo hello >'$mnt/f' && mkdir -p '$mnt/d/e' && cp '$bin/miscfs' '$mnt/d/e/big'" ||
	fail "writing as the user"
as_user cmp "$bin/miscfs" "$mnt/d/e/big" || fail "reading back as the user"
[ "$(as_user stat -c %u:%g "$mnt/f")" = "$uid:$gid" ] || fail "a new file is not the user's"
# Without allow_other the kernel keeps every other user out, root too.
stat "$mnt/f" >/dev/null 2>&1 && fail "root reached into a user's mount"

# The image lock holds between users: root's daemon and fsck are refused.
expect_status 1 "$MISCFS" "$img" "$T_DIR" -f
expect_in "$T_ERR" "in use by another miscfs daemon"
expect_status 8 "$FSCK" -fy "$img"
expect_in "$T_ERR" "is in use"
stop

expect_status 0 as_user fsck.miscfs -fn "$img"

# allow_other: refused in one line where fuse.conf does not allow it.
if grep -qx '[[:space:]]*user_allow_other[[:space:]]*' /etc/fuse.conf 2>/dev/null; then
	echo "/etc/fuse.conf has user_allow_other: its refusal is not tried"
else
	# Refused before the image is touched: no replay, no mount count.
	cp "$img" "$T_DIR/img.before"
	expect_status 1 as_user miscfs "$img" "$mnt" -f -o allow_other
	expect_in "$T_ERR" "user_allow_other"
	[ "$(wc -l <"$T_ERR")" -eq 1 ] || fail "more than one line: $(cat "$T_ERR")"
	mounted && fail "mounted with allow_other"
	cmp -s "$img" "$T_DIR/img.before" || fail "a refused allow_other changed the image"
fi

# ... and taken where it does: in a mount namespace of the test's own,
# whose /etc/fuse.conf says user_allow_other, root reads the user's mount.
echo user_allow_other >"$T_DIR/fuse.conf"
chmod 0644 "$T_DIR/fuse.conf"
unshare -m --propagation private bash -s "$T_DIR" "$uid" "$gid" "$img" "$mnt" "$bin" >"$T_OUT" 2>&1 <<'EOF' ||
set -u
dir=$1 uid=$2 gid=$3 img=$4 mnt=$5 bin=$6
mount --bind "$dir/fuse.conf" /etc/fuse.conf || exit 3
setpriv --reuid="$uid" --regid="$gid" --clear-groups --inh-caps=-all \
	"$bin/miscfs" "$img" "$mnt" -o allow_other || exit 4
cat "$mnt/f" || exit 5
setpriv --reuid="$uid" --regid="$gid" --clear-groups --inh-caps=-all \
	fusermount3 -u "$mnt" || exit 6
EOF
	fail "allow_other with user_allow_other (exit $?): $(cat "$T_OUT")"
expect_in "$T_OUT" "hello"
image_free "$img"
expect_status 0 as_user fsck.miscfs -fn "$img"
echo "a user mounted, used, unmounted and checked an image; root was kept out and locked out"
