"""bpfsight monitor: Prometheus metrics of real workloads, scraped by a real Prometheus server.

Ground truth comes from the workloads (tests/workloads/syscalls.c makes exactly N getppid and
M nanosleep, cuda_dlopen a known sequence of CUDA calls per round) and, for GIL waits, from
bpftrace timing take_gil on the same process (as test_gil.py does). The answers checked are
Prometheus's, through its HTTP API, after it scraped the monitor every 250 ms.
"""
import os
import re
import shutil
import signal
import socket
import subprocess
import time

from helpers import (BPFSIGHT, Skip, alone, check, eq, need_root, row, run, spawn, stats, tell,
                     tmpdir, wait_for, workload)
from monitor_prom import PROMTOOL, Monitor, Prometheus, metric
from test_nccl import PER_REP as NCCL_PER_REP, need_no_gpu
from test_gil import LIBC, WORK, libpython_of, need_pyenv, take_gil_bpftrace, truth_of

# For tests/run_tests.py: about how long these tests take on CI's machine (its order).
SECONDS = 15

SYSCALLS = workload("syscalls")
NCCL_CALLS = workload("nccl/nccl_calls")
DLOPEN = workload("cuda/cuda_dlopen")
CUDART = "/usr/local/cuda/lib64/libcudart.so.13"


def test_monitor_refuses_bad_listen():
    """Malformed or unusable --listen values: exit 1 and a message saying what to give, before
    anything is loaded (no root needed to be told)."""
    # A bare port and ":PORT" are good ones (test_stats_view.py).
    for bad in ["127.0.0.1", "127.0.0.1:", "127.0.0.1:99999", "127.0.0.1:-1", "127.0.0.1:94x",
                "::1:9464", "[::1]9464", "example.com:9464", "94x", ":", ":94x"]:
        p = run([BPFSIGHT, "monitor", "--listen", bad, "-d", "1"])
        eq(p.returncode, 1, f"--listen {bad}: exit status")
        check(f"bad --listen '{bad}'" in p.stderr and "ADDR:PORT" in p.stderr,
              f"--listen {bad}: {p.stderr.strip()}")
    # A port another program holds.
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen(1)
        taken = f"127.0.0.1:{s.getsockname()[1]}"
        p = run([BPFSIGHT, "monitor", "--listen", taken, "-d", "1"])
    eq(p.returncode, 1, "address in use: exit status")
    check("cannot listen on" in p.stderr and "in use" in p.stderr, p.stderr.strip())
    p = run([BPFSIGHT, "monitor", "--listen", "192.0.2.1:9464", "-d", "1"])
    eq(p.returncode, 1, "not a local address: exit status")
    check("not an address of this machine" in p.stderr, p.stderr.strip())


@alone("a system-wide monitor (-a): other tests' processes would be traced by it")
def test_monitor_syscalls_exact_exit_grace_promtool_sigterm():
    """Exact per-process syscall counts as Prometheus stores them (short getppid calls are
    counted in the kernel, the 1 ms nanosleeps each arrive as a record); the exposition passes
    `promtool check metrics`; the process's series go after --exit-grace; SIGTERM ends the
    monitor with status 0."""
    need_root()
    n, m = 25000, 40
    mon = Monitor("-a", "-t", "osrt", "--top", "100000", "--exit-grace", "3s")
    prom = Prometheus(mon.target)
    w = spawn([SYSCALLS, "--wait-stdin", str(n), str(m)])
    pid = int(w.stdout.readline().split()[1])
    tell(w, "go")
    eq(w.wait(60), 0, "workload exit")
    sel = f'bpfsight_syscalls_total{{pid="{pid}",syscall="%s"}}'
    # Every process's counters are kept while it runs and for the grace period after.
    lost = 'sum(bpfsight_events_lost_total)'
    try:
        wait_for(lambda: prom.value(sel % "getppid") == n, 20, f"getppid == {n} in Prometheus")
        wait_for(lambda: prom.value(sel % "nanosleep") == m, 20, f"nanosleep == {m}")
    except AssertionError as e:
        raise AssertionError(f"{e}: getppid {prom.value(sel % 'getppid')}, nanosleep "
                             f"{prom.value(sel % 'nanosleep')}, lost {prom.value(lost)}")
    eq(prom.value(f'max_over_time({sel % "getppid"}[5m])'), n, "getppid, max over time")
    slept = prom.value(f'bpfsight_syscall_seconds_total{{pid="{pid}",syscall="nanosleep"}}')
    check(m * 0.001 <= slept < m * 0.001 + 5, f"{slept} s in {m} nanosleep(1 ms)")
    # The exposition is valid for Prometheus's own linter.
    text = mon.metrics()
    lint = subprocess.run([PROMTOOL, "check", "metrics"], input=text, capture_output=True,
                          text=True)
    eq(lint.returncode, 0, f"promtool check metrics: {lint.stdout}{lint.stderr}")
    check(f'pid="{pid}"' in text, "the workload's series are served")
    # The grace period ends: its series leave the exposition, then Prometheus marks them stale.
    wait_for(lambda: f'pid="{pid}"' not in mon.metrics(), 20, "the exited pid's series to go")
    wait_for(lambda: prom.value(sel % "getppid") is None, 20, "Prometheus: series stale")
    prom.stop()
    eq(mon.stop(signal.SIGTERM), 0, f"exit status after SIGTERM ({mon.stderr[-400:]})")
    check("bpfsight monitor: stopped by SIGTERM: " in mon.stderr, mon.stderr[-300:])


