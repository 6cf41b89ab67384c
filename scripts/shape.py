#!/usr/bin/python3
"""shape.py - the source tree's shape in numbers, for reviews of its
structure: lines of C per folder, prototypes per header, the longest
functions, and which files test "is this inode one of memory's".

    scripts/shape.py [ROOT]
"""
import os
import re
import sys

FOLDERS = ['util', 'bdev', 'pagecache', 'journal', 'format', 'fs', 'vfs',
           'fsck', 'tools', 'daemon']
PROTO = re.compile(r'^[a-z][\w \*]*\b(\w+)\s*\([^;{]*\)\s*(__attribute__.*)?;',
                   re.S)
FUNC_START = re.compile(r'^[a-z][\w \*]*\b(\w+)\(')
GATE = re.compile(r'mfs_(special|ctl|region)_(ino|name)\(|->rgn\b|->text\b|'
                  r'MFS_(CTL_DIR|STATS|REGIONS_DIR)_INO|MFS_REGION_INO')


def sources(root, folder):
    base = os.path.join(root, folder)
    for dirpath, _, names in os.walk(base):
        for name in sorted(names):
            if name.endswith(('.c', '.h')):
                yield os.path.join(dirpath, name)


def lines(path):
    with open(path, encoding='utf-8', errors='replace') as f:
        return f.read().split('\n')


def prototypes(path):
    """Function declarations at file scope (statements joined to ';')."""
    text = '\n'.join(lines(path))
    text = re.sub(r'/\*.*?\*/', '', text, flags=re.S)
    count, depth, stmt = 0, 0, ''
    for ch in text:
        if ch == '{':
            depth += 1
        elif ch == '}':
            depth -= 1
            stmt = ''
            continue
        if depth:
            continue
        stmt += ch
        if ch == ';':
            s = ' '.join(stmt.split())
            if PROTO.match(s) and not s.startswith(('typedef', 'struct {')):
                count += 1
            stmt = ''
    return count


def functions(path):
    """(lines, name) of each function defined at file scope."""
    out, name, start = [], None, 0
    src = lines(path)
    for i, line in enumerate(src):
        m = FUNC_START.match(line)
        if m and not line.rstrip().endswith(';'):
            name, start = m.group(1), i
        elif line == '}' and name:
            out.append((i - start + 1, name))
            name = None
    return out


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else '.'
    print('lines of C per folder')
    funcs = []
    for folder in FOLDERS:
        files = list(sources(root, folder))
        if not files:
            continue
        total = sum(len(lines(p)) - 1 for p in files)
        print(f'  {folder:10} {total:6} lines in {len(files)} files')
        for p in files:
            if p.endswith('.c'):
                funcs += [(n, f, os.path.relpath(p, root))
                          for n, f in functions(p)]
    print('prototypes per header')
    for folder in FOLDERS:
        for p in sources(root, folder):
            if p.endswith('.h'):
                print(f'  {os.path.relpath(p, root):28} {prototypes(p):4}')
    print('longest functions')
    for n, f, p in sorted(funcs, reverse=True)[:8]:
        print(f'  {n:4} {f} ({p})')
    print('files outside a dispatch testing for an inode of memory')
    for folder in ('fs', 'vfs'):
        for p in sources(root, folder):
            hits = sum(1 for line in lines(p) if GATE.search(line))
            if hits:
                print(f'  {os.path.relpath(p, root):28} {hits:4}')


if __name__ == '__main__':
    main()
