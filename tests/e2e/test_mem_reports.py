"""The mem family's reports (mem_sum, mem_peak, mem_leaks, mem_growth) and its verdict rules,
on real programs: Debian's CPU PyTorch 1.13 (/usr/bin/python3) making tensors of known sizes
at known lines (tests/workloads/torch_mem.py, whose lines end in "# NAME" markers), recorded
in launch mode or attached with -p to a process that waits for its cue (--go), so that the
recording holds the work alone and stops while what it kept is still live. The GPU's records
(the caching allocator's totals, OOMs) come from synthetic traces (synth.py), as no GPU is
here. docs/MEMORY.md, "Reports"."""
import json
import os
import re
import shutil

import synth
from marked import PY, Marked, need_torch
from helpers import (BPFSIGHT, ROOT, Recorder, Skip, check, dump, eq, record, run, spawn, stats,
                     tell, tmpdir)

# For tests/run_tests.py: about how long these tests take on CI's machine (its order).
SECONDS = 60
SPLIT = True

WORKLOAD = Marked("torch_mem.py")
WORK, line, at = WORKLOAD.path, WORKLOAD.line, WORKLOAD.at
MIB = 1 << 20
REPORTS = ("mem_sum", "mem_peak", "mem_leaks", "mem_growth")


def attached(mode, *args, families="mem"):
    """Record MODE of the workload with -p, from its cue to its "done": the trace's path."""
    need_torch()
    p = spawn([PY, WORK, mode, *map(str, args), "--go"])
    ready = p.stdout.readline().split()
    if ready[:1] != ["ready"]:
        raise AssertionError(f"the workload's cue: {ready} {p.stderr.read()[-400:]}")
    rec = Recorder("-p", ready[1], "-t", families)
    rec.wait_ready()
    tell(p, "go")
    eq(p.stdout.readline().strip(), "done", "the workload did its work")
    eq(rec.stop(), 0, f"record ({rec.stderr[-400:]})")
    tell(p, "exit")
    eq(p.wait(60), 0, "the workload's exit")
    return rec.out


def launched(mode, *args, families="mem"):
    need_torch()
    p, out = record([PY, WORK, mode, *map(str, args)], "-t", families)
    eq(p.returncode, 0, f"record ({p.stderr[-400:]})")
    return out


def verdict(path):
    """stats' verdict: its headline, claims and footnote, up to the first report."""
    p = run([BPFSIGHT, "stats", path], check=True, env={**os.environ, "COLUMNS": "400"})
    return p.stdout.split("\n** ")[0]


# ---- mem_leaks ----

def test_a_leak_is_what_stayed_live_at_its_line():
    """20 steps each keep a 4 MiB tensor (LEAK) and free a 3 MiB one (TEMP); attached with
    -p, stopped with the list still held: mem_leaks' first row is LEAK with exactly 20 blocks
    of 4 MiB live, growing at every pass of the loop (no torch steps here: its allocations
    repeat every 2, 4 MiB then 3 MiB); TEMP has nothing live and did not grow, so it has no
    row. The verdict says it: a leak at that line."""
    n = 20
    out = attached("leak", n)
    rows = stats(out, "mem_leaks")["mem_leaks"]
    check(rows, "mem_leaks has rows")
    first = rows[0]
    eq((first["func"], first["line"], os.path.realpath(first["file"])), ("leak", line("LEAK"),
                                                                          WORK), "first row")
    eq((first["live_bytes"], first["live_blocks"]), (n * 4 * MIB, n), "live at the end")
    eq(first["per"], "loop", "no torch steps: the loop's passes")
    # 40 allocations: the passes that start at allocations 0, 2, ... 38 hold 19 boundaries
    # apart, whatever the machine's load; each pass kept one 4 MiB tensor.
    eq(first["steps"], 19, "19 passes")
    eq(first["grew"], 19, "grew at every boundary")
    eq(first["growth_per_step_bytes"], 4 * MIB, "growth per pass")
    eq(at(rows, "TEMP"), [], "the freed temporary has no row")
    head = verdict(out)
    check(head.startswith(f"Verdict: memory at risk: a leak: leak (torch_mem.py:{line('LEAK')})"),
          head)
    check(f"{n * 4}.0 MiB live at the end" in head, head)