@alone("a system-wide monitor (-a): other tests' processes would be traced by it")
def test_monitor_cuda_calls_per_api():
    """A CUDA workload's calls counted per API (they fail without a GPU, but enter the real
    libcudart, so every probe fires): cuda_dlopen's rounds, each one cudaMalloc, cudaMemcpy,
    cudaDeviceSynchronize and cudaFree."""
    need_root()
    if not os.path.exists(CUDART) or not os.path.exists(DLOPEN):
        raise Skip(f"needs the CUDA toolkit ({CUDART}) and {DLOPEN} (make test-build)")
    rounds = 7
    mon = Monitor("-a", "-t", "cuda", "--top", "100000")
    prom = Prometheus(mon.target)
    w = spawn([DLOPEN, "--after-ms", "300", str(rounds)])
    eq(w.wait(30), 0, "workload exit")
    pid = int(re.search(r"^pid (\d+)", w.stdout.read(), re.M).group(1))
    for api in ("cudaMalloc", "cudaMemcpy", "cudaDeviceSynchronize", "cudaFree"):
        q = f'bpfsight_cuda_api_duration_seconds_count{{pid="{pid}",api="{api}"}}'
        wait_for(lambda: prom.value(q) == rounds, 20, f"{q} == {rounds}")
        le = prom.value(f'bpfsight_cuda_api_duration_seconds_bucket{{pid="{pid}",api="{api}",'
                        f'le="+Inf"}}')
        eq(le, rounds, f"{api}: +Inf bucket")
    calls = prom.query(f'bpfsight_cuda_api_duration_seconds_count{{pid="{pid}"}}')
    eq(sorted(c["metric"]["api"] for c in calls),
       sorted(["cudaMalloc", "cudaMemcpy", "cudaDeviceSynchronize", "cudaFree"]),
       "the APIs it called, and no others (depth-0 calls only)")
    prom.stop()


@alone("a system-wide monitor (-a): other tests' processes would be traced by it")
def test_monitor_nccl_calls_per_api():
    """NCCL calls per API as Prometheus has them: nccl_calls' table of depth-0 calls per
    repetition (test_nccl.py), for 2 repetitions of a process started after the monitor."""
    need_no_gpu()  # nccl_calls' table assumes NCCL's inits fail
    if not os.path.exists(NCCL_CALLS):
        raise Skip(f"needs {NCCL_CALLS} (make test-build with the CUDA toolkit's libnccl)")
    mon = Monitor("-a", "-t", "nccl", "--top", "100000")
    prom = Prometheus(mon.target)
    w = spawn([NCCL_CALLS, "--wait-stdin", "2"])
    pid = int(re.search(r"^pid (\d+)", w.stdout.readline()).group(1))
    # -a probes a new process's libraries within a bounded delay (test_cuda's DISCOVERY_MS)
    time.sleep(0.3)
    w.stdin.write("g")
    w.stdin.flush()
    eq(w.wait(60), 0, "workload exit")
    q = f'bpfsight_nccl_duration_seconds_count{{pid="{pid}"}}'
    want = {api: 2 * n for api, n in NCCL_PER_REP.items()}
    got = {}

    def all_there():
        got.clear()
        got.update({r["metric"]["api"]: float(r["value"][1]) for r in prom.query(q)})
        return got == want
    try:
        wait_for(all_there, 20, "every NCCL API's count")
    except AssertionError:
        raise AssertionError(f"{got} != {want}")
    prom.stop()


