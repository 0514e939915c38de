"""The pyfunc family's readers on a synthetic trace (tests/e2e/synth.py): a training job's named
Python functions on two threads (nested calls, a recursive function, a generator's pieces ended
by yields and begun by resumes, a call unwound by an exception, one still running when the
recording ended), torch's steps, an NVTX range and torch ops on the same thread, and a second
process without steps. Exact: pyfunc_sum's cProfile columns and pyfunc_step_sum's per-step
figures, worked out by hand below; dump's fields; the ranges in Chrome (on their thread, args
file/line/domain/end), Perfetto (a "python functions" track under the thread) and SQLite
(BPFSIGHT_PYFUNC_EVENTS), nesting with NVTX and torch ops. Records come in a real trace's order: each piece when it ends
(children first), the open one last.
"""
import collections
import json
import os
import sqlite3

import synth
from helpers import BPFSIGHT, check, docs_query, dump, eq, need_root, run, stats, tmpdir
from test_export_gpu import Pf, check_nesting
from test_export_perfetto import need_protoc

# For tests/run_tests.py: about how long these tests take on CI's machine (its order).
SECONDS = 3
# For tests/run_tests.py: these tests read files only (no recording, no workload, nothing
# traced): they run beside the tests that run alone, on the core those leave idle.
BESIDE = "reads files only"

PID, MAIN, WORKER, OTHER = 700, 701, 702, 800
JOB, IO = "/job/train.py", "/site/pkg/io.py"

# (tid, ts, dur, function, line, depth, end, resumed), in the order the pieces end
PIECES = [
    (MAIN, 1100, 100, "__main__:batches", 40, 1, "yield", False),     # a generator's first run
    (WORKER, 1200, 800, "pkg.io:Reader.read", 5, 0, "return", False),
    (MAIN, 2220, 50, "__main__:leaf", 60, 5, "return", False),
    (MAIN, 2200, 100, "__main__:fib", 30, 4, "return", False),        # C, inside B
    (MAIN, 2100, 400, "__main__:fib", 30, 3, "return", False),        # B, inside A
    (MAIN, 2600, 200, "__main__:fib", 30, 3, "return", False),        # D, inside A
    (MAIN, 2000, 1000, "__main__:fib", 30, 2, "return", False),       # A, the outermost
    (WORKER, 3100, 300, "__main__:fib", 30, 1, "return", False),      # E, another thread
    (WORKER, 3000, 1200, "pkg.io:Reader.read", 5, 0, "return", False),
    (MAIN, 1500, 3000, "__main__:step", 20, 1, "return", False),
    (MAIN, 4600, 200, "__main__:batches", 40, 1, "yield", True),      # resumed, yields again
    (MAIN, 5100, 500, "__main__:load", 25, 2, "unwind", False),       # raises ...
    (MAIN, 5000, 2000, "__main__:step", 20, 1, "unwind", False),      # ... through step
    (MAIN, 7500, 50, "__main__:batches", 40, 1, "return", True),      # resumed, returns
    (MAIN, 1000, 10000, "__main__:train", 10, 0, "return", False),
    (OTHER, 2000, 100, "__main__:main", 1, 0, "return", False),
    (MAIN, 12000, 3000, "__main__:tail", 50, 0, "open", False),       # running at the end
]
FUNCS = {p[3] for p in PIECES}


def build():
    t = synth.Trace(families="proc,nvtx,torch,pyfunc")
    t.process(PID, "train")
    t.thread(PID, MAIN, "train")
    t.thread(PID, WORKER, "io")
    t.process(OTHER, "tool")
    for tid, ts, dur, func, line, depth, end, resumed in PIECES:
        pid = OTHER if tid == OTHER else PID
        t.pyfunc_call(pid, tid, ts, dur, func, IO if func.startswith("pkg") else JOB, line,
                      depth=depth, end=end, resumed=resumed,
                      domain="IO" if func.startswith("pkg") else None)
    # an NVTX range and torch ops on the main thread, nesting with its Python calls
    t.torch_op(PID, MAIN, 2230, 20, "aten::mm")              # inside leaf
    t.torch_op(PID, MAIN, 4000, 100, "aten::add")            # inside step, after fib
    t.range(PID, MAIN, 1400, 6000, "epoch")                  # around both steps
    t.torch_step(PID, MAIN, 1000, 4000, 1)
    t.torch_step(PID, MAIN, 5000, 4000, 2)
    return t.write(tmpdir())


_trace = None


def trace():
    """The trace, built again after a test's cleanup removed it."""
    global _trace
    if _trace is None or not os.path.exists(_trace):
        _trace = build()
    return _trace


