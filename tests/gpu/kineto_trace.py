"""torch.profiler's kernels as Kineto's own trace names them (tests/gpu/check_graphs.py,
check_compile.py): its Chrome trace says what each event is ("cat": "kernel"), where its event
list cannot tell a kernel from a GPU-side annotation of the same name (Inductor wraps each
Triton launch in a record_function named after the kernel: an H200's first run counted 220
kernels for 430).
"""
import collections
import json
import os
import tempfile


def events(prof):
    """The profile's Chrome trace events."""
    fd, path = tempfile.mkstemp(suffix=".json")
    os.close(fd)
    try:
        prof.export_chrome_trace(path)
        with open(path) as f:
            return json.load(f)["traceEvents"]
    finally:
        os.unlink(path)


def kernels(evs):
    """The GPU kernels by name (copies and memsets are not kernels)."""
    return collections.Counter(e["name"] for e in evs if e.get("cat") == "kernel")


def kernel_ops(evs):
    """Per (innermost CPU op, kernel) the kernels Kineto linked to that op by its External id
    (the op that was running on the CPU when the kernel was launched)."""
    ops = {}
    for e in evs:
        if e.get("cat") in ("cpu_op", "user_annotation") and "External id" in e.get("args", {}):
            ops.setdefault(e["args"]["External id"], e["name"])
    return collections.Counter(
        f"{ops.get(e['args'].get('External id'), '[no op]')}\t{e['name']}"
        for e in evs if e.get("cat") == "kernel")
