#!/usr/bin/env bash
# mfsx through a real mount: mkfs, the daemon in the foreground as our
# child, file mode (one run of 100,000 operations of every kind), tree
# mode and a short sparse big-file run (-B) with a fixed list of seeds,
# fusermount3 -u, the daemon exiting 0, and miscfs-debug verify finding
# nothing wrong with the image it left.
#
# MFSX_OPS_PERCENT (default 100) scales the operations of every run, for
# a quick run by hand; MFSX_MOUNT_OPTS adds mount options (data=journal).
# A failing run prints mfsx's report, whose last line replays it on a
# fresh mount like this one.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/mount.sh"
: "${MFSX:?MFSX must name mfsx}"

image_size=128M
mount_opts=cache_size=16M${MFSX_MOUNT_OPTS:+,$MFSX_MOUNT_OPTS}

percent=${MFSX_OPS_PERCENT:-100}
total=0

# run OPS SEED [OPTIONS...]: one mfsx run of OPS (scaled) operations.
run() {
	local ops=$(( $1 * percent / 100 )) seed=$2
	shift 2
	[ "$ops" -ge 1 ] || ops=1
	if ! "$MFSX" -N "$ops" -S "$seed" "$@" "$mnt"; then
		# A daemon that died says why here (a sanitizer's report).
		stop
		sed 's/^/daemon: /' "$T_DIR/daemon.err" >&2
		echo "a fresh mount like this one: $MKFS -q IMAGE $image_size;" \
			"$MISCFS IMAGE MNT -f -o $mount_opts" >&2
		fail "mfsx -N $ops -S $seed${*:+ $*}"
	fi
	total=$(( total + ops ))
}

expect_status 0 "$MKFS" -q -F "$img" "$image_size"
start -o "$mount_opts"

run 100000 1                    # file mode, every kind of operation on: a file of up to 1 MiB
run 5000 2 -c 100               # ... closed and reopened every 100 ops too
run 15000 1 -T                  # tree mode: up to 64 entries
run 15000 2 -T -n 200           # ... up to 200, so directories grow blocks
run 5000 3 -B                   # a sparse file with windows up to 8 GiB
echo "mfsx: $total operations passed"

unmount
expect_status 0 "$DEBUGFS" "$img" verify
expect_in "$T_OUT" "problems: 0"