# pyfunc_sum, by hand (cumtime order). fib: A 1000 holds B 400 and D 200 (self 400); B holds
# C 100 (self 300); C holds leaf 50 (self 50); D self 200; E 300 on the worker: tottime 1250,
# cumtime A + E = 1300 (B, C, D are inside A: recursion counted once), 5 calls, 2 primitive.
# train holds step 3000 + 2000 and the generator's pieces 100 + 200 + 50: self 4650.
SUM = {
    # function: (ncalls, tottime, cumtime, min, max, avg, calls, primitive, exceptions,
    #            yields, open, pid, file, line)
    "__main__:train": ("1", 4650, 10000, 10000, 10000, 10000.0, 1, 1, 0, 0, 0, PID, JOB, 10),
    "__main__:step": ("2", 3500, 5000, 2000, 3000, 2500.0, 2, 2, 1, 0, 0, PID, JOB, 20),
    "__main__:tail": ("1", 3000, 3000, 3000, 3000, 3000.0, 1, 1, 0, 0, 1, PID, JOB, 50),
    "pkg.io:Reader.read": ("2", 1700, 2000, 800, 1200, 1000.0, 2, 2, 0, 0, 0, PID, IO, 5),
    "__main__:fib": ("5/2", 1250, 1300, 100, 1000, 400.0, 5, 2, 0, 0, 0, PID, JOB, 30),
    "__main__:load": ("1", 500, 500, 500, 500, 500.0, 1, 1, 1, 0, 0, PID, JOB, 25),
    "__main__:batches": ("3", 350, 350, 50, 200, 350 / 3, 3, 3, 0, 2, 0, PID, JOB, 40),
    "__main__:main": ("1", 100, 100, 100, 100, 100.0, 1, 1, 0, 0, 0, OTHER, JOB, 1),
    "__main__:leaf": ("1", 50, 50, 50, 50, 50.0, 1, 1, 0, 0, 0, PID, JOB, 60),
}

# pyfunc_step_sum: steps [1000, 5000) and [5000, 9000) of PID; a call is its start's step.
# fib: all five in step 1, 1300 ns of cumtime -> 650 per step, 2.5 calls per step.
STEPS = {
    # function: (time_per_step, calls_per_step, min_step, max_step, steps, outside)
    "__main__:train": (5000.0, 0.5, 0, 10000, 2, 0),
    "__main__:step": (2500.0, 1.0, 2000, 3000, 2, 0),
    "pkg.io:Reader.read": (1000.0, 1.0, 0, 2000, 2, 0),
    "__main__:fib": (650.0, 2.5, 0, 1300, 2, 0),
    "__main__:load": (250.0, 0.5, 0, 500, 2, 0),
    "__main__:batches": (175.0, 1.5, 50, 300, 2, 0),
    "__main__:leaf": (25.0, 0.5, 0, 50, 2, 0),
    "__main__:tail": (0.0, 0.0, 0, 0, 2, 1),
}


def test_pyfunc_sum_exact():
    need_root()
    rep = stats(trace(), "pyfunc_sum,pyfunc_step_sum")
    got = {r["function"]: (r["ncalls"], r["tottime_ns"], r["cumtime_ns"], r["min_ns"],
                           r["max_ns"], r["avg_ns"], r["calls"], r["primitive_calls"],
                           r["exceptions"], r["yields"], r["open"], r["pid"], r["file"],
                           r["line"]) for r in rep["pyfunc_sum"]}
    want = {k: v[:5] + (round(v[5], 1),) + v[6:] for k, v in SUM.items()}  # one digit
    eq(got, want, "pyfunc_sum")
    eq([r["function"] for r in rep["pyfunc_sum"]], list(SUM), "cProfile's cumulative order")
    fib = [r for r in rep["pyfunc_sum"] if r["function"] == "__main__:fib"][0]
    eq((fib["tottime_percall_ns"], fib["cumtime_percall_ns"]), (250.0, 650.0),
       "percall: tottime / calls, cumtime / primitive calls (cProfile's)")

    got = {r["function"]: (r["time_per_step_ns"], r["calls_per_step"], r["min_step_ns"],
                           r["max_step_ns"], r["steps"], r["outside_steps"])
           for r in rep["pyfunc_step_sum"]}
    eq(got, STEPS, "pyfunc_step_sum (the process without steps left out)")
    eq([r["function"] for r in rep["pyfunc_step_sum"]], list(STEPS), "by time per step")

    text = run([BPFSIGHT, "stats", trace(), "-r", "pyfunc_sum,pyfunc_step_sum"], check=True).stdout
    check("1 calls were still running when the recording ended" in text, "the open call said")
    check("1 functions of processes without a step are left out" in text, "stepless said")
    check("5/2" in text, "cProfile's ncalls in the table")
    check("\n 1 calls began outside every step" in text, "tail's call, not the stepless process's")


