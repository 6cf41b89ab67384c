#!/bin/sh
# Stands in for a libFuzzer target in a build that cannot make one, so
# the summary lists the target as skipped and says why.
echo "SKIP: $1 is not built: libFuzzer targets need clang with -fsanitize=fuzzer (this build: $2)"
exit 77
