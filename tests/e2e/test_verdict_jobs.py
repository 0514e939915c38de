"""The verdict's first lines on real jobs attached as the README shows (`record -p`, the
default families): the claim a user needs first, for the job as a whole (docs/USAGE.md,
"Verdict"). Each job measures what it can of its own truth.

- A Python web service bound by the GIL (http.server's ThreadingHTTPServer, a thread per
  request, 8 clients): GIL-bound, for its busiest waiter and for the process with its pool of
  request threads, the handler named as what the holders ran.
- A trainer bound by its DataLoader (Debian's torch, 2 workers reading and decoding samples):
  input-bound, its wait within 10 points of the share the job measures in its `for` line,
  that line named, its workers named as the trainer's and said beside it.
- Four gloo ranks, one computing 3x as long (Debian's torch): the straggler named, the others'
  wait in all_reduce within 10 points of what each rank measures, at its line."""
import json
import os
import re
import subprocess
import time

from helpers import BPFSIGHT, Skip, alone, check, eq, need_root, run, spawn, tmpdir
from pymods import has
from test_gil import need_pyenv

# For tests/run_tests.py: about how long these tests take on CI's machine.
SECONDS = 45

HERE = os.path.dirname(os.path.abspath(__file__))
SERVICE_PY = os.path.realpath(os.path.join(HERE, "..", "workloads", "gil_service.py"))
INPUT_PY = os.path.realpath(os.path.join(HERE, "..", "workloads", "torch_input_bound.py"))
STRAGGLER_PY = os.path.realpath(os.path.join(HERE, "..", "workloads", "gloo_straggler.py"))
DEBIAN_PY = "/usr/bin/python3"


def verdict_lines(path):
    """stats' verdict block, a line per claim (--wide: no wrapping)."""
    p = run([BPFSIGHT, "stats", path, "--wide"], check=True)
    block = next((b for b in p.stdout.split("\n\n") if b.startswith("Verdict:")), "")
    rest = p.stdout.split(block, 1)[1].split("\n\n", 2)[1] if block else ""
    return block, rest.splitlines()


def test_gil_bound_service_is_claimed_for_the_process():
    need_root()
    py = need_pyenv(11)
    server = spawn([py, SERVICE_PY, "server"])
    client = None
    try:
        m = re.match(r"ready pid (\d+) port (\d+)", server.stdout.readline())
        check(m, "the server's first line")
        pid = int(m.group(1))
        client = spawn([py, SERVICE_PY, "client", m.group(2)])
        time.sleep(1)
        path = os.path.join(tmpdir(), "service.bst")
        p = run([BPFSIGHT, "record", "-p", str(pid), "-d", "3s", "-o", path], timeout=120)
        eq(p.returncode, 0, p.stderr[-600:])
        head, claims = verdict_lines(path)
        check(head.startswith("Verdict: GIL-bound: "), f"{head}\n" + "\n".join(claims))
        proc = [c for c in claims if re.match(
            rf" \* GIL +\d+\.\d% +python3\S* \(pid {pid}\): its (\d+) threads waited for the "
            r"GIL .* of their .*; (\d+) of them lived under half the recording \(a pool\)", c)]
        check(proc, "a claim for the process and its pool:\n" + "\n".join(claims))
        check(any(re.search(r"the holders were running (Handler\.do_GET|serve_one) "
                            r"\(gil_service\.py:\d+\)", c) for c in claims),
              "the handler named as the holders' code:\n" + "\n".join(claims))
    finally:
        if client:
            client.kill()
        server.kill()


@alone("the trainer's wait is compared with its own: other tests' CPU would keep it runnable "
       "inside the DataLoader (preempted there), time no stack shows and its own clock counts")
def test_input_bound_trainer_is_claimed_at_its_loop_line():
    need_root()
    if not has(DEBIAN_PY, "torch"):
        raise Skip("Debian's python3-torch is not installed (make deps)")
    loop = next(i for i, l in enumerate(open(INPUT_PY), 1) if "# LOOP:" in l)
    # Samples behind 3 ms of storage latency each: the workers mostly sleep, so the trainer's
    # wait is its pipeline's, not a loaded machine's (its step takes one core: torch's threads
    # at 1).
    job = spawn([DEBIAN_PY, INPUT_PY, "--io-ms", "3", "--item-ms", "0.2", "--batch", "32",
                 "--hidden", "1024"])
    try:
        first = json.loads(job.stdout.readline())
        pid, workers = first["pid"], first["workers"]

        def truth():
            job.stdin.write("\n")
            job.stdin.flush()
            return json.loads(job.stdout.readline())

        time.sleep(0.5)
        before = truth()
        path = os.path.join(tmpdir(), "input.bst")
        p = run([BPFSIGHT, "record", "-p", str(pid), "-d", "4s", "-o", path], timeout=120)
        eq(p.returncode, 0, p.stderr[-600:])
        after = truth()
        share = (after["wait_ns"] - before["wait_ns"]) / (after["total_ns"] - before["total_ns"])
        head, claims = verdict_lines(path)
        said = f"{head}\n" + "\n".join(claims) + f"\nthe job's own share: {share:.3f}"
        m = re.match(rf"Verdict: input-bound: the trainer, MainThread \(main thread, pid {pid}\), "
                     r"waited for its next batch (\S+ \S+) of its (\S+ \S+), at `main` "
                     rf"\(torch_input_bound\.py:{loop}\), in \d+ waits in the DataLoader", head)
        check(m, said)
        got = seconds(m.group(1)) / seconds(m.group(2))
        check(abs(got - share) <= 0.10, f"{got:.3f} against the job's {share:.3f}\n{said}")
        check(any(re.match(r" +\d+\.\d% +its 2 DataLoader workers ran on a CPU .* blocked most at "
                           r"`Samples\.__getitem__` \(torch_input_bound\.py:\d+\)", c)
                  for c in claims), said)
        rows = json.loads(run([BPFSIGHT, "stats", path, "-r", "sched_sum", "--format", "json"],
                              check=True).stdout)["reports"]["sched_sum"]
        names = {r["process"] for r in rows if r["pid"] in workers}
        eq(names, {f"DataLoader worker {i} of trainer {pid}" for i in range(2)}, said)
    finally:
        job.stdin.close()
        job.wait(timeout=30)


