"""A small real PyTorch training loop for tests/gpu/run.sh (GPU machines only).

  torch_loop.py [STEPS] [--until-file PATH]
      train STEPS steps (default 50), print pid and time; with --until-file, train until
      PATH exists (a job that outlives the recordings made of it)
  torch_loop.py --launch-bound N
      N tiny element-wise ops (one small kernel each, launch-bound), timed after warm-up,
      five times in a row; prints "launch-bound N ops S s" with S the fastest of the five
      (the overhead figures of tests/gpu/run.sh: the least disturbed run of each process);
      --profiler: the same under torch.profiler, CUDA activity only
  torch_loop.py --validate STEPS [--wait-file PATH] --json OUT
      warm up, print "ready pid P", wait until PATH exists (when given: time for a
      recorder to attach with -p), then run STEPS steps between cudaProfilerStart and
      cudaProfilerStop (what bpfsight --capture-range=cudaProfilerApi keeps), then the same
      STEPS steps under torch.profiler, outside that range. --halves range|profiler runs only
      one of them (the gpu family's check: CUPTI has one owner per process, so there the
      halves run in two processes). Writes the profiler's counts to
      OUT: kernel-launch API calls by name, GPU kernels by name, and per GPU kernel name the
      total GPU time torch.profiler measured (gpu_kernel_ns), for the gpu family's check.

The iterations are identical (same model, input and shapes, after warm-up: cuBLAS handles,
workspaces and the caching allocator are settled), so the two halves launch the same kernels.
"""
import argparse
import json
import os
import re
import sys
import time

import torch

# Runtime and driver kernel-launch API calls (not cudaLaunchHostFunc), as named by CUPTI.
LAUNCH_RE = re.compile(r"^_*cu(da)?Launch(Cooperative)?Kernel")


def build():
    torch.manual_seed(0)
    dev = "cuda" if torch.cuda.is_available() else "cpu"
    model = torch.nn.Sequential(torch.nn.Linear(1024, 4096), torch.nn.ReLU(),
                                torch.nn.Linear(4096, 1024)).to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    x = torch.randn(256, 1024, device=dev)
    return dev, model, opt, x


def steps(n, model, opt, x):
    for _ in range(n):
        opt.zero_grad()
        loss = model(x).square().mean()
        loss.backward()
        opt.step()


def plain(n, until_file=None):
    dev, model, opt, x = build()
    t0 = time.time()
    if until_file:
        n = 0
        while not os.path.exists(until_file):
            steps(1, model, opt, x)
            n += 1
    else:
        steps(n, model, opt, x)
    if dev == "cuda":
        torch.cuda.synchronize()
    print(f"pid {os.getpid()} device {dev} steps {n} {time.time() - t0:.3f}s", flush=True)


