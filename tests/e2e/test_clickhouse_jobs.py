"""`stats --from` on real jobs (docs/CLICKHOUSE.md, "The verdict from the server"): a hung job's
verdict, judged from the snapshots and the collectives the server holds, equals `stats FILE`'s
line for line, two files not merged judged as stats judges them merged; the claims' spool
paths come back from the server as they went in. losses_said (the events-lost warning) runs in
test_clickhouse's real traces, which ship job-attach-p.bst already.

One ClickHouse server per engine for the module (clickhouse_server.ENGINES: Debian's 18.16,
chDB's 26.7; clickhouse_server.shared), started by the first test that needs it and stopped
when the module's process ends: each test ships its own job to each. The hung job is
recorded once, and stats FILE's answers asked once, for both. Nothing mocked: the jobs are real recordings (the CPU NCCL stand-in's ranks, hung), the
traces the real ones of ../shared/traces."""
import glob
import json
import os
import re

import helpers
from clickhouse_server import NEW, once, shared, stats_text
from helpers import BPFSIGHT, check, eq, keep_tmpdir, run, tmpdir

SECONDS = 20
PARAMS = ("18.16", "26.7")  # clickhouse_server.ENGINES: each test runs on both

TRACES = sorted(glob.glob(os.path.join(helpers.ROOT, "..", "shared", "traces", "*.bst")))
NOT_JUDGED = "Not judged from "
LEGEND = "* = the rule holds"

def ship(ch, job, *files, opts=()):
    p = run([BPFSIGHT, "ship", *files, "--to", ch.url(job), "--spool",
             os.path.join(tmpdir(), "spool"), *opts], timeout=300)
    eq(p.returncode, 0, f"ship {job} ({p.stderr[-600:]})")


def verdict_lines(text):
    """The verdict's lines of stats' table output, blank ones and the legend left out."""
    lines = text.splitlines()
    start = next(i for i, l in enumerate(lines) if l.startswith("Verdict:"))
    end = next(i for i in range(start, len(lines)) if lines[i].startswith(LEGEND) or
               lines[i].startswith("** ") or lines[i].endswith("(computed in ClickHouse)"))
    return [l for l in lines[start:end] if l.strip()]


def verdicts(url, path, *opts):
    """(stats --from URL's verdict lines, less the line saying what it judged without; `stats
    PATH`'s; that line)."""
    p = run([BPFSIGHT, "stats", "--from", url, *opts], timeout=300)
    eq(p.returncode, 0, f"stats --from ({p.stderr[-800:]})")
    mine = verdict_lines(p.stdout)
    theirs = verdict_lines(stats_text(path))
    rest = [l for l in mine if l.startswith(NOT_JUDGED)]
    return ([l for l in mine if not l.startswith(NOT_JUDGED)],
            theirs,
            rest[0] if rest else "")


def hung_job():
    """Four ranks of the CPU NCCL stand-in (test_hang.Job), rank 2 stuck in read in
    load_batch() before collective 30, the others in ncclAllReduce: the hang trigger's dump
    (a recorder attached before the hang, --trigger hang:3s) and a recording attached after
    it (-p x4 -d 3s: the edges' snapshots). Returns (dump, late)."""
    from test_hang import Job, hang_recorder, wait_dump
    job = Job({2: "read"})
    try:
        pids = job.start_ranks()
        rec = hang_recorder(job, pids)
        job.stall_ns(2)
        dump = wait_dump(rec)
        eq(rec.stop(), 0, "the recorder")
        late = os.path.join(keep_tmpdir(), "late.bst")
        p = run([BPFSIGHT, "record", "-t", "sched", *sum((["-p", str(p)] for p in pids), []), "-d", "3s",
                 "-o", late], timeout=120)
        eq(p.returncode, 0, f"record -p the hung ranks ({p.stderr[-600:]})")
    finally:
        job.kill()
    kept = os.path.join(os.path.dirname(late), "dump.bst")
    os.rename(dump, kept)  # past the job's directory, the test's
    return kept, late


