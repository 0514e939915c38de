"""torch_op_sum's rules one at a time, on hand-made records: key_averages' merge of an only
child into its same-named parent, rows per process, FLOPs by torch's formulas (torch 1.13's
own with_flops on the same shapes is the reference), --group-by shape and stack:N (a backward
op grouped under its forward op's stack), --sort, and the errors of both options."""
import json
import subprocess

from helpers import BPFSIGHT, check, dump, eq, run, stats, tmpdir
from synth import Trace
from test_torch import need_torch

SECONDS = 8

# (name, shapes, concrete inputs) of ops torch counts FLOPs for, and one it does not
FLOP_OPS = [
    ("aten::conv2d", "[[2, 3, 8, 8], [4, 3, 3, 3], [4], [], [], [], []]",
     '["", "", "", "[2, 2]", "[1, 1]", "[1, 1]", "1"]'),
    ("aten::conv2d", "[[1, 6, 9, 9], [6, 2, 3, 3], [], [], [], [], []]",
     '["", "", "", "[1, 1]", "[0, 0]", "[2, 2]", "3"]'),
    ("aten::mm", "[[4, 8], [8, 16]]", None),
    ("aten::addmm", "[[16], [4, 8], [8, 16], [], []]", None),
    ("aten::bmm", "[[2, 4, 8], [2, 8, 16]]", None),
    ("aten::baddbmm", "[[2, 4, 16], [2, 4, 8], [2, 8, 16], [], []]", None),
    ("aten::mul", "[[3, 5], [3, 5]]", None),
    ("aten::add", "[[3, 5], []]", None),
    ("aten::relu", "[[3, 5]]", None),
]

# The same ops run under torch.profiler(with_flops=True): {name: FLOPs summed}.
TORCH_FLOPS = r"""
import json, torch, torch.nn.functional as F
r = torch.randn
with torch.profiler.profile(with_flops=True, record_shapes=True) as p:
    F.conv2d(r(2, 3, 8, 8), r(4, 3, 3, 3), r(4), stride=2, padding=1)
    F.conv2d(r(1, 6, 9, 9), r(6, 2, 3, 3), None, 1, 0, 2, 3)
    torch.mm(r(4, 8), r(8, 16)); torch.addmm(r(16), r(4, 8), r(8, 16))
    torch.bmm(r(2, 4, 8), r(2, 8, 16)); torch.baddbmm(r(2, 4, 16), r(2, 4, 8), r(2, 8, 16))
    torch.mul(r(3, 5), r(3, 5)); torch.add(r(3, 5), 1.0); torch.relu(r(3, 5))
print(json.dumps({e.key: e.flops for e in p.key_averages()}))
"""


def test_torch_op_sum_flops_equal_torch_profilers():
    """Every op's FLOPs as torch 1.13's with_flops counts them for the same shapes, strides,
    paddings, dilations and groups; the ops it counts none for have none."""
    need_torch()
    theirs = json.loads(subprocess.run(["/usr/bin/python3", "-c", TORCH_FLOPS], check=True,
                                       capture_output=True, text=True).stdout)
    t = Trace("proc,torch")
    t.process(10, "train")
    for i, (name, shapes, concrete) in enumerate(FLOP_OPS):
        t.torch_op(10, 10, 1000 + 100 * i, 50, name, shapes=shapes, concrete=concrete)
    rows = stats(t.write(tmpdir()), "torch_op_sum")["torch_op_sum"]
    mine = {r["name"]: r["flops"] for r in rows}
    for name in mine:
        eq(mine[name], theirs[name], f"{name}'s FLOPs")
    check(theirs["aten::conv2d"] > 0 and theirs["aten::relu"] == 0, f"torch's: {theirs}")
    eq({r["name"]: r["gflops_per_s"] for r in rows}["aten::mm"], round(theirs["aten::mm"] / 50, 3),
       "FLOP/ns over the op's time: GFLOP/s")


