"""top's RANK and ROLE columns, and a DataLoader's workers named in top: a CPU PyTorch job
(tests/workloads/torch_loader.py, Debian's python3 with python3-torch) started as torchrun
starts rank 1 (RANK=1, WORLD_SIZE=2 in its environment, which its two persistent DataLoader
workers inherit). top -p on the trainer shows each process by its comm, its rank, and its
part: the trainer, and "worker N of TRAINER" for its workers in pid order (read from their
stacks: the torch family's name for them, trace_model__join_pool)."""
import json
import os
import queue
import re
import threading
import time

import pymods
from helpers import BPFSIGHT, Skip, check, eq, need_root, run, spawn

# For tests/run_tests.py: about how long these tests take on CI's machine (its order).
SECONDS = 12

PY = "/usr/bin/python3"
LOADER = os.path.join(os.path.dirname(__file__), "..", "workloads", "torch_loader.py")
WIDE = dict(os.environ, COLUMNS="120")


def rows(frame):
    """{pid: {"name", "rank", "role"}} of a batch frame's process rows, cut at the headings."""
    lines = frame.splitlines()
    head = next(l for l in lines if re.match(r"\s+ID NAME", l))
    out = {}
    for line in lines[lines.index(head) + 1:]:
        m = re.match(r"\s*(\d+) (\S)", line)  # a process row: its name right after the id
        if not m:
            continue
        cells = {}
        for name in ("NAME", "RANK", "ROLE"):
            at = head.find(name)
            # text columns are left-aligned under their heading, up to the next heading
            nxt = min([i for i in (head.find(h, at + 1) for h in ("RANK", "ROLE", "CPU%"))
                       if i > at] or [len(line)])
            cells[name.lower()] = line[at:nxt].strip() if at >= 0 else None
        out[int(m.group(1))] = cells
    return out


def until_frame(args, pred, seconds):
    """(the first of top's batch frames for which PRED holds, else its last; how many were
    read): top runs until then, or SECONDS."""
    top = spawn(args, env=WIDE)
    lines = queue.Queue()
    threading.Thread(target=lambda: [lines.put(l) for l in top.stdout] + [lines.put(None)],
                     daemon=True).start()
    frame, cur, n, deadline = "", [], 0, time.monotonic() + seconds
    try:
        while time.monotonic() < deadline:
            try:
                line = lines.get(timeout=max(0.1, deadline - time.monotonic()))
            except queue.Empty:
                break
            if line is None:
                break
            if line.strip() or not cur:
                cur.append(line)
                continue
            frame, cur, n = "".join(cur), [], n + 1  # a blank line ends a frame
            if "ID NAME" in frame and pred(frame):
                break
    finally:
        top.kill()
        top.wait(30)
    check(n, f"top wrote no frame in {seconds} s: {top.stderr.read()[-500:]}")
    return frame, n


def test_trainer_workers_named_with_rank_and_role():
    need_root()
    if not pymods.has(PY, "torch"):
        raise Skip(f"no torch for {PY} (apt-get install python3-torch)")
    job = spawn([PY, LOADER, "--seconds", "300", "--sleep", "0.01"],
                env=dict(os.environ, RANK="1", WORLD_SIZE="2"))
    try:
        hello = json.loads(job.stdout.readline())
        pid, workers = hello["pid"], hello["workers"]
        eq(len(workers), 2, f"two workers: {hello}")
        # Roles come from the stacks each refresh reads: on a loaded machine the first
        # refreshes may not have read the workers' yet (failed at the second, then at the
        # sixth, in full runs), so the frames are read until one shows the three roles.
        want = {pid: {"name": "python3", "rank": "1", "role": "trainer"}}
        for n, w in enumerate(sorted(workers)):
            want[w] = {"name": "python3", "rank": "1", "role": f"worker {n} of {pid}"}
        frame, nframes = until_frame(
            [BPFSIGHT, "top", "-b", "-i", "500ms", "-p", str(pid)],
            lambda f: all(rows(f).get(k) == v for k, v in want.items()), 90)
    finally:
        job.kill()
        job.wait(30)
    got = rows(frame)
    for k, v in want.items():
        eq(got.get(k), v, f"{'the trainer' if k == pid else f'worker {k}'} after "
                          f"{nframes} refreshes: {frame}")

    # A process with neither: no RANK, no ROLE column.
    sleeper = spawn(["sleep", "30"])
    try:
        p = run([BPFSIGHT, "top", "-b", "-n", "1", "-i", "300ms", "-p", str(sleeper.pid)],
                timeout=60, env=WIDE)
    finally:
        sleeper.kill()
    eq(p.returncode, 0, p.stderr[-400:])
    check(re.search(r"ID NAME +CPU%", p.stdout) and "RANK" not in p.stdout and
          "ROLE" not in p.stdout, f"no RANK, no ROLE: {p.stdout}")
