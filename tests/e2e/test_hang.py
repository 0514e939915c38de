"""A hung job, answered from outside: --trigger hang:DUR dumps the flight recorder's window with
the calls still in flight and every thread of the job where it is; stats opens with the verdict
(who waits in which collective, who never came and where it is instead); `bpfsight stacks`
over the processes of a job already hung groups the threads and names the odd ones out.

The job: four ranks of tests/workloads/nccl_cpu/hang_rank.py, Python processes calling the CPU
NCCL test library through ctypes (a barrier per collective), each making ncclAllReduce after
ncclAllReduce; a rank told to stalls before collective 30 in a function of its own (blocked in
read, asking for the GIL a spinning thread holds, blocked on a lock another thread holds), so
the three others wait in collective 30. The rank says when it stalled, on the job's own clock
(CLOCK_MONOTONIC), which the dump's window end is measured against."""
import json
import os
import re
import signal
import subprocess
import threading

from helpers import (BPFSIGHT, Recorder, Skip, check, eq, info, need_root, run, stats, tmpdir,
                     wait_for, workload)
from test_gil import need_pyenv

# For tests/run_tests.py: about how long these tests take on CI's machine; one job per test.
SECONDS = 20
SPLIT = True

HERE = os.path.dirname(os.path.abspath(__file__))
RANK_PY = os.path.realpath(os.path.join(HERE, "..", "workloads", "nccl_cpu", "hang_rank.py"))
JOB_PY = os.path.realpath(os.path.join(HERE, "..", "workloads", "nccl_cpu", "hang_job.py"))
LIB = workload("nccl_cpu/libnccl.so.2")
HANG_AT = 30
DUR_S = 3


def line_of(tag):
    with open(RANK_PY) as f:
        return next(i + 1 for i, l in enumerate(f) if l.rstrip().endswith(f"# {tag}"))


class Job:
    """Ranks RANKS of a 4-rank job (each a process; STALLS: {rank: kind}), started directly
    (-p) or by hang_job.py under a recorder (launch mode); they wait for the go file."""

    def __init__(self, stalls, name=None, at=HANG_AT, step_ms=0, spin=False):
        need_root()
        if not os.path.exists(LIB):
            raise Skip(f"{LIB} not built (make test-build)")
        self.py = need_pyenv(11)
        self.dir = tmpdir()
        self.go = os.path.join(self.dir, "go")
        kinds = list(stalls.items())
        self.env = dict(os.environ, NCCL_CPU_LIB=LIB, WORLD_SIZE="4", HANG_GO=self.go,
                        HANG_AT=str(at), HANG_STEP_MS=str(step_ms), HANG_JOB=name or f"{os.getpid()}-{id(self)}",
                        HANG_RANK=str(kinds[0][0]), HANG_KIND=kinds[0][1],
                        HANG_ALSO=",".join(f"{r}:{k}" for r, k in kinds[1:]),
                        PYTHONUNBUFFERED="1", NCCL_CPU_SPIN="1" if spin else "0")
        self.lines = []
        self.procs = []

    def read(self, f):
        """Collect a process's output lines (its own thread)."""
        def pump():
            for line in f:
                self.lines.append(line.strip())
        threading.Thread(target=pump, daemon=True).start()

    def start_ranks(self):
        for r in range(4):
            p = subprocess.Popen([self.py, RANK_PY], env=dict(self.env, RANK=str(r),
                                                              LOCAL_RANK=str(r)),
                                 stdout=subprocess.PIPE, text=True)
            self.procs.append(p)
            self.read(p.stdout)
        return self.wait_ready()

    def wait_ready(self, ranks=range(4)):
        wait_for(lambda: all(self.pid(r) for r in ranks), 30, "ranks ready")
        return [self.pid(r) for r in ranks]

    def pid(self, rank):
        for l in self.lines:
            m = re.fullmatch(rf"ready pid (\d+) rank {rank}", l)
            if m:
                return int(m.group(1))
        return None

    def stall_ns(self, rank):
        wait_for(lambda: any(l.startswith(f"stall {rank} ") for l in self.lines), 30,
                 f"rank {rank} stalls")
        return int(next(l for l in self.lines if l.startswith(f"stall {rank} ")).split()[2])

    def kill(self):
        """Every rank (a launcher's too: the ranks that stalled would sleep an hour), then the
        processes started here."""
        for l in list(self.lines):
            m = re.fullmatch(r"ready pid (\d+) rank \d+", l)
            if m:
                try:
                    os.kill(int(m.group(1)), signal.SIGKILL)
                except ProcessLookupError:
                    pass
        for p in self.procs:
            p.kill()
            p.wait()


    def entered(self, ranks):
        """Wait until each of RANKS called collective HANG_AT."""
        wait_for(lambda: all(f"enter {r} {HANG_AT}" in self.lines for r in ranks), 30,
                 f"ranks {list(ranks)} in collective {HANG_AT}")


