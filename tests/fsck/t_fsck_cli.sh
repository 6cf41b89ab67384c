#!/usr/bin/env bash
# fsck.miscfs as scripts and fsck(8) use it: usage errors, the clean line,
# -n writing nothing, -y and -p repairing, preening stopping at what it may
# not fix, the image's lock, the JSON report, -C, and fsck -t through PATH.
# The damage is one inode of the root directory; what the checker finds
# beyond it is the library's business (tests of its own), not this one's.
source "$(dirname "$0")/../lib.sh"
: "${FSCK:?FSCK must name fsck.miscfs}"

img=$(realpath "$T_DIR")/img          # fsck(8) takes only absolute paths
bs=1024
fresh() { expect_status 0 "$MKFS" -q -F -b $bs "$img" 24M; }
num() { sed -n "s/.*$1 \([0-9]*\).*/\1/p" "$T_OUT" | head -n1; }
no_line() { ! grep -qF -- "$2" "$1" || { cat "$1"; fail "'$2' in $(basename "$1")"; }; }

fresh
expect_status 0 "$DEBUGFS" "$img" groups
root=$(( $(num "inode table") * bs + 256 ))        # inode 2

# Damage preening may fix: the checksum of a valid inode.
damage_csum() { fresh; poke "$img" $((root + 252)) 00 11; }
# Damage it may not: the inode's contents (its size) and so its checksum.
damage_inode() { fresh; poke "$img" $((root + 16)) 77; }

# ---- usage: 16, the usage text on stderr ----
expect_status 16 "$FSCK"
expect_in "$T_ERR" "Usage: fsck.miscfs"
expect_status 16 "$FSCK" -x "$img"
expect_in "$T_ERR" "Usage: fsck.miscfs"
for pair in "-n -y" "-y -p" "-p -n" "-a -y" "-n -a"; do
	# shellcheck disable=SC2086
	expect_status 16 "$FSCK" $pair "$img"
	expect_in "$T_ERR" "only one of -n, -y and -p"
done
expect_status 16 "$FSCK" -n "$img" "$img"
expect_status 16 "$FSCK" -n -C x "$img"
expect_status 16 "$FSCK" -n -C 9 "$img"          # fd 9 is not open
expect_status 16 "$FSCK" -n -j
expect_status 16 "$FSCK" -n -C 1 -j - "$img"       # both on stdout
expect_status 0 "$FSCK" -a -p "$img"               # one mode, two spellings
expect_status 0 "$FSCK" -V
expect_in "$T_OUT" "fsck.miscfs "
expect_status 0 "$FSCK" -h
expect_in "$T_OUT" "Usage: fsck.miscfs"
# Questions need a terminal.
expect_status 8 "$FSCK" -f "$img" </dev/null
expect_in "$T_ERR" "need terminal for interactive repairs"

# ---- the problem table ----
expect_status 0 "$FSCK" --list-problems
grep -q "^1.INODE_CSUM	1	preen	Fix	inode %i " "$T_OUT" || fail "table: $(head "$T_OUT")"
grep -q "^1.INODE_GARBAGE	1	-	Clear	" "$T_OUT" || fail "table: no 1.INODE_GARBAGE"

# ---- a fresh image: clean without -f, checked with it ----
for mode in -n -y -p; do
	expect_status 0 "$FSCK" $mode "$img"
	[ "$(cat "$T_OUT")" = "$img: clean, 11/6144 files, 2578/24576 blocks" ] ||
		fail "$mode: $(cat "$T_OUT")"
	expect_status 0 "$FSCK" -f $mode "$img"
	expect_in "$T_OUT" "$img: 11/6144 files ("
	expect_in "$T_OUT" "% non-contiguous), 2578/24576 blocks"
	no_line "$T_OUT" "MODIFIED"
	no_line "$T_OUT" "clean,"
	if [ $mode = -p ]; then
		no_line "$T_OUT" "Pass "
	else
		expect_in "$T_OUT" "Pass 1: "
		expect_in "$T_OUT" "Pass 5: "
	fi
done
expect_status 0 "$FSCK" -fnv "$img"
expect_in "$T_OUT" "11 inodes used (0.18%, out of 6144)"
expect_in "$T_OUT" "2 directories"
expect_in "$T_OUT" "2578 blocks used"

