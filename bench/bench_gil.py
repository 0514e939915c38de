#!/usr/bin/env python3
"""What the gil family costs a python program: the slowdown against the same run untraced.

    python3 bench/bench_gil.py --build build [--quick] [--python PY] [--reps N]

Workloads (tests/workloads/gil_work.py), each timed by the workload itself, so bpfsight's
start-up and attach time are not counted:
  ioloop   one thread, os.write + os.read on a pipe: releases and retakes the GIL twice per
           iteration, never contended (the issue's cost trap); metric: ns per iteration
  cpu3     3 threads, a fixed amount of pure-Python work each, contending for the GIL all the
           time; metric: wall time of the run
Modes: untraced; `record -t gil --stacks=none -p PID` (nostacks: the default mode without the
GIL holder's stacks); `record -t gil -p PID` (default mode, holder stacks on); the same with
--gil-mode=full; with --base OTHER_BUILD, `base`: `record -t gil -p PID` of that build (an
earlier bpfsight, compared in the same run). --modes picks some (untraced always runs). The
workload starts, bpfsight attaches with -p, then the workload is released (--go), so every
mode measures the steady state. Modes are interleaved and rotated on every repetition, and
the median of the repetitions is compared, because this machine's 2 cores are shared.
Other tracers would skew the figures (a system call tracepoint of another program costs
every process): a run is only kept when, before and after it, no other process has a BPF
program on a system-call or scheduler tracepoint or any uprobe (`bpftool perf list`, `bpftool
link list`); otherwise the suite waits for quiet and runs it again (--busy: it does not wait
nor redo, and says how many runs had company: their cost falls on every interleaved mode
alike, only noisier).
"""
import argparse
import glob
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WORK = os.path.join(ROOT, "tests", "workloads", "gil_work.py")
MODES = ("untraced", "nostacks", "default", "full")
ALL_MODES = MODES + ("base",)


def default_python():
    found = sorted(glob.glob("/root/.pyenv/versions/3.11.*/bin/python3.11"))
    return found[-1] if found else sys.executable


DISTURBING_TP = ("sys_enter", "sys_exit", "sched_switch", "sched_waking")


def others_tracing(own_pids=()):
    """Descriptions of BPF attachments by other processes that would skew a run."""
    found = []
    if not shutil.which("bpftool"):
        return ["(no bpftool: other tracers unknown)"]
    for cmd in (["bpftool", "-j", "perf", "list"], ["bpftool", "-j", "link", "list"]):
        p = subprocess.run(cmd, capture_output=True, text=True)
        if p.returncode:
            continue
        for e in json.loads(p.stdout or "[]"):
            if e.get("pid") in own_pids:
                continue
            kind = e.get("fd_type") or e.get("type", "")
            if isinstance(kind, int):  # a link type this bpftool does not name
                kind = {12: "uprobe_multi"}.get(kind, str(kind))  # BPF_LINK_TYPE_UPROBE_MULTI
            tp = e.get("tracepoint") or e.get("tp_name") or ""
            if "uprobe" in kind or tp in DISTURBING_TP:
                found.append(f"{kind} {tp or e.get('filename', '')} (pid {e.get('pid', '?')})")
    return found


def wait_quiet(limit_s=600):
    """Wait until no other tracer is attached; returns the seconds waited (None: never)."""
    t0 = time.time()
    while others_tracing():
        if time.time() - t0 > limit_s:
            return None
        time.sleep(1)
    return time.time() - t0


def run_once(bpfsight, py, mode, args, tmp):
    """One run of the workload in MODE; returns (its JSON, the trace path or None).
    BPFSIGHT: {mode: binary} for `base`, else the binary."""
    if isinstance(bpfsight, dict):
        bpfsight = bpfsight[mode]
    w = subprocess.Popen([py, WORK, "--go", *args], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, text=True)
    pid = int(w.stdout.readline().split()[1])
    rec, out = None, None
    if mode != "untraced":
        out = os.path.join(tmp, f"{mode}.bst")
        cmd = [bpfsight, "record", "--force", "-o", out, "-t", "gil", "-p", str(pid)]
        if mode == "full":
            cmd.append("--gil-mode=full")
        if mode == "nostacks":
            cmd.append("--stacks=none")
        rec = subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True)
        for line in rec.stderr:
            if "recording" in line and "Ctrl-C" in line:
                break
        else:
            raise SystemExit(f"bpfsight record did not start ({mode})")
    time.sleep(0.3)  # let the recorder settle before the clock starts
    w.stdin.write("go\n")
    w.stdin.flush()
    lines = [l for l in w.stdout.read().splitlines() if l.startswith("{")]
    w.wait()
    if rec:
        rec.stderr.read()
        if rec.wait(120):
            raise SystemExit(f"bpfsight record failed ({mode})")
    return json.loads(lines[-1]), out


def gil_waits(bpfsight, out):
    """(waits, wait ns, holds) over the whole trace, from gil_sum."""
    p = subprocess.run([bpfsight, "stats", "-r", "gil_sum", "--format", "json", out],
                       capture_output=True, text=True, check=True)
    rows = json.loads(p.stdout)["reports"]["gil_sum"]
    return (sum(r["wait_count"] for r in rows), sum(r["wait_total_ns"] for r in rows),
            sum(r.get("hold_count", 0) for r in rows))


