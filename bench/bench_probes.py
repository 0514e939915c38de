# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""Per-probe cost (section `probes` of bench/RESULTS.md).

Time per call of a function in a tight loop (bench/bench_loop.h), side by side:

  untraced   the loop alone
  floor      empty BPF programs (bench/floor): an entry + a return uprobe as uprobe_multi
             links, the way bpfsight attaches; or the USDT probe alone
  floor, perf-event uprobes
             the same as perf-event uprobes, the way bpftrace attaches
  bpftrace   bpftrace doing the work a tracer must do: entry time in a map keyed by tid,
             on return one event per call to user space (printf of the duration)
  bpfsight   bpfsight record -t cuda (only on libcudart: bpfsight's uprobes come from its
             families)

on two targets: bench/probe_target (a function whose first instruction the kernel emulates,
`push %rbp`; one it must single-step, `lea`; a USDT site), and bench/cuda_loop (the real
libcudart's cudaStreamQuery). Reported: ns added per call over untraced, and that as a
ratio to the floor's added ns. Goal (issue 3): bpfsight <= 1.10x the floor, and under
bpftrace.
"""

import os
import re
import shlex
import shutil
import subprocess

import bench_parts
from bench_common import (REPO, BenchError, block_end, block_head, fmt_ns, fmt_ns_spread,
                          fmt_ratio_spread, fmt_spread, median, read_json)

NAME = "probes"
GOAL_FLOOR_RATIO = 1.10
WARMUP = 200  # calls per function before the timed rounds (bench_loop.h BENCH_WARMUP)

MICRO = [
    # (loop name, symbol or USDT, what the kernel does on a hit)
    ("push", "pt_push", "first instruction `push %rbp`: emulated"),
    ("lea", "pt_lea", "first instruction `lea 0x1(%rdi),%rax`: single-stepped"),
    ("usdt", "bpfsight_bench:site", "a USDT site, systemtap sdt.h's 1-byte nop: entry only"),
]
CUDA_FN = ("streamquery", "cudaStreamQuery")
FLOORS = ["floor", "floor, perf-event uprobes"]


def bpftrace_script(binary, fns):
    """Entry+return work, one event per call to user space, as a bpftrace user writes it."""
    lines = []
    for kind, sym in fns:
        if kind == "usdt":
            lines.append(f"usdt:{binary}:{sym} {{ printf(\"%llu %d\\n\", nsecs, arg0); }}")
        else:
            lines.append(f"uprobe:{binary}:{sym} {{ @start[tid] = nsecs; }}")
            lines.append(f"uretprobe:{binary}:{sym} /@start[tid]/ "
                         f"{{ printf(\"%llu\\n\", nsecs - @start[tid]); delete(@start[tid]); }}")
    return "\n".join(lines) + "\n"


def library_of(binary, soname):
    """The path of SONAME as BINARY loads it (ldd), so probes go on the file really mapped."""
    out = subprocess.run(["ldd", binary], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                         text=True).stdout
    m = re.search(rf"^\s*{re.escape(soname)}\S* => (\S+)", out, re.M)
    if not m:
        raise BenchError(f"{binary} does not load {soname} (ldd: {out.strip()})")
    return os.path.realpath(m.group(1))


def bpfsight_cuda_works(ctx):
    """HOOK(cuda): bpfsight's figure on libcudart needs `bpfsight record -t cuda`. Until the
    cuda family loads and records, the bpfsight rows are skipped with the reason."""
    out = ctx.r.tmpfile(".bst")
    r = ctx.r.run([ctx.r.bpfsight, "record", "--force", "-o", out, "-t", "cuda", "--", "true"],
                  check=False, timeout=120)
    if r.returncode:
        lines = [ln for ln in r.stderr.strip().splitlines() if "bpfsight" in ln] or \
            r.stderr.strip().splitlines()[-1:] or ["no message"]
        return False, f"`bpfsight record -t cuda` exited {r.returncode}: {lines[-1].strip()}"
    return True, ""


class Session:
    """One process of the target under one configuration; its rounds' ns per call."""

    def __init__(self, config, cmd, result, events=None, expected=None):
        self.config, self.cmd, self.result = config, cmd, result
        self.events, self.expected = events, expected


def run_target(ctx, config, target, fns, loop_args, probes, bpftrace_text=None, extra=None):
    """Run TARGET's loops (names FNS) once under CONFIG; returns a Session."""
    r = ctx.r
    out = r.tmpfile(".json")
    base = [target] + loop_args + ["-o", out] + [f for f, _ in fns]
    if config == "untraced":
        cmd = base
    elif config.startswith("floor"):
        cmd = [r.bench_bin("floor")] + (["--perf-uprobes"] if "perf" in config else [])
        for kind, sym in fns:
            cmd += ["-U", f"{probes}:{sym}"] if kind == "usdt" else ["-u", f"{probes}:{sym}"]
        cmd += ["--"] + base
    elif config == "bpftrace":
        script = r.tmpfile(".bt")
        with open(script, "w") as f:
            f.write(bpftrace_text)
        cmd = ["bpftrace", script, "-c", shlex.join(base)]
    elif config == "bpfsight":
        trace = r.tmpfile(".bst")
        cmd = [r.bpfsight, "record", "--force", "-o", trace, "-t", "cuda", "--"] + base
    else:
        raise ValueError(config)
    p = r.run(cmd, timeout=300)
    res = read_json(out, cmd)
    calls = sum(sum(v["calls"]) for v in res["fns"].values()) + WARMUP * len(fns)
    events = None
    if config == "bpftrace":
        events = sum(1 for line in p.stdout.splitlines() if line[:1].isdigit())
    elif config == "bpfsight":
        rep = r.json_of([r.bpfsight, "stats", "--format", "json", "-r", "cuda_api_sum", trace])
        rows = rep.get("reports", {}).get("cuda_api_sum", [])
        events = sum(row.get("count", 0) for row in rows)
    places = {out: "OUT.json"}
    if config == "bpftrace":
        places[script] = "SCRIPT.bt"
    return Session(config, r.show_cmd(cmd, places), res, events, calls)


def breakpoints(sess, config):
    """What the probe sites say about a session: an untraced one must find no breakpoint on
    them (someone else's uprobe), a traced one must find its own (else it measured nothing)."""
    for f, v in sess.result["fns"].items():
        if config == "untraced" and v.get("int3"):
            return f"a breakpoint on {f}'s probe site in the untraced run"
        if config != "untraced" and v.get("int3") is False:
            raise BenchError(f"{config}: no breakpoint on {f}'s probe site: the probe was "
                             f"not attached ({sess.cmd})")
    return None


def measure(ctx, title, target, probes, fns, configs):
    """Sessions of every config, interleaved, and the per-function figures."""
    p = ctx.params
    loop_args = ["-m", f"{p['probe_ms']:g}", "-r", str(p["probe_rounds"])]
    script = bpftrace_script(probes, fns)
    sessions = {c: [] for c in configs}
    for s in range(p["probe_sessions"]):
        for c in configs:
            sess = ctx.quiet.run([probes], lambda: run_target(ctx, c, target, fns, loop_args,
                                                              probes, script), f"{title} {c}",
                                 clean=lambda sess: breakpoints(sess, c))
            sessions[c].append(sess)
            per = ", ".join(f"{f} {fmt_ns(median(v['ns_per_call']))}"
                            for f, v in sess.result["fns"].items())
            ev = ""
            if sess.events is not None:
                ev = f"; events {sess.events:,} of {sess.expected:,} calls"
            ctx.progress(f"{title} {c}", s + 1, p["probe_sessions"], per + ev)
    figs = {}
    for f, _ in fns:
        vals = {c: [x for sess in sessions[c] for x in sess.result["fns"][f]["ns_per_call"]]
                for c in configs}
        u = median(vals["untraced"])
        added = {c: [x - u for x in vals[c]] for c in configs if c != "untraced"}
        fl = median(added["floor"])
        ratio = {c: [a / fl for a in added[c]] if fl and fl > 0 else [None]
                 for c in added}
        figs[f] = {"untraced": vals["untraced"], "added": added, "ratio": ratio,
                   "calls": {c: sum(sum(sess.result["fns"][f]["calls"]) for sess in sessions[c])
                             for c in configs}}
    return {"sessions": sessions, "figs": figs, "script": script.replace(REPO + os.sep, ""),
            "commands": {c: sessions[c][0].cmd for c in configs}}


def run(ctx):
    r = ctx.r
    res = {"micro": None, "cuda": None, "skips": []}
    if not shutil.which("bpftrace"):
        raise BenchError("bpftrace is not installed (make deps)")
    target = r.bench_bin("probe_target")
    res["micro"] = measure(ctx, "micro", target, target,
                           [(f, sym) for f, sym, _ in MICRO], ["untraced"] + FLOORS + ["bpftrace"])
    cuda = r.bench_bin("cuda_loop")
    if not os.access(cuda, os.X_OK):
        res["skips"].append("libcudart loop: bench/cuda_loop not built (no CUDA toolkit in "
                            "CUDA_HOME)")
        return res
    lib = library_of(cuda, "libcudart.so")
    configs = ["untraced"] + FLOORS + ["bpftrace"]
    ok, why = bpfsight_cuda_works(ctx)
    if ok:
        configs.append("bpfsight")
    else:
        res["skips"].append(f"bpfsight on the cudaStreamQuery loop: skipped ({why}); the "
                            f"floor and bpftrace rows still run")
        print(f"  SKIP bpfsight on libcudart: {why}", flush=True)
    res["cuda"] = measure(ctx, "libcudart", cuda, lib, [CUDA_FN], configs)
    res["cuda"]["lib"] = lib
    if ok:
        print("  parts of a traced call (BPF stats)", flush=True)
        res["parts"] = bench_parts.measure(r, lib, 1 if ctx.quick else 3)
    return res


# ---------------------------------------------------------------- reporting

def goals(ctx, res):
    """The goals of this section, checked once; returns {figure: cell text}."""
    cells = {}
    c = res.get("cuda")
    if not c:
        ctx.goals.skipped(NAME, "bpfsight added cost vs floor", "no libcudart loop")
        return cells
    f = c["figs"][CUDA_FN[0]]
    if "bpfsight" not in f["ratio"]:
        ctx.goals.skipped(NAME, "bpfsight added cost vs floor (cudaStreamQuery)",
                          "bpfsight -t cuda not available")
        return cells
    ratio = median(f["ratio"]["bpfsight"])
    cells["floor"] = ctx.goals.check(
        NAME, "bpfsight added cost / floor's (cudaStreamQuery)", f"{ratio:.2f}x",
        f"<= {GOAL_FLOOR_RATIO:.2f}x", ratio is not None and ratio <= GOAL_FLOOR_RATIO)
    b, t = median(f["added"]["bpfsight"]), median(f["added"]["bpftrace"])
    cells["bpftrace"] = ctx.goals.check(
        NAME, "bpfsight added cost < bpftrace's (cudaStreamQuery)",
        f"{fmt_ns(b)} vs {fmt_ns(t)}", "< bpftrace", b < t)
    return cells


def rows(m, fns, labels, cells=None):
    out = []
    for f, desc in zip([f for f, _ in fns], labels):
        fig = m["figs"][f]
        out.append(f"| {desc} | untraced | {fmt_ns_spread(fig['untraced'])} | | |")
        for c in fig["added"]:
            goal = (cells or {}).get("floor", "") if c == "bpfsight" else ""
            if c == "bpfsight" and cells and cells.get("bpftrace"):
                goal += "; " + cells["bpftrace"]
            out.append(f"| | {c} | {fmt_ns_spread(fig['added'][c])} | "
                       f"{fmt_ratio_spread(fig['ratio'][c])} | {goal} |")
    return out


def delivered(m, config):
    ss = m["sessions"].get(config) or []
    if not ss or ss[0].events is None:
        return ""
    ev, exp = sum(s.events for s in ss), sum(s.expected for s in ss)
    return f"{ev:,} of {exp:,} calls ({100.0 * ev / exp:.1f}%)"


def text(ctx, res):
    lines = ["", "Per-probe cost: ns added per call over untraced, median (min .. max); "
             "ratio to the floor's added ns"]
    for key, m, fns in (("micro", res["micro"], [(f, s) for f, s, _ in MICRO]),
                        ("libcudart", res.get("cuda"), [CUDA_FN])):
        if not m:
            continue
        for f, _ in fns:
            fig = m["figs"][f]
            lines.append(f"  {key} {f}: untraced {fmt_ns_spread(fig['untraced'])} per call")
            for c in fig["added"]:
                lines.append(f"    {c:<26} +{fmt_ns_spread(fig['added'][c]):<36} "
                             f"{fmt_ratio_spread(fig['ratio'][c])} floor")
        d = delivered(m, "bpftrace")
        if d:
            lines.append(f"    bpftrace events delivered: {d}")
        d = delivered(m, "bpfsight")
        if d:
            lines.append(f"    bpfsight events recorded: {d}")
    if res.get("parts"):
        lines.append("  parts of a traced call, ns per call above empty programs (BPF stats):")
        for name, _ in bench_parts.PARTS[1:] + bench_parts.BPFSIGHT:
            lines.append(f"    {name:<14} {fmt_spread(res['parts']['added'][name], ' ns')}")
    for s in res["skips"]:
        lines.append(f"  SKIP {s}")
    return "\n".join(lines)


def markdown(ctx, res):
    p = ctx.params
    m = res["micro"]
    cells = goals(ctx, res)
    out = block_head(ctx, NAME, "Per-probe cost")
    out.append(f"Method: each target calls its functions in a tight loop, "
               f"{p['probe_ms']:g} ms per function per round, the functions taking turns, "
               f"{p['probe_rounds']} rounds per process, {p['probe_sessions']} process(es) per "
               f"configuration, configurations interleaved (bench/bench_loop.h). Figures are "
               f"over all {p['probe_rounds'] * p['probe_sessions']} rounds: ns added per call "
               f"= the round's ns per call minus the untraced median; the ratio divides a "
               f"round's added ns by the floor's median added ns. The floor is empty BPF "
               f"programs (bench/floor.bpf.c): an entry and a return uprobe attached as "
               f"uprobe_multi links, as bpfsight attaches its own (user/uprobe/uprobe_multi.c); the "
               f"second floor attaches them as perf-event uprobes, as bpftrace does; the USDT "
               f"probe is libbpf's (a perf-event uprobe) in both. bpftrace does "
               f"what a tracer must: the entry time in a map keyed by tid, and on return one "
               f"event per call to user space (its output is counted below: nothing lost "
               f"means every call cost a full event). Each loop also made {WARMUP} warm-up "
               f"calls per function first, not timed.")
    out.append("")
    out.append("Commands (OUT.json and SCRIPT.bt are temporary files):")
    out.append("")
    out.append("```")
    for c, cmd in m["commands"].items():
        out.append(f"# {c}\n{cmd}")
    out.append("# SCRIPT.bt")
    out.append(m["script"].rstrip("\n"))
    out.append("```")
    out.append("")
    out.append("| function | configuration | ns added per call (untraced: ns per call) | "
               "ratio to floor | goal |")
    out.append("|---|---|---|---|---|")
    out += rows(m, [(f, s) for f, s, _ in MICRO],
                [f"`{s}` ({d})" for f, s, d in MICRO])
    out.append("")
    d = delivered(m, "bpftrace")
    if d:
        out.append(f"bpftrace events delivered to user space: {d}.")
        out.append("")
    c = res.get("cuda")
    out.append("### bpfsight on the real libcudart")
    out.append("")
    if c:
        out.append(f"`bench/cuda_loop streamquery` calls `cudaStreamQuery(0)` of "
                   f"`{c['lib']}` in a loop (no GPU here: every call fails fast, but enters "
                   f"the library's function, where the probes sit; its first instruction is "
                   f"`push %rbp`, emulated). bpfsight records it with `-t cuda` (its generic "
                   f"entry/return uprobe pair, bpf/ucall.bpf.h); the floor and bpftrace probe "
                   f"the same function.")
        out.append("")
        out.append("```")
        for cfg, cmd in c["commands"].items():
            out.append(f"# {cfg}\n{cmd}")
        out.append("# SCRIPT.bt")
        out.append(c["script"].rstrip("\n"))
        out.append("```")
        out.append("")
        out.append("| function | configuration | ns added per call (untraced: ns per call) | "
                   "ratio to floor | goal |")
        out.append("|---|---|---|---|---|")
        out += rows(c, [CUDA_FN], ["`cudaStreamQuery`"], cells)
        out.append("")
        for cfg, what in (("bpftrace", "bpftrace events delivered"),
                          ("bpfsight", "bpfsight calls recorded (cuda_api_sum count)")):
            d = delivered(c, cfg)
            if d:
                out.append(f"{what}: {d}.")
        out.append("")
    if res.get("parts"):
        out += bench_parts.markdown(res["parts"])
        out.append("")
    for s in res["skips"]:
        out.append(f"- **Skipped**: {s}.")
    if res["skips"]:
        out.append("")
    return block_end(ctx, NAME, out, meaning(res))


def meaning(res):
    m = res["micro"]["figs"]
    fl = {f: median(m[f]["added"]["floor"]) for f in m}
    bt = {f: median(m[f]["added"]["bpftrace"]) for f in m}
    pf = median(m["push"]["added"]["floor, perf-event uprobes"])
    s = (f"the bare cost of a probe hit here is {fmt_ns(fl['push'])} for an emulated entry "
         f"plus its return probe ({fmt_ns(pf)} as perf-event uprobes), "
         f"{fmt_ns(fl['lea'])} when the first instruction must be "
         f"single-stepped ({fl['lea'] / fl['push']:.0f}x: every hit takes an extra trap), and "
         f"{fmt_ns(fl['usdt'])} for a USDT site (entry only). Where a probe goes matters more "
         f"than what it does. bpftrace's per-call event costs "
         f"{bt['push'] / fl['push']:.1f}x the floor on the emulated function: one output event "
         f"per call wakes its reader, on this 2-CPU VM a context switch per call.")
    c = res.get("cuda")
    if c and "bpfsight" in c["figs"][CUDA_FN[0]]["added"]:
        f = c["figs"][CUDA_FN[0]]
        s += (f" On libcudart, bpfsight adds {fmt_ns(median(f['added']['bpfsight']))} per "
              f"cudaStreamQuery, {median(f['ratio']['bpfsight']):.2f}x the floor's "
              f"{fmt_ns(median(f['added']['floor']))}, against bpftrace's "
              f"{fmt_ns(median(f['added']['bpftrace']))}.")
        pa = res.get("parts")
        if pa:
            k, rb = bench_parts.part(pa, "ktime"), bench_parts.part(pa, "rbuf")
            prog = bench_parts.part(pa, "ucall_entry") + bench_parts.part(pa, "ucall_return")
            budget = (GOAL_FLOOR_RATIO - 1) * median(f["added"]["floor"])
            s += (f" Its two programs run for {prog:.0f} ns per call (BPF stats, above); "
                  f"{GOAL_FLOOR_RATIO:.2f}x the floor leaves {budget:.0f} ns, and the two "
                  f"clock reads ({2 * k:.0f} ns) and the ring-buffer record ({rb:.0f} ns) that "
                  f"any timed, recorded call needs already take {2 * k + rb:.0f} ns of it: "
                  f"the goal is out of reach on this VM whatever the rest costs.")
    elif c:
        f = c["figs"][CUDA_FN[0]]
        s += (f" On libcudart the floor is {fmt_ns(median(f['added']['floor']))} per "
              f"cudaStreamQuery and bpftrace adds {fmt_ns(median(f['added']['bpftrace']))}; "
              f"bpfsight's own figure waits for `-t cuda`.")
    return s
