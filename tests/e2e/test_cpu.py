"""cpu family: timer samples of traced threads with native stacks (frame pointers),
symbolized while recording. Workload: tests/workloads/cpu_split.c, built with frame pointers;
its stacks are known by construction and its CPU split is measured by the thread itself
(CLOCK_THREAD_CPUTIME_ID)."""
import json
import os
import re
import shutil

from helpers import (BPFSIGHT, Recorder, Skip, alone, check, dump, eq, info, need_root, record,
                     run, spawn, stats, tmpdir, workload)
from test_gil import bpftrace_live

# For tests/run_tests.py: about how long these tests take on CI's machine (its order).
SECONDS = 33

CPU_SPLIT = workload("cpu_split")
RATE = 999


def record_split(*args, opts=()):
    p, out = record([CPU_SPLIT, *args], "-t", "cpu", "--sample-rate", str(RATE), *opts)
    eq(p.returncode, 0, f"record exit ({p.stderr[-600:]})")
    m = re.search(r"^pid (\d+) tid (\d+)$", p.stdout, re.M)
    check(m, f"no pid line: {p.stdout[:200]!r}")
    truth = [json.loads(l) for l in p.stdout.splitlines() if l.startswith("{")]
    return int(m.group(1)), truth[-1] if truth else None, out


def samples(out, pid):
    return [e for e in dump(out) if e["kind"] == "cpu_sample" and e["pid"] == pid]


def funcs(e):
    return [f["func"] for f in e.get("stack", [])]


