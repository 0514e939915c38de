# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""Many ranks (section `ranks` of bench/RESULTS.md; docs/NCCL.md "Many ranks, one timeline"):
`bpfsight merge` of synthetic rank files of one job (bench/rank_files.c: a host per 8 ranks,
its own boot and a wall clock up to 1 ms off and 20 ppm fast or slow, 1,000 all-reduces a
millisecond apart, 9 system calls between two), 64 to 1,024 files: wall time and the
merge's peak memory (max RSS), then `stats -r nccl_stragglers` on the merged file, and the
SQLite path (each rank exported, gathered, queried: docs/NCCL.md) on 64 of them. The figures
say where merging on one machine stops scaling.

    python3 bench/run_bench.py --build B --only ranks --no-results   # this section alone
"""

import json
import os
import shutil
import subprocess
import time

from bench_common import BenchError, begin, end

NAME = "ranks"
COLLS, FILLER = 1000, 9
GOAL_S = 60.0          # merge of 1,024 files
GOAL_RSS_MB = 256.0    # its peak memory


def peak_rss_mb(cmd):
    """Wall seconds and peak RSS (MB) of CMD, from the kernel's accounting (wait4)."""
    t0 = time.monotonic()
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, ru = os.wait4(p.pid, 0)
    took = time.monotonic() - t0
    err = p.stderr.read().decode(errors="replace")
    p.stderr.close()
    p.returncode = os.waitstatus_to_exitcode(status)
    if p.returncode:
        raise BenchError(f"{' '.join(cmd[:4])} ... exited {p.returncode}: {err[-1500:]}")
    return took, ru.ru_maxrss / 1024


def files_of(d, n):
    return [os.path.join(d, f"rank{i}.bst") for i in range(n)]


def one_size(ctx, n, colls):
    d = os.path.join(ctx.r.tmp, f"ranks{n}-{colls}")
    os.makedirs(d, exist_ok=True)
    ctx.r.run([ctx.r.bench_bin("rank_files"), d, str(n), str(colls), str(FILLER)], timeout=600)
    files = files_of(d, n)
    out = os.path.join(d, "job.bst")
    size_in = sum(os.path.getsize(f) for f in files)
    took, rss = peak_rss_mb([ctx.r.bpfsight, "merge", "-o", out, *files])
    ctx.progress("merge", n, n, f"{took:.1f} s, {rss:.0f} MB")
    meta = ctx.r.json_of([ctx.r.bpfsight, "info", "--json", out])
    s_took, s_rss = peak_rss_mb([ctx.r.bpfsight, "stats", "-r", "nccl_stragglers", "--format",
                                 "json", out])
    rows = ctx.r.json_of([ctx.r.bpfsight, "stats", "-r", "nccl_stragglers", "--format", "json",
                          out])["reports"]["nccl_stragglers"]
    late = [r for r in rows if r["seq"] % 50 == 49]
    right = all(r["last_rank"] == 7 % n and 1.9e6 < r["skew_ns"] < 2.1e6 for r in late)
    res = {"n": n, "colls": colls, "took": took, "rss": rss, "in_mb": size_in / 1e6,
           "out_mb": os.path.getsize(out) / 1e6, "records": meta["records"],
           "stats_s": s_took, "stats_rss": s_rss, "late": len(late), "right": right,
           "dir": d}
    if n > 64:
        shutil.rmtree(d, ignore_errors=True)
    return res


def sqlite_path(ctx, d, n):
    """Each rank exported, gathered into one database, the straggler query (docs/NCCL.md)."""
    sqlite = shutil.which("sqlite3")
    if not sqlite:
        return None
    doc = open(os.path.join(os.path.dirname(__file__), "..", "docs", "NCCL.md")).read()
    blocks = {b.split("\n", 1)[0][3:]: b for b in doc.split("```sql\n")[1:]}
    gather = blocks["nccl_gather"].split("```")[0]
    query = blocks["nccl_stragglers"].split("```")[0]
    db = os.path.join(d, "job.db")
    t0 = time.monotonic()
    for f in files_of(d, n):
        sq = f[:-4] + ".sqlite"
        ctx.r.run([ctx.r.bpfsight, "export", f, "--format", "sqlite", "-o", sq])
    t_export = time.monotonic() - t0
    t0 = time.monotonic()
    for f in files_of(d, n):
        ctx.r.run([sqlite, db, "-cmd", f".parameter set :file '{f[:-4]}.sqlite'"], input=gather)
    t_gather = time.monotonic() - t0
    t0 = time.monotonic()
    r = ctx.r.run([sqlite, "-json", db], input=query)
    t_query = time.monotonic() - t0
    rows = json.loads(r.stdout)
    late = [x for x in rows if x["seq"] % 50 == 49]
    right = all(x["last_rank"] == 7 % n and 1.9e6 < x["skew_ns"] < 2.1e6 for x in late)
    return {"export": t_export, "gather": t_gather, "query": t_query, "right": right,
            "late": len(late), "db_mb": os.path.getsize(db) / 1e6}


