#!/usr/bin/env bash
# Damaged images through the daemon: images of t_fsck_random's random
# damage (seeds 0 to $MISCFS_DAMAGE_IMAGES - 1) are mounted one after the
# other, and a workload runs on each: every file read, a file written,
# synced, renamed and removed, a directory made and removed.  The daemon
# must neither crash nor hang: an image it refuses is refused with a line
# naming the damage, a mounted one unmounts and the daemon exits 0, and
# every error a program met on it is EIO or EUCLEAN ("Structure needs
# cleaning") with a line in the daemon's log.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/../mount/mount.sh"
: "${RANDOM_DAMAGE:?RANDOM_DAMAGE must name t_fsck_random}"

n=${MISCFS_DAMAGE_IMAGES:-100}
"$RANDOM_DAMAGE" --save "$T_DIR" 0 "$n" || fail "making the damaged images"

# Errors a program may meet on a damaged filesystem, or from the workload
# itself on one whose files are gone (not found, not a directory ...).
allowed='Input/output error|Structure needs cleaning|No such file|Not a directory|Is a directory|Directory not empty|No space left|Read-only file system|File exists|Stale file handle'

workload() {
	find "$mnt" -xdev -type f -exec cat {} + >/dev/null 2>>"$T_DIR/errs"
	ls -lR "$mnt" >/dev/null 2>>"$T_DIR/errs"
	{ head -c 20000 /dev/urandom >"$mnt/new" && sync "$mnt/new" &&
	  mv "$mnt/new" "$mnt/new2" && rm "$mnt/new2"; } 2>>"$T_DIR/errs"
	{ mkdir "$mnt/nd" && rmdir "$mnt/nd"; } 2>>"$T_DIR/errs"
	return 0
}

mounted_ok=0 refused=0
for s in $(seq 0 $((n - 1))); do
	img=$T_DIR/dmg-$s.img
	: >"$T_DIR/errs"
	"$MISCFS" "$img" "$mnt" -f -o force 2>"$T_DIR/daemon.err" &
	daemon=$!
	for _ in $(seq 500); do
		mounted && break
		daemon_gone && break
		sleep 0.02
	done
	if ! mounted; then
		wait "$daemon"
		st=$?
		daemon=
		[ "$st" -eq 1 ] || { cat "$T_DIR/daemon.err"; fail "image $s: the daemon exited $st"; }
		grep -q . "$T_DIR/daemon.err" ||
			{ cat "$T_DIR/daemon.err"; fail "image $s: refused without a reason"; }
		refused=$((refused + 1))
		continue
	fi
	workload
	unmount
	if grep -vE "$allowed" "$T_DIR/errs" | grep -q .; then
		cat "$T_DIR/errs"
		fail "image $s: an error a damaged image should not give"
	fi
	if grep -qE "Input/output error|Structure needs cleaning" "$T_DIR/errs" &&
	   ! grep -q . "$T_DIR/daemon.err"; then
		cat "$T_DIR/errs"
		fail "image $s: damage met, and nothing in the daemon's log"
	fi
	mounted_ok=$((mounted_ok + 1))
	rm -f "$img"
done
echo "$n damaged images: $mounted_ok mounted, worked on and unmounted, $refused refused"
