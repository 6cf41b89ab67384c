#!/usr/bin/env bash
# SIGTERM and SIGINT stop a long check of fsck.miscfs where the checker may
# (fsck_opts.cancel: at the next problem or unit of work), with status 32
# and no summary; a second signal ends it at once.
source "$(dirname "$0")/../lib.sh"
: "${FSCK:?FSCK must name fsck.miscfs}"

no_line() { ! grep -qF -- "$2" "$1" || { cat "$1"; fail "'$2' in $(basename "$1")"; }; }

# A sparse 32 GiB image with 8M inodes takes seconds to check and a few
# MiB of the disk.
big=$T_DIR/big
expect_status 0 "$MKFS" -q -F -i 4096 "$big" 32G
for sig in TERM INT; do
	: >"$T_DIR/progress"
	"$FSCK" -fy -C 3 "$big" 3>"$T_DIR/progress" >"$T_OUT" 2>"$T_ERR" &
	pid=$!
	for _ in $(seq 500); do [ -s "$T_DIR/progress" ] && break; sleep 0.01; done
	kill -$sig $pid
	st=0
	wait $pid || st=$?
	[ $st -lt 128 ] && (( st & 32 )) || fail "SIG$sig during pass 1: status $st"
	expect_in "$T_OUT" "the check was cancelled"
	no_line "$T_OUT" "Pass 5"
done

# A second signal, sent while the first is still unanswered, kills: the
# process is stopped so that both wait for it, and the first one's handler
# runs before the second is delivered.
"$FSCK" -fy -C 3 "$big" 3>"$T_DIR/progress" >"$T_OUT" 2>"$T_ERR" &
pid=$!
for _ in $(seq 500); do [ -s "$T_DIR/progress" ] && break; sleep 0.01; done
kill -STOP $pid
kill -TERM $pid
kill -INT $pid
kill -CONT $pid
st=0
wait $pid || st=$?
[ $st -eq 143 ] || [ $st -eq 130 ] || fail "two signals: status $st, not killed"
echo ok
