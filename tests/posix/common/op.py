#!/usr/bin/env python3
"""System calls for the tests, one line of output each.

    op.py OP ARGS... [:: OP ARGS...]...

Every operation prints "OP ARGS: RESULT", where RESULT is OK (perhaps
followed by a value) or the errno name (ENOENT, EEXIST, ...), so that the
tests' golden output shows exactly what each call returned.  The exit
status is 0 unless an operation was used wrongly.
"""

import ctypes
import errno
import os
import stat
import sys

libc = ctypes.CDLL(None, use_errno=True)
AT_FDCWD = -100
AT_SYMLINK_NOFOLLOW = 0x100
UTIME_NOW = (1 << 30) - 1
UTIME_OMIT = (1 << 30) - 2
RENAME_FLAGS = {"noreplace": 1, "exchange": 2, "whiteout": 4}
FALLOC_FLAGS = {"keep_size": 1, "punch_hole": 2, "collapse_range": 8,
                "zero_range": 16, "insert_range": 32}


class Usage(Exception):
    pass


def oflags(spec):
    flags = 0
    for name in spec.replace("|", ",").split(","):
        name = name.strip().upper()
        if not name:
            continue
        if not name.startswith("O_"):
            name = "O_" + name
        if not hasattr(os, name):
            raise Usage("unknown open flag " + name)
        flags |= getattr(os, name)
    return flags


def check(ret):
    if ret < 0:
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e))
    return ret


class Timespec(ctypes.Structure):
    _fields_ = [("tv_sec", ctypes.c_long), ("tv_nsec", ctypes.c_long)]


def timespec(spec):
    # now, omit, or SEC[.NSEC]: tv_sec SEC and tv_nsec NSEC (so -1.5 is
    # half a second before the epoch, tv_sec -1 and tv_nsec 500000000)
    if spec == "now":
        return Timespec(0, UTIME_NOW)
    if spec == "omit":
        return Timespec(0, UTIME_OMIT)
    sec, _, frac = spec.partition(".")
    return Timespec(int(sec), int((frac + "000000000")[:9]))


def b(s):
    return os.fsencode(s)


def with_fd(path, flags, fn, mode=0o644):
    fd = os.open(path, flags, mode)
    try:
        return fn(fd)
    finally:
        os.close(fd)


def op_open(a):
    with_fd(a[0], oflags(a[1]), lambda fd: None, int(a[2], 8) if len(a) > 2 else 0o644)


def op_write(a):
    # write PATH FLAGS DATA [OFFSET]: open, seek to OFFSET, write DATA
    def w(fd):
        if len(a) > 3:
            os.lseek(fd, int(a[3]), os.SEEK_SET)
        return os.write(fd, a[2].encode())
    return str(with_fd(a[0], oflags(a[1]), w))


def op_pwrite(a):
    # pwrite PATH DATA OFFSET
    return str(with_fd(a[0], os.O_WRONLY, lambda fd: os.pwrite(fd, a[1].encode(), int(a[2]))))


def op_read(a):
    # read PATH [OFFSET [LENGTH]]
    off = int(a[1]) if len(a) > 1 else 0
    n = int(a[2]) if len(a) > 2 else 1 << 20
    return repr(with_fd(a[0], os.O_RDONLY, lambda fd: os.pread(fd, n, off)))


def op_mkdir(a):
    os.mkdir(a[0], int(a[1], 8) if len(a) > 1 else 0o755)


def op_mknod(a):
    # mknod PATH fifo|sock|chr|blk [MAJOR MINOR] [MODE]
    kinds = {"fifo": stat.S_IFIFO, "sock": stat.S_IFSOCK,
             "chr": stat.S_IFCHR, "blk": stat.S_IFBLK, "reg": stat.S_IFREG}
    kind = kinds[a[1]]
    dev = 0
    rest = a[2:]
    if a[1] in ("chr", "blk"):
        dev = os.makedev(int(rest[0]), int(rest[1]))
        rest = rest[2:]
    mode = int(rest[0], 8) if rest else 0o644
    os.mknod(a[0], kind | mode, dev)


def op_rename2(a):
    flags = 0
    for f in a[2].split(","):
        flags |= RENAME_FLAGS[f]
    check(libc.renameat2(AT_FDCWD, b(a[0]), AT_FDCWD, b(a[1]), flags))


def op_readlink(a):
    t = os.readlink(a[0])
    return t if len(t) <= 80 else "(%d bytes)" % len(t)


def op_truncate(a):
    os.truncate(a[0], int(a[1]))


def op_ftruncate(a):
    with_fd(a[0], os.O_WRONLY, lambda fd: os.ftruncate(fd, int(a[1])))


def op_utimens(a):
    # utimens PATH ATIME MTIME [nofollow]: each now, omit or SEC[.NSEC]
    ts = (Timespec * 2)(timespec(a[1]), timespec(a[2]))
    flags = AT_SYMLINK_NOFOLLOW if len(a) > 3 and a[3] == "nofollow" else 0
    check(libc.utimensat(AT_FDCWD, b(a[0]), ts, flags))


def op_access(a):
    # access PATH MODE: MODE is some of r, w, x, or f
    mode = 0
    for c in a[1]:
        mode |= {"r": os.R_OK, "w": os.W_OK, "x": os.X_OK, "f": os.F_OK}[c]
    check(libc.access(b(a[0]), mode))


