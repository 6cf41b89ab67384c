#!/usr/bin/env bash
# Images on an NBD server (nbdkit on a Unix socket), through every tool:
#   1. memory plugin: mkfs.miscfs, a mount, mfsx through it, unmount,
#      fsck.miscfs -fn and miscfs-debug verify, all by URI;
#   2. file plugin: a mount recording a write log; files written and
#      fsynced; miscfs-replay of the log from the image before the mount,
#      into an export, equals the image the server holds;
#   3. a reserved region of an image on a server (a copy in the daemon's
#      memory): what is written into it reaches the served file at the
#      region's offset by fsync, and reads back after a new mount;
#   4. the server killed while files are being written: the writes fail
#      with EIO, a log line names the lost server, the daemon does not
#      crash and unmounts, and the journal aborts (or, with nothing left
#      to commit, the unmount says it leaves the journal to replay);
#      served again from
#      the same file, the image mounts, and every file fsynced before the
#      kill is there, whole; fsck -fn finds it clean.
# Skipped where nbdkit is missing or the build has no libnbd.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/mount.sh"
: "${FSCK:?FSCK must name fsck.miscfs}"
: "${REPLAY:?REPLAY must name miscfs-replay}"
: "${MFSX:?MFSX must name mfsx}"
source "$(dirname "$0")/nbd.sh"
trap 'stop; unserve; t_cleanup' EXIT

serve mem memory 256M
# Multi-mount protection (on for an export) stamps every second, so that a
# mount waits 3 s for another node's stamp instead of 11.
if ! "$MKFS" -q -E mmp_update_interval=1 "$uri" 2>"$T_DIR/mkfs.err"; then
	grep -q "no NBD support" "$T_DIR/mkfs.err" && skip "built without libnbd"
	cat "$T_DIR/mkfs.err" >&2
	fail "mkfs.miscfs $uri"
fi

# ---- 1. memory plugin: mkfs, mfsx, fsck ------------------------------------
img=$uri
start -o cache_size=16M
"$MFSX" -N "${NBD_FSX_OPS:-10000}" -S 1 "$mnt" >"$T_DIR/mfsx.out" 2>&1 ||
	{ cat "$T_DIR/mfsx.out" >&2; fail "mfsx through the NBD export"; }
unmount
expect_status 0 "$FSCK" -fn "$uri"
expect_status 0 "$DEBUGFS" "$uri" verify
expect_in "$T_OUT" "problems: 0"
unserve
echo "ok: mkfs, ${NBD_FSX_OPS:-10000} mfsx operations, fsck and verify through nbd+unix://"

# ---- 2. file plugin: a write log replayed into an export --------------------
file=$T_DIR/served.img
expect_status 0 "$MKFS" -q "$file" 64M
cp "$file" "$T_DIR/base.img"
serve file file "$file"
img=$uri
start -o writelog="$T_DIR/w.log"
for i in 1 2 3 4 5; do
	head -c $((i * 70000)) /dev/urandom >"$mnt/f$i"
done
sync
unmount
unserve
serve out memory 64M
expect_status 0 "$REPLAY" "$T_DIR/base.img" "$T_DIR/w.log" "$uri"
expect_status 0 "$REPLAY" "$T_DIR/base.img" "$T_DIR/w.log" "$T_DIR/replayed.img"
cmp "$file" "$T_DIR/replayed.img" || fail "the replayed file differs from the served image"
expect_status 0 "$FSCK" -fn "$uri"
unserve
echo "ok: a write log replayed into an NBD export and into a file"

