"""Traces in ClickHouse: `export --format clickhouse`, `bpfsight ship` and `stats --from`
against a real ClickHouse (clickhouse_server.py: its own directory and loopback ports, stopped
after each test). Nothing mocked: the rows the server holds are counted against the files' own
events, the reports it computes against `stats FILE`, and the server is killed mid-ship.

The tests of the SQL (the reports, the verdict, the claims, the fleet's queries) run on each
engine (clickhouse_server.ENGINES: Debian's 18.16 and ClickHouse 26.7 through chDB), both in
one job, what they compare against (a recorded job, stats FILE) made once for both. The tests
of the transport (a server killed or down, credentials, TLS, IPv6, the watch, monitor's
intervals) run on 18.16 only: chdb_server.py serves no users, no TLS, and is no server's
HTTP stack (docs/CLICKHOUSE.md, "What is not tested here")."""
import collections
import glob
import html
import json
import os
import re
import shutil
import signal
import subprocess
import time
import urllib.parse
import urllib.request

import helpers
import test_clickhouse_jobs
from clickhouse_server import ClickHouse, once, stats, stats_text
from helpers import BPFSIGHT, Skip, check, dump, eq, keep_tmpdir, row, run, tmpdir

SECONDS = 60
SPLIT = True
PARAMS = ("18.16", "26.7")  # clickhouse_server.ENGINES: the tests of the SQL run on both

TRACES = sorted(glob.glob(os.path.join(helpers.ROOT, "..", "shared", "traces", "*.bst")))
# The reports the server computes, and the keys they cannot share with a file's: a straggler
# row's start is the wall clock there (the rows keep no CLOCK_MONOTONIC).
SQL_REPORTS = ["cuda_api_sum", "nccl_sum", "osrt_sum", "sched_sum", "gil_sum", "gil_blocked_by"]
# The reports across ranks (proc_sql.c, nccl_rank_sql.c): a merged file's ranks, each rank process's
# time in collectives and the waits it made, where each rank waited.
RANK_REPORTS = ["ranks", "nccl_rank_sum", "rank_waits"]
# The reports over the events' stacks (cpu_sql.c, gil_sql.c, sched_sql.c).
STACK_REPORTS = ["cpu_sum", "gil_stacks", "offcpu_stacks"]
# Rows that are no event of dump's: what the reports read of the records that make no event
# (the in-kernel aggregates' snapshots, a thread's last switch-out) and of the whole file (its
# window, its threads' names, its CPU samples' stacks).
ROW_ONLY = {"syscall_agg", "gil_agg", "gil_blame", "offcpu_exit", "trace_window",
            "thread_names", "stack", "frame", "gil_holder", "gil_sample", "mem_leak_steps",
            "ledger_unit", "ledger_entry", "ledger_input"}
# The verdict's legend, its last line; the line saying what the server could not judge.
LEGEND = "* = the rule holds"
MORE = re.compile(r"^\s+\(\d+ more: ")
NOT_JUDGED = "Not judged from "


# The real traces whose headline's rule is judged from the server, and that headline.
HEADLINE_THERE = {"gpt2-gil-bound.bst": "GIL-bound", "lightning-all.bst": "CPU-bound",
                  "gpt2-eager-range.bst": "launch-bound", "job-attach-p.bst": "launch-bound"}


def need_traces():
    if not TRACES:
        raise Skip("../shared/traces/*.bst missing")


def ship(*args, env=None, timeout=600):
    return run([BPFSIGHT, "ship", *args], timeout=timeout, env=env)


def from_stats(url, reports, *opts):
    p = run([BPFSIGHT, "stats", "--from", url, "-r", reports, "--format", "json", *opts])
    eq(p.returncode, 0, f"stats --from ({p.stderr[-800:]})")
    return json.loads(p.stdout)["reports"]


_kinds = {}


# A dump line's kind: its first "kind" key, the object's own (ts, dur, pid and tid, before it,
# are numbers). Read so, not parsed whole: the real traces are 880,000 lines (7 s of JSON).
DUMP_KIND = re.compile(r'"kind":"([^"]*)"')


def kinds(path):
    """PATH's events per kind, as dump has them (once per path: the files never change)."""
    if path not in _kinds:
        lines = run([BPFSIGHT, "dump", path], check=True, timeout=300).stdout.splitlines()
        _kinds[path] = collections.Counter(DUMP_KIND.search(l).group(1) for l in lines)
    return _kinds[path]


def held(ch, job, events=True):
    """{file: {kind: rows}} the server holds of JOB: the events' rows (EVENTS), else all."""
    out = collections.defaultdict(dict)
    for f, k, n in ch.rows(f"SELECT file, kind, count() FROM bpfsight.events "
                           f"WHERE job = '{job}' GROUP BY file, kind"):
        if not events or k not in ROW_ONLY:
            out[f][k] = int(n)
    return out


def same_reports(ch, job, path, reports=SQL_REPORTS, url=None, whole_job=False):
    """Each report computed in the server over PATH's rows (WHOLE_JOB: JOB's, a merged file's
    rows being its rank files') equals stats on PATH."""
    mine = from_stats(url or ch.url(job), ",".join(reports),
                      *([] if whole_job else ["--file", path]))
    theirs = stats(path, ",".join(reports))
    for rep in reports:
        eq(mine[rep], theirs.get(rep, []), f"{os.path.basename(path)}: {rep} computed in the "
           f"server")
    return mine


def verdict_lines(text):
    """The verdict's lines of stats' table output, blank ones left out: "Verdict:" to its
    legend (or, with nothing to judge, to the first report)."""
    lines = text.splitlines()
    start = next(i for i, l in enumerate(lines) if l.startswith("Verdict:"))
    end = next(i for i in range(start, len(lines)) if lines[i].startswith(LEGEND) or
               lines[i].startswith("** ") or lines[i].endswith("(computed in ClickHouse)"))
    return [l for l in lines[start:end] if l.strip()]


# The reports the rules read that the server does not compute yet (none now: docs/CLICKHOUSE.md,
# "The verdict from the server"): a file's claims citing them have no line there.
NOT_THERE = ()


def same_verdict(url, path, whole_job=False):
    """stats --from's verdict (no -r) on PATH's rows (WHOLE_JOB: the job's) against `stats
    PATH`'s: every claim's line of a rule judged there equal (sched's blocked claim citing
    offcpu_stacks where the file has its stacks, as the file's), the line saying what the
    server could not judge set aside. Returns (the server's headline, the file's, that line)."""
    p = run([BPFSIGHT, "stats", "--from", url, *([] if whole_job else ["--file", path])])
    eq(p.returncode, 0, f"stats --from, the verdict ({p.stderr[-800:]})")
    mine = verdict_lines(p.stdout)
    theirs = verdict_lines(stats_text(path))
    rest = [l for l in mine if l.startswith(NOT_JUDGED)]
    mine = [l for l in mine if not l.startswith(NOT_JUDGED) and not MORE.match(l)]
    kept = [l for l in theirs[1:]
            if not any(f"(-r {r}" in l for r in NOT_THERE) and not MORE.match(l)]
    eq(mine[1:], kept, f"{os.path.basename(path)}: the verdict's claims from the server")
    return mine[0], theirs[0], rest[0] if rest else ""


