#!/usr/bin/env bash
# Damaged images through the daemon: t_fsck_random's damaged images (seeds
# 0 to $MISCFS_DAMAGE_IMAGES - 1; by seed random bytes over metadata, one
# field of a structure set to an extreme with its checksum resealed, or
# two metadata blocks of different kinds swapped) are mounted one after
# the other, and damage_workload.py runs on each: everything read, every
# entry renamed within and across directories, the whole tree removed with
# rm -rf, a file created and removed in every directory left, a file
# written, synced, renamed and removed at the top.  The daemon must neither
# crash nor hang: an image it refuses is refused with a line naming the
# damage, a mounted one unmounts and the daemon exits 0, every error a
# program met on it is one a damaged image may give, and an EIO or EUCLEAN
# ("Structure needs cleaning") comes with a line in the daemon's log
# naming the structure.  One image in three (by seed: 3-5, 12-14, ...) is
# mounted with errors=remount-ro: after the first EIO or EUCLEAN a create
# fails with EROFS, and the log says the filesystem is now read-only.
#
# MISCFS_DAMAGE_JOBS=N runs N mount loops at once, each on its own mount
# point, over chunks of $MISCFS_DAMAGE_CHUNK seeds (default 10) made as
# they are needed: a long run keeps a chunk's images on the disk at a time.
# MISCFS_DAMAGE_FIRST=S starts at seed S (MISCFS_DAMAGE_FIRST=127
# MISCFS_DAMAGE_IMAGES=1 runs image dmg-127 alone, as a failure names it).
# The last lines say what was covered: images mounted and refused, and the
# errors met by kind.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/../mount/mount.sh"
: "${RANDOM_DAMAGE:?RANDOM_DAMAGE must name t_fsck_random}"

n=${MISCFS_DAMAGE_IMAGES:-100}
base=${MISCFS_DAMAGE_FIRST:-0}
jobs=${MISCFS_DAMAGE_JOBS:-1}
chunk=${MISCFS_DAMAGE_CHUNK:-10}
workload=$(cd "$(dirname "$0")" && pwd)/damage_workload.py
py=/usr/bin/python3
[ -x "$py" ] || py=python3
command -v rm >/dev/null || skip "no rm"

# A log line that names the structure damage was found in.
named='(inode|block|director|bitmap|group|descriptor|orphan|region|superblock|journal'
named+='|xattr|entry|free|feature)'
ro_line='errors=remount-ro: the filesystem is now read-only'

# A sanitizer's report in the daemon's log fails the image, whatever the
# daemon's exit status (a refusal exits 1 too).
sanitized() {
	! grep -qE 'ERROR: [A-Za-z]+Sanitizer|runtime error: ' "$dir/daemon.err" ||
		{ cat "$dir/daemon.err"; fail "$what: a sanitizer's report"; }
}

