"""cuda family on the real kernel and the real CUDA 13 libraries.

There is no GPU here: every call enters the real libcudart (or the stub libcuda) and fails
(cudaErrorInsufficientDriver, CUDA_ERROR_STUB_LIBRARY), so every probe fires and the calls,
their order and their arguments are known exactly. The workloads (tests/workloads/cuda/) are
deterministic and single-threaded: each test rebuilds the exact sequence of (name, args) the
workload makes, from the values it prints, and compares it with the whole dump.
"""
import collections
import os
import re
import struct
import shutil

from helpers import (BPFSIGHT, Recorder, Skip, alone, check, dump, eq, info, need_root, record, row,
                     run, spawn, stats, tmpdir, wait_for, workload)

# For tests/run_tests.py: about how long these tests take on CI's machine (its order).
SECONDS = 21

CUDART = "/usr/local/cuda/lib64/libcudart.so.13"
NVCC = "/usr/local/cuda/bin/nvcc"
API_SHARED = workload("cuda/cuda_api_shared")
API_STATIC = workload("cuda/cuda_api_static")
DRIVER = workload("cuda/cuda_driver")
DLOPEN = workload("cuda/cuda_dlopen")
STORM = workload("cuda_storm")
WRAP = workload("cuda/libcuda_wrap.so")

# -p and -a probe what appears while they record (new processes, dlopen) a little later;
# launch mode stops the process until its new code is probed. Where a test starts a workload
# while recording, the workload waits for its cue until the recorder (-v) says it is probed.

RT_ERR = {"ret": 35, "error": "cudaErrorInsufficientDriver"}
DRV_ERR = {"ret": 34, "error": "CUDA_ERROR_STUB_LIBRARY"}

KERNEL_A = "my_kernel_a(float*, int)"
KERNEL_B = "my_kernel_b(int*, unsigned int)"
KERNEL_S = "void scale_kernel<float>(float*, float, int)"
HOST_FN = "host_callback(void*)"


def need_cuda(*paths):
    need_root()
    if not os.path.exists(CUDART):
        raise Skip(f"no CUDA toolkit ({CUDART})")
    for p in paths:
        if not os.path.exists(p) and not os.path.exists(NVCC):
            raise Skip(f"no {NVCC}: the CUDA workloads are not built")
        check(os.path.exists(p), f"{p} missing: run make test-build")


def parse_out(stdout):
    """The workload's report: {pid: {"t0", "t1", "dlopen", "ptr": {name: "0x.."},
    "ret": {name: int}}}, the first "pid" line's pid, and "child" when it forked."""
    procs = collections.defaultdict(lambda: {"ptr": {}, "ret": {}})
    first = child = None
    for line in stdout.splitlines():
        f = line.split()
        if not f:
            continue
        if f[0] == "pid" and first is None:
            first = int(f[1])
        elif f[0] == "child":
            child = int(f[1])
        elif f[0] in ("t0", "t1", "dlopen"):
            procs[int(f[1])][f[0]] = int(f[2])
        elif f[0] == "ptr":
            procs[int(f[1])]["ptr"][f[2]] = f[3]
        elif f[0] == "ret":
            procs[int(f[1])]["ret"][f[2]] = int(f[3])
    check(first is not None, f"no 'pid' line in the workload's output: {stdout[:300]!r}")
    return first, child, procs


def calls(events, pid):
    """The cuda_api events of PID in time order."""
    evs = [e for e in events if e["kind"] == "cuda_api" and e["pid"] == pid]
    evs.sort(key=lambda e: e["ts"])
    return evs


def same_sequence(evs, expected, what):
    """EVS (dump events) are exactly EXPECTED ([(name, args)]), in order."""
    got = [(e["name"], e["args"]) for e in evs]
    for i, (g, x) in enumerate(zip(got, expected)):
        if g != x:
            raise AssertionError(f"{what}: call {i} is {g}, expected {x}")
    if len(got) != len(expected):
        extra = got[len(expected):len(expected) + 3] or expected[len(got):len(got) + 3]
        raise AssertionError(f"{what}: {len(got)} calls, expected {len(expected)}; "
                             f"first difference: {extra}")


# ---- cuda_api.cu: what it calls (its header comment) and with which arguments. ----

