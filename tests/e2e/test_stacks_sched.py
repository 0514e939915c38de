"""--stacks=sched: a blocked off-CPU interval of at least the threshold carries the stack
where the thread blocked (taken at the sys_exit of the system call it blocked in), native
then Python frames. A single-threaded python (no GIL waits to muddle the counts) blocks in
three known functions, each for a time the test controls: time.sleep, a read of an empty
pipe (the test writes the byte once the reader sleeps in the pipe read), flock of a file
the test holds (released once the child sleeps in the lock)."""
import fcntl
import os
import re
import sqlite3
import sys
import time

from helpers import (BPFSIGHT, Recorder, Skip, check, docs_query, dump, eq, info, need_root,
                     record, run, spawn, stats, tell, tmpdir, wait_for, workload)
from test_export_gil import rows as sql_rows
from test_export_gil import same_rows
from test_gil import debian_python, pyenv_python

# For tests/run_tests.py: about how long these tests take on CI's machine (its order).
SECONDS = 5

BLOCKER = r"""
import fcntl, os, sys, time
def nap():
    time.sleep(0.05)  # NAP
def pipe_wait():
    return os.read(0, 1)  # READ
def lock_wait(path):
    with open(path) as f:
        fcntl.flock(f, fcntl.LOCK_EX)  # LOCK
def quick():
    time.sleep(0.0001)  # QUICK
def say(s):
    os.write(1, (s + "\n").encode())
say(str(os.getpid()))
while True:
    cmd = os.read(0, 256).decode().split()  # COMMAND
    if cmd[0] == "nap":
        for _ in range(int(cmd[1])):
            nap()
    elif cmd[0] == "read":
        say("reading")
        pipe_wait()
    elif cmd[0] == "lock":
        say("locking")
        lock_wait(cmd[1])
    elif cmd[0] == "quick":
        for _ in range(int(cmd[1])):
            quick()
    else:
        break
    say("ok")
"""


def line_of(tag):
    return [i + 1 for i, l in enumerate(BLOCKER.splitlines()) if f"# {tag}" in l][0]


THRESHOLD_NS = 10_000_000
HOLD_S = 0.05  # how long the test keeps the child blocked, well over the threshold
N = 5


def blocked_in(pid, wchan):
    """The child sleeps in the kernel function WCHAN (its state and /proc/PID/wchan)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            state = f.read().rsplit(")", 1)[1].split()[0]
        with open(f"/proc/{pid}/wchan") as f:
            return state == "S" and wchan in f.read()
    except OSError:
        return False


def hold_then_release(w, pid, marker, wchan, release):
    """After the child said MARKER, keep it blocked in WCHAN for HOLD_S, then RELEASE."""
    eq(w.stdout.readline().strip(), marker, f"child {marker}")
    wait_for(lambda: blocked_in(pid, wchan), 20, f"child blocked in {wchan}")
    time.sleep(HOLD_S)  # the block's length, not a wait for a condition
    release()
    eq(w.stdout.readline().strip(), "ok", f"child after {marker}")


def site(e):
    """An event's innermost Python frame (func, file, line), or None."""
    for f in e.get("stack", []):
        if "line" in f:
            return (f["func"], f["file"], f["line"])
    return None


def switches(pid):
    """(now, the kernel's count of the thread PID's context switches so far)."""
    with open(f"/proc/{pid}/task/{pid}/status") as f:
        st = f.read()
    n = sum(int(m) for m in re.findall(r"^(?:non)?voluntary_ctxt_switches:\s+(\d+)", st, re.M))
    return time.monotonic_ns(), n


