#!/usr/bin/env python3
"""The events table's columns on a ClickHouse release, variant by variant: the four real traces
shipped into a table made each way beforehand (ship keeps a table it finds), then the bytes on
disk per column (system.columns, after OPTIMIZE ... FINAL), the server's CPU for the inserts
and for each file's reports and verdict (stats --from, /proc/PID/stat around them). What
ch_schema.c's choice by release rests on.

    python3 bench/bench_clickhouse_ddl.py [--engine 26.7|18.16] [VARIANT...]

VARIANTs: plain (18.16's, what ship makes there), lowcard (the labels LowCardinality), codecs
(Delta/T64 + LZ4, ZSTD args), both, compact (ship's from 20.3: LowCardinality and Delta/T64 +
ZSTD everywhere). Not part of `make bench` (it needs `make deps`' servers and ../shared/traces);
bench/RESULTS.md, "ClickHouse on 18.16 and 26.7"."""
import argparse
import glob
import json
import os
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
sys.path.insert(0, os.path.join(ROOT, "tests", "e2e"))

import clickhouse_server  # noqa: E402
import helpers  # noqa: E402

TRACES = sorted(glob.glob(os.path.join(ROOT, "..", "shared", "traces", "*.bst")))
LC = "LowCardinality(String)"
VARIANTS = {
    "plain": dict(),
    "lowcard": dict(job=LC, host=LC, file=LC, file_id=LC, kind=LC),
    "codecs": dict(seq="UInt64 CODEC(Delta, LZ4)", ts="Int64 CODEC(Delta, LZ4)",
                   dur="UInt64 CODEC(T64, LZ4)", args="String CODEC(ZSTD(1))"),
    "both": dict(job=LC, host=LC, file=LC, file_id=LC, kind=LC,
                 seq="UInt64 CODEC(Delta, LZ4)", ts="Int64 CODEC(Delta, LZ4)",
                 dur="UInt64 CODEC(T64, LZ4)", args="String CODEC(ZSTD(1))"),
    "compact": dict(job=LC, host=LC, file=LC, file_id=LC, kind=LC,
                    seq="UInt64 CODEC(Delta, ZSTD(1))", ts="Int64 CODEC(Delta, ZSTD(1))",
                    dur="UInt64 CODEC(T64, ZSTD(1))", name="String CODEC(ZSTD(1))",
                    args="String CODEC(ZSTD(1))"),
}
COLS = [("job", "String"), ("host", "String"), ("rank", "Int32"), ("file", "String"),
        ("file_id", "String"), ("seq", "UInt64"), ("ts", "Int64"), ("dur", "UInt64"),
        ("pid", "UInt32"), ("tid", "UInt32"), ("kind", "String"), ("name", "String"),
        ("args", "String")]
REPORTS = ("cuda_api_sum,nccl_sum,osrt_sum,sched_sum,gil_sum,gil_blocked_by,cpu_sum,gil_stacks,"
           "offcpu_stacks")


def cpu(pid):
    """PID's CPU seconds (user + system) so far."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def ddl(variant):
    cols = ", ".join(f"{c} {VARIANTS[variant].get(c, t)}" for c, t in COLS)
    return (f"CREATE TABLE bpfsight.events ({cols}, time DateTime DEFAULT "
            "toDateTime(intDiv(ts, 1000000000)), day Date DEFAULT toDate(time)) ENGINE = "
            "MergeTree() PARTITION BY day ORDER BY (job, kind, host, rank, pid, tid, ts)")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--engine", default=clickhouse_server.NEW, choices=clickhouse_server.ENGINES)
    ap.add_argument("variants", nargs="*", default=list(VARIANTS))
    a = ap.parse_args()
    if not TRACES:
        sys.exit("../shared/traces/*.bst missing")
    for v in a.variants:
        ch = clickhouse_server.ClickHouse(a.engine)
        ch.query("CREATE DATABASE IF NOT EXISTS bpfsight")
        ch.query(ddl(v))
        c0 = cpu(ch.proc.pid)
        helpers.run([helpers.BPFSIGHT, "ship", *TRACES, "--to", ch.url("real"), "--spool",
                     helpers.tmpdir()], check=True, timeout=900)
        c1 = cpu(ch.proc.pid)
        ch.query("OPTIMIZE TABLE bpfsight.events FINAL")
        cols = {n: int(b) for n, b in ch.rows(
            "SELECT name, data_compressed_bytes FROM system.columns WHERE "
            "database = 'bpfsight' AND table = 'events'")}
        c2 = cpu(ch.proc.pid)
        for t in TRACES:
            helpers.run([helpers.BPFSIGHT, "stats", "--from", ch.url("real"), "--file", t, "-r",
                         REPORTS, "--format", "json"], check=True, timeout=600)
            helpers.run([helpers.BPFSIGHT, "stats", "--from", ch.url("real"), "--file", t],
                        check=True, timeout=600)
        c3 = cpu(ch.proc.pid)
        print(json.dumps({"variant": v, "engine": a.engine, "bytes": sum(cols.values()),
                          "insert_cpu_s": round(c1 - c0, 2), "reports_cpu_s": round(c3 - c2, 2),
                          "columns": cols}), flush=True)
        ch.stop()
        helpers.cleanup()


if __name__ == "__main__":
    main()
