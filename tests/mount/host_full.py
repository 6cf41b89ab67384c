"""Workloads of t_host_full.sh on a mounted miscfs whose image fills its host.

    host_full.py STATE fill DIR PREFIX SIZE COUNT [--until-fail]
    host_full.py STATE rewrite DIR ROUNDS [--until-fail]
    host_full.py STATE late DIR NAME SIZE LOG
    host_full.py STATE verify DIR

STATE (JSON) maps each file name to the SHA-256 of the contents its last
fsync made durable, or to null when a later write or fsync of it failed
(its contents are then unknown).  Files are written in full with write(2)
(a short write goes on, as a program would) and fsync(2).

fill writes COUNT new files of SIZE bytes, each fsynced.  rewrite
rewrites every file known good in place with new bytes, ROUNDS times.
Without --until-fail every one must succeed; with it, the first failure
ends the run after three more attempts, and a run that never failed is
an error.  A failure must be ENOSPC, EIO or EROFS: never another errno,
never a hang (the caller runs this under timeout).  late writes a file
without fsync and keeps it open until the daemon's log LOG says the
journal aborted (its data failed on the way home without anyone asking),
then wants fsync of it to fail.  verify wants every file known good to
hold exactly its bytes.

Prints "ok N" (files fsynced) and "failed NAME ERRNO" lines; exits 1 with
a line saying why when the contract above is broken.
"""
import errno
import hashlib
import json
import os
import sys
import time

ALLOWED = {errno.ENOSPC, errno.EIO, errno.EROFS}


def die(msg):
    print("host_full.py: " + msg, file=sys.stderr)
    sys.exit(1)


def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except FileNotFoundError:
        return {}


def save(path, state):
    with open(path + ".new", "w") as f:
        json.dump(state, f)
    os.replace(path + ".new", path)


def check_errno(e, what):
    if e.errno not in ALLOWED:
        die("%s: %s, expected ENOSPC, EIO or EROFS" % (what, os.strerror(e.errno)))
    return e.errno


def write_all(fd, data):
    done = 0
    while done < len(data):
        n = os.pwrite(fd, data[done:], done)
        if n <= 0:
            raise OSError(errno.EIO, "write returned %d" % n)
        done += n


def put(path, data, create):
    """(0 once fsync returned 0, else the errno; whether the file was
    opened).  An error of close after fsync is checked, not counted."""
    fd = None
    try:
        flags = os.O_WRONLY | (os.O_CREAT | os.O_EXCL if create else 0)
        fd = os.open(path, flags, 0o644)
        write_all(fd, data)
        os.fsync(fd)
    except OSError as e:
        return check_errno(e, path), fd is not None
    finally:
        if fd is not None:
            try:
                os.close(fd)
            except OSError as e:
                check_errno(e, "close " + path)
    return 0, True


class Run:
    def __init__(self, state_path, until_fail):
        self.path = state_path
        self.state = load(state_path)
        self.until_fail = until_fail
        self.ok = 0
        self.failures = 0

    def one(self, name, path, data, create):
        if self.failures:
            self.failures += 1
        # Unknown until fsync says otherwise, and saved first: a run
        # killed in a hung call leaves nothing claimed.
        before = self.state.get(name)
        self.state[name] = None
        save(self.path, self.state)
        err, opened = put(path, data, create)
        if not opened:
            self.state[name] = before      # not touched
        if err == 0:
            self.state[name] = hashlib.sha256(data).hexdigest()
            self.ok += 1
        else:
            print("failed %s %s" % (name, errno.errorcode[err]))
            if not self.until_fail:
                die("%s: %s" % (name, os.strerror(err)))
            self.failures = max(self.failures, 1)
        save(self.path, self.state)
        return self.failures > 3

    def end(self):
        print("ok %d" % self.ok)
        if self.until_fail and not self.failures:
            die("no write failed")


def main(argv):
    state_path, cmd, d = argv[1], argv[2], argv[3]
    until = "--until-fail" in argv
    args = [a for a in argv[4:] if a != "--until-fail"]
    run = Run(state_path, until)
    if cmd == "fill":
        prefix, size, count = args[0], int(args[1]), int(args[2])
        for i in range(count):
            name = "%s%03d" % (prefix, i)
            if run.one(name, os.path.join(d, name), os.urandom(size), True):
                break
        run.end()
    elif cmd == "rewrite":
        good = sorted(n for n, h in run.state.items() if h)
        sizes = {n: os.stat(os.path.join(d, n)).st_size for n in good}
        stop = False
        for _ in range(int(args[0])):
            for name in good:
                if run.state[name] is None:
                    continue
                stop = run.one(name, os.path.join(d, name), os.urandom(sizes[name]), False)
                if stop:
                    break
            if stop:
                break
        run.end()
    elif cmd == "late":
        name, size, log = args[0], int(args[1]), args[2]
        path = os.path.join(d, name)
        run.state[name] = None
        save(state_path, run.state)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        write_all(fd, os.urandom(size))
        for _ in range(1200):
            with open(log) as f:
                if "journal aborted:" in f.read():
                    break
            time.sleep(0.1)
        else:
            die("no abort within 120 s of writing %s" % name)
        try:
            os.fsync(fd)
            die("fsync of %s returned 0: its data had failed on its way home" % path)
        except OSError as e:
            print("fsync %s %s" % (name, errno.errorcode[check_errno(e, path)]))
        finally:
            try:
                os.close(fd)
            except OSError as e:
                check_errno(e, "close " + path)
    elif cmd == "verify":
        n = 0
        for name, h in sorted(run.state.items()):
            if not h:
                continue
            try:
                with open(os.path.join(d, name), "rb") as f:
                    got = hashlib.sha256(f.read()).hexdigest()
            except OSError as e:
                die("%s, fsynced, cannot be read: %s" % (name, e.strerror))
            if got != h:
                die("%s, fsynced, lost its contents" % name)
            n += 1
        print("verified %d" % n)
    else:
        die("unknown command " + cmd)


if __name__ == "__main__":
    main(sys.argv)
