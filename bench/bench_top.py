#!/usr/bin/env python3
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""What `bpfsight top` costs against `bpfsight monitor` recording the same thing.

    sudo python3 bench/bench_top.py [--build build] [--rounds 5]
    sudo python3 bench/run_bench.py --only top      # the same, as a section of make bench

Both run the same recording (recorder.c with a sink, no file); top adds its counters per
thread (a lock, the trace model and the families' hooks per record), a frame a second (each
thread's /proc/PID/task/TID/schedstat) and its text. Figures, the configurations taking
turns in every round (the median of the rounds):
  cuda: bench/cuda_loop streamquery for 3 x 300 ms under -a -t cuda: a record per call, the
        per-record cost; the workload's slowdown and the tracer's CPU (user + system, wait4)
  machine: -a with top's default families (both) for 10 s, nothing run by the bench (what
        the machine runs anyway is traced): the tracer's CPU per second, what watching the
        whole machine costs (top also reads every thread's schedstat every second)
top runs in batch mode (-b, frames to /dev/null): the screen's escape sequences are the
only thing it does not write.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

from bench_common import block_end, block_head
from bench_monitor import start, stop

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
IDLE_S = 10


def configs(bs, fam):
    return {
        "monitor": [bs, "monitor", "-l", "127.0.0.1:0", "-a", *fam],
        "top": [bs, "top", "-b", "-a", *fam],
    }


def threads_on_machine():
    return sum(len(os.listdir(f"/proc/{p}/task")) for p in os.listdir("/proc")
               if p.isdigit() and os.path.isdir(f"/proc/{p}/task"))


def cuda_cost(build, rounds):
    bs = f"{build}/bpfsight"
    cmd = [f"{build}/bench/cuda_loop", "-m", "300", "-r", "3", "streamquery"]
    cfg = {"untraced": None, **configs(bs, ["-t", "cuda"])}
    ns, cpu = {c: [] for c in cfg}, {c: [] for c in cfg}
    for _ in range(rounds):
        for c, tcmd in cfg.items():
            t = start(tcmd) if tcmd else None
            out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
            ns[c].append(statistics.median(json.loads(out)["fns"]["streamquery"]
                                           ["ns_per_call"]))
            if t:
                cpu[c].append(stop(t[0]))
    base = statistics.median(ns["untraced"])
    res = {c: (statistics.median(ns[c]), statistics.median(ns[c]) / base,
               statistics.median(cpu[c]) if cpu[c] else 0.0) for c in cfg}
    print("cuda (ns per call; slowdown; tracer CPU s):")
    for c, (v, slow, cs) in res.items():
        print(f"  {c:9s} {v:10,.1f}  x{slow:.2f}  cpu {cs:.3f} s", flush=True)
    return res


def idle_cost(build, rounds):
    """Each tracer's CPU seconds per second over IDLE_S with nothing run (-a, defaults)."""
    cfg = configs(f"{build}/bpfsight", ["-t", "osrt,gil,cuda,gpu"])  # top's default
    cpu = {c: [] for c in cfg}
    for _ in range(rounds):
        for c, tcmd in cfg.items():
            p = start(tcmd)[0]
            t0 = time.time()
            time.sleep(IDLE_S)
            cpu[c].append(stop(p) / (time.time() - t0))
    res = {c: statistics.median(v) for c, v in cpu.items()}
    print("idle -a (tracer CPU s per s):", {c: f"{v:.4f}" for c, v in res.items()}, flush=True)
    return res


# ---- a section of run_bench.py (`make bench`)

NAME = "top"
CPU_GOAL = 1.5  # top's CPU / monitor's: its fold and frames stay cheap beside the recording


def run(ctx):
    build = ctx.r.build
    rounds = 2 if ctx.quick else 5
    return {"rounds": rounds, "threads": threads_on_machine(),
            "cuda": cuda_cost(build, rounds), "idle": idle_cost(build, 1 if ctx.quick else 3)}


def text(ctx, res):
    c, i = res["cuda"], res["idle"]
    return (f"top: CPU / monitor's on a cuda loop {c['top'][2] / c['monitor'][2]:.2f}x; "
            f"-a on the machine {i['top'] / i['monitor']:.2f}x ({i['top'] * 100:.1f}% of a "
            f"CPU)")


def markdown(ctx, res):
    g = ctx.goals
    c, i = res["cuda"], res["idle"]
    ratio = c["top"][2] / c["monitor"][2]
    out = block_head(ctx, NAME, "top: its cost against monitor's")
    out += ["```",
            f"# {res['rounds']} rounds, the configurations in turn in each",
            "bpfsight monitor -l 127.0.0.1:0 -a -t cuda &  /  bpfsight top -b -a -t cuda "
            ">/dev/null &",
            "build/bench/cuda_loop -m 300 -r 3 streamquery   # ns per cudaStreamQuery",
            f"# machine: bpfsight monitor -l 127.0.0.1:0 -a -t osrt,gil,cuda,gpu  /  bpfsight top -b -a (its default: the same families) >/dev/null, "
            f"{IDLE_S} s each, nothing run ({res['threads']} threads on the machine)",
            "```", "",
            "| workload | untraced | monitor (slowdown, tracer CPU) | top (slowdown, tracer "
            "CPU) | top's CPU / monitor's |", "|---|---|---|---|---|",
            f"| cuda loop | {c['untraced'][0]:,.1f} ns/call | x{c['monitor'][1]:.2f}, "
            f"{c['monitor'][2]:.3f} s | x{c['top'][1]:.2f}, {c['top'][2]:.3f} s | {ratio:.2f}x, "
            + g.check(NAME, "cuda loop: top's CPU / monitor's", f"{ratio:.2f}x",
                      f"<= {CPU_GOAL}x", ratio <= CPU_GOAL) + " |",
            f"| the machine, -a, CPU per second | | {i['monitor'] * 100:.2f}% | "
            f"{i['top'] * 100:.2f}% | {i['top'] / i['monitor']:.2f}x, "
            + g.check(NAME, "-a on the machine: top's CPU / monitor's",
                      f"{i['top'] / i['monitor']:.2f}x", f"<= {CPU_GOAL}x",
                      i["top"] / i["monitor"] <= CPU_GOAL) + " |",
            ""]
    meaning = ("top records exactly as monitor does; what it adds is its fold (a lock, the "
               "trace model and the families' hooks per record: the cuda loop's ratio), a "
               "frame a second (every thread's schedstat under -a) and the frame's text: "
               "within the rounds' spread of monitor's on both. The traced program's "
               "slowdown is the probes' (this VM's, on a machine shared with other work), "
               "the same under both.")
    return block_end(ctx, NAME, out, meaning)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--rounds", type=int, default=5)
    a = ap.parse_args()
    build = os.path.abspath(a.build)
    cuda_cost(build, a.rounds)
    idle_cost(build, max(1, a.rounds // 2))


if __name__ == "__main__":
    sys.exit(main())
