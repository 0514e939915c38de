"""torch.compile on a real GPU (tests/gpu/run.sh, part compile): a compiled model's Triton
kernels named as torch.profiler names them and linked to the Python line that called the
compiled function.

  check_compile.py run STEPS --json OUT [--profile]
      compiles a model (LayerNorm, Linear, GELU, Linear, a residual add: Inductor fuses the
      element-wise work into Triton kernels and calls cuBLAS for the matrix products), warms
      it up (the compilation), then runs STEPS training steps of the compiled model at the
      line marked CALL between cudaProfilerStart and cudaProfilerStop. With --profile those
      steps run under torch.profiler instead (CPU and CUDA activity) and OUT gets its
      kernels by name. Set TORCHINDUCTOR_COMPILE_THREADS=1 (no compile workers to trace) and
      one TORCHINDUCTOR_CACHE_DIR for both runs (the second compiles from the cache).
  check_compile.py compare BPFSIGHT TRACE RUN_JSON PROFILE_JSON
      TRACE: `record -t cuda,gpu --stacks=cuda:0 --capture-range=cudaProfilerApi` of
      `run STEPS`. Checks: the kernels by name equal torch.profiler's (the Triton ones named
      as Inductor named them, triton_*); every Triton kernel is linked to the cuda call that
      launched it (Triton's launcher calls the driver, cuLaunchKernel*); the forward's, launched
      by the main thread, have a stack through the CALL line of this file (the backward's run
      on autograd's thread, under loss.backward(): counted and their frames shown).
  check_compile.py pyfunc BPFSIGHT TRACE RUN_JSON
      TRACE: `record -t cuda,gpu,pyfunc --python-functions __main__:run.<locals>.step` of
      `run STEPS`: step() traced at each of its 3 + STEPS calls, Triton kernels in the trace
      (the model still compiled), and the shim's word on its mechanism (shim_sum).
Exit 0 when all hold, 1 otherwise.
"""
import collections
import json
import os
import subprocess
import sys


def line_of(tag):
    with open(__file__) as f:
        return next(i + 1 for i, l in enumerate(f) if l.rstrip().endswith(f"# {tag}"))


def run(steps, out, profile):
    import torch
    from torch.profiler import ProfilerActivity, profile as tprofile

    class Block(torch.nn.Module):
        def __init__(self, dim=1024):
            super().__init__()
            self.ln = torch.nn.LayerNorm(dim)
            self.fc, self.proj = torch.nn.Linear(dim, 4 * dim), torch.nn.Linear(4 * dim, dim)

        def forward(self, x):
            return x + self.proj(torch.nn.functional.gelu(self.fc(self.ln(x))))

    torch.manual_seed(0)
    model = torch.nn.Sequential(Block(), Block()).cuda()
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    x = torch.randn(256, 1024, device="cuda")
    compiled = torch.compile(model)

    def step():
        opt.zero_grad(set_to_none=True)
        loss = compiled(x).square().mean()  # CALL
        loss.backward()
        opt.step()

    for _ in range(3):  # the compilation, then warm runs
        step()
    torch.cuda.synchronize()
    res = {"pid": os.getpid(), "steps": steps, "call_line": line_of("CALL"),
           "torch": torch.__version__}
    if profile:
        import kineto_trace
        with tprofile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as p:
            for _ in range(steps):
                step()
            torch.cuda.synchronize()
        res["kernels"] = kineto_trace.kernels(kineto_trace.events(p))
    else:
        torch.cuda.profiler.start()
        for _ in range(steps):
            step()
        torch.cuda.synchronize()
        torch.cuda.profiler.stop()
    with open(out, "w") as f:
        json.dump(res, f, indent=1)
    print(f"compiled, {steps} steps", flush=True)


