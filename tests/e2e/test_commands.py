"""Every command README.md and docs/USAGE.md show runs as written (tests/e2e/commands.py):
against a GIL-bound Python job, a CPU PyTorch job with DataLoader workers and a program
calling the real libcudart, each exits 0 and leaves what its comment promises. Then the
combinations users make: --inject with the default families and with each opt-in family, and
-t torch,gil,cpu --capture-range=steps:N. The system-wide ones (-a, monitor, top of every
process) are test_commands_system.py's, alone.

Every example of the docs is claimed by one scenario below (or by test_commands_system.py),
by its text as the docs write it, or skipped by SKIPPED with the reason: a command the docs
gain, or change, fails test_every_documented_command_is_run until a scenario runs it."""
import json
import os
import re
import shutil
import signal
import subprocess
import time

import helpers
import test_commands_system as system
from clickhouse_server import ClickHouse
from commands import (DEBIAN_PY, FAMILY_NEEDS, WORKLOADS, Session, examples, need_cuda,
                      need_torch)
from free_ports import free_port
from helpers import BPFSIGHT, check, dump, eq, info, run, workload

# For tests/run_tests.py: about how long these tests take on CI's machine (its order).
SECONDS = 30
SPLIT = True

# What cannot run in make check, and where it does run.
SKIPPED = {
    "make deps && make demo": ".ci/run runs it on a clean clone before make check",
    "make check": "this suite",
    "make && sudo make install": "test_install installs into a DESTDIR and runs what it put",
    "sudo make uninstall": "test_install: make uninstall removes exactly what it installed",
    "make deb && sudo apt install ./build/deb/bpfsight_*.deb":
        "make check-deb installs the package into a clean Debian root (debootstrap)",
    "make check-deb": "its own target: it bootstraps a Debian root",
}

LAUNCH = ["sudo bpfsight record -o run.bst -- python3 train.py",
          "bpfsight info run.bst",
          "bpfsight stats run.bst",
          "bpfsight stats run.bst --comm python3 --top 5 --wide",
          "bpfsight stats run.bst -r osrt_sum --format json",
          "bpfsight dump run.bst | head",
          "bpfsight export run.bst --format perfetto -o run.pftrace",
          "bpfsight report run.bst -o run.html",
          "bpfsight top run.bst"]
DEMO = ["build/bpfsight report build/demo.bst -o demo.html"]
ATTACH = ["sudo bpfsight record -o run.bst -p 4242 -d 30s",
          "sudo bpfsight record -t cpu,gil -p 4242 -d 10s",
          "bpfsight export run.bst --format svg -o flame.svg",
          "bpfsight stats run.bst -r cpu_sum,gil_stacks",
          "sudo bpfsight stacks -p 4242",
          "sudo bpfsight top -p 4242"]
BLOCKING = ["sudo bpfsight record -t sched --stacks=sched -p 4242 -d 10s",
            "bpfsight stats run.bst -r offcpu_stacks"]
CUDA = ["sudo bpfsight record -t cuda --dry-run -p 4242",
        "sudo bpfsight record -t cuda --capture-range=cudaProfilerApi -- ./train",
        "sudo bpfsight record -t cuda --stacks=cuda -- python3 train.py",
        "sudo bpfsight record -t cuda,gpu,nvtx -- python3 train.py"]
TORCH = ["sudo bpfsight record -p 4242 -t torch,cuda,gpu --inject --capture-range=steps:5",
         "bpfsight stats run.bst -r torch_op_sum,torch_step_sum"]
MEM = ["sudo bpfsight record -o run.bst -t mem -p 4242 -d 30s",
       "bpfsight stats run.bst -r mem_sum,mem_peak,mem_leaks"]
SHIM_ENV = ['eval "$(sudo bpfsight shim --install /opt/bpfsight -e)"',
            "sudo bpfsight record -p 4242 -t gpu,nvtx -d 10s"]
MISC = ["bpfsight record --features", "bpfsight --help", "bpfsight --version",
        "bpfsight record -t osrt -- /bin/true"]
