#!/usr/bin/env bash
# fsck.miscfs -fn next to e2fsck -fn, on images holding the same tree.
#
#   bench/fsck_bench.sh [BUILD-DIR]
#
# Makes a tree of $N small files (1 to 200 bytes, 1000 to a directory)
# under $WORK, copies it into an ext4 image (mke2fs -d) and into a miscfs
# image (bench/mfs_populate, through the filesystem core), then checks each
# image $ROUNDS times, interleaved, with cold caches, and prints the median
# time and peak memory of each and their ratios.  The tree and the images
# are kept in $WORK for the next run (delete it to start afresh).
#
# Environment: N (default 1000000), ROUNDS (3), WORK
# (/var/tmp/miscfs-fsck-bench).  Needs root to drop the page cache.
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$top/build}
N=${N:-1000000}
ROUNDS=${ROUNDS:-3}
WORK=${WORK:-/var/tmp/miscfs-fsck-bench}
size=$(( (N * 4096 * 2 + (1 << 30)) / (1 << 20) ))M
inodes=$(( N + N / 100 + 1000 ))

say() { printf '%s\n' "$*" >&2; }

make_tree() {
	[ -f "$WORK/tree.done-$N" ] && return
	say "making a tree of $N files in $WORK/tree"
	rm -rf "$WORK/tree"
	python3 - "$WORK/tree" "$N" <<'EOF'
import os, sys
root, n = sys.argv[1], int(sys.argv[2])
for i in range(n):
    d = os.path.join(root, "d%05d" % (i // 1000))
    if i % 1000 == 0:
        os.makedirs(d)
    with open(os.path.join(d, "f%03d" % (i % 1000)), "wb") as f:
        f.write(b"x" * (i * 37 % 200 + 1))
EOF
	touch "$WORK/tree.done-$N"
}

make_images() {
	[ -f "$WORK/images.done-$N" ] && return
	say "ext4 image: mke2fs -d"
	rm -f "$WORK/ext4.img" "$WORK/miscfs.img"
	mkfs.ext4 -F -q -b 4096 -N "$inodes" -d "$WORK/tree" "$WORK/ext4.img" "$size"
	say "miscfs image: mfs_populate"
	"$build/tools/mkfs.miscfs" -F -q -N "$inodes" -J 256M "$WORK/miscfs.img" "$size"
	"$build/bench/mfs_populate" "$WORK/miscfs.img" "$WORK/tree"
	touch "$WORK/images.done-$N"
}

drop_caches() {
	sync
	echo 3 > /proc/sys/vm/drop_caches 2>/dev/null || say "(cannot drop caches: not root)"
}

# One timed run: prints "seconds kilobytes".
timed() {
	local out
	out=$(mktemp)
	drop_caches
	/usr/bin/time -f '%e %M' -o "$out" "$@" >/dev/null 2>&1 || {
		local st=$?
		[ $st -le 1 ] || { say "$* exited $st"; cat "$out" >&2; exit 1; }
	}
	tail -n1 "$out"
	rm -f "$out"
}

median() { sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }

mkdir -p "$WORK"
make_tree
make_images
: > "$WORK/times"
for r in $(seq "$ROUNDS"); do
	say "round $r of $ROUNDS: e2fsck -fn"
	echo "e2fsck $(timed e2fsck -fn "$WORK/ext4.img")" >> "$WORK/times"
	say "round $r of $ROUNDS: fsck.miscfs -fn"
	echo "miscfs $(timed "$build/tools/fsck.miscfs" -fn "$WORK/miscfs.img")" >> "$WORK/times"
done
e2t=$(awk '$1 == "e2fsck" { print $2 }' "$WORK/times" | median)
e2m=$(awk '$1 == "e2fsck" { print $3 }' "$WORK/times" | median)
mft=$(awk '$1 == "miscfs" { print $2 }' "$WORK/times" | median)
mfm=$(awk '$1 == "miscfs" { print $3 }' "$WORK/times" | median)
printf '%-16s %12s %14s\n' "" "time (s)" "peak RSS (MiB)"
printf '%-16s %12s %14s\n' "e2fsck -fn" "$e2t" "$((e2m / 1024))"
printf '%-16s %12s %14s\n' "fsck.miscfs -fn" "$mft" "$((mfm / 1024))"
awk -v a="$mft" -v b="$e2t" -v c="$mfm" -v d="$e2m" \
	'BEGIN { printf "miscfs/e2fsck: time %.2fx, memory %.2fx\n", a / b, c / d }'
echo "($N files, medians of $ROUNDS cold-cache rounds; images in $WORK)"
