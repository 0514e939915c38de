# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""Stacks (section `cpu` of bench/RESULTS.md; docs/STACKS.md "Cost"). Two parts:

1. Timer sampling (the cpu family) on a CPU-bound Python program: runs alternate untraced,
   sampled at 99, 999 and 9999 Hz (`record -t cpu --sample-rate HZ -- python3 -c LOOP`), the
   same fixed amount of work each time; the program times its own loop (wall, so interrupt
   and BPF time count) and reports its CPU time. Figures: the loop's slowdown against the
   untraced runs of the same round, the recorder's own CPU time per second of the program's,
   bytes per sample on disk, the sample program's own time (kernel.bpf_stats_enabled). The
   loop's speed moves by +-10% from run to run on this VM whatever is traced, far more than
   99 Hz can cost: the 99 Hz goal is checked on what a sample costs the loop, measured where
   it shows (9999 Hz: the loop's added wall time over its samples), plus the BPF time a
   sample at 99 Hz takes once the recording runs (colder caches; an upper bound: the runs of
   a loop LONG times longer less the usual one's, over the samples they add, so the start's
   one-time work, a ~1 s loop's ~100 samples share, is left out), taken 99 times a second;
   the 99 Hz runs' own ratio is shown beside it.
2. A stack per event (--stacks=cuda:0) at Python depth 10, 30 and 100: a Python loop calls
   cudaMalloc through ctypes (it fails at once: no GPU) from that depth, reached through
   one function recursing (one code object) or through D distinct functions (D code
   objects, as a real stack has); runs alternate `record -t cuda --stacks=none` and
   `--stacks=cuda:0`. The loop is timed in the thread's CPU time (time.thread_time: the
   uprobe and its BPF run count, the machine's other load does not). Figures: the time a
   stack adds per call (the difference of the per-call times in the same round; and of the
   return probe's own time, kernel.bpf_stats_enabled) and the
   bytes each stacked call adds on disk (its stack interned: the same stack every call).

    python3 bench/run_bench.py --build B --only cpu --no-results   # this section alone
"""

import glob
import json
import os
import resource
import subprocess

from bench_common import BenchError, block_end, block_head, bpf_stats, recorded, spread

NAME = "cpu"
RATES = (99, 999, 9999)
COST_RATE = 9999  # where a sample's cost shows above the loop's run-to-run noise
LOOP = ("import json, resource, time\n"
        "t = time.perf_counter()\n"
        "x = 0\n"
        "for i in range({n}):\n"
        "    x += i * i\n"
        "w = time.perf_counter() - t\n"
        "u = resource.getrusage(resource.RUSAGE_SELF)\n"
        "print(json.dumps({{'wall': w, 'cpu': u.ru_utime + u.ru_stime}}))\n")
SLOWDOWN_99 = 1.01  # the goal: sampling at 99 Hz costs at most 1%
LONG = 8  # the long 99 Hz loop: this many times the usual one
STACK_30_NS = 2000  # the goal: a 30-frame stack costs at most 2 us per event here
STACK_BYTES = 8	    # repeated stacks cost at most 8 bytes per event on disk
DEPTHS = (10, 30, 100)
CUDART = "/usr/local/cuda/lib64/libcudart.so"
SHAPES = ("recursion", "distinct")
# at(D, f) calls f D frames deep: through one function (recursion) or D functions f0..fD-1.
AT = {"recursion": ("def at(d, f):\n"
                    "    return f() if d <= 1 else at(d - 1, f)\n"),
      "distinct": ("def at(d, f):\n"
                   "    src = ''.join('def f%d(g):\\n    return f%d(g)\\n' % (i, i + 1)\n"
                   "                  for i in range(d - 1))\n"
                   "    src += 'def f%d(g):\\n    return g()\\n' % (d - 1)\n"
                   "    ns = {}\n"
                   "    exec(src, ns)\n"
                   "    return ns['f0'](f)\n")}
CALLS = ("import ctypes, json, sys, time\n"
         "rt = ctypes.CDLL({cudart!r})\n"
         "p = ctypes.c_void_p()\n"
         "{at}"
         "def loop():\n"
         "    t = time.thread_time()\n"
         "    for _ in range({n}):\n"
         "        rt.cudaMalloc(ctypes.byref(p), ctypes.c_size_t(4096))\n"
         "    return time.thread_time() - t\n"
         "print(json.dumps({{'per_call_ns': at({depth}, loop) / {n} * 1e9}}))\n")


def python():
    found = sorted(glob.glob("/root/.pyenv/versions/3.12.*/bin/python3.12"))
    return found[-1] if found else "/usr/bin/python3"


def one(ctx, rate, n):
    """The loop untraced (RATE None) or sampled at RATE: (its result, recorder CPU s, trace
    bytes, samples, ns the sample program ran in all, or None)."""
    cmd = [python(), "-c", LOOP.format(n=n)]
    if rate is None:
        p = subprocess.run(cmd, stdout=subprocess.PIPE, text=True, check=True)
        return json.loads(p.stdout.strip().splitlines()[-1]), None, None, None, None
    out = ctx.r.tmpfile(".bst")
    rcmd = [ctx.r.bpfsight, "record", "--force", "-o", out, "-t", "cpu", "--sample-rate",
            str(rate), "--"] + cmd
    stdout, stderr, rc, per = recorded(rcmd, {"cpu_sample"})
    # The recorder reaps the program: its rusage holds both; the program says its own part.
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    if rc:
        raise BenchError(f"{' '.join(rcmd)} exited {rc}: {stderr[-400:]}")
    res = json.loads(stdout.strip().splitlines()[-1])
    info = ctx.r.json_of([ctx.r.bpfsight, "info", "--json", out])
    samples = info.get("events", {}).get("cpu_sample", 0)
    prog_ns = per["cpu_sample"][1] if "cpu_sample" in per else None
    return res, ru, os.path.getsize(out), samples, prog_ns


def stacked(ctx, shape, depth, n, on):
    """The call loop at DEPTH of SHAPE recorded with --stacks=cuda:0 (ON) or none: (ns of
    the thread's CPU per call, trace bytes, calls recorded, ns per run of the return probe's
    program or None)."""
    out = ctx.r.tmpfile(".bst")
    cmd = [ctx.r.bpfsight, "record", "--force", "-o", out, "-t", "cuda",
           "--stacks=" + ("cuda:0" if on else "none"), "--", python(), "-c",
           CALLS.format(cudart=CUDART, n=n, depth=depth, at=AT[shape])]
    stdout, stderr, rc, per = recorded(cmd, {"ucall_return"})
    if rc:
        raise BenchError(f"{' '.join(cmd[:8])} exited {rc}: {stderr[-400:]}")
    res = json.loads(stdout.strip().splitlines()[-1])
    info = ctx.r.json_of([ctx.r.bpfsight, "info", "--json", out])
    runs, ns = per.get("ucall_return", (0, 0))
    return (res["per_call_ns"], os.path.getsize(out), info.get("events", {}).get("cuda_api", 0),
            ns / runs if runs and ns else None)


def run_stacks(ctx):
    rounds = 3 if ctx.quick else 9
    n = 5_000 if ctx.quick else 40_000
    res = {(sh, d): {"off": [], "on": []} for sh in SHAPES for d in DEPTHS}
    if not os.path.exists(CUDART):
        return None
    with bpf_stats():
        for i in range(rounds):
            for sh, d in res:
                # Each round in the other order: a drift of the machine's speed cancels out.
                for on in ((False, True) if i % 2 == 0 else (True, False)):
                    res[sh, d]["on" if on else "off"].append(stacked(ctx, sh, d, n, on))
                ctx.progress("cpu", i, rounds, f"stacks at depth {d} ({sh})")
    return {"n": n, "rounds": rounds, "runs": res}


def run(ctx):
    rounds = 3 if ctx.quick else 7
    n = 3_000_000 if ctx.quick else 10_000_000
    runs = {None: [], "long": [], **{r: [] for r in RATES}}
    configs = (None,) + RATES
    with bpf_stats() as stats_on:
        for i in range(rounds):
            # Each round in the other order: a drift of the machine's speed cancels out.
            for k, rate in enumerate(configs if i % 2 == 0 else configs[::-1]):
                before = resource.getrusage(resource.RUSAGE_CHILDREN)
                res, after, size, samples, prog_ns = one(ctx, rate, n)
                rec_cpu = None
                if after is not None:
                    rec_cpu = (after.ru_utime + after.ru_stime - before.ru_utime -
                               before.ru_stime) - res["cpu"]
                runs[rate].append({"wall": res["wall"], "cpu": res["cpu"], "rec_cpu": rec_cpu,
                                   "bytes": size, "samples": samples, "prog_ns": prog_ns})
                ctx.progress("cpu", i * len(configs) + k + 1, rounds * len(configs),
                             f"{rate or 'untraced'}: {res['wall']:.3f} s")
            # The long 99 Hz loop: what its runs add to the usual one's is a sample's own
            # time once the recording runs.
            res, _, _, samples, prog_ns = one(ctx, 99, n * LONG)
            runs["long"].append({"samples": samples, "prog_ns": prog_ns})
    return {"rounds": rounds, "n": n, "runs": runs, "python": python(), "stats": stats_on,
            "stacks": run_stacks(ctx),
            "cmd": ctx.r.show_cmd([ctx.r.bpfsight, "record", "-t", "cpu", "--sample-rate",
                                   "HZ", "--", python(), "-c", "LOOP"])}


def figures(res):
    base = res["runs"][None]
    f = {}
    for rate in RATES:
        rs = res["runs"].get(rate, [])
        f[rate] = {
            "slowdown": spread([r["wall"] / b["wall"] for r, b in zip(rs, base)]),
            "rec_cpu": spread([r["rec_cpu"] / r["cpu"] for r in rs if r["cpu"]]),
            "bytes": spread([r["bytes"] / r["samples"] for r in rs if r["samples"]]),
            "samples": spread([r["samples"] / r["cpu"] for r in rs if r["cpu"]]),
            "prog_ns": spread([r["prog_ns"] / r["samples"] for r in rs
                               if res.get("stats") and r.get("prog_ns") is not None and
                               r["samples"]]),
            # What a sample cost the loop: its added wall time over its samples (same round).
            "cost_ns": spread([(r["wall"] - b["wall"]) / r["samples"] * 1e9
                               for r, b in zip(rs, base) if r["samples"]]),
        }
    # The BPF time of a sample at 99 Hz once the recording runs: the long loop's runs less
    # the usual one's (same round), over the samples it adds.
    f["marginal_99"] = spread([(lg["prog_ns"] - r["prog_ns"]) / (lg["samples"] - r["samples"])
                               for lg, r in zip(res["runs"].get("long", []), res["runs"][99])
                               if res.get("stats") and lg.get("prog_ns") is not None and
                               r.get("prog_ns") is not None and lg["samples"] > r["samples"]])
    # An upper bound of what 99 samples a second cost: a sample's cost where it shows, plus
    # the BPF time of a sample at 99 Hz (colder caches there; the other CPU's runs too).
    cost, cold = f[COST_RATE]["cost_ns"], f["marginal_99"]
    f["projected_99"] = tuple(None if c is None else 1 + 99 * (c + (b or 0)) / 1e9
                              for c, b in zip(cost, cold))
    return f


def stack_figures(res):
    st = res.get("stacks")
    if not st:
        return None
    f = {}
    for k, r in st["runs"].items():
        f[k] = {"add_ns": spread([on[0] - off[0] for on, off in zip(r["on"], r["off"])]),
                "bpf_ns": spread([on[3] - off[3] for on, off in zip(r["on"], r["off"])
                                  if len(on) > 3 and on[3] and off[3]]),
                "ratio": spread([on[0] / off[0] for on, off in zip(r["on"], r["off"])]),
                "bytes": spread([(on[1] - off[1]) / max(on[2], 1)
                                 for on, off in zip(r["on"], r["off"])])}
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
    sf = stack_figures(res)
    stacks = "" if not sf else "; stacks per call: " + ", ".join(
        f"depth {d} ({sh}) +{fmt(sf[sh, d]['add_ns'], digits=0)} ns, "
        f"{fmt(sf[sh, d]['bytes'], digits=1)} bytes" for sh in SHAPES for d in DEPTHS)
    return "cpu: " + "; ".join(
        f"{r} Hz: loop {fmt(f[r]['slowdown'])}x untraced, recorder CPU "
        f"{fmt(f[r]['rec_cpu'], pct=True)} of the program's, "
        f"{fmt(f[r]['bytes'], digits=0)} bytes/sample" for r in RATES) + \
        f"; a sample costs the loop {fmt(f[COST_RATE]['cost_ns'], digits=0)} ns " \
        f"(at {COST_RATE} Hz), 99 Hz projected {fmt(f['projected_99'], digits=4)}x" + stacks


def markdown(ctx, res):
    f = figures(res)
    slow = f["projected_99"][0]
    cell = ctx.goals.check(NAME, "sampling at 99 Hz: slowdown of a CPU-bound Python loop "
                           f"(a sample's cost measured at {COST_RATE} Hz, 99 a second)",
                           f"{slow:.4f}x" if slow else "n/a", f"<= {SLOWDOWN_99}x",
                           slow is not None and slow <= SLOWDOWN_99)
    out = block_head(ctx, NAME, "Stacks: timer sampling (cpu) and a stack per event (--stacks)")
    out.append("```")
    out.append(f"{res['python']} -c LOOP        # untraced, then:")
    out.append(res["cmd"] + "   # HZ = 99, 999, 9999; alternating (each round in the "
               f"other order), {res['rounds']} rounds")
    out.append("```")
    out.append("")
    out.append(f"LOOP: `x += i * i` for i in range({res['n']:,}), timed by the program "
               f"(perf_counter around the loop) with its CPU time (getrusage); the "
               f"recorder's CPU is its rusage less the program's. Medians (min..max).")
    out.append("")
    def row(name, key, goal="", **kw):
        out.append(f"| {name} | " + " | ".join(fmt(f[r][key], **kw) for r in RATES) +
                   f" | {goal} |")

    out.append("| figure | " + " | ".join(f"{r} Hz" for r in RATES) + " | goal |")
    out.append("|---|" + "---|" * len(RATES) + "---|")
    row("loop wall time / untraced (same round)", "slowdown")
    row("what a sample costs the loop: added wall ns / samples (same round)", "cost_ns",
        digits=0)
    row("the sample program's own ns per sample recorded (bpf_stats: all its runs, on "
        "every CPU, over the samples)", "prog_ns", digits=0)
    out.append(f"| the sample program's ns per sample at 99 Hz once the recording runs (a loop "
               f"{LONG}x longer: its runs less the usual one's, over the samples it adds) | "
               f"{fmt(f['marginal_99'], digits=0)} | | | |")
    row("recorder CPU / program CPU", "rec_cpu", pct=True)
    row("samples per CPU-second of the program", "samples", digits=1)
    row("trace bytes per sample (whole file)", "bytes", digits=0)
    out.append(f"| **99 Hz: 1 + 99 x (a sample's cost at {COST_RATE} Hz + the BPF ns per "
               f"sample at 99 Hz once the recording runs)** | "
               f"{fmt(f['projected_99'], digits=4)} | | | {cell} |")
    out.append("")
    sf = stack_figures(res)
    if sf:
        st = res["stacks"]
        c30 = sf["distinct", 30]["add_ns"][0]
        cell = ctx.goals.check(NAME, "a 30-frame Python stack per event", f"{c30:.0f} ns",
                               f"<= {STACK_30_NS} ns", c30 is not None and c30 <= STACK_30_NS)
        b = max(v["bytes"][0] for v in sf.values())
        bcell = ctx.goals.check(NAME, "a repeated stack on disk, per event", f"{b:.1f} B",
                                f"<= {STACK_BYTES} B", b <= STACK_BYTES)
        out.append("A stack per event: `python3 -c CALLS` at Python depth D (one function "
                   "recursing, or D distinct functions: D code objects, as in a real stack) "
                   f"calls cudaMalloc {st['n']:,} times through ctypes, recorded with "
                   "`record -t cuda --stacks=none` and `--stacks=cuda:0` alternately "
                   f"({st['rounds']} rounds, every shape and depth in each): what the stack "
                   "adds to each call, in the calling thread's CPU time (time.thread_time: "
                   "the uprobe and BPF count, other load on the machine does not), native "
                   "frames up to the ctypes glue, then up to 64 Python frames (depth 100 is "
                   "cut), and what it adds to the file; and what it adds to the return "
                   "probe's own time (kernel.bpf_stats_enabled, on in both: the BPF part "
                   "alone, steadier).")
        out.append("")
        out.append("| depth | code objects | ns added per call | BPF ns added per call | "
                   "call CPU with / without | bytes added per call on disk | goal |")
        out.append("|---|---|---|---|---|---|---|")
        for sh in SHAPES:
            for d in DEPTHS:
                goal = cell if (sh, d) == ("distinct", 30) else ""
                v = sf[sh, d]
                out.append(f"| {d} | {'1' if sh == 'recursion' else d} | "
                           f"{fmt(v['add_ns'], digits=0)} | {fmt(v['bpf_ns'], digits=0)} | "
                           f"{fmt(v['ratio'])} | {fmt(v['bytes'], digits=2)} | {goal} |")
        out.append(f"| bytes, all depths | | | | | | {bcell} |")
        out.append("")
    meaning = ("a sample costs the interrupted program the timer interrupt, one BPF run (the "
               "frame-pointer walk, the thread state and its Python frames) and a ring "
               "record; symbolizing and interning happen in the recorder, once per distinct "
               "stack, and a sample on disk is its 32-byte record compressed (the stack "
               "itself is written once). The loop's speed moves by about +-10% from run to "
               "run on this VM whatever is traced (its wall time equals its CPU time: the "
               "host's other guests, not the scheduler), so the 99 Hz runs' own ratio is "
               "noise around 1 and cannot show a 1% effect; at 9999 Hz the samples' cost "
               "shows, and a sample's cost there plus the BPF time of a sample at 99 Hz (a "
               "sample at 99 Hz finds colder caches, and the other CPU's timer runs the "
               "program too: counted in full, an upper bound), taken 99 times a second, is "
               "the 99 Hz figure. That BPF time is what a loop 8x longer adds over the "
               "usual one's samples: all the runs over a ~1 s loop's ~100 samples also "
               "share the start's one-time work (the first walks of the interpreter's "
               "state), paid once per recording, not per second. The 999 Hz recorder CPU is mostly its start (loading, "
               "reading the interpreter's symbols) over a ~1 s program. A stack on an "
               "event: the frame-pointer walk copies the stack a page at a time and follows "
               "only frame pointers that point up the stack (the kernel's walker faulted on "
               "the value libffi left in rbp: ~0.6 us), the thread state the CPU found last "
               "for the thread is read first (one copy; from 3.12 it also says whether the "
               "thread holds the GIL), 3.11+ frames come from one copy of the thread's data "
               "stack from where the last walk began, and a code object's identity from the "
               "last walk at the same depth or the py_codes map. What remains is fixed per "
               "event (about five user-memory copies of ~100-200 ns on this SRSO/retpoline "
               "VM, the py_procs lookup, the ring record) plus ~20-30 ns per frame. On disk a "
               "repeated stack is its STACK_REF, under 2 bytes compressed. Calls under the "
               "threshold (100 us by default) pay one comparison.")
    return block_end(ctx, NAME, out, meaning)