def runtime_calls(p, rounds):
    """The calls of one cuda_api process, as [(name, args, in_range)]; P is its parse_out
    entry. in_range: between cudaProfilerStart and cudaProfilerStop, both included."""
    ptr = p["ptr"]
    s, ev, dbuf, dbuf2 = ptr["stream"], ptr["event"], ptr["dbuf"], ptr["dbuf2"]
    hbuf, hbuf2 = ptr["hbuf"], ptr["hbuf2"]
    out = []

    def c(name, inside=False, /, **args):
        out.append((name, dict(RT_ERR, **args), inside))

    def launch(kernel, grid, block, shared, stream):
        c("cudaLaunchKernel", True, kernel=kernel, grid_x=grid[0], grid_y=grid[1],
          grid_z=grid[2], block_x=block[0], block_y=block[1], block_z=block[2],
          shared_bytes=shared, stream=stream)

    c("cudaMalloc", bytes=65536)
    c("cudaMalloc", bytes=65536)
    for r in range(rounds):
        c("cudaMalloc", bytes=1048576)
        c("cudaMallocHost", bytes=3000)
        c("cudaMallocManaged", bytes=7000, flags=1)  # cudaMemAttachGlobal
        c("cudaMallocAsync", bytes=9000, stream=s)
        c("cudaMemset", dst=dbuf, value=0x5a, bytes=1000)
        c("cudaMemsetAsync", dst=dbuf2, value=0xa5, bytes=2000, stream=s)
        c("cudaStreamBeginCapture", stream=s, mode=1)  # cudaStreamCaptureModeThreadLocal
        c("cudaStreamEndCapture", stream=s)
        c("cudaGraphInstantiate", graph=ptr["graph"], flags=0)
        for _ in range(2):
            c("cudaGraphLaunch", graph_exec=ptr["gexec"], stream=s)
        c("cudaProfilerStart", True)
        # <<<>>>: the stub asks for the kernel's handle once (it fails here), then
        # __cudaLaunchKernel tail-jumps to cudaLaunchKernel with the host stub.
        if r == 0:
            c("__cudaGetKernel", True, name=KERNEL_A)
        for _ in range(2):
            launch(KERNEL_A, (7, 3, 1), (128, 2, 1), 96, s)
        for _ in range(3):
            launch(KERNEL_B, (13, 1, 1), (32, 4, 1), 2048, s)
        if r == 0:
            c("__cudaGetKernel", True, name=KERNEL_S)
        launch(KERNEL_S, (2, 2, 2), (8, 8, 8), 0, "0x0")
        c("cudaLaunchHostFunc", True, stream=s, func=HOST_FN)
        c("cudaMemcpy", True, dst=dbuf, src=hbuf, bytes=4096, kind="HtoD")
        c("cudaMemcpy", True, dst=hbuf, src=dbuf, bytes=12345, kind="DtoH")
        c("cudaMemcpy", True, dst=dbuf2, src=dbuf, bytes=777, kind="DtoD")
        c("cudaMemcpy", True, dst=hbuf2, src=hbuf, bytes=333, kind="HtoH")
        c("cudaMemcpy", True, dst=dbuf, src=hbuf, bytes=5000, kind="default")
        for _ in range(2):
            c("cudaMemcpyAsync", True, dst=dbuf2, src=hbuf, bytes=8192, kind="HtoD", stream=s)
        c("cudaMemcpy2D", True, dst=dbuf, src=hbuf, bytes=200 * 10, kind="HtoD")
        c("cudaStreamSynchronize", True, stream=s)
        c("cudaProfilerStop", True)
        c("cudaEventRecord", event=ev, stream=s)
        c("cudaStreamWaitEvent", stream=s, event=ev, flags=0)
        c("cudaEventQuery", event=ev)
        c("cudaEventSynchronize", event=ev)
        c("cudaStreamQuery", stream=s)
        c("cudaStreamSynchronize", stream=s)
        c("cudaDeviceSynchronize")
        c("cudaFreeAsync", ptr=ptr["apool"], stream=s)
        c("cudaFreeHost", ptr=ptr["pinned"])
        c("cudaFree", ptr=ptr["managed"])
        c("cudaFree", ptr=ptr["tmp"])
    c("cudaFree", ptr=dbuf)
    c("cudaFree", ptr=dbuf2)
    return out


def check_runtime_process(events, pid, p, rounds, what):
    eq(p["ret"]["cudaMalloc"], 35, f"{what}: the workload's own cudaMalloc return code")
    exp = [(n, a) for n, a, _ in runtime_calls(p, rounds)]
    same_sequence(calls(events, pid), exp, what)


