"""bpfsight stacks -p PID: every thread's stack of a running process now, Python and native,
named, with its state, the GIL's holder and idle threads marked, without stopping it.
Workloads: tests/workloads/py_stacks_dump.py (cpu-0 spins in spin() holding the GIL, cpu-1
sleeps in nap(), the main thread waits in join()) on every CPython here (pyenv's 3.8-3.13,
Debian's stripped 3.11, those under /opt/cpython), and tests/workloads/stacks_native.c (no
Python: spin_here() on thread "spinner", sleep_here() on "sleeper")."""
import json
import os
import re
import subprocess
import threading

from helpers import BPFSIGHT, Skip, check, eq, need_root, run, spawn, wait_for, workload
from test_gil import debian_python, opt_newest, opt_pythons, pyenv_python
from test_py_stacks import frame_pointers

# For tests/run_tests.py: about how long these tests take on CI's machine (its order).
SECONDS = 20

HERE = os.path.dirname(os.path.abspath(__file__))
WORK = os.path.realpath(os.path.join(HERE, "..", "workloads", "py_stacks_dump.py"))
NATIVE = workload("stacks_native")
GATE = workload("syscall_gate")
BPF_SYSCALL, BPF_ITER_CREATE = 321, 33  # x86-64
FUTEX = 202
SLEEPS = {35, 230, 23, 270}  # nanosleep, clock_nanosleep, select, pselect6 (<= 3.10)


def marked(tag):
    with open(WORK) as f:
        return {i + 1 for i, l in enumerate(f) if f"# {tag}" in l}


def syscall_of(pid, tid):
    """/proc's view of a blocked thread's system call: [nr, args..., sp, pc], or ["running"]."""
    try:
        with open(f"/proc/{pid}/task/{tid}/syscall") as f:
            return f.read().split()
    except OSError:
        return ["gone"]


def blocked_in(pid, tid, nrs, untimed=False):
    """TID waits in one of the system calls NRS (a futex without a timeout: UNTIMED; the GIL's
    waits are timed, a lock's acquire() is not)."""
    f = syscall_of(pid, tid)
    return (f[0].isdigit() and int(f[0]) in nrs and
            (not untimed or int(f[4], 16) == 0))


