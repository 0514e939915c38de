"""cublas family on the real libcublas and libcublasLt: every GEMM form, exact counts and
exact decoded arguments; a cublasLtMatmul's shape from the descriptors it was given.

tests/workloads/cuda/cublas_gemm calls each GEMM form once per repetition with arguments
derived from its index (its header comment): m = 100 + i, n = 200 + i, k = 300 + i,
lda/ldb/ldc = 400/500/600 + i, batch = 2 + i, transa T, transb N. Without a GPU
cublasCreate_v2 fails and every GEMM, given the NULL handle, returns
CUBLAS_STATUS_NOT_INITIALIZED after entering the library; cuBLASLt's layouts and matmul
descriptors succeed on the host.
"""
import os
from collections import Counter

from helpers import Skip, check, dump, eq, need_root, record, workload

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
            "cublasLtMatmulDescDestroy": (1, OK), "cublasLtMatrixLayoutDestroy": (4, OK)}


def need_no_gpu():
    need_root()
    if not os.path.exists(CUBLAS_GEMM):
        raise Skip(f"{CUBLAS_GEMM} not built (no CUDA toolkit)")
    if os.path.exists("/dev/nvidiactl"):
        raise Skip("a GPU is present: cublas_gemm expects cublasCreate_v2 to fail")


def expected(i, name, at, bt, ct, comp, batched, cplx):
    m = 5000000000 if name.endswith("_v2_64") else 100 + i
    args = {"status": NOT_INIT, "handle": "0x0", "a_type": at, "b_type": bt, "c_type": ct,
            "compute_type": comp}
    if batched is None:
        args["groups"] = GROUPS[name]
        return args
    batch = 2 + i if batched else 1
    args.update(trans="TN", m=m, n=200 + i, k=300 + i, lda=400 + i, ldb=500 + i, ldc=600 + i,
                batch=batch, flops=2 * m * (200 + i) * (300 + i) * batch * (4 if cplx else 1))
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
            "b_type": bf16, "c_type": bf16, "compute_type": "CUBLAS_COMPUTE_32F",
            "flops": 2 * 64 * 32 * 128 * 4}
    eq(mm, [want, want], "both repetitions' matmuls (each with its own descriptors)")
    sets = [e["args"] for e in cublas_events(out)
            if e["name"] == "cublasLtMatrixLayoutSetAttribute"]
    eq([(a["attr"], a["size"], a["value"]) for a in sets], [(5, 4, 4)] * 8,
       "BATCH_COUNT (5), an int32_t of 4, on each layout")
