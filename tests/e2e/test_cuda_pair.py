"""cuda family: one probe pair per launch (docs/CUDA.md, "One probe pair per launch").

A runtime launch that reaches the driver (cudaLaunchKernel calling cuLaunchKernel, as
libcudart calls libcuda on a GPU) is recorded once, as cudaLaunchKernel with the host stub's
name, and its driver launch's return probe does not fire: only its entry, which sees that a
runtime launch made it. A runtime launch that fails before the driver and a direct driver
launch (cuBLAS's) are recorded as before, each once at depth 0. The real libcudart makes no
driver call without a GPU: the test library tests/workloads/lib/launch_pair.c has both
functions with CUDA's prototypes, its cudaLaunchKernel calling its cuLaunchKernel.

Probe hits are the kernel's own count of the recorder's programs' runs (run_cnt, counted
while BPF statistics are on: a BPF_ENABLE_STATS descriptor held by the test, given back
with it), read from the recorder's descriptors (/proc/PID/fdinfo).
"""
import collections
import ctypes
import json
import os
import re

from helpers import (BPFSIGHT, Recorder, Skip, check, dump, eq, info, need_root, run, spawn,
                     stats, tell, workload)
from test_cuda import calls, need_cuda

# For tests/run_tests.py: about how long these tests take on CI's machine (its order).
SECONDS = 4

PAIR = workload("launch_pair")
LIB = workload("lib/liblaunch_pair.so")
RT, BAD, DRV = 40, 5, 7  # runtime launches reaching the driver, failing before it, direct
OTHER = 11  # direct driver launches of a process not traced, meanwhile

RT_ARGS = {"ret": 0, "kernel": "pair_stub", "grid_x": 7, "grid_y": 3, "grid_z": 1,
           "block_x": 128, "block_y": 2, "block_z": 1, "shared_bytes": 96, "stream": "0x5151"}
BAD_ARGS = dict(RT_ARGS, ret=9, error="cudaErrorInvalidConfiguration", grid_x=0, grid_y=1)
DRV_ARGS = {"ret": 0, "kernel": "0xf00f0000", "grid_x": 3, "grid_y": 5, "grid_z": 7,
            "block_x": 32, "block_y": 2, "block_z": 1, "shared_bytes": 512, "stream": "0xd5d5"}

BPF_ENABLE_STATS = 32  # bpf(2) command; BPF_STATS_RUN_TIME = 0
NR_BPF = 321           # x86-64


def bpf_stats_on():
    """A descriptor that keeps the kernel's BPF run statistics on until it is closed."""
    libc = ctypes.CDLL(None, use_errno=True)
    attr = ctypes.create_string_buffer(8)  # {__u32 type = BPF_STATS_RUN_TIME}
    fd = libc.syscall(NR_BPF, BPF_ENABLE_STATS, attr, ctypes.c_uint(8))
    check(fd >= 0, f"BPF_ENABLE_STATS: {os.strerror(ctypes.get_errno())}")
    return fd


def prog_runs(pid):
    """{program name: run_cnt} of the BPF programs process PID holds."""
    runs = collections.Counter()
    fds = f"/proc/{pid}/fd"
    for fd in os.listdir(fds):
        try:
            if os.readlink(f"{fds}/{fd}") != "anon_inode:bpf-prog":
                continue
            with open(f"/proc/{pid}/fdinfo/{fd}") as f:
                fields = dict(line.split(":", 1) for line in f if ":" in line)
        except OSError:
            continue
        show = run(["bpftool", "-j", "prog", "show", "id", fields["prog_id"].strip()],
                   check=True).stdout
        runs[json.loads(show).get("name", "?")] += int(fields.get("run_cnt", "0"))
    return runs


