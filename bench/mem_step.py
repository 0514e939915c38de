#!/usr/bin/env python3
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""A small CNN's training step on the CPU, timed in the process, for bench/bench_mem.py.

    mem_step.py [--settled | --leak]

The model: three 3x3 convolutions (3 -> 32 -> 64 -> 128 channels) each with batch norm and
ReLU, two max pools, a global average pool and a linear layer to 10 classes; AdamW;
cross-entropy. The data: synthetic 3x32x32 images and labels made by a Dataset in a
DataLoader with 2 worker processes (persistent: they live as long as this process, so that a
`bpfsight record -p` attached between steps finds them), 32 images a batch. One intra-op
thread: the machine's other core is the workers' and the recorder's.

glibc's malloc gives a block above its mmap threshold fresh pages from mmap and unmaps them at
its free, and raises the threshold to the size of the largest such block freed so far (up to
32 MiB). The step's largest tensors (4 MiB: an activation of 32 channels) stay above it: a few
thousand page faults a step, each moving the process's resident counters. --settled frees a
16 MiB tensor first, as a job that once held a larger block would have: the threshold then
stays above every tensor of the step, which reuses its heap (about ten page faults a step).

--leak: the step is issue 51's leak job instead, tests/workloads/mem_lines.py cnn's
(torchvision's resnet18 on 8 images of 32x32, SGD, a DataLoader with 2 workers, and a
validation pass run without torch.no_grad() whose loss is kept: each step keeps its
activations, about 4 MiB); its heap as it comes.

Commands on stdin, one a line; each answers one JSON line:
  steps N MODE    run N steps, MODE "plain" or "profiler" (under torch.profiler with
                  profile_memory=True, CPU activity; its start and stop are outside the
                  steps' times) -> {"wall_ns": [each step's wall time], "cpu_ns": [each
                  step's CPU time of this thread], "minflt": the process's minor page
                  faults over the steps, "sys_ns": this thread's system time over them}
  workers         -> {"workers": [the DataLoader workers' pids]}
  quit
"""
import contextlib
import json
import os
import resource
import sys
import time

import torch
import torch.nn as nn


class Images(torch.utils.data.Dataset):
    def __len__(self):
        return 1 << 30

    def __getitem__(self, i):
        return torch.randn(3, 32, 32), i % 10


@contextlib.contextmanager
def quiet_stderr():
    saved = os.dup(2)
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, 2)
    try:
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(null)


def block(cin, cout):
    return [nn.Conv2d(cin, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout),
            nn.ReLU(inplace=True)]


def leak_job():
    """mem_lines.py cnn's step, and its DataLoader's iterator."""
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests",
                                    "workloads"))
    import mem_lines

    step = mem_lines.job(True)
    return step, step.batches


def cnn_job():
    """The small CNN's step, and its DataLoader's iterator."""
    torch.set_num_threads(1)
    torch.manual_seed(0)
    model = nn.Sequential(*block(3, 32), nn.MaxPool2d(2), *block(32, 64), nn.MaxPool2d(2),
                          *block(64, 128), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                          nn.Linear(128, 10))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    loss_fn = nn.CrossEntropyLoss()
    loader = torch.utils.data.DataLoader(Images(), batch_size=32, num_workers=2,
                                         persistent_workers=True)
    it = iter(loader)

    def step():
        x, y = next(it)
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()

    return step, it


def main():
    if sys.argv[1:] == ["--settled"]:
        torch.empty(16 << 20, dtype=torch.uint8)
    elif sys.argv[1:] not in ([], ["--leak"]):
        raise SystemExit("usage: mem_step.py [--settled | --leak]")
    step, it = leak_job() if sys.argv[1:] == ["--leak"] else cnn_job()
    # Warm: the workers started, the optimizer's state allocated, the heap as big as the step
    # needs (the leak job's keeps growing).
    for _ in range(40):
        step()
    print(json.dumps({"ready": os.getpid()}), flush=True)
    for line in sys.stdin:
        cmd = line.split()
        if not cmd or cmd[0] == "quit":
            break
        if cmd[0] == "workers":
            print(json.dumps({"workers": [w.pid for w in it._workers]}), flush=True)
            continue
        n, mode = int(cmd[1]), cmd[2]
        with contextlib.ExitStack() as stack:
            if mode == "profiler":
                # c10 warns of each block allocated before the profiler started.
                stack.enter_context(quiet_stderr())
                stack.enter_context(torch.profiler.profile(
                    activities=[torch.profiler.ProfilerActivity.CPU], profile_memory=True))
            wall, cpu = [], []
            flt = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
            sys0 = resource.getrusage(resource.RUSAGE_THREAD).ru_stime
            for _ in range(n):
                w, c = time.perf_counter_ns(), time.thread_time_ns()
                step()
                cpu.append(time.thread_time_ns() - c)
                wall.append(time.perf_counter_ns() - w)
            flt = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - flt
            sys_ns = int((resource.getrusage(resource.RUSAGE_THREAD).ru_stime - sys0) * 1e9)
        print(json.dumps({"wall_ns": wall, "cpu_ns": cpu, "minflt": flt, "sys_ns": sys_ns}),
              flush=True)


if __name__ == "__main__":
    main()