def test_real_traces_rows_and_reports(engine):
    """The four real traces shipped: each file's rows per kind are its events per kind; the
    reports computed in the server equal stats on each file, report by report; the verdict
    line for line; stacks --from byte for byte; shipping again adds nothing."""
    need_traces()
    ch = ClickHouse(engine)
    # the four files rendered once for both engines (spooled), each engine's ship sending them
    spool = os.path.join(tmpdir(), "spool")
    shutil.copytree(once("real-spool", spooled_traces), spool)
    p = ship("--to", ch.url("real"), "--spool", spool)
    eq(p.returncode, 0, f"ship ({p.stderr[-800:]})")
    rows = held(ch, "real")
    every = held(ch, "real", events=False)
    for t in TRACES:
        eq(rows[t], dict(kinds(t)), f"{os.path.basename(t)}: rows per kind")
        eq(every[t]["trace_window"], 1, f"{os.path.basename(t)}: one window row")
        fams = helpers.info(t)["families"]
        fams = fams.split(",") if isinstance(fams, str) else fams
        for fam, kind in (("osrt", "syscall_agg"), ("gil", "gil_agg")):
            check(fam not in fams or every[t].get(kind, 0) > 0,
                  f"{os.path.basename(t)}: its {fam} aggregates shipped ({every[t]})")
        # the stacks' reports where the file has CPU samples (test_clickhouse_cpu.py has them
        # on a recording of its own): cpu_sum, gil_stacks, offcpu_stacks
        stacks = STACK_REPORTS if "cpu" in fams else []
        mine = same_reports(ch, "real", t, SQL_REPORTS + RANK_REPORTS + stacks)
        if stacks:
            # gil_stacks' rows: ANY INNER JOIN's meaning on 20.x and later (the left side
            # de-duplicated too) made lightning-all.bst's 54 rows 1 on 26.7
            theirs = stats(t, ",".join(stacks))
            check(len(theirs["cpu_sum"]) > 100 and theirs["gil_stacks"],
                  f"{os.path.basename(t)}: CPU samples and GIL stacks to compare")
            eq(len(mine["gil_stacks"]), len(theirs["gil_stacks"]),
               f"{os.path.basename(t)}: gil_stacks' rows")
            # py-spy's view is not computed there: said, never the other rows silently
            p = run([BPFSIGHT, "stats", "--from", ch.url("real"), "-r", "cpu_sum", "--python"])
            check(p.returncode != 0 and "--python" in p.stderr and not p.stdout,
                  f"stats --from --python refused ({p.returncode}, {p.stderr[-300:]})")
        # The verdict from the server's answers: every claim of the rules judged there as
        # stats FILE has it; the same first line where its rule is one of them; the others
        # named, never silent (a launch-bound trace's gpu rule, the hang rules).
        head, want, rest = same_verdict(ch.url("real"), t)
        name = os.path.basename(t)
        if name in HEADLINE_THERE:
            check(want.startswith(f"Verdict: {HEADLINE_THERE[name]}:"), want)
            eq(head, want, f"{name}: the verdict's first line from the server")
        check("open_at_edges_state" not in rest, f"{name}: the edges' state judged there: {rest}")
        if name == "job-attach-p.bst":  # the events lost, said as stats FILE says them
            test_clickhouse_jobs.losses_said(ch.url("real"), t)
        check(not re.search(r"the rules of [^;]*\bcpu\b", rest),
              f"{name}: the cpu rules judged there (test_clickhouse_cpu.py): {rest}")
        if "cpu" in fams:
            # stacks --from: the samples counted by their stack in the server, byte for
            # byte export --format folded's lines
            want = folded(t, "folded")
            p = run([BPFSIGHT, "stacks", "--from", ch.url("real"), "--file", t])
            eq(p.returncode, 0, f"stacks --from ({p.stderr[-400:]})")
            check(want.count("\n") > 100, f"{os.path.basename(t)}: folded stacks to compare")
            eq(p.stdout, want, f"{os.path.basename(t)}: stacks --from, folded")
        if "gil" in fams:
            check(mine["gil_sum"] and mine["osrt_sum"] and mine["sched_sum"],
                  f"{os.path.basename(t)}: gil_sum, osrt_sum and sched_sum have rows")
    eq(os.listdir(spool), [], "the spool empties once the server holds the files")
    # Row for row, the smallest file: dump's events, their times moved to the wall clock by
    # the header's clock pair, their arguments' JSON unchanged through TSV's escapes.
    small = min(TRACES, key=os.path.getsize)
    meta = helpers.info(small)
    shift = meta["start_realtime_ns"] - meta["start_monotonic_ns"]
    only = ", ".join(f"'{k}'" for k in sorted(ROW_ONLY))
    got = ch.rows(f"SELECT seq, ts, dur, pid, tid, kind, name, args FROM bpfsight.events "
                  f"WHERE job = 'real' AND file = '{small}' AND kind NOT IN ({only}) "
                  f"ORDER BY seq")
    events = once(("dump", small), lambda: dump(small))
    eq(len(got), len(events), "a row per event")
    for r, e in zip(got, events):
        want = [e["ts"] + shift, e["dur"], e["pid"], e["tid"], e["kind"], e["name"], e["args"]]
        have = [int(r[1]), int(r[2]), int(r[3]), int(r[4]), r[5], r[6], json.loads(r[7])]
        eq(have, want, f"row {r[0]}")
    # The docs' GIL query, its threshold lowered to what the real traces hold (5 ms).
    sql = (helpers.docs_query("gil_waits_over", doc="CLICKHOUSE.md")
           .replace("100000000", "5000000").replace("{day}", "2000-01-01"))
    got = {(r[1], int(r[4]), int(r[5])): (int(r[6]), int(r[7]))
           for r in ch.rows(sql.rstrip().rstrip(";"))}
    want = collections.defaultdict(lambda: [0, 0])
    for t in TRACES:
        for e in map(json.loads, once(("gil_wait", t), lambda: run(
                [BPFSIGHT, "dump", "-k", "gil_wait", t], check=True).stdout).splitlines()):
            if e["dur"] > 5000000:
                w = want[("vm", e["pid"], e["tid"])]
                w[0] += 1
                w[1] += e["dur"]
    check(want, "the real traces have GIL waits over 5 ms")
    eq(got, {k: tuple(v) for k, v in want.items()}, "GIL waits over 5 ms per thread, by SQL")
    # Each file's own clock pair puts its rows on the wall clock: within its recording.
    for t in TRACES:
        first, = ch.rows(f"SELECT min(time) > toDateTime('2020-01-01 00:00:00') "
                         f"FROM bpfsight.events WHERE file = '{t}'")
        eq(first, ["1"], f"{os.path.basename(t)}: wall-clock times")

    total = sum(int(n) for n, in ch.rows("SELECT count() FROM bpfsight.events"))
    p = ship(*TRACES, "--to", ch.url("real"), "--spool", spool)
    eq(p.returncode, 0, f"ship again ({p.stderr[-800:]})")
    check(p.stderr.count("already shipped") == len(TRACES), f"said so: {p.stderr}")
    eq(sum(int(n) for n, in ch.rows("SELECT count() FROM bpfsight.events")), total,
       "shipping the same files again adds no row")
    eq(ch.rows("SELECT count() FROM bpfsight.files FINAL"), [[str(len(TRACES))]],
       "one ledger row per file")

    # export --format clickhouse writes what ship sends: the same rows, loaded by hand.
    def export():
        out = os.path.join(tmpdir(), "one.ch.tsv")
        p = run([BPFSIGHT, "export", TRACES[0], "--format", "clickhouse", "-o", out, "--job",
                 "byhand", "--rank", "7"])
        eq(p.returncode, 0, f"export ({p.stderr})")
        with open(out, "rb") as f:
            return f.read()
    body = once("byhand", export)
    q = ("INSERT INTO bpfsight.events (job, host, rank, file, file_id, seq, ts, dur, pid, tid, "
         "kind, name, args) FORMAT TabSeparated")
    req = urllib.request.Request(
        f"http://127.0.0.1:{ch.http}/?query={urllib.parse.quote(q)}", data=body)
    urllib.request.urlopen(req, timeout=120).read()
    eq(held(ch, "byhand")[TRACES[0]], dict(kinds(TRACES[0])), "export's rows, loaded by hand")
    eq(ch.rows("SELECT DISTINCT rank FROM bpfsight.events WHERE job = 'byhand'"), [["7"]],
       "--rank labels every row")
    ch.stop()


