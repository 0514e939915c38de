"""cublas family on the real libcublas and libcublasLt: every GEMM form, exact counts and
exact decoded arguments; a cublasLtMatmul's shape from the descriptors it was given.

tests/workloads/cuda/cublas_gemm calls each GEMM form once per repetition with arguments
derived from its index (its header comment): m = 100 + i, n = 200 + i, k = 300 + i,
lda/ldb/ldc = 400/500/600 + i, batch = 2 + i, transa T, transb N. Without a GPU
cublasCreate_v2 fails and every GEMM, given the NULL handle, returns
CUBLAS_STATUS_NOT_INITIALIZED after entering the library: each shows its shape and no FLOPs
(it did no math), and the reports count it as an error; cuBLASLt's layouts and matmul
descriptors succeed on the host.
"""
import json
import os
import sqlite3
from collections import Counter

from helpers import (BPFSIGHT, Skip, check, dump, eq, need_root, record, row, run, stats, tmpdir,
                     workload)
from synth import GPU_CALL_CUDA, Trace

# For tests/run_tests.py: about how long these tests take on CI's machine (its order).
SECONDS = 4

CUBLAS_GEMM = workload("cuda/cublas_gemm")

# (function, a_type, b_type, c_type, compute_type, batched, complex) in the workload's order.
R32, R64, C32, C64 = "CUDA_R_32F", "CUDA_R_64F", "CUDA_C_32F", "CUDA_C_64F"
F32, F64 = "CUBLAS_COMPUTE_32F", "CUBLAS_COMPUTE_64F"
GEMMS = [
    ("cublasSgemm_v2", R32, R32, R32, F32, False, False),
    ("cublasDgemm_v2_64", R64, R64, R64, F64, False, False),
    ("cublasCgemm_v2", C32, C32, C32, F32, False, True),
    ("cublasZgemm_v2", C64, C64, C64, F64, False, True),
    ("cublasHgemm", "CUDA_R_16F", "CUDA_R_16F", "CUDA_R_16F", "CUBLAS_COMPUTE_16F", False, False),
    ("cublasSgemmBatched", R32, R32, R32, F32, True, False),
    ("cublasSgemmStridedBatched", R32, R32, R32, F32, True, False),
    ("cublasSgemmEx", "CUDA_R_16F", "CUDA_R_16F", R32, F32, False, False),
    ("cublasGemmEx", "CUDA_R_16BF", "CUDA_R_16BF", "CUDA_R_16BF", F32, False, False),
    ("cublasGemmBatchedEx", "CUDA_R_16F", "CUDA_R_16F", "CUDA_R_16F",
     "CUBLAS_COMPUTE_32F_FAST_16F", True, False),
    ("cublasGemmStridedBatchedEx", "CUDA_R_8F_E4M3", "CUDA_R_8F_E5M2", "CUDA_R_16BF", F32, True,
     False),
    ("cublasGemmStridedBatchedEx_64", R32, R32, R32, "CUBLAS_COMPUTE_32F_FAST_TF32", True, False),
    ("cublasSgemmGroupedBatched", R32, R32, R32, F32, None, False),
    ("cublasGemmGroupedBatchedEx", "CUDA_R_16F", "CUDA_R_16F", "CUDA_R_16F", F32, None, False),
    ("cublasCgemm3m", C32, C32, C32, F32, False, True),
]
GROUPS = {"cublasSgemmGroupedBatched": 3, "cublasGemmGroupedBatchedEx": 2}
NOT_INIT, OK = "CUBLAS_STATUS_NOT_INITIALIZED", "CUBLAS_STATUS_SUCCESS"
# The other calls per repetition, and what they return here.
LT_CALLS = {"cublasLtCreate": (1, NOT_INIT), "cublasLtMatrixLayoutCreate": (4, OK),
            "cublasLtMatrixLayoutSetAttribute": (4, OK), "cublasLtMatmulDescCreate": (1, OK),
            "cublasLtMatmulDescSetAttribute": (1, OK), "cublasLtMatmul": (1, NOT_INIT),
            "cublasLtMatmulDescDestroy": (1, OK), "cublasLtMatrixLayoutDestroy": (4, OK),
            "cublasSnrm2_v2": (1, NOT_INIT)}


def need_no_gpu():
    need_root()
    if not os.path.exists(CUBLAS_GEMM):
        raise Skip(f"{CUBLAS_GEMM} not built (no CUDA toolkit)")
    if os.path.exists("/dev/nvidiactl"):
        raise Skip("a GPU is present: cublas_gemm expects cublasCreate_v2 to fail")


