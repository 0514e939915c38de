"""The verdict's rules of cublas (a low MFU) and mem (an OOM, a fragmented cache) judged from a
ClickHouse server (`stats --from`, docs/CLICKHOUSE.md "The verdict from the server"), against
`stats FILE` on the same files, claim for claim, on each engine (clickhouse_server.ENGINES:
Debian's 18.16, chDB's 26.7), one shipped job each; the files and stats FILE's answers made
once for both.

No GPU is lent here, so no recording has GEMMs with FLOPs, nor a GPU's caching allocator: the
MFU and GPU memory files are synthetic (synth.py: test_mfu_verdict.py's torch steps and bf16
cublasGemmEx of 4096^3, a kernel on the GPU, the GPUs in the header; a GPU's refused
allocations with the allocator's totals, events lost), in one file. The CPU OOM is a real
recording of Debian's python3-torch refusing a tensor (test_mem's mem_alloc.py)."""
import html
import json
import os
import re

from clickhouse_server import once, shared, stats_text
from helpers import (BPFSIGHT, ROOT, Skip, check, eq, keep_tmpdir, need_root, record, run,
                     tmpdir)
from pymods import has
from synth import Trace
import test_mfu_verdict as mfu

SECONDS = 10
PARAMS = ("18.16", "26.7")  # clickhouse_server.ENGINES: each test runs on both

NOT_JUDGED = "Not judged from "
DEBIAN_PY = "/usr/bin/python3"
MEM_ALLOC = os.path.join(ROOT, "tests", "workloads", "mem_alloc.py")


def verdict(args):
    """stats' table output of ARGS (--wide: a line a claim): the verdict's lines to its
    legend, blank ones left out; the line saying what the server did not judge ("" for
    none); the lines above the verdict (the events-lost warning)."""
    if "--from" in args:
        p = run([BPFSIGHT, "stats", *args, "--wide"], timeout=300)
        eq(p.returncode, 0, f"stats {' '.join(args)} ({p.stderr[-800:]})")
        out = p.stdout
    else:
        out = stats_text(*args, "--wide")
    lines = out.splitlines()
    start = next(i for i, l in enumerate(lines) if l.startswith("Verdict:"))
    end = next(i for i in range(start, len(lines)) if lines[i].startswith("* = the rule"))
    block = [l for l in lines[start:end] if l.strip()]
    rest = [l for l in block if l.startswith(NOT_JUDGED)]
    return ([l for l in block if not l.startswith(NOT_JUDGED)], rest[0] if rest else "",
            [l for l in lines[:start] if l.strip()])


GIB = 1 << 30


def gemm(t, pid, ts):
    """A bf16 cublasGemmEx of N^3 (test_mfu_verdict's)."""
    t.cublas_call(pid, pid, ts, 1000, mfu.GEMM_EX, args=(0x1, 0, 0, mfu.N, mfu.N, mfu.N),
                  stack=(0, 0, mfu.BF16, mfu.N, 0, mfu.BF16, mfu.N, 0, 0, mfu.BF16, mfu.N,
                         mfu.C32, 0))


def steps_oom_trace():
    """test_mfu_verdict's two low-MFU steps, an fp32 GEMM beside each bf16 one (mixed types),
    on two H100s, the GPU busy 95% of its span (a 900 us kernel a step); 7 events lost;
    and the trainer's GPU refusing three allocations (torch's caching allocator reports
    them): 256 MiB, then 512 MiB twice, the first of those with 1 GiB allocated and 3 GiB
    reserved (more idle in the cache than was asked: fragmented). No allocation is recorded:
    mem_peak has no row to say (test_clickhouse_mempeak.py has the OOM's peak detail)."""
    h100 = ["0000:18:00.0 " + mfu.H100, "0000:2a:00.0 " + mfu.H100]
    t = Trace(families="proc,cuda,gpu,torch,cublas,mem", gpus=h100)
    t.process(1, "train")
    for s in range(2):
        base = s * mfu.LOW
        gemm(t, 1, base + 1000)
        t.cublas_call(1, 1, base + 3000, 1000, mfu.SGEMM, args=(0x1, 0, 0, 1024, 1024, 1024),
                      stack=(0, 0, 1024, 0, 1024, 0, 0, 1024))
        t.kernel(1, 1, base + 50_000, 900_000, "sm90_xmma_gemm_bf16", call_ts=base + 1000)
        t.torch_step(1, 1, base, mfu.LOW, s + 1)
    for ts, mib, alloc, res in ((400_000, 256, GIB, GIB), (500_000, 512, GIB, 3 * GIB),
                                (600_000, 512, 2 * GIB, 3 * GIB)):
        t.mem_oom(1, 1, ts, mib << 20, device=0, allocated=alloc, reserved=res)
    t.loss(1, 7, 700_000)  # events lost while recording: the page's warning
    return t.write(keep_tmpdir(), "steps.bst")