# ---- 3. a reserved region ----------------------------------------------------
expect_status 0 "$MKFS" -q -F -R blob:1M "$file" 64M
expect_status 0 "$DEBUGFS" "$file" regions
start_blk=$(sed -n 's/^region blob: start \([0-9]*\), .*/\1/p' "$T_OUT")
[ -n "$start_blk" ] || { cat "$T_OUT"; fail "no region blob in miscfs-debug"; }
head -c 300000 /dev/urandom >"$T_DIR/blob.data"
serve file file "$file"
img=$uri
start
python3 - "$mnt/.regions/blob" "$T_DIR/blob.data" <<'EOF'
import os, sys
data = open(sys.argv[2], "rb").read()
fd = os.open(sys.argv[1], os.O_WRONLY)
os.pwrite(fd, data, 12345)
os.fsync(fd)
os.close(fd)
EOF
# fsync has written it to the server, before any unmount.
cmp "$T_DIR/blob.data" <(dd if="$file" bs=1 skip=$((start_blk * 4096 + 12345)) \
	count=300000 status=none) || fail "the region's bytes did not reach the server by fsync"
unmount
start
cmp "$T_DIR/blob.data" <(dd if="$mnt/.regions/blob" bs=1 skip=12345 count=300000 \
	status=none) || fail "the region's bytes did not come back"
unmount
unserve
echo "ok: a reserved region of an image on a server, written, fsynced and read back"

# ---- 4. the server killed mid-write ------------------------------------------
expect_status 0 "$MKFS" -q -F "$file" 64M
serve file file "$file"
img=$uri
start
mkdir "$mnt/kept"
for i in $(seq 20); do
	head -c 50000 /dev/urandom >"$mnt/kept/k$i"
done
# fsync each (sync(2) and syncfs(2) reach no FUSE daemon but virtiofs's):
# the commits make the directory and every file durable.
sync "$mnt"/kept/k* "$mnt/kept" || fail "fsync of the kept files"
( cd "$mnt/kept" && md5sum k* ) >"$T_DIR/kept.md5"
# A writer that keeps going until the server is gone.
python3 - "$mnt" >"$T_DIR/writer.out" 2>&1 <<'EOF' &
import errno, os, sys
mnt = sys.argv[1]
n = 0
try:
    while n < 100000:
        with open(os.path.join(mnt, "w%d" % (n % 50)), "wb") as f:
            f.write(os.urandom(40000))
            os.fsync(f.fileno())
        n += 1
    print("never failed")
except OSError as e:
    print("stopped by", errno.errorcode.get(e.errno, e.errno), "after", n, "files")
EOF
writer=$!
sleep 1
unserve
wait "$writer"
grep -q "stopped by EIO" "$T_DIR/writer.out" ||
	{ cat "$T_DIR/writer.out" >&2; fail "the writer did not stop with EIO"; }
daemon_gone && { cat "$T_DIR/daemon.err" >&2; fail "the daemon died with its server"; }
grep -q "connection to the NBD server lost" "$T_DIR/daemon.err" ||
	{ cat "$T_DIR/daemon.err" >&2; fail "no log line names the lost server"; }
fusermount3 -u "$mnt" || fail "fusermount3 -u after the server went"
wait "$daemon"
# A change made after the loss is committed at the latest by the unmount,
# which aborts the journal; with none, the unmount cannot mark the image
# clean and says the journal will be replayed.
if grep -q "journal aborted" "$T_DIR/daemon.err"; then
	ended="the journal aborted"
elif grep -q "unmount failed; the journal will be replayed" "$T_DIR/daemon.err"; then
	ended="nothing was left to commit, the unmount left the journal to replay"
else
	cat "$T_DIR/daemon.err" >&2
	fail "neither did the journal abort nor did the unmount say it failed"
fi
daemon=
serve file file "$file"
img=$uri
start
( cd "$mnt/kept" && md5sum -c --quiet "$T_DIR/kept.md5" ) ||
	fail "files fsynced before the server went are not whole"
unmount
expect_status 0 "$FSCK" -fn "$uri"
unserve
echo "ok: $(cat "$T_DIR/writer.out"); $ended; the daemon unmounted," \
	"and after the server came back every fsynced file was whole"
