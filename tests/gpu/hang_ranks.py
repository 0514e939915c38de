"""A job that hangs on a GPU, for tests/gpu/run.sh (--trigger hang, docs/NCCL.md "A hung job").

  hang_ranks.py launch OUT_JSON [PORT]
                                    start the two ranks (this is what bpfsight launches;
                                    PORT: the rendezvous's, default 29531)
  hang_ranks.py rank                one rank (RANK, WORLD_SIZE in the environment)
  hang_ranks.py check BPFSIGHT DUMP OUT_JSON
                                    the dump's verdict names the collective rank 0 waits in
                                    on the GPU and rank 1, which never entered it, in idle()
  hang_ranks.py check-late BPFSIGHT TRACE OUT_JSON STACKS_TXT
                                    the same job hung before bpfsight came: TRACE is
                                    `record -p RANK0,RANK1 -d 3s` started after the hang,
                                    STACKS_TXT `bpfsight stacks --all`'s output then. The
                                    verdict's first line says hang, names rank 0 waiting at its
                                    line (torch.cuda.synchronize after the all_reduce: NCCL's
                                    host call returned long ago) and rank 1 in idle() at its
                                    line; the first 25 lines of stacks --all name both lines

Two processes on one GPU with NCCL (torch.distributed): NCCL refuses two ranks of one host on
one GPU ("Duplicate GPU detected"), so each rank gets a host id of its own (NCCL_HOSTID) and
they talk over sockets on the loopback, as two hosts would. Each makes WARMUP all-reduces,
synchronizing after each; then rank 1 skips all-reduce number SKIP and sleeps in idle(),
while rank 0 makes it (its kernel launched, waiting on the GPU for rank 1's) and blocks in
torch.cuda.synchronize(): the kernel launched and not finished is the waiters' collective.
"""
import json
import os
import subprocess
import sys
import time

WARMUP = 5


def idle():
    time.sleep(3600)  # IDLE


def rank():
    import torch
    import torch.distributed as dist

    r = int(os.environ["RANK"])
    dist.init_process_group("nccl", rank=r, world_size=2)
    torch.cuda.set_device(0)
    x = torch.ones(1 << 20, device="cuda")
    for _ in range(WARMUP):
        dist.all_reduce(x)
        torch.cuda.synchronize()
    print(f"ready pid {os.getpid()} rank {r}", flush=True)
    if r == 1:
        print(f"stall {time.monotonic_ns()}", flush=True)
        idle()
    dist.all_reduce(x)
    torch.cuda.synchronize()  # never returns: rank 1 never came  # WAIT
    print("rank 0 was not held", flush=True)


def launch(out, port="29531"):
    env = dict(os.environ, WORLD_SIZE="2", MASTER_ADDR="127.0.0.1", MASTER_PORT=port,
               NCCL_IB_DISABLE="1", NCCL_P2P_DISABLE="1", NCCL_SHM_DISABLE="1",
               NCCL_SOCKET_IFNAME="lo")
    kids = [subprocess.Popen([sys.executable, __file__, "rank"],
                             env=dict(env, RANK=str(r), LOCAL_RANK="0", NCCL_HOSTID=f"host{r}"))
            for r in range(2)]
    with open(out, "w") as f:
        json.dump({"pids": [k.pid for k in kids], "warmup": WARMUP}, f)
    for k in kids:
        k.wait()


def line_of(tag):
    with open(__file__) as f:
        return next(i + 1 for i, l in enumerate(f) if l.rstrip().endswith(f"# {tag}"))


def check_late(bpfsight, trace, out, stacks_txt):
    """A job hung before the recording: no collective was entered while bpfsight watched."""
    with open(out) as f:
        job = json.load(f)
    stats = subprocess.run([bpfsight, "stats", trace, "--wide"], capture_output=True, text=True)
    lines = stats.stdout.split("\n")
    print("\n".join(lines[:6]))
    head = lines[0]
    wait, idle = f"hang_ranks.py:{line_of('WAIT')}", f"hang_ranks.py:{line_of('IDLE')}"
    want = [("a hang", "hang" in head.lower()),
            ("rank 0 waiting at its line", "rank 0" in head and wait in head),
            ("rank 1 in idle() at its line", "rank 1" in head and "idle" in head and idle in head)]
    with open(stacks_txt) as f:
        first = "".join(f.readlines()[:25])
    want += [("stacks --all, first 25 lines: rank 0's line", wait in first),
             ("stacks --all, first 25 lines: rank 1's idle()", idle in first)]
    for what, held in want:
        print(f"  {'ok' if held else 'MISSING'}: {what}")
    print("pids", job["pids"])
    return 0 if all(h for _, h in want) else 1


def check(bpfsight, dump, out):
    with open(out) as f:
        job = json.load(f)
    stats = subprocess.run([bpfsight, "stats", dump, "--wide"], capture_output=True, text=True)
    head = stats.stdout.split("\n")[0]
    print(head)
    ok = head.startswith("Verdict: hang: rank 0 waits in ncclAllReduce #")
    ok &= "on the GPU" in head
    ok &= f"rank 1 never entered it: it is in `idle` (hang_ranks.py:{line_of('IDLE')})" in head
    rows = json.loads(subprocess.run([bpfsight, "stats", dump, "-r", "nccl_hang", "--format",
                                      "json"], capture_output=True, text=True).stdout)
    by_rank = {r["rank"]: r for r in rows["reports"]["nccl_hang"]}
    # Rank 0 entered one collective more than rank 1 (torch's own, if any, counted alike).
    ok &= by_rank[0]["entered"] == by_rank[1]["entered"] + 1
    ok &= by_rank[0]["in_it"] == "no"  # its host call returned: the GPU waits
    print(json.dumps(by_rank, indent=1))
    print("pids", job["pids"])
    return 0 if ok else 1


if __name__ == "__main__":
    if sys.argv[1:2] == ["rank"]:
        rank()
    elif sys.argv[1:2] == ["launch"] and len(sys.argv) in (3, 4):
        launch(*sys.argv[2:])
    elif sys.argv[1:2] == ["check-late"] and len(sys.argv) == 6:
        sys.exit(check_late(*sys.argv[2:]))
    elif sys.argv[1:2] == ["check"] and len(sys.argv) == 5:
        sys.exit(check(*sys.argv[2:]))
    else:
        sys.exit(__doc__)
