#!/usr/bin/env python3
"""What Python thread names and `bpfsight stacks` cost (issue #30).

1. Names (user/python/py_threads.c): a CPython with T named threads asleep (T = 3, 64, 256;
   pyenv's 3.12 and 3.9, Debian's stripped 3.11, that one with torch imported: ~1,500
   modules in sys.modules); bench/names_bench reads their names 200 times: the first read
   (it searches sys.modules for threading), the median of the others, per thread, and in
   8-byte reads of the process's memory (the floor, measured beside it). A recording reads a
   process at most once a second once its threads are named (user/python/thread_names.c):
   that median per second per Python process is the recorder's cost.
2. One dump (`bpfsight stacks -p`): a CPython whose thread spins in fixed units of work and
   stamps each unit's end (CLOCK_MONOTONIC), two more threads asleep; after a second alone,
   ROUNDS dumps one after the other, then a second alone. Per dump: its wall time, the
   reading of the threads (read_ns: from the first look to the last stack read) and the
   whole (took_ns); for the target: its units per second while dumps ran against while
   alone, and the longest gap between two units during the dumps against alone (a stop of
   the process would show as a gap as long as the dump).

Not a run_bench.py section: `python3 bench/bench_glance_stacks.py --build build [--rounds N]`
prints the tables bench/RESULTS.md keeps ("Python thread names", "bpfsight stacks").
"""
import argparse
import glob
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))

SLEEPERS = r"""
import json, os, sys, threading
n = int(sys.argv[1])
if len(sys.argv) > 2:
    import torch
stop = threading.Event()
ts = [threading.Thread(target=stop.wait, name=f"worker-{i}") for i in range(n)]
for t in ts:
    t.start()
print(json.dumps({"pid": os.getpid(), "modules": len(sys.modules)}), flush=True)
sys.stdin.readline()
stop.set()
"""

SPINNER = r"""
import json, sys, threading, time
stop = threading.Event()
marks = []
def work():
    while not stop.is_set():
        x = 0
        for _ in range(2000):
            x += 1
        marks.append(time.monotonic_ns())
ts = [threading.Thread(target=work, name="cpu-0")] + [
    threading.Thread(target=stop.wait, name=f"idle-{i}") for i in range(2)]
for t in ts:
    t.start()
print("ready", flush=True)
sys.stdin.readline()
stop.set()
for t in ts:
    t.join()
print(json.dumps(marks), flush=True)
"""


def pythons():
    out = []
    for minor in (12, 9):
        found = sorted(glob.glob(os.path.expanduser(
            f"~/.pyenv/versions/3.{minor}.*/bin/python3.{minor}")))
        if found:
            out.append((f"pyenv 3.{minor}", found[-1], False))
    if os.path.exists("/usr/bin/python3.11"):
        out.append(("Debian 3.11 (stripped)", "/usr/bin/python3.11", False))
        if subprocess.run(["/usr/bin/python3.11", "-c", "import torch"],
                          capture_output=True).returncode == 0:
            out.append(("Debian 3.11 + torch", "/usr/bin/python3.11", True))
    return out


