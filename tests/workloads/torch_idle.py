#!/usr/bin/env python3
"""A PyTorch (CPU) training job gone idle, for comparing stacks with gdb's
(tests/e2e/test_unwind_stacks.py): a few SGD steps of a small MLP on 2 intra-op threads
(OpenMP's, libgomp) and torch's inter-op pool, then "ready PID" and a sleep: every thread
sleeps in the kernel (the main thread in clock_nanosleep, the pool's in futex), so their
stacks do not move while two tools read them one after the other."""
import os
import time

import torch

torch.set_num_threads(2)
model = torch.nn.Sequential(torch.nn.Linear(256, 256), torch.nn.ReLU(), torch.nn.Linear(256, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
x, y = torch.randn(512, 256), torch.randn(512, 1)
for _ in range(10):
    opt.zero_grad()
    torch.nn.functional.mse_loss(model(x), y).backward()
    opt.step()
print("ready", os.getpid(), flush=True)
time.sleep(3600)
