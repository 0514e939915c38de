"""What is in flight when bpfsight arrives (docs/USAGE.md, "What was open at the edges"): a job
already blocked or hung before the recorder started, attached with `record -p`, is named by
the verdict's first line from the threads read at the recording's edges; every thread's
totals stay inside the recording; `stacks --all` leads with the hung job's story; `top -p`
shows what each thread is in now, and keeps the CPU of threads that die between two refreshes.

Each job measures its own truth: the blocked job and the ranks say when they blocked (on
CLOCK_MONOTONIC), the short-lived threads' job its own CPU time."""
import json
import os
import re
import subprocess
import threading
import time

from free_ports import free_port

from helpers import (BPFSIGHT, Recorder, Skip, check, dump, eq, info, need_root, run, spawn,
                     stats, tmpdir, wait_for)
from test_gil import need_pyenv
from test_hang import DUR_S, Job, line_of, wait_dump

# For tests/run_tests.py: about how long these tests take on CI's machine; one job per test.
SECONDS = 25
SPLIT = True

HERE = os.path.dirname(os.path.abspath(__file__))
WORKLOADS = os.path.realpath(os.path.join(HERE, "..", "workloads"))
BLOCKED_PY = os.path.join(WORKLOADS, "blocked_read.py")
GLOO_PY = os.path.join(WORKLOADS, "gloo_hang.py")
LOADER_PY = os.path.join(WORKLOADS, "torch_loader.py")
SHORT_PY = os.path.join(WORKLOADS, "short_threads.py")
DEBIAN_PY = "/usr/bin/python3"


def marked(path, tag):
    with open(path) as f:
        return next(i + 1 for i, l in enumerate(f) if l.rstrip().endswith(f"# {tag}"))


def need_torch():
    p = run([DEBIAN_PY, "-c", "import torch, torch.distributed"])
    if p.returncode:
        raise Skip("Debian's python3-torch is not installed (make deps)")


_said = {}


def record_p(pids, out, dur="3s", *opts):
    p = run([BPFSIGHT, "record", "-v", *sum((["-p", str(x)] for x in pids), []), "-d", dur,
             "-o", out, *opts], timeout=120)
    eq(p.returncode, 0, f"record -p: {p.stderr[-800:]}")
    _said[out] = "\n".join(l for l in p.stderr.splitlines() if not l.startswith("libbpf"))
    return p


def head(path):
    """The verdict's first line, as stats prints it (its words on one line), and what its
    recorder said (-v: how long each edge took), for a failure's message."""
    p = run([BPFSIGHT, "stats", path, "--wide"], check=True)
    v = next((x for x in p.stdout.split("\n\n") if x.startswith("Verdict:")), p.stdout[:600])
    edges = run([BPFSIGHT, "stats", path, "-r", "open_at_edges", "--wide", "--top", "8"]).stdout
    return " ".join(v.split()) + "\n" + _said.get(path, "")[-1200:] + "\n" + edges[-1500:]


def flat(v):
    """A message on one line: the runner shows a failure's first."""
    return v.replace("\n", " || ")


class Lines:
    """A process's output lines, collected by a thread of their own."""

    def __init__(self, p):
        self.p = p
        self.lines = []
        self.pump = threading.Thread(target=self._pump, daemon=True)
        self.pump.start()

    def _pump(self):
        for line in self.p.stdout:
            self.lines.append(line.strip())

    def wait(self, pattern, timeout=300):
        """The first line matching PATTERN. The wait is long (eight processes importing torch
        on two loaded cores took over a minute in a full run) but ends at once if the process
        exits without the line."""
        def seen():
            done = self.p.poll() is not None and not self.pump.is_alive()  # all lines read
            if any(re.fullmatch(pattern, l) for l in self.lines):
                return True
            check(not done, f"pid {self.p.pid} exited ({self.p.returncode}) before "
                  f"{pattern!r}: {self.lines[-5:]}")
            return False
        wait_for(seen, timeout, pattern)
        return next(re.fullmatch(pattern, l) for l in self.lines if re.fullmatch(pattern, l))