def record_pair(env=None):
    """-p on launch_pair while it makes RT, BAD and DRV launches, and another launch_pair,
    not traced, OTHER direct driver launches (the probes are the traced process's own: the
    other's launches run none of the recorder's programs), BPF statistics on meanwhile.
    Returns (trace, workload pid, the other's pid, {program: runs during the launches})."""
    need_root()
    need_cuda()
    check(os.path.exists(PAIR) and os.path.exists(LIB), "workloads missing: make test-build")
    w = spawn([PAIR, LIB, str(RT), str(BAD), str(DRV)])
    pid = int(w.stdout.readline().split()[1])
    other = spawn([PAIR, LIB, "0", "0", str(OTHER)])
    other_pid = int(other.stdout.readline().split()[1])
    saved = dict(os.environ)
    os.environ.update(env or {})
    try:
        r = Recorder("-t", "cuda", "-p", str(pid))
    finally:
        os.environ.clear()
        os.environ.update(saved)
    r.wait_ready()
    fd = bpf_stats_on()
    try:
        before = prog_runs(r.p.pid)
        for p in (w, other):
            tell(p, "go")
            eq(p.stdout.readline().split(), ["done", "0"], "the workload's launches returned")
        after = prog_runs(r.p.pid)
    finally:
        os.close(fd)
    for p in (other, w):
        tell(p, "exit")
        eq(p.wait(30), 0, "workload exit")
    eq(r.wait(60), 0, f"recorder exit ({r.stderr[-600:]})")
    return r.out, pid, other_pid, after - before


def check_records(out, pid, other_pid, what):
    events = dump(out)
    eq(calls(events, other_pid), [], f"{what}: the process not traced")
    evs = calls(events, pid)
    got = [(e["name"], e["args"]) for e in evs]
    exp = ([("cudaLaunchKernel", RT_ARGS)] * RT + [("cudaLaunchKernel", BAD_ARGS)] * BAD +
           [("cuLaunchKernel", DRV_ARGS)] * DRV)
    eq(len(got), len(exp), f"{what}: launches recorded")
    for i, (g, x) in enumerate(zip(got, exp)):
        eq(g, x, f"{what}: launch {i}")
    eq(info(out)["lost_total"], 0, f"{what}: nothing lost")
    api = stats(out, "cuda_api_sum")["cuda_api_sum"]
    eq({r["name"]: r["count"] for r in api}, {"cudaLaunchKernel": RT + BAD, "cuLaunchKernel": DRV},
       f"{what}: cuda_api_sum")


def test_one_probe_pair_per_runtime_launch():
    features = run([BPFSIGHT, "record", "--features"], check=True).stdout
    if not re.search(r"^uprobe_session +yes", features, re.M):
        raise Skip("no uprobe sessions (Linux 6.13+): test_without_sessions_the_same_records")
    out, pid, other_pid, runs = record_pair()
    check_records(out, pid, other_pid, "uprobe sessions")
    # Runtime launches: their pair (entry, return). The driver launch a runtime launch makes:
    # its session program's entry run alone. Direct driver launches: the session's entry
    # and return; the untraced process's: nothing (no probe is in its memory).
    eq({k: runs[k] for k in ("ucall_entry", "ucall_return", "ucall_session")},
       {"ucall_entry": RT + BAD, "ucall_return": RT + BAD,
        "ucall_session": RT + 2 * DRV}, "probe hits (run_cnt) per program")


def test_without_sessions_the_same_records():
    """A kernel without uprobe sessions (forced here): the driver launch's return probe
    fires too, the records are the same."""
    out, pid, other_pid, runs = record_pair({"BPFSIGHT_FORCE_FALLBACKS": "uprobe_session"})
    check_records(out, pid, other_pid, "without uprobe sessions")
    eq({k: runs[k] for k in ("ucall_entry", "ucall_return", "ucall_session")},
       {"ucall_entry": 2 * RT + BAD + DRV, "ucall_return": 2 * RT + BAD + DRV,
        "ucall_session": 0}, "probe hits (run_cnt) per program")


def test_perf_event_uprobes_the_same_records():
    """Without uprobe_multi (one perf-event uprobe per site, no sessions either)."""
    out, pid, other_pid, _ = record_pair({"BPFSIGHT_FORCE_FALLBACKS": "uprobe_multi"})
    check_records(out, pid, other_pid, "perf-event uprobes")
