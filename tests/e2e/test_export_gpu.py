"""The gpu and nvtx families on the reading side, end to end: dump per the contract, stats,
info, and the three exports of one synthetic trace (tests/e2e/synth.py writes the records the
cupti-shim and the recorder would, with the real trace writer).

- dump: every GPU and NVTX event as docs/GPU.md and docs/NVTX.md specify;
- Perfetto: protoc decodes it; its GPU and NVTX slices are dump's one for one, on the tracks
  the docs describe (GPU N > Stream S in the process, NVTX on threads and processes), every
  track's slices nest, flows go from each launching call to its GPU work, busy counters;
- Chrome: Kineto's categories, pid = device / tid = stream, correlation on both sides of a
  launch, ac2g flows, NVTX as user_annotation;
- SQLite: the documented queries reproduce cuda_gpu_kern_sum, cuda_gpu_mem_time_sum,
  cuda_gpu_mem_size_sum and nvtx_sum exactly, RUNTIME joins KERNEL on CUPTI's correlation id;
- bad input: a truncated, a corrupted and a non-trace file give clear errors.
"""
import atexit
import collections
import decimal
import json
import math
import os
import random
import shutil
import sqlite3
import tempfile

import helpers
from helpers import BPFSIGHT, check, docs_query, dump, eq, info, run, stats, tmpdir
import synth
from test_export_perfetto import decode, need_protoc, one

# For tests/run_tests.py: about how long these tests take on CI's machine (its order).
SECONDS = 1

# A synthetic trace read and exported: nothing traced, nothing traces (tests/run_tests.py)
BESIDE = "reads files only"

PID, T1, T2 = 4242, 4243, 4244
START = 10 ** 9
GPU_KINDS = ("gpu_kernel", "gpu_memcpy", "gpu_memset")
KERNELS = ("void gemm<float>(float const*, int)", "relu_kernel(float*, int)", "softmax")

_trace = {}


def need_tools():
    if not os.path.exists(synth.BST_WRITE):
        raise helpers.Skip(f"{synth.BST_WRITE} missing: run make test-build")


