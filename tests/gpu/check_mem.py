#!/usr/bin/env python3
"""The mem family on a real GPU (tests/gpu/run.sh), against PyTorch's own numbers.

    check_mem.py loop STEPS JSON [--wait-file F] [--oom]
        a training loop on cuda:0 that writes, at every step boundary, the CLOCK_MONOTONIC
        time and torch.cuda.memory_allocated() / memory_reserved(), and at the end
        max_memory_allocated() (reset before the first step), to JSON; with --oom it then
        asks for more than the device has (caught) and records the time
    check_mem.py compare BPFSIGHT TRACE JSON
        the trace's cuda:0 allocator totals at each boundary (the last mem_alloc before it)
        equal the job's, its peak equals max_memory_allocated(), its blocks are the job's
    check_mem.py oom BPFSIGHT DUMP JSON
        a flight-recorder dump (--trigger mem:oom) holds the job's OOM on cuda:0
    check_mem.py snapshot SNAPSHOT
        bpfsight's memory-snapshot export loads in PyTorch's own torch/cuda/_memory_viz.py
        (segsum, trace_plot, segment_plot) and has the actions the job made
    check_mem.py sites WAIT_FILE
        64 MiB kept on cuda:0 at each of three lines (marked SITE4K, SITE64K, SITE4M), in
        blocks of 4 KiB, 64 KiB and 4 MiB, once WAIT_FILE exists; prints "ready pid P" first
        and "done" after, then waits for WAIT_FILE.done
    check_mem.py compare-sites BPFSIGHT EXACT SAMPLED
        mem_leaks' cuda:0 bytes at each of those lines: the sampled trace's estimate within
        10% of the exact trace's (--stacks=mem:0), which is 64 MiB; the 4 MiB blocks exact

Exit 0 when the check holds, 1 when not (what differs is printed).
"""
import json
import os
import pickle
import subprocess
import sys
import time


def loop(steps, out, wait_file=None, oom=False):
    import torch
    dev = torch.device("cuda:0")
    model = torch.nn.Sequential(torch.nn.Linear(1024, 4096), torch.nn.ReLU(),
                                torch.nn.Linear(4096, 1024)).to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    x = torch.randn(256, 1024, device=dev)
    print(f"ready pid {os.getpid()}", flush=True)
    while wait_file and not os.path.exists(wait_file):
        time.sleep(0.05)
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    start = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
    marks = []
    keep = []
    for i in range(steps):
        opt.zero_grad(set_to_none=True)
        loss = model(x).square().mean()
        loss.backward()
        opt.step()
        if i % 4 == 0:
            keep.append(torch.empty(1 << 20, device=dev))  # 4 MiB that stays: a known leak
        torch.cuda.synchronize()
        marks.append({"ts": time.clock_gettime_ns(time.CLOCK_MONOTONIC),
                      "allocated": torch.cuda.memory_allocated(dev),
                      "reserved": torch.cuda.memory_reserved(dev)})
    res = {"pid": os.getpid(), "marks": marks, "start_ts": start,
           "max_allocated": torch.cuda.max_memory_allocated(dev)}
    if oom:
        try:
            torch.empty(1 << 50, dtype=torch.uint8, device=dev)
        except torch.cuda.OutOfMemoryError:
            res["oom_ts"] = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
        time.sleep(1)
    with open(out, "w") as f:
        json.dump(res, f)


def events(bpfsight, trace):
    out = subprocess.run([bpfsight, "dump", trace], capture_output=True, text=True,
                         check=True).stdout
    return [json.loads(l) for l in out.splitlines()]


def compare(bpfsight, trace, js):
    want = json.load(open(js))
    allocs = [e for e in events(bpfsight, trace) if e["kind"] == "mem_alloc"
              and e["pid"] == want["pid"] and e["args"]["device"] == "cuda:0"]
    ok = True
    if not allocs:
        print("no cuda:0 allocations in the trace")
        return 1
    i, last, bad = 0, None, []
    for m in want["marks"]:
        while i < len(allocs) and allocs[i]["ts"] <= m["ts"]:
            last = allocs[i]["args"]
            i += 1
        if last is None or (last["allocated"], last["reserved"]) != (m["allocated"],
                                                                    m["reserved"]):
            bad.append((m, last))
    print(f"{len(want['marks'])} step boundaries, {len(bad)} differ; {len(allocs)} records")
    for m, last in bad[:5]:
        print(f"  job {m} trace {last}")
    ok &= not bad
    # The peak since reset_peak_memory_stats(): what was allocated then, or any record after.
    before = [a for a in allocs if a["ts"] < want["start_ts"]]
    after = [a["args"]["allocated"] for a in allocs if a["ts"] >= want["start_ts"]]
    peak = max(after + ([before[-1]["args"]["allocated"]] if before else []))
    print(f"peak allocated: trace {peak}, max_memory_allocated() {want['max_allocated']}")
    ok &= peak == want["max_allocated"]
    return 0 if ok else 1


