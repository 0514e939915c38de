"""--python-functions' presets and nsys's spec files on real jobs, against the jobs' own counts:
- pytorch, on a CPU training loop with Debian's torch (tests/workloads/pyfunc_train.py, which
  counts its module calls by class with a global forward pre-hook): every class's forward
  count equals the job's, the optimizer's step, zero_grad and both backwards equal its steps,
  the DataLoader's next equals its batches plus one StopIteration per epoch; with -t torch,
  pyfunc_step_sum puts exactly one of each in every torch step;
  the docs' own CuPy example runs beside the preset (CuPy is not installed: its entries are
  only not found);
- dask (as nsys's --dask=functions-trace gives it), on Debian's python3-dask
  (tests/workloads/pyfunc_dask.py, whose task functions count their runs): one execute_task
  per task run, every compute and scheduler's get counted;
- a file in the docs' format (tests/fixtures/pyfunc/nsys_json.json) given to nsys's own
  --python-functions-trace runs unchanged.
The records come from the cupti-shim's pyfunc module in the job's interpreter (the profile
function of /usr/bin/python3, a stripped 3.11).
"""
import collections
import json
import os
import re
import subprocess

from commands import DEBIAN_PY, ROOT, WORKLOADS, need_torch
from helpers import BPFSIGHT, Skip, check, dump, eq, need_root, record, run, stats

# For tests/run_tests.py: about how long these tests take on CI's machine (its order).
SECONDS = 20

FIXTURES = os.path.join(ROOT, "tests", "fixtures", "pyfunc")


def job(script, *opts, args=()):
    """Record SCRIPT under DEBIAN_PY with OPTS: (the job's own JSON line, pyfunc_sum's rows by
    function, the trace)."""
    p, out = record([DEBIAN_PY, os.path.join(WORKLOADS, script), *args], *opts, timeout=180)
    eq(p.returncode, 0, f"record {script} ({p.stderr.strip()[-600:]})")
    lines = [line for line in p.stdout.splitlines() if line.startswith("{")]
    check(lines, f"{script} printed its counts: {p.stdout[-300:]!r}")
    rows = {r["function"]: r for r in stats(out, "pyfunc_sum")["pyfunc_sum"]}
    return json.loads(lines[-1]), rows, out


def calls(rows, pattern):
    """The calls of the rows whose function matches PATTERN, summed (a code object that more
    than one name reaches is one row)."""
    return sum(r["calls"] for f, r in rows.items() if re.fullmatch(pattern, f))


def test_pytorch_preset():
    need_root()
    need_torch()
    docs = os.path.join(FIXTURES, "nsys_cupy_annotations.json")  # CuPy's: not found
    truth, rows, out = job("pyfunc_train.py", "-t", "torch", "--python-functions",
                           f"pytorch,{docs}")
    got = {f[:-len(".forward")]: r["calls"] for f, r in rows.items() if f.endswith(".forward")}
    eq(got, truth["forward"], "forward calls by class (module:Class) as the job counted them")
    steps = truth["steps"]
    eq(calls(rows, r"torch\.optim\.[\w.]+:\w+\.step"), steps, "every optimizer step")
    eq(rows["torch.optim.optimizer:Optimizer.zero_grad"]["calls"], steps, "zero_grad")
    eq(rows["torch._tensor:Tensor.backward"]["calls"], steps, "Tensor.backward")
    eq(rows["torch.autograd:backward"]["calls"], steps, "torch.autograd.backward")
    nxt = rows["torch.utils.data.dataloader:_BaseDataLoaderIter.__next__"]
    eq((nxt["calls"], nxt["exceptions"]), (truth["batches"] + truth["epochs"], truth["epochs"]),
       "DataLoader's next: each batch, and the StopIteration ending each epoch")
    # torch's steps run from one optimizer step's end to the next's: each holds one
    # iteration's zero_grad, backward and step; the first iteration's came before the first
    by = {r["function"]: r for r in stats(out, "pyfunc_step_sum")["pyfunc_step_sum"]}
    for f in ("torch.optim.optimizer:Optimizer.zero_grad", "torch._tensor:Tensor.backward"):
        eq((by[f]["calls_per_step"], by[f]["steps"], by[f]["outside_steps"]),
           (1.0, steps - 1, 1), f"pyfunc_step_sum: {f}")


def need_dask():
    if subprocess.run([DEBIAN_PY, "-c", "import dask"], capture_output=True).returncode:
        raise Skip(f"no dask for {DEBIAN_PY} (make deps installs python3-dask)")


def test_dask_preset():
    need_root()
    need_dask()
    truth, rows, _ = job("pyfunc_dask.py", "--dask=functions-trace")  # nsys's: the preset
    eq(rows["dask.local:execute_task"]["calls"], truth["tasks"], "a task, one execute_task")
    # (dask.core's _execute_task runs each task's function, and compute's repacking of the
    # results too: no count of the job's own says how many times)
    check(rows["dask.core:_execute_task"]["primitive_calls"] >= truth["tasks"], "_execute_task")
    computes = sum(truth["computes"].values())
    eq(rows["dask.base:compute"]["calls"], computes, "every compute()")
    eq(rows["dask.threaded:get"]["calls"], truth["computes"]["threads"], "the threads' get")
    eq(rows["dask.local:get_sync"]["calls"], truth["computes"]["sync"], "the sync get")
    eq(rows["dask.local:get_async"]["calls"], computes, "both run get_async")


def test_nsys_spec_file_runs_unchanged():
    need_root()
    spec = os.path.join(FIXTURES, "nsys_json.json")
    truth, rows, out = job("pyfunc_json.py", f"--python-functions-trace={spec}")  # nsys's
    eq({f: r["calls"] for f, r in rows.items()},
       {"json:dumps": truth["dumps"], "json:loads": truth["loads"],
        "json.decoder:JSONDecoder.decode": truth["loads"], "__main__:work": truth["work"]},
       "the file's functions, __main__'s too")
    domains = collections.Counter()
    for e in dump(out):
        if e["kind"] == "pyfunc_call":
            domains[e["args"].get("domain")] += 1
    eq(domains, {"JSON": truth["dumps"] + 2 * truth["loads"], None: truth["work"]},
       "the file's domains")


def test_bad_specs_and_nsys_options():
    """A malformed spec stops record before anything runs, exit 1, naming the piece; nsys's
    --pytorch=functions-trace and --dask=functions-trace record the presets' family."""
    need_root()
    for args, said in (
            (["--python-functions", "pytorch,1mod:f"],
             "--python-functions pytorch,1mod:f: \"1mod:f\": \"1mod\" is not a module name"),
            (["--python-functions", "torch"], "\"torch\": a function is named with its "
                                              "module: __main__:torch (the script run)"),
            (["--python-functions", os.path.join(FIXTURES, "..", "pyfunc")],
             "neither module:function"),
            (["--dask=bogus"], "--dask bogus: functions-trace or none")):
        p = run([BPFSIGHT, "record", *args, "--dry-run", "--", "true"])
        eq(p.returncode, 1, f"{args}: exit 1")
        check(said in p.stderr, f"{args}: {said!r} in {p.stderr.strip()[-300:]!r}")
    p = run([BPFSIGHT, "record", "--pytorch=functions-trace", "--dask=functions-trace",
             "--dry-run", "--", "true"], check=True)
    check("torch,pyfunc)" in p.stderr, f"torch and pyfunc recorded: {p.stderr[-300:]!r}")
