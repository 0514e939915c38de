# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""The consumer (section `consumer` of bench/RESULTS.md): how many records per second the
recorder's reading side sustains, read from its own CPU time, so that the figure does not
depend on how many cores the producers take (issue #29: a consumer too slow for a busy
machine's events is what fills the ring buffer).

Per run: `bpfsight record` in launch mode; the recorder's CPU time from its ready line to
its exit (its threads' schedstat at the line, its /proc stat as a zombie at the end: the ring read, every
record's hooks, encoding, compression, writing, the stop) divided into the records the file
holds. Two streams:

  cuda   bench/cuda_loop streamquery: one cuda_api record per cudaStreamQuery call
  mixed  -t cuda,gpu,gil,osrt over bench/consumer_mix.py: the same cuda loop, a CPython
         GIL ping-pong (gil and osrt records), and tests' cupti_feed sending the
         cupti-shim's batches of N synthetic kernels (unpacked and joined per record)

    python3 bench/bench_consumer.py [--build build] [--runs N]
"""

import argparse
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from bench_common import (BenchError, Runner, block_end, block_head, cpu_ns,  # noqa: E402
                          fmt_spread, median)

NAME = "consumer"
GOAL_CUDA = 1_000_000  # cuda records per second of the recorder's CPU (issue #29 item 3)
LOOP_MS = 1500
GPU_EXTRA = 100_000
CLK_TCK = os.sysconf("SC_CLK_TCK")
MIX = os.path.join(os.path.dirname(os.path.abspath(__file__)), "consumer_mix.py")


def shim_paths(r):
    return (os.path.join(r.build, "tests", "shim", "cupti_feed"),
            os.path.join(r.build, "tests", "shim", "libbpfsight-shim-test.so"))


def one(r, families, cmd):
    """Record CMD with FAMILIES: {records, lost, cpu_ns (consumer), rate, cmd}."""
    out = r.tmpfile(".bst")
    rcmd = [r.bpfsight, "record", "--force", "-o", out, "-t", families, "--"] + cmd
    p = subprocess.Popen(rcmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    err, cpu0 = [], None
    for line in p.stderr:
        err.append(line)
        if "Ctrl-C" in line:
            cpu0 = cpu_ns(p.pid)
            break
    err.append(p.stderr.read())
    # Its own CPU, read while it is a zombie: wait4's rusage would add CMD's, which it reaped.
    os.waitid(os.P_PID, p.pid, os.WEXITED | os.WNOWAIT)
    with open(f"/proc/{p.pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    own = (int(fields[11]) + int(fields[12])) * 1e9 / CLK_TCK  # utime, stime
    _, status = os.waitpid(p.pid, 0)
    p.returncode = os.waitstatus_to_exitcode(status)
    if p.returncode or cpu0 is None:
        raise BenchError(f"{r.show_cmd(rcmd)} exited {p.returncode}: {''.join(err)[-800:]}")
    cpu = own - cpu0
    info = r.json_of([r.bpfsight, "info", "--json", out])
    os.unlink(out)
    n = info["records"]
    return {"records": n, "lost": info.get("lost", {}), "cpu_ns": cpu,
            "rate": n * 1e9 / cpu if cpu > 0 else 0.0, "cmd": r.show_cmd(rcmd),
            "err": "".join(err)}


def streams(r):
    loop = [r.bench_bin("cuda_loop"), "-m", str(LOOP_MS), "streamquery"]
    feed, shim = shim_paths(r)
    mixed = [sys.executable, MIX, "--loop", r.bench_bin("cuda_loop"), "--ms", str(LOOP_MS),
             "--feed", feed, "--shim", shim, "--extra", str(GPU_EXTRA)]
    return {"cuda": ("cuda", loop), "mixed": ("cuda,gpu,gil,osrt", mixed)}


def run(ctx, runs=None):
    r = ctx.r
    missing = [p for p in (r.bench_bin("cuda_loop"),) + shim_paths(r) if not os.path.exists(p)]
    if missing:
        return {"skip": f"{', '.join(r.rel(m) for m in missing)} not built (CUDA toolkit)"}
    runs = runs or ctx.params.get("pipeline_runs", 5)
    res = {name: [] for name in streams(r)}
    for i in range(runs):
        for name, (families, cmd) in streams(r).items():  # interleaved: same noise
            got = one(r, families, cmd)
            res[name].append(got)
            print(f"  consumer {name:<6} {i + 1}/{runs}: {got['records']:,} records in "
                  f"{got['cpu_ns'] / 1e6:.0f} ms of recorder CPU: "
                  f"{got['rate'] / 1e6:.2f} M records/s, lost {got['lost'] or 'none'}",
                  flush=True)
    res["load"] = os.getloadavg()[0]
    return res


def check_goals(ctx, res):
    rate = median([x["rate"] for x in res["cuda"]])
    return ctx.goals.check(NAME, "cuda records/s per recorder CPU second",
                           f"{rate / 1e6:.2f} M", f">= {GOAL_CUDA / 1e6:g} M",
                           rate >= GOAL_CUDA)


def text(ctx, res):
    if res.get("skip"):
        return f"consumer: SKIP {res['skip']}"
    return "consumer: " + "; ".join(
        f"{k} {fmt_spread([x['rate'] / 1e6 for x in res[k]], digits=2)} M records/s"
        for k in ("cuda", "mixed"))


def markdown(ctx, res):
    out = block_head(ctx, NAME, "The consumer: records per second of the recorder's CPU")
    if res.get("skip"):
        out.append(f"Skipped: {res['skip']}.")
        return block_end(ctx, NAME, out, "")
    cell = check_goals(ctx, res)
    out.append("```")
    for k in ("cuda", "mixed"):
        out.append(res[k][0]["cmd"])
    out.append("```")
    out.append("")
    out.append("| stream | records per run | recorder CPU per run | records/s of CPU | ns per "
               "record | lost | goal |")
    out.append("|---|---|---|---|---|---|---|")
    for k in ("cuda", "mixed"):
        rs = res[k]
        out.append(f"| {k} | {fmt_spread([x['records'] for x in rs])} | "
                   f"{fmt_spread([x['cpu_ns'] / 1e6 for x in rs], ' ms')} | "
                   f"{fmt_spread([x['rate'] / 1e6 for x in rs], ' M', 2)} | "
                   f"{fmt_spread([x['cpu_ns'] / max(x['records'], 1) for x in rs])} | "
                   f"{', '.join(str(x['lost'] or 0) for x in rs)} | "
                   f"{cell if k == 'cuda' else ''} |")
    out.append("")
    meaning = (f"the recorder's CPU per record, from its ready line to its exit (the stop "
               f"included), medians of {len(res['cuda'])} runs, load average "
               f"{res['load']:.0f}. A producer stream faster than this fills the ring "
               f"buffer whatever its size.")
    return block_end(ctx, NAME, out, meaning)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default="build")
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()

    class Ctx:
        r = Runner(args.build)
        params = {}

    try:
        res = run(Ctx, args.runs)
    finally:
        Ctx.r.cleanup()
    if res.get("skip"):
        print(f"SKIP {res['skip']}")
        return
    for k in ("cuda", "mixed"):
        rs = res[k]
        print(f"{k}: {fmt_spread([x['rate'] / 1e6 for x in rs], ' M', 2)} records/s of "
              f"recorder CPU, {fmt_spread([x['records'] for x in rs])} records, "
              f"lost {[x['lost'] or 0 for x in rs]}")
        print(f"   {rs[0]['cmd']}")


if __name__ == "__main__":
    main()