def spooled_traces():
    """The real traces rendered into a spool of job "real" (once per job): a ship to a port
    nobody listens on renders each file and keeps it spooled (exit 2, the server down), what
    a ship to each engine then sends. The spool's directory."""
    from free_ports import free_port
    spool = os.path.join(keep_tmpdir(), "spool")
    p = ship(*TRACES, "--to", f"clickhouse://127.0.0.1:{free_port()}/real", "--spool", spool,
             "--retry-for", "1ms", "--timeout", "1")
    eq(p.returncode, 2, f"ship to no server: spooled ({p.stderr[-800:]})")
    eq(len([f for f in os.listdir(spool) if f.endswith(".tsv")]), len(TRACES), "spooled")
    return spool


def folded(path, fmt):
    """export --format FMT (folded, folded-offcpu) of PATH, its text (once per job)."""
    def make():
        out = os.path.join(tmpdir(), "f.folded")
        p = run([BPFSIGHT, "export", path, "--format", fmt, "-o", out])
        eq(p.returncode, 0, f"export {fmt} ({p.stderr[-400:]})")
        with open(out) as f:
            return f.read()
    return once(("folded", path, fmt), make)


def grouped_seqs(path):
    """The seqs of a merged file's collectives called inside ncclGroupStart/End: stats ends
    them at the group's end (nccl_stragglers' end_spread), the rows keep each call's."""
    inside, depth, out = {}, collections.Counter(), set()
    for e in sorted((e for e in dump(path) if e["kind"] == "nccl_api"), key=lambda e: e["ts"]):
        if e["name"] == "ncclGroupStart":
            depth[e["tid"]] += 1
        elif e["name"] == "ncclGroupEnd":
            depth[e["tid"]] -= 1
        elif depth[e["tid"]] > 0 and "seq" in e["args"]:
            out.add(e["args"]["seq"])
    return out


def sixteen_ranks():
    """The 16 ranks' files and their merged file (once per job)."""
    import test_ranks
    d, files, _ = test_ranks.run_job(16, 300, 9, [30], test_ranks.SHIFTS)
    kept = keep_tmpdir()
    files = [shutil.copy(f, kept) for f in files]  # past the test's directory
    merged = os.path.join(kept, "job.bst")
    test_ranks.merge(files, merged)
    return files, merged


def test_sixteen_ranks_straggler_found_by_sql(engine):
    """16 ranks of the CPU NCCL stand-in, rank 9 late to one collective: merged (merge's
    fitted offsets), shipped, the straggler found by the server (stats --from and the docs'
    fleet query), every collective's row equal to stats on the merged file."""
    import test_ranks
    files, merged = once("ranks16", sixteen_ranks)
    ch = ClickHouse(engine)
    spool = os.path.join(tmpdir(), "spool")
    p = ship(merged, "--to", ch.url("ranks16"), "--spool", spool)
    eq(p.returncode, 0, f"ship ({p.stderr[-800:]})")
    eq(sorted(int(r) for r, in ch.rows("SELECT DISTINCT rank FROM bpfsight.events "
                                       "WHERE job = 'ranks16' AND kind = 'nccl_api'")),
       list(range(16)), "every rank's rows labelled with its rank (the file's RANK records)")
    eq(sorted(f for f, in ch.rows("SELECT DISTINCT file FROM bpfsight.events "
                                  "WHERE job = 'ranks16' AND kind = 'nccl_api'")),
       sorted(files), "and with the rank file it came from")

    mine = from_stats(ch.url("ranks16"), "nccl_stragglers,nccl_sum")
    theirs = stats(merged, "nccl_stragglers,nccl_sum")
    eq(mine["nccl_sum"], theirs["nccl_sum"], "nccl_sum computed in the server")
    grouped = once(("grouped", merged), lambda: grouped_seqs(merged))
    a, b = mine["nccl_stragglers"], theirs["nccl_stragglers"]
    eq(len(a), len(b), "a row per collective")
    for x, y in zip(a, b):
        x.pop("start_wall_ns")
        y.pop("start")
        if x["seq"] in grouped:
            x.pop("end_spread_ns")
            y.pop("end_spread_ns")
        eq(x, y, f"collective {y['seq']}")
    late = test_ranks.late_seq(30)
    eq(next(r for r in a if r["seq"] == late)["last_rank"], 9, "the late rank, by SQL")
    # The verdict from the server: the straggler rule (rank_waits' state) is not judged there
    # yet, and says so; every claim of the rules that are is stats FILE's.
    head, want, rest = same_verdict(ch.url("ranks16"), merged, whole_job=True)
    eq(head, want, "the merged file's verdict from the server (nothing to judge: the same "
       "families recorded and not)")
    check("open_at_edges_state" not in rest, f"the edges' rules judged with their state: {rest}")

    # The reports across ranks, JSON for JSON: the merged file's ranks and clock fits, each
    # rank process's time in collectives (grouped calls ended by their ncclGroupEnd) and the
    # waits it made (rank_waits has no rows: launched ranks have no edges, below they do).
    mine = from_stats(ch.url("ranks16"), ",".join(RANK_REPORTS))
    theirs = stats(merged, ",".join(RANK_REPORTS))
    for rep in RANK_REPORTS:
        eq(len(theirs[rep]), 16 if rep != "rank_waits" else 0, f"{rep}: its rows")
        eq(mine[rep], theirs[rep], f"{rep} computed in the server")
    check(any(r["made_wait_ns"] for r in mine["nccl_rank_sum"]), "waits made")
    # one rank's rows (--rank): its RANK record's row
    eq(from_stats(ch.url("ranks16"), "ranks", "--rank", "9")["ranks"],
       [r for r in theirs["ranks"] if r["rank"] == 9], "--rank 9: its ranks row")
    node_ranks_by_sql(ch)

    # The docs' fleet query: the ranks by the waits they made the others do, as the rank
    # files' own clock (one CLOCK_MONOTONIC here) has them, where it tells the first apart.
    sql = helpers.docs_query("slowest_rank", doc="CLICKHOUSE.md").replace("{job}", "ranks16")
    top = ch.rows(sql.rstrip().rstrip(";"))
    made = collections.Counter()
    for e in once("truth16", lambda: test_ranks.truth(files)).values():
        if len(e) > 1:
            last = max(e, key=e.get)
            made[last] += sum(e[last] - t for t in e.values())
    truly = sorted(made.values())
    check("9" in [r[1] for r in top], f"rank 9 made others wait ({top})")
    if truly[-1] > 1.2 * truly[-2]:
        eq(int(top[0][1]), max(made, key=made.get), f"slowest_rank's first row ({top[:3]})")

    # The rank files shipped on their own (their own wall clocks, --rank): the late rank
    # still stands out (its 50 ms against clocks a few ms apart).
    for r, f in enumerate(files):
        p = ship(f, "--to", ch.url("ranks16raw"), "--spool", spool, "--rank", str(r))
        eq(p.returncode, 0, f"ship rank {r} ({p.stderr[-400:]})")
    raw = from_stats(ch.url("ranks16raw"), "nccl_stragglers")["nccl_stragglers"]
    eq(next(r for r in raw if r["seq"] == late)["last_rank"], 9, "rank 9, from the rank files")
    # a rank file alone (no RANK records: its process labelled by its communicator's rank)
    mine = same_reports(ch, "ranks16raw", files[9], RANK_REPORTS)
    eq([len(mine[r]) for r in RANK_REPORTS], [0, 1, 0], f"rank 9's file: {mine}")
    # nccl_rank_sum's zeroes: alone, the rank entered last in no collective and made no
    # wait, 0 as stats FILE has it (26.7 typed the scalar subquery's answer Nullable: NULL
    # there, a blank cell, before CH_SCALAR)
    eq((mine["nccl_rank_sum"][0]["late"], mine["nccl_rank_sum"][0]["made_wait_ns"]), (0, 0),
       "a rank that made no wait: 0, not null")
    ch.stop()


