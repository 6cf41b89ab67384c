#!/usr/bin/env bash
# -o host_cache: the image is read through the host's page cache and
# written directly.  What one mount read stays in the host's cache after
# it ends, so each overwrite must drop the host's copy, or the next mount
# reads the old bytes: file data, a directory rewritten, an inode table.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/mount.sh"
: "${FSCK:?FSCK must name fsck.miscfs}"
command -v fincore >/dev/null || skip "no fincore (util-linux)"

# cached: the host's pages of the image.
cached() { fincore -b -n -o PAGES "$img" | tr -d ' '; }

expect_status 0 "$MKFS" -q -F "$img" 64M
head -c 2097152 /dev/urandom >"$T_DIR/v1"
head -c 2097152 /dev/urandom >"$T_DIR/v2"

start -o cache_size=4M,host_cache
cp "$T_DIR/v1" "$mnt/f" || fail "cp"
mkdir "$mnt/d" && (cd "$mnt/d" && touch $(seq -f "a%g" 200)) || fail "the directory"
unmount
image_free "$img"
# The host's copy of the image only (drop_caches would empty the other
# tests' caches too).
python3 -c 'import os, sys
os.posix_fadvise(os.open(sys.argv[1], os.O_RDONLY), 0, 0, os.POSIX_FADV_DONTNEED)' "$img" ||
	fail "fadvise"
[ "$(cached)" -lt 64 ] || fail "the host still holds $(cached) pages of the image"

start -o cache_size=4M,host_cache
# Random reads of single blocks: the reads that go through the host.
# Another test's drop_caches may empty the host's cache meanwhile: new
# blocks are read again, up to three times.
for seed in 1 2 3; do
	python3 - "$mnt/f" "$T_DIR/v1" "$seed" <<'EOF' || fail "random reads of the file"
import os, random, sys
f, ref = os.open(sys.argv[1], os.O_RDONLY), open(sys.argv[2], "rb").read()
rng = random.Random(int(sys.argv[3]))
for _ in range(128):
    off = rng.randrange(len(ref) // 4096) * 4096
    assert os.pread(f, 4096, off) == ref[off:off + 4096], off
EOF
	[ "$(cached)" -ge 64 ] && break
done
[ "$(ls "$mnt/d" | wc -l)" = 200 ] || fail "the directory"
pages=$(cached)
[ "$pages" -ge 64 ] || fail "the host holds $pages pages of the image after reads"
cmp "$T_DIR/v1" "$mnt/f" || fail "the file reads back wrong"
dd if="$T_DIR/v2" of="$mnt/f" bs=64k conv=notrunc,fsync status=none || fail "overwrite"
rm "$mnt"/d/a1?? && touch "$mnt/d/b"{1..50} && chmod 600 "$mnt/f" || fail "the changes"
unmount
image_free "$img"

start -o cache_size=4M,host_cache
cmp "$T_DIR/v2" "$mnt/f" || fail "the host's cache gave the file's old bytes"
[ "$(ls "$mnt/d" | wc -l)" = 150 ] || fail "the directory lists $(ls "$mnt/d" | wc -l) names, not 150"
[ "$(stat -c %a "$mnt/f")" = 600 ] || fail "the inode's old mode: $(stat -c %a "$mnt/f")"
unmount
image_free "$img"
expect_status 0 "$FSCK" -fn "$img"
exit 0
