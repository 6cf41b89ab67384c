#!/usr/bin/env bash
# What the kernel caches of a mount stays true.  Names and attributes are
# cached for a day (entry_timeout and friends) and a file's pages from one
# open to the next (keep_cache), so:
# - a second open of an unchanged file reads nothing from the daemon,
#   unless a read owes the file an atime (relatime after a change,
#   strictatime) or nokeep_cache is given;
# - with its pages cached, every way of changing a file's bytes (a write
#   of another open file, O_DIRECT, truncate, a punched hole,
#   copy_file_range, a shared mapping) shows at the next open;
# - what the daemon changes on its own shows at once: the set-id bits a
#   non-root write drops, the mode an ACL sets, the ctime chattr moves;
# - the kernel asks for security.capability before the first write of a
#   file, not before each (FUSE_HANDLE_KILLPRIV_V2), and set-id bits
#   still go at a write by another user;
# - the kernel reads ahead in requests of 1 MiB (kernel_readahead, which
#   sets the mount's readahead once INIT is answered), or of the size
#   given;
# - bad timeouts and sizes are refused.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/mount.sh"

expect_status 0 "$MKFS" -q -F "$img" 32M
f=$mnt/f
exp=$T_DIR/expected

reads() { stat_of fs_reads; }

# The reads the kernel sends ahead of a reader may arrive after it is
# done: wait until the count stays still.
settled_reads() {
	local a b
	a=$(reads)
	for _ in $(seq 50); do
		sleep 0.3
		b=$(reads)
		[ "$a" = "$b" ] && break
		a=$b
	done
	echo "$a"
}

# cached WANT: a cat of $f read from the daemon (WANT=no) or not (yes).
cached() {
	local r0 r1
	r0=$(settled_reads)
	cat "$f" >/dev/null || fail "cat $f"
	r1=$(settled_reads)
	if [ "$1" = yes ]; then
		[ "$r1" = "$r0" ] || fail "${2:-}: the open read the file again ($r0 -> $r1 reads)"
	else
		[ "$r1" != "$r0" ] || fail "${2:-}: the open read nothing from the daemon"
	fi
}

# Other tests drop the kernel's caches (drop_caches) while this one runs:
# a mapping of $f keeps its pages in, and an open that must drop them
# still does (it unmaps them).
pin() {
	python3 -c 'import mmap, os, sys, time
m = mmap.mmap(os.open(sys.argv[1], os.O_RDONLY), 0, prot=mmap.PROT_READ)
sum(m[i] for i in range(0, len(m), 4096))
print("mapped", flush=True)
time.sleep(3600)' "$f" >"$T_DIR/pin.out" &
	pin_pid=$!
	for _ in $(seq 200); do
		[ -s "$T_DIR/pin.out" ] && return 0
		sleep 0.05
	done
	fail "the mapping of $f"
}
unpin() { kill "$pin_pid" && wait "$pin_pid" 2>/dev/null; rm -f "$T_DIR/pin.out"; }

# ---- relatime (the default): kept unless an atime is due -----------------
start -o cache_size=8M
head -c 16384 /dev/urandom >"$f"     # one readahead window: no read ahead of it
cached no "the first read after a write"
pin
cached yes "a read with the atime already newer"
cached yes "once more"
at=$(stat -c %X.%x "$f")
sleep 0.01
touch -m "$f"
cached no "a read after the mtime moved"
[ "$(stat -c %X.%x "$f")" != "$at" ] || fail "relatime: the atime did not move"
unpin                                # that open unmapped the pages
pin
cached yes "a read after that"
unpin
unmount

start -o cache_size=8M,strictatime
cached no "strictatime"
cached no "strictatime, again"
unmount

start -o cache_size=8M,nokeep_cache,noatime
cached no "nokeep_cache"
cached no "nokeep_cache, again"
unmount

# ---- noatime: always kept; each change shows at the next open ------------
chmod 0755 "$T_DIR"            # for the write of another user below
start -o cache_size=8M,noatime,allow_other
head -c 65536 /dev/urandom >"$exp"
cp "$exp" "$f"
cat "$f" >/dev/null
pin
cached yes "noatime"
unpin

# check WHAT: $f and $exp hold the same bytes, read through a new open
# after the kernel held the old ones.
check() {
	cmp "$f" "$exp" >"$T_OUT" 2>&1 || { cat "$T_OUT"; fail "$1: stale bytes"; }
	cat "$f" >/dev/null
}

# another open file of the same inode
head -c 5000 /dev/urandom >"$T_DIR/p"
dd if="$T_DIR/p" of="$f" bs=5000 seek=1 conv=notrunc status=none
dd if="$T_DIR/p" of="$exp" bs=5000 seek=1 conv=notrunc status=none
check "a write of another open"
# O_DIRECT, around the kernel's pages
head -c 8192 /dev/urandom >"$T_DIR/p"
dd if="$T_DIR/p" of="$f" bs=8192 seek=2 oflag=direct conv=notrunc status=none ||
	fail "dd oflag=direct"
