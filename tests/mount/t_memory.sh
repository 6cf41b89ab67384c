#!/usr/bin/env bash
# The daemon's peak memory stays within its cache size plus 64 MiB while
# two writers fill a file each, with data=journal (every data block is
# copied for the journal, by whichever thread serves the write) and with
# data=ordered: copies made on one thread and freed on another must not
# pile up in the allocator's per-thread arenas.  With data=journal the
# page cache gives up a log's worth (at most half) of cache_size to the
# journal's copies.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/mount.sh"

cache_mib=64
limit_kib=$(((cache_mib + 64) * 1024))

peak_kib() { awk '/^VmHWM:/ { print $2 }' "/proc/$daemon/status"; }

for mode in journal ordered; do
	expect_status 0 "$MKFS" -q -F "$img" 2G
	start -o "cache_size=${cache_mib}M,data=$mode"
	writers=()
	for w in 1 2; do
		dd if=/dev/zero of="$mnt/f$w" bs=1M count=384 conv=fsync status=none &
		writers+=($!)
	done
	for p in "${writers[@]}"; do wait "$p" || fail "dd ($mode)"; done
	peak=$(peak_kib)
	held=$(stat_of jnl_copy_bytes_held)
	# data=journal: the journal's copies, up to a log's worth, come out of
	# cache_size rather than on top of it.
	budget=$(stat_of pc_budget)
	log=$(($(stat_of jnl_log_size) * 4096))
	want=$((cache_mib << 20))
	[ "$mode" = journal ] && want=$((want - (log < want / 2 ? log : want / 2)))
	[ "$budget" -le "$want" ] ||
		fail "data=$mode: page cache budget $budget, more than $want"
	echo "data=$mode: peak $((peak / 1024)) MiB, journal copies held $((held >> 20)) MiB"
	[ "$peak" -le "$limit_kib" ] ||
		fail "data=$mode: peak RSS $((peak / 1024)) MiB > $((limit_kib / 1024)) MiB"
	# data=ordered: once committed, nothing holds a copy, and the copies'
	# memory goes back to the system but for one chunk (1 MiB) when a
	# commit empties a chunk 2 s after the burst (small commits follow).
	if [ "$mode" = ordered ]; then
		sync -f "$mnt/f1"
		for _ in $(seq 40); do
			sleep 0.25
			echo x >"$mnt/tick" && sync -f "$mnt/tick" || fail "tick"
			held=$(stat_of jnl_copy_bytes_held)
			[ "$held" -le $((1 << 20)) ] && break
		done
		[ "$held" -le $((1 << 20)) ] ||
			fail "journal copies hold $held bytes 10 s after a sync" \
			     "($(stat_of jnl_copy_bytes) in use)"
	fi
	unmount
done

# Inodes the kernel holds cost a stub each, not a node: 40,000 files
# looked up keep at most the LRU's 8,192 nodes and the peak stays within
# the cache size plus 64 MiB (each node with its mapping took about
# 1.2 KiB before: 40,000 were 46 MiB on their own); after drop_caches the
# kernel forgets them and the stubs go.
expect_status 0 "$MKFS" -q -F -N 100000 "$img" 1G
start -o cache_size=16M
python3 -c 'import os, sys
for i in range(40000):
    os.close(os.open(os.path.join(sys.argv[1], "f%d" % i), os.O_CREAT | os.O_WRONLY, 0o644))' \
	"$mnt" || fail "creating 40,000 files"
peak=$(peak_kib)
nodes=$(stat_of fs_inodes_cached)
stubs=$(stat_of fs_inode_stubs)
echo "40,000 inodes held by the kernel: $nodes nodes, $stubs stubs" \
	"($(($(stat_of fs_inode_stub_bytes) >> 10)) KiB), peak RSS $((peak / 1024)) MiB"
[ "$nodes" -le $((8192 + 64)) ] || fail "$nodes nodes for 40,000 inodes"
[ "$stubs" -ge $((40000 - 8192 - 64)) ] || fail "only $stubs stubs"
[ "$peak" -le $(((16 + 64) * 1024)) ] || fail "peak RSS $((peak / 1024)) MiB > 80 MiB"
sync
echo 2 >/proc/sys/vm/drop_caches
for _ in $(seq 100); do
	stubs=$(stat_of fs_inode_stubs)
	[ "$stubs" -le 1000 ] && break
	sleep 0.1
done
[ "$stubs" -le 1000 ] || fail "$stubs stubs left after drop_caches"
unmount
