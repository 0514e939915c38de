"""BS_AGG_FINAL in the readers: a key's final snapshot is added to the totals, and a later
snapshot of the same (pid, tid, nr) -- a recycled tid -- counts on top (stats, sqlite)."""
import os
import sqlite3

from helpers import BPFSIGHT, eq, row, run, stats, tmpdir
from synth import AGG_FINAL, Trace

# For tests/run_tests.py: about how long these tests take on CI's machine (its order).
SECONDS = 1

# For tests/run_tests.py: these tests read files only (no recording, no workload, nothing
# traced): they run beside the tests that run alone, on the core those leave idle.
BESIDE = "reads files only"

GETPPID = 110  # x86_64; the reports name it from the recording machine's table


def trace_with_recycled_tid():
    t = Trace(families="proc,osrt")
    t.process(10, "a")
    t.syscall_agg(10, 10, 2000, GETPPID, 2, 20, 5, 15)  # superseded by the final
    t.syscall_agg(10, 10, 3000, GETPPID, 5, 50, 5, 20, AGG_FINAL)  # the thread exited
    t.syscall_agg(10, 10, 4000, GETPPID, 1, 2, 2, 2)  # tid 10 again: superseded
    t.syscall_agg(10, 10, 5000, GETPPID, 3, 9, 2, 4)
    return t.write(tmpdir())


def test_stats_adds_final_and_later_snapshot():
    osrt = stats(trace_with_recycled_tid(), "osrt_sum")["osrt_sum"]
    r = row(osrt, name="getppid")
    eq((r["count"], r["total_ns"], r["min_ns"], r["max_ns"]), (8, 59, 2, 20), "totals")


def test_sqlite_row_adds_final_and_later_snapshot():
    out = os.path.join(tmpdir(), "t.sqlite")
    p = run([BPFSIGHT, "export", trace_with_recycled_tid(), "--format", "sqlite", "-o", out])
    eq(p.returncode, 0, f"export ({p.stderr})")
    db = sqlite3.connect(out)
    rows = db.execute("SELECT pid, tid, nr, count, totalNs, minNs, maxNs "
                      "FROM BPFSIGHT_SYSCALL_AGG").fetchall()
    eq(rows, [(10, 10, GETPPID, 8, 59, 2, 20)], "one row per key, closed totals included")
