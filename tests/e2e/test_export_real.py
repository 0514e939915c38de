"""The real traces (../shared/traces, recorded on an H100) through the three formats every trace
has, each family of them present in each, as the export model promises (docs/ARCHITECTURE.md,
"The export model"):

- SQLite: each family's nsys-shaped table has a row per record of its kinds (info's counts),
  RUNTIME joins the GPU tables on CUPTI's correlation id;
- Chrome/Kineto: the metadata keys before traceEvents, every GPU operation on pid = device /
  tid = stream named "GPU N" / "stream S" with its correlation, ac2g flows in pairs, the cuda
  calls and NVTX ranges once each, the GIL contention counter, the counts SQLite has;
- Perfetto: every file a sequence of TracePackets; the smallest trace decoded by protoc: every
  track described before use, slices paired and nested per track, every flow that ends begun,
  each GPU operation on a "Stream S" track of a "GPU N" track, counts as SQLite's.

tests/tools/export_equiv.py compares two builds' exports of the same traces byte for byte.
"""
import atexit
import collections
import gc
import json
import os
import re
import shutil
import sqlite3
import tempfile

import helpers
from helpers import BPFSIGHT, ROOT, check, eq, info, run, tmpdir
from test_export_gpu import Pf, check_nesting
from test_export_perfetto import need_protoc

# For tests/run_tests.py: about how long these tests take on CI's machine (its order). One
# job: the tests share the SQLite exports (the Chrome test counts RUNTIME's rows), each trace's
# info and the smallest trace's Perfetto export, made once per run of this file.
SECONDS = 25
# For tests/run_tests.py: these tests read files only (no recording, no workload, nothing
# traced): they run beside the tests that run alone, on the core those leave idle.
BESIDE = "reads files only"

TRACES = os.path.join(ROOT, "..", "shared", "traces")
GPU_CATS = {"kernel": "gpu_kernel", "gpu_memcpy": "gpu_memcpy", "gpu_memset": "gpu_memset"}


def real_traces():
    names = sorted(f for f in os.listdir(TRACES) if f.endswith(".bst")) \
        if os.path.isdir(TRACES) else []
    if not names:
        raise helpers.Skip(f"no real traces in {TRACES} (shared/ beside the checkout)")
    return [os.path.join(TRACES, n) for n in names]


# What the tests of this file share, made once per run of it (helpers.cleanup() removes each
# test's tmpdir()): {(trace, format): export} (not the Chrome JSON, read by one test only),
# {trace: info}.
_exports, _infos = {}, {}
_cache_dir = None


def export(trace, fmt, suffix, keep=True):
    """TRACE exported to FMT; with KEEP, once per run of this file."""
    global _cache_dir
    if (trace, fmt) in _exports:
        return _exports[trace, fmt]
    if keep and _cache_dir is None:
        _cache_dir = tempfile.mkdtemp(prefix="bpfsight-export-real-")
        atexit.register(shutil.rmtree, _cache_dir, True)
    out = os.path.join(_cache_dir if keep else tmpdir(),
                       os.path.basename(trace).replace(".bst", suffix))
    p = run([BPFSIGHT, "export", trace, "--format", fmt, "-o", out], timeout=300)
    eq(p.returncode, 0, f"{os.path.basename(trace)}: export {fmt} ({p.stderr.strip()[-300:]})")
    if keep:
        _exports[trace, fmt] = out
    return out


def trace_info(trace):
    if trace not in _infos:
        _infos[trace] = info(trace)
    return _infos[trace]


def counts(trace):
    """Records per kind, as info reads them."""
    return collections.Counter(trace_info(trace)["events"])


