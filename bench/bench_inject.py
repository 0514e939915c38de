#!/usr/bin/env python3
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""record --inject: how long the target's thread is taken, and what the injected shim costs
idle (bench/RESULTS.md, "record --inject"; docs/GPU.md, "Injection").

    python3 bench/bench_inject.py [--build build] [--rounds 7]

  stop   tests/workloads/inject_gap: a main thread spinning on CLOCK_MONOTONIC (keeping the
         longest gap between two reads) and a thread waiting in read() on stdin. Each round
         runs two fresh processes in turn: one recorded by `bpfsight record -p PID -t gpu
         --inject` with the waiting thread as the one borrowed (BPFSIGHT_INJECT_TID), one by
         the same command without --inject (baseline). Figures: the helper's hold of the
         thread (PTRACE_SEIZE to PTRACE_DETACH, as the recorder prints it); that thread's CPU
         time and run-queue wait (/proc schedstat) from before the recorder starts until it
         reports the shim loaded: a waiting thread runs only for the injection (dlopen, the
         shim's constructor, its read restarted), so that is the time it was away from its
         own code; and the spinning thread's longest gap (the rest of the process: this VM
         preempts a spinning thread for milliseconds, baseline and injected alike).
  idle   tests/shim/nvtx_bench (2,000,000 push/pop pairs timed in the process) started
         without any injection; in one of each pair of runs `record --inject -t gpu` loads
         the shim and stops (the shim is then idle: no tracer), then the pairs are timed: ns
         per pair either way, and the CPU the shim's poller thread uses per second of wall
         time over 3 s with no tracer (its /proc schedstat).
"""

import argparse
import json
import os
import re
import select
import signal
import statistics
import subprocess
import threading
import time


IDLE_WINDOW_S = 3


def readline(p, timeout=60):
    r, _, _ = select.select([p.stdout], [], [], timeout)
    if not r:
        raise RuntimeError(f"pid {p.pid}: no output within {timeout} s")
    return p.stdout.readline().strip()


def recorder(bpfsight, pid, out, inject, env=None):
    args = [bpfsight, "record", "--force", "-o", out, "-p", str(pid), "-t", "gpu"]
    if inject:
        args.append("--inject")
    rec = subprocess.Popen(args, stderr=subprocess.PIPE, text=True, env=env)
    rec.lines = []
    rec.reader = threading.Thread(target=lambda: rec.lines.extend(rec.stderr), daemon=True)
    rec.reader.start()
    return rec


def wait_line(rec, pattern, timeout=60):
    """REC's first stderr line matching PATTERN: the match."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        for line in list(rec.lines):
            m = re.search(pattern, line)
            if m:
                return m
        time.sleep(0.005)
    raise RuntimeError(f"no /{pattern}/ from the recorder: {''.join(rec.lines)[-600:]}")


def stop(rec):
    rec.send_signal(signal.SIGINT)
    rec.wait(60)
    rec.reader.join(5)


