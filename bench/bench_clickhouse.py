#!/usr/bin/env python3
"""bpfsight ship into a real clickhouse-server (tests/e2e/clickhouse_server.py's: its own
directory and loopback port): rows per second shipped from this host against the recorder's
own event rate on the real traces, ship's CPU time and peak RSS, bytes on disk per event in
the server against the .bst files; then N rank files (bench/rank_files, one straggler): ship
time, bytes, the straggler query's latency.

    python3 bench/bench_clickhouse.py --build build [--ranks 64]

Not part of `make bench` (it needs clickhouse-server, `make deps`); prints markdown rows for
bench/RESULTS.md's "ClickHouse" section."""
import argparse
import glob
import json
import os
import resource
import subprocess
import sys
import time

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
sys.path.insert(0, os.path.join(ROOT, "tests", "e2e"))


def timed(args, env=None):
    """ARGS run: (wall s, CPU s, peak RSS MB) of the child."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.time()
    p = subprocess.run(args, capture_output=True, text=True, env=env)
    wall = time.time() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if p.returncode:
        sys.exit(f"{args[:3]} exited {p.returncode}: {p.stderr[-600:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, after.ru_maxrss / 1024


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--ranks", type=int, default=64)
    a = ap.parse_args()
    os.environ["BPFSIGHT_BUILD"] = os.path.abspath(a.build)
    import helpers
    from clickhouse_server import ClickHouse
    bpf = os.path.join(a.build, "bpfsight")
    ch = ClickHouse()
    spool = os.path.join(helpers.tmpdir(), "spool")
    try:
        print("| trace | events | recorded at (events/s) | ship wall | shipped rows/s | "
              "ratio to the recorder's rate | ship CPU | ship peak RSS | .bst bytes/event | "
              "server bytes/event |")
        print("|---|---|---|---|---|---|---|---|---|---|")
        traces = sorted(glob.glob(os.path.join(ROOT, "..", "shared", "traces", "*.bst")))
        for i, t in enumerate(traces):
            info = json.loads(subprocess.run([bpf, "info", "--json", t], capture_output=True,
                                             text=True).stdout)
            job = f"bench{i}"
            wall, cpu, rss = timed([bpf, "ship", t, "--to", ch.url(job), "--spool", spool])
            rows = int(ch.query(f"SELECT count() FROM bpfsight.events WHERE job = '{job}'"))
            ch.query("OPTIMIZE TABLE bpfsight.events FINAL")
            disk = int(ch.query("SELECT sum(bytes_on_disk) FROM system.parts WHERE "
                                "database = 'bpfsight' AND table = 'events' AND active"))
            before = getattr(main, "disk", 0)
            main.disk = disk
            rate = rows / (info["duration_ns"] / 1e9)
            print(f"| {os.path.basename(t)} | {rows:,} | {rate:,.0f} | {wall:.2f} s | "
                  f"{rows / wall:,.0f} | {rows / wall / rate:.1f}x | {cpu:.2f} s | {rss:.0f} MB "
                  f"| {os.path.getsize(t) / rows:.1f} | {(disk - before) / rows:.1f} |")

        d = helpers.tmpdir()
        rf = os.path.join(a.build, "bench", "rank_files")
        if not os.path.exists(rf):
            print(f"\n({rf} not built: make bench-build; the ranks' part skipped)")
            return
        subprocess.run([rf, d, str(a.ranks), "1000", "9"], check=True, capture_output=True)
        files = sorted(glob.glob(os.path.join(d, "rank*.bst")))
        merged = os.path.join(d, "job.bst")
        subprocess.run([bpf, "merge", "-o", merged, *files], check=True, capture_output=True)
        size = sum(os.path.getsize(f) for f in files)
        wall_files, cpu_files, _ = timed([bpf, "ship", *files, "--to", ch.url("ranksraw"),
                                          "--spool", spool])
        wall, cpu, rss = timed([bpf, "ship", merged, "--to", ch.url("ranks"), "--spool", spool])
        rows = int(ch.query("SELECT count() FROM bpfsight.events WHERE job = 'ranks'"))
        t = time.time()
        p = subprocess.run([bpf, "stats", "--from", ch.url("ranks"), "-r", "nccl_stragglers",
                            "--format", "json"], capture_output=True, text=True, check=True)
        q = time.time() - t
        n = len(json.loads(p.stdout)["reports"]["nccl_stragglers"])
        late = sum(1 for r in json.loads(p.stdout)["reports"]["nccl_stragglers"]
                   if r["last_rank"] == 9)
        print(f"\n{a.ranks} rank files (bench/rank_files {a.ranks} 1000 9): {rows:,} rows, "
              f"{size / 1e6:.1f} MB of .bst; ship of the {a.ranks} files {wall_files:.2f} s "
              f"({cpu_files:.2f} s CPU), of their merged file {wall:.2f} s ({cpu:.2f} s CPU, "
              f"{rss:.0f} MB peak RSS); stats --from -r nccl_stragglers {q:.2f} s, {n} "
              f"collectives, {late} with rank 9 last")
    finally:
        ch.stop()
        helpers.cleanup()


if __name__ == "__main__":
    main()
