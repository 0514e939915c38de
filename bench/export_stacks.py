# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""What stacks cost the timeline exports: each TRACE exported to perfetto, chrome and sqlite by
two builds of bpfsight (BEFORE: without stacks in those exports, AFTER: with them),
alternating, ROUNDS rounds; prints per (trace, format) the output's size and the median
wall time of each build (min..max) and their ratio.

    python3 bench/export_stacks.py BEFORE AFTER TRACE... [--rounds N]
"""
import argparse
import os
import shutil
import statistics
import subprocess
import tempfile
import time

FORMATS = (("perfetto", "pftrace"), ("chrome", "json"), ("sqlite", "sqlite"))


def export(binary, trace, fmt, out):
    if os.path.exists(out):
        os.unlink(out)
    t = time.perf_counter()
    subprocess.run([binary, "export", trace, "--format", fmt, "-o", out], check=True,
                   capture_output=True)
    return time.perf_counter() - t, os.path.getsize(out)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("before")
    ap.add_argument("after")
    ap.add_argument("traces", nargs="+")
    ap.add_argument("--rounds", type=int, default=5)
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="bpfsight-export-bench-")
    try:
        print("| trace | format | size before | size after | time before (s) | time after (s) |"
              " after / before |")
        print("|---|---|---|---|---|---|---|")
        for trace in a.traces:
            for fmt, ext in FORMATS:
                t = {"before": [], "after": []}
                size = {}
                for _ in range(a.rounds):
                    for which in ("before", "after"):
                        dt, n = export(getattr(a, which), trace, fmt,
                                       os.path.join(tmp, f"{which}.{ext}"))
                        t[which].append(dt)
                        size[which] = n

                def med(v):
                    return f"{statistics.median(v):.3f} ({min(v):.3f}..{max(v):.3f})"
                ratio = [x / y for x, y in zip(t["after"], t["before"])]
                print(f"| {os.path.basename(trace)} | {fmt} | {size['before']:,} |"
                      f" {size['after']:,} | {med(t['before'])} | {med(t['after'])} |"
                      f" {statistics.median(ratio):.2f} |")
    finally:
        shutil.rmtree(tmp, True)


if __name__ == "__main__":
    main()
