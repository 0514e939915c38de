"""cudnn family on the real libcudnn (cuDNN 9): calls named, counted and given their status;
what a cudnnBackendExecute ran, read from the backend descriptors it was built from.

tests/workloads/cuda/cudnn_calls builds a matmul-then-ReLU operation graph with the backend
API per repetition (host-side: it succeeds without a GPU), executes it on the NULL handle a
failed cudnnCreate left, and makes one legacy call. libcudnn.so.9 is a dispatcher into
libcudnn_graph/_ops/_cnn/_adv, which define the same functions: each call is recorded twice,
the application's at depth 0 and the sub-library's inside it at depth 1.
"""
import os
import sqlite3
from collections import Counter

from helpers import (BPFSIGHT, Skip, check, dump, eq, need_root, record, run, stats, tmpdir,
                     workload)

# For tests/run_tests.py: about how long these tests take on CI's machine (its order).
SECONDS = 3

CUDNN_CALLS = workload("cuda/cudnn_calls")
OK, BAD = "CUDNN_STATUS_SUCCESS", "CUDNN_STATUS_BAD_PARAM"
# Per repetition, the matmul graph: 13 descriptors (4 tensors, matmul and pointwise with their
# operations, the graph, an engine, its config, the plan, the variant pack), 34 attributes, 8
# finalized; the convolution graph: 10 (3 tensors, the convolution and its operation, the
# graph, engine, config, plan, pack), 32 attributes, 5 finalized.
PER_REP = {("cudnnBackendCreateDescriptor", OK): 23, ("cudnnBackendSetAttribute", OK): 66,
           ("cudnnBackendFinalize", OK): 13, ("cudnnBackendExecute", BAD): 2,
           ("cudnnBackendDestroyDescriptor", OK): 23, ("cudnnAddTensor", BAD): 1,
           # the legacy convolution: x, y, the filter and the convolution's descriptors
           ("cudnnCreateTensorDescriptor", OK): 2, ("cudnnCreateFilterDescriptor", OK): 1,
           ("cudnnCreateConvolutionDescriptor", OK): 1, ("cudnnSetTensor4dDescriptor", OK): 2,
           ("cudnnSetFilter4dDescriptor", OK): 1, ("cudnnSetConvolution2dDescriptor", OK): 1,
           ("cudnnConvolutionForward", BAD): 1, ("cudnnDestroyConvolutionDescriptor", OK): 1,
           ("cudnnDestroyFilterDescriptor", OK): 1, ("cudnnDestroyTensorDescriptor", OK): 2}


def need_no_gpu():
    need_root()
    if not os.path.exists(CUDNN_CALLS):
        raise Skip(f"{CUDNN_CALLS} not built (no CUDA toolkit)")
    if os.path.exists("/dev/nvidiactl"):
        raise Skip("a GPU is present: cudnn_calls expects cudnnCreate to fail")