def test_a_leak_grows_by_its_bytes_every_torch_step():
    """-t torch,mem in launch mode: 12 training steps (SGD's Optimizer.step scope ends each)
    each keep a 4 MiB tensor; mem_leaks takes the torch steps as its steps: LEAK grew by
    exactly 4 MiB at every one of them (the 11 steps the recording saw end to end), though
    the interpreter freed it all at exit (nothing is live at the end)."""
    out = launched("steps", 12, families="torch,mem")
    s = stats(out, "mem_leaks,torch_step_sum")
    nsteps = len(s["torch_step_sum"])
    eq(nsteps, 11, "torch steps")
    first = s["mem_leaks"][0]
    eq((first["func"], first["line"]), ("steps", line("STEPLEAK")), "first row")
    eq((first["per"], first["steps"], first["grew"]), ("step", nsteps, nsteps), "every step")
    eq(first["growth_per_step_bytes"], 4 * MIB, "growth per step")
    eq(first["live_bytes"], 0, "freed at exit")
    check(all(r.get("growth_per_step_bytes") is None for r in s["mem_leaks"][1:]),
          f"nothing else grows: {s['mem_leaks'][1:]}")


# ---- mem_peak ----

def peak_rows(rows):
    return [(r["line"], r["bytes"], r["blocks"]) for r in rows]


def test_the_peak_is_the_temporary_line():
    """2, 4 and 6 MiB kept, then a 100 MiB temporary, freed, then 8 MiB: the peak is while
    the temporary lives (112 MiB), and mem_peak lists exactly what was live then, largest
    first: the temporary's line, then the three kept ones; the 8 MiB made after is not in
    it. Recorded with torch too: each row's op is aten::empty (without torch there is no op
    column)."""
    out = launched("peak", families="torch,mem")
    rows = stats(out, "mem_peak")["mem_peak"]
    eq(peak_rows(rows), [(line("PEAK"), 100 * MIB, 1), (line("KEEP6"), 6 * MIB, 1),
                         (line("KEEP4"), 4 * MIB, 1), (line("KEEP2"), 2 * MIB, 1)], "rows")
    eq({r["peak_bytes"] for r in rows}, {112 * MIB}, "the peak")
    eq({r["op"] for r in rows}, {"aten::empty"}, "the op that allocated each")
    peak_ts = {e["ts"] for e in dump(out) if e["kind"] == "mem_alloc" and
               e["args"]["bytes"] == 100 * MIB and e["name"] == "alloc"}
    eq({r["peak_ts"] for r in rows}, peak_ts, "when: the temporary's allocation")
    # People read the instant from the recording's start, not as CLOCK_MONOTONIC ns.
    text = run([BPFSIGHT, "stats", "-r", "mem_peak", out]).stdout
    check(re.search(r"Peak At\b(?! \(ns\))", text), f"the title has no (ns):\n{text}")
    shown = re.findall(r"\+(\d+(?:\.\d+)?) (ns|us|ms|s)\b", text)
    eq(len(shown), len(rows), f"one '+T' per row:\n{text}")
    check(str(min(peak_ts)) not in text, f"no raw timestamp:\n{text}")
    out = launched("peak")
    rows = stats(out, "mem_peak")["mem_peak"]
    eq(peak_rows(rows)[0], (line("PEAK"), 100 * MIB, 1), "-t mem alone")
    check(all("op" not in r for r in rows), f"no op column without torch: {rows[0]}")


# ---- mem_growth ----

def memory_profiler_increment(lineno):
    """memory_profiler's increment (MiB) of the workload's LINENO in rss mode."""
    p = run([PY, "-m", "memory_profiler", WORK, "rss"], timeout=300)
    if p.returncode != 0 and "No module named memory_profiler" in p.stderr:
        raise Skip("memory_profiler is not installed (apt-get install python3-memory-profiler)")
    eq(p.returncode, 0, f"memory_profiler ({p.stderr[-400:]})")
    for l in p.stdout.splitlines():
        m = re.match(r"\s*(\d+)\s+[\d.]+ MiB\s+(-?[\d.]+) MiB", l)
        if m and int(m.group(1)) == lineno:
            return float(m.group(2))
    raise AssertionError(f"memory_profiler has no line {lineno}: {p.stdout}")


