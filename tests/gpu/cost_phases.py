"""What tracing costs a launch-bound training step, measured inside one running job
(tests/gpu/run.sh, part cost; figures in docs/gpu-validation.md and bench/RESULTS.md).

  cost_phases.py job PHASE_FILE OUT_JSON [--device cuda|cpu]
      a GPT-2 training loop (transformers' GPT2LMHeadModel, GPT-2 small's shape, random
      weights, batch 2 x 64 tokens: its CPU launches outlast its GPU work) that reads
      PHASE_FILE before each step and files the step's time under the label found there;
      label "profiler": the steps run under torch.profiler (CPU and CUDA activity, as a user
      runs it); "stop": write each label's step times to OUT_JSON and exit. Without
      transformers, the GPT-2-style model of check_torch.py (said).
  cost_phases.py drive BPFSIGHT WORKDIR [--device cuda|cpu] [--phase-s S] [--json OUT]
      start the job (pinned to CPUs 2 and 3 where there are 8 or more), then give it phases
      of S seconds (default 2), each its own label:
        untraced                  nothing attached
        torch.profiler            CPU + CUDA activity, in the job
        default families          `record -p PID` (osrt,sched,gil,cuda,nccl,gpu,nvtx; no shim
                                  in the job: gpu and nvtx have nothing to time; osrt sees
                                  the system calls that sleep, -p's default)
        default, --osrt-mode exact  the same with osrt counting every system call (a
                                  program on sys_enter/sys_exit)
        --inject -t cuda,gpu      `record -p PID -t cuda,gpu --inject`: the shim loaded into
                                  the running job, GPU timing on
        -t cuda,gpu               `record -p PID -t cuda,gpu` again, the shim already there
      in this order: three untraced (the job's own drift), one default recording and three
      untraced (anything left behind once it stopped?), then three rounds of default,
      untraced, profiler, untraced, default with --osrt-mode exact, untraced, then the shim's (--inject once, -t cuda,gpu three times),
      each followed by an untraced phase. A phase's label is set only once its recorder is
      attached (and GPU timing is on) and taken away before it stops, so attaching and
      stopping are in no phase. The first two steps of every phase are dropped (a
      profiler's start, a probe's first hit). Prints each phase's median step in order and
      each traced phase's ratio to the mean of its untraced neighbours (the job drifts: an
      H200's first run had untraced steps of 23 ms at the start and 33 ms later), their
      median per configuration. Exit 0 when every phase ran steps and every recording ended
      well (the ratios are figures, not checks: a speed goal is a benchmark's); 1 otherwise.

torch.profiler and the shim both need CUPTI, which has one owner at a time: the profiler's
phases come before the shim is injected.
"""
import json
import os
import signal
import statistics
import subprocess
import sys
import time

DROP = 2


def gpt2(device):
    import torch
    try:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        from transformers import GPT2Config, GPT2LMHeadModel
    except ImportError:
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        from check_torch import model_and_data
        model, opt, idx, vocab = model_and_data(device)
        print("model: check_torch.py's GPT-2-style model (no transformers here)", flush=True)

        def step():
            opt.zero_grad()
            logits = model(idx)
            loss = torch.nn.functional.cross_entropy(logits.view(-1, vocab), idx.view(-1))
            loss.backward()
            opt.step()
        return step
    torch.manual_seed(0)
    cfg = GPT2Config(n_layer=12, n_embd=768, n_head=12, n_positions=128, vocab_size=50257)
    model = GPT2LMHeadModel(cfg).to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    idx = torch.randint(0, cfg.vocab_size, (2, 64), device=device)
    print("model: transformers GPT2LMHeadModel (GPT-2 small's shape), batch 2 x 64",
          flush=True)

    def step():
        opt.zero_grad(set_to_none=True)
        loss = model(idx, labels=idx).loss
        loss.backward()
        opt.step()
    return step


def label_of(path):
    """The phase's label and its number ("default families#7"), or ("idle", -1)."""
    try:
        with open(path) as f:
            text = f.read().strip()
    except FileNotFoundError:
        return "idle", -1
    label, _, n = text.partition("#")
    return (label or "idle"), int(n) if n else -1