@alone("a system-wide monitor (-a): other tests' processes would be traced by it")
def test_monitor_gil_wait_matches_take_gil():
    """GIL wait time of 3 CPU-bound threads as Prometheus has it (the total, and its increase
    over the run) within 10% of take_gil's latency measured by bpftrace on the same process."""
    need_root()
    py = need_pyenv(full=True)  # bpftrace needs take_gil in .symtab
    lib = libpython_of(py)
    if not shutil.which("bpftrace") or not lib or not os.path.exists(LIBC):
        raise Skip("needs bpftrace, glibc and a libpython with take_gil in .symtab")
    mon = Monitor("-a", "-t", "gil", "--top", "100000")
    prom = Prometheus(mon.target)
    # The main thread named as mode cpu names it before "ready": the process's series, labelled
    # by its comm too, is the one at 0 before the waits begin (named after "go", the waits
    # until the monitor saw the new name went into a series first scraped above 0, which
    # increase() cannot see: 25% of them once in a loaded run).
    w = spawn([py, WORK, "--go", "--name", "main", "cpu", "3", "2.5"])
    pid = int(w.stdout.readline().split()[1])
    one = f'bpfsight_gil_wait_seconds_total{{pid="{pid}",comm="main"}}'
    sel = f"sum({one})"
    wait_for(lambda: prom.value(sel) == 0, 30, f"{sel} at 0 in Prometheus")
    bt, _ = take_gil_bpftrace(lib, pid)
    tell(w, "go")
    truth_of(w.stdout.read())
    w.wait(60)
    text = bt.communicate(timeout=60)[0]
    theirs = sum(int(v) for v in re.findall(r"@t\[\d+\]: (\d+)", text)) / 1e9
    check(theirs > 1, f"bpftrace measured {theirs} s of waits: {text[-400:]}")
    # The monitor's last snapshot of the exited threads arrives within a poll (1 s): a
    # scrape a poll after now (the process has exited: w.wait above) has the final value.
    wait_for(lambda: (prom.value(sel) or 0) >= 0.9 * theirs, 20, f"{sel} near {theirs}")
    exited = time.time()
    wait_for(lambda: (prom.value(f"max(timestamp({one}))") or 0) >= exited + 1, 20,
             "a scrape a poll after the exit")
    ours = prom.value(sel)
    check(abs(ours - theirs) <= 0.1 * theirs, f"Prometheus {ours} s vs take_gil {theirs} s")
    # increase() at the last scrape, over a series that began at 0 before the first wait:
    # Prometheus extrapolates neither end (not before a first sample of 0, not past the range's
    # end at the last sample), so it is the stored total.
    last = prom.value(f"max(timestamp({one}))")
    inc = prom.value(f"sum(increase({one}[10m] @ {last}))")
    check(abs(inc - ours) <= 0.001 * ours, f"increase() {inc} s vs the stored {ours} s")
    waits = prom.value(f'sum(bpfsight_gil_waits_total{{pid="{pid}"}})')
    check(waits and waits > 10, f"{waits} waits")
    prom.stop()


def test_monitor_flight_recorder_dumps_while_metrics_go_on():
    """monitor --flight-recorder works as record's: SIGUSR1 dumps the window to -o's stem + -1,
    a complete trace holding the workload's exact calls, while the metrics count them too."""
    need_root()
    n, m = 3000, 20
    out = os.path.join(tmpdir(), "fr.bst")
    w = spawn([SYSCALLS, "--wait-stdin", str(n), str(m)])
    pid = int(w.stdout.readline().split()[1])
    keeper = spawn(["sleep", "60"])  # keeps the monitor's -p targets alive after the workload
    mon = Monitor("-p", f"{pid},{keeper.pid}", "-t", "osrt", "--flight-recorder=60s", "-o", out)
    check("flight recorder" in mon.stderr, mon.stderr)
    tell(w, "go")
    eq(w.wait(60), 0, "workload exit")
    sel = f'bpfsight_syscalls_total{{pid="{pid}",comm="syscalls",syscall="%s"}}'
    wait_for(lambda: metric(mon.metrics(), sel % "getppid") == n, 20, f"getppid == {n}")
    eq(metric(mon.metrics(), sel % "nanosleep"), m, "nanosleep in the metrics")
    mon.p.send_signal(signal.SIGUSR1)
    wait_for(lambda: "flight recorder: wrote" in mon.stderr, 30, "the dump")
    dumped = re.findall(r"flight recorder: wrote (\S+):", mon.stderr)[0]
    eq(dumped, out[:-4] + "-1.bst", "dump path")
    osrt = stats(dumped, "osrt_sum")["osrt_sum"]
    eq(row(osrt, name="getppid")["count"], n, "getppid in the dump")
    eq(row(osrt, name="nanosleep")["count"], m, "nanosleep in the dump")
    keeper.kill()
    eq(mon.stop(signal.SIGTERM), 0, f"exit status ({mon.stderr[-400:]})")


