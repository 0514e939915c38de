"""The torch family's concrete inputs (--torch-shapes): the values of each op's scalar inputs,
as torch 2.x's Kineto trace writes them under "Concrete Inputs" (what FLOPs need: conv2d's
stride, padding, dilation and groups). On Debian's torch 1.13 here (whose profiler writes no
concrete inputs) the expected text is written out; on 2.x (make check-torch-versions runs
these tests in a root of that torch: BPFSIGHT_TORCH_PYTHON) every op of the profiled round
equals torch.profiler's own event, run in the same process: name, input shapes and concrete
inputs, one for one.
"""
import collections
import json
import os

from helpers import BPFSIGHT, check, dump, eq, record, run, tmpdir
from test_torch import PY, lines, need_torch

# For tests/run_tests.py: about how long these tests take on CI's machine (its order).
SECONDS = 20
SPLIT = True

WORKLOAD = os.path.join(os.path.dirname(__file__), "..", "workloads", "torch_concrete.py")

# The round's top-level ops (tests/workloads/torch_concrete.py), as torch 2.6 writes them.
ROUND = [
    ("aten::conv2d", ["", "", "", "[2, 2]", "[3, 3]", "[1, 1]", "1"]),
    ("aten::conv2d", ["", "", "", "[1, 1]", "[1, 1]", "[2, 2]", "2"]),
    ("aten::mul", ["", ""]),  # a Python float becomes a wrapped 0-dim tensor: no value
    ("aten::mul", ["", ""]),
    ("aten::add", ["", "", "3"]),
    ("aten::dropout", ["", "0.25", "False"]),
    ("aten::sum", ["", "[0, 1]", "True", ""]),
    ("aten::leaky_relu", ["", "0.125"]),
    ("aten::clamp_min", ["", "-1.5"]),
    ("aten::clamp", ["", "-inf", "1e+20"]),  # past int64: %.17g
    ("aten::nan_to_num", ["", "2.5000000000000171e-310", "1000000000000000000.", ""]),
]


def test_torch_concrete_inputs_equal_torch_profiler():
    """One round of ops with known non-tensor inputs, recorded with --torch-shapes while
    torch.profiler (record_shapes) profiles the same round in the same process: the round's
    top-level ops carry exactly the concrete inputs written above (conv2d's stride 2, padding
    3, dilation 1, groups 1; a grouped one; doubles printed each way torch prints them, a
    bool, an int list; "" for tensors and None); where torch writes concrete inputs (2.x), every op of the round, nested ones
    included, has torch's name, shapes and concrete inputs, as many times."""
    need_torch()
    p, out = record([PY, WORKLOAD, "--profile"], "-t", "torch", "--torch-shapes")
    eq(p.returncode, 0, f"record ({p.stderr[-600:]})")
    check("RecordFunction callback registered, with input shapes" in p.stderr, p.stderr[-600:])
    res = lines(p.stdout)[-1]
    # The round's CLOCK_MONOTONIC bracket, 1 us wider: the shim's clock is the TSC mapped
    # onto it (within a microsecond); the warm-up round ended 0.3 s before.
    t0, t1 = res["t0"] - 1000, res["t1"] + 1000
    ops = [e for e in dump(out) if e["kind"] == "torch_op" and t0 <= e["ts"] <= t1]
    top = [(o["name"], json.loads(o["args"]["concrete"])) for o in sorted(ops, key=lambda o: o["ts"])
           if o["args"]["depth"] == min(x["args"]["depth"] for x in ops)]
    eq(top, ROUND, "the round's ops and their concrete inputs")
    # The Chrome export writes them as Kineto does, a JSON list under "Concrete Inputs".
    path = os.path.join(tmpdir(), "t.json")
    run([BPFSIGHT, "export", out, "--format", "chrome", "-o", path], check=True)
    with open(path) as f:
        convs = [e["args"].get("Concrete Inputs") for e in json.load(f)["traceEvents"]
                 if e.get("name") == "aten::conv2d" and t0 <= e["ts"] * 1000 <= t1]
    eq(convs, [c for n, c in ROUND if n == "aten::conv2d"], "conv2d's Concrete Inputs in Chrome JSON")

    theirs = res["events"]
    if all(c is None for _, _, c in theirs):
        return  # 1.13: its profiler writes no concrete inputs (the values above are its)
    mine = collections.Counter((o["name"], o["args"].get("shapes", "[]"), o["args"].get("concrete"))
                               for o in ops)
    theirs = collections.Counter((n, json.dumps(s), json.dumps(c)) for n, s, c in theirs)
    eq(sum(mine.values()), sum(theirs.values()), "ops of the round")
    eq(mine - theirs, collections.Counter(), "ops torch.profiler did not see so")
    eq(theirs - mine, collections.Counter(), "ops bpfsight did not see so")
