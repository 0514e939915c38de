#!/usr/bin/env python3
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""The native walk's cost per stack: unwind tables against frame pointers and a bare probe;
with --torch, 99 Hz sampling of a real training job (bench/RESULTS.md, "Unwind walk").

    python3 bench/bench_unwind_walk.py [--build build] [--rounds 5] [--calls 100000]
                                       [--depth 25] [--against OTHER/bpfsight]

bench/unwind_deep.c calls getppid() CALLS times under DEPTH nested calls (stacks of
DEPTH + 6 = 31 frames), built with frame pointers (unwind_deep_fp) and with
-O2 -fomit-frame-pointer (unwind_deep_nofp), under `bpfsight record -t osrt
--osrt-threshold 0` (every call a record: the bare probe) and with `--stacks=osrt:0` (every
call a stack: the frame-pointer walk for the first build, the unwind tables for the second),
and untraced; configurations taking turns, ROUNDS rounds. The figure is the thread's own
CPU time per call (CLOCK_THREAD_CPUTIME_ID: the BPF programs at its system calls' exit
included); a stack's cost is a run with stacks less the bare run of the same build. A check
run first dumps one stack of each build: 31 frames by the tables, 29 by frame pointers
(the walk ends at libc's __libc_start_call_main), no marker. Prints a markdown block of the
medians. --against BPFSIGHT: the two stacked configurations also recorded by that bpfsight
(another build: the one before a change), taking turns in the same rounds, and the ratios
of the stacks' costs.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_common import bpf_stats, recorded  # noqa: E402


def run(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    if p.returncode:
        raise SystemExit(f"{cmd}: exit {p.returncode}: {p.stderr[-600:]}")
    return p


def per_call(build, binary, extra, calls, depth, out, bpfsight=None):
    prog = [os.path.join(build, "bench", binary), str(calls), str(depth)]
    if extra is None:
        p = run(prog)
    else:
        p = run([bpfsight or os.path.join(build, "bpfsight"), "record", "--force", "-o", out,
                 "-t", "osrt", "--osrt-threshold", "0", *extra, "--", *prog])
    r = json.loads(p.stdout.splitlines()[-1])
    return r["thread_cpu_ns"] / r["calls"]


def frames(build, binary, depth, out):
    """The frames of the last getppid stack of a short run of BINARY."""
    run([os.path.join(build, "bpfsight"), "record", "--force", "-o", out, "-t", "osrt",
         "--osrt-threshold", "0", "--stacks=osrt:0", "--",
         os.path.join(build, "bench", binary), "50", str(depth)])
    p = run([os.path.join(build, "bpfsight"), "dump", out])
    last = [json.loads(l) for l in p.stdout.splitlines() if '"getppid"' in l][-1]
    return [f["func"] for f in last.get("stack", [])]


def torch_steps(build, traced, steps, out, env=None):
    """The training loop's time (ms: the sum of its steps) of tests/workloads/torch_train.py,
    untraced or under `record -t cpu` (99 Hz); with it, the cpu_sample program's ns per run
    and the samples whose stacks went through libtorch_cpu whole (no marker)."""
    work = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "workloads",
                        "torch_train.py")
    prog = ["/usr/bin/python3", work, "--steps", str(steps)]
    per = {}
    if traced:
        stdout, stderr, rc, per = recorded([os.path.join(build, "bpfsight"), "record", "--force",
                                            "-o", out, "-t", "cpu", "--", *prog], {"cpu_sample"},
                                           timeout=600, env=env)
        if rc:
            raise SystemExit(f"record: {stderr[-600:]}")
    else:
        stdout = run(prog).stdout
    ms = sum((j["t1"] - j["t0"]) / 1e6 for j in map(json.loads, stdout.splitlines())
             if "step" in j)
    n, ns = per.get("cpu_sample", (0, 0))
    return ms, (ns / n if n else None)


def torch_main(a):
    out = f"/tmp/bench_unwind_walk.{os.getpid()}.bst"
    fp_only = dict(os.environ, BPFSIGHT_FORCE_FALLBACKS="unwind_tables")
    ms = {"untraced": [], "-t cpu, frame pointers only": [], "-t cpu (99 Hz)": []}
    prog_ns, fp_ns = [], []
    with bpf_stats():
        for _ in range(a.rounds):
            ms["untraced"].append(torch_steps(a.build, False, a.steps, out)[0])
            m, ns = torch_steps(a.build, True, a.steps, out, env=fp_only)
            ms["-t cpu, frame pointers only"].append(m)
            if ns is not None:
                fp_ns.append(ns)
            m, ns = torch_steps(a.build, True, a.steps, out)
            ms["-t cpu (99 Hz)"].append(m)
            if ns is not None:
                prog_ns.append(ns)
    p = run([os.path.join(a.build, "bpfsight"), "dump", out])
    stacks = [json.loads(l).get("stack", []) for l in p.stdout.splitlines()
              if '"cpu_sample"' in l]
    torch = [s for s in stacks if any("libtorch_cpu" in (f.get("file") or "") for f in s)]
    whole = [s for s in torch if not any(f["func"].startswith("[unwind") for f in s)]
    os.unlink(out)
    med = {c: statistics.median(v) for c, v in ms.items()}
    print(f"tests/workloads/torch_train.py --steps {a.steps} (Debian's torch 1.13, CPU), "
          f"{a.rounds} rounds taking turns, medians of the training loop's time:\n")
    print("| configuration | loop ms | spread |")
    print("|---|---|---|")
    for c, v in ms.items():
        print(f"| {c} | {med[c]:.0f} | {min(v):.0f}-{max(v):.0f} |")
    ratio = med["-t cpu (99 Hz)"] / med["untraced"]
    print(f"\nratio {ratio:.3f}x (this VM's noise is several percent either way);")
    if prog_ns:
        p99 = statistics.median(prog_ns)
        print(f"cpu_sample's BPF time per sample {p99:.0f} ns (median of the rounds, "
              f"kernel.bpf_stats_enabled; frame pointers only: "
              f"{statistics.median(fp_ns) if fp_ns else 0:.0f} ns): at 99 Hz "
              f"{p99 * 99 / 1e7:.4f}% of a CPU's time (goal 1%);")
    print(f"last round: {len(whole)} of {len(torch)} samples in libtorch_cpu whole (no marker; "
          f"{len(stacks)} samples)")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default="build")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--calls", type=int, default=100000)
    ap.add_argument("--depth", type=int, default=25)
    ap.add_argument("--quick", action="store_true", help="2 rounds of 30000 calls")
    ap.add_argument("--torch", action="store_true",
                    help="instead: 99 Hz sampling of a Debian-torch training loop")
    ap.add_argument("--steps", type=int, default=4000, help="--torch: training steps")
    ap.add_argument("--against", help="another bpfsight: its stacks' costs beside")
    a = ap.parse_args()
    if a.quick:
        a.rounds, a.calls, a.steps = 2, 30000, 1500
    if a.torch:
        return torch_main(a)
    out = f"/tmp/bench_unwind_walk.{os.getpid()}.bst"
    for binary in ("unwind_deep_fp", "unwind_deep_nofp"):
        f = frames(a.build, binary, a.depth, out)
        # By frame pointers the walk ends in libc's start (no frame pointer there): 2 fewer.
        if len(f) < a.depth + 4 or any(x.startswith("[") for x in f):
            raise SystemExit(f"{binary}: the stack is not whole: {f}")
    configs = {
        "untraced": ("unwind_deep_fp", None, None),
        "bare probe (fp build)": ("unwind_deep_fp", [], None),
        "frame pointers": ("unwind_deep_fp", ["--stacks=osrt:0"], None),
        "bare probe (no-fp build)": ("unwind_deep_nofp", [], None),
        "unwind tables": ("unwind_deep_nofp", ["--stacks=osrt:0"], None),
    }
    if a.against:
        configs["frame pointers, --against"] = ("unwind_deep_fp", ["--stacks=osrt:0"],
                                                a.against)
        configs["unwind tables, --against"] = ("unwind_deep_nofp", ["--stacks=osrt:0"],
                                               a.against)
    ns = {c: [] for c in configs}
    for _ in range(a.rounds):
        for c, (binary, extra, other) in configs.items():
            ns[c].append(per_call(a.build, binary, extra, a.calls, a.depth, out, other))
    os.unlink(out)
    med = {c: statistics.median(v) for c, v in ns.items()}
    probe = med["bare probe (fp build)"] - med["untraced"]
    fp = med["frame pointers"] - med["bare probe (fp build)"]
    tab = med["unwind tables"] - med["bare probe (no-fp build)"]
    print(f"stacks of {a.depth + 6} frames (getppid's wrapper, {a.depth + 1} calls, main, "
          f"libc's start, _start); {a.rounds} rounds of {a.calls} calls, medians, ns per call "
          "of the thread's CPU time:\n")
    print("| configuration | ns per call | spread |")
    print("|---|---|---|")
    for c, v in ns.items():
        print(f"| {c} | {med[c]:.0f} | {min(v):.0f}-{max(v):.0f} |")
    print(f"\nthe bare probe (an osrt record per call): {probe:.0f} ns; a stack by frame "
          f"pointers: {fp:.0f} ns; by unwind tables: {tab:.0f} ns: **{tab / fp:.2f}x** the "
          f"frame-pointer walk (goal 2x), {tab / probe:.2f}x the bare probe")
    if a.against:
        fp_o = med["frame pointers, --against"] - med["bare probe (fp build)"]
        tab_o = med["unwind tables, --against"] - med["bare probe (no-fp build)"]
        print(f"against {a.against}: a stack by frame pointers {fp_o:.0f} ns (this build's "
              f"**{fp / fp_o:.2f}x** it), by unwind tables {tab_o:.0f} ns (this build's "
              f"**{tab / tab_o:.2f}x** it)")


if __name__ == "__main__":
    sys.exit(main())
