#!/usr/bin/env python3
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""What `bpfsight monitor` costs against `bpfsight record` on the same workloads, and whether
its memory stays flat under process churn.

    sudo python3 bench/bench_monitor.py [--build build] [--rounds 3] [--churn-s 150]
    sudo python3 bench/run_bench.py --only monitor     # the same, as a section of make bench

cost: each workload runs untraced, under `record -a -t F` and under `monitor -a -t F` (with
record's --osrt-threshold, and with monitor's default), the configurations taking turns in
every round so that the machine's noise spreads over all of them alike. Figures: the
workload's slowdown against the untraced run of the same round (median of the rounds), and
the tracer's own CPU seconds (user + system, from wait4) over the run.
  osrt: bench/loadgen, one thread calling getppid for 2 s (calls per second)
  cuda: bench/cuda_loop streamquery for 3 x 300 ms (ns per cudaStreamQuery, real libcudart)
churn: `monitor -a` while tests/workloads/churn forks short processes (each 100 getppid, 4
alive at once) for --churn-s seconds; the monitor's RSS, fds and known processes from its
own /metrics every 10 s.
"""
import argparse
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import time
import urllib.request

from bench_common import block_end, block_head

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")


def start(cmd):
    """A tracer started and ready (its start line), with its stderr kept in a file."""
    err = open("/tmp/bench_monitor.err", "w+")
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err, text=True)
    end = time.time() + 60
    while time.time() < end:
        err.seek(0)
        text = err.read()
        if "Ctrl-C" in text:
            return p, err, text
        if p.poll() is not None:
            break
        time.sleep(0.05)
    raise SystemExit(f"{cmd} did not start: {text[-500:]}")


def stop(p):
    p.send_signal(signal.SIGINT)
    _, status, ru = os.wait4(p.pid, 0)
    p.returncode = os.waitstatus_to_exitcode(status)
    return ru.ru_utime + ru.ru_stime


def workloads(build):
    return {
        "osrt": (["-t", "osrt"], [f"{build}/bench/loadgen", "-t", "1", "-d", "2"],
                 lambda o: json.loads(o)["calls_per_s"], "calls/s", True),
        "cuda": (["-t", "cuda"], [f"{build}/bench/cuda_loop", "-m", "300", "-r", "3",
                                  "streamquery"],
                 lambda o: statistics.median(json.loads(o)["fns"]["streamquery"]["ns_per_call"]),
                 "ns/call", False),
    }


def cost(build, rounds):
    bs = f"{build}/bpfsight"
    trace = "/tmp/bench_monitor.bst"
    res = {}
    for name, (fam, cmd, metric, unit, higher_better) in workloads(build).items():
        configs = {
            "untraced": None,
            "record": [bs, "record", "--force", "-o", trace, "-a", *fam],
            "monitor (1us)": [bs, "monitor", "-l", "127.0.0.1:0", "-a", *fam,
                              "--osrt-threshold", "1us"],
            "monitor": [bs, "monitor", "-l", "127.0.0.1:0", "-a", *fam],
        }
        runs = {c: [] for c in configs}
        cpu = {c: [] for c in configs}
        for _ in range(rounds):
            for c, tcmd in configs.items():
                t = start(tcmd) if tcmd else None
                out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
                runs[c].append(metric(out))
                if t:
                    cpu[c].append(stop(t[0]))
        base = statistics.median(runs["untraced"])
        res[name] = {}
        for c in configs:
            v = statistics.median(runs[c])
            slow = base / v if higher_better else v / base
            res[name][c] = (v, slow, statistics.median(cpu[c]) if cpu[c] else 0.0)
        print(f"{name} ({unit}; slowdown vs untraced; tracer CPU s):")
        for c, (v, slow, cs) in res[name].items():
            print(f"  {c:15s} {v:14,.1f}  x{slow:.2f}  cpu {cs:.2f} s")
        sys.stdout.flush()
    return res


def churn(build, secs):
    """`monitor -a` under process churn for SECS: its RSS, fds, known processes and losses
    from its own /metrics every 10 s: [(s, rss_mib, fds, known, with_series, lost)]."""
    bs = f"{build}/bpfsight"
    p, err, text = start([bs, "monitor", "-a", "-t", "osrt,sched", "-l", "127.0.0.1:0",
                          "--exit-grace", "30s"])
    url = re.search(r"http://\S+", text).group(0)
    load = subprocess.Popen(["sh", "-c", f"while :; do {build}/tests/churn 2000 100 4 "
                             ">/dev/null; done"])
    t0 = time.time()
    samples = []
    print("churn: s, RSS MiB, fds, processes known, with series, events lost")
    try:
        while True:
            text = urllib.request.urlopen(url, timeout=10).read().decode()

            def val(n):
                return float(re.search(rf"^{n} (\S+)$", text, re.M).group(1))
            causes = {c: float(v) for c, v in re.findall(
                r'^bpfsight_events_lost_total\{.*cause="(\w+)"\} (\S+)$', text, re.M)}
            lost = sum(causes.values())
            samples.append((time.time() - t0, val("process_resident_memory_bytes") / 2**20,
                            val("process_open_fds"), val("bpfsight_processes"),
                            val("bpfsight_processes_with_series"), lost))
            print("  %5.0f %8.1f %5.0f %6.0f %4.0f %6.0f" % samples[-1], flush=True)
            if time.time() - t0 >= secs:
                break
            time.sleep(10)
    finally:
        load.terminate()
        load.wait()
        stop(p)
    with open(err.name) as f:
        print("  monitor:", f.read().strip().splitlines()[-1])
    return samples, {c: v for c, v in causes.items() if v}


# ---- a section of run_bench.py (`make bench`): the same two measurements, with goals

NAME = "monitor"
RATIO_GOAL = 1.05  # monitor's slowdown / record's: no more, within the noise of a run
RSS_GROWTH_MB = 8


def run(ctx):
    build = ctx.r.build
    rounds = 2 if ctx.quick else 5
    samples, causes = churn(build, 30 if ctx.quick else 180)
    return {"cost": cost(build, rounds), "rounds": rounds, "churn": samples, "causes": causes}


def figures(res):
    ratio = {w: r["monitor"][1] / r["record"][1] for w, r in res["cost"].items()}
    ch = res["churn"]
    third = max(1, len(ch) // 3)
    return {"ratio": ratio, "rss_first": max(x[1] for x in ch[:third]),
            "rss_last": max(x[1] for x in ch[-third:]),
            "fds": (min(x[2] for x in ch), max(x[2] for x in ch)), "lost": ch[-1][5]}


def text(ctx, res):
    f = figures(res)
    return ("monitor: slowdown / record's " +
            ", ".join(f"{w} {r:.2f}x" for w, r in f["ratio"].items()) +
            f"; churn RSS {f['rss_first']:.1f} -> {f['rss_last']:.1f} MiB, fds "
            f"{f['fds'][0]:.0f}..{f['fds'][1]:.0f}, {f['lost']:.0f} lost")


def markdown(ctx, res):
    f = figures(res)
    g = ctx.goals
    out = block_head(ctx, NAME, "monitor: its cost against record's, its memory under churn")
    out += ["```",
            f"# cost, {res['rounds']} rounds, the configurations in turn in each: the workload "
            "untraced, under record -a -t F, under monitor -a -t F (--osrt-threshold 1us, "
            "and its default 100us)",
            "bpfsight record -f -o T.bst -a -t osrt|cuda &  /  bpfsight monitor -l 127.0.0.1:0 "
            "-a -t osrt|cuda [--osrt-threshold 1us] &",
            "build/bench/loadgen -t 1 -d 2          # osrt: getppid calls per second",
            "build/bench/cuda_loop -m 300 -r 3 streamquery   # cuda: ns per cudaStreamQuery",
            f"# churn: bpfsight monitor -a -t osrt,sched --exit-grace 30s while "
            f"tests/workloads/churn forks short processes (100 getppid each, 4 alive), "
            f"{res['churn'][-1][0]:.0f} s; its /metrics every 10 s",
            "```", "",
            "| workload | untraced | record (slowdown, tracer CPU) | monitor 1us | monitor "
            "(default) | monitor / record |", "|---|---|---|---|---|---|"]
    for w, r in res["cost"].items():
        cell = g.check(NAME, f"{w}: monitor's slowdown / record's", f"{f['ratio'][w]:.2f}x",
                       f"<= {RATIO_GOAL}x", f["ratio"][w] <= RATIO_GOAL)
        out.append(f"| {w} | {r['untraced'][0]:,.1f} | x{r['record'][1]:.2f}, "
                   f"{r['record'][2]:.2f} s | x{r['monitor (1us)'][1]:.2f}, "
                   f"{r['monitor (1us)'][2]:.2f} s | x{r['monitor'][1]:.2f}, "
                   f"{r['monitor'][2]:.2f} s | {cell} |")
    growth = f["rss_last"] - f["rss_first"]
    rss = g.check(NAME, "churn: monitor RSS growth (max of last third - first third)",
                  f"{growth:.1f} MB", f"<= {RSS_GROWTH_MB} MB", growth <= RSS_GROWTH_MB)
    fds = g.check(NAME, "churn: open fds, max - min", f"{f['fds'][1] - f['fds'][0]:.0f}",
                  "<= 4", f["fds"][1] - f["fds"][0] <= 4)
    lost = g.check(NAME, "churn: events lost", f"{f['lost']:.0f}", "0", f["lost"] == 0)
    out += ["", "| churn figure | value | goal |", "|---|---|---|",
            f"| RSS first third / last third (max) | {f['rss_first']:.1f} / "
            f"{f['rss_last']:.1f} MiB | {rss} |",
            f"| open fds, min..max | {f['fds'][0]:.0f}..{f['fds'][1]:.0f} | {fds} |",
            f"| processes known at the end (30 s grace) | {res['churn'][-1][3]:.0f} | |",
            f"| events lost (by cause: "
            f"{', '.join(f'{c} {v:.0f}' for c, v in res['causes'].items()) or 'none'}) | "
            f"{f['lost']:.0f} | {lost} |", "",
            "Samples (s, RSS MiB, fds, known, with series, lost): " +
            "; ".join("%.0f %.1f %.0f %.0f %.0f %.0f" % x for x in res["churn"]), ""]
    meaning = ("the monitor runs the same BPF programs as record and saves the encoding, "
               "compression and writes, so its cost is record's or less (the rounds' spread "
               "is the machine's); under churn its memory and fds stay flat: series of exited "
               "processes go after the grace and the in-kernel counts of exited threads are "
               "deleted. `--bpf-stats` (opt-in) adds two clock reads per probe run.")
    return block_end(ctx, NAME, out, meaning)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--churn-s", type=int, default=150)
    ap.add_argument("--only", choices=["cost", "churn"])
    a = ap.parse_args()
    if a.only != "churn":
        cost(os.path.abspath(a.build), a.rounds)
    if a.only != "cost":
        print("  lost by cause:", churn(os.path.abspath(a.build), a.churn_s)[1])


if __name__ == "__main__":
    main()
