"""export --format chrome|sqlite: the events of dump and the numbers of stats, exactly."""
import collections
import decimal
import gzip
import json
import os
import re
import sqlite3

from helpers import (BPFSIGHT, check, dump, eq, info, need_root, record, run, stats, tmpdir,
                     workload)

# For tests/run_tests.py: about how long these tests take on CI's machine (its order).
SECONDS = 5

SYSCALLS = workload("syscalls")
CAT = {"syscall": "os_runtime", "offcpu": "sched", "loss": "loss",
       "cpu_sample": "cpu_sample"}  # others: "process"
INTERVALS = ("syscall", "offcpu")


def pid_of(stdout):
    return int(re.search(r"^pid (\d+)", stdout, re.M).group(1))


def export(trace, fmt, out=None, check_ok=True):
    out = out or os.path.join(tmpdir(), "out." + {"chrome": "json"}.get(fmt, fmt))
    p = run([BPFSIGHT, "export", trace, "--format", fmt, "-o", out])
    if check_ok:
        eq(p.returncode, 0, f"export {fmt} exit ({p.stderr.strip()})")
    return p, out


def ns(us):
    """A Kineto microsecond value (parsed as Decimal) back to integer nanoseconds."""
    v = decimal.Decimal(us) * 1000
    check(v == v.to_integral_value(), f"{us} us is not a whole number of ns")
    return int(v)


def load_chrome(text):
    return json.loads(text, parse_float=decimal.Decimal)


def dump_key(e):
    return (CAT.get(e["kind"], "process"), e["name"], e["pid"], e["tid"], e["ts"], e["dur"],
            json.dumps(e["args"], sort_keys=True))


def chrome_key(e):
    # An event's stack is Kineto's "Call stack" argument there, dump's "stack" beside its args.
    args = {k: v for k, v in e["args"].items() if k != "Call stack"}
    return (e["cat"], e["name"], e["pid"], e["tid"], ns(e["ts"]), ns(e.get("dur", 0)),
            json.dumps(args, sort_keys=True))


def check_chrome_matches_dump(text, trace):
    doc = load_chrome(text)
    # Kineto/HTA conventions: the metadata keys come before the events in the text.
    te = text.index('"traceEvents"')
    for k in ("schemaVersion", "deviceProperties", "traceName", "displayTimeUnit",
              "baseTimeNanoseconds"):
        check(0 <= text.find(f'"{k}"') < te, f"metadata key {k} before traceEvents")
    eq(doc["schemaVersion"], 1, "schemaVersion")
    eq(doc["displayTimeUnit"], "ns", "displayTimeUnit")
    b = doc["bpfsight"]
    eq(b["start_realtime_ns"], info(trace)["start_realtime_ns"], "the header's clock")
    eq(doc["baseTimeNanoseconds"], b["start_realtime_ns"] - b["start_monotonic_ns"],
       "Kineto's baseTimeNanoseconds: ts + it = wall-clock time")
    evs = doc["traceEvents"]
    for e in evs:
        if e["ph"] == "X":
            check("dur" in e and e["cat"] in ("os_runtime", "sched"), f"complete event {e}")
        elif e["ph"] == "i":
            eq(e.get("s"), "t", f"instant scope of {e}")
            check("dur" not in e, f"instant without dur: {e}")
        else:
            check(e["ph"] in ("M", "C"), f"unexpected ph in {e}")
    got = collections.Counter(chrome_key(e) for e in evs if e["ph"] in ("X", "i"))
    want = collections.Counter(dump_key(e) for e in dump(trace))
    eq(sum(got.values()), sum(want.values()), "chrome events vs dump events")
    eq(got - want, collections.Counter(), "chrome events not in dump")
    eq(want - got, collections.Counter(), "dump events missing from chrome")
    eq(sum("Call stack" in e.get("args", {}) for e in evs if e["ph"] in ("X", "i")),
       sum("stack" in e for e in dump(trace)), "events with a stack (sched's, by default)")
    return doc


