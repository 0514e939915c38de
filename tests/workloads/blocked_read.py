"""A Python job blocked in a read for good (tests/e2e/test_hang_arrival.py): its main thread
calls wait_for_input(), which reads a pipe nobody writes. Prints "ready pid P" and, right
before the read, "blocked NS" (CLOCK_MONOTONIC). The read's line is marked (READ)."""
import os
import time


def wait_for_input(fd):
    return os.read(fd, 1)  # READ


def main():
    r, _ = os.pipe()
    print(f"ready pid {os.getpid()}", flush=True)
    print(f"blocked {time.clock_gettime_ns(time.CLOCK_MONOTONIC)}", flush=True)
    wait_for_input(r)


if __name__ == "__main__":
    main()
