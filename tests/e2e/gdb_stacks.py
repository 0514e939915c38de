"""gdb's stacks of a live process, the truth `bpfsight stacks -p` is compared with (issue 42):
`gdb -batch -p PID -ex 'thread apply all bt'` parsed into, per thread, its frames innermost
first, each (function, module, pc, inlined).

gdb names a function by its DWARF name where a debug file is installed (`__GI___nanosleep`,
`___pthread_barrier_wait`), else by its symbol; it shows the functions inlined at a return
address as frames of their own, with the same pc (`inlined` is set on each but the outermost:
`physical()` drops them, what a walk of return addresses sees). The module of a frame is the
file mapped at its pc (for a return address, at pc - 1: the call), from /proc/PID/maps read
while gdb holds the process.
"""
import collections
import os
import re
import shutil
import subprocess

Frame = collections.namedtuple("Frame", "function module pc inlined")

THREAD = re.compile(r"^Thread \d+ \(.*?\((?:LWP|process) (\d+)\)")
# "#3  0x000055ef8a508241 in worker (...) at x.c:24" / "... in ?? () from /lib/libfoo.so"
FRAME = re.compile(r"^#(\d+)\s+(?:(0x[0-9a-f]+) in )?(.+?)(?: at \S+:\d+)?(?: from (\S+))?$")
ARGS = re.compile(r" \((?:\.\.\.)?\)$")  # frame-arguments presence: "(...)" or "()"
SIGNAL_FRAME = "<signal handler called>"


def read_maps(pid):
    """[(start, end, path)] of PID's file-backed mappings."""
    out = []
    with open(f"/proc/{pid}/maps") as f:
        for line in f:
            parts = line.split(None, 5)
            if len(parts) == 6 and parts[5].startswith("/"):
                start, end = (int(x, 16) for x in parts[0].split("-"))
                out.append((start, end, parts[5].strip()))
    return out


def module_of(maps, addr):
    for start, end, path in maps:
        if start <= addr < end:
            return path
    return None


def parse(text, maps):
    """gdb's `thread apply all bt` TEXT into {tid: [Frame, innermost first]}; MAPS names the
    modules (read_maps)."""
    threads, cur = {}, None
    for line in text.splitlines():
        m = THREAD.match(line)
        if m:
            cur = threads.setdefault(int(m.group(1)), [])
            continue
        m = FRAME.match(line.strip())
        if cur is None or not m:
            continue
        pc = int(m.group(2), 16) if m.group(2) else None
        name = m.group(3)
        if name != SIGNAL_FRAME:
            name = ARGS.sub("", name)
        module = m.group(4)
        if pc is not None and module is None:
            module = module_of(maps, pc - 1 if int(m.group(1)) > 0 else pc)
        cur.append(Frame(name, module, pc, False))
    for tid, frames in threads.items():
        threads[tid] = [f._replace(inlined=i + 1 < len(frames) and f.pc is not None
                                   and f.pc == frames[i + 1].pc)
                        for i, f in enumerate(frames)]
    return threads


def physical(frames):
    """FRAMES without those gdb shows for functions inlined into the next one."""
    return [f for f in frames if not f.inlined]


def gdb_stacks(pid, timeout=60):
    """Every thread's stack of live process PID as gdb unwinds it: {tid: [Frame]}. gdb stops
    the process while it reads it and detaches after; debuginfod is never asked."""
    gdb = shutil.which("gdb")
    if not gdb:
        raise FileNotFoundError("gdb is not installed (apt-get install gdb)")
    maps = read_maps(pid)
    p = subprocess.run([gdb, "-batch", "-nx", "-p", str(pid),
                        "-ex", "set debuginfod enabled off",
                        "-ex", "set print frame-arguments presence", "-ex", "set width 0",
                        "-ex", "thread apply all bt -frame-info location-and-address"],
                       capture_output=True, text=True, timeout=timeout,
                       env=dict(os.environ, DEBUGINFOD_URLS=""))
    if p.returncode:
        raise RuntimeError(f"gdb -p {pid} exited {p.returncode}: {p.stderr[-1000:]}")
    return parse(p.stdout, maps)
