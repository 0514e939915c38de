"""torch_op_sum against torch.profiler's key_averages() on two real models trained as ML
engineers train them (Debian's CPU PyTorch 1.13, /usr/bin/python3): a convolutional network
with batch norm and AdamW, and a small transformer language model with dropout, each fed by
a DataLoader with two worker processes. The job runs unchanged until bpfsight attaches
(record -p --inject --torch-shapes --capture-range=steps:3); the job itself profiles the same
3 steps with torch.profiler(record_shapes, with_flops, with_stack).

Counts: key_averages() merges an op into a same-named parent whose only child it is
(dropout's div_ in div_); torch 1.13 decides that nesting on times cut to whole us (start
and duration apart), torch 2.x on ns, as bpfsight does. So every name's count equals the
profiler's own rule applied to its own events at ns (test_mem_torch.profiler_rule), and
equals key_averages() itself wherever its rounding changed nothing. FLOPs are per op, from
its shapes (and conv2d's stride, padding, dilation and groups): every name's equal
key_averages' exactly.
"""
import collections
import json
import os
import re

from helpers import BPFSIGHT, check, eq, run
from test_mem_torch import capture_steps, profiler_rule
from test_torch import need_torch

# For tests/run_tests.py: about how long these tests take on CI's machine (its order).
SECONDS = 70


def capture(model, *opts):
    """(pid, the profiler's JSON, the trace) of 3 steps of MODEL, both ways."""
    return capture_steps(["--model", model, "--flops"],
                         ["-t", "torch", "--torch-shapes", *opts])


def op_sum(trace, pid, *opts):
    p = run([BPFSIGHT, "stats", trace, "--pid", str(pid), "-r", "torch_op_sum", "--format",
             "json", *opts], check=True)
    rows = json.loads(p.stdout)["reports"]["torch_op_sum"]
    check(rows and all(r["pid"] == pid for r in rows), "rows of the job's process only")
    return rows


def by(rows, *keys):
    """{key: [count, flops]} summed over the rows (key_averages' key has no scope)."""
    out = collections.defaultdict(lambda: [0, 0])
    for r in rows:
        k = tuple(r[c] for c in keys) if len(keys) > 1 else r[keys[0]]
        out[k][0] += r["count"]
        out[k][1] += r.get("flops", 0)
    return dict(out)


def check_model(model, flop_ops, *opts):
    need_torch()
    pid, prof, trace = capture(model, *opts)
    ka = {k: c for k, c, _ in prof["flops"] if k != "[memory]"}
    at_ns = {k: v[0] for k, v in profiler_rule(prof["ops"], [], us=False, merge=True).items()}
    at_us = {k: v[0] for k, v in profiler_rule(prof["ops"], [], us=True, merge=True).items()}
    eq(at_us, ka, "key_averages' counts from the profiler's own events by its rule, at us")

    rows = op_sum(trace, pid)
    mine = by(rows, "name")
    eq({k: v[0] for k, v in mine.items()}, at_ns, "every name's count: the rule at ns")
    unmoved = [k for k in ka if at_ns.get(k) == ka[k]]
    check(len(unmoved) > 0.9 * len(ka), f"names the profiler's rounding left alone: {unmoved}")
    for k in unmoved:
        eq(mine[k][0], ka[k], f"{k}: as key_averages counts it")

    # FLOPs: torch's formulas on every op, per name, exactly.
    theirs = {k: f for k, _, f in prof["flops"] if f}
    eq({k: v[1] for k, v in mine.items() if v[1]}, theirs, "FLOPs of every name")
    check(set(flop_ops) <= set(theirs), f"{flop_ops} have FLOPs: {theirs}")

    # group_by_input_shape: a row per (name, shapes), the same counts where nothing moved.
    shaped = by(op_sum(trace, pid, "--group-by", "shape"), "name", "input_shapes")
    ka_shapes = {(k, s): c for k, s, c in prof["shapes"] if k in unmoved}
    eq({k: v[0] for k, v in shaped.items() if k[0] in unmoved}, ka_shapes,
       "rows by name and input shapes")
    check(any(k == "aten::addmm" for k, _ in ka_shapes), "addmm by its shapes")
    return pid, prof, trace, rows, unmoved


ENTRY = re.compile(r"^(.*)\((\d+)\): (.*)$")


def innermost(frames):
    """(file's name, function) of the first Python frame of FRAMES ("FILE(LINE): FUNC" each;
    torch's C calls "<built-in ...>" and "nn.Module: X" entries are not Python frames). The
    line is left out: torch gives a function the line its frame was at when its tracer saw
    it come (the def line), bpfsight the line running the op; and the function's last name
    (bpfsight's is the qualified name on 3.11+)."""
    for f in frames:
        m = ENTRY.match(f.strip())
        if m and not f.startswith("<"):
            return os.path.basename(m.group(1)), m.group(3).rsplit(".", 1)[-1]
    return None


def test_torch_cnn_counts_and_flops_equal_key_averages():
    """The CNN: conv2d's FLOPs (stride, padding from its concrete inputs) among them."""
    check_model("cnn", ["aten::conv2d", "aten::addmm", "aten::mm"])


def test_torch_transformer_counts_and_flops_equal_key_averages():
    """The transformer: dropout's div_ in div_ counted once, as key_averages counts it."""
    pid, prof, trace, rows, unmoved = check_model(
        "transformer", ["aten::mm", "aten::bmm", "aten::addmm"], "--stacks=torch")
    events = {r["name"]: r["count"] for r in rows}
    check(events.get("aten::dropout"), "dropout ran")
    p = run([BPFSIGHT, "stats", trace, "-r", "torch_op_sum"], check=True)
    check("counted in it, as key_averages() merges them" in p.stdout, p.stdout[-800:])

    # group_by_stack_n=5 (with_stack): each op's calls by the Python function that made them
    # (its innermost Python frame) are torch.profiler's, backward ops by their forward op's.
    theirs = collections.Counter()
    for k, stack, c in prof["stacks"]:
        if k in unmoved:
            theirs[(k, innermost(stack))] += c
    mine = collections.Counter()
    for r in op_sum(trace, pid, "--group-by", "stack:5"):
        if r["name"] in unmoved:
            mine[(r["name"], innermost(r["stack"].split("; ") if r["stack"] else []))] += \
                r["count"]
    eq(mine, theirs, "calls by op and the Python function that made them")
    check(any(f and f[1] == "forward" for _, f in theirs), f"forward()s among them: {theirs}")