def test_resident_growth_by_line_is_memory_profilers_increment():
    """200 MiB written at one line (GROW) after four 1 MiB buffers (SMALL): mem_growth gives
    GROW 90% of the growth or more, and its bytes are memory_profiler's increment for that
    line within 10%."""
    out = attached("rss")
    rows = stats(out, "mem_growth")["mem_growth"]
    grow = at(rows, "GROW")
    eq(len(grow), 1, f"one row for GROW: {rows[:5]}")
    # rss() returns: its 200 MiB are given back at main's line, the process's net is ~0
    check(grow[0]["growth_pct"] >= 90, f"GROW's share of the growth: {rows[:5]}")
    eq(rows[0], grow[0], "the first row")
    eq(round(sum(r["growth_pct"] for r in rows if r["growth_bytes"] > 0)), 100,
       "the growing lines' shares: all the growth")
    mib = grow[0]["growth_bytes"] / MIB
    mp = memory_profiler_increment(line("GROW"))
    check(abs(mib - mp) <= 0.1 * mp, f"ours {mib:.1f} MiB, memory_profiler's {mp:.1f} MiB")


# ---- mem_sum ----

def test_counts_are_what_the_workload_made():
    """Attached with -p, 10 tensors of 5 MiB made and freed one after the other: mem_sum's
    cpu row has exactly 10 allocations and 10 frees of 5 MiB each, a peak of 5 MiB and no
    OOM; dump shows the same allocations."""
    n = 10
    out = attached("counts", n)
    rows = stats(out, "mem_sum")["mem_sum"]
    cpu = [r for r in rows if r["device"] == "cpu"]
    eq(len(cpu), 1, f"one cpu row: {rows}")
    r = cpu[0]
    eq((r["allocs"], r["frees"], r["allocated_bytes"], r["largest_bytes"], r["ooms"]),
       (n, n, n * 5 * MIB, 5 * MIB, 0), "counts")
    eq(r["peak_allocated_bytes"], 5 * MIB, "peak: one live at a time")
    eq(r["peak_reserved_bytes"], None, "no reserved bytes on the CPU")
    allocs = [e for e in dump(out) if e["kind"] == "mem_alloc" and e["name"] == "alloc"]
    eq([e["args"]["bytes"] for e in allocs], [5 * MIB] * n, "dump's allocations")
    eq(stats(out, "mem_leaks")["mem_leaks"], [], "nothing stayed, nothing grew")


def documented_columns(report):
    """The columns docs/USAGE.md's report table lists for REPORT."""
    with open(os.path.join(ROOT, "docs", "USAGE.md")) as f:
        for l in f:
            if l.startswith(f"| `{report}` |"):
                return re.findall(r"`([a-z_0-9]+)`", l.split("|")[3])
    raise AssertionError(f"docs/USAGE.md lists no {report}")


def test_json_has_the_documented_columns():
    """stats --format json of a real trace (-t torch,mem, a leak of 20 steps): each mem
    report's rows have exactly the columns docs/USAGE.md lists for it (but the one
    --group-by adds)."""
    out = launched("leak", 20, families="torch,mem")
    p = run([BPFSIGHT, "stats", out, "-r", ",".join(REPORTS), "--format", "json"], check=True)
    s = json.loads(p.stdout)["reports"]
    for name in REPORTS:
        check(s[name], f"{name} has rows")
        # stack: only with --group-by stack:N (test_mem_lines)
        want = [c for c in documented_columns(name) if c != "stack"]
        for r in s[name]:
            eq(sorted(r), sorted(want), f"{name}'s columns")


# ---- synthetic: the GPU's totals, OOMs, the verdict's rules, bad input ----

PID, TID = 300, 301


def gpu_trace(d, name="gpu.bst", oom=True):
    """cuda:0: 1 GiB and 2 GiB allocated (the allocator's totals: 3 GiB allocated, 8 GiB
    reserved), the 2 GiB freed, then a 4 GiB allocation refused with 1 GiB allocated and
    8 GiB reserved: 7 GiB of the cache unallocated, more than was asked."""
    t = synth.Trace(families="proc,mem")
    t.process(PID, "train")
    gib = 1 << 30
    t.mem_alloc(PID, TID, 2000, 0xa000, gib, device=0, allocated=gib, reserved=8 * gib)
    t.mem_alloc(PID, TID, 3000, 0xb000, 2 * gib, device=0, allocated=3 * gib,
                reserved=8 * gib)
    t.mem_alloc(PID, TID, 4000, 0xb000, 2 * gib, device=0, free=True, allocated=gib,
                reserved=8 * gib)
    if oom:
        t.mem_oom(PID, TID, 5000, 4 * gib, device=0, allocated=gib, reserved=8 * gib)
    # A free of a block allocated before the recording: the GPU's says its size.
    t.mem_alloc(PID, TID, 6000, 0xc000, 512 * MIB, device=0, free=True, allocated=gib // 2,
                reserved=8 * gib)
    t.mem_rss(PID, TID, 6500, 300 * MIB)
    return t.write(d, name)