# ---- -n: says no, writes nothing, exits 4 ----
damage_inode
cp "$img" "$T_DIR/damaged"
expect_status 4 "$FSCK" -fn "$img"
expect_in "$T_OUT" "inode 2 is damaged: its checksum does not match"
expect_in "$T_OUT" ".  Clear? no"
expect_in "$T_OUT" "$img: ********** WARNING: Filesystem still has errors"
no_line "$T_OUT" "MODIFIED"
cmp -s "$img" "$T_DIR/damaged" || fail "-n changed the image"

# ---- preening: stops at what it may not fix ----
for p in -p -a; do
	expect_status 4 "$FSCK" -f $p "$img"
	expect_in "$T_OUT" "$img: inode 2 is damaged: its checksum does not match"
	no_line "$T_OUT" "Clear?"
	no_line "$T_OUT" "Pass "
	expect_in "$T_OUT" "$img: UNEXPECTED INCONSISTENCY; RUN fsck MANUALLY."
	expect_in "$T_OUT" "	(i.e., without -a or -p options)"
	cmp -s "$img" "$T_DIR/damaged" || fail "$p changed the image before halting"
done

# ---- -y repairs: exit 1 ----
expect_status 1 "$FSCK" -fy "$img"
expect_in "$T_OUT" "inode 2 is damaged: its checksum does not match"
expect_in "$T_OUT" ".  Clear? yes"
expect_in "$T_OUT" "$img: ***** FILE SYSTEM WAS MODIFIED *****"
no_line "$T_OUT" "WARNING"
expect_status 0 "$FSCK" -fn "$img"                  # and nothing is left
no_line "$T_OUT" "?"

# ---- preening fixes what it may, and the next check finds nothing ----
damage_csum
expect_status 1 "$FSCK" -fp "$img"
expect_in "$T_OUT" "$img: inode 2 passes its checks but its checksum does not match.  Fix? yes"
expect_in "$T_OUT" "$img: ***** FILE SYSTEM WAS MODIFIED *****"
expect_status 0 "$FSCK" -fn "$img"
no_line "$T_OUT" "Fix?"
damage_csum
expect_status 1 "$FSCK" -fy "$img"
expect_in "$T_OUT" "inode 2 passes its checks but its checksum does not match.  Fix? yes"
expect_status 0 "$FSCK" -fn "$img"

# ---- the lock: a repair refuses a locked image, -n warns and checks ----
damage_csum
cp "$img" "$T_DIR/damaged"
exec 9<"$img"
flock -n 9 || fail "cannot lock the image"
for opt in -y -p -fy -fp; do
	expect_status 8 "$FSCK" $opt "$img"
	expect_in "$T_ERR" "$img is in use (mounted by a miscfs daemon?)"
done
cmp -s "$img" "$T_DIR/damaged" || fail "a refused repair changed the image"
expect_status 4 "$FSCK" -fn "$img"
expect_in "$T_ERR" "$img is in use (mounted by a miscfs daemon?)"
expect_in "$T_OUT" "Fix? no"
exec 9<&-
expect_status 4 "$FSCK" -fn "$img"
no_line "$T_ERR" "in use"

# ---- the JSON report ----
damage_inode
expect_status 4 "$FSCK" -fn -j "$T_DIR/report.json" "$img"
expect_in "$T_OUT" "Clear? no"                    # the text is still there
python3 -m json.tool "$T_DIR/report.json" >/dev/null || fail "not JSON: $(cat "$T_DIR/report.json")"
python3 - "$T_DIR/report.json" "$img" <<'EOF' || fail "report: $(cat "$T_DIR/report.json")"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["image"] == sys.argv[2] and d["mode"] == "no" and d["exit"] == 4, d
assert d["checked"] and d["error"] is None and not d["changed"], d
assert not d["skipped_clean"] and not d["preen_halted"] and not d["cancelled"], d
assert d["counts"]["inodes_count"] == 6144 and d["counts"]["problems"] >= 1, d
p = [p for p in d["problems"] if p["code"] == "1.INODE_GARBAGE"]
assert len(p) == 1, d["problems"]
p = p[0]
assert p["pass"] == "1" and p["inode"] == 2 and p["question"] == "Clear", p
assert p["answer"] == "no" and p["preen_ok"] is False and p["name"] is None, p
assert p["message"].startswith("inode 2 is damaged"), p
EOF
# To stdout: the JSON alone there, the text on stderr.
expect_status 4 "$FSCK" -fn --json - "$img"
python3 -m json.tool "$T_OUT" >/dev/null || fail "stdout is not JSON: $(cat "$T_OUT")"
expect_in "$T_ERR" "Clear? no"
# Preening halted, and yes answers.
expect_status 4 "$FSCK" -fp -j "$T_DIR/report.json" "$img"
python3 -c 'import json,sys; d = json.load(open(sys.argv[1]));
assert d["preen_halted"] and d["mode"] == "preen" and d["exit"] == 4, d' "$T_DIR/report.json" ||
	fail "preen report: $(cat "$T_DIR/report.json")"
