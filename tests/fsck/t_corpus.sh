#!/usr/bin/env bash
# The corruption corpus: for every kind of damage mkdamage makes, on
# images of 1 KiB and of 4 KiB blocks,
#   1. fsck.miscfs -fn finds it: exit 4, and its output is the one stored
#      in tests/fsck/expect/KIND.BS.n (as e2fsprogs' tests/f_*/expect.1);
#   2. fsck.miscfs -fy repairs it: exit 1, output as in KIND.BS.y;
#   3. a second fsck.miscfs -fn is clean: exit 0;
#   4. the image mounts, and every file that was reachable and undamaged
#      has its path, type, contents and xattrs (mkdamage verify).
# UPDATE_EXPECTED=1 writes the expected outputs instead of comparing them
# (review the diff before committing it); CORPUS_BLOCK_SIZES picks the
# block sizes (default "1024 4096"); CORPUS_EVERY=N (the sampled sanitizer
# trees: 2) checks every N-th kind only.
source "$(dirname "$0")/../lib.sh"
: "${MKDAMAGE:?MKDAMAGE must name mkdamage}"
: "${FSCK:?FSCK must name fsck.miscfs}"

expect=$(cd "$(dirname "$0")" && pwd)/expect
cd "$T_DIR" || fail "cd"

# Compare fsck's output with the stored one (or store it).
compare() {
	local file=$expect/$1
	if [ -n "${UPDATE_EXPECTED:-}" ]; then
		cp "$2" "$file"
	elif [ ! -f "$file" ]; then
		fail "$1: no expected output stored (UPDATE_EXPECTED=1 makes it)"
	elif ! diff -u "$file" "$2" >&2; then
		fail "$1: output differs from the stored one"
	fi
}

list=$("$MKDAMAGE" kinds) || fail "mkdamage kinds"
kinds=0
images=0
every=${CORPUS_EVERY:-1}
[ "$(echo "$list" | wc -l)" -ge 30 ] || fail "mkdamage knows fewer than 30 kinds"
for bs in ${CORPUS_BLOCK_SIZES:-1024 4096}; do
	# populate is deterministic (t_mkdamage): one image per block size,
	# copied for each kind.
	"$MKDAMAGE" populate pristine --block-size "$bs" >/dev/null ||
		fail "populate ($bs)"
	nth=0
	for kind in $(echo "$list" | awk '{ print $1 }'); do
		nth=$((nth + 1))
		[ $(((nth - 1) % every)) -eq 0 ] || continue
		rm -f img img.*
		cp --sparse=always pristine img && cp pristine.manifest img.manifest ||
			fail "copy of the populated image"
		# The 4 KiB image has one group: no backup for the sb-* kinds.
		if ! "$MKDAMAGE" damage img "$kind" >damage.out 2>&1; then
			grep -q "no backup" damage.out && continue
			cat damage.out >&2
			fail "damage $kind ($bs)"
		fi
		"$FSCK" -fn img >n.out 2>&1
		st=$?
		[ $st -eq 4 ] || { cat n.out >&2; fail "$kind ($bs): fsck -fn exits $st, not 4"; }
		compare "$kind.$bs.n" n.out
		"$FSCK" -fy img >y.out 2>&1
		st=$?
		[ $st -eq 1 ] || { cat y.out >&2; fail "$kind ($bs): fsck -fy exits $st, not 1"; }
		compare "$kind.$bs.y" y.out
		"$FSCK" -fn img >n2.out 2>&1
		st=$?
		[ $st -eq 0 ] || { cat n2.out >&2; fail "$kind ($bs): after the repair fsck -fn exits $st"; }
		"$MKDAMAGE" verify img >verify.out 2>&1 ||
			{ cat verify.out >&2; fail "$kind ($bs): files lost or changed by the repair"; }
		images=$((images + 1))
		[ "$bs" = 1024 ] && kinds=$((kinds + 1))
	done
done
[ "$kinds" -ge $((30 / every)) ] || fail "only $kinds kinds of damage"
echo "$kinds kinds of damage, $images damaged images: found, repaired, clean, files intact"
