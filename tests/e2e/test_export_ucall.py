"""export of the cuda and nccl families: SQLite gives stats' numbers, Chrome and Perfetto
give dump's events one for one, with Kineto's categories and keys and nested slices.

The traces are real recordings of the cuda and nccl workloads (tests/workloads/cuda, nccl)
through the real libcudart, stub libcuda and libnccl: without a GPU every call fails after
its probes fired, so the calls are known exactly (tests/e2e/test_cuda.py, test_nccl.py check
them against the workloads; here the exports are checked against dump and stats). On a
machine with a GPU and PyTorch, test_gpu_torch_nccl_distributed_info records a real NCCL
communicator and checks Kineto's distributedInfo.
"""
import atexit
import collections
import decimal
import gzip
import json
import os
import re
import shutil
import sqlite3
import subprocess
import tempfile

from helpers import (BPFSIGHT, Skip, check, docs_query, dump, eq, need_root, record, run, stats, tmpdir,
                     workload)
from test_export_perfetto import Model, decode, need_protoc, one

# For tests/run_tests.py: about how long these tests take on CI's machine (its order).
SECONDS = 3

CUDART = "/usr/local/cuda/lib64/libcudart.so.13"
API_SHARED = workload("cuda/cuda_api_shared")
DRIVER = workload("cuda/cuda_driver")
WRAP = workload("cuda/libcuda_wrap.so")
NCCL_CALLS = workload("nccl/nccl_calls")

# What the cuda recording holds without a GPU (the workloads' header comments): cuda_driver's
# 15 calls per round x 2 rounds, and under libcuda_wrap.so one round of cuda_api, whose 3
# cudaMalloc and 5 cudaMemcpy each call libcudart's from inside the wrapper's (depth 1). With
# a GPU, libcudart's calls succeed and call the driver too: the counts are then dump's.
GPU = os.path.exists("/dev/nvidiactl")
DRIVER_CALLS = 15 * 2
NESTED_CUDA = 3 + 5
DIMS = ("grid_x", "grid_y", "grid_z", "block_x", "block_y", "block_z")
API_KINDS = ("cuda_api", "nccl_api")

_cache = {}
_cache_dir = None


def need_workloads(*paths):
    need_root()
    if not os.path.exists(CUDART):
        raise Skip(f"no CUDA toolkit ({CUDART})")
    for p in paths:
        if not os.path.exists(p) and not os.path.exists("/usr/local/cuda/bin/nvcc"):
            raise Skip("no nvcc: the CUDA workloads are not built")
        check(os.path.exists(p), f"{p} missing: run make test-build")


def recorded(name, cmd, *opts):
    """A trace of CMD, recorded once per run of this file."""
    global _cache_dir
    if name not in _cache:
        if _cache_dir is None:
            _cache_dir = tempfile.mkdtemp(prefix="bpfsight-export-ucall-")
            atexit.register(shutil.rmtree, _cache_dir, True)
        p, out = record(cmd, *opts, out=os.path.join(_cache_dir, name + ".bst"))
        eq(p.returncode, 0, f"record exit ({p.stderr.strip()[-800:]})")
        _cache[name] = out
    return _cache[name]


def cuda_trace():
    """Runtime calls, driver calls and runtime calls nested in an interposer's, 3 processes."""
    need_workloads(API_SHARED, DRIVER, WRAP)
    script = (f'"{API_SHARED}" 2 && "{DRIVER}" 2 && '
              f'LD_PRELOAD="{os.path.realpath(WRAP)}" "{API_SHARED}" 1')
    trace = recorded("cuda", ["sh", "-c", script], "-t", "cuda")
    if not GPU:
        evs = [e for e in dump(trace) if e["kind"] == "cuda_api"]
        eq(sum(is_driver(e["name"]) for e in evs), DRIVER_CALLS, "driver calls")
        eq(sum(e["args"].get("depth") == 1 for e in evs), NESTED_CUDA, "nested runtime calls")
    return trace


def nccl_trace():
    need_workloads(NCCL_CALLS)
    if GPU:
        raise Skip("a GPU is present: nccl_calls expects NCCL's inits to fail")
    return recorded("nccl", [NCCL_CALLS, "2"], "-t", "cuda,nccl")


