"""NCCL collectives and the GPU work they launched (tests/gpu/run.sh).

  check_nccl.py BPFSIGHT TRACE JSON

TRACE: `bpfsight record -t cuda,nccl,gpu --capture-range=cudaProfilerApi` of
nccl_allreduce.py (JSON: its pid and counts). Each traced ncclAllReduce and ncclAllGather
call is counted, and each must have GPU work (a kernel, copy or memset) whose launch call
lies inside it, on its thread. Exit 0 when the counts are the workload's and every call has
its GPU work, 1 otherwise.
"""
import json
import subprocess
import sys


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    bpfsight, trace, want_json = sys.argv[1:]
    want = json.load(open(want_json))
    ev = [json.loads(l) for l in subprocess.run([bpfsight, "dump", trace], capture_output=True,
                                                text=True, check=True).stdout.splitlines()]
    ev = [e for e in ev if e["pid"] == want["pid"]]
    gpu = [e for e in ev if e["kind"] in ("gpu_kernel", "gpu_memcpy", "gpu_memset")
           and "call_ts" in e["args"]]
    ok = True
    for api, key in (("ncclAllReduce", "allreduces"), ("ncclAllGather", "allgathers")):
        calls = [(e["tid"], e["ts"], e["ts"] + e["dur"]) for e in ev
                 if e["kind"] == "nccl_api" and e["name"] == api]
        inside, names = 0, set()
        for tid, s, end in calls:
            work = [g for g in gpu if g["tid"] == tid and s <= g["args"]["call_ts"] <= end]
            inside += bool(work)
            names.update(f"{g['kind']}:{g['name'][:60]}" for g in work)
        print(f"  {api}: {len(calls)} calls (want {want[key]}), with GPU work launched inside "
              f"{inside}; GPU work {sorted(names)[:4]}")
        ok = ok and len(calls) == want[key] and inside == len(calls)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
