#!/usr/bin/env python3
"""A small convolutional network trained on the CPU as ML engineers train one, for the
torch,mem tests: convolutions, batch norm, AdamW, a DataLoader with two worker processes over
a small synthetic data set. Its last steps run under torch.profiler with profile_memory=True,
whose key_averages() the test compares with bpfsight's torch_op_sum.

    torch_mem_train.py --go FILE --out FILE [--warmup N] [--steps N] [--model M] [--flops]

  --warmup N   steps before waiting (default 3): the workers, AdamW's state, the allocator
               warm
  --go FILE    after the warmup print {"ready": PID, "workers": [...]} and wait until FILE
               exists; meanwhile print {"callbacks": B} whenever torch's own
               at::hasGlobalCallbacks() changes (bpfsight's RecordFunction callback came)
  --steps N    profiled steps (default 3): after FILE appears, one step unprofiled (its
               optimizer step's end is where `--capture-range=steps:N` starts), then N steps
               under torch.profiler.profile(activities=[CPU], profile_memory=True)
  --model M    cnn (the default: above) or transformer: a small language model (embedding,
               two nn.TransformerEncoderLayer with dropout 0.1, a linear head) trained on
               token sequences from a DataLoader with two workers, AdamW
  --flops      the profiler also with record_shapes, with_flops and with_stack, and the
               JSON gets "flops": [[key, count, flops], ...] (key_averages()),
               "shapes": [[key, input shapes as text, count], ...]
               (key_averages(group_by_input_shape=True)) and "stacks": [[key, [frames],
               count], ...] (key_averages(group_by_stack_n=5))
  --out FILE   where the profile goes, as JSON: {"key_averages": [[key, count,
               self_cpu_memory_usage, cpu_memory_usage], ...], and the profiler's own events
               at ns (its experimental_event_tree): "ops": [[name, tid, start_ns, end_ns], ...],
               "mem": [[tid, ns, bytes (frees < 0), device], ...]; "pid": P}; then print
               {"done": true} and exit

A step is one iteration: the next batch, zero_grad, forward, cross entropy, backward and
AdamW's step, whose Optimizer.step#AdamW.step scope ends it. A step's tensors live on in the
loop's variables until the next step replaces them: none is freed between the last optimizer
step (where bpfsight's capture ends) and the profiler's stop.
"""
import json
import os
import sys
import time

import torch
from torch.utils.data import DataLoader, TensorDataset

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch_train import torch_cpu  # noqa: E402 (at::hasGlobalCallbacks, through ctypes)


class TinyLM(torch.nn.Module):
    """A language model as small as a test needs: dropout in every layer (its div_ in
    div_ is what key_averages merges)."""

    def __init__(self, vocab=100, dim=32):
        super().__init__()
        self.embed = torch.nn.Embedding(vocab, dim)
        layer = torch.nn.TransformerEncoderLayer(dim, 4, 64, dropout=0.1, batch_first=True)
        self.encoder = torch.nn.TransformerEncoder(layer, 2)
        self.head = torch.nn.Linear(dim, vocab)

    def forward(self, x):
        return self.head(self.encoder(self.embed(x))).mean(dim=1)


def data_of(name):
    if name == "transformer":
        return TinyLM(), TensorDataset(torch.randint(0, 100, (256, 16)),
                                       torch.randint(0, 100, (256,)))
    return cnn(), TensorDataset(torch.randn(256, 3, 32, 32), torch.randint(0, 10, (256,)))


def cnn():
    return torch.nn.Sequential(
        torch.nn.Conv2d(3, 16, 3, padding=1), torch.nn.BatchNorm2d(16), torch.nn.ReLU(),
        torch.nn.MaxPool2d(2),
        torch.nn.Conv2d(16, 32, 3, padding=1), torch.nn.BatchNorm2d(32), torch.nn.ReLU(),
        torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(), torch.nn.Linear(32, 10))


def batches(loader):
    while True:
        yield from loader


def arg(args, name, default):
    return args[args.index(name) + 1] if name in args else default


def profile_of(prof):
    """key_averages' memory columns, and the events they come from at ns (the profiler rounds
    them to us before it attributes memory)."""
    rows = [[e.key, e.count, e.self_cpu_memory_usage, e.cpu_memory_usage]
            for e in prof.key_averages()]
    ops, mem = [], []
    stack = list(prof.profiler.kineto_results.experimental_event_tree())
    while stack:
        e = stack.pop()
        stack.extend(e.children)
        if e.tag == torch._C._profiler._EventType.TorchOp:
            ops.append([e.name, e.start_tid, e.start_time_ns, e.end_time_ns])
        elif e.tag == torch._C._profiler._EventType.Allocation:
            f = e.extra_fields
            mem.append([e.start_tid, e.start_time_ns, f.alloc_size, str(f.device)])
    return {"key_averages": rows, "ops": ops, "mem": mem}


def flops_of(prof):
    """key_averages' FLOPs, and its rows grouped by input shapes and by 5 stack entries."""
    return {"flops": [[e.key, e.count, e.flops] for e in prof.key_averages()],
            "shapes": [[e.key, str(e.input_shapes), e.count]
                       for e in prof.key_averages(group_by_input_shape=True)],
            "stacks": [[e.key, list(e.stack), e.count]
                       for e in prof.key_averages(group_by_stack_n=5)]}


def main():
    args = sys.argv[1:]
    go, out = arg(args, "--go", None), arg(args, "--out", None)
    if not go or not out:
        raise SystemExit(__doc__)
    warmup, steps = int(arg(args, "--warmup", 3)), int(arg(args, "--steps", 3))
    flops = "--flops" in args
    callbacks = torch_cpu()

    torch.manual_seed(0)
    model, data = data_of(arg(args, "--model", "cnn"))
    loader = DataLoader(data, batch_size=16, shuffle=True, num_workers=2,
                        persistent_workers=True)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    it = batches(loader)
    prof = None
    for k in range(warmup + 1 + steps):
        if k == warmup:
            print(json.dumps({"ready": os.getpid(),
                              "workers": sorted(w.pid for w in loader._iterator._workers)}),
                  flush=True)
            seen = None
            while not os.path.exists(go):
                if callbacks() != seen:
                    seen = callbacks()
                    print(json.dumps({"callbacks": seen}), flush=True)
                time.sleep(0.01)
        if k == warmup + 1:
            prof = torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU],
                                          profile_memory=True, record_shapes=flops,
                                          with_flops=flops, with_stack=flops)
            prof.start()
        x, y = next(it)
        opt.zero_grad()
        out_ = model(x)
        loss = torch.nn.functional.cross_entropy(out_, y)
        loss.backward()
        opt.step()
    prof.stop()
    result = profile_of(prof)
    if flops:
        result.update(flops_of(prof))
    result["pid"] = os.getpid()
    with open(out + ".tmp", "w") as f:
        json.dump(result, f)
    os.rename(out + ".tmp", out)
    print(json.dumps({"done": True}), flush=True)


if __name__ == "__main__":
    main()
