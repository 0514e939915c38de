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

from helpers import BPFSIGHT, Recorder, check, dump, eq, run, spawn, stats, tell, tmpdir
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
    """The lines mode attached by three recorders at once: every allocation's stack
    (--stacks=mem:0), with every native frame too (--mem-native-frames all), and sampled
    ones (--mem-sample-rate 32K); their traces."""
    if _lines:
        return _lines
    need_torch()
    p = spawn([PY, WORK, "lines", "--go"])
    ready = p.stdout.readline().split()
    if ready[:1] != ["ready"]:
        raise AssertionError(f"the workload's cue: {ready} {p.stderr.read()[-400:]}")
    # The first builds the job's unwind tables (this worker's store starts empty); the others
    # then read them from the store, not build them again beside it.
    recs = {"exact": Recorder("-p", ready[1], "-t", "mem", "--stacks=mem:0",
                              out=os.path.join(_LINES_DIR, "exact.bst"))}
    recs["exact"].wait_ready()
    recs["whole"] = Recorder("-p", ready[1], "-t", "mem", "--stacks=mem:0",
                             "--mem-native-frames", "all",
                             out=os.path.join(_LINES_DIR, "whole.bst"))
    recs["sampled"] = Recorder("-p", ready[1], "-t", "mem", "--mem-sample-rate", "32K",
                               out=os.path.join(_LINES_DIR, "sampled.bst"))
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


LEFT_OUT = "[outer native frames left out (--mem-native-frames)]"


def site_stacks(path, name):
    """The stacks of the allocations made at NAME's line, in order."""
    at_line = line(name)
    # (only the allocations whose line names it decoded: 16 of 17,505 events of 3-4 KB)
    evs = dump(path, kinds="mem_alloc", having=b'"line":%d' % at_line)
    return [e["stack"] for e in evs if e["kind"] == "mem_alloc" and e["name"] == "alloc"
            and "stack" in e and any(f.get("line") == at_line and
                                     os.path.realpath(f["file"]) == WORK for f in e["stack"])]


def test_a_memory_stack_keeps_16_native_frames_then_every_python_one():
    """By default a memory stack is its 16 innermost native frames (the allocator's callers
    up to the op: at::empty's here; an eval-loop frame among them stands for the Python
    frames it ran, as in every stack), a marker that the outer ones were left out, then every
    other Python frame: the whole stack of the same allocation (--mem-native-frames all, no
    marker, the interpreter's frames between the Python ones) up to the marker, and the
    same Python frames."""
    t = lines_recorded()
    kept, whole = site_stacks(t["exact"], "SITE4M"), site_stacks(t["whole"], "SITE4M")
    eq((len(kept), len(whole)), (16, 16), "SITE4M's 16 allocations, a stack each")
    for k, w in zip(kept, whole):
        funcs = [f["func"] for f in k]
        eq(funcs.count(LEFT_OUT), 1, f"one marker: {funcs}")
        m = funcs.index(LEFT_OUT)
        native = [f for f in k[:m] if "line" not in f]
        check(12 <= len(native) <= 16, f"at most 16 native frames before it: {native}")
        check(any(f["func"].startswith("at::") for f in native), f"the op: {native}")
        eq(k[:m], w[:m], "up to the marker, the whole stack's frames")
        wn = [f for f in w if "line" not in f]
        check(len(wn) > 16 and LEFT_OUT not in [f["func"] for f in wn],
              f"--mem-native-frames all: every native frame, no marker: {len(wn)}")
        eq([f for f in k if "line" in f], [f for f in w if "line" in f],
           "every Python frame, the job's line among them")
    bad = run([BPFSIGHT, "record", "-t", "mem", "--mem-native-frames", "129", "--", "true"])
    check(bad.returncode != 0 and "bad --mem-native-frames '129'" in bad.stderr, bad.stderr)


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
