#!/usr/bin/env python3
"""Sum the results of meson test runs: count-results.py FAILED_BUILDS DIR...

Reads each DIR/meson-logs/testlog.json, prints failures and skips, and ends
with the line "N passed, N failed".  Exits non-zero if anything failed."""
import json
import os
import sys

PASS = {"OK", "EXPECTEDFAIL"}
SKIP = {"SKIP"}

def main():
    failed_builds = int(sys.argv[1])
    passed, failed, skipped = 0, failed_builds, 0
    for d in sys.argv[2:]:
        log = os.path.join(d, "meson-logs", "testlog.json")
        if not os.path.exists(log):
            continue
        for line in open(log):
            t = json.loads(line)
            name = "%s: %s" % (os.path.basename(d), t["name"])
            if t["result"] in PASS:
                passed += 1
            elif t["result"] in SKIP:
                skipped += 1
                print("skipped  " + name)
            else:
                failed += 1
                print("FAILED   %s (%s)" % (name, t["result"]))
    if skipped:
        print("%d skipped" % skipped)
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0

sys.exit(main())
