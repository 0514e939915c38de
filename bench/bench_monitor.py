#!/usr/bin/env python3
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""What `bpfsight monitor` costs against `bpfsight record` on the same workloads, and whether
its memory stays flat under process churn.

    sudo python3 bench/bench_monitor.py [--build build] [--rounds 3] [--churn-s 150]

cost: each workload runs untraced, under `record -a -t F` and under `monitor -a -t F` (with
record's --osrt-threshold, and with monitor's default), the configurations taking turns in
every round so that the machine's noise spreads over all of them alike. Figures: the
workload's slowdown against the untraced run of the same round (median of the rounds), and
the tracer's own CPU seconds (user + system, from wait4) over the run.
  osrt: bench/loadgen, one thread calling getppid for 2 s (calls per second)
  cuda: bench/cuda_loop streamquery for 3 x 300 ms (ns per cudaStreamQuery, real libcudart)
churn: `monitor -a` while tests/workloads/churn forks short processes (each 100 getppid, 4
alive at once) for --churn-s seconds; the monitor's RSS, fds and known processes from its
own /metrics every 10 s.
"""
import argparse
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import time
import urllib.request

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")


def start(cmd):
    """A tracer started and ready (its start line), with its stderr kept in a file."""
    err = open("/tmp/bench_monitor.err", "w+")
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err, text=True)
    end = time.time() + 60
    while time.time() < end:
        err.seek(0)
        text = err.read()
        if "Ctrl-C" in text:
            return p, err, text
        if p.poll() is not None:
            break
        time.sleep(0.05)
    raise SystemExit(f"{cmd} did not start: {text[-500:]}")


def stop(p):
    p.send_signal(signal.SIGINT)
    _, status, ru = os.wait4(p.pid, 0)
    p.returncode = os.waitstatus_to_exitcode(status)
    return ru.ru_utime + ru.ru_stime


def workloads(build):
    return {
        "osrt": (["-t", "osrt"], [f"{build}/bench/loadgen", "-t", "1", "-d", "2"],
                 lambda o: json.loads(o)["calls_per_s"], "calls/s", True),
        "cuda": (["-t", "cuda"], [f"{build}/bench/cuda_loop", "-m", "300", "-r", "3",
                                  "streamquery"],
                 lambda o: statistics.median(json.loads(o)["fns"]["streamquery"]["ns_per_call"]),
                 "ns/call", False),
    }


def cost(build, rounds):
    bs = f"{build}/bpfsight"
    trace = "/tmp/bench_monitor.bst"
    res = {}
    for name, (fam, cmd, metric, unit, higher_better) in workloads(build).items():
        configs = {
            "untraced": None,
            "record": [bs, "record", "-f", "-o", trace, "-a", *fam],
            "monitor (1us)": [bs, "monitor", "-l", "127.0.0.1:0", "-a", *fam,
                              "--osrt-threshold", "1us"],
            "monitor": [bs, "monitor", "-l", "127.0.0.1:0", "-a", *fam],
        }
        runs = {c: [] for c in configs}
        cpu = {c: [] for c in configs}
        for _ in range(rounds):
            for c, tcmd in configs.items():
                t = start(tcmd) if tcmd else None
                out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
                runs[c].append(metric(out))
                if t:
                    cpu[c].append(stop(t[0]))
        base = statistics.median(runs["untraced"])
        res[name] = {}
        for c in configs:
            v = statistics.median(runs[c])
            slow = base / v if higher_better else v / base
            res[name][c] = (v, slow, statistics.median(cpu[c]) if cpu[c] else 0.0)
        print(f"{name} ({unit}; slowdown vs untraced; tracer CPU s):")
        for c, (v, slow, cs) in res[name].items():
            print(f"  {c:15s} {v:14,.1f}  x{slow:.2f}  cpu {cs:.2f} s")
        sys.stdout.flush()
    return res


def churn(build, secs):
    bs = f"{build}/bpfsight"
    p, err, text = start([bs, "monitor", "-a", "-t", "osrt,sched", "-l", "127.0.0.1:0",
                          "--exit-grace", "30s"])
    url = re.search(r"http://\S+", text).group(0)
    load = subprocess.Popen(["sh", "-c", f"while :; do {build}/tests/churn 2000 100 4 "
                             ">/dev/null; done"])
    t0 = time.time()
    print("churn: s, RSS MiB, fds, processes known, with series")
    try:
        while time.time() - t0 < secs:
            text = urllib.request.urlopen(url, timeout=10).read().decode()

            def val(n):
                return float(re.search(rf"^{n} (\S+)$", text, re.M).group(1))
            print(f"  {time.time() - t0:5.0f} {val('process_resident_memory_bytes') / 2**20:8.1f}"
                  f" {val('process_open_fds'):5.0f} {val('bpfsight_processes'):6.0f}"
                  f" {val('bpfsight_processes_with_series'):4.0f}", flush=True)
            time.sleep(10)
    finally:
        load.terminate()
        load.wait()
        stop(p)
    with open(err.name) as f:
        print("  monitor:", f.read().strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--churn-s", type=int, default=150)
    ap.add_argument("--only", choices=["cost", "churn"])
    a = ap.parse_args()
    if a.only != "churn":
        cost(os.path.abspath(a.build), a.rounds)
    if a.only != "cost":
        churn(os.path.abspath(a.build), a.churn_s)


if __name__ == "__main__":
    main()