CLICKHOUSE = ["sudo bpfsight record -t sched --stacks=sched -o run.bst -p 4242 -d 10s",
              "bpfsight ship run.bst --to clickhouse://127.0.0.1:8123/job-1",
              "bpfsight stats --from clickhouse://127.0.0.1:8123/job-1 -r sched_sum --format json",
              "bpfsight stacks --from clickhouse://127.0.0.1:8123/job-1 --offcpu",
              "bpfsight ship --watch dumps --to clickhouse://127.0.0.1:8123/job-1",
              "sudo bpfsight monitor -p 4242 -l 127.0.0.1:9464 --ship "
              "clickhouse://127.0.0.1:8123/job-1 --ship-interval 1s"]
CLAIMED = (LAUNCH + DEMO + ATTACH + BLOCKING + CUDA + TORCH + MEM + SHIM_ENV + MISC +
           CLICKHOUSE)
TRAIN_TORCH = f"{DEBIAN_PY} {WORKLOADS}/torch_train.py --steps 3"
TRAIN_CUDA_PY = f"python3 {WORKLOADS}/py_cuda.py 20"


def test_every_documented_command_is_run():
    docs = examples()
    claimed = CLAIMED + system.CLAIMED
    eq(sorted(c for c in claimed if claimed.count(c) > 1), [], "claimed twice")
    eq(sorted(c for c in docs if c not in claimed and c not in SKIPPED), [],
       "documented commands no scenario runs (add one, or a reason to SKIPPED)")
    eq(sorted(c for c in list(claimed) + list(SKIPPED) if c not in docs), [],
       "scenarios of commands the docs no longer show")


def families(path):
    return info(path)["families"].split(",")


def stats_json(path, reports):
    p = run([BPFSIGHT, "stats", path, "-r", reports, "--format", "json"])
    eq(p.returncode, 0, p.stderr)
    return json.loads(p.stdout)["reports"]


def default_families(s):
    """The families a recording without -t has (the registry's default set)."""
    p = s.run("bpfsight record -o default.bst -- /bin/true")
    return families(s.last)


def test_launch_then_read_it():
    need_torch()
    s = Session()
    try:
        p = s.run(LAUNCH[0], train=TRAIN_TORCH)
        check('"steps": 3' in p.stdout, f"the job trained: {p.stdout[-300:]}")
        trace = s.last
        # a job's recording samples its CPUs by default (the verdict's ledger)
        eq(sorted(families(trace)), sorted(["proc", "osrt", "sched", "cpu", "gil", "cuda",
                                             "nccl", "gpu", "nvtx"]), "the default families")
        p = s.run(LAUNCH[1])
        check("families:" in p.stdout and "lost:" in p.stdout, p.stdout)
        p = s.run(LAUNCH[2])
        # first the verdict (after a warning, when something was lost)
        check(re.search(r"\A(WARNING: [\s\S]*?\n\n?)?Verdict: ", p.stdout), p.stdout[:300])
        p = s.run(LAUNCH[3])
        check("python3" in p.stdout and "** " in p.stdout, p.stdout[:600])
        # the same selection, counted: --comm python3 keeps only the job's process
        rows = stats_json(trace, "osrt_sum")["osrt_sum"]
        p = s.run(LAUNCH[4])
        eq(json.loads(p.stdout)["reports"]["osrt_sum"], rows, "osrt_sum as JSON")
        check(rows and all("count" in r for r in rows), f"osrt_sum rows: {rows[:2]}")
        p = s.run(LAUNCH[5])
        lines = p.stdout.splitlines()
        eq(len(lines), 10, "head's ten lines")
        check(all({"ts", "pid", "kind", "name"} <= json.loads(l).keys() for l in lines), lines[0])
        p = s.run(LAUNCH[6])
        check(os.path.getsize(os.path.join(s.dir, "run.pftrace")) > 0, "run.pftrace")
        check("wrote run.pftrace" in p.stderr, p.stderr)
        s.run(LAUNCH[7])
        with open(os.path.join(s.dir, "run.html")) as f:
            check(f.read(200).lstrip().lower().startswith("<!doctype html"), "run.html")
        p = s.run(LAUNCH[8])
        check(re.search(r"^top - ", p.stdout, re.M), f"top's frames: {p.stdout[:300]}")
    finally:
        s.close()