def test_blocked_read_named_on_arrival_and_in_top():
    """A job blocked in os.read before bpfsight starts, attached -p -d 3s: the verdict says
    blocked in read for the whole window (as long as it was, since before the start by at
    least as long as the job says it has been), with the function and line; open_at_edges
    says the same; osrt_sum and sched_sum have the read and the time off CPU over the window,
    dump the read from the start, in flight; `top -b -p` shows the read and the function in
    NOW."""
    need_root()
    py = need_pyenv(11)
    job = spawn([py, BLOCKED_PY])
    try:
        out = Lines(job)
        pid = int(out.wait(r"ready pid (\d+)").group(1))
        blocked = int(out.wait(r"blocked (\d+)").group(1))
        time.sleep(1)
        path = os.path.join(tmpdir(), "blocked.bst")
        record_p([pid], path)
        start = info(path)["start_monotonic_ns"]
        v = head(path)
        line = marked(BLOCKED_PY, "READ")
        m = re.match(r"Verdict: blocked in system calls: MainThread \(main thread, pid (\d+)\) "
                     r"was sleeping in read for the whole (\d+\.\d) s \(since at least "
                     r"(\d+\.\d) s before the recording\) in `wait_for_input` "
                     rf"\(blocked_read\.py:{line}\)\n", v)
        check(m, flat(v))
        eq(int(m.group(1)), pid, "the pid")
        check(float(m.group(2)) >= 0.9 * 3, f"the whole window (3 s): {v}")
        # "At least" never claims more than the truth (the job stamps "blocked" just before
        # its read: it went off its CPU then or, on a loaded machine, later), printed to
        # 0.05 s; and it is no guess: the job blocked at least 1 s before the recorder began.
        since, truth = float(m.group(3)), (start - blocked) / 1e9
        check(1.0 <= since <= truth + 0.06, f"since at least {since} s: the job blocked "
              f"{truth:.2f} s before the start: {v}")
        r = stats(path, "open_at_edges,osrt_sum,sched_sum")
        dur = info(path)["duration_ns"]
        # The read no probe saw begin: one call of osrt_sum, the thread's off-CPU time, both the
        # whole window, and in dump from the start, marked.
        eq([(x["name"], x["count"]) for x in r["osrt_sum"]], [("read", 1)], "osrt_sum")
        check(0.95 * dur <= r["osrt_sum"][0]["total_ns"] <= dur, f"the read: {r['osrt_sum']}")
        s = next(x for x in r["sched_sum"] if x["tid"] == pid)
        check(0.95 * dur <= s["offcpu_ns"] <= dur and s["oncpu_ns"] == 0, f"sched_sum: {s}")
        ev = [e for e in dump(path) if e["kind"] == "syscall"]
        eq(len(ev), 1, f"one read in dump: {ev}")
        eq((ev[0]["ts"], ev[0]["args"].get("in_flight"), ev[0]["args"].get("began_before_start")),
           (start, True, True), f"drawn from the start, in flight: {ev[0]}")
        check(abs(ev[0]["args"]["began_ts"] - blocked) <= 2e8,
              f"began when the job blocked ({blocked}), within 0.2 s: {ev[0]}")
        th = next(x for x in r["open_at_edges"] if x["tid"] == pid)
        eq((th["at_start"], th["at_end"], th["still"]), ("sleeping in read",) * 2 + ("blocked",),
           "the thread at both edges")
        check(th["where"] == f"`wait_for_input` (blocked_read.py:{line})", th)

        p = run([BPFSIGHT, "top", "-b", "-p", str(pid), "-d", "2"], timeout=60,
                env=dict(os.environ, COLUMNS="160"))
        eq(p.returncode, 0, p.stderr[-600:])
        rows = [l for l in p.stdout.splitlines() if re.match(rf"^ +{pid} +MainThread ", l)]
        check(rows, p.stdout[-1000:])
        check(all(re.search(rf" read: wait_for_input \(blocked_read\.py:{line}\) "
                            r"\d+(\.\d+)?s$", l) for l in rows), "\n".join(rows))
    finally:
        job.kill()