def op_stat(a):
    # stat PATH: type, octal permissions, links, owner and size
    # (a directory's size differs between filesystems: not shown)
    st = os.lstat(a[0])
    s = "%s %04o nlink=%d uid=%d gid=%d" % (
        kind(st.st_mode), stat.S_IMODE(st.st_mode), st.st_nlink,
        st.st_uid, st.st_gid)
    if not stat.S_ISDIR(st.st_mode):
        s += " size=%d" % st.st_size
    return s


def kind(mode):
    for test, name in ((stat.S_ISREG, "file"), (stat.S_ISDIR, "dir"),
                       (stat.S_ISLNK, "symlink"), (stat.S_ISFIFO, "fifo"),
                       (stat.S_ISSOCK, "socket"), (stat.S_ISCHR, "chr"),
                       (stat.S_ISBLK, "blk")):
        if test(mode):
            return name
    return "?"


def op_setxattr(a):
    # setxattr PATH NAME VALUE [create|replace]
    flags = 0
    if len(a) > 3:
        flags = {"create": os.XATTR_CREATE, "replace": os.XATTR_REPLACE}[a[3]]
    os.setxattr(a[0], a[1], a[2].encode(), flags)


def op_getxattr(a):
    v = os.getxattr(a[0], a[1])
    return repr(v) if len(v) <= 80 else "(%d bytes)" % len(v)


def op_listxattr(a):
    return " ".join(sorted(os.listxattr(a[0])))


def op_fallocate(a):
    # fallocate PATH MODE OFFSET LENGTH; MODE 0 or keep_size,punch_hole,...
    mode = 0
    for f in a[1].split(","):
        if f != "0":
            mode |= FALLOC_FLAGS[f]
    def fa(fd):
        check(libc.fallocate(fd, mode, ctypes.c_long(int(a[2])), ctypes.c_long(int(a[3]))))
    with_fd(a[0], os.O_RDWR | os.O_CREAT, fa)


def op_seek(a):
    # seek PATH data|hole OFFSET
    whence = {"data": os.SEEK_DATA, "hole": os.SEEK_HOLE}[a[1]]
    return str(with_fd(a[0], os.O_RDONLY, lambda fd: os.lseek(fd, int(a[2]), whence)))


def op_fsync(a):
    with_fd(a[0], os.O_RDONLY, os.fsync)


def op_fdatasync(a):
    with_fd(a[0], os.O_RDONLY, os.fdatasync)


def op_syncfs(a):
    with_fd(a[0], os.O_RDONLY, lambda fd: check(libc.syncfs(fd)))


def op_listdir(a):
    # listdir DIR: how many entries (without . and ..)
    return str(len(os.listdir(a[0])))


def op_mkfiles(a):
    # mkfiles DIR COUNT [PREFIX]: COUNT empty files; on an error, its
    # name and how many were made before it
    d, n = a[0], int(a[1])
    prefix = a[2] if len(a) > 2 else "f"
    for i in range(n):
        try:
            os.close(os.open(os.path.join(d, "%s%d" % (prefix, i)),
                             os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644))
        except OSError as e:
            return "%s after %d" % (errno.errorcode.get(e.errno, e.errno), i)
    return str(n)


def op_rmfiles(a):
    # rmfiles DIR COUNT [PREFIX] [STEP]: unlink PREFIX0, PREFIX{STEP}, ...
    d, n = a[0], int(a[1])
    prefix = a[2] if len(a) > 2 else "f"
    step = int(a[3]) if len(a) > 3 else 1
    k = 0
    for i in range(0, n, step):
        os.unlink(os.path.join(d, "%s%d" % (prefix, i)))
        k += 1
    return str(k)


SIMPLE = {
    "rmdir": lambda a: os.rmdir(a[0]),
    "unlink": lambda a: os.unlink(a[0]),
    "rename": lambda a: os.rename(a[0], a[1]),
    "link": lambda a: os.link(a[0], a[1], follow_symlinks=False),
    "symlink": lambda a: os.symlink(a[0], a[1]),
    "chmod": lambda a: os.chmod(a[0], int(a[1], 8)),
    "chown": lambda a: os.chown(a[0], int(a[1]), int(a[2])),
    "lchown": lambda a: os.lchown(a[0], int(a[1]), int(a[2])),
    "removexattr": lambda a: os.removexattr(a[0], a[1]),
    "chdir": lambda a: os.chdir(a[0]),
}

OPS = {name[3:]: fn for name, fn in globals().items() if name.startswith("op_")}
OPS.update(SIMPLE)


def run(args):
    name, a = args[0], args[1:]
    if name not in OPS:
        raise Usage("unknown operation " + name)
    try:
        r = OPS[name](a)
        res = "OK" if r is None else "OK " + r
    except OSError as e:
        res = errno.errorcode.get(e.errno, str(e.errno))
    except (IndexError, ValueError, KeyError) as e:
        raise Usage("%s: bad arguments (%s)" % (name, e))
    shown = [x if len(x) <= 40 else "(%d bytes)" % len(x) for x in a]
    print(" ".join([name] + shown) + ": " + res, flush=True)


def main():
    argv = sys.argv[1:]
    if not argv:
        print(__doc__, file=sys.stderr)
        return 2
    groups, cur = [], []
    for x in argv:
        if x == "::":
            groups.append(cur)
            cur = []
        else:
            cur.append(x)
    groups.append(cur)
    try:
        for g in groups:
            if g:
                run(g)
    except Usage as e:
        print("op.py: " + str(e), file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
