"""The reports over the events' stacks computed in ClickHouse (cpu_sql.c, gil_sql.c, sched_sql.c):
cpu_sum, gil_stacks and offcpu_stacks, and the cpu family's rules (the code that ran most,
fault-bound) judged from the server, against `stats FILE` on the same files, on each engine
(clickhouse_server.ENGINES: Debian's 18.16, chDB's 26.7), one server each for the module, the
recording and stats FILE's answers made once for both. The file is a recording of a Python
process made here (tests/workloads/cpu_gil_faults.py: GIL waits, naps off the CPU with their
stacks, 40 MiB blocks faulted in and unmapped, the resident memory it gives back and grows
again), and it merged with a copy of itself; the real traces with CPU samples are
test_clickhouse.py's (test_real_traces_rows_and_reports compares these reports there: one
shipping of them for both modules)."""
import json
import os
import re
import shutil

import helpers
from clickhouse_server import once, shared, stats, stats_text
from helpers import BPFSIGHT, check, eq, run, tmpdir

SECONDS = 15
PARAMS = ("18.16", "26.7")  # clickhouse_server.ENGINES: each test runs on both

HERE = os.path.dirname(os.path.abspath(__file__))
WORK = os.path.realpath(os.path.join(HERE, "..", "workloads", "cpu_gil_faults.py"))
REPORTS = ["cpu_sum", "gil_stacks", "offcpu_stacks"]
LEGEND = "* = the rule holds"
NOT_JUDGED = "Not judged from "


def verdict(args):
    """The verdict's lines of stats' table output (ARGS), blank ones left out, to its legend
    (a file's own asked once per job)."""
    if "--from" in args:
        p = run([BPFSIGHT, "stats", *args], timeout=300)
        eq(p.returncode, 0, f"stats {' '.join(args)} ({p.stderr[-800:]})")
        out = p.stdout
    else:
        out = stats_text(*args)
    lines = out.splitlines()
    start = next(i for i, l in enumerate(lines) if l.startswith("Verdict:"))
    end = next(i for i in range(start, len(lines)) if lines[i].startswith(LEGEND))
    return [l for l in lines[start:end] if l.strip()]


def recording():
    """The workload recorded (once per job: both engines ship it), and merged with a copy of
    itself."""
    # 499 Hz: the fault rule's 20 samples in faults even when a loaded machine leaves the
    # main thread 150 ms of CPU (at 99 Hz it said nothing, 3 runs in 3 beside 2 busy loops)
    # mem: the resident memory given back and grown again, which the fault rule sizes by
    d = helpers.keep_tmpdir()
    p, rec = helpers.record(["python3", WORK, "0.6"], "-t", "cpu,sched,gil,mem", "--sample-rate",
                            "499", "--stacks=sched:0,gil", out=os.path.join(d, "w.bst"))
    eq(p.returncode, 0, f"record ({p.stderr[-600:]})")
    # The recording merged with a copy of itself (two ranks, the same code): the ranks' rows
    # apart, as stats has them on the merged file (its ranks' string ids are their own).
    twin = os.path.join(d, "twin.bst")
    shutil.copyfile(rec, twin)
    merged = os.path.join(d, "merged.bst")
    p = run([BPFSIGHT, "merge", "-o", merged, rec, twin], timeout=300)
    eq(p.returncode, 0, f"merge ({p.stderr[-600:]})")
    return rec, merged


