"""`bpfsight stacks` test workload (tests/e2e/test_stacks_dump.py): thread cpu-0 spins in
spin() for ever, cpu-1 sleeps in nap() (time.sleep, an hour), the main thread waits in
join(). Once the other two wait (the test sees it in /proc), nothing asks for the GIL:
cpu-0 holds it. Prints {"pid", "tids": {name: tid}} once both threads run. Lines the test
looks for carry markers (SPIN, NAP, JOIN).

    py_stacks_dump.py held   thread "holder" sleeps in libc's sleep() holding the GIL (a
                             C call through ctypes.PyDLL, which keeps it), thread "waiter"
                             then waits for the GIL in spin(), and so does the main thread
"""
import ctypes
import json
import os
import sys
import threading
import time


def spin():
    x = 0
    while True:  # SPIN
        x += 1  # SPIN


def nap():
    while True:
        time.sleep(3600)  # NAP


def hold(go):
    go.wait()
    ctypes.PyDLL(None).sleep(3600)  # HOLD


def start(a, b):
    """Start A and B, then say the tids."""
    a.start()
    b.start()
    while a.native_id is None or b.native_id is None:
        time.sleep(0.001)
    me = threading.current_thread()
    print(json.dumps({"pid": os.getpid(), "tids": {t.name: t.native_id for t in (me, a, b)}}),
          flush=True)


if sys.argv[1:] == ["held"]:
    go = threading.Event()
    a = threading.Thread(target=hold, args=(go,), name="holder", daemon=True)
    start(a, threading.Thread(target=spin, name="waiter", daemon=True))
    go.set()
    a.join()
    sys.exit()

a = threading.Thread(target=spin, name="cpu-0", daemon=True)
start(a, threading.Thread(target=nap, name="cpu-1", daemon=True))
a.join()  # JOIN
