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
	held=$(sed -n 's/^jnl_copy_bytes_held: //p' "$mnt/.miscfs/stats")
	# data=journal: the journal's copies, up to a log's worth, come out of
	# cache_size rather than on top of it.
	budget=$(sed -n 's/^pc_budget: //p' "$mnt/.miscfs/stats")
	log=$(($(sed -n 's/^jnl_log_size: //p' "$mnt/.miscfs/stats") * 4096))
	want=$((cache_mib << 20))
	[ "$mode" = journal ] && want=$((want - (log < want / 2 ? log : want / 2)))
	[ "$budget" -le "$want" ] ||
		fail "data=$mode: page cache budget $budget, more than $want"
	echo "data=$mode: peak $((peak / 1024)) MiB, journal copies held $((held >> 20)) MiB"
	[ "$peak" -le "$limit_kib" ] ||
		fail "data=$mode: peak RSS $((peak / 1024)) MiB > $((limit_kib / 1024)) MiB"
	unmount
done

# Inodes the kernel forgets give their memory back: 40,000 files looked
# up hold that many nodes; after drop_caches the kernel forgets all but
# what the inode cache keeps (8,192 at this cache size), and the daemon's
# resident memory falls by at least a third of what the files added (it
# fell by about half, the rest being the nodes kept; by nothing while the
# allocator kept what was freed).
rss_kib() { awk '/^VmRSS:/ { print $2 }' "/proc/$daemon/status"; }
expect_status 0 "$MKFS" -q -F -N 100000 "$img" 1G
start -o cache_size=16M
before=$(rss_kib)
python3 -c 'import os, sys
for i in range(40000):
    os.close(os.open(os.path.join(sys.argv[1], "f%d" % i), os.O_CREAT | os.O_WRONLY, 0o644))' \
	"$mnt" || fail "creating 40,000 files"
held=$(rss_kib)
cached=$(sed -n 's/^fs_inodes_cached: //p' "$mnt/.miscfs/stats")
[ "$cached" -ge 40000 ] || fail "only $cached nodes after 40,000 creates"
sync
echo 2 >/proc/sys/vm/drop_caches
for _ in $(seq 100); do
	cached=$(sed -n 's/^fs_inodes_cached: //p' "$mnt/.miscfs/stats")
	[ "$cached" -le 10000 ] && break
	sleep 0.1
done
[ "$cached" -le 10000 ] || fail "$cached nodes still cached after drop_caches"
after=$(rss_kib)
echo "40,000 inodes: RSS $((before / 1024)) MiB, then $((held / 1024)) MiB;" \
	"$((after / 1024)) MiB once the kernel forgot them ($cached nodes cached)"
[ $((held - after)) -ge $(((held - before) / 3)) ] ||
	fail "the RSS fell from $((held / 1024)) to only $((after / 1024)) MiB"
unmount
