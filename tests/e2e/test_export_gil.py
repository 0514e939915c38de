"""The gil family in the three exports: real CPython recordings (tests/workloads/gil_work.py, as
test_gil.py records them) and synthetic traces with known answers (synth.py).

- Perfetto: protoc decodes it; every event is dump's one for one (GIL waits and holds as slices
  on the "GIL waits" / "GIL holds" tracks of their thread), and a "GIL contention" counter per
  python process whose values are the waiting time per 10 ms bin of dump's waits, exactly;
- Chrome: cat "gil", args as dump's, on their thread; "GIL contention" counter events;
- SQLite: the docs/EXPORT.md queries give gil_sum, gil_blocked_by and gil_procs of
  `stats --format json` exactly, the wait and hold rows are dump's.
"""
import atexit
import collections
import decimal
import json
import os
import shutil
import sqlite3
import tempfile

import helpers
from helpers import BPFSIGHT, check, docs_query, dump, eq, need_root, record, run, stats, tmpdir
import synth
from test_export_perfetto import Model, check_matches_dump, decode, need_protoc, one
from test_gil import need_pyenv

# For tests/run_tests.py: about how long these tests take on CI's machine (its order).
SECONDS = 8

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..", "..")
WORK = os.path.join(HERE, "..", "workloads", "gil_work.py")
BIN = 10 ** 7  # the counters' bin: 10 ms
MS = 10 ** 6

_cache = {}
_cache_dir = None


def cache_dir():
    global _cache_dir
    if _cache_dir is None:
        _cache_dir = tempfile.mkdtemp(prefix="bpfsight-export-gil-")
        atexit.register(shutil.rmtree, _cache_dir, True)
    return _cache_dir


def recorded(name, args, *opts):
    """A gil recording of gil_work.py ARGS, made once per run of this file: (truth, trace)."""
    if name not in _cache:
        need_root()
        py = need_pyenv(full="--gil-mode=full" in opts)
        p, out = record([py, WORK, *args], "-t", "gil", *opts,
                        out=os.path.join(cache_dir(), name + ".bst"))
        eq(p.returncode, 0, f"record exit ({p.stderr[-600:]})")
        truth = json.loads([line for line in p.stdout.splitlines() if line.startswith("{")][-1])
        _cache[name] = (truth, out)
    return _cache[name]


def cpu_trace():
    """Three CPU-bound threads for 2 s: about two of them wait at any time."""
    return recorded("cpu", ["cpu", "3", "2.0"])


def full_trace():
    return recorded("full", ["cpu", "3", "1.0"], "--gil-mode=full")


def pipes_trace():
    """The GIL bounced at every system call: mostly waits under the threshold (histogram)."""
    return recorded("pipes", ["pipes", "3", "20000"])


def export(trace, fmt, name):
    out = os.path.join(tmpdir(), name)
    p = run([BPFSIGHT, "export", trace, "--format", fmt, "-o", out], timeout=300)
    eq(p.returncode, 0, f"export {fmt} ({p.stderr.strip()})")
    return out


