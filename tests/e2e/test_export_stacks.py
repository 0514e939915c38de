"""Stacks in the timeline exports, checked against stats and dump of the same recording:
- Perfetto (decoded by protoc against ../shared/schemas): cpu samples are PerfSample packets
  whose interned callstacks give cpu_sum's per-function self and total counts exactly; a
  CUDA call's TrackEvent.callstack_iid and a GIL wait's holder_stack annotation (interned
  strings) are dump's frames, function, file and line;
- Chrome JSON: Kineto's "Call stack" (and "Holder call stack") strings are dump's frames;
  samples' "sf" nodes of "stackFrames" give cpu_sum's counts;
- SQLite: docs/EXPORT.md's cpu_sum, cuda_callsites and gil_stacks queries give stats' rows
  exactly, and a row's callchainId frames are dump's.
Workloads with known stacks: cpu_split (test_cpu), py_cuda.py (test_stacks_cuda), gil_work.py
(test_stacks_gil)."""
import collections
import json
import os
import shutil
import sqlite3

from helpers import (BPFSIGHT, Recorder, Skip, check, docs_query, dump, eq, need_root, record, run,
                     spawn, stats, tell, tmpdir, workload)
from test_export_gil import rows, same_rows
from test_export_perfetto import decode, need_protoc, one
from test_gil import need_pyenv, pyenv_python
from test_stacks_cuda import CUDART, PY_CUDA, marker_line
from test_stacks_gil import WORK as GIL_WORK
from test_stacks_gil import line_of

# For tests/run_tests.py: about how long these tests take on CI's machine (its order).
SECONDS = 8

CPU_SPLIT = workload("cpu_split")


def export(trace, fmt, name):
    out = os.path.join(tmpdir(), name)
    run([BPFSIGHT, "export", trace, "--format", fmt, "-o", out], check=True, timeout=300)
    return out


def frame_text(f):
    """A dump frame as Kineto's "Call stack" writes it."""
    if "line" in f:
        return f"{f['file']}({f['line']}): {f['func']}"
    if "addr" in f:
        return f"{f['file'] or '[unknown]'}({f['addr']}): {f['func']}"
    return f["func"]


def kineto_stack(stack):
    return ";".join(frame_text(f) for f in stack)


class Stacks:
    """A decoded Perfetto export's interned callstacks: iid -> [(func, file, line)], innermost
    first (file: the mapping's path, "" for "[unknown]"; line: 0 for native frames)."""

    def __init__(self, packets):
        funcs, parts, maps, srcs, frames = {}, {}, {}, {}, {}
        self.stacks = {}
        for pk in packets:
            for idata in pk.get("interned_data", []):
                for e in idata.get("function_names", []):
                    funcs[one(e, "iid")] = one(e, "str")
                for e in idata.get("mapping_paths", []):
                    parts[one(e, "iid")] = one(e, "str")
                for e in idata.get("source_paths", []):
                    srcs[one(e, "iid")] = one(e, "str")
                for e in idata.get("mappings", []):
                    path = "/".join(parts[p] for p in e.get("path_string_ids", []))
                    # Pseudo-files ([vdso]) are one part, paths are absolute; the kernel's
                    # and unknown code's have no file in stats.
                    path = path if path.startswith("[") else "/" + path
                    maps[one(e, "iid")] = ("" if path in ("[unknown]", "[kernel.kallsyms]")
                                           else path)
                for e in idata.get("frames", []):
                    check(one(e, "iid") not in frames, "a frame interned twice")
                    src = one(e, "source_path_iid")
                    frames[one(e, "iid")] = (funcs[one(e, "function_name_id")],
                                             maps[one(e, "mapping_id")],
                                             one(e, "line_number", 0))
                    if src:
                        eq(srcs[src], maps[one(e, "mapping_id")], "a Python frame's source")
                for e in idata.get("callstacks", []):
                    check(one(e, "iid") not in self.stacks, "a callstack interned twice")
                    # Perfetto's order is outermost first; dump's innermost first.
                    self.stacks[one(e, "iid")] = [frames[f] for f in
                                                  reversed(e.get("frame_ids", []))]