def build_trace():
    """Launches of every link kind on two threads, two devices and three streams, a CUDA
    graph running nodes concurrently on one stream, nested and overlapping NVTX ranges."""
    rnd = random.Random(7)
    t = synth.Trace(families="proc,cuda,gpu,nvtx", start=START, end=START + 10 ** 8)
    t.process(PID, "train")
    t.thread(PID, T1, "train")
    t.thread(PID, T2, "python3")
    t.name(PID, T1, START + 10, synth.NAME_THREAD, T2, "data loader")
    t.name(PID, T1, START + 11, synth.NAME_CATEGORY, 3, "compute", domain="io")
    t.status(PID, T1, START + 20, 0x0f, synth.EV_ATTACH, seq=1, cupti_version=130000)
    t.status(PID, T1, START + 30, 0x0f, synth.EV_CUPTI_ERROR, cupti_result=999,
             detail="cuptiActivityEnableLatencyTimestamps", seq=1)
    launch, memcpy, memset = (synth.cuda_fn(n) for n in
                              ("cudaLaunchKernel", "cudaMemcpyAsync", "cudaMemsetAsync"))
    graph = synth.cuda_fn("cudaGraphLaunch")
    corr = 0
    step_start = None
    for i in range(60):
        tid = T1 if i % 3 else T2
        ts = START + 100000 + i * 20000
        gpu_ts = ts + 5000 + rnd.randrange(0, 3000)
        dur = rnd.randrange(500, 4000)
        dev, stream = (0, 7) if i % 4 else (1, 13)
        corr += 1
        call_dur = rnd.randrange(300, 2000)
        mode = i % 7
        if i % 10 == 1:
            step_start = ts - 50
        if mode in (0, 1, 2):  # a kernel linked to its cuda event (and CUPTI's record of it)
            t.cuda_call(PID, tid, ts, call_dur, launch)
            t.api(PID, tid, ts + 50, call_dur - 100, "cudaLaunchKernel", corr, cbid=211,
                  call_ts=ts, flags=synth.GPU_CALL_CUDA)
            t.kernel(PID, tid, gpu_ts, dur, KERNELS[i % 3], call_ts=ts,
                     flags=synth.GPU_CALL_CUDA, correlation=corr, device=dev, stream=stream,
                     grid=(i + 1, 2, 1), block=(128, 1, 1), shmem_dynamic=i * 16,
                     shmem_static=64, registers=32 + i % 8)
        elif mode == 3:  # only CUPTI's record of the call (-t gpu without cuda)
            t.api(PID, tid, ts, call_dur, "cuLaunchKernel", corr, cbid=307, domain=1)
            t.kernel(PID, tid, gpu_ts, dur, KERNELS[i % 3], call_ts=ts,
                     flags=synth.GPU_CALL_API, correlation=corr, device=dev, stream=stream)
        elif mode == 4:
            t.cuda_call(PID, tid, ts, call_dur, memcpy)
            t.memcpy(PID, tid, gpu_ts, dur, 1 << (10 + i % 8), 1 + i % 2, src_kind=2,
                     dst_kind=3, is_async=1, call_ts=ts, flags=synth.GPU_CALL_CUDA,
                     correlation=corr, device=dev, stream=14)
        elif mode == 5:
            t.api(PID, tid, ts, call_dur, "cudaMemsetAsync", corr, cbid=41)
            t.memset(PID, tid, gpu_ts, dur, 4096 * (1 + i % 3), value=i, call_ts=ts,
                     flags=synth.GPU_CALL_API, correlation=corr, device=dev, stream=14)
        else:  # a graph launch: three nodes, two of them concurrent on one stream
            t.cuda_call(PID, tid, ts, call_dur, graph)
            for n, (off, d) in enumerate(((0, 3000), (500, 1000), (3500, 800))):
                t.kernel(PID, tid, gpu_ts + off, d, KERNELS[n], call_ts=ts,
                         flags=synth.GPU_CALL_CUDA | synth.GPU_GRAPH, correlation=corr,
                         device=dev, stream=stream, graph_id=5, graph_node_id=100 + n)
        if tid == T1 and i % 10 == 9:
            t.range(PID, T1, ts - 200, 900, "fwd", depth=1, category=3, color=0xff112233)
            t.mark(PID, T1, ts + 100, "checkpoint", payload=("u64", i))
            t.range(PID, T1, step_start, ts + 3000 - step_start, "step", depth=0,
                    payload=("f64", i / 4))
    # A kernel nothing launched that we know of; a memcpy peer-to-peer between devices.
    t.kernel(PID, 0, START + 2000000, 700, "orphan", device=0, stream=7)
    t.memcpy(PID, T1, START + 2100000, 300, 1 << 20, 10, src_kind=3, dst_kind=3, device=0,
             stream=14, src_device=0, dst_device=1)
    # Start/end ranges across threads, two overlapping, in a domain; one left open.
    t.range(PID, T1, START + 150000, 400000, "prefetch", domain="io", pushpop=False,
            end_tid=T2, range_id=1, category=3)
    t.range(PID, T2, START + 300000, 500000, "prefetch", domain="io", pushpop=False,
            end_tid=T1, range_id=2, payload=("i32", -4))
    t.range(PID, T1, START + 1000000, 200000, "epoch", pushpop=False, end_tid=T1, range_id=3,
            registered=True)
    t.range(PID, T2, START + 1900000, 8000000, "hang", is_open=True, depth=0)
    t.status(PID, T1, START + 3000000, 0x0f, synth.EV_DROPPED, dropped=3, seq=5)
    t.loss(synth.LOSS_SHIM, 3, START + 3000001)
    t.status(PID, T1, START + 3000010, 0x03, synth.EV_EXIT, seq=6)
    return t


def gpu_trace():
    need_tools()
    if "path" not in _trace:
        d = tempfile.mkdtemp(prefix="bpfsight-export-gpu-")  # shared by this file's tests
        atexit.register(shutil.rmtree, d, True)
        _trace["path"] = build_trace().write(d)
    return _trace["path"]


def export(trace, fmt, name):
    out = os.path.join(tmpdir(), name)
    p = run([BPFSIGHT, "export", trace, "--format", fmt, "-o", out], timeout=120)
    eq(p.returncode, 0, f"export {fmt} ({p.stderr.strip()})")
    return out


def events(kinds):
    return [e for e in dump(gpu_trace()) if e["kind"] in kinds]


# ---- dump ----