def export(trace, fmt, out):
    p = run([BPFSIGHT, "export", trace, "--format", fmt, "-o", out], timeout=300)
    eq(p.returncode, 0, f"export {fmt} exit ({p.stderr.strip()})")
    return out


def query(db, sql, *params):
    cur = db.cursor()
    cur.row_factory = sqlite3.Row
    return [dict(r) for r in cur.execute(sql, params)]


def is_driver(name):
    return name.startswith("cu") and not name.startswith("cuda")


# ---- SQLite: the queries of docs/EXPORT.md ----

def check_sum(got, want, cols, what):
    """SQL rows vs a stats report: same rows in the same order; avg_ns as stats rounds it
    (one decimal)."""
    eq([r["name"] for r in got], [r["name"] for r in want], f"{what}: rows")
    for g, w in zip(got, want):
        eq({k: g[k] for k in cols}, {k: w.get(k) for k in cols}, f"{what}: {w['name']}")
        check(abs(g["avg_ns"] - w["avg_ns"]) <= 0.05 + 1e-12 * w["avg_ns"],
              f"{what}: {w['name']} avg {g['avg_ns']} vs {w['avg_ns']}")


def check_cuda_sqlite(trace, evs):
    db = sqlite3.connect(export(trace, "sqlite", os.path.join(tmpdir(), "t.sqlite")))
    rep = stats(trace, "cuda_api_sum,cuda_launch_sum,cuda_memcpy_sum,cuda_err_sum")
    check_sum(query(db, docs_query("cuda_api_sum")), rep["cuda_api_sum"],
              ("count", "total_ns", "med_ns", "min_ns", "max_ns"), "cuda_api_sum from SQL")

    cols = ("name", "count", "total_ns", "grid", "block", "shared_bytes")
    eq(collections.Counter(tuple(r[k] for k in cols) for r in query(db, docs_query("cuda_launch_sum"))),
       collections.Counter(tuple(r[k] for k in cols) for r in rep["cuda_launch_sum"]),
       "cuda_launch_sum from SQL")
    eq({r["name"]: (r["count"], r["bytes"]) for r in query(db, docs_query("cuda_memcpy_sum"))},
       {r["name"]: (r["count"], r["bytes"]) for r in rep["cuda_memcpy_sum"]
        if r["name"] != "memset"}, "cuda_memcpy_sum's copies from SQL")
    eq(collections.Counter((r["name"], r["code"], r["count"]) for r in query(db, docs_query("cuda_err_sum"))),
       collections.Counter((r["name"], r["code"], r["count"]) for r in rep["cuda_err_sum"]),
       "cuda_err_sum from SQL")

    # Every call is a row, as dump shows it; nsys's event class by API.
    rows = query(db, 'SELECT s.value AS name, globalTid >> 24 AS pid, globalTid & 0xffffff'
                 ' AS tid, start, "end" - start AS dur, returnValue, nestingLevel, eventClass,'
                 ' correlationId, callchainId FROM CUPTI_ACTIVITY_KIND_RUNTIME'
                 ' JOIN StringIds AS s ON s.id = nameId')
    eq(collections.Counter(tuple(r.values()) for r in rows),
       collections.Counter((e["name"], e["pid"], e["tid"], e["ts"], e["dur"], e["args"]["ret"],
                            e["args"].get("depth", 0), 1 if is_driver(e["name"]) else 0,
                            None, None) for e in evs), "CUPTI_ACTIVITY_KIND_RUNTIME vs dump")
    classes = dict(db.execute("SELECT e.name, COUNT(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME AS r"
                              " JOIN ENUM_NSYS_EVENT_CLASS AS e ON e.id = r.eventClass"
                              " GROUP BY e.name"))
    driver = sum(is_driver(e["name"]) for e in evs)
    eq(classes, {k: v for k, v in (("TRACE_PROCESS_EVENT_CUDA_DRIVER", driver),
                                   ("TRACE_PROCESS_EVENT_CUDA_RUNTIME", len(evs) - driver))
                 if v}, "calls per ENUM_NSYS_EVENT_CLASS")

    # The decoded arguments, for every call that has one of them.
    def hexint(v):
        return None if v is None else int(v, 16)

    keys = ("kernel", "grid_x", "grid_y", "grid_z", "block_x", "block_y", "block_z",
            "shared_bytes", "bytes", "kind", "stream", "dst", "src", "ptr")
    want = collections.Counter()
    for e in evs:
        a = e["args"]
        v = (a.get("kernel", a.get("func")), *(a.get(k) for k in keys[1:10]),
             *(hexint(a.get(k)) for k in keys[10:]))
        if any(x is not None for x in v):
            want[(e["name"], e["ts"], e["tid"], *v)] += 1
    got = collections.Counter(tuple(r) for r in db.execute(
        "SELECT s.value, r.start, r.globalTid & 0xffffff, k.value, gridX, gridY, gridZ,"
        " blockX, blockY, blockZ, sharedBytes, a.bytes, copyKind, stream, dst, src, ptr"
        " FROM BPFSIGHT_CUDA_ARGS AS a JOIN CUPTI_ACTIVITY_KIND_RUNTIME AS r ON r.id = a.callId"
        " JOIN StringIds AS s ON s.id = r.nameId LEFT JOIN StringIds AS k"
        " ON k.id = a.kernelNameId"))
    eq(got, want, "BPFSIGHT_CUDA_ARGS vs dump's args")
    db.close()
    return got


