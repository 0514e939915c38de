"""--stacks=torch on Debian's CPU PyTorch 1.13: every op the cupti-shim records carries the
stack that called it (Python frames and native), as torch.profiler(with_stack=True) gives it.

The workload (tests/workloads/torch_stacks.py) calls its ops from lines marked "# LINE name";
run once, it calls work() twice from one line, the first time under torch.profiler with
with_stack=True (its events' stacks written to a file), so both give the stacks of the same
calls in the same process. torch 1.13's with_stack names each Python function by the line
its frame was at when the profiler first saw it (a function called under it: its def line;
one already running: the line then) and lists the C functions called from Python
("<built-in method mm ...>") among them; bpfsight names the line each frame is at when the op
runs, and only Python and native frames.
"""
import atexit
import collections
import json
import os
import re
import shutil
import sqlite3
import tempfile

from helpers import Recorder, check, dump, eq, need_root, record, spawn, tell, tmpdir, wait_for
from test_export_perfetto import decode, need_protoc
from test_export_stacks import (Stacks, dump_frames, export, kineto_stack, sql_frames,
                                track_events)
from test_torch import PY, need_torch

# For tests/run_tests.py: about how long these tests take on CI's machine (its order).
# Not SPLIT: the first two tests read one recording (stacks_trace), made once per job.
SECONDS = 40

WORK = os.path.realpath(os.path.join(os.path.dirname(__file__), "..", "workloads",
                                     "torch_stacks.py"))


def marks():
    """{name: line} of the workload's "# LINE name" marks, and its def lines by function."""
    m, defs = {}, {}
    with open(WORK) as f:
        for i, l in enumerate(f, 1):
            if "# LINE " in l:
                m[l.split("# LINE ")[1].strip()] = i
            d = re.match(r"def (\w+)\(", l)
            if d:
                defs[d.group(1)] = i
            if l.startswith("    main()"):
                m["main"] = i
    return m, defs


_traces = {}


def stacks_trace():
    """`record -t torch --stacks=torch` of the workload, made once per run of this file (the
    first two tests read the same recording, each asserting its own): (the trace, the file of
    torch.profiler's stacks the workload wrote)."""
    if "torch" not in _traces:
        need_root()
        d = tempfile.mkdtemp(prefix="bpfsight-torch-stacks-")  # not a test's: kept for both
        atexit.register(shutil.rmtree, d, True)
        prof = os.path.join(d, "prof.json")
        p, out = record([PY, WORK, prof], "-t", "torch", "--stacks=torch",
                        out=os.path.join(d, "t.bst"))
        eq(p.returncode, 0, f"record ({p.stderr[-600:]})")
        _traces["torch"] = out, prof
    return _traces["torch"]


def python_frames(e):
    """An event's Python frames, innermost first: (function, file's base name, line)."""
    return [(f["func"], os.path.basename(f["file"]), f["line"])
            for f in e.get("stack", []) if "line" in f]


def native_frames(e):
    return [f for f in e.get("stack", []) if "line" not in f]


def expected(L):
    """By op name, the workload's frames (function, line) an op of work() may have below
    work()'s caller, innermost first (aten::empty and aten::fill_ run on two lines)."""
    at_add = [("add", L["add"]), ("outer", L["add_call"]), ("work", L["outer"])]
    at_mm = [("inner", L["mm"]), ("outer", L["inner"]), ("work", L["outer"])]
    at_scope = [("outer", L["scope"]), ("work", L["outer"])]
    at_sum = [("outer", L["sum"]), ("work", L["outer"])]
    at_ones = [("work", L["ones"])]
    return {"aten::ones": [at_ones], "aten::fill_": [at_ones, at_sum],
            "aten::empty": [at_ones, at_scope], "aten::mm": [at_mm],
            "aten::resolve_conj": [at_mm], "aten::zeros": [at_scope],
            "aten::zero_": [at_scope], "scope": [at_scope], "aten::add": [at_add],
            "aten::sum": [at_sum], "aten::as_strided": [at_sum]}


def check_op_stacks(ops, L, caller, tail=None):
    """Every op's Python frames: those of the workload exactly EXPECTED's, then TAIL (main
    at CALLER, then <module> at main()'s call), below them torch's own Python code where the
    op came from it (record_function's methods); its native frames: torch's first (the
    callback is called from torch's RecordFunction; the shim's own frames are dropped)."""
    want = expected(L)
    tail = tail or [("main", caller), ("<module>", L["main"])]
    for o in ops:
        py = python_frames(o)
        mine = [(f, l) for f, b, l in py if b == "torch_stacks.py"]
        check(any(mine == w + tail for w in want[o["name"]]),
              f"{o['name']}: workload frames {mine}, expected one of "
              f"{[w + tail for w in want[o['name']]]}")
        native = native_frames(o)
        check(native and "libtorch_cpu" in native[0]["file"] and
              not any("bpfsight-shim" in f.get("file", "") for f in native),
              f"{o['name']}: native frames {native}")