def test_dump_gpu_nvtx_contract():
    evs = dump(gpu_trace())
    by = collections.defaultdict(list)
    for e in evs:
        by[e["kind"]].append(e)
    eq({k: len(v) for k, v in by.items() if k in GPU_KINDS + ("gpu_api", "shim_status")},
       {"gpu_kernel": 61, "gpu_memcpy": 9, "gpu_memset": 8, "gpu_api": 44, "shim_status": 4},
       "GPU events: 60 launches, i % 7 picks the kind (27 + 9 + 3 * 8 kernels, an orphan)")
    eq(len(by["nvtx_range"]), 12, "ranges: 4 steps, 4 fwd, 2 prefetch, epoch, hang")
    eq(len(by["nvtx_mark"]), 4, "marks")
    eq(len(by["nvtx_name"]), 2, "names")
    k = by["gpu_kernel"][0]
    eq(k, {"ts": k["ts"], "dur": k["dur"], "pid": PID, "tid": T2, "kind": "gpu_kernel",
           "name": KERNELS[0],
           "args": {"device": 1, "context": 1, "stream": 13, "correlation": 1, "grid": [1, 2, 1],
                    "block": [128, 1, 1], "shmem_dynamic": 0, "shmem_static": 64,
                    "registers": 32, "call_ts": START + 100000, "link": "cuda"}},
       "a kernel as the contract says")
    g = [e for e in by["gpu_kernel"] if "graph_id" in e["args"]]
    eq(len(g), 24, "graph nodes")
    eq((g[0]["args"]["graph_id"], g[0]["args"]["graph_node_id"], g[0]["args"]["link"]),
       (5, 100, "cuda"), "graph ids")
    api_k = [e for e in by["gpu_kernel"] if e["args"]["link"] == "api"]
    eq(len(api_k), 9, "kernels linked through CUPTI's record")
    orphan = [e for e in by["gpu_kernel"] if e["name"] == "orphan"][0]
    eq((orphan["tid"], orphan["args"]["link"], "call_ts" in orphan["args"]), (0, "none", False),
       "an unlinked kernel")
    m = by["gpu_memcpy"][0]
    eq((m["name"], m["args"]["copy_kind"], m["args"]["src_kind"], m["args"]["dst_kind"],
        m["args"]["async"]), ("[CUDA memcpy Host-to-Device]", "HtoD", "pinned", "device", True),
       "a copy")
    p2p = by["gpu_memcpy"][-1]
    eq((p2p["name"], p2p["args"]["src_device"], p2p["args"]["dst_device"]),
       ("[CUDA memcpy Peer-to-Peer]", 0, 1), "a peer copy")
    s = by["gpu_memset"][0]
    eq((s["name"], s["args"]["mem_kind"], s["args"]["link"]), ("[CUDA memset]", "device", "api"),
       "a memset")
    a = by["gpu_api"][0]
    eq(a["args"], {"correlation": 1, "cbid": 211, "domain": "runtime", "ret": 0,
                   "call_ts": START + 100000}, "an API record linked to its cuda event")
    eq(by["shim_status"][1]["name"], "cupti_error", "status event")
    eq(by["shim_status"][1]["args"],
       {"state": ["cuda_injected", "nvtx_injected", "gpu_on", "nvtx_on"], "cupti_result": 999,
        "detail": "cuptiActivityEnableLatencyTimestamps", "dropped": 0, "seq": 1,
        "cupti_version": 0}, "status args")
    step = [e for e in by["nvtx_range"] if e["name"] == "step"][0]
    eq(step["args"], {"domain": "", "style": "PushPop", "depth": 0, "end_tid": T1,
                      "category": 0, "payload": 4.75}, "a push/pop range")
    fwd = [e for e in by["nvtx_range"] if e["name"] == "fwd"][0]
    eq(fwd["args"]["color"], "#FF112233", "color")
    pf = [e for e in by["nvtx_range"] if e["name"] == "prefetch"]
    eq(pf[1]["args"], {"domain": "io", "style": "StartEnd", "end_tid": T1, "range_id": 2,
                       "category": 0, "payload": -4}, "a start/end range across threads")
    eq([e for e in by["nvtx_range"] if e["name"] == "hang"][0]["args"]["open"], True, "open")
    eq([e for e in by["nvtx_range"] if e["name"] == "epoch"][0]["args"]["registered"], True,
       "registered")
    eq(by["nvtx_mark"][0]["args"], {"domain": "", "category": 0, "payload": 19}, "a mark")
    eq([n["args"] for n in by["nvtx_name"]],
       [{"what": "thread", "key": T2, "domain": ""},
        {"what": "category", "key": 3, "domain": "io"}], "names")


def test_info_shows_the_shim():
    i = info(gpu_trace())
    eq(len(i["shim"]), 1, "one process with a shim")
    s = i["shim"][0]
    eq({k: s[k] for k in ("pid", "process", "state", "cupti_version", "attaches",
                          "cupti_errors", "dropped", "exited", "kernels", "memcpys",
                          "memsets", "gpu_api", "nvtx_ranges", "open_ranges", "nvtx_marks")},
       {"pid": PID, "process": "train", "state": "cuda_injected,nvtx_injected",
        "cupti_version": 130000, "attaches": 1, "cupti_errors": 1, "dropped": 3, "exited": 1,
        "kernels": 61, "memcpys": 9, "memsets": 8, "gpu_api": 44, "nvtx_ranges": 11,
        "open_ranges": 1, "nvtx_marks": 4}, "shim summary")
    eq(s["last_error"], "cuptiActivityEnableLatencyTimestamps: CUPTI_ERROR_UNKNOWN (999)",
       "the CUPTI error, named")
    eq(i["lost"], {"shim_dropped": 3}, "the shim's drops are a loss cause")
    p = run([BPFSIGHT, "info", gpu_trace()], check=True)
    check("cupti-shim:" in p.stdout and "CUPTI_ERROR_UNKNOWN" in p.stdout, "text info")


# ---- Perfetto ----