def check_runtime_reports(out, p, rounds, what):
    """stats of a recording of one cuda_api process (launch mode)."""
    exp = runtime_calls(p, rounds)
    counts = collections.Counter(n for n, _, _ in exp)
    rep = stats(out, "cuda_api_sum,cuda_launch_sum,cuda_memcpy_sum,cuda_err_sum")
    api = rep["cuda_api_sum"]
    eq({r["name"]: r["count"] for r in api}, dict(counts), f"{what}: cuda_api_sum counts")
    for r in api:
        check(0 < r["min_ns"] <= r["med_ns"] <= r["max_ns"], f"{what}: {r} min/med/max")
        check(abs(r["avg_ns"] * r["count"] - r["total_ns"]) <= r["count"],
              f"{what}: {r['name']} total = avg * count")
    # Each row's share is rounded to 0.1: the sum is 100 within 0.05 a row.
    pct = sum(r["time_pct"] for r in api)
    check(abs(pct - 100.0) <= 0.05 * len(api) + 1e-6,
          f"{what}: time_pct sums to {pct} over {len(api)} rows")

    launches = rep["cuda_launch_sum"]
    eq(len(launches), 3, f"{what}: cuda_launch_sum rows ({launches})")
    for name, n, grid, block, shared in ((KERNEL_A, 2, "7x3x1", "128x2x1", 96),
                                         (KERNEL_B, 3, "13x1x1", "32x4x1", 2048),
                                         (KERNEL_S, 1, "2x2x2", "8x8x8", 0)):
        r = row(launches, name=name)
        eq((r["count"], r["grid"], r["block"], r["shared_bytes"]),
           (n * rounds, grid, block, shared), f"{what}: launches of {name}")
        check(r["total_ns"] > 0, f"{what}: {name} total_ns")

    mem = rep["cuda_memcpy_sum"]
    want = {"HtoD": (4 * rounds, (4096 + 2 * 8192 + 2000) * rounds),
            "DtoH": (rounds, 12345 * rounds), "DtoD": (rounds, 777 * rounds),
            "HtoH": (rounds, 333 * rounds), "default": (rounds, 5000 * rounds),
            "memset": (2 * rounds, 3000 * rounds)}
    eq({r["name"]: (r["count"], r["bytes"]) for r in mem}, want, f"{what}: cuda_memcpy_sum")

    errs = rep["cuda_err_sum"]
    eq({r["name"]: (r["count"], r["code"], r["error"]) for r in errs},
       {n: (k, 35, "cudaErrorInsufficientDriver") for n, k in counts.items()},
       f"{what}: cuda_err_sum")


def check_timing(events, pid, p, what):
    """Durations are real: inside the workload's own clock readings, sequential, > 0."""
    evs = calls(events, pid)
    check(evs, f"{what}: no calls")
    t0, t1 = p["t0"], p["t1"]
    by_tid = collections.defaultdict(list)
    for e in evs:
        check(e["dur"] > 0, f"{what}: {e['name']} lasted {e['dur']} ns")
        check(t0 <= e["ts"] and e["ts"] + e["dur"] <= t1,
              f"{what}: {e['name']} [{e['ts']}, +{e['dur']}] outside the workload's "
              f"[{t0}, {t1}]")
        if "depth" not in e["args"]:
            by_tid[e["tid"]].append(e)
    for tid, top in by_tid.items():
        total = sum(e["dur"] for e in top)
        check(total <= t1 - t0, f"{what}: tid {tid} spent {total} ns in calls, wall {t1 - t0}")
        for a, b in zip(top, top[1:]):
            check(a["ts"] + a["dur"] <= b["ts"],
                  f"{what}: {a['name']} ends after {b['name']} starts on tid {tid}")


def record_runtime(binary, rounds, *opts):
    p, out = record([binary, str(rounds)], "-t", "cuda", *opts)
    eq(p.returncode, 0, f"record exit ({p.stderr.strip()[-800:]})")
    pid, _, procs = parse_out(p.stdout)
    return out, pid, procs[pid]


def test_runtime_shared_exact():
    need_cuda(API_SHARED)
    out, pid, p = record_runtime(API_SHARED, 3)
    events = dump(out)
    check_runtime_process(events, pid, p, 3, "shared cudart")
    check_runtime_reports(out, p, 3, "shared cudart")


def test_launch_whose_exec_was_not_stopped_misses_no_call():
    """Launch mode when the stop at the exec did not happen (BPFSIGHT_TEST_NO_EXEC_STOP=1, as
    when bpf_send_signal fails in the exec's tracepoint): the command's ld.so was probed
    before the command was released, so the stop at the libraries it loads still comes
    before its first call, and every call of the shared-cudart workload is counted, five
    recordings in a row (without that probe, six of eight had no call at all)."""
    need_cuda(API_SHARED)
    env = {**os.environ, "BPFSIGHT_TEST_NO_EXEC_STOP": "1"}
    for i in range(5):
        out = os.path.join(tmpdir(), f"t{i}.bst")
        p = run([BPFSIGHT, "record", "-o", out, "-t", "cuda", "--", API_SHARED, "2"], env=env)
        eq(p.returncode, 0, f"record exit ({p.stderr.strip()[-800:]})")
        pid, _, procs = parse_out(p.stdout)
        check_runtime_process(dump(out), pid, procs[pid], 2,
                              f"recording {i + 1} without the exec's stop")


def test_runtime_static_exact():
    need_cuda(API_STATIC)
    out, pid, p = record_runtime(API_STATIC, 3)
    events = dump(out)
    check_runtime_process(events, pid, p, 3, "static cudart")
    check_runtime_reports(out, p, 3, "static cudart")


def test_runtime_durations_plausible():
    need_cuda(API_SHARED, API_STATIC)
    for binary in (API_SHARED, API_STATIC):
        out, pid, p = record_runtime(binary, 2)
        check_timing(dump(out), pid, p, os.path.basename(binary))


# ---- cuda_driver.c through the stub libcuda. ----

