"""blas family on Debian's torch and numpy: torch.mm's GEMMs as the BLAS library sees them.

torch is row-major and BLAS column-major: torch.mm(a, b) with a M x K and b K x N computes
C^T = b^T a^T, so it calls sgemm_ with m = N, n = M, k = K, b first (lda = N) and a second
(ldb = K); a transposed view of a is passed as 'T' with its own stride. numpy.dot calls
cblas_dgemm row-major with the shapes as written; the reference CBLAS (libblas.so.3 here)
then calls dgemm_ column-major, one level deeper.
"""
import os
import re
import sqlite3
from collections import Counter

import pymods
from helpers import (BPFSIGHT, Recorder, Skip, check, dump, eq, need_root, record, run, spawn,
                     stats, tmpdir)

# For tests/run_tests.py: about how long these tests take on CI's machine (its order).
SECONDS = 8

PY = "/usr/bin/python3"
# The file libblas.so.3 resolves to: Debian's reference BLAS (libblas3, in .../blas/) here.
LIBBLAS = os.path.realpath("/usr/lib/x86_64-linux-gnu/libblas.so.3")
SCRIPT = """
import numpy, torch
a, b = torch.ones(30, 50), torch.ones(50, 70)
for _ in range(3):
    torch.mm(a, b)
torch.mm(torch.ones(50, 30).t(), b)
torch.mm(torch.ones(8, 16, dtype=torch.float64), torch.ones(16, 4, dtype=torch.float64))
numpy.dot(numpy.ones((6, 5)), numpy.ones((5, 9)))
"""


def need_torch():
    need_root()
    if not pymods.has(PY, "torch", "numpy"):
        raise Skip(f"{PY} has no torch and numpy (Debian's python3-torch)")


def test_torch_mm_as_sgemm():
    need_torch()
    script = os.path.join(tmpdir(), "mm.py")
    with open(script, "w") as f:
        f.write(SCRIPT)
    p, out = record([PY, script], "-t", "blas")
    eq(p.returncode, 0, f"record exit ({p.stderr[-800:]})")
    evs = [(e["name"], e["args"]) for e in dump(out) if e["kind"] == "blas_api"]
    top = [(n, a) for n, a in evs if "depth" not in a]
    mm = {"trans": "NN", "m": 70, "n": 30, "k": 50, "lda": 70, "ldb": 50, "dtype": "f32",
          "flops": 2 * 30 * 50 * 70}
    want = [("sgemm_", mm)] * 3 + [
        ("sgemm_", dict(mm, trans="NT", ldb=30)),
        ("dgemm_", {"trans": "NN", "m": 4, "n": 8, "k": 16, "lda": 4, "ldb": 16, "dtype": "f64",
                    "flops": 2 * 8 * 16 * 4}),
        ("cblas_dgemm", {"order": "row", "trans": "NN", "m": 6, "n": 9, "k": 5, "lda": 5,
                         "ldb": 9, "ldc": 9, "dtype": "f64", "flops": 2 * 6 * 5 * 9})]
    eq(top, want, "the application's GEMMs, in order")
    nested = [(n, a) for n, a in evs if "depth" in a]
    for n, a in nested:
        eq((n, a), ("dgemm_", {"trans": "NN", "m": 9, "n": 6, "k": 5, "lda": 9, "ldb": 5,
                               "dtype": "f64", "flops": 540, "depth": 1}),
           "the reference CBLAS's column-major call")
    check(len(nested) <= 1, f"one nested call at most: {nested}")
    s = stats(out, "blas_sum")["blas_sum"]
    eq({r["name"]: r["count"] for r in s}, {"sgemm_": 4, "dgemm_": 1, "cblas_dgemm": 1},
       "blas_sum: the application's calls (depth 0)")
    rows = stats(out, "blas_gemm_sum")["blas_gemm_sum"]
    got = sorted((r["name"], r["trans"], r["m"], r["n"], r["k"], r["count"], r["flops"])
                 for r in rows)
    f = 2 * 30 * 50 * 70
    eq(sorted((r["library"], r["blas"]) for r in rows),
       [(os.path.basename(LIBBLAS), "reference")] * 4, "blas_gemm_sum: the library that ran them")
    eq(got, sorted([("sgemm_", "NN", 70, 30, 50, 3, 3 * f), ("sgemm_", "NT", 70, 30, 50, 1, f),
                    ("dgemm_", "NN", 4, 8, 16, 1, 2 * 8 * 16 * 4),
                    ("cblas_dgemm", "NN", 6, 9, 5, 1, 2 * 6 * 5 * 9)]),
       "blas_gemm_sum: by function, transposes and shape")
    db = os.path.join(tmpdir(), "t.sqlite")
    run([BPFSIGHT, "export", out, "-f", "sqlite", "-o", db], check=True)
    with sqlite3.connect(db) as c:
        got = c.execute("SELECT value, nestingLevel, ord, trans, m, n, k, lda, ldb, ldc, dtype,"
                        " flops FROM BPFSIGHT_BLAS JOIN StringIds ON StringIds.id = nameId"
                        " ORDER BY start").fetchall()
    eq([g for g in got if g[1] == 0][:1] + [g for g in got if g[0] == "cblas_dgemm"],
       [("sgemm_", 0, None, "NN", 70, 30, 50, 70, 50, None, "f32", f),
        ("cblas_dgemm", 0, "row", "NN", 6, 9, 5, 5, 9, 9, "f64", 540)],
       "SQLite: BPFSIGHT_BLAS rows with the arguments")
    for r in rows:
        check(r["total_ns"] > 0 and abs(r["gflops"] - round(r["flops"] / r["total_ns"], 2)) < 0.006,
              f"GFLOP/s = FLOPs / time: {r}")


