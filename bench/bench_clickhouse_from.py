#!/usr/bin/env python3
"""The server's CPU for `stats --from` (the verdict and the reports under it, table format) on
each real trace, two bpfsight binaries alternated against one clickhouse-server
(tests/e2e/clickhouse_server.py's) holding the four traces shipped once: what a change to
stats --from's queries saves the server, and whether the output stays byte for byte the same.

    python3 bench/bench_clickhouse_from.py OLD_BPFSIGHT NEW_BPFSIGHT [--rounds 4]

Not part of `make bench` (it needs clickhouse-server, `make deps`, and ../shared/traces);
bench/RESULTS.md's "make check time", session 13."""
import argparse
import glob
import os
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
sys.path.insert(0, os.path.join(ROOT, "tests", "e2e"))

import clickhouse_server  # noqa: E402
import helpers  # noqa: E402

TRACES = sorted(glob.glob(os.path.join(ROOT, "..", "shared", "traces", "*.bst")))


def cpu(pid):
    """PID's CPU seconds (user + system) so far."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("old")
    ap.add_argument("new")
    ap.add_argument("--rounds", type=int, default=4)
    a = ap.parse_args()
    if not TRACES:
        sys.exit("../shared/traces/*.bst missing")
    ch = clickhouse_server.ClickHouse()
    helpers.run([a.old, "ship", *TRACES, "--to", ch.url("real"), "--spool",
                 helpers.tmpdir()], check=True, timeout=600)
    spent = {"old": [], "new": []}
    for rnd in range(a.rounds):
        outs = {}
        for name in ("old", "new") if rnd % 2 == 0 else ("new", "old"):
            before = cpu(ch.proc.pid)
            outs[name] = [helpers.run([getattr(a, name), "stats", "--from", ch.url("real"),
                                       "--file", t, "--wide"], check=True, timeout=600).stdout
                          for t in TRACES]
            spent[name].append(cpu(ch.proc.pid) - before)
        print(f"round {rnd}: the server's CPU old {spent['old'][-1]:.2f} s, new "
              f"{spent['new'][-1]:.2f} s; the same output: {outs['old'] == outs['new']}")
    ch.stop()
    for name, v in spent.items():
        print(f"{name}: {', '.join(f'{x:.2f}' for x in v)} s (sum {sum(v):.2f})")


if __name__ == "__main__":
    main()
