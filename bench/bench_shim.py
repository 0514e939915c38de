# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""The cupti-shim and its channel: gpu and nvtx families (section `shim` of
bench/RESULTS.md; docs/GPU.md "The channel", docs/NVTX.md).

  nvtx  tests/workloads/shim/nvtx_bench: N nvtxRangePushA + nvtxRangePop pairs, timed in
        the process, with no injection, with the shim idle (NVTX_INJECTION64_PATH set, no
        tracer attached) and recording (`bpfsight record -p PID -t nvtx`, as in
        production), the configurations taking turns round after round. Recording, each
        run: every range in the file (N timed + N/10 warm-up pairs, 0 lost), the shim
        probe's BPF time per batch and per record (the kernel's BPF stats), records per
        batch, the recorder's CPU per record.
  gpu   tests/workloads/shim/cupti_feed --extra N: N + 27 CUPTI 13 activity records
        through the shim's real decode path (bufferCompleted's; no GPU here), recorded by
        `bpfsight record -p PID -t gpu`: records per second through decode and channel,
        BPF time per batch and per record, every record in the file.

    python3 bench/run_bench.py --build B --only shim --no-results   # this section alone
"""

import os
import re
import subprocess
import time

from bench_common import (BenchError, ProgStats, block_end, block_head, bpf_stats, cpu_ns,
                          end, fmt_ns, fmt_ns_spread, fmt_spread, last_json, median)
from bench_families import interleaved

NAME = "shim"
# Regression guard, not a target from an issue: the idle shim is what every job pays on
# every NVTX call, all the time, with no tracer attached (production sets
# NVTX_INJECTION64_PATH for every job). Set at ~2x the ~4.4 ns measured when the guard was
# set (2026-11), as a figure of a few ns swings by ~1.5 ns between runs here: a clock read
# (~22 ns here) or an uncontended mutex lock+unlock (~4 ns) in each call while idle trips
# it; the TLS dialect (cupti-shim/shim.mk: +1.7 ns per pair without TLS descriptors) does
# not.
GUARD_IDLE_NS = 10
NVTX_CONFIGS = ["no injection", "shim idle", "recording"]
FEED_FIXED = 27  # cupti_feed's records besides --extra: 12 calls x 2, a driver launch, 2
KERNEL_BYTES = 216  # sizeof(CUpti_ActivityKernel10), CUPTI 13
CUPTI_BUF = 4 << 20  # cupti-shim/shim_cupti.c BUF_SIZE: what CUPTI fills before handing over
# cupti_feed --extra: as many records as one of the shim's CUPTI buffers holds (what one
# bufferCompleted gets), and a burst of five (CUPTI handing over buffers back to back): more
# than the quarter of the 16 MiB ring buffer past which BPF wakes the recorder at every batch
# (wakeup_bytes, user/session/recorder.h).
FEEDS = {"one 4 MiB buffer": CUPTI_BUF // KERNEL_BYTES - FEED_FIXED,
         "a 21 MiB burst": 100_000}
PROBE = "shim_probe"  # bpf/shim.bpf.c: one run per batch
WAIT_ATTACH_S = 10


def paths(ctx):
    b = ctx.r.build
    return {"shim": os.path.join(b, "libbpfsight-shim.so"),
            # cupti_feed's hook is in the test variant only
            "shim_test": os.path.join(b, "tests", "shim", "libbpfsight-shim-test.so"),
            "nvtx_bench": os.path.join(b, "tests", "shim", "nvtx_bench"),
            "cupti_feed": os.path.join(b, "tests", "shim", "cupti_feed")}


def base_env():
    """This environment without an injection: the workloads choose theirs."""
    return {k: v for k, v in os.environ.items()
            if k not in ("NVTX_INJECTION64_PATH", "CUDA_INJECTION64_PATH")}


def reap(pid, timeout):
    """wait4() PID (the recorder): (exit code, its own CPU in ns), or kill it past
    TIMEOUT. Its own rusage: RUSAGE_CHILDREN would add the workload's CPU."""
    deadline = time.monotonic() + timeout
    while True:
        got, status, ru = os.wait4(pid, os.WNOHANG)
        if got:
            return os.waitstatus_to_exitcode(status), (ru.ru_utime + ru.ru_stime) * 1e9
        if time.monotonic() > deadline:
            os.kill(pid, 9)
            os.wait4(pid, 0)
            raise BenchError(f"bpfsight record (pid {pid}) did not stop within {timeout} s "
                             f"of its target's exit")
        time.sleep(0.01)


