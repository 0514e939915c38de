"""A torch.distributed job on gloo with a straggler (tests/e2e/test_verdict_jobs.py), its
ranks started as torchrun starts workers: RANK, LOCAL_RANK, WORLD_SIZE, MASTER_ADDR and
MASTER_PORT in the environment. Every step, each rank computes, then makes one all_reduce
(the step's gradient sync); rank SLOW_RANK (default 1) computes SLOW_X (default 3) times as
long as the others, which wait for it in all_reduce. A step's compute is STEP_MS (default 20)
of which CPU_MS (default 1) on the CPU and the rest asleep (as a rank waiting for its GPU):
four ranks fit on two cores.

Prints "ready pid P rank R" once its process group is up; each line read from stdin is
answered with the rank's own truth so far, as JSON: {"reduce_ns": ..., "total_ns": ...,
"calls": ..., "entries": [...], "exits": [...]}: the time spent in all_reduce, the time since
the first step, the all_reduce calls made, and when it called each one since the previous
answer and when that call returned (CLOCK_MONOTONIC, the trace's clock: the probe in
ProcessGroupGloo::nextTag fires between the two; the last is call number calls - 1, from 0).
Ends when stdin closes. The lines the tests look for are marked (COMPUTE, REDUCE).
"""
import json
import os
import select
import sys
import time

import torch
import torch.distributed as dist

RANK = int(os.environ["RANK"])
SLOW_RANK = int(os.environ.get("SLOW_RANK", "1"))
SLOW_X = float(os.environ.get("SLOW_X", "3"))
STEP_S = float(os.environ.get("STEP_MS", "20")) / 1000
CPU_S = float(os.environ.get("CPU_MS", "1")) / 1000


def compute(seconds):
    end = time.perf_counter() + min(CPU_S, seconds)
    acc = 1
    while time.perf_counter() < end:
        acc = (acc * 1103515245 + 12345) & 0x7FFFFFFF
    time.sleep(max(0.0, seconds - CPU_S))  # COMPUTE: the rest of the step, asleep
    return acc


def main():
    torch.set_num_threads(1)
    dist.init_process_group("gloo")
    print(f"ready pid {os.getpid()} rank {RANK}", flush=True)
    x = torch.ones(1024)
    step = STEP_S * (SLOW_X if RANK == SLOW_RANK else 1)
    reduced = calls = 0
    entries, exits = [], []
    started = time.monotonic_ns()
    while True:
        compute(step)
        t0 = time.monotonic_ns()
        dist.all_reduce(x)  # REDUCE
        t1 = time.monotonic_ns()
        reduced += t1 - t0
        entries.append(t0)
        exits.append(t1)
        calls += 1
        x.fill_(1)
        if select.select([sys.stdin], [], [], 0)[0]:
            if not sys.stdin.readline():
                break
            print(json.dumps({"reduce_ns": reduced, "total_ns": time.monotonic_ns() - started,
                              "calls": calls, "entries": entries, "exits": exits}),
                  flush=True)
            entries, exits = [], []


if __name__ == "__main__":
    main()