def test_sqlite_cuda_reproduces_stats():
    trace = cuda_trace()
    args = check_cuda_sqlite(trace, [e for e in dump(trace) if e["kind"] == "cuda_api"])
    # cuda_api's 6 launches per round (3 rounds in all) and cuda_driver's 2 per round (2).
    if not GPU:
        eq(sum(n for r, n in args.items() if r[3] is not None and r[4] is not None),
           6 * 3 + 2 * 2, "launches with a kernel name and a grid")


NCCL_COLS = ("comm", "rank", "nranks", "count", "bytes", "datatype", "op", "root", "peer",
             "stream")


def check_nccl_sqlite(trace, evs):
    db = sqlite3.connect(export(trace, "sqlite", os.path.join(tmpdir(), "t.sqlite")))
    check_sum(query(db, docs_query("nccl_sum")), stats(trace, "nccl_sum")["nccl_sum"],
              ("count", "total_ns", "med_ns", "min_ns", "max_ns", "bytes", "errors"),
              "nccl_sum from SQL")

    def hexint(k, v):
        return int(v, 16) if v is not None and k in ("comm", "stream") else v

    want = collections.Counter(
        (e["name"], e["pid"], e["tid"], e["ts"], e["dur"], e["args"]["ret"],
         e["args"].get("depth", 0), *(hexint(k, e["args"].get(k)) for k in NCCL_COLS),
         e["args"].get("group_depth", 0), e["args"].get("group_ns"),
         e["args"].get("unique_id_hash")) for e in evs)
    got = collections.Counter(tuple(r) for r in db.execute(
        'SELECT s.value, globalTid >> 24, globalTid & 0xffffff, start, "end" - start,'
        f" returnValue, nestingLevel, {', '.join(NCCL_COLS)}, groupDepth, groupNs, uniqueIdHash"
        " FROM BPFSIGHT_NCCL JOIN StringIds AS s ON s.id = nameId"))
    eq(got, want, "BPFSIGHT_NCCL vs dump")
    db.close()


def test_sqlite_nccl_reproduces_stats():
    trace = nccl_trace()
    evs = [e for e in dump(trace) if e["kind"] == "nccl_api"]
    eq(len(evs), 2 * 56, "nccl_calls' 56 calls per repetition")
    check_nccl_sqlite(trace, evs)


# ---- Chrome JSON, Kineto's conventions ----

def chrome_cat(e):
    if e["kind"] == "cuda_api":
        return "cuda_driver" if is_driver(e["name"]) else "cuda_runtime"
    return {"nccl_api": "nccl", "syscall": "os_runtime", "offcpu": "sched",
            "loss": "loss"}.get(e["kind"], "process")


def chrome_args(e):
    """dump's args, plus Kineto's grid and block on launches."""
    a = dict(e["args"])
    if all(k in a for k in DIMS):
        a["grid"] = [a[k] for k in DIMS[:3]]
        a["block"] = [a[k] for k in DIMS[3:]]
    return a


def ns(us):
    v = decimal.Decimal(us) * 1000
    check(v == v.to_integral_value(), f"{us} us is not a whole number of ns")
    return int(v)


