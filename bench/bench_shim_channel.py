#!/usr/bin/env python3
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""What the cupti-shim channel costs, end to end, in one run (docs/GPU.md, "The channel").

    python3 bench/bench_shim_channel.py [--build build] [--iters N] [--runs R]

With tests/workloads/shim/nvtx_bench (N nvtxRangePushA+Pop pairs, timed in the process):
  - ns per pair: no injection, the shim idle (NVTX_INJECTION64_PATH set, nothing attached),
    and recording (`bpfsight record -p PID -t nvtx`), interleaved, R runs each: medians;
  - per batch, in the recording runs: the BPF program's time (kernel.bpf_stats_enabled),
    batches, records per batch, BPF ns per record, the recorder's CPU per record, and what
    was lost (must be 0: every range reaches the file).
Needs root and a build with the shim (make test-build). Python standard library only.
"""
import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time


def bench_plain(bench, iters, env):
    p = subprocess.run([bench, "--iters", str(iters)], env=env, capture_output=True, text=True,
                       check=True)
    return json.loads(p.stdout.splitlines()[-1])["ns_per_pair"]


def prog_stats(name):
    out = subprocess.run(["bpftool", "-j", "prog", "show"], capture_output=True, text=True,
                         check=True).stdout
    p = [x for x in json.loads(out) if x.get("name") == name]
    return (p[0].get("run_cnt", 0), p[0].get("run_time_ns", 0)) if p else (0, 0)


def bench_recorded(build, iters):
    bench = os.path.join(build, "tests/shim/nvtx_bench")
    d = tempfile.mkdtemp(prefix="bench-shim-")
    go, out = os.path.join(d, "go"), os.path.join(d, "t.bst")
    env = dict(os.environ, NVTX_INJECTION64_PATH=os.path.join(build, "libbpfsight-shim.so"))
    w = subprocess.Popen([bench, "--iters", str(iters), "--wait-file", go], env=env,
                         stdout=subprocess.PIPE, text=True)
    pid = json.loads(w.stdout.readline())["pid"]
    ru0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    r = subprocess.Popen([os.path.join(build, "bpfsight"), "record", "-o", out, "-t", "nvtx",
                          "-p", str(pid)], stderr=subprocess.PIPE, text=True)
    for line in r.stderr:
        if "Ctrl-C" in line:
            break
    time.sleep(0.3)  # the shim's poller sees the semaphores within 50 ms
    cnt0, ns0 = prog_stats("shim_probe")
    open(go, "w").close()
    res = w.stdout.read()
    w.wait()
    cnt1, ns1 = prog_stats("shim_probe")
    r.stderr.read()
    r.wait()  # it stops when its target exits
    ru1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    inf = json.loads(subprocess.run([os.path.join(build, "bpfsight"), "info", "--json", out],
                                    capture_output=True, text=True, check=True).stdout)
    n = inf["events"].get("nvtx_range", 0)
    cpu = (ru1.ru_utime + ru1.ru_stime) - (ru0.ru_utime + ru0.ru_stime)
    subprocess.run(["rm", "-rf", d])
    return {"ns_per_pair": json.loads(res.splitlines()[-1])["ns_per_pair"], "ranges": n,
            "lost": inf["lost_total"], "batches": cnt1 - cnt0, "bpf_ns": ns1 - ns0,
            "recorder_cpu_s": cpu}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--iters", type=int, default=1000000)
    ap.add_argument("--runs", type=int, default=5)
    a = ap.parse_args()
    if os.geteuid():
        sys.exit("needs root")
    bench = os.path.join(a.build, "tests/shim/nvtx_bench")
    shim = os.path.join(a.build, "libbpfsight-shim.so")
    if not os.path.exists(bench) or not os.path.exists(shim):
        sys.exit(f"{bench} or {shim} missing: make test-build (needs the CUDA toolkit)")
    plain = {k: v for k, v in os.environ.items() if k != "NVTX_INJECTION64_PATH"}
    idle_env = dict(plain, NVTX_INJECTION64_PATH=shim)
    subprocess.run(["sysctl", "-qw", "kernel.bpf_stats_enabled=1"], check=True)
    none, idle, rec = [], [], []
    try:
        for _ in range(a.runs):
            none.append(bench_plain(bench, a.iters, plain))
            idle.append(bench_plain(bench, a.iters, idle_env))
            rec.append(bench_recorded(a.build, a.iters))
    finally:
        subprocess.run(["sysctl", "-qw", "kernel.bpf_stats_enabled=0"])

    def med(v):
        return statistics.median(v)

    recns = [x["ns_per_pair"] for x in rec]
    print(f"nvtxRangePushA+Pop, {a.iters} pairs, median of {a.runs} (min..max):")
    for what, v in (("no injection", none), ("shim idle", idle), ("recording", recns)):
        print(f"  {what:13s} {med(v):7.1f} ns/pair ({min(v):.1f}..{max(v):.1f})")
    per_batch = [x["bpf_ns"] / x["batches"] for x in rec if x["batches"]]
    per_rec = [x["bpf_ns"] / x["ranges"] for x in rec if x["ranges"]]
    rpb = [x["ranges"] / x["batches"] for x in rec if x["batches"]]
    cpu = [x["recorder_cpu_s"] * 1e9 / x["ranges"] for x in rec if x["ranges"]]
    print(f"per batch: BPF {med(per_batch):.0f} ns ({min(per_batch):.0f}..{max(per_batch):.0f}),"
          f" {med(rpb):.1f} records/batch, BPF {med(per_rec):.2f} ns/record; recorder "
          f"{med(cpu):.0f} ns CPU/record")
    print(f"ranges recorded per run {[x['ranges'] for x in rec]} (expected "
          f"{int(a.iters * 1.1)}), lost {[x['lost'] for x in rec]}")


if __name__ == "__main__":
    main()
