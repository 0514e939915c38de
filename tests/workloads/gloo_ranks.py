"""Two or more torch.distributed ranks on gloo, each a short job of its own (tests/e2e/
test_ranks.py: each rank recorded by its own recorder, then `bpfsight merge`), started as
torchrun starts workers: RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT in the environment.
Every rank makes STEPS (default 100) all_reduces, each after a step's compute of STEP_MS
(default 2) asleep; rank SLOW_RANK (default 1) sleeps SLOW_X (default 3) times as long, so the
others wait for it in each all_reduce (a straggler: its entries are late, the collectives'
ends are shared).

Prints "ready pid P rank R" once its process group is up, "done" after the last collective.
"""
import os
import time

import torch
import torch.distributed as dist

RANK = int(os.environ["RANK"])
STEPS = int(os.environ.get("STEPS", "100"))
STEP_S = float(os.environ.get("STEP_MS", "2")) / 1000
SLOW_RANK = int(os.environ.get("SLOW_RANK", "1"))
SLOW_X = float(os.environ.get("SLOW_X", "3"))


def main():
    torch.set_num_threads(1)
    dist.init_process_group("gloo")
    print(f"ready pid {os.getpid()} rank {RANK}", flush=True)
    x = torch.ones(256)
    step = STEP_S * (SLOW_X if RANK == SLOW_RANK else 1)
    for _ in range(STEPS):
        time.sleep(step)
        dist.all_reduce(x)  # REDUCE
        x.fill_(1)
    print("done", flush=True)


if __name__ == "__main__":
    main()