def wait_dump(rec):
    wait_for(lambda: "flight recorder: wrote" in rec.stderr, 30, f"the dump: {rec.stderr[-600:]}")
    return re.search(r"flight recorder: wrote (\S+):", rec.stderr).group(1)


def window_end(path):
    return int(re.search(r"window_end_ns=(\d+)", info(path)["options"]).group(1))


def verdict(path):
    p = run([BPFSIGHT, "stats", path, "--wide"], check=True)
    # the first line, but the losses said above it (a loaded machine's missed switches)
    head = next((l for l in p.stdout.split("\n") if l and not l.startswith("WARNING: ")), "")
    check(head.startswith("Verdict: hang: "), f"the verdict opens stats: {p.stdout[:400]}")
    return head[len("Verdict: "):], p.stdout


def rows(path):
    return {(r["rank"], r["comm"]): r for r in stats(path, "nccl_hang")["nccl_hang"]}


def hang_recorder(job, pids):
    """-t nccl on the ranks PIDS with the hang trigger (--trigger=hang:DUR_S), ready; then the
    ranks told to go."""
    rec = Recorder("-t", "nccl", "--flight-recorder=30s", f"--trigger=hang:{DUR_S}s",
                   *sum((["-p", str(p)] for p in pids), []), out=os.path.join(job.dir, "fr.bst"))
    rec.wait_ready()
    open(job.go, "w").close()
    return rec


def test_hang_read_dump_in_time_verdict_and_stacks_of_the_hung_job():
    """-p on the four ranks; rank 2 blocks in read in load_batch(). The dump comes within DUR
    + 1 s of the stall; stats names rank 2, collective 30, load_batch and its line, and the
    three others as waiting in it. Then, the recorder gone, `bpfsight stacks` over the four
    processes groups the three waiters in ncclAllReduce and names rank 2 the odd one out."""
    job = Job({2: "read"})
    try:
        pids = job.start_ranks()
        rec = hang_recorder(job, pids)
        stall = job.stall_ns(2)
        dump = wait_dump(rec)
        end = window_end(dump)
        # The waiters entered collective 30 as rank 2 said it stalled (both once #29 ended):
        # a dump is DUR after their entry, which may precede the rank's line by a moment.
        check((DUR_S - 0.2) * 1e9 <= end - stall <= (DUR_S + 1) * 1e9,
              f"the dump {(end - stall) / 1e9:.2f} s after the stall (DUR {DUR_S} s + 1 s)")
        head, _ = verdict(dump)
        want = (f"hang: ranks 0, 1, 3 wait in ncclAllReduce #{HANG_AT} (communicator ")
        check(head.startswith(want), f"{head!r} starts {want!r}")
        check(f"; rank 2 never entered it: it is in `load_batch` (hang_rank.py:"
              f"{line_of('READ')}), sleeping in read for " in head, head)
        r = rows(dump)
        comm = next(c for (k, c) in r if k == 0)
        for k in (0, 1, 3):
            eq((r[(k, comm)]["entered"], r[(k, comm)]["in_it"], r[(k, comm)]["left"]),
               (HANG_AT, "yes", HANG_AT - 1), f"rank {k}: in collective {HANG_AT}")
        eq((r[(2, comm)]["entered"], r[(2, comm)]["in_it"], r[(2, comm)]["left"]),
           (HANG_AT - 1, "no", HANG_AT - 1), "rank 2: left the one before and stopped")
        eq(r[(2, comm)]["where"], f"`load_batch` (hang_rank.py:{line_of('READ')})", "where")
        eq(rec.stop(), 0, "the recorder")

        p = run([BPFSIGHT, "stacks", *sum((["-p", str(p)] for p in pids), [])], check=True)
        out = p.stdout
        m = re.search(r"^3 threads of ranks 0, 1, 3 \(pids ([\d, ]+)\): sleeping in futex, in "
                      r"ncclAllReduce$", out, re.M)
        check(m, f"the three waiters grouped: {out[:1500]}")
        eq(sorted(int(x) for x in m.group(1).split(", ")), sorted(pids[:2] + pids[3:]), "pids")
        check(re.search(rf"^rank 2 \(pid {pids[2]}\), thread {pids[2]} \"MainThread\": "
                        r"sleeping in read for \d+\.\d s$", out, re.M),
              f"rank 2, the odd one out: {out}")
        check(f"load_batch ({RANK_PY}:{line_of('READ')})" in out.split("odd one")[-1], out)
        # --json: each thread's call under the key the nccl family gives (stack_call_key)
        p = run([BPFSIGHT, "stacks", "--json", *sum((["-p", str(p)] for p in pids), [])],
                check=True)
        calls = {o["pid"]: {t["tid"]: t["nccl_call"] for t in o["threads"]}
                 for o in map(json.loads, p.stdout.splitlines())}
        eq({pid: calls[pid][pid] for pid in pids},
           {pid: None if k == 2 else "ncclAllReduce" for k, pid in enumerate(pids)},
           "each rank's main thread's nccl_call")
    finally:
        job.kill()


