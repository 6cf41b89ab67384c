#!/usr/bin/env bash
# A directory index through a real mount: mkfs -O dir_index, a directory
# of 3,000 names made, renamed and thinned by ordinary programs; every
# name ls lists is found by stat; lsattr shows the index (I); fsck -fn is
# clean; miscfs-debug dx shows the index's shape, with one record per
# entry; and -D cannot go with -n.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/mount.sh"
: "${FSCK:?FSCK must name fsck.miscfs}"

expect_status 0 "$MKFS" -q -F -b 1024 -O dir_index "$img" 64M
start
mkdir "$mnt/d" || fail "mkdir"
python3 - "$mnt/d" <<'PY' || fail "the workload"
import os, sys
d = sys.argv[1]
for i in range(3000):
    os.close(os.open(os.path.join(d, "file-%05d" % i), os.O_CREAT | os.O_WRONLY, 0o644))
for i in range(0, 3000, 3):
    os.unlink(os.path.join(d, "file-%05d" % i))
for i in range(1, 3000, 3):
    os.rename(os.path.join(d, "file-%05d" % i), os.path.join(d, "renamed-%05d" % i))
PY
n=$(ls "$mnt/d" | wc -l)
[ "$n" -eq 2000 ] || fail "ls lists $n names, not 2000"
(cd "$mnt/d" && ls | xargs stat -c %i >/dev/null) || fail "a listed name is not found"
[ ! -e "$mnt/d/file-00000" ] && [ -e "$mnt/d/renamed-00001" ] || fail "names"
if command -v lsattr >/dev/null; then
	lsattr -d "$mnt/d" | grep -q '^[^ ]*I' || fail "lsattr shows no index: $(lsattr -d "$mnt/d")"
fi
unmount
expect_status 0 "$FSCK" -fn "$img"
expect_status 0 "$DEBUGFS" "$img" dx /d
expect_in "$T_OUT" "index: yes"
[ "$(field entries)" = 2002 ] || fail "the index holds $(field entries) entries, not 2002"
[ "$(field height)" -ge 2 ] || fail "the index did not grow a level"
cat "$T_OUT"
expect_status 0 "$DEBUGFS" "$img" dx /
expect_in "$T_OUT" "index: none"
expect_status 16 "$FSCK" -fnD "$img"
echo "ok: 2000 names in an indexed directory through the mount; fsck clean"
