"""tests/e2e/test_pyfunc_first.py's job to attach to: main() runs the whole job, so it is
already running when a recording attaches (-p). It prints its pid and when it began
(CLOCK_MONOTONIC ns), then reads commands: "run N" calls step() N times and says so when
done; "quit" returns from main(), which then says when it returned."""
import json
import os
import sys
import time


def step(i):
    return i * 2


def say(**kw):
    print(json.dumps(kw), flush=True)


def main():
    say(pid=os.getpid(), began=time.monotonic_ns())
    for line in sys.stdin:
        cmd = line.split()
        if cmd and cmd[0] == "run":
            for i in range(int(cmd[1])):
                step(i)
            say(ran=int(cmd[1]), at=time.monotonic_ns())
        elif cmd and cmd[0] == "quit":
            return


main()
say(returned=time.monotonic_ns())