def driver_calls(p, rounds):
    ptr = p["ptr"]
    dptr, dptr2, hbuf, s = ptr["dptr"], ptr["dptr2"], ptr["hbuf"], ptr["stream"]
    out = []

    def c(name, inside=False, /, **args):
        out.append((name, dict(DRV_ERR, **args), inside))

    # cuInit is not traced. The stub's cuModuleGetFunction fails: the handle stays unnamed.
    for _ in range(rounds):
        c("cuMemAlloc_v2", bytes=65536)
        c("cuModuleGetFunction", module=ptr["module"], name="my_driver_kernel")
        c("cuProfilerStart", True)
        for _ in range(2):
            c("cuLaunchKernel", True, kernel=ptr["fn"], grid_x=3, grid_y=5, grid_z=7,
              block_x=32, block_y=2, block_z=1, shared_bytes=512, stream=s)
        for _ in range(2):
            c("cuMemcpyHtoD_v2", True, dst=dptr, src=hbuf, bytes=4096, kind="HtoD")
        c("cuMemcpyDtoH_v2", True, dst=hbuf, src=dptr, bytes=12345, kind="DtoH")
        c("cuMemcpyDtoD_v2", True, dst=dptr2, src=dptr, bytes=777, kind="DtoD")
        c("cuMemcpyHtoDAsync_v2", True, dst=dptr, src=hbuf, bytes=8192, kind="HtoD", stream=s)
        c("cuMemsetD8_v2", True, dst=dptr, value=0x5a, bytes=1000)
        c("cuProfilerStop", True)
        c("cuStreamSynchronize", stream=s)
        c("cuCtxSynchronize")
        c("cuMemFree_v2", ptr=dptr)
    return out


def test_driver_stub_exact():
    need_cuda(DRIVER)
    p, out = record([DRIVER, "3"], "-t", "cuda")
    eq(p.returncode, 0, f"record exit ({p.stderr.strip()[-800:]})")
    pid, _, procs = parse_out(p.stdout)
    me = procs[pid]
    eq(me["ret"]["cuInit"], 34, "the workload's own cuInit return code")
    eq(me["ptr"]["fn"], "0xf00f0000", "the stub left the CUfunction alone")
    events = dump(out)
    same_sequence(calls(events, pid), [(n, a) for n, a, _ in driver_calls(me, 3)], "driver")
    check_timing(events, pid, me, "driver")
    rep = stats(out, "cuda_api_sum,cuda_launch_sum,cuda_memcpy_sum,cuda_err_sum")
    counts = collections.Counter(n for n, _, _ in driver_calls(me, 3))
    eq({r["name"]: r["count"] for r in rep["cuda_api_sum"]}, dict(counts), "cuda_api_sum")
    r = row(rep["cuda_launch_sum"], name="0xf00f0000")
    eq((r["count"], r["grid"], r["block"], r["shared_bytes"]), (6, "3x5x7", "32x2x1", 512),
       "cuda_launch_sum")
    eq({r["name"]: (r["count"], r["bytes"]) for r in rep["cuda_memcpy_sum"]},
       {"HtoD": (9, 3 * (2 * 4096 + 8192)), "DtoH": (3, 3 * 12345), "DtoD": (3, 3 * 777),
        "memset": (3, 3000)}, "cuda_memcpy_sum")
    eq({r["name"]: (r["count"], r["code"], r["error"]) for r in rep["cuda_err_sum"]},
       {n: (k, 34, "CUDA_ERROR_STUB_LIBRARY") for n, k in counts.items()}, "cuda_err_sum")


# ---- Two copies of a function in one process: nesting (depth). ----

def test_interposer_nests_real_cudart():
    """LD_PRELOAD libcuda_wrap.so defines cudaMalloc and cudaMemcpy and calls libcudart's:
    both copies are probed, libcudart's call is depth 1 under the wrapper's, and the reports
    count each application call once (cuda_err_sum counts both failures, as documented)."""
    need_cuda(API_SHARED, WRAP)
    p, out = record(["env", f"LD_PRELOAD={os.path.realpath(WRAP)}", API_SHARED, "2"],
                    "-t", "cuda")
    eq(p.returncode, 0, f"record exit ({p.stderr.strip()[-800:]})")
    pid, _, procs = parse_out(p.stdout)
    exp = []
    for name, args, _ in runtime_calls(procs[pid], 2):
        exp.append((name, args))
        if name in ("cudaMalloc", "cudaMemcpy"):
            exp.append((name, dict(args, depth=1)))
    events = dump(out)
    evs = calls(events, pid)
    same_sequence(evs, exp, "wrapped cudart")
    for outer, inner in zip(evs, evs[1:]):
        if inner["args"].get("depth") == 1:
            check(outer["ts"] <= inner["ts"] and
                  inner["ts"] + inner["dur"] <= outer["ts"] + outer["dur"],
                  f"{inner['name']} at depth 1 is not inside its caller")
    check_timing(events, pid, procs[pid], "wrapped cudart")
    counts = collections.Counter(n for n, _, _ in runtime_calls(procs[pid], 2))
    rep = stats(out, "cuda_api_sum,cuda_memcpy_sum,cuda_err_sum")
    eq({r["name"]: r["count"] for r in rep["cuda_api_sum"]}, dict(counts),
       "cuda_api_sum counts each call once")
    eq(row(rep["cuda_memcpy_sum"], name="HtoD")["count"], 4 * 2, "HtoD copies counted once")
    errs = {r["name"]: r["count"] for r in rep["cuda_err_sum"]}
    eq((errs["cudaMalloc"], errs["cudaMemcpy"]), (2 * counts["cudaMalloc"],
                                                   2 * counts["cudaMemcpy"]),
       "cuda_err_sum counts the nested failures too")


