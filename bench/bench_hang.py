# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""The hang trigger (section `hang` of bench/RESULTS.md; docs/PRODUCTION.md, "Hangs"):

- CPU per event: the recorder's own CPU while bench/loadgen makes ~1 M getppid/s (osrt, a
  record per call, and the nccl family attached: its call stacks are what the trigger reads),
  `--flight-recorder 60s` against the same with `--trigger hang:60s`, alternating; the ratio
  per pair. The trigger reads no record but the progress types' (none here): what it adds is
  its look every 100 ms.
- The look alone: the recorder's CPU over an idle target for SECONDS, with and without the
  trigger: the difference per look. The targets have RANK=0 in their environment: each look
  also reads their main thread's CPU time (the rule for a job on gloo, docs/PRODUCTION.md).
- Stall to dump: four ranks of tests/workloads/nccl_cpu/hang_rank.py, one stalls before
  collective 30, `--trigger hang:3s`: from the stall (the rank's own CLOCK_MONOTONIC) to the
  dump's window end (when the dump was cut: DUR plus the look's period plus the snapshot), and
  the snapshot's and the dump's own times as the recorder says them.

    python3 bench/run_bench.py --build B --only hang
"""

import os
import re
import subprocess
import sys
import time

from bench_common import REPO, BenchError, block_end, block_head, fmt_spread, median
from bench_flight import Rec, per_mcall, proc_cpu_s

NAME = "hang"
RATE = 1_000_000
RATIO_GOAL = 1.05
DUR_S = 3
STALL_GOAL_S = DUR_S + 1  # the bound: the dump within DUR + 1 s of the stall
# The targets are a rank (RANK in their environment, as torchrun sets it): each look also reads
# its main thread's CPU time from /proc, the trigger's rule for a job on any backend.
RANKED = dict(os.environ, RANK="0", WORLD_SIZE="1")


def cpu_run(ctx, hang, seconds):
    opts = ["-t", "osrt,nccl", "--flight-recorder", "60s"] + (["--trigger", "hang:60s"]
                                                                if hang else [])
    r = Rec(ctx, opts, ["-t", "2", "-d", str(seconds), "-r", str(RATE)], env=RANKED)
    c0 = proc_cpu_s(r.p.pid)
    r.go()
    made = r.load.stdout.read()
    r.load.wait()
    cpu = proc_cpu_s(r.p.pid) - c0
    r.finish()
    return {"cpu": cpu, "calls": int(re.search(r'"calls":\s*(\d+)', made).group(1)),
            "cmd": ctx.r.show_cmd(r.cmd, {r.out: "T.bst", str(r.load.pid): "PID"})}


def idle_run(ctx, hang, seconds):
    """The recorder's CPU over SECONDS of a target that sleeps."""
    target = subprocess.Popen(["sleep", str(seconds + 30)], env=RANKED)
    cmd = [ctx.r.bpfsight, "record", "--force", "-t", "osrt,nccl", "-o", ctx.r.tmpfile(".bst"),
           "--flight-recorder", "60s", "-p", str(target.pid)] + (["--trigger", "hang:60s"]
                                                                 if hang else [])
    p = subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True)
    for line in p.stderr:
        if "Ctrl-C" in line:
            break
    c0 = proc_cpu_s(p.pid)
    time.sleep(seconds)
    cpu = proc_cpu_s(p.pid) - c0
    target.kill()
    target.wait()
    p.communicate(timeout=120)
    return cpu


def python():
    for v in ("3.11.7",):
        p = os.path.expanduser(f"~/.pyenv/versions/{v}/bin/python3.11")
        if os.path.exists(p):
            return p
    return sys.executable


def stall_run(ctx):
    """One hung job: (stall to window end s, snapshot ms, dump ms, processes read)."""
    lib = os.path.join(ctx.r.build, "tests", "nccl_cpu", "libnccl.so.2")
    rank_py = os.path.join(REPO, "tests", "workloads", "nccl_cpu", "hang_rank.py")
    if not os.path.exists(lib):
        raise BenchError(f"{lib} not built (make test-build)")
    go = ctx.r.tmpfile(".go")
    env = dict(os.environ, NCCL_CPU_LIB=lib, WORLD_SIZE="4", HANG_GO=go, HANG_AT="30",
               HANG_RANK="2", HANG_KIND="read", HANG_JOB=f"bench-{os.getpid()}-{time.time()}",
               PYTHONUNBUFFERED="1")
    ranks = [subprocess.Popen([python(), rank_py], env=dict(env, RANK=str(r), LOCAL_RANK=str(r)),
                              stdout=subprocess.PIPE, text=True) for r in range(4)]
    pids = [int(p.stdout.readline().split()[2]) for p in ranks]
    out = ctx.r.tmpfile(".bst")
    cmd = [ctx.r.bpfsight, "record", "--force", "-t", "nccl", "--flight-recorder=30s",
           f"--trigger=hang:{DUR_S}s", "-o", out, *sum((["-p", str(p)] for p in pids), [])]
    rec = subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True)
    try:
        for line in rec.stderr:
            if "Ctrl-C" in line:
                break
        open(go, "w").close()
        stall = int(ranks[2].stdout.readline().split()[2])
        snap = wrote = None
        for line in rec.stderr:
            m = re.search(r"processes read in (\d+) ms", line)
            snap = int(m.group(1)) if m else snap
            m = re.search(r"flight recorder: wrote (\S+): .* in (\d+) ms", line)
            if m:
                dump, wrote = m.group(1), int(m.group(2))
                break
        info = subprocess.run([ctx.r.bpfsight, "info", dump], capture_output=True, text=True)
        end = int(re.search(r"window_end_ns=(\d+)", info.stdout).group(1))
        return {"s": (end - stall) / 1e9, "snap_ms": snap, "dump_ms": wrote,
                "cmd": ctx.r.show_cmd(cmd, {out: "T.bst", **{str(p): "PID" for p in pids}})}
    finally:
        for p in ranks:
            p.kill()
            p.wait()
        rec.kill()
        rec.wait()


