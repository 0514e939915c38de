"""Steps from other sources than torch's (`stats --steps`, `report --steps`; the steps service,
user/report/steps.h; docs/USAGE.md, "Steps"): the per-step reports of a process without torch
steps count over the NVTX ranges the user names, recorded from the real NVTX workload
(tests/workloads/shim/nvtx_ranges.c: one "outer" range per loop, a "registered-step" range in
domain bpfsight.test per loop), over cudaProfilerStart to Stop in a real H100 trace
(../shared/traces), and over synthetic traces (synth.py) for what this machine cannot record
(cuBLAS GEMMs, GPU memory) or needs exact times for; torch's steps come first wherever a
process has them."""
import json
import os
import re

import synth
from helpers import BPFSIGHT, BUILD, Skip, check, dump, eq, need_root, run, tmpdir, workload

# For tests/run_tests.py: about how long these tests take on CI's machine (its order).
SECONDS = 20

SHIM = os.path.join(BUILD, "libbpfsight-shim.so")
RANGES = workload("shim/nvtx_ranges")
TRACES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "shared",
                      "traces")
MIB = 1 << 20
SOURCES = "torch, cudaProfilerApi, nvtx:NAME, ProfilerStep"


def steps_of(path, source=None, report="torch_step_sum", cmd_opts=()):
    args = [BPFSIGHT, "stats", path, "-r", report, "--format", "json", *cmd_opts]
    if source:
        args.append(f"--steps={source}")
    return json.loads(run(args, check=True).stdout)["reports"][report]


def test_nvtx_ranges_named_are_the_steps():
    """nvtx_ranges, 3 loops, recorded with -t nvtx (no torch): without --steps no step; with
    --steps=nvtx:outer exactly one step per loop, each its "outer" range (the same start and
    length as dump's), numbered 1 to 3; a registered string's range of a domain is a step by
    NAME@DOMAIN, not by NAME (the default domain's). report --steps draws the same 3 steps in
    the page's "steps" row."""
    need_root()
    for p in (SHIM, RANGES):
        if not os.path.exists(p):
            raise Skip(f"{p} missing: make test-build (needs the CUDA toolkit's nvtx3)")
    out = os.path.join(tmpdir(), "t.bst")
    p = run([BPFSIGHT, "record", "-o", out, "-t", "nvtx", "--", RANGES, "--loops", "3"],
            timeout=120)
    eq(p.returncode, 0, f"record ({p.stderr[-500:]})")
    pid = json.loads(p.stdout.splitlines()[0])["pid"]
    outer = sorted((e for e in dump(out) if e["kind"] == "nvtx_range" and
                    e["name"] == "outer"), key=lambda e: e["ts"])
    eq(len(outer), 3, "the workload's outer ranges")

    eq(steps_of(out), [], "no torch step, none named: no step")
    rows = steps_of(out, "nvtx:outer")
    eq([(r["step"], r["pid"], r["wall_ns"], r["ops"], r["name"]) for r in rows],
       [(i + 1, pid, e["dur"], 0, "outer") for i, e in enumerate(outer)],
       "a step per loop: its outer range")
    eq([b["start_ns"] - a["start_ns"] for a, b in zip(rows, rows[1:])],
       [b["ts"] - a["ts"] for a, b in zip(outer, outer[1:])], "where each starts")
    eq(len(steps_of(out, "nvtx:registered-step@bpfsight.test")), 3, "NAME@DOMAIN")
    eq(len(steps_of(out, "nvtx:registered-step@*")), 3, "NAME@*: any domain")
    eq(steps_of(out, "nvtx:registered-step"), [], "NAME: the default domain's only")

    page = os.path.join(tmpdir(), "t.html")
    p = run([BPFSIGHT, "report", out, "-o", page, "--steps=nvtx:outer"])
    eq(p.returncode, 0, f"report ({p.stderr[-500:]})")
    with open(page) as f:
        html = f.read()
    row = re.search(r'<g class="bands shade" data-row="steps">(.*?)</g>', html)
    check(row, "the page's steps row")
    eq(re.findall(r"<title>(step \d+) \(", row.group(1)), ["step 1", "step 2", "step 3"],
       "a band per step")
    p = run([BPFSIGHT, "report", out, "-o", page, "--force"], check=True)
    with open(page) as f:
        check('data-row="steps"' not in f.read(), "without --steps, no steps row")