def first_line(path, p, timeout=10):
    """The first line process P writes to file PATH."""
    deadline = time.monotonic() + timeout
    while True:
        with open(path) as f:
            line = f.readline()
        if line.endswith("\n"):
            return line
        if p.poll() is not None or time.monotonic() > deadline:
            raise BenchError(f"pid {p.pid} wrote no line to {path} "
                             f"({p.stderr.read()[-800:] if p.poll() is not None else 'timeout'})")
        time.sleep(0.01)


def recorded(ctx, load, env, family):
    """LOAD (a workload that takes --wait-file) recorded as in production: started first,
    then `bpfsight record -p PID -t FAMILY`, then released once the shim has sent its
    first batch (its ATTACH status: recording is on). Returns the end of its stdout, the
    trace's info, the shim probe's (runs, ns) from the release until the recorder exited,
    and the recorder's CPU in that time and before it."""
    r = ctx.r
    go, trace, stdout = r.tmpfile(".go"), r.tmpfile(".bst"), r.tmpfile(".out")
    cmd = [load[0], "--wait-file", go] + load[1:]
    # Its stdout to a file: cupti_feed prints every record it feeds (~35 MB for 100,000),
    # which read in here would grow this process, and every later child inherits its
    # parent's RSS high-water mark at exec (bench_pipeline's recorder RSS figure).
    with open(stdout, "w") as f:
        w = subprocess.Popen(cmd, env=env, stdout=f, stderr=subprocess.PIPE, text=True)
    rec, stats = None, None
    try:
        hello = last_json(first_line(stdout, w), cmd)
        rcmd = [r.bpfsight, "record", "--force", "-o", trace, "-t", family, "-p", str(hello["pid"])]
        rec = subprocess.Popen(rcmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                               text=True)
        line = rec.stderr.readline()
        if "Ctrl-C" not in line:
            raise BenchError(f"{' '.join(rcmd)} did not start: {line}{rec.stderr.read()}")
        stats = ProgStats(rec.pid, {PROBE})
        deadline = time.monotonic() + WAIT_ATTACH_S
        while stats.fds and not stats.read()[0] and time.monotonic() < deadline:
            time.sleep(0.01)
        if not stats.fds:
            time.sleep(0.3)  # no stats: the shim's poller sees the semaphores within 50 ms
        runs0, ns0 = stats.read()
        cpu0 = cpu_ns(rec.pid)
        open(go, "w").close()
        _, err = w.communicate(timeout=300)
        if w.returncode:
            raise BenchError(f"{r.show_cmd(cmd)} exited {w.returncode}: {err[-800:]}")
        code, cpu = reap(rec.pid, 30)
        rerr = rec.stderr.read()
        rec = None
        if code:
            raise BenchError(f"{r.show_cmd(rcmd)} exited {code}: {rerr[-800:]}")
        runs1, ns1 = stats.read()
        batches = runs1 - runs0 if stats.fds else None
    finally:
        if stats:
            stats.close()
        if w.poll() is None:
            w.kill()
            w.wait()
        if rec and rec.poll() is None:
            rec.kill()
            rec.wait()
    info = r.json_of([r.bpfsight, "info", "--json", trace])
    with open(stdout) as f:
        f.seek(max(0, os.path.getsize(stdout) - 4096))
        out = f.read()
    for path in (trace, stdout):
        os.unlink(path)
    return {"out": out, "info": info, "cmd": cmd, "rcmd": rcmd,
            "batches": batches, "bpf_ns": ns1 - ns0,
            "cpu_ns": cpu - cpu0 if cpu0 is not None else None, "startup_cpu_ns": cpu0}


def channel_figures(res, records):
    """Per-batch and per-record figures of a recorded run (None where not measured)."""
    b = res["batches"]
    return {"batches": b, "per_batch": res["bpf_ns"] / b if b else None,
            "bpf_per_rec": res["bpf_ns"] / records if b and records else None,
            "rec_per_batch": records / b if b else None,
            "cpu_per_rec": res["cpu_ns"] / records if records and res["cpu_ns"] else None,
            "startup_cpu_ms": res["startup_cpu_ns"] / 1e6
            if res["startup_cpu_ns"] is not None else None}