def test_cpu_split_matches_the_threads_own_cpu_time():
    """burn_a runs 7 parts of the thread's CPU time, burn_b 3: cpu_sum's total share of each
    is the thread's own measured share within 3 points (about 2000 samples), burn is where
    the samples land (self; its callers own at most 0.5%), and run_split, main hold them all
    (total)."""
    need_root()
    pid, truth, out = record_split("split", "2")
    a, b = truth["a_ns"], truth["b_ns"]
    share_a = 100.0 * a / (a + b)
    rows = {r["func"]: r for r in stats(out, "cpu_sum")["cpu_sum"]}
    n = len(samples(out, pid))
    # A sample every 1/RATE s of CPU time; the kernel tunes the period to the asked rate.
    check(0.5 * (a + b) / 1e9 * RATE <= n <= 1.5 * (a + b) / 1e9 * RATE,
          f"{n} samples for {(a + b) / 1e9:.2f} s on CPU at {RATE} Hz")
    for f in ("main", "run_split"):
        check(rows[f]["total_pct"] >= 98.0, f"{f} on the stack of {rows[f]['total_pct']}%")
        # Not 0: run_split runs a few instructions between burns, just after the clock
        # read's system call returns, where a timer sample is delivered most often (one in
        # a full run under load landed there). A share, though, would be a misplaced leaf.
        check(rows[f]["self_samples"] <= n // 200, f"{f}'s own samples: {rows[f]['self_samples']}")
        eq(os.path.basename(rows[f]["file"]), "cpu_split", f"{f}'s module")
    check(abs(rows["burn_a"]["total_pct"] - share_a) <= 3.0,
          f"burn_a {rows['burn_a']['total_pct']:.1f}% of samples, {share_a:.1f}% of CPU time")
    check(abs(rows["burn_b"]["total_pct"] - (100 - share_a)) <= 3.0,
          f"burn_b {rows['burn_b']['total_pct']:.1f}%, {100 - share_a:.1f}% of CPU time")
    check(rows["burn"]["self_pct"] >= 90.0, f"burn's self share {rows['burn']['self_pct']}")
    tot = rows["burn"]["self_samples"]
    check(0 < rows["burn"]["total_samples"] <= n, "burn's total")
    check(tot <= rows["burn"]["total_samples"], "self <= total")


def test_every_stack_names_its_callers_in_order():
    """Each sample landing in burn has the workload's call chain, innermost first, each frame
    a function of the cpu_split module at an address inside it; the same chain in the folded
    export, root first, and the folded counts add up to the samples."""
    need_root()
    pid, _, out = record_split("split", "1")
    evs = samples(out, pid)
    check(len(evs) > 100, f"{len(evs)} samples")
    in_burn = [e for e in evs if funcs(e)[:1] == ["burn"]]
    check(len(in_burn) >= 0.9 * len(evs), f"{len(in_burn)} of {len(evs)} samples in burn")
    for e in in_burn:
        f = funcs(e)
        check(f[1] in ("burn_a", "burn_b") and f[2:4] == ["run_split", "main"],
              f"stack {f}")
        for fr in e["stack"][:4]:
            eq(os.path.basename(fr["file"]), "cpu_split", f"module of {fr['func']}")
            check(re.fullmatch(r"0x[0-9a-f]+", fr["addr"]), f"address {fr['addr']}")
    folded = os.path.join(tmpdir(), "t.folded")
    run([BPFSIGHT, "export", out, "--format", "folded", "-o", folded], check=True)
    lines = open(folded).read().splitlines()
    counts = {}
    for l in lines:
        stack, n = l.rsplit(" ", 1)
        counts[stack] = counts.get(stack, 0) + int(n)
    eq(sum(counts.values()), len(evs), "folded counts: every sample once")
    eq(len(counts), len(lines), "one line per distinct stack")
    chain = ";".join(reversed(funcs(in_burn[0])))
    check(any(s == chain for s in counts), f"{chain} in the folded stacks")
    check(all(";main;run_split;burn_" in s for s in counts if s.endswith(";burn")),
          "root first")


@alone("bpftrace's uretprobe on cpu_split is in every process running it")
def test_a_pending_uretprobe_hides_no_caller():
    """Another tool's uretprobe on run_split (bpftrace's) is pending all the time the workload
    burns: the kernel put its trampoline where run_split returns to. Every sample in burn
    still names main as run_split's caller, from the return address the kernel keeps for the
    trampoline, never the trampoline ([uprobes])."""
    need_root()
    if not shutil.which("bpftrace"):
        raise Skip("needs bpftrace")
    bt, _ = bpftrace_live(f"uretprobe:{CPU_SPLIT}:run_split {{ @n = count(); }}\n")
    pid, _, out = record_split("split", "1")
    bt.kill()
    in_burn = [funcs(e) for e in samples(out, pid) if funcs(e)[:1] == ["burn"]]
    check(len(in_burn) > 100, f"{len(in_burn)} samples in burn")
    bad = [f for f in in_burn if f[1] not in ("burn_a", "burn_b") or f[2:4] != ["run_split", "main"]]
    eq(bad[:5], [], f"{len(bad)} of {len(in_burn)} stacks not burn <- burn_a|burn_b <- run_split "
       "<- main")


def test_deep_recursion_is_truncated_with_a_marker():
    """200 calls deep: the walk takes 128 addresses at most; the stack says it was cut, and
    every frame it has is one of the recursion's (never garbage)."""
    need_root()
    pid, _, out = record_split("deep", "200", "0.5")
    evs = [e for e in samples(out, pid) if funcs(e)[:2] == ["burn", "spin"]]
    check(len(evs) > 50, f"{len(evs)} samples in spin")
    for e in evs:
        f = funcs(e)
        eq(f[-1], "[truncated]", "the marker ends a cut stack")
        check(set(f[2:-1]) == {"recurse"}, f"only recurse frames below spin: {set(f[2:-1])}")
        check(len(f) - 1 <= 128, f"{len(f) - 1} frames")


def test_a_frame_without_a_frame_pointer_cuts_the_stack_with_a_marker():
    """spin_bad_fp spins with its frame pointer aimed at a fake frame whose return address
    is never_called's first instruction (no call precedes it): the stack stops with a marker
    naming the module instead of showing never_called as a caller. Its real caller, main, may
    still be named before it: its return address is on top of the stack, returning into a
    call of spin_bad_fp (the recorder looks there for callers the walk misses)."""
    need_root()
    pid, _, out = record_split("badfp", "0.5")
    evs = [e for e in samples(out, pid) if funcs(e)[:1] == ["spin_bad_fp"]]
    check(len(evs) > 50, f"{len(evs)} samples in spin_bad_fp")
    # A sample in the few instructions of its loop outside the asm (the real frame pointer in
    # place: nanoseconds per ~1 ms of spinning) has its real callers, and is rare; every
    # other one stops at the marker.
    real = 0
    for e in evs:
        f = funcs(e)
        check("never_called" not in f, f"a fake caller: {f}")
        if f[-1] != "[unwind stopped in cpu_split: no frame pointers]":
            real += 1
            continue
        check(f in (["spin_bad_fp", "[unwind stopped in cpu_split: no frame pointers]"],
                    ["spin_bad_fp", "main", "[unwind stopped in cpu_split: no frame pointers]"]),
              f"the marker, after the caller found on top of the stack or not: {f}")
    check(real <= 0.01 * len(evs), f"{real} of {len(evs)} samples outside the bad frame")
    check(not any("never_called" in funcs(e) for e in samples(out, pid)), "never_called")


def cpu_seconds(pid):
    """PID's user + system CPU time so far (/proc/PID/stat: utime, stime in clock ticks)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def test_attach_samples_only_the_target():
    """-p: the running target is sampled, another busy process is not; cpu stays out of the
    default families."""
    need_root()
    target = spawn([CPU_SPLIT, "split", "3"])
    other = spawn([CPU_SPLIT, "split", "3"])
    tpid = int(target.stdout.readline().split()[1])
    opid = int(other.stdout.readline().split()[1])
    r = Recorder("-t", "cpu", "--sample-rate", str(RATE), "-p", str(tpid), "-d", "1")
    r.wait_ready()
    cpu0 = cpu_seconds(tpid)
    eq(r.wait(60), 0, f"recorder exit ({r.stderr[-400:]})")
    # As many samples as the target's CPU time (its own accounting, 10 ms ticks, over a
    # window that holds the sampled one) at RATE: half of it at least, however loaded.
    ran = cpu_seconds(tpid) - cpu0
    evs = [e for e in dump(r.out) if e["kind"] == "cpu_sample"]
    mine = len([e for e in evs if e["pid"] == tpid])
    check(mine > 0 and mine >= 0.5 * (ran - 0.02) * RATE,
          f"target sampled {mine} times in {ran:.2f} s on CPU at {RATE} Hz")
    eq({e["pid"] for e in evs}, {tpid}, "sampled processes")
    check(all(funcs(e)[-1:] != ["[truncated]"] for e in evs), "short stacks are whole")
    # a job's recording samples it by default (the verdict's ledger), naming its families
    p, out = record([CPU_SPLIT, "split", "0.2"])
    eq(p.returncode, 0, "default recording")
    check([e for e in dump(out) if e["kind"] == "cpu_sample"], "samples by default")
    check("cpu" in info(out)["families"].split(","), info(out)["families"])
    # but not -t naming other families
    p, out = record([CPU_SPLIT, "split", "0.2"], "-t", "osrt,sched")
    eq(p.returncode, 0, "-t osrt,sched")
    eq([e for e in dump(out) if e["kind"] == "cpu_sample"], [], "no samples with -t osrt,sched")


def test_bad_sample_rate_is_refused():
    """Not a rate from 1 to 10000 Hz: refused before anything runs, saying why."""
    for bad in ("0", "10001", "fast", "99x", ""):
        p = run([BPFSIGHT, "record", "-t", "cpu", "--sample-rate", bad, "--", "/bin/true"])
        eq(p.returncode, 1, f"--sample-rate {bad!r} exit")
        check("--sample-rate" in p.stderr, f"--sample-rate {bad!r}: {p.stderr[-200:]}")


def go_pprof():
    """`go tool pprof` (make deps installs golang-go): the reader the pprof export is for."""
    import shutil
    if shutil.which("go"):
        return ["go", "tool", "pprof"]
    if os.environ.get("CI") == "true":
        raise AssertionError("no go tool pprof in CI: make deps installs golang-go")
    raise Skip("no go tool pprof (apt-get install golang-go, as make deps does)")


def test_pprof_export_read_by_go_tool_pprof():
    """go tool pprof reads the pprof export: every sample is there, and each function's flat
    and cumulative sample counts are cpu_sum's self and total samples."""
    need_root()
    tool = go_pprof()
    pid, _, out = record_split("split", "1")
    prof = os.path.join(tmpdir(), "t.pb.gz")
    run([BPFSIGHT, "export", out, "--format", "pprof", "-o", prof], check=True)
    p = run(tool + ["-sample_index=samples", "-top", "-nodecount=1000", prof], check=True)
    total = int(re.search(r"of (\d+) total", p.stdout).group(1))
    eq(total, len(samples(out, pid)), "samples in the profile")
    rows = {m.group(5).strip(): (int(m.group(1)), int(m.group(3)))
            for m in re.finditer(r"^\s*(\d+)\s+([\d.]+)%\s+[\d.]+%\s+(\d+)\s+([\d.]+)%\s+(.+)$",
                                 p.stdout, re.M)}
    for r in stats(out, "cpu_sum")["cpu_sum"]:
        if r["func"] in ("burn", "burn_a", "burn_b", "run_split", "main"):
            eq(rows[r["func"]], (r["self_samples"], r["total_samples"]),
               f"{r['func']}: pprof's flat/cum vs cpu_sum's self/total")


def test_svg_flame_graph():
    """export --format svg: a standalone SVG flame graph (its script inline, nothing loaded)
    whose frames are as wide as their samples: burn_a's, burn_b's and main's tooltips say
    cpu_sum's totals; opened in chromium, a click on burn_a zooms it to the width and a search
    for burn_a|burn_b says their share."""
    import html as htmlmod
    import xml.etree.ElementTree as ET
    from test_report import check_flame, chromium, probe
    need_root()
    pid, _, out = record_split("split", "1")
    svg = os.path.join(tmpdir(), "t.svg")
    run([BPFSIGHT, "export", out, "--format", "svg", "-o", svg], check=True)
    text = open(svg).read()
    root = ET.fromstring(text.encode())  # well-formed XML
    check(root.tag.endswith("svg"), "an SVG")
    eq(re.findall(r"<script[^>]*>", text), ["<script>"], "one inline script")
    for bad in ("src=", "href=", "url(", "@import"):
        check(bad not in text, f"{bad} in an SVG that must load nothing")
    counts = {}
    for name, n in re.findall(r"<title>(.*?) \((\d+) samples, [\d.]+%\)</title>", text):
        counts[htmlmod.unescape(name)] = counts.get(htmlmod.unescape(name), 0) + int(n)
    rows = {r["func"]: r for r in stats(out, "cpu_sum")["cpu_sum"]}
    for f in ("burn_a", "burn_b", "main"):
        eq(counts.get(f), rows[f]["total_samples"], f"{f}: its frame's samples")
    total = len(samples(out, pid))
    check(f"{total} samples;" in text, "the total in the footer")
    chromium()
    fl = probe(svg, {"svg": {"click": "^burn_a$", "search": "^burn_[ab]$"}})["flames"]["svg"]
    check_flame(fl, total)
    check("burn_b" not in fl["zoomed_visible"], "burn_b hidden while burn_a is zoomed")
    ab = rows["burn_a"]["total_samples"] + rows["burn_b"]["total_samples"]
    eq(fl["matched"], f"Matched: {100 * ab / total:.2f}%", "burn_a and burn_b's share")
