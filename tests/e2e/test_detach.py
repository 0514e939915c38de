"""Nothing is left in a running job after a `record -p` of it stops (issue #32).

The job is the launch-bound step proxy (tests/workloads/step_proxy.py, pyenv's CPython with
symbols): a main thread and an "autograd" thread handing the GIL to each other, a few system
calls a step, CUDA runtime launches entering the stub driver's entry points, and the
cupti-shim preloaded. It is recorded with every family, then the recorder is stopped, and the
test checks what a user would check afterwards:

- no breakpoint left: every executable file mapping of the job reads, through /proc/PID/mem,
  exactly as its file (a uprobe is an int3 written into the process's copy of the page; while
  recording, the files bpfsight probes read otherwise, which the test checks first);
- the semaphores the shim polls (read at the addresses its USDT notes give) are back to 0, and
  the shim says it detached;
- none of the recorder's BPF programs and links exists any more (by id: other recordings on
  the machine have programs of the same names);
- the job goes on stepping, its calls made as before.

Its step time after equals its step time before: that is a benchmark figure
(bench/bench_cost.py, bench/RESULTS.md "cost"), not a bound asserted here.
"""
import json
import os
import re
import signal
import subprocess

import helpers
import shim_batches as sb
from helpers import (BUILD, Recorder, Skip, alone, check, eq, info, need_root, run, tmpdir,
                     wait_for, workload)
from test_gil import pyenv_python

# For tests/run_tests.py: about how long these tests take on CI's machine (its order).
SECONDS = 6

PROXY = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "workloads",
                     "step_proxy.py")
LIB = workload("cuda/libstep_proxy.so")
SHIM = os.path.abspath(os.path.join(BUILD, "libbpfsight-shim.so"))
EVERY = "osrt,sched,cuda,nccl,gil,gpu,nvtx,cpu,torch"
# The shim's USDT semaphores (cupti-shim/shim_usdt.h): each raised by a recorder's link.
SEMAPHORES = ("batch", "gpu", "nvtx", "sync", "drain", "torch", "torch_shapes", "torch_op_stack",
              "join", "pyfunc")


class Job:
    """The step proxy, its stderr (the shim's debug lines) in a file."""

    def __init__(self, py):
        self.log = os.path.join(tmpdir(), "stderr")
        with open(self.log, "w") as err:
            self.p = subprocess.Popen([py, PROXY, LIB], stdin=subprocess.PIPE,
                                      stdout=subprocess.PIPE, stderr=err, text=True,
                                      env=dict(os.environ, LD_PRELOAD=SHIM,
                                               BPFSIGHT_SHIM_DEBUG="1"))
        helpers._procs.append(self.p)  # killed after the test whatever happens
        self.pid = json.loads(self.p.stdout.readline())["pid"]

    def ask(self, cmd):
        self.p.stdin.write(cmd + "\n")
        self.p.stdin.flush()
        return json.loads(self.p.stdout.readline())

    def shim_said(self, what):
        with open(self.log) as f:
            return re.search(rf"bpfsight-shim\[{self.pid}\]: {what}", f.read()) is not None


def mappings(pid):
    """[(start, end, perms, offset, path)] of the file mappings of PID."""
    out = []
    with open(f"/proc/{pid}/maps") as f:
        for line in f:
            parts = line.split(None, 5)
            if len(parts) == 6 and parts[5].startswith("/"):
                lo, hi = (int(x, 16) for x in parts[0].split("-"))
                out.append((lo, hi, parts[1], int(parts[2], 16), parts[5].strip()))
    return out


def code_changes(pid, only=None):
    """{path: {offsets in the file of the bytes that differ}} over PID's executable file
    mappings (those whose path has ONLY, when given: a torch process maps hundreds of MB of
    code): its memory against the file. Empty when no breakpoint is in the process's code."""
    changed = {}
    with open(f"/proc/{pid}/mem", "rb") as mem:
        for lo, hi, perms, off, path in mappings(pid):
            if "x" not in perms or path.endswith(" (deleted)") or (only and only not in path):
                continue
            with open(path, "rb") as f:
                f.seek(off)
                want = f.read(hi - lo)
            mem.seek(lo)
            got = mem.read(len(want))
            if got == want:  # most mappings: the byte loop below would find nothing, slowly
                continue
            diff = {off + i for i, (a, b) in enumerate(zip(got, want)) if a != b}
            if diff:
                changed[path] = changed.get(path, set()) | diff
    return changed