def test_calls_open_at_one_edge_are_counted_from_it():
    """A job blocked in a read of its stdin before bpfsight starts, attached -p -d 3s, given a
    byte 1 s in, then blocked in the next read to the end: osrt has both reads, the first from
    the start (begun when the job blocked, before it) to the byte, its return value 1, the
    second from the byte to the end, in flight; sched has the thread off its CPU all but the
    moment it ran. In --osrt-mode exact, which has the return value (-p's default, blocked,
    times the same sleeps without it: test_osrt_modes.py)."""
    need_root()
    py = need_pyenv(11)
    job = spawn([py, BLOCKED_PY, "--stdin"])
    try:
        out = Lines(job)
        pid = int(out.wait(r"ready pid (\d+)").group(1))
        blocked = int(out.wait(r"blocked (\d+)").group(1))
        time.sleep(0.5)
        rec = Recorder("-p", str(pid), "-d", "3s", "--osrt-mode", "exact",
                       out=os.path.join(tmpdir(), "one_edge.bst"))
        rec.wait_ready()
        time.sleep(1)
        job.stdin.write("x")  # one byte: one read returns
        job.stdin.flush()
        woke = int(out.wait(r"woke (\d+)").group(1))
        stamps = lambda: [int(l.split()[1]) for l in out.lines if l.startswith("blocked ")]
        wait_for(lambda: len(stamps()) >= 2, 60, "the job blocked again")
        again = stamps()[1]  # right before the second read
        eq(rec.wait(60), 0, rec.stderr[-800:])
        path = rec.out
        start, dur = info(path)["start_monotonic_ns"], info(path)["duration_ns"]
        reads = sorted((e for e in dump(path) if e["kind"] == "syscall" and e["name"] == "read"),
                       key=lambda e: e["ts"])
        eq(len(reads), 2, f"two reads: {reads}")
        first, second = reads
        eq((first["ts"], first["args"].get("began_before_start"), first["args"].get("ret")),
           (start, True, 1), f"the first read, from the start, returned 1: {first}")
        check(abs(first["args"]["began_ts"] - blocked) <= 2e8,
              f"began when the job blocked ({blocked}), within 0.2 s: {first}")
        # The job's own clock reads (CLOCK_MONOTONIC, the records'): the first read returned
        # before it stamped "woke", the second began after it stamped "blocked" again; how
        # long after is the scheduler's (a loaded machine preempts the job between them).
        check(first["ts"] + first["dur"] <= woke,
              f"ended before the job woke ({woke}): {first}")
        check(second["args"].get("in_flight") and second["ts"] + second["dur"] == start + dur
              and again <= second["ts"],
              f"the second read, from the byte ({again}) to the end, in flight: {second}")
        s = next(x for x in stats(path, "sched_sum")["sched_sum"] if x["tid"] == pid)
        check(0.95 * dur <= s["offcpu_ns"] <= dur, f"off its CPU the window but a moment: {s}")
    finally:
        job.kill()


