"""export --format chrome as Kineto writes a torch.profiler trace, so that Holistic Trace
Analysis (HTA) reads it as it reads PyTorch's own: the conventions HTA's analyses rely on,
checked directly (HTA itself is not needed; docs/EXPORT.md "HTA" gives its numbers on these
traces and the commands):

- one event per launching call (cat cuda_runtime / cuda_driver): the cuda_api event, or CUPTI's
  API record when no cuda_api event was matched to it, never both;
- a "correlation" on every GPU operation and on its launching call, the same on both sides,
  so HTA's join of launches to GPU work (get_cuda_kernel_launch_stats) gives one row per
  operation; an operation whose launch is unknown keeps CUPTI's id;
- copies and memsets under Kineto's names ("Memcpy HtoD (Pageable -> Device)",
  "Memset (Device)"), which HTA's memory analyses match;
- the top-level keys before traceEvents: schemaVersion, deviceProperties, displayTimeUnit,
  baseTimeNanoseconds (REALTIME - MONOTONIC at the start);
- gpu_user_annotation: each NVTX range projected onto each stream that ran work its thread
  launched inside it, 1 ns wider on each side (Kineto's), the same projection as stats'
  nvtx_gpu_proj_sum.

On two traces: the real cupti_feed workload through the shim (tests/e2e/test_gpu.py), with
its NVTX ranges (--nvtx), recorded with -t cuda,gpu,nvtx,osrt, whose every call and record is
known, and the synthetic trace of test_export_gpu.py (every link kind, two devices, nested and
cross-thread NVTX ranges).
"""
import collections
import decimal
import json
import os

from helpers import BPFSIGHT, check, dump, eq, run, stats, tmpdir
import synth
from test_export_gpu import PID, START, gpu_trace, kineto_name
from test_gpu import FEED, SHIM_TEST, need_feed, parse

# For tests/run_tests.py: about how long these tests take on CI's machine (its order).
SECONDS = 2

LAUNCH_STAT_CALLS = ("cudaLaunchKernel", "cudaLaunchKernelExC", "cudaMemcpyAsync",
                     "cudaMemsetAsync")  # the calls HTA's launch statistics join on
GPU_CATS = {"gpu_kernel": "kernel", "gpu_memcpy": "gpu_memcpy", "gpu_memset": "gpu_memset"}
CPU_CATS = ("cuda_runtime", "cuda_driver")


def export_chrome(trace):
    out = os.path.join(tmpdir(), "rank-0.json")
    p = run([BPFSIGHT, "export", trace, "--format", "chrome", "-o", out], timeout=120)
    eq(p.returncode, 0, f"export ({p.stderr.strip()})")
    with open(out) as f:
        text = f.read()
    return text, json.loads(text, parse_float=decimal.Decimal)


def ns(us):
    return int(decimal.Decimal(us) * 1000)


def check_header(text, doc, base):
    te = text.index('"traceEvents"')
    for k in ("schemaVersion", "deviceProperties", "displayTimeUnit", "baseTimeNanoseconds"):
        check(0 <= text.find(f'"{k}"') < te, f"{k} before traceEvents")
    eq((doc["schemaVersion"], doc["deviceProperties"], doc["displayTimeUnit"]), (1, [], "ns"),
       "Kineto's schemaVersion, no device known, ns")
    eq(doc["baseTimeNanoseconds"], base, "baseTimeNanoseconds")


