"""How long a recording lives: a -p target is followed by identity, not by pid number."""
import os
import re
import signal
import subprocess
import time

from helpers import BPFSIGHT, Recorder, alone, check, eq, info, need_root, spawn, tmpdir, workload

# For tests/run_tests.py: about how long these tests take on CI's machine (its order).
SECONDS = 3

SYSCALLS = workload("syscalls")


def recorded_waiting_target(calls, *opts, out=None):
    """A syscalls workload blocked on stdin until written to (CALLS getppid then), and a
    ready recorder -p of it: (workload, its pid, recorder)."""
    w = spawn([SYSCALLS, "--wait-stdin", str(calls), "0"])
    pid = int(re.search(r"pid (\d+)", w.stdout.readline()).group(1))
    r = Recorder("-t", "osrt", *opts, "-p", str(pid), out=out)
    r.wait_ready()
    return w, pid, r


def spawn_with_pid(pid, tries=200):
    """A `sleep` process that has pid PID (via ns_last_pid), or None if other processes
    kept taking it."""
    for _ in range(tries):
        with open("/proc/sys/kernel/ns_last_pid", "w") as f:
            f.write(str(pid - 1))
        p = subprocess.Popen(["sleep", "60"])
        if p.pid == pid:
            return p
        p.kill()
        p.wait()
    return None


@alone("sets kernel.ns_last_pid: the machine's next pid, which any process beside it takes",
       exclusive=True)
def test_p_ends_when_target_exits_even_if_its_pid_is_reused():
    need_root()
    w, pid, r = recorded_waiting_target(10)
    # The recorder checks its targets every 100 ms: stopped, it cannot see the target go
    # before another process has its pid.
    os.kill(r.p.pid, signal.SIGSTOP)
    imposter = None
    try:
        w.kill()
        w.wait(30)
        imposter = spawn_with_pid(pid)
        check(imposter is not None, f"could not get pid {pid} again")
    finally:
        os.kill(r.p.pid, signal.SIGCONT)
    try:
        t0 = time.monotonic()
        eq(r.wait(20), 0, f"recorder exit ({r.stderr})")
        check(time.monotonic() - t0 < 20, "ended once its target was gone")
        check(imposter.poll() is None, "the process with the recycled pid still runs")
    finally:
        imposter.kill()
        imposter.wait()


def children_of(pid):
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            return f.read().split()
    except OSError:
        return []


def test_stop_during_startup_does_not_run_cmd():
    need_root()
    exercised = 0
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        d = tmpdir()
        flag, out = os.path.join(d, "ran"), os.path.join(d, "t.bst")
        p = subprocess.Popen([BPFSIGHT, "record", "-o", out, "-t", "osrt,sched", "--", "sh",
                              "-c", f"touch {flag}"], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
        # CMD is forked (held at the gate) once the stop signals are handled; the families
        # attach after: a signal now comes during start-up.
        deadline = time.monotonic() + 30
        while not children_of(p.pid) and p.poll() is None and time.monotonic() < deadline:
            time.sleep(0.001)
        p.send_signal(sig)
        _, err = p.communicate(timeout=60)
        # Whether the signal beat the release is the recorder's to say, race-free (it checks
        # with the stop signals blocked): asking stderr before sending would race the release.
        if "CMD was not run" not in err:
            check("recording" in err, f"{sig.name}: neither ran nor refused CMD: {err}")
            continue  # start-up was over (machine too fast): not this case
        exercised += 1
        check(not os.path.exists(flag), f"{sig.name}: CMD ran though bpfsight says not: {err}")
        eq(p.returncode, 127, f"{sig.name}: exit status")
        eq(info(out)["clean_close"], True, f"{sig.name}: the file is closed cleanly")
    check(exercised > 0, "no signal came during start-up")


class SmallTmpfs:
    """A tmpfs of SIZE, mounted on a fresh directory and unmounted afterwards."""

    def __init__(self, size):
        self.dir = tmpdir()
        subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", self.dir],
                       check=True)

    def __enter__(self):
        return self.dir

    def __exit__(self, *exc):
        subprocess.run(["umount", "-l", self.dir], check=False)


