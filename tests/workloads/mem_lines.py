#!/usr/bin/env python3
"""Memory of known lines for the mem family's sampled stacks, leak rule and net growth
(tests/e2e/test_mem_lines.py); the lines end in "# NAME" markers.

    mem_lines.py MODE [--go] [--sleep SECS]

  sites   64 MiB kept at each of three lines, in blocks of 4 KiB (SITE4K), 64 KiB (SITE64K)
          and 4 MiB (SITE4M)
  growth  20 times a 64 MiB temporary written and freed in one line (TEMP), then 100 MiB
          written and kept (KEPT)
  lines   sites, then growth
  leak    a training loop of a small CNN fed by a DataLoader with two workers, each step
          keeping 4 MiB in 16 tensors of 256 KiB (LEAK4); runs until told to stop
  cnn     the same loop (torchvision's resnet18 on 8 images of 32x32 where torchvision is
          installed, else the small CNN on 16 of 32x32), each step running a validation
          pass without torch.no_grad() whose loss is kept (history.append(loss): every step
          keeps that pass's activations, VALFWD); prints "kept N B..." once, the bytes the pass
          keeps a step (its saved tensors, by torch.autograd.graph.saved_tensors_hooks), then
          each tensor's bytes

--go: print "ready PID" and wait for a line on stdin before the work, then print "done" and
wait for a line (or the end of stdin) before exiting, so that a recorder attached with -p
sees the work alone and stops while what it kept is still live. The loops (leak, cnn) print
"ready PID" after their first steps, then "step N CPU_NS" after each (the main thread's CPU
time so far), and run until a line comes on stdin; --sleep SECS: sleep that long after each
step once ready (a loop that tests attach to need not take a core while they wait).
"""
import os
import sys
import threading
import time

import torch

MIB = 1 << 20
kept = []


def sites():
    kept.extend(torch.empty(4096, dtype=torch.uint8) for _ in range(16384))  # SITE4K
    kept.extend(torch.empty(65536, dtype=torch.uint8) for _ in range(1024))  # SITE64K
    kept.extend(torch.empty(4 * MIB, dtype=torch.uint8) for _ in range(16))  # SITE4M


def growth():
    for _ in range(20):
        float(torch.ones(16 * MIB).sum())  # TEMP
    kept.append(torch.ones(25 * MIB))  # KEPT


class Noise(torch.utils.data.Dataset):
    def __init__(self, side):
        self.side = side

    def __len__(self):
        return 1 << 30

    def __getitem__(self, i):
        return torch.randn(3, self.side, self.side), i % 10


def small_cnn():
    return torch.nn.Sequential(
        torch.nn.Conv2d(3, 16, 3, padding=1), torch.nn.BatchNorm2d(16), torch.nn.ReLU(),
        torch.nn.MaxPool2d(2),
        torch.nn.Conv2d(16, 32, 3, padding=1), torch.nn.BatchNorm2d(32), torch.nn.ReLU(),
        torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(), torch.nn.Linear(32, 10))


saved = {}  # the validation pass's saved tensors: data_ptr -> bytes


def bars_validate(model, loss_fn, params, xv, yv):
    def pack(t):
        if t.data_ptr() not in params:
            saved[t.data_ptr()] = t.storage().nbytes()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        out = model(xv)  # VALFWD
    return loss_fn(out, yv)


def keep(leaked):
    for _ in range(16):
        leaked.append(torch.randn(MIB // 16))  # LEAK4


def stop_on_stdin(stop):
    sys.stdin.readline()
    stop.set()


def model_and_data(validate):
    """The model, the side of its images and their batch size."""
    try:
        import torchvision
    except ImportError:
        torchvision = None
    if validate and torchvision:
        return torchvision.models.resnet18(num_classes=10), 32, 8
    return small_cnn(), 32, 16


def job(validate):
    """The loop, a step at each call of the function returned (its DataLoader's next batch):
    bench/mem_step.py --leak times it as train() runs it."""
    torch.manual_seed(0)
    torch.set_num_threads(1)
    model, side, batch = model_and_data(validate)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    loss_fn = torch.nn.CrossEntropyLoss()
    loader = torch.utils.data.DataLoader(Noise(side), batch_size=batch, num_workers=2)
    batches = iter(loader)
    history, leaked = [], []
    params = {p.data_ptr() for p in model.parameters()}

    def step():
        x, y = next(batches)
        opt.zero_grad()
        loss_fn(model(x), y).backward()
        opt.step()
        if validate:
            saved.clear()
            history.append(bars_validate(model, loss_fn, params, x * 0.5, y))
        else:
            keep(leaked)

    step.batches = batches  # its workers: mem_step.py's "workers"
    return step


def train(validate, pause=0):
    step = job(validate)
    stop = threading.Event()
    for n in range(1 << 62):
        step()
        if pause and n > 3:
            time.sleep(pause)
        if n == 3:
            if validate:
                print("kept", sum(saved.values()), *sorted(saved.values()), flush=True)
            print("ready", os.getpid(), flush=True)
            threading.Thread(target=stop_on_stdin, args=(stop,), daemon=True).start()
        elif n > 3:
            print("step", n, time.thread_time_ns(), flush=True)
        if stop.is_set():
            break


def main():
    args = [a for a in sys.argv[1:] if a != "--go"]
    go = "--go" in sys.argv[1:]
    pause = float(args[args.index("--sleep") + 1]) if "--sleep" in args else 0
    mode = args[0]
    if mode in ("leak", "cnn"):
        train(mode == "cnn", pause)
        return
    work = {"sites": sites, "growth": growth, "lines": lambda: (sites(), growth())}[mode]
    if go:
        print("ready", os.getpid(), flush=True)
        sys.stdin.readline()
    work()
    if go:
        print("done", flush=True)
        sys.stdin.readline()


if __name__ == "__main__":
    main()
