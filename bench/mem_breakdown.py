#!/usr/bin/env python3
"""mem_breakdown.py - where a process's resident memory goes, from /proc/PID/smaps.

Groups every mapping of a running process by what owns it (the heap, the main
stack, each thread's stack, malloc arenas of other threads, each shared
library, other anonymous memory) and prints, per group, Rss, Pss and private
memory (Private_Clean + Private_Dirty): Rss counts shared library pages that
every process using the library shares; Pss divides them by the sharers;
private memory is what the process alone owns.  bench_overhead.sh runs it on
telemd and on its peers (docs/performance.md, "Cost beside collectd and
node_exporter").

Usage: mem_breakdown.py [-t] PID
  -t  totals only: one line of rss, pss, private and VmHWM in KiB, then
      the thread count
Exit status 2 on bad usage, 1 when the process cannot be read.
"""
import os
import re
import sys

HEAD = re.compile(r'^([0-9a-f]+)-([0-9a-f]+) (\S+) \S+ \S+ \d+\s*(.*)$')


def read_maps(pid):
    """The mappings of PID: list of dicts with start, end, perms, path, fields."""
    maps = []
    cur = None
    with open('/proc/%d/smaps' % pid) as f:
        for line in f:
            m = HEAD.match(line)
            if m:
                cur = {'start': int(m.group(1), 16), 'end': int(m.group(2), 16),
                       'perms': m.group(3), 'path': m.group(4).strip(),
                       'f': {}}
                maps.append(cur)
                continue
            parts = line.split()
            if cur is not None and len(parts) >= 2 and parts[0].endswith(':') \
                    and parts[1].isdigit():
                cur['f'][parts[0][:-1]] = int(parts[1])
    return maps


def classify(maps):
    """Name each mapping's owner.  A thread stack is an anonymous rw mapping
    right after a ---p guard page of the same origin (glibc's layout); a malloc
    arena is an anonymous rw mapping inside a 64 MiB aligned region that glibc
    reserves with ---p for the rest (the region's start is 64 MiB aligned)."""
    names = []
    for i, m in enumerate(maps):
        p = m['path']
        prev = maps[i - 1] if i else None
        nxt = maps[i + 1] if i + 1 < len(maps) else None
        if p == '[heap]':
            n = 'heap (main arena)'
        elif p == '[stack]':
            n = 'main thread stack'
        elif p.startswith('['):
            n = 'kernel (%s)' % p.strip('[]')
        elif p:
            base = os.path.basename(p)
            n = 'lib ' + re.sub(r'\.so[.0-9]*$', '', base) if '.so' in base \
                else 'file ' + base
        elif m['perms'].startswith('rw') and prev is not None and \
                not prev['path'] and prev['perms'] == '---p' and \
                prev['end'] == m['start'] and (m['end'] - prev['start']) \
                in (8 << 20, (8 << 20) + 4096):
            n = 'thread stacks'
        elif m['perms'].startswith('rw') and not p and \
                m['start'] % (64 << 20) == 0 and nxt is not None and \
                nxt['perms'] == '---p' and nxt['start'] == m['end']:
            n = 'malloc arenas (other threads)'
        elif m['perms'].startswith('rw') and prev is not None and \
                not prev['path'] and prev['perms'] == '---p' and \
                prev['end'] == m['start']:
            n = 'thread stacks'
        elif m['perms'] == '---p':
            n = 'reserved, not resident'
        else:
            n = 'anonymous (mmap)'
        names.append(n)
    return names


def status(pid, key):
    with open('/proc/%d/status' % pid) as f:
        for line in f:
            if line.startswith(key + ':'):
                return int(line.split()[1])
    return 0


def main(argv):
    totals_only = False
    args = argv[1:]
    if args and args[0] == '-t':
        totals_only = True
        args = args[1:]
    if len(args) != 1 or not args[0].isdigit():
        sys.stderr.write(__doc__.split('\n\n')[2] + '\n')
        return 2
    pid = int(args[0])
    try:
        maps = read_maps(pid)
        hwm = status(pid, 'VmHWM')
        threads = status(pid, 'Threads')
    except OSError as e:
        sys.stderr.write('mem_breakdown: cannot read process %d: %s\n' % (pid, e))
        return 1
    groups = {}
    for m, n in zip(maps, classify(maps)):
        g = groups.setdefault(n, [0, 0, 0, 0])
        f = m['f']
        g[0] += f.get('Rss', 0)
        g[1] += f.get('Pss', 0)
        g[2] += f.get('Private_Clean', 0) + f.get('Private_Dirty', 0)
        g[3] += 1
    tot = [sum(g[i] for g in groups.values()) for i in range(3)]
    if totals_only:
        print('%d %d %d %d %d' % (tot[0], tot[1], tot[2], hwm, threads))
        return 0
    print('  %-34s %8s %8s %8s %5s' % ('owner', 'rss_KiB', 'pss_KiB',
                                         'priv_KiB', 'maps'))
    for n, g in sorted(groups.items(), key=lambda kv: -kv[1][0]):
        if g[0] == 0 and g[3] == 0:
            continue
        print('  %-34s %8d %8d %8d %5d' % (n, g[0], g[1], g[2], g[3]))
    print('  %-34s %8d %8d %8d %5d' % ('total', tot[0], tot[1], tot[2],
                                         len(maps)))
    print('  VmHWM %d KiB, %d threads' % (hwm, threads))
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