def oom_recording():
    """Debian's python3-torch refused a 1 PiB CPU tensor (mem_alloc.py oom, test_mem's),
    recorded with -t mem (no stacks: the claim reads none, and the recorder's CPU is make
    check's): the file, its pid."""
    if not has(DEBIAN_PY, "torch"):
        raise Skip("Debian's python3-torch is not installed (make deps)")
    p, out = record([DEBIAN_PY, MEM_ALLOC, "oom"], "-t", "mem", "--stacks", "none",
                    out=os.path.join(keep_tmpdir(), "oom.bst"))
    eq(p.returncode, 0, f"record ({p.stderr[-600:]})")
    return out, json.loads([l for l in p.stdout.splitlines() if l.startswith("{")][-1])["pid"]


def test_mfu_and_memory_rules_from_the_server(engine):
    """Each file's verdict from the server equals stats FILE's line for line: the low-MFU
    claim with its numbers (the recorded GPU's peak, the types' shares, the idle share of the
    steps' processes' GPUs and what to look at next); a GPU's OOMs (their count, the largest
    with the allocator's totals then, the fragmented cache) and its cache reserved far above
    what was allocated; a real process's CPU OOM. Neither cublas nor mem is named as not
    judged; mem is judged with mem_peak and mem_leaks (computed in the server;
    test_clickhouse_mempeak.py and test_clickhouse_memleak.py compare them). report --from's
    page has the events-lost warning. And
    --peak-tflops is refused there, not ignored."""
    need_root()
    rec, pid = once("oom", oom_recording)
    ch = shared(engine)
    # two files: each stats --from costs the server about a CPU-second (test_mfu_verdict.py
    # has the silent cases and the GEMMs' span without steps on files)
    files = {"low MFU of mixed types on a busy GPU, its OOMs": once("steps", steps_oom_trace),
             "a CPU tensor refused": rec}
    job = ch.url("mem")
    p = run([BPFSIGHT, "ship", *files.values(), "--to", job, "--spool",
             os.path.join(tmpdir(), "spool")], timeout=300)
    eq(p.returncode, 0, f"ship ({p.stderr[-800:]})")
    said, above = [], {}
    for what, path in files.items():
        mine, rest, above[path] = verdict(["--from", job, "--file", path])
        theirs, _, _ = verdict([path])
        eq(mine, theirs, f"{what}: the verdict from the server")
        check(not re.search(r"the rules of [^;]*\b(cublas|mem)\b", rest), f"{what}: {rest}")
        check("mem_peak" not in rest and "mem_leaks" not in rest, f"{what}: {rest}")
        said += theirs
    for want in (r"GEMMs reach 17\.1% of the NVIDIA H100 80GB HBM3's bf16 peak \(989\.4 TFLOP/s; "
                 r"98\.5% of the FLOPs are bf16\) over 2 steps \(2\.00 ms\); GPU idle 5\.3%",
                 r"the GPU is busy, not in large GEMMs",
                 r"cuda:0 of train \(pid 1\) ran out of memory: 3 allocations refused, the "
                 r"largest 512 MiB with 1\.00 GiB allocated and 3\.00 GiB reserved",
                 r"2\.00 GiB of it was reserved but unallocated",
                 r"cuda:0 of train \(pid 1\) reserved 3\.00 GiB at its peak for 2\.00 GiB",
                 rf"cpu of python3 \(pid {pid}\) ran out of memory: 1 allocation refused, the "
                 r"largest 1024 TiB"):
        check(any(re.search(want, l) for l in said), f"{want!r} in {said}")
    # report --from's page: the events-lost warning as stats --from words it, naming the
    # reports the page shows (an unknown family's losses touch every one)
    steps = files["low MFU of mixed types on a busy GPU, its OOMs"]
    lost = "WARNING: 7 events were lost while recording (unknown task_map_full: 7): "
    check(above[steps] and above[steps][0].startswith(lost), f"stats --from: {above[steps]}")
    page = os.path.join(tmpdir(), "page.html")
    p = run([BPFSIGHT, "report", "--from", job, "--file", steps, "-o", page], timeout=300)
    eq(p.returncode, 0, f"report --from ({p.stderr[-800:]})")
    with open(page) as f:
        text = html.unescape(f.read())
    shown = re.findall(r'<div class="report" id="r-(\w+)">', text)
    check(len(shown) > 5, f"the page's reports: {shown}")
    check(f'<p class="warn" id="lost">{lost}{", ".join(shown)} below undercount.</p>' in text,
          f"the page's warning: {re.findall(r'<p class=.warn.*?</p>', text)}")
    p = run([BPFSIGHT, "stats", "--from", job, "--peak-tflops", "100"], timeout=60)
    check(p.returncode != 0 and "--peak-tflops" in p.stderr, f"--peak-tflops refused: {p}")
