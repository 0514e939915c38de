# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""A recording's edges (section `edges` of bench/RESULTS.md; docs/USAGE.md, "What was open at
the edges"): a Python process of N threads, each asleep in Event.wait (as a trainer's or a
server's threads mostly are), recorded `-p -d 1s`, with and without `--no-edges`:

- the time to read the job at the start and at the end (the recorder's own -v lines: every
  thread's state, stack and Python frames), for N = 10, 100, 1000;
- the stop's extra latency: the end's read, which the stop waits for (the probes go after it);
  and the whole run's extra wall time, from the recorder's start to its exit, with the edges
  minus without (the two taking turns);
- the records the edges add (the file's records, with minus without) and their bytes.

    python3 bench/run_bench.py --build B --only edges
"""

import os
import re
import subprocess
import sys
import time

from bench_common import BenchError, block_end, block_head, fmt_spread, median

NAME = "edges"
COUNTS = (10, 100, 1000)
STOP_GOAL_MS = 1000  # the end's read with 1000 threads: a stop takes a second or so anyway

JOB = """
import os, sys, threading
ev = threading.Event()
ts = [threading.Thread(target=ev.wait) for _ in range(int(sys.argv[1]))]
for t in ts:
    t.start()
print(os.getpid(), flush=True)
sys.stdin.read()
ev.set()
"""


def python():
    p = os.path.expanduser("~/.pyenv/versions/3.11.7/bin/python3.11")
    return p if os.path.exists(p) else sys.executable


def one(ctx, n, edges):
    job = subprocess.Popen([python(), "-c", JOB, str(n)], stdin=subprocess.PIPE,
                           stdout=subprocess.PIPE, text=True)
    try:
        pid = int(job.stdout.readline())
        out = ctx.r.tmpfile(".bst")
        cmd = [ctx.r.bpfsight, "record", "--force", "-v", "-p", str(pid), "-d", "1s", "-o", out]
        if not edges:
            cmd.append("--no-edges")
        t0 = time.monotonic()
        p = subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True)
        start_ms = end_ms = carry_ms = None
        for line in p.stderr:
            c = re.search(r"the intervals open at the start carried in in ([\d.]+) ms", line)
            if c:
                carry_ms = float(c.group(1))
            m = re.search(r"the job at the recording's (start|end): \d+ processes read in "
                          r"(\d+) ms", line)
            if m and m.group(1) == "start":
                start_ms = int(m.group(2))
            elif m:
                end_ms = int(m.group(2))
        p.wait(120)
        wall = time.monotonic() - t0
        if p.returncode:
            raise BenchError(f"{' '.join(cmd)} exited {p.returncode}")
        info = subprocess.run([ctx.r.bpfsight, "info", "--json", out], capture_output=True,
                              text=True, check=True).stdout
        recs = int(re.search(r'"records":\s*(\d+)', info).group(1))
        return {"start_ms": start_ms, "end_ms": end_ms, "carry_ms": carry_ms, "wall_s": wall,
                "records": recs, "bytes": os.path.getsize(out),
                "cmd": ctx.r.show_cmd(cmd, {out: "T.bst", str(pid): "PID"})}
    finally:
        job.kill()
        job.wait()


def run(ctx):
    rounds = 1 if ctx.quick else 3
    res = {}
    for n in COUNTS:
        runs = []
        for _ in range(rounds):
            runs.append((one(ctx, n, True), one(ctx, n, False)))
            w, wo = runs[-1]
            ctx.progress("edges", n, "-", f"{n} threads: start {w['start_ms']} ms, end "
                         f"{w['end_ms']} ms, wall +{(w['wall_s'] - wo['wall_s']) * 1e3:.0f} ms")
        res[n] = runs
    return {"runs": res, "rounds": rounds}


def figures(res):
    out = {}
    for n, runs in res["runs"].items():
        out[n] = {"start": [w["start_ms"] for w, _ in runs],
                  "end": [w["end_ms"] for w, _ in runs],
                  "carry": [w["carry_ms"] or 0.0 for w, _ in runs],
                  "wall": [(w["wall_s"] - wo["wall_s"]) * 1e3 for w, wo in runs],
                  "records": [w["records"] - wo["records"] for w, wo in runs],
                  "bytes": [w["bytes"] - wo["bytes"] for w, wo in runs]}
    return out


def text(ctx, res):
    f = figures(res)
    return "edges: " + "; ".join(f"{n} threads: start {median(x['start']):.0f} ms, end "
                                 f"{median(x['end']):.0f} ms, run +{median(x['wall']):.0f} ms"
                                 for n, x in f.items())


def markdown(ctx, res):
    f = figures(res)
    w = res["runs"][COUNTS[0]][0][0]
    out = block_head(ctx, NAME, "Edges: the job read when a recording begins and ends")
    out += ["```", f"# {res['rounds']} rounds per count, with and without the edges in turn; "
            "the job: a Python 3.11 process whose N threads wait in Event.wait",
            w["cmd"], w["cmd"] + " --no-edges", "```", "",
            "| threads | start's read | open intervals carried in | end's read (the stop's extra "
            "latency) | the run's extra wall time | records added | bytes added |",
            "|---|---|---|---|---|---|---|"]
    for n, x in f.items():
        cell = f"{fmt_spread(x['end'], ' ms')}"
        if n == COUNTS[-1]:
            cell += ", " + ctx.goals.check(NAME, f"stop's extra latency (the end's read), {n} "
                                           "threads", f"{median(x['end']):.0f} ms",
                                           f"<= {STOP_GOAL_MS} ms",
                                           median(x["end"]) <= STOP_GOAL_MS)
        out.append(f"| {n} | {fmt_spread(x['start'], ' ms')} | "
                   f"{fmt_spread(x['carry'], ' ms')} | {cell} | "
                   f"{fmt_spread(x['wall'], ' ms')} | {median(x['records']):.0f} | "
                   f"{median(x['bytes']):.0f} |")
    out.append("")
    meaning = ("Each edge reads every thread once from the task iterator and its stack from "
               "the process's memory (no thread is stopped): the reads grow with the threads, "
               "and the end's is part of the stop; the start's delays the `recording ...` line "
               "but not the window (the probes are live while it reads). The records are a PROC_SNAP, a THREAD_SNAP "
               "per thread, the STACKs and names they need (interned: threads in the same "
               "place share one), and the intervals open at either edge (osrt's and sched's "
               "start iterators carry the calls and sleeps open at the start into their probes' "
               "state, one pass over the machine's tasks; their stop's iterators write those "
               "still open). `--no-edges` takes them out.")
    return block_end(ctx, NAME, out, meaning)