def seconds(text):
    """"1.56 s", "820 ms" as stats prints a duration: in seconds."""
    value, unit = text.split()
    return float(value) * {"s": 1, "ms": 1e-3, "µs": 1e-6, "ns": 1e-9}[unit]


def test_straggler_rank_is_named_with_the_others_wait():
    need_root()
    if not has(DEBIAN_PY, "torch"):
        raise Skip("Debian's python3-torch is not installed (make deps)")
    from test_hang_arrival import free_port
    reduce_line = next(i for i, l in enumerate(open(STRAGGLER_PY), 1) if "# REDUCE" in l)
    env = dict(os.environ, WORLD_SIZE="4", MASTER_ADDR="127.0.0.1",
               MASTER_PORT=str(free_port()), PYTHONUNBUFFERED="1", SLOW_RANK="1")
    ranks = [spawn([DEBIAN_PY, STRAGGLER_PY], env=dict(env, RANK=str(r), LOCAL_RANK=str(r)))
             for r in range(4)]
    try:
        pids = []
        for p in ranks:
            m = re.match(r"ready pid (\d+) rank \d", p.stdout.readline())
            check(m, "a rank's first line")
            pids.append(int(m.group(1)))

        def truth():
            for p in ranks:
                p.stdin.write("\n")
                p.stdin.flush()
            return [json.loads(p.stdout.readline()) for p in ranks]

        time.sleep(0.5)
        before = truth()
        path = os.path.join(tmpdir(), "straggler.bst")
        p = run([BPFSIGHT, "record", *sum((["-p", str(x)] for x in pids), []), "-d", "4s",
                 "-o", path], timeout=120)
        eq(p.returncode, 0, p.stderr[-600:])
        after = truth()
        share = [(b["reduce_ns"] - a["reduce_ns"]) / (b["total_ns"] - a["total_ns"])
                 for a, b in zip(before, after)]
        head, claims = verdict_lines(path)
        said = f"{head}\n" + "\n".join(claims) + "\nthe ranks' own shares: " + \
            ", ".join(f"{x:.3f}" for x in share)
        m = re.match(rf"Verdict: straggler: rank 1 \(pid {pids[1]}\): ranks 0, 2, 3 waited for it "
                     r"in torch\.distributed's all_reduce (\d+)%, (\d+)%, (\d+)% of their time at "
                     rf"`main` \(gloo_straggler\.py:{reduce_line}\); rank 1 waited (\d+)%", head)
        check(m, said)
        got = [int(m.group(i)) / 100 for i in (1, 2, 3)]
        for rank, g in zip((0, 2, 3), got):
            check(abs(g - share[rank]) <= 0.10, f"rank {rank}: {g} against {share[rank]:.3f}\n{said}")
        # the straggler's own wait is short and mostly on a CPU (gloo's transfer): below the
        # others', not compared (the issue's bound is on the waiting ranks)
        check(int(m.group(4)) / 100 < min(got) - 0.15, said)
        check(any(re.search(r"rank 1: it was blocked .* at `compute` \(gloo_straggler\.py:\d+\)", c)
                  for c in claims), said)
        rows = json.loads(run([BPFSIGHT, "stats", path, "-r", "rank_waits", "--format", "json"],
                              check=True).stdout)["reports"]["rank_waits"]
        eq([(r["rank"], r["pid"]) for r in rows], list(enumerate(pids)), said)
        for r in rows:
            if r["rank"] != 1:
                check(abs(r["wait_pct"] / 100 - share[r["rank"]]) <= 0.10, f"{r}\n{said}")
                eq((r["collective"], r["at"]),
                   ("torch.distributed's all_reduce", f"`main` (gloo_straggler.py:{reduce_line})"),
                   said)
        # gloo's progress threads wait for work in epoll_wait by design: said, never a claim
        idle = [c for c in claims if re.search(r"\(tid \d+, pid \d+\) was in system calls .*"
                                               r"epoll_wait", c)]
        check(all(not c.startswith(" *") and "by design" in c for c in idle), said)
    finally:
        for p in ranks:
            p.kill()
            p.wait()
