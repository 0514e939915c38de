"""The torch family on Debian's CPU PyTorch 1.13 (python3-torch, /usr/bin/python3.11): the
cupti-shim's RecordFunction callback, checked against torch.profiler on the same program.

The workload (tests/workloads/torch_train.py) trains a small model; every iteration runs the
same ops, ends with SGD's Optimizer.step#SGD.step scope, and prints torch's own
at::hasGlobalCallbacks() (through ctypes): the exact check that bpfsight's callback is there
while recording and gone after. Each test imports torch once (seconds here); tests run as
jobs of their own (SPLIT).
"""
import collections
import json
import os
import re
import signal

import pymods
from helpers import (BPFSIGHT, Recorder, Skip, check, dump, eq, need_root, record, run, spawn,
                     stats, tell, tmpdir, wait_for)

# For tests/run_tests.py: about how long these tests take on CI's machine (its order).
SECONDS = 60
SPLIT = True

# make check-torch-versions runs these tests against other torch releases: their python
PY = os.environ.get("BPFSIGHT_TORCH_PYTHON", "/usr/bin/python3.11")
TRAIN = os.path.join(os.path.dirname(__file__), "..", "workloads", "torch_train.py")
STEP = "Optimizer.step#SGD.step"
EVAL = "autograd::engine::evaluate_function: "
VERIFIED = ("1.13, 2.0, 2.1, 2.2, 2.3, 2.4, 2.5, 2.6, 2.7, 2.8, 2.9, 2.10, 2.11, 2.12, 2.13, "
            "2.14")  # cupti-shim/shim_torch_lib.c's table
SCOPES = {"function": 0, "backward_function": 1, "user_scope": 7}


def need_torch():
    need_root()
    if not pymods.has(PY, "torch"):
        raise Skip("Debian's python3-torch is not installed (apt-get install python3-torch)")


def torch_version():
    """torch.__version__, as PY's torch/version.py (which torch's __init__ imports it from)
    says it, read without importing torch (1.5 s of CPU)."""
    path, text = pymods.package_file(PY, "torch", "version.py", read=True)
    m = re.search(r"^__version__\s*(?::\s*str\s*)?=\s*['\"]([^'\"]+)['\"]", text, re.M)
    check(m, f"{path} says its __version__: {text[:300]}")
    return m.group(1)


def lines(text):
    return [json.loads(l) for l in text.splitlines() if l.startswith("{")]


def ops_of(events, first, last):
    """The ops of iterations FIRST..LAST (1-based) of a recording made from the start: step
    record k (from the end of iteration k's optimizer step to the next one's) covers
    iteration k + 1, so iterations FIRST..LAST lie between step FIRST-1's start and step
    LAST-1's end."""
    steps = {e["args"]["step"]: e for e in events if e["kind"] == "torch_step"}
    lo, hi = steps[first - 1]["ts"], steps[last - 1]["ts"] + steps[last - 1]["dur"]
    return [e for e in events if e["kind"] == "torch_op" and lo < e["ts"] <= hi]


def children(ops):
    """{op index: [indices of the ops directly inside it]} by time and depth on each thread."""
    out = collections.defaultdict(list)
    by_thread = collections.defaultdict(list)
    for i, o in enumerate(ops):
        by_thread[o["tid"]].append(i)
    for idx in by_thread.values():
        idx.sort(key=lambda i: (ops[i]["ts"], -ops[i]["dur"]))
        stack = []
        for i in idx:
            while stack and ops[stack[-1]]["ts"] + ops[stack[-1]]["dur"] < ops[i]["ts"] + ops[i]["dur"]:
                stack.pop()
            if stack:
                eq(ops[i]["args"]["depth"], ops[stack[-1]]["args"]["depth"] + 1,
                   f"{ops[i]['name']}'s depth under {ops[stack[-1]]['name']}")
                out[stack[-1]].append(i)
            stack.append(i)
    return out


