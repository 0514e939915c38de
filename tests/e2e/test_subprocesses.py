"""-p takes in the target's existing child processes: a CPU PyTorch job's DataLoader workers,
started before the attach, are recorded, shown by top and dumped by stacks, as the children
it starts while recording are; --no-subprocesses leaves them out (py-spy's --subprocesses is
accepted). Debian's python3.11 with torch (make deps)."""
import json
import os
import re
import shutil

import pymods
from helpers import (BPFSIGHT, Skip, check, eq, info, need_root, run, spawn, tmpdir)

# For tests/run_tests.py: about how long these tests take on CI's machine (its order).
SECONDS = 25

PY = "/usr/bin/python3.11"
LOADER = os.path.join(os.path.dirname(__file__), "..", "workloads", "torch_loader.py")


class Job:
    """The DataLoader job, its pid and its two workers'."""

    def __enter__(self):
        need_root()
        if not pymods.has(PY, "torch"):
            raise Skip(f"no torch for {PY} (apt-get install python3-torch)")
        # 10 ms between steps: the workers still make batches, without taking a core
        self.p = spawn([PY, LOADER, "--seconds", "300", "--sleep", "0.01"])
        hello = json.loads(self.p.stdout.readline())
        self.pid, self.workers = hello["pid"], hello["workers"]
        eq(len(self.workers), 2, f"two workers: {hello}")
        return self

    def __exit__(self, *exc):
        self.p.kill()
        self.p.wait(30)


def pids_in(path):
    p = run([BPFSIGHT, "dump", path])
    eq(p.returncode, 0, p.stderr)
    return {json.loads(l)["pid"] for l in p.stdout.splitlines()}


def test_record_takes_in_the_workers_started_before_the_attach():
    with Job() as job:
        d = tmpdir()
        out = os.path.join(d, "all.bst")
        p = run([BPFSIGHT, "record", "-p", str(job.pid), "-t", "sched", "-d", "2s", "-o", out],
                timeout=120)
        eq(p.returncode, 0, p.stderr[-500:])
        kids = ",".join(map(str, job.workers))
        check(f"recording pid: {job.pid} + children {kids} to" in p.stderr, p.stderr[-500:])
        eq(info(out)["target"], f"pid: {job.pid} + children {kids}", "the file's target")
        seen = pids_in(out)
        check({job.pid, *job.workers} <= seen, f"the job and its workers: {sorted(seen)}")
        # py-spy's spelling is accepted (the default); --no-subprocesses leaves them out.
        out = os.path.join(d, "sub.bst")
        p = run([BPFSIGHT, "record", "-p", str(job.pid), "--subprocesses", "-t", "sched",
                 "-d", "1s", "-o", out], timeout=120)
        eq(p.returncode, 0, p.stderr[-500:])
        check(set(job.workers) <= pids_in(out), "--subprocesses: the workers")
        out = os.path.join(d, "main.bst")
        p = run([BPFSIGHT, "record", "-p", str(job.pid), "--no-subprocesses", "-t", "sched",
                 "-d", "1s", "-o", out], timeout=120)
        eq(p.returncode, 0, p.stderr[-500:])
        eq(info(out)["target"], f"pid: {job.pid}", "--no-subprocesses: the job alone")
        eq(pids_in(out) & set(job.workers), set(), "--no-subprocesses: no worker recorded")


def test_top_shows_the_workers():
    with Job() as job:
        p = run([BPFSIGHT, "top", "-b", "-n", "2", "-i", "500ms", "-p", str(job.pid)],
                timeout=120)
        eq(p.returncode, 0, p.stderr[-500:])
        frame = [f for f in p.stdout.split("\n\n") if f.strip()][-1]
        for w in job.workers:
            check(re.search(rf"^\s*{w}\s", frame, re.M), f"worker {w}'s row: {frame}")
        p = run([BPFSIGHT, "top", "-b", "-n", "2", "-i", "500ms", "-p", str(job.pid),
                 "--no-subprocesses"], timeout=120)
        eq(p.returncode, 0, p.stderr[-500:])
        frame = [f for f in p.stdout.split("\n\n") if f.strip()][-1]
        for w in job.workers:
            check(not re.search(rf"^\s*{w}\s", frame, re.M), f"--no-subprocesses: {frame}")


def test_stacks_dumps_every_worker():
    with Job() as job:
        p = run([BPFSIGHT, "stacks", "-p", str(job.pid), "--json"], timeout=120)
        eq(p.returncode, 0, p.stderr[-500:])
        dumps = [json.loads(l) for l in p.stdout.splitlines()]
        eq([d["pid"] for d in dumps], [job.pid, *job.workers], "the job, then each worker")
        # A worker runs the DataLoader's worker loop: its Python frames name it.
        for d in dumps[1:]:
            funcs = {f.get("func") for t in d["threads"] for f in t.get("stack") or []}
            check("_worker_loop" in funcs, f"worker {d['pid']}: {sorted(filter(None, funcs))}")
        p = run([BPFSIGHT, "stacks", "-p", str(job.pid), "--no-subprocesses", "--json"],
                timeout=120)
        eq(p.returncode, 0, p.stderr[-500:])
        eq([json.loads(l)["pid"] for l in p.stdout.splitlines()], [job.pid],
           "--no-subprocesses: the job alone")
