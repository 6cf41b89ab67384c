#!/usr/bin/env bash
# An entry's name in fsck.miscfs's JSON report is exactly its bytes, also
# when it fills its directory record to the end (a length that is a
# multiple of 4, the next record right behind it): nothing of the next
# record may be read as part of the name.
source "$(dirname "$0")/../lib.sh"
: "${FSCK:?FSCK must name fsck.miscfs}"
source "$(dirname "$0")/../mount/mount.sh"

names=(abcdefgh $'\xff\xfe\xfd\xfc' $'caf\xc3\xa9' zz)
expect_status 0 "$MKFS" -q -F "$img" 32M
start
for n in "${names[@]}"; do
	echo x >"$mnt/$n" || fail "create $n"
done
unmount

# Every file's inode zeroed but the last one's: each entry before it names
# a free inode.
expect_status 0 "$DEBUGFS" "$img" super
bs=$(field 'block size')
isize=$(field 'inode size')
expect_status 0 "$DEBUGFS" "$img" groups
itable=$(sed -n 's/^group 0: .*inode table \([0-9]*\).*/\1/p' "$T_OUT")
expect_status 0 "$DEBUGFS" "$img" ls /
for ino in $(grep -a ' file ' "$T_OUT" | cut -d' ' -f1 | head -n 3); do
	dd if=/dev/zero of="$img" bs=1 seek=$((itable * bs + (ino - 1) * isize)) \
		count="$isize" conv=notrunc status=none
done
expect_status 4 "$FSCK" -fn -j "$T_DIR/r.json" "$img"
python3 - "$T_DIR/r.json" <<'PY' || fail "names: $(grep '"name": "' "$T_DIR/r.json")"
import json, sys
d = json.load(open(sys.argv[1]))
got = sorted(p["name"].encode("utf-8", "surrogateescape")
             for p in d["problems"] if p["name"] is not None)
want = sorted([b"abcdefgh", b"\xff\xfe\xfd\xfc", b"caf\xc3\xa9"])
assert got == want, got
PY
echo ok