def annotation_value(a):
    for field in ("uint_value", "int_value", "string_value"):
        if field in a:
            return one(a, field)
    if "bool_value" in a:
        return one(a, "bool_value") == "true"
    if "double_value" in a:
        return float(one(a, "double_value"))
    if "pointer_value" in a:
        return hex(one(a, "pointer_value"))  # dump writes handles as "0x..." too
    if "array_values" in a:
        return [annotation_value(v) for v in a["array_values"]]
    raise AssertionError(f"annotation without a value: {a}")


def freeze(v):
    return json.dumps(v, sort_keys=True)


class Pf:
    """Tracks, names and slices (BEGIN/END paired per track by time) of a decoded export."""

    def __init__(self, path):
        pkts = decode(path)
        self.tracks, names, keys = {}, {}, {}
        begins, ends = [], []
        self.instants, self.counters = [], collections.defaultdict(list)
        for pk in pkts:
            for idata in pk.get("interned_data", []):
                for e in idata.get("event_names", []):
                    names[one(e, "iid")] = one(e, "name")
                for e in idata.get("debug_annotation_names", []):
                    keys[one(e, "iid")] = one(e, "name")
            for td in pk.get("track_descriptor", []):
                self.tracks[one(td, "uuid")] = td
            for te in pk.get("track_event", []):
                ts, uuid, typ = one(pk, "timestamp"), one(te, "track_uuid"), one(te, "type")
                check(uuid in self.tracks, f"track {uuid} described before use")
                if typ == "TYPE_COUNTER":
                    self.counters[uuid].append((ts, float(one(te, "double_counter_value",
                                                              one(te, "counter_value")))))
                    continue
                ev = {"ts": ts, "track": uuid, "name": names.get(one(te, "name_iid")),
                      "args": {keys[one(a, "name_iid")]: annotation_value(a)
                               for a in te.get("debug_annotations", [])},
                      "flows": [int(x) for x in te.get("flow_ids", [])],
                      "ends": [int(x) for x in te.get("terminating_flow_ids", [])]}
                {"TYPE_SLICE_BEGIN": begins, "TYPE_SLICE_END": ends,
                 "TYPE_INSTANT": self.instants}[typ].append(ev)
        # Trace processor's pairing: per track, by time, an END closes the innermost BEGIN.
        self.slices = []
        marks = [(e["ts"], 1, i, e) for i, e in enumerate(ends)] + \
            [(b["ts"], 0, i, b) for i, b in enumerate(begins)]
        stacks = collections.defaultdict(list)
        # At one time an END comes first (back-to-back slices); BEGINs keep file order.
        for ts, is_end, _, e in sorted(marks, key=lambda x: (x[0], x[1] == 0)):
            if not is_end:
                stacks[e["track"]].append(e)
            else:
                check(stacks[e["track"]], f"END without BEGIN on track {e['track']} at {ts}")
                b = stacks[e["track"]].pop()
                self.slices.append(dict(b, dur=ts - b["ts"]))
        check(not any(stacks.values()), "every BEGIN ended")

    def name(self, uuid):
        return one(self.tracks[uuid], "name")

    def parent(self, uuid):
        return one(self.tracks[uuid], "parent_uuid")

    def thread(self, uuid):
        """(pid, tid) of a thread track or its child; (pid, None) for a process's track."""
        while uuid:
            td = self.tracks[uuid]
            if "thread" in td:
                th = td["thread"][0]
                return one(th, "pid"), one(th, "tid")
            if "process" in td:
                return one(td["process"][0], "pid"), None
            uuid = one(td, "parent_uuid")
        return None, None


def check_nesting(slices):
    """Slices of one track nest: each starts and ends inside the one it starts in."""
    by = collections.defaultdict(list)
    for s in slices:
        by[s["track"]].append((s["ts"], -(s["ts"] + s["dur"]), s["ts"] + s["dur"]))
    for track, ivs in by.items():
        stack = []
        for start, _, end in sorted(ivs):
            while stack and stack[-1] <= start:
                stack.pop()
            check(not stack or end <= stack[-1], f"track {track}: [{start}, {end}) crosses "
                                                 f"a slice ending at {stack[-1] if stack else 0}")
            stack.append(end)


