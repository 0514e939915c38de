"""The torch family on a GPU machine, for tests/gpu/run.sh: a GPT-2-style training loop's ops
and their kernels, bpfsight's against torch.profiler's on identical iterations.

  check_torch.py loop STEPS [--device cuda|cpu] [--profile FIRST:LAST --json OUT]
      train STEPS iterations of a small GPT-2-style model (token and position embeddings,
      two pre-LayerNorm blocks of causal self-attention and a GELU MLP, tied LM head,
      AdamW); with --profile, iterations FIRST..LAST (1-based, inclusive) run under
      torch.profiler (CPU and CUDA activity) and OUT gets its ops by name and, per (op,
      kernel), how many kernels Kineto linked to that op (each GPU kernel's
      linked_correlation_id is its launching op's correlation id), and key_averages()'s
      count and FLOPs per name (record_shapes and with_flops on).
  check_torch.py compare BPFSIGHT TRACE PROFILE_JSON
      TRACE: `record -t torch,cuda,gpu --capture-range=steps:(FIRST-2)+(LAST-FIRST+1)` of
      `loop STEPS` (the same iterations). Checks: the captured Optimizer.step scopes are
      LAST-FIRST+1; the ops by name equal torch.profiler's; every GPU kernel linked to its
      launching cuda call sits under a torch op of that thread, and the (op, kernel) pairs
      equal torch.profiler's; with --torch-shapes, torch_op_sum's count and FLOPs of every
      name equal key_averages()' (torch 2.x nests ops by ns, as bpfsight: its merge of an
      only child into its same-named parent is exactly bpfsight's). Exit 0 when all hold.

--device cpu runs the loop on the CPU (a dry run of this script where there is no GPU).
"""
import collections
import json
import re
import subprocess
import sys

OPT_STEP = "Optimizer.step#AdamW.step"