def node_ranks():
    """4 ranks of the stand-in on one node (RANK set, 2 ms of compute a step, rank 1 late 20 ms
    every 4th step), one recorder attached to all four for 2 s (the edges' snapshots, sched's
    off-CPU stacks), once per job: the file."""
    import test_ranks
    job, late = f"node-{os.getpid()}", ",".join(str(s) for s in range(0, 4000, 4))
    ranks = []
    for r in range(4):
        env = dict(os.environ, RANK=str(r), WORLD_SIZE="4", NCCL_RANKS_STEP_US="2000")
        ranks.append(helpers.spawn([test_ranks.NCCL_RANKS, job, str(r), "4", "4000", "1",
                                    "20000", late], env=env))
    try:
        pids = [int(p.stdout.readline().split()[1]) for p in ranks]
        path = os.path.join(keep_tmpdir(), "node.bst")
        p = run([BPFSIGHT, "record", "-p", ",".join(map(str, pids)), "-d", "2s", "-o", path],
                timeout=120)
        eq(p.returncode, 0, f"record -p the four ranks ({p.stderr[-600:]})")
    finally:
        for p in ranks:
            p.kill()
            p.wait()
    return path


def node_ranks_by_sql(ch):
    """4 ranks of the stand-in on one node (node_ranks): rank_waits and nccl_rank_sum computed
    in the server equal stats on the file, rank 1 the one the others waited for, in
    ncclAllReduce."""
    path = once("node4", node_ranks)
    p = ship(path, "--to", ch.url("node4"), "--spool", os.path.join(tmpdir(), "spool"))
    eq(p.returncode, 0, f"ship ({p.stderr[-800:]})")
    mine = same_reports(ch, "node4", path, RANK_REPORTS)
    eq([len(mine[r]) for r in RANK_REPORTS], [0, 4, 4], f"the node's ranks: {mine}")
    eq([r["rank"] for r in mine["rank_waits"]], [0, 1, 2, 3], "rank_waits' ranks, by RANK")
    least = min(mine["rank_waits"], key=lambda r: r["wait_pct"])
    eq(least["rank"], 1, f"rank 1 waited least: the others waited for it ({mine})")
    check(all(r["collective"] in ("ncclAllReduce", "ncclAllGather") and r["elsewhere_ns"] > 0
              for r in mine["rank_waits"] if r["rank"] != 1),
          f"the others in collectives (the first one they waited in), and elsewhere: {mine}")
    # the straggler rule judged from the server (rank_waits' table, the ranks' lives): the
    # verdict's claims and first line as stats FILE's
    head, want, rest = same_verdict(ch.url("node4"), path)
    eq(head, want, "the straggler's verdict from the server")
    check(want.startswith("Verdict: straggler: rank 1 "), f"rank 1 the straggler: {want}")


