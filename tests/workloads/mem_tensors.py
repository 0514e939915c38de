"""CPU tensors of known sizes, for the mem family's exports (tests/e2e/test_export_mem.py):
each made on a line of its own, some freed, one kept to the end. Prints, last, one JSON line:
the pid and each tensor's data pointer, bytes and the line that made it (torch's CPU allocator
reports exactly these to c10::ProfiledCPUMemoryReporter)."""
import json
import os
import sys

import torch

LINES = {}


def made(name, t):
    LINES[name] = {"ptr": t.data_ptr(), "bytes": t.numel() * t.element_size(),
                   "line": sys._getframe(1).f_lineno}
    return t


a = made("a", torch.ones(1024, 1024))    # 4 MiB, freed below
b = made("b", torch.zeros(512, 1024))    # 2 MiB, freed below
del a
c = made("c", torch.empty(256, 1024))    # 1 MiB, kept to the end
d = made("d", torch.empty(3, 1000))      # 12000 bytes: under --stacks=mem's 1 MiB
del b, d
print(json.dumps({"pid": os.getpid(), "tensors": LINES}), flush=True)
