#!/usr/bin/env bash
# fsck.miscfs beside a real daemon: a repair refuses a mounted image, -n
# warns and checks; after kill -9, -n says the journal needs recovery and
# writes nothing, preening replays it; an entry name of any bytes comes
# through the JSON report exactly.
source "$(dirname "$0")/../lib.sh"
: "${FSCK:?FSCK must name fsck.miscfs}"
source "$(dirname "$0")/../mount/mount.sh"

name=$'we\x01ird\xff\xc3\xa9'                  # a control byte, not UTF-8, é
expect_status 0 "$MKFS" -q -F "$img" 32M
start -o commit=60

# Mounted: a repair refuses (8), -n warns and checks.
for opt in -y -fy -p -fp; do
	expect_status 8 "$FSCK" $opt "$img"
	expect_in "$T_ERR" "$img is in use (mounted on $mnt)"
done
st=0
"$FSCK" -fn "$img" >"$T_OUT" 2>"$T_ERR" || st=$?
[ $st -eq 0 ] || [ $st -eq 4 ] || fail "-fn on a mounted image exited $st: $(cat "$T_ERR")"
expect_in "$T_ERR" "$img is in use (mounted by a miscfs daemon?): it may change"
expect_in "$T_OUT" "Pass 5: "

# Killed after a commit: the journal needs recovery.
echo data >"$mnt/$name" || fail "create"
sync "$mnt/$name" || fail "fsync"
kill_daemon
cp "$img" "$T_DIR/before"
expect_status 4 "$FSCK" -n -j "$T_DIR/r.json" "$img"
expect_in "$T_OUT" "the journal needs recovery, which a read-only check does not do"
# said before the passes
[ "$(grep -n 'which a read-only check' "$T_OUT" | cut -d: -f1)" -lt \
  "$(grep -n '^Pass 0' "$T_OUT" | cut -d: -f1)" ] || fail "order: $(cat "$T_OUT")"
cmp -s "$img" "$T_DIR/before" || fail "-n changed the image"
python3 -c 'import json,sys; d = json.load(open(sys.argv[1]));
assert d["needs_recovery"] and not d["recovered"] and d["exit"] == 4, d' "$T_DIR/r.json" ||
	fail "report: $(cat "$T_DIR/r.json")"

expect_status 1 "$FSCK" -p -j "$T_DIR/r.json" "$img"
expect_in "$T_OUT" "$img: ***** FILE SYSTEM WAS MODIFIED *****"
python3 -c 'import json,sys; d = json.load(open(sys.argv[1]));
assert d["recovered"] and d["changed"] and d["exit"] == 1, d' "$T_DIR/r.json" ||
	fail "report: $(cat "$T_DIR/r.json")"
expect_status 0 "$FSCK" -fn "$img"

# The file's inode zeroed: its entry names a free inode, by its name.
expect_status 0 "$DEBUGFS" "$img" ls /
ino=$(grep -a " file we" "$T_OUT" | cut -d' ' -f1)
[ -n "$ino" ] || fail "no inode for the file: $(cat "$T_OUT")"
expect_status 0 "$DEBUGFS" "$img" super
bs=$(field 'block size')
isize=$(field 'inode size')
expect_status 0 "$DEBUGFS" "$img" groups
itable=$(sed -n 's/^group 0: .*inode table \([0-9]*\).*/\1/p' "$T_OUT")
dd if=/dev/zero of="$img" bs=1 seek=$((itable * bs + (ino - 1) * isize)) count=$isize \
	conv=notrunc status=none
expect_status 4 "$FSCK" -fn -j "$T_DIR/r.json" "$img"
expect_in "$T_OUT" "entry 'we\\x01ird\\xff\\xc3\\xa9' in directory 2 names inode $ino"
python3 - "$T_DIR/r.json" "$ino" <<'EOF' || fail "report: $(cat "$T_DIR/r.json")"
import json, sys
d = json.load(open(sys.argv[1]))
p = [p for p in d["problems"] if p["name"] is not None]
assert len(p) == 1, d["problems"]
p = p[0]
assert p["name"].encode("utf-8", "surrogateescape") == b"we\x01ird\xff\xc3\xa9", p
assert p["inode"] == int(sys.argv[2]) and p["dir"] == 2 and p["pass"] == "2", p
raw = open(sys.argv[1], "rb").read()
assert b'"name": "we\\u0001ird\\udcff\xc3\xa9"' in raw, raw
EOF
expect_status 1 "$FSCK" -fy "$img"
expect_in "$T_OUT" "names inode $ino, which is not in use.  Clear? yes"
expect_status 0 "$FSCK" -fn "$img"
echo ok