def test_perfetto_gpu_nvtx_tracks_flows_match_dump():
    need_protoc()
    trace = gpu_trace()
    pf = Pf(export(trace, "perfetto", "t.pftrace"))
    evs = dump(trace)
    check_nesting(pf.slices)
    # One for one with dump, GPU and NVTX slices included (args with lists, bools, doubles).
    got = collections.Counter((s["name"], s["ts"], s["dur"], freeze(s["args"]))
                              for s in pf.slices)
    got.update((i["name"], i["ts"], 0, freeze(i["args"])) for i in pf.instants)
    want = collections.Counter((e["name"], e["ts"], e["dur"], freeze(e["args"])) for e in evs)
    eq(got - want, collections.Counter(), "Perfetto events not in dump")
    eq(want - got, collections.Counter(), "dump events missing from Perfetto")
    by_key = {(s["name"], s["ts"], freeze(s["args"])): s for s in pf.slices + pf.instants}

    def placed(e):
        return by_key[(e["name"], e["ts"], freeze(e["args"]))]

    starts = {}
    for s in pf.slices + pf.instants:
        for f in s["flows"]:
            check(f not in starts, f"flow {f} starts once")
            starts[f] = s
    lanes = collections.Counter()
    for e in evs:
        s = placed(e)
        if e["kind"] in GPU_KINDS:
            a = e["args"]
            stream, gpu = s["track"], pf.parent(s["track"])
            eq(pf.name(stream), f"Stream {a['stream']}", "a stream track")
            eq(pf.name(gpu), f"GPU {a['device']}", "under its device's track")
            eq(pf.thread(gpu), (PID, None), "in its process")
            lanes[(a["device"], a["stream"], stream)] += 1
            if a["link"] == "none":
                eq(s["ends"], [], "no flow into unlinked work")
                continue
            fid = synth.flow_id(PID, e["tid"], a["call_ts"])
            eq(s["ends"], [fid], "the flow of its launch ends here")
            launch = starts[fid]
            eq((launch["ts"], pf.thread(launch["track"])), (a["call_ts"], (PID, e["tid"])),
               "from the launching call on its thread")
            want_kind = "cuda" if a["link"] == "cuda" else "api"
            check(("correlation" in launch["args"]) == (want_kind == "api"),
                  f"a {want_kind} link starts at a {'gpu_api' if want_kind == 'api' else 'cuda_api'}"
                  " slice")
        elif e["kind"] == "nvtx_range" and e["args"]["style"] == "PushPop":
            eq(pf.thread(s["track"]), (PID, e["tid"]), "a push/pop range on its thread")
            check("thread" not in pf.tracks[s["track"]], "on a child track of the thread")
            eq(pf.name(s["track"]), "NVTX", "named NVTX")
        elif e["kind"] == "nvtx_range":
            eq(pf.thread(s["track"]), (PID, None), "a start/end range on its process")
            eq(pf.name(s["track"]), "NVTX: io" if e["args"]["domain"] else "NVTX",
               "named after its domain")
        elif e["kind"] == "nvtx_mark":
            eq(pf.name(s["track"]), "NVTX", "a mark on its thread's NVTX track")
    # The graph's concurrent nodes took a second lane of their stream (same name).
    stream7 = {t for (d, st, t) in lanes if (d, st) == (0, 7)}
    eq(len(stream7), 2, "device 0 stream 7: two lanes for the graph's overlapping nodes")
    prefetch = {placed(e)["track"] for e in evs if e["name"] == "prefetch"}
    eq(len(prefetch), 2, "overlapping start/end ranges on two lanes")
    eq(pf.name(pf.parent(placed([e for e in evs if e["name"] == "orphan"][0])["track"])),
       "GPU 0", "even an unlinked kernel has its device")
    # The thread named with nvtxNameOsThread.
    names = {(one(td["thread"][0], "pid"), one(td["thread"][0], "tid")):
             one(td["thread"][0], "thread_name") for td in pf.tracks.values() if "thread" in td}
    eq(names.get((PID, T2)), "data loader", "nvtxNameOsThread names the thread track")
    check_busy(pf, evs)