def test_gpu_totals_and_what_was_live_at_the_peak():
    """The caching allocator's records: peak allocated and reserved are its own totals;
    allocations, frees (one of a block from before the recording), bytes and the OOM are
    counted; mem_peak lists the two blocks live at the peak of what the records show (3 GiB);
    the process's RSS is on its cpu row, which has no tensor counts."""
    out = gpu_trace(tmpdir())
    rows = {r["device"]: r for r in stats(out, "mem_sum")["mem_sum"]}
    gib = 1 << 30
    eq(sorted(rows), ["cpu", "cuda:0"], "a row per device")
    g = rows["cuda:0"]
    eq((g["peak_allocated_bytes"], g["peak_reserved_bytes"], g["allocs"], g["frees"],
        g["allocated_bytes"], g["largest_bytes"], g["ooms"], g["peak_rss_bytes"]),
       (3 * gib, 8 * gib, 2, 2, 3 * gib, 2 * gib, 1, None), "cuda:0")
    c = rows["cpu"]
    eq((c["peak_rss_bytes"], c["allocs"], c["peak_allocated_bytes"]), (300 * MIB, None, None),
       "the cpu row: RSS alone")
    peak = stats(out, "mem_peak")["mem_peak"]
    eq([(r["device"], r["func"], r["bytes"], r["blocks"], r["peak_bytes"]) for r in peak],
       [("cuda:0", "(no stack)", 3 * gib, 2, 3 * gib)],
       "live at the peak")


def test_verdict_out_of_memory_and_fragmentation():
    """A refused allocation is the verdict's headline, with what was asked and the
    allocator's totals then, and the fragmentation it shows (7 GiB reserved unallocated,
    more than the 4 GiB asked); the device's peak reserved (8 GiB) far above its peak
    allocated (3 GiB) is a claim of its own. Without the OOM, fragmentation is the headline."""
    d = tmpdir()
    head = verdict(gpu_trace(d))
    check(head.startswith("Verdict: memory at risk: cuda:0 of train (pid 300) ran out of "
                          "memory: 1 allocation refused, the largest 4.00 GiB with 1.00 GiB "
                          "allocated and 8.00 GiB reserved"), head)
    check("7.00 GiB of it was reserved but unallocated, more than was asked" in head, head)
    check("reserved 8.00 GiB at its peak for 3.00 GiB allocated: 5.00 GiB cached" in head,
          head)
    check("(-r mem_sum)" in head and "(-r mem_peak)" in head, head)
    head = verdict(gpu_trace(d, "no_oom.bst", oom=False))
    check(head.startswith("Verdict: memory at risk: cuda:0 of train (pid 300) reserved 8.00 "
                          "GiB at its peak for 3.00 GiB allocated"), head)


