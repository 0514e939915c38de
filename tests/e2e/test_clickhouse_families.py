"""The verdict's rules of torch, mem, cublas, blas and gpumetrics judged from a ClickHouse
server (`stats --from`, docs/CLICKHOUSE.md "The verdict from the server"): on short real
recordings this module makes once, shipped to each engine (clickhouse_server.ENGINES: Debian's
18.16, chDB's 26.7), each family's claims from the server equal `stats FILE`'s, line for line,
and the line saying what the server could not judge no longer names it.

- A trainer bound by its DataLoader (Debian's python3-torch, 2 workers, the workload
  test_verdict_jobs.py records), attached with `record -p`, CPU samples and its GEMMs: torch's
  input-bound claim and its workers' detail (their time, their busiest line on a CPU, where
  they blocked), the workers named as their trainer's pool in every claim; blas's claim on
  the trainer's steps' sgemm_ calls (Debian's torch runs them on netlib's reference BLAS), the
  library named and what to install."""
import json
import os
import re
import subprocess
import time

from clickhouse_server import once, shared, stats_verdict
from helpers import (BUILD, BPFSIGHT, Skip, check, eq, keep_tmpdir, need_root, run, spawn,
                     tmpdir, workload)
from pymods import has

SECONDS = 30
PARAMS = ("18.16", "26.7")  # clickhouse_server.ENGINES: each test runs on both

HERE = os.path.dirname(os.path.abspath(__file__))
INPUT_PY = os.path.realpath(os.path.join(HERE, "..", "workloads", "torch_input_bound.py"))
DEBIAN_PY = "/usr/bin/python3"
FAKE_NVML = os.path.join(BUILD, "tests", "nvml")
MORE = re.compile(r"^\s+\(\d+ more: ")
# The reports the rules read that the server does not compute yet (none now: docs/CLICKHOUSE.md):
# a file's claims citing these have no line there.
NOT_THERE = ()


def verdict(args):
    """stats' verdict block of ARGS (--wide: a line per claim) without its "N more" lines and
    the claims citing what the server does not compute, and what the server did not judge."""
    lines, rest = stats_verdict(args)
    return [l for l in lines
            if not MORE.match(l) and not any(f"(-r {r}" in l for r in NOT_THERE)], rest


said_by = {}  # what each recording's recorder said: a failure's message holds it


def input_bound_recording():
    """The DataLoader-bound trainer attached for 2 s (sched's stacks, CPU samples, its GEMMs);
    its pid."""
    if not has(DEBIAN_PY, "torch"):
        raise Skip("Debian's python3-torch is not installed (make deps)")
    # Samples behind 3 ms of storage latency: the workers mostly sleep, the trainer waits.
    job = spawn([DEBIAN_PY, INPUT_PY, "--io-ms", "3", "--item-ms", "0.2", "--batch", "32",
                 "--hidden", "1024", "--seconds", "60"])
    try:
        pid = json.loads(job.stdout.readline())["pid"]
        time.sleep(0.2)
        path = os.path.join(keep_tmpdir(), "input.bst")
        p = run([BPFSIGHT, "record", "-p", str(pid), "-t", "sched,cpu,blas", "-d", "2s",
                 "-o", path], timeout=120)
        eq(p.returncode, 0, p.stderr[-600:])
        said_by[path] = p.stderr[-1500:]
    finally:
        job.stdin.close()
        job.wait(timeout=30)
    return path, pid


def gpu_metrics_recording():
    """Two fake GPUs sampled at 200 Hz for a second, memory-bound and power-capped."""
    if not os.path.exists(os.path.join(FAKE_NVML, "libnvidia-ml.so.1")):
        raise Skip(f"{FAKE_NVML}/libnvidia-ml.so.1 missing: run make test-build")
    env = dict(os.environ, LD_LIBRARY_PATH=FAKE_NVML, FAKE_NVML_DEVICES="2",
               FAKE_NVML_DRAM="85", FAKE_NVML_SM="30")
    path = os.path.join(keep_tmpdir(), "gpum.bst")
    p = run([BPFSIGHT, "record", "-o", path, "-t", "gpumetrics", "--gpu-metrics-frequency=200",
             "--", workload("syscalls"), "0", "1", "1000000"], env=env, timeout=120)
    eq(p.returncode, 0, p.stderr[-600:])
    return path


def test_families_judged_from_the_server(engine):
    need_root()
    path, pid = once("input", input_bound_recording)
    files = {path: ("torch", "blas"), once("gpum", gpu_metrics_recording): ("gpumetrics",)}
    ch = shared(engine)
    spool = os.path.join(tmpdir(), "spool")
    p = run([BPFSIGHT, "ship", *files, "--to", ch.url("fam"), "--spool", spool], timeout=300)
    eq(p.returncode, 0, f"ship ({p.stderr[-800:]})")
    for path, fams in files.items():
        mine, rest = verdict(["--from", ch.url("fam"), "--file", path])
        theirs, _ = verdict([path])
        said = "\n".join(theirs) + "\nthe recorder said: " + said_by.get(path, "")
        eq(mine[1:], theirs[1:], f"{fams}: the verdict's claims from the server")
        # the first line, where the claim it names is one the server judges
        if any(theirs[0].split(": ", 2)[-1] in l for l in theirs[1:]):
            eq(mine[0], theirs[0], f"{fams}: the verdict's first line from the server")
        for fam in fams:
            check(not re.search(rf"the rules of [^;]*\b{fam}\b", rest), f"{fam}: {rest}")
        # what each family claims, whatever comes first on a loaded machine (the trainer
        # preempted inside the DataLoader is runnable there: time no stack shows)
        if "torch" in fams:
            check(any(re.match(rf" [* ] input +[\d.]+%  the trainer, MainThread \(main thread, "
                               rf"pid {pid}\), waited for its next batch .* at `main` "
                               r"\(torch_input_bound\.py:\d+\), in \d+ waits in the "
                               r"DataLoader", l) for l in theirs), said)
            check(any(re.match(r" +\d+\.\d% +its 2 DataLoader workers ran on a CPU ", l)
                      for l in theirs), said)
        if "blas" in fams:
            check(any(re.match(rf" [* ] CPU +\d+\.\d%  MainThread \(main thread, pid {pid}\) "
                               r"spent .* in \d+ CPU GEMMs at [\d.]+ GFLOP/s, on the reference "
                               r"BLAS \(libblas\.so", l) for l in theirs), said)
        if "gpumetrics" in fams:
            for gpu in (0, 1):
                check(any(re.match(rf" [* ] GPU +[\d.]+%  GPU {gpu} \(Fake H100 {gpu}\) is "
                                   r"memory-bound: busy \d+% of the time, its DRAM bandwidth "
                                   r"at 85% ", l) for l in theirs), said)
                check(any(re.match(rf" [* ] GPU +[\d.]+%  GPU {gpu} \(Fake H100 {gpu}\) was "
                                   r"throttled \d+% of the time: its clocks held down, mostly "
                                   r"by sw_power_cap", l) for l in theirs), said)
