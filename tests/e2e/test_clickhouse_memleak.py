"""mem_leaks computed in a ClickHouse server (`stats --from`, docs/CLICKHOUSE.md, user/families/mem/
mem_leaks_sql.c) against `stats FILE` on the same real recording, row for row, and mem's leak
claim from the server line for line, on each engine (clickhouse_server.ENGINES: Debian's
18.16, chDB's 26.7), one shipped file each; recorded once, stats FILE asked once.

The recording: a loop that leaks (tests/workloads/mem_leak_passes.py: 1 MiB a pass made by
torch.nn.functional.normalize, 256 KiB a pass sampled, a temporary freed each pass; the process
exits without freeing what it kept) on Debian's python3-torch, recorded with -t mem: a pass of
its loop, found by mem_period, is its step. Torch's steps and windows of the allocations (the
workload's --steps and --uneven, -t mem,torch) were compared by hand, not here: each process
of python3-torch recorded costs make check about 2 CPU-s (docs/CLICKHOUSE.md)."""
import json
import os
import re

from clickhouse_server import once, shared, stats_text
from helpers import BPFSIGHT, check, eq, keep_tmpdir, record, run, tmpdir
from marked import PY, Marked, need_torch
import test_clickhouse_mem as chmem

SECONDS = 10
PARAMS = ("18.16", "26.7")  # clickhouse_server.ENGINES: each test runs on both

WORKLOAD = Marked("mem_leak_passes.py")


def leaks(args):
    """mem_leaks' rows of stats ARGS, as JSON."""
    if "--from" not in args:
        return json.loads(stats_text(*args, "-r", "mem_leaks", "--format",
                                     "json"))["reports"]["mem_leaks"]
    p = run([BPFSIGHT, "stats", *args, "-r", "mem_leaks", "--format", "json"], timeout=300)
    eq(p.returncode, 0, f"stats {' '.join(args)} ({p.stderr[-800:]})")
    return json.loads(p.stdout)["reports"]["mem_leaks"]


def recording():
    p, out = record([PY, WORKLOAD.path], "-t", "mem",
                    out=os.path.join(keep_tmpdir(), "leak.bst"))
    eq(p.returncode, 0, f"record ({p.stderr[-600:]})")
    return out


def test_leaks_and_the_leak_claim_from_the_server(engine):
    """On the recording of the leaking loop: mem_leaks from the server equals stats
    FILE's row for row (every column: the sites, their library lines, the live bytes and
    blocks, the sampled estimates, the growth a step, the boundaries grown at, what a step
    is, why a row is not a leak, the order); the leak first, at the job's KEEP line, a pass
    of the loop its step. The
    verdict from the server equals stats FILE's line for line: memory at risk, a leak at
    KEEP with the library's line it was "allocated through", mem_leaks not named as judged without.
    --group-by (its rows by stack:N) is refused with --from, not ignored."""
    need_torch()
    out = once("leak", recording)
    ch = shared(engine)
    job = ch.url("memleak")
    p = run([BPFSIGHT, "ship", out, "--to", job, "--spool", os.path.join(tmpdir(), "spool")],
            timeout=300)
    eq(p.returncode, 0, f"ship ({p.stderr[-800:]})")

    theirs = leaks([out])
    eq(leaks(["--from", job]), theirs, "mem_leaks from the server, row for row")
    keep = WORKLOAD.at(theirs, "KEEP")
    eq([r["per"] for r in keep], ["loop"], f"the leak's row, a pass of the loop its step: {keep}")
    # the library's line (normalize's, in functional.py) when the recorder read its code
    # before the process ended: a lost race names it "[python code ...: gone ...]"
    check(keep[0]["growth_per_step_bytes"] and theirs[0] == keep[0] and keep[0]["via_func"],
          f"KEEP grows first, allocated through torch's line: {keep}")
    check(any(r["sampled"] for r in theirs) and any(r["not_a_leak"] for r in theirs),
          f"sampled rows and rows that are no leak: {theirs}")

    mine, rest, _ = chmem.verdict(["--from", job])
    want, _, _ = chmem.verdict([out])
    eq(mine, want, "the verdict from the server")
    check(mine[0].startswith(f"Verdict: memory at risk: a leak: <module> "
                             f"(mem_leak_passes.py:{WORKLOAD.line('KEEP')})"), mine[0])
    check(any(l.strip().startswith("allocated through ") for l in mine),
          f"the library's line: {mine}")
    check(not re.search(r"judged without: [^.]*mem_leaks", rest), rest)
    # its rows by stack:N are not SQL: refused, never the rows by line in their place
    p = run([BPFSIGHT, "stats", "--from", job, "-r", "mem_leaks", "--group-by", "stack:2"])
    check(p.returncode != 0 and "--group-by" in p.stderr, f"--group-by refused: {p}")
