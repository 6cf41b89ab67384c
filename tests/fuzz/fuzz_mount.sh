#!/bin/sh
# fuzz_mount.sh EXE CORPUS [libFuzzer options]: run the mount fuzzer on
# CORPUS, made if missing; an empty one gets the corruption corpus's kinds
# as seeds (fuzz_mount.c), and what the run grows stays in it.
exe=$1 corpus=$2
shift 2
mkdir -p "$corpus" || exit 1
exec "$exe" "$@" "$corpus"