def test_server_killed_mid_ship():
    """The server SIGKILLed while ship sends batches, restarted: ship retries and the server
    ends with every row once; a ship that gives up leaves the file spooled, and the next ship
    sends it, nothing doubled."""
    need_traces()
    big = max(TRACES, key=os.path.getsize)
    want = dict(kinds(big))
    ch = ClickHouse()
    spool = os.path.join(tmpdir(), "spool")
    env = dict(os.environ, BPFSIGHT_SHIP_BATCH_ROWS="5000")
    p = subprocess.Popen([BPFSIGHT, "ship", big, "--to", ch.url("killed"), "--spool", spool,
                          "--retry-for", "120s", "--timeout", "10"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    helpers._procs.append(p)

    def some():
        try:
            n = int(ch.query("SELECT count() FROM bpfsight.events").strip() or 0)
        except Exception:
            return False
        return n > 0
    helpers.wait_for(some, timeout=120, what="the first batches in the server")
    ch.kill()
    time.sleep(1.5)
    ch.start()
    _, err = p.communicate(timeout=300)
    eq(p.returncode, 0, f"ship across the restart ({err[-800:]})")
    check("retrying" in err, f"it said it retried: {err[-800:]}")
    eq(held(ch, "killed")[big], want, "every row once after the kill")

    # A ship that gives up: exit 2, the file stays in the spool, sent by the next ship.
    ch.kill()
    other = min(TRACES, key=os.path.getsize)
    q = ship(other, "--to", ch.url("killed"), "--spool", spool, "--retry-for", "1s",
             "--timeout", "2")
    eq(q.returncode, 2, f"server down: exit 2 ({q.stderr[-600:]})")
    check("stay in the spool" in q.stderr, f"says what stays spooled: {q.stderr[-600:]}")
    eq(len([f for f in os.listdir(spool) if f.endswith(".tsv")]), 1, "spooled")
    ch.start()
    q = ship("--to", ch.url("killed"), "--spool", spool)
    eq(q.returncode, 0, f"the next ship sends the spool ({q.stderr[-600:]})")
    rows = held(ch, "killed")
    eq(rows[other], dict(kinds(other)), "the spooled file's rows, once")
    eq(rows[big], want, "the first file's rows still once")
    eq(os.listdir(spool), [], "the spool empty")
    ch.stop()


def test_bad_urls_credentials_full_spool():
    """Clear errors and exit statuses; nothing recorded lost (the trace files are untouched,
    the spool keeps what the server did not take)."""
    need_traces()
    small = min(TRACES, key=os.path.getsize)
    spool = os.path.join(tmpdir(), "spool")
    cases = [
        ("ftp://127.0.0.1:1/job", "bad URL"),
        ("clickhouse://127.0.0.1:99999/job", "bad port"),
        ("clickhouse://user:pw@127.0.0.1:8123/job", "credentials in a URL"),
        ("clickhouse://127.0.0.1:8123/a/b", "one job name"),
    ]
    for url, said in cases:
        p = ship(small, "--to", url, "--spool", spool)
        eq(p.returncode, 1, f"{url}: exit 1 ({p.stderr})")
        check(said in p.stderr, f"{url}: says '{said}': {p.stderr}")
    p = ship(small, "--spool", spool)
    eq(p.returncode, 1, "no --to")

    ch = ClickHouse()
    env = dict(os.environ, BPFSIGHT_CLICKHOUSE_USER="shipper",
               BPFSIGHT_CLICKHOUSE_PASSWORD="wrong")
    p = ship(small, "--to", ch.url("creds"), "--spool", spool, env=env)
    eq(p.returncode, 4, f"refused credentials: exit 4 ({p.stderr[-600:]})")
    check("credentials refused" in p.stderr, f"says so: {p.stderr[-600:]}")
    eq(len(os.listdir(spool)), 1, "the file waits in the spool")

    cred = os.path.join(tmpdir(), "cred")
    with open(cred, "w") as f:
        f.write("shipper:s3cret\n")
    os.chmod(cred, 0o644)
    env = dict(os.environ, BPFSIGHT_CLICKHOUSE_CREDENTIALS=cred)
    p = ship("--to", ch.url("creds"), "--spool", spool, env=env)
    eq(p.returncode, 1, f"a credentials file others may read: refused ({p.stderr})")
    check("chmod 600" in p.stderr, f"says what to do: {p.stderr}")
    os.chmod(cred, 0o600)
    p = ship("--to", ch.url("creds"), "--spool", spool, env=env)
    eq(p.returncode, 0, f"the credentials file's user ({p.stderr[-600:]})")
    eq(held(ch, "creds")[small], dict(kinds(small)), "the spooled file, sent as shipper")
    # Under sudo from another user, a file the user names is not read by root (env.h).
    p = ship(small, "--to", ch.url("sudo"), "--spool", spool,
             env=dict(env, SUDO_UID="65534"))
    check("BPFSIGHT_CLICKHOUSE_CREDENTIALS is ignored" in p.stderr,
          f"the variable ignored under sudo, said: {p.stderr[-600:]}")

    # A spool too small for the file: refused, exit 5, nothing spooled, the trace untouched.
    size = os.path.getsize(small)
    tiny = os.path.join(tmpdir(), "tiny")
    other = [t for t in TRACES if t != small][0]
    p = ship(other, "--to", ch.url("full"), "--spool", tiny, "--spool-max", "4K")
    eq(p.returncode, 5, f"full spool: exit 5 ({p.stderr[-600:]})")
    check("spool" in p.stderr and "full" in p.stderr, f"says so: {p.stderr[-600:]}")
    eq(os.listdir(tiny), [], "nothing half-written left in the spool")
    eq(os.path.getsize(small), size, "the trace untouched")

    # stats --from: a report the server does not compute, a job-less URL, a server down.
    p = run([BPFSIGHT, "stats", "--from", ch.url("creds"), "-r", "mem_sum"])
    eq(p.returncode, 1, "a report not computed in the server")
    check("not computed in ClickHouse" in p.stderr, p.stderr)
    p = run([BPFSIGHT, "stats", "--from", f"clickhouse://127.0.0.1:{ch.http}/"])
    eq(p.returncode, 1, "no job")
    p = run([BPFSIGHT, "stacks", "--from", ch.url("creds")])
    eq(p.returncode, 1, f"stacks --from rows without CPU samples ({p.stderr})")
    check("no CPU samples" in p.stderr, p.stderr)
    p = run([BPFSIGHT, "stacks", "--from", ch.url("creds"), "-p", "1"])
    eq(p.returncode, 1, f"stacks --from with -p ({p.stderr})")
    ch.stop()
    p = run([BPFSIGHT, "stats", "--from", ch.url("creds"), "-r", "cuda_api_sum"])
    eq(p.returncode, 2, f"server down: exit 2 ({p.stderr})")


def test_https():
    """https: the server's certificate verified (a self-signed one refused, exit 6, until
    BPFSIGHT_CLICKHOUSE_CA names it; another name than the certificate's refused), by name and
    by address; the rows and reports as over http."""
    need_traces()
    small = min(TRACES, key=os.path.getsize)
    ch = ClickHouse(tls=True)
    spool = os.path.join(tmpdir(), "spool")
    url = f"https://localhost:{ch.https}/tls"
    p = ship(small, "--to", url, "--spool", spool, "--retry-for", "1s")
    eq(p.returncode, 6, f"an unknown CA: exit 6 ({p.stderr[-600:]})")
    check("certificate" in p.stderr, f"says why: {p.stderr[-600:]}")
    eq(ch.rows("SELECT count() FROM system.tables WHERE database = 'bpfsight'"), [["0"]],
       "nothing sent")
    env = dict(os.environ, BPFSIGHT_CLICKHOUSE_CA=ch.cert)
    p = ship("--to", url, "--spool", spool, env=env)
    eq(p.returncode, 0, f"its CA given ({p.stderr[-600:]})")
    eq(held(ch, "tls")[small], dict(kinds(small)), "the rows, over https")
    p = run([BPFSIGHT, "stats", "--from", f"https://127.0.0.1:{ch.https}/tls", "-r",
             "cuda_api_sum", "--format", "json"], env=env)
    eq(p.returncode, 0, f"stats --from https, by address ({p.stderr})")
    eq(json.loads(p.stdout)["reports"]["cuda_api_sum"],
       stats(small, "cuda_api_sum").get("cuda_api_sum", []), "cuda_api_sum over https")
    p = run([BPFSIGHT, "stats", "--from", f"https://127.0.0.2:{ch.https}/tls", "-r",
             "cuda_api_sum"], env=env)
    eq(p.returncode, 6, f"an address the certificate does not name: refused ({p.stderr})")
    check("certificate" in p.stderr, f"says why: {p.stderr}")
    ch.stop()


def test_watch_ships_files_once_closed():
    """ship --watch DIR: a recording written into DIR is shipped once its recorder closed it
    (not while it writes: its rows would be shipped twice, under two content ids), a file
    moved in is shipped, each once; SIGTERM ends it with 0. A file being written given to ship
    is refused."""
    helpers.need_root()
    need_traces()
    ch = ClickHouse()
    d = tmpdir()
    watch = os.path.join(d, "dumps")
    os.makedirs(watch)
    spool = os.path.join(d, "spool")
    w = subprocess.Popen([BPFSIGHT, "ship", "--watch", watch, "--to", ch.url("watched"),
                          "--spool", spool], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True)
    helpers._procs.append(w)
    live = os.path.join(watch, "live.bst")
    rec = subprocess.Popen([BPFSIGHT, "record", "-t", "sched", "-o", live, "--", "sleep", "4"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    helpers._procs.append(rec)
    helpers.wait_for(lambda: os.path.exists(live) and os.path.getsize(live) > 0, timeout=60,
                     what="the recording's file")
    p = ship(live, "--to", ch.url("early"), "--spool", spool)
    eq(p.returncode, 1, f"a file being written: refused ({p.stderr})")
    check("writing it now" in p.stderr, f"says why: {p.stderr}")
    _, err = rec.communicate(timeout=120)
    eq(rec.returncode, 0, f"the recording ({err[-400:]})")
    small = min(TRACES, key=os.path.getsize)
    tmp = os.path.join(d, "moved.bst")
    subprocess.run(["cp", small, tmp], check=True)
    os.rename(tmp, os.path.join(watch, "moved.bst"))

    def both():
        try:
            have = held(ch, "watched")
        except OSError:  # no table yet: nothing shipped
            return False
        return live in have and os.path.join(watch, "moved.bst") in have and \
            sum(have[live].values()) == sum(kinds(live).values())
    helpers.wait_for(both, timeout=120, what="both files in the server")
    time.sleep(2.5)  # two more rounds: nothing shipped again
    w.send_signal(signal.SIGTERM)
    _, err = w.communicate(timeout=60)
    eq(w.returncode, 0, f"SIGTERM ends the watch ({err[-600:]})")
    have = held(ch, "watched")
    eq(have[live], dict(kinds(live)), "the recording's rows, once")
    eq(have[os.path.join(watch, "moved.bst")], dict(kinds(small)), "the moved file's, once")
    eq(ch.rows("SELECT count() FROM bpfsight.files WHERE job = 'watched'"), [["2"]],
       "two ledger rows")
    ch.stop()


def test_a_file_that_changes_while_shipped_waits_for_its_last_bytes():
    """ship reads a file twice: its content id, then its rows. One that changed in between (a
    recorder's last writes as it closes it: a --watch round once shipped such a file twice,
    its rows under the id of its earlier bytes, then again under its own) is not shipped:
    exit 1, said, nothing sent; shipped again, its rows once under its own id. ship is caught
    between the two reads by bpftrace (SIGSTOP at export__render) while the file is
    rewritten in place."""
    helpers.need_root()
    need_traces()
    import test_gil
    if not shutil.which("bpftrace"):
        raise Skip("needs bpftrace (apt-get install bpftrace) to stop ship between its reads")
    first, last = sorted(TRACES, key=os.path.getsize)[:2]
    ch = ClickHouse()
    spool = os.path.join(tmpdir(), "spool")
    moving = os.path.join(tmpdir(), "moving.bst")
    shutil.copyfile(first, moving)
    w = test_gil.stopped_at(BPFSIGHT, "export__render",
                            [BPFSIGHT, "ship", moving, "--to", ch.url("moving"), "--spool",
                             spool])
    shutil.copyfile(last, moving)  # the same inode, its bytes the other trace's
    os.kill(w.pid, signal.SIGCONT)
    _, err = w.communicate(timeout=300)
    eq(w.returncode, 1, f"a file that changed while it was read: not shipped ({err[-600:]})")
    check("changed while it was read" in err, f"says why: {err[-600:]}")
    eq(os.listdir(spool), [], "nothing left in the spool")
    p = ship(moving, "--to", ch.url("moving"), "--spool", spool)
    eq(p.returncode, 0, f"shipped again ({p.stderr[-600:]})")
    eq(held(ch, "moving")[moving], dict(kinds(last)), "its rows, once")
    ids = ch.rows("SELECT file_id FROM bpfsight.files WHERE job = 'moving'")
    eq(len(ids), 1, f"one ledger row: {ids}")
    check(ids[0][0].endswith(f"-{os.path.getsize(last):x}"),
          f"under the id of its last bytes: {ids[0][0]}")
    ch.stop()


PY_REPORTS = ["osrt_sum", "sched_sum", "gil_sum", "gil_blocked_by"]


def python_files():
    """The Python workload recorded in each GIL mode, and the trace with a recycled tid (once
    per job)."""
    import test_gil
    from test_osrt_final import trace_with_recycled_tid
    files = []
    for mode, py in (("default", "python3"), ("full", None)):
        opts = ["-t", "osrt,sched,gil"]
        if mode == "default":
            # every off-CPU interval with its stack (sched:0), not only those over 1 ms, which
            # a quiet machine may not give: folded below
            opts.append("--stacks=sched:0,gil")
        if mode == "full":
            try:
                py = test_gil.need_pyenv(11, full=True)
            except Skip:
                continue  # full mode needs a CPython with symbols: said by the count below
            opts.append("--gil-mode=full")
        # --hold-start: the threads wait for the GIL at their start, however loaded the
        # machine (a CI run's threads never overlapped: no wait, no snapshot to ship)
        p, out = helpers.record([py, test_gil.WORK, "--hold-start", "200", "pipes", "3", "2000"],
                                *opts, out=os.path.join(keep_tmpdir(), f"{mode}.bst"))
        eq(p.returncode, 0, f"record, {mode} mode ({p.stderr[-600:]})")
        files.append(out)
    import test_ranks
    merged = os.path.join(keep_tmpdir(), "merged.bst")
    test_ranks.merge(files, merged)
    synth = trace_with_recycled_tid()
    kept = shutil.copy(synth, keep_tmpdir())
    return files, merged, kept


def test_python_reports_as_sql(engine):
    """A recorded Python workload (threads that wait for the GIL, make system calls, exit):
    osrt_sum, sched_sum and gil_sum computed in the server equal stats on the file, in the
    default GIL mode and in full mode (the holds' columns there only), and on the two files
    merged (merge's rank namespaces in the ids); the off-CPU stacks folded in the server as
    export --format folded-offcpu writes them; and a trace whose short
    calls' aggregate was closed (the thread exited) and its tid taken again (osrt's final
    snapshot and the later one both count)."""
    helpers.need_root()
    files, merged, synth = once("python", python_files)
    ch = ClickHouse(engine)
    spool = os.path.join(tmpdir(), "spool")
    p = ship(*files, synth, "--to", ch.url("py"), "--spool", spool)
    eq(p.returncode, 0, f"ship ({p.stderr[-800:]})")
    every = held(ch, "py", events=False)
    for f in files:
        eq(held(ch, "py")[f], dict(kinds(f)), f"{os.path.basename(f)}: rows per kind")
        check(every[f].get("gil_agg", 0) > 0 and every[f].get("offcpu_exit", 0) > 0,
              f"{os.path.basename(f)}: the GIL snapshots and the threads' exits shipped "
              f"({every[f]})")
        mine = same_reports(ch, "py", f, PY_REPORTS)
        # the verdict from the server: every claim stats FILE makes, the first line the same
        head, want, _ = same_verdict(ch.url("py"), f)
        eq(head, want, f"{os.path.basename(f)}: the verdict's first line from the server")
        names = {r["thread_name"] for r in mine["gil_sum"]}
        check({"pipe-0", "pipe-1", "pipe-2"} <= names, f"the workload's threads: {names}")
        full = f.endswith("full.bst")
        eq(all("hold_count" in r for r in mine["gil_sum"]), full,
           f"{os.path.basename(f)}: the holds' columns in full mode only")
        if not full:
            # stacks --from --offcpu: the blocked time by stack, folded-offcpu's lines
            want = folded(f, "folded-offcpu")
            p = run([BPFSIGHT, "stacks", "--from", ch.url("py"), "--file", f, "--offcpu"])
            eq(p.returncode, 0, f"stacks --from --offcpu ({p.stderr[-400:]})")
            check(want.count("\n") > 3, f"off-CPU stacks to compare: {want[:300]}")
            eq(p.stdout, want, "stacks --from --offcpu, folded")
    check(len(files) == 2, f"full mode too (a pyenv CPython 3.11 with symbols): {files}")
    # The files merged: the reports of the merged file (its ids with their rank namespace).
    p = ship(merged, "--to", ch.url("pymerged"), "--spool", spool)
    eq(p.returncode, 0, f"ship the merged file ({p.stderr[-800:]})")
    mine = same_reports(ch, "pymerged", merged, PY_REPORTS, whole_job=True)
    head, want, _ = same_verdict(ch.url("pymerged"), merged, whole_job=True)
    eq(head, want, "the merged file: the verdict's first line from the server")
    # report --from: the page of the server's answers, its verdict stats --from's, a table
    # per report computed there
    page = os.path.join(tmpdir(), "job.html")
    p = run([BPFSIGHT, "report", "--from", ch.url("pymerged"), "-o", page])
    eq(p.returncode, 0, f"report --from ({p.stderr[-600:]})")
    with open(page) as f:
        text = html.unescape(f.read())
    check(want.split(": ", 1)[1] in text, f"the verdict's headline on the page: {want}")
    for rep in PY_REPORTS:
        check(f'id="r-{rep}"' in text, f"{rep}'s table on the page")
    p = run([BPFSIGHT, "report", "--from", ch.url("pymerged"), "-o", page])
    eq(p.returncode, 1, "an existing page is not replaced without --force")
    if len(files) == 2:
        check(any(r["pid"] >> 22 for r in mine["gil_sum"]),
              f"the second file's threads with their namespace: {mine['gil_sum'][:3]}")
    mine = same_reports(ch, "py", synth, ["osrt_sum"])
    r = row(mine["osrt_sum"], name="getppid")
    eq((r["count"], r["total_ns"], r["min_ns"], r["max_ns"]), (8, 59, 2, 20),
       "the final snapshot and the later one, by SQL")
    ch.stop()


def test_two_ships_of_one_file_at_once(engine):
    """Two ships of one file at once: the second refuses it (exit 3, naming the first's pid)
    while the first holds it (here: retrying a server that stopped answering), the first
    ships it once the server answers, and the server holds each row once."""
    need_traces()
    small = min(TRACES, key=os.path.getsize)
    ch = ClickHouse(engine)
    spool = os.path.join(tmpdir(), "spool")
    ch.proc.send_signal(signal.SIGSTOP)  # connections accepted, never answered
    try:
        first = subprocess.Popen([BPFSIGHT, "ship", small, "--to", ch.url("twice"), "--spool",
                                  spool, "--timeout", "2", "--retry-for", "120s"],
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        helpers._procs.append(first)
        helpers.wait_for(lambda: os.path.isdir(spool) and any(
            f.endswith(".tsv") for f in os.listdir(spool)), timeout=60,
            what="the first ship's file in the spool")
        p = ship(small, "--to", ch.url("twice"), "--spool", spool, "--timeout", "2",
                 "--retry-for", "1s")
        eq(p.returncode, 3, f"the second ship of the file: exit 3 ({p.stderr[-600:]})")
        check(f"another ship (pid {first.pid})" in p.stderr, f"says whose: {p.stderr[-600:]}")
        p = ship("--to", ch.url("twice"), "--spool", spool, "--timeout", "2", "--retry-for",
                 "1s")
        eq(p.returncode, 3, f"a ship of the spool leaves the held file alone ({p.stderr})")
    finally:
        ch.proc.send_signal(signal.SIGCONT)
    _, err = first.communicate(timeout=300)
    eq(first.returncode, 0, f"the first ship, once the server answers ({err[-600:]})")
    eq(held(ch, "twice")[small], dict(kinds(small)), "every row once")
    eq(os.listdir(spool), [], "the spool empty, no lock left")
    p = ship(small, "--to", ch.url("twice"), "--spool", spool)
    eq(p.returncode, 0, f"a ship after: {p.stderr[-400:]}")
    check("already shipped" in p.stderr, f"nothing added: {p.stderr[-400:]}")
    eq(held(ch, "twice")[small], dict(kinds(small)), "still once")
    ships_from_two_spools(ch, small)
    ch.stop()


def claims(ch, job):
    return int(ch.rows(f"SELECT count() FROM bpfsight.claims WHERE job = '{job}'")[0][0])


def ships_from_two_spools(ch, small):
    """Two spools (as two hosts have) shipping one file: the server's claims let one send it.
    The second, started while the first sends (stopped there), exits 7 naming the first's
    spool, nothing sent; a ship killed mid-way leaves its claim, which a ship of another spool
    takes over when told (--take-over), sending the rest; two ships started at once (the
    server stopped while both wait, then resumed) send it once. Each time the server ends
    with each of the file's rows once and no claim left."""
    spools = [os.path.join(tmpdir(), f"spool{i}") for i in range(2)]
    # some 35 inserts: time to meet the ship mid-way (each insert a part the server merges)
    slow = dict(os.environ, BPFSIGHT_SHIP_BATCH_ROWS="500")

    def start(job, i, *extra, env=slow):
        p = subprocess.Popen([BPFSIGHT, "ship", small, "--to", ch.url(job), "--spool",
                              spools[i], *extra], env=env, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
        helpers._procs.append(p)
        return p

    def rows(job):
        return int(ch.rows(f"SELECT count() FROM bpfsight.events WHERE job = '{job}'")[0][0])

    a = start("claimed", 0)
    helpers.wait_for(lambda: rows("claimed") > 0, timeout=120, what="the first ship's rows")
    a.send_signal(signal.SIGSTOP)  # mid-ship, its claim held
    try:
        p = ship(small, "--to", ch.url("claimed"), "--spool", spools[1])
        eq(p.returncode, 7, f"the second spool's ship: exit 7 ({p.stderr[-600:]})")
        check("another spool" in p.stderr and os.path.realpath(spools[0]) in p.stderr,
              f"says whose: {p.stderr[-600:]}")
    finally:
        a.send_signal(signal.SIGCONT)
    _, err = a.communicate(timeout=300)
    eq(a.returncode, 0, f"the first ship ({err[-600:]})")
    eq(held(ch, "claimed")[small], dict(kinds(small)), "every row once, by the first")
    p = ship("--to", ch.url("claimed"), "--spool", spools[1])
    eq(p.returncode, 0, f"the second spool, drained after ({p.stderr[-400:]})")
    check("already shipped" in p.stderr, f"nothing added: {p.stderr[-400:]}")
    eq((held(ch, "claimed")[small], claims(ch, "claimed")), (dict(kinds(small)), 0),
       "still once, no claim left")

    a = start("cut", 0)
    helpers.wait_for(lambda: rows("cut") > 0, timeout=120, what="the cut ship's rows")
    a.kill()
    a.wait()
    p = ship(small, "--to", ch.url("cut"), "--spool", spools[1])
    eq(p.returncode, 7, f"the killed ship's claim holds ({p.stderr[-600:]})")
    check("--take-over" in p.stderr, f"says how to take it over: {p.stderr[-600:]}")
    p = ship("--to", ch.url("cut"), "--spool", spools[1], "--take-over")
    eq(p.returncode, 0, f"--take-over ({p.stderr[-600:]})")
    check("took over the claim" in p.stderr, f"said: {p.stderr[-600:]}")
    eq((held(ch, "cut")[small], claims(ch, "cut")), (dict(kinds(small)), 0),
       "the killed ship's rows and the rest, each once; no claim left")
    p = ship("--to", ch.url("cut"), "--spool", spools[0])
    eq(p.returncode, 0, f"the killed ship's spool, drained after ({p.stderr[-400:]})")
    check("already shipped" in p.stderr, f"nothing added: {p.stderr[-400:]}")

    ch.proc.send_signal(signal.SIGSTOP)  # both render, then wait for the server
    try:
        both = [start("race", i, "--retry-for", "120s", "--timeout", "5", env=None)
                for i in range(2)]
        helpers.wait_for(lambda: all(os.path.isdir(d) and any(
            f.endswith(".tsv") for f in os.listdir(d)) for d in spools), timeout=60,
            what="both spooled")
    finally:
        ch.proc.send_signal(signal.SIGCONT)
    codes = []
    for p in both:
        _, err = p.communicate(timeout=300)
        codes.append(p.returncode)
        check(p.returncode in (0, 7), f"exit 0 or 7 ({err[-600:]})")
    check(0 in codes, f"one of them shipped it: {codes}")
    eq((held(ch, "race")[small], claims(ch, "race")), (dict(kinds(small)), 0),
       "two ships at once: each row once")


def test_ipv6_urls():
    """A server listening on ::1 only: ship to clickhouse://[::1]:PORT/JOB, stats --from
    http://[::1]:PORT/JOB equal to stats on the file; a bad bracketed address refused."""
    need_traces()
    small = min(TRACES, key=os.path.getsize)
    ch = ClickHouse(ipv6=True)
    spool = os.path.join(tmpdir(), "spool")
    url = f"clickhouse://[::1]:{ch.http}/six"
    eq(ch.url("six"), url, "the server's URL")
    p = ship(small, "--to", url, "--spool", spool)
    eq(p.returncode, 0, f"ship over IPv6 ({p.stderr[-600:]})")
    eq(held(ch, "six")[small], dict(kinds(small)), "the rows, over IPv6")
    same_reports(ch, "six", small, ["cuda_api_sum"], url=f"http://[::1]:{ch.http}/six")
    p = run([BPFSIGHT, "stats", "--from", "http://[::1]:1/six", "-r", "cuda_api_sum"])
    eq(p.returncode, 2, f"nothing on [::1]:1: the server down ({p.stderr})")
    check("[::1]:1: " in p.stderr, f"the address as a URL has it: {p.stderr}")
    for bad in (f"clickhouse://[::1:{ch.http}/six", f"http://[zz]:{ch.http}/six",
                f"http://[::1]x/six"):
        p = ship(small, "--to", bad, "--spool", spool)
        eq(p.returncode, 1, f"{bad}: exit 1 ({p.stderr})")
        check("IPv6 address in brackets" in p.stderr, f"{bad}: says so: {p.stderr}")
    ch.stop()


def test_watch_with_the_server_down_first():
    """ship --watch DIR started while the server is down: the files moved into DIR meanwhile
    are spooled (exit status 0 so far: it goes on), and shipped once the server is up, each
    row once; SIGTERM ends it with 0."""
    need_traces()
    ch = ClickHouse()
    ch.stop()
    d = tmpdir()
    watch, spool = os.path.join(d, "dumps"), os.path.join(d, "spool")
    os.makedirs(watch)
    w = subprocess.Popen([BPFSIGHT, "ship", "--watch", watch, "--to", ch.url("later"),
                          "--spool", spool, "--retry-for", "1s", "--timeout", "2"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    helpers._procs.append(w)
    names = []
    for i, t in enumerate(sorted(TRACES, key=os.path.getsize)[:2]):
        tmp = os.path.join(d, f"f{i}.bst")
        subprocess.run(["cp", t, tmp], check=True)
        names.append((os.path.join(watch, f"f{i}.bst"), t))
        os.rename(tmp, names[-1][0])

    def spooled():
        return os.path.isdir(spool) and len(
            [f for f in os.listdir(spool) if f.endswith(".tsv")]) == 2
    helpers.wait_for(spooled, timeout=120, what="both files in the spool, the server down")
    check(w.poll() is None, "the watch goes on with the server down")
    ch.start()

    def both():
        try:
            have = held(ch, "later")
        except OSError:
            return False
        return all(sum(have.get(f, {}).values()) == sum(kinds(t).values()) for f, t in names)
    helpers.wait_for(both, timeout=180, what="both files in the server once it is up")
    time.sleep(2.5)  # more rounds: nothing shipped again
    w.send_signal(signal.SIGTERM)
    _, err = w.communicate(timeout=60)
    eq(w.returncode, 0, f"SIGTERM ends the watch ({err[-600:]})")
    have = held(ch, "later")
    for f, t in names:
        eq(have[f], dict(kinds(t)), f"{os.path.basename(f)}: its rows, once")
    eq(ch.rows("SELECT count() FROM bpfsight.files FINAL WHERE job = 'later'"), [["2"]],
       "two ledger rows")
    eq(os.listdir(spool), [], "the spool empty")
    ch.stop()


def monitor_intervals(ch, job):
    """monitor --ship's rows of JOB: (file_id, seq, ts, dur, pid, name, args as JSON)."""
    return [(f, int(s), int(t), int(d), int(p), n, json.loads(a)) for f, s, t, d, p, n, a in
            ch.rows("SELECT file_id, seq, ts, dur, pid, name, args FROM bpfsight.events "
                    f"WHERE job = '{job}' AND kind = 'monitor_interval'")]


def test_monitor_intervals_exact_across_a_server_restart():
    """monitor --ship over the syscall workload (exactly N getppid and M nanosleep): the
    increments its intervals ship add up to the workload's counts and to monitor's own
    Prometheus totals, with the server stopped for seconds mid-run and started again; no
    interval twice, none overlapping another; the failures while it was down said in monitor's
    own metrics, not silent."""
    from monitor_prom import Monitor
    from test_monitor import SYSCALLS, metric
    helpers.need_root()
    n, m = 20000, 1500
    ch = ClickHouse()
    spool = os.path.join(tmpdir(), "spool")
    w = helpers.spawn([SYSCALLS, "--wait-stdin", str(n), str(m)])
    pid = int(w.stdout.readline().split()[1])
    keeper = helpers.spawn(["sleep", "120"])  # keeps -p's targets alive after the workload
    mon = Monitor("-p", f"{pid},{keeper.pid}", "-t", "osrt", "--ship", ch.url("mon"),
                  "--ship-interval", "300ms", "--ship-spool", spool)
    helpers.tell(w, "go")

    def shipped():
        return metric(mon.metrics(), 'bpfsight_ship_intervals_total{state="shipped"}') or 0
    helpers.wait_for(lambda: shipped() >= 2, 60, "intervals shipped")
    ch.stop()
    helpers.wait_for(lambda: (metric(mon.metrics(), "bpfsight_ship_failures_total") or 0) >= 3,
                     60, "failed rounds counted while the server is down")
    waiting = [f for f in os.listdir(spool) if f.endswith(".tsv")]
    check(waiting, "intervals wait in the spool while the server is down")
    ch.start()
    helpers.wait_for(lambda: "the server answers again" in mon.stderr, 60,
                     "the spooled intervals sent once the server is back, monitor running")
    eq(w.wait(120), 0, "workload exit")
    sel = f'bpfsight_syscalls_total{{pid="{pid}",comm="syscalls",syscall="%s"}}'
    for call, want in (("getppid", n), ("nanosleep", m)):
        helpers.wait_for(lambda: metric(mon.metrics(), sel % call) == want, 30,
                         f"{call} == {want} in monitor's metrics")
    keeper.kill()
    eq(mon.stop(signal.SIGTERM), 0, f"exit status ({mon.stderr[-600:]})")
    rows = monitor_intervals(ch, "mon")
    # each row once: (interval, seq) unique; every interval in the ledger
    keys = collections.Counter((f, s) for f, s, *_ in rows)
    eq(max(keys.values()), 1, "no row twice")
    spans = sorted({(t, d, f) for f, _, t, d, *_ in rows})
    eq(len({f for *_, f in spans}), len(spans), "one span per interval")
    for (t0, d0, f0), (t1, _, f1) in zip(spans, spans[1:]):
        check(t0 + d0 <= t1, f"intervals {f0} and {f1} overlap")
    files = ch.rows("SELECT count() FROM bpfsight.files WHERE job = 'mon'")
    eq(int(files[0][0]), len(spans), "each interval in the ledger once")
    check(len(spans) >= 5, f"{len(spans)} intervals")
    for call, want in (("getppid", n), ("nanosleep", m)):
        got = sum(a["value"] for _, _, _, _, p, name, a in rows
                  if name == "bpfsight_syscalls_total" and p == pid
                  and a["labels"].get("syscall") == call and a["type"] == "counter")
        eq(got, want, f"{call}: the shipped increments add up to the workload's count")
    eq(os.listdir(spool), [], "the spool empty")
    ch.stop()


def test_monitor_spool_full_drops_said_counts_still_exact():
    """monitor --ship with the server down from the start and a spool too small for more than
    a few intervals: the intervals past it are dropped, counted in
    bpfsight_ship_intervals_dropped_total and said; once the server is started the spooled ones
    are sent, and the counters' increments of the dropped ones went to the next interval
    taken: the sums are still the workload's exact counts. A bad --ship is refused first."""
    from monitor_prom import Monitor
    from test_monitor import SYSCALLS, metric
    helpers.need_root()
    for bad, said in (("ch.example:8123/j", "bad --ship 'ch.example:8123/j'"),
                      ("clickhouse://u:p@127.0.0.1:8123/j", "credentials")):
        p = run([BPFSIGHT, "monitor", "-l", "127.0.0.1:0", "--ship", bad, "-d", "1"])
        eq(p.returncode, 1, f"--ship {bad}: exit status")
        check(said in p.stderr, f"--ship {bad}: {p.stderr.strip()}")
    p = run([BPFSIGHT, "monitor", "-l", "127.0.0.1:0", "--ship-interval", "1s", "-d", "1"])
    eq(p.returncode, 1, "--ship-interval without --ship: exit status")
    check("are --ship's" in p.stderr, p.stderr.strip())
    n, m = 5000, 800
    ch = ClickHouse()
    ch.stop()
    spool = os.path.join(tmpdir(), "spool")
    w = helpers.spawn([SYSCALLS, "--wait-stdin", str(n), str(m)])
    pid = int(w.stdout.readline().split()[1])
    keeper = helpers.spawn(["sleep", "120"])
    mon = Monitor("-p", f"{pid},{keeper.pid}", "-t", "osrt", "--ship", ch.url("full"),
                  "--ship-interval", "200ms", "--ship-spool", spool, "--ship-spool-max", "40K")
    helpers.tell(w, "go")
    sel = f'bpfsight_syscalls_total{{pid="{pid}",comm="syscalls",syscall="%s"}}'
    dropped = 'bpfsight_ship_intervals_dropped_total'
    helpers.wait_for(lambda: (metric(mon.metrics(), dropped) or 0) >= 3, 60,
                     "intervals dropped, the spool full")
    # what the workload did while they were dropped is in the next interval taken
    check(metric(mon.metrics(), sel % "getppid"), "getppid counted while the spool is full")
    # said as the drops are counted, read from the monitor's stderr a moment after (a thread)
    helpers.wait_for(lambda: "is full" in mon.stderr, 30, "the full spool said")
    eq(w.wait(120), 0, "workload exit")
    ch.start()
    helpers.wait_for(lambda: "the server answers again" in mon.stderr, 60,
                     "the spooled intervals sent once the server is started")
    for call, want in (("getppid", n), ("nanosleep", m)):
        helpers.wait_for(lambda: metric(mon.metrics(), sel % call) == want, 30,
                         f"{call} == {want} in monitor's metrics")
    keeper.kill()
    eq(mon.stop(signal.SIGTERM), 0, f"exit status ({mon.stderr[-600:]})")
    check(re.search(r"--ship: \d+ intervals spooled, \d+ shipped \(\d+ rows\), [1-9]\d* dropped",
                    mon.stderr), f"the end line counts the drops: {mon.stderr[-600:]}")
    rows = monitor_intervals(ch, "full")
    spans = sorted({(t, d, f) for f, _, t, d, *_ in rows})
    for (t0, d0, f0), (t1, _, f1) in zip(spans, spans[1:]):
        check(t0 + d0 <= t1, f"intervals {f0} and {f1} overlap")
    for call, want in (("getppid", n), ("nanosleep", m)):
        got = sum(a["value"] for _, _, _, _, p, name, a in rows
                  if name == "bpfsight_syscalls_total" and p == pid
                  and a["labels"].get("syscall") == call)
        eq(got, want, f"{call}: the shipped increments add up, the dropped intervals' "
           f"included ({mon.stderr[-600:]})")
    ch.stop()