def job(phase_file, out, device):
    import torch
    step = gpt2(device)
    cuda = device == "cuda"
    for _ in range(5):  # warm-up: allocator, cuBLAS handles, kernels loaded
        step()
    if cuda:
        torch.cuda.synchronize()
    print(f"ready pid {os.getpid()}", flush=True)
    phases, prof, n = {}, None, 0
    while True:
        label, k = label_of(phase_file)
        if label == "stop":
            break
        if label == "profiler" and prof is None:
            from torch.profiler import ProfilerActivity, profile
            acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])
            prof = profile(activities=acts)
            prof.start()
        elif label != "profiler" and prof is not None:
            prof.stop()
            prof = None
        t0 = time.perf_counter()
        step()
        if cuda:
            torch.cuda.synchronize()
        if k >= 0:
            phases.setdefault(k, [label, []])[1].append(time.perf_counter() - t0)
        n += 1
    with open(out, "w") as f:
        json.dump({"pid": os.getpid(), "steps": n,
                   "phases": [phases[k] for k in sorted(phases)]}, f)
    print(f"job: {n} steps", flush=True)


def wait_for(path, text, proc, timeout=120):
    end = time.time() + timeout
    while time.time() < end:
        try:
            with open(path) as f:
                if text in f.read():
                    return True
        except FileNotFoundError:
            pass
        if proc.poll() is not None:
            return False
        time.sleep(0.05)
    return False


def drive(bpfsight, work, device, phase_s, out_json):
    phase = os.path.join(work, "cost_phase")
    res = os.path.join(work, "cost_job.json")
    with open(phase, "w") as f:
        f.write("idle")
    jout = open(os.path.join(work, "cost_job.out"), "w")
    env = {k: v for k, v in os.environ.items()
           if k not in ("CUDA_INJECTION64_PATH", "NVTX_INJECTION64_PATH")}
    # Pinned away from the recorder's CPUs where there are enough (probes still run on the
    # job's CPUs: that is their cost).
    pin = ["taskset", "-c", "2,3"] if (os.cpu_count() or 1) >= 8 else []
    jp = subprocess.Popen(pin + [sys.executable, os.path.abspath(__file__), "job", phase, res,
                                 "--device", device], stdout=jout, stderr=subprocess.STDOUT,
                          env=env)
    ok = True
    try:
        if not wait_for(jout.name, "ready pid", jp, 300):
            print("cost: the job did not get ready:", open(jout.name).read()[-2000:])
            return 1

        nphase = 0

        def set_label(label):
            nonlocal nphase
            tmp = phase + ".tmp"
            with open(tmp, "w") as f:
                if label in ("idle", "stop"):
                    f.write(label)
                else:
                    f.write(f"{label}#{nphase}")
                    nphase += 1
            os.replace(tmp, phase)

        def untraced(label="untraced"):
            set_label(label)
            time.sleep(phase_s)
            set_label("idle")

        nrec = 0

        def traced(label, args, ready="Ctrl-C to stop", settle=0.0):
            nonlocal ok, nrec
            nrec += 1
            # Not *.bst in WORK: run.sh's KEEP_TRACES would carry them all back.
            base = os.path.join(work, f"cost{nrec}")
            err = base + ".rec.log"
            rec = subprocess.Popen([bpfsight, "record", "--force", "-p", str(jp.pid), "-o",
                                    base + ".trace"] + args,
                                   stdout=subprocess.DEVNULL, stderr=open(err, "w"))
            if not wait_for(err, ready, rec):
                print(f"cost: {label}: the recorder did not start:", open(err).read()[-1500:])
                rec.kill()
                ok = False
                return
            time.sleep(settle)
            set_label(label)
            time.sleep(phase_s)
            set_label("idle")
            rec.send_signal(signal.SIGINT)
            if rec.wait(120) != 0:
                print(f"cost: {label}: the recorder exited {rec.returncode}:",
                      open(err).read()[-1500:])
                ok = False

        def profiler():
            # The job runs its steps under torch.profiler: no recorder.
            untraced("profiler")

        # The job's own drift first (an H200's first run: untraced steps 23 ms at the start,
        # 33 ms later), then whether a recording leaves anything behind after it stops,
        # then each configuration between untraced phases, compared with its neighbours.
        for _ in range(3):
            untraced()
        traced("default families", [])
        for _ in range(3):
            untraced()
        for _ in range(3):
            traced("default families", [])
            untraced()
            profiler()
            untraced()
            traced("default, --osrt-mode exact", ["--osrt-mode", "exact"])
            untraced()
        if device == "cuda":
            traced("--inject -t cuda,gpu", ["-t", "cuda,gpu", "--inject"],
                   ready="the cupti-shim is loaded", settle=3.0)
            untraced()
            for _ in range(3):
                traced("-t cuda,gpu", ["-t", "cuda,gpu"], settle=1.0)
                untraced()
        set_label("stop")
        if jp.wait(120) != 0:
            print("cost: the job failed:", open(jout.name).read()[-2000:])
            return 1
    finally:
        if jp.poll() is None:
            jp.kill()
    with open(res) as f:
        phases = json.load(f)["phases"]
    print(open(jout.name).read().strip())
    return report(phases, out_json) if ok else 1