def test_torch_op_sum_merges_only_children_of_the_same_name():
    """An op that is its same-named parent's only child (a chain of them too) is no row: its
    time is the parent's self time's, its children the parent's; two same-named children of
    one parent, or an only child of another name, stay. Rows are per process."""
    t = Trace("proc,torch")
    t.process(10, "train")
    t.process(20, "worker")
    t.torch_op(10, 10, 1000, 1000, "aten::div_")             # kept
    t.torch_op(10, 10, 1100, 800, "aten::div_", depth=1)     # only child, same name: merged
    t.torch_op(10, 10, 1200, 600, "aten::div_", depth=2)     # ... and its: merged too
    t.torch_op(10, 10, 1300, 100, "aten::copy_", depth=3)    # the first div_'s child now
    t.torch_op(10, 10, 3000, 1000, "aten::add")              # two children of its name: kept
    t.torch_op(10, 10, 3100, 100, "aten::add", depth=1)
    t.torch_op(10, 10, 3300, 100, "aten::add", depth=1)
    t.torch_op(10, 10, 5000, 1000, "aten::mul")              # only child, another name
    t.torch_op(10, 10, 5100, 100, "aten::empty", depth=1)
    t.torch_op(20, 20, 1000, 500, "aten::div_")              # another process's
    path = t.write(tmpdir())
    rows = {(r["name"], r["pid"]): r for r in stats(path, "torch_op_sum")["torch_op_sum"]}
    got = {k: (r["count"], r["cpu_total_ns"], r["cpu_self_ns"]) for k, r in rows.items()}
    eq(got, {("aten::div_", 10): (1, 1000, 900), ("aten::copy_", 10): (1, 100, 100),
             ("aten::add", 10): (3, 1200, 1000), ("aten::mul", 10): (1, 1000, 900),
             ("aten::empty", 10): (1, 100, 100), ("aten::div_", 20): (1, 500, 500)},
       "rows: (name, pid) -> calls, CPU total, self")
    p = run([BPFSIGHT, "stats", path, "-r", "torch_op_sum"], check=True)
    check("2 ops that are the only child of an op of the same name" in p.stdout, p.stdout)
    eq(sum(1 for e in dump(path) if e["kind"] == "torch_op"), 10, "dump keeps every record")


def test_torch_op_sum_group_by_shape_and_stack():
    """--group-by shape: a row per (name, shapes); --group-by stack:2: per first 2 Python
    frames (native frames and autograd's backward frames left out, as torch does), a
    backward op and the ops inside it under their forward op's stack; --sort by a column."""
    t = Trace("proc,torch")
    t.process(10, "train")
    fwd = [("py", "forward", "/m/model.py", 12), ("native", "PyObject_Call", "libpython", 16),
           ("py", "step", "/m/train.py", 40), ("py", "<module>", "/m/train.py", 50)]
    other = [("py", "forward", "/m/model.py", 14), ("py", "step", "/m/train.py", 40)]
    bwd = [("py", "backward", "/usr/lib/torch/autograd/__init__.py", 197),
           ("py", "step", "/m/train.py", 41)]
    t.stack(1, fwd)
    t.stack(2, other)
    t.stack(3, bwd)
    t.stack_ref(10, 10, 1000, 0x90, 1)
    t.torch_op(10, 10, 1000, 100, "aten::addmm", seq=7, torch_tid=1, shapes="[[4], [2, 8], [8, 4]]")
    t.stack_ref(10, 10, 2000, 0x90, 2)
    t.torch_op(10, 10, 2000, 100, "aten::addmm", seq=8, torch_tid=1, shapes="[[4], [3, 8], [8, 4]]")
    t.stack_ref(10, 10, 3000, 0x90, 1)
    t.torch_op(10, 10, 3000, 300, "aten::addmm", seq=9, torch_tid=1, shapes="[[4], [2, 8], [8, 4]]")
    t.stack_ref(10, 10, 5000, 0x90, 3)  # the backward op's own stack: replaced by seq 7's
    t.torch_op(10, 10, 5000, 500, "AddmmBackward0", scope="backward_function", seq=7,
               fwd_tid=1, torch_tid=1)
    t.torch_op(10, 10, 5100, 100, "aten::mm", depth=1, torch_tid=1)  # inside it: the same
    path = t.write(tmpdir())

    def rows(*opts):
        p = run([BPFSIGHT, "stats", path, "-r", "torch_op_sum", "--format", "json", *opts],
                check=True)
        return json.loads(p.stdout)["reports"]["torch_op_sum"]
    shaped = {(r["name"], r["input_shapes"]): r["count"] for r in rows("--group-by", "shape")}
    eq(shaped, {("aten::addmm", "[[4], [2, 8], [8, 4]]"): 2,
                ("aten::addmm", "[[4], [3, 8], [8, 4]]"): 1,
                ("AddmmBackward0", "[]"): 1, ("aten::mm", "[]"): 1}, "rows by input shapes")
    stacked = {(r["name"], r["stack"]): r["count"] for r in rows("--group-by", "stack:2")}
    a, b = "/m/model.py(12): forward; /m/train.py(40): step", \
        "/m/model.py(14): forward; /m/train.py(40): step"
    eq(stacked, {("aten::addmm", a): 2, ("aten::addmm", b): 1, ("AddmmBackward0", a): 1,
                 ("aten::mm", a): 1}, "rows by 2 Python frames")
    eq([r["cpu_total_ns"] for r in rows("--sort", "cpu_total_ns")], [500, 500, 100],
       "--sort cpu_total_ns: descending")
    eq([r["name"] for r in rows("--sort", "name")], ["AddmmBackward0", "aten::addmm", "aten::mm"],
       "--sort name: ascending")
    # The column as the table titles it, or its key without the unit: the same order.
    for name in ("cpu_total", "CPU Total (ns)", "cpu total", "CPU_TOTAL"):
        eq([r["cpu_total_ns"] for r in rows("--sort", name)], [500, 500, 100],
           f"--sort {name!r}: the CPU Total (ns) column")


