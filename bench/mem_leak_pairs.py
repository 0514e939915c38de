#!/usr/bin/env python3
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""Issue 51's goal by hand, with more rounds than `make bench`'s R (bench/RESULTS.md, "Issue
51's goal"): not part of `make bench`.

The leak job (`bench/mem_step.py --leak`, started once) runs a block of STEPS steps under each
configuration in turn, each block between two untraced blocks of the same process (the order
of the configurations reversed every other round); a block's figure is the trimmed mean of
its steps' CPU time in the main thread, divided by the mean of its two untraced neighbours.
This VM's step moves between ~10 and ~23 ms for minutes at a time (page faults costing about
three times more): the neighbours take that out, and many rounds take out the rest.

A configuration is NAME or NAME=ARGS: `floor` (bench/floor's empty programs on the
allocator's two uprobes and on rss_stat: the bare cost of the hooks; `floor-uprobes` and
`floor-rss` each half of it alone), `profiler` (the job's
own torch.profiler with profile_memory=True), or `record -p PID -t mem` with ARGS (commas
between words: `mem=` is the default, `none=--stacks=none`, `n1=--mem-native-frames,1`).

    python3 bench/mem_leak_pairs.py [--build build] [--rounds 30] [--steps 25] [--restart 6] CONFIG...
"""
import argparse
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_common import LineServer, Runner  # noqa: E402
from bench_mem import FLOOR_ARGS, PY, RECORD, Floor, holder_of  # noqa: E402

STEP = os.path.join(os.path.dirname(os.path.abspath(__file__)), "mem_step.py")
# The floor's halves: the allocator's two uprobes alone, rss_stat's empty program alone.
FLOORS = {"floor-uprobes": lambda r: Floor(r, [a for a in FLOOR_ARGS if a != "--rss-stat"]),
          "floor-rss": lambda r: Floor(r, ["--rss-stat"])}


def block(job, steps, mode="plain"):
    """The trimmed mean of STEPS steps' main-thread CPU time (ns), after 3 to warm up."""
    job.ask(f"steps 3 {mode}")
    cpu = sorted(job.ask(f"steps {steps} {mode}")["cpu_ns"])
    k = len(cpu) // 5
    return statistics.mean(cpu[k:len(cpu) - k])


def start_job():
    job = LineServer([PY, STEP, "--leak"])
    job.pid = job.ask(None)["ready"]
    return job


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--rounds", type=int, default=30)
    ap.add_argument("--steps", type=int, default=25)
    ap.add_argument("--restart", type=int, default=6,
                    help="a fresh job every N rounds: it leaks about 4 MiB a step")
    ap.add_argument("configs", nargs="+")
    a = ap.parse_args()
    names = []
    for c in a.configs:
        name, _, args = c.partition("=")
        names.append(name)
        if name not in ("floor", "profiler", *FLOORS):
            RECORD[name] = [w for w in args.split(",") if w]
    r = Runner(a.build)
    job = None
    ratios = {n: [] for n in names}
    try:
        for k in range(a.rounds):
            if k % a.restart == 0:
                if job:
                    job.close()
                job = start_job()
                prev = block(job, a.steps)
            for n in names if k % 2 == 0 else names[::-1]:
                h = FLOORS[n](r) if n in FLOORS else holder_of(r, job.pid, n)
                try:
                    v = block(job, a.steps, "profiler" if n == "profiler" else "plain")
                finally:
                    if h:
                        h.stop()
                nxt = block(job, a.steps)
                ratios[n].append(v / ((prev + nxt) / 2))
                print(f"round {k + 1} {n}: {v / 1e6:.2f} ms, untraced {prev / 1e6:.2f} and "
                      f"{nxt / 1e6:.2f}: {ratios[n][-1]:.3f}x", file=sys.stderr, flush=True)
                prev = nxt
    finally:
        if job:
            job.close()
        r.cleanup()
    for n in names:
        v = sorted(ratios[n])
        q = len(v) // 4
        print(f"{n:10s} median {statistics.median(v):.3f}x, middle half {v[q]:.3f} .. "
              f"{v[len(v) - 1 - q]:.3f} ({len(v)} rounds)")


if __name__ == "__main__":
    main()