def model_and_data(device):
    import torch

    torch.manual_seed(0)
    vocab, ctx, dim, heads = 512, 64, 128, 4

    class Block(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.ln1, self.ln2 = torch.nn.LayerNorm(dim), torch.nn.LayerNorm(dim)
            self.qkv, self.proj = torch.nn.Linear(dim, 3 * dim), torch.nn.Linear(dim, dim)
            self.fc, self.out = torch.nn.Linear(dim, 4 * dim), torch.nn.Linear(4 * dim, dim)

        def forward(self, x):
            b, t, c = x.shape
            q, k, v = self.qkv(self.ln1(x)).split(dim, dim=2)
            q, k, v = (z.view(b, t, heads, c // heads).transpose(1, 2) for z in (q, k, v))
            att = (q @ k.transpose(-2, -1)) * (1.0 / (c // heads) ** 0.5)
            mask = torch.ones(t, t, device=x.device, dtype=torch.bool).tril()
            att = att.masked_fill(~mask, float("-inf")).softmax(dim=-1)
            y = (att @ v).transpose(1, 2).contiguous().view(b, t, c)
            x = x + self.proj(y)
            return x + self.out(torch.nn.functional.gelu(self.fc(self.ln2(x))))

    class GPT(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.tok, self.pos = torch.nn.Embedding(vocab, dim), torch.nn.Embedding(ctx, dim)
            self.blocks = torch.nn.Sequential(Block(), Block())
            self.ln = torch.nn.LayerNorm(dim)

        def forward(self, idx):
            x = self.tok(idx) + self.pos(torch.arange(idx.shape[1], device=idx.device))
            return self.ln(self.blocks(x)) @ self.tok.weight.t()

    model = GPT().to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    idx = torch.randint(0, vocab, (8, ctx), device=device)
    return model, opt, idx, vocab


def loop(args):
    import torch

    steps = int(args[0])
    device = args[args.index("--device") + 1] if "--device" in args else "cuda"
    first = last = None
    if "--profile" in args:
        first, last = (int(x) for x in args[args.index("--profile") + 1].split(":"))
        out = args[args.index("--json") + 1]
    model, opt, idx, vocab = model_and_data(device)
    prof = None
    for k in range(1, steps + 1):
        if k == first:
            acts = [torch.profiler.ProfilerActivity.CPU]
            if device == "cuda":
                acts.append(torch.profiler.ProfilerActivity.CUDA)
            prof = torch.profiler.profile(activities=acts, record_shapes=True,
                                          with_flops=True)
            prof.start()
        opt.zero_grad()
        logits = model(idx)
        loss = torch.nn.functional.cross_entropy(logits.view(-1, vocab), idx.view(-1))
        loss.backward()
        opt.step()
        if k == last:
            if device == "cuda":
                torch.cuda.synchronize()
            prof.stop()
            dump_profile(prof, out)
            prof = None
    print(f"trained {steps} steps on {device}", flush=True)


# Kineto's CPU-side events that are not torch ops: the CUDA runtime and driver calls it traced
# (cudaLaunchKernel, cuLaunchKernel...) and its own bookkeeping. bpfsight's torch family records
# RecordFunction's ops and scopes only (an H200's first run compared the two lists whole).
NOT_OPS = re.compile(r"^(cuda[A-Z]|cu[A-Z]|Activity Buffer Request$)")


def dump_profile(prof, out):
    from torch.autograd import DeviceType

    evs = prof.profiler.kineto_results.events()
    cpu = [e for e in evs if e.device_type() != DeviceType.CUDA and not NOT_OPS.match(e.name())]
    names = {e.correlation_id(): e.name() for e in cpu}
    cpu_names = set(names.values())
    ops = collections.Counter(e.name() for e in cpu)
    pairs = collections.Counter()
    for e in evs:
        # CUDA-side kernels (copies and memsets are named otherwise than bpfsight names
        # them: left out on both sides); a user annotation's GPU projection carries a
        # CPU-side name and is not one.
        if (e.device_type() != DeviceType.CUDA or e.name() in cpu_names or
                e.name().startswith(("Memcpy", "Memset"))):
            continue
        pairs[f"{names.get(e.linked_correlation_id(), '[no op]')}\t{e.name()}"] += 1
    averages = {e.key: [e.count, e.flops] for e in prof.key_averages() if e.key in cpu_names}
    with open(out, "w") as f:
        json.dump({"ops": ops, "pairs": pairs, "key_averages": averages}, f, indent=1)


def innermost(ops, tid, ts):
    """The innermost op of thread TID open at TS: the latest-starting one containing it."""
    best = None
    for o in ops.get(tid, ()):
        if o["ts"] <= ts <= o["ts"] + o["dur"] and (best is None or o["ts"] > best["ts"]):
            best = o
    return best


def compare(args):
    bpfsight, trace, prof_json = args
    with open(prof_json) as f:
        prof = json.load(f)
    out = subprocess.run([bpfsight, "dump", trace], capture_output=True, text=True, check=True)
    evs = [json.loads(l) for l in out.stdout.splitlines()]
    ops = [e for e in evs if e["kind"] == "torch_op"]
    ok = True
    steps = sum(o["name"] == OPT_STEP for o in ops)
    print(f"captured: {steps} {OPT_STEP} scopes, {len(ops)} ops")
    got = collections.Counter(o["name"] for o in ops)
    want = collections.Counter(prof["ops"])
    if got != want:
        ok = False
        print("ops by name differ (bpfsight - profiler):", dict(got - want),
              "(profiler - bpfsight):", dict(want - got))
    else:
        print(f"ops by name: equal to torch.profiler's ({sum(got.values())} ops, "
              f"{len(got)} names)")
    by_tid = collections.defaultdict(list)
    for o in ops:
        by_tid[o["tid"]].append(o)
    kernels = [e for e in evs if e["kind"] == "gpu_kernel" and e["args"].get("link") == "cuda"]
    pairs, orphans = collections.Counter(), 0
    for k in kernels:
        o = innermost(by_tid, k["tid"], k["args"]["call_ts"])
        orphans += o is None
        pairs[f"{o['name'] if o else '[no op]'}\t{k['name']}"] += 1
    print(f"GPU work linked to a cuda call: {len(kernels)}, under no op: {orphans}")
    if orphans or not kernels:
        ok = False
    want_pairs = collections.Counter(prof["pairs"])
    if pairs != want_pairs:
        ok = False
        print("(op, kernel) pairs differ (bpfsight - profiler):",
              dict(list((pairs - want_pairs).items())[:20]), "(profiler - bpfsight):",
              dict(list((want_pairs - pairs).items())[:20]))
    else:
        print(f"(op, kernel) pairs: equal to torch.profiler's ({sum(pairs.values())})")
    return 0 if compare_averages(bpfsight, trace, prof) and ok else 1


def compare_averages(bpfsight, trace, prof):
    """torch_op_sum's count and FLOPs per name against key_averages()'."""
    out = subprocess.run([bpfsight, "stats", trace, "-r", "torch_op_sum", "--format", "json"],
                         capture_output=True, text=True, check=True)
    rows = json.loads(out.stdout)["reports"]["torch_op_sum"]
    mine = collections.defaultdict(lambda: [0, 0])
    for r in rows:
        mine[r["name"]][0] += r["count"]
        mine[r["name"]][1] += r.get("flops") or 0
    theirs = prof["key_averages"]
    counts = {k: v[0] for k, v in mine.items() if k in theirs}
    want = {k: v[0] for k, v in theirs.items()}
    flops = {k: v[1] for k, v in mine.items() if v[1]}
    want_flops = {k: v[1] for k, v in theirs.items() if v[1]}
    ok = counts == want and flops == want_flops and want_flops
    print("key_averages counts:", "equal" if counts == want else
          f"differ: {[(k, counts.get(k), want.get(k)) for k in want if counts.get(k) != want[k]][:20]}")
    print("key_averages FLOPs:", f"equal ({sum(flops.values()) / 1e9:.3f} GFLOP)"
          if flops == want_flops else f"differ: bpfsight {flops}, torch.profiler {want_flops}")
    return ok


def main():
    if len(sys.argv) < 3 or sys.argv[1] not in ("loop", "compare"):
        sys.exit(__doc__)
    if sys.argv[1] == "loop":
        loop(sys.argv[2:])
        return 0
    return compare(sys.argv[2:])


if __name__ == "__main__":
    sys.exit(main())
