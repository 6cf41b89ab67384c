#!/bin/sh
# The core never tests PG_fs_misc: outside the generated accessors, the
# only places that name it are the waitable pair in page.c and the
# prep_new_page mask in pc_i.h.
set -u
dir=${PC_SRC:?PC_SRC must name the pagecache directory}
echo "to rerun: PC_SRC=$dir $0"
hits=$(grep -n 'PG_fs_misc\|MiscFS' "$dir"/*.c "$dir"/pc_i.h |
	grep -v '^[^:]*:[0-9]*:[[:space:]]*/\{0,1\}\*' |
	grep -v 'pc_page_wait_bit(page, PG_fs_misc)' |
	grep -v 'clear_bit_wake(page, PG_fs_misc)' |
	grep -v 'PF(PG_fs_misc) | PF(PG_mappedtodisk)')
if [ -n "$hits" ]; then
	echo "FAIL: the core uses PG_fs_misc:" >&2
	echo "$hits" >&2
	exit 1
fi
grep -q 'PF(PG_fs_misc)' "$dir/pc_i.h" || { echo "FAIL: prep mask lost" >&2; exit 1; }
exit 0
