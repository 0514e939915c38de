"""The mem family's lines on a real job (Debian's CPU PyTorch 1.13, tests/workloads/
mem_lines.py, whose lines end in "# NAME" markers): allocation stacks by sampled bytes
(--mem-sample-rate) against a stack on every allocation, and mem_growth's net growth, from
one run recorded by two recorders at once. The leaks of training loops:
test_mem_leak_loops.py. docs/MEMORY.md."""
import atexit
import json
import os
import re
import shutil
import tempfile

from helpers import BPFSIGHT, Recorder, check, eq, run, spawn, stats, tell, tmpdir
from marked import PY, Marked, need_torch

# For tests/run_tests.py: about how long these tests take on CI's machine (its order).
SECONDS = 15

WORKLOAD = Marked("mem_lines.py")
WORK, line, at = WORKLOAD.path, WORKLOAD.line, WORKLOAD.at
MIB = 1 << 20


_lines = {}
# The two traces serve two tests: kept until the module's worker ends (helpers' cleanup
# removes a test's own files after it).
_LINES_DIR = tempfile.mkdtemp(prefix="bpfsight-test-lines-")
atexit.register(shutil.rmtree, _LINES_DIR, ignore_errors=True)


def lines_recorded():
    """The lines mode attached by two recorders at once: every allocation's stack
    (--stacks=mem:0) and sampled ones (--mem-sample-rate 32K); their traces."""
    if _lines:
        return _lines
    need_torch()
    p = spawn([PY, WORK, "lines", "--go"])
    ready = p.stdout.readline().split()
    if ready[:1] != ["ready"]:
        raise AssertionError(f"the workload's cue: {ready} {p.stderr.read()[-400:]}")
    recs = {"exact": Recorder("-p", ready[1], "-t", "mem", "--stacks=mem:0",
                              out=os.path.join(_LINES_DIR, "exact.bst")),
            "sampled": Recorder("-p", ready[1], "-t", "mem", "--mem-sample-rate", "32K",
                                out=os.path.join(_LINES_DIR, "sampled.bst"))}
    for r in recs.values():
        r.wait_ready()
    tell(p, "go")
    eq(p.stdout.readline().strip(), "done", "the workload did its work")
    for name, r in recs.items():
        eq(r.stop(), 0, f"record ({r.stderr[-400:]})")
        _lines[name] = r.out
    tell(p, "exit")
    eq(p.wait(60), 0, "the workload's exit")
    return _lines


def test_sampled_bytes_per_line_estimate_the_exact_ones():
    """Three lines keep 64 MiB each in blocks of 4 KiB, 64 KiB and 4 MiB: a recorder that
    sampled stacks once per 32 KiB on average estimates each line's live bytes within 10% of
    the exact figure another recorder took with a stack on every allocation, and says which
    rows are estimates (Sampled); the 4 MiB blocks, over the stack size, are exact."""
    t = lines_recorded()
    exact = stats(t["exact"], "mem_leaks")["mem_leaks"]
    sampled = stats(t["sampled"], "mem_leaks")["mem_leaks"]
    for name in ("SITE4K", "SITE64K", "SITE4M"):
        e, s = at(exact, name), at(sampled, name)
        eq((len(e), len(s)), (1, 1), f"one row of {name}")
        eq(e[0]["live_bytes"], 64 * MIB, f"{name}'s exact bytes")
        eq(e[0].get("sampled"), None, f"{name}: no estimate with a stack each")
        check(abs(s[0]["live_bytes"] - e[0]["live_bytes"]) <= 0.1 * e[0]["live_bytes"],
              f"{name}: sampled {s[0]['live_bytes']} B, exact {e[0]['live_bytes']} B")
        eq(s[0].get("sampled") is None, name == "SITE4M", f"{name}: sampled or not")
    text = run([BPFSIGHT, "stats", t["sampled"], "-r", "mem_leaks"], check=True).stdout
    check("are estimates" in text, f"the note says so:\n{text}")