def test_hang_gil_and_lock_per_host_dumps_merged():
    """Two "hosts" (two recorders in launch mode, the second's wall clock 7 ms off), each a
    launcher of two ranks: rank 1 asks for the GIL in wait_turn() while its thread "prep"
    spins holding it, rank 2 blocks in futex in take_lock() on a lock thread "holder" holds.
    Each host dumps; merged, the verdict names ranks 0 and 3 waiting in collective 30, rank 1
    with the GIL's holder and its line, rank 2 blocked in futex at its line."""
    job = Job({1: "gil", 2: "lock"})
    recs = []
    try:
        for host, (ranks, shift) in enumerate((("0,1", "0"), ("2,3", "7000000"))):
            env = dict(job.env, BPFSIGHT_TEST_CLOCK_SHIFT_NS=shift)
            rec = subprocess.Popen(
                [BPFSIGHT, "record", "-t", "nccl", "--flight-recorder=30s",
                 f"--trigger=hang:{DUR_S}s", "-o", os.path.join(job.dir, f"host{host}.bst"),
                 "--", job.py, JOB_PY, ranks], env=env, stdout=subprocess.PIPE,
                stderr=subprocess.PIPE, text=True)
            recs.append(rec)
            job.procs.append(rec)
            job.read(rec.stdout)
        job.wait_ready()
        open(job.go, "w").close()
        job.stall_ns(1)
        job.stall_ns(2)
        dumps = [os.path.join(job.dir, f"host{h}-1.bst") for h in (0, 1)]
        wait_for(lambda: all(os.path.exists(d) for d in dumps), 30, "both hosts' dumps")
        for rec in recs:  # the dumps are whole once said: the recorders' stop writes nothing
            rec.send_signal(signal.SIGINT)
        for rec in recs:
            rec.wait(60)
        merged = os.path.join(job.dir, "job.bst")
        run([BPFSIGHT, "merge", "-o", merged, *dumps], check=True)
        head, out = verdict(merged)
        check(head.startswith(f"hang: ranks 0, 3 wait in ncclAllReduce #{HANG_AT} "), head)
        check(f"; rank 1 never entered it: it waits for the GIL in `wait_turn` (hang_rank.py:"
              f"{line_of('TURN')}) for " in head, head)
        # A spinning thread may be caught in the kernel (an interrupt, a fault, its
        # preemption under load): the verdict says so, and still names its line.
        check(re.search(rf"held by thread \d+ \"prep\", running (\(in the kernel\) )?in `spin` "
                        rf"\(hang_rank\.py:({line_of('SPIN')}|{line_of('SPIN') + 1})\)", head),
              head)
        check(re.search(rf"rank 2 @ \S+ never entered it either: it is in `take_lock` "
                        rf"\(hang_rank\.py:{line_of('LOCK')}\), sleeping in futex for", out),
              out[:2000])
    finally:
        job.kill()