def test_stack_reports_and_cpu_rules_from_the_server(engine):
    """Shipped, the recording's cpu_sum, gil_stacks and offcpu_stacks computed in the server
    equal stats on the file row for row; its verdict from the server is stats FILE's line for
    line (fault-bound, the code that ran most, the GIL holders' code, the off-CPU claim citing
    offcpu_stacks), the line saying what was not judged naming none of them. The real
    traces' reports and verdicts are test_clickhouse.py's. And the recording merged with a
    copy of itself: the three reports of the merged file."""
    helpers.need_root()
    rec, merged = once("recording", recording)
    ch = shared(engine)
    files = [rec]
    p = run([BPFSIGHT, "ship", *files, "--to", ch.url("stacks"), "--spool",
             os.path.join(tmpdir(), "spool")], timeout=600)
    eq(p.returncode, 0, f"ship ({p.stderr[-800:]})")
    # A stack not read (no `frames`, as ship writes one: a recording's stack whose pages were
    # gone) in another file of the job: 18.16 evaluates both sides of an `if`, and parsing
    # its empty frames failed every query of the job (once in a full run, by the recording's
    # timing). Each file's reports are still its own.
    ch.query("INSERT INTO bpfsight.events (job, file, file_id, seq, kind, name, args) VALUES "
             "('stacks', 'unread.bst', 'unread', 1, 'stack', '', "
             "'{\"stack_id\":77,\"kernel\":0}')")
    for f in files:
        name = os.path.basename(f)
        p = run([BPFSIGHT, "stats", "--from", ch.url("stacks"), "--file", f, "-r",
                 ",".join(REPORTS), "--format", "json"], timeout=300)
        eq(p.returncode, 0, f"{name}: stats --from ({p.stderr[-800:]})")
        mine = json.loads(p.stdout)["reports"]
        theirs = stats(f, ",".join(REPORTS))
        # gil_stacks' rows: ANY INNER JOIN's meaning on 20.x and later (the left side
        # de-duplicated too) left one row on 26.7
        eq(len(mine.get("gil_stacks", [])), len(theirs["gil_stacks"]), f"{name}: gil_stacks' rows")
        for rep in REPORTS:
            eq(mine.get(rep, []), theirs.get(rep, []), f"{name}: {rep} computed in the server")
        check(theirs["cpu_sum"] and theirs["gil_stacks"] and len(theirs["offcpu_stacks"]) > 3,
              f"{name}: CPU samples, GIL and off-CPU stacks to compare: {theirs}")
        mine = verdict(["--from", ch.url("stacks"), "--file", f])
        theirs = verdict([f])
        rest = [l for l in mine if l.startswith(NOT_JUDGED)]
        eq([l for l in mine if not l.startswith(NOT_JUDGED)], theirs,
           f"{name}: the verdict from the server")
        check(not re.search(r"\bcpu\b|gil_stacks|offcpu_stacks",
                            " ".join(l.split(": ", 1)[1] for l in rest)),
              f"{name}: cpu's rules and the stacks judged there: {rest}")
        # the workload's own truth: its blocks faulted in, the GIL held by its code, the code
        # its main thread ran most (the ledger's line: its time on a CPU by place)
        for want in (r"faults .* page faults .* gave back and faulted in again",
                     r"holders were running .*cpu_gil_faults\.py",
                     r"CPU .* ran on a CPU .*: `churn` \(cpu_gil_faults\.py:\d+.*\(-r ledger\)"):
            check(any(re.search(want, l) for l in theirs), f"{want!r} in {theirs}")
    p = run([BPFSIGHT, "ship", merged, "--to", ch.url("merged"), "--spool",
             os.path.join(tmpdir(), "spool")], timeout=600)
    eq(p.returncode, 0, f"ship the merged file ({p.stderr[-800:]})")
    p = run([BPFSIGHT, "stats", "--from", ch.url("merged"), "-r", ",".join(REPORTS),
             "--format", "json"], timeout=300)
    eq(p.returncode, 0, f"merged: stats --from ({p.stderr[-800:]})")
    mine = json.loads(p.stdout)["reports"]
    theirs = stats(merged, ",".join(REPORTS))
    for rep in REPORTS:
        eq(mine.get(rep, []), theirs.get(rep, []), f"the merged file: {rep} in the server")
    one = stats(rec, "cpu_sum")["cpu_sum"]
    check(len(theirs["cpu_sum"]) > len(one), "the merged file's ranks' functions are rows apart")
