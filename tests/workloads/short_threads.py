"""Threads that live a few ms each, as a ThreadingHTTPServer's request threads do
(tests/e2e/test_hang_arrival.py): after the file GO exists (argv[1]), for SECONDS (argv[2]),
the main thread starts a thread that computes for 2 ms of its own CPU time and joins it, again
and again. Prints "ready pid P" first, then "cpu PCT threads N seconds CPU_S" at the end: the
process's own CPU time (time.process_time: every thread's, the dead ones' too) over the run's
wall time, and in seconds (the run can outlast SECONDS: its last thread's start and join on a
loaded machine)."""
import os
import sys
import threading
import time


def work():
    t = time.thread_time()
    while time.thread_time() - t < 0.002:
        pass


def main():
    go, seconds = sys.argv[1], float(sys.argv[2])
    print(f"ready pid {os.getpid()}", flush=True)
    while not os.path.exists(go):
        time.sleep(0.01)
    c0, w0, n = time.process_time(), time.monotonic(), 0
    while time.monotonic() - w0 < seconds:
        th = threading.Thread(target=work)
        th.start()
        th.join()
        n += 1
    cpu_s = time.process_time() - c0
    cpu = cpu_s / (time.monotonic() - w0) * 100
    print(f"cpu {cpu:.1f} threads {n} seconds {cpu_s:.4f}", flush=True)
    time.sleep(30)  # until killed: top sees it end on its own time


if __name__ == "__main__":
    main()