def wait_bins(evs, origin):
    """{(pid, bin start): waiting ns} of dump's GIL waits, bins of 10 ms from ORIGIN."""
    bins = collections.defaultdict(int)
    for e in evs:
        if e["kind"] != "gil_wait":
            continue
        s, end = max(e["ts"], origin), e["ts"] + e["dur"]
        for b in range((s - origin) // BIN, (end - 1 - origin) // BIN + 1) if end > s else ():
            lo = origin + b * BIN
            bins[(e["pid"], lo)] += min(end, lo + BIN) - max(s, lo)
    return bins


def contention(evs, origin):
    """{pid: [(ts, value)]}: the GIL contention counter as the exports must draw it from dump's
    waits: per 10 ms bin the waiting ns / 10 ms, a point where it changes, 0 after the last."""
    bins = wait_bins(evs, origin)
    out = {}
    for pid in {p for p, _ in bins}:
        n = max((lo - origin) // BIN for (p, lo), v in bins.items() if p == pid and v) + 1
        pts, last = [], None
        for b in range(n):
            v = bins.get((pid, origin + b * BIN), 0) / BIN
            if v != last:
                pts.append((origin + b * BIN, v))
            last = v
        if last != 0:
            pts.append((origin + n * BIN, 0.0))
        out[pid] = pts
    return out


# ---- Perfetto ----

def perfetto_gil(trace):
    """Export TRACE, check it against dump; (model, dump events, {pid: counter points})."""
    need_protoc()
    m, evs = check_matches_dump(trace, export(trace, "perfetto", "t.pftrace"))
    clocks = {one(c, "clock_id"): one(c, "timestamp")
              for c in one(m.packets[0], "clock_snapshot")["clocks"]}
    # Slices of the gil kinds on their thread's track of that kind, named and explained.
    for _, typ, ts, uuid, te in m.events:
        if typ != "TYPE_SLICE_BEGIN" or m.cats[te["category_iids"][0]] not in ("gil_wait",
                                                                               "gil_hold"):
            continue
        td = m.tracks[uuid][-1]
        kind = m.cats[te["category_iids"][0]]
        eq(one(td, "name"), {"gil_wait": "GIL waits", "gil_hold": "GIL holds"}[kind],
           "GIL track name")
        check("50 us" in one(td, "description", "") and "gil_sum" in one(td, "description"),
              f"help text of {one(td, 'name')}: {one(td, 'description')}")
        check("thread" in m.tracks[one(td, "parent_uuid")][-1], "a child of the thread track")
    counters = {}
    for uuid, descs in m.tracks.items():
        td = descs[-1]
        if one(td, "name") != "GIL contention":
            continue
        check("counter" in td, "GIL contention is a counter track")
        check("50 us" in one(td, "description") and "gil_sum" in one(td, "description"),
              f"says which waits count: {one(td, 'description')}")
        parent = m.tracks[one(td, "parent_uuid")][-1]
        pid = one(one(parent, "process"), "pid")
        check(pid not in counters, f"one contention counter for pid {pid}")
        counters[pid] = [(ts, float(one(te, "double_counter_value")))
                         for _, typ, ts, u, te in m.events if typ == "TYPE_COUNTER" and u == uuid]
    eq(counters, contention(evs, clocks[3]), "GIL contention counters from dump's waits")
    return m, evs, counters


def test_perfetto_gil_waits_and_contention_counter():
    truth, trace = cpu_trace()
    m, evs, counters = perfetto_gil(trace)
    pid = truth["pid"]
    waits = [e for e in evs if e["kind"] == "gil_wait" and e["pid"] == pid]
    # Each spinning thread waits for the GIL again and again; how many times depends on the
    # load (a few hundred here idle, tens under CPU hogs): every one of the three at least.
    spinners = {t["tid"] for t in truth["threads"].values()}
    waiting = {e["tid"] for e in waits}
    check(spinners <= waiting <= spinners | {truth["main_tid"]},
          f"threads with waits {waiting}: the spinners {spinners} (and main, starting them)")
    eq(list(counters), [pid], "a counter for the python process")
    # While the three threads spin, about two wait at any time (drop_gil's own wait for the
    # next holder is not a wait for the GIL: 55-65% each here, docs/GIL.md).
    t0 = min(e["ts"] for e in waits) + 100 * MS
    t1 = max(e["ts"] + e["dur"] for e in waits) - 100 * MS
    mid = sorted(v for ts, v in counters[pid] if t0 <= ts < t1)
    check(len(mid) > 50, f"{len(mid)} bins while the threads spin")
    med = mid[len(mid) // 2]
    check(1.4 <= med <= 2.05, f"median waiting threads {med:.2f} for 3 CPU-bound threads")
    check(max(v for _, v in counters[pid]) <= 3, "never more waiters than threads")


def test_perfetto_gil_full_mode_holds():
    truth, trace = full_trace()
    m, evs, counters = perfetto_gil(trace)
    holds = [e for e in evs if e["kind"] == "gil_hold"]
    check(len(holds) >= 30, f"{len(holds)} holds of three spinning threads")
    tracks = {one(m.tracks[uuid][-1], "name") for _, typ, _, uuid, te in m.events
              if typ == "TYPE_SLICE_BEGIN" and m.cats[te["category_iids"][0]] == "gil_hold"}
    eq(tracks, {"GIL holds"}, "hold tracks")
    check(truth["pid"] in counters, "full mode has the counter too")


# ---- Synthetic: exact bins, every SQL fallback ----

PID, MAIN, T1, T2, T3 = 5000, 5000, 5001, 5002, 5003
PID2 = 6000
START = 10 ** 9


def synth_trace(name, cut=False):
    """A python process with three threads (one created while recording, one exiting early),
    waits straddling bins, blame, short waits in the histogram (one bucket past the
    threshold), holds; a second process that only waits. CUT: no aggregates nor blame, as a
    trace cut before the kernel's totals were written."""
    if not os.path.exists(synth.BST_WRITE):
        raise helpers.Skip(f"{synth.BST_WRITE} missing: run make test-build")
    t = synth.Trace(families="proc,gil", start=START, end=START + 100 * MS)
    t.process(PID, "trainer", ts=START + 1)
    for tid, name in ((MAIN, "trainer"), (T1, "loader")):
        t.thread(PID, tid, name, ts=START + 2)
    t.gil_proc(PID, START + 3)
    t.fork(PID, MAIN, START + 4 * MS, PID, T2, "trainer")
    t.thread(PID, T2, "augment", ts=START + 4 * MS + 1)
    t.fork(PID, MAIN, START + 5 * MS, PID, T3, "trainer")  # never has a record of its own
    # T1 waits [0, 20) ms on MAIN, T2 [5, 15) ms on T1: bins 0 and 1 hold 1.5 waiting threads.
    t.gil_wait(PID, T1, START, 20 * MS, holder=MAIN, rounds=4, flags=synth.GIL_WAIT_HANDOFF)
    t.gil_wait(PID, T2, START + 5 * MS, 10 * MS, holder=T1, rounds=2)
    # Bin 3: half of it; bin 2 empty. An unknown holder; a mutex wait.
    t.gil_wait(PID, T2, START + 32 * MS + 5 * MS // 10, 5 * MS, holder=0, rounds=1,
               flags=synth.GIL_WAIT_MUTEX)
    t.gil_wait(PID, MAIN, START + 40 * MS, 60000, holder=T1, rounds=1)
    t.gil_hold(PID, MAIN, START + 41 * MS, 2 * MS)
    t.exit(PID, T2, START + 50 * MS)
    # The other process: one wait, bins of its own.
    t.process(PID2, "other", ts=START + 6)
    t.thread(PID2, PID2, "other", ts=START + 7)
    t.gil_proc(PID2, START + 8, version=0x030c0000)
    t.gil_wait(PID2, PID2, START + 15 * MS, 10 * MS, holder=PID2 + 1, rounds=2)
    if not cut:
        t.gil_agg(PID, T1, START + 60 * MS, waits=(5, 20 * MS + 400, 20 * MS),
                  short={3: 2, 8: 2})
        t.gil_agg(PID, T2, START + 60 * MS, waits=(3, 15 * MS + 70000, 10 * MS),
                  short={16: 1})  # [65536, 131072) ns: past the threshold, counts at 65536
        t.gil_agg(PID, MAIN, START + 60 * MS, waits=(1, 60000, 60000), holds=(9, 3 * MS, 2 * MS))
        t.gil_agg(PID2, PID2, START + 60 * MS, waits=(1, 10 * MS, 10 * MS))
        t.gil_blame(PID, T1, START + 60 * MS, MAIN, 6, 20 * MS + 400)
        t.gil_blame(PID, T2, START + 60 * MS, T1, 2, 10 * MS + 70000)
        t.gil_blame(PID, T2, START + 60 * MS, 0, 1, 5 * MS)
        t.gil_blame(PID, MAIN, START + 60 * MS, T1, 1, 60000)
        t.gil_blame(PID, MAIN, START + 60 * MS, T2, 0, 0)
        t.gil_blame(PID2, PID2, START + 60 * MS, PID2 + 1, 1, 10 * MS)
    return t.write(cache_dir(), name)


def test_contention_counter_bins_exact():
    """Known waits, known bins: Perfetto's and Chrome's counters are the same numbers."""
    trace = synth_trace("synth.bst")
    want = {PID: [(START, 1.5), (START + 2 * BIN, 0.0), (START + 3 * BIN, 0.5),
                  (START + 4 * BIN, 0.006), (START + 5 * BIN, 0.0)],
            PID2: [(START, 0.0), (START + BIN, 0.5), (START + 3 * BIN, 0.0)]}
    eq(contention(dump(trace), START), want, "the test's own binning")
    _, _, counters = perfetto_gil(trace)
    eq(counters, want, "Perfetto's counters")
    doc = load_chrome(export(trace, "chrome", "t.json"))
    eq(chrome_counters(doc), want, "Chrome's counters")


# ---- Chrome ----

def load_chrome(path):
    with open(path) as f:
        return json.load(f, parse_float=decimal.Decimal)


def ns(us):
    v = decimal.Decimal(us) * 1000
    check(v == v.to_integral_value(), f"{us} us is not a whole number of ns")
    return int(v)


def chrome_counters(doc):
    out = collections.defaultdict(list)
    for e in doc["traceEvents"]:
        if e["ph"] == "C" and e["name"] == "GIL contention":
            eq(e["cat"], "gil", "counter category")
            eq(list(e["args"]), ["waiting threads"], "counter series")
            out[e["pid"]].append((ns(e["ts"]), float(e["args"]["waiting threads"])))
    return {pid: sorted(pts) for pid, pts in out.items()}


def close_points(got, want, what):
    eq(sorted(got), sorted(want), f"{what}: processes")
    for pid in want:
        eq([ts for ts, _ in got[pid]], [ts for ts, _ in want[pid]], f"{what}: {pid} bins")
        for (ts, g), (_, w) in zip(got[pid], want[pid]):
            check(abs(g - w) <= 1e-8 * max(1, w), f"{what}: {pid} at {ts}: {g} != {w}")


def test_chrome_gil_events_and_counter():
    for trace in (cpu_trace()[1], full_trace()[1]):
        doc = load_chrome(export(trace, "chrome", "t.json"))
        evs = dump(trace)
        gil = [e for e in evs if e["kind"].startswith("gil_")]
        want = collections.Counter(
            ("X" if e["dur"] else "i", e["name"], e["pid"], e["tid"], e["ts"], e["dur"],
             json.dumps(e["args"], sort_keys=True)) for e in gil)
        # The stacks (Kineto's "Call stack", "Holder call stack") are test_export_stacks's.
        stack_keys = ("Call stack", "Holder call stack")
        got = collections.Counter(
            (e["ph"], e["name"], e["pid"], e["tid"], ns(e["ts"]), ns(e.get("dur", 0)),
             json.dumps({k: v for k, v in e["args"].items() if k not in stack_keys},
                        sort_keys=True, default=float))
            for e in doc["traceEvents"] if e.get("cat") == "gil" and e["ph"] in ("X", "i"))
        eq(got, want, "gil events in Chrome vs dump")
        check(any(e["kind"] == "gil_python" for e in gil), "the gil_python instant")
        for e in doc["traceEvents"]:
            if e.get("cat") == "gil" and e["ph"] == "i":
                eq(e.get("s"), "t", "thread-scoped instant")
        close_points(chrome_counters(doc), contention(evs, doc["bpfsight"]["start_monotonic_ns"]),
                     "Chrome GIL contention")
        # Every thread that waited is named, as Kineto traces name theirs.
        named = {(e["pid"], e["tid"]) for e in doc["traceEvents"]
                 if e["ph"] == "M" and e["name"] == "thread_name"}
        check({(e["pid"], e["tid"]) for e in gil} <= named, "threads of GIL events named")


# ---- SQLite ----


def rows(db, sql):
    cur = db.cursor()
    cur.row_factory = sqlite3.Row
    return [dict(r) for r in cur.execute(sql)]


def same_rows(sql_rows, report, what):
    """Row for row, in order, every column stats prints; doubles as stats prints them."""
    eq(len(sql_rows), len(report), f"{what}: rows")
    for got, want in zip(sql_rows, report):
        for k, v in want.items():
            g = got[k]
            if isinstance(v, float):
                eq(f"{g:.1f}", f"{v:.1f}", f"{what}: {k} of {want}")
            else:
                eq(g, v, f"{what}: {k} of {want}")


def check_sqlite_gil(trace):
    db = sqlite3.connect(export(trace, "sqlite", "t.sqlite"))
    st = stats(trace, "gil_sum,gil_blocked_by,gil_procs")
    for name in ("gil_sum", "gil_blocked_by", "gil_procs"):
        same_rows(rows(db, docs_query(name)), st[name], name)
    evs = dump(trace)
    got = collections.Counter(db.execute(
        'SELECT start, "end" - start, globalTid >> 24, globalTid & 0xffffff,'
        " COALESCE(holderGlobalTid & 0xffffff, 0), rounds, flags FROM BPFSIGHT_GIL_WAITS"))
    flag = {"mutex": 1, "timed_by": 2, "handoff": 4}
    want = collections.Counter(
        (e["ts"], e["dur"], e["pid"], e["tid"], e["args"]["holder_tid"], e["args"]["rounds"],
         sum(b for k, b in flag.items() if k in e["args"]))
        for e in evs if e["kind"] == "gil_wait")
    eq(got, want, "BPFSIGHT_GIL_WAITS rows vs dump")
    got = collections.Counter(db.execute(
        'SELECT start, "end" - start, globalTid FROM BPFSIGHT_GIL_HOLDS'))
    want = collections.Counter((e["ts"], e["dur"], e["pid"] << 24 | e["tid"])
                               for e in evs if e["kind"] == "gil_hold")
    eq(got, want, "BPFSIGHT_GIL_HOLDS rows vs dump")
    # The contention query: the counters' bins, from the rows.
    origin = db.execute("SELECT value FROM META WHERE key = 'start_monotonic_ns'").fetchone()[0]
    got = {(r["pid"], r["bin_start"]): r["waiting_threads"]
           for r in rows(db, docs_query("gil_contention"))}
    want = {k: v / BIN for k, v in wait_bins(evs, origin).items() if v}
    eq(got, want, "gil_contention query vs the counters' bins")
    idx = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'index'")}
    for want_idx in ("BPFSIGHT_GIL_WAITS_start", "BPFSIGHT_GIL_WAITS_globalTid",
                     "BPFSIGHT_GIL_HOLDS_start", "BPFSIGHT_GIL_HOLDS_globalTid"):
        check(want_idx in idx, f"index {want_idx}")
    return db, st


def test_sqlite_gil_reproduces_stats_real_recordings():
    truth, trace = cpu_trace()
    db, st = check_sqlite_gil(trace)
    for name, t in truth["threads"].items():
        r = [x for x in st["gil_sum"] if x["tid"] == t["tid"]][0]
        check(r["wait_count"] > 0 and r["thread_name"] == name, f"{name} waited: {r}")
    db.close()
    truth, trace = full_trace()
    db, st = check_sqlite_gil(trace)
    check(all("hold_count" in r for r in st["gil_sum"]), "full mode: hold columns in stats")
    check(db.execute("SELECT COUNT(*) FROM BPFSIGHT_GIL_HOLDS").fetchone()[0] > 0, "holds")
    db.close()
    truth, trace = pipes_trace()
    db, st = check_sqlite_gil(trace)
    # How many waits are short depends on the load of the machine (test_sqlite_gil_synthetic_
    # exact checks the histogram's rows); that every wait is either a record or in the
    # histogram does not.
    total = 0
    for name, t in truth["threads"].items():
        count, records, short = db.execute(
            "SELECT t.waitCount, (SELECT COUNT(*) FROM BPFSIGHT_GIL_WAITS AS w "
            "WHERE w.globalTid = t.globalTid), (SELECT COALESCE(SUM(s.count), 0) FROM "
            "BPFSIGHT_GIL_SHORT_WAITS AS s WHERE s.pid = t.pid AND s.tid = t.tid) "
            "FROM BPFSIGHT_GIL_THREADS AS t WHERE t.tid = ?", (t["tid"],)).fetchone()
        count = count or 0  # NULL: no aggregate, the thread never waited
        eq(records + short, count, f"{name}: wait records + short waits = all waits")
        total += count
    check(total > 0, "the threads waited")
    db.close()


def test_sqlite_gil_synthetic_exact():
    """Hand-made numbers, every branch of the queries: aggregates and blame present (short
    waits capped by the threshold, holds, a thread born and one dead while recording, an
    unknown holder, a thread known only from its fork) and absent (a cut trace)."""
    db, st = check_sqlite_gil(synth_trace("synth.bst"))
    s = {r["tid"]: r for r in st["gil_sum"]}
    eq(sorted(s), [MAIN, T1, T2, T3, PID2], "gil_sum threads")
    eq((s[T1]["wait_count"], s[T1]["wait_total_ns"], s[T1]["wait_max_ns"]),
       (5, 20 * MS + 400, 20 * MS), "T1 from its aggregate")
    # T2: records 10 ms and 5 ms, one short wait at the threshold-capped 65536 ns.
    eq(s[T2]["wait_p50_ns"], 5 * MS, "T2 median")
    eq(s[T3]["wait_count"], 0, "T3 never waited")
    eq(s[MAIN]["hold_count"], 9, "holds from the aggregate")
    b = {(r["waiter_tid"], r["holder_tid"]): r for r in st["gil_blocked_by"]}
    eq(b[(T2, 0)]["holder_name"], "(unknown)", "unknown holder")
    check((MAIN, T2) not in b, "a pair with no wait is not listed")
    eq(db.execute("SELECT COUNT(*) FROM BPFSIGHT_GIL_THREADS WHERE waitCount IS NULL")
       .fetchone()[0], 1, "T3 has a row without aggregate")
    eq(db.execute("SELECT tid, bucket, lowNs, highNs, count FROM BPFSIGHT_GIL_SHORT_WAITS "
                  "ORDER BY tid, bucket").fetchall(),
       [(T1, 3, 8, 16, 2), (T1, 8, 256, 512, 2), (T2, 16, 65536, 131072, 1)],
       "the short waits' histogram")
    db.close()
    db, st = check_sqlite_gil(synth_trace("cut.bst", cut=True))
    s = {r["tid"]: r for r in st["gil_sum"]}
    eq((s[T2]["wait_count"], s[T2]["wait_total_ns"]), (2, 15 * MS), "T2 from its records")
    eq(len(st["gil_blocked_by"]), 5, "blame from the wait records")
    db.close()


def test_gil_docs_queries_run_on_every_trace():
    """The GIL queries run on a trace without GIL data too (empty results, no error)."""
    if not os.path.exists(synth.BST_WRITE):
        raise helpers.Skip(f"{synth.BST_WRITE} missing: run make test-build")
    t = synth.Trace(families="proc", start=START)
    t.process(PID, "x", ts=START + 1)
    db = sqlite3.connect(export(t.write(tmpdir(), "empty.bst"), "sqlite", "e.sqlite"))
    for name in ("gil_sum", "gil_blocked_by", "gil_procs", "gil_contention"):
        eq(rows(db, docs_query(name)), [], f"{name} on a trace without the gil family")
    db.close()
