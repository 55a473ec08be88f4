#!/usr/bin/env python3
"""Placement probe for the benchmarks (DESIGN.md section 9): a cache-line
ping-pong between two processes pinned to CPUs 0 and 1. Printed before and
after a benchmark, it shows whether the VM's vCPU placement changed while
the figures were taken."""
import mmap, os, time, struct

if len(os.sched_getaffinity(0)) < 2:
    print("one CPU only, no probe")
    raise SystemExit
m = mmap.mmap(-1, 64)
n = 20000
pid = os.fork()
if pid == 0:
    os.sched_setaffinity(0, {1})
    for i in range(n):
        while struct.unpack_from('i', m, 0)[0] != 2*i+1: pass
        struct.pack_into('i', m, 0, 2*i+2)
    os._exit(0)
os.sched_setaffinity(0, {0})
t = time.perf_counter()
for i in range(n):
    struct.pack_into('i', m, 0, 2*i+1)
    while struct.unpack_from('i', m, 0)[0] != 2*i+2: pass
dt = time.perf_counter() - t
os.waitpid(pid, 0)
print(f"{dt / n / 2 * 1e9:.0f} ns one way (python, includes interpreter overhead)")
