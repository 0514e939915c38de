#!/usr/bin/env python3
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""bpfsight's benchmark suite: what does bpfsight cost, measured side by side in one run
with empty BPF probes (the floor) and with bpftrace, on this machine.

    python3 bench/run_bench.py [--build build] [--quick] [--only SECTIONS] [--results FILE]
    make bench                     # full: under 10 minutes on 2 cores, writes RESULTS.md
    make bench BENCH_ARGS=--quick  # under a minute, indicative: prints only

Sections (each its own block of bench/RESULTS.md, between <!-- NAME:begin/end -->):

  probes     per-probe cost on micro targets: emulated first instruction, single-stepped
             one, USDT site; and bpfsight on the real libcudart (bench_probes.py)
  families   per family on realistic workloads: osrt, sched, cuda and nccl call loops; the gil
             family's own bench/bench_gil.py in full mode (bench_families.py)
  shim       the cupti-shim (gpu, nvtx): NVTX push/pop cost with no injection, the shim
             idle and recording; CUPTI records per second through the channel, BPF time
             per batch, every record in the file (bench_shim.py)
  pipeline   record pipeline: events/s with zero loss, bytes/event, recorder CPU and RSS,
             saturation (bench_pipeline.py)
  consumer   records per second of the recorder's own CPU: a cuda call loop, and cuda + gil
             + osrt + cupti-shim batches mixed (bench_consumer.py; ~20 s)
  soak       osrt under process churn (-a, 50,000 short children and a /bin/true loop):
             aggregate map entries and recorder RSS every second stay flat, every call
             counted (bench_soak.py; ~30 s)
  cpu        the cpu family: a CPU-bound Python loop sampled at 99 and 999 Hz against
             untraced runs, recorder CPU, bytes per sample (bench_cpu.py; ~1 min)
  flight     the flight recorder: its CPU against plain record at 1 M events/s, the
             latency of a 60 s window's dump, a soak of dumps every second with a small
             SIZE (bench_flight.py; ~2.5 min)
  monitor    bpfsight monitor against record on the osrt and cuda loops (no more), then
             3 min of monitor -a under process churn: RSS and fds flat, 0 lost
             (bench_monitor.py; ~5 min)
  top        bpfsight top against monitor: a cuda loop, and -a on the machine as it is
             (bench_top.py; ~1.5 min)
  ranks      bpfsight merge of 64 to 1,024 synthetic rank files: time, peak memory, the
             straggler report on the result, the SQLite path on 64 (bench_ranks.py; ~1 min)
  torch      the torch family: ns added per PyTorch op while recording, against
             torch.profiler (CPU) on the same loop and torch's own RecordFunction machinery
             (bench_torch.py; ~1 min)
  mem        the mem family: ns added per tensor allocation and free against empty probes
             on the same functions, per page written; a CPU CNN's step (DataLoader, 2
             workers) under -t mem against untraced, and under torch.profiler's
             profile_memory (bench_mem.py; ~3 min)
  cost       a launch-bound training step (tests/workloads/step_proxy.py: a real GPT-2
             step's 456 CUDA calls, 372 driver calls inside them, two launching threads,
             GIL hand-offs, syscalls):
             its step time untraced, under the empty probes' floor, under `-t cuda`,
             `-t cuda,gpu`, the default families and each family alone, interleaved; the
             recorder's CPU and the BPF programs' time per step (bench_cost.py; ~1.5 min)
  unwind     unwind tables: time and memory to build those of libtorch_cpu, libcublas,
             libcublasLt, libc and libpython, a process per run, and to read them back
             from the store of tables kept across recordings (bench_unwind.py; ~15 s)
  pyfunc     --python-functions: ns per traced call against an empty hook written in
             Python, and what untraced calls pay while recording, on every interpreter
             here (bench_pyfunc.py; ~30 s)

The summary block lists every figure with a goal; a run of some sections (--only) replaces
their rows and keeps the other sections' rows, their runs and any notes, each row dated.