def blocking_run(py, lock_path):
    """BLOCKER under `record -t sched --stacks=sched:10ms -p`: (its offcpu events, the trace,
    its pid), or None when the recording missed one of its switches (the sched family's
    known gap, docs/USAGE.md: the records between two reads of the kernel's count of the
    thread's switches are fewer than the switches)."""
    w = spawn([py, "-c", BLOCKER])
    pid = int(w.stdout.readline())
    r = Recorder("-t", "sched", "--stacks=sched:10ms", "-p", str(pid))
    r.wait_ready()
    wait_for(lambda: blocked_in(pid, "pipe_read"), 20, "child waiting for a command")
    t0, n0 = switches(pid)
    tell(w, f"nap {N}")
    eq(w.stdout.readline().strip(), "ok", f"{py}: naps")
    for _ in range(N):
        tell(w, "read")
        hold_then_release(w, pid, "reading", "pipe_read",
                          lambda: os.write(w.stdin.fileno(), b"x"))
    with open(lock_path) as held:
        for _ in range(N):
            fcntl.flock(held, fcntl.LOCK_EX)
            tell(w, f"lock {lock_path}")
            hold_then_release(w, pid, "locking", "lock",
                              lambda: fcntl.flock(held, fcntl.LOCK_UN))
    tell(w, "quick 20")
    eq(w.stdout.readline().strip(), "ok", f"{py}: quick sleeps")
    wait_for(lambda: blocked_in(pid, "pipe_read"), 20, "child waiting for a command")
    t1, n1 = switches(pid)
    r.flush()  # named while the process lives
    tell(w, "end")
    eq(w.wait(30), 0, f"{py}: exit")
    eq(r.wait(60), 0, f"{py}: recorder ({r.stderr[-300:]})")
    evs = [e for e in dump(r.out) if e["kind"] == "offcpu" and e["pid"] == pid]
    seen = len([e for e in evs if e["tid"] == pid and t0 <= e["ts"] <= t1])
    return (evs, r.out, pid) if seen == n1 - n0 else None


def whole_dur(e):
    """An interval's length, from where it began: one begun before the start is drawn from it
    (began_ts says where it began)."""
    return e["ts"] + e["dur"] - e["args"].get("began_ts", e["ts"])


def test_long_blocks_name_where_the_thread_blocked():
    """Five 50 ms blocks in each of nap() (time.sleep), pipe_wait() (os.read of an empty
    pipe) and lock_wait() (flock): exactly five stacked intervals name each function, file
    and line; 20 sleeps of 0.1 ms (quick()) and every other interval under 10 ms carry none;
    every interruptible block (a system call's) over it carries one. A recording that missed
    one of the thread's switches (the known gap) is made again, three times at most."""
    need_root()
    pys = [p for p in (pyenv_python(12), debian_python()) if p]
    check(pys, "no CPython 3.11+")
    lock_path = os.path.join(tmpdir(), "sched_stacks.lock")
    open(lock_path, "w").close()
    for py in pys:
        for _ in range(3):
            run_ = blocking_run(py, lock_path)
            if run_:
                break
        check(run_, f"{py}: 3 recordings, each missing a switch of the thread")
        evs, out, pid = run_
        sites = [site(e) for e in evs if "stack" in e]
        for func, tag in (("nap", "NAP"), ("pipe_wait", "READ"), ("lock_wait", "LOCK")):
            eq(sites.count((func, "<string>", line_of(tag))), N,
               f"{py}: blocks in {func} (stacked intervals at {sorted(set(sites), key=str)})")
        # An interval the thread was in at the attach (carried in, drawn from the start) is
        # as long as it really was.
        eq([e["dur"] for e in evs if "stack" in e and whole_dur(e) < THRESHOLD_NS], [],
           f"{py}: stacks on intervals under the threshold")
        eq([e["dur"] for e in evs if "stack" in e and e["args"]["state"] == 0], [],
           f"{py}: stacks on preempted intervals")
        # This program's interruptible sleeps are system calls; a page fault waiting for I/O
        # (uninterruptible, no sys_exit: no stack) may happen on a loaded machine.
        long_blocks = [e for e in evs if e["args"]["state"] & 1 and whole_dur(e) >= THRESHOLD_NS]
        eq([(e["ts"], e["dur"], e["args"]) for e in long_blocks if "stack" not in e], [],
           f"{py}: long interruptible blocks without a stack")
        # A stacked 0.1 ms sleep is one the loaded machine kept off the CPU over 10 ms.
        check(all(whole_dur(e) >= THRESHOLD_NS for e in evs if site(e) and site(e)[0] == "quick"),
              f"{py}: quick sleeps")
        check(any(e["args"]["state"] and e["dur"] < THRESHOLD_NS for e in evs),
              f"{py}: some blocks under the threshold (quick)")
        check_reports(py, out, pid, evs)


