#!/usr/bin/env bash
# The journal next to the device's own limits, on one image file:
#   commits/s with an fsync after each small transaction, against fio's
#   4 KiB writes with fsync=1 (what one flush-bound writer can get);
#   journalled MB/s, against fio's sequential 1 MiB direct writes.
# Each figure is the median of RUNS runs; ratios are miscfs / fio.
#
#   bench/jnl_bench.sh [BUILD_DIR] [WORK_DIR] [RUNS]
set -euo pipefail
build=${1:-build}
work=${2:-/var/tmp}
runs=${3:-5}
img=$(mktemp "$work/jnl_bench.XXXXXX.img")
trap 'rm -f "$img"' EXIT
command -v fio >/dev/null || { echo "fio is not installed (apt-get install fio)"; exit 1; }

median() { sort -g | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
# fio_json iops|bw FIO_ARGS...: one figure of a fio run on the image.
fio_json() {
	local field=$1
	shift
	fio --output-format=json "$@" --filename="$img" | python3 -c "
import json, sys
j = json.load(sys.stdin)['jobs'][0]['write']
print(j['iops'] if sys.argv[1] == 'iops' else j['bw_bytes'] / 1e6)" "$field"
}

# Written in full once, so that neither side pays for block allocation in
# the host filesystem during its runs.
dd if=/dev/zero of="$img" bs=1M count=160 conv=fsync status=none
commits=() acommits=() fsyncs=() ufsyncs=() data=() seqs=()
for _ in $(seq "$runs"); do
	commits+=("$("$build/bench/jnl_bench" "$img" commits 3 | sed -n 's/commits\/s: //p')")
	acommits+=("$("$build/bench/jnl_bench" "$img" commits 3 async | sed -n 's/commits\/s: //p')")
	data+=("$("$build/bench/jnl_bench" "$img" data 256 | sed -n 's/journalled MB\/s: //p')")
	fsyncs+=("$(fio_json iops --name=f --rw=write --bs=4k --size=64M \
		--fsync=1 --direct=1 --ioengine=psync --runtime=3 --time_based)")
	ufsyncs+=("$(fio_json iops --name=u --rw=write --bs=4k --size=64M \
		--fsync=1 --direct=1 --ioengine=io_uring --runtime=3 --time_based)")
	seqs+=("$(fio_json bw --name=s --rw=write --bs=1M --size=128M \
		--direct=1 --ioengine=psync --end_fsync=1)")
done
c=$(printf '%s\n' "${commits[@]}" | median)
a=$(printf '%s\n' "${acommits[@]}" | median)
f=$(printf '%s\n' "${fsyncs[@]}" | median)
u=$(printf '%s\n' "${ufsyncs[@]}" | median)
d=$(printf '%s\n' "${data[@]}" | median)
s=$(printf '%s\n' "${seqs[@]}" | median)
printf 'medians of %d runs on %s\n' "$runs" "$work"
printf '%-40s %10.0f   fio 4k write+fsync iops %10.0f   ratio %.2f\n' \
	"journal commits/s (fsync each):" "$c" "$f" "$(echo "$c / $f" | bc -l)"
printf '%-40s %10.0f   fio 4k write+fsync iops %10.0f   ratio %.2f\n' \
	"journal commits/s (async commit):" "$a" "$f" "$(echo "$a / $f" | bc -l)"
printf '%-40s %10s   fio same, io_uring engine %9.0f\n' "" "" "$u"
printf '%-40s %10.1f   fio 1M direct write MB/s %9.1f   ratio %.2f\n' \
	"journalled data MB/s:" "$d" "$s" "$(echo "$d / $s" | bc -l)"
