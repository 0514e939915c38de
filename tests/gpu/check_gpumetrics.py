"""The gpumetrics family on a real GPU (tests/gpu/run.sh): NVML's utilization, power and energy
as bpfsight sampled them against `nvidia-smi --query-gpu=... -lms` over the same seconds, a
GEMM loop's tensor activity and a copy loop's DRAM and PCIe traffic (docs/GPU-METRICS.md).

  check_gpumetrics.py gemm SECONDS         bf16 torch.mm on GPU 0 for SECONDS
  check_gpumetrics.py copy SECONDS         device-to-device copies for half of SECONDS, then
                                           pinned host-to-device copies for the other half;
                                           prints "phase h2d MONO_NS" when it switches
  check_gpumetrics.py compare BIN TRACE SMI_CSV KIND [PHASE_FILE]
      KIND gemm: tensor cores busy (GPM's tensor_active; a GPU without GPM: NVML's utilization)
      KIND copy: DRAM busy in the first phase, PCIe traffic into the GPU in the second
      both: utilization, power and energy agree with nvidia-smi's over the seconds both cover

nvidia-smi's samples come every 100 ms and NVML averages utilization over 1/6 s to 1 s, so
the bounds are loose: utilization within 10 points of nvidia-smi's mean, power within 10%,
energy (ours: the counter's difference; nvidia-smi's: its power integrated) within 15%.
"""
import datetime
import json
import subprocess
import sys
import time


def gemm(seconds):
    import torch
    a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    end = time.time() + seconds
    while time.time() < end:
        for _ in range(8):
            torch.mm(a, b)
        torch.cuda.synchronize()


def copy(seconds):
    import torch
    src = torch.empty(1 << 30, dtype=torch.uint8, device="cuda")
    dst = torch.empty_like(src)
    end = time.time() + seconds / 2
    while time.time() < end:
        dst.copy_(src)
        torch.cuda.synchronize()
    print(f"phase h2d {time.clock_gettime_ns(time.CLOCK_MONOTONIC)}", flush=True)
    host = torch.empty(1 << 28, dtype=torch.uint8).pin_memory()
    end = time.time() + seconds / 2
    while time.time() < end:
        src[: 1 << 28].copy_(host, non_blocking=True)
        torch.cuda.synchronize()


def dump(binary, trace, kind):
    out = subprocess.run([binary, "dump", trace, "-k", kind], capture_output=True, text=True,
                         check=True).stdout
    return [json.loads(l) for l in out.splitlines()]


def smi_samples(path, real_minus_mono):
    """nvidia-smi's CSV (timestamp, index, utilization.gpu, power.draw) of GPU 0, its wall
    times onto CLOCK_MONOTONIC ns."""
    rows = []
    with open(path) as f:
        for line in f:
            w = [x.strip() for x in line.split(",")]
            if len(w) < 4 or w[1] != "0":
                continue
            try:
                t = datetime.datetime.strptime(w[0], "%Y/%m/%d %H:%M:%S.%f").timestamp()
                rows.append((int(t * 1e9) - real_minus_mono, float(w[2]), float(w[3])))
            except ValueError:
                continue  # "[N/A]", a header
    return rows


def mean(xs):
    """Of the values there: a metric may be present and null (dump's NaN: GPM's 0/0)."""
    xs = [x for x in xs if x is not None]
    return sum(xs) / len(xs) if xs else float("nan")