def compare(bpfsight, trace, run_json, prof_json):
    with open(run_json) as f:
        job = json.load(f)
    with open(prof_json) as f:
        prof = json.load(f)
    at = (os.path.basename(__file__), job["call_line"])
    out = subprocess.run([bpfsight, "dump", trace], capture_output=True, text=True, check=True)
    evs = [json.loads(l) for l in out.stdout.splitlines()]
    calls = {(e["tid"], e["ts"]): e for e in evs
             if e["kind"] == "cuda_api" and e["args"].get("depth", 0) == 0}
    kernels = [e for e in evs if e["kind"] == "gpu_kernel"]
    got = collections.Counter(k["name"] for k in kernels)
    want = collections.Counter(prof["kernels"])
    ok = got == want and any(n.startswith("triton_") for n in got)
    print(f"  kernels: {sum(got.values())} ({len(got)} names, "
          f"{sum(v for n, v in got.items() if n.startswith('triton_'))} Triton); "
          f"torch.profiler's {sum(want.values())}")
    if got != want:
        print("  MISMATCH (bpfsight - profiler):", dict(got - want), "(profiler - bpfsight):",
              dict(want - got))
    triton = [k for k in kernels if k["name"].startswith("triton_")]
    linked = main = at_line = 0
    apis = collections.Counter()
    inner = {True: collections.Counter(), False: collections.Counter()}
    for k in triton:
        c = calls.get((k["tid"], k["args"].get("call_ts"))) \
            if k["args"].get("link") == "cuda" else None
        if not c:
            continue
        linked += 1
        apis[c["name"]] += 1
        frames = [(f.get("file", "").split("/")[-1], f.get("line")) for f in c.get("stack", ())
                  if "line" in f]
        on_main = k["tid"] == job["pid"]
        main += on_main
        at_line += on_main and at in frames
        inner[on_main][f"{frames[0][0]}:{frames[0][1]}" if frames else "[no Python frame]"] += 1
    print(f"  Triton kernels linked to their launch call: {linked} of {len(triton)} "
          f"({dict(apis)}); launched by the main thread {main}, their stack through "
          f"{at[0]}:{at[1]}: {at_line}")
    print(f"  innermost Python frames, main thread: {dict(inner[True].most_common(4))}; "
          f"other threads (backward): {dict(inner[False].most_common(4))}")
    ok &= linked == len(triton) and main > 0 and at_line == main
    return 0 if ok else 1


def pyfunc(bpfsight, trace, run_json):
    """TRACE: `record -t cuda,gpu,pyfunc --python-functions __main__:run.<locals>.step` of
    `run STEPS`: step() traced once per call (3 warm-up calls and STEPS), the model still
    compiled (Triton kernels ran), and the mechanism the shim says (on 3.8-3.11 TorchDynamo
    takes the frame-evaluation slot after the shim's hook: the C profile function then)."""
    with open(run_json) as f:
        job = json.load(f)

    def report(name):
        out = subprocess.run([bpfsight, "stats", trace, "-r", name, "--format", "json"],
                             capture_output=True, text=True, check=True)
        return json.loads(out.stdout)["reports"].get(name, [])

    steps = [r for r in report("pyfunc_sum") if r["function"].endswith("step")]
    calls = steps[0]["calls"] if len(steps) == 1 else None
    triton = sum(r.get("instances", r.get("count", 0)) for r in report("cuda_gpu_kern_sum")
                 if str(r.get("name", "")).startswith("triton_"))
    said = [r.get("python_functions", "") for r in report("shim_sum") if r["pid"] == job["pid"]]
    print(f"  step() calls traced: {calls} of {3 + job['steps']}; Triton kernel launches: "
          f"{triton}; the shim: {said}")
    return 0 if calls == 3 + job["steps"] and triton > 0 and said and said[0] else 1


def main():
    a = sys.argv[1:]
    if a[:1] == ["pyfunc"] and len(a) == 4:
        return pyfunc(*a[1:])
    if a[:1] == ["run"] and len(a) >= 4 and "--json" in a:
        run(int(a[1]), a[a.index("--json") + 1], "--profile" in a)
        return 0
    if a[:1] == ["compare"] and len(a) == 5:
        return compare(*a[1:])
    sys.exit(__doc__)


if __name__ == "__main__":
    sys.exit(main())
