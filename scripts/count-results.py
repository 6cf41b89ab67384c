#!/usr/bin/env python3
"""Sum the results of meson test runs: count-results.py FAILED_BUILDS DIR...

Reads each DIR/meson-logs/testlog.json, prints failures and skips, and ends
with the line "N passed, N failed".  Exits non-zero if anything failed.

Only OK and EXPECTEDFAIL pass and only SKIP (exit status 77) skips; every
other result (FAIL, TIMEOUT, ERROR, UNEXPECTEDPASS, ...) counts as failed.
A skip is shown with the reason the test printed, so a target that was not
built, or a fuzzer whose crash looked like a skip, is visible."""
import json
import os
import sys

PASS = {"OK", "EXPECTEDFAIL"}
SKIP = {"SKIP"}


def last_line(t):
    """The last non-empty line a test printed: a skip says why there."""
    text = (t.get("stdout") or "") + (t.get("stderr") or "")
    lines = [l.strip() for l in text.splitlines() if l.strip()]
    return lines[-1] if lines else "no reason given"


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
                print("skipped  %s (%s)" % (name, last_line(t)))
            else:
                failed += 1
                print("FAILED   %s (%s): meson test -C %s '%s' -v"
                      % (name, t["result"], d, t["name"].split(" / ")[-1]))
    if skipped:
        print("%d skipped" % skipped)
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0

sys.exit(main())
