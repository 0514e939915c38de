# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""What recording costs a launch-bound training step, per family (section `cost` of
bench/RESULTS.md; issue #32).

The step is tests/workloads/step_proxy.py: the CUDA calls of a real launch-bound GPT-2 step
(456 a step: 344 runtime launches, each entering the driver's cuLaunchKernel, 28 other runtime
calls entering the driver, 84 direct driver calls: 828 calls with the ones inside), from the
main thread and an "autograd" thread, the GIL handed between them, a few system calls, ~20 ms
of host work;
run by pyenv's CPython (symbols: the gil family has its probes) with the cupti-shim preloaded
(LD_PRELOAD, as launch mode does) so that gpu and nvtx have a shim to talk to. One such
process lives through the whole section, and every round runs each configuration on it in
turn (the order reversed every other round):

  untraced      nothing attached
  floor         empty entry and return programs on the functions the cuda family probes
                here (bench/floor: uprobe_multi links, as bpfsight's): the probes' own price
  floor-outer   the same without the driver functions the step calls only inside its
                runtime calls (INNER: cuLaunchKernel...): what probing those costs
  -t X          `bpfsight record -p P -t X` attached (default: no -t), WARMUP steps, STEPS
                steps timed, the recorder stopped and its links gone (bpfsight-detach drops
                them a little later) before the next configuration

A configuration's figure in a round is its median step; its ratio is that over the untraced
median of the same round; the section reports the median over the rounds. Per configuration
also: the recorder's CPU per step (its threads' schedstat over the timed steps) and, in a last
round with kernel.bpf_stats_enabled=1 (restored afterwards; not in the ratios: the stats add
two clock reads per program run), each BPF program's runs and run time per step. Each run
waits for a machine where no other process probes the step's files, system calls or
scheduler (Quiet), and says so when it could not have one.

    python3 bench/run_bench.py --build B --only cost --no-results   # this section alone
    python3 bench/bench_cost.py --build B [--rounds N] [--configs untraced,cuda,...]
