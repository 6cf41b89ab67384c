#!/usr/bin/env bash
# with_uring.sh CMD [ARGS...]: run CMD with the kernel's FUSE over io_uring
# switched on (/sys/module/fuse/parameters/enable_uring), as the tests of
# -o io_uring need it; exits 77 (skip) where the kernel has no such switch
# or it cannot be set.  Runs may overlap: each holds a shared lock on
# $lock while CMD runs, and the last one to finish puts back the value the
# first one found.  CMD may take the lock for itself alone (flock -x 9)
# to turn the switch off for a while.
param=/sys/module/fuse/parameters/enable_uring
lock=${TMPDIR:-/tmp}/miscfs-enable-uring.lock
saved=$lock.saved

[ -w "$param" ] || { echo "SKIP: no writable $param (FUSE over io_uring: Linux 6.14 or later, as root)"; exit 77; }
exec 9>>"$lock"
flock -x 9
[ -e "$saved" ] || cat "$param" >"$saved"
if ! echo Y >"$param" 2>/dev/null; then
	echo "SKIP: $param cannot be set"
	exit 77
fi
flock -s 9
"$@"
rc=$?
if flock -x -n 9; then
	cat "$saved" >"$param" && rm -f "$saved"
fi
exit "$rc"
