#!/usr/bin/env bash
# Multi-mount protection of an image on an NBD server (nbdkit's file
# plugin on a Unix socket), made by mkfs.miscfs with stamps every second,
# so that a claim waits 2 x 1 + 1 = 3 s:
#   1. mkfs: on by default for an export, off for a file; -O and -E;
#   2. a second daemon on the same export (another host, as far as the
#      image can tell; no file lock reaches it) is refused, naming the
#      first, while the first runs; fsck -fy is refused too, fsck -fn warns;
#   3. after a clean unmount the second mount is accepted at once (one
#      claim's wait); after a kill -9 it waits for the stamps that do not
#      come, then mounts, and what was fsynced is there;
#   4. a node that finds its stamp overwritten (another node took the
#      image) writes nothing more: its writes fail, it says why, and the
#      block stays the other node's;
#   5. a damaged MMP block: the mount refuses and names it, fsck -fy
#      rewrites it, the mount goes on.
# The times of the claims are printed.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/mount.sh"
: "${FSCK:?FSCK must name fsck.miscfs}"
source "$(dirname "$0")/nbd.sh"
trap 'stop; stop2; unserve; t_cleanup' EXIT

mount_wait=90
mnt2=$T_DIR/mnt2
mkdir "$mnt2"
daemon2=
stop2() {
	[ -n "$daemon2" ] || return 0
	fusermount3 -u "$mnt2" 2>/dev/null || fusermount3 -u -z "$mnt2" 2>/dev/null
	wait "$daemon2" 2>/dev/null
	daemon2=
}

# refused ERRFILE: a second daemon on $uri and $mnt2 must exit non-zero
# without ever mounting, within 40 s.
refused() {
	"$MISCFS" "$uri" "$mnt2" -f 2>"$1" &
	daemon2=$!
	for _ in $(seq 400); do
		grep -q " $mnt2 fuse" /proc/self/mounts &&
			fail "a second daemon mounted the export (see $1)"
		kill -0 "$daemon2" 2>/dev/null || break
		sleep 0.1
	done
	kill -0 "$daemon2" 2>/dev/null && fail "the second daemon neither mounted nor left"
	wait "$daemon2" && fail "the second daemon exited 0"
	daemon2=
}

# ms since an earlier now_ms
now_ms() { echo $(($(date +%s%N) / 1000000)); }
mmp_field() { "$DEBUGFS" "$1" mmp | sed -n "s/^$2: //p"; }

# ---- 1. mkfs ------------------------------------------------------------------
file=$T_DIR/served.img
expect_status 0 "$MKFS" -q "$file" 64M
"$DEBUGFS" "$file" mmp >"$T_OUT"
expect_in "$T_OUT" "mmp: off"
expect_status 1 "$MKFS" -q -F -E mmp_update_interval=1 "$file" 64M
expect_in "$T_ERR" "needs multi-mount protection"
expect_status 1 "$MKFS" -q -F -O mmp -E mmp_update_interval=301 "$file" 64M
expect_in "$T_ERR" "mmp_update_interval=301"
expect_status 1 "$MKFS" -q -F -O frobnicate "$file" 64M
expect_in "$T_ERR" "unknown feature"
serve file file "$file"
if ! "$MKFS" -q -F -E mmp_update_interval=1 "$uri" 2>"$T_ERR"; then
	grep -q "no NBD support" "$T_ERR" && skip "built without libnbd"
	cat "$T_ERR" >&2
	fail "mkfs.miscfs $uri"
fi
[ "$(mmp_field "$uri" state)" = clean ] || fail "a new export's MMP block is not clean"
[ "$(mmp_field "$uri" interval)" = 1 ] || fail "the interval is not 1 s"
"$DEBUGFS" "$uri" super | grep -q "^mmp interval: 1$" || fail "super shows no MMP interval"
# fsck counts the block as used (else pass 5 would free it for files).
expect_status 0 "$FSCK" -fn "$uri"

# ---- 2. a second mount while the first runs -------------------------------------
img=$uri
t0=$(now_ms)
start
first_ms=$(($(now_ms) - t0))
grep -q "multi-mount protection: waiting 3 s" "$T_DIR/daemon.err" ||
	{ cat "$T_DIR/daemon.err"; fail "the mount did not say what it waited for"; }
echo hello >"$mnt/f" && sync "$mnt/f" || fail "writing through the first mount"
[ "$(mmp_field "$uri" program)" = miscfs ] || fail "the MMP block does not name miscfs"

t0=$(now_ms)
refused "$T_DIR/daemon2.err"
refused_ms=$(($(now_ms) - t0))
grep -q "in use by miscfs (pid $daemon) on node" "$T_DIR/daemon2.err" ||
	{ cat "$T_DIR/daemon2.err"; fail "the refusal does not name the first daemon"; }
mounted || fail "the first mount is gone"