def meta_events(doc, what):
    return {(e["pid"], e["tid"]): e["args"] for e in doc["traceEvents"]
            if e["ph"] == "M" and e["name"] == what}


def test_chrome_every_call_matches_dump():
    need_root()
    p, out = record([SYSCALLS, "300", "5", "1000"], "--osrt-threshold", "0")
    eq(p.returncode, 0, f"record exit ({p.stderr})")
    pid = pid_of(p.stdout)
    _, js = export(out, "chrome")
    eq(os.stat(js).st_mode & 0o777, 0o600, "export file mode")
    with open(js) as f:
        doc = check_chrome_matches_dump(f.read(), out)
    calls = [e for e in doc["traceEvents"] if e["ph"] == "X" and e["pid"] == pid
             and e["name"] == "getppid"]
    eq(len(calls), 300, "getppid complete events")
    eq(meta_events(doc, "process_name")[(pid, 0)]["name"], "syscalls", "process_name")
    eq(meta_events(doc, "thread_name")[(pid, pid)]["name"], "syscalls", "thread_name")


def test_chrome_gz_threads_named():
    need_root()
    p, out = record([SYSCALLS, "--threads", "4", "100", "2", "500"])
    eq(p.returncode, 0, f"record exit ({p.stderr})")
    pid = pid_of(p.stdout)
    _, gz = export(out, "chrome", os.path.join(tmpdir(), "t.json.gz"))
    with open(gz, "rb") as f:
        eq(f.read(2), b"\x1f\x8b", "gzip magic")
    with gzip.open(gz, "rt") as f:
        doc = check_chrome_matches_dump(f.read(), out)
    names = meta_events(doc, "thread_name")
    workers = sorted(a["name"] for (p_, t), a in names.items() if p_ == pid and t != pid)
    eq(workers, [f"worker-{i}" for i in range(4)], "worker thread names")
    sort = meta_events(doc, "thread_sort_index")
    for e in doc["traceEvents"]:
        if e["ph"] in ("X", "i") and e["pid"]:
            check((e["pid"], e["tid"]) in sort, f"thread of {e} has metadata")


OSRT_SQL = """
WITH calls AS (
    SELECT nameId, COUNT(*) AS n, SUM("end" - start) AS total,
           MIN("end" - start) AS lo, MAX("end" - start) AS hi
    FROM OSRT_API GROUP BY nameId
    UNION ALL
    SELECT nameId, SUM(count), SUM(totalNs), MIN(minNs), MAX(maxNs)
    FROM BPFSIGHT_SYSCALL_AGG WHERE count > 0 GROUP BY nameId)
SELECT s.value AS name, SUM(n) AS count, SUM(total) AS total_ns,
       MIN(lo) AS min_ns, MAX(hi) AS max_ns
FROM calls JOIN StringIds AS s ON s.id = calls.nameId
GROUP BY s.value ORDER BY total_ns DESC, name
"""

SCHED_SQL = """
SELECT o.globalTid >> 24 AS pid, o.globalTid & 0xffffff AS tid,
       SUM(oncpuNs) AS oncpu_ns, SUM("end" - start) AS offcpu_ns,
       SUM(blockedNs) AS blocked_ns, SUM(runnableNs) AS runnable_ns,
       COUNT(*) AS switches, SUM(state = 0) AS preemptions, t.name AS thread_name
FROM BPFSIGHT_OFFCPU AS o LEFT JOIN BPFSIGHT_THREADS AS t ON t.globalTid = o.globalTid
GROUP BY o.globalTid
"""


def query(db, sql):
    cur = db.cursor()
    cur.row_factory = sqlite3.Row
    return [dict(r) for r in cur.execute(sql)]