def check_busy(pf, evs):
    """GPU busy: per device, the fraction of each 10 ms bin with an operation, capped at 1."""
    bin_ns = 10 ** 7
    want = {}
    for dev in (0, 1):
        bins = collections.Counter()
        for e in evs:
            if e["kind"] in GPU_KINDS and e["args"]["device"] == dev:
                s, end = e["ts"], e["ts"] + e["dur"]
                for b in range((s - START) // bin_ns, (end - 1 - START) // bin_ns + 1):
                    lo = START + b * bin_ns
                    bins[b] += min(end, lo + bin_ns) - max(s, lo)
        n = max(bins) + 1
        series, last = [], None
        for b in range(n):
            v = min(1.0, bins[b] / bin_ns)
            if v != last:
                series.append((START + b * bin_ns, v))
            last = v
        series.append((START + n * bin_ns, 0.0))
        want[f"GPU {dev}"] = series
    got = {pf.name(pf.parent(u)): v for u, v in pf.counters.items()
           if pf.name(u) == "GPU busy"}
    eq(set(got), set(want), "a busy counter per device")
    for k in want:
        eq(len(got[k]), len(want[k]), f"{k} busy values")
        for (ts, v), (wts, wv) in zip(got[k], want[k]):
            eq(ts, wts, f"{k} busy bin")
            check(abs(v - wv) < 1e-12, f"{k} busy {v} != {wv}")


# ---- Chrome ----

MEM_KINETO = {"unknown": "Unknown", "pageable": "Pageable", "pinned": "Pinned",
              "device": "Device", "array": "Array", "managed": "Managed",
              "device_static": "Device Static", "managed_static": "Managed Static"}


def kineto_name(e):
    """Kineto's name of a GPU operation in dump (libkineto's memcpyName, Memset's name)."""
    a = e["args"]
    if e["kind"] == "gpu_memcpy":
        return (f"Memcpy {a['copy_kind']} ({MEM_KINETO[a['src_kind']]} -> "
                f"{MEM_KINETO[a['dst_kind']]})")
    if e["kind"] == "gpu_memset":
        return f"Memset ({MEM_KINETO[a['mem_kind']]})"
    return e["name"]


def test_chrome_kineto_gpu_conventions():
    trace = gpu_trace()
    with open(export(trace, "chrome", "t.json")) as f:
        doc = json.load(f, parse_float=decimal.Decimal)
    tev = doc["traceEvents"]
    evs = dump(trace)

    def us(ns):
        return decimal.Decimal(ns) / 1000

    x = collections.defaultdict(list)
    for e in tev:
        if e["ph"] in ("X", "i", "b", "e"):
            x[(e["ph"], e["name"], e["ts"])].append(e)
    flows = collections.Counter((f["ph"], f["id"], f["pid"], f["tid"], f["ts"])
                                for f in tev if f.get("cat") == "ac2g")
    check(all(f.get("bp") == "e" for f in tev if f["ph"] == "f"), "flow ends bind to slices")
    cats = {"gpu_kernel": "kernel", "gpu_memcpy": "gpu_memcpy", "gpu_memset": "gpu_memset"}
    for e in evs:
        a = e["args"]
        if e["kind"] in GPU_KINDS:
            (c,) = x[("X", kineto_name(e), us(e["ts"]))]
            eq((c["cat"], c["pid"], c["tid"], c["dur"]),
               (cats[e["kind"]], a["device"], a["stream"], us(e["dur"])),
               "GPU event on pid = device, tid = stream")
            eq(c["args"]["cupti_correlation"], a["correlation"], "CUPTI's id kept")
            eq(c["args"]["device"], a["device"], "args.device")
            eq(c["args"]["stream"], a["stream"], "args.stream")
            if e["kind"] == "gpu_kernel":
                eq((c["args"]["registers per thread"], c["args"]["shared memory"], c["args"]["grid"]),
                   (a["registers"], a["shmem_dynamic"] + a["shmem_static"], a["grid"]),
                   "Kineto's kernel keys")
            elif e["dur"]:
                check(abs(float(c["args"]["memory bandwidth (GB/s)"]) - a["bytes"] / e["dur"])
                      < 1e-6, "bandwidth")
            if a["link"] == "none":
                eq(c["args"]["correlation"], a["correlation"], "unlinked: CUPTI's id")
                check(not flows[("f", a["correlation"], a["device"], a["stream"], us(e["ts"]))],
                      "unlinked: no flow")
                continue
            fid = synth.flow_id(PID, e["tid"], a["call_ts"])
            eq(c["args"]["correlation"], fid, "Kineto's correlation: the flow id")
            eq(flows[("f", fid, a["device"], a["stream"], us(e["ts"]))], 1, "ac2g flow end")
            eq(flows[("s", fid, PID, e["tid"], us(a["call_ts"]))], 1, "ac2g flow start")
            (launch,) = [l for l in tev if l["ph"] == "X" and l["ts"] == us(a["call_ts"]) and
                         l["tid"] == e["tid"] and l["args"].get("correlation") == fid]
            eq(launch["cat"], "cuda_runtime" if launch["name"].startswith("cuda") else
               "cuda_driver", "the launching call's category")
        elif e["kind"] == "gpu_api" and "call_ts" in a:
            eq(x[("X", e["name"], us(e["ts"]))], [], "CUPTI's record of a traced call left out")
        elif e["kind"] == "gpu_api":
            (c,) = x[("X", e["name"], us(e["ts"]))]
            eq((c["pid"], c["tid"], c["cat"]), (PID, e["tid"], "cuda_driver" if a["domain"] ==
                                                 "driver" else "cuda_runtime"), "gpu_api")
            eq(c["args"]["correlation"], synth.flow_id(PID, e["tid"], e["ts"]),
               "CUPTI's record of an untraced call is the launching event")
        elif e["kind"] == "nvtx_range" and a["style"] == "PushPop":
            (c,) = x[("X", e["name"], us(e["ts"]))]
            eq((c["cat"], c["pid"], c["tid"], c["dur"]),
               ("user_annotation", PID, e["tid"], us(e["dur"])), "push/pop range")
            eq(c["args"], json.loads(json.dumps(a), parse_float=decimal.Decimal), "its args")
        elif e["kind"] == "nvtx_range":
            (b,) = x[("b", e["name"], us(e["ts"]))]
            ends = [c for c in x[("e", e["name"], us(e["ts"] + e["dur"]))]
                    if c["id2"] == b["id2"]]
            eq(len(ends), 1, "its async end")
            eq((b["cat"], b["tid"], ends[0]["tid"], b["id2"]),
               ("user_annotation", e["tid"], a["end_tid"], {"local": hex(a["range_id"])}),
               "start/end range from its start thread to its end thread")
        elif e["kind"] == "nvtx_mark":
            (c,) = x[("i", e["name"], us(e["ts"]))]
            eq(c["cat"], "user_annotation", "mark")
    meta = {(m["name"], m["pid"], m["tid"]): m["args"] for m in tev if m["ph"] == "M"}
    eq(meta[("process_name", 0, 0)], {"name": "GPU 0"}, "device 0 named")
    eq(meta[("process_name", 1, 0)], {"name": "GPU 1"}, "device 1 named")
    eq(meta[("thread_name", 0, 7)], {"name": "stream 7"}, "stream named")
    eq(meta[("thread_name", PID, T2)], {"name": "data loader"}, "NVTX thread name")
    eq(sum(1 for m in tev if m["ph"] == "M" and m["name"] == "process_name" and m["pid"] == 0),
       1, "one name per device")


# ---- SQLite ----


def rows(db, sql):
    cur = db.cursor()
    cur.row_factory = sqlite3.Row
    return [dict(r) for r in cur.execute(sql)]


def same_summary(sql_rows, report, key, columns, what):
    eq(len(sql_rows), len(report), f"{what}: rows")
    by = {r[key]: r for r in report}
    for r in sql_rows:
        s = by[r[key]]
        for c in columns:
            if isinstance(s[c], float):  # stats prints doubles with one decimal
                check(abs(r[c] - s[c]) <= 0.05 + 1e-9, f"{what} {r[key]} {c}: {r[c]} != {s[c]}")
            else:
                eq(r[c], s[c], f"{what} {r[key]} {c}")


def pop_stddev(values):
    m = sum(values) / len(values)
    return math.sqrt(sum((v - m) ** 2 for v in values) / len(values))


def test_sqlite_reproduces_gpu_and_nvtx_stats():
    trace = gpu_trace()
    db = sqlite3.connect(export(trace, "sqlite", "t.sqlite"))
    st = stats(trace, "cuda_gpu_kern_sum,cuda_gpu_mem_time_sum,cuda_gpu_mem_size_sum,nvtx_sum")
    timing = ("count", "total_ns", "avg_ns", "med_ns", "min_ns", "max_ns", "time_pct")
    same_summary(rows(db, docs_query("cuda_gpu_kern_sum")), st["cuda_gpu_kern_sum"], "name",
                 timing, "cuda_gpu_kern_sum")
    same_summary(rows(db, docs_query("cuda_gpu_mem_time_sum")), st["cuda_gpu_mem_time_sum"],
                 "name", timing, "cuda_gpu_mem_time_sum")
    same_summary(rows(db, docs_query("cuda_gpu_mem_size_sum")), st["cuda_gpu_mem_size_sum"],
                 "name", ("count", "total_bytes", "avg_bytes", "med_bytes", "min_bytes",
                          "max_bytes"), "cuda_gpu_mem_size_sum")
    nv = rows(db, docs_query("nvtx_sum"))
    for r in nv:
        r["key"] = (r["name"], r["style"])
    for r in st["nvtx_sum"]:
        r["key"] = (r["name"], r["style"])
    same_summary(nv, st["nvtx_sum"], "key", timing, "nvtx_sum")
    # stddev, which SQLite cannot take without its math extension, from the rows.
    durs = collections.defaultdict(list)
    for name, d in db.execute("SELECT s.value, k.\"end\" - k.start FROM "
                              "CUPTI_ACTIVITY_KIND_KERNEL k JOIN StringIds s "
                              "ON s.id = k.demangledName"):
        durs[name].append(d)
    for r in st["cuda_gpu_kern_sum"]:
        check(abs(pop_stddev(durs[r["name"]]) - r["stddev_ns"]) <= 0.05 + 1e-9, "kernel stddev")
    # RUNTIME rows carry CUPTI's correlation id: they join the kernels they launched.
    linked = rows(db, """
        SELECT k.start AS kstart, r.start AS rstart, k.apiStart AS api, r.cuptiOnly AS cupti
        FROM CUPTI_ACTIVITY_KIND_KERNEL AS k JOIN CUPTI_ACTIVITY_KIND_RUNTIME AS r
          ON r.correlationId = k.correlationId AND r.globalTid >> 24 = k.globalPid >> 24""")
    kernels = [e for e in dump(trace) if e["kind"] == "gpu_kernel"]
    eq(len(linked), sum(e["args"]["link"] != "none" for e in kernels),
       "every linked kernel joins its launching call on correlationId")
    check(all(r["rstart"] == r["api"] for r in linked), "the call is the kernel's apiStart")
    eq(sum(r["cupti"] for r in linked), 9, "CUPTI-only rows for the kernels linked by CUPTI")
    # nsys's enums and shapes.
    eq(rows(db, "SELECT label FROM ENUM_CUDA_MEMCPY_OPER WHERE id = 10"),
       [{"label": "Peer-to-Peer"}], "copy kinds")
    eq(rows(db, "SELECT DISTINCT srcKind, dstKind FROM CUPTI_ACTIVITY_KIND_MEMCPY "
                "WHERE copyKind = 2"), [{"srcKind": 1, "dstKind": 2}],
       "CUPTI's pinned and device are nsys's 1 and 2")
    eq(rows(db, "SELECT COUNT(*) AS n FROM NVTX_EVENTS WHERE eventType = 59 AND \"end\" IS NULL"),
       [{"n": 1}], "the open range has no end")
    eq(rows(db, "SELECT text FROM NVTX_EVENTS WHERE eventType = 75"), [{"text": "io"}],
       "domain created once")
    eq(rows(db, "SELECT text, globalTid & 0xffffff AS tid FROM NVTX_EVENTS WHERE eventType = 39"),
       [{"text": "data loader", "tid": T2}], "thread name")
    eq(rows(db, "SELECT s.value AS v FROM NVTX_EVENTS e JOIN StringIds s ON s.id = e.textId"),
       [{"v": "epoch"}], "a registered string by StringIds")
    for q in ("gpu_idle", "kernel_time_per_nvtx_range", "launch_latency"):
        db.execute(docs_query(q)).fetchall()
    idle = rows(db, docs_query("gpu_idle"))
    gi = {(r["pid"], r["device"]): r for r in stats(trace, "gpu_idle_sum")["gpu_idle_sum"]}
    eq(len(idle), len(gi), "gpu_idle: a row per device")
    for r in idle:
        s = gi[(r["pid"], r["device"])]
        eq((r["span_ns"], r["busy_ns"], r["gaps"], r["max_gap_ns"]),
           (s["span_ns"], s["busy_ns"], s["gaps"], s["max_gap_ns"]), "gpu_idle as stats")
    db.close()


# ---- Bad input ----

def test_bad_input_clear_errors():
    trace = gpu_trace()
    d = tmpdir()
    # Cut short: every complete chunk, and a warning.
    t = build_trace()
    cut = t.write(d, "cut.bst", close=False)
    p = run([BPFSIGHT, "dump", cut])
    eq(p.returncode, 0, "a truncated trace reads")
    check("not closed cleanly" in p.stderr, f"says so: {p.stderr}")
    eq(len(p.stdout.splitlines()), len(dump(trace)), "all its events")
    # A corrupted chunk of several: skipped, exit 3, and exports still write what is readable.
    t = build_trace()
    t.flush_every = 16
    bad = synth.spoil_a_chunk(t.write(d, "chunks.bst"), os.path.join(d, "bad.bst"))
    for fmt, out in (("perfetto", "b.pftrace"), ("chrome", "b.json"), ("sqlite", "b.sqlite")):
        p = run([BPFSIGHT, "export", bad, "--format", fmt, "-o", os.path.join(d, out)])
        eq(p.returncode, 3, f"corrupt chunk: export {fmt} exit ({p.stderr})")
        check("corrupt" in p.stderr, f"{fmt}: says what was skipped: {p.stderr}")
    p = run([BPFSIGHT, "stats", bad, "-r", "cuda_gpu_kern_sum,nvtx_sum"])
    eq(p.returncode, 3, "stats on a corrupt chunk")
    # GPU records shorter than their type: set aside, counted, never decoded.
    t = synth.Trace()
    t.process(PID, "x")
    t.raw(synth.short_rec(synth.GPU_KERNEL, PID, T1, 5, 16))
    t.raw(synth.short_rec(synth.NVTX_RANGE, PID, T1, 6, 8))
    short = t.write(d, "short.bst")
    i = info(short, check=False)
    eq(i["corrupt_records"], 2, "short GPU and NVTX records counted")
    eq(i.get("shim"), None, "not counted as shim records")
    eq([e["kind"] for e in dump(short, check=False)], ["process"], "and not decoded")
    # Not a trace.
    junk = os.path.join(d, "junk.bst")
    with open(junk, "wb") as f:
        f.write(b"no trace here" * 100)
    for args in (["dump", junk], ["stats", junk, "-r", "nvtx_sum"], ["info", junk],
                 ["export", junk, "--format", "sqlite", "-o", os.path.join(d, "j.sqlite")]):
        p = run([BPFSIGHT, *args])
        eq(p.returncode, 1, f"{args[0]} of a non-trace")
        check("not a bpfsight trace" in p.stderr, f"{args[0]}: clear error: {p.stderr}")
    check(not os.path.exists(os.path.join(d, "j.sqlite")), "nothing left at OUT")
