#!/usr/bin/env bash
# The statistics file of a real mount, /.miscfs/stats: ls of the root
# leaves .miscfs out, cat shows "key: value" lines with every key
# promised, the counters move after some work, and nothing can write,
# remove, rename or create over the file or its directory, even as root.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/mount.sh"

keys="fuse_loop_handovers fuse_loop_threads pc_hits pc_misses pc_pages pc_dirty pc_evictions
dir_pages_validated dir_pages_rejected dir_blocks_scanned
dirhash_builds dirhash_hits dirhash_bytes dirhash_dirs dir_index_blocks_read
jnl_commits jnl_blocks_logged jnl_checkpoints jnl_commit_mean_us jnl_commit_max_us
fs_creates fs_lookups
fuse_lookup_requests fuse_lookup_mean_ns fuse_create_requests fuse_create_mean_ns
fuse_read_requests fuse_read_mean_ns fuse_getattr_requests fuse_unlink_requests"

stats=$mnt/.miscfs/stats

# snapshot FILE: the statistics now, checked line by line.
snapshot() {
	cat "$stats" >"$1" || fail "cat $stats"
	grep -vqE '^[a-z0-9_]+: [0-9]+$' "$1" && { cat "$1"; fail "a line is not 'key: number'"; }
	for k in $keys; do
		grep -q "^$k: " "$1" || { cat "$1"; fail "no $k"; }
	done
}

# val FILE KEY
val() { sed -n "s/^$2: //p" "$1"; }

expect_status 0 "$MKFS" -q -F "$img" 32M
start -o cache_size=8M,commit=1

ls -a "$mnt" >"$T_OUT" || fail "ls -a"
grep -qx '.miscfs' "$T_OUT" && fail "ls -a of the root lists .miscfs"
[ "$(ls -a "$mnt/.miscfs" | tr '\n' ' ')" = ". .. stats " ] || fail "ls -a .miscfs"
[ "$(stat -c '%F %a %i' "$mnt/.miscfs")" = "directory 555 9" ] || fail "stat .miscfs"
[ "$(stat -c '%F %a %i' "$stats")" = "regular empty file 444 10" ] || fail "stat stats"

snapshot "$T_DIR/a"
# A directory big enough for an index (on the disk: mkfs's default is
# dir_index), and some reading and unlinking.
mkdir "$mnt/big" || fail "mkdir"
(cd "$mnt/big" && touch $(seq -f 'file-%05g' 3000)) || fail "touch"
echo hello >"$mnt/hello" && [ "$(cat "$mnt/hello")" = hello ] || fail "hello"
for i in $(seq 100 150); do [ -e "$mnt/big/file-00$i" ] || fail "file-00$i"; done
rm "$mnt/big/file-00001" "$mnt/big/file-00002" || fail "rm"
sync -f "$mnt/hello" || fail "sync"
snapshot "$T_DIR/b"
for k in fs_creates fuse_create_requests fuse_lookup_requests fuse_unlink_requests \
	 fuse_read_requests jnl_commits jnl_blocks_logged dir_blocks_scanned \
	 dir_index_blocks_read; do
	[ "$(val "$T_DIR/b" $k)" -gt "$(val "$T_DIR/a" $k)" ] ||
		fail "$k did not move: $(val "$T_DIR/a" $k) -> $(val "$T_DIR/b" $k)"
done
[ "$(val "$T_DIR/b" fs_creates)" -ge $(($(val "$T_DIR/a" fs_creates) + 3000)) ] ||
	fail "fs_creates"
[ "$(val "$T_DIR/b" dirhash_builds)" -eq 0 ] || fail "an index built in memory"
[ "$(val "$T_DIR/b" dirhash_bytes)" -eq 0 ] || fail "index memory"
[ "$(val "$T_DIR/b" fuse_create_mean_ns)" -gt 0 ] || fail "no create latency"
[ "$(val "$T_DIR/b" jnl_commit_max_us)" -ge "$(val "$T_DIR/b" jnl_commit_mean_us)" ] ||
	fail "commit latency"
[ "$(val "$T_DIR/b" dir_pages_rejected)" -eq 0 ] || fail "pages rejected"
# An fsync waits for its commit: the thread reading requests hands that
# role to another first, which serves the requests meanwhile.
dd if=/dev/zero of="$mnt/synced" bs=64k count=16 conv=fsync status=none || fail "dd"
snapshot "$T_DIR/b2"
[ "$(val "$T_DIR/b2" fuse_loop_handovers)" -gt "$(val "$T_DIR/b" fuse_loop_handovers)" ] ||
	fail "an fsync waited without handing over"
[ "$(val "$T_DIR/b2" fuse_loop_threads)" -ge 2 ] || fail "one thread serves requests"
# Read in small pieces, the file is just as well formed.
dd if="$stats" bs=7 status=none >"$T_DIR/c" || fail "dd"
grep -vqE '^[a-z0-9_]+: [0-9]+$' "$T_DIR/c" && fail "dd bs=7: a bad line"

# Nothing changes it, not even root.
refuse() { "$@" 2>/dev/null && fail "$* succeeded"; return 0; }
refuse sh -c "echo x >'$stats'"
refuse sh -c "echo x >>'$stats'"
refuse truncate -s 0 "$stats"
refuse rm -f "$stats"
refuse mv "$stats" "$mnt/moved"
refuse mv "$mnt/hello" "$stats"
refuse mv "$mnt/hello" "$mnt/.miscfs/new"
refuse ln "$stats" "$mnt/link"
refuse touch "$mnt/.miscfs/new"
refuse mkdir "$mnt/.miscfs"
refuse rmdir "$mnt/.miscfs"
refuse mv "$mnt/.miscfs" "$mnt/other"
refuse chmod 666 "$stats"
refuse touch -d @0 "$stats"
[ "$(stat -c %a "$stats")" = 444 ] || fail "mode changed"
sh -c "echo x >'$stats'" 2>"$T_ERR"
expect_in "$T_ERR" "Permission denied"
rm "$stats" 2>"$T_ERR"
expect_in "$T_ERR" "Operation not permitted"

unmount
expect_status 0 "$DEBUGFS" "$img" verify
expect_in "$T_OUT" "problems: 0"

# A read-only mount has them too.
start -o ro
snapshot "$T_DIR/d"
unmount
