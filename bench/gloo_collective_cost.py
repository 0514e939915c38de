#!/usr/bin/env python3
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""One gloo rank of bench/RESULTS.md's "gloo collectives" figure: RANK of 2 (Debian's torch),
N all_reduces of one float a phase, PHASES phases (default six), each started by a line on
stdin, its microseconds per all_reduce printed. bench/gloo_collective_drive.py runs two and
records the phases it is told to with `record -t nccl -p` on both ranks.

    python3 bench/gloo_collective_cost.py RANK N [PHASES]
"""
import os, sys, time, torch, torch.distributed as dist
rank = int(sys.argv[1]); n = int(sys.argv[2]); phases = int(sys.argv[3]) if sys.argv[3:] else 6
os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT="29533")
dist.init_process_group("gloo", rank=rank, world_size=2)
t = torch.ones(1)
print(os.getpid(), flush=True)
sys.stdin.readline()
for phase in range(phases):
    dist.barrier(); t0 = time.perf_counter()
    for _ in range(n): dist.all_reduce(t)
    print(f"{(time.perf_counter()-t0)/n*1e6:.1f}", flush=True)
    if rank == 0: time.sleep(0.1)
    dist.barrier()
    sys.stdin.readline()
