"""sched family: off-CPU intervals, blocked vs runnable, per thread."""
import json
import os
import re

from helpers import (BUILD, SLOWDOWN, Skip, check, dump, eq, info, need_root, record, row, stats,
                     workload)

# For tests/run_tests.py: about how long these tests take on CI's machine (its order).
SECONDS = 3

SYSCALLS = workload("syscalls")
PINGPONG = os.path.join(BUILD, "bench", "pingpong")  # built by test-build too
MS = 1_000_000


def test_sleeps_are_blocked_off_cpu_time():
    need_root()
    # 20 sleeps of 5 ms: each is >= ~5 ms off CPU. Blocked, mostly: a thread preempted inside
    # nanosleep whose timer fired meanwhile returns without blocking (it was runnable), which
    # the kernel's count of voluntary switches tells (syscalls --sched).
    truth, out, pid, _ = complete_run(["0", "20", "5000"], "sched,osrt")
    lo, hi = truth["switches"]
    vlo, vhi = lo - truth["preemptions"][1], hi - truth["preemptions"][0]
    sched = stats(out, "sched_sum")["sched_sum"]
    r = row(sched, tid=pid)
    eq(r["pid"], pid, "pid")
    check(r["switches"] >= lo, f"switches {r['switches']} < {lo}, the kernel's count")
    # A 5 ms sleep is off CPU from the switch-out (a little after the call began) until
    # switched in again; blocked until the timer's wakeup, runnable after it (a loaded box
    # shifts time from blocked to runnable): off-CPU >= ~5 ms a sleep, blocked most of it.
    check(r["offcpu_ns"] >= 20 * 49 * MS // 10, f"off CPU {r['offcpu_ns']} < 98 ms")
    check(r["blocked_ns"] >= vlo * 4 * MS, f"blocked {r['blocked_ns']} < {vlo} x 4 ms")
    check(r["blocked_ns"] <= r["offcpu_ns"], "blocked is part of off-CPU time")
    check(r["runnable_ns"] + r["blocked_ns"] == r["offcpu_ns"], "offcpu = blocked + runnable")
    check(r["oncpu_ns"] > 0, "some on-CPU time")
    check(r["thread_name"] == "syscalls", f"thread name {r['thread_name']}")
    events = dump(out)
    sleeps = [e for e in events if e["kind"] == "syscall" and e["tid"] == pid
              and e["name"] == "nanosleep"]
    eq(len(sleeps), 20, "nanosleep calls")
    # Each sleep that blocked is one blocked interval inside its syscall (other long blocks,
    # e.g. a page-in at start on a loaded machine, are not the sleeps).
    long_blocks = [e for e in events if e["kind"] == "offcpu" and e["tid"] == pid
                   and e["name"] == "blocked" and e["dur"] >= 49 * MS // 10
                   and any(s["ts"] <= e["ts"] and e["ts"] + e["dur"] <= s["ts"] + s["dur"]
                           for s in sleeps)]
    check(min(vlo, 20) <= len(long_blocks) <= min(vhi, 20),
          f"{len(long_blocks)} off-CPU intervals of >= 4.9 ms inside the sleeps, the kernel "
          f"counted {vlo}..{vhi} voluntary switches")
    for e in long_blocks:
        check(e["dur"] < 1000 * MS, f"a 5 ms sleep off CPU for {e['dur']} ns")
        check(e["args"]["state"] != 0, "blocked state recorded")


def not_task_ns():
    """The machine's time in interrupts, soft interrupts and taken by the hypervisor (steal)
    so far, all CPUs (/proc/stat's irq, softirq and steal), in ns: time a thread's CPU time
    leaves out (with IRQ_TIME_ACCOUNTING and steal accounting) while it is on a CPU."""
    with open("/proc/stat") as f:
        cpu = f.readline().split()
    ticks = sum(int(v) for v in cpu[6:9])
    return ticks * 1_000_000_000 // os.sysconf("SC_CLK_TCK")


def complete_run(args, families="sched"):
    """`record -t FAMILIES -- syscalls --sched ARGS` until the thread's offcpu records between
    the workload's t0 and t1 are as many as the kernel's switches, five tries at most. A switch
    no sched program saw (docs/USAGE.md, sched) is never silent: each try's records plus its
    `sched_missed` losses cover the kernel's count. (truth, trace, pid, those records)."""
    for _ in range(5):
        p, out = record([SYSCALLS, "--sched", *args], "-t", families)
        eq(p.returncode, 0, f"record exit ({p.stderr})")
        pid = int(re.search(r"^pid (\d+)", p.stdout, re.M).group(1))
        truth = json.loads(re.search(r"^sched (\{.*\})$", p.stdout, re.M).group(1))
        check(truth["delay_ns"] < 1 << 63, "the workload read its schedstat")
        lost = info(out)["lost"]
        missed = lost.pop("sched_missed", 0)
        eq(lost, {}, "events lost other than sched_missed")
        recs = sorted((e for e in dump(out) if e["kind"] == "offcpu" and e["tid"] == pid
                       and truth["t0"] <= e["ts"] <= truth["t1"]), key=lambda e: e["ts"])
        lo, hi = truth["switches"]
        check(lo <= len(recs) + missed and len(recs) <= hi,
              f"{len(recs)} off-CPU intervals and {missed} switches missed (counted), the "
              f"kernel counted {lo}..{hi}")
        if lo <= len(recs) <= hi:
            return truth, out, pid, recs
    # Each of them covered the kernel's count with its counted misses (checked above); none
    # had every switch, so no time can be compared with the thread's own (docs/USAGE.md,
    # sched: under load a switch now and then reaches no program): said, not failed.
    raise Skip(f"5 recordings, each missing switches the kernel made (counted as sched_missed, "
               f"checked): {len(recs)} off-CPU intervals, the kernel counted {lo}..{hi}: the "
               f"times need a recording that missed none")


def test_pingpong_one_interval_per_switch_with_its_waker():
    """bench/pingpong: two threads pinned to one CPU pass a byte N times over two pipes. Each
    round trip takes each thread off the CPU once: blocked in read(), woken by the other
    thread's write(), or preempted by the thread it just woke (then runnable, no wakeup)."""
    need_root()
    n = 3000
    p, out = record([PINGPONG, "-n", str(n), "-c", "0"], "-t", "sched")
    eq(p.returncode, 0, f"record exit ({p.stderr})")
    eq(json.loads(p.stdout)["round_trips"], n, "round trips")
    lost = info(out)["lost"]
    missed = lost.pop("sched_missed", 0)  # switches no sched program saw: counted (USAGE.md)
    eq(lost, {}, "events lost other than sched_missed")
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
        check(n - 1 - missed <= len(paired) <= len(mine) <= n + 50,
              f"thread {tid}: {len(paired)} intervals of the exchange, {len(mine)} in all, "
              f"for {n} round trips ({missed} switches missed)")
        # A read() on a pipe sleeps interruptibly (1); other blocks (a page-in: 2, or 0x102,
        # a killable wait on a network or 9p file system, as check-kernels' VM root) are not
        # the exchange's and have nothing to pair with.
        odd = [e for e in mine if e not in paired and e["args"]["state"] == 1]
        check(len(odd) <= 10, f"thread {tid}: intervals not of the exchange: {len(odd)} "
              f"({len(mine) - len(paired)} with other waits)")
        for e in mine:
            a = e["args"]
            eq(a["blocked_ns"] + a["runnable_ns"], e["dur"], f"thread {tid}: blocked + runnable")
            check(0 < e["dur"] < 10**9, f"thread {tid}: off CPU {e['dur']} ns")
            if e["name"] == "preempted":
                eq((a["state"], a["blocked_ns"], a["waker_tid"]), (0, 0, 0),
                   f"thread {tid}: a preemption is runnable throughout")
        check(all(e["args"]["oncpu_ns"] > 0 for e in mine[1:]), f"thread {tid}: on-CPU slices")


def test_figures_match_the_threads_own_accounting():
    """Ground truth from the kernel's per-thread accounting, read by the workload itself
    (syscalls --sched): its context switches and preemptions (getrusage nvcsw, nivcsw), its
    CPU time (CLOCK_THREAD_CPUTIME_ID) and its time runnable, waiting for a CPU (run_delay of
    /proc/thread-self/schedstat), between two clock reads; bpfsight's offcpu records whose
    switch-out falls between them must tell the same.

    Known gap: on a loaded machine a context switch now and then reaches no sched program
    (counted as the loss sched_missed; up to a few in a hundred with four CPU hogs on two
    cores): the thread's previous slice or its off-CPU interval is then misattributed. The
    times are compared on a recording whose switch count is the kernel's (complete_run); the
    count itself is then exact."""
    need_root()
    other0 = not_task_ns()
    # ~0.35 s of CPU in getppid: /proc/stat's rounding (below) is small beside it
    truth, _, _, recs = complete_run(["2000000", "20", "5000"])
    # /proc/stat says each field of the machine's total in whole ticks (USER_HZ): a difference
    # of two reads leaves out up to a tick of each, whatever it reads (0 once in a full run,
    # with 6.9 ms on CPU beyond the thread's CPU time: steal under a tick)
    other = not_task_ns() - other0 + 3 * 1_000_000_000 // os.sysconf("SC_CLK_TCK")
    lo, hi = truth["switches"]
    t0, t1 = truth["t0"], truth["t1"]
    check(lo >= 20, f"the kernel counted {lo} switches for 20 sleeps")
    plo, phi = truth["preemptions"]
    pre = sum(1 for e in recs if e["name"] == "preempted")
    check(plo <= pre <= phi, f"{pre} preemptions, the kernel counted {plo}..{phi}")
    # Voluntary switches (nvcsw) are the blocked intervals. Not one per sleep: a thread
    # preempted inside nanosleep whose timer fired meanwhile returns without blocking.
    blocked = sum(1 for e in recs if e["name"] == "blocked")
    check(lo - phi <= blocked <= hi - plo, f"{blocked} blocked intervals, the kernel counted "
          f"{lo - phi}..{hi - plo} voluntary switches")
    # On CPU between t0 and t1: each record's slice before its switch-out, clipped to t0,
    # and the last slice, from the last switch-in to t1.
    oncpu = sum(e["ts"] - max(t0, e["ts"] - e["args"]["oncpu_ns"]) for e in recs)
    oncpu += t1 - (recs[-1]["ts"] + recs[-1]["dur"])
    runnable = sum(e["args"]["runnable_ns"] for e in recs)
    cpu, delay = truth["cpu_ns"], truth["delay_ns"]
    # A slice is wall time on the CPU; the thread's CPU time leaves out the interrupts served
    # and what the hypervisor took from its vCPU meanwhile: at most the machine's over the
    # run (on CPU 50.1 ms against 41.4 ms once in a full run on this shared VM, and twice in
    # 40 runs of the module alone, each right after a rebuild).
    check(0.9 * cpu - 2 * MS <= oncpu <= 1.1 * cpu + 2 * MS + other,
          f"on CPU {oncpu} ns, the thread's CPU time {cpu} ns, interrupts and steal {other} ns")
    # The slack scales with the machine (SLOWDOWN: QEMU's TCG in make check-kernels, where
    # wakeup to switch-in read 1.3-2.9 ms over 20 sleeps against a run_delay of 0.05-0.66 ms,
    # with this session's binary and the one before it alike).
    slack = 2 * MS * SLOWDOWN
    check(0.9 * delay - slack <= runnable <= 1.02 * delay + slack,
          f"runnable {runnable} ns, run_delay {delay} ns")