def oom(bpfsight, dump_file, js):
    want = json.load(open(js))
    ooms = [e for e in events(bpfsight, dump_file) if e["kind"] == "mem_oom"
            and e["pid"] == want["pid"]]
    print(f"OOMs in the dump: {[(e['args']['device'], e['args']['bytes']) for e in ooms]}")
    return 0 if any(e["args"]["device"] == "cuda:0" and e["args"]["bytes"] >= 1 << 50
                    for e in ooms) else 1


def snapshot(path):
    from torch.cuda import _memory_viz as mv
    with open(path, "rb") as f:
        snap = pickle.load(f)
    actions = {}
    for dev in snap["device_traces"]:
        for t in dev:
            actions[t["action"]] = actions.get(t["action"], 0) + 1
    print(f"segments {len(snap['segments'])}, trace actions {actions}")
    print(mv.segsum(snap)[:800])
    html = mv.trace_plot(snap)
    seg = mv.segment_plot(snap)
    print(f"trace_plot {len(html)} bytes, segment_plot {len(seg)} bytes")
    return 0 if actions.get("alloc") and actions.get("free_requested") is not None else 1


MIB = 1 << 20


def sites(wait_file):
    import torch
    dev = torch.device("cuda:0")
    torch.empty(1, device=dev)  # the context, before the recording's work
    kept = []
    print(f"ready pid {os.getpid()}", flush=True)
    while not os.path.exists(wait_file):
        time.sleep(0.05)
    kept.extend(torch.empty(4096, dtype=torch.uint8, device=dev) for _ in range(16384))  # SITE4K
    kept.extend(torch.empty(65536, dtype=torch.uint8, device=dev) for _ in range(1024))  # SITE64K
    kept.extend(torch.empty(4 * MIB, dtype=torch.uint8, device=dev) for _ in range(16))  # SITE4M
    torch.cuda.synchronize()
    print("done", flush=True)
    while not os.path.exists(wait_file + ".done"):
        time.sleep(0.05)


def site_lines():
    with open(__file__) as f:
        return {l.rstrip().rsplit("# ", 1)[1]: i + 1 for i, l in enumerate(f)
                if l.rstrip().endswith(("# SITE4K", "# SITE64K", "# SITE4M"))}


def leaks(bpfsight, trace):
    out = subprocess.run([bpfsight, "stats", trace, "-r", "mem_leaks", "--format", "json"],
                         capture_output=True, text=True, check=True).stdout
    me = os.path.realpath(__file__)
    return [r for r in json.loads(out)["reports"]["mem_leaks"] if r["device"] == "cuda:0"
            and r["file"] and os.path.realpath(r["file"]) == me]


def compare_sites(bpfsight, exact, sampled):
    ex, sa, ok = leaks(bpfsight, exact), leaks(bpfsight, sampled), True
    for name, line in site_lines().items():
        e = [r for r in ex if r["line"] == line]
        s = [r for r in sa if r["line"] == line]
        if len(e) != 1 or len(s) != 1:
            print(f"{name}: rows exact {e}, sampled {s}")
            ok = False
            continue
        e, s = e[0]["live_bytes"], s[0]
        good = e == 64 * MIB and abs(s["live_bytes"] - e) <= 0.1 * e and \
            (s.get("sampled") is None) == (name == "SITE4M")
        print(f"{name}: exact {e}, sampled {s['live_bytes']} ({s.get('sampled')} samples)"
              f"{'' if good else ': WRONG'}")
        ok &= good
    return 0 if ok else 1


def main():
    cmd = sys.argv[1]
    if cmd == "sites":
        sites(sys.argv[2])
        return 0
    if cmd == "compare-sites":
        return compare_sites(*sys.argv[2:5])
    if cmd == "loop":
        args = sys.argv[2:]
        wait = args[args.index("--wait-file") + 1] if "--wait-file" in args else None
        loop(int(args[0]), args[1], wait, "--oom" in args)
        return 0
    if cmd == "compare":
        return compare(*sys.argv[2:5])
    if cmd == "oom":
        return oom(*sys.argv[2:5])
    return snapshot(sys.argv[2])


if __name__ == "__main__":
    sys.exit(main())