expect_status 1 "$FSCK" -fy -j "$T_DIR/report.json" "$img"
python3 -c 'import json,sys; d = json.load(open(sys.argv[1]));
assert d["changed"] and d["exit"] == 1 and d["problems"][0]["answer"] == "yes", d' \
	"$T_DIR/report.json" || fail "-y report: $(cat "$T_DIR/report.json")"
# Nothing checked: the report still says why, with the exit status.
expect_status 8 "$FSCK" -n -j "$T_DIR/report.json" "$T_DIR/missing"
python3 -c 'import json,sys; d = json.load(open(sys.argv[1]));
assert d["exit"] == 8 and not d["checked"] and d["error"], d' "$T_DIR/report.json" ||
	fail "report of a missing image: $(cat "$T_DIR/report.json")"
expect_status 8 "$FSCK" -n -j "$T_DIR/no/such/dir" "$img"
expect_status 8 "$FSCK" -fn -j /dev/full "$img"       # a report not written whole
expect_in "$T_ERR" "cannot write the report /dev/full: No space left on device"

# ---- not an image at all: 8 ----
head -c 1M /dev/zero >"$T_DIR/zero"
expect_status 8 "$FSCK" -fn "$T_DIR/zero"
expect_status 8 "$FSCK" -fy "$T_DIR/zero"

# ---- progress ----
fresh
expect_status 0 "$FSCK" -fn -C 0 "$img"             # no terminal: no bar
no_line "$T_OUT" $'\r'
expect_status 0 "$FSCK" -fn -C 3 "$img" 3>"$T_DIR/progress"
grep -Evq "^[0-5] [0-9]+ [0-9]+ $img\$" "$T_DIR/progress" &&
	fail "progress lines: $(cat "$T_DIR/progress")"
for pass in 1 2 3 4 5; do
	grep -q "^$pass [0-9]* [0-9]* " "$T_DIR/progress" || fail "no progress of pass $pass"
done
awk '$2 > $3 { exit 1 }' "$T_DIR/progress" || fail "past the end: $(cat "$T_DIR/progress")"
# -C -3 starts silent (fsck(8) lets one check at a time draw).
expect_status 0 "$FSCK" -fn -C -3 "$img" 3>"$T_DIR/progress"
[ -s "$T_DIR/progress" ] && fail "-C -3 wrote progress"
# On a terminal: a bar per pass, redrawn in place and cleared.
if command -v script >/dev/null; then
	script -qec "$FSCK -fn -C 0 $img" /dev/null >"$T_OUT" </dev/null ||
		fail "under script: $(cat "$T_OUT")"
	grep -aq $'\rPass 1:   \\[=*>* *\\] *[0-9]*%' "$T_OUT" || fail "no bar: $(cat -A "$T_OUT")"
	grep -aq $'\rPass 5:   \\[=\\{40\\}\\] 100%' "$T_OUT" || fail "no full bar: $(cat -A "$T_OUT")"
	# cleared (blanks, back to the start) before the next line
	grep -aq $'\\] 100%\r *\rPass 2: Checking' "$T_OUT" || fail "not cleared: $(cat -A "$T_OUT")"
	grep -aq $'\r *\r'"$img: 11/6144 files" "$T_OUT" || fail "not cleared: $(cat -A "$T_OUT")"
fi