def test_dataloader_totals_inside_the_window():
    """A real DataLoader job (Debian's torch, 2 workers), its threads asleep since before the
    attach, recorded -p -d 4s: no thread's on + off CPU, system calls (osrt, per thread) or GIL
    waits pass the recording's duration (+1%), nor does any "of its" time in the verdict."""
    need_root()
    need_torch()
    job = subprocess.Popen([DEBIAN_PY, LOADER_PY, "--seconds", "60"], stdin=subprocess.PIPE,
                           stdout=subprocess.PIPE, text=True)
    try:
        line = job.stdout.readline()
        m = re.search(r'"pid": (\d+)', line)
        check(m, f"the loader's line: {line!r}")
        workers = sorted(json.loads(line)["workers"])
        time.sleep(1)
        path = os.path.join(tmpdir(), "loader.bst")
        record_p([int(m.group(1))], path, "4s")
        dur = info(path)["duration_ns"]
        top = dur * 1.01
        r = stats(path, "sched_sum,gil_sum")
        check(len(r["sched_sum"]) >= 7, f"the job's threads: {r['sched_sum']}")
        # The workers are named as the trainer's DataLoader workers (their main threads' frames
        # at the edges are torch's worker loop), numbered by pid as torch starts them.
        trainer = int(m.group(1))
        for t in r["sched_sum"]:
            want = (f"DataLoader worker {workers.index(t['pid'])} of trainer {trainer}"
                    if t["pid"] in workers else "python3")
            eq(t["process"], want, f"thread {t['tid']}'s process")
        for t in r["sched_sum"]:
            check(t["oncpu_ns"] + t["offcpu_ns"] <= top,
                  f"{t['thread_name']} {t['tid']}: on {t['oncpu_ns']} + off {t['offcpu_ns']} "
                  f"in {dur}")
        # A thread there at both edges is accounted the whole window: a sleep open at the
        # start or the end is carried in (sched's start and stop iterators), a slice running
        # at the end is all that may be missing.
        edges = json.loads(run([BPFSIGHT, "stats", path, "-r", "open_at_edges", "--top", "0",
                                "--format", "json"], check=True).stdout)["reports"]["open_at_edges"]
        both = {e["tid"] for e in edges if e["at_start"] and e["at_end"]}
        check(len(both) >= 7, f"threads read at both edges: {edges}")
        for t in r["sched_sum"]:
            if t["tid"] in both:
                check(t["oncpu_ns"] + t["offcpu_ns"] >= dur * 0.95,
                      f"{t['thread_name']} {t['tid']}: on {t['oncpu_ns']} + off "
                      f"{t['offcpu_ns']} of {dur}")
        for t in r["gil_sum"]:
            check(t["wait_total_ns"] <= top, f"GIL waits of {t['tid']}: {t}")
        for t in r["sched_sum"]:
            o = run([BPFSIGHT, "stats", path, "-r", "osrt_sum", "--tid", str(t["tid"]),
                     "--format", "json"], check=True)
            total = sum(x["total_ns"] for x in json.loads(o.stdout)["reports"]["osrt_sum"])
            check(total <= top, f"system calls of {t['tid']}: {total} in {dur}")
        verdict = run([BPFSIGHT, "stats", path, "--wide"], check=True).stdout.split("**")[0]
        for of in re.findall(r"of its (\d+\.\d+) s", verdict):
            check(float(of) * 1e9 <= top, f"'of its {of} s' in a {dur / 1e9:.3f} s recording: "
                  f"{verdict}")
        # The report names a worker whole wherever it names one: the GIL chart's legend said
        # "pid W (DataLoader worker 1 of trainer )", the trainer's pid cut off (issue 83).
        page = os.path.join(tmpdir(), "loader.html")
        run([BPFSIGHT, "report", path, "-o", page], check=True)
        with open(page) as f:
            html = f.read()
        named = re.findall(r"DataLoader worker \d of trainer (\d*)", html)
        check(named and all(x == str(trainer) for x in named),
              f"the workers' names in the report: {sorted(set(named))}")
        for i, w in enumerate(workers):
            if any(t["pid"] == w for t in r["gil_sum"]):  # in the GIL chart's legend
                check(f"pid {w} (DataLoader worker {i} of trainer {trainer})" in html,
                      f"worker {w}'s GIL series: {re.findall(r'pid {w} [(][^)]*', html)}")
    finally:
        job.kill()
        job.wait()


def test_cpu_standin_hung_before_the_recorder():
    """Four ranks on the CPU NCCL stand-in, rank 2 stuck in load_batch() before collective 30,
    the others in ncclAllReduce, all before bpfsight starts; `record -p` x4 -d 3s: the verdict
    names the hang, the waiters' call and line, rank 2, its function and line and state."""
    job = Job({2: "read"})
    try:
        pids = job.start_ranks()
        open(job.go, "w").close()
        job.stall_ns(2)
        time.sleep(1)
        path = os.path.join(tmpdir(), "late.bst")
        record_p(pids, path)
        v = head(path)
        check(re.match(r"Verdict: hang: ranks 0, 1, 3 wait in ncclAllReduce at `main` "
                       rf"\(hang_rank\.py:\d+\) for the whole \d\.\d s, entered before the "
                       r"recording began; rank 2 is elsewhere: `load_batch` "
                       rf"\(hang_rank\.py:{line_of('READ')}\), sleeping in read for at least "
                       r"\d+\.\d s\n", v), flat(v))
    finally:
        job.kill()


