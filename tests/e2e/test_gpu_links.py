"""The launch join, recomputed when a trace is read, over the real H100 traces in
../shared/traces (recorded by an earlier version whose join gave up on fast threads): every
GPU op whose CUPTI API record starts inside a recorded launching call of its thread is linked
to the outermost such call (gpu_links.py computes that from the dump alone), and info's
counts agree with dump.
"""
import collections
import glob
import json
import os
import subprocess

import gpu_links
from helpers import BPFSIGHT, Skip, beside, check, eq, info

# For tests/run_tests.py: about how long these tests take on CI's machine (its order).
SECONDS = 14

TRACES = os.environ.get("BPFSIGHT_SHARED_TRACES",
                        os.path.join(os.path.dirname(__file__), "..", "..", "..", "shared",
                                     "traces"))


def shared_traces():
    files = sorted(glob.glob(os.path.join(TRACES, "*.bst")))
    if not files:
        raise Skip(f"no shared traces in {TRACES}")
    return files


@beside("reads the real traces only")
def test_shared_traces_every_linkable_op_linked():
    for path in shared_traces():
        name = os.path.basename(path)
        with subprocess.Popen([BPFSIGHT, "dump", "--kind", gpu_links.KINDS, path],
                              stdout=subprocess.PIPE, text=True) as p:
            st, bad = gpu_links.analyse(json.loads(l) for l in p.stdout)
        eq(p.returncode, 0, f"{name}: dump")
        check(st["ops"] and st["linkable"], f"{name}: has linkable GPU ops: {dict(st)}")
        eq((st["linked"], st["linked_outermost"]), (st["linkable"], st["linkable"]),
           f"{name}: linkable ops linked to the outermost call ({dict(st)}; e.g. {bad[:1]})")
        links = info(path)["gpu_links"]
        eq((links["linked_cuda"], links["linked_api"], links["unlinked"]),
           (st["link_cuda"], st["link_api"], st["link_none"]), f"{name}: info agrees with dump")
        eq(sum(links["not_linked_by_reason"].values()), st["link_api"] + st["link_none"],
           f"{name}: every op not linked has a reason")


# ---- the live join: fast threads, CUPTI records 1.5 s late ----

FLOOD = None


def flood_paths():
    from helpers import need_root, workload
    need_root()
    flood = workload("shim/cupti_flood")
    shim = workload("shim/libbpfsight-shim-test.so")
    for p in (flood, shim):
        check(os.path.exists(p), f"{p} missing: run make test-build (needs the CUDA toolkit)")
    return flood, shim


def check_flood(stdout, stderr, out, calls, what):
    """Every kernel of the flood linked by the recorder's join, and in the file to its own
    call; nothing lost."""
    from helpers import dump
    fed = json.loads(stdout.strip().splitlines()[-1])
    eq(fed["fed"], 4 * calls, f"{what}: the shim decoded every record fed")
    n = 2 * calls
    i = info(out)
    eq((i["lost_total"], i["lost"]), (0, {}), f"{what}: nothing lost")
    summary = [l for l in stderr.splitlines() if "GPU records" in l]
    eq(summary, [f"bpfsight record: GPU records: {n} linked to their cuda call (0 by launch "
                 "order), 0 to CUPTI's API record only, 0 unlinked"], f"{what}: the recorder's join linked all {n}")
    evs = [e for e in dump(out) if e["pid"] == fed["pid"]]
    # the feed's API record wraps its call ([t0+1, t1-1]): call k of thread t has id 2k+t+1
    made = {t["tid"]: sorted(e["ts"] for e in evs if e["kind"] == "cuda_api" and
                             e["tid"] == t["tid"] and e["name"] == "cudaLaunchKernel")
            for t in fed["threads"]}
    eq([len(v) for v in made.values()], [calls, calls], f"{what}: every call traced")
    wrong = []
    for e in evs:
        if e["kind"] == "gpu_kernel":
            k, t = divmod(e["args"]["correlation"] - 1, 2)
            tid = fed["threads"][t]["tid"]
            if (e["tid"], e["args"]["link"], e["args"]["call_ts"]) != (tid, "cuda", made[tid][k]):
                wrong.append(e)
    eq(wrong[:2], [], f"{what}: every kernel linked to its own call")
    rate = min(t["calls"] * 1e9 / t["ns"] for t in fed["threads"])
    print(f"# {what}: {rate:.0f} calls/s per thread")


def test_flood_fast_threads_late_records_all_linked():
    """Two threads launching thousands of calls a second (each far more than the 2,048 the
    join once kept), their CUPTI records fed 1.5 s late through the test shim: the recorder's
    join links every kernel to its call, and the file says the same."""
    from helpers import record
    flood, shim = flood_paths()
    calls = 6000
    p, out = record([flood, "2", str(calls), "1500", shim], "-t", "cuda,gpu")
    eq(p.returncode, 0, f"exit ({p.stderr[-500:]})")
    check_flood(p.stdout, p.stderr, out, calls, "launch")


