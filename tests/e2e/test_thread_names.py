"""Python thread names in a recording (THREAD_NAME records): threads named by
threading.Thread(name=...) are named so in stats (gil_sum), dump and the Perfetto export's
thread descriptors, a thread renamed while recording has both names in turn, and the OS
names a program gives its threads (prctl, pthread_setname_np, as torch's C++ threads) win
over the ones threading makes up. Workloads: tests/workloads/py_thread_names.py (cpu-0 and
cpu-1 spin, "rename" renames cpu-1) on pyenv's 3.12 and Debian's stripped 3.11;
tests/workloads/torch_names.py on Debian's python3-torch."""
import json
import os
import re

import pymods
from helpers import (BPFSIGHT, Recorder, Skip, check, dump, eq, need_root, run, spawn, stats,
                     tell, tmpdir, wait_for)
from test_export_perfetto import Model, decode, need_protoc
from test_gil import debian_python, pyenv_python

# For tests/run_tests.py: about how long these tests take on CI's machine (its order).
SECONDS = 30

HERE = os.path.dirname(os.path.abspath(__file__))
WORK = os.path.join(HERE, "..", "workloads", "py_thread_names.py")
TORCH = os.path.join(HERE, "..", "workloads", "torch_names.py")


def names_so_far(rec, pid):
    """The thread names the recording wrote so far: {tid: [names in order]}."""
    rec.flush()
    got = {}
    for e in dump(rec.out):
        if e["kind"] == "thread_name" and e["pid"] == pid:
            got.setdefault(e["tid"], []).append(e["name"])
    return got


def has(rec, pid, want):
    got = names_so_far(rec, pid)
    return all(n in got.get(tid, []) for tid, n in want.items())


def gil_names(out, pid):
    return {r["tid"]: r["thread_name"] for r in stats(out, "gil_sum")["gil_sum"]
            if r["pid"] == pid}


def test_thread_names_in_stats_dump_and_perfetto_and_renamed():
    """On each interpreter: gil_sum names cpu-0, cpu-1 and MainThread so; cpu-1, renamed to
    renamed-1 while recording, has both THREAD_NAME records in that order and gil_sum's last
    name; the Perfetto export describes cpu-1's thread by both names."""
    need_root()
    # (test_stacks_dump.py reads the names of 3.9 and 3.15 too: the same reads)
    pys = [p for p in (pyenv_python(12), debian_python()) if p]
    check(pys, "no CPython here")
    for i, py in enumerate(pys):
        p = spawn([py, WORK])
        tids = json.loads(p.stdout.readline())["tids"]
        pid = tids["MainThread"]
        rec = Recorder("-t", "gil", "-p", str(pid))
        rec.wait_ready()
        wait_for(lambda: has(rec, pid, {t: n for n, t in tids.items()}), 30,
                 f"{py}: the names recorded")
        tell(p, "rename")
        eq(p.stdout.readline(), "renamed\n", "the workload's answer")
        wait_for(lambda: has(rec, pid, {tids["cpu-1"]: "renamed-1"}), 30, f"{py}: the rename")
        tell(p, "stop")
        eq(p.wait(30), 0, f"{py}: workload exit")
        eq(rec.stop(), 0, f"{py}: record exit ({rec.stderr[-400:]})")
        events = [e for e in dump(rec.out) if e["kind"] == "thread_name" and e["pid"] == pid]
        eq([e["name"] for e in events if e["tid"] == tids["cpu-1"]], ["cpu-1", "renamed-1"],
           f"{py}: cpu-1's names")
        eq([e["args"]["source"] for e in events], ["python"] * len(events), "source")
        names = gil_names(rec.out, pid)
        eq((names.get(tids["cpu-0"]), names.get(tids["cpu-1"]), names.get(pid)),
           ("cpu-0", "renamed-1", "MainThread"), f"{py}: gil_sum's threads")
        if i == 0:
            need_protoc()
            pf = os.path.join(tmpdir(), "t.pftrace")
            run([BPFSIGHT, "export", rec.out, "--format", "perfetto", "-o", pf], check=True)
            described = Model(decode(pf)).thread_names()
            check({"cpu-1", "renamed-1"} <= described.get((pid, tids["cpu-1"]), set()),
                  f"cpu-1's thread descriptors: {described.get((pid, tids['cpu-1']))}")
            check("cpu-0" in described.get((pid, tids["cpu-0"]), set()),
                  f"cpu-0's thread descriptors: {described.get((pid, tids['cpu-0']))}")