# ---------------------------------------------------------------- nvtx

def nvtx(ctx, p):
    r, iters = ctx.r, ctx.params["nvtx_iters"]
    load = [p["nvtx_bench"], "--iters", str(iters)]
    plain = base_env()
    idle = dict(plain, NVTX_INJECTION64_PATH=p["shim"])
    expected = iters + iters // 10  # the warm-up pairs are recorded too
    shown = {}

    def measure(c):
        if c != "recording":
            res = last_json(r.run(load, env=plain if c == "no injection" else idle).stdout,
                            load)
            shown[c] = ("" if c == "no injection" else "NVTX_INJECTION64_PATH=SHIM ") + \
                r.show_cmd(load)
            return {"ns": res["ns_per_pair"], "show": f"{res['ns_per_pair']:.2f} ns per pair"}
        got = recorded(ctx, load, idle, "nvtx")
        shown[c] = (f"NVTX_INJECTION64_PATH=SHIM {r.show_cmd(got['cmd'])} &\n"
                    f"{r.show_cmd(got['rcmd'][:-1] + ['PID'])}")
        ns = last_json(got["out"], got["cmd"])["ns_per_pair"]
        ev = got["info"].get("events", {})
        ranges = ev.get("nvtx_range", 0)
        out = {"ns": ns, "ranges": ranges, "lost": got["info"].get("lost_total", 0),
               "exact": ranges == expected and got["info"].get("lost_total", 0) == 0}
        out.update(channel_figures(got, ranges))
        out["show"] = (f"{ns:.1f} ns per pair, {ranges:,} of {expected:,} ranges, lost "
                       f"{out['lost']}, {fmt_ns(out['per_batch'])} BPF per batch")
        return out

    runs = interleaved(ctx, "nvtx", ctx.params["shim_rounds"], NVTX_CONFIGS, measure,
                       [p["shim"]])
    u = median([x["ns"] for x in runs["no injection"]])
    added = {c: [x["ns"] - u for x in runs[c]] for c in NVTX_CONFIGS[1:]}
    return {"runs": runs, "added": added, "iters": iters, "expected": expected,
            "commands": shown}


# ---------------------------------------------------------------- gpu

def gpu(ctx, p):
    r = ctx.r
    shown = {}

    def measure(c):
        extra = FEEDS[c]
        load = [p["cupti_feed"], "--extra", str(extra), p["shim_test"]]
        got = recorded(ctx, load, base_env(), "gpu")
        shown[c] = (f"{r.show_cmd(got['cmd'])} &\n"
                    f"{r.show_cmd(got['rcmd'][:-1] + ['PID'])}")
        # Its last line: "], "fed": N, "feed_ns": T}" (the records before it).
        m = re.search(r'"fed": (-?\d+), "feed_ns": (\d+)\}\s*$', got["out"])
        if not m:
            raise BenchError(f"no fed/feed_ns at the end of {r.show_cmd(got['cmd'])}'s output: "
                             f"{got['out'][-300:]}")
        res = {"fed": int(m.group(1)), "feed_ns": int(m.group(2))}
        ev = got["info"].get("events", {})
        n = sum(ev.get(k, 0) for k in ("gpu_kernel", "gpu_memcpy", "gpu_memset", "gpu_api"))
        fed = res["fed"]
        out = {"fed": fed, "records": n, "lost": got["info"].get("lost_total", 0),
               "feed_ns": res["feed_ns"], "rate": fed * 1e9 / res["feed_ns"],
               "exact": fed == extra + FEED_FIXED and n == fed and
               got["info"].get("lost_total", 0) == 0}
        out.update(channel_figures(got, n))
        out["show"] = (f"{out['rate'] / 1e6:.2f} M records/s, {n:,} of {fed:,} records, "
                       f"lost {out['lost']}, {fmt_ns(out['per_batch'])} BPF per batch")
        return out

    runs = interleaved(ctx, "gpu", ctx.params["shim_rounds"], list(FEEDS), measure,
                       [p["shim_test"]])
    return {"runs": runs, "commands": shown}


# ---------------------------------------------------------------- the section

