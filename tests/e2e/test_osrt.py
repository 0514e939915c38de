"""osrt family on the real kernel: exact syscall counts in every target mode."""
import re

from helpers import (Recorder, alone, check, dump, eq, info, need_root, record, row, spawn, stats,
                     wait_for, workload)

# For tests/run_tests.py: about how long these tests take on CI's machine (its order).
SECONDS = 3

SYSCALLS = workload("syscalls")
MS = 1_000_000


def pid_of(stdout):
    return int(re.search(r"^pid (\d+)", stdout, re.M).group(1))


def test_launch_exact_counts():
    need_root()
    p, out = record([SYSCALLS, "1000", "20", "1000"], "-t", "osrt")
    eq(p.returncode, 0, f"record exit ({p.stderr})")
    osrt = stats(out, "osrt_sum")["osrt_sum"]
    gp = row(osrt, name="getppid")
    eq(gp["count"], 1000, "getppid calls")
    ns = row(osrt, name="nanosleep")
    eq(ns["count"], 20, "nanosleep calls")
    # 1 ms sleeps: never shorter, and not absurdly longer on a loaded 2-core VM.
    check(ns["min_ns"] >= 1 * MS, f"nanosleep min {ns['min_ns']} < 1 ms")
    check(ns["max_ns"] < 1000 * MS, f"nanosleep max {ns['max_ns']} >= 1 s")
    check(1 * MS <= ns["avg_ns"] <= 100 * MS, f"nanosleep avg {ns['avg_ns']}")
    check(ns["min_ns"] <= ns["med_ns"] <= ns["max_ns"], "median within min..max")
    check(abs(ns["avg_ns"] * 20 - ns["total_ns"]) <= 20, "total = avg * count")
    check(gp["max_ns"] < 100 * MS, f"getppid max {gp['max_ns']}")
    # Each row's share is rounded to 0.1: the sum is 100 within 0.05 a row.
    total_pct = sum(r["time_pct"] for r in osrt)
    check(abs(total_pct - 100.0) <= 0.05 * len(osrt) + 1e-6,
          f"time_pct sums to {total_pct} over {len(osrt)} rows")


def test_threshold_zero_records_every_call():
    need_root()
    p, out = record([SYSCALLS, "300", "3", "100"], "-t", "osrt", "--osrt-threshold", "0")
    eq(p.returncode, 0, f"record exit ({p.stderr})")
    pid = pid_of(p.stdout)
    evs = [e for e in dump(out) if e["kind"] == "syscall" and e["pid"] == pid]
    eq(sum(e["name"] == "getppid" for e in evs), 300, "getppid events")
    sleeps = [e for e in evs if e["name"] == "nanosleep"]
    eq(len(sleeps), 3, "nanosleep events")
    for e in sleeps:
        check(e["dur"] >= 100_000, f"nanosleep of 100 us lasted {e['dur']} ns")
        eq(e["args"]["ret"], 0, "nanosleep return value")
        eq(e["tid"], pid, "single-threaded: tid == pid")
    ts = [e["ts"] for e in evs if e["name"] == "getppid"]
    eq(ts, sorted(ts), "one thread's calls are in time order")


def test_attach_to_running_blocked_process():
    need_root()
    w = spawn([SYSCALLS, "--wait-stdin", "500", "10", "1000"])
    pid = pid_of(w.stdout.readline())
    # attach while it is blocked in read(0): asleep, not still on its way there
    wait_for(lambda: open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[0] == "S", 30,
             "the workload blocked in read(0)")
    r = Recorder("-t", "osrt", "-p", str(pid))
    r.wait_ready()
    w.stdin.write("g")
    w.stdin.flush()
    eq(w.wait(30), 0, "workload exit")
    # The recorder notices its only target exited and stops by itself.
    eq(r.wait(30), 0, f"recorder exit ({r.stderr})")
    osrt = stats(r.out, "osrt_sum")["osrt_sum"]
    eq(row(osrt, name="getppid")["count"], 500, "getppid calls")
    eq(row(osrt, name="nanosleep")["count"], 10, "nanosleep calls")
    meta = info(r.out)
    check(meta["clean_close"], "file closed cleanly")
    check(f"pid: {pid}" in meta["target"], f"target {meta['target']}")


@alone("a system-wide recording (-a): other tests' processes would be traced by it")
def test_system_wide_sees_new_processes():
    need_root()
    r = Recorder("-a", "-t", "osrt", "--osrt-threshold", "0")
    r.wait_ready()
    w = spawn([SYSCALLS, "200", "4", "1000"])
    pid = pid_of(w.stdout.readline())
    eq(w.wait(30), 0, "workload exit")  # its events are in the ring: stop drains it
    eq(r.stop(), 0, f"recorder exit ({r.stderr})")
    evs = [e for e in dump(r.out) if e["kind"] == "syscall" and e["pid"] == pid]
    eq(sum(e["name"] == "getppid" for e in evs), 200, "getppid events")
    eq(sum(e["name"] == "nanosleep" for e in evs), 4, "nanosleep events")
    meta = info(r.out)
    eq(meta["target"], "system-wide", "target")
    check(meta["clean_close"], "clean close after SIGINT")


def test_launch_follows_children():
    need_root()
    p, out = record([SYSCALLS, "--fork", "300", "5", "500"], "-t", "osrt",
                    "--osrt-threshold", "0")
    eq(p.returncode, 0, f"record exit ({p.stderr})")
    parent = pid_of(p.stdout)
    child = int(re.search(r"^child (\d+)", p.stdout, re.M).group(1))
    evs = [e for e in dump(out) if e["kind"] == "syscall"]
    for pid in (parent, child):
        mine = [e for e in evs if e["pid"] == pid]
        eq(sum(e["name"] == "getppid" for e in mine), 300, f"getppid of {pid}")
        eq(sum(e["name"] == "nanosleep" for e in mine), 5, f"nanosleep of {pid}")
    forks = [e for e in dump(out) if e["kind"] == "fork" and e["args"]["child_pid"] == child]
    eq(len(forks), 1, "fork event of the child")


def test_threads_counted_and_named():
    need_root()
    p, out = record([SYSCALLS, "--threads", "4", "100", "2", "500"])
    eq(p.returncode, 0, f"record exit ({p.stderr})")
    rep = stats(out)
    eq(row(rep["osrt_sum"], name="getppid")["count"], 400, "getppid over 4 threads")
    eq(row(rep["osrt_sum"], name="nanosleep")["count"], 8, "nanosleep over 4 threads")
    names = {r["thread_name"] for r in rep["sched_sum"]}
    for i in range(4):
        check(f"worker-{i}" in names, f"thread worker-{i} named in sched_sum ({names})")