Figures are medians with their min..max over repeated runs, and ratios (to the untraced
run, to the floor) rather than absolute times: this machine is noisy. A figure past its goal
is a regression flag, printed at the end and marked in RESULTS.md; the exit status is
non-zero only when the benchmark itself could not run. Needs root. Python standard library.
"""

import argparse
import os
import re
import shlex
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import bench_consumer  # noqa: E402
import bench_cost  # noqa: E402
import bench_cpu  # noqa: E402
import bench_families  # noqa: E402
import bench_flight  # noqa: E402
import bench_gpumetrics  # noqa: E402
import bench_mem  # noqa: E402
import bench_monitor  # noqa: E402
import bench_pipeline  # noqa: E402
import bench_probes  # noqa: E402
import bench_hang  # noqa: E402
import bench_edges  # noqa: E402
import bench_ranks  # noqa: E402
import bench_shim  # noqa: E402
import bench_soak  # noqa: E402
import bench_top  # noqa: E402
import bench_torch  # noqa: E402
import bench_pyfunc  # noqa: E402
import bench_unwind  # noqa: E402
from bench_common import (REPO, BenchError, Goals, Quiet, Runner, begin, die,  # noqa: E402
                          end, machine, machine_line, write_block)

SECTIONS = {"probes": bench_probes, "families": bench_families, "shim": bench_shim,
            "pipeline": bench_pipeline, "consumer": bench_consumer, "soak": bench_soak, "cpu": bench_cpu,
            "flight": bench_flight, "hang": bench_hang, "edges": bench_edges, "monitor": bench_monitor, "top": bench_top, "ranks": bench_ranks,
            "torch": bench_torch, "mem": bench_mem, "cost": bench_cost, "unwind": bench_unwind,
            "pyfunc": bench_pyfunc, "gpumetrics": bench_gpumetrics}
# Where each block goes in RESULTS.md (gil: bench/bench_gil.py writes its own).
ORDER = ["summary", "probes", "families", "gil", "shim", "pipeline", "consumer", "soak", "cpu", "flight",
         "hang", "edges", "monitor", "top", "ranks", "torch", "mem", "cost", "unwind", "pyfunc", "gpumetrics"]

# Repeats and durations. Full: ~4 min here, plus ~3 min of the gil family's benchmark and
# ~10 s of the shim section, so under 10 on 2 cores shared with other work; quick: ~35 s,
# under 1 min.
PARAMS = {
    "full": {
        "probe_ms": 200, "probe_rounds": 3, "probe_sessions": 2,
        "family_rounds": 5, "family_seconds": 1.0, "find_dirs": ["/usr"],
        "pipeline_runs": 5, "pipeline_duration": 2.0,
        "shim_rounds": 7, "nvtx_iters": 2_000_000, "gpu_extra": 100_000,
        "quiet_wait": 20, "quiet_budget": 40,
    },
    "quick": {
        "probe_ms": 40, "probe_rounds": 3, "probe_sessions": 1,
        "family_rounds": 3, "family_seconds": 0.5, "find_dirs": ["/usr/include"],
        "pipeline_runs": 2, "pipeline_duration": 0.5,
        "shim_rounds": 3, "nvtx_iters": 1_000_000, "gpu_extra": 20_000,
        "quiet_wait": 2, "quiet_budget": 4,
    },
}


class Context:
    """What a section gets: options, parameters, the runner, the machine, the goals."""

    def __init__(self, args):
        self.args = args
        self.quick = args.quick
        self.params = dict(PARAMS["quick" if args.quick else "full"])
        if args.runs:
            self.params.update(family_rounds=args.runs, pipeline_runs=args.runs,
                               shim_rounds=args.runs)
        if args.duration:
            self.params["pipeline_duration"] = args.duration
        # The pipeline section reads these two from args.
        args.runs = self.params["pipeline_runs"]
        args.duration = self.params["pipeline_duration"]
        self.r = Runner(args.build)
        self.machine = machine()
        self.goals = Goals()
        self.quiet = None
        self.sections = args.only
        self.invocation = invocation(args)

    def progress(self, label, i, n, text):
        print(f"  {label:<26} {i}/{n}: {text}", flush=True)


def invocation(args):
    """The command that reproduces this run, as RESULTS.md shows it (markdown)."""
    cmd = ["python3", "bench/run_bench.py", "--build", args.build]
    if args.quick:
        cmd.append("--quick")
    if args.only_given:
        cmd += ["--only", ",".join(args.only)]
    if args.runs_given:
        cmd += ["--runs", str(args.runs_given)]
    if args.duration_given:
        cmd += ["--duration", f"{args.duration_given:g}"]
    text = f"`{shlex.join(cmd)}`"
    if not (args.only_given or args.runs_given or args.duration_given):
        text += (f" (`make bench OUT={args.build}"
                 f"{' BENCH_ARGS=--quick' if args.quick else ''}`)")
    return text


def build(args):
    """The binaries the suite runs (make bench-build), unless --no-make."""
    cmd = ["make", "-s", "-j2", f"OUT={args.build}", "bench-build"]
    print(f"$ {' '.join(cmd)}", flush=True)
    if subprocess.run(cmd, cwd=REPO).returncode:
        die(f"building the benchmark binaries failed: {' '.join(cmd)}")


# A run's line in the summary: `COMMAND`...: sections A, B, N s, DATE, bpfsight V.
RUN_LINE = re.compile(r"^(?:- )?(`.*: sections (.+?), \d+ s, (\d{4}-\d\d-\d\d \d\d:\d\d UTC), "
                      r"bpfsight .*)$")
GOAL_HEAD = "| section | figure | value | goal | verdict | measured |"


def old_summary(path):
    """The summary block of PATH: its runs [(line, [section], date)], its goal rows
    [(section, [cell])] (rows without a measured column get the date of the block's first
    run), and the notes after the table (added by hand); None without one."""
    try:
        with open(path) as f:
            text = f.read()
    except FileNotFoundError:
        return None
    m = re.search(re.escape(begin("summary")) + r"(.*?)" + re.escape(end("summary")), text,
                  re.S)
    if not m:
        return None
    runs, rows, notes, state = [], [], [], "head"
    for line in m.group(1).strip("\n").splitlines():
        r = RUN_LINE.match(line)
        if state == "head" and r:
            runs.append((r.group(1), [x.strip() for x in r.group(2).split(",")], r.group(3)))
        elif state == "head" and line.startswith("| section |"):
            state = "table"
        elif state == "table" and line.startswith("|"):
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if cells[0].startswith("---"):
                continue
            if len(cells) == 5:
                cells.append(runs[0][2] if runs else "")
            rows.append((cells[0], cells))
        elif state != "head":
            state = "notes"
            notes.append(line)
    return {"runs": runs, "rows": rows, "notes": "\n".join(notes).strip("\n")}


def summary_block(ctx, ran, took, old=None):
    """The summary: this run's goals; after a run of some sections only (--only), also the
    other sections' rows, runs and notes from OLD (old_summary), so that a partial run
    does not wipe what it did not measure."""
    kept = old if old and ctx.args.only_given else {"runs": [], "rows": [], "notes": ""}
    this = (f"{ctx.invocation}: sections {', '.join(ran)}, {took:.0f} s, "
            f"{ctx.machine['date']}, bpfsight {ctx.machine['version']}."
            + (" **Quick run: indicative only.**" if ctx.quick else ""))
    runs = [this] + [line for line, secs, _ in kept["runs"] if set(secs) - set(ran)]
    rows = [[g["section"], g["figure"], g["value"] or "", g["goal"],
             {True: "met", False: "**REGRESSION**", None: "skipped"}[g["met"]],
             ctx.machine["date"]] for g in ctx.goals.items]
    rows += [cells for sec, cells in kept["rows"] if sec not in ran]
    out = [begin("summary"), "## Summary of the last run" + ("s" if len(runs) > 1 else ""),
           ""]
    if len(runs) > 1:
        out.append("Runs, newest first; a section's rows come from the newest run that "
                   "measured it (column `measured`):")
        out.append("")
        out += [f"- {line}" for line in runs]
    else:
        out.append(this)
    out.append("")
    out.append(machine_line(ctx.machine))
    out.append("")
    regs = [r for r in rows if r[4] == "**REGRESSION**"]
    if regs:
        out.append(f"**{len(regs)} figure(s) past their goal (REGRESSION):**")
    else:
        out.append("Every figure with a goal met it.")
    out.append("")
    out.append(GOAL_HEAD)
    out.append("|---|---|---|---|---|---|")
    out += ["| " + " | ".join(r) + " |" for r in rows]
    if kept["notes"]:
        out += ["", kept["notes"]]
    out.append(end("summary"))
    return "\n".join(out) + "\n"


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default="build", help="build directory (default: build)")
    ap.add_argument("--quick", action="store_true",
                    help="under a minute, indicative only; prints without writing "
                         "RESULTS.md unless --results is given")
    ap.add_argument("--only", help="comma-separated sections: probes, families, shim, "
                                   "pipeline, consumer, soak, cpu, flight, monitor, top, ranks, "
                                   "torch, mem, cost, unwind, pyfunc, gil "
                                   "(default: all)")
    ap.add_argument("--runs", type=int, help="repeats per figure in families, shim and "
                                             "pipeline (default 5, quick 2-3)")
    ap.add_argument("--duration", type=float,
                    help="seconds per pipeline run (default 2, quick 0.5)")
    ap.add_argument("--results", help="markdown file to update (default: bench/RESULTS.md "
                                      "in full mode, none in quick mode)")
    ap.add_argument("--no-results", action="store_true", help="do not write any results")
    ap.add_argument("--no-make", action="store_true", help="do not build first")
    args = ap.parse_args()
    args.runs_given, args.duration_given = args.runs, args.duration
    args.only_given = args.only is not None
    valid = list(SECTIONS) + ["gil"]
    args.only = [s.strip() for s in args.only.split(",")] if args.only else valid
    for s in args.only:
        if s not in valid:
            die(f"unknown section '{s}' (sections: {', '.join(valid)})")
    if (args.runs is not None and args.runs < 1) or \
            (args.duration is not None and args.duration <= 0):
        die("--runs must be >= 1 and --duration > 0")
    if args.no_results:
        args.results = None
    elif not args.results and not args.quick:
        args.results = os.path.join(REPO, "bench", "RESULTS.md")
    return args


def main():
    args = parse_args()
    if os.geteuid() != 0:
        die("bpfsight record needs root (or CAP_BPF + CAP_PERFMON): run as root")
    t0 = time.monotonic()
    if not args.no_make:
        build(args)
    ctx = Context(args)
    for path in (ctx.r.bpfsight, ctx.r.bench_bin("loadgen"), ctx.r.bench_bin("floor")):
        if not os.access(path, os.X_OK):
            die(f"{path} is missing: run `make OUT={args.build} bench-build`")
    m = ctx.machine
    print(f"bpfsight benchmark ({'quick' if ctx.quick else 'full'}): {m['nproc']} CPUs "
          f"({m['cpu']}), kernel {m['kernel']}, bpfsight {m['version']}", flush=True)
    blocks, texts, ran, timings = {}, [], [], {}
    try:
        for name, mod in SECTIONS.items():
            if name not in args.only:
                continue
            s0 = time.monotonic()
            print(f"\n== {name}", flush=True)
            # Per section, so that each states what it waited for.
            ctx.quiet = Quiet(ctx.params["quiet_wait"], ctx.params["quiet_budget"])
            res = mod.run(ctx)
            blocks[name] = mod.markdown(ctx, res)
            texts.append(mod.text(ctx, res))
            ran.append(name)
            timings[name] = time.monotonic() - s0
            print(f"   ({name}: {timings[name]:.0f} s)", flush=True)
        # The gil benchmark runs inside families (its figures are its own section); alone
        # with --only gil.
        if "gil" in args.only and "families" not in args.only:
            s0 = time.monotonic()
            print("\n== gil", flush=True)
            g = bench_families.gil(ctx)
            texts.append(f"gil: {'SKIP ' + g['skip'] if g.get('skip') else 'ran'}")
            ran.append("gil")
            timings["gil"] = time.monotonic() - s0
    except BenchError as e:
        die(str(e))
    finally:
        ctx.r.cleanup()
    took = time.monotonic() - t0
    for t in texts:
        print(t)
    print("\nGoals:")
    for g in ctx.goals.items:
        verdict = {True: "met", False: "REGRESSION", None: "skipped"}[g["met"]]
        print(f"  [{verdict}] {g['section']}: {g['figure']}: {g['value'] or '-'} "
              f"(goal {g['goal']})")
    regs = ctx.goals.regressions()
    if regs:
        print(f"\nREGRESSION: {len(regs)} figure(s) past their goal: "
              + "; ".join(f"{g['figure']} = {g['value']} (goal {g['goal']})" for g in regs))
    print(f"\n(benchmark took {took:.0f} s: "
          + ", ".join(f"{k} {v:.0f} s" for k, v in timings.items()) + ")")
    if args.results:
        for name, block in blocks.items():
            write_block(args.results, name, block, ORDER)
        write_block(args.results, "summary",
                    summary_block(ctx, ran, took, old_summary(args.results)), ORDER)
        print(f"wrote {os.path.relpath(args.results)}")


if __name__ == "__main__":
    main()
