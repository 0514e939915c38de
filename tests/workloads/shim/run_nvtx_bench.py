#!/usr/bin/env python3
"""Cost of an nvtxRangePushA + nvtxRangePop pair (nvtx_bench) in three settings: no
injection, the shim idle (NVTX_INJECTION64_PATH set, no tracer), the shim recording
(bpftrace attached to bpfsight:batch and bpfsight:nvtx: their semaphores turn recording on,
and every batch is a real probe hit). Prints the median of RUNS runs of each. Needs root
and bpftrace for the third.

  tests/workloads/shim/run_nvtx_bench.py [--build DIR] [--runs N] [--iters N]
"""
import argparse
import json
import os
import statistics
import subprocess
import tempfile
import time


def one(bench, iters, env, shim=None):
    with tempfile.TemporaryDirectory() as d:
        go = os.path.join(d, "go")
        p = subprocess.Popen([bench, "--iters", str(iters), "--wait-file", go],
                             stdout=subprocess.PIPE, text=True, env=env)
        pid = json.loads(p.stdout.readline())["pid"]
        bt = None
        if shim:
            prog = " ".join(f"usdt:{shim}:bpfsight:{n} {{ @{n} = count(); }}"
                            for n in ("batch", "nvtx"))
            bt = subprocess.Popen(["bpftrace", "-p", str(pid), "-e", prog],
                                  stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                  text=True)
            while "Attaching" not in bt.stdout.readline():
                pass
            time.sleep(0.3)  # the shim's poller (50 ms) turns recording on
        open(go, "w").close()
        res = json.loads(p.stdout.readline())
        p.wait()
        if bt:
            bt.wait(30)
        return res["ns_per_pair"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--iters", type=int, default=1000000)
    a = ap.parse_args()
    bench = os.path.join(a.build, "tests", "shim", "nvtx_bench")
    shim = os.path.abspath(os.path.join(a.build, "libbpfsight-shim.so"))
    base = dict(os.environ)
    base.pop("NVTX_INJECTION64_PATH", None)
    inj = dict(base, NVTX_INJECTION64_PATH=shim)
    for name, env, tracer in (("no injection", base, None), ("shim idle", inj, None),
                              ("shim recording", inj, shim)):
        runs = [one(bench, a.iters, env, tracer) for _ in range(a.runs)]
        print(f"{name:16s} median {statistics.median(runs):7.2f} ns/pair  "
              f"runs {' '.join(f'{r:.2f}' for r in runs)}")


if __name__ == "__main__":
    main()
