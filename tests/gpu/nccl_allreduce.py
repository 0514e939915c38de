"""Single-GPU NCCL collectives through torch.distributed (world size 1), for tests/gpu/run.sh.

  nccl_allreduce.py COUNT JSON_OUT

Warms up (communicator creation happens at the first collective), then runs COUNT
all-reduces (ReduceOp.AVG) and COUNT all-gathers on a 1M-float CUDA tensor inside
cudaProfilerStart/Stop and writes {"pid", "allreduces", "allgathers", "torch", "nccl"} to
JSON_OUT.

Why these: with one rank NCCL puts GPU work on the stream only when there is something to
do. An in-place SUM all-reduce of one rank is a no-op (no kernel, no copy: the first GPU run
saw 50 ncclAllReduce calls and no GPU work in them); AVG scales by 1/nranks (a kernel), and an
all-gather into another buffer copies.
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
    y = torch.empty_like(x)

    def collectives():
        dist.all_reduce(x, op=dist.ReduceOp.AVG)
        dist.all_gather_into_tensor(y, x)

    for _ in range(3):  # warm-up: ncclCommInitRank and the first kernels
        collectives()
    torch.cuda.synchronize()
    torch.cuda.profiler.start()
    for _ in range(count):
        collectives()
    torch.cuda.synchronize()
    torch.cuda.profiler.stop()
    nccl = ".".join(map(str, torch.cuda.nccl.version()))
    with open(out, "w") as f:
        json.dump({"pid": os.getpid(), "allreduces": count, "allgathers": count,
                   "torch": torch.__version__, "nccl": nccl}, f)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