def test_cuda_profiler_range_of_a_real_trace():
    """gpt2-eager-range.bst (H100, --capture-range=cudaProfilerApi): its one profiler range is
    one step, from the driver's cuProfilerStart (the runtime's call began before the range, so
    the file has not it) to the end of cudaProfilerStop, with its GPU busy time."""
    trace = os.path.join(TRACES, "gpt2-eager-range.bst")
    if not os.path.exists(trace):
        raise Skip(f"no {trace} (the real traces)")
    calls = {e["name"]: e for e in dump(trace) if e["kind"] == "cuda_api" and
             e["name"] in ("cuProfilerStart", "cudaProfilerStop")}
    rows = steps_of(trace, "cudaProfilerApi")
    eq([(r["step"], r["pid"], r["wall_ns"], r["name"]) for r in rows],
       [(1, calls["cuProfilerStart"]["pid"],
         calls["cudaProfilerStop"]["ts"] + calls["cudaProfilerStop"]["dur"] -
         calls["cuProfilerStart"]["ts"], "cudaProfilerApi")], "one step: the range")
    check(0 < rows[0]["gpu_busy_ns"] <= rows[0]["wall_ns"], f"GPU busy in it: {rows[0]}")
    eq(steps_of(trace), [], "not without --steps")


GEMM_N, SGEMM, GEMM_EX, BF16, C32 = 1024, 6, 50, 14, 68


def gemm(t, pid, ts, kind="sgemm"):
    n = GEMM_N
    if kind == "sgemm":
        t.cublas_call(pid, pid, ts, 1000, SGEMM, args=(0x1, 1, 0, n, n, n),
                      stack=(0, 0, n, 0, n, 0, 0, n))
    else:
        t.cublas_call(pid, pid, ts, 1000, GEMM_EX, args=(0x1, 0, 0, n, n, n),
                      stack=(0, 0, BF16, n, 0, BF16, n, 0, 0, BF16, n, C32, 0))


def test_gemm_step_sum_over_nvtx_steps_and_torch_first():
    """Process 1 marks its steps with NVTX ranges "step" (1 ms, then 2 ms); process 2 has
    torch steps and NVTX ranges "step" too: with --steps=nvtx:step, process 1's rows are its
    ranges, with the MFU test_cublas computes over torch steps of the same times; process 2's
    are its torch steps (numbered by torch), not its ranges."""
    t = synth.Trace(families="proc,cuda,gpu,nvtx,torch,cublas")
    f = 2 * GEMM_N ** 3
    gemm(t, 1, 100_000)
    gemm(t, 1, 300_000)
    t.range(1, 1, 0, 1_000_000, "step")
    gemm(t, 1, 1_500_000, "ex")
    t.range(1, 1, 1_000_000, 2_000_000, "step")
    gemm(t, 2, 5_100_000)
    t.torch_step(2, 2, 5_000_000, 1_000_000, 41)
    t.range(2, 2, 5_000_000, 400_000, "step")
    path = t.write(tmpdir())
    rows = steps_of(path, "nvtx:step", "gemm_step_sum", ("--peak-tflops", "h100-sxm"))
    eq([(r["pid"], r["step"], r["step_ns"], r["gemms"], r["flops"], r["mfu_pct"])
        for r in rows],
       [(1, "1", 1_000_000, 2, 2 * f, round(100 * 2 * f / 67e3 / 1e6, 2)),
        (1, "2", 2_000_000, 1, f, round(100 * f / 989.4e3 / 2e6, 2)),
        (2, "41", 1_000_000, 1, f, round(100 * f / 67e3 / 1e6, 2))],
       "process 1's NVTX steps, process 2's torch steps, in the trace's order")
    rows = steps_of(path, None, "gemm_step_sum", ("--peak-tflops", "h100-sxm"))
    eq([(r["pid"], r["step"]) for r in rows], [(2, "41")], "without --steps: torch's only")