class Gloo:
    """A 4-rank torch.distributed job on gloo (tests/workloads/gloo_hang.py), its ranks started
    as torchrun starts them; with GO, they wait for that file after their process group is up."""

    def __init__(self, go=None):
        self.port = free_port()
        env = dict(os.environ, WORLD_SIZE="4", MASTER_ADDR="127.0.0.1",
                   MASTER_PORT=str(self.port), PYTHONUNBUFFERED="1")
        if go:
            env["HANG_GO"] = go
        self.procs = [spawn([DEBIAN_PY, GLOO_PY], env=dict(env, RANK=str(r), LOCAL_RANK=str(r)))
                      for r in range(4)]
        self.out = [Lines(p) for p in self.procs]

    def pids(self):
        return [int(o.wait(r"ready pid (\d+) rank \d").group(1)) for o in self.out]

    def stalled(self):
        return int(self.out[2].wait(r"stall 2 (\d+)").group(1))

    def kill(self):
        for p in self.procs:
            p.kill()
            p.wait()


def test_gloo_hang_on_arrival_trigger_and_stacks():
    """torch.distributed on gloo, rank 2 stuck in load_next_shard(), the others in all_reduce;
    a second job running beside it. Attached late (-p x4 -d 3s), the verdict names the hang;
    `--trigger hang:3s` started before the hang dumps a window whose verdict says the same;
    the first 25 lines of `stacks --all` hold the answer, the other job's ranks kept apart."""
    need_root()
    need_torch()
    go = os.path.join(tmpdir(), "go")
    job, other = Gloo(go), Gloo()
    try:
        pids = job.pids()
        other_pids = other.pids()
        rec = Recorder("--flight-recorder=30s", f"--trigger=hang:{DUR_S}s",
                       *sum((["-p", str(p)] for p in pids), []),
                       out=os.path.join(tmpdir(), "fr.bst"))
        rec.wait_ready()
        open(go, "w").close()
        job.stalled()
        other.stalled()
        shard, reduce = marked(GLOO_PY, "SHARD"), marked(GLOO_PY, "REDUCE")
        want = (r"Verdict: hang: ranks 0, 1, 3 wait in torch\.distributed's all_reduce at "
                rf"`main` \(gloo_hang\.py:{reduce}\) ")
        elsewhere = (r"rank 2 is elsewhere: `load_next_shard` "
                     rf"\(gloo_hang\.py:{shard}\), sleeping in read for ")
        dump = wait_dump(rec)
        eq(rec.stop(), 0, "the recorder")
        v = head(dump)
        check(re.match(want, v) and re.search(elsewhere, v), f"the trigger's dump: {flat(v)}")

        path = os.path.join(tmpdir(), "late.bst")
        record_p(pids, path)
        v = head(path)
        check(re.match(want + r"for the whole \d\.\d s, entered before the recording began; " +
                       elsewhere + r"at least \d+\.\d s\n", v), f"late -p: {flat(v)}")

        p = run([BPFSIGHT, "stacks", "--all"], check=True, timeout=120)
        # Other jobs on the machine (other tests' ranks) may be listed too: each is its own.
        sections = {int(m.group(1)): sec for sec in re.split(r"(?m)^(?=Job )", p.stdout)
                    if (m := re.match(r"Job 127\.0\.0\.1:(\d+):", sec))}
        for port, own, others in ((job.port, pids, other_pids), (other.port, other_pids, pids)):
            check(port in sections, f"job {port} has a heading: {p.stdout[:2000]}")
            sec = sections[port]
            check(not any(re.search(rf"\b{x}\b", sec) for x in others),
                  f"the other job's ranks kept apart: {sec}")
        # The job's first screen (30 lines from its heading) holds the whole answer.
        first = "\n".join(sections[job.port].split("\n")[:30])
        check(re.search(r"^3 threads of ranks 0, 1, 3 \(pids [\d, ]+\): sleeping in futex, in "
                        r"torch\.distributed's all_reduce$", first, re.M), first)
        check(f"main ({GLOO_PY}:{reduce})" in first, first)
        check(re.search(rf"^rank 2 \(pid {pids[2]}\), thread {pids[2]} \"MainThread\": "
                        r"sleeping in read for \d+\.\d s$", first, re.M), first)
        check(f"load_next_shard ({GLOO_PY}:{shard})" in first, first)
    finally:
        job.kill()
        other.kill()


