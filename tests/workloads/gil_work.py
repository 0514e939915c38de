#!/usr/bin/env python3
"""GIL workloads with known answers, for tests/e2e/test_gil.py and bench/bench_gil.py.

    gil_work.py [--go] [--interval S] [--name NAME] [--hold-start MS] [--lead S] MODE ARGS...

    single SECS          one thread, no contention at all
    cpu N SECS           N CPU-bound threads "cpu-0".."cpu-N-1" spinning for SECS
    hold MS              the main thread ("holder") keeps the GIL through a C call of MS
                         milliseconds (ctypes.PyDLL: usleep without releasing it) while
                         "spinner" waits for it from before the call starts (spinner's
                         longest_sleep_ns: its longest sleep call, the GIL's retake included)
    io K SLEEP_MS        "io" (the main thread) sleeps K times SLEEP_MS (releasing the GIL)
                         while "cpu" spins, the only two threads that want the GIL meanwhile
                         (io's sleeps: [start, end] of each sleep call, CLOCK_MONOTONIC)
    work N ITERS         N threads "work-0".. each running ITERS rounds of pure-Python work
                         (a fixed amount: the run time measures throughput under contention)
    ioloop ITERS         one thread: ITERS os.write+os.read on a pipe (GIL released twice per
                         iteration, never contended); prints ns per iteration and how many
                         times the thread was preempted meanwhile
    pipes N ITERS        N threads "pipe-0".. each doing ITERS os.write+os.read on its own pipe:
                         the GIL changes hands at every system call, waits are short
    fork N SECS          forks a child that runs `cpu N SECS`; the parent waits for it

--hold-start MS: in the modes with N threads (cpu, work, pipes), the main thread keeps the GIL
through a C call of MS milliseconds right after releasing them, so each of them that runs
meanwhile waits for the GIL at least once (contention however loaded the machine: without it
a short run's threads may never overlap).

--lead S: the main thread spins S seconds before its mode begins (a start as slow as a loaded
machine makes it), then, in the modes with N threads, joins them.

--go waits for a line on stdin before the threads start (after printing "ready PID"), so a
tracer can attach first. Each thread sets its OS name (prctl) so reports can be checked by
name. At the end one JSON line on stdout: {"pid":..., "threads": {name: {"tid", "wall_ns",
"cpu_ns"}}, ...} with the ground truth the workload itself can know.
"""
import ctypes
import json
import os
import resource
import sys
import threading
import time

libc = ctypes.CDLL(None, use_errno=True)
pylibc = ctypes.PyDLL(None)  # calls through PyDLL keep the GIL
PR_SET_NAME = 15
results = {}
lock = threading.Lock()


def set_name(name):
    libc.prctl(PR_SET_NAME, name.encode()[:15], 0, 0, 0)


def record(name, t0, c0):
    with lock:
        results[name] = {"tid": threading.get_native_id(),
                         "wall_ns": time.monotonic_ns() - t0,
                         "cpu_ns": time.thread_time_ns() - c0}


def spin_until(end):
    x = 0
    while time.monotonic() < end:
        for i in range(200):
            x += i
    return x


def cpu_thread(name, secs, start):
    set_name(name)
    t0, c0 = time.monotonic_ns(), time.thread_time_ns()
    start.wait()
    spin_until(time.monotonic() + secs)
    record(name, t0, c0)


hold_start_ms = 0  # --hold-start


def run_threads(threads, start):
    pylibc.usleep  # resolved now (Python code): the hold below is C code alone
    for t in threads:
        t.start()
    start.set()
    if hold_start_ms:
        pylibc.usleep(int(hold_start_ms * 1000))  # the GIL stays held: the threads wait
    for t in threads:
        t.join()


def work_thread(name, iters, start):
    set_name(name)
    t0, c0 = time.monotonic_ns(), time.thread_time_ns()
    start.wait()
    x = 0
    for _ in range(iters):
        for i in range(200):
            x += i
    record(name, t0, c0)


def mode_work(n, iters):
    set_name("main")
    start = threading.Event()
    run_threads([threading.Thread(target=work_thread, args=("work-%d" % i, iters, start))
                 for i in range(n)], start)


def mode_single(secs):
    set_name("main")
    t0, c0 = time.monotonic_ns(), time.thread_time_ns()
    spin_until(time.monotonic() + secs)
    record("main", t0, c0)


def mode_cpu(n, secs):
    set_name("main")
    start = threading.Event()
    run_threads([threading.Thread(target=cpu_thread, args=("cpu-%d" % i, secs, start))
                 for i in range(n)], start)


def mode_hold(ms):
    """The spinner must already be waiting when the measured call starts, so that its wait
    covers the whole call: it mostly sleeps (the GIL is free), the holder takes the GIL and
    keeps it through a first 100 ms call, during which the spinner wakes up and blocks, then
    through the measured one. A 2 s switch interval keeps the spinner from asking for the GIL
    back in between (it would be handed over at the first check after the first call)."""
    set_name("holder")
    sys.setswitchinterval(2.0)
    stop = threading.Event()

    def spinner():
        set_name("spinner")
        t0, c0 = time.monotonic_ns(), time.thread_time_ns()
        x = 0
        longest = 0  # the longest sleep call, taking the GIL back included: any wait is in one
        while not stop.is_set():
            a = time.monotonic_ns()
            time.sleep(0.002)
            longest = max(longest, time.monotonic_ns() - a)
            for i in range(200):
                x += i
        record("spinner", t0, c0)
        results["spinner"]["longest_sleep_ns"] = longest

    # ctypes resolves a function at its first use in CDLL.__getattr__, Python code run with
    # the GIL held: done now, so that the GIL is held through C code alone below.
    pylibc.usleep
    t = threading.Thread(target=spinner)
    t.start()
    time.sleep(0.2)
    pylibc.usleep(100000)  # the GIL stays held: the spinner blocks on it meanwhile
    t0 = time.monotonic_ns()
    pylibc.usleep(int(ms * 1000))  # the measured call, with the spinner already waiting
    results["holder"] = {"tid": threading.get_native_id(), "call_ns": time.monotonic_ns() - t0}
    time.sleep(0.1)
    stop.set()
    t.join()


