"""The workload of t_damage_mount.sh on a mounted damaged image.

    damage_workload.py MOUNTPOINT continue|remount-ro

In order: every name read (lstat, readlink, listxattr and getxattr, every
regular file's bytes up to 8 MiB); every entry renamed, within its
directory or across (up into the parent, down into a sibling directory),
deepest directories first; the whole tree removed with rm -rf; a file
created, written and removed in every directory that survived; a file
written, fsynced, renamed and removed, and a directory made and removed,
at the top.  The control and region directories are read, never changed.

Each error met prints a line "ERR NAME OP PATH" (NAME as errno names it).
One a damaged image may not give ends the run: a line "FAIL: ..." and
exit 1.  With remount-ro, the first EIO or EUCLEAN met must have made the
filesystem read-only: a create right after it, and another at the end,
must fail with EROFS.
"""
import errno
import fcntl
import os
import stat
import subprocess
import sys

MNT = os.fsencode(sys.argv[1])
REMOUNT_RO = sys.argv[2] == "remount-ro"
SPECIAL = {b".miscfs", b".regions"}         # in memory: read, never changed
PROBE = MNT + b"/.probe"                    # made first, for the read-only check
READ_MAX = 8 << 20
FS_IOC_GETFLAGS = 0x80086601
FS_IMMUTABLE_FL, FS_APPEND_FL = 0x10, 0x20


def overflow_id(kind):
    try:
        with open("/proc/sys/fs/overflow" + kind) as f:
            return int(f.read())
    except (OSError, ValueError):
        return 65534


OVERFLOW_UID, OVERFLOW_GID = overflow_id("uid"), overflow_id("gid")

# What a damaged image may give, or the workload on what it has left:
# damage (EIO, EUCLEAN), names gone or changed under it (ENOENT, ENOTDIR,
# EISDIR, ENOTEMPTY, EEXIST, ESTALE), a full or read-only filesystem
# (ENOSPC, EROFS), an attribute gone (ENODATA), a damaged link count at
# its limit (EMLINK); and EPERM and EACCES where the damage made a file
# immutable or append-only, or gave it an owner the kernel cannot map
# (see note()).
ALLOWED = {errno.EIO, errno.EUCLEAN, errno.ENOENT, errno.ENOTDIR, errno.EISDIR,
           errno.ENOTEMPTY, errno.EEXIST, errno.ESTALE, errno.ENOSPC, errno.EROFS,
           errno.ENODATA, errno.EMLINK}
DAMAGE = {errno.EIO, errno.EUCLEAN}
BY_MESSAGE = {os.strerror(e): e for e in errno.errorcode}

damage_met = False
probes = 0
FAILED = object()                           # what call() returns for an error
readable = []                               # directories read without an error


def out(line):
    sys.stdout.write(line + "\n")


def fail(msg):
    out("FAIL: " + msg)
    sys.stdout.flush()
    sys.exit(1)


def show(path):
    return os.fsdecode(path).encode("unicode_escape").decode()


def probe():
    """A create on a filesystem made read-only by damage fails with EROFS.
    The create's lookup comes first, and fails in a directory that is
    damaged or gone: then the next directory is tried (the one made for
    this at the start, those read so far, the top).  A line "RO PATH"
    when one gave EROFS, "RO-UNSEEN" when none could say."""
    global probes
    probes += 1
    for d in [PROBE] + readable[:20] + [MNT]:
        path = d + b"/.p%d" % probes
        try:
            fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except OSError as e:
            if e.errno in DAMAGE | {errno.ENOENT, errno.ENOTDIR, errno.ESTALE}:
                continue
            if e.errno != errno.EROFS:
                fail("errors=remount-ro: a create after damage gave %s, not EROFS (%s)"
                     % (errno.errorcode.get(e.errno, e.errno), show(path)))
            out("RO %s" % show(path))
            return
        os.close(fd)
        fail("errors=remount-ro: a create after damage succeeded (%s)" % show(path))
    out("RO-UNSEEN")


