#!/usr/bin/env bash
# The host's filesystem fills under the image: an image of 32 MiB
# (sparse) on a tmpfs of 8 MiB, mounted with the default options, its
# journal allocated on the host (mkfs's default) or sparse (-E
# lazy_journal_init).  Whatever fails fails with ENOSPC, EIO or EROFS,
# never a hang, never a crash of the daemon, and at most one log line
# says the journal aborted; a copy of the image on a roomier host is
# repaired by fsck -fy, passes fsck -fn, and mounts with every file whose
# fsync returned 0 holding exactly what was fsynced.
#
# fill: the daemon fills the host itself with files written and
# fsynced.  With the journal allocated, the log never fails: the data on
# its way home does.
#
# region: a reserved region is a shared mapping of the image, and a store
# into a hole of it that the host has no room for is SIGBUS, which kills
# the daemon.  mkfs allocates the regions; the mount allocates a region
# it finds sparse (in a sparse copy of the image, say) or, when the host
# has no room for it, refuses in one line.
#
# under: files fsynced and unmounted (everything home), then the host is
# filled from outside and the files are rewritten in place with fsync
# until the log has gone round at least once.  With the journal allocated every
# rewrite succeeds; with a sparse one the first commit that reaches an
# unwritten log block aborts the journal.  Then, allocated, a file
# written without fsync: its data pages fail on their way home in
# ordered mode (the commit's writeback of them), the journal aborts,
# and fsync of the file fails.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/mount.sh"

py=/usr/bin/python3
[ -x "$py" ] || py=$(command -v python3) || skip "no python3"
driver=$(dirname "$0")/host_full.py
[ "$(id -u)" = 0 ] || skip "mounting a tmpfs needs root"

host=$T_DIR/host
mkdir "$host"
mount -t tmpfs -o size=8M,mode=0700 miscfs-host "$host" || skip "cannot mount a tmpfs"
img=$host/img
umount_host() {
	mounted && { fusermount3 -u -z "$mnt" 2>/dev/null || umount -l "$mnt"; }
	umount "$host" 2>/dev/null || umount -l "$host"
}
trap 'stop; umount_host; t_cleanup' EXIT

state=$T_DIR/state.json
jblocks=1024                  # the journal of a 32 MiB image, 4 KiB blocks

# drive ARGS...: the workload, which must neither hang nor break its
# contract; its output in $T_OUT.
drive() {
	local rc=0
	timeout -s KILL 300 "$py" "$driver" "$state" "$@" >"$T_OUT" 2>"$T_ERR" || rc=$?
	cat "$T_OUT"
	[ "$rc" -eq 137 ] && fail "'$*' hung (killed after 300 s)"
	[ "$rc" -eq 0 ] || { cat "$T_ERR"; tail -5 "$T_DIR/daemon.err"; fail "'$*': $(cat "$T_ERR")"; }
	return 0
}