def test_pyfunc_dump():
    need_root()
    evs = [e for e in dump(trace()) if e["kind"] == "pyfunc_call"]
    eq(len(evs), len(PIECES), "one event per piece")
    by = {(e["tid"], e["ts"]): e for e in evs}
    gen = by[(MAIN, 4600)]
    eq((gen["name"], gen["dur"], gen["args"]["file"], gen["args"]["line"], gen["args"]["end"],
        gen["args"]["resumed"], gen["args"]["depth"]),
       ("__main__:batches", 200, JOB, 40, "yield", True, 1), "a resumed generator piece")
    check("resumed" not in by[(MAIN, 1100)]["args"], "a first run is no resume")
    eq(by[(MAIN, 5000)]["args"]["end"], "unwind", "left by an exception")
    eq(by[(MAIN, 12000)]["args"]["end"], "open", "running at the end")
    eq(by[(WORKER, 1200)]["args"]["domain"], "IO", "the spec's domain")
    check("domain" not in by[(MAIN, 1000)]["args"], "no domain: none shown")


def test_pyfunc_exports():
    need_root()
    need_protoc()
    d = tmpdir()
    chrome = os.path.join(d, "t.json")
    run([BPFSIGHT, "export", trace(), "--format", "chrome", "-o", chrome], check=True)
    with open(chrome) as f:
        evs = json.load(f)["traceEvents"]
    py = [e for e in evs if e.get("cat") == "python_function"]
    eq(sorted((e["tid"], e["ts"] * 1000, e["dur"] * 1000, e["name"]) for e in py),
       sorted((tid, ts, dur, func) for tid, ts, dur, func, *_ in PIECES), "every piece, X")
    check(all(e["ph"] == "X" for e in py), "complete events")
    read = [e for e in py if e["ts"] * 1000 == 3000][0]
    eq((read["args"]["file"], read["args"]["line"], read["args"]["domain"], read["args"]["end"]),
       (IO, 5, "IO", "return"), "args: file, line, domain, end")
    # on the main thread, Python calls, the NVTX range and torch ops nest with each other
    # (steps run from one optimizer step's end to the next's: they cross calls)
    main = [(e["ts"] * 1000, (e["ts"] + e["dur"]) * 1000) for e in evs
            if e.get("tid") == MAIN and e.get("ph") == "X" and not e["name"].startswith("step ")]
    eq(len(main), sum(p[0] == MAIN for p in PIECES) + 3, "the thread's calls, ops and range")
    check_nesting([{"track": MAIN, "ts": round(a), "dur": round(b - a)} for a, b in main])

    pf_path = os.path.join(d, "t.pftrace")
    run([BPFSIGHT, "export", trace(), "--format", "perfetto", "-o", pf_path], check=True)
    pf = Pf(pf_path)
    check_nesting(pf.slices)
    got = collections.Counter((s["name"], s["ts"], s["dur"], pf.thread(s["track"])[1])
                              for s in pf.slices if pf.name(s["track"]) == "python functions")
    eq(got, collections.Counter((func, ts, dur, tid) for tid, ts, dur, func, *_ in PIECES),
       "every piece on its thread's \"python functions\" track")
    for s in pf.slices:
        if pf.name(s["track"]) == "python functions":
            check("thread" not in pf.tracks[s["track"]], "a child track of the thread")

    db = os.path.join(d, "t.sqlite")
    run([BPFSIGHT, "export", trace(), "--format", "sqlite", "-o", db], check=True)
    con = sqlite3.connect(db)
    rows = con.execute(
        "SELECT n.value, e.start, e.end - e.start, e.globalTid & 0xffffff, f.value, e.line, "
        "d.value, e.depth, e.endKind, e.resumed FROM BPFSIGHT_PYFUNC_EVENTS AS e "
        "JOIN StringIds AS n ON n.id = e.nameId JOIN StringIds AS f ON f.id = e.fileId "
        "LEFT JOIN StringIds AS d ON d.id = e.domainId").fetchall()
    eq(sorted(rows), sorted((func, ts, dur, tid, IO if func.startswith("pkg") else JOB, line,
                             "IO" if func.startswith("pkg") else None, depth, end, int(res))
                            for tid, ts, dur, func, line, depth, end, res in PIECES),
       "BPFSIGHT_PYFUNC_EVENTS")
    # the ops of the main thread join the calls by time on globalTid: docs/EXPORT.md's query
    eq(con.execute(docs_query("pyfunc_around_ops")).fetchall(),
       [(2230, "aten::mm", "__main__:leaf", 5), (4000, "aten::add", "__main__:step", 1)],
       "the innermost named call around each op")
