#!/usr/bin/env python3
"""A small PyTorch (CPU) training loop fed by a threaded Python data pipeline.

    gil_torch.py [--go] SECS

Threads (OS names set with prctl, as reports show them):
  trainer   the main thread: forward, backward and SGD step of a small MLP
  loader    builds each batch in pure Python (tokenising and padding lists), holding the GIL
  augment   jitters the batches in Python before they reach the trainer
Batches flow loader -> augment -> trainer through queue.Queue, like a DataLoader with
thread workers. With --go it prints "ready PID" and waits for a line on stdin, so a tracer
can attach with -p first. At the end one JSON line: {"pid", "steps", "threads": {name: tid}}.
"""
import ctypes
import json
import os
import queue
import random
import sys
import threading
import time

import torch

libc = ctypes.CDLL(None)
BATCH, FEAT = 64, 128


def set_name(name):
    libc.prctl(15, name.encode(), 0, 0, 0)


tids = {}


def loader(out, stop):
    set_name("loader")
    tids["loader"] = threading.get_native_id()
    rng = random.Random(1)
    while not stop.is_set():
        rows = []
        for _ in range(BATCH):
            words = [rng.randrange(1000) for _ in range(rng.randrange(20, FEAT))]
            rows.append([w / 1000.0 for w in words] + [0.0] * (FEAT - len(words)))
        out.put(rows)


def augment(inp, out, stop):
    set_name("augment")
    tids["augment"] = threading.get_native_id()
    rng = random.Random(2)
    while not stop.is_set():
        try:
            rows = inp.get(timeout=0.1)
        except queue.Empty:
            continue
        rows = [[v + rng.uniform(-0.01, 0.01) for v in r] for r in rows]
        out.put(torch.tensor(rows))


def main():
    args = sys.argv[1:]
    go = args and args[0] == "--go"
    if go:
        args = args[1:]
    secs = float(args[0])
    torch.set_num_threads(1)
    set_name("trainer")
    tids["trainer"] = threading.get_native_id()
    model = torch.nn.Sequential(torch.nn.Linear(FEAT, 256), torch.nn.ReLU(),
                                torch.nn.Linear(256, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    raw, ready, stop = queue.Queue(8), queue.Queue(8), threading.Event()
    if go:
        print("ready %d" % os.getpid(), flush=True)
        sys.stdin.readline()
    threads = [threading.Thread(target=loader, args=(raw, stop), daemon=True),
               threading.Thread(target=augment, args=(raw, ready, stop), daemon=True)]
    for t in threads:
        t.start()
    end, steps = time.monotonic() + secs, 0
    while time.monotonic() < end:
        x = ready.get()
        y = x.sum(dim=1, keepdim=True)
        loss = torch.nn.functional.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        steps += 1
    stop.set()
    for t in threads:
        t.join(1)
    print(json.dumps({"pid": os.getpid(), "steps": steps, "threads": tids}), flush=True)


if __name__ == "__main__":
    main()