def semaphores(pid):
    """{name: value} of the shim's USDT semaphores in PID."""
    addrs = sb.semaphore_addrs(SHIM, pid)
    eq(sorted(addrs), sorted(SEMAPHORES), "the shim's probes with semaphores")
    with open(f"/proc/{pid}/mem", "rb") as mem:
        out = {}
        for name, addr in addrs.items():
            mem.seek(addr)
            out[name] = int.from_bytes(mem.read(2), "little")
    return out


def bpf_ids(pid):
    """The ids of the BPF programs and links process PID holds (its fds' fdinfo)."""
    ids = set()
    d = f"/proc/{pid}/fdinfo"
    for fd in os.listdir(d):
        try:
            with open(os.path.join(d, fd)) as f:
                text = f.read()
        except OSError:
            continue
        for kind in ("prog", "link"):
            m = re.search(rf"^{kind}_id:\s+(\d+)", text, re.M)
            if m:
                ids.add((kind, int(m.group(1))))
    return ids


def bpf_exists(kind, obj_id):
    return run(["bpftool", kind, "show", "id", str(obj_id)]).returncode == 0


def settle(get, want, what, timeout=30):
    """Wait until GET() == WANT (the kernel may free a link's uprobes after the recorder's
    exit), then assert it, showing what differs."""
    try:
        wait_for(lambda: get() == want, timeout, what)
    except AssertionError:
        pass
    got = get()
    if got != want and want == {} and all(isinstance(v, set) for v in got.values()):
        got = {p: sorted(o)[:8] for p, o in got.items()}  # the first file offsets
    eq(got, want, what)


@alone("reads the job's code for breakpoints: another recording's uprobes would be there too")
def test_nothing_left_after_detaching_every_family():
    need_root()
    py = pyenv_python(12)
    for path in (py, LIB, SHIM):
        if not path or not os.path.exists(path):
            raise Skip(f"{path or 'pyenv python3.12'} missing (make test-build with the CUDA "
                       "toolkit; pyenv's CPython 3.12)")
    job = Job(py)
    job.ask("steps 2")
    # make check runs this test alone; by hand, another recording (-a) may probe the job too,
    # and then what is left after ours cannot be told from what is its.
    base_code, base_sems = code_changes(job.pid), semaphores(job.pid)
    if base_code or any(base_sems.values()):
        raise Skip(f"another tracer probes the job already: breakpoints in "
                   f"{sorted(base_code)}, semaphores {base_sems}")

    # --python-functions: the pyfunc family too, whose spec the recorder writes into the shim.
    rec = Recorder("-p", str(job.pid), "-t", EVERY, "--python-functions", "__main__:spread")
    rec.wait_ready()
    ids = bpf_ids(rec.p.pid)
    check(any(k == "prog" for k, _ in ids) and any(k == "link" for k, _ in ids),
          f"the recorder holds programs and links: {ids}")
    wait_for(lambda: job.shim_said("attached"), 30, "the shim attached")
    probed = code_changes(job.pid)
    for f in (os.path.realpath(LIB), "/libcudart.so", "stubs/libcuda.so", "libpython3.12",
              "libbpfsight-shim.so"):
        check(any(f in p for p in probed), f"while recording, {f} carries breakpoints: "
              f"{ {p: len(o) for p, o in probed.items()} }")
    sems = semaphores(job.pid)
    check(all(sems[s] for s in ("batch", "gpu", "nvtx", "torch", "pyfunc")), f"raised: {sems}")
    before = job.ask("calls")
    job.ask("steps 3")
    made = job.ask("calls")
    eq(rec.stop(), 0, f"record's exit status ({rec.stderr[-600:]})")
    calls, inside = (sum(made[k].values()) - sum(before[k].values())
                     for k in ("calls", "inside"))
    launched = made["inside"]["cuLaunchKernel"] - before["inside"].get("cuLaunchKernel", 0)
    # A record per call, but a runtime launch and the driver launch it makes inside it are
    # one (docs/CUDA.md, "One probe pair per launch").
    eq(info(rec.out)["events"].get("cuda_api"), calls + inside - launched,
       f"the steps' {calls} calls and the {inside} driver calls inside them recorded, "
       f"{launched} driver launches with their runtime launch")

    settle(lambda: code_changes(job.pid), {}, "no breakpoint left in the job's code")
    settle(lambda: semaphores(job.pid), base_sems, "every semaphore back to 0")
    wait_for(lambda: job.shim_said("detached"), 30, "the shim detached")
    # The links go last: the recorder hands them to bpfsight-detach, which drops them once the
    # kernel has let the probes go (user/session/recorder.h, "Stopping at any event rate").
    settle(lambda: [(k, i) for k, i in sorted(ids) if bpf_exists(k, i)], [],
           "none of the recorder's programs and links is left")
    job.ask("steps 2")
    after = job.ask("calls")
    eq(sum(after["calls"].values()) - sum(made["calls"].values()), 2 * 456,
       "the job steps on after the recording")
    eq(job.ask("steps 0"), {"ns": [], "cpu": []}, "the job answers")
    job.p.stdin.close()
    eq(job.p.wait(60), 0, "the job's exit status")


