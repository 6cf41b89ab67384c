#!/usr/bin/env bash
# Files written 1 MiB a call while another file is read, through a real
# mount whose cache is not much bigger than the two files: every byte written
# reads back, before and after a remount.  Writeback could take pages of
# the chunk a write was filling before the write raised the size over
# them; it took them for pages past the end and dropped their bytes.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/mount.sh"

expect_status 0 "$MKFS" -q -F "$img" 512M
head -c 33554432 /dev/urandom >"$T_DIR/data"
start -o cache_size=64M
cp "$T_DIR/data" "$mnt/src" || fail "cp"
for i in 1 2 3 4 5 6; do
	dd if="$mnt/src" of=/dev/null bs=1M status=none &
	reader=$!
	dd if="$T_DIR/data" of="$mnt/w$i" bs=1M status=none || fail "dd $i"
	wait "$reader"
	cmp "$T_DIR/data" "$mnt/w$i" || fail "w$i differs after the write"
done
unmount
expect_status 0 "$DEBUGFS" "$img" verify
start
for i in 1 2 3 4 5 6; do
	cmp "$T_DIR/data" "$mnt/w$i" || fail "w$i differs after a remount"
done
unmount
