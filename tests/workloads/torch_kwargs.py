#!/usr/bin/env python3
"""A user scope holding kwargs as the first op a newly registered RecordFunction callback sees
(torch 2.4 and later: RecordFunction's kwinputs_ is then not empty), for
tests/e2e/test_torch.py.

    torch_kwargs.py

Waits (running no op) until a global callback is registered (torch's own
at::hasGlobalCallbacks(), read through ctypes), starts torch.profiler (record_shapes: torch
fills kwinputs_ only for a profiler that wants inputs), runs _RecordFunctionFast("with_kwargs",
[], {"grid": 3, "stream": 0}), then 50 small ops. Prints {"registered": B, "kwinputs": [...]}
(the profiler's kwinputs of the scope), or {"skip": why} on a torch without the scope class.
"""
import ctypes
import json
import os
import time

import torch


def main():
    fast = getattr(getattr(torch._C, "_profiler", None), "_RecordFunctionFast", None)
    if fast is None:
        print(json.dumps({"skip": f"torch {torch.__version__} has no _RecordFunctionFast"}))
        return
    with open("/proc/self/maps") as f:
        lib = next(l.split()[-1] for l in f if os.path.basename(l.split()[-1]).startswith("libtorch_cpu.so"))
    has = ctypes.CDLL(lib)._ZN2at18hasGlobalCallbacksEv
    has.restype = ctypes.c_bool
    deadline = time.monotonic() + 60
    while not has() and time.monotonic() < deadline:
        time.sleep(0.001)
    prof = torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], record_shapes=True)
    prof.start()
    with fast("with_kwargs", [], {"grid": 3, "stream": 0}):
        pass
    x = torch.ones(3)
    for _ in range(50):
        x = x + 1
    prof.stop()
    kw = [getattr(e, "kwinputs", None) for e in prof.events() if e.name == "with_kwargs"]
    print(json.dumps({"registered": bool(has()), "kwinputs": kw}))


if __name__ == "__main__":
    main()