def mode_io(k, sleep_ms):
    """The sleeps run on the main thread, named "io", so that while they run exactly two threads
    want the GIL: "io" and "cpu". A third one, such as a main thread still on its way to join()
    after starting "io", waits for the GIL too, and its timed-out rounds ask "cpu" to drop it
    (the drop request is the interpreter's, not a waiter's): "io", waiting at the end of a sleep,
    may then take the GIL after less than a switch interval, on a request that is not its own
    (seen under load: the main thread's wait for the GIL overlapping io's first sleeps)."""
    set_name("io")
    stop, ready = threading.Event(), threading.Event()

    def cpu():
        set_name("cpu")  # a ctypes call: it releases the GIL, so before "ready"
        t0, c0 = time.monotonic_ns(), time.thread_time_ns()
        ready.set()
        x = 0
        # From here on "cpu" gives the GIL up only when asked (nothing in the loop blocks).
        while not stop.is_set():
            for i in range(200):
                x += i
        record("cpu", t0, c0)

    t = threading.Thread(target=cpu)
    t.start()
    ready.wait()
    t0, c0 = time.monotonic_ns(), time.thread_time_ns()
    windows = []  # [start, end] of each sleep call (CLOCK_MONOTONIC, the trace's clock)
    for _ in range(k):
        a = time.monotonic_ns()
        time.sleep(sleep_ms / 1000.0)
        windows.append([a, time.monotonic_ns()])
    record("io", t0, c0)
    results["io"]["sleeps"] = windows
    stop.set()
    t.join()


def mode_ioloop(iters):
    set_name("main")
    r, w = os.pipe()
    b = b"x"
    # Involuntary switches: a hold lasts more than a few microseconds only if the thread is
    # preempted while it holds the GIL.
    nivcsw = resource.getrusage(resource.RUSAGE_THREAD).ru_nivcsw
    t0 = time.monotonic_ns()  # the recording's clock (CLOCK_MONOTONIC)
    for _ in range(iters):
        os.write(w, b)
        os.read(r, 1)
    dt = time.monotonic_ns() - t0
    results["main"] = {"tid": threading.get_native_id(), "ns_per_iter": dt / iters,
                       "t0": t0, "t1": t0 + dt,
                       "preempted": resource.getrusage(resource.RUSAGE_THREAD).ru_nivcsw - nivcsw}


def pipe_thread(name, iters, start):
    set_name(name)
    r, w = os.pipe()
    t0, c0 = time.monotonic_ns(), time.thread_time_ns()
    start.wait()
    for _ in range(iters):
        os.write(w, b"x")
        os.read(r, 1)
    record(name, t0, c0)


def mode_pipes(n, iters):
    set_name("main")
    start = threading.Event()
    run_threads([threading.Thread(target=pipe_thread, args=("pipe-%d" % i, iters, start))
                 for i in range(n)], start)


def mode_fork(n, secs):
    set_name("main")
    pid = os.fork()
    if pid == 0:
        results.clear()
        mode_cpu(n, secs)
        print(json.dumps({"pid": os.getpid(), "threads": results}), flush=True)
        os._exit(0)
    os.waitpid(pid, 0)
    results["child"] = {"pid": pid}


def main():
    global hold_start_ms
    args = sys.argv[1:]
    go = False
    lead = 0
    while args and args[0].startswith("--"):
        opt = args.pop(0)
        if opt == "--go":
            go = True
        elif opt == "--interval":
            sys.setswitchinterval(float(args.pop(0)))
        elif opt == "--name":
            set_name(args.pop(0))
        elif opt == "--hold-start":
            hold_start_ms = float(args.pop(0))
        elif opt == "--lead":  # the main thread spins this long first (a slow start)
            lead = float(args.pop(0))
    mode, rest = args[0], args[1:]
    if go:
        print("ready %d" % os.getpid(), flush=True)
        sys.stdin.readline()
    spin_until(time.monotonic() + lead)
    t0 = time.monotonic_ns()
    if mode == "single":
        mode_single(float(rest[0]))
    elif mode == "cpu":
        mode_cpu(int(rest[0]), float(rest[1]))
    elif mode == "hold":
        mode_hold(float(rest[0]))
    elif mode == "io":
        mode_io(int(rest[0]), float(rest[1]))
    elif mode == "ioloop":
        mode_ioloop(int(rest[0]))
    elif mode == "work":
        mode_work(int(rest[0]), int(rest[1]))
    elif mode == "pipes":
        mode_pipes(int(rest[0]), int(rest[1]))
    elif mode == "fork":
        mode_fork(int(rest[0]), float(rest[1]))
    else:
        sys.exit("unknown mode " + mode)
    print(json.dumps({"pid": os.getpid(), "main_tid": threading.get_native_id(),
                      "run_ns": time.monotonic_ns() - t0, "threads": results}), flush=True)


if __name__ == "__main__":
    main()
