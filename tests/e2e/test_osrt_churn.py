"""osrt under process churn: the aggregates of exited threads are flushed and deleted, so a
map sized for the live threads never fills with dead ones and every short call is counted."""
import json
import os
import re
import shutil
import subprocess

import helpers
from helpers import (BPFSIGHT, Recorder, alone, check, eq, info, need_root, row, stats, tmpdir,
                     workload)

# For tests/run_tests.py: about how long these tests take on CI's machine (its order).
SECONDS = 40

CHURN = workload("churn")
SYSCALLS = workload("syscalls")
# More children than the forced map has entries: the old code (keys never deleted) lost the
# calls of every child after the first AGG_ENTRIES as agg_map_full. The recorder deletes dead
# keys every AGG_ENTRIES / 8 exits it reads: it may lag that far behind the children by 7/8
# of the map (seconds of them).
AGG_ENTRIES = 4096
CHILDREN = 5_000
CALLS = 7


def env_with(entries):
    return dict(os.environ, BPFSIGHT_MAP_ENTRIES=f"sys_agg={entries}")


def test_churn_launch_exact_counts():
    need_root()
    out = os.path.join(tmpdir(), "t.bst")
    p = subprocess.run([BPFSIGHT, "record", "-o", out, "-t", "osrt", "--", CHURN,
                        str(CHILDREN), str(CALLS), "2"], capture_output=True, text=True,
                       timeout=300, env=env_with(AGG_ENTRIES))
    eq(p.returncode, 0, f"record exit ({p.stderr})")
    meta = info(out)
    eq(meta["lost_total"], 0, f"events lost: {meta['lost']}")
    osrt = stats(out, "osrt_sum")["osrt_sum"]
    eq(row(osrt, name="getppid")["count"], CHILDREN * CALLS, "getppid calls of the children")


@alone("a system-wide recording (-a): other tests' processes would be traced by it; it counts "
       "every sched_get_priority_max of the machine")
def test_churn_system_wide_exact_counts():
    need_root()
    r = Recorder("-a", "-t", "osrt")
    r.wait_ready()
    w = subprocess.run([CHURN, str(CHILDREN), str(CALLS), "2", "prio"], capture_output=True,
                       text=True, timeout=300)
    eq(w.returncode, 0, f"churn exit ({w.stderr})")
    eq(r.stop(), 0, f"recorder exit ({r.stderr})")
    meta = info(r.out)
    eq(meta["lost"].get("agg_map_full", 0), 0, f"agg_map_full: {meta['lost']}")
    osrt = stats(r.out, "osrt_sum")["osrt_sum"]
    eq(row(osrt, name="sched_get_priority_max")["count"], CHILDREN * CALLS,
       "sched_get_priority_max calls of the children")


def test_agg_map_full_is_counted():
    need_root()
    # 16 live threads with two short-call keys each (getppid, and nanosleep's neighbours) in
    # a map of 4 entries: the map really is full, and what did not fit is counted.
    out = os.path.join(tmpdir(), "t.bst")
    # --osrt-threshold: short on any machine (a getppid under TCG takes over 1 us).
    p = subprocess.run([BPFSIGHT, "record", "-o", out, "-t", "osrt", "--osrt-threshold", "10ms",
                        "--", SYSCALLS, "--threads", "16", "200", "5", "1000"],
                       capture_output=True, text=True, timeout=120, env=env_with(4))
    eq(p.returncode, 0, f"record exit ({p.stderr})")
    meta = info(out)
    check(meta["lost"].get("agg_map_full", 0) > 0, f"agg_map_full counted: {meta['lost']}")
    osrt = stats(out, "osrt_sum")["osrt_sum"]
    # Which keys win the 4 entries depends on timing: getppid may have none at all.
    gp = sum(r["count"] for r in osrt if r["name"] == "getppid")
    check(gp < 17 * 200, f"some getppid calls did not fit: {gp}")
    check("events lost" in p.stderr, f"the end-of-run line says so: {p.stderr}")


IDLE = workload("idle_threads")
THREADS, IDLE_CALLS = 16, 100


def sys_agg_entries(pid):
    """Entries in the sys_agg map that process PID (a recorder) holds, or None."""
    ids = set()
    for fd in os.listdir(f"/proc/{pid}/fdinfo"):
        try:
            with open(f"/proc/{pid}/fdinfo/{fd}") as f:
                ids.update(re.findall(r"^map_id:\s+(\d+)", f.read(), re.M))
        except OSError:
            continue
    for mid in sorted(ids, key=int, reverse=True):  # the family maps come last
        show = subprocess.run(["bpftool", "-j", "map", "show", "id", mid],
                              capture_output=True, text=True)
        if show.returncode or json.loads(show.stdout).get("name") != "sys_agg":
            continue
        dump = subprocess.run(["bpftool", "-j", "map", "dump", "id", mid],
                              capture_output=True, text=True, check=True)
        return len(json.loads(dump.stdout))
    return None


def record_idle_threads(entries, wait_ms, measure=False):
    """Record idle_threads under a sys_agg cap of ENTRIES; with MEASURE, the map's entries
    while every thread is idle. Returns (trace, entries while idle)."""
    out = os.path.join(tmpdir(), "t.bst")
    # Every call aggregated, however long a loaded machine makes it (over the threshold a
    # call is an event of its own, and its key may never enter the map).
    p = subprocess.Popen([BPFSIGHT, "record", "-o", out, "-t", "osrt", "--osrt-threshold",
                          "60s", "--", IDLE,
                          str(THREADS), str(IDLE_CALLS), str(wait_ms)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         env=env_with(entries))
    for line in p.stdout:
        if line.strip() == "idle":
            break
    check(p.poll() is None, "recording while the threads are idle")
    n = sys_agg_entries(p.pid) if measure else None
    _, err = p.communicate(timeout=120)
    eq(p.returncode, 0, f"record exit ({err})")
    return out, n


def test_idle_entries_evicted_under_pressure_keep_totals_exact():
    need_root()
    if not shutil.which("bpftool"):
        raise helpers.Skip("no bpftool to count the map's entries")
    _, idle = record_idle_threads(1 << 20, 3000, measure=True)
    check(idle and idle > 2 * THREADS, f"entries while idle: {idle}")
    # A cap the idle entries fill past 3/4, with no room for each thread's new key: only
    # evicting the idle entries (written as final) makes room.
    cap = idle + THREADS // 2
    out, _ = record_idle_threads(cap, 8000)
    meta = info(out)
    eq(meta["lost_total"], 0, f"events lost under a cap of {cap}: {meta['lost']}")
    osrt = stats(out, "osrt_sum")["osrt_sum"]
    eq(row(osrt, name="getppid")["count"], 2 * THREADS * IDLE_CALLS, "getppid calls")
    eq(row(osrt, name="sched_get_priority_max")["count"], THREADS * IDLE_CALLS,
       "sched_get_priority_max calls")
