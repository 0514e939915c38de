"""The verdict names a low MFU (docs/BLAS.md, "MFU"): over the torch steps gemm_step_sum gives an
MFU, the GEMMs' time at the GPU's peak over the steps' time, under 30 % is a claim with the
numbers; the peak is the recorded GPU's (the trace's header, BS_META_GPUS) or --peak-tflops'.

Synthetic traces (synth.py): two torch steps of STEP ns, each calling one bf16 cublasGemmEx
of 4096^3 (2 * 4096^3 FLOPs) and running one 300 us kernel on the GPU."""
import json
import re

from helpers import BPFSIGHT, check, eq, run, stats, tmpdir
from synth import Trace

SECONDS = 4
# For tests/run_tests.py: these tests read files only (no recording, no workload, nothing
# traced): they run beside the tests that run alone, on the core those leave idle.
BESIDE = "reads files only"

H100 = "NVIDIA H100 80GB HBM3"
N, GEMM_EX, SGEMM, BF16, C32 = 4096, 50, 6, 14, 68  # cublas_api.c's indexes; cudaDataType_t
FLOPS = 2 * N ** 3
KERNEL = 300_000
LOW, HIGH = 1_000_000, 400_000  # step times: MFU 13.9 % and 34.7 % of the H100's bf16 peak


def trace(step, gpus=None, name="t.bst", kernel=KERNEL, fp32=0):
    """FP32: an fp32 cublasSgemm_v2 of FP32^3 in each step too."""
    t = Trace(families="proc,cuda,gpu,torch,cublas", gpus=gpus)
    t.process(1, "train")
    for s in range(2):
        base = s * step
        t.cublas_call(1, 1, base + 1000, 1000, GEMM_EX, args=(0x1, 0, 0, N, N, N),
                      stack=(0, 0, BF16, N, 0, BF16, N, 0, 0, BF16, N, C32, 0))
        if fp32:
            t.cublas_call(1, 1, base + 3000, 1000, SGEMM, args=(0x1, 0, 0, fp32, fp32, fp32),
                          stack=(0, 0, fp32, 0, fp32, 0, 0, fp32))
        t.kernel(1, 1, base + 50_000, kernel, "sm90_xmma_gemm_bf16", call_ts=base + 1000)
        t.torch_step(1, 1, base, step, s + 1)
    return t.write(tmpdir(), name)


def verdict(path, *args):
    """stats' verdict, piped: the headline and the claim lines (verdict.c's print_claim)."""
    out = run([BPFSIGHT, "stats", path, *args], check=True).stdout
    lines = out.split("\n")
    i = next(k for k, l in enumerate(lines) if l.startswith("Verdict: "))
    claims = []
    for line in lines[i + 2:]:
        if line.startswith("* = ") or not line.strip():
            break
        claims.append(line)
    return lines[i][len("Verdict: "):], claims


def mfu_lines(claims):
    return [c for c in claims if "GEMMs reach" in c]


def idle_pct(step, kernel=KERNEL):
    """gpu_idle_sum's idle share: the two kernels' span less their time."""
    span = step + kernel
    return 100 * (span - 2 * kernel) / span


def test_low_mfu_named_with_the_recorded_gpu():
    """The recorded H100's bf16 peak, without --peak-tflops: the claim gives the exact MFU of
    the steps, how idle the GPU was and where to look next; it is the headline (no other
    rule holds); gemm_step_sum's rows use the same peak; info and the report page agree."""
    path = trace(LOW, gpus=["0000:18:00.0 " + H100, "0000:2a:00.0 " + H100])
    eq(json.loads(run([BPFSIGHT, "info", "--json", path], check=True).stdout)["gpus"],
       ["0000:18:00.0 " + H100, "0000:2a:00.0 " + H100], "info: the header's GPUs")
    mfu = 100 * FLOPS / 989.4e3 / LOW
    eq([r["mfu_pct"] for r in stats(path, "gemm_step_sum")["gemm_step_sum"]],
       [round(mfu, 2)] * 2, "gemm_step_sum: against the recorded GPU's bf16 peak")
    text = (f"GEMMs reach {mfu:.1f}% of the {H100}'s bf16 peak (989.4 TFLOP/s) over 2 steps "
            f"(2.00 ms); GPU idle {idle_pct(LOW):.1f}% of its span")
    head, claims = verdict(path)
    eq(head, "low MFU: " + text, "the headline")
    i = claims.index(f" * MFU      {mfu:5.1f}%  {text} (-r gemm_step_sum)")
    eq(claims[i + 1].split(), ("the GPU waits for work: look at the host first (its gaps, then "
                               "what the launching thread did in them) (-r gpu_idle_sum)").split(),
       "the next thing to look at: the GPU idle more than 30 %, the host")
    eq(len(mfu_lines(claims)), 1, "said once")
    page = f"{tmpdir()}/r.html"
    run([BPFSIGHT, "report", path, "-o", page], check=True)
    with open(page) as f:
        check(text in f.read(), "the report page's verdict has the same claim")