def test_hang_and_blocked_thread_judged_from_the_server(engine):
    """The hang trigger's dump and the recording attached after the hang, shipped as one job.
    The dump's rows (--file): stats --from opens with the same hang line as stats FILE (who
    waits in which collective of which communicator, for how long; which rank never came and
    where it is, from the snapshot's stack), and prints nccl_stragglers' sentences as it does;
    the late recording's: the same hang found on arrival (the edges' snapshots: the call and
    line the ranks wait at, rank 2 elsewhere, blocked in read) and the same ledger's lines. Every verdict line equal, nothing said to be judged without the snapshots. The
    whole job: the two files judged apart, as stats judges them merged."""
    dump, late = once("hung", hung_job)
    ch = shared(engine)
    ship(ch, "hang", dump, late)
    url = ch.url("hang")
    for path, head in ((dump, "Verdict: hang: ranks 0, 1, 3 wait in ncclAllReduce #30 "),
                       (late, "Verdict: hang: ranks 0, 1, 3 wait in ncclAllReduce at `main` "
                        "(hang_rank.py:")):
        name = os.path.basename(path)
        mine, theirs, rest = verdicts(url, path, "--file", path)
        check(theirs[0].startswith(head), f"{name}: stats FILE's verdict: {theirs[0]}")
        eq(mine, theirs, f"{name}: the verdict from the server, line for line")
        check("open_at_edges_state" not in rest and "nccl_hang_state" not in rest,
              f"{name}: judged with the snapshots: {rest}")
    # the thread blocked throughout: rank 2's, in the hang's line (the ledger's lines are the
    # waiting ranks')
    from test_hang import line_of
    check(f"rank 2 is elsewhere: `load_batch` (hang_rank.py:{line_of('READ')}), sleeping in read"
          in theirs[0], f"the blocked thread's claim: {theirs}")
    # nccl_stragglers' sentences (who made the others wait, how long, in what) under its
    # table, from the server as from the file: the dump's 30 collectives of 4 ranks
    mine = notes(run([BPFSIGHT, "stats", "--from", url, "--file", dump, "-r",
                      "nccl_stragglers"], check=True, timeout=300).stdout)
    theirs = notes(stats_text(dump, "-r", "nccl_stragglers"))
    check(theirs, "stats FILE's stragglers' sentences")
    eq(mine, theirs, "nccl_stragglers' sentences from the server")
    # its rows: the collectives that ended (the one the waiters are in is none yet), their
    # waits (the rank file's rows have no rank: last_rank is not compared)
    mine, theirs = (sorted((r["comm"], r["seq"], r["ranks"], r["skew_ns"], r["wait_ns"])
                           for r in json.loads(out)["reports"].get("nccl_stragglers", []))
                    for out in (run([BPFSIGHT, "stats", "--from", url, "--file", dump, "-r",
                                     "nccl_stragglers", "--format", "json"], check=True).stdout,
                                stats_text(dump, "-r", "nccl_stragglers", "--format", "json")))
    eq(mine, theirs, "nccl_stragglers' collectives from the server")
    unmerged_files_judged_apart(url, dump, late)


def unmerged_files_judged_apart(url, dump, late):
    """The two recordings of the same four processes, one job not merged: each file's threads
    apart (as merge's rank namespaces keep them, in merge's order: the file of rank 0 first),
    so the job's verdict is stats' on the two merged: both hangs. sched's and the ledger's lines
    set aside: a merged file clips its run slices to the earliest file's start and weighs its
    threads over one window, the server each file's over its own (docs/CLICKHOUSE.md, "Where
    it can differ"); the server's ledger is the late file's, its thread named by its id there
    (its namespace, 1 << 22, and its pid)."""
    def merge():
        merged = os.path.join(keep_tmpdir(), "pair.bst")
        p = run([BPFSIGHT, "merge", "-o", merged, dump, late], timeout=120)
        eq(p.returncode, 0, f"merge ({p.stderr[-600:]})")
        return merged
    merged = once("pair", merge)
    mine, theirs, _ = verdicts(url, merged)
    # The ledger's lines: the server's are the file's whose unit weighs the most, each file's
    # threads over its own window; a merged file's one window is both files' (CLICKHOUSE.md)
    ledger = [l for l in mine if "(-r ledger)" in l]
    check(ledger and all(int(p) >> 22 == 1 for l in ledger for p in re.findall(r"pid (\d+)", l)),
          f"the ledger's unit, of the late file, in its namespace: {mine}")
    mine, theirs = ([l for l in v if "(-r sched_sum)" not in l and "(-r offcpu_stacks)" not in l
                     and "(-r ledger)" not in l] for v in (mine, theirs))
    eq(mine, theirs, "the unmerged files' verdict from the server: the merged file's")