def check_launches(doc, evs):
    """One event per call, a correlation on both sides; returns {correlation: launching
    event} and the GPU events."""
    tev = doc["traceEvents"]
    cpu = [e for e in tev if e["ph"] == "X" and e["cat"] in CPU_CATS]
    gpu = [e for e in tev if e["ph"] == "X" and e["cat"] in GPU_CATS.values()]
    calls = [e for e in evs if e["kind"] == "cuda_api"]
    apis = [e for e in evs if e["kind"] == "gpu_api" and "call_ts" not in e["args"]]
    eq(collections.Counter((e["name"], e["tid"], ns(e["ts"])) for e in cpu),
       collections.Counter((e["name"], e["tid"], e["ts"]) for e in calls + apis),
       "one event per call: the traced calls and CUPTI's records of untraced ones")
    by_corr = collections.defaultdict(list)
    for e in cpu:
        if "correlation" in e["args"]:
            by_corr[e["args"]["correlation"]].append(e)
    check(all(len(v) == 1 for v in by_corr.values()), "a correlation names one launching call")
    ops = [e for e in evs if e["kind"] in GPU_CATS]
    eq(len(gpu), len(ops), "GPU events")
    got = collections.Counter((e["cat"], e["name"], e["pid"], e["tid"], ns(e["ts"]),
                               e["args"]["cupti_correlation"]) for e in gpu)
    eq(got, collections.Counter((GPU_CATS[e["kind"]], kineto_name(e), e["args"]["device"],
                                 e["args"]["stream"], e["ts"], e["args"]["correlation"])
                                for e in ops), "GPU events: Kineto's names, pid = device")
    chrome_of = {(e["name"], ns(e["ts"]), e["args"]["cupti_correlation"]): e for e in gpu}
    for o in ops:
        a = chrome_of[(kineto_name(o), o["ts"], o["args"]["correlation"])]["args"]
        check("correlation" in a, f"every GPU event has a correlation: {o}")
        if o["args"]["link"] == "none":
            eq(a["correlation"], o["args"]["correlation"], "unknown launch: CUPTI's id")
            eq(by_corr.get(a["correlation"]), None, "unknown launch: no launching event")
            continue
        (launch,) = by_corr[a["correlation"]]
        eq((launch["pid"], launch["tid"], ns(launch["ts"])),
           (o["pid"], o["tid"], o["args"]["call_ts"]), f"{o['name']}: its launching call")
    return by_corr, gpu


def launch_stats_rows(by_corr, gpu):
    """HTA's get_cuda_kernel_launch_stats: launches of LAUNCH_STAT_CALLS inner-joined with GPU
    events on correlation; one row per pair."""
    return sorted((by_corr[e["args"]["correlation"]][0]["name"], e["name"]) for e in gpu
                  if e["args"]["correlation"] in by_corr and
                  by_corr[e["args"]["correlation"]][0]["name"] in LAUNCH_STAT_CALLS)


def projection(evs):
    """gpu_user_annotation as Kineto draws it, computed from dump: per closed range and
    (device, stream), the operations its thread launched inside it. Also the projected time
    per (name, style) over all streams, as nvtx_gpu_proj_sum defines it."""
    ops = [e for e in evs if e["kind"] in GPU_CATS and e["args"]["link"] != "none"]
    want, total = collections.Counter(), collections.Counter()
    for r in evs:
        if r["kind"] != "nvtx_range" or r["args"].get("open"):
            continue
        spans = {}
        for o in ops:
            if (o["pid"], o["tid"]) == (r["pid"], r["tid"]) and \
                    r["ts"] <= o["args"]["call_ts"] <= r["ts"] + r["dur"]:
                k = (o["args"]["device"], o["args"]["stream"])
                lo, hi = spans.get(k, (o["ts"], o["ts"] + o["dur"]))
                spans[k] = (min(lo, o["ts"]), max(hi, o["ts"] + o["dur"]))
        for (dev, stream), (lo, hi) in spans.items():
            want[(r["name"], dev, stream, lo - 1, hi - lo + 2)] += 1
        if spans:
            name = f"{r['args']['domain']}:{r['name']}" if r["args"]["domain"] else r["name"]
            total[(name, r["args"]["style"])] += (max(h for _, h in spans.values()) -
                                                  min(lo for lo, _ in spans.values()))
    return want, total


def annotations(doc):
    ann = [e for e in doc["traceEvents"] if e.get("cat") == "gpu_user_annotation"]
    check(all(e["ph"] == "X" and e["args"] == {} for e in ann), "complete events, no args")
    return collections.Counter((e["name"], e["pid"], e["tid"], ns(e["ts"]), ns(e["dur"]))
                               for e in ann)


def test_kineto_synthetic_every_link_kind():
    trace = gpu_trace()
    text, doc = export_chrome(trace)
    evs = dump(trace)
    check_header(text, doc, 1700000000000000000 - START)
    by_corr, gpu = check_launches(doc, evs)
    launched = collections.Counter(
        next(c["name"] for c in evs if c["kind"] in ("cuda_api", "gpu_api") and
             c["tid"] == o["tid"] and c["ts"] == o["args"]["call_ts"] and
             (c["kind"] == "cuda_api" or "call_ts" not in c["args"]))
        for o in evs if o["kind"] in GPU_CATS and o["args"]["link"] != "none")
    rows = launch_stats_rows(by_corr, gpu)
    eq(len(rows), sum(launched[n] for n in LAUNCH_STAT_CALLS),
       "HTA's launch statistics: one row per launched operation")
    eq(len(rows), 43, "as HTA counts them (docs/EXPORT.md)")
    ann = annotations(doc)
    want, total = projection(evs)
    eq(ann, want, "gpu_user_annotation: ranges projected onto their streams")
    eq(sum(ann.values()), 27, "annotations")
    # Stream by stream, the projection of stats' nvtx_gpu_proj_sum (the same code).
    eq(total, collections.Counter({(r["name"], r["style"]): r["total_proj_ns"] for r in
                                   stats(trace, "nvtx_gpu_proj_sum")["nvtx_gpu_proj_sum"]}),
       "the projected time of nvtx_gpu_proj_sum")


