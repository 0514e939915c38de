"""Compare bpfsight's kernel launches with torch.profiler's on the same loop (tests/gpu/run.sh).

  compare_launches.py BPFSIGHT TRACE LOOP_JSON LABEL

TRACE: `bpfsight record -t cuda --capture-range=cudaProfilerApi` of `torch_loop.py
--validate`, whose first half ran inside the profiler range and whose second half ran the
same iterations under torch.profiler (LOOP_JSON). The launches bpfsight counts are the
application's kernel-launch calls: cudaLaunchKernel*, cudaLaunchCooperativeKernel*,
cuLaunchKernel*, cuLaunchCooperativeKernel* at depth 0 (a driver launch made inside a
runtime launch is the same launch). Exit 0 when the counts are equal, 1 otherwise. Kernel
names are compared too, for information: launches named like a GPU kernel torch.profiler saw,
launches named otherwise, launches left as a hex handle.
"""
import collections
import json
import re
import subprocess
import sys

LAUNCH_RE = re.compile(r"^_*cu(da)?Launch(Cooperative)?Kernel")


def main():
    if len(sys.argv) != 5:
        sys.exit(__doc__)
    bpfsight, trace, loop_json, label = sys.argv[1:]
    with open(loop_json) as f:
        loop = json.load(f)
    pid = loop["pid"]
    dump = subprocess.run([bpfsight, "dump", trace], capture_output=True, text=True, check=True)
    by_name = collections.Counter()
    by_kernel = collections.Counter()
    nested = 0
    for line in dump.stdout.splitlines():
        e = json.loads(line)
        if e["kind"] != "cuda_api" or e["pid"] != pid or not LAUNCH_RE.match(e["name"]):
            continue
        if "depth" in e["args"]:
            nested += 1
            continue
        by_name[e["name"]] += 1
        by_kernel[e["args"].get("kernel", "?")] += 1
    ours = sum(by_name.values())
    theirs = sum(loop["launch_calls"].values())
    gpu = sum(loop["gpu_kernels"].values())
    print(f"[{label}] {loop['steps']} steps, torch {loop['torch']}, CUDA {loop['cuda']}")
    print(f"  bpfsight launch calls (depth 0): {ours}  "
          f"{dict(sorted(by_name.items()))}; nested launch calls: {nested}")
    print(f"  torch.profiler launch calls:     {theirs}  "
          f"{dict(sorted(loop['launch_calls'].items()))}; GPU kernels: {gpu}")
    known = set(loop["gpu_kernels"])
    named = sum(n for k, n in by_kernel.items() if k in known)
    hexed = sum(n for k, n in by_kernel.items() if k.startswith("0x") or k == "?")
    other = {k: n for k, n in by_kernel.items() if k not in known and not k.startswith("0x")
             and k != "?"}
    print(f"  kernel names: {named} launches named as torch.profiler names a GPU kernel, "
          f"{hexed} unnamed (hex handle), {sum(other.values())} named otherwise")
    for k, n in sorted(other.items(), key=lambda kv: -kv[1])[:10]:
        print(f"    {n:6d}  {k[:160]}")
    if ours == theirs:
        print(f"  MATCH: {ours} == {theirs}")
        return 0
    print(f"  MISMATCH: bpfsight {ours} != torch.profiler {theirs}")
    return 1


if __name__ == "__main__":
    sys.exit(main())
