#!/usr/bin/env python3
"""What placing each probe in the traced processes alone costs (issue 82, docs/USAGE.md "What a
recording touches"), side by side with probes on the files (BEFORE: a bpfsight built before
it, e.g. `git worktree add /tmp/b4 <commit>; make -C /tmp/b4 build/bpfsight`):

- a recording's start: `record -p JOB -t cuda,nccl,gil,mem -d 1s` on a job that maps
  libcudart, from the command to its "recording" line;
- a fork-heavy and an exec-heavy job launched under `record -t cuda` (scope_job forks/execs
  N: each child held until its own probes are in, or a trap on the file's), and 1,000 threads
  (scope_job threads 1000), each by the job's own clock, against the job untraced;
- `-a` beside 50,000 short processes (`scope_job execs 50000` of /bin/true), with and
  without `--exclude-comm` (with it, probes are every process's own: each new process gets its
  links), by the job's own clock, against the job untraced.

    python3 bench/bench_scope.py --before OLD/bpfsight --after build/bpfsight [--rounds 3]
        [--forks 500] [--threads 1000] [--short 50000] [--short-rounds 1]

Rounds take turns (untraced, before, after); medians with their spread.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_common import median  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))


def job_ns(cmd, env=None):
    """The job's own clock for its N (its JSON line)."""
    p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=900)
    if p.returncode:
        sys.exit(f"{' '.join(cmd)}: exit {p.returncode}: {p.stderr[-600:]}")
    line = [l for l in p.stdout.splitlines() if l.startswith("{")][-1]
    return json.loads(line)["ns"]


def start_s(bpfsight, job, tmp):
    """From `record -p` to its "recording" line, on a job waiting on its stdin."""
    j = subprocess.Popen([job, "wait", "1"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         text=True)
    pid = json.loads(j.stdout.readline())["pid"]
    t0 = time.monotonic()
    r = subprocess.Popen([bpfsight, "record", "-p", str(pid), "-t", "cuda,nccl,gil,mem",
                          "-d", "1s", "-o", os.path.join(tmp, "start.bst"), "--force"],
                         stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)
    ready = None
    for line in r.stderr:
        if ready is None and "recording" in line and "Ctrl-C" in line:
            ready = time.monotonic() - t0
    r.wait()
    j.stdin.close()
    j.wait()
    if ready is None or r.returncode:
        sys.exit(f"record -p: exit {r.returncode}, never ready")
    return ready


def launched(bpfsight, job, mode, n, tmp):
    return job_ns([bpfsight, "record", "-t", "cuda", "-o", os.path.join(tmp, "l.bst"),
                   "--force", "--", job, mode, str(n)])


def beside_a(bpfsight, job, n, tmp, exclude):
    """The job's N execs while `record -a` runs (its own clock)."""
    r = subprocess.Popen([bpfsight, "record", "-a", "-t", "cuda,osrt", "-o",
                          os.path.join(tmp, "a.bst"), "--force"] +
                         (["--exclude-comm", "valgrind"] if exclude else []),
                         stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)
    for line in r.stderr:
        if "recording" in line and "Ctrl-C" in line:
            break
    try:
        return job_ns([job, "execs", str(n)])
    finally:
        r.send_signal(2)
        r.communicate(timeout=300)


def spread(xs, f):
    return f"{f(median(xs))} ({f(min(xs))}..{f(max(xs))})"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--before", required=True)
    ap.add_argument("--after", required=True)
    ap.add_argument("--job", default=os.path.join(HERE, "..", "build", "bench", "scope_job"))
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--forks", type=int, default=500)
    ap.add_argument("--threads", type=int, default=1000)
    ap.add_argument("--short", type=int, default=50000)
    ap.add_argument("--short-rounds", type=int, default=1, help="rounds of the -a runs")
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="bench-scope-")
    res = {}

    def add(key, v):
        res.setdefault(key, []).append(v)

    for rnd in range(a.rounds):
        order = [("before", a.before), ("after", a.after)]
        if rnd % 2:
            order.reverse()
        for name, b in order:
            add(("start", name), start_s(b, a.job, tmp))
        for mode, n in (("forks", a.forks), ("execs", a.forks), ("threads", a.threads)):
            add((mode, "untraced"), job_ns([a.job, mode, str(n)]) / n)
            for name, b in order:
                add((mode, name), launched(b, a.job, mode, n, tmp) / n)
        print(f"round {rnd + 1} done", file=sys.stderr, flush=True)
    for rnd in range(a.short_rounds):  # each a few minutes: fewer rounds
        order = [("before", a.before), ("after", a.after)]
        if rnd % 2:
            order.reverse()
        add(("-a", "untraced"), job_ns([a.job, "execs", str(a.short)]) / a.short)
        for name, b in order:
            add(("-a", name), beside_a(b, a.job, a.short, tmp, False) / a.short)
        add(("-a --exclude-comm", "after"),
            beside_a(a.after, a.job, a.short, tmp, True) / a.short)
        print(f"-a round {rnd + 1} done", file=sys.stderr, flush=True)

    us = lambda v: f"{v / 1000:.1f} us"  # noqa: E731
    print("| figure | untraced | before (probes on the files) | after (each process's own) |")
    print("|---|---|---|---|")
    print(f"| `record -p` start, s | | {spread(res[('start', 'before')], lambda v: f'{v:.2f}')}"
          f" | {spread(res[('start', 'after')], lambda v: f'{v:.2f}')} |")
    names = {"forks": f"a fork (+ one cudaStreamQuery), {a.forks} in turn",
             "execs": f"a fork + exec of /bin/true, {a.forks} in turn",
             "threads": f"a thread (+ one call), {a.threads} at once",
             "-a": f"`-a -t cuda,osrt` beside: a fork + exec, {a.short} in turn"}
    for key in ("forks", "execs", "threads", "-a"):
        print(f"| {names[key]} | {spread(res[(key, 'untraced')], us)} | "
              f"{spread(res[(key, 'before')], us)} | {spread(res[(key, 'after')], us)} |")
    print(f"| `-a --exclude-comm valgrind` beside: a fork + exec, {a.short} in turn | "
          f"{spread(res[('-a', 'untraced')], us)} | | "
          f"{spread(res[('-a --exclude-comm', 'after')], us)} |")


if __name__ == "__main__":
    main()