def test_kineto_real_feed_through_the_shim():
    """cupti_feed --nvtx: 12 traced calls with their GPU work inside the NVTX range "step",
    the three cudaLaunchKernel in "fwd" inside it, kernel_d launched through the driver with
    only CUPTI's API record, orphan_v (correlation 300) with no launch known."""
    need_feed()
    out = os.path.join(tmpdir(), "t.bst")
    p = run([BPFSIGHT, "record", "-o", out, "-t", "cuda,gpu,nvtx,osrt", "--", FEED, "--nvtx",
             SHIM_TEST])
    eq(p.returncode, 0, f"record exit ({p.stderr[-500:]})")
    head, fed = parse(p.stdout)
    text, doc = export_chrome(out)
    b = doc["bpfsight"]
    check_header(text, doc, b["start_realtime_ns"] - b["start_monotonic_ns"])
    evs = [e for e in dump(out) if e["pid"] == head["pid"]]
    by_corr, gpu = check_launches(doc, evs)
    cpu = [e for e in doc["traceEvents"] if e["ph"] == "X" and e["cat"] in CPU_CATS]
    eq(sorted(e["name"] for e in cpu), sorted([c["name"] for c in fed["calls"]] +
                                              ["cuLaunchKernel"]),
       "the twelve calls and CUPTI's record of the driver launch, once each")
    eq(len(by_corr), 13, "every call carries a correlation")
    eq(launch_stats_rows(by_corr, gpu),
       sorted([("cudaLaunchKernel", "kernel_a()"), ("cudaLaunchKernel", "kernel_b(float*, int)"),
               ("cudaLaunchKernel", "kernel_c()"),
               ("cudaMemcpyAsync", "Memcpy HtoD (Pinned -> Device)"),
               ("cudaMemsetAsync", "Memset (Device)")]),
       "HTA's launch statistics: the five launches of its four calls, once each")
    (d,) = [e for e in gpu if e["name"] == "kernel_d()"]
    eq(by_corr[d["args"]["correlation"]][0]["cat"], "cuda_driver",
       "kernel_d's launching event: CUPTI's record of cuLaunchKernel")
    (o,) = [e for e in gpu if e["name"] == "orphan_v"]
    eq(o["args"]["correlation"], 300, "the orphan keeps CUPTI's id")
    eq(sorted(e["name"] for e in gpu if e["cat"] != "kernel"),
       sorted(["Memcpy HtoD (Pageable -> Device)", "Memcpy DtoH (Device -> Pinned)",
               "Memcpy DtoD (Device -> Device)", "Memcpy HtoH (Pinned -> Pinned)",
               "Memcpy HtoD (Pinned -> Device)", "Memcpy PtoP (Device -> Device)",
               "Memset (Device)", "Memset (Device)"]), "Kineto's copy and memset names")
    ann = annotations(doc)
    want, total = projection(evs)
    eq(ann, want, "gpu_user_annotation: ranges projected onto their streams")
    kern = {e["name"]: e for e in gpu if e["cat"] == "kernel"}
    eq(sorted(k for k in ann if k[0] == "fwd"),
       sorted(("fwd", kern[n]["pid"], kern[n]["tid"], ns(kern[n]["ts"]) - 1, dur + 2)
              for n, dur in (("kernel_a()", 10000), ("kernel_b(float*, int)", 20000),
                             ("kernel_c()", 30000))),
       "fwd: one per stream of its three kernels, 1 ns wider on each side")
    eq(sorted((k[1], k[2]) for k in ann if k[0] == "step"), [(0, 7), (0, 14), (1, 13)],
       "step: the three streams of its twelve calls' work")
    eq(total, collections.Counter({(r["name"], r["style"]): r["total_proj_ns"] for r in
                                   stats(out, "nvtx_gpu_proj_sum")["nvtx_gpu_proj_sum"]}),
       "the projected time of nvtx_gpu_proj_sum")