def test_flood_attached_all_linked():
    """The same, attached with -p to the running process."""
    import shim_batches
    from helpers import Recorder, spawn, tmpdir
    flood, shim = flood_paths()
    calls = 6000
    d = tmpdir()
    go, batches = os.path.join(d, "go"), os.path.join(d, "batches.bin")
    w = spawn([flood, "2", str(calls), "1500", shim, go],
              env=dict(os.environ, BPFSIGHT_SHIM_DUMP=batches))
    pid = json.loads(w.stdout.readline())["pid"]
    r = Recorder("-t", "cuda,gpu", "-p", str(pid))
    r.wait_ready()
    shim_batches.wait_status(batches, pid, lambda s: s["event_name"] == "attach", "attach")
    open(go, "w").close()
    eq(w.wait(120), 0, "flood exit")
    eq(r.wait(60), 0, f"recorder exit ({r.stderr})")
    check_flood(w.stdout.read(), r.stderr, r.out, calls, "-p")


# ---- the join over a file: nested calls, late and early records, reasons ----

PID, T1, T2, T3 = 700, 701, 702, 703


def nested_trace(d):
    """T1: N cudaLaunchKernel (depth 0) each around a cuLaunchKernel (depth 1), one per ms;
    CUPTI's driver API record starts inside the inner call. Records are written as an
    earlier recorder would have: API and GPU records 1.5 s after their call, linked only to
    the API record; every 50th API record before its call returned, every 7th kernel before
    its API record. T2 launches with no call recorded; T1's last API record lies outside
    every call."""
    import synth
    t = synth.Trace(families="proc,cuda,gpu", start=1000, end=10 ** 10)
    t.process(PID, "train")
    rt, drv = synth.cuda_fn("cudaLaunchKernel"), synth.cuda_fn("cuLaunchKernel")
    n, late = 3000, 1500
    base = 10 ** 9

    def ts(i):
        return base + i * 1000000

    def cupti(i):
        a = ts(i) + 300
        if i % 7 == 0:
            t.kernel(PID, 0, ts(i) + 5000, 1000, "k", call_ts=0, flags=0, correlation=i + 1)
        t.api(PID, T1, a, 200, "cuLaunchKernel", i + 1, cbid=307, domain=1)
        if i % 7:
            t.kernel(PID, T1, ts(i) + 5000, 1000, "k", call_ts=a, flags=synth.GPU_CALL_API,
                     correlation=i + 1)

    for i in range(n + late):
        if i < n:
            if i % 50 == 0:
                cupti(i)  # its API record comes before the call returned
            t.cuda_call(PID, T1, ts(i) + 100, 600, drv, depth=1)
            t.cuda_call(PID, T1, ts(i), 900, rt)
        j = i - late
        if 0 <= j < n and j % 50:
            cupti(j)
    # T2: CUPTI saw launches, no call of its was recorded; T1: one API record between calls
    t.api(PID, T2, ts(n) + 10, 100, "cuLaunchKernel", 90001, cbid=307, domain=1)
    t.kernel(PID, T2, ts(n) + 5000, 100, "k2", correlation=90001)
    t.api(PID, T1, ts(n - 1) + 950, 10, "cuLaunchKernel", 90002, cbid=307, domain=1)
    t.kernel(PID, T1, ts(n) + 6000, 100, "k3", correlation=90002)
    t.cuda_call(PID, T1, ts(n + 10), 500, rt)  # after both: T1's API record is decided
    t.kernel(PID, T3, ts(n) + 7000, 100, "k4", correlation=90003)  # no API record at all
    return t.write(d), n, ts


def test_file_join_nested_outermost_late_and_early_records():
    from helpers import dump, tmpdir
    path, n, ts = nested_trace(tmpdir())
    evs = dump(path)
    ks = {e["args"]["correlation"]: e for e in evs if e["kind"] == "gpu_kernel"}
    wrong = [(c, k["tid"], k["args"]) for c, k in sorted(ks.items())
             if c <= n and (k["tid"], k["args"].get("link"), k["args"].get("call_ts")) !=
             (T1, "cuda", ts(c - 1))]
    eq(wrong[:3], [], f"all {n} kernels linked to their outer cudaLaunchKernel")
    apis = {e["args"]["correlation"]: e for e in evs if e["kind"] == "gpu_api"}
    eq(sum(apis[c]["args"].get("call_ts") == ts(c - 1) for c in range(1, n + 1)), n,
       "and so are their API records")
    eq([ks[c]["args"]["link"] for c in (90001, 90002, 90003)], ["api", "api", "none"],
       "the three that cannot be linked")
    links = info(path)["gpu_links"]
    eq({k: v for k, v in links.items() if not k.startswith("order") and
        k != "linked_by_order"},
       {"linked_cuda": n, "linked_api": 2, "unlinked": 1,
               "not_linked_by_reason": {"thread_not_traced": 1, "outside_calls": 1,
                                        "no_api_record": 1}}, "info's counts and reasons")