# ---- Attaching: -p, -a, dlopen, fork. ----

def attach_and_release(binary, rounds):
    """Start BINARY --wait-stdin, attach with -p, let it run; (recorder, pid, its report)."""
    w = spawn([binary, "--wait-stdin", str(rounds)])
    pid = int(w.stdout.readline().split()[1])
    r = Recorder("-t", "cuda", "-p", str(pid))
    r.wait_ready()
    w.stdin.write("g")
    w.stdin.flush()
    eq(w.wait(30), 0, "workload exit")
    eq(r.wait(30), 0, f"recorder exit ({r.stderr})")  # stops when its target exits
    _, _, procs = parse_out(f"pid {pid}\n" + w.stdout.read())
    return r, pid, procs[pid]


def test_attach_pid_shared_and_static():
    need_cuda(API_SHARED, API_STATIC)
    for binary in (API_SHARED, API_STATIC):
        what = f"-p {os.path.basename(binary)}"
        r, pid, p = attach_and_release(binary, 2)
        events = dump(r.out)
        check_runtime_process(events, pid, p, 2, what)
        check_timing(events, pid, p, what)
        check(f"pid: {pid}" in info(r.out)["target"], f"{what}: target")


def poke(w):
    """The byte a workload waiting on stdin (--wait-stdin, --after-ms -1) reads to go on."""
    w.stdin.write("g")
    w.stdin.flush()


def probed(r, pattern, what):
    """Wait until the recorder (-v) says that PATTERN's probes are live: the cue for a workload
    started while recording, instead of a delay that a loaded machine can outlast."""
    wait_for(lambda: re.search(pattern, r.stderr), 60, f"the recorder probing {what}")


@alone("a system-wide recording (-a): other tests' processes would be traced by it")
def test_system_wide_sees_new_processes():
    need_cuda(API_SHARED, API_STATIC)
    # Without the scan cache, so that both programs are examined at their exec (a cached
    # static program is probed from the start, but its maps, which name its kernels, only
    # when it shows up): -v says so once its probes are live and its maps known.
    os.environ["BPFSIGHT_NO_CACHE"] = "1"
    try:
        r = Recorder("-a", "-t", "cuda", "-v")
    finally:
        os.environ.pop("BPFSIGHT_NO_CACHE", None)
    r.wait_ready()
    ws = [spawn([b, "--wait-stdin", "2"]) for b in (API_SHARED, API_STATIC)]
    pids = [int(w.stdout.readline().split()[1]) for w in ws]
    probed(r, r"probed \d+ sites in \S*libcudart\.so", "libcudart")  # well known: at start
    for pid, b in zip(pids, (API_SHARED, API_STATIC)):
        probed(r, rf"pid {pid} \(.*\): new program scanned and probed", os.path.basename(b))
    outs = []
    for w, pid in zip(ws, pids):
        poke(w)
        eq(w.wait(30), 0, "workload exit")
        outs.append(f"pid {pid}\n" + w.stdout.read())
    eq(r.stop(), 0, f"recorder exit ({r.stderr[-600:]})")
    events = dump(r.out)
    for b, o in zip((API_SHARED, API_STATIC), outs):
        pid, _, procs = parse_out(o)
        check_runtime_process(events, pid, procs[pid], 2, f"-a {os.path.basename(b)}")
    eq(info(r.out)["target"], "system-wide", "target")


def check_dlopen(events, pid, p, n, what):
    """cuda_dlopen's N rounds, each call after its dlopen and its delay."""
    eq(p["ret"]["cudaMalloc"], 35, f"{what}: the workload's cudaMalloc return code")
    exp = []
    for _ in range(n):
        exp += [("cudaMalloc", dict(RT_ERR, bytes=65536)),
                ("cudaMemcpy", dict(RT_ERR, dst="0xd0000000", src=p["ptr"]["hbuf"],
                                    bytes=4096, kind="HtoD")),
                ("cudaDeviceSynchronize", dict(RT_ERR)),
                ("cudaFree", dict(RT_ERR, ptr="0xd0000000"))]
    evs = calls(events, pid)
    same_sequence(evs, exp, what)
    for e in evs:
        check(p["dlopen"] <= p["t0"] <= e["ts"] and e["ts"] + e["dur"] <= p["t1"],
              f"{what}: {e['name']} outside the workload's calls")


def test_dlopen_after_start_launch():
    """Launch mode: the process stops at the dlopen until the probes are in: no delay."""
    need_cuda(DLOPEN)
    p, out = record([DLOPEN, "--before-ms", "100", "--after-ms", "0", "5"], "-t", "cuda")
    eq(p.returncode, 0, f"record exit ({p.stderr.strip()[-800:]})")
    pid, _, procs = parse_out(p.stdout)
    check_dlopen(dump(out), pid, procs[pid], 5, "launch mode dlopen")


