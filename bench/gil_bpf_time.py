#!/usr/bin/env python3
"""The gil family's BPF run time on a workload, per build, interleaved: where wall-clock
slowdowns drown in a loaded machine's noise, the kernel's own count of the programs' time
(kernel.bpf_stats_enabled, set for the run and restored) says what the probes cost.

    python3 bench/gil_bpf_time.py [--reps N] [--python PY] [--work "work 3 150000"] BUILD...

Each run: tests/workloads/gil_work.py --go WORK starts, `BUILD/bpfsight record -t gil -p PID`
attaches, the gil_* programs that appeared with it are read (`bpftool prog show`), the
workload is released, and they are read again when it ends: per program, runs and ns per
run, and their sum against the workload's threads' CPU time. Other recordings started
meanwhile would be counted too (programs are matched by name and by appearing then).
"""
import argparse
import glob
import json
import os
import subprocess
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WORK = os.path.join(ROOT, "tests", "workloads", "gil_work.py")
STATS = "/proc/sys/kernel/bpf_stats_enabled"


def progs():
    p = subprocess.run(["bpftool", "-j", "prog", "show"], capture_output=True, text=True,
                       check=True)
    return json.loads(p.stdout)


def once(bpfsight, py, work):
    w = subprocess.Popen([py, WORK, "--go", *work.split()], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, text=True)
    pid = int(w.stdout.readline().split()[1])
    before = {p["id"] for p in progs()}
    rec = subprocess.Popen([bpfsight, "record", "-f", "-o", "/tmp/gil_bpf_time.bst", "-t", "gil",
                            "-p", str(pid)], stderr=subprocess.PIPE, text=True)
    for line in rec.stderr:
        if "recording" in line and "Ctrl-C" in line:
            break
    time.sleep(0.3)
    mine = {p["id"] for p in progs() if p["id"] not in before and p["name"].startswith("gil_")}
    a = {p["name"]: p for p in progs() if p["id"] in mine}
    w.stdin.write("go\n")
    w.stdin.flush()
    truth = json.loads([l for l in w.stdout.read().splitlines() if l.startswith("{")][-1])
    z = {p["name"]: p for p in progs() if p["id"] in mine}
    w.wait()
    rec.stderr.read()
    rec.wait()
    d = {k: (z[k].get("run_cnt", 0) - a[k].get("run_cnt", 0),
             z[k].get("run_time_ns", 0) - a[k].get("run_time_ns", 0)) for k in z}
    cpu = sum(t.get("cpu_ns", 0) for t in truth["threads"].values())
    return cpu, {k: v for k, v in d.items() if v[0]}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--python", default=(sorted(glob.glob(
        "/root/.pyenv/versions/3.11.*/bin/python3.11")) or ["python3"])[-1])
    ap.add_argument("--work", default="work 3 150000")
    ap.add_argument("builds", nargs="+")
    a = ap.parse_args()
    old = open(STATS).read().strip()
    with open(STATS, "w") as f:
        f.write("1")
    res = {b: [] for b in a.builds}
    try:
        for r in range(a.reps):
            for b in a.builds if r % 2 == 0 else a.builds[::-1]:
                res[b].append(once(os.path.join(b, "bpfsight"), a.python, a.work))
    finally:
        with open(STATS, "w") as f:
            f.write(old)
    for b, runs in res.items():
        print(b)
        for cpu, d in runs:
            tot = sum(v[1] for v in d.values())
            share = f" ({100 * tot / cpu:.2f}% of the workload's CPU {cpu / 1e6:.0f} ms)" if cpu \
                else ""
            print(f"  BPF {tot / 1e6:.2f} ms{share}: " +
                  ", ".join(f"{k} {n} x {t // n} ns" for k, (n, t) in sorted(d.items())))


if __name__ == "__main__":
    main()
