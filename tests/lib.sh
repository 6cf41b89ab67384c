# Sourced by the shell tests.  Gives a private work directory that is
# removed at exit, the tools' paths, and small assertion helpers.
# A test exits 0 (pass), 1 (fail) or 77 (skip).

set -u
: "${MKFS:?MKFS must name mkfs.miscfs}"
: "${DEBUGFS:?DEBUGFS must name miscfs-debug}"

# How to run this test again by hand, with the variables it was given
# (meson sets them; a run by hand needs the same).  Printed first, so a
# failure's log starts with it.
t_rerun_line() {
	local v line=
	for v in MKFS DEBUGFS FSCK MISCFS REPLAY MFSX MKDAMAGE RANDOM_DAMAGE CRASH_CHECK \
		FORMAT_MD PC_SRC BUILD_ROOT MESON $(compgen -v | grep -E '^(MISCFS|MFSX|CORPUS)_'); do
		[ -n "${!v:-}" ] && line+="$v=${!v} "
	done
	echo "to rerun: $line$0"
}
t_rerun_line

T_DIR=$(mktemp -d "${TMPDIR:-/tmp}/miscfs-test.XXXXXX")
t_cleanup() {
	local pids
	pids=$(jobs -p)
	[ -n "$pids" ] && kill $pids 2>/dev/null
	wait 2>/dev/null
	rm -rf "$T_DIR"
}
trap t_cleanup EXIT

fail() { echo "FAIL: $*" >&2; exit 1; }
skip() { echo "SKIP: $*" >&2; exit 77; }

# expect_status N CMD...: run CMD, keep stdout/stderr in $T_OUT/$T_ERR,
# and fail unless it exits with N.
T_OUT=$T_DIR/out
T_ERR=$T_DIR/err
expect_status() {
	local want=$1 got=0
	shift
	"$@" >"$T_OUT" 2>"$T_ERR" || got=$?
	if [ "$got" -ne "$want" ]; then
		echo "--- stdout"; cat "$T_OUT"; echo "--- stderr"; cat "$T_ERR"
		fail "'$*' exited $got, expected $want"
	fi
}

# expect_in FILE TEXT: FILE holds TEXT (a fixed string).
expect_in() {
	grep -qF -- "$2" "$1" || { cat "$1"; fail "'$2' not in $(basename "$1")"; }
}

# image_free IMG: wait (60 s at most: a loaded machine) until no daemon
# holds IMG's lock: a FUSE unmount returns before the daemon has written
# back and let go.
image_free() {
	for _ in $(seq 1200); do
		flock -n "$1" true && return 0
		sleep 0.05
	done
	fail "a daemon still holds $1 60 s after the unmount"
}

# field KEY: the value of "KEY: value" in $T_OUT.
field() { sed -n "s/^$1: //p" "$T_OUT" | head -n1; }

# poke FILE OFFSET BYTES...: overwrite bytes (given as hex pairs).
poke() {
	local file=$1 off=$2
	shift 2
	printf "$(printf '\\x%s' "$@")" |
		dd of="$file" bs=1 seek="$off" conv=notrunc status=none
}