def track_events(packets):
    """A decoded Perfetto export's track events: (timestamp, name, type, callstack iid)."""
    names = {}
    for pk in packets:
        for idata in pk.get("interned_data", []):
            for e in idata.get("event_names", []):
                names[one(e, "iid")] = one(e, "name")
        for te in pk.get("track_event", []):
            yield (one(pk, "timestamp"), names.get(one(te, "name_iid")), one(te, "type"),
                   one(te, "callstack_iid"))


def dump_frames(stack):
    return [(f["func"], f["file"], f.get("line", 0)) for f in stack]


def sql_frames(db, chain):
    """The frames of stack CHAIN in the SQLite export, innermost first, as dump_frames."""
    return [tuple(r) for r in db.execute(
        "SELECT s.value, f.value, COALESCE(c.line, 0) FROM BPFSIGHT_CALLCHAINS c"
        " JOIN StringIds s ON s.id = c.symbol JOIN StringIds f ON f.id = c.module"
        " WHERE c.id = ? ORDER BY c.stackDepth", (chain,))]


def per_function(stacks):
    """{(func, file): [self, total]} over (frames innermost first, count) pairs, as cpu_sum
    counts: the leaf is self, a function once per sample in total."""
    out = collections.defaultdict(lambda: [0, 0])
    for frames, n in stacks:
        if not frames:
            continue
        out[frames[0]][0] += n
        for f in set(frames):
            out[f][1] += n
    return {k: tuple(v) for k, v in out.items()}


def cpu_sum_counts(st):
    return {(r["func"], r["file"]): (r["self_samples"], r["total_samples"]) for r in st}


def by_query_order(report, *keys):
    """A report's rows in its docs query's order: KEYS (a leading "-" for descending), then
    function, file and line (stats orders exact ties by the order the recording met them)."""
    def key(r):
        return [-r[k[1:]] if k[0] == "-" else r[k] for k in keys] + [r["func"], r["file"],
                                                                      r["line"]]
    return sorted(report, key=key)


def test_cpu_samples_in_every_export():
    """cpu_split at 999 Hz: cpu_sum's self and total samples of every function (burn, burn_a,
    burn_b, run_split, main, [kernel]...) are what each export's samples add up to."""
    need_root()
    need_protoc()
    p, out = record([CPU_SPLIT, "split", "1"], "-t", "cpu", "--sample-rate", "999")
    eq(p.returncode, 0, f"record ({p.stderr[-400:]})")
    st = stats(out, "cpu_sum")["cpu_sum"]
    want = cpu_sum_counts(st)
    check(want.get(("burn", CPU_SPLIT), (0, 0))[0] > 100, f"burn's samples: {want}")
    nsamples = len([e for e in dump(out) if e["kind"] == "cpu_sample"])

    # Perfetto: one PerfSample per sample, its callstack the sample's stack.
    packets = decode(export(out, "perfetto", "t.pftrace"))
    stacks = Stacks(packets)
    samples = [pk["perf_sample"][0] for pk in packets if "perf_sample" in pk]
    eq(len(samples), nsamples, "PerfSample packets")
    check(all(one(s, "pid") and one(s, "tid") for s in samples), "samples name their thread")
    got = per_function((stacks.stacks.get(one(s, "callstack_iid")), 1) for s in samples)
    eq({(f, file): v for (f, file, _), v in got.items()}, want, "perfetto: per function")

    # Chrome: each sample's "sf" node, walked to the root, is its stack.
    doc = json.load(open(export(out, "chrome", "t.json")))
    nodes = doc["stackFrames"]

    def walk(sf):
        frames = []
        while sf is not None:
            n = nodes[str(sf)]
            cat = n["category"]
            frames.append((n["name"], "" if cat in ("[unknown]", "[kernel.kallsyms]") else cat,
                           n.get("line", 0)))
            sf = n.get("parent")
        return frames
    evs = [e for e in doc["traceEvents"] if e.get("cat") == "cpu_sample"]
    eq(len(evs), nsamples, "chrome: sample events")
    got = per_function((walk(e["sf"]) if "sf" in e else [], 1) for e in evs)
    eq({(f, file): v for (f, file, _), v in got.items()}, want, "chrome: per function")

    # SQLite: the documented query is the report.
    db = sqlite3.connect(export(out, "sqlite", "t.sqlite"))
    same_rows(rows(db, docs_query("cpu_sum")),
              by_query_order(st, "-self_samples", "-total_samples"), "cpu_sum")
    eq(db.execute("SELECT COUNT(*) FROM BPFSIGHT_CPU_SAMPLES").fetchone()[0], nsamples,
       "sqlite: sample rows")


