#!/usr/bin/env python3
"""Known tensor allocations for the mem family's tests (tests/e2e/test_mem.py), with Debian's
torch:

    mem_alloc.py tensors N [--wait]   N CPU tensors of distinct sizes made on the line marked
                                      "# ALLOC" and freed on "# FREE"; prints {"pid", "sizes"}
    mem_alloc.py oom                  asks for 1 PiB on "# OOM": alloc_cpu fails (caught)
    mem_alloc.py touch MIB            writes MIB MiB of fresh memory on the line "# TOUCH"

--wait: prints {"pid": P} first and waits for a line on stdin before allocating, and for
stdin's end after (a recorder attaches in between).
"""
import json
import os
import sys

import torch

BASE = 3_000_000  # bytes: above --stacks=mem's 1 MiB, each size its own


def tensors(n):
    sizes = [BASE + 4096 * i for i in range(n)]
    held = [torch.empty(s, dtype=torch.uint8) for s in sizes]  # ALLOC
    addrs = [t.data_ptr() for t in held]
    del held  # FREE
    return {"pid": os.getpid(), "sizes": sizes, "addrs": addrs}


def oom():
    try:
        torch.empty(1 << 50, dtype=torch.uint8)  # OOM
    except RuntimeError:
        return {"pid": os.getpid(), "oom": 1 << 50}


def touch(mib):
    # bytearray(n) writes its n zero bytes at once: memory_profiler's increment is this line.
    b = bytearray(mib << 20)  # TOUCH
    return {"pid": os.getpid(), "touched": mib << 20, "len": len(b)}


def main():
    what, wait = sys.argv[1], "--wait" in sys.argv
    if wait:
        print(json.dumps({"pid": os.getpid()}), flush=True)
        sys.stdin.readline()
    if what == "tensors":
        out = tensors(int(sys.argv[2]))
    elif what == "oom":
        out = oom()
    else:
        out = touch(int(sys.argv[2]))
    print(json.dumps(out), flush=True)
    if wait:
        sys.stdin.read()


if __name__ == "__main__":
    main()