def test_the_demos_report():
    s = Session()
    try:
        os.makedirs(os.path.join(s.dir, "build"))
        p = run([BPFSIGHT, "record", "--force", "-o", os.path.join(s.dir, "build", "demo.bst"),
                 "--", workload("demo_pipeline")], timeout=120)
        eq(p.returncode, 0, p.stderr[-500:])  # what make demo records (tests/demo.sh)
        s.run(DEMO[0])
        check(os.path.getsize(os.path.join(s.dir, "demo.html")) > 1000, "demo.html")
    finally:
        s.close()


def test_attach_to_a_python_job():
    s = Session()
    try:
        job = s.python_job()
        t0 = time.monotonic()
        s.run(ATTACH[0], pid=job.pid)
        took = time.monotonic() - t0
        i = info(s.last)
        eq(i["target"], f"pid: {job.pid}", "the attached job")
        # From the recording's start to its end, which comes after -d's end by what the stop
        # does first (the edge snapshot: 0.3 s once on a loaded machine), within the command.
        check(1.9e9 <= i["duration_ns"] <= took * 1e9, f"-d 2s: {i['duration_ns']} in a "
              f"command of {took:.2f} s")
        p = s.run(ATTACH[1], pid=job.pid)
        check(re.search(r"wrote report\d+\.bst", p.stderr), f"the default name: {p.stderr}")
        eq(sorted(families(s.last)), ["cpu", "gil", "proc"], "-t cpu,gil")
        s.run(ATTACH[2])
        with open(os.path.join(s.dir, "flame.svg")) as f:
            svg = f.read()
        check(svg.startswith("<?xml") and "<svg" in svg and "cpu_thread" in svg,
              "a flame graph naming the job's Python function")
        p = s.run(ATTACH[3])
        check("(cpu_sum)" in p.stdout and "(gil_stacks)" in p.stdout, p.stdout[:600])
        p = s.run(ATTACH[4], pid=job.pid)
        check(f"Process {job.pid}:" in p.stdout and "cpu_thread" in p.stdout, p.stdout[:800])
        rc, out, err = s.run_until(ATTACH[5], r"^top - ", pid=job.pid)
        eq(rc, 0, f"top after Ctrl-C: {err[-300:]}")
        check(re.search(rf"^\s*{job.pid}\s", out, re.M), f"the job's row: {out[:600]}")
    finally:
        s.close()


def test_where_a_job_blocks():
    s = Session()
    try:
        job = s.blocking_job()
        s.run(BLOCKING[0], pid=job.pid)
        p = s.run(BLOCKING[1])
        check("mode_io" in p.stdout, f"the sleeping Python function: {p.stdout[:800]}")
    finally:
        s.close()


def test_cuda_programs():
    need_cuda()
    s = Session()
    try:
        job = s.cuda_job()
        p = s.run(CUDA[0], pid=job.pid)
        check("cudaStreamQuery" in p.stdout, f"the job's sites: {p.stdout[:400]}")
        s.run(CUDA[1], train=f"{workload('cuda/cuda_api_shared')} 3")
        rows = stats_json(s.last, "cuda_api_sum")["cuda_api_sum"]
        eq({r["name"]: r["count"] for r in rows}.get("cudaLaunchKernel"), 18,
           "the launches inside the profiler ranges")
        for cmd in CUDA[2:]:  # a Python program whose CUDA calls all fail: no GPU here
            s.run(cmd, train=TRAIN_CUDA_PY)
            calls = [e["name"] for e in map(json.loads, run([BPFSIGHT, "dump", s.last]).stdout
                                            .splitlines()) if e["kind"] == "cuda_api"]
            eq((calls.count("cudaMalloc"), calls.count("cudaMemcpy")), (20, 20), cmd)
    finally:
        s.close()


def test_torch_steps_of_a_running_job():
    s = Session()
    try:
        job = s.torch_job()
        p = s.run(TORCH[0], pid=job.pid)
        check("5 steps captured" in p.stderr, p.stderr[-600:])
        p = s.run(TORCH[1])
        check("(torch_step_sum)" in p.stdout and "(torch_op_sum)" in p.stdout, p.stdout[:400])
        eq(len(stats_json(s.last, "torch_step_sum")["torch_step_sum"]), 5, "five steps")
    finally:
        s.close()