def load_chrome(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        text = f.read()
    return text, json.loads(text, parse_float=decimal.Decimal)


def launch_correlations(doc):
    """A call that can put work on the GPU carries Kineto's correlation and starts an ac2g flow
    with it (gpu_export.c); check that, and drop it so the args compare with dump's.
    Returns the names of the calls that had one."""
    starts = {(f["pid"], f["tid"], f["ts"], f["id"]) for f in doc["traceEvents"]
              if f["ph"] == "s" and f["cat"] == "ac2g"}
    names = set()
    for e in doc["traceEvents"]:
        if e.get("cat") in ("cuda_runtime", "cuda_driver") and "correlation" in e["args"]:
            c = e["args"].pop("correlation")
            check(0 < c < 2 ** 53, f"correlation {c} is a JSON-exact integer")
            check((e["pid"], e["tid"], e["ts"], c) in starts, f"ac2g flow start of {e}")
            names.add(e["name"])
    eq(len(starts), sum(1 for f in doc["traceEvents"] if f["ph"] == "s"), "distinct flows")
    return names


def check_chrome(trace, path):
    """Every dump event once, with its Kineto category and args; returns (text, doc)."""
    text, doc = load_chrome(path)
    evs = dump(trace)
    launching = launch_correlations(doc)
    for name in ("cudaLaunchKernel", "cudaMemcpy", "cudaMemsetAsync", "cudaGraphLaunch",
                 "cuLaunchKernel", "cuMemcpyHtoD_v2"):
        check(name in launching or not any(e["name"] == name for e in evs),
              f"{name} starts a launch flow")
    for name in ("cudaMalloc", "cudaFree", "cudaDeviceSynchronize", "cuMemAlloc_v2"):
        check(name not in launching, f"{name} does not start a launch flow")
    got = collections.Counter(
        (e["cat"], e["name"], e["pid"], e["tid"], ns(e["ts"]), ns(e.get("dur", 0)),
         json.dumps(e["args"], sort_keys=True))
        for e in doc["traceEvents"] if e["ph"] in ("X", "i"))
    want = collections.Counter(
        (chrome_cat(e), e["name"], e["pid"], e["tid"], e["ts"], e["dur"],
         json.dumps(chrome_args(e), sort_keys=True)) for e in evs)
    eq(sum(got.values()), sum(want.values()), "chrome events vs dump events")
    eq(got - want, collections.Counter(), "chrome events not in dump")
    eq(want - got, collections.Counter(), "dump events missing from chrome")
    for e in doc["traceEvents"]:
        if e.get("cat") in ("cuda_runtime", "cuda_driver", "nccl"):
            eq(e["ph"], "X", f"API calls are complete events: {e}")
    te = text.index('"traceEvents"')
    for k in ("schemaVersion", "deviceProperties", "traceName", "displayTimeUnit",
              "baseTimeNanoseconds"):
        check(0 <= text.find(f'"{k}"') < te, f"metadata key {k} before traceEvents")
    return text, doc


def test_chrome_cuda_kineto_categories_and_args():
    trace = cuda_trace()
    d = tmpdir()
    plain = export(trace, "chrome", os.path.join(d, "t.json"))
    gz = export(trace, "chrome", os.path.join(d, "t.json.gz"))
    text, doc = check_chrome(trace, plain)
    cats = collections.Counter(e["cat"] for e in doc["traceEvents"] if e["ph"] == "X")
    evs = [e for e in dump(trace) if e["kind"] == "cuda_api"]
    driver = sum(is_driver(e["name"]) for e in evs)
    eq((cats["cuda_driver"], cats["cuda_runtime"]), (driver, len(evs) - driver),
       "cuda_driver and cuda_runtime events")
    check(GPU or driver == DRIVER_CALLS, f"{driver} driver calls")
    launches = [e for e in doc["traceEvents"] if e.get("name") == "cudaLaunchKernel"]
    check(launches and all(e["args"]["grid"] == [e["args"][k] for k in DIMS[:3]] and
                           e["args"]["block"] == [e["args"][k] for k in DIMS[3:]]
                           for e in launches), "Kineto's grid and block on launches")
    check("distributedInfo" not in doc, "no distributedInfo without nccl")
    eq(text.count(" " * 64), 0, "no room kept for distributedInfo without nccl")
    # The hand-made gzip member: gzip checks its CRC and length, and it holds the same JSON.
    eq(subprocess.run(["gzip", "-t", gz]).returncode, 0, "gzip -t")
    gtext, _ = load_chrome(gz)
    check(gtext.replace(json.dumps(gz), json.dumps(plain), 1) == text,
          ".json.gz holds the .json (but for traceName)")


def test_chrome_nccl_events_and_no_rank():
    trace = nccl_trace()
    d = tmpdir()
    for name in ("t.json", "t.json.gz"):
        text, doc = check_chrome(trace, export(trace, "chrome", os.path.join(d, name)))
        eq(sum(e["cat"] == "nccl" for e in doc["traceEvents"] if e["ph"] == "X"), 2 * 56,
           f"{name}: nccl events")
        # Every init failed (no GPU): no process has a rank, so no distributedInfo, and the
        # room the header kept for it stays blank.
        check("distributedInfo" not in doc, f"{name}: no distributedInfo: {text[:300]}")
        check(" " * 128 in text[:text.index('"traceEvents"')], f"{name}: blanks kept")
        if name.endswith(".gz"):
            eq(subprocess.run(["gzip", "-t", os.path.join(d, name)]).returncode, 0, "gzip -t")


# ---- Perfetto ----

def check_perfetto(trace, path, nested_by_depth):
    """Every API call is one slice on its thread's own track, nested as trace processor
    pairs BEGIN and END (by time, per track); the rest of the trace as dump says."""
    m = Model(decode(path))
    evs = dump(trace)
    api = [e for e in evs if e["kind"] in API_KINDS]
    want = collections.Counter(
        (e["kind"], e["name"], e["pid"], e["tid"], e["ts"], e["dur"],
         tuple(sorted(e["args"].items()))) for e in api)
    per_track = collections.defaultdict(list)
    for idx, typ, ts, uuid, te in m.events:
        if typ in ("TYPE_SLICE_BEGIN", "TYPE_SLICE_END"):
            per_track[uuid].append((ts, 0 if typ == "TYPE_SLICE_END" else 1, idx, te))
    got = collections.Counter()
    depth_ok = 0
    for uuid, seq in per_track.items():
        stack = []
        for ts, is_begin, idx, te in sorted(seq):
            if is_begin:
                stack.append((ts, te))
                continue
            check(stack, f"track {uuid}: END at {ts} without a BEGIN")
            b, bte = stack.pop()
            cat = m.cats[one(bte, "category_iids")]
            if cat not in API_KINDS:
                continue
            check("thread" in m.tracks[uuid][-1], f"{cat} slice on a thread's own track")
            pid, tid = m.thread_of(uuid)
            args = m.args(bte)
            got[(cat, m.names[one(bte, "name_iid")], pid, tid, b, ts - b,
                 tuple(sorted(args.items())))] += 1
            if nested_by_depth:
                eq(len(stack), args.get("depth", 0), f"{cat} slice at {b}: nesting depth")
                depth_ok += 1
        eq(stack, [], f"track {uuid}: every slice ends")
    eq(got - want, collections.Counter(), "API slices not in dump")
    eq(want - got, collections.Counter(), "dump API calls missing from the slices")
    if nested_by_depth:
        eq(depth_ok, len(api), "every call checked for nesting")
    eq(len(m.names), len(set(m.names.values())), "each name interned once")
    return m, api


def test_perfetto_cuda_slices_nest():
    need_protoc()
    trace = cuda_trace()
    pf = export(trace, "perfetto", os.path.join(tmpdir(), "t.pftrace"))
    m, api = check_perfetto(trace, pf, nested_by_depth=True)
    check(GPU or sum(e["args"].get("depth") == 1 for e in api) == NESTED_CUDA,
          "nested calls checked")


def test_perfetto_nccl_slices_nest():
    need_protoc()
    trace = nccl_trace()
    pf = export(trace, "perfetto", os.path.join(tmpdir(), "t.pftrace.gz"))
    with gzip.open(pf, "rb") as f, open(pf[:-3], "wb") as g:
        g.write(f.read())
    m, api = check_perfetto(trace, pf[:-3], nested_by_depth=True)
    eq([e["name"] for e in api if e["args"].get("depth") == 1], ["ncclBroadcast"] * 2,
       "ncclBcast's inner ncclBroadcast nests under it")


# ---- A real communicator (GPU machines with PyTorch) ----

TORCH_NCCL = r"""
import sys
import torch
import torch.distributed as dist

dist.init_process_group("nccl", init_method="file://" + sys.argv[1], rank=0, world_size=1)
x = torch.ones(1024, device="cuda")
for _ in range(3):
    dist.all_reduce(x)
torch.cuda.synchronize()
print("sum", int(x.sum().item()))
dist.destroy_process_group()
"""


def test_gpu_torch_nccl_distributed_info():
    need_root()
    if not GPU:
        raise Skip("no GPU: a real NCCL communicator needs one")
    if run(["python3", "-c", "import torch; assert torch.cuda.is_available()"]).returncode:
        raise Skip("no PyTorch with a visible CUDA device")
    d = tmpdir()
    script = os.path.join(d, "allreduce.py")
    with open(script, "w") as f:
        f.write(TORCH_NCCL)
    keep = os.environ.get("BPFSIGHT_KEEP_TRACE")  # a path to keep the recording at
    p, trace = record(["python3", script, os.path.join(d, "store")], "-t", "cuda,nccl",
                      out=keep or os.path.join(d, "t.bst"), timeout=300)
    eq(p.returncode, 0, f"record exit ({p.stderr.strip()[-800:]})")
    eq(p.stdout.split()[-1], "1024", "the all-reduce ran")
    evs = dump(trace)
    ar = [e for e in evs if e["name"] == "ncclAllReduce" and e["args"].get("count") == 1024]
    eq(len(ar), 3, "torch's all_reduce calls")
    check(all(e["args"].get("rank") == 0 and e["args"].get("nranks") == 1 for e in ar),
          f"rank joined from the init: {ar[0]['args']}")
    for name in ("t.json", "t.json.gz"):
        text, doc = check_chrome(trace, export(trace, "chrome", os.path.join(d, name)))
        eq(doc.get("distributedInfo"), {"backend": "nccl", "rank": 0, "world_size": 1},
           f"{name}: distributedInfo")
        at = text.find('"distributedInfo"')
        check(0 < at < text.index('"traceEvents"') and '"rank": 0' in text[at:at + 100],
              f"{name}: Kineto's text before traceEvents")
    check_nccl_sqlite(trace, [e for e in evs if e["kind"] == "nccl_api"])
    check_cuda_sqlite(trace, [e for e in evs if e["kind"] == "cuda_api"])
    if shutil.which("protoc"):
        check_perfetto(trace, export(trace, "perfetto", os.path.join(d, "t.pftrace")),
                       nested_by_depth=False)


def test_docs_queries_run():
    """Every SQL example of docs/EXPORT.md runs on the exports of both recordings."""
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
    with open(os.path.join(root, "docs", "EXPORT.md")) as f:
        blocks = re.findall(r"```sql\n(.*?)```", f.read(), re.S)
    check(len(blocks) >= 12, f"{len(blocks)} SQL examples")
    traces = [cuda_trace()]
    if not GPU:
        traces.append(nccl_trace())
    named = [("cuda_api_sum", "cuda_launch_sum", "cuda_memcpy_sum", "cuda_err_sum"),
             ("nccl_sum",)]
    for trace, names in zip(traces, named):
        db = sqlite3.connect(export(trace, "sqlite", os.path.join(tmpdir(), "t.sqlite")))
        for block in blocks:
            for sql in (s for s in block.split(";") if s.strip()):
                try:
                    db.execute(sql).fetchall()
                except sqlite3.Error as e:
                    raise AssertionError(f"docs query fails ({e}): {sql.strip()[:200]}")
        # The queries that say they give a report's numbers give them, row for row.
        db.row_factory = sqlite3.Row
        st = stats(trace, ",".join(names))
        for name in names:
            got = [dict(r) for r in db.execute(docs_query(name))]
            # cuda_memcpy_sum's query gives the copy rows, not memset's
            want = [r for r in st[name] if name != "cuda_memcpy_sum" or r["name"] != "memset"]
            check(want, f"{name}: the recording has rows")
            eq(len(got), len(want), f"{name}: rows")
            cols = [c for c in got[0] if c in want[0] and c != "avg_ns"]
            check({"name", "count"} <= set(cols), f"{name}: columns {cols}")
            eq(sorted(tuple(r[c] for c in cols) for r in got),
               sorted(tuple(r[c] for c in cols) for r in want), f"{name} ({cols})")
        db.close()