def names(build):
    rows = []
    for label, py, torch in pythons():
        for n in (3, 64, 256):
            if torch and n != 3:
                continue
            p = subprocess.Popen([py, "-c", SLEEPERS, str(n)] + (["torch"] if torch else []),
                                 stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
            info = json.loads(p.stdout.readline())
            r = subprocess.run([os.path.join(build, "bench", "names_bench"), str(info["pid"]),
                                "200"], capture_output=True, text=True)
            p.communicate("stop\n")
            if r.returncode:
                sys.exit(f"names_bench: {r.stderr}")
            got = json.loads(r.stdout)
            rows.append((label, got["threads"], info["modules"], got["first_ns"],
                         got["median_ns"], got["read8_ns"]))
    print("| python | threads named | sys.modules | first read | a read (median) "
          "| per thread | in 8-byte reads |")
    print("|---|---|---|---|---|---|---|")
    for label, t, mods, first, med, r8 in rows:
        print(f"| {label} | {t} | {mods} | {first / 1e3:.0f} µs | {med / 1e3:.1f} µs | "
              f"{med / t / 1e3:.2f} µs | {med / r8:.0f} |")


HOG = "import time\nt = time.monotonic()\nwhile time.monotonic() - t < 0.5:\n    pass\n"


def stacks(build, rounds):
    py = sorted(glob.glob(os.path.expanduser("~/.pyenv/versions/3.12.*/bin/python3.12")))
    py = py[-1] if py else "/usr/bin/python3.11"
    # The target on CPU 1, the dumps on CPU 0. This VM's two CPUs share a core: anything
    # busy on CPU 0 slows the target, so the floor is a plain busy loop there, the same run.
    p = subprocess.Popen(["taskset", "-c", "1", py, "-c", SPINNER], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, text=True)
    p.stdout.readline()
    time.sleep(1.0)
    alone = [(time.monotonic_ns(), 0)]
    time.sleep(1.0)
    alone[0] = (alone[0][0], time.monotonic_ns())
    hogs, dumps, reads, walls, rns, tooks, cpu = [], [], [], [], [], [], []
    for i in range(rounds):
        t0 = time.monotonic_ns()
        if i % 2:
            subprocess.run(["taskset", "-c", "0", sys.executable, "-c", HOG], check=True)
            hogs.append((t0, time.monotonic_ns()))
            continue
        r = subprocess.Popen(["taskset", "-c", "0", os.path.join(build, "bpfsight"), "stacks",
                              "-p", str(p.pid), "--json"], stdout=subprocess.PIPE, text=True)
        stdout = r.stdout.read()
        _, status, ru = os.wait4(r.pid, 0)
        t1 = time.monotonic_ns()
        if status:
            sys.exit("stacks failed")
        out = json.loads(stdout)
        dumps.append((t0, t1))
        reads.append((out["read_at_ns"], out["read_at_ns"] + out["read_ns"]))
        walls.append(t1 - t0)
        rns.append(out["read_ns"])
        tooks.append(out["took_ns"])
        cpu.append((ru.ru_utime + ru.ru_stime) * 1e9)
    marks = json.loads(p.communicate("stop\n")[0].strip().splitlines()[-1])

    def rate(ws):
        return (sum(sum(a <= m < b for m in marks) for a, b in ws) /
                (sum(b - a for a, b in ws) / 1e9))

    def max_gap(ws):
        gaps = [0]
        for lo, hi in ws:
            inside = [m for m in marks if lo <= m < hi]
            gaps += [b - a for a, b in zip(inside, inside[1:])]
        return max(gaps) / 1e6

    med = statistics.median
    print("| dumps | a dump: wall | its CPU | threads read in | the target: units/s "
          "(while dumped / beside a busy loop / alone) | longest gap between units (ms) |")
    print("|---|---|---|---|---|---|")
    print(f"| {len(dumps)} of a 3-thread CPython {py.rsplit('python', 1)[-1]} | "
          f"{med(walls) / 1e6:.0f} ms (whole: {med(tooks) / 1e6:.0f}) | "
          f"{med(cpu) / 1e6:.0f} ms | {med(rns) / 1e6:.2f} ms (max {max(rns) / 1e6:.2f}) | "
          f"{rate(dumps):.0f} / {rate(hogs):.0f} / {rate(alone):.0f}: "
          f"{rate(dumps) / rate(hogs):.2f}x the floor (while read: {rate(reads):.0f}) | "
          f"{max_gap(dumps):.1f} dumped, {max_gap(hogs):.1f} beside the loop, "
          f"{max_gap(alone):.1f} alone |")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--rounds", type=int, default=10)
    a = ap.parse_args()
    names(a.build)
    print()
    stacks(a.build, a.rounds)


if __name__ == "__main__":
    main()