def test_where_a_torch_jobs_memory_goes():
    s = Session()
    try:
        job = s.torch_job()
        s.run(MEM[0], pid=job.pid)
        eq(sorted(families(s.last)), ["mem", "proc"], "-t mem")
        r = stats_json(s.last, "mem_sum,mem_peak,mem_leaks")
        pids = {row["pid"] for row in r["mem_sum"]}
        check(job.pid in pids and len(pids) >= 3, f"the job and its DataLoader workers: {pids}")
        if not r["mem_peak"]:  # a small job's peaks: small blocks, none of them sampled
            text = run([BPFSIGHT, "stats", s.last, "-r", "mem_peak"]).stdout
            check("none of the blocks live at its peak" in text,
                  f"what was live at the peaks, or why no row says it: {text}")
        p = s.run(MEM[1])
        check("(mem_sum)" in p.stdout and "(mem_leaks)" in p.stdout, p.stdout[:600])
    finally:
        s.close()


def test_a_job_started_with_the_shim():
    s = Session()
    try:
        p = s.run(SHIM_ENV[0] + " && env")
        env = dict(l.split("=", 1) for l in p.stdout.splitlines() if "INJECTION64_PATH=" in l)
        check(os.path.exists(env.get("NVTX_INJECTION64_PATH", "")), f"installed: {env}")
        job = s.start([workload("shim/nvtx_ranges"), "--loops", "400"],
                      env=dict(s.env, **env), ready=r"pid")
        s.run(SHIM_ENV[1], pid=job.pid)
        kinds = [e["kind"] for e in map(json.loads, run([BPFSIGHT, "dump", s.last]).stdout
                                        .splitlines()) if e["pid"] == job.pid]
        check("nvtx_range" in kinds, f"NVTX ranges of the job: {sorted(set(kinds))}")
    finally:
        s.close()


def test_what_usage_shows_in_its_prose():
    s = Session()
    try:
        check("--capture-range" not in s.run(MISC[0]).stdout, "features")
        check("usage: bpfsight COMMAND" in s.run(MISC[1]).stdout, "--help")
        check(s.run(MISC[2]).stdout.startswith("bpfsight "), "--version")
        s.run(MISC[3])
        check("osrt" in families(s.last), "-t osrt")
    finally:
        s.close()


# ---- the combinations users make ----

def test_inject_with_the_default_families():
    s = Session()
    try:
        job = s.torch_job()
        p = s.run("bpfsight record -p 4242 --inject -d 2s -o inj.bst", pid=job.pid)
        check("the cupti-shim is loaded" in p.stderr, p.stderr[-600:])
        eq(sorted(families(s.last)), sorted(default_families(s)), "the default families")
    finally:
        s.close()


def test_inject_with_each_opt_in_family():
    """Every opt-in family beside the defaults, in one --inject recording of a torch job
    (one recording per family took 38 s of make check): each is in the file's families."""
    s = Session()
    try:
        job = s.torch_job()
        default = default_families(s)
        every = run([BPFSIGHT, "__complete", "families"]).stdout.split()
        opt_in = [f for f in every if f not in default]
        check(opt_in, f"opt-in families: {every} less {default}")
        fams = ",".join([x for x in default if x != "proc"] + opt_in)
        needs = "".join(FAMILY_NEEDS.get(f, "") for f in opt_in)
        s.run(f"bpfsight record -p 4242 -t {fams} --inject -d 1s -o every.bst{needs}",
              pid=job.pid)
        recorded = families(s.last)
        eq([f for f in opt_in if f not in recorded], [], f"-t ...,{','.join(opt_in)}")
    finally:
        s.close()


