"""A torch.distributed job on gloo that hangs (tests/e2e/test_hang_arrival.py), its ranks started
as torchrun starts workers: RANK, LOCAL_RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT in the
environment. Every rank makes one all_reduce after another (a step's collective); rank
HANG_RANK (default 2) does not make collective HANG_AT (default 30) but blocks in
load_next_shard(), reading a pipe nobody writes; the others wait in all_reduce. With
HANG_STEP_MS, every rank sleeps that long before each collective (a step's compute).

Prints "ready pid P rank R" once its process group is up, then waits for the file HANG_GO
(when set); "stall R NS" (CLOCK_MONOTONIC) right before rank HANG_RANK blocks. The lines the
tests look for are marked (SHARD, REDUCE).
"""
import os
import time

import torch
import torch.distributed as dist

RANK = int(os.environ["RANK"])
HANG_AT = int(os.environ.get("HANG_AT", "30"))
HANG_RANK = int(os.environ.get("HANG_RANK", "2"))
STEP_S = float(os.environ.get("HANG_STEP_MS", "0")) / 1000


def load_next_shard(fd):
    return os.read(fd, 1)  # SHARD


def main():
    dist.init_process_group("gloo")
    print(f"ready pid {os.getpid()} rank {RANK}", flush=True)
    go = os.environ.get("HANG_GO")
    while go and not os.path.exists(go):
        time.sleep(0.01)
    x = torch.ones(64)
    r, _ = os.pipe()
    for k in range(1_000_000):
        if STEP_S:
            time.sleep(STEP_S)
        if k == HANG_AT and RANK == HANG_RANK:
            print(f"stall {RANK} {time.clock_gettime_ns(time.CLOCK_MONOTONIC)}", flush=True)
            load_next_shard(r)
        dist.all_reduce(x)  # REDUCE
        x.fill_(1)


if __name__ == "__main__":
    main()
