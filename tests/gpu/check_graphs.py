"""CUDA graphs on a real GPU (tests/gpu/run.sh, part graphs): a model's forward captured once
with torch.cuda.graph and replayed REPLAYS times.

  check_graphs.py run REPLAYS --json OUT [--profile]
      the model (Linear, GELU, Linear, LayerNorm) run eagerly REPLAYS times, then captured
      (the line marked CAPTURE) and replayed REPLAYS times (the line marked REPLAY). OUT gets
      the pid and the lines. With --profile the eager runs and the replays each run under
      torch.profiler (CPU and CUDA activity): OUT gets the replays' kernels by name, and the
      eager forwards' (op, kernel) pairs (Kineto's linked_correlation_id: the op that launched
      the kernel).
  check_graphs.py compare BPFSIGHT TRACE RUN_JSON PROFILE_JSON
      TRACE: `record -t cuda,gpu,torch --stacks=cuda:0 -- check_graphs.py run REPLAYS` (the
      capture and the replays in one recording, the shim there from the start). Checks:
      - the kernels of graph nodes (graph_id set) by name equal torch.profiler's replays';
      - each has a GPU time and is linked to the cuda call that replayed it, a
        cudaGraphLaunch made at the REPLAY line (its stack);
      - each is attributed to the capture: the thread and time its node was made
        (capture_tid, capture_ts), inside a cuda launch call made at the CAPTURE line (its
        stack) and inside a torch op of that thread; the (innermost op, kernel) pairs equal
        torch.profiler's eager forwards' pairs (the same ops launch the same kernels, whether
        they run or are captured).
Exit 0 when all hold, 1 otherwise.
"""
import collections
import json
import os
import subprocess
import sys
import time

import kineto_trace


def line_of(tag):
    with open(__file__) as f:
        return next(i + 1 for i, l in enumerate(f) if l.rstrip().endswith(f"# {tag}"))


def run(replays, out, profile):
    import torch
    from torch.profiler import ProfilerActivity, profile as tprofile

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(512, 2048), torch.nn.GELU(),
                                torch.nn.Linear(2048, 512), torch.nn.LayerNorm(512)).cuda()
    model.eval()
    x = torch.randn(64, 512, device="cuda")
    acts = [ProfilerActivity.CPU, ProfilerActivity.CUDA]
    res = {"pid": os.getpid(), "replays": replays, "capture_line": line_of("CAPTURE"),
           "replay_line": line_of("REPLAY"), "torch": torch.__version__}
    with torch.no_grad():
        side = torch.cuda.Stream()  # warm-up on a side stream, as torch.cuda.graph asks
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(3):
                model(x)
        torch.cuda.current_stream().wait_stream(side)
        torch.cuda.synchronize()
        if profile:
            with tprofile(activities=acts) as p:
                for _ in range(replays):
                    model(x)
                torch.cuda.synchronize()
            res["eager_pairs"] = kineto_trace.kernel_ops(kineto_trace.events(p))
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            y = model(x)  # CAPTURE
        torch.cuda.synchronize()
        if profile:
            with tprofile(activities=acts) as p:
                for _ in range(replays):
                    g.replay()
                torch.cuda.synchronize()
            res["replay_kernels"] = kineto_trace.kernels(kineto_trace.events(p))
        else:
            for _ in range(replays):
                g.replay()  # REPLAY
            torch.cuda.synchronize()
    res["y_sum"] = float(y.sum())
    # bpfsight names a stack's Python frames from the live process: a job that exits at once
    # may leave its last frames unnamed (docs/STACKS.md); this one is not about that.
    time.sleep(1.5)
    with open(out, "w") as f:
        json.dump(res, f, indent=1)
    print(f"captured once, replayed {replays} times", flush=True)


def innermost(spans, ts):
    best = None
    for s in spans:
        if s["ts"] <= ts <= s["ts"] + s["dur"] and (best is None or s["ts"] > best["ts"]):
            best = s
    return best


def py_frames(e):
    return [(f.get("file", "").split("/")[-1], f.get("line")) for f in e.get("stack", ())
            if "line" in f]


def compare(bpfsight, trace, run_json, prof_json):
    with open(run_json) as f:
        job = json.load(f)
    with open(prof_json) as f:
        prof = json.load(f)
    me = os.path.basename(__file__)
    cap_at, rep_at = (me, job["capture_line"]), (me, job["replay_line"])
    out = subprocess.run([bpfsight, "dump", trace], capture_output=True, text=True, check=True)
    evs = [json.loads(l) for l in out.stdout.splitlines()]
    calls = collections.defaultdict(list)
    ops = collections.defaultdict(list)
    for e in evs:
        if e["kind"] == "cuda_api" and e["args"].get("depth", 0) == 0:
            calls[e["tid"]].append(e)
        elif e["kind"] == "torch_op":
            ops[e["tid"]].append(e)
    nodes = [e for e in evs if e["kind"] == "gpu_kernel" and e["args"].get("graph_id")]
    ok = True
    got = collections.Counter(k["name"] for k in nodes)
    want = collections.Counter(prof["replay_kernels"])
    print(f"  graph kernels: {sum(got.values())} ({len(got)} names); torch.profiler's "
          f"replays: {sum(want.values())}")
    if got != want or not got:
        ok = False
        print("  MISMATCH (bpfsight - profiler):", dict(got - want), "(profiler - bpfsight):",
              dict(want - got))
    untimed = sum(1 for k in nodes if not k.get("dur"))
    replay_ok = cap_ok = 0
    no_capture = 0
    pairs = collections.Counter()
    for k in nodes:
        a = k["args"]
        call = None
        if a.get("link") == "cuda":
            call = next((c for c in calls[k["tid"]] if c["ts"] == a.get("call_ts")), None)
        if call and call["name"].startswith(("cudaGraphLaunch", "cuGraphLaunch")) and \
                rep_at in py_frames(call):
            replay_ok += 1
        if "capture_ts" not in a:
            no_capture += 1
            continue
        ccall = innermost(calls[a["capture_tid"]], a["capture_ts"])
        if ccall and cap_at in py_frames(ccall):
            cap_ok += 1
        op = innermost(ops[a["capture_tid"]], a["capture_ts"])
        pairs[f"{op['name'] if op else '[no op]'}\t{k['name']}"] += 1
    n = len(nodes)
    print(f"  untimed {untimed}; linked to a graph launch at line {rep_at[1]}: {replay_ok} of {n}")
    print(f"  with their capture: {n - no_capture} of {n}; the capture call at line "
          f"{cap_at[1]}: {cap_ok}")
    ok &= untimed == 0 and replay_ok == n and no_capture == 0 and cap_ok == n
    want_pairs = collections.Counter(prof["eager_pairs"])
    if pairs != want_pairs:
        ok = False
        print("  (capturing op, kernel) pairs differ from the eager ones (bpfsight - eager):",
              dict(pairs - want_pairs), "(eager - bpfsight):", dict(want_pairs - pairs))
    else:
        print(f"  (capturing op, kernel) pairs: equal to torch.profiler's eager forwards' "
              f"({sum(pairs.values())})")
    return 0 if ok else 1


def main():
    a = sys.argv[1:]
    if a[:1] == ["run"] and len(a) >= 4 and "--json" in a:
        run(int(a[1]), a[a.index("--json") + 1], "--profile" in a)
        return 0
    if a[:1] == ["compare"] and len(a) == 5:
        return compare(*a[1:])
    sys.exit(__doc__)


if __name__ == "__main__":
    sys.exit(main())