def run(ctx):
    p = paths(ctx)
    missing = [v for v in p.values() if not os.path.exists(v)]
    if missing:
        print(f"  SKIP shim: {', '.join(ctx.r.rel(m) for m in missing)} not built (no CUDA "
              f"toolkit: cupti.h)", flush=True)
        return {"skip": f"{', '.join(ctx.r.rel(m) for m in missing)} not built (no CUDA "
                        f"toolkit)"}
    load0 = os.getloadavg()[0]
    with bpf_stats() as on:
        if not on:
            print("  (kernel.bpf_stats_enabled cannot be set: BPF times skipped)", flush=True)
        res = {"nvtx": nvtx(ctx, p), "gpu": gpu(ctx, p), "stats": on, "shim": p["shim"]}
    res["load"] = (load0, os.getloadavg()[0])
    return res


def check_goals(ctx, res):
    figs = ("shim idle: ns added per NVTX push+pop pair",
            "nvtx: every range in the file, 0 lost",
            "gpu: every CUPTI record in the file, 0 lost")
    if res.get("skip"):
        for fig in figs:
            ctx.goals.skipped(NAME, fig, res["skip"])
        return {}
    n = res["nvtx"]
    v = median(n["added"]["shim idle"])
    cells = {"idle": ctx.goals.check(NAME, figs[0], f"{v:.1f} ns",
                                     f"<= {GUARD_IDLE_NS} ns (guard)", v <= GUARD_IDLE_NS)}
    for key, fig, runs in (("nvtx_exact", figs[1], n["runs"]["recording"]),
                           ("gpu_exact", figs[2], [x for rs in res["gpu"]["runs"].values()
                                                   for x in rs])):
        cells[key] = ctx.goals.check(NAME, fig, f"{sum(x['exact'] for x in runs)} of "
                                     f"{len(runs)} runs", "all runs",
                                     all(x["exact"] for x in runs))
    return cells


def fmt_counts(values):
    """Counts in full (fmt_spread rounds 1,100,000 to 1.10 M: exactness is the point)."""
    lo, hi = min(values), max(values)
    if lo == hi:
        return f"{lo:,} (all {len(values)} runs)"
    return f"{median(values):,.0f} ({lo:,} .. {hi:,})"


def channel_rows(runs):
    """The rows of recorded runs: [(figure, cell)]."""
    def col(k):
        return [x[k] for x in runs]
    return [("lost", fmt_counts(col("lost"))),
            ("shim probe runs (batches) per run", fmt_spread(col("batches"))
             if None in col("batches") else fmt_counts(col("batches"))),
            ("records per batch", fmt_spread(col("rec_per_batch"), "", 1)),
            ("BPF time per batch (shim_probe)", fmt_ns_spread(col("per_batch"))),
            ("BPF time per record", fmt_spread(col("bpf_per_rec"), " ns", 2)),
            ("recorder CPU per record (release to exit)", fmt_spread(col("cpu_per_rec"),
                                                                     " ns", 1)),
            ("recorder CPU before the release (start-up, attach)",
             fmt_spread(col("startup_cpu_ms"), " ms", 1))]


def gpu_rows(runs):
    def col(k):
        return [x[k] for x in runs]
    return [("records fed", fmt_counts(col("fed"))),
            ("records per second through the channel", fmt_spread(col("rate"), "/s")),
            ("feed time per record (in the application)",
             fmt_spread([x["feed_ns"] / x["fed"] for x in runs], " ns", 1)),
            ("records in the file", fmt_counts(col("records")))] + channel_rows(runs)


def table(configs, rows_of):
    """A markdown table: one row per figure, one column per configuration."""
    cols = [rows_of(runs) for runs in configs.values()]
    out = ["| figure | " + " | ".join(configs) + " |", "|---" * (len(configs) + 1) + "|"]
    for i, (fig, _) in enumerate(cols[0]):
        out.append(f"| {fig} | " + " | ".join(c[i][1] for c in cols) + " |")
    return out + [""]


