"""The verdict's rules of cublas (a low MFU) judged from a ClickHouse server (`stats --from`,
docs/CLICKHOUSE.md "The verdict from the server"), against `stats FILE` on the same files,
claim for claim. One real clickhouse-server (Debian's 18.16, clickhouse_server.py) for the
module, one shipped job.

No GPU is lent here, so no recording has GEMMs with FLOPs: the MFU files are the synthetic
traces test_mfu_verdict.py builds (synth.py: torch steps, a bf16 cublasGemmEx of 4096^3 in
each, a kernel on the GPU, the GPUs in the header), and one without steps."""
import os
import re

from clickhouse_server import ClickHouse
from helpers import BPFSIGHT, check, eq, run, tmpdir
from synth import Trace
import test_clickhouse_cpu as chcpu
import test_mfu_verdict as mfu

SECONDS = 10

NOT_JUDGED = "Not judged from "


def verdict(args):
    """The verdict's lines (test_clickhouse_cpu's, --wide: a line a claim), and the line
    saying what the server did not judge apart ("")."""
    block = chcpu.verdict([*args, "--wide"])
    rest = [l for l in block if l.startswith(NOT_JUDGED)]
    return [l for l in block if not l.startswith(NOT_JUDGED)], rest[0] if rest else ""


def no_steps_trace():
    """Two processes' bf16 GEMMs without torch steps: the MFU over the GEMMs' span."""
    t = Trace(families="proc,cuda,gpu,cublas", gpus=["0000:18:00.0 " + mfu.H100])
    for pid, base in ((1, 0), (2, 3_000_000)):
        t.process(pid, f"train{pid}")
        t.cublas_call(pid, pid, base + 1000, 1000, mfu.GEMM_EX,
                      args=(0x1, 0, 0, mfu.N, mfu.N, mfu.N),
                      stack=(0, 0, mfu.BF16, mfu.N, 0, mfu.BF16, mfu.N, 0, 0, mfu.BF16, mfu.N,
                             mfu.C32, 0))
        t.kernel(pid, pid, base + 50_000, mfu.KERNEL, "sm90_xmma_gemm_bf16",
                 call_ts=base + 1000)
    return t.write(tmpdir(), "nosteps.bst")


def mfu_files():
    """The synthetic MFU traces, by what each shows (three: each stats --from costs the
    server about a CPU-second; test_mfu_verdict.py has the silent cases on files)."""
    h100 = "0000:18:00.0 " + mfu.H100
    return {
        "low MFU, the recorded GPU": mfu.trace(mfu.LOW, gpus=[h100, "0000:2a:00.0 " + mfu.H100],
                                               name="low.bst"),
        "low MFU of mixed types on a busy GPU": mfu.trace(mfu.LOW, gpus=[h100], kernel=900_000,
                                                          fp32=1024, name="busy.bst"),
        "no steps": no_steps_trace(),
    }


def test_mfu_rule_from_the_server():
    """Each synthetic file's verdict from the server equals stats FILE's line for line (the
    low-MFU claim with its numbers, the recorded GPU's peak, the types' shares, the idle share
    of the steps' processes' GPUs and what to look at next, over steps or the GEMMs' span),
    cublas never named as not judged; --peak-tflops is refused there, not ignored."""
    ch = ClickHouse()
    files = mfu_files()
    job = ch.url("mfu")
    p = run([BPFSIGHT, "ship", *files.values(), "--to", job, "--spool",
             os.path.join(tmpdir(), "spool")], timeout=300)
    eq(p.returncode, 0, f"ship ({p.stderr[-800:]})")
    said = 0
    for what, path in files.items():
        mine, rest = verdict(["--from", job, "--file", path])
        theirs, _ = verdict([path])
        eq(mine, theirs, f"{what}: the verdict from the server")
        check(not re.search(r"the rules of [^;]*\bcublas\b", rest), f"{what}: {rest}")
        said += any("GEMMs reach" in l for l in theirs)
    eq(said, 3, "the low-MFU claim in each file")
    p = run([BPFSIGHT, "stats", "--from", job, "--peak-tflops", "100"], timeout=60)
    check(p.returncode != 0 and "--peak-tflops" in p.stderr, f"--peak-tflops refused: {p}")
    ch.stop()
