#!/usr/bin/env bash
# A reserved region through a real mount, /.regions/blob: ls of the root
# lists .regions; bytes put into the image show through the file; a
# shared mapping's stores, msync'ed, land at the region's offset in the
# image, and read(2) sees them before that; a private mapping's never
# reach it; a write across the end is short and one at the end gets
# ENOSPC; nothing removes, renames, truncates or creates there, and only
# permission bits change; a read-only mount refuses opens for writing.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/mount.sh"

command -v python3 >/dev/null || skip "no python3"
size=$((1 << 20))
blob=$mnt/.regions/blob

expect_status 0 "$MKFS" -q -F -R blob:1M "$img" 64M
expect_status 0 "$DEBUGFS" "$img" regions
start_blk=$(sed -n 's/^region blob: start \([0-9]*\), .*/\1/p' "$T_OUT")
[ -n "$start_blk" ] || { cat "$T_OUT"; fail "no region blob in miscfs-debug"; }
off=$((start_blk * 4096))

# at OFFSET LEN: LEN bytes of the image at byte OFFSET of the region.
at() { dd if="$img" bs=1 skip=$((off + $1)) count="$2" status=none; }

# dirty: the region's pages of the image that the host's page cache has
# dirty or under writeback (cachestat(2), Linux 6.5), or "none".
cat >"$T_DIR/dirty.py" <<'EOF'
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
rng = (ctypes.c_uint64 * 2)(int(sys.argv[2]), int(sys.argv[3]))
cs = (ctypes.c_uint64 * 5)()
fd = os.open(sys.argv[1], os.O_RDONLY)
if libc.syscall(451, fd, rng, cs, 0):
    print("none")
else:
    print(cs[1] + cs[2])
EOF
dirty() { python3 "$T_DIR/dirty.py" "$img" "$off" "$size"; }
[ "$(dirty)" != none ] || skip "no cachestat(2)"

printf 'from-the-image' | dd of="$img" bs=1 seek=$((off + 8192)) conv=notrunc status=none
start -o commit=1

ls -a "$mnt" >"$T_OUT" || fail "ls -a"
grep -qx '.regions' "$T_OUT" || { cat "$T_OUT"; fail "ls -a of the root does not list .regions"; }
[ "$(ls -a "$mnt/.regions" | tr '\n' ' ')" = ". .. blob " ] || fail "ls -a .regions"
[ "$(stat -c '%F %s %a %u %g' "$blob")" = "regular file $size 600 0 0" ] ||
	fail "stat blob: $(stat -c '%F %s %a %u %g' "$blob")"
[ "$(dd if="$blob" bs=1 skip=8192 count=14 status=none)" = from-the-image ] ||
	fail "the image's bytes do not show through the file"

map_cmd="python3 $T_DIR/dirty.py $img $off $size"
python3 - "$blob" "$size" "$map_cmd" >"$T_OUT" <<'EOF' || fail "mapping the region"
import errno, mmap, os, sys
path, size = sys.argv[1], int(sys.argv[2])
fd = os.open(path, os.O_RDWR)
m = mmap.mmap(fd, size, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
m[5 * 4096 + 3:5 * 4096 + 3 + 14] = b"shared-pattern"
# read(2) sees the mapping's stores before any msync: one page cache.
assert os.pread(fd, 14, 5 * 4096 + 3) == b"shared-pattern", "read does not see the mapping"
m.flush()
m.close()
print("after msync:", os.popen(sys.argv[3]).read().strip())
p = mmap.mmap(fd, size, mmap.MAP_PRIVATE, mmap.PROT_READ | mmap.PROT_WRITE)
p[200000:200013] = b"private-bytes"
p.close()
assert os.pread(fd, 13, 200000) == bytes(13), "a private mapping reached the file"
# The end: a write across it is short, one at it gets ENOSPC.
assert os.pwrite(fd, b"abcdefgh", size - 4) == 4, "the write across the end is not short"
try:
    os.pwrite(fd, b"x", size)
    sys.exit("a write at the end succeeded")
except OSError as e:
    assert e.errno == errno.ENOSPC, e
os.fsync(fd)
os.close(fd)
EOF

# msync of the file is an msync of the daemon's mapping of the image.
expect_in "$T_OUT" "after msync: 0"

# A commit (the fsync of another file) leaves the region's pages, dirty
# again, to the region's own sync: its flush stops before them.  The
# host's writeback may clean them meanwhile (other programs' dirty
# memory past its threshold), so one try of three that finds them still
# dirty will do; a commit that flushes them cleans them every time.
left=
for try in 1 2 3; do
	printf 'dirty-again' | dd of="$blob" bs=1 seek=300000 conv=notrunc status=none ||
		fail "write to the region"
	[ "$(dirty)" -gt 0 ] || continue
	dd if=/dev/zero of="$mnt/other" bs=4k count="$try" conv=fsync status=none ||
		fail "fsync of another file"
	[ "$(dirty)" -gt 0 ] && { left=$try; break; }
done
[ -n "$left" ] || fail "a commit wrote the region's pages back, three times"

# Nothing changes the names, the size or the set-id bits, even as root.
refuse() { "$@" 2>/dev/null && fail "$* succeeded"; return 0; }
echo hello >"$mnt/hello" || fail "hello"
refuse rm -f "$blob"
refuse mv "$blob" "$mnt/moved"
refuse mv "$blob" "$mnt/.regions/other"
refuse mv "$mnt/hello" "$mnt/.regions/new"
refuse mv "$mnt/hello" "$blob"
refuse ln "$blob" "$mnt/link"
refuse truncate -s 0 "$blob"
refuse truncate -s 2M "$blob"
refuse touch "$mnt/.regions/new"
refuse mkdir "$mnt/.regions/dir"
refuse mkdir "$mnt/.regions"
refuse rmdir "$mnt/.regions"
refuse mv "$mnt/.regions" "$mnt/other"
refuse chmod 4600 "$blob"
refuse chmod 777 "$mnt/.regions"
rm "$blob" 2>"$T_ERR"
expect_in "$T_ERR" "Operation not permitted"
chmod 640 "$blob" || fail "chmod 640"
[ "$(stat -c %a "$blob")" = 640 ] || fail "mode not 640"
[ "$(stat -c %s "$blob")" = "$size" ] || fail "size changed"
unmount
# The unmount synced the region.
[ "$(dirty)" = 0 ] || fail "the region's pages are still dirty after the unmount"

[ "$(at $((5 * 4096 + 3)) 14)" = shared-pattern ] || fail "the mapping's bytes are not in the image"
[ "$(at 200000 13 | tr -d '\0')" = "" ] || fail "the private mapping's bytes reached the image"
[ "$(at $((size - 4)) 4)" = abcd ] || fail "the end of the region"
[ "$(at 300000 11)" = dirty-again ] || fail "the last write"
[ "$(dd if="$img" bs=1 skip=$((off + size)) count=4 status=none | tr -d '\0')" = "" ] ||
	fail "a write went past the region"
expect_status 0 "$DEBUGFS" "$img" verify
expect_in "$T_OUT" "problems: 0"

# Read-only: the bytes are there, writing is refused.
start -o ro
[ "$(dd if="$blob" bs=1 skip=$((5 * 4096 + 3)) count=14 status=none)" = shared-pattern ] ||
	fail "read-only: the bytes"
python3 - "$blob" <<'EOF' || fail "read-only open for writing"
import errno, os, sys
try:
    os.open(sys.argv[1], os.O_RDWR)
    sys.exit("opened for writing")
except OSError as e:
    assert e.errno == errno.EROFS, e
EOF
unmount
