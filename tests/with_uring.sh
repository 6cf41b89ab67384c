#!/usr/bin/env bash
# with_uring.sh CMD [ARGS...]: run CMD with the kernel's FUSE over io_uring
# switched on (/sys/module/fuse/parameters/enable_uring), as the tests of
# -o io_uring need it; exits 77 (skip) where the kernel has no such switch
# or it cannot be set.  Runs overlap: each holds a shared lock on $lock
# while CMD runs, and the last one to finish puts back the value the first
# one found (kept in $URING_SAVED).  $lock.setup, taken alone, covers the
# saving and the putting back.  CMD may take $lock for itself alone
# (flock -x 9) to turn the switch off for a while; since a run that ended
# while it waited may have put the old value back, it saves the value
# again first if $URING_SAVED is gone.
param=/sys/module/fuse/parameters/enable_uring
lock=${TMPDIR:-/tmp}/miscfs-enable-uring.lock
export URING_SAVED=$lock.saved

[ -w "$param" ] || { echo "SKIP: no writable $param (FUSE over io_uring: Linux 6.14 or later, as root)"; exit 77; }
exec 9>>"$lock" 8>>"$lock.setup"
# No blocking wait for $lock while $lock.setup is held: no deadlock.
flock -s 9
flock -x 8
[ -e "$URING_SAVED" ] || cat "$param" >"$URING_SAVED"
if ! echo Y >"$param" 2>/dev/null; then
	echo "SKIP: $param cannot be set"
	exit 77
fi
flock -u 8
"$@"
rc=$?
# The last run (no other holds $lock) puts the value back.
flock -x 8
if flock -x -n 9; then
	cat "$URING_SAVED" >"$param" && rm -f "$URING_SAVED"
fi
exit "$rc"