dd if="$T_DIR/p" of="$exp" bs=8192 seek=2 conv=notrunc status=none
check "an O_DIRECT write"
truncate -s 30000 "$f" && truncate -s 30000 "$exp" || fail truncate
check "truncate"
truncate -s 50000 "$f" && truncate -s 50000 "$exp" || fail "truncate up"
check "truncate up"
fallocate -p -o 4096 -l 8192 "$f" || fail "fallocate -p"
fallocate -p -o 4096 -l 8192 "$exp"
check "a punched hole"
head -c 20000 /dev/urandom >"$mnt/src"
python3 - "$mnt/src" "$f" <<'EOF' || fail "copy_file_range"
import os, sys
i, o = os.open(sys.argv[1], os.O_RDONLY), os.open(sys.argv[2], os.O_WRONLY)
left, src, dst = 12000, 3000, 9000
while left:
    n = os.copy_file_range(i, o, left, src, dst)
    assert n > 0
    left, src, dst = left - n, src + n, dst + n
EOF
dd if="$mnt/src" of="$exp" bs=1 skip=3000 seek=9000 count=12000 conv=notrunc status=none
check "copy_file_range"
python3 - "$f" <<'EOF' || fail "mmap"
import mmap, os, sys
fd = os.open(sys.argv[1], os.O_RDWR)
m = mmap.mmap(fd, 8192, mmap.MAP_SHARED)
m[100:108] = b"mappedXY"
m.flush()
m.close()
EOF
printf mappedXY | dd of="$exp" bs=1 seek=100 conv=notrunc status=none
check "a shared mapping"

# ---- security.capability asked for once, not at every write ---------------
g0=$(stat_of fuse_getxattr_requests)
dd if=/dev/zero of="$f" bs=1 count=200 conv=notrunc status=none || fail "200 writes"
g1=$(stat_of fuse_getxattr_requests)
[ $((g1 - g0)) -le 2 ] || fail "200 writes asked for $((g1 - g0)) xattrs"

# ---- what the daemon changes on its own shows at once ---------------------
stat -c %a "$f" >/dev/null
chmod 4777 "$f"
stat -c %a "$f" >/dev/null         # cached as 4777
setpriv --reuid=4321 --regid=4321 --clear-groups \
	dd if=/dev/zero of="$f" bs=1 count=1 conv=notrunc status=none ||
	fail "a write by uid 4321"
[ "$(stat -c %a "$f")" = 777 ] || fail "the set-id bit a write dropped: $(stat -c %a "$f")"
chmod 4777 "$f"
stat -c %a "$f" >/dev/null
setpriv --reuid=4321 --regid=4321 --clear-groups sh -c ": >'$f'" ||
	fail "an O_TRUNC open by uid 4321"
[ "$(stat -c %a "$f")" = 777 ] || fail "the set-id bit an O_TRUNC open dropped: $(stat -c %a "$f")"
chmod 0640 "$f"
stat -c %a "$f" >/dev/null
setfacl -m u:4321:rwx "$f" || fail setfacl
[ "$(stat -c %a "$f")" = 670 ] || fail "the mode an ACL set: $(stat -c %a "$f")"
ct=$(stat -c %Z.%z "$f")
sleep 0.01
chattr +A "$f" || fail "chattr +A"
[ "$(stat -c %Z.%z "$f")" != "$ct" ] || fail "chattr: the ctime did not move"
unmount

# ---- the kernel reads ahead in requests of 1 MiB ---------------------------
start
head -c 8M /dev/urandom >"$mnt/ra" || fail "writing 8 MiB"
unmount
# cold_read WHAT: read ra from a fresh mount (the kernel holds none of
# it); prints the READ requests the daemon got.
cold_read() {
	local before
	before=$(stat_of fuse_read_requests)
	cat "$mnt/ra" >/dev/null || fail "reading ra ($1)"
	echo $(($(stat_of fuse_read_requests) - before))
}
start
[ "$(cat "/sys/class/bdi/$(mountpoint -d "$mnt")/read_ahead_kb")" = 1024 ] ||
	fail "the mount's readahead is not 1024 KiB"
n=$(cold_read default)
[ "$n" -le 16 ] || fail "8 MiB read in $n requests (at 1 MiB, 8 and a few)"
unmount
start -o kernel_readahead=128K
n=$(cold_read kernel_readahead=128K)
[ "$n" -ge 24 ] || fail "kernel_readahead=128K: 8 MiB read in $n requests (at 128 to 256 KiB, 32 to 64)"
unmount

# ---- bad timeouts and sizes ------------------------------------------------
for o in attr_timeout=x entry_timeout= negative_timeout=-1 attr_timeout=1e12; do
	expect_status 2 "$MISCFS" "$img" "$mnt" -f -o "$o"
	expect_in "$T_ERR" "not a number of seconds"
done
for o in kernel_readahead=x kernel_readahead=65M; do
	expect_status 2 "$MISCFS" "$img" "$mnt" -f -o "$o"
	expect_in "$T_ERR" "not a size up to 64M"
done
mounted && fail "mounted with a bad timeout or size"
exit 0