def test_no_mem_records_no_rows_and_bad_input():
    """A trace without mem records: every mem report is there and empty. Records shorter
    than their type are counted as corrupt and reach no report; a corrupt chunk makes stats
    exit 3 with what it could read; a file that is no trace is refused (exit 1)."""
    d = tmpdir()
    t = synth.Trace(families="proc,mem")
    t.process(PID, "train")
    empty = t.write(d, "empty.bst")
    s = stats(empty, ",".join(REPORTS))
    eq({k: s[k] for k in REPORTS}, {k: [] for k in REPORTS}, "no rows")
    p = run([BPFSIGHT, "stats", empty, "-r", ",".join(REPORTS)], check=True)
    for name in REPORTS:
        check(f"no {name} data in this trace" in p.stdout, p.stdout)
    t = synth.Trace(families="proc,mem")
    t.process(PID, "train")
    for ty in (synth.MEM_ALLOC, synth.MEM_RSS, synth.MEM_GROW, synth.MEM_OOM):
        t.raw(synth.short_rec(ty, PID, TID, 5, 8))
    short = t.write(d, "short.bst")
    p = run([BPFSIGHT, "info", "--json", short])
    eq(json.loads(p.stdout)["corrupt_records"], 4, "short mem records counted")
    check("4 records too short for their type were skipped" in p.stderr, p.stderr)
    s = stats(short, ",".join(REPORTS), check=False)
    eq({k: s[k] for k in REPORTS}, {k: [] for k in REPORTS}, "and reported nowhere")
    t = synth.Trace(families="proc,mem", flush_every=4)
    t.process(PID, "train")
    for i in range(40):
        t.mem_alloc(PID, TID, 1000 + i, 0x1000 * (i + 1), 2 * MIB)
    bad = synth.spoil_a_chunk(t.write(d, "chunks.bst"), os.path.join(d, "bad.bst"))
    p = run([BPFSIGHT, "stats", bad, "-r", "mem_sum", "--format", "json"])
    eq(p.returncode, 3, f"a corrupt chunk ({p.stderr})")
    r = json.loads(p.stdout)["reports"]["mem_sum"][0]
    check(0 < r["allocs"] < 40, f"what it could read: {r}")
    junk = os.path.join(d, "junk.bst")
    with open(junk, "wb") as f:
        f.write(b"no trace here" * 100)
    p = run([BPFSIGHT, "stats", junk, "-r", "mem_sum"])
    eq(p.returncode, 1, "not a trace")
    check("not a bpfsight trace" in p.stderr, p.stderr)


def test_innermost_op_and_lost_frees():
    """Synthetic: an allocation inside aten::mm inside a "fwd" scope is aten::mm's, one in the
    scope after the mm is the scope's, one outside every op has none (another thread's op
    around the same time does not count); an address allocated again without its free (a
    lost record) ends the first block there; a CPU free of a block from before the recording
    counts as a free of no bytes."""
    t = synth.Trace(families="proc,torch,mem")
    t.process(PID, "train")
    t.mem_alloc(PID, TID, 2500, 0x1000, 1 * MIB)  # in aten::mm
    t.mem_alloc(PID, TID, 3500, 0x2000, 2 * MIB)  # in fwd, after aten::mm
    t.mem_alloc(PID, TID, 6000, 0x3000, 4 * MIB)  # after fwd
    t.mem_alloc(PID, TID, 6100, 0x9000, 0, free=True)  # allocated before the recording
    t.torch_op(PID, TID, 2000, 1000, "aten::mm", depth=1)
    t.torch_op(PID, TID, 1000, 4000, "fwd", scope="user_scope", depth=0)
    t.torch_op(PID, TID + 1, 5500, 1000, "aten::add", depth=0)
    t.mem_alloc(PID, TID, 7000, 0x1000, 8 * MIB)  # 0x1000 again: its free was lost
    out = t.write(tmpdir())
    s = stats(out, "mem_peak,mem_sum,mem_leaks")
    eq([(r["op"], r["bytes"], r["blocks"]) for r in s["mem_peak"]],
       [(None, 12 * MIB, 2), ("fwd", 2 * MIB, 1)], "ops at the peak (14 MiB)")
    eq({r["peak_bytes"] for r in s["mem_peak"]}, {14 * MIB}, "1 MiB ended at 7000")
    r = s["mem_sum"][0]
    eq((r["allocs"], r["frees"], r["allocated_bytes"], r["peak_allocated_bytes"]),
       (4, 1, 15 * MIB, 14 * MIB), "mem_sum")
    eq([(x["live_bytes"], x["live_blocks"]) for x in s["mem_leaks"]], [(14 * MIB, 3)],
       "live at the end: the 1 MiB block is not")
    t = synth.Trace(families="proc,torch,mem")
    t.process(PID, "train")
    t.mem_alloc(PID, TID, 2500, 0x1000, 1 * MIB)
    t.torch_op(PID, TID, 2000, 1000, "aten::mm", depth=1)
    t.torch_op(PID, TID, 1000, 4000, "fwd", scope="user_scope", depth=0)
    eq([r["op"] for r in stats(t.write(tmpdir(), "mm.bst"), "mem_peak")["mem_peak"]],
       ["aten::mm"], "the innermost op")