# fresh KIND [MKFS OPTIONS...]: an empty host holding a new image, its
# journal KIND.
fresh() {
	local opt=() used kind=$1
	shift
	rm -f "$host"/* "$state"
	[ "$kind" = sparse ] && opt=(-E lazy_journal_init)
	expect_status 0 "$MKFS" -q "${opt[@]}" "$@" "$img" 32M
	used=$(du -k "$img" | cut -f1)
	if [ "$kind" = allocated ]; then
		[ "$used" -ge $((jblocks * 4)) ] || fail "$used KiB on the host: the journal is not allocated"
	else
		[ "$used" -lt 1024 ] || fail "$used KiB on the host: the journal is not sparse"
	fi
}

# fill_host: the rest of the host taken by another file.
fill_host() {
	dd if=/dev/zero of="$host/filler" bs=4k 2>/dev/null && fail "the host never filled"
	[ "$(df -k --output=avail "$host" | tail -1)" -eq 0 ] || fail "room left on the host"
}

# finish NAME: the daemon, still alive, unmounted; it exits on its own
# (1 after an abort), never killed by a signal: its status in
# $daemon_rc, its log kept in NAME.err.
finish() {
	local rc=0
	daemon_gone && { cat "$T_DIR/daemon.err"; fail "the daemon died"; }
	fusermount3 -u "$mnt" || fail "fusermount3 -u"
	for _ in $(seq 600); do daemon_gone && break; sleep 0.1; done
	daemon_gone || fail "the daemon did not exit within 60 s of the unmount"
	wait "$daemon" || rc=$?
	daemon=
	echo "$1: the daemon exited $rc"
	daemon_rc=$rc
	cp "$T_DIR/daemon.err" "$T_DIR/$1.err"
	[ "$rc" -le 1 ] || { cat "$T_DIR/$1.err"; fail "the daemon exited $rc"; }
	grep -qE 'Sanitizer|runtime error|Bus error|Segmentation' "$T_DIR/$1.err" &&
		{ cat "$T_DIR/$1.err"; fail "the daemon crashed"; }
	[ "$(grep -c 'journal aborted:' "$T_DIR/$1.err")" -le 1 ] ||
		{ cat "$T_DIR/$1.err"; fail "the abort was logged more than once"; }
	return 0
}

# verify NAME: a copy of the image on a roomier host, repaired, clean,
# mounted, and every fsynced file in it intact.
verify() {
	local saved=$img rc=0
	cp --sparse=always "$img" "$T_DIR/copy"
	"$FSCK" -fy "$T_DIR/copy" >"$T_OUT" 2>&1 || rc=$?
	[ "$rc" -le 1 ] || { cat "$T_OUT"; fail "$1: fsck -fy exited $rc"; }
	if grep -q 'journal aborted:' "$T_DIR/$1.err"; then
		expect_in "$T_OUT" "the journal recorded an abort"
	fi
	expect_status 0 "$FSCK" -fn "$T_DIR/copy"
	img=$T_DIR/copy
	start
	drive verify "$mnt"
	unmount
	img=$saved
	rm -f "$T_DIR/copy"
}

# The daemon fills the host with files of 256 KiB, each fsynced: the
# last one's data (one request of contiguous blocks) meets the end of
# the host's room half-way, a short write.
for kind in allocated sparse; do
	fresh $kind
	start
	drive fill "$mnt" f 262144 100 --until-fail
	finish fill-$kind
	grep 'journal aborted:' "$T_DIR/fill-$kind.err"
	if [ $kind = allocated ]; then
		grep -q 'journal aborted: commit failed' "$T_DIR/fill-$kind.err" &&
			fail "the allocated log failed: $(grep 'journal aborted:' "$T_DIR/fill-$kind.err")"
	fi
	verify fill-$kind
done

# A region on a full host.
fresh allocated -R blob:1M
expect_status 0 "$DEBUGFS" "$img" regions
blob=$(sed -n 's/^region blob: start \([0-9]*\), .*/\1/p' "$T_OUT")
[ -n "$blob" ] || { cat "$T_OUT"; fail "no region blob"; }
blob=$((blob * 4096))
fallocate -p -o $blob -l 1M "$img" || fail "punching the region out"
fill_host
expect_status 1 timeout 30 "$MISCFS" "$img" "$mnt" -f
expect_in "$T_ERR" "cannot allocate region [$blob, $((blob + (1 << 20)))) of $img on its host: No space left on device"
mounted && fail "mounted over a region the host cannot hold"
rm "$host/filler"
start
fill_host
head -c 1M /dev/urandom >"$T_DIR/blob"
dd if="$T_DIR/blob" of="$mnt/.regions/blob" bs=64k conv=notrunc,fsync status=none ||
	fail "writing the region on a full host"
finish region
[ "$daemon_rc" -eq 0 ] || { cat "$T_DIR/region.err"; fail "the unmount failed"; }
cmp <(dd if="$img" bs=4k skip=$((blob / 4096)) count=256 status=none) "$T_DIR/blob" ||
	fail "the region's bytes in the image"

# The host fills under the mounted image.
for kind in allocated sparse; do
	fresh $kind
	start
	drive fill "$mnt" g 131072 8
	unmount
	start
	fill_host
	logged=$(stat_of jnl_blocks_logged)
	if [ $kind = allocated ]; then
		drive rewrite "$mnt" 160
		logged=$(( $(stat_of jnl_blocks_logged) - logged ))
		echo "$logged blocks logged by the rewrites"
		[ "$logged" -gt "$jblocks" ] || fail "$logged blocks logged: the log did not go round"
		grep 'journal aborted:' "$T_DIR/daemon.err" && fail "the journal aborted"
		# Data that only writeback sends home (the commit's ordered
		# data); fsync of it afterwards.
		drive late "$mnt" late 262144 "$T_DIR/daemon.err"
		expect_in "$T_DIR/daemon.err" \
			"journal aborted: writing a commit's ordered data failed: No space left on device"
	else
		drive rewrite "$mnt" 160 --until-fail
		expect_in "$T_DIR/daemon.err" "journal aborted: commit failed: No space left on device"
	fi
	drive fill "$mnt" h 65536 8 --until-fail
	finish under-$kind
	verify under-$kind
done
echo ok