def protected(path):
    """Whether path is a file or directory marked immutable or append-only
    (a flags field the damage set), which refuses a change with EPERM."""
    try:
        st = os.lstat(path)
        if not stat.S_ISREG(st.st_mode) and not stat.S_ISDIR(st.st_mode):
            return False
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW)
        try:
            flags = fcntl.ioctl(fd, FS_IOC_GETFLAGS, bytes(8))
        finally:
            os.close(fd)
    except OSError:
        return False
    return bool(int.from_bytes(flags[:4], "little") & (FS_IMMUTABLE_FL | FS_APPEND_FL))


def unmapped(path):
    """Whether path is owned by a user or group the damage set to -1, which
    the kernel cannot map: it shows as the overflow id, and root's override
    of permissions does not apply to it, so a change gives EACCES, and a
    rename or removal of it EOVERFLOW (the kernel's may_delete, as on ext4)."""
    try:
        st = os.lstat(path)
    except OSError:
        return False
    return st.st_uid == OVERFLOW_UID or st.st_gid == OVERFLOW_GID


# Errors allowed only where the damage explains them: (test, what it says).
EXPLAINED = {
    errno.EPERM: (protected, "is immutable or append-only"),
    errno.EACCES: (unmapped, "is owned by an id the kernel cannot map"),
    errno.EOVERFLOW: (unmapped, "is owned by an id the kernel cannot map"),
}
explained = set()                           # those seen explained so far


def note(op, path, err, args=()):
    """An error met: allowed, or the end of the run.  EPERM and EACCES are
    allowed where a path the call named, or its directory, explains them
    (for rm, whose paths are in its messages, once the workload's own calls
    met one so explained)."""
    global damage_met
    name = errno.errorcode.get(err, str(err))
    out("ERR %s %s %s" % (name, op, show(path)))
    if err in EXPLAINED:
        test, what = EXPLAINED[err]
        paths = [a for a in args if isinstance(a, bytes)]
        if any(test(p) for p in paths + [os.path.dirname(p) for p in paths]):
            explained.add(err)
            return
        if not (op == "rm" and err in explained):
            fail("%s %s: %s, and nothing it names %s" % (op, show(path), name, what))
        return
    if err not in ALLOWED:
        fail("%s %s: %s, not an error of a damaged image" % (op, show(path), os.strerror(err)))
    if err in DAMAGE and not damage_met:
        damage_met = True
        if REMOUNT_RO:
            probe()


def call(op, path, fn, *args, **kw):
    """fn(*args, **kw), or FAILED with the error noted."""
    try:
        return fn(*args, **kw)
    except OSError as e:
        note(op, path, e.errno, args)
        return FAILED


def listdir(d):
    """The names in d; one the kernel would not take back as a name (empty,
    or with a "/") is left alone, so that no path leaves the mount."""
    names = call("readdir", d, os.listdir, d)
    if names is FAILED:
        return []
    readable.append(d)
    return [n for n in names if n and b"/" not in n]


