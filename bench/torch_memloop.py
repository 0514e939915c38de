#!/usr/bin/env python3
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""Loops of tensor allocations and of fresh pages written, timed in the process, for
bench/bench_mem.py.

    torch_memloop.py

Commands on stdin, one a line; each answers one JSON line with "ns", the thread's CPU time
around the loop (time.thread_time_ns: a probe's trap and program run in the thread and
count, the machine's other load does not), and "minflt", the process's minor page faults
over it:
  alloc BYTES ITERS   ITERS times `torch.empty(BYTES, dtype=torch.uint8)`, dropped at once:
                      one allocation and one free of PyTorch's CPU allocator each
                      (c10::ProfiledCPUMemoryReporter::New and ::Delete); the pages are
                      never touched
  touch BYTES ITERS   ITERS times: map BYTES of fresh anonymous memory, write every byte,
                      unmap it (a page fault per page, each moving the process's resident
                      counters: the kernel's kmem:rss_stat fires; no torch)
  mprof ITERS         the alloc loop of 64 bytes under memory_profiler's line profiler (the
                      loop's lines traced, the process's memory read at each), as its
                      @profile does -> also "error" when memory_profiler cannot be imported
  quit
"""
import json
import mmap
import os
import resource
import sys
import time

import torch


def faults():
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt


def alloc(nbytes, iters):
    for _ in range(iters):
        torch.empty(nbytes, dtype=torch.uint8)


def touch(nbytes, iters, data):
    for _ in range(iters):
        m = mmap.mmap(-1, nbytes)
        m.write(data)
        m.close()


def timed(fn, *args):
    f, t = faults(), time.thread_time_ns()
    fn(*args)
    return {"ns": time.thread_time_ns() - t, "minflt": faults() - f}


def mprof(iters):
    try:
        from memory_profiler import LineProfiler
    except ImportError as e:
        return {"error": str(e)}
    # Its own copy of the loop: the profiler traces the lines of the function it wraps.
    def loop(n):
        for _ in range(n):
            torch.empty(64, dtype=torch.uint8)

    return timed(LineProfiler(backend="psutil")(loop), iters)


def main():
    torch.set_num_threads(1)
    data = {}
    alloc(64, 1000)  # warm
    alloc(4 << 20, 1000)
    print(json.dumps({"ready": os.getpid()}), flush=True)
    for line in sys.stdin:
        cmd = line.split()
        if not cmd or cmd[0] == "quit":
            break
        if cmd[0] == "alloc":
            res = timed(alloc, int(cmd[1]), int(cmd[2]))
        elif cmd[0] == "touch":
            n = int(cmd[1])
            data.setdefault(n, b"\1" * n)
            res = timed(touch, n, int(cmd[2]), data[n])
        elif cmd[0] == "mprof":
            res = mprof(int(cmd[1]))
        else:
            res = {"error": f"unknown command {cmd[0]}"}
        print(json.dumps(res), flush=True)


if __name__ == "__main__":
    main()
