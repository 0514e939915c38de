#!/usr/bin/env python3
"""Known allocations for the mem family's reports (tests/e2e/test_mem_reports.py): each mode
makes tensors of sizes and at lines the test knows (the lines end in "# NAME" markers).

    torch_mem.py MODE [N] [--go]

  leak N    N times: a 4 MiB CPU tensor kept in a list (LEAK), a 3 MiB one made and freed
            (TEMP)
  steps N   N training steps of a tiny model (SGD: torch steps with -t torch), each keeping a
            4 MiB tensor (STEPLEAK)
  peak      tensors of 2, 4 and 6 MiB kept (KEEP2, KEEP4, KEEP6), a 100 MiB temporary (PEAK),
            freed, then an 8 MiB one (AFTER)
  counts N  N tensors of 5 MiB made and freed one after the other (COUNT)
  oom       64 tensors of 64 KiB kept (SMALL: under --stacks=mem's size, sampled), peak's,
            then 1 PiB asked for (OOM: alloc_cpu fails, caught)
  rss       four 1 MiB bytearrays (SMALL), then 200 MiB written (GROW), in a function that
            memory_profiler can profile (python3 -m memory_profiler torch_mem.py rss)

--go: print "ready PID" and wait for a line on stdin before the work, then print "done" and
wait for a line (or the end of stdin) before exiting, so that a recorder attached with -p
sees the work alone and stops while what it kept is still live.
"""
import os
import sys

import torch

try:
    profile  # memory_profiler's, when it runs this file
except NameError:
    def profile(fn):
        return fn

MIB = 1 << 20
kept = []


def leak(n):
    for _ in range(n):
        kept.append(torch.empty(MIB, dtype=torch.float32))  # LEAK
        tmp = torch.empty(3 * MIB, dtype=torch.uint8)  # TEMP
        del tmp


def steps(n):
    model = torch.nn.Linear(8, 8)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x = torch.randn(4, 8)
    for _ in range(n):
        opt.zero_grad()
        model(x).sum().backward()
        kept.append(torch.empty(MIB, dtype=torch.float32))  # STEPLEAK
        opt.step()


def peak():
    kept.append(torch.empty(2 * MIB, dtype=torch.uint8))  # KEEP2
    kept.append(torch.empty(4 * MIB, dtype=torch.uint8))  # KEEP4
    kept.append(torch.empty(6 * MIB, dtype=torch.uint8))  # KEEP6
    tmp = torch.empty(100 * MIB, dtype=torch.uint8)  # PEAK
    del tmp
    kept.append(torch.empty(8 * MIB, dtype=torch.uint8))  # AFTER


def oom():
    kept.extend(torch.empty(65536, dtype=torch.uint8) for _ in range(64))  # SMALL
    peak()
    try:
        torch.empty(1 << 50, dtype=torch.uint8)  # OOM
    except RuntimeError:
        pass


def counts(n):
    for _ in range(n):
        t = torch.empty(5 * MIB, dtype=torch.uint8)  # COUNT
        del t


@profile
def rss():
    small = [bytearray(MIB) for _ in range(4)]  # SMALL
    big = bytearray(200 * MIB)  # GROW
    return len(big) + len(small)


def main():
    args = [a for a in sys.argv[1:] if a != "--go"]
    go = "--go" in sys.argv[1:]
    mode, n = args[0], int(args[1]) if len(args) > 1 else 0
    work = {"leak": lambda: leak(n), "steps": lambda: steps(n), "peak": peak, "oom": oom,
            "counts": lambda: counts(n), "rss": rss}[mode]
    if go:
        print(f"ready {os.getpid()}", flush=True)
        sys.stdin.readline()
    work()
    if go:
        print("done", flush=True)
        sys.stdin.readline()


if __name__ == "__main__":
    main()