def sqlite_counts(trace, joins=False):
    """Rows of each family's table; with JOINS, the launches whose correlation id (nsys's join
    of RUNTIME with the GPU tables) names GPU work, and those that have one."""
    db = sqlite3.connect(export(trace, "sqlite", ".sqlite"))
    q = lambda sql: db.execute(sql).fetchone()[0]  # noqa: E731
    got = {
        "syscall": q("SELECT count(*) FROM OSRT_API"),
        "offcpu": q("SELECT count(*) FROM BPFSIGHT_OFFCPU"),
        "gil_wait": q("SELECT count(*) FROM BPFSIGHT_GIL_WAITS"),
        "cpu_sample": q("SELECT count(*) FROM BPFSIGHT_CPU_SAMPLES"),
        "cuda_api": q("SELECT count(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME WHERE cuptiOnly = 0"),
        "gpu_kernel": q("SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL"),
        "gpu_memcpy": q("SELECT count(*) FROM CUPTI_ACTIVITY_KIND_MEMCPY"),
        "gpu_memset": q("SELECT count(*) FROM CUPTI_ACTIVITY_KIND_MEMSET"),
        "nvtx": q("SELECT count(*) FROM NVTX_EVENTS WHERE eventType IN (34, 59, 60)"),
        "proc": q("SELECT count(*) FROM BPFSIGHT_PROC_EVENTS"),
        "runtime": q("SELECT count(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME"),
    }
    if joins:
        work = set()
        for t in ("KERNEL", "MEMCPY", "MEMSET"):
            work.update(db.execute(f"SELECT globalPid, correlationId FROM "
                                   f"CUPTI_ACTIVITY_KIND_{t}"))
        calls = db.execute("SELECT (globalTid >> 24) << 24, correlationId FROM "
                           "CUPTI_ACTIVITY_KIND_RUNTIME WHERE correlationId IS NOT NULL AND "
                           "cuptiOnly = 0").fetchall()
        got["linked"], got["joined"] = len(calls), sum(1 for c in calls if c in work)
    db.close()
    return got


def test_real_traces_sqlite_rows():
    for trace in real_traces():
        name, c, got = os.path.basename(trace), counts(trace), sqlite_counts(trace, True)
        for kind in ("syscall", "offcpu", "gil_wait", "cpu_sample", "cuda_api", "gpu_kernel",
                     "gpu_memcpy", "gpu_memset"):
            eq(got[kind], c[kind], f"{name}: rows of {kind}")
        eq(got["nvtx"], c["nvtx_range"] + c["nvtx_mark"], f"{name}: NVTX_EVENTS' ranges, marks")
        eq(got["proc"], sum(c[k] for k in ("fork", "exec", "exit", "comm")),
           f"{name}: BPFSIGHT_PROC_EVENTS")
        # nsys's join: a launch's correlation id is its GPU work's (a window may cut a few).
        check(got["joined"] >= 0.99 * got["linked"] and (got["linked"] or not c["gpu_kernel"]),
              f"{name}: RUNTIME joins the GPU tables ({got['joined']} of {got['linked']})")


def check_chrome(trace, c, rows):
    name = os.path.basename(trace)
    path = export(trace, "chrome", ".json", keep=False)
    with open(path) as f:
        text = f.read()
    # ~100 MB of events, 10^6 objects and no cycle among them: the collector, left on, walks
    # them again as they are made (1.4 CPU-s for job-attach-p's against 1.1).
    gc.disable()
    try:
        doc = json.loads(text)
    finally:
        gc.enable()
    head = text[:text.index('"traceEvents"')]
    del text
    for key in ("schemaVersion", "deviceProperties", "traceName", "displayTimeUnit",
                "baseTimeNanoseconds", "bpfsight"):
        check(f'"{key}"' in head, f"{name}: {key} before traceEvents (HTA reads them first)")
    eq(doc["bpfsight"]["families"], trace_info(trace)["families"],
       f"{name}: the families recorded")
    check("distributedInfo" not in doc, f"{name}: no rank without nccl")
    evs = doc["traceEvents"]
    names = {(e["name"], e["pid"], e.get("tid", 0)): e["args"].get("name")
             for e in evs if e["ph"] == "M"}
    by_cat = collections.Counter(e.get("cat") for e in evs if e["ph"] in "Xib")
    gpu = [e for e in evs if e["ph"] == "X" and e.get("cat") in GPU_CATS]
    for cat, kind in GPU_CATS.items():
        eq(by_cat[cat], c[kind], f"{name}: Kineto's {cat} events")
    # Each operation's correlation and place, looked at in one pass (the first that is wrong
    # fails below as it would alone); the names once per (device, stream) there is work on.
    wrong = next((e for e in gpu if not isinstance(e["args"].get("correlation"), int)
                  or (e["pid"], e["tid"]) != (e["args"]["device"], e["args"]["stream"])), None)
    if wrong:
        check(isinstance(wrong["args"].get("correlation"), int),
              f"{name}: {wrong['name']} correlation")
        eq((wrong["pid"], wrong["tid"]), (wrong["args"]["device"], wrong["args"]["stream"]),
           f"{name}: pid = device, tid = stream")
    for pid, tid in {(e["pid"], e["tid"]) for e in gpu}:
        eq(names.get(("process_name", pid, 0)), f"GPU {pid}", f"{name}: GPU's name")
        eq(names.get(("thread_name", pid, tid)), f"stream {tid}", f"{name}: stream's name")
    starts = collections.Counter(e["id"] for e in evs if e["ph"] == "s")
    ends = collections.Counter(e["id"] for e in evs if e["ph"] == "f")
    check(all(starts[i] == 1 for i in ends), f"{name}: every ac2g flow's end has one start")
    eq(sum(ends.values()), sum(1 for e in gpu if e["args"]["correlation"] in starts),
       f"{name}: a flow ends on each GPU operation its launch starts one for")
    # One event per call: the cuda events, and CUPTI's records no cuda event stands for.
    eq(by_cat["cuda_runtime"] + by_cat["cuda_driver"], rows["runtime"], f"{name}: calls")
    eq(by_cat["user_annotation"], c["nvtx_range"], f"{name}: NVTX ranges")
    gil = [e for e in evs if e["ph"] == "C" and e["name"] == "GIL contention"]
    check(bool(gil) == bool(c["gil_wait"]), f"{name}: the GIL contention counter")