def cpu_ticks(pid, tid):
    with open(f"/proc/{pid}/task/{tid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


class StateWatch:
    """The states (/proc's letters) every thread of PID goes through while a dump runs: a
    ptrace stop is 't', a stop 'T'."""

    def __init__(self, pid):
        self.pid, self.seen, self.done = pid, set(), threading.Event()
        self.t = threading.Thread(target=self.run, daemon=True)
        self.t.start()

    def run(self):
        while not self.done.is_set():
            for tid in os.listdir(f"/proc/{self.pid}/task"):
                try:
                    with open(f"/proc/{self.pid}/task/{tid}/stat") as f:
                        self.seen.add(f.read().rsplit(")", 1)[1].split()[0])
                except OSError:
                    pass

    def stop(self):
        self.done.set()
        self.t.join()
        return self.seen


def dump_unharmed(pid, busy_tid, *opts):
    """`stacks --json` of PID, checking that it never stopped PID (no thread in a stopped
    state meanwhile) and that BUSY_TID went on running (its CPU time grew after)."""
    before = cpu_ticks(pid, busy_tid)
    watch = StateWatch(pid)
    p = run([BPFSIGHT, "stacks", "-p", str(pid), "--json", *opts])
    seen = watch.stop()
    eq(p.returncode, 0, f"stacks exit ({p.stderr[-500:]})")
    check(not seen & {"t", "T"}, f"a thread of {pid} was stopped during the dump: {seen}")
    wait_for(lambda: cpu_ticks(pid, busy_tid) > before, 10, "the spinning thread's CPU time")
    return json.loads(p.stdout)


def python_frames(th):
    return [f for f in th["stack"] if "line" in f]


def pythons():
    """pyenv's 3.9 and 3.12, Debian's stripped 3.11, and the newest of Debian's releases
    (stripped, /opt/cpython: 3.15) or pyenv's 3.13: each way a version keeps what is read
    (thread states, frames, the threading module's names) once; test_thread_names.py records
    others."""
    found = [pyenv_python(9), debian_python(), pyenv_python(12), opt_newest() or pyenv_python(13)]
    return [p for p in found if p]


def settled(py, p):
    """PID and the tids of the workload P runs under PY, once its main thread waits in join
    and cpu-1 sleeps."""
    info = json.loads(p.stdout.readline())
    pid, tids = info["pid"], info["tids"]
    wait_for(lambda: blocked_in(pid, tids["MainThread"], {FUTEX}, untimed=True) and
             blocked_in(pid, tids["cpu-1"], SLEEPS), 20, f"{py}: main in join, cpu-1 asleep")
    return pid, tids


def start_python(py):
    p = spawn([py, WORK])
    return (p, *settled(py, p))


def test_stacks_python_threads_named_gil_holder_and_idle_marked():
    """On each kind of CPython (pythons()): each thread has its threading name; cpu-0 is the one GIL
    holder, active, spin() of the workload at the top of its Python frames at one of its
    loop's lines; cpu-1 is idle, asleep in a system call, in nap() at its sleep line; the
    main thread is idle in join(), called from <module> at the JOIN line. The process was
    never stopped, and cpu-0 kept running."""
    need_root()
    pys = pythons()
    check(pys, "no CPython here (make deps installs Debian's python3)")
    spin_l, nap_l, join_l = marked("SPIN"), marked("NAP"), marked("JOIN")
    for py in pys:
        p, pid, tids = start_python(py)
        out = dump_unharmed(pid, tids["cpu-0"])
        minor = re.search(r"python3\.(\d+)$", py).group(1)
        eq(out["python"], f"3.{minor}", f"{py}: version")
        by = {t["tid"]: t for t in out["threads"]}
        eq(set(by), set(tids.values()), f"{py}: threads")
        for name, tid in tids.items():
            eq(by[tid]["name"], name, f"{py}: name of {tid}")
            check(by[tid]["error"] is None, f"{py}: {name}: {by[tid]['error']}")
        eq([t["name"] for t in out["threads"] if t["gil"]], ["cpu-0"], f"{py}: GIL holder")
        c0, c1, main = by[tids["cpu-0"]], by[tids["cpu-1"]], by[tids["MainThread"]]
        top = python_frames(c0)[0]
        eq((top["func"], top["file"]), ("spin", WORK), f"{py}: cpu-0's innermost Python frame")
        check(top["line"] in spin_l, f"{py}: spin() at line {top['line']}")
        check(not c0["idle"], f"{py}: cpu-0 marked idle ({c0['state']})")
        nap = python_frames(c1)[0]
        eq((nap["func"], nap["file"]), ("nap", WORK), f"{py}: cpu-1's innermost Python frame")
        check(nap["line"] in nap_l, f"{py}: nap() at line {nap['line']}")
        check(c1["idle"] and c1["state"].startswith("sleeping in "),
              f"{py}: cpu-1 is {c1['state']}")
        check(main["idle"] and main["state"] == "sleeping in futex", f"{py}: {main['state']}")
        funcs = [f["func"].split(".")[-1] for f in python_frames(main)]
        check("join" in funcs, f"{py}: main's Python frames {funcs}")
        eq((python_frames(main)[-1]["func"], python_frames(main)[-1]["line"] in join_l),
           ("<module>", True), f"{py}: main's outermost frame")
        check(p.poll() is None, f"{py}: the workload ended")
        p.kill()
        p.wait()


def subsequence(a, b):
    it = iter(b)
    return all(x in it for x in a)


def test_stacks_text_and_frame_options():
    """The text output names each thread, marks the holder and the idle ones, and shows
    spin() with its file and line; --no-native leaves the Python frames only, --native adds
    the interpreter's own frames (below the innermost Python frame too, where the interpreter
    keeps frame pointers: Debian's 3.15 debug build, the newest), --active lists the running
    thread alone."""
    need_root()
    fp = [py for py in opt_pythons(free_threaded=False) if frame_pointers(py)][-1:]
    py = (fp or [pyenv_python(12) or debian_python()])[0]
    if not py:
        raise Skip("no CPython here")
    p, pid, tids = start_python(py)
    txt = run([BPFSIGHT, "stacks", "-p", str(pid)], check=True).stdout
    check(re.search(rf'^Thread {tids["cpu-0"]} "cpu-0" \(active, holds the GIL\): ', txt, re.M),
          f"cpu-0's header in\n{txt}")
    check(re.search(rf'^Thread {tids["cpu-1"]} "cpu-1" \(idle\): sleeping in ', txt, re.M),
          f"cpu-1's header in\n{txt}")
    check(re.search(rf"^    spin \({re.escape(WORK)}:\d+\)$", txt, re.M), f"spin() in\n{txt}")
    default = {t["tid"]: t["stack"] for t in dump_unharmed(pid, tids["cpu-0"])["threads"]}
    only_py = dump_unharmed(pid, tids["cpu-0"], "--no-native", "--active")["threads"]
    eq([t["name"] for t in only_py], ["cpu-0"], "--active")
    check(only_py[0]["stack"] and all("line" in f for f in only_py[0]["stack"]),
          f"--no-native: {only_py[0]['stack']}")
    native = {t["tid"]: t["stack"] for t in
              dump_unharmed(pid, tids["cpu-0"], "--native")["threads"]}
    # Frames read at another moment: an idle thread's are the same ones.
    for tid in (tids["cpu-1"], tids["MainThread"]):
        check(subsequence(default[tid], native[tid]), f"--native: {tid} lost frames")
    nap = native[tids["cpu-1"]]
    first = next(i for i, f in enumerate(nap) if "line" in f)
    if fp:
        check(any("line" not in f for f in nap[first:]),
              f"{py}: --native: no native frame below nap(): {nap}")
    nap = default[tids["cpu-1"]]
    first = next(i for i, f in enumerate(nap) if "line" in f)
    check(all("line" in f for f in nap[first:]), f"default: native frames below nap(): {nap}")
    p.kill()
    p.wait()


def test_stacks_of_a_job_with_children_open_with_its_processes_and_name_threads():
    """`stacks -p` of a process with a child (a trainer and its DataLoader worker): one job,
    opened (no blank line first) by its processes with their command line, the child said a
    child of its parent; each group of threads names its threads with their tids, as py-spy
    dump names each thread."""
    need_root()
    py = pyenv_python(12) or debian_python()
    if not py:
        raise Skip("no CPython here")
    code = ("import os, threading, time\n"
            "def nap():\n    time.sleep(600)\n"
            "threading.Thread(target=time.sleep, args=(600,), name='feeder', daemon=True).start()\n"
            "c = os.fork()\n"
            "if c:\n    print(os.getpid(), c, threading.get_native_id(), flush=True)\n"
            "nap()\n")
    p = spawn([py, "-c", code])
    try:
        pid, child, _ = map(int, p.stdout.readline().split())
        wait_for(lambda: blocked_in(pid, pid, SLEEPS) and blocked_in(child, child, SLEEPS), 20,
                 "parent and child asleep")
        out = run([BPFSIGHT, "stacks", "-p", str(pid)], check=True).stdout
        lines = out.split("\n")
        check(re.match(rf"Processes {pid}, {child} \(a child of {pid}\): {re.escape(py)} -c "
                       r"import os, threading, time def nap\(\):", lines[0]),
              f"the job's processes first, on one line:\n{out}")
        check(not any(l.startswith("Job ") for l in lines), f"one job:\n{out}")
        feeder = next(int(t) for t in os.listdir(f"/proc/{pid}/task") if int(t) != pid)
        heads = [(h, n) for h, n in zip(lines, lines[1:]) if re.match(r"\d+ threads? of pids ", h)]
        check(heads, f"the threads both processes run, grouped:\n{out}")
        for head, names in heads:
            check(re.match(r"    \[.*tid \d+", names), f"{head!r} names its threads: {out}")
        check(re.search(rf"^2 threads of pids {pid}, {child}: .*\n    \[MainThread tid {pid}, "
                        rf"\S+ tid {child}\]$", out, re.M), f"the main threads:\n{out}")
        check(re.search(rf'feeder tid {feeder}\b|thread {feeder} "feeder"', out),
              f"feeder named:\n{out}")
    finally:
        p.kill()
        p.wait()


def test_stacks_gil_held_in_a_c_call():
    """A thread that keeps the GIL while it sleeps in C (ctypes.PyDLL's call): it is the
    holder, idle, asleep in the sleep's system call; the thread that wants the GIL is
    waiting for the GIL (or running, when the dump caught it between two of its waits),
    not idle, in spin()."""
    need_root()
    for py in [p for p in (pyenv_python(12), debian_python()) if p]:
        p = spawn([py, WORK, "held"])
        tids = json.loads(p.stdout.readline())["tids"]
        pid = tids["MainThread"]
        wait_for(lambda: blocked_in(pid, tids["holder"], SLEEPS), 20, f"{py}: the holder asleep")
        out = json.loads(run([BPFSIGHT, "stacks", "-p", str(pid), "--json"], check=True).stdout)
        by = {t["tid"]: t for t in out["threads"]}
        holder, waiter = by[tids["holder"]], by[tids["waiter"]]
        eq([t["name"] for t in out["threads"] if t["gil"]], ["holder"], f"{py}: GIL holder")
        check(holder["idle"] and holder["state"].startswith("sleeping in "),
              f"{py}: holder {holder['state']}")
        check(not waiter["idle"] and (waiter["state"] == "waiting for the GIL" or
                                      waiter["read"] == "sample"),
              f"{py}: waiter {waiter['state']} ({waiter['read']})")
        eq(python_frames(waiter)[0]["func"], "spin", f"{py}: the waiter's code")
        p.kill()
        p.wait()


def test_stacks_native_program():
    """A program without Python: its threads by their OS names, the spinner in spin_here()
    (running), the sleeper idle in nanosleep called by sleep_here(); no Python; unharmed."""
    need_root()
    p = spawn([NATIVE])
    m = re.match(r"pid (\d+) spinner (\d+) sleeper (\d+)", p.stdout.readline())
    pid, spinner, sleeper = (int(x) for x in m.groups())
    wait_for(lambda: blocked_in(pid, sleeper, SLEEPS) and
             blocked_in(pid, pid, {FUTEX}, untimed=True), 20, "the sleeper asleep")
    out = dump_unharmed(pid, spinner)
    eq(out["python"], None, "python")
    by = {t["tid"]: t for t in out["threads"]}
    eq((by[spinner]["name"], by[sleeper]["name"], by[pid]["name"]),
       ("spinner", "sleeper", "stacks_native"), "names")
    eq(by[spinner]["stack"][0]["func"], "spin_here", f"spinner: {by[spinner]['stack']}")
    check(not by[spinner]["idle"] and by[sleeper]["idle"], "idle marks")
    funcs = [f["func"] for f in by[sleeper]["stack"]]
    check("sleep_here" in funcs and funcs.index("sleep_here") > 0, f"sleeper: {funcs}")
    check(not any(t["gil"] for t in out["threads"]), "a GIL holder without Python")
    check(p.poll() is None, "the workload ended")


def test_stacks_bad_input():
    """No process, a bad pid, no -p, no permission, a process that exits during the dump:
    each a clear message and exit status 1."""
    need_root()
    gone = subprocess.Popen(["true"])
    gone.wait()
    for args, want in ((["-p", str(gone.pid)], "no such process"),
                       (["-p", "abc"], "bad pid 'abc'"),
                       ([], "-p PID is required"),
                       (["-p", "1", "--native", "--no-native"], "exclude each other"),
                       (["-p", "1", "extra"], "unexpected argument")):
        r = run([BPFSIGHT, "stacks", *args])
        eq(r.returncode, 1, f"{args}: exit")
        check(want in r.stderr, f"{args}: {r.stderr!r}")
    p = spawn([NATIVE])
    pid = int(p.stdout.readline().split()[1])
    r = run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", BPFSIGHT,
             "stacks", "-p", str(pid)])
    eq(r.returncode, 1, f"as nobody: exit ({r.stderr})")
    check("needs root" in r.stderr, f"as nobody: {r.stderr!r}")
    # The target is killed once the dump has found it alive, before its first look at the
    # threads: that look (its task iterator) waits until then (tests/workloads/syscall_gate.c).
    gated = spawn([GATE, str(BPF_SYSCALL), str(BPF_ITER_CREATE), BPFSIGHT, "stacks", "-p",
                   str(pid)])
    eq(gated.stdout.readline(), "held\n", "the dump's first look held")
    p.kill()
    p.wait()
    out, err = gated.communicate("go\n", timeout=60)
    eq(gated.returncode, 1, f"a process that exits during the dump: exit ({out[-300:]})")
    check(f"pid {pid}: the process exited during the dump" in err,
          f"a process that exits during the dump: {err!r}")