expect_status 8 "$FSCK" -fy "$uri"
expect_in "$T_ERR" "in use by miscfs (pid $daemon)"
rc=0
"$FSCK" -fn "$uri" >"$T_OUT" 2>"$T_ERR" || rc=$?
[ "$rc" -lt 8 ] || { cat "$T_ERR"; fail "fsck -fn exited $rc"; }
expect_in "$T_ERR" "may be in use by miscfs (pid $daemon)"
mounted || fail "the first mount is gone after fsck"
[ "$(cat "$mnt/f")" = hello ] || fail "the file changed"

# ---- 3. after a clean unmount, and after a kill -----------------------------------
unmount
[ "$(mmp_field "$uri" state)" = clean ] || fail "the unmount did not release the MMP block"
t0=$(now_ms)
start
clean_ms=$(($(now_ms) - t0))
dd if=/dev/urandom of="$T_DIR/g" bs=64k count=4 status=none
dd if="$T_DIR/g" of="$mnt/g" bs=64k conv=fsync status=none || fail "writing g"
first_pid=$daemon
kill_daemon
mmp_field "$uri" state | grep -q "in use" || fail "a killed daemon's MMP block says clean"
t0=$(now_ms)
start
killed_ms=$(($(now_ms) - t0))
grep -q "miscfs (pid $first_pid) on node .* was not released: waiting 3 s" \
	"$T_DIR/daemon.err" || { cat "$T_DIR/daemon.err"; fail "no word of the wait"; }
cmp "$T_DIR/g" "$mnt/g" || fail "the fsynced file after the kill"

# ---- 4. another node takes the image --------------------------------------------
# A stamp of the past put back: to this daemon, another node's stamp.  A
# file written just before, still in the running transaction (commit=60),
# must not reach the image afterwards, not even by the unmount.
unmount
start -o commit=60
blk=$(mmp_field "$uri" "mmp block")
bs=$("$DEBUGFS" "$uri" super | sed -n 's/^block size: //p')
dd if="$file" of="$T_DIR/stamp" bs="$bs" skip="$blk" count=1 status=none
mmp_block() { dd if="$file" bs="$bs" skip="$blk" count=1 status=none; }
# Until the daemon has stamped again, the saved stamp is its newest.
for _ in $(seq 600); do
	cmp -s "$T_DIR/stamp" <(mmp_block) || break
	sleep 0.1
done
cmp -s "$T_DIR/stamp" <(mmp_block) && fail "the daemon stamped nothing in 60 s"
head -c 100000 /dev/urandom >"$mnt/pending" || fail "writing pending"
# Put back again on each pass: a stamp of the daemon's may have read the
# block before ours landed and written over it.
for _ in $(seq 300); do
	dd if="$T_DIR/stamp" of="$file" bs="$bs" seek="$blk" conv=notrunc,fsync status=none
	grep -q "multi-mount protection: the MMP block was written by" "$T_DIR/daemon.err" &&
		break
	sleep 0.1
done
grep -q "multi-mount protection: the MMP block was written by" "$T_DIR/daemon.err" ||
	{ cat "$T_DIR/daemon.err"; fail "the daemon did not see its stamp overwritten"; }
cp "$file" "$T_DIR/taken"
rc=0
{ echo lost >"$mnt/h" && sync "$mnt/h"; } 2>/dev/null || rc=1
[ "$rc" -ne 0 ] || fail "a write after the image was lost succeeded"
stop
cmp "$T_DIR/stamp" <(dd if="$file" bs="$bs" skip="$blk" count=1 status=none) ||
	fail "the daemon wrote the MMP block after it lost the image"
cmp "$T_DIR/taken" "$file" || fail "the daemon wrote to the image after it lost it"

# ---- 5. a damaged MMP block ---------------------------------------------------------
# The stamp put back above claims a dead daemon: fsck -fy takes it over
# (and replays what the journal holds).
rc=0
"$FSCK" -fy "$uri" >"$T_OUT" 2>"$T_ERR" || rc=$?
[ "$rc" -le 1 ] || { cat "$T_OUT" "$T_ERR"; fail "fsck -fy after the loss exited $rc"; }
[ "$(mmp_field "$uri" state)" = clean ] || fail "fsck did not release the MMP block"
printf 'X' | dd of="$file" bs=1 seek=$((blk * bs + 40)) conv=notrunc status=none
mount_fail=$T_DIR/mount.err
refused "$mount_fail"
grep -q "MMP block $blk: bad checksum; run fsck.miscfs" "$mount_fail" ||
	{ cat "$mount_fail"; fail "the refusal does not name the damaged block"; }
rc=0
"$FSCK" -fy "$uri" >"$T_OUT" 2>"$T_ERR" || rc=$?
[ "$rc" -eq 1 ] || { cat "$T_OUT" "$T_ERR"; fail "fsck -fy exited $rc"; }
expect_in "$T_OUT" "the MMP block $blk is damaged"
expect_status 0 "$FSCK" -fn "$uri"
start
[ "$(cat "$mnt/f")" = hello ] || fail "f after the repair"
unmount

echo "ok: claims of an export with 1 s stamps: a first mount ${first_ms} ms," \
	"a second refused in ${refused_ms} ms, after a clean unmount ${clean_ms} ms," \
	"after a kill -9 ${killed_ms} ms"
exit 0