"""

import argparse
import contextlib
import os
import re
import signal
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from bench_common import (REPO, BenchError, LineServer, ProgStats, Quiet, Runner,  # noqa: E402
                          block_end, block_head, bpf_stats, cpu_ns, fmt_ratio_spread,
                          links_gone, median, prog_ids, skipped_block, spread)

NAME = "cost"
PY = os.path.expanduser("~/.pyenv/versions/3.12.1/bin/python3")
PROXY = os.path.join(REPO, "tests", "workloads", "step_proxy.py")
CUDART = "/usr/local/cuda/lib64/libcudart.so.13"
STUB = "/usr/local/cuda/lib64/stubs/libcuda.so"
DEFAULT = "osrt,sched,cuda,nccl,gil,gpu,nvtx"  # record's default families (docs/USAGE.md)
CONFIGS = ["untraced", "floor", "floor-outer", "default", "cuda", "cuda,gpu", "osrt", "sched",
           "gil", "nccl", "gpu", "nvtx"]
ALONE = ["osrt", "sched", "cuda", "nccl", "gil", "gpu", "nvtx"]
GOALS = {"default": 1.03, "cuda,gpu": 1.02}  # the issue's, against untraced
SHARE_GOAL = 1.5  # default families' added cost <= 1.5x -t cuda's
WARMUP, STEPS = 3, 30
# The functions the step's calls run through (step_proxy.c): its runtime-shaped ones, and the
# stub libcuda's; INNER: the driver functions it calls only inside its runtime calls.
RUNTIME = ["cudaLaunchKernel", "cudaMemsetAsync", "cudaMemcpyAsync", "cudaDeviceSynchronize"]
DRIVER = ["cuLaunchKernel", "cuLaunchKernelEx", "cuMemsetD8Async", "cuMemcpyHtoDAsync_v2",
          "cuCtxSynchronize_v2", "cuKernelGetFunction"]
INNER = ["cuLaunchKernel", "cuMemcpyHtoDAsync_v2", "cuCtxSynchronize_v2"]
# Issue #32's H100 figures for the real GPT-2 step: its step, and -t cuda's ratio then, when
# every call fired an entry and a return probe (a runtime launch four: its own and its driver
# launch's; now three, docs/CUDA.md "One probe pair per launch").
H100_STEP_MS, H100_CUDA_RATIO = 21.0, 1.05


def proxy_lib(r):
    return os.path.join(r.build, "tests", "cuda", "libstep_proxy.so")


class Proxy(LineServer):
    """The step proxy process: steps on demand."""

    def __init__(self, r):
        env = dict(os.environ, LD_PRELOAD=os.path.join(r.build, "libbpfsight-shim.so"))
        env.pop("BPFSIGHT_SHIM_DEBUG", None)
        super().__init__([PY, PROXY, proxy_lib(r)], env)
        self.pid = self.ask(None)["pid"]

    def steps(self, n):
        """{"ns": [wall ns of each step], "cpu": [the process's CPU ns in each]}."""
        return self.ask(f"steps {n}")

    def per_step(self, n):
        """N steps' calls, per step: {"calls": made by the step, "inside": driver calls inside
        its runtime calls, "inner_launches": of those, driver launches}."""
        a = self.ask("calls")
        self.steps(n)
        b = self.ask("calls")
        diff = {k: {f: b[k][f] - a[k].get(f, 0) for f in b[k]} for k in ("calls", "inside")}
        return {"calls": sum(diff["calls"].values()) / n,
                "inside": sum(diff["inside"].values()) / n,
                "inner_launches": diff["inside"].get("cuLaunchKernel", 0) / n}


def floor_cmd(r, inner=True):
    lib = proxy_lib(r)
    probes = [f"{lib}:{f}" for f in RUNTIME] + \
        [f"{STUB}:{f}" for f in DRIVER if inner or f not in INNER]
    return [r.bench_bin("floor")] + [a for p in probes for a in ("-u", p)] + \
        ["--", "sh", "-c", "echo ready $$; exec sleep 3600"]


def record_cmd(r, config, out):
    cmd = [r.bpfsight, "record", "-p", "PID", "-o", out]
    return cmd + (["-t", config] if config != "default" else [])


def measured(r, proxy, config, stats):
    """One configuration once: {"ns": [step ns], "cpu": [the proxy's CPU ns per step],
    "rec_cpu": ns of the recorder's CPU over the timed steps, "progs": {name: (runs, ns)}
    (with STATS), "lost": text}."""
    if config == "untraced":
        proxy.steps(WARMUP)
        return proxy.steps(STEPS)
    if config.startswith("floor"):
        cmd = floor_cmd(r, config == "floor")
        f = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        line = f.stdout.readline().split()
        if len(line) != 2:
            raise BenchError(f"{r.show_cmd(cmd)}: {f.communicate()[1][-800:]}")
        try:
            proxy.steps(WARMUP)
            return proxy.steps(STEPS)
        finally:
            os.kill(int(line[1]), signal.SIGTERM)
            f.communicate(timeout=60)
    out = r.tmpfile(".bst")
    cmd = [str(proxy.pid) if a == "PID" else a for a in record_cmd(r, config, out)]
    rec = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    head = ""
    while "Ctrl-C" not in head:
        line = rec.stderr.readline()
        if not line:
            raise BenchError(f"{r.show_cmd(cmd)} exited {rec.wait()}: {head[-800:]}")
        head += line
    links = prog_ids(rec.pid, "link_id")
    progs = ProgStats(rec.pid, None) if stats else None
    try:
        proxy.steps(WARMUP)
        c0, p0 = cpu_ns(rec.pid), (progs.per_name() if progs else {})
        steps = proxy.steps(STEPS)
        c1, p1 = cpu_ns(rec.pid), (progs.per_name() if progs else {})
    finally:
        if progs:
            progs.close()
        rec.send_signal(signal.SIGINT)
        err = rec.communicate(timeout=120)[1]
    if rec.returncode:
        raise BenchError(f"{r.show_cmd(cmd)} exited {rec.returncode}: {err[-800:]}")
    os.unlink(out)
    links_gone(links)
    lost = re.search(r"(\d+) events lost(?: \(([^)]*)\))?", err)
    if lost and lost.group(1) == "0":
        lost = None
    return {**steps, "rec_cpu": c1 - c0 if c0 is not None and c1 is not None else None,
            "progs": {k: (p1[k][0] - v[0], p1[k][1] - v[1]) for k, v in p0.items()},
            "lost": lost.group(2) or lost.group(1) if lost else "0"}


def kinds(r):
    """What another tracer must not probe while a configuration runs (Quiet): the system
    calls, the scheduler, the files whose calls the step makes."""
    return ["syscalls", "sched", CUDART, STUB, proxy_lib(r)]


def run(ctx, rounds=None, configs=None):
    r = ctx.r
    missing = [p for p in (PY, proxy_lib(r), r.bench_bin("floor"), CUDART, STUB)
               if not os.path.exists(p)]
    if missing:
        return {"skip": f"{', '.join(r.rel(m) for m in missing)} missing (make bench-build "
                        "with the CUDA toolkit; pyenv's CPython 3.12)"}
    rounds = rounds or (2 if ctx.quick else 5)
    configs = configs or CONFIGS
    runs = {c: [] for c in configs}
    proxy = Proxy(r)
    loads = []
    try:
        per_step = proxy.per_step(10)
        for i in range(rounds + 1):
            stats = i == rounds  # the last round: BPF stats on, kept apart
            order = configs if i % 2 == 0 else configs[::-1]
            loads.append(os.getloadavg()[0])
            with bpf_stats() if stats else contextlib.nullcontext():
                for c in order:
                    got = ctx.quiet.run(kinds(r), lambda c=c: measured(r, proxy, c, stats),
                                        f"{c} (round {i + 1})")
                    got["med"] = median(got["ns"])
                    got["med_cpu"] = median(got["cpu"])
                    runs[c].append(got)
                    ctx.progress(NAME, i * len(configs) + order.index(c) + 1,
                                 (rounds + 1) * len(configs),
                                 f"{'[bpf stats] ' if stats else ''}{c}: "
                                 f"{got['med'] / 1e6:.2f} ms/step")
    finally:
        proxy.close()
    return {"rounds": rounds, "runs": runs, "loads": loads, "proxy": r.show_cmd(proxy.cmd),
            "per_step": per_step}


def figures(res):
    """Per configuration: its ratios to untraced (one per round), added ms per step, the
    recorder's CPU ms per step, and from the stats round BPF runs and ms per step."""
    runs, n = res["runs"], res["rounds"]
    base = [x["med"] for x in runs["untraced"][:n]]
    base_cpu = [x["med_cpu"] for x in runs["untraced"][:n]]
    out = {}
    for c, rs in runs.items():
        timed, last = rs[:n], rs[n]
        f = {"ratio": [x["med"] / b for x, b in zip(timed, base)],
             "cpu_ratio": [x["med_cpu"] / b for x, b in zip(timed, base_cpu)],
             "cpu_added": [(x["med_cpu"] - b) / 1e6 for x, b in zip(timed, base_cpu)],
             "added": [(x["med"] - b) / 1e6 for x, b in zip(timed, base)],
             "step": [x["med"] / 1e6 for x in timed]}
        if c != "untraced" and not c.startswith("floor"):
            f["cpu"] = median([x["rec_cpu"] / STEPS / 1e6 for x in timed
                               if x.get("rec_cpu") is not None])
            lost = [x["lost"] for x in rs]
            f["lost"] = ", ".join(f"{k}: {lost.count(k)} of {len(lost)}"
                                  for k in sorted(set(lost), key=lambda k: k != "0"))
            progs = last["progs"]
            f["bpf_runs"] = sum(v[0] for v in progs.values()) / STEPS
            f["bpf_ms"] = sum(v[1] for v in progs.values()) / STEPS / 1e6
            f["progs"] = sorted(((k, v[0] / STEPS, v[1] / STEPS / 1e6)
                                 for k, v in progs.items() if v[0]), key=lambda t: -t[2])
        out[c] = f
    return out


def label(c):
    return {"untraced": "untraced", "floor": "floor (empty probes on the cuda family's "
            "functions)", "floor-outer": "floor without the driver functions called only "
            "inside runtime calls", "default": "default families (no -t)"}.get(c, f"-t {c}")


def text(ctx, res):
    if res.get("skip"):
        return f"cost: SKIP {res['skip']}"
    f = figures(res)
    return "cost: " + "; ".join(f"{c} {fmt_ratio_spread(f[c]['ratio'], 3)}"
                                for c in res["runs"] if c != "untraced")


def goal_rows(ctx, f):
    """The issue's goals, checked: {config: cell}."""
    cells = {}
    for c, goal in GOALS.items():
        if c in f:
            m = median(f[c]["ratio"])
            cells[c] = ctx.goals.check(NAME, f"step proxy: {label(c)} / untraced",
                                       f"{m:.3f}x", f"<= {goal}x", m <= goal)
    if "default" in f and "cuda" in f:
        figure = "step proxy: default families' added time / -t cuda's"
        cuda = median(f["cuda"]["added"])
        if cuda <= 0:
            # The machine's drift between rounds is as large as -t cuda's cost: no ratio.
            why = f"not measurable: -t cuda added {cuda:.2f} ms, within the machine's drift"
            ctx.goals.skipped(NAME, figure, why)
            cells["share"] = f"<= {SHARE_GOAL}x: {why}"
        else:
            share = median(f["default"]["added"]) / cuda
            cells["share"] = ctx.goals.check(NAME, figure, f"{share:.2f}x", f"<= {SHARE_GOAL}x",
                                             share <= SHARE_GOAL)
    return cells


def markdown(ctx, res):
    out = block_head(ctx, NAME, "A launch-bound step, per family (the step proxy)")
    if res.get("skip"):
        return skipped_block(ctx, NAME, out, "step proxy: default families / untraced", res["skip"])
    f = figures(res)
    cells = goal_rows(ctx, f)
    r = ctx.r
    out.append("```")
    out.append(f"LD_PRELOAD=build/libbpfsight-shim.so {res['proxy']}   # P")
    out.append(r.show_cmd(record_cmd(r, "X", "T.bst")).replace("PID", "P") +
               "   # X: each configuration; none for default")
    out.append(r.show_cmd(floor_cmd(r)).replace("ready $$; exec sleep 3600", "...") +
               f"   # floor (floor-outer: without {', '.join(INNER)})")
    out.append("```")
    out.append("")
    out.append(f"{res['rounds']} rounds, configurations interleaved (the order reversed every "
               f"other round), {WARMUP} warm-up and {STEPS} timed steps each; a figure is the "
               f"median over the rounds of the round's median step (min .. max over the "
               f"rounds). The job's CPU is its process's CPU time per step (every thread's: a "
               f"uprobe's trap and program are the probed thread's), the figure least moved "
               f"by other work on the machine. Load average (1 min) at each round's start: "
               f"{', '.join(f'{x:.1f}' for x in res['loads'])}.")
    out.append("")
    out.append("| configuration | step | / untraced | added per step | the job's CPU / "
               "untraced | recorder CPU per step | BPF runs per step | BPF time per step | "
               "runs: lost | goal |")
    out.append("|---|---|---|---|---|---|---|---|---|---|")
    for c in res["runs"]:
        x = f[c]
        cell = cells.get(c, "")
        if c == "default" and "share" in cells:
            cell = (cell + "; " if cell else "") + "vs -t cuda: " + cells["share"]
        rec = (f"{x['cpu']:.2f} ms | {x['bpf_runs']:,.0f} | {x['bpf_ms']:.2f} ms | "
               f"{x['lost']}" if "cpu" in x else " | | | ")
        out.append(f"| {label(c)} | {spread_ms(x['step'])} | "
                   f"{fmt_ratio_spread(x['ratio'], 3)} | {spread_ms(x['added'])} | "
                   f"{fmt_ratio_spread(x['cpu_ratio'], 3)} | {rec} | {cell} |")
    out.append("")
    if res.get("per_step"):
        out.append(h100_estimate(res["per_step"]))
        out.append("")
    out.append("BPF programs per step (the stats round), the dearest first:")
    out.append("")
    out.append("| configuration | program: runs per step, ms per step |")
    out.append("|---|---|")
    for c in res["runs"]:
        if f[c].get("progs"):
            out.append(f"| {label(c)} | " + "; ".join(
                f"{n}: {k:,.0f}, {ms:.3f}" for n, k, ms in f[c]["progs"][:8]) + " |")
    out.append("")
    return block_end(ctx, NAME, out, "see \"Where a step's cost goes\" below.")


def h100_estimate(per):
    """A line: what the step's probe hits today would cost on the H100 host, at the price per
    hit the issue's H100 figure gives (an estimate, not a measurement)."""
    calls = per["calls"] + per["inside"]
    then = 2 * calls  # every call an entry and a return probe
    now = then - per["inner_launches"]  # a driver launch inside a runtime one: entry alone
    added = H100_STEP_MS * (H100_CUDA_RATIO - 1)
    est = added * now / then
    return (f"**Estimate, not measured**: the same probe hits on the H100 host. Issue #32 "
            f"measured `-t cuda` at {H100_CUDA_RATIO:.2f}x of the real GPT-2 step "
            f"({H100_STEP_MS:.0f} ms: {added:.2f} ms added) when each of its {calls:,.0f} calls "
            f"a step fired an entry and a return probe ({then:,.0f} hits, "
            f"{added / then * 1e3:.2f} us each); the same calls (this proxy's, per step: "
            f"{per['calls']:,.0f} made, {per['inside']:,.0f} inside them) now fire {now:,.0f} "
            f"(the {per['inner_launches']:,.0f} driver launches inside runtime launches fire "
            f"their entry alone): at the same price per hit about {est:.2f} ms, "
            f"{1 + est / H100_STEP_MS:.3f}x.")


def spread_ms(values):
    m, lo, hi = spread(values)
    return "n/a" if m is None else f"{m:.2f} ms ({lo:.2f} .. {hi:.2f})"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default="build")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--configs", help=f"comma-separated, '/' between families "
                                      f"(default: {' '.join(CONFIGS)})")
    args = ap.parse_args()

    class Ctx:
        r = Runner(args.build)
        quick = False
        quiet = Quiet(20, 40)

        @staticmethod
        def progress(label_, i, n, what):
            print(f"  {label_} {i}/{n}: {what}", flush=True)

    configs = [c.replace("/", ",") for c in args.configs.split(",")] if args.configs else None
    if configs and "untraced" not in configs:
        configs.insert(0, "untraced")
    try:
        res = run(Ctx, args.rounds, configs)
    finally:
        Ctx.r.cleanup()
    if res.get("skip"):
        print(f"SKIP {res['skip']}")
        return
    f = figures(res)
    print(f"load at each round: {res['loads']}")
    print(h100_estimate(res["per_step"]))
    for c in res["runs"]:
        x = f[c]
        extra = (f", recorder CPU {x['cpu']:.2f} ms/step, BPF {x['bpf_runs']:,.0f} runs "
                 f"{x['bpf_ms']:.2f} ms/step, lost {x['lost']}" if "cpu" in x else "")
        print(f"{c:>10}: step {spread_ms(x['step'])}, {fmt_ratio_spread(x['ratio'], 3)}, "
              f"added {spread_ms(x['added'])}; CPU {fmt_ratio_spread(x['cpu_ratio'], 3)}, "
              f"added {spread_ms(x['cpu_added'])}{extra}")
        for n, k, ms in x.get("progs", [])[:6]:
            print(f"{'':14}{n}: {k:,.0f} runs, {ms:.3f} ms per step")


if __name__ == "__main__":
    main()
