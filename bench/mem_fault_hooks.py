#!/usr/bin/env python3
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""What a page fault pays for each way of watching resident memory (bench/RESULTS.md, "mem:
the page-fault hooks"; docs/MEMORY.md, "Where the data comes from"), by hand: not part of
`make bench`.

bench/torch_memloop.py (L) maps 4 MiB of fresh anonymous memory, writes it and unmaps it
(1,024 page faults) ITERS times, timed in its thread's CPU time (each loop BLOCKS times, the
fastest kept). Each round runs, in turn (the order reversed every other round):

  idle      nothing attached
  rss_stat  bench/floor --rss-stat: an empty tp_btf program on kmem:rss_stat, what mem
            attaches (every change of a process's resident counters)
  counted   bench/floor --page-faults 1000000: the page-fault software event on every CPU,
            as `perf record -e page-faults` opens it, its empty program run once per
            million faults: what counting alone costs
  sampled   bench/floor --page-faults 64: the same, its program run every 64 faults
  mem       `record -p L -t mem --stacks=none`: mem's own program on rss_stat (and its
            uprobes, which the loop never hits)

A figure is what the configuration adds to a fault over idle in the same round: the median
over the rounds (min .. max).

    python3 bench/mem_fault_hooks.py [--build build] [--rounds 6]
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_common import LineServer, Runner, median  # noqa: E402
from bench_mem import LOOP, PY, RECORD, Floor, Recording  # noqa: E402

TOUCH = 4 << 20
CONFIGS = ("idle", "rss_stat", "counted", "sampled", "mem")
FLOOR = {"rss_stat": ["--rss-stat"], "counted": ["--page-faults", "1000000"],
         "sampled": ["--page-faults", "64"]}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--iters", type=int, default=40)
    a = ap.parse_args()
    r = Runner(a.build)
    RECORD["mem"] = ["--stacks=none"]
    loop = LineServer([PY, LOOP])
    pid = loop.ask(None)["ready"]
    got = {c: [] for c in CONFIGS}
    try:
        for k in range(a.rounds):
            for c in CONFIGS if k % 2 == 0 else CONFIGS[::-1]:
                h = Floor(r, FLOOR[c]) if c in FLOOR else \
                    Recording(r, pid, c) if c == "mem" else None
                try:
                    runs = [loop.ask(f"touch {TOUCH} {a.iters}") for _ in range(3)]
                finally:
                    if h:
                        h.stop()
                best = min(runs, key=lambda x: x["ns"])
                got[c].append(best["ns"] / best["minflt"])
    finally:
        loop.close()
        r.cleanup()
    print("| configuration | a page fault | adds (median, min .. max over the rounds) |")
    print("|---|---|---|")
    for c in CONFIGS:
        add = [x - i for x, i in zip(got[c], got["idle"])]
        print(f"| {c} | {median(got[c]):.0f} ns | " +
              ("" if c == "idle" else f"{median(add):+.0f} ns ({min(add):+.0f} .. "
               f"{max(add):+.0f})") + " |")


if __name__ == "__main__":
    main()
