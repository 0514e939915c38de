#!/usr/bin/env python3
"""Ops whose non-tensor inputs are known, for the torch family's concrete inputs
(--torch-shapes): tests/e2e/test_torch_concrete.py.

    torch_concrete.py [--profile]

Runs, after a warm-up round, one round of: conv2d with stride 2, padding 3, dilation 1,
groups 1; a grouped conv2d (stride 1, padding 1, dilation 2, groups 2); mul by 0.1 and by
2.0; add with alpha 3; dropout with p 0.25, not training; sum over dims [0, 1] keeping them;
leaky_relu with slope 0.125; clamp_min(-1.5); clamp(-inf, 1e20); nan_to_num with a subnormal
and 1e18 (doubles printed each way torch prints them). Prints {"t0": NS, "t1": NS} (the round's
CLOCK_MONOTONIC bracket) and, with --profile, torch.profiler's (record_shapes) events of the
round as {"events": [[name, shapes, concrete inputs or null], ...]}, in the order of their
start: the "Input Dims" and "Concrete Inputs" of its Kineto trace (export_chrome_trace), the
text torch 2.x writes (null where this torch writes none, as 1.13).
"""
import json
import os
import sys
import tempfile
import time

import torch


def round_of_ops(x, w, wg):
    torch.nn.functional.conv2d(x, w, None, 2, 3, 1, 1)
    torch.nn.functional.conv2d(x, wg, None, 1, 1, 2, 2)
    y = x.mul(0.1).mul(2.0)
    torch.add(x, y, alpha=3)
    torch.nn.functional.dropout(x, p=0.25, training=False)
    x.sum(dim=[0, 1], keepdim=True)
    torch.nn.functional.leaky_relu(x, 0.125)
    torch.clamp_min(x, -1.5)
    torch.clamp(x, min=float("-inf"), max=1e20)
    torch.nan_to_num(x, nan=2.5e-310, posinf=1e18)


def main():
    profile = "--profile" in sys.argv[1:]
    torch.manual_seed(0)
    x = torch.randn(2, 4, 16, 16)
    w = torch.randn(8, 4, 3, 3)
    wg = torch.randn(6, 2, 3, 3)
    round_of_ops(x, w, wg)
    time.sleep(0.3)  # the shim's poller registers its callback (50 ms) meanwhile
    if profile:
        prof = torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU],
                                      record_shapes=True)
        prof.__enter__()
    t0 = time.monotonic_ns()
    round_of_ops(x, w, wg)
    t1 = time.monotonic_ns()
    out = {"t0": t0, "t1": t1}
    if profile:
        prof.__exit__(None, None, None)
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "trace.json")
            prof.export_chrome_trace(path)
            with open(path) as f:
                evs = json.load(f)
        evs = evs["traceEvents"] if isinstance(evs, dict) else evs  # 1.13: a list
        ops = sorted((e for e in evs if e.get("cat") == "cpu_op"), key=lambda e: e["ts"])
        out["events"] = [[e["name"], e["args"].get("Input Dims"),
                          e["args"].get("Concrete Inputs")] for e in ops]
    print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