def as_profiler(ops):
    """Our ops as torch.profiler's events: (name, scope, seq, fwd thread, shapes). The
    profiler gives autograd's evaluate_function scope the sequence number and forward thread
    of the backward op inside it (its own post-processing): so do we, here."""
    kids = children(ops)
    out = collections.Counter()
    for i, o in enumerate(ops):
        a = o["args"]
        seq, fwd = a.get("seq", -1), a.get("fwd_thread", 0)
        if o["name"].startswith(EVAL):
            inner = [ops[k]["args"] for k in kids[i] if ops[k]["args"]["scope"] == "backward_function"]
            eq(len(inner), 1, f"{o['name']}: the backward op inside")
            seq, fwd = inner[0].get("seq", -1), inner[0].get("fwd_thread", 0) if inner[0].get("seq", -1) >= 0 else 0
        out[(o["name"], SCOPES[a["scope"]], seq, fwd, a.get("shapes", "[]"))] += 1
    return out


def test_torch_ops_equal_torch_profiler_over_steps_5_to_14():
    """20 iterations recorded from the start (launch mode: the shim comes by LD_PRELOAD), and
    the same program profiled by torch.profiler over iterations 5..14 in another run (at the
    same time): the ops of those iterations are the profiler's, one for one, with their
    scope, sequence number, forward thread and input shapes; key_averages() counts every
    name as we do, but the ones it merges (an op whose only child has its name)."""
    need_torch()
    ref = spawn([PY, TRAIN, "--steps", "20", "--profile", "5:14"])
    p, out = record([PY, TRAIN, "--steps", "20"], "-t", "torch", "--torch-shapes")
    eq(p.returncode, 0, f"record ({p.stderr[-600:]})")
    check("RecordFunction callback registered, with input shapes" in p.stderr, p.stderr[-600:])
    run_lines = lines(p.stdout)
    main_tid = run_lines[-1]["main_tid"]
    check(all(l["callbacks"] for l in run_lines if "step" in l), "the callback was there")
    prof = lines(ref.communicate(timeout=180)[0])
    eq(ref.returncode, 0, "the profiled run")
    prof = [l for l in prof if "profile" in l][0]

    events = dump(out)
    ops = ops_of(events, 5, 14)
    # Times: each iteration's ops inside its own CLOCK_MONOTONIC bracket (the shim's clock is
    # the TSC mapped onto it: within a microsecond).
    brackets = {l["step"]: (l["t0"], l["t1"]) for l in run_lines if "step" in l}
    for k in range(5, 15):
        it = ops_of(events, k, k)
        t0, t1 = brackets[k]
        check(it and min(o["ts"] for o in it) >= t0 - 1000 and
              max(o["ts"] + o["dur"] for o in it) <= t1 + 1000,
              f"iteration {k}'s ops [{min(o['ts'] for o in it)}, "
              f"{max(o['ts'] + o['dur'] for o in it)}] inside [{t0}, {t1}]")
    mine = as_profiler(ops)
    theirs = collections.Counter((n, s, q, f, json.dumps(sh)) for n, s, q, f, sh in prof["events"])
    eq(sum(mine.values()), sum(theirs.values()), "ops of iterations 5..14")
    eq(mine - theirs, collections.Counter(), "ops torch.profiler did not see")
    eq(theirs - mine, collections.Counter(), "ops bpfsight did not see")

    # key_averages: every name as many times, but where an op's only child has its name.
    counts = collections.Counter(o["name"] for o in ops)
    kids = children(ops)
    merged = {ops[i]["name"] for i, k in kids.items()
              if len(k) == 1 and ops[k[0]]["name"] == ops[i]["name"]}
    eq(merged, {"aten::div_"}, "the names key_averages merges (mean's div_ in div_)")
    for name in set(counts) | set(prof["profile"]):
        if name not in merged:
            eq(counts[name], prof["profile"].get(name), f"key_averages count of {name}")
    # Per iteration: the same ops every time, a user scope and the optimizer's among them.
    per_iter = {n: c // 10 for n, c in counts.items()}
    check(all(c % 10 == 0 for c in counts.values()), f"counts of 10 iterations: {counts}")
    eq((per_iter[STEP], per_iter["batch"], per_iter["aten::addmm"]), (1, 1, 2), "per iteration")

    # Backward ops: on CPU, 1.13's engine runs them on the thread that called backward();
    # each pairs with its forward op by sequence number and forward thread.
    fwd_seq = {o["args"]["seq"]: o for o in ops if o["args"]["scope"] == "function" and "seq" in o["args"]}
    bwd = [o for o in ops if o["args"]["scope"] == "backward_function" and "seq" in o["args"]]
    eq(len(bwd), 10 * 6, "backward ops with a sequence number (6 nodes an iteration)")
    for b in bwd:
        eq(b["tid"], main_tid, f"{b['name']}'s thread")
        eq(b["args"]["fwd_thread"], b["args"]["torch_thread"], f"{b['name']}'s forward thread")
        f = fwd_seq.get(b["args"]["seq"])
        check(f and f["ts"] < b["ts"], f"{b['name']} seq {b['args']['seq']}: its forward op")

    # The reports: key_averages' counts (the merged ops in the op they are merged into: over
    # 20 iterations twice what the profiler counted over 10), 19 steps of the same ops.
    rep = stats(out, "torch_op_sum,torch_step_sum")
    sums = {r["name"]: r for r in rep["torch_op_sum"]}
    all_ops = [e for e in events if e["kind"] == "torch_op"]
    all_counts = collections.Counter(e["name"] for e in all_ops)
    merged_all = collections.Counter(all_ops[k[0]]["name"] for i, k in children(all_ops).items()
                                     if len(k) == 1 and all_ops[k[0]]["name"] == all_ops[i]["name"])
    for name, c in all_counts.items():
        eq(sums[name]["count"], c - merged_all[name], f"torch_op_sum count of {name}")
        check(sums[name]["cpu_self_ns"] <= sums[name]["cpu_total_ns"], f"{name}: self <= total")
    # torch 2.x nests by ns, as we do; 1.13's key_averages truncates each op's start and
    # duration to us apart, so a div_ ending within a us of its parent's end often does not
    # nest there and is not merged: its count lies between the merged and the unmerged one.
    lo, hi = sums["aten::div_"]["count"], all_counts["aten::div_"]
    eq((lo, hi), (20, 40), "aten::div_: merged (one an iteration) and all")
    check(10 <= prof["profile"]["aten::div_"] <= 20,
          f"1.13's key_averages merged some of the 10 iterations' div_: {prof['profile']}")
    steps = rep["torch_step_sum"]
    eq([s["step"] for s in steps], list(range(1, 20)), "steps")
    eq({s["ops"] for s in steps}, {sum(per_iter.values())}, "ops a step")
    check_chrome(out, sum(all_counts.values()), main_tid)


def check_chrome(trace, nops, main_tid):
    """Kineto's view: cpu_op events on the thread with External id and Sequence number, user
    scopes as user_annotation, the steps too."""
    d = tmpdir()
    path = os.path.join(d, "t.json")
    run([BPFSIGHT, "export", trace, "--format", "chrome", "-o", path], check=True)
    with open(path) as f:
        evs = json.load(f)["traceEvents"]
    cpu = [e for e in evs if e.get("cat") == "cpu_op"]
    user = [e for e in evs if e.get("cat") == "user_annotation"]
    scopes = [e for e in user if "External id" in e["args"]]  # record_function (not steps)
    eq(len(cpu) + len(scopes), nops, "every op drawn")
    eq(len({e["args"]["External id"] for e in cpu + scopes}), len(cpu) + len(scopes),
       "External ids are unique")
    mm = [e for e in cpu if e["name"] == "aten::mm"]
    check(mm and all(e["tid"] == main_tid for e in mm), "aten::mm on the main thread")
    # forward ops carry their sequence number (those inside backward nodes have none)
    check(any("Sequence number" in e["args"] for e in cpu if e["name"] == "aten::addmm"), "seq")
    check(any(e["name"] == "batch" for e in user), "record_function scopes are user annotations")
    check(any(e["name"] == "step 19" for e in user), "the steps")


def train_line(w, pred, what, timeout=60):
    """Read W's lines until one satisfies PRED; returns it."""
    def one():
        l = w.stdout.readline()
        if not l:
            raise AssertionError(f"{what}: the workload ended: {w.stderr.read()[-300:]}")
        return json.loads(l)
    found = []
    wait_for(lambda: found.append(one()) or pred(found[-1]), timeout, what)
    return found[-1]


def running_loop():
    """The workload started without the shim, training until told "stop" (a step every
    20 ms), once its first step is done: (the process, its pid)."""
    w = spawn([PY, TRAIN, "--go", "--steps", "0", "--sleep", "0.02"])
    line = w.stdout.readline()
    check(line.startswith("ready"), f"workload: {line} {w.stderr.read()[-300:] if not line else ''}")
    tell(w, "go")
    train_line(w, lambda l: l.get("step", 0) >= 1, "the loop's first step")
    return w, int(line.split()[1])


def test_torch_attach_steps_capture_then_nothing_left():
    """A loop running without the shim: record -p --inject --capture-range=steps:3 stops by
    itself after exactly 3 whole iterations (3 optimizer steps, every op 3 times per
    iteration's count, as steps:2+1 counts one), and the callback is gone once each recording
    ends (torch's own hasGlobalCallbacks). A recorder SIGKILLed mid-recording leaves the job
    untouched: its callback goes too, and it finishes its steps with exit 0."""
    need_torch()
    w, pid = running_loop()

    def capture(arg, inject):
        d = tmpdir()
        opts = ["-p", str(pid), "-t", "torch", f"--capture-range=steps:{arg}"] + (["--inject"] if inject else [])
        p = run([BPFSIGHT, "record", "-o", os.path.join(d, "t.bst"), *opts], timeout=120)
        eq(p.returncode, 0, f"record ({p.stderr[-600:]})")
        check("steps captured" in p.stderr, p.stderr[-600:])
        # Callbacks are gone: the first line printed after the recorder ended and the
        # shim's next poll (50 ms) says so, and every one after it.
        train_line(w, lambda l: "step" in l and not l["callbacks"], "the callback removed")
        events = dump(os.path.join(d, "t.bst"))
        ops = [e for e in events if e["kind"] == "torch_op"]
        eq(sum(o["name"] == STEP for o in ops), int(arg.split("+")[-1]), f"steps:{arg}'s optimizer steps")
        return collections.Counter(o["name"] for o in ops), events

    three, events = capture("3", True)
    eq([e["args"]["step"] for e in events if e["kind"] == "torch_step"], [1, 2, 3], "step records")
    one, _ = capture("2+1", False)
    eq(three, collections.Counter({n: 3 * c for n, c in one.items()}), "3 steps' ops = 3 x one step's")

    rec = Recorder("-p", str(pid), "-t", "torch")
    rec.wait_ready()
    train_line(w, lambda l: l.get("callbacks"), "the callback registered")
    rec.p.send_signal(signal.SIGKILL)
    rec.wait(30)
    last = train_line(w, lambda l: "step" in l and not l["callbacks"], "the callback gone after SIGKILL")
    tell(w, "stop")
    end = lines(w.communicate(timeout=60)[0])[-1]
    eq(w.returncode, 0, "the job's exit")
    check(end["steps"] > last["step"] and not end["callbacks_at_end"], f"the job went on: {end}")


def test_torch_unknown_version_refused():
    """A torch whose version has no verified layout (BPFSIGHT_SHIM_TORCH_VERSION fakes one, for
    tests only) is refused with a message: no callback is registered, no op recorded, the job
    runs as without bpfsight."""
    need_torch()
    p, out = record(["env", "BPFSIGHT_SHIM_TORCH_VERSION=2.99.0", PY, TRAIN, "--steps", "3"],
                    "-t", "torch")
    eq(p.returncode, 0, f"record ({p.stderr[-600:]})")
    check("torch 2.99.0" in p.stderr and "not a version whose RecordFunction layout bpfsight "
          f"has verified ({VERIFIED})" in p.stderr, p.stderr[-600:])
    check(not any(l.get("callbacks") or l.get("callbacks_at_end") for l in lines(p.stdout)),
          "no callback registered")
    eq([e for e in dump(out) if e["kind"] == "torch_op"], [], "torch ops")


# torch 2.x's torch/version.py, as a wheel has it: __all__ names __version__ first.
WHEEL_VERSION_PY = """from typing import Optional

__all__ = ["__version__", "debug", "cuda", "git_version", "hip", "rocm", "xpu"]
__version__ = '{v}'
debug = False
cuda: Optional[str] = '13.0'
"""


def test_torch_version_read_from_a_wheels_version_py():
    """pip's wheels name the library torch/lib/libtorch_cpu.so, with no version: it is read
    from torch/version.py, where 2.x's __all__ mentions __version__ before assigning it (an
    H100's torch 2.11 was refused with "the version ... is unknown" before). Debian's
    libtorch_cpu, hard-linked as a wheel lays it out and loaded before torch's import (which
    then uses it: the same SONAME), beside such a version.py saying 1.13.1: ops recorded."""
    need_torch()
    d = tmpdir()
    lib = os.path.join(d, "torch", "lib")
    os.makedirs(lib)
    # beside torch.__file__, found as import finds it (importing torch costs 1.5 s of CPU)
    src = os.path.realpath(pymods.package_file(PY, "torch", "lib", "libtorch_cpu.so")[0])
    try:
        os.link(src, os.path.join(lib, "libtorch_cpu.so"))
    except OSError as e:
        raise Skip(f"cannot hard-link {src} into {lib}: {e}")
    with open(os.path.join(d, "torch", "version.py"), "w") as f:
        f.write(WHEEL_VERSION_PY.format(v="1.13.1"))
    script = (f"import ctypes, runpy, sys; ctypes.CDLL({lib!r} + '/libtorch_cpu.so', "
              f"mode=ctypes.RTLD_GLOBAL); sys.argv = [{TRAIN!r}, '--steps', '3']; "
              f"runpy.run_path({TRAIN!r}, run_name='__main__')")
    p, out = record([PY, "-c", script], "-t", "torch")
    eq(p.returncode, 0, f"record ({p.stderr[-600:]})")
    check("is unknown" not in p.stderr, p.stderr[-600:])
    maps = [e for e in dump(out) if e["kind"] == "torch_op"]
    check(len([o for o in maps if o["name"] == STEP]) == 3, f"3 steps' ops: {len(maps)} ops")


def test_torch_wrong_layout_caught_at_the_first_op():
    """A layout of another version (BPFSIGHT_SHIM_TORCH_VERSION names one: 2.6's on 1.13, whose
    RecordFunction has no kwinputs_ and so keeps fwd_thread_id_ 56 bytes earlier; 1.13's on
    2.x) is caught by the check of the first op: the callback is removed with the fields it
    read, no op is recorded, the job runs on as without bpfsight."""
    need_torch()
    real = torch_version()
    other = "2.6.0" if real.startswith("1.") else "1.13.1"
    p, out = record(["env", f"BPFSIGHT_SHIM_TORCH_VERSION={other}", PY, TRAIN, "--steps", "3",
                     "--sleep", "0.3"],  # the poller (50 ms) says why before the job ends
                    "-t", "torch")
    eq(p.returncode, 0, f"record ({p.stderr[-600:]})")
    want = "kwinputs not found, expected found" if other == "2.6.0" else "kwinputs found, expected none"
    check(f"torch {other}: the RecordFunction layout check failed" in p.stderr and want in p.stderr,
          p.stderr[-800:])
    eq([e for e in dump(out) if e["kind"] == "torch_op"], [], "torch ops")
    eq(lines(p.stdout)[-1]["steps"], 3, "the job's steps")


def test_torch_kwargs_in_the_first_op_pass_the_check():
    """2.4 on: the first op the callback sees is a user scope holding kwargs (kwinputs_ not
    empty: tests/workloads/torch_kwargs.py): the layout check still finds kwinputs_ where the
    version has it, and the scope and the ops after it are recorded (before 2.4 there is no
    such scope: skipped, as on 1.13 here; make check-torch-versions runs it on 2.6 and 2.14)."""
    need_torch()
    p, out = record([PY, os.path.join(os.path.dirname(TRAIN), "torch_kwargs.py")], "-t", "torch")
    eq(p.returncode, 0, f"record ({p.stderr[-600:]})")
    res = lines(p.stdout)[-1]
    if "skip" in res:
        raise Skip(res["skip"])
    eq(res["kwinputs"], [{"grid": 3, "stream": 0}], "the scope's kwargs, as torch.profiler saw them")
    check("layout check failed" not in p.stderr, p.stderr[-600:])
    ops = sorted((e for e in dump(out) if e["kind"] == "torch_op"), key=lambda e: e["ts"])
    eq(ops[0]["name"] if ops else None, "with_kwargs", "the first op recorded")
    eq(sum(o["name"] == "aten::add" for o in ops), 50, "the adds after it")
