"""CUDA graphs: an op replayed from a graph traced back to the capture that made its node.

There is no GPU here: tests/workloads/shim/graph_feed.c tells the shim what CUPTI's resource
callbacks would (nodes made at capture on one thread, copied by an instantiation on another,
a copy of a copy) through the test variant's graph-node hook, which writes the callback's own
record, then feeds the replays' ops as CUPTI 13 activity records naming the copies. It prints
what it fed; the dump must hold each node record as fed and give each replayed op the thread
and time of the node made first (capture_tid, capture_ts). tests/gpu/run.sh (part graphs)
checks the same on a real GPU against torch.cuda.graph.
"""
import json
import os

from helpers import BPFSIGHT, check, dump, eq, need_root, run, stats, tmpdir, workload

# For tests/run_tests.py: about how long these tests take on CI's machine (its order).
SECONDS = 2

SHIM_TEST = workload("shim/libbpfsight-shim-test.so")
FEED = workload("shim/graph_feed")
NODE_TYPES = {0: "kernel", 2: "memset"}


def feed(*rec_args, rc=0):
    need_root()
    for p in (SHIM_TEST, FEED):
        check(os.path.exists(p), f"{p} missing: run make test-build (needs the CUDA toolkit)")
    out = os.path.join(tmpdir(), "t.bst")
    p = run([BPFSIGHT, "record", "-o", out, *rec_args, "--", FEED, SHIM_TEST])
    eq(p.returncode, rc, f"exit ({p.stderr[-500:]})")
    head, _, rest = p.stdout.partition("\n")
    fed = json.loads(rest)
    eq(fed["fed"], len(fed["ops"]), "the shim decoded every op fed")
    return json.loads(head), fed, out


def node_events(events, pid):
    return [(e["tid"], e["ts"], e["name"], e["args"]) for e in events
            if e["pid"] == pid and e["kind"] == "gpu_graph_node"]


def want_nodes(fed):
    out = []
    for n in fed["nodes"]:
        a = dict(graph_id=n["graph"], graph_node_id=n["node"], node_type=NODE_TYPES[n["type"]])
        if n["orig"]:
            a.update(orig_graph_id=n["orig_graph"], orig_node_id=n["orig"])
        out.append((n["tid"], n["ts"], "copied" if n["orig"] else "made", a))
    return out


def check_ops(events, pid, fed, what):
    ops = {e["args"]["correlation"]: e for e in events
           if e["pid"] == pid and e["kind"] in ("gpu_kernel", "gpu_memset")}
    eq(sorted(ops), sorted(o["correlation"] for o in fed["ops"]), f"{what}: every op recorded")
    for o in fed["ops"]:
        e = ops[o["correlation"]]
        a = e["args"]
        eq((e["kind"], a["graph_id"], a["graph_node_id"]), (o["kind"], o["graph"], o["node"]),
           f"{what}: op {o['correlation']}: a graph's node")
        got = {"tid": a["capture_tid"], "ts": a["capture_ts"]} if "capture_ts" in a else None
        eq(got, o["capture"], f"{what}: op {o['correlation']} (node {o['node']}): its capture")


def test_replayed_ops_name_their_capture():
    """Nine ops of three replays and one of a copy of a copy: each has the thread and time
    its node was made at capture (not the instantiation's copy); the node never reported has
    none. The node records are in the dump as fed: made or copied, with their ids."""
    head, fed, out = feed("-t", "cuda,gpu")
    events = dump(out)
    eq(node_events(events, head["pid"]), want_nodes(fed), "the graph node records")
    check_ops(events, head["pid"], fed, "launch")
    captured = [o for o in fed["ops"] if o["capture"]]
    eq(len(captured), 10, "ten of the eleven ops have a capture")
    eq({o["capture"]["tid"] for o in captured}, {head["tid"]}, "all made by the main thread")


def test_nodes_made_outside_a_capture_range_still_name_it():
    """--capture-range=cudaProfilerApi with no range in the job: GPU ops are gated out (the
    recording says nothing was captured: exit status 1), the graph node records are not (a
    graph captured before a range is replayed inside it)."""
    head, fed, out = feed("-t", "cuda,gpu", "--capture-range=cudaProfilerApi", rc=1)
    events = dump(out)
    eq(node_events(events, head["pid"]), want_nodes(fed), "the graph node records, ungated")
    eq([e for e in events if e["kind"] in ("gpu_kernel", "gpu_memset")], [],
       "no op outside a range")


def test_graph_nodes_in_every_reader():
    """stats, info and the exports read a file with graph node records."""
    head, fed, out = feed("-t", "gpu")
    for fmt in ("perfetto", "chrome", "sqlite"):
        dst = os.path.join(tmpdir(), f"t.{fmt}")
        p = run([BPFSIGHT, "export", out, "--format", fmt, "-o", dst])
        eq(p.returncode, 0, f"export {fmt}: {p.stderr[-300:]}")
    rows = stats(out, "cuda_gpu_kern_sum")["cuda_gpu_kern_sum"]
    eq(sum(r["count"] for r in rows), 8, "the eight kernels counted")
