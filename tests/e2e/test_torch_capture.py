"""--capture-range=steps on Debian's CPU PyTorch 1.13 (python3-torch, /usr/bin/python3.11):
schedules that repeat (a file per window, as torch.profiler's tensorboard_trace_handler writes
a trace per active window), checked against torch.profiler's schedule in the same process;
a capture that can never record an op fails at once; a -t cpu capture too short for its
sampling rate says so; the step table's start times count from the file's start.
"""
import collections
import os
import re
import time

from helpers import BPFSIGHT, Recorder, check, dump, eq, info, record, run, stats, tell, tmpdir
from test_torch import PY, STEP, TRAIN, lines, need_torch, running_loop, train_line

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


def test_torch_capture_that_can_never_record_fails_at_once():
    """A steps capture where no op can ever be recorded fails by itself, exit 1, the fix in
    its message, instead of waiting for steps forever: -p on a loop started without the
    shim and no --inject; launch mode where the shim refuses the job's torch (a version
    faked for tests: BPFSIGHT_SHIM_TORCH_VERSION). The bound on the time from the recording's
    start line to its exit is a real one: the torch family decides at its first poll (1 s),
    then the stop reads the ring for at most 1 s and lets the probes go within 0.5 s; 10 s
    leaves the rest to a loaded machine, where the old behaviour never ends. The jobs run on
    untouched."""
    need_torch()
    w, pid = running_loop()
    rec = Recorder("-p", str(pid), "-t", "torch", "--capture-range=steps:3")
    check(rec.started(), f"recorder live: {rec.stderr[-600:]}")
    live = time.monotonic()
    rec.wait(60)
    took = time.monotonic() - live
    err = rec.stderr
    eq(rec.p.returncode, 1, f"record's exit ({err[-800:]})")
    check(took < 10, f"it ended {took:.1f} s after going live")
    check("no process of this recording has the cupti-shim" in err and "add --inject" in err
          and "LD_PRELOAD=<shim>" in err, err[-800:])
    check("nothing was captured" in err, err[-800:])
    last = train_line(w, lambda l: "step" in l, "the job goes on")
    tell(w, "stop")
    end = lines(w.communicate(timeout=60)[0])[-1]
    eq(w.returncode, 0, "the job's exit")
    check(end["steps"] >= last["step"] and not end["callbacks_at_end"], f"the job: {end}")

    # Launch mode: the shim is there from the start, torch loads later, and is refused (a
    # version past the layouts bpfsight knows). The recording fails as soon as it is; a
    # failed recording leaves CMD to run to its end.
    p, _ = record(["env", "BPFSIGHT_SHIM_TORCH_VERSION=2.15.0", PY, TRAIN, "--steps", "30",
                   "--sleep", "0.02"], "-t", "torch", "--capture-range=steps:3", timeout=120)
    eq(p.returncode, 1, f"record ({p.stderr[-800:]})")
    check("torch ops cannot be recorded in pid" in p.stderr and "torch 2.15.0" in p.stderr,
          p.stderr[-800:])
    check("though the command exited with 0" in p.stderr, p.stderr[-800:])
    eq(lines(p.stdout)[-1]["steps"], 30, "the job's steps")


def test_torch_capture_too_few_cpu_samples_says_so():
    """-t torch,cpu at 99 Hz over 3 steps that sleep 20 ms each (a few ms on the CPU): the
    samples the capture holds are far fewer than 100, and the recording says how many, over
    how long, at what rate, and what to do; the count it gives is the file's. The step
    table's starts count from the file's start (they read the clock's ~2000 s before)."""
    need_torch()
    p, out = record([PY, TRAIN, "--steps", "20", "--sleep", "0.02"], "-t", "torch,cpu",
                    "--capture-range=steps:2+3", "--kill", "none")
    eq(p.returncode, 0, f"record ({p.stderr[-800:]})")
    m = re.search(r"cpu: (\d+) samples over ([\d.]+) ms captured at 99 Hz: too few to say "
                  r"where time went \(under 100[^)]*\); raise --sample-rate", p.stderr)
    check(m, p.stderr[-800:])
    n = sum(e["kind"] == "cpu_sample" for e in dump(out))
    eq(int(m.group(1)), n, "the samples said = the file's")
    steps = stats(out, "torch_step_sum")["torch_step_sum"]
    eq(len(steps), 3, "steps")
    check(abs(float(m.group(2)) * 1e6 - sum(s["wall_ns"] for s in steps)) < 1e5,
          f"{m.group(2)} ms: the 3 steps' time")
    # One file, as without a schedule: its steps start from its start, as info's duration.
    dur = info(out)["duration_ns"]
    check(all(0 < s["start_ns"] < dur for s in steps), f"starts {steps} within {dur} ns")
