# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""Unwind tables (section `unwind` of bench/RESULTS.md; docs/STACKS.md "Building the tables"):
the time and memory to build the tables of the large libraries ML jobs run in (Debian's
libtorch_cpu, CUDA's libcublas and libcublasLt; libc and pyenv's libpython for scale), each
in a process of its own (build/tests/unwind_dump --stats: no table cached), RUNS times; the
table's rows and bytes (what the BPF maps hold), the process's peak RSS (VmHWM: the program,
libelf, the sections read, the FDEs, the rows growing), a second call for the same file
through the cache, and the store of tables across recordings (unwind_store.h, --store): the
table built and written into an empty store (a recording's cold build), then read back
from it (the next recording's).

    python3 bench/run_bench.py --build B --only unwind --no-results   # this section alone
    make bench-unwind                                                  # the same, ~15 s
"""

import json
import os
import shutil
import statistics
import subprocess
import tempfile

from bench_common import BenchError, block_head, end

NAME = "unwind"
GOAL_S = 1.0  # libtorch_cpu's table, built once per build id
FILES = [("libtorch_cpu", "/usr/lib/x86_64-linux-gnu/libtorch_cpu.so.1.13"),
         ("libcublas", "/usr/local/cuda/lib64/libcublas.so.13"),
         ("libcublasLt", "/usr/local/cuda/lib64/libcublasLt.so.13"),
         ("libc", "/lib/x86_64-linux-gnu/libc.so.6"),
         ("libpython3.10 (pyenv)",
          os.path.expanduser("~/.pyenv/versions/3.10.13/lib/libpython3.10.so.1.0"))]


def dump_bin(ctx):
    return os.path.join(ctx.r.build, "tests", "unwind_dump")


def one_run(cmd):
    """unwind_dump --stats FILE in a process of its own: its JSON lines."""
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    if p.returncode:
        raise BenchError(f"{' '.join(cmd)}: {p.stderr.strip()[-500:]}")
    return [json.loads(x) for x in p.stdout.splitlines()]


def one_file(ctx, label, path, runs):
    builds, rss, hits, stored, reads = [], [], [], [], []
    for _ in range(runs):
        store = tempfile.mkdtemp(prefix="bench-unwind-store-")
        try:
            lines = one_run([dump_bin(ctx), "--stats", "--store", store, path])
        finally:
            shutil.rmtree(store, ignore_errors=True)
        table, hit, st = lines[0], lines[1], lines[2]
        builds.append(table["build_ns"] / 1e9)
        hits.append(hit["hit_ns"] / 1e3)
        stored.append(st["store_built_ns"] / 1e9)
        reads.append(st["store_read_ns"] / 1e9)
        rss.append(table["max_rss_kib"] / 1024)
    res = {"label": label, "path": path, "size_mb": os.path.getsize(path) / 1e6,
           "section_mb": table["section_bytes"] / 1e6, "fdes": table["fdes"],
           "rows": table["rows"], "table_mb": table["bytes"] / 1e6,
           "expr": table["fdes_expr"], "build": builds, "rss": rss, "hit_us": hits,
           "stored": stored, "read": reads}
    ctx.progress("build", 1, 1, f"{label}: {statistics.median(builds) * 1e3:.0f} ms, "
                 f"{res['rows']:,} rows, {res['table_mb']:.1f} MB")
    return res


def run(ctx):
    if not os.access(dump_bin(ctx), os.X_OK):
        raise BenchError("build/tests/unwind_dump is missing: run `make test-build`")
    runs = 3 if ctx.quick else 7
    return {"files": [one_file(ctx, label, path, runs) for label, path in FILES
                      if os.path.exists(path)],
            "runs": runs}


def med(xs):
    return statistics.median(xs)


def text(ctx, res):
    torch = next((f for f in res["files"] if f["label"] == "libtorch_cpu"), None)
    if not torch:
        return "unwind: no libtorch_cpu here"
    return (f"unwind: libtorch_cpu's table in {med(torch['build']) * 1e3:.0f} ms, "
            f"{torch['rows']:,} rows, {torch['table_mb']:.1f} MB")


def markdown(ctx, res):
    g = ctx.goals
    out = block_head(ctx, NAME, "Unwind tables: building them (issue 42)") + ["```",
           "build/tests/unwind_dump --stats FILE   # a process per run: build_ns, the table's "
           "rows and bytes,",
           "                                       # its peak RSS (VmHWM), the cache's second "
           "call (hit_ns)",
           "build/tests/unwind_dump --stats --store EMPTY_DIR FILE   # and the table built and "
           "written", "                                       # into the store, then read back",
           "```", "",
           f"Each file {res['runs']} times; medians (min..max).", "",
           "| file | file size | sections read | FDEs | rows | table (12 B a row) | "
           "FDEs with a stop row | build time | process peak RSS | cache hit | "
           "built and written to the store | read from the store |",
           "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for f in res["files"]:
        cell = f"{med(f['build']) * 1e3:.0f} ms ({min(f['build']) * 1e3:.0f}.." \
               f"{max(f['build']) * 1e3:.0f})"
        if f["label"] == "libtorch_cpu":
            cell += " " + g.check(NAME, "libtorch_cpu's unwind table", cell, f"< {GOAL_S:g} s",
                                  med(f["build"]) < GOAL_S)
        out.append(f"| {f['label']} | {f['size_mb']:.0f} MB | {f['section_mb']:.1f} MB | "
                   f"{f['fdes']:,} | {f['rows']:,} | {f['table_mb']:.1f} MB | {f['expr']:,} | "
                   f"{cell} | {med(f['rss']):.0f} MB | {med(f['hit_us']):.0f} us | "
                   f"{med(f['stored']) * 1e3:.1f} ms | {med(f['read']) * 1e3:.1f} ms "
                   f"(**{med(f['stored']) / med(f['read']):.1f}x** faster) |")
    base = min((f for f in res["files"]), key=lambda f: med(f["rss"]))
    out += ["", "The table is what the BPF maps hold for the file, once per build id whatever "
            "the processes that map it; the peak RSS is the whole builder process's while it "
            f"runs (the program itself: about {med(base['rss']):.0f} MB with the smallest "
            "file; then the section read into memory, the FDE list at 32 bytes each, the "
            "rows doubling as they grow), given back when the table is trimmed to its rows. "
            "A second call for the same file (or a copy, or another container's) is a stat "
            "and a hash lookup. The store's read is the next recording's cost for the file "
            "(its header checked, its rows read and their crc32 and order checked); the "
            "build and write, the first recording's. Build times are this loaded 2-core "
            "machine's, other jobs running.", end(NAME)]
    return "\n".join(out) + "\n"
