#!/usr/bin/env python3
"""A failing fuzzer is counted as failed, never as skipped.

libFuzzer ends a crash, a sanitizer report, a leak and a slow input with
exit status 77 unless told otherwise, and meson takes 77 for a skip.  So:
every libFuzzer target of this build must be run with -error_exitcode and
-timeout_exitcode set to 1, and scripts/count-results.py must count every
result but OK, EXPECTEDFAIL and SKIP as failed and show why a test
skipped."""
import json
import os
import subprocess
import sys
import tempfile

BUILD, COUNT = os.environ["BUILD_ROOT"], os.environ["COUNT_RESULTS"]


def fail(msg):
    print("FAIL: " + msg, file=sys.stderr)
    sys.exit(1)


def check_fuzz_commands():
    tests = json.load(open(os.path.join(BUILD, "meson-info", "intro-tests.json")))
    fuzz = [t for t in tests if any(s.endswith(":fuzz") for s in t["suite"])
            and t["name"] != "t_fuzz_counted"]
    if not fuzz:
        fail("no fuzz tests in %s" % BUILD)
    for t in fuzz:
        if t["cmd"][0].endswith("not_built.sh"):
            print("ok: %s is not built here, and is listed as skipped" % t["name"])
            continue
        for flag in ("-error_exitcode=1", "-timeout_exitcode=1"):
            if flag not in t["cmd"]:
                fail("%s runs without %s: a crash would be a skip" % (t["name"], flag))
        print("ok: %s maps a crash or a timeout to exit status 1" % t["name"])


def result(name, res, out=""):
    return json.dumps({"name": "miscfs:fuzz / " + name, "result": res, "stdout": out})


def check_counting():
    rows = [result("a", "OK"), result("b", "EXPECTEDFAIL"), result("c", "FAIL"),
            result("d", "TIMEOUT"), result("e", "ERROR"), result("f", "UNEXPECTEDPASS"),
            result("g", "SKIP", "ran\nSKIP: no libFuzzer here\n")]
    with tempfile.TemporaryDirectory() as tmp:
        os.makedirs(os.path.join(tmp, "meson-logs"))
        with open(os.path.join(tmp, "meson-logs", "testlog.json"), "w") as f:
            f.write("\n".join(rows) + "\n")
        run = subprocess.run([sys.executable, COUNT, "1", tmp], capture_output=True, text=True)
    lines = run.stdout.splitlines()
    if run.returncode == 0:
        fail("count-results.py exits 0 with failures:\n" + run.stdout)
    if lines[-1] != "2 passed, 5 failed":
        fail("last line %r, expected '2 passed, 5 failed' (a failed build, FAIL, "
             "TIMEOUT, ERROR, UNEXPECTEDPASS)" % lines[-1])
    for name in "cdef":
        if not any(l.startswith("FAILED") and ("/ %s " % name) in l for l in lines):
            fail("test %s not listed as FAILED:\n%s" % (name, run.stdout))
    if not any("/ g (SKIP: no libFuzzer here)" in l for l in lines):
        fail("the skip is not shown with its reason:\n" + run.stdout)
    print("ok: count-results.py: " + lines[-1])


check_fuzz_commands()
check_counting()
