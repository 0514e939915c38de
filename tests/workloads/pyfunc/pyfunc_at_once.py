"""tests/e2e/test_pyfunc_first.py's launch-mode job: the usual shape of a script, its main()
called once right after the definitions, calling f() 1,000 times at once, then starting two
threads right after `import threading` that call in_thread() 100 times each; nothing waits
for a tracer. Prints one JSON line: its pid and when main() began and ended (CLOCK_MONOTONIC
ns, the records' clock), inside which its recorded call must lie."""
import json
import os
import threading
import time

CALLS = 1000
THREADS, THREAD_CALLS = 2, 100


def f(i):
    return i + 1


def in_thread():
    return 0


def thread_main():
    for _ in range(THREAD_CALLS):
        in_thread()


def train_step():
    """Never called: the name a misspelt entry (trian_step) is told it meant."""


def main():
    began = time.monotonic_ns()
    total = 0
    for i in range(CALLS):
        total += f(i)
    threads = [threading.Thread(target=thread_main) for _ in range(THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return began, time.monotonic_ns(), total


began, ended, total = main()
print(json.dumps({"pid": os.getpid(), "main": [began, ended], "calls": CALLS,
                  "thread_calls": THREADS * THREAD_CALLS}), flush=True)