def test_hang_window_after_the_communicators_creation():
    """A window (2 s) that no longer holds the communicator's creation nor its first
    collectives (rank 2 stalls before collective 300, each a step of 5 ms after the last): the
    dump begins with the communicator as its creation said it and the number of its collectives
    before the window, so the verdict says #300 with its unique id, and the dump's collectives
    end at #299 on every rank."""
    at = 300
    job = Job({2: "read"}, at=at, step_ms=5)
    try:
        pids = job.start_ranks()
        rec = Recorder("-t", "nccl", "--flight-recorder=2s", "--trigger=hang:1s",
                       *sum((["-p", str(p)] for p in pids), []),
                       out=os.path.join(job.dir, "fr.bst"))
        rec.wait_ready()
        open(job.go, "w").close()
        stall = job.stall_ns(2)
        dump = wait_dump(rec)
        start = int(re.search(r"window_start_ns=(\d+)", info(dump)["options"]).group(1))
        check(start > stall - 1.5e9, "the window begins after the creation (1.5 s of steps)")
        head, _ = verdict(dump)
        check(head.startswith(f"hang: ranks 0, 1, 3 wait in ncclAllReduce #{at} (communicator ")
              and "its id unseen" not in head, head)
        seqs = {}
        for l in run([BPFSIGHT, "dump", dump], check=True).stdout.splitlines():
            e = json.loads(l)
            if e["kind"] == "nccl_api" and not e["args"].get("in_flight"):
                seqs.setdefault(e["pid"], []).append(e["args"]["seq"])
                eq(e["args"].get("rank"), pids.index(e["pid"]), "each call's rank")
        for p in pids:
            got = seqs.get(p, [])
            check(got and got[-1] == at - 1 and got[0] > 0 and got == list(range(got[0], at)),
                  f"rank {pids.index(p)} (pid {p})'s collectives in the window: {got[:3]}..."
                  f"{got[-3:]}; the ranks': { {pids.index(q): len(v) for q, v in seqs.items()} }; "
                  f"window from {start}, rank 2 stalled at {stall}; the recorder said: "
                  f"{rec.stderr[-1500:]}")
        rec.stop()
    finally:
        job.kill()


def test_hang_bad_trigger_is_refused():
    need_root()
    for arg, want in (("hang:", "use hang:DUR"), ("hang:10ms", "at least 100ms"),
                      ("hang:xyz", "use hang:DUR")):
        p = run([BPFSIGHT, "record", "--flight-recorder=10s", f"--trigger={arg}", "-o",
                 os.path.join(tmpdir(), "x.bst"), "--", "true"])
        check(p.returncode != 0 and want in p.stderr, f"{arg}: {p.returncode} {p.stderr}")
    p = run([BPFSIGHT, "record", "--trigger=hang:5s", "-o", os.path.join(tmpdir(), "x.bst"),
             "--", "true"])
    check(p.returncode != 0 and "needs --flight-recorder" in p.stderr, p.stderr)


def test_polling_ranks_hung_before_the_recorder_are_a_hang_on_arrival():
    """NCCL's host threads poll their GPU's progress: the waiting ranks run inside ncclAllReduce
    (NCCL_CPU_SPIN=1), never asleep, their communicator made before bpfsight came. Attached to
    the four ranks after the hang with the defaults (-p x4 -d 3s): the verdict opens with the
    hang, the three ranks in ncclAllReduce at their line and rank 2 in load_batch, the ranks
    read from RANK in each process's environment (as torchrun sets it); no collective done
    while it recorded."""
    job = Job({2: "read"}, spin=True)
    try:
        pids = job.start_ranks()
        open(job.go, "w").close()
        job.stall_ns(2)
        job.entered([0, 1, 3])
        out = os.path.join(job.dir, "late.bst")
        p = run([BPFSIGHT, "record", *sum((["-p", str(p)] for p in pids), []), "-d", "3s",
                 "-o", out], timeout=120)
        eq(p.returncode, 0, f"record -p the ranks ({p.stderr[-600:]})")
    finally:
        job.kill()
    head, text = verdict(out)
    want = (f"hang: ranks 0, 1, 3 wait in ncclAllReduce at `main` (hang_rank.py:"
            f"{line_of('ALLREDUCE')}) for the whole ")
    check(head.startswith(want), f"{head!r} starts {want!r}")
    check(f"rank 2 is elsewhere: `load_batch` (hang_rank.py:{line_of('READ')}), sleeping in "
          f"read" in head, head)


def test_system_wide_hang_dump_opens_with_the_hang_beside_a_busy_loop():
    """-a with the hang trigger while an unrelated loop (nice 19) keeps a CPU busy: the dump
    opens with the hang, not with the loop's CPU time (which once led 3 dumps of 5)."""
    need_root()
    job = Job({2: "read"})
    loop = subprocess.Popen(["nice", "-n", "19", job.py, "-c", "while True: pass"])
    try:
        pids = job.start_ranks()
        rec = Recorder("-a", "-t", "+nccl", "--flight-recorder=30s", f"--trigger=hang:{DUR_S}s",
                       out=os.path.join(job.dir, "fr.bst"))
        rec.wait_ready()
        open(job.go, "w").close()
        job.stall_ns(2)
        dump = wait_dump(rec)
        eq(rec.stop(), 0, "the recorder")
    finally:
        loop.kill()
        loop.wait()
        job.kill()
    head, _ = verdict(dump)
    want = f"hang: ranks 0, 1, 3 wait in ncclAllReduce #{HANG_AT} (communicator "
    check(head.startswith(want), f"{head!r} starts {want!r}")