def profiler_stacks(path):
    """torch.profiler's events as {(op name, ((function, file's base name), ...))}: its
    Python entries, innermost first, without the C functions it lists among them."""
    out = set()
    for name, stack in json.load(open(path)):
        frames = []
        for entry in stack:
            m = re.match(r"^(.+)\((\d+)\): (.+)$", entry)
            if m:
                frames.append((m.group(3), os.path.basename(m.group(1)), int(m.group(2))))
            else:
                check(entry.startswith("<built-in "), f"a with_stack entry: {entry}")
        out.add((name, tuple(frames)))
    return out


def test_torch_stacks_name_the_lines_torch_profiler_names():
    """`record -t torch --stacks=torch`: every op of both calls of work() carries its stack;
    its Python frames are the workload's functions at the exact lines that called the op, in
    the order torch.profiler(with_stack=True) gives for the same op in the same process
    (the same functions and files, innermost first; torch's lines are its functions' def
    lines where ours are the calling lines); a user scope's stack is where it began
    (record_function.__enter__), as torch's."""
    need_torch()
    out, prof = stacks_trace()
    L, defs = marks()
    events = dump(out)
    ops = [e for e in events if e["kind"] == "torch_op"]
    names = collections.Counter(o["name"] for o in ops)
    eq(set(names), set(expected(L)), "the ops recorded")
    eq(names["aten::mm"], 2, "work()'s two calls")
    check(all(python_frames(o) for o in ops),
          f"ops without Python frames: {[o['name'] for o in ops if not python_frames(o)]}")
    check_op_stacks(ops, L, L["work"])
    scope = [python_frames(o) for o in ops if o["name"] == "scope"]
    for py in scope:
        eq([f.split(".")[-1] for f, b, l in py[:2]], ["__call__", "__enter__"],
           "the user scope's stack: where it began (record_function.__enter__)")

    # torch.profiler's stacks of the same ops: the same functions in the same order.
    theirs = profiler_stacks(prof)
    mine = {(o["name"], tuple((f.split(".")[-1], b) for f, b, l in python_frames(o)))
            for o in ops}
    eq(mine, {(n, tuple((f, b) for f, b, l in s)) for n, s in theirs},
       "(op, Python functions) as torch.profiler's with_stack")
    # Its lines: a function's def line (where its frame was when the profiler saw it come).
    for n, s in theirs:
        for f, b, line in s:
            if b == "torch_stacks.py" and f in ("add", "inner", "outer", "work"):
                eq(line, defs[f], f"torch.profiler's line of {f} ({n})")


def test_torch_stacks_in_every_export():
    """Each op's stack in the exports is dump's, frame for frame: Perfetto's slice callstack
    (an instant's, for an op of 0 ns), Chrome's Kineto "Call stack", SQLite's callchainId
    into BPFSIGHT_CALLCHAINS."""
    need_torch()
    need_protoc()
    out, _ = stacks_trace()  # test_torch_stacks_name_the_lines_torch_profiler_names' recording
    ops = [e for e in dump(out) if e["kind"] == "torch_op"]
    check(ops and all("stack" in o for o in ops), f"{len(ops)} ops, all with a stack")
    by_ts = {(o["ts"], o["name"]): o for o in ops}
    eq(len(by_ts), len(ops), "ops told apart by start and name")

    packets = decode(export(out, "perfetto", "t.pftrace"))
    stacks, seen = Stacks(packets), set()
    for ts, name, kind, callstack in track_events(packets):
        o = by_ts.get((ts, name))
        # An op of 0 ns (two clock reads alike) is an instant.
        if o is None or kind != ("TYPE_SLICE_BEGIN" if o["dur"] else "TYPE_INSTANT"):
            continue
        eq(stacks.stacks[callstack], dump_frames(o["stack"]), f"perfetto: {name} at {ts}")
        seen.add((ts, name))
    eq(sorted(set(by_ts) - seen), [], "perfetto: ops without a slice with their stack")

    seen = 0
    for c in json.load(open(export(out, "chrome", "t.json")))["traceEvents"]:
        o = by_ts.get((round(float(c.get("ts", 0)) * 1000), c.get("name")))
        if o is None or c.get("ph") != "X":
            continue
        eq(c["args"]["Call stack"], kineto_stack(o["stack"]), f"chrome: {o['name']}")
        seen += 1
    eq(seen, len(ops), "chrome: ops with their stacks")

    db = sqlite3.connect(export(out, "sqlite", "t.sqlite"))
    seen = 0
    for start, name, chain in db.execute(
            "SELECT o.start, s.value, o.callchainId FROM BPFSIGHT_TORCH_OPS o"
            " JOIN StringIds s ON s.id = o.nameId"):
        o = by_ts[(start, name)]
        eq(sql_frames(db, chain), dump_frames(o["stack"]), f"sqlite: {name} at {start}")
        seen += 1
    eq(seen, len(ops), "sqlite: ops with their stacks")