# one_image SEED: mount, run the workload, unmount, check; a line per
# outcome in $dir/tally.
one_image() {
	local s=$1 img=$dir/dmg-$1.img mode=continue opts=force st=0 rc=0 what
	what=$(grep "^dmg-$s:" "$dir/what")
	if [ $(((s / 3) % 3)) -eq 1 ]; then
		mode=remount-ro
		opts=force,errors=remount-ro
	fi
	"$MISCFS" "$img" "$mnt" -f -o "$opts" 2>"$dir/daemon.err" &
	daemon=$!
	for _ in $(seq 1500); do
		mounted && break
		daemon_gone && break
		sleep 0.02
	done
	if ! mounted && ! daemon_gone; then
		kill -9 "$daemon"
		cat "$dir/daemon.err"
		fail "$what: the daemon neither mounted nor exited in 30 s"
	fi
	if ! mounted; then
		wait "$daemon" || st=$?
		daemon=
		sanitized
		[ "$st" -eq 1 ] || { cat "$dir/daemon.err"; fail "$what: the daemon exited $st"; }
		grep -qE "$named" "$dir/daemon.err" ||
			{ cat "$dir/daemon.err"; fail "$what: refused without naming the damage"; }
		echo "refused $s" >>"$dir/tally"
		rm -f "$img"
		return
	fi
	timeout -k 10 300 "$py" -u "$workload" "$mnt" "$mode" >"$dir/out" 2>&1 || rc=$?
	if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
		tail -n 20 "$dir/out"
		tail -n 20 "$dir/daemon.err"
		# A daemon that answers nothing keeps its callers waiting: end it.
		fusermount3 -u -z "$mnt"
		kill -9 "$daemon"
		fail "$what: the workload did not end in 300 s"
	fi
	fusermount3 -u "$mnt" || fusermount3 -u -z "$mnt" || fail "$what: fusermount3 -u"
	wait "$daemon" || st=$?
	daemon=
	sanitized
	[ "$st" -eq 0 ] || { tail -n 40 "$dir/daemon.err"; fail "$what: the daemon exited $st"; }
	if [ "$rc" -ne 0 ] || ! grep -q '^DONE' "$dir/out"; then
		grep -v '^ERR ' "$dir/out" | tail -n 20
		tail -n 20 "$dir/daemon.err"
		fail "$what: the workload failed (exit $rc)"
	fi
	if grep -qE '^ERR (EIO|EUCLEAN) ' "$dir/out" && ! grep -qE "$named" "$dir/daemon.err"; then
		grep -E '^ERR (EIO|EUCLEAN) ' "$dir/out" | head -n 5
		cat "$dir/daemon.err"
		fail "$what: damage met, and no line in the daemon's log naming it"
	fi
	if [ "$mode" = remount-ro ] && grep -q '^DONE damage=1' "$dir/out"; then
		grep -qF "$ro_line" "$dir/daemon.err" ||
			{ tail -n 20 "$dir/daemon.err"; fail "$what: read-only, and the log does not say so"; }
		echo "turned-ro $s" >>"$dir/tally"
		! grep -q '^RO ' "$dir/out" || echo "ro-seen $s" >>"$dir/tally"
	fi
	echo "mounted $s $mode" >>"$dir/tally"
	sed -n 's/^ERR \([A-Z0-9]*\) .*/error \1/p' "$dir/out" | sort | uniq -c |
		awk '{ print $2, $3, $1 }' >>"$dir/tally"
	rm -f "$img"
}

# worker J: the seeds of chunks J, J + jobs, J + 2 * jobs ..., in $T_DIR/wJ
# on the mount point $T_DIR/wJ/mnt; stops early once $T_DIR/stop exists.
worker() {
	local first count s end=$((base + n))
	dir=$T_DIR/w$1
	mnt=$dir/mnt
	daemon=
	mkdir -p "$mnt"
	trap 'exit 1' TERM
	trap stop EXIT
	for ((first = base + $1 * chunk; first < end; first += jobs * chunk)); do
		count=$((end - first < chunk ? end - first : chunk))
		"$RANDOM_DAMAGE" --save "$dir" "$first" "$count" >"$dir/what" ||
			fail "making the damaged images $first to $((first + count - 1))"
		for ((s = first; s < first + count; s++)); do
			[ -e "$T_DIR/stop" ] && return 0
			one_image "$s"
		done
	done
}

t0=$SECONDS
pids=()
for ((j = 0; j < jobs; j++)); do
	(worker "$j") &
	pids+=($!)
done
failed=0
for _ in "${pids[@]}"; do
	wait -n && continue
	failed=1
	touch "$T_DIR/stop"
done
[ "$failed" -eq 0 ] || fail "a damaged image failed (above)"

cat "$T_DIR"/w*/tally >"$T_DIR/tally" 2>/dev/null
count() { grep -c "^$1" "$T_DIR/tally"; }
kinds=(random-bytes field-extreme blocks-swapped)
for k in 0 1 2; do
	by_kind[k]=$(awk -v k="$k" '$1 == "mounted" && $2 % 3 == k' "$T_DIR/tally" | wc -l)
done
echo "$n damaged images in $((SECONDS - t0)) s ($jobs loops): $(count mounted) mounted," \
	"worked on and unmounted, $(count refused) refused"
echo "with errors=remount-ro: $(count 'mounted .* remount-ro') mounted, $(count turned-ro)" \
	"turned read-only by the damage met, $(count ro-seen) of them shown by a create" \
	"failing with EROFS"
echo "mounted by kind of damage: ${kinds[0]} ${by_kind[0]}, ${kinds[1]} ${by_kind[1]}," \
	"${kinds[2]} ${by_kind[2]}"
met=$(awk '$1 == "error" { c[$2] += $3 } END { for (e in c) printf "%s %d\n", e, c[e] }' \
	"$T_DIR/tally" | sort -k2,2nr | paste -sd, | sed 's/,/, /g')
echo "errors met: ${met:-none}"
