"""A dask job on the local schedulers (threads, then sync) whose task functions count their own
runs, printed as JSON at the end with how many computes each scheduler ran."""
import json
import threading
import time

import dask

runs = 0
lock = threading.Lock()


def count():
    global runs
    with lock:
        runs += 1


@dask.delayed
def inc(x):
    count()
    return x + 1


@dask.delayed
def add(x, y):
    count()
    return x + y


def graph(n):
    xs = [inc(i) for i in range(n)]
    while len(xs) > 1:
        xs = [add(xs[i], xs[i + 1]) for i in range(0, len(xs) - 1, 2)] + xs[len(xs) & ~1:]
    return xs[0]


# The cupti-shim installs the calls' hooks at its poller's first round once the recording is
# live (docs/PYFUNC-mechanism.md): importing dask takes less, so give it that moment.
time.sleep(1)
computes = {"threads": 0, "sync": 0}
for scheduler in ("threads", "sync"):
    for _ in range(2):
        graph(8).compute(scheduler=scheduler)
        computes[scheduler] += 1
print(json.dumps({"tasks": runs, "computes": computes}), flush=True)