def test_cudnn_calls_named_and_executes_read():
    need_no_gpu()
    p, out = record([CUDNN_CALLS, "2"], "-t", "cudnn")
    eq(p.returncode, 0, f"record exit ({p.stderr[-800:]})")
    pid = int(p.stdout.split()[1])
    evs = [e for e in dump(out) if e["kind"] == "cudnn_api" and e["pid"] == pid]
    top = [e for e in evs if "depth" not in e["args"]]
    want = Counter({k: 2 * n for k, n in PER_REP.items()})
    want[("cudnnCreate", "CUDNN_STATUS_NOT_INITIALIZED")] = 1
    eq(Counter((e["name"], e["args"]["status"]) for e in top), want,
       "the application's calls by name and status (2 repetitions)")
    inner = Counter((e["name"], e["args"]["status"]) for e in evs if e["args"].get("depth") == 1)
    eq(inner, want, "each again in the sub-library, at depth 1")
    deeper = Counter((e["name"], e["args"]["depth"]) for e in evs if e["args"].get("depth", 0) > 1)
    eq(deeper, Counter({("cudnnSetTensor4dDescriptorEx", 2): 2 * 2}),
       "deeper: libcudnn_ops's cudnnSetTensor4dDescriptor calls its Ex form")
    conv_flops = 2 * (8 * 16 * 32 * 32) * (3 * 5 * 5)
    mm = {"handle": "0x0", "ops": "MATMUL,POINTWISE", "batch": 2, "m": 64, "n": 32, "k": 128,
          "flops": 2 * 2 * 64 * 32 * 128}
    conv = {"handle": "0x0", "ops": "CONVOLUTION_FORWARD", "batch": None, "m": None, "n": None,
            "k": None, "flops": conv_flops}
    eq([{k: e["args"].get(k) for k in mm} for e in top if e["name"] == "cudnnBackendExecute"],
       [mm, conv] * 2, "what each execute ran, from its plan's descriptors")
    for e in [e for e in top if e["name"] == "cudnnConvolutionForward"]:
        a = e["args"]
        eq({k: a.get(k) for k in ("x", "w", "y", "groups", "algo", "bytes", "flops")},
           {"x": "8x3x32x32", "w": "16x3x5x5", "y": "8x16x32x32", "groups": 1, "algo": 0,
            "bytes": 4096, "flops": conv_flops},
           "the legacy convolution's shapes from its descriptors")
    created = Counter(e["args"]["type"] for e in top if e["name"] == "cudnnBackendCreateDescriptor")
    eq(created, Counter({"TENSOR": 14, "MATMUL": 2, "OPERATION_MATMUL": 2, "POINTWISE": 2,
                         "OPERATION_POINTWISE": 2, "CONVOLUTION": 2,
                         "OPERATION_CONVOLUTION_FORWARD": 2, "OPERATIONGRAPH": 4, "ENGINE": 4,
                         "ENGINECFG": 4, "EXECUTION_PLAN": 4, "VARIANT_PACK": 4}),
       "descriptor types by name")
    check(all(e["dur"] > 0 for e in evs), "every call timed")


def test_cudnn_sum():
    need_no_gpu()
    p, out = record([CUDNN_CALLS, "2"], "-t", "cudnn")
    eq(p.returncode, 0, f"record exit ({p.stderr[-800:]})")
    s = stats(out, "cudnn_sum")["cudnn_sum"]
    want = Counter()
    for (name, _), n in PER_REP.items():
        want[name] += 2 * n
    want["cudnnCreate"] = 1
    eq({r["name"]: r["count"] for r in s}, dict(want), "the application's calls (depth 0)")


def test_sqlite_cudnn_events():
    """CUDNN_EVENTS (nsys's table, eventClass 28): every call, the execute with what it ran."""
    need_no_gpu()
    p, out = record([CUDNN_CALLS, "1"], "-t", "cudnn")
    eq(p.returncode, 0, f"record exit ({p.stderr[-800:]})")
    db = os.path.join(tmpdir(), "t.sqlite")
    run([BPFSIGHT, "export", out, "-f", "sqlite", "-o", db], check=True)
    with sqlite3.connect(db) as c:
        n = c.execute("SELECT count(*), min(eventClass), max(eventClass) FROM CUDNN_EVENTS"
                      " WHERE nestingLevel = 0").fetchone()
        ex = c.execute("SELECT returnValue, ops, batch, m, n, k, flops FROM CUDNN_EVENTS JOIN"
                       " StringIds ON StringIds.id = nameId WHERE value = 'cudnnBackendExecute'"
                       " AND nestingLevel = 0").fetchall()
    eq(n, (sum(PER_REP.values()) + 1, 28, 28), "the application's calls, class 28")
    eq(ex, [(2000, "MATMUL,POINTWISE", 2, 64, 32, 128, 2 * 2 * 64 * 32 * 128),
             (2000, "CONVOLUTION_FORWARD", None, None, None, None,
              2 * (8 * 16 * 32 * 32) * (3 * 5 * 5))], "the executes")
