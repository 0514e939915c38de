"""Calls json.dumps and json.loads a known number of times from a __main__ function, and prints
the counts as JSON at the end (the nsys spec file test's truth)."""
import json
import time

DUMPS, LOADS = 30, 20


def work():
    text = ""
    for i in range(DUMPS):
        text = json.dumps({"i": i, "xs": list(range(i % 5))})
    for _ in range(LOADS):
        json.loads(text)


# The cupti-shim installs the calls' hooks at the first safe point after the interpreter
# started, as for a job it joins with -p: give it that moment (docs/PYFUNC-mechanism.md).
time.sleep(1)
work()
# not json.dumps: it would count once more
print('{"dumps": %d, "loads": %d, "work": 1}' % (DUMPS, LOADS), flush=True)
