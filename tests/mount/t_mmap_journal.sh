#!/usr/bin/env bash
# Journalled data through a real mount (data=journal, the default mkfs
# -o data=journal stored, which -o data=ordered overrides): pages a shared
# mmap dirties reach the daemon as writes and are journalled like any
# other; after msync they are in the log, so a kill -9 of the daemon
# loses nothing and the next mount's replay brings them home.  The
# statistics count the pages journalled and show none left pending.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/mount.sh"

expect_status 1 "$MKFS" -q -F -o data=all "$img" 64M
expect_in "$T_ERR" "-o data=all: unknown"
expect_status 0 "$MKFS" -q -F -o data=journal "$img" 64M
start -o commit=60
[ "$(stat_of fs_data_journal)" = 1 ] || fail "fs_data_journal: $(stat_of fs_data_journal)"

head -c 1048576 /dev/urandom >"$T_DIR/want"
cp "$T_DIR/want" "$mnt/f" || fail "cp"
sync "$mnt/f" || fail "fsync"
before=$(stat_of jdata_pages_journalled)

# Rewrite every other 4 KiB page through a shared mapping, then msync.
python3 - "$mnt/f" "$T_DIR/want" <<'EOF' || fail "mmap"
import mmap, os, sys
fd = os.open(sys.argv[1], os.O_RDWR)
m = mmap.mmap(fd, 0, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
want = bytearray(open(sys.argv[2], "rb").read())
for off in range(0, len(m), 8192):
    chunk = bytes((off // 8192 + i) % 251 for i in range(4096))
    m[off:off + 4096] = chunk
    want[off:off + 4096] = chunk
m.flush()
m.close()
os.close(fd)
open(sys.argv[2], "wb").write(want)
EOF
after=$(stat_of jdata_pages_journalled)
[ "$(stat_of jdata_pages_pending)" = 0 ] || fail "pages still pending after msync"
[ "$after" -gt "$before" ] || fail "the mmap writes journalled nothing ($before, $after)"
cmp "$T_DIR/want" "$mnt/f" || fail "the file before the crash"

kill_daemon
expect_status 0 "$DEBUGFS" "$img" super
[ "$(field recovery)" = "needs recovery (the log is not empty, RECOVER flag set)" ] ||
	fail "recovery after kill -9: $(field recovery)"

start -o data=ordered
cmp "$T_DIR/want" "$mnt/f" || fail "the file after the replay"
[ "$(stat_of fs_data_journal)" = 0 ] || fail "data=ordered did not override the default"
unmount
expect_status 0 "$DEBUGFS" "$img" verify
expect_in "$T_OUT" "problems: 0"
