#!/usr/bin/env python3
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""What mem's sampled allocation stacks cost (bench/RESULTS.md, "mem: what sampled stacks
cost"; docs/MEMORY.md, "Cost"), by hand: not part of `make bench`.

Per allocation: bench/torch_memloop.py (L) allocates and drops `torch.empty(N, dtype=uint8)`
in a loop, N from 64 B to 256 KiB, timed in its thread's CPU time (each loop BLOCKS times,
the fastest kept). Each round runs, in turn (the order reversed every other round):

  idle       nothing attached
  floor      bench/floor's empty programs on New's and Delete's entry and on rss_stat:
             the bare uprobe pair
  unsampled  `record -p L -t mem --mem-sample-rate none` (stacks only on blocks of 1 MiB
             and more: before sampled stacks)
  sampled    `record -p L -t mem` (the default: the smaller blocks by sampled bytes, one
             stack per 512 KiB on average)
  every      `record -p L -t mem --stacks=mem:0` (a stack on every allocation)

A figure is what the configuration adds over idle in the same round, per allocation + free,
the median over the rounds (min .. max); "sampling adds" is sampled less unsampled, round by
round, against the bare pair (floor less idle).

A step: tests/workloads/mem_lines.py cnn (resnet18 where torchvision is installed: a training
step and a validation pass whose loss is kept, the issue's leak), its main thread's CPU time
a step, untraced, under `-t mem --mem-sample-rate none` and under `-t mem`, rounds
alternating; a figure is the median step of the round, its ratio to the same round's
untraced one.

    python3 bench/mem_sample_cost.py [--build build] [--rounds 4]
"""
import argparse
import os
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_common import LineServer, Runner, fmt_ns, median  # noqa: E402
from bench_mem import LOOP, PY, Floor, Recording, RECORD  # noqa: E402

SIZES = (64, 16 << 10, 64 << 10, 256 << 10)
CONFIGS = ("idle", "floor", "unsampled", "sampled", "every")
RECORD.update({"unsampled": ["--mem-sample-rate", "none"], "sampled": [],
               "every": ["--stacks=mem:0"]})
STEP_JOB = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests",
                        "workloads", "mem_lines.py")


def holder(r, pid, config):
    if config == "floor":
        return Floor(r)
    return Recording(r, pid, config) if config in RECORD else None


def loops(r, rounds, iters, blocks):
    loop = LineServer([PY, LOOP])
    pid = loop.ask(None)["ready"]
    got = {c: {n: [] for n in SIZES} for c in CONFIGS}
    try:
        for k in range(rounds):
            for c in CONFIGS if k % 2 == 0 else reversed(CONFIGS):
                h = holder(r, pid, c)
                try:
                    for n in SIZES:
                        got[c][n].append(min(loop.ask(f"alloc {n} {iters}")["ns"]
                                             for _ in range(blocks)) / iters)
                finally:
                    if h:
                        h.stop()
    finally:
        loop.close()
    return got


class StepJob:
    """mem_lines.py cnn, its steps' CPU time as it prints them."""

    def __init__(self):
        self.p = subprocess.Popen([PY, STEP_JOB, "cnn"], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, text=True)
        while True:
            got = self.p.stdout.readline().split()
            if got[:1] == ["ready"]:
                self.pid = int(got[1])
                break
        self.cpu = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.p.stdout:
            f = line.split()
            if f[:1] == ["step"] and len(f) == 3:
                self.cpu.append(int(f[2]))

    def steps(self, n):
        """The CPU time of each of the next N steps."""
        start = len(self.cpu)
        while len(self.cpu) < start + n + 1:
            time.sleep(0.05)
        c = self.cpu[start:start + n + 1]
        return [b - a for a, b in zip(c, c[1:])]

    def close(self):
        self.p.stdin.write("stop\n")
        self.p.stdin.flush()
        self.p.wait(60)


def steps(r, rounds, n, warm):
    job = StepJob()
    got = {c: [] for c in ("untraced", "unsampled", "sampled")}
    try:
        for k in range(rounds):
            for c in got if k % 2 == 0 else reversed(list(got)):
                h = holder(r, job.pid, c)
                try:
                    job.steps(warm)
                    got[c].append(median(job.steps(n)))
                finally:
                    if h:
                        h.stop()
    finally:
        job.close()
    return got


def spread(v):
    return f"{fmt_ns(median(v))} ({fmt_ns(min(v))} .. {fmt_ns(max(v))})"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--iters", type=int, default=20000)
    ap.add_argument("--steps", type=int, default=12)
    a = ap.parse_args()
    r = Runner(a.build)
    try:
        got = loops(r, a.rounds, a.iters, 3)
        print("| allocation + free | idle | bare pair adds | unsampled adds | sampled adds |"
              " every adds | sampling adds (sampled - unsampled) / bare pair |")
        print("|---|---|---|---|---|---|---|")
        for n in SIZES:
            idle = got["idle"][n]
            add = {c: [x - i for x, i in zip(got[c][n], idle)] for c in CONFIGS[1:]}
            ratio = [(s - u) / f for s, u, f in zip(add["sampled"], add["unsampled"],
                                                    add["floor"]) if f > 0]
            print(f"| {n:,} B | {spread(idle)} | " +
                  " | ".join(spread(add[c]) for c in CONFIGS[1:]) +
                  f" | {median(ratio):.2f}x ({min(ratio):.2f} .. {max(ratio):.2f}) |")
        st = steps(r, a.rounds, a.steps, 3)
        print()
        print("| step | CPU a step (median of rounds) | / untraced (rounds) |")
        print("|---|---|---|")
        for c, v in st.items():
            ratio = [x / u for x, u in zip(v, st["untraced"])]
            print(f"| {c} | {spread(v)} | {median(ratio):.3f}x ({min(ratio):.3f} .. "
                  f"{max(ratio):.3f}) |")
    finally:
        r.cleanup()


if __name__ == "__main__":
    main()