def test_dlopen_after_attach_pid():
    """-p: libcudart appears after the attach; the calls start once it is probed."""
    need_cuda(DLOPEN)
    w = spawn([DLOPEN, "--wait-stdin", "--after-ms", "-1", "5"])
    pid = int(w.stdout.readline().split()[1])
    r = Recorder("-t", "cuda", "-p", str(pid), "-v")
    r.wait_ready()
    poke(w)
    eq(w.stdout.readline().split(), ["dlopened", str(pid)], "the workload's dlopen")
    probed(r, r"probed \d+ sites in \S*libcudart\.so", "the library just loaded")
    poke(w)
    eq(w.wait(30), 0, "workload exit")
    eq(r.wait(30), 0, f"recorder exit ({r.stderr[-600:]})")
    _, _, procs = parse_out(f"pid {pid}\n" + w.stdout.read())
    check_dlopen(dump(r.out), pid, procs[pid], 5, "-p dlopen")


def test_dlopen_whose_record_a_full_ring_lost_is_probed():
    """-p with a 4 KiB ring kept full by another target (16 threads calling CUDA): the
    records of a process's life, its dlopen's among them (of a libcudart no other process
    maps, so nothing probes it yet), have the ring's last sixteenth to themselves, and
    should one be refused all the same, the loss in the recording's own block makes the
    recorder look at every target's maps again: either way the library is probed, and every
    call after that is recorded. (Which way a run takes is the kernel's: runs here lost 2 to
    14 life records, not always the dlopen's.)"""
    need_cuda(DLOPEN, STORM)
    lib = os.path.join(tmpdir(), "libcudart.so.13")
    shutil.copy(CUDART, lib)  # an inode of its own: not probed through the storm's copy
    storm = spawn([STORM, CUDART, "16"])
    spid = int(storm.stdout.readline().split()[1])
    w = spawn([DLOPEN, "--wait-stdin", "--after-ms", "-1", "--lib", lib, "5"])
    pid = int(w.stdout.readline().split()[1])
    r = Recorder("-t", "cuda", "-p", str(spid), "-p", str(pid), "--buffer-size", "4K", "-v")
    r.wait_ready()
    storm.stdin.write("go\n")
    storm.stdin.flush()
    eq(storm.stdout.readline().strip(), "running", "the storm")
    poke(w)
    eq(w.stdout.readline().split(), ["dlopened", str(pid)], "the workload's dlopen")
    probed(r, r"probed \d+ sites in \S*" + re.escape(lib), "the library just loaded")
    storm.kill()
    storm.wait()
    # The storm's last records read too (a flush drains the ring): the workload's 20 calls,
    # about 2 KiB of records, then fit in the empty 4 KiB ring even before it is read.
    r.flush()
    poke(w)
    eq(w.wait(30), 0, "workload exit")
    eq(r.stop(), 0, f"recorder exit ({r.stderr[-600:]})")
    _, _, procs = parse_out(f"pid {pid}\n" + w.stdout.read())
    check(info(r.out)["lost"].get("ringbuf_full", 0) > 0, "the storm filled the ring")
    print("  lost:", info(r.out).get("lost_by_family"))
    check_dlopen(dump(r.out), pid, procs[pid], 5, "-p dlopen in a full ring")


@alone("a system-wide recording (-a): other tests' processes would be traced by it")
def test_dlopen_system_wide():
    """-a: a process started while recording dlopen()s libcudart; calls once it is probed."""
    need_cuda(DLOPEN)
    r = Recorder("-a", "-t", "cuda", "-v")
    r.wait_ready()
    w = spawn([DLOPEN, "--after-ms", "-1", "5"])
    pid = int(w.stdout.readline().split()[1])
    eq(w.stdout.readline().split(), ["dlopened", str(pid)], "the workload's dlopen")
    probed(r, r"probed \d+ sites in \S*libcudart\.so", "libcudart")
    poke(w)
    eq(w.wait(30), 0, "workload exit")
    o = f"pid {pid}\n" + w.stdout.read()
    eq(r.stop(), 0, f"recorder exit ({r.stderr[-600:]})")
    _, _, procs = parse_out(o)
    check_dlopen(dump(r.out), pid, procs[pid], 5, "-a dlopen")


def test_fork_child_counted_under_its_pid():
    need_cuda(API_SHARED)
    p, out = record([API_SHARED, "--fork", "2"], "-t", "cuda")
    eq(p.returncode, 0, f"record exit ({p.stderr.strip()[-800:]})")
    parent, child, procs = parse_out(p.stdout)
    check(child and child != parent, f"child pid ({p.stdout[:200]!r})")
    events = dump(out)
    for pid, what in ((parent, "parent"), (child, "child")):
        check_runtime_process(events, pid, procs[pid], 2, what)
        check_timing(events, pid, procs[pid], what)
        check(all(e["tid"] == pid for e in calls(events, pid)), f"{what}: single thread")
    eq({e["pid"] for e in events if e["kind"] == "cuda_api"}, {parent, child}, "traced pids")
    rep = stats(out, "cuda_api_sum")["cuda_api_sum"]
    eq(row(rep, name="cudaLaunchKernel")["count"], 2 * 6 * 2, "launches of both processes")