def record_py_cuda(py, n, script=PY_CUDA):
    """py_cuda.py (or SCRIPT, which runs it) attached with -p and flushed while it lives
    (so its code is named)."""
    w = spawn([py, script, "--wait", str(n)])
    pid = int(w.stdout.readline().split()[1])
    r = Recorder("-t", "cuda", "--stacks=cuda:0", "-p", str(pid))
    r.wait_ready()
    tell(w, "go")
    w.stdout.readline()
    r.flush()
    tell(w, "end")
    eq(w.wait(30), 0, "workload exit")
    eq(r.wait(60), 0, f"recorder ({r.stderr[-300:]})")
    return pid, r.out


def test_cuda_call_stacks_in_every_export():
    """Every cudaMalloc of py_cuda.py is made by alloc() at its marked line: in each export
    the call's stack is dump's, frame for frame (function, file, line), and the SQLite
    cuda_callsites query is the report."""
    need_root()
    if not os.path.exists(CUDART):
        raise Skip(f"no CUDA toolkit ({CUDART})")
    need_protoc()
    py = pyenv_python(12) or need_pyenv(11)
    n = 4
    pid, out = record_py_cuda(py, n)
    calls = [e for e in dump(out) if e["kind"] == "cuda_api" and e["pid"] == pid
             and e["name"] in ("cudaMalloc", "cudaMemcpy") and e["args"].get("depth", 0) == 0]
    eq(len(calls), 2 * n, "calls")
    line = marker_line("CALL_MALLOC")
    for e in calls:
        if e["name"] == "cudaMalloc":
            pyf = [f for f in e["stack"] if "line" in f]
            eq((pyf[0]["func"], pyf[0]["file"], pyf[0]["line"]), ("alloc", PY_CUDA, line),
               "dump: the caller")
    by_ts = {(e["ts"], e["name"]): e for e in calls}

    # Perfetto: the slice's callstack_iid.
    packets = decode(export(out, "perfetto", "t.pftrace"))
    stacks = Stacks(packets)
    seen = 0
    for ts, name, kind, callstack in track_events(packets):
        e = by_ts.get((ts, name))
        if e is None or kind != "TYPE_SLICE_BEGIN":
            continue
        eq(stacks.stacks[callstack], dump_frames(e["stack"]), f"perfetto: {name} at {ts}")
        seen += 1
    eq(seen, len(calls), "perfetto: calls with their stacks")

    # Chrome: Kineto's "Call stack".
    doc = json.load(open(export(out, "chrome", "t.json")))
    seen = 0
    for c in doc["traceEvents"]:
        e = by_ts.get((round(float(c.get("ts", 0)) * 1000), c.get("name")))
        if e is None or c.get("ph") != "X":
            continue
        eq(c["args"]["Call stack"], kineto_stack(e["stack"]), f"chrome: {e['name']}")
        check(c["args"]["Call stack"].count(f"{PY_CUDA}({line}): alloc") ==
              (e["name"] == "cudaMalloc"), "chrome: alloc's line")
        seen += 1
    eq(seen, len(calls), "chrome: calls with their stacks")

    # SQLite: the report's query, and each row's frames.
    db = sqlite3.connect(export(out, "sqlite", "t.sqlite"))
    same_rows(rows(db, docs_query("cuda_callsites")),
              by_query_order(stats(out, "cuda_callsites")["cuda_callsites"], "-total_ns", "api"),
              "cuda_callsites")
    for start, name, chain in db.execute(
            "SELECT r.start, s.value, r.callchainId FROM CUPTI_ACTIVITY_KIND_RUNTIME r"
            " JOIN StringIds s ON s.id = r.nameId WHERE r.globalTid >> 24 = ?", (pid,)):
        e = by_ts.get((start, name))
        if e is None:
            continue
        frames = sql_frames(db, chain)
        eq(frames, dump_frames(e["stack"]), f"sqlite: {name} at {start}")