@alone("reads the job's code for breakpoints: another recording's uprobes would be there too")
def test_nothing_left_after_a_mem_recording():
    """-t mem on a job with PyTorch's CUDA allocator code (libfake_c10_cuda.so): its report
    functions carry breakpoints and its USDT semaphore is raised while recording; after,
    the code reads as its file, the semaphore is 0 and the recorder's programs are gone."""
    need_root()
    gpu_alloc = workload("cuda/gpu_alloc")
    if not os.path.exists(gpu_alloc):
        raise Skip(f"{gpu_alloc} missing (make test-build with the CUDA toolkit)")
    job = subprocess.Popen([gpu_alloc, "1", "--wait"], stdout=subprocess.PIPE, text=True)
    helpers._procs.append(job)
    eq(job.stdout.readline().strip(), "ready", "the job waits")
    lib = os.path.realpath(workload("cuda/libfake_c10_cuda.so"))
    if code_changes(job.pid):
        raise Skip("another tracer probes the job already")
    rec = Recorder("-p", str(job.pid), "-t", "mem")
    rec.wait_ready()
    ids = bpf_ids(rec.p.pid)
    probed = code_changes(job.pid)
    # (and ld.so's _dl_debug_state: the uprobe manager's watch on new code)
    check(lib in probed, f"while recording, the allocator's library carries breakpoints: "
          f"{sorted(probed)}")
    eq(len(probed[lib]), 3, "the report, the OOM report and the USDT site: one byte each")
    job.send_signal(signal.SIGUSR1)
    lines = [job.stdout.readline().strip()]
    while lines[-1] and not lines[-1].startswith("semaphores"):
        lines.append(job.stdout.readline().strip())
    eq(lines[0].split()[0], "alloc", "the job allocates")
    eq(rec.stop(), 0, rec.stderr[-400:])
    settle(lambda: code_changes(job.pid), {}, "no breakpoint left in the job's code")
    settle(lambda: [(k, i) for k, i in sorted(ids) if bpf_exists(k, i)], [],
           "none of the recorder's programs and links is left")
    job.send_signal(signal.SIGUSR1)
    rest = job.stdout.read().split("\n")
    eq([l for l in lines + rest if l.startswith("semaphores")], ["semaphores 1", "semaphores 0"],
       "the semaphore raised while recording, 0 after")
    eq(job.wait(30), 0, "the job's exit status")