def test_monitor_refuses_output_without_flight_recorder():
    for args, msg in [(["-o", "x.bst"], "monitor writes no trace file"),
                      (["--flight-recorder=60s"], "--flight-recorder needs -o FILE"),
                      (["--top", "0"], "bad --top '0'"),
                      (["--", "true"], "monitor launches nothing"),
                      (["--job-label-env", "1X"], "bad --job-label-env '1X'"),
                      (["--follow"], "--follow follows -p's job"),
                      (["--follow", "-p", "1", "-d", "5"], "--follow waits for the job's "
                                                           "restarts, -d stops")]:
        p = run([BPFSIGHT, "monitor", "-l", "127.0.0.1:0", *args])
        eq(p.returncode, 1, f"{args}: exit status")
        check(msg in p.stderr, f"{args}: {p.stderr.strip()}")


def test_monitor_without_shim_says_how_to_get_one():
    """-t gpu on a process without the cupti-shim: the monitor says so under its own name and
    points to what works for it (it has no --inject: a one-off record with it)."""
    need_root()
    p = spawn(["sleep", "60"])
    m = Monitor("-t", "gpu", "-p", str(p.pid))
    want = f"bpfsight monitor: warning: pid {p.pid} was not started with the cupti-shim"
    for _ in range(100):  # said when the targets are first looked at, after the start line
        if want in m.stderr:
            break
        time.sleep(0.1)
    eq(m.stop(), 0, "monitor exit status")
    check(want in m.stderr and f"`bpfsight record -p PID -t gpu --inject -d 1s` once"
          in m.stderr and "bpfsight record:" not in m.stderr, m.stderr)
    p.kill()
    p.wait()


@alone("a system-wide monitor (-a): other tests' processes would be traced by it")
def test_monitor_gpu_kernels_and_shim_losses():
    """The cupti-shim's channel (spoken exactly by tests/workloads/shim_fake): its one GPU
    kernel (device 1, 4000 ns) in the per-device GPU metrics, and the 5 records it says it
    dropped in bpfsight_events_lost_total{family="gpu",cause="shim_dropped"}."""
    need_root()
    fake = workload("shim_fake")
    if not os.path.exists(fake):
        raise Skip(f"{fake} missing (make test-build)")
    hold = os.path.join(tmpdir(), "hold")
    mon = Monitor("-a", "-t", "gpu,nvtx", "--top", "100000")
    p = spawn([fake, "basic", "--hold-file", hold])
    try:
        pid = int(p.stdout.readline().split()[1])
        check(pid > 0, "fake's pid")
        check("sent 1 13" in p.stdout.readline() + p.stdout.readline(), "its batch was sent")
        k = 'bpfsight_gpu_kernels_total{device="1"}'
        wait_for(lambda: metric(mon.metrics(), k) == 1, 20, f"{k} == 1")
        eq(metric(mon.metrics(), 'bpfsight_gpu_kernel_seconds_total{device="1"}'), 4e-6,
           "kernel time")
        eq(metric(mon.metrics(), 'bpfsight_gpu_busy_seconds_total{device="1"}'), 4e-6,
           "busy time of a device that ran one kernel")
        lost = 'bpfsight_events_lost_total{family="gpu",cause="shim_dropped"}'
        # Losses user space finds are written (as LOSS records) every 100 ms.
        wait_for(lambda: metric(mon.metrics(), lost) == 5, 20, f"{lost} == 5")
    finally:
        open(hold, "w").close()
    eq(p.wait(30), 0, "fake exit")
    eq(mon.stop(), 0, f"monitor exit ({mon.stderr[-300:]})")