MADE_WAIT = " made the others wait "


def notes(text):
    """The sentences under nccl_stragglers' table: who made the others wait."""
    return [l.strip() for l in text.splitlines() if MADE_WAIT in l]


def losses_said(url, path):
    """PATH, a real trace whose recording lost events (job-attach-p.bst: 2,169 task_map_full),
    shipped to URL's job (test_clickhouse's real traces, which ship it already): stats --from
    opens with the warning stats FILE opens with, word for word (how many, by family and
    cause, and the reports shown that they touch); in JSON it goes to stderr, as stats FILE's
    does."""
    mine, theirs = (run([BPFSIGHT, "stats", *src, "-r", "cuda_api_sum"], check=True,
                        timeout=300).stdout.split("\n\n")[0]
                    for src in (["--from", url, "--file", path], [path]))
    check(theirs.startswith("WARNING: 2169 events were lost while recording (unknown "
                            "task_map_full: 2169): cuda_api_sum "), f"stats FILE's: {theirs}")
    eq(mine, theirs, "the warning above the reports from the server")
    mine, theirs = (run([BPFSIGHT, "stats", *src, "-r", "cuda_api_sum", "--format", "json"],
                        check=True, timeout=300).stderr
                    for src in (["--from=" + url, "--file", path], [path]))
    check("2169 events were lost" in theirs, f"stats FILE says it on stderr: {theirs}")
    eq(mine.replace(url, "FROM"), theirs.replace(path, "FROM"), "in JSON, on stderr")


def test_spool_path_with_a_tab_and_a_backslash_claims_its_file(engine):
    """A spool whose path holds a tab and a backslash: ship's claim on the file (the
    claimant names the spool's path) comes back from the server's TabSeparated answer
    unescaped, so the ship knows its own claim and sends the file (before, it took the
    escaped path for another spool's and refused, exit 7); a second ship finds it shipped."""
    small = min(TRACES, key=os.path.getsize) if TRACES else None
    if not small:
        raise helpers.Skip("../shared/traces/*.bst missing")
    ch = shared(engine)
    spool = os.path.join(tmpdir(), "sp\\ool\tdir")
    for i in range(2):
        p = run([BPFSIGHT, "ship", small, "--to", ch.url("oddspool"), "--spool", spool],
                timeout=300)
        eq(p.returncode, 0, f"ship {i + 1} from {spool!r} ({p.stderr[-600:]})")
    check("already shipped" in p.stderr, f"the second finds it shipped: {p.stderr[-400:]}")
    eq(ch.rows("SELECT count() FROM bpfsight.claims WHERE job = 'oddspool'"), [["0"]],
       "no claim left")
    eq(int(ch.rows("SELECT count() FROM bpfsight.events WHERE job = 'oddspool' AND "
                   "kind = 'trace_window'")[0][0]), 1, "the file once")