# ---- the questions, on a terminal (script gives one) ----
if command -v script >/dev/null; then
	ask() {   # ask KEYS ARGS...: type KEYS, one every 0.3 s, into fsck.miscfs ARGS
		local keys=$1
		shift
		{ for ((i = 0; i < ${#keys}; i++)); do sleep 0.3; printf '%s' "${keys:i:1}"; done; sleep 1; } |
			script -qec "echo \$\$ >$T_DIR/pid; exec $FSCK $*; " /dev/null >"$T_OUT" || true
	}
	damage_inode
	cp "$img" "$T_DIR/damaged"
	ask qn -f "$img"                                  # the n is never read
	expect_in "$T_OUT" "Clear<y>? cancelled"
	expect_in "$T_OUT" "the check was cancelled"
	cmp -s "$img" "$T_DIR/damaged" || fail "a cancelled check changed the image"
	ask $'\003n' -f "$img"                            # Ctrl-C
	expect_in "$T_OUT" "Clear<y>? cancelled"
	ask nn -f "$img"
	expect_in "$T_OUT" "Clear<y>? no"
	expect_in "$T_OUT" "WARNING: Filesystem still has errors"
	ask $'x\r' -f "$img"                               # x is ignored, Enter: <y>
	expect_in "$T_OUT" "Clear<y>? yes"
	damage_inode
	ask a -f "$img"
	expect_in "$T_OUT" "Clear<y>? yes to all"
	expect_in "$T_OUT" "Fix? yes"                     # asked no more
	expect_in "$T_OUT" "FILE SYSTEM WAS MODIFIED"
	# The exit status through the terminal: cancelled is 32 (with 4).
	damage_inode
	{ sleep 0.5; printf q; sleep 1; } |
		script -qec "$FSCK -f $img; echo \"status \$?\"" /dev/null >"$T_OUT"
	st=$(sed -n 's/^status \([0-9]*\).*/\1/p' "$T_OUT")
	[ -n "$st" ] && (( st & 32 )) || fail "cancelled: status '$st'"
	# SIGTERM while a question waits.
	rm -f "$T_DIR/pid" "$T_OUT"
	{
		for _ in $(seq 600); do   # until the question is on the terminal
			[ -s "$T_DIR/pid" ] && grep -aq 'Clear<y>?' "$T_OUT" 2>/dev/null && break
			sleep 0.05
		done
		kill -TERM "$(cat "$T_DIR/pid")"
		sleep 1
	} |
		script -qec "echo \$\$ >$T_DIR/pid; exec $FSCK -f $img" /dev/null >"$T_OUT"
	expect_in "$T_OUT" "Clear<y>? cancelled"
	expect_in "$T_OUT" "the check was cancelled"
fi

# ---- through fsck(8), which finds fsck.TYPE in PATH ----
if command -v fsck >/dev/null; then
	tools=$(dirname "$FSCK")
	[ -x "$tools/fsck.fuse.miscfs" ] || fail "no fsck.fuse.miscfs beside $FSCK"
	damage_inode
	for type in miscfs fuse.miscfs; do
		expect_status 4 env PATH="$tools:$PATH" fsck -T -t $type -n -f "$img"
		expect_in "$T_OUT" "Clear? no"
		expect_status 1 env PATH="$tools:$PATH" fsck -T -t $type -y -f "$img"
		expect_in "$T_OUT" "Clear? yes"
		expect_status 0 env PATH="$tools:$PATH" fsck -T -t $type -n "$img"
		expect_in "$T_OUT" "$img: clean,"
		damage_inode
	done
	# preening, as the boot does it: every fstab line of type fuse.miscfs
	expect_status 4 env PATH="$tools:$PATH" fsck -T -t miscfs -a -f "$img"
	expect_in "$T_OUT" "UNEXPECTED INCONSISTENCY"
	echo "$img $T_DIR/mnt fuse.miscfs defaults 0 2" >"$T_DIR/fstab"
	expect_status 4 env FSTAB_FILE="$T_DIR/fstab" PATH="$tools:$PATH" fsck -A -T -p -f
	expect_in "$T_OUT" "$img: UNEXPECTED INCONSISTENCY"
	damage_csum
	expect_status 1 env FSTAB_FILE="$T_DIR/fstab" PATH="$tools:$PATH" fsck -A -T -p -f
	expect_in "$T_OUT" "$img: ***** FILE SYSTEM WAS MODIFIED *****"
	expect_status 0 env FSTAB_FILE="$T_DIR/fstab" PATH="$tools:$PATH" fsck -A -T -p
	expect_in "$T_OUT" "$img: clean,"
fi
echo ok
