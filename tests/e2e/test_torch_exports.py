"""The torch family's readers on a synthetic trace (tests/e2e/synth.py): ops nested on two
threads, the cuda calls they made and the kernels those launched (what a GPU machine records;
none here), and two steps. Exact: torch_op_sum's CPU self and total and GPU self and total
times, torch_op_kernels' op -> kernel rows, torch_step_sum's GPU busy time and top ops, Kineto's
External id from each kernel to the op that launched it (Chrome), the op tracks of each thread
(Perfetto). The records come in a real trace's order: each cuda call when it returns, each op
when it ends (after the calls inside it), the GPU work last.
"""
import collections
import json
import os
import sqlite3

import synth
from helpers import BPFSIGHT, check, dump, eq, need_root, run, stats, tmpdir
from test_export_gpu import Pf, check_nesting
from test_export_perfetto import need_protoc

# For tests/run_tests.py: about how long these tests take on CI's machine (its order).
SECONDS = 4
# For tests/run_tests.py: these tests read files only (no recording, no workload, nothing
# traced): they run beside the tests that run alone, on the core those leave idle.
BESIDE = "reads files only"

PID, MAIN, AUTOGRAD = 500, 501, 502
LAUNCH = "cudaLaunchKernel"
CONCRETE = '["", "", "", "1", "1"]'  # addmm's beta and alpha


def build():
    t = synth.Trace(families="proc,cuda,gpu,torch")
    t.process(PID, "train")
    t.thread(PID, MAIN, "train")
    t.thread(PID, AUTOGRAD, "autograd")
    fn = synth.cuda_fn(LAUNCH)
    # the calls, as they return
    for tid, ts in ((MAIN, 11000), (MAIN, 12000), (MAIN, 21000), (AUTOGRAD, 41000), (MAIN, 60000)):
        t.cuda_call(PID, tid, ts, 400, fn)
    # the ops, as they end: children first
    t.torch_op(PID, MAIN, 10100, 200, "aten::t", depth=1, seq=3)
    t.torch_op(PID, MAIN, 10400, 8000, "aten::addmm", depth=1, seq=4, shapes="[[64], [16, 32], [32, 64]]",
               concrete=CONCRETE)
    t.torch_op(PID, MAIN, 10000, 9000, "aten::linear", seq=2)
    t.torch_op(PID, MAIN, 20000, 3000, "aten::relu", seq=5)
    t.torch_op(PID, AUTOGRAD, 40500, 4000, "aten::mm", depth=1)
    t.torch_op(PID, AUTOGRAD, 40000, 5000, "MmBackward0", scope="backward_function", seq=4,
               fwd_tid=1, torch_tid=2)
    t.torch_step(PID, MAIN, 5000, 35000, 1)
    t.torch_step(PID, MAIN, 40000, 60000, 2)
    # the GPU work, last
    for name, ts, dur, tid, call in (("gemm", 20000, 3000, MAIN, 11000),
                                     ("bias", 24000, 1000, MAIN, 12000),
                                     ("relu_k", 30000, 2000, MAIN, 21000),
                                     ("gemm", 50000, 3500, AUTOGRAD, 41000)):
        t.kernel(PID, tid, ts, dur, name, call_ts=call, flags=synth.GPU_CALL_CUDA)
    t.memcpy(PID, MAIN, 70000, 500, 4096, 1, call_ts=60000, flags=synth.GPU_CALL_CUDA)
    return t.write(tmpdir())


def test_torch_reports_exact():
    need_root()
    trace = build()
    rep = stats(trace, "torch_op_sum,torch_op_kernels,torch_step_sum")
    got = {r["name"]: (r["count"], r["cpu_total_ns"], r["cpu_self_ns"], r["gpu_total_ns"],
                       r["gpu_self_ns"], r["gpu_ops"], r["scope"]) for r in rep["torch_op_sum"]}
    eq(got, {"aten::linear": (1, 9000, 800, 4000, 0, 0, "function"),
             "aten::addmm": (1, 8000, 8000, 4000, 4000, 2, "function"),
             "aten::t": (1, 200, 200, 0, 0, 0, "function"),
             "aten::relu": (1, 3000, 3000, 2000, 2000, 1, "function"),
             "MmBackward0": (1, 5000, 1000, 3500, 0, 0, "backward_function"),
             "aten::mm": (1, 4000, 4000, 3500, 3500, 1, "function")}, "torch_op_sum")
    eq(round(sum(r["self_cpu_pct"] for r in rep["torch_op_sum"]), 6), 100.0, "self CPU %")
    eq([r["name"] for r in rep["torch_op_sum"]][:2], ["aten::linear", "aten::addmm"],
       "by CPU total")
    kern = {(r["op"], r["kernel"]): (r["count"], r["total_ns"]) for r in rep["torch_op_kernels"]}
    eq(kern, {("aten::addmm", "gemm"): (1, 3000), ("aten::addmm", "bias"): (1, 1000),
              ("aten::relu", "relu_k"): (1, 2000), ("aten::mm", "gemm"): (1, 3500),
              ("[no op]", "[CUDA memcpy Host-to-Device]"): (1, 500)}, "torch_op_kernels")
    steps = [(s["step"], s["wall_ns"], s["gpu_busy_ns"], s["ops"], s["top_ops"])
             for s in rep["torch_step_sum"]]
    eq(steps, [(1, 35000, 6000, 4, "aten::addmm 0.008 ms, aten::relu 0.003 ms, "
                                   "aten::linear 0.001 ms"),
               (2, 60000, 4000, 2, "aten::mm 0.004 ms, MmBackward0 0.001 ms")], "torch_step_sum")