def test_torch_gil_cpu_steps():
    s = Session()
    try:
        job = s.torch_job(sleep=None)  # steps back to back: the samples are the steps' own
        p = s.run("bpfsight record -p 4242 -t torch,gil,cpu --inject --capture-range=steps:3 "
                  "-o steps.bst", pid=job.pid)
        check("3 steps captured" in p.stderr, p.stderr[-600:])
        r = stats_json(s.last, "torch_step_sum")
        eq(len(r["torch_step_sum"]), 3, "three steps")
        # The job's steps take milliseconds: at 99 Hz the capture holds a few samples, all
        # inside the steps, and the recording says they are too few (as many as the file's,
        # under 100).
        start = min(x["start_ns"] for x in r["torch_step_sum"])
        end = max(x["start_ns"] + x["wall_ns"] for x in r["torch_step_sum"])
        t0 = info(s.last)["start_monotonic_ns"]
        samples = [e for e in dump(s.last) if e["kind"] == "cpu_sample"]
        # Said in full when it fails (it did once under load, not understood yet): each
        # step, each sample's thread and time, and what the recorder said.
        check(all(start <= e["ts"] - t0 <= end for e in samples),
              f"samples inside the steps [{start}, {end}]: "
              f"{[(e['pid'], e['tid'], e['ts'] - t0) for e in samples]}; steps "
              f"{[(x['step'], x['start_ns'], x['wall_ns']) for x in r['torch_step_sum']]}; "
              f"stderr: {p.stderr[-1500:]}")
        m = re.search(r"cpu: (\d+) samples over [\d.]+ ms captured at 99 Hz: too few", p.stderr)
        check(bool(m) == (len(samples) < 100) and (not m or int(m.group(1)) == len(samples)),
              f"{len(samples)} samples: {p.stderr[-600:]}")
    finally:
        s.close()


def test_clickhouse_commands():
    """The ClickHouse commands as USAGE.md shows them, against a real server (one, started
    here: clickhouse_server.py): a blocking job's off-CPU time recorded, shipped, its
    sched_sum computed in the server equal to stats on the file, its off-CPU stacks folded
    there as export writes them; a watched folder's file shipped (the same file: nothing
    added, said); a monitor's metrics shipped as intervals."""
    s = Session()
    ch = ClickHouse()
    s.subs = [(r"127\.0\.0\.1:8123", ch.netloc()),
              (r"127\.0\.0\.1:9464", f"127.0.0.1:{free_port()}")]
    try:
        job = s.blocking_job()
        s.run(CLICKHOUSE[0], pid=job.pid)
        trace = s.last
        p = s.run(CLICKHOUSE[1])
        check("shipped" in p.stderr, p.stderr[-400:])
        p = s.run(CLICKHOUSE[2])
        eq(json.loads(p.stdout)["reports"]["sched_sum"], stats_json(trace, "sched_sum")[
            "sched_sum"], "sched_sum computed in the server")
        p = s.run(CLICKHOUSE[3])
        out = os.path.join(s.dir, "offcpu.folded")
        run([BPFSIGHT, "export", trace, "--format", "folded-offcpu", "-o", out], check=True)
        with open(out) as f:
            want = f.read()
        check(want, "the job's off-CPU stacks")
        eq(p.stdout, want, "the off-CPU stacks folded in the server")
        os.makedirs(os.path.join(s.dir, "dumps"))
        shutil.copy(trace, os.path.join(s.dir, "dumps", "again.bst"))
        rc, _, err = s.run_until(CLICKHOUSE[4], r"already shipped")
        eq(rc, 0, f"--watch stopped by SIGINT: {err[-400:]}")
        line = s.command(CLICKHOUSE[5], pid=job.pid)
        mon = subprocess.Popen(["bash", "-c", "exec " + line], cwd=s.dir, text=True,
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        helpers._procs.append(mon)

        def intervals():
            return int(ch.rows("SELECT count() FROM bpfsight.events WHERE job = 'job-1' AND "
                               "kind = 'monitor_interval'")[0][0])
        helpers.wait_for(lambda: intervals() > 0 or mon.poll() is not None, timeout=120,
                         what="the monitor's first interval in the server")
        mon.send_signal(signal.SIGINT)
        _, err = mon.communicate(timeout=60)
        eq(mon.returncode, 0, f"monitor --ship: {err[-600:]}")
        check(intervals() > 0, f"its intervals in the server: {err[-400:]}")
    finally:
        s.close()
        ch.stop()