def text(ctx, res):
    if res.get("skip"):
        return f"\nshim: SKIP {res['skip']}"
    n, g = res["nvtx"], res["gpu"]["runs"]
    lines = ["", f"shim, nvtx_bench ({n['iters']:,} pairs): ns per push+pop pair, median "
                 f"(min .. max); added over no injection"]
    for c in NVTX_CONFIGS:
        vals = [x["ns"] for x in n["runs"][c]]
        add = f"  +{fmt_spread(n['added'][c], ' ns', 1)}" if c in n["added"] else ""
        lines.append(f"  {c:<14} {fmt_spread(vals, ' ns', 2):<32}{add}")
    lines.append("  recording:")
    for fig, cell in [("ranges in the file", fmt_counts([x["ranges"] for x in
                                                         n["runs"]["recording"]]))] + \
            channel_rows(n["runs"]["recording"]):
        lines.append(f"    {fig:<52} {cell}")
    for c, runs in g.items():
        lines.append(f"shim, cupti_feed --extra {FEEDS[c]:,} ({c}):")
        for fig, cell in gpu_rows(runs):
            lines.append(f"    {fig:<52} {cell}")
    return "\n".join(lines)


def markdown(ctx, res):
    cells = check_goals(ctx, res)
    out = block_head(ctx, NAME, "The cupti-shim and its channel (gpu, nvtx)")
    if res.get("skip"):
        out += [f"**Skipped**: {res['skip']}.", end(NAME)]
        return "\n".join(out) + "\n"
    n, g = res["nvtx"], res["gpu"]
    rounds = ctx.params["shim_rounds"]
    stats = ("the kernel's BPF stats (`kernel.bpf_stats_enabled`, on for this section only: "
             "two clock reads per program run, once per batch here) of `shim_probe` "
             "(bpf/shim.bpf.c), from the release until the recorder exited, read through "
             "an fd of the program held meanwhile" if res["stats"] else
             "not measured: `kernel.bpf_stats_enabled` could not be set")
    out.append(f"Method: the shim as production uses it: the workload starts with the "
               f"injection set, `bpfsight record -p PID` attaches, and the workload waits "
               f"(`--wait-file`) until the shim's first batch (its `attach` status) says "
               f"recording is on. {rounds} rounds; in each, the configurations take turns. "
               f"BPF time: {stats}. Recorder CPU: the bpfsight process alone "
               f"(`/proc/PID/task/*/schedstat` at the release, its `wait4` rusage at exit): "
               f"reading the ring buffer, decoding the batches, writing and closing the "
               f"file; its start-up (BPF load, attach) is the last row, not counted per "
               f"record. SHIM is `{ctx.r.rel(res['shim'])}`. Load average (1 min) at the "
               f"section's start and end: {res['load'][0]:.1f}, {res['load'][1]:.1f} "
               f"({os.cpu_count()} CPUs; the runs keep about one busy: more is other work, "
               f"which lengthens the times in the application, not the counts).")
    out.append("")
    # nvtx
    out.append("### nvtx: `nvtxRangePushA` + `nvtxRangePop`")
    out.append("")
    out.append("```")
    for c, cmd in n["commands"].items():
        out.append(f"# {c}\n{cmd}")
    bs = ctx.r.rel(ctx.r.bpfsight)
    out.append(f"# then `{bs} info --json T.bst`: nvtx_range events, lost_total")
    out.append("```")
    out.append("")
    out.append(f"`nvtx_bench` times {n['iters']:,} pairs after {n['iters'] // 10:,} warm-up "
               f"pairs, in the process (CLOCK_MONOTONIC); recording, all "
               f"{n['expected']:,} ranges must reach the file. Added = the run's ns per pair "
               f"minus the no-injection median.")
    out.append("")
    out.append("| configuration | ns per pair, median (min .. max) | ns added per pair | goal |")
    out.append("|---|---|---|---|")
    for c in NVTX_CONFIGS:
        vals = [x["ns"] for x in n["runs"][c]]
        add = fmt_spread(n["added"][c], " ns", 1) if c in n["added"] else ""
        goal = cells["idle"] if c == "shim idle" else ""
        out.append(f"| {c} | {fmt_spread(vals, ' ns', 2)} | {add} | {goal} |")
    out.append("")
    rec = n["runs"]["recording"]
    out.append(f"Recording, per run: ranges in the file {fmt_counts([x['ranges'] for x in rec])}"
               f" of {n['expected']:,}; every range in the file, 0 lost: {cells['nvtx_exact']}.")
    out.append("")
    out += table({"recording": rec}, channel_rows)
    # gpu
    out.append("### gpu: CUPTI activity records through decode and channel")
    out.append("")
    out.append("```")
    for c, cmd in g["commands"].items():
        out.append(f"# {c}\n{cmd}")
    out.append(f"# then `{bs} info --json T.bst`: gpu_kernel, gpu_memcpy, gpu_memset, gpu_api "
               f"events, lost_total")
    out.append("```")
    out.append("")
    out.append(f"`cupti_feed --extra N` builds one buffer of N + {FEED_FIXED} CUPTI 13 records "
               f"(N kernels of {KERNEL_BYTES} bytes, `CUpti_ActivityKernel10`, besides its "
               f"twelve calls' API and GPU records and three more) and hands it, in one call "
               f"timed in the process, to the decode path of CUPTI's bufferCompleted "
               f"(`bpfsight_shim_test_feed`). Records per second = records / that call's "
               f"wall time: decoding, batching and every full batch's probe hit (the last, "
               f"partial batch goes after). "
               + "N = " + ", ".join(f"{FEEDS[c]:,} for {c} "
                                    f"({(FEEDS[c] + FEED_FIXED) * KERNEL_BYTES / 2 ** 20:.1f}"
                                    f" MiB)" for c in FEEDS)
               + f". Every record in the file, 0 lost: {cells['gpu_exact']}.")
    out.append("")
    out += table(g["runs"], gpu_rows)
    return block_end(ctx, NAME, out, meaning(res))


