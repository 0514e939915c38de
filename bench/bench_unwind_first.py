#!/usr/bin/env python3
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""Time to a torch job's first whole stack, after a launch and after an attach (bench/RESULTS.md,
"Unwind tables before the first event"; docs/STACKS.md, "When a file gets its table").

    python3 bench/bench_unwind_first.py [--build build] [--rounds 3] [--calls 2000]
                                        [--against OTHER/bpfsight]

The job is bench/torch_first.py on Debian's python3.11 and torch (314 files mapped): `import
torch`, then CALLS os.getppid() calls, recorded with `-t osrt --stacks=osrt:0
--osrt-threshold 0` (a stack at every system call of the job, from the first one after its
exec). Per configuration, ROUNDS rounds taking turns, medians:
- launch: of the job's stacked events (its process after its exec: the first is ld.so's
  first system call), whether the first is whole, how many were cut before the first whole
  one, and the time from the first to the first whole one;
- the hold: the job's own `import torch` time (launch mode holds it at its dlopen until the
  tables of the files it mapped are loaded) against untraced, under `-t osrt
  --stacks=osrt:0` with osrt's default threshold (a stack only for the few slow calls), the
  recording's wall time, and the holds' own time as the recorder says it with -v (`pid N
  held M ms until its files' tables were loaded`, at each of the job's stops);
- attach (-p, the job imported and waiting): how long `record -p` takes to go live, then of
  the getppid calls made at once after it, how many were cut before the first whole one and
  the time to it.
Configurations: this build with the tables' store empty (a fresh BPFSIGHT_CACHE_DIR each
round: every table built), with it filled (the store the run before left: every table read),
and, with --against, another bpfsight (the build before the store: tables built once a stack
comes back cut).
"""
import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

PY = "/usr/bin/python3.11"
JOB = os.path.join(os.path.dirname(os.path.abspath(__file__)), "torch_first.py")
LINE = re.compile(r"unwind tables: (.*)")


def whole(stack):
    return stack and not any(f.get("func", "").startswith(("[unwind stopped", "[truncated"))
                             for f in stack)


def stacked(bpfsight, out, pid, name=None):
    """The job's events with a stack after its exec (launch mode: before it, the process is
    bpfsight's child waiting to be released), in time order: (ts, whole)."""
    p = subprocess.run([bpfsight, "dump", out], capture_output=True, text=True, check=True)
    evs, exec_ts = [], 0
    for line in p.stdout.splitlines():
        if '"stack"' not in line and '"exec"' not in line:
            continue
        e = json.loads(line)
        if e.get("pid") != pid:
            continue
        if e["kind"] == "exec":
            exec_ts = e["ts"]
        elif "stack" in e and (name is None or e.get("name") == name):
            evs.append((e["ts"], whole(e["stack"])))
    return sorted(ev for ev in evs if ev[0] > exec_ts)


def first_whole(evs):
    """(first whole?, cut before the first whole one, ms from the first event to it)."""
    for i, (ts, ok) in enumerate(evs):
        if ok:
            return evs[0][1], i, (ts - evs[0][0]) / 1e6
    return False, len(evs), float("nan")


def env_for(store):
    return dict(os.environ, BPFSIGHT_CACHE_DIR=store)


def untraced(calls):
    t = time.monotonic()
    p = subprocess.run([PY, JOB, str(calls)], capture_output=True, text=True, check=True)
    return {"import_s": json.loads(p.stdout.splitlines()[-1])["import_s"],
            "wall_s": time.monotonic() - t}


def launch(bpfsight, store, calls, out, every=True):
    """EVERY: a stack at every system call (--osrt-threshold 0), else at the slow ones."""
    t = time.monotonic()
    p = subprocess.run([bpfsight, "record", "--force", "-o", out, "-t", "osrt",
                        "--stacks=osrt:0"] + (["--osrt-threshold", "0"] if every else ["-v"]) +
                       ["--", PY, JOB, str(calls)],
                       capture_output=True, text=True, env=env_for(store), timeout=600)
    wall = time.monotonic() - t
    if p.returncode:
        raise SystemExit(f"record: {p.stderr[-600:]}")
    job = json.loads(p.stdout.splitlines()[-1])
    first, cut, ms = first_whole(stacked(bpfsight, out, job["pid"]))
    said = LINE.search(p.stderr)
    held = [float(m) for m in re.findall(r"held ([\d.]+) ms until", p.stderr)]
    return {"import_s": job["import_s"], "wall_s": wall, "first": first, "cut": cut, "ms": ms,
            "line": said.group(1) if said else "", "held_ms": sum(held), "holds": len(held)}


def attach(bpfsight, store, calls, out):
    job = subprocess.Popen([PY, JOB, str(calls), "--wait"], stdin=subprocess.PIPE,
                           stdout=subprocess.PIPE, text=True)
    pid = json.loads(job.stdout.readline())["pid"]
    t = time.monotonic()
    rec = subprocess.Popen([bpfsight, "record", "--force", "-o", out, "-t", "osrt",
                            "--stacks=osrt:0", "--osrt-threshold", "0", "-p", str(pid)],
                           stderr=subprocess.PIPE, text=True, env=env_for(store))
    err = []
    for line in rec.stderr:
        err.append(line)
        if "Ctrl-C" in line:
            break
    live = time.monotonic() - t
    job.stdin.write("go\n")
    job.stdin.flush()
    job.stdout.readline()
    job.stdin.close()
    job.wait(60)
    err += rec.stderr.readlines()
    if rec.wait(60):
        raise SystemExit(f"record -p: {''.join(err)[-600:]}")
    first, cut, ms = first_whole(stacked(bpfsight, out, pid, "getppid"))
    said = LINE.search("".join(err))
    return {"live_s": live, "first": first, "cut": cut, "ms": ms,
            "line": said.group(1) if said else ""}


