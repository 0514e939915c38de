#!/usr/bin/env python3
"""What reading a new CPython through its _Py_DebugOffsets costs against the release before
it (issue 81): `bpfsight stacks -p` and a recording's start on a 3.15 job against a 3.14 one.

Two jobs at once, the same workload (tests/workloads/py_stacks_dump.py: cpu-0 spins in
spin() holding the GIL, cpu-1 sleeps, the main thread waits in join()) under the newest two
release builds under /opt/cpython (make deps: Debian unstable's 3.14 and 3.15, stripped).
ROUNDS rounds, each of them in turn, the order alternating (a loaded machine's moments fall
on both alike):
  - `bpfsight stacks -p PID --json`: its wall time, its CPU (user + system, the child's
    rusage) and the threads' reading (read_ns: the first look to the last stack read);
  - `bpfsight record -p PID -t cpu,gil -d 0.3`: the time from its start to its "Ctrl-C to
    stop" line (live: the interpreter inspected, the GIL found, every probe attached) and
    its CPU in all.
Each figure is the median of the rounds; the ratio is the median of the rounds' own ratios
3.15/3.14 (a round's two measures are seconds apart: a loaded machine's swings cancel out
more than between medians taken over minutes). Within 5% is the goal.

    python3 bench/bench_py_versions.py --build build [--rounds N] [--opt DIR]
"""
import argparse
import glob
import json
import os
import re
import resource
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
WORK = os.path.join(HERE, "..", "tests", "workloads", "py_stacks_dump.py")


def releases(opt):
    """The newest two release builds (3.X/bin/python3.X) under OPT, oldest first."""
    found = []
    for p in glob.glob(os.path.join(opt, "*", "bin", "python3.*")):
        m = re.fullmatch(r"python3\.(\d+)", os.path.basename(p))
        folder = os.path.basename(os.path.dirname(os.path.dirname(p)))
        if m and folder == f"3.{m.group(1)}":
            found.append((int(m.group(1)), p))
    return [p for _, p in sorted(found)][-2:]


def child_cpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def stacks_once(bpfsight, pid):
    cpu0, t0 = child_cpu(), time.monotonic()
    p = subprocess.run([bpfsight, "stacks", "-p", str(pid), "--json"], capture_output=True,
                       text=True, check=True)
    wall, cpu = time.monotonic() - t0, child_cpu() - cpu0
    out = json.loads(p.stdout)
    if not out["python"]:
        sys.exit(f"pid {pid}: Python frames not read: {out['python_unread']}")
    return wall, cpu, out["read_ns"] / 1e9


def record_once(bpfsight, pid, path):
    cpu0, t0 = child_cpu(), time.monotonic()
    p = subprocess.Popen([bpfsight, "record", "-p", str(pid), "-t", "cpu,gil", "-d", "0.3",
                          "-o", path, "--force"], stderr=subprocess.PIPE, text=True)
    live = None
    for line in p.stderr:
        if live is None and "Ctrl-C to stop" in line:
            live = time.monotonic() - t0
    if p.wait() or live is None:
        sys.exit(f"record -p {pid} failed")
    return live, child_cpu() - cpu0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--opt", default=os.environ.get("BPFSIGHT_OPT_CPYTHON", "/opt/cpython"))
    a = ap.parse_args()
    bpfsight = os.path.abspath(os.path.join(a.build, "bpfsight"))
    pys = releases(a.opt)
    if len(pys) < 2:
        sys.exit(f"needs two CPython releases under {a.opt} (make deps installs 3.14, 3.15)")
    jobs = []
    for py in pys:
        p = subprocess.Popen([py, WORK], stdout=subprocess.PIPE, text=True)
        jobs.append((py, p, json.loads(p.stdout.readline())["pid"]))
    fig = {py: {"stacks_wall": [], "stacks_cpu": [], "read": [], "live": [], "rec_cpu": []}
           for py in pys}
    tmp = f"/tmp/bench-py-versions-{os.getpid()}.bst"
    try:
        for r in range(a.rounds):
            for py, _, pid in (jobs if r % 2 == 0 else jobs[::-1]):
                w, c, rd = stacks_once(bpfsight, pid)
                fig[py]["stacks_wall"].append(w)
                fig[py]["stacks_cpu"].append(c)
                fig[py]["read"].append(rd)
                live, cpu = record_once(bpfsight, pid, tmp)
                fig[py]["live"].append(live)
                fig[py]["rec_cpu"].append(cpu)
    finally:
        for _, p, _ in jobs:
            p.kill()
            p.wait()
        if os.path.exists(tmp):
            os.unlink(tmp)
    med = {py: {k: statistics.median(v) for k, v in f.items()} for py, f in fig.items()}
    old, new = pys
    name = lambda py: "CPython 3." + re.search(r"python3\.(\d+)$", py).group(1)
    print(f"| figure (median of {a.rounds}) | {name(old)} | {name(new)} | ratio |")
    print("|---|---|---|---|")
    rows = [("`stacks -p`: wall", "stacks_wall", 1e3, "ms"),
            ("`stacks -p`: CPU", "stacks_cpu", 1e3, "ms"),
            ("`stacks -p`: threads read in", "read", 1e3, "ms"),
            ("`record -p -t cpu,gil`: start to live", "live", 1e3, "ms"),
            ("`record -p -t cpu,gil -d 0.3`: CPU in all", "rec_cpu", 1e3, "ms")]
    for label, k, scale, unit in rows:
        ratio = statistics.median(n / o for o, n in zip(fig[old][k], fig[new][k]))
        print(f"| {label} | {med[old][k] * scale:.1f} {unit} | {med[new][k] * scale:.1f} {unit} "
              f"| {ratio:.3f} |")


if __name__ == "__main__":
    main()
