#!/usr/bin/env python3
"""PyTorch (CPU) ops called from known Python lines, for --stacks=torch's tests.

    torch_stacks.py OUT.json [--size N]
    torch_stacks.py --go [--size N]

work() runs the same ops every time from the lines marked "# LINE name" below: the tests
find their numbers there. The first form calls work() twice from one line: the first time
under torch.profiler (CPU, with_stack=True), whose events it writes to OUT.json as
[[name, [stack entries, innermost first]], ...]; the second time plain. The second form
prints "ready PID" and then, for each line "run" on stdin, calls work() and prints
{"callbacks": B} (torch's own at::hasGlobalCallbacks(): a tracer's callback is there); for
each line "threads N", calls work() 3 times on each of N new threads and on the main thread,
all at once, and prints the same; "stop" ends it.
"""
import contextlib
import json
import os
import sys
import threading

import torch
from torch.profiler import ProfilerActivity, profile, record_function

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch_train import torch_cpu  # noqa: E402 (at::hasGlobalCallbacks, through ctypes)


def add(a, b):
    return a + b  # LINE add


def inner(a):
    return torch.mm(a, a)  # LINE mm


def outer(a):
    x = inner(a)  # LINE inner
    with record_function("scope"):  # LINE scope
        y = add(x, a)  # LINE add_call
    return y.sum()  # LINE sum


def work(n):
    a = torch.ones(n, n)  # LINE ones
    return outer(a)  # LINE outer


def in_thread(n):
    for _ in range(3):
        work(n)  # LINE thread


def threaded(n, nthreads):
    ts = [threading.Thread(target=in_thread, args=(n,)) for _ in range(nthreads)]
    for t in ts:
        t.start()
    for _ in range(3):
        work(n)  # LINE main_threads
    for t in ts:
        t.join()


def main():
    args = sys.argv[1:]
    size = int(args[args.index("--size") + 1]) if "--size" in args else 8
    if "--go" in args:
        has_callbacks = torch_cpu()
        print("ready", os.getpid(), flush=True)
        for line in sys.stdin:
            cmd = line.split()
            if cmd == ["run"]:
                work(size)  # LINE run
            elif cmd[:1] == ["threads"]:
                threaded(size, int(cmd[1]))  # LINE threads_call
            else:
                break
            print(json.dumps({"callbacks": has_callbacks()}), flush=True)
        return
    for i in range(2):
        prof = profile(activities=[ProfilerActivity.CPU], with_stack=True)
        with prof if i == 0 else contextlib.nullcontext():
            work(size)  # LINE work
        if i == 0:
            with open(args[0], "w") as f:
                json.dump([[e.name, list(e.stack)] for e in prof.events()], f)


if __name__ == "__main__":
    main()
