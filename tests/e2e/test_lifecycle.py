"""Processes that exec mid-trace, and the live status line."""
import os
import pty
import re
import subprocess

from helpers import BPFSIGHT, check, dump, eq, need_root, record, tmpdir, workload

# For tests/run_tests.py: about how long these tests take on CI's machine (its order).
SECONDS = 6

SYSCALLS = workload("syscalls")


def test_exec_mid_trace_keeps_tracing_and_renames():
    need_root()
    # sh runs, then execs the workload in the same process: same pid, new program.
    p, out = record(["sh", "-c", f"exec {SYSCALLS} 150 2 100"], "-t", "osrt",
                    "--osrt-threshold", "0")
    eq(p.returncode, 0, f"record exit ({p.stderr})")
    pid = int(re.search(r"^pid (\d+)", p.stdout, re.M).group(1))
    evs = dump(out)
    execs = [e for e in evs if e["kind"] == "exec" and e["pid"] == pid]
    check(len(execs) >= 2, f"sh's exec and the workload's exec: {execs}")
    eq(execs[-1]["args"]["comm"], "syscalls", "comm after exec")
    procs = [e for e in evs if e["kind"] == "process" and e["pid"] == pid]
    check(any(SYSCALLS in (e["args"].get("cmdline") or "") for e in procs),
          f"a process snapshot after exec has the new command line: {procs}")
    # dash calls getppid itself at start-up: count only the new program's calls.
    after = [e for e in evs if e["kind"] == "syscall" and e["pid"] == pid
             and e["ts"] > execs[-1]["ts"] and e["name"] == "getppid"]
    eq(len(after), 150, "getppid calls after the exec")


def record_on_tty(*args):
    """bpfsight record ARGS with its stderr on a terminal: (exit status, what it wrote)."""
    master, slave = pty.openpty()
    p = subprocess.Popen([BPFSIGHT, "record", "-o", os.path.join(tmpdir(), "t.bst"), *args],
                         stdout=subprocess.DEVNULL, stderr=slave)
    os.close(slave)
    text = b""
    while True:
        try:
            chunk = os.read(master, 4096)
        except OSError:
            break
        if not chunk:
            break
        text += chunk
    rc = p.wait(60)
    os.close(master)
    return rc, text.decode(errors="replace")


def test_status_line_on_a_tty():
    need_root()
    rc, s = record_on_tty("-t", "osrt", "--", SYSCALLS, "0", "1500", "1000")
    eq(rc, 0, "record exit")
    check(re.search(r"\[bpfsight\] \d+\.\ds +\d+ events +\d+ ev/s +lost 0 +[\d.]+ MiB", s),
          f"live status line on the terminal: {s!r}")


def test_status_line_shows_progress_towards_duration():
    """With -d the status line says how far along the recording is (issue 30)."""
    need_root()
    rc, s = record_on_tty("-t", "osrt", "-d", "2500ms", "--", "sleep", "10")
    check(re.search(r"\[bpfsight\] \d+\.\ds/2\.5s \(\d+%\) +\d+ events", s),
          f"progress towards -d: {s[-500:]!r}")
