#!/usr/bin/env python3
"""A loop that leaks, for mem_leaks (tests/e2e/test_clickhouse_memleak.py); the lines end in
"# NAME" markers.

    mem_leak_passes.py [PASSES]

Each pass (24 by default) allocates a temporary of 3 MiB and frees it (TEMP), keeps 1 MiB
made by a function of torch's own Python (torch.nn.functional.normalize: the library's line
beside the job's, KEEP), and 64 KiB under --stacks=mem's size (sampled, SMALL): the same
allocations in the same order each pass, so mem_leaks takes a pass of the loop as its step
(no torch steps here). Prints "done PID" at the end, and exits without freeing what it kept
(os._exit: it stays live at the end of the recording)."""
import os
import sys

import torch
import torch.nn.functional as F

base = torch.ones(1 << 18)
kept = []
for _ in range(int(sys.argv[1]) if len(sys.argv) > 1 else 24):
    tmp = torch.empty(3 << 20, dtype=torch.uint8)  # TEMP
    kept.append(F.normalize(base, dim=0))  # KEEP
    kept.append(torch.empty(64 << 10, dtype=torch.uint8))  # SMALL
    del tmp
print("done", os.getpid(), flush=True)
os._exit(0)  # what it kept stays live at the end: freed by no one
