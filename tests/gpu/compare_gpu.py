"""Compare bpfsight's GPU kernels (gpu family, cupti-shim) with torch.profiler's (tests/gpu/run.sh).

  compare_gpu.py BPFSIGHT TRACE RANGE_JSON PROFILER_JSON LABEL

TRACE: `bpfsight record -t cuda,gpu --capture-range=cudaProfilerApi` of `torch_loop.py
--validate --halves range` (RANGE_JSON: its pid); PROFILER_JSON: `torch_loop.py --validate
--halves profiler`, the same iterations under torch.profiler in another process (CUPTI has
one owner per process). Checks, each printed:
  - the same number of GPU kernels, with the same names (multiset);
  - total GPU kernel time within 2% of torch.profiler's;
  - every kernel linked to the cuda-family launch call that launched it (args.link == "cuda",
    and a cuda_api event starts at args.call_ts on the kernel's thread).
Exit 0 when all hold, 1 otherwise.
"""
import collections
import json
import subprocess
import sys

TIME_TOLERANCE = 0.02


def main():
    if len(sys.argv) != 6:
        sys.exit(__doc__)
    bpfsight, trace, range_json, prof_json, label = sys.argv[1:]
    with open(range_json) as f:
        pid = json.load(f)["pid"]
    with open(prof_json) as f:
        loop = json.load(f)
    dump = subprocess.run([bpfsight, "dump", trace], capture_output=True, text=True, check=True)
    kernels = collections.Counter()
    kernel_ns = collections.Counter()
    calls = set()
    linked, unlinked, links = 0, 0, []
    for line in dump.stdout.splitlines():
        e = json.loads(line)
        if e["pid"] != pid:
            continue
        if e["kind"] == "cuda_api":
            calls.add((e["tid"], e["ts"]))
        elif e["kind"] == "gpu_kernel":
            kernels[e["name"]] += 1
            kernel_ns[e["name"]] += e["dur"]
            if e["args"].get("link") == "cuda":
                links.append((e["tid"], e["args"].get("call_ts")))
            else:
                unlinked += 1
    linked = sum(1 for k in links if k in calls)
    bad_links = len(links) - linked
    ours, theirs = sum(kernels.values()), sum(loop["gpu_kernels"].values())
    ours_ns, theirs_ns = sum(kernel_ns.values()), sum(loop["gpu_kernel_ns"].values())
    print(f"[{label}] {loop['steps']} steps, torch {loop['torch']}, CUDA {loop['cuda']}")
    print(f"  kernels: bpfsight {ours}, torch.profiler {theirs}")
    ok = True
    if kernels != collections.Counter(loop["gpu_kernels"]):
        ok = False
        mine, prof = set(kernels), set(loop["gpu_kernels"])
        for name in sorted(mine | prof)[:40]:
            a, b = kernels.get(name, 0), loop["gpu_kernels"].get(name, 0)
            if a != b:
                print(f"    {a:6d} vs {b:6d}  {name[:150]}")
        print("  MISMATCH: kernel names or counts differ")
    else:
        print(f"  MATCH: {ours} kernels, {len(kernels)} names")
    rel = abs(ours_ns - theirs_ns) / theirs_ns if theirs_ns else 1.0
    print(f"  GPU kernel time: bpfsight {ours_ns / 1e6:.3f} ms, torch.profiler "
          f"{theirs_ns / 1e6:.3f} ms, difference {rel * 100:.2f}% (limit "
          f"{TIME_TOLERANCE * 100:.0f}%)")
    ok = ok and rel <= TIME_TOLERANCE
    print(f"  launch links: {linked} kernels linked to their launch call, {bad_links} linked "
          f"to no recorded call, {unlinked} unlinked")
    ok = ok and ours > 0 and linked == ours
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
