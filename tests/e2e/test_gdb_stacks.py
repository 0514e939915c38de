"""gdb_stacks.py, the gdb side of issue 42's comparison of `bpfsight stacks -p` with gdb, on
a real gdb run: idle_threads, three threads waiting on a barrier and main in nanosleep,
stacks that do not move. Every thread is there; each frame's function, module and pc are what
the program's symbols and /proc/PID/maps say.
"""
import os
import shutil
import subprocess

from gdb_stacks import gdb_stacks, physical
from helpers import Skip, check, eq, spawn, workload

SECONDS = 4
IDLE = workload("idle_threads")


def symbol_range(path, name):
    """[start, end) of function NAME in PATH's .symtab (nm -S)."""
    out = subprocess.run(["nm", "-S", path], capture_output=True, text=True, check=True).stdout
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 4 and parts[3] == name:
            start = int(parts[0], 16)
            return start, start + int(parts[1], 16)
    raise AssertionError(f"no {name} in {path}")


def load_bias(pid, path):
    """Where PATH's first mapping starts in PID (a PIE's bias: its ELF addresses start at 0)."""
    with open(f"/proc/{pid}/maps") as f:
        for line in f:
            if line.rstrip().endswith(path):
                return int(line.split("-")[0], 16)
    raise AssertionError(f"{path} is not mapped in {pid}")


def test_gdb_stacks_of_idle_threads():
    if not shutil.which("gdb"):
        raise Skip("no gdb (apt-get install gdb)")
    p = spawn([IDLE, "3", "1", "60000"])
    try:
        eq(p.stdout.readline().split()[0], "pid", "idle_threads' first line")
        eq(p.stdout.readline().strip(), "idle", "every thread waits")
        stacks = gdb_stacks(p.pid)
        bias = load_bias(p.pid, os.path.realpath(IDLE))
    finally:
        p.kill()
        p.wait()
    prog = os.path.realpath(IDLE)
    libc = os.path.realpath("/lib/x86_64-linux-gnu/libc.so.6")
    eq(len(stacks), 4, f"threads: {sorted(stacks)}")
    check(p.pid in stacks, "the main thread, by its tid")
    main = physical(stacks[p.pid])
    eq((main[-1].function, main[-1].module), ("main", prog), f"main's outermost frame: {main}")
    check(any("nanosleep" in f.function and f.module == libc for f in main),
          f"main sleeps in libc: {main}")
    lo, hi = symbol_range(prog, "main")
    check(lo <= main[-1].pc - 1 - bias < hi, f"main's return address {main[-1].pc:#x} in main")
    for tid, frames in stacks.items():
        if tid == p.pid:
            continue
        phys = physical(frames)
        names = [f.function for f in phys]
        check("worker" in names and names[-2:] == ["start_thread", "clone3"],
              f"thread {tid}: {names}")
        eq({f.module for f in phys if f.function != "worker"}, {libc}, f"{tid}'s libc frames")
        check(len(phys) < len(frames), f"thread {tid}: the futex waits inlined into "
              f"pthread_barrier_wait are marked: {frames}")
        pcs = [f.pc for f in phys]
        eq(len(set(pcs)), len(pcs), f"thread {tid}: one physical frame a pc")