# ---- --capture-range=cudaProfilerApi ----

def test_capture_range_profiler_api():
    need_cuda(API_SHARED, DRIVER)
    # Runtime: 3 ranges, each from cudaProfilerStart to cudaProfilerStop (both kept).
    out, pid, p = record_runtime(API_SHARED, 3, "--capture-range=cudaProfilerApi")
    exp = [(n, a) for n, a, inside in runtime_calls(p, 3) if inside]
    same_sequence(calls(dump(out), pid), exp, "runtime capture range")
    rep = stats(out, "cuda_api_sum")["cuda_api_sum"]
    eq(row(rep, name="cudaLaunchKernel")["count"], 18, "launches kept")
    eq(row(rep, name="cudaProfilerStart")["count"], 3, "ranges")
    check(not [r for r in rep if r["name"] in ("cudaMalloc", "cudaMemset", "cudaFree",
                                               "cudaDeviceSynchronize")],
          f"calls outside the ranges were kept: {[r['name'] for r in rep]}")
    # Driver: cuProfilerStart/Stop open and close ranges too.
    p2, out2 = record([DRIVER, "2"], "-t", "cuda", "--capture-range=cudaProfilerApi")
    eq(p2.returncode, 0, f"record exit ({p2.stderr.strip()[-800:]})")
    pid2, _, procs2 = parse_out(p2.stdout)
    exp2 = [(n, a) for n, a, inside in driver_calls(procs2[pid2], 2) if inside]
    same_sequence(calls(dump(out2), pid2), exp2, "driver capture range")


def test_capture_range_that_never_opens_is_a_failed_recording():
    """A program that never calls cudaProfilerStart captured nothing: the recorder says so
    and exits 1, though the program exited 0 (nsys's "no range": not an empty success)."""
    need_cuda()
    p, out = record(["true"], "-t", "cuda", "--capture-range=cudaProfilerApi")
    eq(p.returncode, 1, f"exit status ({p.stderr[-600:]})")
    check("--capture-range=cudaProfilerApi: no range opened while recording: nothing was "
          "captured" in p.stderr, p.stderr[-600:])
    check("though the command exited with 0" in p.stderr, p.stderr[-600:])
    check(info(out)["clean_close"], "the file is written all the same")


def test_verdict_of_failed_calls_says_what_the_trace_has():
    """Every CUDA call failed (no GPU): no rule makes a claim, and the verdict says which
    families' events the trace has (cuda: every call) and which were not recorded, never
    "record with cuda" of a trace that did."""
    need_cuda(API_SHARED)
    out, pid, _ = record_runtime(API_SHARED, 3)
    ncalls = sum(1 for e in dump(out) if e["kind"] == "cuda_api")
    check(ncalls > 0, "calls recorded")
    p = run([BPFSIGHT, "stats", out])
    eq(p.returncode, 0, p.stderr)
    head = " ".join(p.stdout.split("\n\n")[0].split())
    check(head.startswith("Verdict: nothing to judge"), head)
    check(re.search(rf"judge: (proc \d+, )?cuda {ncalls};", head), f"the cuda events counted ({ncalls}): {head}")
    missing = re.search(r"not recorded: (\S+) \(add them to -t\)", head)
    check(missing and "cuda" not in missing.group(1).split(",") and
          "sched" in missing.group(1).split(","), head)


# ---- --dry-run ----

