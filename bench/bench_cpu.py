# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""Stacks (section `cpu` of bench/RESULTS.md; docs/STACKS.md "Cost"). Two parts:

1. Timer sampling (the cpu family) on a CPU-bound Python program: runs alternate untraced,
   sampled at 99 Hz and at 999 Hz (`record -t cpu --sample-rate HZ -- python3 -c LOOP`), the
   same fixed amount of work each time; the program times its own loop (wall, so interrupt
   and BPF time count) and reports its CPU time. Figures: the loop's slowdown against the
   untraced runs of the same round, the recorder's own CPU time per second of the program's,
   bytes per sample on disk.
2. A stack per event (--stacks=cuda:0) at Python depth 10, 30 and 100: a Python loop calls
   cudaMalloc through ctypes (it fails at once: no GPU) from that depth, reached through
   one function recursing (one code object) or through D distinct functions (D code
   objects, as a real stack has); runs alternate `record -t cuda --stacks=none` and
   `--stacks=cuda:0`. The loop is timed in the thread's CPU time (time.thread_time: the
   uprobe and its BPF run count, the machine's other load does not). Figures: the time a
   stack adds per call (the difference of the per-call times in the same round) and the
   bytes each stacked call adds on disk (its stack interned: the same stack every call).

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


def stacked(ctx, shape, depth, n, on):
    """The call loop at DEPTH of SHAPE recorded with --stacks=cuda:0 (ON) or none: (ns of
    the thread's CPU per call, trace bytes, calls recorded)."""
    out = ctx.r.tmpfile(".bst")
    cmd = [ctx.r.bpfsight, "record", "-f", "-o", out, "-t", "cuda",
           "--stacks=" + ("cuda:0" if on else "none"), "--", python(), "-c",
           CALLS.format(cudart=CUDART, n=n, depth=depth, at=AT[shape])]
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if p.returncode:
        raise BenchError(f"{' '.join(cmd[:8])} exited {p.returncode}: {p.stderr[-400:]}")
    res = json.loads(p.stdout.strip().splitlines()[-1])
    info = ctx.r.json_of([ctx.r.bpfsight, "info", "--json", out])
    return res["per_call_ns"], os.path.getsize(out), info.get("events", {}).get("cuda_api", 0)


def run_stacks(ctx):
    rounds = 3 if ctx.quick else 5
    n = 5_000 if ctx.quick else 20_000
    res = {(sh, d): {"off": [], "on": []} for sh in SHAPES for d in DEPTHS}
    if not os.path.exists(CUDART):
        return None
    for i in range(rounds):
        for sh, d in res:
            for on in (False, True):
                res[sh, d]["on" if on else "off"].append(stacked(ctx, sh, d, n, on))
            ctx.progress("cpu", i, rounds, f"stacks at depth {d} ({sh})")
    return {"n": n, "rounds": rounds, "runs": res}


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
    return {"rounds": rounds, "n": n, "runs": runs, "python": python(), "stacks": run_stacks(ctx),
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


def stack_figures(res):
    st = res.get("stacks")
    if not st:
        return None
    f = {}
    for k, r in st["runs"].items():
        f[k] = {"add_ns": spread([on[0] - off[0] for on, off in zip(r["on"], r["off"])]),
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
        f"{fmt(f[r]['bytes'], digits=0)} bytes/sample" for r in RATES) + stacks


def markdown(ctx, res):
    f = figures(res)
    slow = f[99]["slowdown"][0]
    cell = ctx.goals.check(NAME, "sampling at 99 Hz: slowdown of a CPU-bound Python loop",
                           f"{slow:.3f}x" if slow else "n/a", f"<= {SLOWDOWN_99}x",
                           slow is not None and slow <= SLOWDOWN_99)
    out = block_head(ctx, NAME, "Stacks: timer sampling (cpu) and a stack per event (--stacks)")
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
                   "cut), and what it adds to the file.")
        out.append("")
        out.append("| depth | code objects | ns added per call | call CPU with / without | "
                   "bytes added per call on disk | goal |")
        out.append("|---|---|---|---|---|---|")
        for sh in SHAPES:
            for d in DEPTHS:
                goal = cell if (sh, d) == ("distinct", 30) else ""
                v = sf[sh, d]
                out.append(f"| {d} | {'1' if sh == 'recursion' else d} | "
                           f"{fmt(v['add_ns'], digits=0)} | {fmt(v['ratio'])} | "
                           f"{fmt(v['bytes'], digits=2)} | {goal} |")
        out.append(f"| bytes, all depths | | | | | {bcell} |")
        out.append("")
    meaning = ("a sample costs the interrupted program one BPF run and a frame-pointer walk "
               "in the kernel; symbolizing and interning happen in the recorder, once per "
               "distinct stack, and a sample on disk is its 32-byte record compressed "
               "(the stack itself is written once). The loop's wall time moves with the "
               "machine's other load as much as with sampling (on a quiet machine 99 Hz "
               "measured 0.94x, within noise; check the spread before reading a regression "
               "into one run). A stack on an event no longer grows by three user-memory "
               "copies per Python frame (~100-200 ns apiece on this SRSO/retpoline VM): "
               "3.11+ frames come from one 8 KiB copy of the thread's data stack, and a "
               "code object's identity from the py_codes map once a stack has read it, kept "
               "until the object is freed (a uprobe on code_dealloc), so a stack costs about "
               "3.2 us at any depth of one code object and grows by ~20-40 ns per distinct "
               "one. What remains is fixed per event: finding the thread state (the GIL's "
               "state, the interpreter's thread list), the native unwind, the window copy, "
               "the record: the 2 us goal for 30 frames is not met on this VM. On disk a "
               "repeated stack is its STACK_REF, under 2 bytes compressed. Calls under the "
               "threshold (100 us by default) pay one comparison.")
    return block_end(ctx, NAME, out, meaning)
