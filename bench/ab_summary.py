#!/usr/bin/env python3
"""Medians of a bench/ab.sh log: user + system CPU and peak RSS per workload and binary,
and B's change against A.

    bench/ab_summary.py LOG
"""
import collections
import re
import statistics
import sys

if len(sys.argv) != 2:
    sys.exit(__doc__)
LINE = re.compile(r"round=\d+ bin=([AB]) (\S+) (fresh|rerun) wall=[\d.]+ cpu=([\d.]+) rss=(\d+)MiB")
cpu = collections.defaultdict(list)
rss = collections.defaultdict(list)
order = []
for line in open(sys.argv[1]):
    m = LINE.match(line)
    if not m:
        continue
    b, workload, kind, c, r = m.groups()
    if (workload, kind) not in order:
        order.append((workload, kind))
    cpu[(workload, kind, b)].append(float(c))
    rss[(workload, kind, b)].append(int(r))
print(f"{'workload':<18} {'rounds':>6} {'A cpu s':>8} {'B cpu s':>8} {'change':>7}   {'A range':<13} {'B range':<13} RSS MiB A -> B")
for workload, kind in order:
    a, b = cpu[(workload, kind, "A")], cpu[(workload, kind, "B")]
    if not a or not b:
        continue
    ma, mb = statistics.median(a), statistics.median(b)
    ra = statistics.median(rss[(workload, kind, "A")])
    rb = statistics.median(rss[(workload, kind, "B")])
    print(f"{workload + ' ' + kind:<18} {min(len(a), len(b)):>6} {ma:>8.3f} {mb:>8.3f} {100 * (mb - ma) / ma:>+6.1f}%"
          f"   {min(a):.3f}-{max(a):.3f}   {min(b):.3f}-{max(b):.3f}   {ra:g} -> {rb:g}")
