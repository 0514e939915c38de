#!/usr/bin/env python3
"""A torch job's first events (bench/bench_unwind_first.py): `import torch` (Debian's), then
N os.getppid() calls, each a system call a recording with --stacks=osrt:0 takes a stack of.
Prints {"pid", "import_s"} as JSON once imported and, with --wait, waits for a line on stdin
before the calls (a recorder attaches with -p in between); {"pid", "import_s", "calls"} at
the end.

    torch_first.py N [--wait]
"""
import json
import os
import sys
import time

t0 = time.monotonic()
import torch  # noqa: E402,F401  (the point: its 300 files mapped)

imported = time.monotonic() - t0
n = int(sys.argv[1])
if "--wait" in sys.argv:
    print(json.dumps({"pid": os.getpid(), "import_s": imported}), flush=True)
    sys.stdin.readline()
for _ in range(n):
    os.getppid()
print(json.dumps({"pid": os.getpid(), "import_s": imported, "calls": n}), flush=True)
if "--wait" in sys.argv:
    sys.stdin.read()