def med(rows, key):
    v = [r[key] for r in rows]
    return statistics.median(v), min(v), max(v)


def fmt(rows, key, unit="", digits=2):
    m, lo, hi = med(rows, key)
    return f"{m:.{digits}f}{unit} ({lo:.{digits}f}..{hi:.{digits}f})"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default="build")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--calls", type=int, default=2000)
    ap.add_argument("--against", help="another bpfsight (the build before a change)")
    a = ap.parse_args()
    mine = os.path.join(a.build, "bpfsight")
    tmp = tempfile.mkdtemp(prefix="bench-unwind-first-")
    out = os.path.join(tmp, "t.bst")
    filled = os.path.join(tmp, "filled")
    runs = {"untraced": [], "store empty": [], "store filled": []}
    holds = {"untraced": [], "store empty": [], "store filled": []}
    attaches = {"store empty": [], "store filled": []}
    if a.against:
        runs["--against"] = []
        holds["--against"] = []
        attaches["--against"] = []
    try:
        for r in range(a.rounds):
            runs["untraced"].append(untraced(a.calls))
            empty = os.path.join(tmp, f"empty{r}")
            runs["store empty"].append(launch(mine, empty, a.calls, out))
            shutil.rmtree(empty, ignore_errors=True)
            launch(mine, filled, a.calls, out)  # the store filled, if it is not yet
            runs["store filled"].append(launch(mine, filled, a.calls, out))
            if a.against:
                runs["--against"].append(launch(a.against, filled, a.calls, out))
            holds["untraced"].append(untraced(a.calls))
            empty = os.path.join(tmp, f"empty{r}h")
            holds["store empty"].append(launch(mine, empty, a.calls, out, False))
            shutil.rmtree(empty, ignore_errors=True)
            holds["store filled"].append(launch(mine, filled, a.calls, out, False))
            if a.against:
                holds["--against"].append(launch(a.against, filled, a.calls, out, False))
            empty = os.path.join(tmp, f"empty{r}a")
            attaches["store empty"].append(attach(mine, empty, a.calls, out))
            shutil.rmtree(empty, ignore_errors=True)
            attaches["store filled"].append(attach(mine, filled, a.calls, out))
            if a.against:
                attaches["--against"].append(attach(a.against, filled, a.calls, out))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"Launch: `record -t osrt --stacks=osrt:0 --osrt-threshold 0 -- {PY} "
          f"bench/torch_first.py {a.calls}`, {a.rounds} rounds taking turns, medians "
          "(min..max):\n")
    print("| configuration | first stacked event whole | stacks cut before the first whole "
          "one | ms to the first whole stack |")
    print("|---|---|---|---|")
    for c, rows in runs.items():
        if c != "untraced":
            print(f"| {c} | {sum(r['first'] for r in rows)} of {len(rows)} | "
                  f"{fmt(rows, 'cut', '', 0)} | {fmt(rows, 'ms', '', 1)} |")
    for c in ("store empty", "store filled"):
        print(f"\n{c}, the last round's end-of-run line: `unwind tables: {runs[c][-1]['line']}`")
    print("\nThe hold: the same job under `record -t osrt --stacks=osrt:0` (osrt's default "
          "threshold: a stack only for the few slow calls), the job's own `import torch`:\n")
    print("| configuration | the job's `import torch` | against untraced in the same round | "
          "the recording's wall time | held in all (-v), at its stops |")
    print("|---|---|---|---|---|")
    for c, rows in holds.items():
        ratios = [r["import_s"] / u["import_s"] for r, u in zip(rows, holds["untraced"])]
        held = (f"{fmt(rows, 'held_ms', ' ms', 0)}, {rows[-1]['holds']} stops"
                if rows[-1].get("holds") else "")
        print(f"| {c} | {fmt(rows, 'import_s', ' s')} | "
              f"{statistics.median(ratios):.2f}x ({min(ratios):.2f}..{max(ratios):.2f}) | "
              f"{fmt(rows, 'wall_s', ' s')} | {held} |")
    print(f"\nAttach: the job imported, `record ... -p PID`, then {a.calls} getppid calls at "
          "once:\n")
    print("| configuration | `record -p` until live | getppid stacks cut before the first "
          "whole one | ms to the first whole stack |")
    print("|---|---|---|---|")
    for c, rows in attaches.items():
        print(f"| {c} | {fmt(rows, 'live_s', ' s')} | {fmt(rows, 'cut', '', 0)} | "
              f"{fmt(rows, 'ms', '', 1)} |")
    for c in ("store empty", "store filled"):
        print(f"\n{c}, the last round's end-of-run line: "
              f"`unwind tables: {attaches[c][-1]['line']}`")


if __name__ == "__main__":
    sys.exit(main())