def test_mem_leaks_grow_per_nvtx_step():
    """A line keeps 1 MiB each NVTX step (5 steps) and frees a 3 MiB temporary within it:
    with --steps=nvtx:step its growth is measured per step, 1 MiB at each of the 5; without,
    over the passes of the loop its allocations repeat in (1 MiB, 3 MiB: every 2), the 4
    that the 10 allocations hold whole."""
    pid = 10
    t = synth.Trace(families="proc,mem,nvtx")
    t.process(pid, "train")
    for i in range(5):
        ts = 1_000_000 * (i + 1)
        t.mem_alloc(pid, pid, ts + 100, 0x10000 * (i + 1), MIB)
        t.mem_alloc(pid, pid, ts + 200, 0xf00000, 3 * MIB)
        t.mem_free(pid, pid, ts + 300, 0xf00000, 3 * MIB)
        t.range(pid, pid, ts, 1_000_000, "step")
    path = t.write(tmpdir())
    rows = steps_of(path, "nvtx:step", "mem_leaks")
    eq([(r["per"], r["steps"], r["grew"], r["growth_per_step_bytes"], r["live_bytes"],
         r["step_ns"]) for r in rows], [("step", 5, 5, MIB, 5 * MIB, 1_000_000)],
       "a step per NVTX range")
    rows = steps_of(path, None, "mem_leaks")
    eq([(r["per"], r["steps"], r["grew"], r["growth_per_step_bytes"]) for r in rows],
       [("loop", 4, 4, MIB)], "without --steps: the loop's passes")


def test_pyfunc_per_profiler_step():
    """torch.profiler's ProfilerStep#N scopes as steps (--steps=ProfilerStep), numbered as
    torch numbers them, for a process the recorder wrote no torch step for."""
    pid = 20
    t = synth.Trace(families="proc,torch,pyfunc")
    for n in range(3):
        ts = 10_000 * (n + 1)
        t.pyfunc_call(pid, pid, ts + 10, 100 * (n + 1), "train:load", "train.py", 5)
        t.torch_op(pid, pid, ts, 10_000, f"ProfilerStep#{n}", scope="user_scope",
                   flags=synth.TORCH_PROFILER_STEP)
    t.pyfunc_call(pid, pid, 50_000, 7, "train:load", "train.py", 5)
    path = t.write(tmpdir())
    rows = steps_of(path, "ProfilerStep", "pyfunc_step_sum")
    eq([(r["function"], r["steps"], r["calls_per_step"], r["time_per_step_ns"],
         r["min_step_ns"], r["max_step_ns"], r["outside_steps"]) for r in rows],
       [("train:load", 3, 1.0, 200.0, 100, 300, 1)], "three steps, a call each, one outside")
    eq([r["step"] for r in steps_of(path, "ProfilerStep")], [0, 1, 2], "ProfilerStep#N: N")
    eq(steps_of(path, None, "pyfunc_step_sum"), [], "no torch step: no row")


def test_steps_option_checked():
    """An unknown source, a source without its value or with one it does not take: refused,
    exit 1, naming the sources, by stats and report alike."""
    t = synth.Trace(families="proc")
    t.process(1, "x")
    path = t.write(tmpdir())
    for cmd in (["stats", path], ["report", path, "-o", os.path.join(tmpdir(), "x.html")]):
        for bad, says in (("nvtxx:a", "no such source of steps (sources: " + SOURCES),
                          ("nvtx", "nvtx:NAME needs its NAME: NVTX ranges"),
                          ("cudaProfilerApi:x", "cudaProfilerApi takes no value (sources: " +
                           SOURCES)):
            p = run([BPFSIGHT, *cmd, f"--steps={bad}"])
            eq(p.returncode, 1, f"{cmd[0]} --steps={bad}")
            check(f"--steps={bad}: {says}" in p.stderr, f"{cmd[0]} --steps={bad}: {p.stderr}")
    p = run([BPFSIGHT, "stats", "--help"], check=True)
    check(SOURCES in p.stdout, "--help lists the sources")
