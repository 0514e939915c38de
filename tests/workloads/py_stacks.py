"""Test workload of the cpu family's Python stacks: functions whose stacks and CPU split are
known. Prints "pid P tid T" first, then its ground truth as one JSON line.

    py_stacks.py split SECS    outer -> inner_a (7 parts) / inner_b (3 parts) of the thread's
                               CPU time (time.thread_time), SECS of it: {"a", "b"} seconds
    py_stacks.py paced MS      the same split, with a sleep of MS milliseconds after each
                               10 ms of it (a third of a core at 20), until stdin closes:
                               {"a", "b"} seconds (a test that watches it live takes little)
    py_stacks.py exec N S      N functions f_K compiled from new source, each defined on line
                               K + 1 of a file named gen_K.py, called (spinning S s of CPU)
                               and freed, one after the other: their code objects (and names)
                               reuse the same memory: {"spans": [[start, end] of f_K]}
                               in CLOCK_MONOTONIC ns
    py_stacks.py deep D SECS   recurse D calls deep, then spin SECS
    py_stacks.py gen SECS      a generator and a coroutine spin in turn (frames not owned by
                               a thread's C stack)
    py_stacks.py nogil SECS    a thread compresses in zlib (which releases the GIL) while the
                               main thread spins in Python: {"tid": the compressing thread}
    py_stacks.py callback SECS sorted() calls key_spin back from C for SECS of CPU: Python
                               frames above and below a C function's native frames

Lines the tests look for carry markers in comments (BURN_A, BURN_B, CALL_A, CALL_B).
"""
import asyncio
import gc
import json
import os
import select
import sys
import threading
import time


def spin(secs):
    t0 = thread_time()
    while thread_time() - t0 < secs:
        pass


thread_time = __import__("time").thread_time


def inner_a(secs):
    t0 = thread_time()
    x = 0
    while thread_time() - t0 < secs:  # BURN_A
        x += 1  # BURN_A
    return x


def inner_b(secs):
    t0 = thread_time()
    x = 0
    while thread_time() - t0 < secs:  # BURN_B
        x += 1  # BURN_B
    return x


def paced(pause_s):
    """Sleep PAUSE_S; 1 once stdin has closed (0 at once without a pause)."""
    return pause_s and select.select([sys.stdin], [], [], pause_s)[0] and not sys.stdin.read(1)


def outer(total, pause_s=0):
    a = b = 0.0
    while a + b < total and not paced(pause_s):
        t = thread_time()
        inner_a(0.007)  # CALL_A
        a += thread_time() - t
        t = thread_time()
        inner_b(0.003)  # CALL_B
        b += thread_time() - t
    return {"a": a, "b": b}


def churn(n, spin_s):
    spans = []  # when each f_K was on the stack (CLOCK_MONOTONIC, the samples' clock)
    for k in range(n):
        src = "\n" * k + f"def f_{k}(t):\n    s = tt()\n    while tt() - s < t:\n        pass\n"
        ns = {"tt": thread_time}
        code = compile(src, f"gen_{k}.py", "exec")
        exec(code, ns)
        del code
        t0 = time.monotonic_ns()
        ns[f"f_{k}"](spin_s)
        spans.append([t0, time.monotonic_ns()])
        # f_K and its globals hold each other: collected now (and the module's code object
        # freed before f_K ran), each f_K's code object takes the last one's address.
        del ns
        gc.collect()
    return {"n": n, "spans": spans}


def recurse(depth, secs):
    if depth <= 1:
        spin(secs)
    else:
        recurse(depth - 1, secs)
    return depth


def gen_spin(secs):
    while True:
        spin(secs)
        yield


async def coro_spin(secs):
    spin(secs)


def generators(total):
    g = gen_spin(0.005)
    t0 = thread_time()
    while thread_time() - t0 < total:
        next(g)
        asyncio.run(coro_spin(0.005))
    return {}


def compress_loop(secs, out):
    import zlib
    data = os.urandom(1 << 20)
    out["tid"] = threading.get_native_id()
    t0 = thread_time()
    while thread_time() - t0 < secs:
        zlib.compress(data, 9)  # NOGIL


def nogil(secs):
    out = {}
    t = threading.Thread(target=compress_loop, args=(secs, out), name="compressor")
    t.start()
    spin(secs)
    t.join()
    return out


def key_spin(x):
    t0 = thread_time()
    while thread_time() - t0 < 0.002:
        pass
    return x


def callback(secs):
    t0 = thread_time()
    n = 0
    while thread_time() - t0 < secs:
        sorted(range(3), key=key_spin)
        n += 1
    return {"sorts": n}


def main():
    print(f"pid {os.getpid()} tid {threading.get_native_id()}", flush=True)
    mode, args = sys.argv[1], sys.argv[2:]
    if mode == "split":
        truth = outer(float(args[0]))
    elif mode == "paced":
        truth = outer(float("inf"), float(args[0]) / 1000)
    elif mode == "exec":
        truth = churn(int(args[0]), float(args[1]))
    elif mode == "deep":
        sys.setrecursionlimit(10000)
        truth = {"depth": recurse(int(args[0]), float(args[1]))}
    elif mode == "gen":
        truth = generators(float(args[0]))
    elif mode == "nogil":
        truth = nogil(float(args[0]))
    elif mode == "callback":
        truth = callback(float(args[0]))
    else:
        sys.exit(f"unknown mode {mode}")
    print(json.dumps(truth), flush=True)


if __name__ == "__main__":
    main()
