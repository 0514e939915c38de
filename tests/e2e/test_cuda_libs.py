"""cuda family: the CUDA runtime linked statically, without symbols, into libraries (cuBLAS,
cuBLASLt, cuDNN, NCCL) and stripped programs, found by the name strings its entry points load
(user/uprobe/elf_strref.c). No GPU here: the calls enter the real code and fail.
"""
import collections
import os

from helpers import BPFSIGHT, check, dump, eq, record, run, tmpdir, workload
from test_cuda import API_STATIC, calls, need_cuda, parse_out, runtime_calls

# For tests/run_tests.py: about how long these tests take on CI's machine (its order).
SECONDS = 8

CUBLAS = "/usr/local/cuda/lib64/libcublas.so.13"
CUBLASLT = "/usr/local/cuda/lib64/libcublasLt.so.13"
CUBLAS_DLOPEN = workload("cuda/cublas_dlopen")


def without_names(seq):
    """(name, args) with the kernel/function names left out: a stripped program has none. Nor
    __cudaGetKernel, nvcc's internal call that names a launch's handle: it loads no name of its
    own to be found by (docs/CUDA.md)."""
    return [(n, {k: v for k, v in a.items() if k not in ("kernel", "func")}) for n, a in seq
            if n != "__cudaGetKernel"]


def test_runtime_static_stripped_exact():
    """cuda_api_static stripped of every symbol: each runtime call still recorded, with its
    arguments, exactly as the same program with symbols."""
    need_cuda(API_STATIC)
    stripped = os.path.join(tmpdir(), "cuda_api_stripped")
    run(["strip", "-o", stripped, API_STATIC], check=True)
    p, out = record([stripped, "2"], "-t", "cuda")
    eq(p.returncode, 0, f"record exit ({p.stderr.strip()[-800:]})")
    pid, _, procs = parse_out(p.stdout)
    got = without_names((e["name"], e["args"]) for e in calls(dump(out), pid))
    exp = without_names((n, a) for n, a, _ in runtime_calls(procs[pid], 2))
    eq(len(got), len(exp), "stripped static cudart: calls recorded")
    for i, (g, x) in enumerate(zip(got, exp)):
        eq(g, x, f"stripped static cudart: call {i}")


def test_cublas_dlopen_runtime_calls():
    """cuBLAS dlopen'ed while recording: the cudaFree(NULL) each cublasCreate_v2 makes through
    its own static runtime is recorded once per call (gdb breakpoints on every runtime entry
    point of both libraries, which trap without uprobes, count the same: docs/CUDA.md)."""
    need_cuda(CUBLAS_DLOPEN)
    if not os.path.exists(CUBLAS):
        check(False, f"{CUBLAS} missing (CUDA 13 toolkit without cuBLAS?)")
    n = 3
    p, out = record([CUBLAS_DLOPEN, str(n)], "-t", "cuda")
    eq(p.returncode, 0, f"record exit ({p.stderr.strip()[-800:]})")
    pid = int(p.stdout.split()[1])
    evs = calls(dump(out), pid)
    eq(collections.Counter(e["name"] for e in evs), {"cudaFree": n}, "cuBLAS's runtime calls")
    for e in evs:
        eq((e["args"].get("ptr"), e["args"].get("depth")), ("0x0", None),
           "cudaFree(NULL), made by cuBLAS itself (not inside another traced call)")

    # --dry-run lists the runtime entry points of both libraries.
    d = run([BPFSIGHT, "record", "--dry-run", "-t", "cuda", "--",
             CUBLAS_DLOPEN, "1"], timeout=120)
    sites = collections.defaultdict(set)
    for line in d.stdout.splitlines():
        f = line.split()
        if len(f) >= 7 and f[0] == "cuda":
            sites[os.path.realpath(f[-1])].add(f[1])
    for lib in (CUBLAS, CUBLASLT):
        for name in ("cudaMalloc", "cudaFree", "cudaMemsetAsync", "cudaMemsetAsync_ptsz",
                     "cudaLaunchKernel", "cudaStreamSynchronize"):
            check(name in sites[os.path.realpath(lib)], f"--dry-run: {name} in {lib}: {d.stdout[-600:]}")
