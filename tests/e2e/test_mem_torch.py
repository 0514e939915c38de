"""torch_op_sum's memory columns (-t torch,mem) against torch.profiler's key_averages() with
profile_memory=True, on Debian's CPU PyTorch 1.13 (python3-torch, /usr/bin/python3).

torch.profiler gives an op the memory events (allocations +, frees -) whose time lies in the
op's [start, end], by any thread of the process (torch/autograd/profiler.py,
_parse_kineto_results), its self memory less its children's, and sums them per name
(key_averages); memory in no op's time is its "[memory]" row. It does so on times it has
first cut to whole microseconds (KinetoEvent's start_us and duration_us), which moves an
event at an op's edge in or out of it: bpfsight attributes on its ns times. So the test
holds three things exactly, every key, every column: the profiler's own rule (profiler_rule,
below, written after torch's code) applied to its own events at us gives its key_averages;
the same rule on the same events at ns (key_averages' merge of an op into a same-named
parent whose only child it is included, as torch 2.x applies it at ns) gives bpfsight's
torch_op_sum; hence the two differ exactly where the profiler's rounding moved events, and
nowhere else.
"""
import bisect
import collections
import json
import os

from helpers import (BPFSIGHT, Recorder, check, dump, eq, run, spawn, stats, tmpdir,
                     wait_for)
from synth import Trace
from test_torch import need_torch

# For tests/run_tests.py: about how long these tests take on CI's machine (its order).
SECONDS = 40

PY = "/usr/bin/python3"
TRAIN = os.path.join(os.path.dirname(__file__), "..", "workloads", "torch_mem_train.py")
# profiler_util.py's _filter_name: events key_averages never shows (nor nests)
FILTERED = {"[memory]", "[OutOfMemory]", "profiler::_record_function_enter",
            "profiler::_record_function_enter_new", "profiler::_record_function_exit",
            "aten::is_leaf", "aten::output_nr", "aten::_version"}