def fill(path):
    """Write zeros to PATH until the file system is full."""
    with open(path, "wb", buffering=0) as f:
        try:
            while True:
                f.write(b"\0" * 4096)
        except OSError:
            pass


def fill_leaving(d, room):
    """Fill the file system of directory D but for ROOM bytes (a filler file)."""
    st = os.statvfs(d)
    with open(os.path.join(d, "filler"), "wb") as f:
        f.write(b"\0" * (st.f_bavail * st.f_frsize - room))


def check_disk_full(rc, stderr, out):
    """What a recording whose disk filled must say: exit 1, the reason, the records it
    dropped, and a file that either counts them (closed cleanly) or says it has no end.
    Whether the small end still fits depends on the room the last failed write left."""
    eq(rc, 1, f"record exit ({stderr})")
    check("No space left on device" in stderr, f"says why: {stderr}")
    m = re.search(r"(\d+) records dropped", stderr)
    check(m, f"the recorder says how many records it dropped: {stderr}")
    n = int(m.group(1))
    check(n > 0, "some records dropped")
    p = subprocess.run([BPFSIGHT, "info", out], capture_output=True, text=True)
    meta = info(out, check=False)
    if meta["clean_close"]:
        eq(meta["lost"].get("write_failed"), n, "info counts the dropped records")
    else:
        check("without its end" in stderr, f"the recorder says so: {stderr}")
        check("its disk full" in p.stdout, f"info names the cause: {p.stdout}")
        check("unknown" in p.stdout, f"info does not claim nothing was lost: {p.stdout}")


def test_disk_full_closes_the_file_and_counts_the_loss():
    """The recording's own chunks fill the disk (filled up front but for 8 KiB). The calls
    take 1.7 bytes a record here on an idle machine but as little as 0.04 on a loaded one
    (regular bursts compress that well: 200,000 once fit in 8 KiB), so a run whose records
    all fit is run again with ten times the calls."""
    need_root()
    for calls in (400_000, 4_000_000):
        with SmallTmpfs("256k") as d:
            fill_leaving(d, 8192)
            out = os.path.join(d, "t.bst")
            p = subprocess.run([BPFSIGHT, "record", "-o", out, "-t", "osrt",
                                "--osrt-threshold", "0", "--", SYSCALLS, str(calls), "0"],
                               capture_output=True, text=True, timeout=120)
            if p.returncode == 0 and "0 events lost" in p.stderr:
                continue  # it all fit: not the case under test
            check_disk_full(p.returncode, p.stderr, out)
            return
    raise AssertionError("4,000,000 calls' records fit in 8 KiB: the disk never filled")


def test_disk_filled_by_another_process_is_never_silent():
    need_root()
    with SmallTmpfs("1m") as d:
        out = os.path.join(d, "t.bst")
        w, _, r = recorded_waiting_target(200000, "--osrt-threshold", "0", out=out)
        fill(os.path.join(d, "filler"))  # only the file's last partial page is left
        w.stdin.write("g")
        w.stdin.flush()
        eq(w.wait(60), 0, "workload exit")
        check_disk_full(r.wait(60), r.stderr, out)


def test_info_of_a_file_without_end_does_not_say_nothing_was_lost():
    need_root()
    w, _, r = recorded_waiting_target(10)
    r.p.kill()
    r.wait(30)
    w.kill()
    p = subprocess.run([BPFSIGHT, "info", r.out], capture_output=True, text=True)
    check("recorder killed, or its disk full" in p.stdout, f"info says why: {p.stdout}")
    check("lost:            none recorded, but the file has no end" in p.stdout,
          f"lost line: {p.stdout}")
