#!/usr/bin/env python3
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""What top's function view costs top: its own CPU (user + system, wait4) per second of a
`top -b -p PID` on a Python job, three ways taking turns in each round (the median of the
rounds):

  no samples   -t osrt,gil,cuda,gpu: top -p's families before it sampled (no function view)
  processes    the default: the cpu family's samples at 99 Hz, folded per stack, summed per
               function each refresh; the process view shown
  functions    the same, --functions: the function view shown, its rows cut every refresh

    sudo python3 bench/bench_top_functions.py [--build build] [--rounds 3] [--seconds 15]

Jobs: tests/workloads/py_stacks.py split (one thread spinning in two Python functions: few
stacks) and tests/workloads/torch_loader.py (a CPU PyTorch trainer and two DataLoader workers
without pauses: three processes, native threads, many stacks), under Debian's python3.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
WORK = os.path.join(ROOT, "tests", "workloads")
PY = "/usr/bin/python3"
CONFIGS = {
    "no samples": ["-t", "osrt,gil,cuda,gpu"],
    "processes": [],
    "functions": ["--functions"],
}


def jobs():
    return {
        "py_stacks split": [PY, f"{WORK}/py_stacks.py", "split", "100000"],
        "torch_loader": [PY, f"{WORK}/torch_loader.py", "--seconds", "100000"],
    }


def start_job(cmd):
    p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL, text=True)
    line = p.stdout.readline()
    pid = json.loads(line)["pid"] if line.startswith("{") else int(line.split()[1])
    return p, pid


def top_cpu(bs, pid, extra, seconds):
    """top's CPU seconds per second of its run, and the samples its last frame counted."""
    p = subprocess.Popen([bs, "top", "-b", "-i", "1s", "-d", f"{seconds}s", "-p", str(pid),
                          *extra], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                         text=True)
    t0 = time.time()
    out = p.stdout.read()
    _, status, ru = os.wait4(p.pid, 0)
    if os.waitstatus_to_exitcode(status):
        raise SystemExit(f"top {extra} exited {status}")
    return (ru.ru_utime + ru.ru_stime) / (time.time() - t0), len(out.split("\n\n"))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seconds", type=int, default=15)
    a = ap.parse_args()
    bs = os.path.join(os.path.abspath(a.build), "bpfsight")
    for name, cmd in jobs().items():
        job, pid = start_job(cmd)
        time.sleep(2)  # past its imports
        cpu = {c: [] for c in CONFIGS}
        try:
            for _ in range(a.rounds):
                for c, extra in CONFIGS.items():
                    cpu[c].append(top_cpu(bs, pid, extra, a.seconds)[0])
        finally:
            job.kill()
            job.wait()
        med = {c: statistics.median(v) for c, v in cpu.items()}
        print(f"{name}: top's CPU per second (median of {a.rounds}; each "
              f"{[round(x * 100, 2) for x in cpu['functions']]}% for functions)")
        for c, v in med.items():
            print(f"  {c:11s} {v * 100:6.2f}%  ({', '.join(f'{x * 100:.2f}' for x in cpu[c])})")
        print(f"  functions / processes {med['functions'] / med['processes']:.2f}x, "
              f"processes / no samples {med['processes'] / med['no samples']:.2f}x",
              flush=True)


if __name__ == "__main__":
    sys.exit(main())