# ---- launch order: links without CUPTI's API records (order_link.h) ----

@beside("reads the real traces only")
def test_shared_traces_launch_order_finds_cuptis_calls():
    """Over the real H100 traces, launch order alone (stream by stream, shape and time) finds
    for every op CUPTI's correlation linked to a cuda call that same call, and no call for the
    ops queued before the recording began (job-attach-p's first 10,448)."""
    for path in shared_traces():
        name = os.path.basename(path)
        # (dump's own filter: the ops only, not the calls and API records analyse reads)
        with subprocess.Popen([BPFSIGHT, "dump", "--kind", ",".join(gpu_links.GPU_OPS), path],
                              stdout=subprocess.PIPE, text=True) as p:
            ops = [e for e in map(json.loads, p.stdout)
                   if e["kind"] in ("gpu_kernel", "gpu_memcpy", "gpu_memset")
                   and not e["args"].get("graph_id") and e["ts"]]
        linked = sum(e["args"]["link"] == "cuda" for e in ops)
        links = info(path)["gpu_links"]
        eq((links["order_found"], links["order_none"]), (linked, len(ops) - linked),
           f"{name}: launch order finds a call for every op CUPTI linked, and only those")
        eq(links["order_differs"], 0, f"{name}: never another call than CUPTI's ({links})")
        check(links["order_agrees"] > linked // 2, f"{name}: compared on most ops ({links})")


def test_live_links_by_launch_order_without_api_records():
    """order_feed: 67 GPU ops and no API record (GPU timing switched on in a running job):
    each op is linked to the exact call that queued it, on its thread; the op queued before
    the recording, the op whose launch was not probed and a graph's node have none, each
    with its reason."""
    _, shim = flood_paths()
    from helpers import tmpdir, workload
    feed = workload("shim/order_feed")
    check(os.path.exists(feed), f"{feed} missing: run make test-build")
    out = os.path.join(tmpdir(), "t.bst")
    p = subprocess.run([BPFSIGHT, "record", "-o", out, "-t", "cuda,gpu", "--", feed, shim],
                       capture_output=True, text=True, timeout=120)
    eq(p.returncode, 0, f"exit ({p.stderr[-500:]})")
    head_line, _, rest = p.stdout.partition("\n")
    head, fed = json.loads(head_line), json.loads(rest)
    eq(fed["fed"], len(fed["ops"]), "the shim decoded every record fed")
    events = [json.loads(l) for l in subprocess.run([BPFSIGHT, "dump", out], check=True,
                                                     capture_output=True, text=True).stdout
              .splitlines()]
    pid = head["pid"]
    cuda = sorted((e for e in events if e["pid"] == pid and e["kind"] == "cuda_api"),
                  key=lambda e: e["ts"])
    call_ts = []
    for c in fed["calls"]:
        mine = [e for e in cuda if e["tid"] == c["tid"] and c["t0"] <= e["ts"] <= c["t1"]]
        eq(len(mine), 1, f"one cuda event inside the call's own timing {c}")
        call_ts.append(mine[0]["ts"])
    gpu = {e["args"]["correlation"]: e for e in events
           if e["pid"] == pid and e["kind"] in ("gpu_kernel", "gpu_memcpy", "gpu_memset")}
    eq(sorted(gpu), sorted(o["correlation"] for o in fed["ops"]), "every op recorded")
    for o in fed["ops"]:
        e = gpu[o["correlation"]]
        if o["call"] < 0:
            eq((e["tid"], e["args"]["link"]), (0, "none"), f"op {o}: no call")
            continue
        c = fed["calls"][o["call"]]
        eq((e["tid"], e["args"].get("call_ts"), e["args"]["link"]),
           (c["tid"], call_ts[o["call"]], "cuda"), f"op {o}: its call")
    links = info(out)["gpu_links"]
    # Read back, the file's links are kept; launch order, run again, finds the same calls.
    eq((links["linked_cuda"], links["unlinked"], links["order_found"], links["order_agrees"]),
       (64, 3, 64, 64), f"info: {links}")
    eq(links["not_linked_by_reason"], {"no_call_in_order": 2, "graph_node_no_api": 1},
       "the reasons")
    check("64 linked to their cuda call" in p.stderr and "64 by launch order" in p.stderr,
          f"the recorder's summary says how: {p.stderr}")
