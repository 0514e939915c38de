"""Eight threads contending for the GIL with a known split of their CPU by function
(tests/e2e/test_gil_holders.py): each loop runs heavy() (pure Python), then light() (pure
Python too, a smaller share), then the cheap calls of a real job's loop: two clock reads and
a read of /proc, which releases the GIL (the moment the GIL changes hands, where a holder's
line read at that instant falls).

  gil_split.py [THREADS [HEAVY [LIGHT]]]   prints "ready pid P", runs until stdin closes, then
                                           prints one JSON line: per thread its tid and the
                                           CPU time (time.thread_time) in heavy(), in light(),
                                           in the /proc read (its system calls run without
                                           the GIL: not a holder's time) and in the whole
                                           loop, measured by the job itself; and "steps":
                                           per loop, its end (CLOCK_MONOTONIC ns, the trace's
                                           clock) and those four times (ns), so a test takes
                                           the split of the recording's window alone.
"""
import json
import os
import sys
import threading
import time


def heavy(n):
    x = 0
    for i in range(n): x += i * i  # HEAVY: one line, so the verdict's line is the function
    return x


def light(n):
    x = 0
    for i in range(n):  # LIGHT
        x ^= i
    return x


def cpu():
    """This thread's CPU time, read twice: under load the first read after a long stretch of
    Python can miss up to a millisecond of that stretch (two back-to-back reads 0-2 us apart
    by the wall clock differ by 0.1-0.5 ms of CPU in 1 loop of 6, with 13 busy loops beside
    the job), which the next interval would then be charged: light() with heavy()'s tail
    tripled its share. The second read sees it."""
    time.thread_time()
    return time.thread_time()


def worker(stop, out, n_heavy, n_light):
    t_heavy = t_light = t_proc = 0.0
    start = cpu()
    steps = []
    while not stop.is_set():
        t0 = cpu()
        heavy(n_heavy)
        t1 = cpu()
        light(n_light)
        t2 = cpu()
        t_heavy += t1 - t0
        t_light += t2 - t1
        time.monotonic()
        time.time()
        t3 = cpu()
        with open("/proc/self/stat", "rb") as f:  # PROC
            f.read()
        t4 = cpu()
        t_proc += t4 - t3
        steps.append((time.monotonic_ns(), round((t1 - t0) * 1e9), round((t2 - t1) * 1e9),
                      round((t4 - t3) * 1e9), round((t4 - t0) * 1e9)))
    out.append({"tid": threading.get_native_id(), "heavy_s": t_heavy, "light_s": t_light,
                "proc_s": t_proc, "loop_s": cpu() - start, "steps": steps})


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 8
    n_heavy = int(sys.argv[2]) if len(sys.argv) > 2 else 16000
    n_light = int(sys.argv[3]) if len(sys.argv) > 3 else 1400
    stop, out = threading.Event(), []
    threads = [threading.Thread(target=worker, args=(stop, out, n_heavy, n_light))
               for _ in range(n)]
    for t in threads:
        t.start()
    print(f"ready pid {os.getpid()}", flush=True)
    sys.stdin.read()
    stop.set()
    for t in threads:
        t.join()
    print(json.dumps({"threads": out}), flush=True)


if __name__ == "__main__":
    main()
