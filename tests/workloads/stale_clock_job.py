"""A thread whose own clock (schedstat's run_delay) counts a sleep as a wait for a CPU
(test_ledger_jobs.py:test_a_clock_that_counts_a_sleep_is_corrected).

6.12+'s delayed dequeue keeps a thread that blocks with negative lag on its runqueue until it
is eligible again; moved to another CPU meanwhile (sched_setaffinity), it is stamped as queued,
and its final dequeue leaves the stamp: its next switch-in adds the whole sleep since to its
run_delay. Made so here ("stale"): the sleeper, on CPU 0 beside a nice -19 loop (its weight
keeps the sleeper ineligible ~20 ms after 1 ms of its own work), is woken, works 1 ms, blocks
on its pipe and is moved to CPU 1 at once; the loop ends then. It stays asleep, with its stamp,
until "wake", which prints {"run_delay", "woke_ns"}: its run_delay after, and the wall time
from the wake to its answer (its real wait for a CPU is at most that).

Prints {"pid", "tid", "run_delay"} once made stale the first time."""
import json
import os
import subprocess
import sys
import threading
import time

r, w = os.pipe()
ack_r, ack_w = os.pipe()
tids = []
work = [0.0]  # what the sleeper's next wake works, in CPU seconds


def sleeper():
    tids.append(threading.get_native_id())
    os.write(ack_w, b"r")
    while True:
        os.read(r, 1)
        t, spin = time.thread_time(), work[0]
        while time.thread_time() - t < spin:
            pass
        os.write(ack_w, b"x")


def run_delay(tid):
    with open(f"/proc/self/task/{tid}/schedstat") as f:
        return int(f.read().split()[1])


def stale(tid):
    os.sched_setaffinity(tid, {0})
    loop = subprocess.Popen(["nice", "-n", "-19", "taskset", "-c", "0", sys.executable, "-c",
                             "while 1: pass"])
    time.sleep(0.1)  # the loop runs
    work[0] = 0.001
    os.write(w, b"x")
    os.read(ack_r, 1)
    os.sched_setaffinity(tid, {1})  # asleep, its dequeue delayed: moved, stamped
    work[0] = 0
    loop.kill()
    loop.wait()


os.sched_setaffinity(0, {1})
threading.Thread(target=sleeper, name="sleeper", daemon=True).start()
os.read(ack_r, 1)
tid = tids[0]
stale(tid)
print(json.dumps({"pid": os.getpid(), "tid": tid, "run_delay": run_delay(tid)}), flush=True)
for line in sys.stdin:
    if line.strip() == "wake":
        t0 = time.monotonic_ns()
        os.write(w, b"x")
        os.read(ack_r, 1)
        woke = time.monotonic_ns() - t0
        print(json.dumps({"run_delay": run_delay(tid), "woke_ns": woke}), flush=True)
    elif line.strip() == "stale":
        stale(tid)
        print(json.dumps({"run_delay": run_delay(tid)}), flush=True)
    elif line.strip() == "exit":
        break
