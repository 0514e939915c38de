"""mem_peak computed in a ClickHouse server (user/families/mem/mem_peak_sql.c: what was live at each
process and device's peak, by line and torch op), against `stats FILE` on the same files, row
for row; and mem's verdict from the server with the OOM's peak detail (mem_peak's first row of
the device), line for line, on each engine (clickhouse_server.ENGINES: Debian's 18.16, chDB's
26.7), one shipped job of two files each (made once, stats FILE asked once):

- a real recording of Debian's python3-torch (tests/workloads/torch_mem.py oom, `-t
  torch,mem`): 64 tensors of 64 KiB kept (under --stacks=mem's size: sampled, estimates), 2,
  4 and 6 MiB kept and a 100 MiB temporary (the peak), each made in aten::empty, then 1 PiB
  refused (a CPU OOM);
- a synthetic file (synth.py) of what a recording seldom shows: a CPU and a GPU of one
  process, a lost free (an address allocated again), a free of a block from before the
  recording, an allocation made while the recorder attached (before stacks), sampled blocks
  (one so small that 1 - exp(-x) would lose its digits) and one not sampled, two stacks of one
  line and the library's frame beside it, a native-only stack, ops nested on the allocating
  thread, another thread's op around the same time, an op recorded before the first
  allocation (not kept), and equal bytes at two lines (their order is the pass's)."""
import json
import os
import re

from clickhouse_server import once, shared, stats, stats_verdict
from helpers import BPFSIGHT, check, eq, keep_tmpdir, need_root, record, run, tmpdir
from marked import PY, Marked, need_torch
import synth

SECONDS = 10
PARAMS = ("18.16", "26.7")  # clickhouse_server.ENGINES: each test runs on both

WORKLOAD = Marked("torch_mem.py")
MIB = 1 << 20
PID, TID = 4100, 4100
EARLY, SAMPLED = 0x8, 0x4  # bpf/mem_records.h's BS_MEM_EARLY, BS_MEM_SAMPLED
RATE = 512 * 1024  # --mem-sample-rate's bytes between samples


def verdict(args):
    """The verdict's lines of stats (ARGS, --wide) and what the server did not judge."""
    return stats_verdict(args)


def alloc(t, ts, addr, nbytes, device=synth.MEM_DEV_CPU, flags=0, rate=0, stack=None,
          tid=TID, totals=None):
    """A mem_alloc record with FLAGS and a sample rate (synth's mem_alloc has neither)."""
    if stack:
        t.stack_ref(PID, tid, ts, synth.MEM_ALLOC, stack)
    if totals:
        flags |= synth.MEM_TOTALS
    src = synth.MEM_SRC_CPU if device == synth.MEM_DEV_CPU else synth.MEM_SRC_REPORT
    t.recs.append(synth._rec(synth.MEM_ALLOC, PID, tid, ts, "QQQQhBBI", addr, nbytes,
                             *(totals or (0, 0)), device, src, flags, rate))


def synthetic():
    """The edge cases (the module's docstring), in one file."""
    t = synth.Trace(families="proc,torch,mem")
    t.process(PID, "train")
    t.thread(PID, TID + 1, "loader")
    job, lib = "/job/train.py", "/usr/lib/python3/dist-packages/torch/nn/functional.py"
    t.stack(1, [("py", "make", job, 10)])
    t.stack(2, [("py", "linear", lib, 459), ("py", "fwd", job, 20)])
    t.stack(3, [("py", "linear", lib, 459), ("py", "fwd", job, 20), ("py", "<module>", job, 30)])
    t.stack(4, [("native", "malloc", "/usr/lib/x86_64-linux-gnu/libc.so.6", 0x1234)])
    t.stack(5, [("py", "other", job, 40)])
    t.stack(6, [("py", "tiny", job, 50)])
    # an op that ends before the first allocation's record: mem_peak keeps none such
    t.torch_op(PID, TID, 0, 100_000, "aten::before", depth=0)
    alloc(t, 1000, 0xa1, 1 * MIB, stack=1)                      # in aten::empty in fwd
    alloc(t, 2000, 0xa2, 2 * MIB, stack=2)                      # in fwd
    alloc(t, 2500, 0xa3, 2 * MIB, stack=3)                      # fwd's line, another stack
    alloc(t, 3000, 0xa4, 4 * MIB, stack=4)                      # after fwd: no op
    alloc(t, 3100, 0xa5, 512 * 1024, flags=EARLY, rate=RATE)    # before stacks
    alloc(t, 3200, 0xa6, 100 * 1024, flags=SAMPLED, rate=RATE, stack=1)
    alloc(t, 3300, 0xa7, 300, flags=SAMPLED, rate=RATE, stack=6)
    alloc(t, 3400, 0xa8, 200 * 1024, rate=RATE)                 # not sampled: in no row
    alloc(t, 3500, 0xa1, 1 * MIB, stack=1)                      # 0xa1 again: its free lost
    alloc(t, 3600, 0xa9, 0, flags=synth.MEM_FREE)               # from before the recording
    alloc(t, 3700, 0xb0, 3 * MIB, stack=5)                      # equal bytes at two lines:
    alloc(t, 3800, 0xb1, 3 * MIB, stack=1, tid=TID + 1)         # the first met first
    alloc(t, 4000, 0xaa, 64 * MIB, stack=2)                     # the peak, in aten::mm
    alloc(t, 5000, 0xaa, 0, flags=synth.MEM_FREE)
    alloc(t, 6000, 0xab, 8 * MIB, stack=1)                      # after the peak
    # the GPU: 16 MiB at two lines, its peak below the CPU's (its rows after)
    alloc(t, 1500, 0xc0, 16 * MIB, device=0, stack=4, totals=(16 * MIB, 32 * MIB))
    alloc(t, 1600, 0xc1, 16 * MIB, device=0, stack=1, totals=(32 * MIB, 32 * MIB))
    alloc(t, 1700, 0xc0, 0, device=0, flags=synth.MEM_FREE, totals=(16 * MIB, 32 * MIB))
    t.torch_op(PID, TID, 900, 200, "aten::empty", depth=1)
    t.torch_op(PID, TID, 500, 2500, "fwd", scope="user_scope", depth=0)
    t.torch_op(PID, TID + 1, 1000, 4000, "aten::add", depth=0)  # another thread's
    t.torch_op(PID, TID, 3900, 200, "aten::mm", depth=0)
    return t.write(keep_tmpdir(), "edges.bst")


