#!/usr/bin/env python3
"""Runs a command and prints its wall time, user + system CPU and peak RSS.

    bench/measure.py CMD [ARGS...]     # prints: WALL_S CPU_S PEAK_RSS_KIB

The CPU figure is wait4()'s for that one child (microsecond resolution, printed to 0.1 ms;
GNU time prints it to 10 ms, which is 2% of a 0.5 s run: coarser than the differences an
A/B looks for).
The peak RSS is the child's ru_maxrss, which also counts the Python process the child was
spawned from (the kernel records the old address space's peak at exec): a floor of about
14 MiB here, below every workload bench/ab.sh runs (20 MiB and up).
The command's stdout is discarded; its stderr passes through; a failing command fails.
"""
import os
import subprocess
import sys
import time

if len(sys.argv) < 2:
    sys.exit(__doc__)
start = time.monotonic()
child = subprocess.Popen(sys.argv[1:], stdout=subprocess.DEVNULL)
_, status, usage = os.wait4(child.pid, 0)
wall = time.monotonic() - start
# Reaped here, not by Popen: record the status so Popen does not think it still runs.
child.returncode = os.waitstatus_to_exitcode(status)
if child.returncode != 0:
    sys.exit(f"measure.py: {sys.argv[1]} exited with {child.returncode}")
print(f"{wall:.4f} {usage.ru_utime + usage.ru_stime:.4f} {usage.ru_maxrss}")