def test_sched_counts_the_first_and_last_slice_of_a_short_thread():
    """Threads of 2 ms of CPU each, started and joined one after the other for 2 s, recorded
    -p with sched over the whole run: sched_sum's on-CPU time, summed over the threads, is the
    CPU time the job measured of its own (process_time) within 10%. A thread's slot was made
    at its first switch-out, so its first run slice was lost, and its last one, ended by its
    exit, was never written: most of such a thread's life (1.53 s of 2.02 then)."""
    need_root()
    py = need_pyenv(11)
    go = os.path.join(tmpdir(), "go")
    job = spawn([py, SHORT_PY, go, "2"])
    try:
        out = Lines(job)
        pid = int(out.wait(r"ready pid (\d+)").group(1))
        rec = Recorder("-t", "sched", "-p", str(pid), "-d", "4s",
                       out=os.path.join(tmpdir(), "short.bst"))
        rec.wait_ready()
        open(go, "w").close()
        m = out.wait(r"cpu \d+\.\d threads (\d+) seconds (\d+\.\d+)", 30)
        eq(rec.wait(60), 0, rec.stderr[-800:])
        truth = float(m.group(2)) * 1e9
        rows = stats(rec.out, "sched_sum")["sched_sum"]
        check(len(rows) >= int(m.group(1)) // 2, f"{len(rows)} threads of {m.group(1)}")
        seen = sum(r["oncpu_ns"] for r in rows)
        check(0.9 * truth <= seen <= 1.1 * truth,
              f"on-CPU {seen / 1e9:.3f} s against the job's own {truth / 1e9:.3f} s")
    finally:
        job.kill()


def test_top_keeps_the_cpu_of_threads_that_die_between_refreshes():
    """Threads of 2 ms each, born and dead between two refreshes: top -b -p's frames add up to
    the CPU time the job measured of its own (process_time over its run of about 4 s), not only its
    main thread's."""
    need_root()
    py = need_pyenv(11)
    go = os.path.join(tmpdir(), "go")
    job = spawn([py, SHORT_PY, go, "4"])
    try:
        out = Lines(job)
        pid = int(out.wait(r"ready pid (\d+)").group(1))
        top = subprocess.Popen([BPFSIGHT, "top", "-b", "-p", str(pid), "-d", "7"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               env=dict(os.environ, COLUMNS="160"))
        lines = Lines(top)
        wait_for(lambda: any(re.match(r"^top - ", l) for l in lines.lines), 60, "top's first "
                 "frame")
        open(go, "w").close()
        own = float(out.wait(r"cpu \d+\.\d threads \d+ seconds (\d+\.\d+)", 30).group(1))
        top.wait(60)
        frames = [float(m.group(1)) for l in lines.lines
                  if (m := re.match(rf"^{pid} +python3\S* +(\d+\.\d)", l))]
        check(len(frames) >= 5, f"top's frames: {lines.lines[-20:]}")
        # A frame is a second (-i's default): their sum is the CPU seconds top saw, x100. A
        # thread's exit may reach top a frame late on a loaded machine: the sum, not a frame.
        seen, truth = sum(frames) / 100, own
        check(0.8 * truth <= seen <= 1.2 * truth,
              f"top's process CPU% {frames}: {seen:.2f} CPU s against the job's own "
              f"{truth:.2f}")
    finally:
        job.kill()


FORKER = """
import os, sys, time
print(os.getpid(), flush=True)
time.sleep(float(sys.argv[1]))
for _ in range(300):
    if os.fork() == 0:
        time.sleep(60)
        os._exit(0)
print("forked", flush=True)
time.sleep(60)
"""


def forked_job(env=None):
    """FORKER's job, its children forked: (the job, its pid, the children's pids)."""
    job = spawn(["python3", "-c", FORKER, "1.5"], env=env)
    pid = int(job.stdout.readline())
    return job, pid


def children(pid):
    kids = {int(x) for x in subprocess.run(["pgrep", "-P", str(pid)], capture_output=True,
                                           text=True).stdout.split()}
    eq(len(kids), 300, "the job's children alive")
    return kids


def check_said(snaps, job_pids, stderr, what):
    """Every process of a snapshot of JOB_PIDS (301) is read or said in SNAPS (its process_state
    events), the 45 past the 256th for the cap, and the recorder's stderr says how many it left
    (WHAT: its words for the snapshot). Returns the pids read."""
    read = {e["pid"] for e in snaps if "error" not in e["args"]}
    said = {e["pid"] for e in snaps if "error" in e["args"]}
    eq(read | said, job_pids, "every process of the job read, or said")
    why = [e["args"]["error"] for e in snaps if "error" in e["args"]]
    # past the 256th, the cap; before it, a loaded machine may spend the time budget
    eq(sum(w == "not read: a snapshot reads 256 processes" for w in why), 45,
       "the processes past the 256th")
    late = 256 - len(read)
    eq(sum(w.startswith("not read: the snapshot's 2 s") for w in why), late,
       f"the others not read ran out of time: {set(why)}")
    warn = (f"warning: {what}: {45 + late} of 301 processes not read (45 past the 256 a "
            f"snapshot reads, {late} after its 2 s were spent): each is a process_state event "
            "with the reason")
    check(warn in stderr, f"said on stderr: {warn!r} in {stderr[-1200:]}")
    return read


def test_a_snapshot_of_more_processes_than_it_reads_says_which():
    """A job of 301 processes at the recording's end (a parent that forked 300 children while
    recorded): a snapshot reads 256, and each of the other 45 is said, not read and why, in the
    file and on stderr; the 45 were dropped without a word."""
    need_root()
    job, pid = forked_job()
    try:
        # Stopped once every child is forked: with -d 4s, a loaded machine's forks (and
        # attach) ran past the recording's end, whose snapshot then had fewer than 301.
        r = Recorder("-p", str(pid), "-t", "osrt", "-v")
        eq(job.stdout.readline().strip(), "forked", "the job's children")
        r.wait_ready()
        eq(r.stop(), 0, r.stderr[-600:])
        kids = children(pid)
        # the end's: the start's has the children forked while the recorder attached too
        snaps = [e for e in dump(r.out) if e["kind"] == "process_state" and
                 e["args"].get("edge") == "end"]
        read = check_said(snaps, kids | {pid}, r.stderr, "the job at the recording's end")
        check(re.search(rf"the job at the recording's end: {len(read)} of 301 processes read "
                        r"in \d+ ms", r.stderr), f"-v's line: {r.stderr[-1200:]}")
    finally:
        subprocess.run(["pkill", "-KILL", "-P", str(job.pid)])
        job.kill()
        job.wait()


def test_a_hang_snapshot_of_more_processes_than_it_reads_says_which():
    """The hang trigger's snapshot of a job of 301 processes (ranks: RANK in their environment,
    none running): 256 read, each of the other 45 said in the dump, not read and why, and the
    recorder's lines say how many it read and how many it left."""
    need_root()
    job, pid = forked_job(dict(os.environ, RANK="0"))
    try:
        rec = Recorder("--flight-recorder=30s", "--trigger=hang:2s", "-p", str(pid), "-t", "osrt",
                       out=os.path.join(tmpdir(), "fr.bst"))
        rec.wait_ready()
        eq(job.stdout.readline().strip(), "forked", "the job's children")
        path = wait_dump(rec)
        eq(rec.stop(), 0, "the recorder")
        kids = children(pid)
        snaps = [e for e in dump(path) if e["kind"] == "process_state"]
        read = check_said(snaps, kids | {pid}, rec.stderr,
                          "the hang trigger's snapshot of the job")
        check(re.search(rf"flight recorder: hang:2s: 301 ranks stopped: .*: 0 calls in flight, "
                        rf"{len(read)} of 301 processes read in \d+ ms", rec.stderr),
              f"the snapshot's line: {rec.stderr[-1200:]}")
    finally:
        subprocess.run(["pkill", "-KILL", "-P", str(job.pid)])
        job.kill()
        job.wait()
