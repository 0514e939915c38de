"""--stacks=osrt: slow system calls (80 us or more by default) carry the calling thread's
stack: native frames (the function that called glibc's wrapper included), then its Python
frames (time.sleep releases the GIL: the thread state comes from the interpreter's list)."""
import json
import re

from helpers import Recorder, check, dump, eq, need_root, record, spawn, tell, workload
from test_gil import debian_python, pyenv_python

# For tests/run_tests.py: about how long these tests take on CI's machine (its order).
SECONDS = 7

SLEEPER = r"""
import os, sys, time
def nap(n, secs):
    for _ in range(n):
        time.sleep(secs)  # NAP
print(os.getpid(), flush=True)
sys.stdin.readline()
nap(int(sys.argv[1]), 0.005)  # CALL
print("done", flush=True)
sys.stdin.readline()
"""
NAP_LINE = [i + 1 for i, l in enumerate(SLEEPER.splitlines()) if "# NAP" in l][0]
CALL_LINE = [i + 1 for i, l in enumerate(SLEEPER.splitlines()) if "# CALL" in l][0]


def attached_syscalls(py, script, n):
    """PY runs SCRIPT (its N naps between "go" and "done"), attached with -p and
    --stacks=osrt from before the naps: its syscall events, named while it lives."""
    w = spawn([py, "-c", script, str(n)])
    pid = int(w.stdout.readline())
    r = Recorder("-t", "osrt", "--stacks=osrt", "-p", str(pid))
    r.wait_ready()
    tell(w, "go")
    eq(w.stdout.readline().strip(), "done", f"{py}: the naps")
    r.flush()  # named while the process lives
    tell(w, "end")
    eq(w.wait(30), 0, f"{py}: exit")
    eq(r.wait(60), 0, f"{py}: recorder ({r.stderr[-300:]})")
    return [e for e in dump(r.out) if e["kind"] == "syscall" and e["pid"] == pid]


def test_every_slow_call_names_its_python_line():
    """A python attached with -p sleeps 12 times 5 ms in nap(): each clock_nanosleep carries
    nap() at the sleep's line over <module>; calls under the threshold carry none."""
    need_root()
    pys = [p for p in (pyenv_python(12), pyenv_python(13), debian_python()) if p]
    check(pys, "no CPython 3.11+")
    n = 12
    for py in pys:
        evs = attached_syscalls(py, SLEEPER, n)
        naps = [e for e in evs if re.fullmatch(r"(clock_)?nanosleep", e["name"])]
        eq(len(naps), n, f"{py}: sleeps")
        for e in naps:
            pyf = [(f["func"], f["line"]) for f in e.get("stack", []) if "line" in f]
            eq(pyf[:2], [("nap", NAP_LINE), ("<module>", CALL_LINE)], f"{py}: a nap's stack")
        eq([e["name"] for e in evs if "stack" in e and e["dur"] < 80_000], [],
           f"{py}: stacks on calls under the threshold")


CTYPES = r"""
import ctypes, os, sys
libc = ctypes.CDLL(None)  # a CDLL's functions run with the GIL released
class timespec(ctypes.Structure):
    _fields_ = [("sec", ctypes.c_long), ("nsec", ctypes.c_long)]
def cnap(n):
    ts = timespec(0, 5000000)
    for _ in range(n):
        libc.nanosleep(ctypes.byref(ts), None)  # CNAP
print(os.getpid(), flush=True)
sys.stdin.readline()
cnap(int(sys.argv[1]))  # CCALL
print("done", flush=True)
sys.stdin.readline()
"""
CNAP_LINE = [i + 1 for i, l in enumerate(CTYPES.splitlines()) if "# CNAP" in l][0]
CCALL_LINE = [i + 1 for i, l in enumerate(CTYPES.splitlines()) if "# CCALL" in l][0]


def test_a_ctypes_call_without_the_gil_names_its_python_line_in_3_8_to_3_10():
    """A ctypes call releases the GIL: in 3.8-3.10, whose thread states carry no
    native_thread_id, the thread state is found in the interpreter's list by the tid in the
    struct pthread its thread_id points at. Each of 8 nanosleeps (5 ms) names cnap() at the
    call's line over <module>."""
    need_root()
    pys = [p for p in (pyenv_python(8), pyenv_python(9), pyenv_python(10)) if p]
    check(pys, "no pyenv CPython 3.8-3.10")
    n = 8
    for py in pys:
        naps = [e for e in attached_syscalls(py, CTYPES, n)
                if re.fullmatch(r"(clock_)?nanosleep", e["name"])]
        eq(len(naps), n, f"{py}: sleeps")
        for e in naps:
            pyf = [(f["func"], f["line"]) for f in e.get("stack", []) if "line" in f]
            eq(pyf[:2], [("cnap", CNAP_LINE), ("<module>", CCALL_LINE)],
               f"{py}: a ctypes nap's stack")


