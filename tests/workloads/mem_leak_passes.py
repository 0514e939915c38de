#!/usr/bin/env python3
"""A loop that leaks, for mem_leaks (tests/e2e/test_clickhouse_memleak.py); the lines end in
"# NAME" markers.

    mem_leak_passes.py [PASSES] [--steps] [--uneven]

Each pass (24 by default) allocates a temporary of 3 MiB and frees it (TEMP), keeps 1 MiB
made by a function of torch's own Python (torch.nn.functional.normalize: the library's line
beside the job's, KEEP), and 256 KiB under --stacks=mem's size (sampled, SMALL): the same
allocations in the same order each pass, so mem_leaks takes a pass of the loop as its step
(no torch steps here); --steps: each pass ends with an SGD optimizer's step (torch's steps,
recorded with -t torch, are mem_leaks' steps then); --uneven: the temporary's size differs
every pass (no loop to find: mem_leaks takes windows of the allocations). Prints "done PID" at the end, and exits without freeing what it kept
(os._exit: it stays live at the end of the recording)."""
import os
import sys
import time

import torch
import torch.nn.functional as F

base = torch.ones(1 << 18)
kept = []
args = [a for a in sys.argv[1:] if not a.startswith("--")]
param = torch.nn.Parameter(torch.zeros(4))
opt = torch.optim.SGD([param], lr=0.1) if "--steps" in sys.argv else None
uneven = "--uneven" in sys.argv
for i in range(int(args[0]) if args else 24):
    size = (3 << 20) + (4096 * i * i if uneven else 0)
    tmp = torch.empty(size, dtype=torch.uint8)  # TEMP
    kept.append(F.normalize(base, dim=0))  # KEEP
    kept.append(torch.empty(256 << 10, dtype=torch.uint8))  # SMALL
    del tmp
    if opt:
        param.grad = torch.ones(4)
        opt.step()
print("done", os.getpid(), flush=True)
time.sleep(0.3)  # the recorder reads the Python code of the stacks it took while it lives
os._exit(0)  # what it kept stays live at the end: freed by no one
