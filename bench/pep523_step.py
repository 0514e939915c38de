#!/usr/bin/env python3
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""What a frame-evaluation hook (PEP 523) would cost --python-functions on CPython 3.8-3.11,
against the C profile function the shim uses there today (issue 66; bench/RESULTS.md,
"Named functions before 3.12: the mechanism's cost").

Issue 66's step: about 10,000 small Python calls, only the step function named. For each
pyenv interpreter, bench/pep523_hook.c is built against its headers and the step runs in
phases, in turn: untraced, under a PEP 523 hook that probes the named code objects at every
frame evaluation, under a C profile function that probes them at every call and return. Each
phase is the median of its steps' thread CPU time; the hook's and the profile function's
counts of the step's calls are checked against the steps run.

    python3 bench/pep523_step.py [--versions 3.8,3.9,3.10,3.11,3.12] [--rounds 5]
"""
import argparse
import glob
import json
import os
import statistics
import subprocess
import sys
import sysconfig
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))

JOB = r"""
import json, sys, time, statistics
sys.path.insert(0, sys.argv[1])
import pep523_hook as h
rounds, steps = int(sys.argv[2]), int(sys.argv[3])

def small(x):
    return x + 1

def step():
    s = 0
    for i in range(10000):
        s = small(s)
    return s

def phase():
    ts = []
    for _ in range(steps):
        t0 = time.thread_time_ns()
        step()
        ts.append(time.thread_time_ns() - t0)
    return statistics.median(ts)

codes = (step.__code__,)
res = {"untraced": [], "pep523": [], "profile": []}
counted = {}
for _ in range(rounds):
    h.off(); res["untraced"].append(phase())
    h.eval_hook(codes); res["pep523"].append(phase()); counted["pep523"] = h.hits(); h.off()
    h.profile(codes); res["profile"].append(phase()); counted["profile"] = h.hits(); h.off()
print(json.dumps({"res": res, "counted": counted, "steps": steps}))
"""


def build(py, out):
    cfg = subprocess.run([py, "-c", "import sysconfig, json; print(json.dumps("
                          "[sysconfig.get_paths()['include'], sysconfig.get_config_var('EXT_SUFFIX')]))"],
                         capture_output=True, text=True, check=True)
    inc, suffix = json.loads(cfg.stdout)
    so = os.path.join(out, "pep523_hook" + suffix)
    subprocess.run(["gcc", "-O2", "-shared", "-fPIC", f"-I{inc}", f"-I{inc}/internal",
                    os.path.join(HERE, "pep523_hook.c"), "-o", so], check=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--versions", default="3.8,3.9,3.10,3.11,3.12")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--steps", type=int, default=200)
    a = ap.parse_args()
    print("| CPython | untraced step | PEP 523 hook | / untraced | C profile function | / untraced "
          "| calls counted (hook, profile) of |\n|---|---|---|---|---|---|---|")
    for v in a.versions.split(","):
        found = sorted(glob.glob(os.path.expanduser(f"~/.pyenv/versions/{v}.*/bin/python3")))
        if not found:
            print(f"| {v} | not installed | | | | | |")
            continue
        py = found[-1]
        with tempfile.TemporaryDirectory() as d:
            build(py, d)
            p = subprocess.run(["taskset", "-c", "0", py, "-c", JOB, d, str(a.rounds),
                                str(a.steps)], capture_output=True, text=True, check=True)
        r = json.loads(p.stdout)
        med = {k: statistics.median(x) / 1e6 for k, x in r["res"].items()}
        print(f"| {os.path.basename(os.path.dirname(os.path.dirname(py)))} | "
              f"{med['untraced']:.3f} ms | {med['pep523']:.3f} ms | "
              f"{med['pep523'] / med['untraced']:.2f}x | {med['profile']:.3f} ms | "
              f"{med['profile'] / med['untraced']:.2f}x | {r['counted']['pep523']}, "
              f"{r['counted']['profile']} of {r['steps']} |")


if __name__ == "__main__":
    sys.exit(main())