def check_sqlite_matches_stats(db, trace):
    rep = stats(trace)
    cols = ("name", "count", "total_ns", "min_ns", "max_ns")
    want = [{k: r[k] for k in cols} for r in rep["osrt_sum"]]
    eq(query(db, OSRT_SQL), want, "osrt_sum from SQL")

    cols = ("pid", "tid", "oncpu_ns", "offcpu_ns", "blocked_ns", "runnable_ns", "switches",
            "preemptions", "thread_name")
    want = sorted(tuple(r[k] for k in cols) for r in rep["sched_sum"])
    got = sorted(tuple(r[k] for k in cols) for r in query(db, SCHED_SQL))
    eq(got, want, "sched_sum from SQL")

    # nsys's SCHED_EVENTS: one row out and one row in per off-CPU interval; a thread that
    # exited has its last switch-out (state 128 in BPFSIGHT_OFFCPU), never a switch-in.
    for r in rep["sched_sum"]:
        g = r["pid"] << 24 | r["tid"]
        outs, ins, span = db.execute(
            "SELECT SUM(isSchedIn = 0), SUM(isSchedIn = 1),"
            " SUM(CASE isSchedIn WHEN 1 THEN start ELSE -start END)"
            " FROM SCHED_EVENTS WHERE globalTid = ?", (g,)).fetchone()
        dead, dead_at = db.execute("SELECT COUNT(*), COALESCE(SUM(start), 0) FROM "
                                   "BPFSIGHT_OFFCPU WHERE globalTid = ? AND state = 128",
                                   (g,)).fetchone()
        eq((outs, ins, span), (r["switches"], r["switches"] - dead, r["offcpu_ns"] - dead_at),
           f"SCHED_EVENTS of {r['tid']}")

    # Names: every id used resolves, ThreadNames agrees with BPFSIGHT_THREADS.
    for table, col in (("OSRT_API", "nameId"), ("BPFSIGHT_SYSCALL_AGG", "nameId"),
                       ("ThreadNames", "nameId")):
        dangling = db.execute(f"SELECT COUNT(*) FROM {table} WHERE {col} NOT IN "
                              "(SELECT id FROM StringIds)").fetchone()[0]
        eq(dangling, 0, f"{table}.{col} ids missing from StringIds")
    eq(db.execute("SELECT COUNT(*) - COUNT(DISTINCT value) FROM StringIds").fetchone()[0], 0,
       "StringIds values are unique")
    tn = sorted(db.execute("SELECT tn.globalTid, s.value FROM ThreadNames AS tn"
                           " JOIN StringIds AS s ON s.id = tn.nameId").fetchall())
    th = sorted(db.execute("SELECT globalTid, name FROM BPFSIGHT_THREADS"
                           " WHERE name IS NOT NULL").fetchall())
    eq(tn, th, "ThreadNames vs BPFSIGHT_THREADS")
    return rep


def test_sqlite_reproduces_stats_with_aggregates_and_threads():
    need_root()
    # Default threshold: getppid is mostly summed in the kernel, so the numbers only add up
    # when the last aggregate snapshot per (thread, syscall) is counted with the calls.
    p, out = record([SYSCALLS, "--threads", "4", "2000", "3", "500"])
    eq(p.returncode, 0, f"record exit ({p.stderr})")
    pid = pid_of(p.stdout)
    _, path = export(out, "sqlite")
    eq(os.stat(path).st_mode & 0o777, 0o600, "export file mode")
    db = sqlite3.connect(path)
    check(db.execute("SELECT COUNT(*) FROM BPFSIGHT_SYSCALL_AGG").fetchone()[0] > 0,
          "aggregates exported")
    rep = check_sqlite_matches_stats(db, out)
    gp = [r for r in rep["osrt_sum"] if r["name"] == "getppid"][0]
    eq(gp["count"], 8000, "getppid over 4 threads (stats)")
    names = {r[0] for r in db.execute("SELECT name FROM BPFSIGHT_THREADS WHERE globalTid >> 24"
                                      " = ?", (pid,))}
    for i in range(4):
        check(f"worker-{i}" in names, f"worker-{i} in BPFSIGHT_THREADS ({names})")
    eq(db.execute("SELECT name FROM BPFSIGHT_PROCESSES WHERE pid = ?", (pid,)).fetchone()[0],
       "syscalls", "process name")
    meta = dict(db.execute("SELECT key, value FROM META"))
    check(meta["start_monotonic_ns"] > 0, f"META start clock {meta}")
    eq(meta["clean_close"], 1, "META clean_close")
    db.close()