def compare(binary, trace, smi_csv, kind, phase_file=None):
    info = json.loads(subprocess.run([binary, "info", "--json", trace], capture_output=True,
                                     text=True, check=True).stdout)
    real_minus_mono = info["start_realtime_ns"] - info["start_monotonic_ns"]
    ours = [e for e in dump(binary, trace, "gpu_metrics") if e["args"]["device"] == 0]
    status = dump(binary, trace, "gpu_metrics_status")
    print("sampler:", [s["args"] for s in status])
    smi = smi_samples(smi_csv, real_minus_mono)
    ok = True
    if not ours or not smi:
        print(f"samples: ours {len(ours)}, nvidia-smi's {len(smi)}")
        return False
    lo, hi = max(ours[0]["ts"], smi[0][0]), min(ours[-1]["ts"], smi[-1][0])
    win = [e for e in ours if lo <= e["ts"] <= hi]
    swin = [s for s in smi if lo <= s[0] <= hi]
    util = mean([e["args"]["gpu_util"] for e in win if "gpu_util" in e["args"]])
    power = mean([e["args"]["power"] / 1000 for e in win if "power" in e["args"]])
    s_util, s_power = mean([s[1] for s in swin]), mean([s[2] for s in swin])
    print(f"over {(hi - lo) / 1e9:.1f} s: utilization ours {util:.1f}% nvidia-smi "
          f"{s_util:.1f}%; power ours {power:.1f} W nvidia-smi {s_power:.1f} W")
    ok &= abs(util - s_util) <= 10
    ok &= abs(power - s_power) <= 0.10 * s_power
    en = [e for e in win if "energy" in e["args"]]
    if len(en) >= 2 and len(swin) >= 2:
        j = (en[-1]["args"]["energy"] - en[0]["args"]["energy"]) / 1000
        sj = sum((b[0] - a[0]) / 1e9 * (a[2] + b[2]) / 2 for a, b in zip(swin, swin[1:]))
        scale = (en[-1]["ts"] - en[0]["ts"]) / (swin[-1][0] - swin[0][0])
        print(f"energy ours {j:.1f} J, nvidia-smi's power integrated {sj * scale:.1f} J")
        ok &= abs(j - sj * scale) <= 0.15 * sj * scale
    gpm = any("sm_active" in e["args"] for e in win)
    if kind == "gemm":
        if gpm:
            t = mean([e["args"]["tensor_active"] for e in win if "tensor_active" in e["args"]])
            h = mean([e["args"]["tensor_hmma"] for e in win if "tensor_hmma" in e["args"]])
            print(f"GEMM: tensor_active {t:.1f}%, tensor_hmma {h:.1f}%")
            ok &= t >= 20 and h >= 20
        else:
            print(f"GEMM: no GPM on this GPU; utilization {util:.1f}%")
            ok &= util >= 50
    else:
        with open(phase_file) as f:
            split = int(next(l for l in f if l.startswith("phase")).split()[2])
        d2d = [e["args"] for e in win if e["ts"] < split]
        h2d = [e for e in win if e["ts"] > split + 200_000_000]
        dram = mean([a["dram_active"] for a in d2d if "dram_active" in a])
        mem = mean([a["mem_util"] for a in d2d if "mem_util" in a])
        rx = [e for e in h2d if "pcie_rx" in e["args"]]
        rate = ((rx[-1]["args"]["pcie_rx"] - rx[0]["args"]["pcie_rx"]) /
                ((rx[-1]["ts"] - rx[0]["ts"]) / 1e9)) if len(rx) >= 2 else float("nan")
        grx = mean([e["args"]["pcie_rx_rate"] * 1048576 for e in h2d
                    if "pcie_rx_rate" in e["args"]])
        print(f"copies: DRAM active {dram:.1f}% (NVML memory utilization {mem:.1f}%); "
              f"PCIe into the GPU {rate / 1e9:.2f} GB/s (counter), {grx / 1e9:.2f} GB/s (GPM)")
        ok &= (dram >= 30) if gpm else (mem >= 30)
        ok &= max(x for x in (rate, grx) if x == x) >= 1e9 if (rate == rate or grx == grx) \
            else False
    return bool(ok)


def main():
    if sys.argv[1] == "gemm":
        gemm(float(sys.argv[2]))
    elif sys.argv[1] == "copy":
        copy(float(sys.argv[2]))
    elif sys.argv[1] == "compare":
        sys.exit(0 if compare(*sys.argv[2:]) else 1)
    else:
        sys.exit(f"usage: {sys.argv[0]} gemm|copy SECONDS | compare BIN TRACE SMI KIND [PHASE]")


if __name__ == "__main__":
    main()