def expected(i, name, at, bt, ct, comp, batched, cplx):
    """What dump shows of the workload's GEMM I: refused (NOT_INITIALIZED), no FLOPs."""
    m = 5000000000 if name.endswith("_v2_64") else 100 + i
    args = {"status": NOT_INIT, "handle": "0x0", "a_type": at, "b_type": bt, "c_type": ct,
            "compute_type": comp}
    if batched is None:
        args["groups"] = GROUPS[name]
        return args
    batch = 2 + i if batched else 1
    args.update(trans="TN", m=m, n=200 + i, k=300 + i, lda=400 + i, ldb=500 + i, ldc=600 + i,
                batch=batch)
    return args


def cublas_events(path):
    return [e for e in dump(path) if e["kind"] == "cublas_api"]


def test_every_gemm_form_exact():
    need_no_gpu()
    p, out = record([CUBLAS_GEMM, "3"], "-t", "cublas")
    eq(p.returncode, 0, f"record exit ({p.stderr[-800:]})")
    pid = int(p.stdout.split()[1])
    evs = [e for e in cublas_events(out) if e["pid"] == pid]
    want = Counter({"cublasCreate_v2": 1})
    want.update({g[0]: 3 for g in GEMMS})
    want.update({name: 3 * n for name, (n, _) in LT_CALLS.items()})
    eq(Counter(e["name"] for e in evs), want, "calls by function (3 repetitions)")
    for i, g in enumerate(GEMMS):
        got = [e["args"] for e in evs if e["name"] == g[0]]
        for a in got:
            eq(a, expected(i, *g), f"{g[0]}'s decoded arguments")
    eq([e["args"] for e in evs if e["name"] == "cublasSnrm2_v2"],
       [{"status": NOT_INIT, "handle": "0x0"}] * 3, "a function traced by name: its handle")
    for e in evs:
        if e["name"] in LT_CALLS:
            eq(e["args"]["status"], LT_CALLS[e["name"]][1], f"{e['name']} status")
        check(e["dur"] > 0, f"{e['name']} dur {e['dur']}")


def test_lt_matmul_from_descriptors():
    """A^T (k x m = 128 x 64) times B (128 x 32) into bf16 D (64 x 32), 4 in a batch: the
    layouts and the desc's TRANSA give m, n, k, the types and the batch."""
    need_no_gpu()
    p, out = record([CUBLAS_GEMM, "2"], "-t", "cublas")
    eq(p.returncode, 0, f"record exit ({p.stderr[-800:]})")
    mm = [e["args"] for e in cublas_events(out) if e["name"] == "cublasLtMatmul"]
    bf16 = "CUDA_R_16BF"
    want = {"status": NOT_INIT, "handle": "0x0", "stream": "0x5000", "trans": "TN", "m": 64,
            "n": 32, "k": 128, "lda": 128, "ldb": 128, "ldc": 64, "batch": 4, "a_type": bf16,
            "b_type": bf16, "c_type": bf16, "compute_type": "CUBLAS_COMPUTE_32F"}
    eq(mm, [want, want], "both repetitions' matmuls (each with its own descriptors)")
    sets = [e["args"] for e in cublas_events(out)
            if e["name"] == "cublasLtMatrixLayoutSetAttribute"]
    eq([(a["attr"], a["size"], a["value"]) for a in sets], [(5, 4, 4)] * 8,
       "BATCH_COUNT (5), an int32_t of 4, on each layout")


def test_reports_cublas_sum_and_gemm_sum():
    """cublas_sum counts the application's calls by function, and those that failed; gemm_sum
    groups the GEMMs by shape and types with their FLOPs: every GEMM here was refused
    (NOT_INITIALIZED), counted as an error with no FLOPs (no kernels: no GPU time, no rate)."""
    need_no_gpu()
    p, out = record([CUBLAS_GEMM, "3"], "-t", "cublas")
    eq(p.returncode, 0, f"record exit ({p.stderr[-800:]})")
    s = stats(out, "cublas_sum,gemm_sum")
    want = {g[0]: 3 for g in GEMMS}
    want.update({name: 3 * n for name, (n, _) in LT_CALLS.items()})
    want["cublasCreate_v2"] = 1
    eq({r["name"]: r["count"] for r in s["cublas_sum"]}, want, "cublas_sum's counts")
    failed = {name: n for name, n in want.items()
              if name not in LT_CALLS or LT_CALLS[name][1] == NOT_INIT}
    eq({r["name"]: r["errors"] for r in s["cublas_sum"] if r["errors"]}, failed,
       "cublas_sum's errors: every call but the layouts' and descriptors'")
    rows = s["gemm_sum"]
    for i, g in enumerate(GEMMS):
        if g[5] is None:
            continue  # grouped: no shape
        e = expected(i, *g)
        r = row(rows, name=g[0])
        eq((r["m"], r["n"], r["k"], r["batch"], r["count"], r["errors"], r["flops"]),
           (e["m"], e["n"], e["k"], e["batch"], 3, 3, 0), f"{g[0]}'s row")
        eq((r.get("gpu_ns"), r.get("tflops")), (None, None), f"{g[0]}: no kernel, no GPU time")
    lt = row(rows, name="cublasLtMatmul")
    eq((lt["trans"], lt["m"], lt["n"], lt["k"], lt["batch"], lt["a_type"], lt["compute_type"],
        lt["errors"], lt["flops"]), ("TN", 64, 32, 128, 4, "bf16", "32F", 3, 0), "Lt's row")
    eq(len(rows), len(GEMMS) - 2 + 1, "one row per shape: the forms and the Lt matmul")