def run(ctx):
    sizes = [64, 256] if ctx.quick else [64, 256, 1024]
    if not os.access(ctx.r.bench_bin("rank_files"), os.X_OK):
        raise BenchError("build/bench/rank_files is missing: run `make bench-build`")
    res = {"sizes": [one_size(ctx, n, COLLS) for n in sizes]}
    res["long"] = one_size(ctx, 64, COLLS * 10)
    res["sqlite"] = sqlite_path(ctx, res["sizes"][0]["dir"], 64)
    return res


def text(ctx, res):
    big = res["sizes"][-1]
    return (f"ranks: merge of {big['n']} files ({big['in_mb']:.0f} MB, "
            f"{big['records']:,} records) in {big['took']:.1f} s, peak {big['rss']:.0f} MB")


def markdown(ctx, res):
    g = ctx.goals
    big = res["sizes"][-1]
    time_cell = g.check(NAME, f"merge of {big['n']:,} rank files", f"{big['took']:.1f} s",
                        f"< {GOAL_S:g} s at 1,024", big["took"] < GOAL_S)
    rss_cell = g.check(NAME, f"merge's peak memory, {big['n']:,} files", f"{big['rss']:.0f} MB",
                       f"< {GOAL_RSS_MB:g} MB", big["rss"] < GOAL_RSS_MB)
    out = [begin(NAME), "## Many ranks: bpfsight merge at scale", "",
           f"Measured {ctx.machine['date']} by {ctx.invocation}, bpfsight "
           f"{ctx.machine['version']}." + (" **Quick run: indicative only.**" if ctx.quick
                                            else ""), "",
           f"Machine: `nproc` {ctx.machine['nproc']}, CPU {ctx.machine['cpu']}, hypervisor: "
           f"{ctx.machine['virt']}.", "", "```",
           f"build/bench/rank_files DIR N {COLLS} {FILLER}     # rank0.bst ... rank{{N-1}}.bst",
           "bpfsight merge -o DIR/job.bst DIR/rank*.bst     # wall time, peak RSS (wait4)",
           "bpfsight stats -r nccl_stragglers --format json DIR/job.bst",
           "```", "",
           "| files | records | input | output | merge | merge peak RSS | input rate | "
           "stats -r nccl_stragglers | its peak RSS (every report runs: osrt_sum keeps each "
           "system call's duration) | late collectives named |",
           "|---|---|---|---|---|---|---|---|---|---|"]
    for s in res["sizes"] + [res["long"]]:
        label = f"{s['n']:,}" + (f" x {s['colls']:,} collectives" if s is res["long"] else "")
        out.append(f"| {label} | {s['records']:,} | {s['in_mb']:.1f} MB | {s['out_mb']:.1f} MB "
                   f"| {s['took']:.2f} s | {s['rss']:.0f} MB | "
                   f"{s['records'] / s['took'] / 1e6:.2f} M records/s | {s['stats_s']:.2f} s | "
                   f"{s['stats_rss']:.0f} MB | {s['late']} of {s['late']}"
                   f"{'' if s['right'] else ' **wrong**'} |")
    out += ["", f"Goals: {time_cell}; {rss_cell}.", ""]
    sq = res["sqlite"]
    if sq:
        out.append(f"The SQLite path on the 64 files (docs/NCCL.md): `export --format sqlite` "
                   f"of every file {sq['export']:.1f} s ({sq['export'] / 64 * 1000:.0f} ms a "
                   f"file, on each rank's own host in practice), gathered with the `sqlite3` "
                   f"CLI in {sq['gather']:.1f} s into {sq['db_mb']:.1f} MB, the straggler "
                   f"query {sq['query']:.2f} s; {sq['late']} late collectives, "
                   f"{'every one named right' if sq['right'] else '**not all named right**'}.")
    else:
        out.append("The SQLite path: skipped (no sqlite3 CLI).")
    rate = big["records"] / big["took"]
    out += ["", "What this means: merge reads every file twice (scan, then copy) and writes "
            f"one file as large as all of them; here it moves {rate / 1e6:.1f} M records/s "
            f"({big['in_mb'] / big['took']:.0f} MB/s of input) whatever the number of files, "
            "so its time is the job's total records over that rate (a 1,024-rank job of "
            f"100 MB per rank, about 30 M records each, would take about "
            f"{1024 * 30e6 / rate / 3600:.1f} h), and its memory is one reader and writer "
            "plus at most 2,048 collectives per file kept for the fit, a few MB per hundred "
            "files. It stops scaling at 1,024 files (the pid namespaces), at what one "
            "machine's disk takes twice over, and well before either at what a viewer "
            "opens (the Perfetto UI, about 2 GB): past that, the SQLite path keeps each "
            "rank's work on its own host and gathers only the collectives (a few dozen bytes "
            "each).", end(NAME)]
    return "\n".join(out) + "\n"