def test_ship_and_from_say_the_servers_release(engine):
    """-v: ship, stats --from and stacks --from say which release the server runs, as its
    version() answers, on each engine (report --from's -v: the refusal's test below)."""
    small = min(TRACES, key=os.path.getsize) if TRACES else None
    if not small:
        raise helpers.Skip("../shared/traces/*.bst missing")
    ch = shared(engine)
    release = ch.rows("SELECT version()")[0][0]
    check(release.startswith(engine + "."), f"{engine}'s version(): {release}")
    said = f"ClickHouse {release} at {ch.netloc()}"
    p = run([BPFSIGHT, "ship", small, "--to", ch.url("release"), "--spool",
             os.path.join(tmpdir(), "spool"), "-v"], timeout=300)
    eq(p.returncode, 0, f"ship -v ({p.stderr[-600:]})")
    check(said in p.stderr, f"ship -v says {said!r}: {p.stderr[-600:]}")
    # the events table as the release allows (ch_schema.c): 26.7's LowCardinality labels and
    # coded columns, 18.16's plain types (LowCardinality needs a setting there, no codecs)
    types = dict(ch.rows("SELECT name, type FROM system.columns WHERE database = 'bpfsight' "
                         "AND table = 'events'"))
    eq({c: types[c] for c in ("job", "kind", "ts", "args")},
       {"job": "LowCardinality(String)", "kind": "LowCardinality(String)", "ts": "Int64",
        "args": "String"} if engine == NEW else
       {"job": "String", "kind": "String", "ts": "Int64", "args": "String"},
       f"the events table's types on {engine}")
    if engine == NEW:
        codecs = dict(ch.rows("SELECT name, compression_codec FROM system.columns WHERE "
                              "database = 'bpfsight' AND table = 'events'"))
        eq((codecs["ts"], codecs["dur"], codecs["args"]),
           ("CODEC(Delta(8), ZSTD(1))", "CODEC(T64, ZSTD(1))", "CODEC(ZSTD(1))"),
           "26.7's column codecs")
    for cmd in (["stats", "-r", "osrt_sum"], ["stacks"]):
        p = run([BPFSIGHT, *cmd, "--from", ch.url("release"), "-v"], timeout=300)
        check(said in p.stderr, f"{cmd[0]} --from -v says {said!r}: {p.stderr[-600:]}")
        p = run([BPFSIGHT, *cmd, "--from", ch.url("release")], timeout=300)
        check("ClickHouse " not in p.stderr, f"{cmd[0]} --from without -v: {p.stderr[-300:]}")


class OldServer:
    """A server that answers SELECT version() as ClickHouse 1.1.54394 (2018's, before 18.16)
    would, and refuses anything else: what bpfsight must not send its SQL to. No release
    older than 18.16 can be run here (Debian's is the oldest there is); its HTTP interface
    answers version() the same way (a line of text)."""

    def __init__(self):
        import http.server
        import threading
        from free_ports import free_port
        self.asked = []
        old = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                n = int(self.headers.get("Content-Length") or 0)
                sql = self.rfile.read(n).decode() if n else ""
                old.asked.append(sql)
                body, status = (b"1.1.54394\n", 200) if sql == "SELECT version()" else \
                    (b"Code: 62. DB::Exception: not in this test\n", 500)
                self.send_response(status)
                self.send_header("Content-Length", str(len(body)))
                self.send_header("Connection", "close")
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.port = free_port()
        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def test_a_server_older_than_the_oldest_tested_is_refused():
    """ship and stats --from refuse a server older than 18.16 (the oldest release bpfsight's
    SQL is tested on) before sending it anything but SELECT version(): exit 6 saying the
    release and the oldest one; ship keeps the file spooled."""
    small = min(TRACES, key=os.path.getsize) if TRACES else None
    if not small:
        raise helpers.Skip("../shared/traces/*.bst missing")
    old = OldServer()
    try:
        url = f"clickhouse://127.0.0.1:{old.port}/old"
        spool = os.path.join(tmpdir(), "spool")
        p = run([BPFSIGHT, "ship", small, "--to", url, "--spool", spool], timeout=120)
        eq(p.returncode, 6, f"ship to ClickHouse 1.1 ({p.stderr[-600:]})")
        check("runs ClickHouse 1.1.54394, older than 18.16, the oldest release bpfsight's "
              "SQL is tested on" in p.stderr, p.stderr[-600:])
        check(any(f.endswith(".tsv") for f in os.listdir(spool)), "the file stays spooled")
        for cmd in (["stats"], ["stacks"], ["report", "-o", os.path.join(tmpdir(), "p.html")]):
            p = run([BPFSIGHT, *cmd, "--from", url, "-v"], timeout=120)
            eq(p.returncode, 6, f"{cmd[0]} --from ClickHouse 1.1 ({p.stderr[-600:]})")
            check(f"ClickHouse 1.1.54394 at 127.0.0.1:{old.port}" in p.stderr and
                  "older than 18.16" in p.stderr, p.stderr[-600:])
        eq(set(old.asked), {"SELECT version()"}, "nothing asked but its release")
    finally:
        old.close()