def test_gemm_sum_links_kernels():
    """A GEMM's GPU time is its kernels', those launched on its thread during its call; the
    TFLOP/s are its FLOPs over that time."""
    t = Trace(families="proc,cuda,gpu,cublas")
    sgemm = 6  # cublasSgemm_v2's index in cublas_api.c
    n = 1024

    def gemm(tid, ts, dur):
        t.cublas_call(1, tid, ts, dur, sgemm, ret=0, args=(0x1, 1, 0, n, n, n),
                      stack=(0, 0, n, 0, n, 0, 0, n))
    gemm(1, 1000, 100)
    t.kernel(1, 1, 5000, 2000, "sm90_gemm", call_ts=1050, flags=GPU_CALL_CUDA)
    t.kernel(1, 1, 8000, 999, "other", call_ts=1200, flags=GPU_CALL_CUDA)  # after the call
    gemm(2, 3000, 50)
    t.kernel(1, 2, 9000, 1000, "sm90_gemm", call_ts=3000, flags=GPU_CALL_CUDA)
    t.kernel(1, 2, 9500, 500, "sm90_gemm_splitk", call_ts=3050, flags=GPU_CALL_CUDA)
    path = t.write(tmpdir())
    r = row(stats(path, "gemm_sum")["gemm_sum"], name="cublasSgemm_v2")
    flops = 2 * 2 * n ** 3
    eq((r["count"], r["flops"], r["api_ns"], r["gpu_ns"], r["kernels"]),
       (2, flops, 150, 3500, 3), "two calls, three kernels of theirs")
    eq(r["tflops"], round(flops / 3500 / 1e3, 2), "FLOPs over their GPU time")


def test_exports_carry_the_arguments():
    """Chrome's event and SQLite's CUBLAS_EVENTS row (nsys's table, eventClass 29, with our
    argument columns) of a GEMM carry what dump shows."""
    need_no_gpu()
    p, out = record([CUBLAS_GEMM, "1"], "-t", "cublas")
    eq(p.returncode, 0, f"record exit ({p.stderr[-800:]})")
    d = tmpdir()
    chrome, db = os.path.join(d, "t.json"), os.path.join(d, "t.sqlite")
    for fmt, path in (("chrome", chrome), ("sqlite", db)):
        run([BPFSIGHT, "export", out, "-f", fmt, "-o", path], check=True)
    with open(chrome) as f:
        ev = [e for e in json.load(f)["traceEvents"] if e.get("name") == "cublasGemmEx"]
    eq([(e["cat"], e["args"]) for e in ev], [("cublas", expected(8, *GEMMS[8]))],
       "Chrome: the GEMM's event")
    q = ("SELECT eventClass, returnValue, nestingLevel, trans, m, n, k, lda, ldb, ldc, batch,"
         " aType, bType, cType, computeType, flops FROM CUBLAS_EVENTS JOIN StringIds"
         " ON StringIds.id = nameId WHERE value = 'cublasGemmEx'")
    with sqlite3.connect(db) as c:
        rows = c.execute(q).fetchall()
    e = expected(8, *GEMMS[8])
    eq(rows, [(29, 1, 0, "TN", e["m"], e["n"], e["k"], e["lda"], e["ldb"], e["ldc"], 1,
               "CUDA_R_16BF", "CUDA_R_16BF", "CUDA_R_16BF", "CUBLAS_COMPUTE_32F", None)],
       "SQLite: the GEMM's row (refused: no FLOPs)")


