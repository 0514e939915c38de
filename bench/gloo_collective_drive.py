#!/usr/bin/env python3
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""bench/RESULTS.md's "gloo collectives": two ranks of bench/gloo_collective_cost.py, N
all_reduces a phase, one phase per CONFIG in turn: `-` untraced, else a bpfsight binary that
records the phase with `record -t nccl -p RANK0,RANK1`. Prints each phase's microseconds per
all_reduce (the slower rank's) and, for a traced one, nccl_sum's calls and mean times.

    python3 bench/gloo_collective_drive.py N CONFIG...   (e.g. 2000 - old/bpfsight - new/bpfsight)
"""
import json, os, signal, subprocess, sys, tempfile, time

here = os.path.dirname(os.path.abspath(__file__))
n, configs = sys.argv[1], sys.argv[2:]
py = "/usr/bin/python3"
ranks = [subprocess.Popen([py, os.path.join(here, "gloo_collective_cost.py"), str(r), n,
                           str(len(configs))], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                          text=True) for r in range(2)]
pids = [int(p.stdout.readline()) for p in ranks]
d = tempfile.mkdtemp()
for i, cfg in enumerate(configs):
    rec, out = None, os.path.join(d, f"phase{i}.bst")
    if cfg != "-":
        rec = subprocess.Popen([cfg, "record", "-t", "nccl", "-p", f"{pids[0]},{pids[1]}",
                                "-o", out], stderr=subprocess.PIPE, text=True)
        while "recording" not in rec.stderr.readline():  # attached: its first line
            pass
    for p in ranks:
        p.stdin.write("\n"); p.stdin.flush()
    us = max(float(p.stdout.readline()) for p in ranks)
    line = f"phase {i} {cfg}: {us:.1f} us per all_reduce"
    if rec:
        rec.send_signal(signal.SIGINT); rec.wait()
        s = json.loads(subprocess.run([cfg, "stats", "-r", "nccl_sum", "--format", "json", out],
                                      capture_output=True, text=True).stdout)
        line += "; " + ", ".join(f"{r['name']} {r['count']} x {r['avg_ns'] / 1e3:.2f} us "
                                 f"(median {r['med_ns'] / 1e3:.2f})"
                                 for r in s["reports"]["nccl_sum"])
    print(line, flush=True)
for p in ranks:
    p.stdin.write("\n"); p.stdin.flush(); p.wait()