def check_reports(py, out, pid, evs):
    """offcpu_stacks and the folded-offcpu export add up the intervals of each site; the
    SQLite export's documented query gives offcpu_stacks row for row."""
    rows = stats(out, "offcpu_stacks")["offcpu_stacks"]
    db = os.path.join(tmpdir(), "t.sqlite")
    run([BPFSIGHT, "export", out, "--format", "sqlite", "-o", db], check=True)
    same_rows(sql_rows(sqlite3.connect(db), docs_query("offcpu_stacks")), rows,
              f"{py}: offcpu_stacks from SQLite")
    folded = os.path.join(tmpdir(), "t.offcpu.folded")
    run([BPFSIGHT, "export", out, "--format", "folded-offcpu", "-o", folded], check=True)
    lines = [l.rsplit(" ", 1) for l in open(folded).read().splitlines()]
    for func, tag in (("nap", "NAP"), ("pipe_wait", "READ"), ("lock_wait", "LOCK")):
        mine = [e for e in evs if site(e) == (func, "<string>", line_of(tag))]
        total = sum(e["dur"] for e in mine)
        row = [x for x in rows if (x["func"], x["file"], x["line"]) == site(mine[0])]
        eq([(x["count"], x["total_ns"]) for x in row], [(N, total)], f"{py}: offcpu_stacks {func}")
        frame = f"{func} (<string>:{line_of(tag)})"
        # Root first: the site is the last Python frame of its lines (native ones follow).
        us = [int(n) for text, n in lines if frame in text.split(";")]
        check(us and abs(sum(us) - total // 1000) <= len(us),
              f"{py}: folded-offcpu {func}: {us} us for {total} ns")


FAULTER = r"""
import ctypes, fcntl, os, struct, sys, threading, time
libc = ctypes.CDLL(None, use_errno=True)
libc.mmap.restype = ctypes.c_void_p
libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,
                      ctypes.c_int, ctypes.c_long]
PAGE = 4096
uffd = libc.syscall(323, os.O_CLOEXEC)  # userfaultfd(2)
if uffd < 0:
    print("no userfaultfd: errno", ctypes.get_errno(), flush=True)
    sys.exit(3)
fcntl.ioctl(uffd, 0xc018aa3f, bytearray(struct.pack("QQQ", 0xAA, 0, 0)))  # UFFDIO_API
addr = libc.mmap(None, PAGE, 3, 0x22, -1, 0)  # PROT_READ|WRITE, MAP_PRIVATE|ANONYMOUS
# UFFDIO_REGISTER, MODE_MISSING: the first touch of the page waits for us
fcntl.ioctl(uffd, 0xc020aa00, bytearray(struct.pack("QQQQ", addr, PAGE, 1, 0)))
tids = {"main": threading.get_native_id()}
def handler():
    tids["handler"] = threading.get_native_id()
    os.read(uffd, 32)  # the fault's message: main is blocked in it
    time.sleep(0.05)
    fcntl.ioctl(uffd, 0xc020aa04, bytearray(struct.pack("QQQq", addr, PAGE, 0, 0)))  # ZEROPAGE
print(os.getpid(), flush=True)
sys.stdin.readline()
t = threading.Thread(target=handler)
t.start()
ctypes.memmove(ctypes.create_string_buffer(8), addr, 8)  # faults (the GIL released)
t.join()
print(tids["main"], tids["handler"], time.monotonic_ns(), flush=True)
sys.stdin.readline()
"""


def fault_blocks(env=None):
    """The faulter's main thread's blocked intervals of 50 ms or more, recorded with
    --stacks=sched:10ms (ENV: the recorder's environment), and its handler thread's tid."""
    w = spawn([sys.executable, "-c", FAULTER])
    line = w.stdout.readline()
    if line.startswith("no userfaultfd"):
        w.wait(30)
        raise Skip(f"this kernel refuses userfaultfd(2) ({line.strip()})")
    check(line.strip().isdigit(), f"faulter: {line}")
    pid = int(line)
    r = Recorder("-t", "sched", "--stacks=sched:10ms", "-p", str(pid), env=env)
    r.wait_ready()
    tell(w, "go")
    main, handler, done = map(int, w.stdout.readline().split())
    r.flush()
    tell(w, "end")
    eq(w.wait(30), 0, "faulter exit")
    eq(r.wait(60), 0, f"recorder ({r.stderr[-300:]})")
    # main's blocks of 50 ms or more that ended before it said the fault was over (the
    # trace's clock is CLOCK_MONOTONIC): the fault's; its last read of stdin comes after, and
    # under load it can block 50 ms too (62 ms once, in a full run). Its first read, blocked
    # when the recording began, is no fault's: the recorder's start to the "go" took 133 ms
    # once under load.
    return [e for e in dump(r.out) if e["kind"] == "offcpu" and e["tid"] == main and
            e["args"]["state"] and e["dur"] >= 50_000_000 and e["ts"] + e["dur"] <= done and
            not e["args"].get("began_before_start")], handler


def test_a_block_outside_a_system_call_is_kept_with_its_stack_where_the_kernel_can():
    """A page fault that blocks (userfaultfd: the process's own handler thread resolves it
    50 ms later) is recorded, blocked, 50 ms or more. Where the kernel has bpf_task_work
    (6.18) its stack is read as the thread returns to user space: the faulting copy, under the
    job's line that made it; with the sys_exit path (BPFSIGHT_FORCE_FALLBACKS=task_work, and
    older kernels) a fault has no sys_exit, and the interval has no stack (never the next
    system call's)."""
    need_root()
    paths = [("sys_exit", dict(os.environ, BPFSIGHT_FORCE_FALLBACKS="task_work"))]
    feats = run([BPFSIGHT, "record", "--features"]).stdout
    if re.search(r"^task_work\s+yes", feats, re.M):
        paths.append(("task work", None))
    for path, env in paths:
        long, handler = fault_blocks(env)
        eq(len(long), 1, f"{path}: main's one long block (the fault's): {long}")
        # The waker is best effort (a wakeup deferred to the target CPU is not seen).
        check(long[0]["args"]["waker_tid"] in (handler, 0), f"woken by the handler: {long}")
        stack = long[0].get("stack")
        if path == "sys_exit":
            check(not stack, f"{path}: no stack, the fault has no sys_exit: {long}")
            continue
        # memmove's copy faulted: the frame under ctypes is the script's memmove line
        py = [(f["func"], f.get("line")) for f in stack or () if "line" in f]
        eq(py[:1], [("<module>", FAULTER.splitlines().index(
            next(l for l in FAULTER.splitlines() if l.startswith("ctypes.memmove"))) + 1)],
           f"{path}: the fault's stack at the line that copied: {stack}")


def test_a_block_names_the_function_that_called_the_libc_wrapper():
    """Each 1 ms nanosleep of syscall_callers (from a second thread: glibc's cancellable path)
    blocks: its off-CPU interval's stack names the whole chain down from the wrapper,
    sleeper() included, which a frame-pointer walk from the kernel skips (test_stacks_osrt
    says how it is put back)."""
    need_root()
    n = 10
    p, out = record([workload("syscall_callers"), "thread", str(n)], "-t", "sched",
                    "--stacks=sched:0")
    eq(p.returncode, 0, f"record exit ({p.stderr[-400:]})")
    pid = int(re.search(r"^pid (\d+)$", p.stdout, re.M).group(1))
    naps = [[f["func"] for f in e["stack"]] for e in dump(out)
            if e["kind"] == "offcpu" and e["pid"] == pid and e.get("stack") and
            e["stack"][0]["func"] == "clock_nanosleep"]
    # One block per nap, or more (a preemption inside the call also ends at its return);
    # fewer only by switches no sched program saw, which are counted (USAGE.md).
    missed = info(out)["lost"].get("sched_missed", 0)
    check(len(naps) >= n - missed, f"{len(naps)} blocks in clock_nanosleep with a stack, "
          f"{missed} switches missed")
    for names in naps:
        eq(names[:6], ["clock_nanosleep", "nanosleep", "sleeper", "calls", "thread_main",
                       "start_thread"], "stack of a nap")
