"""After a recording, nothing of bpfsight runs in the job, whatever else bpfsight does on the
machine: a CPU PyTorch job with two DataLoader workers (tests/workloads/torch_loader.py),
given the cupti-shim by `record -p --inject -t torch,...`, then `monitor -a` and `top -b`
running beside it. Both record the gpu family of every process (their GPU columns), which a
CPU job's shim cannot feed: its poller threads (trainer and workers) sleep on their futex,
woken by the tracers' attach only (the 50 ms poll woke each 20 times a second). And the
shim's threads are not lanes of the job's report: they are bpfsight's, not the job's."""
import atexit
import os
import re
import shutil
import signal
import subprocess
import threading
import tempfile
import time

from commands import DEBIAN_PY, WORKLOADS, need_torch
from free_ports import free_port
from helpers import BPFSIGHT, check, eq, need_root, run, spawn, tmpdir, wait_for

# For tests/run_tests.py: about how long these tests take on CI's machine (its order).
SECONDS = 25
ALONE = "monitor -a and top of every process: the other tests' processes would be traced"

SHIM = "bpfsight-shim"
_job = {}


def job():
    """The trainer, its workers, and the recording that gave them the shim: made once per
    job of this module (the tests run in their names' order, the live one first; the
    recording outlives the first test's cleanup, the job does not)."""
    if _job:
        return _job
    need_root()
    need_torch()
    p = spawn([DEBIAN_PY, os.path.join(WORKLOADS, "torch_loader.py"), "--seconds", "300",
               "--sleep", "0.01"])
    line = p.stdout.readline()
    m = re.search(r'"pid": (\d+), "workers": \[(\d+), (\d+)\]', line)
    check(m, f"torch_loader: {line!r}")
    d = tempfile.mkdtemp(prefix="bpfsight-shim-asleep-")  # not a test's: kept for both
    atexit.register(shutil.rmtree, d, True)
    out = os.path.join(d, "inj.bst")
    r = run([BPFSIGHT, "record", "-p", m.group(1), "--inject", "-t", "torch,cpu,gil,sched,osrt",
             "--capture-range=steps:3", "-o", out], timeout=180)
    eq(r.returncode, 0, f"record --inject: {r.stderr[-800:]}")
    _job.update(p=p, pids=[int(m.group(i)) for i in (1, 2, 3)], out=out)
    return _job


def shim_threads(pid):
    """{tid: the times it ran (schedstat's third field)} of PID's shim threads."""
    out = {}
    task = f"/proc/{pid}/task"
    for tid in os.listdir(task):
        try:
            with open(f"{task}/{tid}/comm") as f:
                if f.read().strip() != SHIM:
                    continue
            with open(f"{task}/{tid}/schedstat") as f:
                out[int(tid)] = int(f.read().split()[2])
        except OSError:
            continue
    return out


def asleep(pid, tid):
    """The thread sleeps in its futex wait (a poll would sleep in clock_nanosleep)."""
    with open(f"/proc/{pid}/task/{tid}/wchan") as f:
        return "futex" in f.read()


class Tool:
    """A bpfsight command running until stopped; ready once it says it is recording."""

    def __init__(self, *args):
        self.p = subprocess.Popen([BPFSIGHT, *args], stdout=subprocess.DEVNULL,
                                  stderr=subprocess.PIPE, text=True)
        self.err = []
        threading.Thread(target=lambda: self.err.extend(self.p.stderr), daemon=True).start()

    def ready(self):
        check(self.p.poll() is None, f"{self.p.args[1]} ended: {''.join(self.err)[-600:]}")
        return any("recording" in l and "Ctrl-C" in l for l in self.err)

    def stop(self):
        if self.p.poll() is None:
            self.p.send_signal(signal.SIGINT)
        return self.p.wait(60)


def test_after_inject_the_shim_threads_sleep_beside_monitor_and_top():
    j = job()
    shims = {pid: shim_threads(pid) for pid in j["pids"]}
    check(all(len(t) == 1 for t in shims.values()), f"one shim thread each: {shims}")
    tools = [Tool("monitor", "-a", "--listen", f"127.0.0.1:{free_port()}"), Tool("top", "-b", "-i", "1s")]
    try:
        wait_for(lambda: all(t.ready() for t in tools), 120, "monitor -a and top live")
        # Each tool woke each shim once at its attach (its first scan, done when it is live):
        # the shim answered and sleeps again, in its futex wait.
        wait_for(lambda: all(asleep(pid, tid) for pid, t in shims.items() for tid in t), 30,
                 "the shim threads back asleep")
        before = {pid: shim_threads(pid) for pid in j["pids"]}
        # 5 s: the poll woke each thread every 50 ms (100 times in 5 s, the 5 a second seen
        # in production 25), and top's 1 s frames come 5 times in it; what the tools do at
        # their attach is over before BEFORE.
        time.sleep(5)
        after = {pid: shim_threads(pid) for pid in j["pids"]}
        eq({pid: {tid: after[pid][tid] - n for tid, n in t.items()} for pid, t in before.items()},
           {pid: {tid: 0 for tid in t} for pid, t in before.items()},
           "runs of the shim threads (trainer, workers) in 5 s beside monitor -a and top")
    finally:
        for t in tools:
            eq(t.stop(), 0, f"{t.p.args[1]}: {''.join(t.err)[-600:]}")


def test_the_report_has_no_lane_of_the_shim_threads():
    j = job()
    html = os.path.join(tmpdir(), "inj.html")
    r = run([BPFSIGHT, "report", j["out"], "-o", html])
    eq(r.returncode, 0, f"report: {r.stderr[-600:]}")
    with open(html) as f:
        lanes = re.findall(r'class="lane-name" x="\d+" y="\d+">([^<]*)<', f.read())
    check(any("MainThread (main thread, pid %d)" % j["pids"][0] in l for l in lanes),
          f"the trainer's main thread among the lanes: {lanes}")
    eq([l for l in lanes if l.startswith(SHIM)], [], "lanes of bpfsight's shim threads")