def test_growth_nets_what_a_line_left_behind():
    """20 times a 64 MiB temporary written and freed in one line, then 100 MiB kept at
    another: mem_growth's net growth is the kept line's 100 MiB (within 5%) and the
    temporary's none (within 5% of that), whose gross growth, its 20 temporaries, is said
    apart."""
    rows = stats(lines_recorded()["exact"], "mem_growth")["mem_growth"]
    kept, temp = at(rows, "KEPT"), at(rows, "TEMP")
    eq((len(kept), len(temp)), (1, 1), f"a row each: {rows[:5]}")
    eq(rows[0], kept[0], "the kept line first")
    check(abs(kept[0]["growth_bytes"] - 100 * MIB) <= 5 * MIB, f"kept: {kept[0]}")
    check(abs(temp[0]["growth_bytes"]) <= 5 * MIB, f"the temporary's net: {temp[0]}")
    check(temp[0]["gross_growth_bytes"] >= 19 * 64 * MIB, f"its gross: {temp[0]}")


def test_group_by_stack_splits_a_line_by_its_stacks():
    """--group-by stack:2 splits mem_leaks', mem_peak's and mem_growth's rows by the first 2
    Python frames of their stacks, in a stack column written as torch_op_sum writes it; the
    bytes of a line's rows add up to its bytes by line."""
    t = lines_recorded()["exact"]
    for report in ("mem_leaks", "mem_peak", "mem_growth"):
        rows = stats_grouped(t, report)
        check(rows and all("stack" in r for r in rows), f"{report}: a stack column: {rows[:2]}")
        ours = [r for r in rows if r["file"] and os.path.realpath(r["file"]) == WORK]
        check(ours, f"{report}: the job's rows")
        for r in ours:
            frames = r["stack"].split("; ")
            check(1 <= len(frames) <= 2 and all(re.match(r".+\(\d+\): .+", f) for f in frames),
                  f"{report}: FILE(LINE): FUNC, at most 2: {r['stack']}")
    by_stack = stats_grouped(t, "mem_leaks")
    by_line = stats(t, "mem_leaks")["mem_leaks"]
    eq(sum(r["live_bytes"] for r in at(by_stack, "SITE4K")),
       at(by_line, "SITE4K")[0]["live_bytes"], "SITE4K's bytes, split or not")


def stats_grouped(path, report):
    p = run([BPFSIGHT, "stats", path, "-r", report, "--group-by", "stack:2", "--format", "json"],
            check=True)
    return json.loads(p.stdout)["reports"][report]


def test_heap_profile_and_flame_graphs_of_memory():
    """export --format pprof-heap of the sampled recording: go tool pprof reads Go's heap
    profile's four sample types, and each line's inuse_space is mem_leaks' estimate of its
    live bytes; memory-flamegraph-leaks draws the same bytes at each line's frame, and
    memory-flamegraph those live at the peak (all of them here: nothing was freed)."""
    from test_cpu import go_pprof
    tool = go_pprof()
    t = lines_recorded()["sampled"]
    leaks = stats(t, "mem_leaks")["mem_leaks"]
    d = tmpdir()
    prof = os.path.join(d, "h.pb.gz")
    run([BPFSIGHT, "export", t, "--format", "pprof-heap", "-o", prof], check=True)
    raw = run(tool + ["-raw", prof], check=True).stdout
    check("alloc_objects/count alloc_space/bytes inuse_objects/count inuse_space/bytes" in raw,
          f"Go's heap sample types: {raw[:300]}")
    top = run(tool + ["-sample_index=inuse_space", "-unit=B", "-lines", "-top",
                      "-nodecount=1000", prof], check=True).stdout
    for name in ("SITE4K", "SITE64K", "SITE4M"):
        want = at(leaks, name)[0]["live_bytes"]
        cum = [int(m.group(1)) for m in re.finditer(
            rf"^\s*\S+\s+\S+\s+\S+\s+(\d+)B\s+\S+\s+.*mem_lines\.py:{line(name)}$", top, re.M)]
        check(cum and abs(max(cum) - want) <= 64, f"{name}: pprof's {cum}, mem_leaks' {want}")
    for fmt in ("memory-flamegraph-leaks", "memory-flamegraph"):
        svg = os.path.join(d, f"{fmt}.svg")
        run([BPFSIGHT, "export", t, "--format", fmt, "-o", svg], check=True)
        text = open(svg).read()
        for name in ("SITE4K", "SITE64K", "SITE4M"):
            want = at(leaks, name)[0]["live_bytes"]
            # the generator expression that allocates, under every path that reached it
            frame = rf"sites\.&lt;locals&gt;\.&lt;genexpr&gt; \([^<]*mem_lines\.py:{line(name)}\)"
            got = [int(n) for n in re.findall(rf"<title>{frame} \((\d+) bytes, ", text)]
            check(got and abs(sum(got) - want) <= 64, f"{fmt}, {name}: {got}, want {want}")