def gap_round(bpfsight, gap, out, inject):
    p = subprocess.Popen([gap], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        readline(p)
        p.stdin.write("report\n")  # start the measurement now (drop the start-up's gaps)
        p.stdin.flush()
        readline(p)
        # The borrowed thread: the one waiting in read() on stdin (a thread that would not
        # run otherwise: whatever CPU it uses meanwhile is the injection's).
        ctl = [int(t) for t in os.listdir(f"/proc/{p.pid}/task") if int(t) != p.pid][0]
        env = dict(os.environ, BPFSIGHT_INJECT_TID=str(ctl))
        run0, wait0 = schedstat(p.pid, ctl)
        rec = recorder(bpfsight, p.pid, out, inject, env)
        held = None
        try:
            if inject:
                held = int(wait_line(rec, r"stopped (\d+) us")[1])
                wait_line(rec, r"cupti-shim is loaded")
            else:
                wait_line(rec, r"recording pid")
            run1, wait1 = schedstat(p.pid, ctl)
            p.stdin.write("report\n")
            p.stdin.flush()
            gap_ns = json.loads(readline(p))["max_gap_ns"]
        finally:
            stop(rec)
        return held, gap_ns, run1 - run0, wait1 - wait0
    finally:
        p.stdin.close()
        p.wait(30)


def schedstat(pid, tid):
    """TID's time on CPU and waiting to run, ns (/proc schedstat)."""
    with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
        run, wait = f.read().split()[:2]
    return int(run), int(wait)


def poller_cpu_ns(pid):
    for t in os.listdir(f"/proc/{pid}/task"):
        with open(f"/proc/{pid}/task/{t}/comm") as f:
            if f.read().strip() == "bpfsight-shim":
                with open(f"/proc/{pid}/task/{t}/schedstat") as f:
                    return int(f.read().split()[0])
    return None


def idle_round(bpfsight, bench, out, inject, iters):
    d = os.path.dirname(out)
    go = os.path.join(d, "go")
    if os.path.exists(go):
        os.unlink(go)
    env = {k: v for k, v in os.environ.items()
           if k not in ("NVTX_INJECTION64_PATH", "CUDA_INJECTION64_PATH")}
    p = subprocess.Popen([bench, "--iters", str(iters), "--wait-file", go],
                         stdout=subprocess.PIPE, text=True, env=env)
    try:
        pid = json.loads(readline(p))["pid"]
        poller = None
        if inject:
            rec = recorder(bpfsight, pid, out, True)
            try:
                wait_line(rec, r"cupti-shim is loaded")
            finally:
                stop(rec)
            # A fixed window of idleness (no tracer): what the poller costs per second.
            cpu0, t0 = poller_cpu_ns(pid), time.monotonic()
            time.sleep(IDLE_WINDOW_S)
            poller = (poller_cpu_ns(pid) - cpu0) / (time.monotonic() - t0)
        open(go, "w").close()
        res = json.loads(readline(p, 300))
        return res["ns_per_pair"], poller
    finally:
        if p.poll() is None:
            open(go, "w").close()
        p.wait(120)


def spread(xs, fmt):
    xs = [x for x in xs if x is not None]
    if not xs:
        return "n/a"
    return f"{fmt(statistics.median(xs))} ({fmt(min(xs))} .. {fmt(max(xs))})"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default="build")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--iters", type=int, default=2000000)
    a = ap.parse_args()
    bpfsight = os.path.join(a.build, "bpfsight")
    gap = os.path.join(a.build, "tests", "inject_gap")
    bench = os.path.join(a.build, "tests", "shim", "nvtx_bench")
    out = os.path.join("/tmp", f"bench-inject-{os.getpid()}", "t.bst")
    os.makedirs(os.path.dirname(out), exist_ok=True)
    with open("/proc/loadavg") as f:
        load0 = f.read().split()[0]
    held, gaps = [], {True: [], False: []}
    run, waited = {True: [], False: []}, {True: [], False: []}
    ns, poll = {True: [], False: []}, []
    for r in range(a.rounds):
        for inject in ((True, False) if r % 2 == 0 else (False, True)):
            h, g, ru, wa = gap_round(bpfsight, gap, out, inject)
            gaps[inject].append(g)
            run[inject].append(ru)
            waited[inject].append(wa)
            if h is not None:
                held.append(h)
        for inject in ((True, False) if r % 2 == 0 else (False, True)):
            x, pc = idle_round(bpfsight, bench, out, inject, a.iters)
            ns[inject].append(x)
            if pc is not None:
                poll.append(pc)
    with open("/proc/loadavg") as f:
        load1 = f.read().split()[0]
    us = lambda v: f"{v:,.0f} us"
    ms = lambda v: f"{v / 1e6:,.2f} ms"
    print(f"rounds {a.rounds}, load average (1 min) {load0} -> {load1}, "
          f"kernel {os.uname().release}, nproc {os.cpu_count()}")
    print("| figure | median (min .. max) |")
    print("|---|---|")
    print(f"| thread held by ptrace (seize to detach) | {spread(held, us)} |")
    print(f"| borrowed thread's CPU (dlopen, constructor, restart), injected | "
          f"{spread(run[True], ms)} |")
    print(f"| same thread's CPU, baseline (recorded, no --inject) | {spread(run[False], ms)} |")
    print(f"| borrowed thread's wait for a CPU meanwhile, injected | "
          f"{spread(waited[True], ms)} |")
    print(f"| longest gap in the spinning thread, injected | {spread(gaps[True], ms)} |")
    print(f"| longest gap, baseline (recorded, no --inject) | {spread(gaps[False], ms)} |")
    print(f"| NVTX push+pop, no injection | {spread(ns[False], lambda v: f'{v:.2f} ns')} |")
    print(f"| NVTX push+pop, shim injected and idle | "
          f"{spread(ns[True], lambda v: f'{v:.2f} ns')} |")
    print(f"| shim poller CPU per second, idle | "
          f"{spread(poll, lambda v: f'{v / 1e3:,.1f} us')} |")


if __name__ == "__main__":
    main()
