"""sched family: off-CPU intervals, blocked vs runnable, per thread."""
import re

from helpers import check, dump, eq, need_root, record, row, stats, workload

SYSCALLS = workload("syscalls")
MS = 1_000_000


def test_sleeps_are_blocked_off_cpu_time():
    need_root()
    # 20 sleeps of 5 ms: the thread is off CPU, blocked, at least 20 times for >= 5 ms.
    p, out = record([SYSCALLS, "0", "20", "5000"], "-t", "sched")
    eq(p.returncode, 0, f"record exit ({p.stderr})")
    pid = int(re.search(r"^pid (\d+)", p.stdout, re.M).group(1))
    sched = stats(out, "sched_sum")["sched_sum"]
    r = row(sched, tid=pid)
    eq(r["pid"], pid, "pid")
    check(r["switches"] >= 20, f"switches {r['switches']} < 20")
    check(r["blocked_ns"] >= 20 * 5 * MS, f"blocked {r['blocked_ns']} < 100 ms")
    check(r["blocked_ns"] <= r["offcpu_ns"], "blocked is part of off-CPU time")
    check(r["runnable_ns"] + r["blocked_ns"] == r["offcpu_ns"], "offcpu = blocked + runnable")
    check(r["oncpu_ns"] > 0, "some on-CPU time")
    check(r["thread_name"] == "syscalls", f"thread name {r['thread_name']}")
    long_blocks = [e for e in dump(out) if e["kind"] == "offcpu" and e["tid"] == pid
                   and e["name"] == "blocked" and e["dur"] >= 5 * MS]
    eq(len(long_blocks), 20, "off-CPU intervals of >= 5 ms")
    for e in long_blocks:
        check(e["dur"] < 1000 * MS, f"a 5 ms sleep off CPU for {e['dur']} ns")
        check(e["args"]["state"] != 0, "blocked state recorded")