def test_cuda_callsites_name_the_jobs_own_line():
    """py_cuda.py installed as a package (in a site-packages folder) and run by a script of
    the job's: cuda_callsites names the script's line, with the package's call line beside
    it, and the SQLite query says the same, row for row."""
    need_root()
    if not os.path.exists(CUDART):
        raise Skip(f"no CUDA toolkit ({CUDART})")
    py = pyenv_python(12) or need_pyenv(11)
    d = tmpdir()
    lib = os.path.join(d, "site-packages")
    os.makedirs(lib)
    shutil.copy(PY_CUDA, lib)
    job = os.path.join(d, "job.py")
    with open(job, "w") as f:
        f.write(f"import sys\nsys.path.insert(0, {lib!r})\nimport py_cuda\n"
                "py_cuda.main()\n")
    pid, out = record_py_cuda(py, 3, job)
    got = stats(out, "cuda_callsites")["cuda_callsites"]
    mine = [r for r in got if r["api"] == "cudaMalloc" and r["file"] == job]
    eq([(r["func"], r["line"], r["via_func"], r["via_file"], r["via_line"], r["count"])
        for r in mine],
       [("<module>", 4, "alloc", os.path.join(lib, "py_cuda.py"), marker_line("CALL_MALLOC"),
         3)], "the job's line, the package's beside it")
    db = sqlite3.connect(export(out, "sqlite", "t.sqlite"))
    same_rows(rows(db, docs_query("cuda_callsites")),
              by_query_order(got, "-total_ns", "api"), "cuda_callsites")


def test_gil_holder_stacks_in_every_export():
    """gil_work.py hold: the spinner's wait through the holder's C call names mode_hold at
    that call's line as the holder and the spinner's sleep as the waiter, in each export as
    in dump; the SQLite gil_stacks query is the report."""
    need_root()
    need_protoc()
    py = need_pyenv()
    p, out = record([py, GIL_WORK, "hold", "300"], "-t", "gil")
    eq(p.returncode, 0, f"record ({p.stderr[-400:]})")
    waits = [e for e in dump(out) if e["kind"] == "gil_wait" and e.get("holder_stack")]
    check(waits, "waits with a holder stack")
    hold = ("mode_hold", os.path.realpath(GIL_WORK), line_of("pylibc.usleep(100000)"))
    check(any(dump_frames([f for f in w["holder_stack"] if "line" in f])[0] == hold
              for w in waits), f"dump: a wait held by {hold}")
    by_ts = {(w["ts"], w["tid"]): w for w in waits}

    # Perfetto: the waiter's callstack, the holder's frames as an annotation.
    packets = decode(export(out, "perfetto", "t.pftrace"))
    stacks = Stacks(packets)
    keys, strs, tracks, seen = {}, {}, {}, 0
    for pk in packets:
        for idata in pk.get("interned_data", []):
            for e in idata.get("debug_annotation_names", []):
                keys[one(e, "iid")] = one(e, "name")
            for e in idata.get("debug_annotation_string_values", []):
                check(one(e, "iid") not in strs, "an annotation string interned twice")
                strs[one(e, "iid")] = one(e, "str")
        for td in pk.get("track_descriptor", []):
            tracks[one(td, "uuid")] = td
        for te in pk.get("track_event", []):
            holder = [a for a in te.get("debug_annotations", [])
                      if keys[one(a, "name_iid")] == "holder_stack"]
            if not holder:
                continue
            td = tracks[one(te, "track_uuid")]
            while "thread" not in td:
                td = tracks[one(td, "parent_uuid")]
            w = by_ts[(one(pk, "timestamp"), one(td["thread"][0], "tid"))]
            eq([strs[one(v, "string_value_iid")] for v in holder[0]["array_values"]],
               [frame_text(f) for f in w["holder_stack"]], "perfetto: holder_stack")
            eq(stacks.stacks[one(te, "callstack_iid")], dump_frames(w["stack"]),
               "perfetto: the waiter's stack")
            seen += 1
    eq(seen, len(waits), "perfetto: waits with a holder stack")

    # Chrome: "Call stack" and "Holder call stack".
    doc = json.load(open(export(out, "chrome", "t.json")))
    seen = 0
    for c in doc["traceEvents"]:
        if c.get("name") != "gil_wait" or "Holder call stack" not in c.get("args", {}):
            continue
        w = by_ts[(round(float(c["ts"]) * 1000), c["tid"])]
        eq(c["args"]["Holder call stack"], kineto_stack(w["holder_stack"]), "chrome: holder")
        eq(c["args"]["Call stack"], kineto_stack(w["stack"]), "chrome: waiter")
        seen += 1
    eq(seen, len(waits), "chrome: waits with a holder stack")

    # SQLite: the report's query; the waits' holder frames.
    db = sqlite3.connect(export(out, "sqlite", "t.sqlite"))
    same_rows(rows(db, docs_query("gil_stacks")),
              by_query_order(stats(out, "gil_stacks")["gil_stacks"], "-total_ns", "role"),
              "gil_stacks")
    for start, tid, chain in db.execute("SELECT start, globalTid & 0xffffff, holderCallchainId"
                                        " FROM BPFSIGHT_GIL_WAITS WHERE holderCallchainId"
                                        " IS NOT NULL"):
        frames = sql_frames(db, chain)
        eq(frames, dump_frames(by_ts[(start, tid)]["holder_stack"]), "sqlite: holder frames")


