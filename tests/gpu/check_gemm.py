"""GEMMs on a real GPU under the cublas family (tests/gpu/run.sh): torch.mm's shapes and
FLOPs as cuBLAS was asked them, their kernels' GPU time, TFLOP/s and MFU; the GPUs the trace's
header names (read from /proc/driver/nvidia/gpus) against nvidia-smi's, the MFU against the
recorded GPU's peak without --peak-tflops, and the verdict's low-MFU claim.

  check_gemm.py loop OUT.json        torch.mm of known shapes (bf16 and fp32), CALLS each;
                                     then CALLS conv2d of one shape (cuDNN)
  check_gemm.py compare BIN TRACE OUT.json
                                     the GEMMs; with -t cudnn in the trace, the convolutions:
                                     CALLS cuDNN executions at depth 0 (cudnnBackendExecute, or
                                     the legacy cudnnConvolutionForward), each a forward
                                     convolution of the conv's FLOPs (2*numel(y)*C*R*S)

torch is row-major and cuBLAS column-major: torch.mm(a, b), a M x K and b K x N, is the GEMM
m = N, n = M, k = K (docs/BLAS.md). Whether torch calls cublasGemmEx, cublasSgemm_v2 or
cublasLtMatmul depends on its version: the rows are matched by shape and types, not name.
"""
import json
import re
import subprocess
import sys

CALLS = 50
CONV = (8, 64, 56, 56, 128, 3)  # N, C, H, W, K, R=S; stride 1, padding 1: y is N x K x H x W
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
    n, c, h, w, k, r = CONV
    x = torch.randn(n, c, h, w, device=dev)
    wt = torch.randn(k, c, r, r, device=dev)
    with torch.no_grad():
        for _ in range(CALLS):
            torch.nn.functional.conv2d(x, wt, padding=r // 2)
    torch.cuda.synchronize()
    with open(out, "w") as f:
        json.dump({"device": torch.cuda.get_device_name(0), "calls": CALLS, "shapes": SHAPES,
                   "conv": CONV, "cudnn": torch.backends.cudnn.version()}, f)


def check_cudnn(binary, trace, want):
    """The convolutions as cuDNN was asked them: CALLS executions, each a forward conv."""
    out = subprocess.run([binary, "dump", trace], capture_output=True, text=True, check=True)
    calls = [e for e in map(json.loads, out.stdout.splitlines())
             if e["kind"] == "cudnn_api" and e["args"].get("depth", 0) == 0]
    if not calls:
        print("  no cudnn_api events: -t cudnn not recorded, convolutions not checked")
        return True
    n, c, h, w, k, r = want["conv"]
    flops = 2 * (n * k * h * w) * c * r * r
    ex = [e for e in calls if e["name"] in ("cudnnBackendExecute", "cudnnConvolutionForward")]
    conv = [e for e in ex if "CONVOLUTION_FORWARD" in str(e["args"].get("ops", "")) or
            e["name"] == "cudnnConvolutionForward"]
    exact = [e for e in conv if e["args"].get("flops") == flops]
    names = {}
    for e in calls:
        names[e["name"]] = names.get(e["name"], 0) + 1
    print(f"  cuDNN {want.get('cudnn')}: {len(calls)} calls at depth 0 "
          f"({dict(sorted(names.items(), key=lambda x: -x[1])[:8])}); executions {len(ex)}, "
          f"forward convolutions {len(conv)}, with the conv's {flops} FLOPs {len(exact)}")
    if ex:
        print(f"  first execution's args: {ex[0]['args']}")
    if len(conv) != want["calls"] or len(exact) != want["calls"]:
        print(f"FAIL cuDNN: {want['calls']} forward convolutions of {flops} FLOPs wanted")
        return False
    return True


def stats(binary, trace, report, *extra):
    p = subprocess.run([binary, "stats", trace, "-r", report, "--format", "json", *extra],
                       capture_output=True, text=True, check=True)
    return json.loads(p.stdout)["reports"][report]


def bus_key(bus):
    """0000:18:00.0 (procfs) and 00000000:18:00.0 (nvidia-smi) name one GPU."""
    dom, rest = bus.strip().lower().split(":", 1)
    return int(dom, 16), rest


def check_gpus(binary, trace):
    """The header's GPUs ("BUS MODEL" lines) are nvidia-smi's, by bus and name."""
    p = subprocess.run([binary, "info", "--json", trace], capture_output=True, text=True,
                       check=True)
    got = {bus_key(g.split(" ", 1)[0]): g.split(" ", 1)[1] for g in json.loads(p.stdout)["gpus"]}
    p = subprocess.run(["nvidia-smi", "--query-gpu=pci.bus_id,name", "--format=csv,noheader"],
                       capture_output=True, text=True, check=True)
    smi = {bus_key(b): n.strip() for b, n in (l.split(",", 1) for l in p.stdout.splitlines())}
    print(f"  recorded GPUs {sorted(got.values())}, nvidia-smi's {sorted(smi.values())}")
    if got != smi:
        print(f"FAIL the trace's GPUs {got} != nvidia-smi's {smi}")
        return False
    return True


def check_verdict(binary, trace, steps):
    """The verdict names a low MFU once (under 30 %, docs/BLAS.md), and says nothing of a
    high one: the share over the rows, as the rule sums them."""
    ns = sum(s["step_ns"] for s in steps if s.get("mfu_pct") is not None)
    mfu = sum(s["mfu_pct"] * s["step_ns"] for s in steps if s.get("mfu_pct") is not None) / ns
    out = subprocess.run([binary, "stats", trace], capture_output=True, text=True,
                         check=True).stdout
    claims = re.findall(r"^ \* MFU .*GEMMs reach ([0-9.]+)% of", out, re.M)
    print(f"  verdict: MFU {mfu:.2f} %, claims {claims}")
    if mfu < 30 and (len(claims) != 1 or abs(float(claims[0]) - mfu) > 0.06):
        print("FAIL a low MFU not named once with its share")
        return False
    if mfu >= 30 and claims:
        print("FAIL a claim of a high MFU")
        return False
    return True


def compare(binary, trace, out):
    want = json.load(open(out))
    rows = stats(binary, trace, "gemm_sum")
    ok = check_gpus(binary, trace)
    ok = check_cudnn(binary, trace, want) and ok
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
        recorded = [s.get("mfu_pct") for s in stats(binary, trace, "gemm_step_sum")]
        if recorded != mfu:
            print(f"FAIL MFU against the recorded GPU {recorded} != against {peak} {mfu}")
            ok = False
        ok = check_verdict(binary, trace, steps) and ok
    else:
        print(f"  no peak for {want['device']}: MFU not checked")
    return 0 if ok else 1


if __name__ == "__main__":
    if sys.argv[1] == "loop":
        loop(sys.argv[2])
    else:
        sys.exit(compare(*sys.argv[2:5]))
