#!/usr/bin/env python3
"""docs/FORMAT.md matches what mkfs.miscfs writes.

The offsets and sizes are taken from the document's tables, the bytes from
a fresh image, and the expected values from miscfs-debug: a field that the
document places wrongly reads back as something else and fails."""
import os
import re
import subprocess
import sys
import tempfile

MKFS, DEBUGFS, DOC = os.environ["MKFS"], os.environ["DEBUGFS"], os.environ["FORMAT_MD"]


def fail(msg):
    print("FAIL: " + msg, file=sys.stderr)
    sys.exit(1)


def doc_tables():
    """{section heading: {field: (offset, size)}} from the document."""
    tables, section = {}, None
    row = re.compile(r"^\| (\d+) \| (\d+) \| `?([a-z_]+)")
    for line in open(DOC):
        if line.startswith("#"):
            section = line.strip("# \n")
            continue
        m = row.match(line)
        if m and section:
            tables.setdefault(section, {})[m.group(3)] = (int(m.group(1)), int(m.group(2)))
    return tables


def debug(img, *cmd):
    out = subprocess.run([DEBUGFS, img, *cmd], capture_output=True, text=True)
    if out.returncode:
        fail("miscfs-debug %s: %s" % (" ".join(cmd), out.stderr))
    return out.stdout


def keys(text):
    return dict(l.split(": ", 1) for l in text.splitlines() if ": " in l)


class Struct:
    """Fields of one documented structure at a byte offset of the image."""

    def __init__(self, data, base, table, name):
        self.data, self.base, self.table, self.name = data, base, table, name

    def raw(self, field):
        if field not in self.table:
            fail("%s: field %s is not documented" % (self.name, field))
        off, size = self.table[field]
        return self.data[self.base + off:self.base + off + size]

    def int(self, field, signed=False):
        return int.from_bytes(self.raw(field), "little", signed=signed)


def expect(what, got, want):
    if str(got) != str(want):
        fail("%s: image holds %r at the documented place, debug says %r" % (what, got, want))


def check_super(sb, d):
    expect("s_magic", "0x%08x" % sb.int("s_magic"), d["magic"])
    expect("s_log_block_size", 1024 << sb.int("s_log_block_size"), d["block size"])
    pairs = {
        "s_blocks_count": "blocks", "s_free_blocks_count": "free blocks",
        "s_inodes_count": "inodes", "s_free_inodes_count": "free inodes",
        "s_first_data_block": "first data block",
        "s_blocks_per_group": "blocks per group",
        "s_inodes_per_group": "inodes per group", "s_groups_count": "groups",
        "s_gdt_blocks": "descriptor blocks", "s_inode_size": "inode size",
        "s_first_ino": "first inode", "s_journal_inum": "journal inode",
        "s_journal_blocks": "journal blocks", "s_region_count": "regions",
        "s_region_table": "region table block", "s_regions_start": "regions start",
        "s_device_blocks": "device blocks", "s_block_group_nr": "copy in group",
        "s_mkfs_time": "created", "s_mnt_count": "mount count",
        "s_last_orphan": "orphan list head",
    }
    for field, key in pairs.items():
        expect(field, sb.int(field), d[key])
    expect("s_max_mnt_count", sb.int("s_max_mnt_count", True), d["max mount count"])
    expect("s_csum_seed", "0x%016x" % sb.int("s_csum_seed"), d["checksum seed"])
    expect("s_checksum", "0x%08x" % sb.int("s_checksum"), d["checksum"])
    expect("s_volume_name", sb.raw("s_volume_name").rstrip(b"\0").decode(), d["label"])
    u = sb.raw("s_uuid").hex()
    expect("s_uuid", "-".join([u[:8], u[8:12], u[12:16], u[16:20], u[20:]]), d["uuid"])
    expect("s_state", sb.int("s_state"), 1)


def check_groups(data, tables, bs, fdb, ngroups, text):
    lines = [l for l in text.splitlines() if l.startswith("group ")]
    expect("group count", len(lines), ngroups)
    table = tables["Group descriptor (64 bytes)"]
    itables = []
    for g, line in enumerate(lines):
        gd = Struct(data, (fdb + 1) * bs + 64 * g, table, "group descriptor")
        want = "group %d: block bitmap %d, inode bitmap %d, inode table %d, " \
               "free blocks %d, free inodes %d, directories %d, checksum 0x%08x" % (
                   g, gd.int("bg_block_bitmap"), gd.int("bg_inode_bitmap"),
                   gd.int("bg_inode_table"), gd.int("bg_free_blocks_count"),
                   gd.int("bg_free_inodes_count"), gd.int("bg_used_dirs_count"),
                   gd.int("bg_checksum"))
        expect("descriptor %d" % g, want, line)
        itables.append(gd.int("bg_inode_table"))
    return itables


