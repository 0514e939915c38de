#!/usr/bin/env python3
"""What finding a GIL-less thread's Python thread state costs a stacked event: the walk of
the interpreter's list (bpf/stack_python.bpf.h, stack_list_tstate), per thread state passed.

Two threads of one python, pinned to one CPU, take turns (semaphores) calling the real
libcudart's cudaStreamQuery through ctypes (the GIL released), recorded with -t cuda
--stacks=cuda:0: the CPU's cached thread state is always the other thread's and the GIL is not
the caller's, so every call's stack walks the list. K idle threads started after the two
stand before them in the list (CPython prepends). The figure: the return probe's BPF ns per
Python call (kernel.bpf_stats_enabled; the driver calls each makes inside included: their
stacks find the thread state cached) at K = 0 and K (--idle, 192), per python;
(K - 0) / K is the cost of one thread state passed: one copy in every version (3.8-3.10
compare thread_id with the task's fs base; before, each also read the tid out of the struct
pthread that thread_id points at: run an older build to compare).

Not a run_bench.py section: `python3 bench/bench_py_tstate_walk.py --build build [--rounds N]`
prints a table for bench/RESULTS.md.
"""
import argparse
import glob
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_common import bpf_stats, recorded, spread  # noqa: E402

CUDART = "/usr/local/cuda/lib64/libcudart.so.13"
PROG = r"""
import ctypes, json, threading
lib = ctypes.CDLL({cudart!r})
q = lib.cudaStreamQuery
q.argtypes = [ctypes.c_void_p]
N, K = {n}, {k}
sa, sb, go, idle = (threading.Semaphore(0), threading.Semaphore(0), threading.Event(),
                    threading.Event())
def a():
    go.wait()
    for _ in range(N):
        q(None)
        sb.release()
        sa.acquire()
def b():
    go.wait()
    for _ in range(N):
        sb.acquire()
        q(None)
        sa.release()
ts = [threading.Thread(target=a), threading.Thread(target=b)]
for t in ts:
    t.start()
idlers = [threading.Thread(target=idle.wait) for _ in range(K)]
for t in idlers:
    t.start()
go.set()
for t in ts:
    t.join()
idle.set()
print(json.dumps({{"calls": 2 * N}}))
"""


def pyenv(minor):
    found = glob.glob(os.path.expanduser(f"~/.pyenv/versions/3.{minor}.*/bin/python3.{minor}"))
    return sorted(found)[-1] if found else None


def one(bpfsight, py, k, n, stacks):
    cmd = ["taskset", "-c", "1", bpfsight, "record", "--force", "-o", "/tmp/bench_tstate.bst", "-t",
           "cuda", "--stacks=" + ("cuda:0" if stacks else "none"), "--", py, "-c",
           PROG.format(cudart=CUDART, n=n, k=k)]
    stdout, stderr, rc, per = recorded(cmd, {"ucall_return"})
    if rc:
        sys.exit(f"{' '.join(cmd[:9])} exited {rc}: {stderr[-400:]}")
    calls = json.loads(stdout.strip().splitlines()[-1])["calls"]
    runs, ns = per.get("ucall_return", (0, 0))
    if runs < calls:
        sys.exit(f"{py} K={k}: {runs} return-probe runs for {calls} calls")
    # Without a GPU each runtime call makes driver calls inside it (traced too, on the same
    # thread: their stacks find the thread state cached): all of it is the call's.
    return ns / calls


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--calls", type=int, default=5000)
    ap.add_argument("--idle", type=int, default=192, help="K: idle threads before the two")
    ap.add_argument("--pythons", default="8,10,11,12", help="pyenv minors")
    a = ap.parse_args()
    bpfsight = os.path.join(a.build, "bpfsight")
    pys = [p for p in (pyenv(int(m)) for m in a.pythons.split(",")) if p]
    K = a.idle
    configs = [(py, k, st) for py in pys for k, st in ((0, False), (0, True), (K, True))]
    res = {c: [] for c in configs}
    with bpf_stats() as on:
        if not on:
            sys.exit("kernel.bpf_stats_enabled could not be turned on")
        for r in range(a.rounds):
            for c in (configs if r % 2 == 0 else configs[::-1]):
                res[c].append(one(bpfsight, c[0], c[1], a.calls, c[2]))
    print(f"| python | no stack | stack, K = 0 | stack, K = {K} | per thread state passed |")
    print("|---|---|---|---|---|")
    for py in pys:
        base, k0, kk = res[py, 0, False], res[py, 0, True], res[py, K, True]
        per = [(x - y) / K for x, y in zip(kk, k0)]
        f = [spread(v) for v in (base, k0, kk, per)]
        print(f"| {os.path.basename(py)} | " + " | ".join(
            f"{s[0]:.0f} ({s[1]:.0f}..{s[2]:.0f})" for s in f) + " |")
    print(f"\n{a.rounds} rounds, {2 * a.calls} calls each; ucall_return ns per Python call, medians "
          f"(min..max); per thread state: (K={K} - K=0) / {K} in the same round")


if __name__ == "__main__":
    main()