def elf_functions(path):
    """{name: file offset} of the defined functions of an ELF64 file (.symtab and .dynsym),
    and the file's bytes: an independent reading to check bpfsight's against."""
    data = open(path, "rb").read()
    check(data[:4] == b"\x7fELF" and data[4] == 2, f"{path}: not ELF64")
    phoff, shoff = struct.unpack_from("<QQ", data, 0x20)
    phentsize, phnum, shentsize, shnum = struct.unpack_from("<HHHH", data, 0x36)
    loads = []
    for i in range(phnum):
        p_type, _, p_off, p_vaddr, _, p_filesz = struct.unpack_from("<IIQQQQ", data,
                                                                    phoff + i * phentsize)
        if p_type == 1:  # PT_LOAD
            loads.append((p_vaddr, p_off, p_filesz))
    secs = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize) for i in range(shnum)]
    funcs = {}
    for _, sh_type, _, _, off, size, link, _, _, entsize in secs:
        if sh_type not in (2, 11):  # SHT_SYMTAB, SHT_DYNSYM
            continue
        stroff = secs[link][4]
        for k in range(size // entsize):
            name, st_info, _, shndx, value, _ = struct.unpack_from("<IBBHQQ", data,
                                                                   off + k * entsize)
            if st_info & 0xf not in (2, 10) or not shndx or not value:  # FUNC, IFUNC
                continue
            n = data[stroff + name:data.index(b"\0", stroff + name)].decode()
            for vaddr, foff, filesz in loads:
                if vaddr <= value < vaddr + filesz:
                    funcs.setdefault(n.split("@")[0], value - vaddr + foff)
    return funcs, data


SITE = re.compile(r"^(\S+)\s+(\S+)\s+\+0x([0-9a-f]+)\s+(.+?)\s+(emulated|single-step)\s+"
                  r"0x([0-9a-f]+)\s+(\S.*)$")


def dry_run_sites(*args):
    p = run([BPFSIGHT, "record", "--dry-run", "-t", "cuda", *args], timeout=120)
    eq(p.returncode, 0, f"dry-run exit ({p.stderr.strip()[-800:]})")
    text = p.stdout + p.stderr
    sites = [m.groups() for m in map(SITE.match, text.splitlines()) if m]
    check(sites, f"record --dry-run {' '.join(args)}: no sites listed: "
                 f"{[l for l in text.splitlines() if 'sites in' in l]}")
    return sites, text


def check_site(sites, symbol, obj, what):
    """SYMBOL's site in OBJ: listed once, at an offset and instruction that OBJ's own ELF
    symbols and bytes confirm."""
    real = os.path.realpath(obj)
    mine = [s for s in sites if s[1] == symbol and os.path.realpath(s[6]) == real]
    eq(len(mine), 1, f"{what}: {symbol} sites in {real} ({[s for s in sites if s[1] == symbol]})")
    fam, _, site, insn, cost, foff, _ = mine[0]
    funcs, data = elf_functions(real)
    eq(fam, "cuda", f"{what}: family")
    eq(int(foff, 16), funcs[symbol] + int(site, 16), f"{what}: {symbol} file offset")
    # Every function here starts with push %rbp (0x55), the cheapest site, argument
    # registers untouched: it must be chosen, at offset 0.
    eq(data[funcs[symbol]], 0x55, f"{what}: {symbol}'s first byte")
    eq((site, insn, cost), ("0", "push %rbp", "emulated"), f"{what}: {symbol} site")


def test_dry_run_lists_sites():
    need_cuda(API_SHARED, API_STATIC, DRIVER)
    d = tmpdir()
    for binary, obj in ((API_SHARED, CUDART), (API_STATIC, API_STATIC)):
        w = spawn([binary, "--wait-stdin", "1"])
        pid = int(w.stdout.readline().split()[1])  # printed in main: everything is mapped
        sites, text = dry_run_sites("-o", os.path.join(d, "x.bst"), "-p", str(pid))
        w.stdin.write("g")
        w.stdin.flush()
        eq(w.wait(30), 0, "workload exit")
        what = f"--dry-run -p {os.path.basename(binary)}"
        for sym in ("cudaLaunchKernel", "cudaMemcpy", "cudaMalloc", "cudaLaunchHostFunc",
                    "cudaProfilerStart", "cudaStreamSynchronize", "__cudaGetKernel"):
            check_site(sites, sym, obj, what)
        objs = {os.path.realpath(s[6]) for s in sites}
        eq(objs, {os.path.realpath(obj)}, f"{what}: objects")
        check(re.search(rf"{len(sites)} sites in 1 objects", text), f"{what}: summary line")
        check(not os.path.exists(os.path.join(d, "x.bst")), f"{what}: wrote a trace")
    # With CMD: runs it and lists what it found, here the stub libcuda.
    sites, _ = dry_run_sites("--", DRIVER, "1")
    for sym in ("cuLaunchKernel", "cuMemcpyHtoD_v2", "cuModuleGetFunction", "cuProfilerStart"):
        check_site(sites, sym, "/usr/local/cuda/lib64/stubs/libcuda.so", "--dry-run CMD")


def test_verdict_counts_no_failed_call_as_waiting_or_launching():
    """A thread whose calls failed waited for no GPU and launched nothing, however long the
    calls took (a loaded machine preempts a failed call as any other): no claim; the same
    calls succeeding are claimed. A synthetic trace: one thread of 1 s, a 600 ms
    cudaDeviceSynchronize and 20 launches of 10 ms (a fifth of its life)."""
    import synth

    sync, launch = synth.cuda_fn("cudaDeviceSynchronize"), synth.cuda_fn("cudaLaunchKernel")
    for ret, want in ((100, "Verdict: nothing to judge"), (0, "Verdict: GPU-bound")):
        t = synth.Trace(families="proc,cuda", start=1_000_000_000, end=2_000_000_000)
        t.process(7, "job")
        t.thread(7, 7, "job")
        t.cuda_call(7, 7, 1_100_000_000, 600_000_000, sync, ret=ret)
        for i in range(20):
            t.cuda_call(7, 7, 1_750_000_000 + i * 11_000_000, 10_000_000, launch, ret=ret)
        p = run([BPFSIGHT, "stats", t.write(tmpdir())])
        eq(p.returncode, 0, p.stderr)
        head = " ".join(p.stdout.split("\n\n")[0].split())
        check(head.startswith(want), f"calls returning {ret}: {head}")