def meaning(res):
    n, g = res["nvtx"], res["gpu"]["runs"]
    none = median([x["ns"] for x in n["runs"]["no injection"]])
    idle = median(n["added"]["shim idle"])
    rec = n["runs"]["recording"]
    added = median(n["added"]["recording"])

    def med(runs, k):
        return median([x[k] for x in runs]) or 0

    t = (f"a job that sets NVTX_INJECTION64_PATH and is never traced pays "
         f"{idle:.1f} ns per push+pop pair (NVTX alone: {none:.1f} ns): an indirect call, "
         f"a per-thread depth and a flag test; 1,000 ranges cost it "
         f"{idle * 1000 / 1e3:.1f} us. Recording, a range costs {fmt_ns(added)} in the "
         f"application: two timestamps, the record written to the thread's buffer and its "
         f"share of a batch's probe hit (one per {med(rec, 'rec_per_batch'):.0f} ranges), "
         f"of which BPF copying the batch is {med(rec, 'bpf_per_rec'):.1f} ns; the recorder "
         f"spends {med(rec, 'cpu_per_rec'):.0f} ns of CPU per range.")
    one, burst = (g[c] for c in FEEDS)
    rate = med(one, "rate")
    n1, n2 = med(one, "records"), med(burst, "records")
    c1, c2 = med(one, "cpu_per_rec") * n1, med(burst, "cpu_per_rec") * n2
    per = (c2 - c1) / (n2 - n1) if n2 > n1 else 0
    t += (f" GPU records pass decode and channel at {rate / 1e6:.1f} M records/s "
          f"({1e9 / rate:.0f} ns each, BPF {med(one, 'bpf_per_rec'):.1f} ns of it) when "
          f"CUPTI hands over one buffer: a GPU running a short kernel every 5 us makes "
          f"0.2 M records/s, which take {0.2e6 / rate * 100:.1f}% of one CPU to decode and "
          f"send. The recorder spends ~{per:.0f} ns of CPU per GPU record (the two feeds' "
          f"difference; a recording's fixed cost besides: ~{(c1 - per * n1) / 1e6:.1f} ms). "
          f"A burst larger than a quarter of the ring buffer runs at "
          f"{med(burst, 'rate') / 1e6:.1f} M records/s, BPF "
          f"{fmt_ns(med(burst, 'per_batch'))} per batch instead of "
          f"{fmt_ns(med(one, 'per_batch'))}: once that much waits unread, every batch "
          f"forces a wakeup of the recorder (bpf/shim.bpf.c, as bpf/common.bpf.h's records "
          f"do). Measured 2026-11-21 with other ring sizes (`--buffer-size`, 3 runs each): "
          f"64M (16 MiB before waking), the burst's batches took ~1.0 us; 4M (1 MiB), the "
          f"one buffer's took ~4.0 us. Nothing was lost.")
    return t