def profiler_rule(ops, mem, us, merge):
    """{key: [count, self memory, memory]} as torch 1.13's key_averages() makes them from
    OPS [name, tid, start_ns, end_ns] and memory events MEM [tid, ns, bytes] of one process:
    US cuts times to us as KinetoEvent does (start_ns // 1000, its duration // 1000), MERGE
    drops an op that is its same-named parent's only child (EventList._remove_dup_nodes)."""
    if us:
        ops = [[n, t, s // 1000, s // 1000 + (e - s) // 1000] for n, t, s, e in ops]
        mem = [[t, ns // 1000, b] for t, ns, b in mem]
    ops = [o for o in ops if o[0] not in FILTERED]
    times = sorted((ns, i) for i, (_, ns, _) in enumerate(mem))
    at = [ns for ns, _ in times]
    used, total = set(), []
    for _, _, s, e in ops:  # MemRecordsAcc.in_interval: any thread, both ends in
        inside = [i for _, i in times[bisect.bisect_left(at, s):bisect.bisect_right(at, e)]]
        used.update(inside)
        total.append(sum(mem[i][2] for i in inside))
    # EventList._populate_cpu_children: per thread, by (start, -end), a stack of parents
    parent, kids = {}, collections.defaultdict(list)
    for tid in {o[1] for o in ops}:
        stack = []
        for i in sorted((i for i, o in enumerate(ops) if o[1] == tid),
                        key=lambda i: (ops[i][2], -ops[i][3])):
            while stack and (ops[i][2] >= ops[stack[-1]][3] or ops[i][3] > ops[stack[-1]][3]):
                stack.pop()
            if stack:
                parent[i] = stack[-1]
                kids[stack[-1]].append(i)
            stack.append(i)
    alive = set(range(len(ops)))
    while merge:
        gone = [i for i in sorted(alive) if i in parent and ops[parent[i]][0] == ops[i][0]
                and len(kids[parent[i]]) == 1]
        if not gone:
            break
        for i in gone:
            kids[parent[i]] = kids[i]
            for k in kids[i]:
                parent[k] = parent[i]
            alive.discard(i)
    out = collections.defaultdict(lambda: [0, 0, 0])
    for i in alive:
        row = out[ops[i][0]]
        row[0] += 1
        row[1] += total[i] - sum(total[k] for k in kids[i])
        row[2] += total[i]
    for i in set(range(len(mem))) - used:  # the top-level "[memory]" events
        row = out["[memory]"]
        row[0] += 1
        row[1] += mem[i][2]
        row[2] += mem[i][2]
    return dict(out)


def capture_steps(train_args, record_opts):
    """TRAIN (with TRAIN_ARGS) warm, attached to with record -p --inject
    --capture-range=steps:3 (and RECORD_OPTS) for the 3 steps it profiles itself:
    (pid, the profiler's JSON, the trace)."""
    d = tmpdir()
    go, out, trace = (os.path.join(d, f) for f in ("go", "profile.json", "t.bst"))
    w = spawn([PY, TRAIN, "--go", go, "--out", out, *train_args])
    pid = workload_line(w, lambda l: "ready" in l, "the workload's warmup", 180)["ready"]
    rec = Recorder("-p", str(pid), "--inject", "--capture-range=steps:3", *record_opts,
                   out=trace)
    rec.wait_ready(120)
    workload_line(w, lambda l: l.get("callbacks"), "bpfsight's RecordFunction callback", 60)
    open(go, "w").close()
    eq(rec.wait(180), 0, f"record ({rec.stderr[-800:]})")
    check("3 steps captured" in rec.stderr, rec.stderr[-800:])
    workload_line(w, lambda l: l.get("done"), "the profile written", 120)
    eq(w.wait(60), 0, "the workload's exit")
    with open(out) as f:
        return pid, json.load(f), trace


def workload_line(w, pred, what, timeout=60):
    """Read W's JSON lines until one satisfies PRED; returns it."""
    found = []

    def one():
        line = w.stdout.readline()
        if not line:
            raise AssertionError(f"{what}: the workload ended: {w.stderr.read()[-600:]}")
        found.append(json.loads(line))
        return pred(found[-1])
    wait_for(one, timeout, what)
    return found[-1]


def test_mem_torch_op_sum_equals_torch_profiler():
    """A CPU training loop (convolutions, batch norm, AdamW, a DataLoader with 2 workers)
    attached to when warm: record -p --inject -t torch,mem --capture-range=steps:3 captures
    the 3 steps torch.profiler(profile_memory=True) profiles in the job itself. Every op
    name's calls, Self CPU Mem and CPU Mem in torch_op_sum equal the profiler's own events
    attributed at ns, the "[memory]" row too; those equal key_averages() but where its us
    rounding moved an event (checked by reproducing key_averages exactly from the same
    events). Event by event, the profiler's allocations and frees are bpfsight's, of the
    same sizes: the DataLoader's batches, which arrive in shared memory (at::MapAllocator)
    inside its __next__ scope, among them."""
    need_torch()
    pid, prof, trace = capture_steps([], ["-t", "torch,mem"])

    # The rule is torch's: at us it gives key_averages, every key and column.
    ka = {k: [c, s, t] for k, c, s, t in prof["key_averages"]}
    cpu_mem = [[tid, ns, b] for tid, ns, b, dev in prof["mem"] if dev == "cpu"]
    eq(len(cpu_mem), len(prof["mem"]), "the profiler's memory events are all the CPU's")
    eq(profiler_rule(prof["ops"], cpu_mem, us=True, merge=True), ka,
       "key_averages from the profiler's own events by its rule, at us")

    # bpfsight's torch_op_sum: the same rule at ns, key_averages' merge of an op into its
    # same-named parent when it is its only child (torch 2.x's rule: it nests by ns).
    p = run([BPFSIGHT, "stats", trace, "--pid", str(pid), "-r", "torch_op_sum", "--format",
             "json"], check=True)
    rows = json.loads(p.stdout)["reports"]["torch_op_sum"]
    mine = collections.defaultdict(lambda: [0, 0, 0])
    for r in rows:  # key_averages' key is the name (bpfsight's rows: name and scope)
        m = mine[r["name"]]
        m[0] += r["count"]
        m[1] += r["self_cpu_mem_bytes"]
        m[2] += r["cpu_mem_bytes"]
        eq((r["cuda_mem_bytes"], r["self_cuda_mem_bytes"]), (0, 0), f"{r['name']}: CUDA memory")
    at_ns = profiler_rule(prof["ops"], cpu_mem, us=False, merge=True)
    eq(dict(mine), at_ns, "torch_op_sum: calls, Self CPU Mem, CPU Mem of every name")
    check(at_ns != profiler_rule(prof["ops"], cpu_mem, us=False, merge=False), "some merged")

    # Against key_averages itself: the names whose events its rounding moved nothing of
    # are equal as they are.
    with_mem = [k for k, (c, s, t) in ka.items() if s or t]
    same = [k for k in with_mem if ka[k] == at_ns.get(k)]
    check(len(with_mem) > 40 and "[memory]" in with_mem, f"names with memory: {with_mem}")
    check(same, "names the profiler's rounding left alone")
    for k in same:
        eq(mine[k], ka[k], f"{k}: as key_averages")
    # Event by event: every allocation and free the profiler saw, bpfsight saw, of the same
    # size (a free's from its allocation; nothing for a CPU block freed that it never saw
    # allocated, as the profiler has no event for it; a Delete's own report counted once).
    ev = [e for e in dump(trace) if e["kind"] == "mem_alloc" and e["pid"] == pid]
    sizes = collections.Counter(e["args"]["bytes"] * (-1 if e["name"] == "free" else 1)
                                for e in ev if e["args"]["bytes"])
    eq(sizes, collections.Counter(b for _, _, b in cpu_mem), "memory events by size")
    # Among them the batches, in shared memory (at::MapAllocator's reports): each step's
    # replaces the one before, whose 16 images and 16 labels are unmapped (the first mapped
    # before the range: its record's size).
    maps = collections.Counter((e["name"], e["args"]["bytes"]) for e in ev
                               if e["args"]["source"] == "profiler_report" and e["args"]["bytes"])
    eq((maps[("free", 16 * 3 * 32 * 32 * 4)], maps[("free", 16 * 8)]), (3, 3),
       "the batches unmapped")


def test_mem_torch_op_sum_rules():
    """Hand-made records, each rule once: an allocation counts in every op around it (self in
    the innermost), any thread of the process (not another process); a free counts its
    block's size (a GPU free unseen allocated: its record's; a CPU free unseen: nothing); a
    CPU Delete's own report of the same free (torch.profiler running) counts once; a map's
    unmap of an unseen map counts its record's size; what no op holds is "[memory]"."""
    t = Trace("proc,torch,mem")
    t.process(10, "train")
    t.process(20, "other")
    t.torch_op(10, 11, 1000, 1000, "outer")                      # [1000, 2000]
    t.torch_op(10, 11, 1200, 300, "inner", depth=1)              # [1200, 1500]
    t.torch_op(20, 21, 1000, 1000, "outer")                      # another process
    t.mem_alloc(10, 11, 1200, 0xa0, 4096, device=0)              # inner's start: in both
    t.mem_alloc(10, 11, 1500, 0xb0, 64)                          # inner's end: in both
    t.mem_alloc(10, 12, 1600, 0xc0, 1000)                        # another thread: outer
    t.mem_alloc(10, 11, 1700, 0xa0, 4096, device=0, free=True)  # freed
    t.mem_alloc(10, 11, 1710, 0xd0, 512, device=0, free=True)    # unseen: its record's
    t.mem_alloc(10, 11, 1720, 0xe0, 0, free=True)                # CPU unseen: nothing
    t.mem_alloc(10, 11, 1800, 0xb0, 0, free=True)                # Delete: 64
    t.mem_alloc(10, 11, 1801, 0xb0, 64, free=True, source=2)     # its own report: once
    t.mem_alloc(10, 11, 1900, 0xf0, 8192, free=True, source=2)   # a map made before: 8192
    t.mem_alloc(20, 21, 1300, 0xa0, 7)                           # the other process's
    t.mem_alloc(10, 11, 2001, 0x100, 32)                         # after every op
    t.mem_alloc(10, 11, 999, 0x110, 16, device=0)                # before
    path = t.write(tmpdir())
    rows = {(r["name"], r["scope"], r["pid"]): r
            for r in stats(path, "torch_op_sum")["torch_op_sum"]}
    cols = ("count", "cpu_mem_bytes", "self_cpu_mem_bytes", "cuda_mem_bytes",
            "self_cuda_mem_bytes")

    def of(name, scope="function", pid=10):
        return tuple(rows[(name, scope, pid)][c] for c in cols)
    # outer: 64 + 1000 - 64 - 8192 on the CPU, 4096 - 4096 - 512 on cuda:0; the other
    # process's outer (a row of its own: a process column) has its 7
    eq(of("inner"), (1, 64, 64, 4096, 4096), "inner")
    eq(of("outer"), (1, 64 + 1000 - 64 - 8192, 1000 - 64 - 8192, -512, -4096 - 512), "outer")
    eq(of("outer", pid=20), (1, 7, 7, 0, 0), "the other process's outer")
    eq(of("[memory]", None, None), (2, 32, 32, 16, 16), "[memory]")
    eq(len(rows), 4, f"rows: {sorted(rows, key=str)}")
    # Without mem's records the columns are not there.
    t = Trace("proc,torch")
    t.process(10, "train")
    t.torch_op(10, 11, 1000, 1000, "outer")
    rows = stats(t.write(tmpdir()), "torch_op_sum")["torch_op_sum"]
    eq([sorted(k for k in r if "mem" in k) for r in rows], [[]], "no memory columns")
