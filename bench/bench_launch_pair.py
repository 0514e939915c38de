#!/usr/bin/env python3
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""What a runtime launch that reaches the driver costs recorded (bench/RESULTS.md, section
"One probe pair per launch"; docs/CUDA.md).

    python3 bench/bench_launch_pair.py [--build build] [--before OLD_BPFSIGHT] [--rounds 7]
                                       [--ms 300] [--fn rtlaunch|drvlaunch]

bench/pair_loop rtlaunch: cudaLaunchKernel of tests/workloads/lib/launch_pair.c, which calls
its cuLaunchKernel, as libcudart calls libcuda on a GPU (the real libcudart makes no driver
call without one). One process per configuration and round, configurations taking turns:
untraced; the floor (bench/floor: empty entry and return programs as uprobe_multi links) on
cudaLaunchKernel alone (one pair: the least any timed launch costs) and on both functions
(two pairs: what a launch fired before); `bpfsight record -t cuda` of this build, with and
without uprobe sessions (BPFSIGHT_FORCE_FALLBACKS=uprobe_session), and of OLD_BPFSIGHT when
given (a build from before the change). Figures: ns per launch (median of the rounds, with
min..max), ns added over untraced, and that as a ratio to the one-pair floor's added ns.
Each recording's cuda_api_sum is checked against the calls made. --fn drvlaunch times a
direct driver launch instead (cuLaunchKernel alone, as cuBLAS launches): its floor is one
pair on cuLaunchKernel.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_common import fmt_ns, fmt_ns_spread, fmt_ratio_spread, median  # noqa: E402

WARMUP = 200  # calls before the timed rounds (bench_loop.h BENCH_WARMUP)


SYMBOL = {"rtlaunch": "cudaLaunchKernel", "drvlaunch": "cuLaunchKernel"}


def configs(build, lib, before, fn):
    floor = os.path.join(build, "bench", "floor")
    rec = ["record", "--force", "-o", "{out}", "-t", "cuda", "--"]
    cfg = [("untraced", [], None),
           (f"floor, 1 pair ({SYMBOL[fn]})", [floor, "-u", f"{lib}:{SYMBOL[fn]}", "--"], None)]
    if fn == "rtlaunch":
        cfg.append(("floor, 2 pairs (+ cuLaunchKernel)", [floor, "-u", f"{lib}:cudaLaunchKernel",
                                                          "-u", f"{lib}:cuLaunchKernel", "--"],
                    None))
    if before:
        cfg.append(("bpfsight before", [before] + rec, None))
    cfg.append(("bpfsight, uprobe sessions", [os.path.join(build, "bpfsight")] + rec, None))
    cfg.append(("bpfsight, without uprobe sessions", [os.path.join(build, "bpfsight")] + rec,
                {"BPFSIGHT_FORCE_FALLBACKS": "uprobe_session"}))
    return cfg


def one(prefix, env, build, loop, lib, ms, tmp, fn):
    out, res = os.path.join(tmp, "t.bst"), os.path.join(tmp, "loop.json")
    cmd = [a.replace("{out}", out) for a in prefix] + \
        [loop, lib, "-m", str(ms), "-r", "1", "-o", res, fn]
    subprocess.run(cmd, env=dict(os.environ, **(env or {})), check=True, capture_output=True,
                   timeout=300)
    with open(res) as f:
        r = json.load(f)["fns"][fn]
    if "record" in prefix:
        made = sum(r["calls"]) + WARMUP
        rep = subprocess.run([os.path.join(build, "bpfsight"), "stats", out, "-r",
                              "cuda_api_sum", "--format", "json"], check=True,
                             capture_output=True, text=True).stdout
        got = {x["name"]: x["count"] for x in json.loads(rep)["reports"]["cuda_api_sum"]}
        if got != {SYMBOL[fn]: made}:
            raise SystemExit(f"{cmd}: cuda_api_sum {got}, {made} launches made")
    return r["ns_per_call"][0]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--before", help="a bpfsight from before one probe pair per launch")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--ms", type=int, default=300)
    ap.add_argument("--fn", choices=sorted(SYMBOL), default="rtlaunch")
    a = ap.parse_args()
    loop = os.path.join(a.build, "bench", "pair_loop")
    lib = os.path.realpath(os.path.join(a.build, "tests", "lib", "liblaunch_pair.so"))
    cfg = configs(a.build, lib, a.before, a.fn)
    ns = {name: [] for name, _, _ in cfg}
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(a.rounds):
            for name, prefix, env in cfg:
                ns[name].append(one(prefix, env, a.build, loop, lib, a.ms, tmp, a.fn))
    base = median(ns["untraced"])
    floor = median(ns[cfg[1][0]]) - base
    print("| configuration | ns per launch | added | added / 1-pair floor |")
    print("|---|---|---|---|")
    for name, _, _ in cfg:
        added = [v - base for v in ns[name]]
        ratio = [x / floor for x in added] if name != "untraced" else []
        print(f"| {name} | {fmt_ns_spread(ns[name])} | "
              f"{fmt_ns(median(added)) if ratio else ''} | "
              f"{fmt_ratio_spread(ratio) if ratio else ''} |")
    print(f"\n{a.fn}: {a.rounds} rounds of {a.ms} ms per configuration; cuda_api_sum counted "
          f"every launch of every recording, once, as {SYMBOL[a.fn]}.")


if __name__ == "__main__":
    main()