def test_torch_stacks_only_when_asked_and_over_the_threshold():
    """Without --stacks no op carries a stack; with --stacks=torch:300us exactly the ops that
    lasted 300 us or more do (the user scope, whose stack is taken at its start, whatever its
    length), a 256x256 mm among them and work()'s small ops not."""
    need_torch()
    d = tmpdir()
    p, out = record([PY, WORK, os.path.join(d, "p.json")], "-t", "torch")
    eq(p.returncode, 0, f"record ({p.stderr[-600:]})")
    ops = [e for e in dump(out) if e["kind"] == "torch_op"]
    check(len(ops) >= 30, f"{len(ops)} ops")
    eq([o["name"] for o in ops if "stack" in o], [], "ops with a stack without --stacks")

    p, out = record([PY, WORK, os.path.join(d, "p.json"), "--size", "256"], "-t", "torch",
                    "--stacks=torch:300us")
    eq(p.returncode, 0, f"record ({p.stderr[-600:]})")
    ops = [e for e in dump(out) if e["kind"] == "torch_op"]
    L, _ = marks()
    for o in ops:
        want = o["dur"] >= 300000 or o["args"]["scope"] == "user_scope"
        eq("stack" in o, want, f"{o['name']} of {o['dur']} ns: a stack")
    check_op_stacks([o for o in ops if "stack" in o], L, L["work"])
    with_stack = {o["name"] for o in ops if "stack" in o}
    # Which small op stays under the threshold is the machine's load's to say (a preempted
    # resolve_conj lasts 300 us too): the per-op check above is the exact one.
    check("aten::mm" in with_stack and any("stack" not in o for o in ops),
          f"ops with a stack: {with_stack}")


def test_torch_stacks_attach_with_inject_and_threads():
    """`record -p PID -t torch --stacks=torch --inject` on a running process without the shim:
    once the callback is there, every op of work() carries the stack of the line it came
    from; then two Python threads and the main thread run work() at once (torch's bindings
    release the GIL around each op, so their ops interleave): each op's stack is its own
    thread's, down to the function the thread started in. The recording stops before the
    job does: every frame is named while its code lives."""
    need_torch()
    w = spawn([PY, WORK, "--go", "--size", "64"])
    line = w.stdout.readline()
    if not line.startswith("ready"):
        raise AssertionError(f"workload: {line} {w.stderr.read()[-300:]}")
    pid = int(line.split()[1])
    rec = Recorder("-p", str(pid), "-t", "torch", "--stacks=torch", "--inject")
    rec.wait_ready()

    def one(cmd="run"):
        tell(w, cmd)
        line = w.stdout.readline()
        if not line:
            raise AssertionError(f"the workload ended: {w.stderr.read()[-300:]}")
        return json.loads(line)["callbacks"]

    # --inject's shim comes within seconds; then 3 calls with the callback there all along.
    wait_for(one, 60, "the callback registered")
    for _ in range(3):
        one()
    check(one("threads 2"), "the callback still there")
    eq(rec.stop(), 0, f"record ({rec.stderr[-600:]})")
    check("--inject: pid" in rec.stderr, rec.stderr[-600:])
    tell(w, "stop")
    w.communicate(timeout=60)
    L, _ = marks()
    ops = [e for e in dump(rec.out) if e["kind"] == "torch_op"]
    check(all(python_frames(o) for o in ops),
          f"ops without Python frames: {[o['name'] for o in ops if not python_frames(o)]}")
    tail = [("main", None), ("<module>", L["main"])]
    main = [o for o in ops if o["tid"] == pid]
    alone = [o for o in main if ("threaded", L["main_threads"]) not in
             [(f, l) for f, b, l in python_frames(o)]]
    check(collections.Counter(o["name"] for o in alone)["aten::mm"] >= 3, "three calls' mm")
    check_op_stacks(alone, L, None, [("main", L["run"])] + tail[1:])
    check_op_stacks([o for o in main if o not in alone], L, None,
                    [("threaded", L["main_threads"]), ("main", L["threads_call"])] + tail[1:])
    threads = collections.defaultdict(list)
    for o in ops:
        if o["tid"] != pid:
            threads[o["tid"]].append(o)
    eq(len(threads), 2, "threads with ops")
    for t in threads.values():
        eq(collections.Counter(o["name"] for o in t)["aten::mm"], 3, "work() 3 times a thread")
        check_op_stacks(t, L, None, [("in_thread", L["thread"])])
        for o in t:
            eq([f for f, b, l in python_frames(o)][-2:],
               ["Thread._bootstrap_inner", "Thread._bootstrap"],
               f"{o['name']}: a thread's outermost frames")
