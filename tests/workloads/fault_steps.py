#!/usr/bin/env python3
"""A CPU training step whose time goes to page faults, for the fault-bound verdict
(tests/e2e/test_fault_verdict.py): torchvision's resnet18 on 2 images of 80x80, one intra-op
thread. Each backward computes layer4's conv weight gradients (three of 9 MiB) in temporaries,
adds them to the gradients and frees them: glibc's heap (Debian 12's 2.36) trims its free top
above its trim threshold (twice the largest mmapped block freed: 18 MiB) back to the kernel
(brk) and the next step faults it in again, ~13,700 page faults a step. Not in every process:
where the heap's layout leaves a hole the temporaries fit in (about one start in four here),
they never reach its top and the step faults nothing. With MALLOC_MMAP_THRESHOLD_ and
MALLOC_TRIM_THRESHOLD_ raised it keeps them: bench/RESULTS.md, "fault-bound".

    fault_steps.py [STEPS]

Prints "ready PID FAULTS" after three warm-up steps (the last one's minor page faults), then
"step CPU_NS FAULTS" after each: the process's CPU time for the step and its minor page
faults. Runs STEPS steps (default: until a line, or the end, of stdin).
"""
import os
import resource
import sys
import threading
import time

import torch
import torchvision

torch.set_num_threads(1)
torch.manual_seed(0)
model = torchvision.models.resnet18(num_classes=10)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
x = torch.randn(2, 3, 80, 80)
y = torch.randint(0, 10, (2,))
loss_fn = torch.nn.CrossEntropyLoss()
stop = threading.Event()


def step():
    opt.zero_grad()
    loss_fn(model(x), y).backward()
    opt.step()


def main():
    steps = int(sys.argv[1]) if len(sys.argv) > 1 else None
    for _ in range(2):
        step()
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    step()
    faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before
    if steps is None:
        threading.Thread(target=lambda: (sys.stdin.readline(), stop.set()), daemon=True).start()
    print(f"ready {os.getpid()} {faults}", flush=True)
    n = 0
    while not stop.is_set() and (steps is None or n < steps):
        before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        cpu = time.process_time_ns()
        step()
        cpu = time.process_time_ns() - cpu
        faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before
        print(f"step {cpu} {faults}", flush=True)
        n += 1


main()
