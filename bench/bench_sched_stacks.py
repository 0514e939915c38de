#!/usr/bin/env python3
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""What --stacks=sched costs against -t sched alone (bench/RESULTS.md, section sched stacks).

    python3 bench/bench_sched_stacks.py [--build build] [--rounds 7] [--seconds 1]

bench/pingpong (two threads pinned to one CPU passing a byte over two pipes: per round trip
2 context switches, 2 wakeups, 4 syscalls, 2 blocked intervals of a few us) under
`bpfsight record -t sched`, then with `--stacks=sched` (its default 1 ms: no interval of
pingpong crosses it, the price of its sys_exit program) and `--stacks=sched:0` (every blocked
interval held until its read returns and given a stack: the worst case), configurations
taking turns, and untraced. Figures per run: the round-trip rate (wall clock: noisy on a
shared machine), and each sched program's own time per run (kernel.bpf_stats_enabled:
run_time_ns / run_cnt; that includes the stats' two clock reads per run, not the tracepoint's
dispatch). Every system call on the machine runs sys_exit with --stacks=sched, not only
pingpong's: its figure is per run. Prints a markdown block with the medians.
"""
import argparse
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_common import bpf_stats, median, recorded  # noqa: E402

# Program names as the kernel keeps them (15 characters).
PROGS = {"sched_switch_bt", "sched_waking_bt", "sched_sys_exit_", "sched_held_exit"}
CONFIGS = {"untraced": None, "sched": [], "sched, --stacks=sched (1 ms)": ["--stacks=sched"],
           "sched, --stacks=sched:0": ["--stacks=sched:0"]}


def one(build, cfg, extra, seconds, cpu, out):
    load = [os.path.join(build, "bench", "pingpong"), "-d", f"{seconds:g}", "-c", str(cpu)]
    if extra is None:
        res = subprocess.run(load, capture_output=True, text=True, check=True)
        return json.loads(res.stdout.splitlines()[-1]), None
    cmd = [os.path.join(build, "bpfsight"), "record", "--force", "-o", out, "-t", "sched"] + extra + \
        ["--"] + load
    stdout, stderr, rc, runs = recorded(cmd, PROGS, timeout=120)
    if rc:
        raise SystemExit(f"{cfg}: record failed: {stderr[-400:]}")
    per = {name: ns / n for name, (n, ns) in runs.items() if n > 0}
    return json.loads(stdout.splitlines()[-1]), per


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default="build")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--seconds", type=float, default=1.0)
    a = ap.parse_args()
    cpu = (os.cpu_count() or 1) - 1
    out = f"/tmp/bench_sched_stacks.{os.getpid()}.bst"
    rate = {c: [] for c in CONFIGS}
    prog_ns = {c: {} for c in CONFIGS}
    with bpf_stats() as on:
        if not on:
            raise SystemExit("cannot turn kernel.bpf_stats_enabled on (root?)")
        for i in range(a.rounds):
            for c, extra in CONFIGS.items():
                res, per = one(a.build, c, extra, a.seconds, cpu, out)
                rate[c].append(res["round_trips_per_s"])
                for name, ns in (per or {}).items():
                    prog_ns[c].setdefault(name, []).append(ns)
                print(f"  {c:<30} {i + 1}/{a.rounds}: {res['round_trips_per_s']:,.0f} round "
                      f"trips/s; ns per run: " +
                      ", ".join(f"{n} {v:.0f}" for n, v in sorted((per or {}).items())),
                      file=sys.stderr)
    if os.path.exists(out):
        os.unlink(out)
    base_rate = median(rate["sched"])
    names = sorted({n for c in CONFIGS for n in prog_ns[c]})
    print(f"pingpong -d {a.seconds:g} -c {cpu}, {a.rounds} rounds, configurations in turn; "
          f"medians (min .. max)\n")
    print("| configuration | round trips/s | rate / -t sched's | " +
          " | ".join(f"{n} ns per run" for n in names) + " |")
    print("|---|---|---|" + "---|" * len(names))
    for c in CONFIGS:
        r = rate[c]
        cells = [f"{median(r):,.0f} ({min(r):,.0f} .. {max(r):,.0f})",
                 f"{median(r) / base_rate:.2f}x"]
        for n in names:
            p = prog_ns[c].get(n)
            cells.append(f"{median(p):.0f} ({min(p):.0f} .. {max(p):.0f})" if p else "")
        print(f"| {c} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
