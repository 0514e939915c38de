"""The verdict's rules of cublas (a low MFU) and mem (an OOM, a fragmented cache) judged from a
ClickHouse server (`stats --from`, docs/CLICKHOUSE.md "The verdict from the server"), against
`stats FILE` on the same files, claim for claim. One real clickhouse-server (Debian's 18.16,
clickhouse_server.py) for the module, one shipped job.

No GPU is lent here, so no recording has GEMMs with FLOPs, nor a GPU's caching allocator: the
MFU and GPU memory files are synthetic (synth.py: test_mfu_verdict.py's torch steps and bf16
cublasGemmEx of 4096^3, a kernel on the GPU, the GPUs in the header; a GPU's refused
allocations with the allocator's totals), and one without steps. The CPU OOM is a real
recording of Debian's python3-torch refusing a tensor (test_mem's mem_alloc.py)."""
import json
import os
import re

from clickhouse_server import ClickHouse
from helpers import (BPFSIGHT, ROOT, Skip, check, eq, need_root, record, run, tmpdir)
from pymods import has
from synth import Trace
import test_clickhouse_cpu as chcpu
import test_mfu_verdict as mfu

SECONDS = 10

NOT_JUDGED = "Not judged from "
DEBIAN_PY = "/usr/bin/python3"
MEM_ALLOC = os.path.join(ROOT, "tests", "workloads", "mem_alloc.py")


def verdict(args):
    """The verdict's lines (test_clickhouse_cpu's, --wide: a line a claim), and the line
    saying what the server did not judge apart ("")."""
    block = chcpu.verdict([*args, "--wide"])
    rest = [l for l in block if l.startswith(NOT_JUDGED)]
    return [l for l in block if not l.startswith(NOT_JUDGED)], rest[0] if rest else ""


GIB = 1 << 30


def gemm(t, pid, ts):
    """A bf16 cublasGemmEx of N^3 (test_mfu_verdict's)."""
    t.cublas_call(pid, pid, ts, 1000, mfu.GEMM_EX, args=(0x1, 0, 0, mfu.N, mfu.N, mfu.N),
                  stack=(0, 0, mfu.BF16, mfu.N, 0, mfu.BF16, mfu.N, 0, 0, mfu.BF16, mfu.N,
                         mfu.C32, 0))


def steps_oom_trace():
    """test_mfu_verdict's two low-MFU steps, an fp32 GEMM beside each bf16 one (mixed types),
    on two H100s; and the trainer's GPU refusing three allocations (torch's caching allocator
    reports them): 256 MiB, then 512 MiB twice, the first of those with 1 GiB allocated and
    3 GiB reserved (more idle in the cache than was asked: fragmented). No allocation is
    recorded: mem_peak, which the server does not compute, has no row to say."""
    h100 = ["0000:18:00.0 " + mfu.H100, "0000:2a:00.0 " + mfu.H100]
    t = Trace(families="proc,cuda,gpu,torch,cublas,mem", gpus=h100)
    t.process(1, "train")
    for s in range(2):
        base = s * mfu.LOW
        gemm(t, 1, base + 1000)
        t.cublas_call(1, 1, base + 3000, 1000, mfu.SGEMM, args=(0x1, 0, 0, 1024, 1024, 1024),
                      stack=(0, 0, 1024, 0, 1024, 0, 0, 1024))
        t.kernel(1, 1, base + 50_000, mfu.KERNEL, "sm90_xmma_gemm_bf16", call_ts=base + 1000)
        t.torch_step(1, 1, base, mfu.LOW, s + 1)
    for ts, mib, alloc, res in ((400_000, 256, GIB, GIB), (500_000, 512, GIB, 3 * GIB),
                                (600_000, 512, 2 * GIB, 3 * GIB)):
        t.mem_oom(1, 1, ts, mib << 20, device=0, allocated=alloc, reserved=res)
    return t.write(tmpdir(), "steps.bst")


