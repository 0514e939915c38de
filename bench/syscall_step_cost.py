#!/usr/bin/env python3
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""What a recording costs a running job's step (issue 66; bench/RESULTS.md, "Off-CPU stacks",
"osrt modes", "A real torch CPU step, per mode"). The job, pinned to CPU 0, prints each step's
time; it is recorded with `record -p` pinned to CPU 1 under each configuration in turn,
untraced phases between; each configuration's median step over its phases against the
untraced phases'. Jobs (--job):
  syscall  a Python loop making N one-byte pipe writes and reads a step (the default)
  torch    Debian's torch 1.13 on /usr/bin/python3.11: a CPU training step of a small MLP
           (batch 32, 3 Linear layers of 128, SGD: the step is the ops' dispatch more than their math), one intra-op thread; its step function is
           __main__:train_step
  pycalls  issue 66's Python-heavy step on --python (default: this python): 10,000 calls
           of a one-line function, timed in the thread's CPU time; its step function is
           __main__:step

    sudo python3 bench/syscall_step_cost.py [--build build] [--job syscall|torch|pycalls] [--python PATH] [--rounds 3]
        [--seconds 2] [--steps N] ['{"name": ["record", "options"], ...}']

Default configurations: `--stacks gil`, the default families and stacks (sched's held
intervals given their stack by a task work where the kernel has bpf_task_work, 6.18), and the
default with BPFSIGHT_FORCE_FALLBACKS=task_work (by a sys_exit program every system call runs,
as on older kernels). A configuration is a list of record options, {"args": [...], "env":
{...}} with variables added to the recorder's environment, or {"cmd": [...]}: any command line
run pinned to CPU 1 for the phase instead of `record -p` ("{pid}" and "{seconds}" in it are
replaced; it is stopped by SIGINT at the phase's end), e.g. the floor (`build/bench/floor
--syscalls -- sleep {seconds}`) or `build/bpfsight monitor -a`.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import threading
import time

LOOP = r"""
import os, sys, time
r, w = os.pipe()
n = int(sys.argv[1])
print(os.getpid(), flush=True)
while True:
    t0 = time.perf_counter()
    for _ in range(n):
        os.write(w, b"x"); os.read(r, 1)
    print((time.perf_counter() - t0) * 1e3, flush=True)
"""


TORCH = r"""
import sys, time
import torch
torch.set_num_threads(1)
model = torch.nn.Sequential(torch.nn.Linear(128, 128), torch.nn.ReLU(),
                            torch.nn.Linear(128, 128), torch.nn.ReLU(), torch.nn.Linear(128, 10))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
x, y = torch.randn(32, 128), torch.randint(0, 10, (32,))
print(__import__("os").getpid(), flush=True)


def train_step():
    opt.zero_grad()
    loss = torch.nn.functional.cross_entropy(model(x), y)
    loss.backward()
    opt.step()


while True:
    t0 = time.perf_counter()
    train_step()
    print((time.perf_counter() - t0) * 1e3, flush=True)
"""


# Issue 66's Python-heavy step: 10,000 calls of a one-line function; only step() is named.
PYCALLS = r"""
import os, sys, time
print(os.getpid(), flush=True)


def tiny(i):
    return i


def step():
    for i in range(10000):
        tiny(i)


while True:  # the thread's CPU time: the VM's preemptions of the job are not the hook's
    t0 = time.thread_time()
    step()
    print((time.thread_time() - t0) * 1e3, flush=True)
"""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=2)
    ap.add_argument("--steps", type=int, default=4000)
    ap.add_argument("--job", choices=("syscall", "torch", "pycalls"), default="syscall")
    ap.add_argument("--python", default=sys.executable, help="--job pycalls' interpreter")
    ap.add_argument("configs", nargs="?", default=json.dumps({
        "--stacks gil": ["--stacks", "gil"], "default": [],
        "default, sys_exit": {"args": [], "env": {"BPFSIGHT_FORCE_FALLBACKS": "task_work"}}}))
    a = ap.parse_args()
    bpfsight = os.path.join(a.build, "bpfsight")
    cmd = {"syscall": [sys.executable, "-c", LOOP, str(a.steps)],
           "torch": ["/usr/bin/python3.11", "-c", TORCH],
           "pycalls": [a.python, "-c", PYCALLS]}[a.job]
    job = subprocess.Popen(["taskset", "-c", "0", *cmd], stdout=subprocess.PIPE, text=True)
    pid = int(job.stdout.readline())
    steps = []

    def read():
        for line in job.stdout:
            steps.append((time.monotonic(), float(line)))

    threading.Thread(target=read, daemon=True).start()

    def phase(opts):
        rec = None
        if isinstance(opts, dict) and "cmd" in opts:
            cmd = [c.replace("{pid}", str(pid)).replace("{seconds}", str(a.seconds + 1))
                   for c in opts["cmd"]]
            rec = subprocess.Popen(["taskset", "-c", "1", *cmd], stdout=subprocess.DEVNULL,
                                   stderr=subprocess.DEVNULL)
            time.sleep(1.0)
        elif opts is not None:
            args, env = (opts["args"], dict(os.environ, **opts["env"])) \
                if isinstance(opts, dict) else (opts, None)
            rec = subprocess.Popen(["taskset", "-c", "1", bpfsight, "record", "-p", str(pid), "-d",
                                    f"{a.seconds + 1}s", "-o", "/tmp/syscall_step_cost.bst",
                                    "--force", *args], stderr=subprocess.DEVNULL, env=env)
            time.sleep(1.0)  # live before the phase is timed
        t0 = time.monotonic()
        time.sleep(a.seconds)
        t1 = time.monotonic()
        if rec:
            if rec.poll() is None and isinstance(opts, dict) and "cmd" in opts:
                rec.send_signal(2)
            rec.wait()
        return statistics.median([s for t, s in steps if t0 <= t <= t1])

    configs = json.loads(a.configs)
    res = {"untraced": []}
    res.update({k: [] for k in configs})
    try:
        for _ in range(a.rounds):
            for k, opts in configs.items():
                res["untraced"].append(phase(None))
                res[k].append(phase(opts))
    finally:
        job.kill()
    # This VM's untraced step flips between two speeds from phase to phase (its CPU's other
    # load): the fastest phase of each configuration against the fastest untraced one is the
    # cost without that noise; the medians mix the two speeds.
    base = statistics.median(res["untraced"])
    fast = min(res["untraced"])
    print("| configuration (`record -p PID`) | fastest phase | / untraced's | median step | "
          "/ untraced's | phases' medians |\n|---|---|---|---|---|---|")
    for k, v in res.items():
        print(f"| {k} | {min(v):.2f} ms | {min(v) / fast:.2f}x | {statistics.median(v):.2f} ms "
              f"| {statistics.median(v) / base:.2f}x | " + " ".join(f"{x:.2f}" for x in v) + " |")


if __name__ == "__main__":
    main()
