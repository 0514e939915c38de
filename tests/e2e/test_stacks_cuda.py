"""--stacks=cuda: CUDA calls carry the calling thread's stack, taken when the call returns,
for calls lasting at least the threshold. Native callers (tests/workloads/cuda/cuda_api.cu)
and Python callers through ctypes (tests/workloads/py_cuda.py, which releases the GIL around
each call: its frames are found in the interpreter's list of thread states)."""
import json
import os
import re

from helpers import (BPFSIGHT, Recorder, check, dump, eq, need_root, record, run, spawn,
                     stats, tell, workload)
from test_gil import debian_python, pyenv_python

# For tests/run_tests.py: about how long these tests take on CI's machine (its order).
SECONDS = 4

HERE = os.path.dirname(os.path.abspath(__file__))
PY_CUDA = os.path.realpath(os.path.join(HERE, "..", "workloads", "py_cuda.py"))
API_SHARED = workload("cuda/cuda_api_shared")
CUDART = "/usr/local/cuda/lib64/libcudart.so"


def need_cuda():
    need_root()
    if not os.path.exists(CUDART) or not os.path.exists(API_SHARED):
        from helpers import Skip
        raise Skip(f"no CUDA toolkit ({CUDART}) or workloads")


def marker_line(tag):
    with open(PY_CUDA) as f:
        return [i + 1 for i, l in enumerate(f) if f"# {tag}" in l][0]


def calls(out):
    return [e for e in dump(out) if e["kind"] == "cuda_api" and e["args"].get("depth", 0) == 0]


def test_every_call_names_its_native_caller():
    """:0 stacks every outermost call: each names a function of the workload as its caller,
    and a kernel launch made from a host stub (nvcc's __device_stub__) is made from that
    kernel's own, as the call's kernel argument says."""
    need_cuda()
    p, out = record([API_SHARED, "2"], "-t", "cuda", "--stacks=cuda:0")
    eq(p.returncode, 0, f"record ({p.stderr[-400:]})")
    evs = calls(out)
    check(len(evs) > 20, f"{len(evs)} calls")
    launches = 0
    for e in evs:
        check("stack" in e, f"{e['name']}: no stack")
        top = e["stack"][0]
        eq(os.path.basename(top["file"]), "cuda_api_shared", f"{e['name']}: caller's module")
        if e["name"] == "cudaLaunchKernel":
            launches += 1
            kernel = e["args"]["kernel"].split("(")[0].split("<")[0].split()[-1]
            # A kernel launched with <<<>>> goes through its host stub, unless inlined.
            if top["func"].startswith("__device_stub__"):
                check(kernel in top["func"], f"{kernel} launched from {top['func']}")
    check(launches >= 4, f"{launches} launches")


def test_the_threshold_decides_which_calls_carry_a_stack():
    """The default threshold (100 us): exactly the outermost calls of 100 us or more carry a
    stack."""
    need_cuda()
    p, out = record([API_SHARED, "3"], "-t", "cuda", "--stacks=cuda")
    eq(p.returncode, 0, f"record ({p.stderr[-400:]})")
    evs = calls(out)
    eq(sorted(e["ts"] for e in evs if "stack" in e),
       sorted(e["ts"] for e in evs if e["dur"] >= 100_000), "calls with a stack")
    p, out = record([API_SHARED, "1"], "-t", "cuda")
    eq([e for e in dump(out) if "stack" in e], [], "no --stacks: no stacks")


def test_python_callers_through_ctypes():
    """A Python program calling libcudart through ctypes: every cudaMalloc names alloc() at
    its call line, every cudaMemcpy copy(), below them main() and <module> (the process is
    attached with -p and the recording flushed while it lives); cuda_callsites counts them
    per Python line."""
    need_cuda()
    pys = [p for p in (pyenv_python(12), debian_python()) if p]
    check(pys, "no CPython 3.11+")
    lines = {"cudaMalloc": ("alloc", marker_line("CALL_MALLOC")),
             "cudaMemcpy": ("copy", marker_line("CALL_MEMCPY"))}
    n = 7
    for py in pys:
        w = spawn([py, PY_CUDA, "--wait", str(n)])
        pid = int(w.stdout.readline().split()[1])
        r = Recorder("-t", "cuda", "--stacks=cuda:0", "-p", str(pid))
        r.wait_ready()
        tell(w, "go")
        truth = json.loads(w.stdout.readline())
        eq(truth["codes"], [35], f"{py}: cudaErrorInsufficientDriver (no GPU)")
        r.flush()  # named while the process lives
        tell(w, "end")
        eq(w.wait(30), 0, f"{py}: workload exit")
        eq(r.wait(60), 0, f"{py}: recorder ({r.stderr[-300:]})")
        evs = [e for e in calls(r.out) if e["name"] in lines and e["pid"] == pid]
        eq(len(evs), 2 * n, f"{py}: calls")
        for e in evs:
            pyf = [(f["func"], f.get("line")) for f in e.get("stack", []) if "line" in f]
            func, line = lines[e["name"]]
            eq([f for f, _ in pyf[:3]], [func, "main", "<module>"], f"{py}: {e['name']}")
            eq(pyf[0][1], line, f"{py}: {e['name']} called at line")
        rows = {(r["api"], r["func"], r["line"]): r for r in
                stats(r.out, "cuda_callsites")["cuda_callsites"]}
        for api, (func, line) in lines.items():
            row = rows.get((api, func, line))
            check(row and row["count"] == n and row["file"] == PY_CUDA,
                  f"{py}: cuda_callsites row of {api} at {func}:{line}: {row}")
            eq(row["total_ns"], sum(e["dur"] for e in evs if e["name"] == api),
               f"{py}: {api} total")


def test_bad_stacks_option():
    """--stacks names families that take stacks, recorded ones, with thresholds."""
    for arg, what in (("osrtx", "takes no stacks"), ("nvtx", "takes no stacks"),
                      ("cuda:fast", "bad threshold"), ("nccl", "not recorded"),
                      ("osrt", "not recorded")):
        p = run([BPFSIGHT, "record", "-t", "cuda", f"--stacks={arg}", "--", "/bin/true"])
        eq(p.returncode, 1, f"--stacks={arg}")
        check(what in p.stderr, f"--stacks={arg}: {p.stderr}")