def _mfu_trace():
    """Step 1 (1 ms): two fp32 GEMMs of 1024^3 and one at depth 1 (not the application's);
    step 2 (2 ms): one bf16 cublasGemmEx of 1024^3; a GEMM of another process outside them."""
    t = Trace(families="proc,cuda,gpu,torch,cublas")
    n, sgemm, gemm_ex, bf16, c32 = 1024, 6, 50, 14, 68
    for ts, depth in ((100_000, 0), (300_000, 0), (310_000, 1)):
        t.cublas_call(1, 1, ts, 1000, sgemm, depth=depth, args=(0x1, 1, 0, n, n, n),
                      stack=(0, 0, n, 0, n, 0, 0, n))
    t.torch_step(1, 1, 0, 1_000_000, 1)
    t.cublas_call(1, 1, 1_500_000, 1000, gemm_ex, args=(0x1, 0, 0, n, n, n),
                  stack=(0, 0, bf16, n, 0, bf16, n, 0, 0, bf16, n, c32, 0))
    t.torch_step(1, 1, 1_000_000, 2_000_000, 2)
    t.cublas_call(2, 2, 1_500_000, 1000, sgemm, args=(0x1, 1, 0, n, n, n),
                  stack=(0, 0, n, 0, n, 0, 0, n))
    return t.write(tmpdir())


def test_a_failed_gemm_with_negative_sizes_has_no_flops():
    """A GEMM cuBLAS refused for a negative size (CUBLAS_STATUS_INVALID_VALUE): its size, a C
    int sign-extended, once wrapped into FLOPs, TFLOP/s and MFU; now a failed call, whatever
    its sizes, has no FLOPs: gemm_sum counts it as called, with its error, and gemm_step_sum's
    MFU leaves it out."""
    t = Trace(families="proc,cuda,gpu,torch,cublas")
    n, sgemm, invalid = 1024, 6, 7
    t.cublas_call(1, 1, 100_000, 1000, sgemm, args=(0x1, 0, 0, n, n, n))
    t.cublas_call(1, 1, 200_000, 1000, sgemm, ret=invalid,
                  args=(0x1, 0, 0, (1 << 64) - 5, n, n))  # m = -5, as the probe reads an int
    t.cublas_call(1, 1, 300_000, 1000, sgemm, ret=invalid, args=(0x1, 0, 0, 64, 64, 64))
    t.torch_step(1, 1, 0, 1_000_000, 1)
    path = t.write(tmpdir())
    f = 2 * n ** 3
    rows = json.loads(run([BPFSIGHT, "stats", path, "-r", "gemm_step_sum", "--peak-tflops",
                           "100", "--format", "json"], check=True).stdout)
    got = [(r["gemms"], r["flops"]) for r in rows["reports"]["gemm_step_sum"]]
    eq(got, [(1, f)], "the step's one GEMM that ran")
    gemms = stats(path, "gemm_sum")["gemm_sum"]
    eq(sorted((r["m"], r["count"], r["errors"], r["flops"]) for r in gemms),
       [(-5, 1, 1, 0), (64, 1, 1, 0), (n, 1, 0, f)],
       "gemm_sum: every call, a refused one's shape as called, with no FLOPs")
    evs = [e["args"] for e in dump(path) if e["name"] == "cublasSgemm_v2"]
    eq([(a["m"], a.get("flops")) for a in evs], [(n, f), (-5, None), (64, None)],
       "dump: the sizes as called, FLOPs only for the call that ran")


def test_gemm_step_sum_mfu():
    path = _mfu_trace()
    eq(sorted({e["name"] for e in dump(path) if e["kind"] == "cublas_api"}),
       ["cublasGemmEx", "cublasSgemm_v2"], "the synthetic calls' table indexes")
    f = 2 * 1024 ** 3
    p = run([BPFSIGHT, "stats", path, "-r", "gemm_step_sum", "--peak-tflops", "h100-sxm",
             "--format", "json"], check=True)
    rows = json.loads(p.stdout)["reports"]["gemm_step_sum"]
    got = [(r["pid"], r["step"], r["step_ns"], r["gemms"], r["flops"], r["tflops"],
            r["mfu_pct"]) for r in rows]
    # MFU: the GEMMs' time at H100 SXM's peak (fp32 67, bf16 989.4 TFLOP/s) over the step's.
    eq(got, [(1, "1", 1_000_000, 2, 2 * f, round(2 * f / 1e9, 2),
              round(100 * 2 * f / 67e3 / 1e6, 2)),
             (1, "2", 2_000_000, 1, f, round(f / 2e9, 2), round(100 * f / 989.4e3 / 2e6, 2))],
       "per step, the application's GEMMs of the step's process")
    p = run([BPFSIGHT, "stats", path, "-r", "gemm_step_sum", "--peak-tflops", "100",
             "--format", "json"], check=True)
    mfu = [r["mfu_pct"] for r in json.loads(p.stdout)["reports"]["gemm_step_sum"]]
    eq(mfu, [round(100 * 2 * f / 100e3 / 1e6, 2), round(100 * f / 100e3 / 2e6, 2)],
       "--peak-tflops N: N for every type")
    p = run([BPFSIGHT, "stats", path, "-r", "gemm_step_sum", "--peak-tflops", "h100"])
    eq(p.returncode != 0 and "--peak-tflops h100: give TFLOP/s" in p.stderr, True,
       f"an unknown GPU is refused, naming the choices ({p.returncode}: {p.stderr})")