def bench(bpfsight, py, name, args, metric, reps, modes=MODES, busy=False):
    samples = {m: [] for m in modes}
    counts = {}
    disturbed = [0]
    with tempfile.TemporaryDirectory(prefix="bench-gil-") as tmp:
        for rep in range(reps):
            order = modes[rep % len(modes):] + modes[:rep % len(modes)]
            for mode in order:
                for attempt in range(5):
                    waited = 0 if busy else wait_quiet()
                    if waited is None:
                        raise SystemExit("other tracers stayed attached for 10 minutes")
                    truth, out = run_once(bpfsight, py, mode, args, tmp)
                    if not others_tracing():
                        break
                    disturbed[0] += 1
                    if busy:
                        break
                samples[mode].append(metric(truth))
                if out:
                    counts[mode] = gil_waits(bpfsight["default"] if isinstance(bpfsight, dict)
                                             else bpfsight, out)
                print(f"  {name} rep {rep + 1}/{reps} {mode:8s} {samples[mode][-1]:.1f}",
                      file=sys.stderr, flush=True)
    med = {m: statistics.median(v) for m, v in samples.items()}
    best = {m: min(v) for m, v in samples.items()}
    return {
        "median": med,
        "min": best,
        "samples": samples,
        "slowdown_pct": {m: 100.0 * (med[m] / med["untraced"] - 1) for m in modes[1:]},
        # The least disturbed run of each mode: other programs only ever add time.
        "slowdown_min_pct": {m: 100.0 * (best[m] / best["untraced"] - 1) for m in modes[1:]},
        "gil": {m: {"waits": c[0], "wait_ns": c[1], "holds": c[2]} for m, c in counts.items()},
        "runs_redone": disturbed[0],
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default="build")
    ap.add_argument("--python", default=default_python())
    ap.add_argument("--quick", action="store_true", help="shorter runs, 3 repetitions")
    ap.add_argument("--reps", type=int)
    ap.add_argument("--json", action="store_true", help="print the results as JSON")
    ap.add_argument("--only", choices=("ioloop", "cpu3"), help="one workload only")
    ap.add_argument("--base", help="another build: mode `base` records with its bpfsight")
    ap.add_argument("--modes", help="comma-separated modes (untraced always runs)")
    ap.add_argument("--cpu", action="store_true",
                    help="cpu3's metric: its threads' CPU time (less moved by other processes "
                    "than its wall time; a probe's and a sample's cost is charged to it)")
    ap.add_argument("--busy", action="store_true",
                    help="beside other tracers: no wait for quiet, no run redone")
    a = ap.parse_args()
    bpfsight = os.path.join(a.build, "bpfsight")
    modes = MODES
    if a.modes:
        modes = ("untraced",) + tuple(m for m in a.modes.split(",") if m != "untraced")
        if any(m not in ALL_MODES for m in modes) or ("base" in modes) != bool(a.base):
            raise SystemExit(f"--modes: of {', '.join(ALL_MODES)}; base with --base only")
    if a.base:
        bpfsight = {m: os.path.join(a.base if m == "base" else a.build, "bpfsight")
                    for m in ALL_MODES}
    reps = a.reps or (3 if a.quick else 9)
    io_iters = 300_000 if a.quick else 1_000_000
    cpu_rounds = 30_000 if a.quick else 150_000
    if os.geteuid() != 0:
        raise SystemExit("bench_gil.py needs root (BPF)")
    res = {"python": a.python, "reps": reps}
    if a.only != "cpu3":
        res["ioloop"] = bench(bpfsight, a.python, "ioloop", ["ioloop", str(io_iters)],
                              lambda t: t["threads"]["main"]["ns_per_iter"], reps, modes, a.busy)
        res["ioloop"]["iters"] = io_iters
    if a.only != "ioloop":
        res["cpu3"] = bench(bpfsight, a.python, "cpu3", ["work", "3", str(cpu_rounds)],
                            (lambda t: sum(th["cpu_ns"] for th in t["threads"].values()) / 1e6)
                            if a.cpu else (lambda t: t["run_ns"] / 1e6), reps, modes, a.busy)
        res["cpu3"]["rounds"] = cpu_rounds
    if a.json:
        print(json.dumps(res, indent=2))
        return
    print(f"python: {a.python}, {reps} repetitions")
    print(f"{'workload':10s} {'metric':18s} " + " ".join(f"{m:>10s}" for m in modes) + " " +
          " ".join(f"{m + ' %':>10s}" for m in modes[1:]))
    for name, unit in (("ioloop", "ns/iteration"), ("cpu3", "CPU ms/run" if a.cpu else "ms/run")):
        if name not in res:
            continue
        r = res[name]
        for stat, slow in (("median", "slowdown_pct"), ("min", "slowdown_min_pct")):
            m, s = r[stat], r[slow]
            print(f"{name:10s} {unit + ' ' + stat:18s} " +
                  " ".join(f"{m[k]:10.1f}" for k in modes) + " " +
                  " ".join(f"{s[k]:+10.2f}" for k in modes[1:]))
        if "base" in modes and "default" in modes:
            print(f"{'':10s} default / base: median "
                  f"{r['median']['default'] / r['median']['base']:.3f}, "
                  f"min {r['min']['default'] / r['min']['base']:.3f}")
        for mode, g in r["gil"].items():
            print(f"{'':10s} {mode}: {g['waits']} GIL waits ({g['wait_ns'] / 1e6:.1f} ms), "
                  f"{g['holds']} holds")
        print(f"{'':10s} runs {'beside' if a.busy else 'redone because of'} another tracer: "
              f"{r['runs_redone']}")


if __name__ == "__main__":
    main()
