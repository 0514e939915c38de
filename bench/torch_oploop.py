#!/usr/bin/env python3
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""A loop of small PyTorch ops, timed in the process, for bench/bench_torch.py.

    torch_oploop.py ITERS

Each iteration: y = relu(x @ w + b); y.sum() (a handful of ATen ops, a few us each here).
Commands on stdin, one a line; each answers one JSON line:
  round NAME      run ITERS iterations (under torch.profiler, CPU only, when NAME is
                  "profiler"; with with_stack=True when it is "profiler-stack",
                  record_shapes=True when "profiler-shapes")
                  -> {"name", "ns", "callbacks"}: ns is the thread's CPU time
                  around the loop (time.thread_time_ns: the probe's kernel time counts, the
                  machine's other load does not)
  callbacks       -> {"callbacks": at::hasGlobalCallbacks()} (is a RecordFunction callback
                  registered: bpfsight's, while it records)
  quit
"""
import ctypes
import json
import os
import sys
import time

import torch


def has_callbacks():
    with open("/proc/self/maps") as f:
        for line in f:
            path = line.split()[-1]
            if os.path.basename(path).startswith("libtorch_cpu.so"):
                fn = ctypes.CDLL(path)._ZN2at18hasGlobalCallbacksEv
                fn.restype = ctypes.c_bool
                return fn
    raise SystemExit("no libtorch_cpu mapped")


def main():
    iters = int(sys.argv[1])
    torch.set_num_threads(1)
    x, w, b = torch.randn(8, 16), torch.randn(16, 16), torch.randn(16)
    cb = has_callbacks()

    def loop():
        for _ in range(iters):
            torch.relu(x @ w + b).sum()

    loop()  # warm
    print(json.dumps({"ready": os.getpid()}), flush=True)
    for line in sys.stdin:
        cmd = line.split()
        if not cmd or cmd[0] == "quit":
            break
        if cmd[0] == "callbacks":
            print(json.dumps({"callbacks": bool(cb())}), flush=True)
            continue
        name = cmd[1]
        prof = None
        if name.startswith("profiler"):
            prof = torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU],
                                          with_stack=name == "profiler-stack",
                                          record_shapes=name == "profiler-shapes")
            prof.start()
        t = time.thread_time_ns()
        loop()
        ns = time.thread_time_ns() - t
        if prof:
            prof.stop()
        print(json.dumps({"name": name, "ns": ns, "callbacks": bool(cb())}), flush=True)


if __name__ == "__main__":
    main()