def run(ctx):
    seconds = 2 if ctx.quick else 5
    pairs = []
    for _ in range(2 if ctx.quick else 3):
        plain = cpu_run(ctx, False, seconds)
        hang = cpu_run(ctx, True, seconds)
        pairs.append((plain, hang))
        ctx.progress("hang cpu", len(pairs), "-", f"flight {plain['cpu']:.2f} s, + hang "
                     f"{hang['cpu']:.2f} s")
    idle_s = 5 if ctx.quick else 20
    idle = [(idle_run(ctx, False, idle_s), idle_run(ctx, True, idle_s))
            for _ in range(1 if ctx.quick else 2)]
    stalls = [stall_run(ctx) for _ in range(2 if ctx.quick else 3)]
    return {"pairs": pairs, "seconds": seconds, "idle": idle, "idle_s": idle_s,
            "stalls": stalls}


def figures(res):
    ratios = [per_mcall(h) / per_mcall(p) for p, h in res["pairs"] if p["calls"] and h["calls"]]
    looks = res["idle_s"] * 10
    per_look = [(h - p) / looks * 1e6 for p, h in res["idle"]]
    # /proc's CPU times tick at 1/CLK_TCK: what a difference cannot show, per look.
    tick_us = 1e6 / os.sysconf("SC_CLK_TCK") / looks
    return {"ratios": ratios, "ratio": median(ratios), "per_look_us": per_look,
            "tick_us": tick_us}


def text(ctx, res):
    f = figures(res)
    st = res["stalls"]
    return (f"hang: CPU per event with/without the trigger {f['ratio']:.2f}x; a look "
            f"{median(f['per_look_us']):.0f} us (+- {f['tick_us']:.0f}); stall to dump "
            f"{median([s['s'] for s in st]):.2f} s (DUR {DUR_S} s)")


def markdown(ctx, res):
    f = figures(res)
    g = ctx.goals
    st, pairs = res["stalls"], res["pairs"]
    worst = max(s["s"] for s in st)
    cells = {
        "cpu": g.check(NAME, "recorder CPU per event, flight recorder + hang / without",
                       f"{f['ratio']:.2f}x", f"<= {RATIO_GOAL}x", f["ratio"] <= RATIO_GOAL),
        "stall": g.check(NAME, f"stall to dump, hang:{DUR_S}s (worst)", f"{worst:.2f} s",
                         f"<= {STALL_GOAL_S} s", worst <= STALL_GOAL_S),
    }
    out = block_head(ctx, NAME, "Hang trigger")
    out.append("```")
    out.append(f"# CPU, {len(pairs)} rounds alternating, the recorder's own utime+stime while "
               f"loadgen runs ({res['seconds']} s paced at 1 M getppid/s, 2 threads):")
    out.append(pairs[0][0]["cmd"])
    out.append(pairs[0][1]["cmd"])
    out.append(f"# the look alone: {res['idle_s']} s of a sleeping target, with and without "
               f"--trigger hang:60s ({res['idle_s'] * 10} looks)")
    out.append(f"# stall to dump, {len(st)} runs: four hang_rank.py ranks (ctypes over the CPU "
               f"NCCL library), rank 2 blocks in read before collective 30:")
    out.append(st[0]["cmd"])
    out.append("```")
    out.append("")
    out.append("| figure | value | goal |")
    out.append("|---|---|---|")
    out.append(f"| recorder CPU, flight recorder | "
               f"{fmt_spread([p['cpu'] for p, _ in pairs], ' s', 2)} | |")
    out.append(f"| recorder CPU, flight recorder + --trigger hang:60s | "
               f"{fmt_spread([h['cpu'] for _, h in pairs], ' s', 2)} | |")
    out.append(f"| ratio per pair (CPU per call) | {' '.join(f'{x:.2f}' for x in f['ratios'])} "
               f"(median {f['ratio']:.2f}x) | {cells['cpu']} |")
    out.append(f"| the look, CPU each (idle target: with - without, per look; /proc's CPU "
               f"clock ticks at {f['tick_us']:.0f} us a look over these runs) | "
               f"{' '.join(f'{x:.0f}' for x in f['per_look_us'])} us | |")
    secs = " ".join(f"{s['s']:.2f}" for s in st)
    out.append(f"| stall to the dump's window end (DUR {DUR_S} s) | {secs} s | "
               f"{cells['stall']} |")
    out.append(f"| the snapshot of the 4 processes | {' '.join(str(s['snap_ms']) for s in st)} "
               f"ms | |")
    out.append(f"| the dump written (its own timing) | "
               f"{' '.join(str(s['dump_ms']) for s in st)} ms | |")
    out.append("")
    meaning = ("the trigger reads what BPF keeps anyway (the calls in flight, every 100 ms), "
               "so the recorder's CPU per event does not move; the dump comes DUR after the "
               "waiters entered the collective, plus at most one look's period, the snapshot of "
               "the job's threads and the dump's own writing.")
    return block_end(ctx, NAME, out, meaning)
