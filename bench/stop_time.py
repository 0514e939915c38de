#!/usr/bin/env python3
"""How long `bpfsight record -t cuda` takes to stop, from CMD's exit to the recorder's.

On a kernel without uprobe_multi (< 6.6) every uprobe site is a perf-event link whose
teardown the kernel serializes with its own grace periods; bpfsight hands that wait to a
detached process (user/record/link_reaper.c). This compares the two, alternating, in one run:
`handoff` (the default) and `inline` (BPFSIGHT_DETACH_INLINE=1: the recorder waits itself).
Between runs it waits for the previous run's bpfsight-detach to finish, so each run starts
on a quiet kernel. On a kernel with uprobe_multi, pass --force to take the fallback
(BPFSIGHT_FORCE_FALLBACKS=uprobe_multi).

  bench/stop_time.py [--build build] [--runs 3] [--force]     (as root; RESULTS.md)
"""
import argparse
import os
import subprocess
import sys
import time


def detach_running():
    out = subprocess.run(["ps", "-eo", "comm"], capture_output=True, text=True).stdout
    return sum(1 for line in out.splitlines() if line.strip() == "bpfsight-detach")


def one(build, mode, force):
    env = dict(os.environ)
    if mode == "inline":
        env["BPFSIGHT_DETACH_INLINE"] = "1"
    if force:
        env["BPFSIGHT_FORCE_FALLBACKS"] = "uprobe_multi"
    work = os.path.join(build, "tests", "cuda", "cuda_api_shared")
    t0 = time.monotonic()
    p = subprocess.Popen([os.path.join(build, "bpfsight"), "record", "-o", "/tmp/stop_time.bst",
                          "--force", "-t", "cuda", "--", work, "1"], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, env=env)
    last = None
    for line in p.stdout:  # the workload's own lines: its last one is printed at its exit
        last = time.monotonic()
    err = p.stderr.read()
    p.wait()
    end = time.monotonic()
    if p.returncode or last is None:
        sys.exit(f"{mode}: record failed ({p.returncode}): {err[-500:]}")
    return end - last, end - t0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--force", action="store_true")
    a = ap.parse_args()
    res = {"handoff": [], "inline": []}
    sites = subprocess.run([os.path.join(a.build, "bpfsight"), "record", "-t", "cuda",
                            "--dry-run", "--", os.path.join(a.build, "tests", "cuda",
                                                            "cuda_api_shared"), "0"],
                           capture_output=True, text=True).stdout
    nsites = sum(1 for line in sites.splitlines() if line.startswith("cuda "))
    for i in range(a.runs):
        for mode in ("handoff", "inline") if i % 2 == 0 else ("inline", "handoff"):
            t0 = time.monotonic()
            while detach_running() and time.monotonic() - t0 < 600:
                time.sleep(0.5)
            stop, total = one(a.build, mode, a.force)
            res[mode].append(stop)
            print(f"run {i} {mode:8s} stop {stop:7.2f} s  (whole recording {total:6.2f} s)",
                  flush=True)
    t0 = time.monotonic()
    while detach_running() and time.monotonic() - t0 < 600:
        time.sleep(0.5)
    med = {m: sorted(v)[len(v) // 2] for m, v in res.items()}
    print(f"uname {os.uname().release}; {nsites} cuda sites listed by --dry-run "
          f"(entry + return probe each); median stop: handoff {med['handoff']:.2f} s, "
          f"inline {med['inline']:.2f} s; last bpfsight-detach gone after "
          f"{time.monotonic() - t0:.1f} s more")


if __name__ == "__main__":
    main()
