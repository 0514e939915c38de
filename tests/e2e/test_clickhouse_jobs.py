"""`stats --from` on real jobs (docs/CLICKHOUSE.md, "The verdict from the server"): a hung job's
verdict, judged from the snapshots and the collectives the server holds, equals `stats FILE`'s
line for line; the claims' spool paths come back from the server as they went in.

One ClickHouse server for the module (Debian's 18.16, clickhouse_server.py), started by the
first test that needs it and stopped when the module's process ends: each test ships its own
job. Nothing mocked: the jobs are real recordings (the CPU NCCL stand-in's ranks, hung), the
traces the real ones of ../shared/traces."""
import atexit
import glob
import os

import helpers
from clickhouse_server import ClickHouse
from helpers import BPFSIGHT, Recorder, check, eq, run, tmpdir

SECONDS = 20

TRACES = sorted(glob.glob(os.path.join(helpers.ROOT, "..", "shared", "traces", "*.bst")))
NOT_JUDGED = "Not judged from "
LEGEND = "* = the rule holds"

_server = []


def server():
    """The module's server: started once, its process and directory kept past each test's
    cleanup (helpers.cleanup), stopped and removed when the module's process ends."""
    if not _server:
        ch = ClickHouse()
        helpers._procs.remove(ch.proc)
        helpers._tmpdirs.remove(ch.dir)
        atexit.register(lambda: (ch.stop(), __import__("shutil").rmtree(ch.dir, True)))
        _server.append(ch)
    return _server[0]


def ship(ch, job, *files, opts=()):
    p = run([BPFSIGHT, "ship", *files, "--to", ch.url(job), "--spool",
             os.path.join(tmpdir(), "spool"), *opts], timeout=300)
    eq(p.returncode, 0, f"ship {job} ({p.stderr[-600:]})")


def test_claims_of_a_spool_whose_path_has_a_tab_and_a_backslash():
    """A spool whose path holds a tab and a backslash: ship's claim on the file (the
    claimant names the spool's path) comes back from the server's TabSeparated answer
    unescaped, so the ship knows its own claim and sends the file (before, it took the
    escaped path for another spool's and refused, exit 7); a second ship finds it shipped."""
    small = min(TRACES, key=os.path.getsize) if TRACES else None
    if not small:
        raise helpers.Skip("../shared/traces/*.bst missing")
    ch = server()
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