def check_inode(data, tables, bs, itable, ino, d):
    table = tables["Inodes (256 bytes)"]
    node = Struct(data, itable * bs + (ino - 1) * 256, table, "inode")
    expect("i_mode", "%04o" % (node.int("i_mode") & 0o7777), d["mode"])
    for field, key in {"i_links_count": "links", "i_uid": "uid", "i_gid": "gid",
                       "i_size": "size", "i_blocks": "sectors",
                       "i_generation": "generation"}.items():
        expect("inode %d %s" % (ino, field), node.int(field), d[key])
    expect("i_checksum", "0x%08x" % node.int("i_checksum"), d["checksum"])
    raw = node.raw("i_block")
    blocks = [int.from_bytes(raw[i:i + 4], "little") for i in range(0, 60, 4)]
    expect("i_block", " ".join(map(str, blocks)), d["block map"].strip())
    return blocks


def check_dir(data, tables, bs, block, listing):
    table = tables["Directories"]
    names, off = [], 0
    while off < bs - 12:
        de = Struct(data, block * bs + off, table, "directory entry")
        n = de.int("name_len")
        name = data[block * bs + off + 8:block * bs + off + 8 + n].decode()
        names.append("%d %s" % (de.int("inode"), name))
        off += de.int("rec_len")
    want = [" ".join(l.split(" ")[::2]) for l in listing.splitlines()]
    expect("root directory", names, want)


def check_regions(data, tables, bs, sb, text):
    start = sb.int("s_region_table") * bs
    hdr = Struct(data, start, tables["Reserved regions"], "region header")
    expect("rh_magic", hdr.raw("rh_magic"), b"MRGN")
    lines = [l for l in text.splitlines() if l.startswith("region ")]
    expect("region count", hdr.int("rh_count"), len(lines))
    for i, line in enumerate(lines):
        e = Struct(data, start + 64 + 64 * i, tables["Reserved regions"], "region entry")
        want = "region %s: start %d, blocks %d, bytes %d" % (
            e.raw("re_name").rstrip(b"\0").decode(), e.int("re_start"),
            e.int("re_blocks"), e.int("re_bytes"))
        expect("region %d" % i, want, line)


def check_mmp(data, tables, bs, sb, d, m):
    expect("s_mmp_block", sb.int("s_mmp_block"), d["mmp block"])
    expect("s_mmp_interval", sb.int("s_mmp_interval"), d["mmp interval"])
    b = Struct(data, sb.int("s_mmp_block") * bs, tables["Multi-mount protection"], "MMP block")
    expect("mmp_magic", b.raw("mmp_magic"), b"MMMP")
    expect("mmp_seq", "0x%08x" % b.int("mmp_seq"), m["sequence"])
    expect("mmp_time", b.int("mmp_time"), m["stamped"].split(" ")[0])
    expect("mmp_nodename", b.raw("mmp_nodename").rstrip(b"\0").decode(), m["node"])
    expect("mmp_program", b.raw("mmp_program").rstrip(b"\0").decode(), m["program"])
    expect("mmp_pid", b.int("mmp_pid"), m["pid"])
    expect("mmp_interval", b.int("mmp_interval"), m["interval"])


def check_journal(data, tables, bs, d):
    j = Struct(data, int(d["journal superblock block"]) * bs,
               tables["Journal superblock (first 512 bytes of journal block 0)"],
               "journal superblock")
    expect("journal magic", data[j.base:j.base + 4], b"MJNL")
    for field, key in {"s_block_size": "journal block size", "s_maxlen": "journal length",
                       "s_first": "journal first block", "s_sequence": "journal sequence",
                       "s_start": "journal start",
                       "s_max_trans_blocks": "journal max transaction"}.items():
        expect(field, j.int(field), d[key])
    expect("journal s_checksum", "0x%08x" % j.int("s_checksum"), d["journal checksum"])


def main():
    tables = doc_tables()
    with tempfile.TemporaryDirectory() as tmp:
        img = os.path.join(tmp, "img")
        for bs in (1024, 4096):
            subprocess.run([MKFS, "-q", "-F", "-b", str(bs), "-L", "doc", "-R", "r1:64K",
                            "-R", "r2:5000", "-O", "mmp", "-E", "mmp_update_interval=7",
                            img, "48M"], check=True)
            data = open(img, "rb").read()
            d = keys(debug(img, "super"))
            sb = Struct(data, 1024, tables["Superblock (1024 bytes)"], "superblock")
            check_super(sb, d)
            fdb = sb.int("s_first_data_block")
            itables = check_groups(data, tables, bs, fdb, sb.int("s_groups_count"),
                                   debug(img, "groups"))
            root = check_inode(data, tables, bs, itables[0], 2, keys(debug(img, "inode", "2")))
            check_inode(data, tables, bs, itables[0], 8, keys(debug(img, "inode", "8")))
            check_dir(data, tables, bs, root[0], debug(img, "ls", "/"))
            check_regions(data, tables, bs, sb, debug(img, "regions"))
            check_journal(data, tables, bs, keys(debug(img, "journal")))
            check_mmp(data, tables, bs, sb, d, keys(debug(img, "mmp")))
            print("ok: %d-byte blocks match docs/FORMAT.md" % bs)


main()