def test_thread_names_in_a_torch_program():
    """Debian's python3-torch: the thread running the training steps is "step-worker" (its
    threading name), the C-named thread "pt_worker" (its OS name: threading's made-up
    Dummy-1 is not recorded), the main thread "MainThread"; torch 1.13 made no thread of its
    own for the CPU backward (no pt_autograd_N)."""
    need_root()
    py = debian_python()
    if not pymods.has(py, "torch"):
        raise Skip("Debian's python3-torch is not installed (apt-get install python3-torch)")
    w = spawn([py, TORCH])
    line = w.stdout.readline()
    check(line.startswith("ready"), f"workload: {line!r}")
    pid = int(line.split()[1])
    rec = Recorder("-t", "gil", "-p", str(pid))
    rec.wait_ready()
    tell(w, "go")
    eq(w.stdout.readline(), "stepped\n", "the first training step")
    wait_for(lambda: "step-worker" in {n for ns in names_so_far(rec, pid).values() for n in ns},
             60, "the names recorded")
    tell(w, "stop")
    truth = json.loads(w.stdout.readline())
    eq(w.wait(60), 0, "workload exit")
    eq(rec.stop(), 0, f"record exit ({rec.stderr[-400:]})")
    check(truth["steps"] > 0, "training steps")
    check(not any(c.startswith("pt_autograd") for c in truth["threads"].values()),
          f"torch made an autograd thread: {truth['threads']}")
    tids = truth["tids"]
    names = gil_names(rec.out, pid)
    eq((names.get(tids["step-worker"]), names.get(tids["pt_worker"]),
        names.get(tids["MainThread"])), ("step-worker", "pt_worker", "MainThread"),
       f"gil_sum's threads {names}")


def test_thread_names_without_stacks_and_in_top():
    """Names need no stacks: `record --stacks none` names cpu-0 and cpu-1 in gil_sum, and
    `top -p` shows the threads' rows by their threading names (their OS names are the
    process's, python3.12)."""
    need_root()
    py = pyenv_python(12)
    if not py:
        raise Skip("no pyenv CPython 3.12")
    p = spawn([py, WORK])
    tids = json.loads(p.stdout.readline())["tids"]
    pid = tids["MainThread"]
    try:
        rec = Recorder("-t", "gil", "--stacks", "none", "-p", str(pid))
        rec.wait_ready()
        wait_for(lambda: has(rec, pid, {tids["cpu-0"]: "cpu-0", tids["cpu-1"]: "cpu-1"}), 30,
                 "the names recorded without stacks")
        eq(rec.stop(), 0, f"record exit ({rec.stderr[-400:]})")
        names = gil_names(rec.out, pid)
        eq((names.get(tids["cpu-0"]), names.get(tids["cpu-1"])), ("cpu-0", "cpu-1"),
           "gil_sum's threads")
        top = spawn([BPFSIGHT, "top", "-b", "-i", "300ms", "-t", "gil", "-p", str(pid)])
        seen = {}

        def named():
            line = top.stdout.readline()
            m = re.match(r"\s*(\d+)\s{2}(\S+)", line)  # a thread's row: its id, 2 spaces
            if m:
                seen[int(m.group(1))] = m.group(2)
            return seen.get(tids["cpu-0"]) == "cpu-0" and seen.get(tids["cpu-1"]) == "cpu-1"
        try:
            wait_for(named, 30, f"top's rows named cpu-0 and cpu-1 (rows seen: {seen})")
        finally:
            top.terminate()
        eq(top.wait(30), 0, "top's exit")
    finally:
        tell(p, "stop")
        p.wait(30)
