"""--capture-range=steps on Debian's CPU PyTorch 1.13 (python3-torch, /usr/bin/python3.11):
schedules that repeat (a file per window, as torch.profiler's tensorboard_trace_handler writes
a trace per active window), checked against torch.profiler's schedule in the same process;
a capture that can never record an op fails at once; a -t cpu capture too short for its
sampling rate says so; the step table's start times count from the file's start.
"""
import collections
import json
import os

from helpers import (BPFSIGHT, check, dump, eq, info, run, stats, tmpdir)
from test_torch import PY, STEP, TRAIN, lines, need_torch

# For tests/run_tests.py: about how long these tests take on CI's machine (its order).
SECONDS = 40
SPLIT = True


def test_torch_capture_schedule_x2_equals_torch_profiler_windows():
    """steps:2+3x2 is torch.profiler's schedule(wait=1, warmup=1, active=3, repeat=2): the
    job runs that schedule itself (its step 0 is the recorder's first whole step), and the
    recorder writes t-1.bst and t-2.bst, no t.bst. Each is a whole trace that dump, stats and
    export read alone: 3 steps, and exactly the ops (by name, every count) of the profiler's
    window of the same number, ProfilerStep#N scopes included; its steps start inside the
    file's own time (from its start, not the clock's)."""
    need_torch()
    d = tmpdir()
    out = os.path.join(d, "t.bst")
    p = run([BPFSIGHT, "record", "-o", out, "-t", "torch", "--capture-range=steps:2+3x2", "--kill", "none", "--",
             PY, TRAIN, "--steps", "14", "--schedule", "1:1:3:2"], timeout=180)
    eq(p.returncode, 0, f"record ({p.stderr[-800:]})")
    windows = [l["events"] for l in lines(p.stdout) if "window" in l]
    eq(len(windows), 2, "torch.profiler's windows")
    eq(sorted(os.listdir(d)), ["t-1.bst", "t-2.bst"], "the files written")
    check("window 2 of 2: 3 steps captured" in p.stderr, p.stderr[-800:])
    last_steps = None
    for k, theirs in enumerate(windows, 1):
        path = os.path.join(d, f"t-{k}.bst")
        ops = [e for e in dump(path) if e["kind"] == "torch_op"]
        mine = collections.Counter(o["name"] for o in ops)
        eq(sum(mine.values()), sum(theirs.values()), f"window {k}: ops")
        eq(dict(mine), theirs, f"window {k}: ops by name (torch.profiler's events)")
        eq(mine[STEP], 3, f"window {k}: optimizer steps")
        meta = info(path)
        eq((meta["lost_total"], meta["clean_close"], meta["corrupt_chunks"]), (0, True, 0),
           f"window {k}: a whole file, nothing lost")
        steps = stats(path, "torch_step_sum")["torch_step_sum"]
        eq(len(steps), 3, f"window {k}: torch_step_sum's steps")
        nums = [s["step"] for s in steps]
        eq(nums, list(range(nums[0], nums[0] + 3)), f"window {k}: consecutive steps")
        # window 1 is steps 3..5 (2 waited), window 2 steps 8..10 (2 more waited after it)
        eq(nums[0], 3 if k == 1 else last_steps + 3, f"window {k}: its first step")
        last_steps = nums[-1]
        dur = meta["duration_ns"]
        for s in steps:
            check(0 < s["start_ns"] < dur, f"window {k}: step {s['step']} starts at "
                  f"{s['start_ns']} ns of the file's {dur} ns")
        e = run([BPFSIGHT, "export", path, "--format", "chrome", "-o",
                 os.path.join(tmpdir(), "t.json")])
        eq(e.returncode, 0, f"window {k}: export ({e.stderr[-300:]})")
