#!/usr/bin/env python3
"""A CPU PyTorch job as ML engineers run one: a small model trained on a DataLoader with two
worker processes (persistent: started at the first batch, before any tracer attaches).

    torch_loader.py [--seconds S] [--sleep SECS]

Prints one line once its workers exist: {"pid": P, "workers": [W1, W2]}, then trains until S
seconds (default 120) have passed, or stdin closes. --sleep: sleep SECS after each step (a job
that a test only attaches to need not take a whole core while the test waits on other things).
"""
import json
import os
import select
import sys
import time

import torch
from torch.utils.data import DataLoader, Dataset


class Data(Dataset):
    def __len__(self):
        return 1 << 20

    def __getitem__(self, i):
        g = torch.Generator().manual_seed(i)
        x = torch.randn(16, generator=g)
        return x, x.sum(dim=0, keepdim=True)


def main():
    args = sys.argv[1:]
    seconds = float(args[args.index("--seconds") + 1]) if "--seconds" in args else 120
    pause = float(args[args.index("--sleep") + 1]) if "--sleep" in args else 0
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    loader = DataLoader(Data(), batch_size=32, num_workers=2, persistent_workers=True)
    it = iter(loader)
    batch = next(it)  # the workers run from here on
    print(json.dumps({"pid": os.getpid(), "workers": sorted(w.pid for w in it._workers)}),
          flush=True)
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        x, y = batch
        opt.zero_grad()
        torch.nn.functional.mse_loss(model(x), y).backward()
        opt.step()
        batch = next(it, None)
        if batch is None:  # an epoch's end: the next one, with the same workers
            it = iter(loader)
            batch = next(it)
        if pause:
            time.sleep(pause)
        if select.select([sys.stdin], [], [], 0)[0] and not sys.stdin.read(1):
            break  # stdin closed: the test is done with it


if __name__ == "__main__":
    main()
