"""A Python job blocked in a read (tests/e2e/test_hang_arrival.py): its main thread calls
wait_for_input(), which reads a pipe nobody writes, for good. Prints "ready pid P" and, right
before each read, "blocked NS" (CLOCK_MONOTONIC). The read's line is marked (READ).

With --stdin it reads its stdin instead, a byte at a time: after each byte "woke NS", then
blocks again; it ends at the end of its input."""
import os
import sys
import time


def now():
    return time.clock_gettime_ns(time.CLOCK_MONOTONIC)


def wait_for_input(fd):
    return os.read(fd, 1)  # READ


def main():
    stdin = "--stdin" in sys.argv[1:]
    fd = 0 if stdin else os.pipe()[0]
    print(f"ready pid {os.getpid()}", flush=True)
    while True:
        print(f"blocked {now()}", flush=True)
        if not wait_for_input(fd):
            return
        print(f"woke {now()}", flush=True)


if __name__ == "__main__":
    main()