def test_sqlite_osrt_rows_match_dump():
    need_root()
    p, out = record([SYSCALLS, "300", "5", "1000"], "--osrt-threshold", "0")
    eq(p.returncode, 0, f"record exit ({p.stderr})")
    _, path = export(out, "sqlite")
    db = sqlite3.connect(path)
    got = collections.Counter(db.execute(
        'SELECT s.value, globalTid >> 24, globalTid & 0xffffff, start, "end" - start,'
        " returnValue FROM OSRT_API JOIN StringIds AS s ON s.id = nameId"))
    want = collections.Counter((e["name"], e["pid"], e["tid"], e["ts"], e["dur"],
                                e["args"]["ret"]) for e in dump(out) if e["kind"] == "syscall")
    eq(got, want, "OSRT_API rows vs dump syscall events")
    check_sqlite_matches_stats(db, out)
    db.close()


def test_loss_in_chrome_and_sqlite():
    need_root()
    # One event per call, 50000 calls as fast as they go into an 85-record ring: the consumer
    # cannot keep up (thousands lost in every run seen); every event kept is exported twice.
    p, out = record([SYSCALLS, "50000", "0"], "-t", "osrt", "--osrt-threshold", "0",
                    "--buffer-size", "4096")
    eq(p.returncode, 0, f"record exit ({p.stderr})")
    lost = info(out)["lost"]
    check(sum(lost.values()) > 0, "a 4 KiB ring loses events")
    _, path = export(out, "sqlite")
    db = sqlite3.connect(path)
    got = dict(db.execute("SELECT cause, SUM(count) FROM BPFSIGHT_LOSS GROUP BY cause"))
    eq(got, lost, "BPFSIGHT_LOSS per cause vs info")
    db.close()
    _, js = export(out, "chrome")
    with open(js) as f:
        doc = load_chrome(f.read())
    last = {}
    for e in doc["traceEvents"]:
        if e["ph"] == "C":
            eq(e["name"], "events lost", "counter name")
            last.update(e["args"])
    eq(last, lost, "last 'events lost' counter values per cause vs info")


def test_bad_input_and_sqlite_gz_leave_nothing():
    d = tmpdir()
    garbage = os.path.join(d, "garbage.bst")
    with open(garbage, "wb") as f:
        f.write(os.urandom(4096))
    for fmt, name in (("chrome", "g.json"), ("chrome", "g.json.gz"), ("sqlite", "g.sqlite")):
        out = os.path.join(d, name)
        p, _ = export(garbage, fmt, out, check_ok=False)
        eq(p.returncode, 1, f"export {fmt} of garbage exit ({p.stderr.strip()})")
        check(not os.path.lexists(out), f"{out} left behind")
        check(p.stderr.strip(), "a reason on stderr")
    # A real trace, but SQLite cannot be a gzip stream: refused with a reason.
    trace = os.path.join(d, "t.bst")
    if os.geteuid() == 0:
        p, trace = record([SYSCALLS, "10", "1", "100"], "-t", "osrt", out=trace)
        eq(p.returncode, 0, f"record exit ({p.stderr})")
        out = os.path.join(d, "t.sqlite.gz")
        p, _ = export(trace, "sqlite", out, check_ok=False)
        eq(p.returncode, 1, "sqlite to .gz exit")
        check("gzip" in p.stderr, f"says why: {p.stderr.strip()}")
        check(not os.path.lexists(out), f"{out} left behind")