FOREIGN = r"""
import ctypes, json, sys, time
lib = ctypes.CDLL(sys.argv[1])
get = ctypes.pythonapi.PyThreadState_Get
get.restype = ctypes.c_void_p
tstates = []
def in_callback(i):
    tstates.append(get())
    time.sleep(0.002)  # NAP
cb = ctypes.CFUNCTYPE(None, ctypes.c_int)(in_callback)
rc = lib.foreign_calls(cb, int(sys.argv[2]))
print(json.dumps({"rc": rc, "tstates": len(set(tstates))}), flush=True)
"""
FOREIGN_NAP = [i + 1 for i, l in enumerate(FOREIGN.splitlines()) if "# NAP" in l][0]


def test_a_c_librarys_thread_calling_python_is_named_at_every_call():
    """A thread made by a C library (tests/workloads/lib/foreign_thread.c) calls a Python
    callback 40 times through ctypes: each call gets a new thread state (PyGILState_Ensure,
    then Release frees it), mostly at another address. The sleep of every call names
    in_callback: a stack reader that kept the thread's last state would read a freed one."""
    need_root()
    pys = [p for p in (pyenv_python(12), pyenv_python(13), debian_python()) if p]
    check(pys, "no CPython 3.11+")
    n = 40
    for py in pys:
        p, out = record([py, "-c", FOREIGN, workload("lib/libforeign_thread.so"), str(n)],
                        "-t", "osrt", "--stacks=osrt")
        eq(p.returncode, 0, f"{py}: record ({p.stderr[-300:]})")
        truth = json.loads(p.stdout.strip().splitlines()[-1])
        eq(truth["rc"], 0, f"{py}: foreign_calls")
        check(truth["tstates"] >= 2, f"{py}: {truth['tstates']} thread states for {n} calls")
        naps = [e for e in dump(out) if e["kind"] == "syscall" and e["pid"] != e["tid"] and
                re.fullmatch(r"(clock_)?nanosleep", e["name"])]
        eq(len(naps), n, f"{py}: the callback's sleeps")
        bad = [[(f["func"], f["line"]) for f in e.get("stack", []) if "line" in f][:1]
               for e in naps]
        eq([b for b in bad if b != [("in_callback", FOREIGN_NAP)]], [],
           f"{py}: sleeps not named in_callback")


SYSCALL_CALLERS = workload("syscall_callers")


def test_a_native_caller_of_a_libc_wrapper_is_named():
    """glibc's system-call wrappers make no frame of their own, so a frame-pointer walk from
    the kernel skips the function that called them: the recorder puts it back from the words
    on top of the stack. Every nanosleep and read of the workload, made by sleeper() and
    reader() from calls(), names the whole chain, in one thread (the wrappers' fast paths)
    and in a second one (their cancellable paths, which make a frame without a frame
    pointer); nanosleep is glibc's wrapper around clock_nanosleep, named too."""
    need_root()
    n = 10
    for mode, below in (("single", ["main"]), ("thread", ["thread_main", "start_thread"])):
        p, out = record([SYSCALL_CALLERS, mode, str(n)], "-t", "osrt", "--stacks=osrt:0",
                        "--osrt-threshold", "0")
        eq(p.returncode, 0, f"record exit ({p.stderr[-400:]})")
        pid = int(re.search(r"^pid (\d+)$", p.stdout, re.M).group(1))
        calls = [e for e in dump(out) if e["kind"] == "syscall" and e["pid"] == pid and
                 e["name"] in ("clock_nanosleep", "read")]
        seen = {"clock_nanosleep": 0, "read": 0}
        for e in calls:
            names = [f["func"] for f in e.get("stack", [])]
            if e["name"] == "read" and "reader" not in names and "calls" not in names:
                continue  # the loader's reads of the libraries, before main
            want = (["clock_nanosleep", "nanosleep", "sleeper", "calls"] if
                    e["name"] == "clock_nanosleep" else ["read", "reader", "calls"]) + below
            eq(names[:len(want)], want, f"{mode}: stack of {e['name']}")
            seen[e["name"]] += 1
        eq(seen, {"clock_nanosleep": n, "read": n}, f"{mode}: calls with their stacks")