def test_syscall_stacks_in_every_export():
    """--stacks=osrt:0 on the syscalls workload: every system call's stack (libc's syscall(),
    then the unwind marker: libc keeps no frame pointers) is dump's in Perfetto's slices,
    Chrome's "Call stack" and SQLite's OSRT_API.callchainId."""
    need_root()
    need_protoc()
    p, out = record([workload("syscalls"), "20", "2"], "-t", "osrt", "--osrt-threshold", "0",
                    "--stacks=osrt:0")
    eq(p.returncode, 0, f"record ({p.stderr[-400:]})")
    calls = {(e["ts"], e["tid"]): e for e in dump(out)
             if e["kind"] == "syscall" and e.get("stack")}
    check(len([e for e in calls.values() if e["name"] == "getppid"]) == 20,
          "the workload's 20 getppid calls have a stack")

    packets = decode(export(out, "perfetto", "t.pftrace"))
    stacks = Stacks(packets)
    tracks, seen = {}, 0
    for pk in packets:
        for td in pk.get("track_descriptor", []):
            tracks[one(td, "uuid")] = td
        for te in pk.get("track_event", []):
            if one(te, "callstack_iid") is None:
                continue
            td = tracks[one(te, "track_uuid")]
            while "thread" not in td:
                td = tracks[one(td, "parent_uuid")]
            e = calls[(one(pk, "timestamp"), one(td["thread"][0], "tid"))]
            eq(stacks.stacks[one(te, "callstack_iid")], dump_frames(e["stack"]),
               f"perfetto: {e['name']}")
            seen += 1
    eq(seen, len(calls), "perfetto: calls with a callstack")

    doc = json.load(open(export(out, "chrome", "t.json")))
    got = {(round(float(c["ts"]) * 1000), c["tid"]): c["args"]["Call stack"]
           for c in doc["traceEvents"] if "Call stack" in c.get("args", {})}
    eq(got, {k: kineto_stack(e["stack"]) for k, e in calls.items()}, "chrome: Call stack")

    db = sqlite3.connect(export(out, "sqlite", "t.sqlite"))
    got = {(start, tid): sql_frames(db, chain) for start, tid, chain in db.execute(
        "SELECT start, globalTid & 0xffffff, callchainId FROM OSRT_API"
        " WHERE callchainId IS NOT NULL")}
    eq(got, {k: dump_frames(e["stack"]) for k, e in calls.items()}, "sqlite: callchains")


def test_stack_queries_run_on_every_trace():
    """On a trace without stacks the three queries run and give nothing."""
    need_root()
    p, out = record(["/bin/true"], "-t", "osrt")
    eq(p.returncode, 0, "record")
    db = sqlite3.connect(export(out, "sqlite", "t.sqlite"))
    for name in ("cpu_sum", "cuda_callsites", "gil_stacks"):
        eq(rows(db, docs_query(name)), [], f"{name} on a trace without stacks")
