"""Holds CPU tensors of known sizes, as told on stdin, for the mem family's views (monitor,
top, report, the flight recorder's mem:oom trigger).

Prints "pid PID" once torch is imported (importing it allocates no tensor through the CPU
allocator), then obeys one command per line, answering "ok" each:
  alloc N SIZE   allocate N tensors of SIZE bytes (torch.empty, uint8) and keep them
  free K         free the K tensors allocated last
  oom            ask for 1 PiB (alloc_cpu fails: ProfiledCPUMemoryReporter::OutOfMemory),
                 catching the RuntimeError
  q              exit
"""
import os
import sys

import torch

held = []
print("pid", os.getpid(), flush=True)
for line in sys.stdin:
    cmd = line.split()
    if not cmd or cmd[0] == "q":
        break
    if cmd[0] == "alloc":
        held += [torch.empty(int(cmd[2]), dtype=torch.uint8) for _ in range(int(cmd[1]))]
    elif cmd[0] == "free":
        del held[len(held) - int(cmd[1]):]
    elif cmd[0] == "oom":
        try:
            torch.empty(1 << 50, dtype=torch.uint8)
        except RuntimeError:
            pass
    print("ok", flush=True)