def read_file(path):
    fd = call("open", path, os.open, path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    if fd is FAILED:
        return
    done = 0
    while done < READ_MAX:
        b = call("read", path, os.read, fd, 65536)
        if b is FAILED or not b:
            break
        done += len(b)
    call("close", path, os.close, fd)


def read_xattrs(path):
    names = call("listxattr", path, os.listxattr, path, follow_symlinks=False)
    for n in [] if names is FAILED else names:
        call("getxattr", path, os.getxattr, path, n, follow_symlinks=False)


def entries(d):
    names = listdir(d)
    if d == MNT:
        names = [n for n in names if n not in SPECIAL and n != b".probe"]
    return names


def read_tree(d, depth, seen, dirs):
    """Read everything under directory d; dirs gets the directories of the
    image (not the control and region ones), deepest first."""
    for n in listdir(d):
        p = d + b"/" + n
        st = call("lstat", p, os.lstat, p)
        if st is FAILED:
            continue
        read_xattrs(p)
        if stat.S_ISDIR(st.st_mode):
            if depth < 32 and (st.st_dev, st.st_ino) not in seen:
                seen.add((st.st_dev, st.st_ino))
                ours = dirs if d != MNT or (n not in SPECIAL and p != PROBE) else []
                read_tree(p, depth + 1, seen, ours)
        elif stat.S_ISREG(st.st_mode):
            read_file(p)
        elif stat.S_ISLNK(st.st_mode):
            call("readlink", p, os.readlink, p)
    dirs.append(d)


def is_dir(p):
    st = call("lstat", p, os.lstat, p)
    return st is not FAILED and stat.S_ISDIR(st.st_mode)


def rename_all(dirs):
    """Every entry renamed: within its directory, up into the parent, or
    down into a sibling directory, by turns."""
    k = 0
    for d in dirs:
        names = entries(d)
        subdirs = [n for n in names if is_dir(d + b"/" + n)]   # as they are now named
        for i, n in enumerate(names):
            k += 1
            src = d + b"/" + n
            others = [s for s in subdirs if s != n]
            if i % 3 == 1 and d != MNT:
                dst = os.path.dirname(d) + b"/up%d" % k
            elif i % 3 == 2 and others:
                dst = d + b"/" + others[k % len(others)] + b"/dn%d" % k
            else:
                dst = d + b"/mv%d" % k
            if call("rename", src, os.rename, src, dst) is not FAILED and n in subdirs:
                subdirs.remove(n)
                if os.path.dirname(dst) == d:
                    subdirs.append(os.path.basename(dst))


def remove_all():
    """rm -rf of everything at the top; its errors noted from its messages."""
    top = [MNT + b"/" + n for n in entries(MNT)]
    if not top:
        return
    r = subprocess.run([b"rm", b"-rf", b"--one-file-system", b"--"] + top,
                       stderr=subprocess.PIPE)
    for line in r.stderr.decode(errors="replace").splitlines():
        msg = line.rsplit(": ", 1)[-1]
        if msg not in BY_MESSAGE:
            fail("rm: %s" % line)
        note("rm", line.encode(), BY_MESSAGE[msg])


def survivors(d, depth, seen, dirs):
    dirs.append(d)
    for n in entries(d):
        p = d + b"/" + n
        st = call("lstat", p, os.lstat, p)
        if st is not FAILED and stat.S_ISDIR(st.st_mode) and depth < 32 and \
                (st.st_dev, st.st_ino) not in seen:
            seen.add((st.st_dev, st.st_ino))
            survivors(p, depth + 1, seen, dirs)


def create_in(d):
    p = d + b"/.new"
    fd = call("create", p, os.open, p, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
    if fd is FAILED:
        return
    call("write", p, os.write, fd, b"x" * 3000)
    call("close", p, os.close, fd)
    call("unlink", p, os.unlink, p)


def top_changes():
    p, p2, nd = MNT + b"/new", MNT + b"/new2", MNT + b"/nd"
    fd = call("create", p, os.open, p, os.O_CREAT | os.O_WRONLY | os.O_TRUNC, 0o644)
    if fd is not FAILED:
        call("write", p, os.write, fd, os.urandom(20000))
        call("fsync", p, os.fsync, fd)
        call("close", p, os.close, fd)
        if call("rename", p, os.rename, p, p2) is not FAILED:
            call("unlink", p2, os.unlink, p2)
    if call("mkdir", nd, os.mkdir, nd) is not FAILED:
        call("rmdir", nd, os.rmdir, nd)


def main():
    if REMOUNT_RO:
        call("mkdir", PROBE, os.mkdir, PROBE)
    dirs = []
    read_tree(MNT, 0, set(), dirs)
    rename_all(dirs)
    remove_all()
    left = []
    survivors(MNT, 0, set(), left)
    for d in left:
        create_in(d)
    top_changes()
    if REMOUNT_RO and damage_met:
        probe()
    out("DONE damage=%d" % damage_met)


main()