def test_low_mfu_on_a_busy_gpu():
    """The GPU busy 95 % of its span with a low MFU: GPU-bound is the headline, the MFU claim
    follows it, and the next thing to look at is what the GPU runs besides large GEMMs."""
    kernel = 900_000
    head, claims = verdict(trace(LOW, gpus=["0000:18:00.0 " + H100], kernel=kernel))
    check(head.startswith("GPU-bound: "), head)
    mfu = 100 * FLOPS / 989.4e3 / LOW
    i = claims.index(f" * MFU      {mfu:5.1f}%  GEMMs reach {mfu:.1f}% of the {H100}'s bf16 "
                     f"peak (989.4 TFLOP/s) over 2 steps (2.00 ms); GPU idle "
                     f"{idle_pct(LOW, kernel):.1f}% of its span (-r gemm_step_sum)")
    eq(claims[i + 1].split(), ("the GPU is busy, not in large GEMMs: the GEMMs' shapes and "
                               "TFLOP/s, then the kernels that take its time "
                               "(cuda_gpu_kern_sum) (-r gemm_sum)").split(), "what to look at")


def test_mixed_types():
    """An fp32 GEMM beside the bf16 one: each at its own peak (fp32 67 TFLOP/s), the peak named
    the one of the type with the most FLOPs, with its share of them."""
    n32 = 1024
    f32 = 2 * n32 ** 3
    head, claims = verdict(trace(LOW, gpus=["0000:18:00.0 " + H100], fp32=n32))
    mfu = 100 * (FLOPS / 989.4e3 + f32 / 67e3) / LOW
    eq([re.sub(r"\s+", " ", c.strip()) for c in mfu_lines(claims)],
       [f"* MFU {mfu:.1f}% GEMMs reach {mfu:.1f}% of the {H100}'s bf16 peak (989.4 TFLOP/s; "
        f"{100 * FLOPS / (FLOPS + f32):.1f}% of the FLOPs are bf16) over 2 steps (2.00 ms); GPU "
        f"idle {idle_pct(LOW):.1f}% of its span (-r gemm_step_sum)"], "the claim")


def test_high_mfu_silent():
    """34.7 % of the peak is not low: no claim."""
    head, claims = verdict(trace(HIGH, gpus=["0000:18:00.0 " + H100]))
    eq(mfu_lines(claims), [], f"no MFU claim ({head})")


def test_unknown_peak_silent_with_the_hint():
    """No GPU recorded (a trace of an older bpfsight, a machine without the driver), or a GPU
    the table of peaks lacks: no claim, and gemm_step_sum says how to give the peak."""
    for gpus, why in ((None, "the trace names no GPU"),
                      (["0000:18:00.0 NVIDIA L40S"], "no peak known for the NVIDIA L40S"),
                      (["0000:18:00.0 " + H100, "0000:2a:00.0 NVIDIA A100-SXM4-80GB"],
                       "the trace's GPUs are of several models")):
        path = trace(LOW, gpus=gpus)
        head, claims = verdict(path)
        eq(mfu_lines(claims), [], f"{why}: no MFU claim ({head})")
        out = " ".join(run([BPFSIGHT, "stats", path, "-r", "gemm_step_sum"],
                           check=True).stdout.split())
        check(f"MFU: peak unknown ({why}): --peak-tflops N (TFLOP/s) or a GPU" in out, out)
        eq([r.get("mfu_pct") for r in stats(path, "gemm_step_sum")["gemm_step_sum"]],
           [None, None], f"{why}: no MFU in the rows")


def test_peak_tflops_overrides():
    """--peak-tflops N judges every GEMM against N, a GPU against its row, the recorded GPU
    or none: at 100 TFLOP/s the H100 trace's steps are 137 % (silent); the trace without a GPU
    is low against h100-sxm's row and against 1000 TFLOP/s."""
    h100 = trace(LOW, gpus=["0000:18:00.0 " + H100], name="h100.bst")
    eq(mfu_lines(verdict(h100, "--peak-tflops", "100")[1]), [], "over the peak given: silent")
    bare = trace(LOW, name="bare.bst")
    for arg, tflops, of in (("h100-sxm", 989.4, "h100-sxm's bf16 peak (989.4 TFLOP/s)"),
                            ("1000", 1000, "1000 TFLOP/s (--peak-tflops)")):
        mfu = 100 * FLOPS / (tflops * 1e3) / LOW
        lines = mfu_lines(verdict(bare, "--peak-tflops", arg)[1])
        eq([re.sub(r"\s+", " ", c.strip()) for c in lines],
           [f"* MFU {mfu:.1f}% GEMMs reach {mfu:.1f}% of {of} over 2 steps (2.00 ms); GPU "
            f"idle {idle_pct(LOW):.1f}% of its span (-r gemm_step_sum)"], f"--peak-tflops {arg}")


def test_models_to_rows():
    """A model's row by the words of its name, as the driver names it: the bf16 peak each
    gives the steps' MFU; an NVL board has none."""
    for model, bf16 in (("NVIDIA H100 PCIe", 756), ("NVIDIA A100-SXM4-80GB", 312),
                        ("NVIDIA A100 80GB PCIe", 312), ("NVIDIA L4", 121),
                        ("NVIDIA GH200 480GB", 989.4), ("NVIDIA H200", 989.4),
                        ("NVIDIA H100 NVL", None)):
        rows = stats(trace(LOW, gpus=["0000:18:00.0 " + model]), "gemm_step_sum")
        want = round(100 * FLOPS / (bf16 * 1e3) / LOW, 2) if bf16 else None
        eq([r.get("mfu_pct") for r in rows["gemm_step_sum"]], [want] * 2, model)
