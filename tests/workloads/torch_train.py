#!/usr/bin/env python3
"""A small PyTorch (CPU) model trained step by step, for the torch family's tests.

    torch_train.py [--go] [--steps N] [--profile FIRST:LAST] [--schedule W:U:A:R] [--sleep SECS]

Each iteration: zero_grad, a "batch" record_function scope, forward, MSE loss, backward and
SGD's step (its Optimizer.step#SGD.step scope ends the iteration: nothing runs after it).
The data is made before the loop, so every iteration runs the same ops.

  --go             print "ready PID" and wait for a line on stdin before training; then train
                   until --steps (0: until a second line, "stop", comes on stdin)
  --steps N        iterations to run (default 20)
  --profile F:L    run torch.profiler (CPU, record_shapes) over iterations F..L (1-based,
                   inclusive) and print {"profile": {op name: count} (key_averages),
                   "events": [[name, scope, sequence nr, fwd thread, shapes], ...]} (its
                   events as Kineto recorded them, before key_averages merges any)
  --schedule W:U:A:R
                   run torch.profiler (CPU) with schedule(wait=W, warmup=U, active=A,
                   repeat=R) from the end of iteration 1 on (prof.step() ends every later
                   one), so that its step 0 is iteration 2: the first whole step of a
                   recorder launched with the job. Each active window, as on_trace_ready gets
                   it, prints {"window": K, "events": {name: count}} (its events as Kineto
                   recorded them)
  --sleep SECS     sleep after each iteration (a loop a tracer can attach to)

Every iteration prints one line: {"step": K, "callbacks": B, "tid": T, "t0": NS, "t1": NS}
where B is torch's own at::hasGlobalCallbacks() (read through ctypes from libtorch_cpu) at
the iteration's end and t0, t1 its start and end (CLOCK_MONOTONIC, time.monotonic_ns); the
last line is {"pid", "steps", "main_tid", "callbacks_at_end"}.
"""
import ctypes
import json
import os
import select
import sys
import threading
import time

import torch


def torch_cpu():
    """libtorch_cpu as this process mapped it (its at::hasGlobalCallbacks)."""
    with open("/proc/self/maps") as f:
        for line in f:
            path = line.split()[-1]
            if os.path.basename(path).startswith("libtorch_cpu.so"):
                lib = ctypes.CDLL(path)
                fn = lib._ZN2at18hasGlobalCallbacksEv
                fn.restype = ctypes.c_bool
                return fn
    raise SystemExit("no libtorch_cpu mapped")


def stdin_line(block):
    """The next line of stdin, or None (at once unless BLOCK)."""
    if block or select.select([sys.stdin], [], [], 0)[0]:
        return sys.stdin.readline()
    return None


def scheduled_profiler(wait, warmup, active, repeat):
    """torch.profiler with a schedule; each window's events by name, printed when ready."""
    windows = []

    def ready(prof):
        counts = {}
        for e in prof.profiler.kineto_results.events():
            counts[e.name()] = counts.get(e.name(), 0) + 1
        windows.append(counts)
        print(json.dumps({"window": len(windows), "events": counts}), flush=True)

    return torch.profiler.profile(
        activities=[torch.profiler.ProfilerActivity.CPU],
        schedule=torch.profiler.schedule(wait=wait, warmup=warmup, active=active, repeat=repeat),
        on_trace_ready=ready)


def main():
    args = sys.argv[1:]
    go = "--go" in args
    steps = int(args[args.index("--steps") + 1]) if "--steps" in args else 20
    prof_range = None
    if "--profile" in args:
        a, b = args[args.index("--profile") + 1].split(":")
        prof_range = (int(a), int(b))
    pause = float(args[args.index("--sleep") + 1]) if "--sleep" in args else 0.0
    sched = None
    if "--schedule" in args:
        w, u, a, r = (int(v) for v in args[args.index("--schedule") + 1].split(":"))
        sched = scheduled_profiler(w, u, a, r)
    has_callbacks = torch_cpu()

    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    xs = [torch.randn(16, 32) for _ in range(8)]
    ys = [x.sum(dim=1, keepdim=True) for x in xs]
    if go:
        print("ready %d" % os.getpid(), flush=True)
        stdin_line(True)
    prof = None
    k = 0
    while steps == 0 or k < steps:
        k += 1
        if prof_range and k == prof_range[0]:
            prof = torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU],
                                          record_shapes=True)
            prof.start()
        t0 = time.monotonic_ns()
        x, y = xs[k % len(xs)], ys[k % len(ys)]
        opt.zero_grad()
        with torch.autograd.profiler.record_function("batch"):
            out = model(x)
            loss = torch.nn.functional.mse_loss(out, y)
        loss.backward()
        opt.step()
        t1 = time.monotonic_ns()
        if sched:
            sched.start() if k == 1 else sched.step()
        if prof and k == prof_range[1]:
            prof.stop()
            counts = {}
            for e in prof.key_averages():
                counts[e.key] = counts.get(e.key, 0) + e.count
            events = [[e.name(), int(e.scope()), e.sequence_nr(), e.fwd_thread_id(), e.shapes()]
                      for e in prof.profiler.kineto_results.events()]
            print(json.dumps({"profile": counts, "events": events}), flush=True)
            prof = None
        print(json.dumps({"step": k, "callbacks": bool(has_callbacks()),
                          "tid": threading.get_native_id(), "t0": t0, "t1": t1}), flush=True)
        if pause:
            time.sleep(pause)
        if steps == 0 and stdin_line(False) is not None:
            break
    if sched:
        sched.stop()
    print(json.dumps({"pid": os.getpid(), "steps": k, "main_tid": threading.get_native_id(),
                      "callbacks_at_end": bool(has_callbacks())}), flush=True)


if __name__ == "__main__":
    main()
