"""GEMMs on a real GPU under the cublas family (tests/gpu/run.sh): torch.mm's shapes and
FLOPs as cuBLAS was asked them, their kernels' GPU time, TFLOP/s and MFU.

  check_gemm.py loop OUT.json        torch.mm of known shapes (bf16 and fp32), CALLS each
  check_gemm.py compare BIN TRACE OUT.json

torch is row-major and cuBLAS column-major: torch.mm(a, b), a M x K and b K x N, is the GEMM
m = N, n = M, k = K (docs/BLAS.md). Whether torch calls cublasGemmEx, cublasSgemm_v2 or
cublasLtMatmul depends on its version: the rows are matched by shape and types, not name.
"""
import json
import subprocess
import sys

CALLS = 50
SHAPES = [("bf16", 4096, 2048, 1024), ("f32", 1024, 512, 768)]  # (type, M, K, N)
PEAKS = [("H100 PCIe", "h100-pcie"), ("H100", "h100-sxm"), ("H200", "h200"),
         ("A100", "a100"), ("L4", "l4")]


def loop(out):
    import torch
    torch.backends.cuda.matmul.allow_tf32 = False
    dev = torch.device("cuda")
    types = {"bf16": torch.bfloat16, "f32": torch.float32}
    for t, m, k, n in SHAPES:
        a = torch.randn(m, k, device=dev, dtype=types[t])
        b = torch.randn(k, n, device=dev, dtype=types[t])
        for _ in range(CALLS):
            torch.mm(a, b)
    torch.cuda.synchronize()
    with open(out, "w") as f:
        json.dump({"device": torch.cuda.get_device_name(0), "calls": CALLS, "shapes": SHAPES}, f)


def stats(binary, trace, report, *extra):
    p = subprocess.run([binary, "stats", trace, "-r", report, "--format", "json", *extra],
                       capture_output=True, text=True, check=True)
    return json.loads(p.stdout)["reports"][report]


def compare(binary, trace, out):
    want = json.load(open(out))
    rows = stats(binary, trace, "gemm_sum")
    ok = True
    for t, m, k, n in want["shapes"]:
        got = [r for r in rows if (r["m"], r["n"], r["k"]) == (n, m, k) and r["a_type"] == t]
        if len(got) != 1:
            print(f"FAIL {t} {m}x{k} @ {k}x{n}: {len(got)} gemm_sum rows m={n} n={m} k={k}")
            ok = False
            continue
        r = got[0]
        flops = 2 * m * n * k
        print(f"  {r['name']} {t} m={n} n={m} k={k}: {r['count']} calls, {r['kernels']} "
              f"kernels, {r['gpu_ns']} ns on the GPU, {r['tflops']} TFLOP/s")
        checks = [(r["count"] == want["calls"], f"count {r['count']} != {want['calls']}"),
                  (r["flops"] == want["calls"] * flops, f"flops {r['flops']}"),
                  (r["batch"] == 1 and r["trans"] == "NN", f"batch/trans {r}"),
                  ((r.get("kernels") or 0) >= want["calls"], "a kernel per call at least"),
                  ((r.get("gpu_ns") or 0) > 0 and (r.get("tflops") or 0) > 0, "GPU time, rate")]
        for good, what in checks:
            if not good:
                print(f"FAIL {t}: {what}")
                ok = False
    peak = next((key for name, key in PEAKS if name in want["device"]), None)
    if peak:
        steps = stats(binary, trace, "gemm_step_sum", "--peak-tflops", peak)
        mfu = [s.get("mfu_pct") for s in steps]
        print(f"  gemm_step_sum on {want['device']} ({peak}): MFU {mfu} %")
        if not steps or any(v is None or not 0 < v <= 100 for v in mfu):
            print(f"FAIL MFU out of (0, 100]: {steps}")
            ok = False
    else:
        print(f"  no peak for {want['device']}: MFU not checked")
    return 0 if ok else 1


if __name__ == "__main__":
    if sys.argv[1] == "loop":
        loop(sys.argv[2])
    else:
        sys.exit(compare(*sys.argv[2:5]))