def no_steps_trace():
    """Two processes' bf16 GEMMs without torch steps (the MFU over the GEMMs' span), on GPUs
    busy all of it."""
    t = Trace(families="proc,cuda,gpu,cublas", gpus=["0000:18:00.0 " + mfu.H100])
    for pid, base in ((1, 0), (2, 3_000_000)):
        t.process(pid, f"train{pid}")
        gemm(t, pid, base + 1000)
        t.kernel(pid, pid, base + 50_000, mfu.KERNEL, "sm90_xmma_gemm_bf16",
                 call_ts=base + 1000)
    return t.write(tmpdir(), "nosteps.bst")


def mfu_files():
    """The synthetic files, by what each shows (two: each stats --from costs the server about
    a CPU-second; test_mfu_verdict.py has the silent cases on files)."""
    return {"low MFU of mixed types on the recorded GPUs, a GPU's OOMs": steps_oom_trace(),
            "low MFU without steps on a busy GPU": no_steps_trace()}


def oom_recording():
    """Debian's python3-torch refused a 1 PiB CPU tensor (mem_alloc.py oom, test_mem's),
    recorded with -t mem (no stacks: the claim reads none, and the recorder's CPU is make
    check's): the file, its pid."""
    if not has(DEBIAN_PY, "torch"):
        raise Skip("Debian's python3-torch is not installed (make deps)")
    p, out = record([DEBIAN_PY, MEM_ALLOC, "oom"], "-t", "mem", "--stacks", "none",
                    out=os.path.join(tmpdir(), "oom.bst"))
    eq(p.returncode, 0, f"record ({p.stderr[-600:]})")
    return out, json.loads([l for l in p.stdout.splitlines() if l.startswith("{")][-1])["pid"]


def test_mfu_and_memory_rules_from_the_server():
    """Each file's verdict from the server equals stats FILE's line for line: the low-MFU
    claim with its numbers (the recorded GPU's peak, the types' shares, the idle share of the
    steps' processes' GPUs and what to look at next, over steps or the GEMMs' span); a GPU's
    OOMs (their count, the largest with the allocator's totals then, the fragmented cache)
    and its cache reserved far above what was allocated; a real process's CPU OOM. Neither
    cublas nor mem is named as not judged; mem is judged without mem_peak and mem_leaks (the
    OOM's peak detail and the leak rule: not SQL yet), said. --peak-tflops is refused there,
    not ignored."""
    need_root()
    ch = ClickHouse()
    files = mfu_files()
    rec, pid = oom_recording()
    files["a CPU tensor refused"] = rec
    job = ch.url("mem")
    p = run([BPFSIGHT, "ship", *files.values(), "--to", job, "--spool",
             os.path.join(tmpdir(), "spool")], timeout=300)
    eq(p.returncode, 0, f"ship ({p.stderr[-800:]})")
    said = []
    for what, path in files.items():
        mine, rest = verdict(["--from", job, "--file", path])
        theirs, _ = verdict([path])
        eq(mine, theirs, f"{what}: the verdict from the server")
        check(not re.search(r"the rules of [^;]*\b(cublas|mem)\b", rest), f"{what}: {rest}")
        check(path == files["low MFU without steps on a busy GPU"] or
              re.search(r"judged without: mem_peak, mem_leaks", rest), f"{what}: {rest}")
        said += theirs
    for want in (r"GEMMs reach 17\.1% of .*; 98\.5% of the FLOPs are bf16\) over 2 steps",
                 r"GEMMs reach 9\.3% of .* over the 3\.00 ms from the first GEMM to the last",
                 r"cuda:0 of train \(pid 1\) ran out of memory: 3 allocations refused, the "
                 r"largest 512 MiB with 1\.00 GiB allocated and 3\.00 GiB reserved",
                 r"2\.00 GiB of it was reserved but unallocated",
                 r"cuda:0 of train \(pid 1\) reserved 3\.00 GiB at its peak for 2\.00 GiB",
                 rf"cpu of python3 \(pid {pid}\) ran out of memory: 1 allocation refused, the "
                 r"largest 1024 TiB"):
        check(any(re.search(want, l) for l in said), f"{want!r} in {said}")
    p = run([BPFSIGHT, "stats", "--from", job, "--peak-tflops", "100"], timeout=60)
    check(p.returncode != 0 and "--peak-tflops" in p.stderr, f"--peak-tflops refused: {p}")
    ch.stop()
