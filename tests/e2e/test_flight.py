"""Flight recorder (record --flight-recorder): what a dump holds, when triggers write one,
the bounds (SIZE, cool-down, --max-dumps), and that every reader opens every dump.

The workload (tests/workloads/flight_phases.c) makes system calls in phases the test drives,
each answered with its CLOCK_MONOTONIC bounds, so a dump is checked against the phases that
lie inside its window (the window's bounds are in the dump's options)."""
import json
import os
import re
import signal
import time

from helpers import (BPFSIGHT, Recorder, check, dump, eq, info, need_root, row, run, spawn,
                     stats, tell, tmpdir, wait_for, workload)

PHASES = workload("flight_phases")
MS = 1_000_000


class Flight:
    """A phases workload and a flight recorder attached to it (-p)."""

    def __init__(self, *opts, families=("-t", "osrt", "--osrt-threshold", "0")):
        self.w = spawn([PHASES])
        self.pid = int(re.match(r"pid (\d+)", self.w.stdout.readline()).group(1))
        self.dir = tmpdir()
        self.r = Recorder(*families, "-p", str(self.pid), *opts,
                          out=os.path.join(self.dir, "fr.bst"))
        self.r.wait_ready()

    def phase(self, cmd):
        """Run one phase; returns (t0, t1, calls) as the workload measured them."""
        tell(self.w, cmd)
        m = re.match(r"ok (\d+) (\d+) (\d+)", self.w.stdout.readline())
        return int(m.group(1)), int(m.group(2)), int(m.group(3))

    def dumps(self):
        return re.findall(r"flight recorder: wrote (\S+):", self.r.stderr)

    def wait_dumps(self, n, timeout=30):
        wait_for(lambda: len(self.dumps()) >= n, timeout, f"{n} dumps: {self.r.stderr[-600:]}")
        return self.dumps()

    def stop(self):
        tell(self.w, "q")
        self.w.wait(10)
        rc = self.r.wait(60)  # -p: the recording ends with its target
        eq(rc, 0, f"recorder exit status ({self.r.stderr[-800:]})")
        return self.r.stderr


def window(path):
    """(start, end) of a dump's window, from its options."""
    opts = info(path)["options"]
    return (int(re.search(r"window_start_ns=(\d+)", opts).group(1)),
            int(re.search(r"window_end_ns=(\d+)", opts).group(1)))


def syscalls(path, pid, name):
    return [e for e in dump(path) if e["kind"] == "syscall" and e["pid"] == pid and
            e["name"] == name]


def process_names(path):
    out = path + ".json"
    run([BPFSIGHT, "export", path, "--format", "chrome", "-o", out, "--force"], check=True)
    with open(out) as fh:
        doc = json.load(fh)
    evs = doc["traceEvents"] if isinstance(doc, dict) else doc
    return {e["pid"]: e["args"]["name"] for e in evs
            if e.get("ph") == "M" and e.get("name") == "process_name"}


def wait_until_mono(t_ns):
    while time.monotonic_ns() < t_ns:
        time.sleep(0.05)


def test_flight_dump_holds_exactly_the_window():
    need_root()
    f = Flight("--flight-recorder", "5s", "--stacks", "osrt:0")
    a = f.phase("g 1000")
    wait_until_mono(a[1] + 6000 * MS)  # phase A is older than the window from here on
    b = f.phase("g 300")
    f.r.p.send_signal(signal.SIGUSR1)
    path = f.wait_dumps(1)[0]
    eq(os.path.basename(path), "fr-1.bst", "the dump's name: -o's stem + -1")
    start, end = window(path)
    check(a[1] < start <= b[0] and b[1] <= end, f"phase B in the window, A before it: "
          f"A {a}, B {b}, window {start}..{end}")
    calls = syscalls(path, f.pid, "getppid")
    eq(len(calls), 300, "getppid calls in the dump: phase B's 300, none of phase A's 1000")
    check(all(b[0] <= e["ts"] <= b[1] for e in calls), "every call inside phase B")
    eq(row(stats(path, "osrt_sum")["osrt_sum"], name="getppid")["count"], 300,
       "stats osrt_sum on the dump")
    # The stack of the call site was interned during phase A, before the window: the dump
    # still names it (the metadata store), with the workload's own function.
    check(all(e.get("stack") for e in calls), "every call has its stack")
    frames = {fr.get("func") for fr in calls[0]["stack"]}
    check("syscall" in frames, f"the call site's function in the stack: {frames}")
    check(info(path)["clean_close"], "the dump is cleanly closed")
    # The process was named when the recording began, long before the window.
    eq(process_names(path).get(f.pid), "flight_phases", "the process's name in the dump")
    check(not os.path.exists(os.path.join(f.dir, "fr.bst")), "nothing written to -o itself")
    f.stop()