def test_stream_of_a_handle():
    """A handle's calls show the stream its last successful cublasSetStream_v2 gave it; a
    failed one changes nothing; another handle keeps the default stream."""
    t = Trace(families="proc,cublas")
    set_stream, sgemm = 2, 6  # cublas_api.c's indexes
    gemm = dict(args=(0x1, 0, 0, 8, 8, 8), stack=(0, 0, 8, 0, 8, 0, 0, 8))
    t.cublas_call(1, 1, 1000, 10, sgemm, **gemm)
    t.cublas_call(1, 1, 2000, 10, set_stream, args=(0x1, 0x7000))
    t.cublas_call(1, 1, 3000, 10, sgemm, **gemm)
    t.cublas_call(1, 1, 4000, 10, set_stream, ret=7, args=(0x1, 0x9000))  # INVALID_VALUE
    t.cublas_call(1, 1, 5000, 10, sgemm, **gemm)
    t.cublas_call(1, 1, 6000, 10, sgemm, args=(0x2, 0, 0, 8, 8, 8), stack=gemm["stack"])
    evs = [e for e in dump(t.write(tmpdir())) if e["name"] == "cublasSgemm_v2"]
    eq([(e["args"]["handle"], e["args"]["stream"]) for e in evs],
       [("0x1", "0x0"), ("0x1", "0x7000"), ("0x1", "0x7000"), ("0x2", "0x0")],
       "each GEMM's stream")


def test_bad_records():
    """Records of the math families too short for their type are counted and skipped; a
    function of a newer table is named by its index; a GEMM whose stack copy is missing shows
    its register arguments and no leading dimensions; the reports stay whole."""
    import synth
    t = Trace(families="proc,cublas,cudnn,blas", start=50)  # the calls inside the recording
    for ty in (synth.CUBLAS_CALL, 0xd0, 0xe0):
        t.raw(synth.short_rec(ty, 1, 1, 5, 16))
    t.cublas_call(1, 1, 100, 10, 4000)
    t.cublas_call(1, 1, 200, 10, 6, args=(0x1, 0, 0, 8, 9, 10))  # no stack copy
    t.cublas_call(1, 1, 300, 10, 4000, rtype=0xd0)
    t.cublas_call(1, 1, 400, 10, 4000, rtype=0xe0)
    path = t.write(tmpdir())
    p = run([BPFSIGHT, "info", "--json", path])
    eq(json.loads(p.stdout)["corrupt_records"], 3, "the short records counted")
    evs = [(e["name"], e["args"]) for e in dump(path, check=False) if e["kind"] == "cublas_api"]
    eq(evs, [("cublas_fn_4000", {"status": OK}),
             ("cublasSgemm_v2", {"status": OK, "handle": "0x1", "stream": "0x0", "trans": "NN",
                                 "m": 8, "n": 9, "k": 10, "batch": 1, "a_type": "CUDA_R_32F",
                                 "b_type": "CUDA_R_32F", "c_type": "CUDA_R_32F",
                                 "compute_type": "CUBLAS_COMPUTE_32F",
                                 "flops": 2 * 8 * 9 * 10})], "what the records hold")
    s = stats(path, "cublas_sum,gemm_sum,cudnn_sum,blas_sum", check=False)
    eq(sorted(r["name"] for r in s["cublas_sum"]), ["cublasSgemm_v2", "cublas_fn_4000"],
       "cublas_sum names both")
    eq(([r["name"] for r in s["cudnn_sum"]], [r["name"] for r in s["blas_sum"]]),
       (["cudnn_fn_4000"], ["blas_fn_4000"]), "the others' newer functions, by index")
    eq([(e["kind"], e["name"]) for e in dump(path, check=False) if e["ts"] in (300, 400)],
       [("blas_api", "blas_fn_4000"), ("cudnn_api", "cudnn_fn_4000")], "named by index")