def report(phases, out_json):
    """Each phase's median step in order; each traced phase against the untraced phases on
    either side of it (the job drifts: a ratio to a far-away baseline is the drift's)."""
    name = {"profiler": "torch.profiler"}
    meds = []
    for label, times in phases:
        kept = times[DROP:]
        meds.append((name.get(label, label), statistics.median(kept) if kept else None,
                     len(kept)))
    print("  phases in order (median ms, steps): " +
          ", ".join(f"{l} {m * 1e3:.1f} ({n})" for l, m, n in meds if m))
    ratios, ok = {}, True
    for i, (label, med, n) in enumerate(meds):
        if label == "untraced" or med is None:
            continue
        if n < 5:
            print(f"  {label} (phase {i}): only {n} steps")
            ok = False
            continue
        near = [m for l, m, _ in meds[max(0, i - 1):i + 2] if l == "untraced" and m]
        if near:
            ratios.setdefault(label, []).append(med / statistics.mean(near))
    rows = {}
    for label in ("torch.profiler", "default families", "default, --osrt-mode exact",
                  "--inject -t cuda,gpu", "-t cuda,gpu"):
        if label in ratios:
            r = ratios[label]
            rows[label] = {"phases": len(r), "ratio_median": statistics.median(r),
                           "ratios": [round(x, 3) for x in r]}
            print(f"  {label:29s} {statistics.median(r):6.3f}x its untraced neighbours "
                  f"(phases: {', '.join(f'{x:.3f}' for x in r)})")
    after = [m for l, m, _ in meds[4:7] if l == "untraced" and m]
    before = [m for l, m, _ in meds[:3] if l == "untraced" and m]
    if before and after:
        rows["after_a_recording"] = statistics.mean(after) / statistics.mean(before)
        print(f"  untraced after the first recording stopped / before it: "
              f"{rows['after_a_recording']:.3f}")
    if out_json:
        with open(out_json, "w") as f:
            json.dump({"phases": meds, "rows": rows}, f, indent=1)
    d = rows.get("default families")
    if d:
        print(f"  default families: {d['ratio_median']:.3f}x (goal 1.03x: "
              f"{'met' if d['ratio_median'] <= 1.03 else 'not met'})")
    return 0 if ok else 1


def main():
    a = sys.argv[1:]
    device = a[a.index("--device") + 1] if "--device" in a else "cuda"
    if a[:1] == ["job"] and len(a) >= 3:
        job(a[1], a[2], device)
        return 0
    if a[:1] == ["drive"] and len(a) >= 3:
        phase_s = float(a[a.index("--phase-s") + 1]) if "--phase-s" in a else 2.0
        out = a[a.index("--json") + 1] if "--json" in a else None
        return drive(a[1], a[2], device, phase_s, out)
    sys.exit(__doc__)


if __name__ == "__main__":
    sys.exit(main())
