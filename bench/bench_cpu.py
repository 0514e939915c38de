# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""cpu family (section `cpu` of bench/RESULTS.md; docs/STACKS.md "Cost"): what timer sampling
with native stacks costs a CPU-bound Python program. Runs alternate untraced, sampled at
99 Hz and at 999 Hz (`record -t cpu --sample-rate HZ -- python3 -c LOOP`), the same fixed
amount of work each time; the program times its own loop (wall, so interrupt and BPF time
count) and reports its CPU time. Figures: the loop's slowdown against the untraced runs of
the same round, the recorder's own CPU time per second of the program's, bytes per sample
on disk.

    python3 bench/run_bench.py --build B --only cpu --no-results   # this section alone
"""

import glob
import json
import os
import resource
import subprocess

from bench_common import BenchError, block_end, block_head, spread

NAME = "cpu"
RATES = (99, 999)
LOOP = ("import json, resource, time\n"
        "t = time.perf_counter()\n"
        "x = 0\n"
        "for i in range({n}):\n"
        "    x += i * i\n"
        "w = time.perf_counter() - t\n"
        "u = resource.getrusage(resource.RUSAGE_SELF)\n"
        "print(json.dumps({{'wall': w, 'cpu': u.ru_utime + u.ru_stime}}))\n")
SLOWDOWN_99 = 1.01  # the goal: sampling at 99 Hz costs at most 1%


def python():
    found = sorted(glob.glob("/root/.pyenv/versions/3.12.*/bin/python3.12"))
    return found[-1] if found else "/usr/bin/python3"


def one(ctx, rate, n):
    """The loop untraced (RATE None) or sampled at RATE: (its result, recorder CPU s, trace
    bytes, samples)."""
    cmd = [python(), "-c", LOOP.format(n=n)]
    if rate is None:
        p = subprocess.run(cmd, stdout=subprocess.PIPE, text=True, check=True)
        return json.loads(p.stdout.strip().splitlines()[-1]), None, None, None
    out = ctx.r.tmpfile(".bst")
    rcmd = [ctx.r.bpfsight, "record", "-f", "-o", out, "-t", "cpu", "--sample-rate",
            str(rate), "--"] + cmd
    rec = subprocess.Popen(rcmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    stdout, stderr = rec.communicate()
    # The recorder reaps the program: its rusage holds both; the program says its own part.
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    if rec.returncode:
        raise BenchError(f"{' '.join(rcmd)} exited {rec.returncode}: {stderr[-400:]}")
    res = json.loads(stdout.strip().splitlines()[-1])
    info = ctx.r.json_of([ctx.r.bpfsight, "info", "--json", out])
    samples = info.get("events", {}).get("cpu_sample", 0)
    return res, ru, os.path.getsize(out), samples


def run(ctx):
    rounds = 3 if ctx.quick else 7
    n = 3_000_000 if ctx.quick else 10_000_000
    runs = {None: [], 99: [], 999: []}
    for i in range(rounds):
        for rate in (None,) + RATES:
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            res, after, size, samples = one(ctx, rate, n)
            rec_cpu = None
            if after is not None:
                rec_cpu = (after.ru_utime + after.ru_stime - before.ru_utime -
                           before.ru_stime) - res["cpu"]
            runs[rate].append({"wall": res["wall"], "cpu": res["cpu"], "rec_cpu": rec_cpu,
                               "bytes": size, "samples": samples})
            ctx.progress("cpu", i * 3 + len(runs[rate]), rounds * 3,
                         f"{rate or 'untraced'}: {res['wall']:.3f} s")
    return {"rounds": rounds, "n": n, "runs": runs, "python": python(),
            "cmd": ctx.r.show_cmd([ctx.r.bpfsight, "record", "-t", "cpu", "--sample-rate",
                                   "HZ", "--", python(), "-c", "LOOP"])}


def figures(res):
    base = res["runs"][None]
    f = {}
    for rate in RATES:
        rs = res["runs"][rate]
        f[rate] = {
            "slowdown": spread([r["wall"] / b["wall"] for r, b in zip(rs, base)]),
            "rec_cpu": spread([r["rec_cpu"] / r["cpu"] for r in rs if r["cpu"]]),
            "bytes": spread([r["bytes"] / r["samples"] for r in rs if r["samples"]]),
            "samples": spread([r["samples"] / r["cpu"] for r in rs if r["cpu"]]),
        }
    return f


def fmt(s, pct=False, digits=3):
    m, lo, hi = s
    if m is None:
        return "n/a"
    if pct:
        return f"{100 * m:.2f}% ({100 * lo:.2f}..{100 * hi:.2f})"
    return f"{m:.{digits}f} ({lo:.{digits}f}..{hi:.{digits}f})"


def text(ctx, res):
    f = figures(res)
    return "cpu: " + "; ".join(
        f"{r} Hz: loop {fmt(f[r]['slowdown'])}x untraced, recorder CPU "
        f"{fmt(f[r]['rec_cpu'], pct=True)} of the program's, "
        f"{fmt(f[r]['bytes'], digits=0)} bytes/sample" for r in RATES)


def markdown(ctx, res):
    f = figures(res)
    slow = f[99]["slowdown"][0]
    cell = ctx.goals.check(NAME, "sampling at 99 Hz: slowdown of a CPU-bound Python loop",
                           f"{slow:.3f}x" if slow else "n/a", f"<= {SLOWDOWN_99}x",
                           slow is not None and slow <= SLOWDOWN_99)
    out = block_head(ctx, NAME, "cpu family: timer sampling with native stacks")
    out.append("```")
    out.append(f"{res['python']} -c LOOP        # untraced, then:")
    out.append(res["cmd"] + "   # HZ = 99, 999; alternating, "
               f"{res['rounds']} rounds")
    out.append("```")
    out.append("")
    out.append(f"LOOP: `x += i * i` for i in range({res['n']:,}), timed by the program "
               f"(perf_counter around the loop) with its CPU time (getrusage); the "
               f"recorder's CPU is its rusage less the program's. Medians (min..max).")
    out.append("")
    out.append("| figure | 99 Hz | 999 Hz | goal |")
    out.append("|---|---|---|---|")
    out.append(f"| loop wall time / untraced (same round) | {fmt(f[99]['slowdown'])} | "
               f"{fmt(f[999]['slowdown'])} | 99 Hz: {cell} |")
    out.append(f"| recorder CPU / program CPU | {fmt(f[99]['rec_cpu'], pct=True)} | "
               f"{fmt(f[999]['rec_cpu'], pct=True)} | |")
    out.append(f"| samples per CPU-second of the program | {fmt(f[99]['samples'], digits=1)} "
               f"| {fmt(f[999]['samples'], digits=1)} | |")
    out.append(f"| trace bytes per sample (whole file) | {fmt(f[99]['bytes'], digits=0)} | "
               f"{fmt(f[999]['bytes'], digits=0)} | |")
    out.append("")
    meaning = ("a sample costs the interrupted program one BPF run and a frame-pointer walk "
               "in the kernel; symbolizing and interning happen in the recorder, once per "
               "distinct stack, and a sample on disk is its 32-byte record compressed "
               "(the stack itself is written once).")
    return block_end(ctx, NAME, out, meaning)