def test_torch_chrome_and_perfetto():
    need_root()
    need_protoc()
    trace = build()
    d = tmpdir()
    chrome = os.path.join(d, "t.json")
    run([BPFSIGHT, "export", trace, "--format", "chrome", "-o", chrome], check=True)
    with open(chrome) as f:
        evs = json.load(f)["traceEvents"]
    ops = {e["name"]: e for e in evs if e.get("cat") == "cpu_op"}
    ext = {n: e["args"]["External id"] for n, e in ops.items()}
    eq(ext["aten::addmm"], synth.flow_id(PID, MAIN, 10400), "an op's External id")
    eq(ops["aten::addmm"]["args"]["Input Dims"], [[64], [16, 32], [32, 64]], "Input Dims")
    eq(ops["aten::addmm"]["args"]["Concrete Inputs"], json.loads(CONCRETE), "Concrete Inputs")
    check("Concrete Inputs" not in ops["aten::relu"]["args"], "none where none was recorded")
    eq((ops["MmBackward0"]["args"]["Sequence number"], ops["MmBackward0"]["args"]["Fwd thread id"]),
       (4, 1), "backward op's pairing")
    kernels = collections.defaultdict(list)
    for e in evs:
        if e.get("cat") == "kernel":
            kernels[e["name"]].append(e["args"].get("External id"))
    # each kernel carries the id of the innermost op open at its launch
    eq(sorted(kernels["gemm"]), sorted([ext["aten::addmm"], ext["aten::mm"]]), "gemm's ops")
    eq(kernels["bias"], [ext["aten::addmm"]], "bias's op")
    eq(kernels["relu_k"], [ext["aten::relu"]], "relu_k's op")
    copies = [e for e in evs if e.get("cat") == "gpu_memcpy"]
    check(copies and "External id" not in copies[0]["args"], "launched outside any op: none")
    steps = [e for e in evs if e.get("cat") == "user_annotation" and e["name"].startswith("step")]
    eq(len(steps), 2, "steps")

    pf_path = os.path.join(d, "t.pftrace")
    run([BPFSIGHT, "export", trace, "--format", "perfetto", "-o", pf_path], check=True)
    pf = Pf(pf_path)
    check_nesting(pf.slices)
    want = {(e["name"], e["ts"], e["tid"]) for e in dump(trace) if e["kind"] == "torch_op"}
    got = {(s["name"], s["ts"], pf.thread(s["track"])[1]) for s in pf.slices
           if pf.name(s["track"]) == "torch ops"}
    eq(got, want, "every op on its thread's \"torch ops\" track")
    for s in pf.slices:
        if pf.name(s["track"]) == "torch ops":
            check("thread" not in pf.tracks[s["track"]], "a child track of the thread")

    db = os.path.join(d, "t.sqlite")
    run([BPFSIGHT, "export", trace, "--format", "sqlite", "-o", db], check=True)
    con = sqlite3.connect(db)
    rows = con.execute("SELECT s.value, o.start, o.end - o.start, o.globalTid & 0xffffff, o.scope, "
                       "o.seq, o.fwdThread, o.depth, o.shapes, o.concrete FROM BPFSIGHT_TORCH_OPS AS o "
                       "JOIN StringIds AS s ON s.id = o.nameId").fetchall()
    eq(sorted(rows), sorted([
        ("aten::t", 10100, 200, MAIN, "function", 3, 0, 1, None, None),
        ("aten::addmm", 10400, 8000, MAIN, "function", 4, 0, 1, "[[64], [16, 32], [32, 64]]",
         CONCRETE),
        ("aten::linear", 10000, 9000, MAIN, "function", 2, 0, 0, None, None),
        ("aten::relu", 20000, 3000, MAIN, "function", 5, 0, 0, None, None),
        ("aten::mm", 40500, 4000, AUTOGRAD, "function", None, None, 1, None, None),
        ("MmBackward0", 40000, 5000, AUTOGRAD, "backward_function", 4, 1, 0, None, None)]),
       "BPFSIGHT_TORCH_OPS")
    eq(con.execute("SELECT COUNT(*) FROM BPFSIGHT_TORCH_STEPS").fetchone()[0], 2, "steps")