GEMM_LOOP = """
import sys, torch
a = torch.ones(256, 256)
print("ready", flush=True)
while not sys.stdin.closed and a is not None:
    for _ in range(20):
        a @ a
    import select
    if select.select([sys.stdin], [], [], 0)[0] and not sys.stdin.readline():
        break
"""


def test_the_verdict_names_the_reference_blas_running_the_gemms():
    """A job whose main thread spends its time in sgemm_ on netlib's reference BLAS (what
    Debian's torch gets when no other BLAS is installed): the verdict says how much of the
    thread's time the GEMMs took, at what GFLOP/s and in which library, and what to install."""
    need_torch()
    if "/blas/" not in LIBBLAS:
        raise Skip(f"libblas.so.3 is {LIBBLAS} here, not Debian's reference BLAS")
    job = spawn([PY, "-c", GEMM_LOOP])
    try:
        line = job.stdout.readline().strip()
        eq(line, "ready", f"the job started: {'' if line else job.stderr.read()[-300:]}")
        rec = Recorder("-t", "blas", "-p", str(job.pid), "-d", "1s")
        eq(rec.wait(), 0, rec.stderr[-800:])
    finally:
        job.stdin.close()
        job.wait(60)
    rows = stats(rec.out, "blas_gemm_sum")["blas_gemm_sum"]
    eq([(r["name"], r["m"], r["library"], r["blas"]) for r in rows],
       [("sgemm_", 256, os.path.basename(LIBBLAS), "reference")], "the GEMMs and their library")
    out = run([BPFSIGHT, "stats", rec.out], check=True).stdout
    claim = re.search(r"^ \* CPU +([\d.]+)%  (\S+) \(main thread, pid (\d+)\) spent (.+) in (\d+) CPU "
                      r"GEMMs at ([\d.]+) GFLOP/s, on the reference BLAS \((\S+)\) "
                      r"\(-r blas_gemm_sum\)$", out, re.M)
    check(claim, f"a holding CPU claim naming the reference BLAS: {out[:1200]}")
    eq((int(claim.group(3)), int(claim.group(5)), claim.group(7)),
       (job.pid, rows[0]["count"], os.path.basename(LIBBLAS)), "the claim's thread, GEMMs, library")
    check(float(claim.group(1)) >= 20, f"GEMMs are most of the thread's second: {claim.group(0)}")
    # The claim rounds the rate to 0.1, the table's column to 0.01 (3.1547: 3.2 and 3.15).
    check(abs(float(claim.group(6)) - rows[0]["gflops"]) <= 0.05 + 0.005,
          f"the claim's GFLOP/s {claim.group(6)}, the table's {rows[0]['gflops']}")
    check("apt install libopenblas0-pthread" in out, f"what to install: {out[:1500]}")
