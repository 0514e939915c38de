#!/usr/bin/env python3
"""A Python process for the cpu, gil and sched reports computed in ClickHouse
(tests/e2e/test_clickhouse_cpu.py): two threads spin in Python for the GIL (GIL waits, the
holders' code), one sleeps in short naps (off-CPU with a stack), and the main thread builds and
drops 40 MiB blocks, above glibc's largest mmap threshold (32 MiB): each is mapped, faulted in
page by page and unmapped at its free (page faults and munmap in its CPU samples). It runs
SECONDS, and on until the main thread has spent CHURN_CPU_S of its own CPU building blocks:
the fault samples a rule needs however loaded the machine (at a load of 16 on 2 cores, 0.6 s
of wall time once gave it too few).

    cpu_gil_faults.py [SECONDS]   (default 1.5)
"""
import sys
import threading
import time

SECONDS = float(sys.argv[1]) if len(sys.argv) > 1 else 1.5
CHURN_CPU_S = 0.25
end = time.monotonic() + SECONDS
stop = threading.Event()  # set once the main thread is done


def spin():
    n = 0
    while not stop.is_set():
        n += sum(i * i for i in range(2000))


def nap():
    while not stop.is_set():
        time.sleep(0.002)


def churn():
    blocks = 0
    c0 = time.thread_time()
    while time.monotonic() < end or time.thread_time() - c0 < CHURN_CPU_S:
        block = b"x" * (40 << 20)
        blocks += len(block) > 0
        del block
    return blocks


threads = [threading.Thread(target=spin, name=f"spin-{i}") for i in range(2)]
threads.append(threading.Thread(target=nap, name="nap"))
for t in threads:
    t.start()
churn()
stop.set()
for t in threads:
    t.join()