def recording():
    p, rec = record([PY, WORKLOAD.path, "oom"], "-t", "torch,mem",
                    out=os.path.join(keep_tmpdir(), "oom.bst"))
    eq(p.returncode, 0, f"record ({p.stderr[-600:]})")
    return rec


def test_mem_peak_and_the_ooms_peak_detail_from_the_server(engine):
    """Shipped, each file's mem_peak computed in the server equals stats on the file row for
    row (lines, library frames, ops, estimates of sampled blocks, the peak and when); the
    recording's verdict from the server is stats FILE's line for line, the OOM's claim with
    what held most at the device's peak, and mem is no longer judged without mem_peak.
    --group-by (stack:N's rows) is refused with --from, not ignored; a --file with no rows
    answers none, not an error."""
    need_root()
    need_torch()
    rec = once("oom", recording)
    ch = shared(engine)
    files = [rec, once("edges", synthetic)]
    job = ch.url("mempeak")
    p = run([BPFSIGHT, "ship", *files, "--to", job, "--spool", os.path.join(tmpdir(), "spool")],
            timeout=300)
    eq(p.returncode, 0, f"ship ({p.stderr[-800:]})")
    said = []
    for f in files:
        name = os.path.basename(f)
        p = run([BPFSIGHT, "stats", "--from", job, "--file", f, "-r", "mem_peak", "--format",
                 "json"], timeout=300)
        eq(p.returncode, 0, f"{name}: stats --from ({p.stderr[-800:]})")
        mine = json.loads(p.stdout)["reports"].get("mem_peak", [])
        theirs = stats(f, "mem_peak")["mem_peak"]
        eq(mine, theirs, f"{name}: mem_peak computed in the server")
        said.append(theirs)
    rows, edges = said
    # the kept lines and the peak's each a row in aten::empty; the 64 KiB blocks sampled (none
    # sampled of 4 MiB at 512 KiB a sample: e^-8)
    lines = {WORKLOAD.line(m) for m in ("KEEP2", "KEEP4", "KEEP6", "PEAK")}
    check({r["line"] for r in rows if r["op"] == "aten::empty"} >= lines and
          any(r["sampled"] for r in rows), f"the recording's rows, with ops and samples: {rows}")
    check({"(before stacks)", "malloc", "tiny"} <= {r["func"] for r in edges} and
          {"aten::mm", "fwd", "aten::add", None} == {r["op"] for r in edges} and
          {"cpu", "cuda:0"} == {r["device"] for r in edges} and
          any(r["via_func"] == "linear" for r in edges), f"the synthetic file's rows: {edges}")
    mine, rest = verdict(["--from", job, "--file", rec])
    theirs, _ = verdict([rec])
    eq(mine, theirs, "the verdict from the server")
    peak = rf"at its peak \(116 MiB\), peak \(torch_mem\.py:{WORKLOAD.line('PEAK')}\) held 100 MiB"
    check(any(re.search(r"ran out of memory: 1 allocation refused", l) for l in mine) and
          any(re.search(peak, l) for l in mine), f"the OOM and its peak's detail: {mine}")
    check("mem_peak" not in rest, f"mem judged with mem_peak: {rest}")
    # rows of no file: 18.16 typed the files' order `[]` as Array(Nothing), and every report
    # naming threads failed (HTTP 500) where its answer is no row
    p = run([BPFSIGHT, "stats", "--from", job, "--file", "none.bst", "-r", "sched_sum",
             "--format", "json"], timeout=60)
    eq((p.returncode, json.loads(p.stdout or "{}").get("reports")), (0, {"sched_sum": []}),
       f"no rows, no error ({p.stderr[-300:]})")
    # --group-by stack:N's rows are not computed there: refused, never ignored
    p = run([BPFSIGHT, "stats", "--from", job, "-r", "mem_peak", "--group-by", "stack:2"],
            timeout=60)
    check(p.returncode != 0 and "--group-by" in p.stderr, f"--group-by refused: {p}")
