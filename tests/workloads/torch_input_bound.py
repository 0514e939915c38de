#!/usr/bin/env python3
"""A CPU trainer bound by its input pipeline, as a new user's first DataLoader job is: two
worker processes each read every sample (IO_MS of storage latency: a sleep) and decode it
(ITEM_MS of pure Python), the trainer's step is short, so the trainer waits in its `for ...
in loader` line for much of its time (tests/e2e/test_verdict_jobs.py).

    torch_input_bound.py [--io-ms MS] [--item-ms MS] [--batch N] [--workers W] [--hidden H]
                         [--seconds S]

Defaults: --io-ms 0, --item-ms 1.5, --batch 4, --workers 2, --hidden 64 (the model's width:
the trainer's step time), --seconds 120.

Prints one line once its workers exist: {"pid": P, "workers": [W1, W2]}, then trains until S seconds (default 120)
have passed or stdin closes. Each line read from stdin is answered with the job's own truth
so far, as JSON: {"wait_ns": ..., "total_ns": ...}: the time the trainer spent in the `for`
line getting its next batch, and the time since its first batch (CLOCK_MONOTONIC).
"""
import json
import os
import select
import sys
import time

import torch
from torch.utils.data import DataLoader, Dataset

ITEM_S = 0.0015
IO_S = 0
WIDTH = 256


def decode(i):
    """The workers' Python work per sample: ITEM_S of pure-Python arithmetic."""
    end = time.perf_counter() + ITEM_S
    acc = i
    while time.perf_counter() < end:
        acc = (acc * 1103515245 + 12345) & 0x7FFFFFFF
    return acc


class Samples(Dataset):
    def __len__(self):
        return 1 << 30

    def __getitem__(self, i):
        if IO_S:
            time.sleep(IO_S)  # READ: the sample's storage latency
        seed = decode(i)
        x = torch.full((WIDTH,), float(seed % 7) / 7)
        return x, x.sum(dim=0, keepdim=True)


def arg(args, name, default, kind):
    return kind(args[args.index(name) + 1]) if name in args else default


def main():
    global ITEM_S, IO_S
    args = sys.argv[1:]
    ITEM_S = arg(args, "--item-ms", 1.5, float) / 1000
    IO_S = arg(args, "--io-ms", 0, float) / 1000
    batch = arg(args, "--batch", 4, int)
    workers = arg(args, "--workers", 2, int)
    seconds = arg(args, "--seconds", 120, float)
    hidden = arg(args, "--hidden", 64, int)
    torch.set_num_threads(1)  # the step's time as one core gives it, loaded machine or not
    model = torch.nn.Sequential(torch.nn.Linear(WIDTH, hidden), torch.nn.ReLU(),
                                torch.nn.Linear(hidden, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    loader = DataLoader(Samples(), batch_size=batch, num_workers=workers,
                        persistent_workers=True)
    started = None
    waited = 0
    body_end = None
    it = iter(loader)
    for x, y in it:  # LOOP: the job's own line its input waits are at
        now = time.monotonic_ns()
        if started is None:
            started = now
            print(json.dumps({"pid": os.getpid(), "workers": sorted(w.pid for w in it._workers)}),
                  flush=True)
        else:
            waited += now - body_end
        opt.zero_grad()
        torch.nn.functional.mse_loss(model(x), y).backward()
        opt.step()
        if select.select([sys.stdin], [], [], 0)[0]:
            if not sys.stdin.readline():
                break  # stdin closed: the test is done with it
            print(json.dumps({"wait_ns": waited, "total_ns": time.monotonic_ns() - started}),
                  flush=True)
        if time.monotonic_ns() - started > seconds * 1e9:
            break
        body_end = time.monotonic_ns()


if __name__ == "__main__":
    main()