def test_stats_group_by_and_sort_errors():
    """A key no report asked takes, a bad N, a column no report has: exit 1, said why."""
    t = Trace("proc,torch")
    t.process(10, "train")
    t.torch_op(10, 10, 1000, 100, "aten::mm")
    path = t.write(tmpdir())
    for opts, words in ((["-r", "torch_step_sum", "--group-by", "shape"],
                         "no report asked takes it (torch_op_sum (shape, stack:N)"),
                        (["--group-by", "stack"], "no report takes it"),
                        (["--group-by", "stack:0"], "a number of frames, 1 to 64"),
                        (["--group-by", "colour"], "no report takes it"),
                        (["--sort", "speed"], "--sort speed: no report printed has that column")):
        p = run([BPFSIGHT, "stats", path, *opts])
        eq(p.returncode, 1, f"{opts}: exit")
        check(words in p.stderr, f"{opts}: {p.stderr}")


def test_group_by_what_the_trace_lacks_is_said():
    """--group-by shape on a trace recorded without --torch-shapes, or stack:N without
    --stacks=torch: every row would be "[]" or "" without a word. Said on stderr (the JSON
    has no notes) and under the table; exit 0, the rows by name."""
    t = Trace("proc,torch")
    t.process(10, "train")
    t.torch_op(10, 10, 1000, 100, "aten::mm")
    t.torch_op(10, 10, 2000, 100, "aten::mm")
    path = t.write(tmpdir())
    for key, words in (("shape", "recorded without --torch-shapes"),
                       ("stack:2", "recorded without them (record with --stacks=torch)")):
        p = run([BPFSIGHT, "stats", path, "-r", "torch_op_sum", "--group-by", key,
                 "--format", "json"])
        eq(p.returncode, 0, f"--group-by {key}: {p.stderr}")
        check(words in p.stderr, f"--group-by {key}: stderr says why: {p.stderr!r}")
        eq([r["count"] for r in json.loads(p.stdout)["reports"]["torch_op_sum"]], [2],
           f"--group-by {key}: one row of both calls")
        human = run([BPFSIGHT, "stats", path, "-r", "torch_op_sum", "--group-by", key])
        check(words in human.stdout, f"--group-by {key}: the note under the table")