def test_real_traces_chrome_kineto():
    for trace in real_traces():
        check_chrome(trace, counts(trace), sqlite_counts(trace))


def packets(path):
    """The top-level fields of a protobuf file: (field number, wire type) of each."""
    with open(path, "rb") as f:
        b = f.read()
    i, end, out = 0, len(b), collections.Counter()

    def varint():
        nonlocal i
        v = s = 0
        while True:
            v |= (b[i] & 0x7f) << s
            i += 1
            if b[i - 1] < 0x80:
                return v
            s += 7

    # A TracePacket's key is the byte 0x0a and most lengths one byte: those read inline (a
    # Python call per varint was most of this walk's time), any other key or length by varint.
    ones = 0
    while i < end:
        if b[i] == 0x0a:
            if not ones:
                out[1] += 0  # field 1 counted in the order it first came
            ones += 1
            i += 1
        else:
            key = varint()
            check(key & 7 == 2, f"{path}: a length-delimited field at {i}")
            out[key >> 3] += 1
        if b[i] < 0x80:
            i += b[i] + 1
        else:
            n = varint()
            i += n
    if ones:
        out[1] += ones
    eq(i, len(b), f"{path}: its last packet ends the file")
    return out


def test_real_traces_perfetto():
    traces = real_traces()
    for trace in traces:
        top = packets(export(trace, "perfetto", ".pftrace"))
        eq(list(top), [1], f"{os.path.basename(trace)}: only TracePackets")
    # The smallest whole, decoded by protoc (Perfetto's schema).
    need_protoc()
    trace = min(traces, key=os.path.getsize)
    name, c = os.path.basename(trace), counts(trace)
    pf = Pf(export(trace, "perfetto", ".pftrace"))  # tracks described first, slices paired
    check_nesting(pf.slices)
    begun = {f for s in pf.slices + pf.instants for f in s["flows"]}
    ended = [f for s in pf.slices + pf.instants for f in s["ends"]]
    check(ended and all(f in begun for f in ended), f"{name}: every flow that ends was begun")
    streams = [s for s in pf.slices if re.fullmatch(r"Stream \d+", pf.name(s["track"]) or "")]
    check(all(re.fullmatch(r"GPU \d+", pf.name(pf.parent(s["track"]))) for s in streams),
          f"{name}: streams under their GPU")
    eq(len(streams), c["gpu_kernel"] + c["gpu_memcpy"] + c["gpu_memset"],
       f"{name}: a slice per GPU operation")
    eq(len(ended), sum(1 for s in streams if s["ends"]), f"{name}: flows end on GPU work")
