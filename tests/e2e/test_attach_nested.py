"""Attaching to a running job loses nothing: -p and -a started while the 64 threads of a
process are calling, each call a runtime-shaped call (cudaStreamQuery) that makes a
driver-shaped one (cuStreamQuery), as libcudart's calls enter libcuda (the test library
tests/workloads/lib/nested_api.c; the real libcudart makes no driver call without a driver).

Exact by construction: each call's stream argument names its thread and its sequence number
(tests/workloads/ucall_nested.c), so for every thread the trace shows which calls were made
while it recorded. Between a thread's first and last recorded call, every call is there, once,
at depth 0, with its driver call at depth 1; no call is recorded at another depth; nothing is
lost. The probes come and go while calls are in flight: that is what these tests are about (a
call whose entry was seen once its return probe was gone used to pile up frames until every
later call was lost as task_map_full)."""
import collections
import os

from helpers import (BPFSIGHT, alone, check, dump, eq, info, need_root, run, spawn, tell, tmpdir,
                     workload)

# For tests/run_tests.py: about how long these tests take on CI's machine (its order).
SECONDS = 14

NESTED = workload("ucall_nested")
LIB = workload("lib/libnested_api.so")
THREADS = 64
# 64 threads x 200 calls/s, two records each: ~26k records/s, far below what the ring and
# the consumer take on 2 loaded cores. In bursts of 10 calls (more than the 8 frames a
# thread's call stack keeps), 1/50 s apart: threads call back to back as the probes come and
# go, at the start and at the end.
BURST = 10
PAUSE_US = 50000


def record_attached(mode):
    """Start the workload, record MODE ("-p" or "-a") for 2 s while every thread calls, stop
    the workload. Returns (pid, calls made per thread, trace path)."""
    need_root()
    check(os.path.exists(NESTED) and os.path.exists(LIB), "workloads missing: make test-build")
    w = spawn([NESTED, LIB, str(THREADS), str(BURST), str(PAUSE_US)])
    pid = int(w.stdout.readline().split()[1])
    eq(w.stdout.readline().strip(), "calling", "every thread calling before the attach")
    out = os.path.join(tmpdir(), "t.bst")
    target = ["-p", str(pid)] if mode == "-p" else ["-a"]
    p = run([BPFSIGHT, "record", "-o", out, "-t", "cuda", "-d", "2s", *target], timeout=120)
    tell(w, "stop")
    eq(w.wait(60), 0, "workload exit")
    made = {}
    for line in w.stdout.read().splitlines():
        f = line.split()
        if f and f[0] == "calls":
            made[int(f[1])] = int(f[2])
    eq(len(made), THREADS, "the workload's count of every thread")
    eq(p.returncode, 0, f"record exit ({p.stderr.strip()[-800:]})")
    return pid, made, out, p.stderr


def check_exact(pid, made, out, stderr, what):
    meta = info(out)
    eq(meta["lost_total"], 0, f"{what}: lost {meta['lost']} by family {meta.get('lost_by_family')}")
    check("0 events lost" in stderr, f"{what}: the end-of-run line: {stderr.strip()[-300:]}")
    # thread index -> depth -> {seq: name}
    calls = collections.defaultdict(lambda: collections.defaultdict(dict))
    for e in dump(out):
        if e["kind"] != "cuda_api" or e["pid"] != pid:
            continue
        v = int(e["args"]["stream"], 16)
        idx, seq, depth = (v >> 32) - 1, v & 0xffffffff, e["args"].get("depth", 0)
        check(0 <= idx < THREADS and 1 <= seq <= made[idx], f"{what}: a call never made: {e}")
        check(seq not in calls[idx][depth], f"{what}: call {seq} of thread {idx} twice: {e}")
        calls[idx][depth][seq] = e["name"]
    eq(len(calls), THREADS, f"{what}: threads with calls recorded")
    traced = window = 0
    for idx, by_depth in sorted(calls.items()):
        outer, inner = by_depth[0], by_depth[1]
        eq(set(by_depth) - {0, 1}, set(), f"{what}: thread {idx}: depths")
        runtime = sorted(s for s, n in outer.items() if n == "cudaStreamQuery")
        check(len(runtime) >= 10, f"{what}: thread {idx}: {len(runtime)} calls recorded")
        first, last = runtime[0], runtime[-1]
        # Every call the thread made between its first and last recorded one: the calls made
        # while it recorded, counted by the workload itself.
        eq(runtime, list(range(first, last + 1)), f"{what}: thread {idx}: calls recorded")
        traced += len(runtime)
        window += last - first + 1
        # Each with its driver call at depth 1 (the first and last may have been entered
        # while the driver function's probe was coming or going); a driver call at depth 0
        # only outside the window (its runtime call's probe not there yet, or gone).
        eq([s for s in range(first + 1, last) if inner.get(s) != "cuStreamQuery"], [],
           f"{what}: thread {idx}: runtime calls without their driver call at depth 1")
        # The call after the last may have begun before the recording stopped, its driver
        # call returned meanwhile and its own return only after the probes were gone.
        eq(set(inner) - set(range(first, last + 2)), set(),
           f"{what}: thread {idx}: driver calls at depth 1 outside the window")
        eq({s for s, n in outer.items() if n == "cuStreamQuery" and first <= s <= last}, set(),
           f"{what}: thread {idx}: driver calls at depth 0 inside the window")
    eq(traced, window, f"{what}: calls traced == calls made while recording")


def test_attach_pid_to_running_nested_calls():
    check_exact(*record_attached("-p"), "-p")


@alone("a system-wide recording (-a): other tests' processes would be traced by it")
def test_system_wide_on_running_nested_calls():
    check_exact(*record_attached("-a"), "-a")
