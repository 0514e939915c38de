"""Single-GPU NCCL all-reduces through torch.distributed (world size 1), for tests/gpu/run.sh.

  nccl_allreduce.py COUNT JSON_OUT

Warms up (communicator creation happens at the first collective), then runs COUNT
all-reduces on a 1M-float CUDA tensor inside cudaProfilerStart/Stop and writes
{"pid", "allreduces", "torch", "nccl"} to JSON_OUT.
"""
import json
import os
import sys

import torch
import torch.distributed as dist


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    count, out = int(sys.argv[1]), sys.argv[2]
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29517")
    dist.init_process_group("nccl", rank=0, world_size=1)
    x = torch.ones(1 << 20, device="cuda")
    for _ in range(3):  # warm-up: ncclCommInitRank and the first kernels
        dist.all_reduce(x)
    torch.cuda.synchronize()
    torch.cuda.profiler.start()
    for _ in range(count):
        dist.all_reduce(x)
    torch.cuda.synchronize()
    torch.cuda.profiler.stop()
    nccl = ".".join(map(str, torch.cuda.nccl.version()))
    with open(out, "w") as f:
        json.dump({"pid": os.getpid(), "allreduces": count, "torch": torch.__version__,
                   "nccl": nccl}, f)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
