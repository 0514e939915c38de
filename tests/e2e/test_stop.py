"""A recording always stops: -d, SIGINT and SIGTERM end it within 2 s whatever the event rate,
with the file closed cleanly and what it could not read counted.

tests/workloads/cuda_storm.c runs 64 threads calling the real libcudart's cudaGetDevice and
cudaStreamQuery in a loop (they fail fast without a GPU, past the cuda family's probes) on
this machine's 2 cores: far more records than a reader can take, so the ring is never empty.
The kernel's unregistering of the uprobes takes seconds with those threads on the cores: the
recorder hands its links to a detached process (user/record/link_reaper.h) and does not wait.
The recorder attaches with -p while the threads wait, then they start; the bound is from the
signal (or the end of -d) to the recorder's exit, the workload still running.
"""
import os
import signal
import subprocess
import time

from helpers import BPFSIGHT, SLOWDOWN, Skip, check, eq, info, need_root, spawn, tell, tmpdir, \
    workload

# For tests/run_tests.py: about how long these tests take on CI's machine (its order).
SECONDS = 25
ALONE = "64 threads spinning on every core: the other tests' workloads would crawl"
# Nothing beside them either (tests/run_tests.py): they take both cores, and what a stop
# reads in its bounded time is what a core beside them would take.
EXCLUSIVE = True
FUZZERS_BESIDE = ("a fuzzer at idle priority runs only on a core none of their threads "
                  "wants, and a thread that wakes takes the core from it at once")

CUDART = "/usr/local/cuda/lib64/libcudart.so.13"
STORM = workload("cuda_storm")
THREADS = 64
RUN_S = 1.0  # of storm before the stop: ~700k calls lost to a full ring, a stop of ~1.5 s
STOP_S = 2.0 * SLOWDOWN  # the promise: stopped within this much of the signal


def storm_recording(stop):
    """Record the storm with -p until STOP ("duration", "SIGINT", "SIGTERM"); returns
    (seconds from the stop to the recorder's exit, its stderr, the file)."""
    need_root()
    if not os.path.exists(CUDART):
        raise Skip("no libcudart (CUDA toolkit)")
    w = spawn([STORM, CUDART, str(THREADS)])
    pid = int(w.stdout.readline().split()[1])
    out = os.path.join(tmpdir(), "storm.bst")
    args = [BPFSIGHT, "record", "-o", out, "-p", str(pid), "-t", "cuda"]
    if stop == "duration":
        args += ["-d", f"{RUN_S}s"]
    r = subprocess.Popen(args, stderr=subprocess.PIPE, text=True)
    err = []
    try:
        for line in r.stderr:  # the line scripts wait for: every probe is live
            err.append(line)
            if "Ctrl-C" in line:
                break
        check(r.poll() is None, f"recorder not ready: {''.join(err)}")
        ready = time.monotonic()
        tell(w, "go")
        eq(w.stdout.readline().strip(), "running", "the storm's threads run")
        if stop == "duration":
            stopped = ready + RUN_S
        else:
            time.sleep(RUN_S)
            stopped = time.monotonic()
            r.send_signal(getattr(signal, stop))
        try:
            r.wait(STOP_S + 30)
        except subprocess.TimeoutExpired:
            pass
        took = time.monotonic() - stopped
        check(w.poll() is None, "the workload still runs after the recording")
    finally:
        if r.poll() is None:
            r.kill()
        w.kill()
    err.append(r.stderr.read())
    return took, "".join(err), out


def check_stopped(stop):
    took, err, out = storm_recording(stop)
    check(took <= STOP_S, f"{stop}: the recorder exited {took:.2f} s after the stop "
          f"(bound {STOP_S} s): {err[-600:]}")
    meta = info(out)
    check(meta["clean_close"], f"{stop}: the file is closed cleanly")
    check(meta["events"].get("cuda_api", 0) > 0, f"{stop}: cuda calls recorded: {meta['events']}")
    # Calls past the stop are after the recording's end, not lost: the probes' teardown
    # (entries still firing once returns are gone) counted thousands as task_map_full.
    # The threads wait at a barrier until the probes are live, so none is lost for that.
    eq(meta["lost"].get("task_map_full", 0), 0, f"{stop}: calls lost to the thread map")
    eq(meta["lost_total"], sum(meta["lost"].values()), "lost_total is the sum of causes")
    said = int(err.split(" records, ")[1].split(" events lost")[0])
    eq(said, meta["lost_total"], f"{stop}: the end line's losses are the file's")


def test_duration_ends_a_storm_recording():
    check_stopped("duration")


def test_sigint_ends_a_storm_recording():
    check_stopped("SIGINT")


def test_sigterm_ends_a_storm_recording():
    check_stopped("SIGTERM")
