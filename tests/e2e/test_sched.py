"""sched family: off-CPU intervals, blocked vs runnable, per thread."""
import json
import os
import re

from helpers import BUILD, check, dump, eq, info, need_root, record, row, stats, workload

SYSCALLS = workload("syscalls")
PINGPONG = os.path.join(BUILD, "bench", "pingpong")  # built by test-build too
MS = 1_000_000


def test_sleeps_are_blocked_off_cpu_time():
    need_root()
    # 20 sleeps of 5 ms: the thread is off CPU, blocked, at least 20 times for >= 5 ms.
    p, out = record([SYSCALLS, "0", "20", "5000"], "-t", "sched,osrt")
    eq(p.returncode, 0, f"record exit ({p.stderr})")
    pid = int(re.search(r"^pid (\d+)", p.stdout, re.M).group(1))
    sched = stats(out, "sched_sum")["sched_sum"]
    r = row(sched, tid=pid)
    eq(r["pid"], pid, "pid")
    check(r["switches"] >= 20, f"switches {r['switches']} < 20")
    # A 5 ms sleep is off CPU from the switch-out (a little after the call began) until
    # switched in again; blocked until the timer's wakeup, runnable after it (a loaded box
    # shifts time from blocked to runnable): off-CPU >= ~5 ms a sleep, blocked most of it.
    check(r["offcpu_ns"] >= 20 * 49 * MS // 10, f"off CPU {r['offcpu_ns']} < 98 ms")
    check(r["blocked_ns"] >= 20 * 4 * MS, f"blocked {r['blocked_ns']} < 80 ms")
    check(r["blocked_ns"] <= r["offcpu_ns"], "blocked is part of off-CPU time")
    check(r["runnable_ns"] + r["blocked_ns"] == r["offcpu_ns"], "offcpu = blocked + runnable")
    check(r["oncpu_ns"] > 0, "some on-CPU time")
    check(r["thread_name"] == "syscalls", f"thread name {r['thread_name']}")
    events = dump(out)
    sleeps = [e for e in events if e["kind"] == "syscall" and e["tid"] == pid
              and e["name"] == "nanosleep"]
    eq(len(sleeps), 20, "nanosleep calls")
    # Each sleep is one blocked interval inside its syscall (other long blocks, e.g. a
    # page-in at start on a loaded machine, are not the sleeps).
    long_blocks = [e for e in events if e["kind"] == "offcpu" and e["tid"] == pid
                   and e["name"] == "blocked" and e["dur"] >= 49 * MS // 10
                   and any(s["ts"] <= e["ts"] and e["ts"] + e["dur"] <= s["ts"] + s["dur"]
                           for s in sleeps)]
    eq(len(long_blocks), 20, "off-CPU intervals of >= 4.9 ms inside the sleeps")
    for e in long_blocks:
        check(e["dur"] < 1000 * MS, f"a 5 ms sleep off CPU for {e['dur']} ns")
        check(e["args"]["state"] != 0, "blocked state recorded")


def test_pingpong_one_interval_per_switch_with_its_waker():
    """bench/pingpong: two threads pinned to one CPU pass a byte N times over two pipes. Each
    round trip takes each thread off the CPU once: blocked in read(), woken by the other
    thread's write(), or preempted by the thread it just woke (then runnable, no wakeup)."""
    need_root()
    n = 3000
    p, out = record([PINGPONG, "-n", str(n), "-c", "0"], "-t", "sched")
    eq(p.returncode, 0, f"record exit ({p.stderr})")
    eq(json.loads(p.stdout)["round_trips"], n, "round trips")
    eq(info(out)["lost_total"], 0, "events lost")
    events = dump(out)
    pid = [e["pid"] for e in events if e["kind"] == "exec" and e["name"] == "pingpong"]
    eq(len(set(pid)), 1, "one pingpong process")
    off = [e for e in events if e["kind"] == "offcpu" and e["pid"] == pid[0]]
    tids = {e["tid"] for e in off}
    eq(len(tids), 2, f"threads off CPU: {tids}")
    for tid in tids:
        other = (tids - {tid}).pop()
        mine = [e for e in off if e["tid"] == tid]
        # The echo thread's first block (the first read) and the main thread's last one (the
        # join) fall outside the round trips; other tasks on the CPU can add preemptions.
        paired = [e for e in mine if e["name"] == "preempted" or
                  (e["name"] == "blocked" and e["args"]["waker_tid"] == other)]
        check(n - 1 <= len(paired) <= len(mine) <= n + 50,
              f"thread {tid}: {len(paired)} intervals of the exchange, {len(mine)} in all, "
              f"for {n} round trips")
        check(len(paired) >= len(mine) - 10, f"thread {tid}: intervals not of the exchange: "
              f"{len(mine) - len(paired)}")
        for e in mine:
            a = e["args"]
            eq(a["blocked_ns"] + a["runnable_ns"], e["dur"], f"thread {tid}: blocked + runnable")
            check(0 < e["dur"] < 10**9, f"thread {tid}: off CPU {e['dur']} ns")
            if e["name"] == "preempted":
                eq((a["state"], a["blocked_ns"], a["waker_tid"]), (0, 0, 0),
                   f"thread {tid}: a preemption is runnable throughout")
        check(all(e["args"]["oncpu_ns"] > 0 for e in mine[1:]), f"thread {tid}: on-CPU slices")