def validate(n, wait_file, out, halves="both"):
    from torch.autograd import DeviceType
    from torch.profiler import ProfilerActivity, profile

    if not torch.cuda.is_available():
        sys.exit("torch_loop.py --validate: no CUDA device visible to PyTorch")
    _, model, opt, x = build()
    steps(5, model, opt, x)  # warm-up: lazy initialization happens here, outside both halves
    torch.cuda.synchronize()
    print(f"ready pid {os.getpid()}", flush=True)
    if wait_file:
        while not os.path.exists(wait_file):
            time.sleep(0.05)

    # Half 1: seen by bpfsight (--capture-range=cudaProfilerApi).
    if halves in ("both", "range"):
        torch.cuda.profiler.start()
        steps(n, model, opt, x)
        torch.cuda.synchronize()
        torch.cuda.profiler.stop()
    if halves == "range":
        with open(out, "w") as f:
            json.dump({"pid": os.getpid(), "steps": n}, f)
        return

    # Half 2: the same iterations under torch.profiler (CUPTI), outside the range.
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        steps(n, model, opt, x)
        torch.cuda.synchronize()
    # Kineto's own events (as torch.profiler._utils reads them): runtime/driver API calls on
    # the CPU side, kernels on the CUDA side. FunctionEvents where that is not available.
    try:
        evs = [(e.name(), e.device_type(), kineto_ns(e))
               for e in prof.profiler.kineto_results.events()]
    except AttributeError:
        evs = [(e.name, e.device_type, int(e.time_range.elapsed_us() * 1000))
               for e in prof.events()]
    # A record_function range (Optimizer.step#SGD.step) also shows on the CUDA side, as a
    # gpu_user_annotation spanning the kernels it launched: not a kernel. Its name is the
    # CPU-side range's; a kernel's name never is a CPU-side event's.
    cpu_names = {name for name, dev, _ in evs if dev != DeviceType.CUDA}
    launches, kernels, kernel_ns = {}, {}, {}
    for name, dev, ns in evs:
        if dev == DeviceType.CUDA and name in cpu_names:
            continue
        if dev == DeviceType.CUDA:
            if not name.startswith(("Memcpy", "Memset")):
                kernels[name] = kernels.get(name, 0) + 1
                kernel_ns[name] = kernel_ns.get(name, 0) + ns
        elif LAUNCH_RE.match(name):
            launches[name] = launches.get(name, 0) + 1
    res = {"pid": os.getpid(), "steps": n, "torch": torch.__version__,
           "cuda": torch.version.cuda, "launch_calls": launches, "gpu_kernels": kernels,
           "gpu_kernel_ns": kernel_ns}
    with open(out, "w") as f:
        json.dump(res, f, indent=1)
    print(f"torch.profiler: {sum(launches.values())} launch calls "
          f"({', '.join(f'{k} {v}' for k, v in sorted(launches.items()))}), "
          f"{sum(kernels.values())} GPU kernels in {n} steps", flush=True)


def kineto_ns(e):
    """Duration of a KinetoEvent in ns (duration_ns() in recent PyTorch, else us)."""
    if hasattr(e, "duration_ns"):
        return int(e.duration_ns())
    return int(e.duration_us() * 1000)


def launch_bound(n, profiler=False):
    """N tiny ops: the CPU-side launch path dominates, as in a launch-bound step. With
    profiler, the timed loops run under torch.profiler recording CUDA activity only (Kineto's
    CUPTI tracing: the cost of GPU timing as PyTorch's own tool pays it)."""
    if not torch.cuda.is_available():
        sys.exit("torch_loop.py --launch-bound: no CUDA device visible to PyTorch")
    if profiler:
        from torch.profiler import ProfilerActivity, profile
        with profile(activities=[ProfilerActivity.CUDA]):
            return launch_bound(n)
    x = torch.zeros(16, device="cuda")
    for _ in range(2000):  # warm-up: allocator, kernels loaded
        x.add_(1)
    torch.cuda.synchronize()
    print(f"ready pid {os.getpid()}", flush=True)
    best = None
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(n):
            x.add_(1)
        torch.cuda.synchronize()
        t = time.perf_counter() - t0
        best = t if best is None else min(best, t)
    print(f"launch-bound {n} ops {best:.6f} s", flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("steps", nargs="?", type=int, default=50)
    ap.add_argument("--validate", action="store_true")
    ap.add_argument("--launch-bound", type=int, metavar="N")
    ap.add_argument("--profiler", action="store_true",
                    help="with --launch-bound: under torch.profiler (CUDA activity)")
    # The gpu family and torch.profiler both need CUPTI, which has one owner per process:
    # its check runs the two halves in two processes (same model, seed and iterations).
    ap.add_argument("--halves", choices=("both", "range", "profiler"), default="both")
    ap.add_argument("--wait-file")
    ap.add_argument("--until-file")
    ap.add_argument("--json")
    a = ap.parse_args()
    if a.launch_bound:
        launch_bound(a.launch_bound, a.profiler)
    elif a.validate:
        if not a.json:
            ap.error("--validate needs --json OUT")
        validate(a.steps, a.wait_file, a.json, a.halves)
    else:
        plain(a.steps, a.until_file)


if __name__ == "__main__":
    main()
