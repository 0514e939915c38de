"""record --inject: the cupti-shim loaded into running processes through ptrace.

The targets (tests/workloads/inject/) check every return value of their own waits: a
thread in read() on a pipe, one in pthread_cond_wait (futex), one in a loop of nanosleep(),
and a main thread in read() on stdin that calls cudaMalloc (the cuda family records each call;
no GPU: they fail). Each must finish exactly as it would untraced (counts, output, no EINTR,
exit 0), whichever thread was borrowed. libcuda (the toolkit's stub) is preloaded so that
the injected shim's CUPTI step runs; with no GPU it fails, and shim_sum must say so.
"""
import json
import os
import re
import select
import signal
import shutil
import time

import pymods
from helpers import (BPFSIGHT, Recorder, Skip, alone, check, dump, eq, need_root, row, run, spawn,
                     stats, tell, tmpdir, wait_for, workload)

# For tests/run_tests.py: about how long these tests take on CI's machine (its order).
SECONDS = 33

TARGETS = {k: workload(f"cuda/inject_target_{k}") for k in ("shared", "static")}
STUB = workload("cuda/stubs/libcuda.so.1")
STATIC = workload("inject/static_loop")
PY_CUDART = os.path.join(os.path.dirname(__file__), "..", "workloads", "inject", "py_cudart.py")
CUDART = "/usr/local/cuda/lib64/libcudart.so.13"
PYENV = os.path.expanduser("~/.pyenv/versions")
CALLS, BYTES = 5, 100000
READ, FUTEX, NANOSLEEPS = 0, 202, (35, 230)


def need_targets():
    need_root()
    for p in (*TARGETS.values(), STUB):
        if not os.path.exists(p):
            raise Skip(f"{p} missing: the CUDA workloads are not built (no nvcc)")


def readline(p, timeout=60):
    """One line of P's stdout within TIMEOUT s (a hung target fails the test, not the run)."""
    r, _, _ = select.select([p.stdout], [], [], timeout)
    check(r, f"pid {p.pid}: no output within {timeout} s")
    return p.stdout.readline().strip()


def thread_syscalls(pid):
    """{tid: the system call it waits in, or -1 when it runs or waits elsewhere}."""
    out = {}
    for t in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{t}/syscall") as f:
                first = f.read().split()[0]
        except (OSError, IndexError):
            continue
        out[int(t)] = int(first) if first.lstrip("-").isdigit() else -1
    return out


def threads_waiting(pid):
    """The workload's four threads each in its wait: {role: tid}, or None while not yet."""
    s = thread_syscalls(pid)
    others = {t: nr for t, nr in s.items() if t != pid}
    reader = [t for t, nr in others.items() if nr == READ]
    waiter = [t for t, nr in others.items() if nr == FUTEX]
    sleeper = [t for t, nr in others.items() if nr in NANOSLEEPS]
    if s.get(pid) != READ or len(reader) != 1 or len(waiter) != 1 or len(sleeper) != 1:
        return None
    return {"main": pid, "reader": reader[0], "waiter": waiter[0], "sleeper": sleeper[0]}


def maps_shims(pid):
    """The injected shim files PID maps (their paths)."""
    with open(f"/proc/{pid}/maps") as f:
        return {l.split()[-1] for l in f if l.rstrip().endswith("-ptrace.so")}


def shim_threads(pid):
    n = 0
    for t in os.listdir(f"/proc/{pid}/task"):
        with open(f"/proc/{pid}/task/{t}/comm") as f:
            n += f.read().strip() == "bpfsight-shim"
    return n


def start_target(kind, preload=True):
    env = dict(os.environ, LD_PRELOAD=STUB) if preload else None
    p = spawn([TARGETS[kind], str(CALLS), str(BYTES)], env=env)
    check(readline(p).startswith("ready"), "the target's ready line")
    roles = {}
    wait_for(lambda: roles.update(threads_waiting(p.pid) or {}) or roles, 30,
             "the target's threads in read, futex and nanosleep")
    return p, roles


def inject(pid, *families, tid=None):
    """A recorder -p PID --inject, ready; TID: the thread it must borrow."""
    if tid:
        os.environ["BPFSIGHT_INJECT_TID"] = str(tid)
    try:
        rec = Recorder("-p", str(pid), "-t", ",".join(families or ("cuda", "gpu")), "--inject")
    finally:
        os.environ.pop("BPFSIGHT_INJECT_TID", None)
    rec.wait_ready()
    return rec


def injected_line(rec, pid):
    lines = [l for l in rec.stderr_lines
             if f"--inject: pid {pid}: thread" in l or f"--inject: pid {pid} not" in l]
    eq(len(lines), 1, f"one injection line for pid {pid}: {rec.stderr}")
    return lines[0]


def flush(rec):
    """SIGUSR1, and wait for this flush's "flushed" line (Recorder.flush sees any earlier one)."""
    n = rec.stderr.count("flushed")
    rec.p.send_signal(signal.SIGUSR1)
    wait_for(lambda: rec.stderr.count("flushed") > n, 30, "the recorder's flush")


def wait_attached(rec, pid, injected=True):
    """The recorder found the injected shim, and the shim saw it: its ATTACH is in the trace
    (before that, a process that exits at once would leave nothing to record)."""
    if injected:
        wait_for(lambda: f"pid {pid}: the cupti-shim is loaded" in rec.stderr, 30,
                 "the recorder finding the injected shim")

    def attached():
        flush(rec)
        r = stats(rec.out, "shim_sum", check=False)
        return any(x["pid"] == pid and x["attaches"] for x in r.get("shim_sum", []))

    wait_for(attached, 30, "the shim's attach in the trace")


def finish_target(p, rounds=2):
    """ROUNDS of CALLS cudaMalloc each, then the end: the target's summary, checked whole."""
    for i in range(rounds):
        tell(p, "go")
        eq(readline(p), f"done {CALLS * (i + 1)}", "the main thread's calls")
    tell(p, "end")
    summary = json.loads(readline(p))
    eq(p.wait(60), 0, "the target's exit status")
    eq(summary, {"calls": CALLS * rounds, "failed_calls": CALLS * rounds, "bytes": BYTES,
                 "woken": 1, "eintr": 0, "errors": 0, "sleeps_ok": 1},
       "what the target's threads saw")


def check_trace(rec, pid, calls):
    eq(rec.wait(60), 0, "the recorder's exit status")
    r = stats(rec.out, "cuda_api_sum,shim_sum")
    eq(row(r["cuda_api_sum"], name="cudaMalloc")["count"], calls, "cudaMalloc calls recorded")
    s = row(r["shim_sum"], pid=pid)
    check("ptrace_injected" in s["state"].split(","), f"shim_sum state: {s}")
    eq(s["attaches"], 1, "attaches")
    return s


def check_cupti_reported(s):
    """No GPU: the CUPTI step failed, and said so (never a silent empty trace)."""
    check(s["cupti_errors"] >= 1 and s["last_error"], f"a CUPTI failure reported: {s}")


def test_inject_borrows_each_waiting_thread():
    """The thread borrowed sits in read (main, reader), futex (waiter) or nanosleep (sleeper):
    the program sees its call completed, never EINTR; the cuda family records throughout."""
    need_targets()
    for role in ("main", "reader", "waiter", "sleeper"):
        p, roles = start_target("shared")
        rec = inject(p.pid, tid=roles[role])
        line = injected_line(rec, p.pid)
        # The sleeper is interrupted in nanosleep (restarted through the restart block,
        # which rt_sigreturn clears): it is taken when that sleep is over, never before.
        check(f"thread {roles[role]} loads" in line, f"{role} borrowed: {line}")
        wait_attached(rec, p.pid)
        finish_target(p)
        check_cupti_reported(check_trace(rec, p.pid, 2 * CALLS))


def test_inject_static_cudart():
    need_targets()
    p, _ = start_target("static")
    rec = inject(p.pid)
    check("loads" in injected_line(rec, p.pid), rec.stderr)
    wait_attached(rec, p.pid)
    finish_target(p)
    check_cupti_reported(check_trace(rec, p.pid, 2 * CALLS))


@alone("-a --inject: injects the shim into every CUDA process of the machine")
def test_inject_system_wide_takes_the_cuda_processes():
    """-a --inject: the running processes that use CUDA (shared and static cudart) get the
    shim, one each, and finish exactly as untraced; a process without CUDA is left alone."""
    need_targets()
    targets = [start_target(kind)[0] for kind in ("shared", "static")]
    plain = spawn(["sleep", "120"])
    rec = Recorder("-a", "-t", "cuda,gpu", "--inject")
    rec.wait_ready()
    for p in targets:
        wait_for(lambda: f"--inject: pid {p.pid}" in rec.stderr, 60, f"pid {p.pid} injected")
        check("loads" in injected_line(rec, p.pid), rec.stderr)
        wait_attached(rec, p.pid)
        eq(len(maps_shims(p.pid)), 1, f"pid {p.pid}: one shim")
    for p in targets:
        finish_target(p)
    eq(maps_shims(plain.pid), set(), "a process without CUDA has no shim")
    check(f"--inject: pid {plain.pid}" not in rec.stderr, "nor was it tried")
    plain.kill()
    eq(rec.stop(), 0, f"the recorder's exit status ({rec.stderr[-400:]})")
    r = stats(rec.out, "shim_sum")
    for p in targets:
        s = row(r["shim_sum"], pid=p.pid)
        check("ptrace_injected" in s["state"].split(","), f"shim_sum state: {s}")
        eq(s["attaches"], 1, "attaches")
        calls = [e for e in dump(rec.out) if e["pid"] == p.pid and e["kind"] == "cuda_api"
                 and e["name"] == "cudaMalloc"]
        eq(len(calls), 2 * CALLS, f"pid {p.pid}: cudaMalloc calls recorded")


SECCOMP_TARGET = r"""
import ctypes, struct, sys
libc = ctypes.CDLL(None, use_errno=True)
# One instruction, BPF_RET|BPF_K SECCOMP_RET_ALLOW: a filter that allows everything, as a
# sandbox would install a longer one (PR_SET_NO_NEW_PRIVS first, as seccomp wants).
code = ctypes.create_string_buffer(struct.pack("HBBI", 0x06, 0, 0, 0x7fff0000))
class Prog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]
prog = Prog(1, ctypes.addressof(code))
assert libc.prctl(38, 1, 0, 0, 0) == 0, ctypes.get_errno()
assert libc.prctl(22, 2, ctypes.byref(prog), 0, 0) == 0, ctypes.get_errno()
print("ready", flush=True)
print("echo " + sys.stdin.readline().strip(), flush=True)
"""


def test_inject_refuses_a_process_under_seccomp():
    """A sandboxed process (a seccomp filter, even one allowing everything): the system calls
    a dlopen makes could be denied or kill it, so it is refused and goes on untouched."""
    need_targets()
    s = spawn(["python3", "-c", SECCOMP_TARGET])
    eq(readline(s), "ready", "the sandboxed program's ready line")
    refused(s.pid, "it runs under seccomp (mode 2)")
    tell(s, "still here")
    eq(readline(s), "echo still here", "the sandboxed program goes on")
    eq(s.wait(30), 0, "its exit status")


def test_inject_refuses_a_musl_process():
    """A program on musl libc: the borrowed call needs glibc's dlopen and rt_sigreturn stub,
    so it is refused and goes on untouched."""
    need_targets()
    musl = workload("inject/musl_loop")
    if not os.path.exists(musl):
        raise Skip("no musl program: needs musl-gcc (apt-get install musl-tools; make deps)")
    m = spawn([musl])
    eq(readline(m), "ready", "the musl program's ready line")
    refused(m.pid, "it uses musl libc")
    tell(m, "still here")
    eq(readline(m), "echo still here", "the musl program goes on")
    m.stdin.close()
    eq(m.wait(30), 0, "its exit status")


def test_inject_into_another_mount_namespace():
    """A process in a mount namespace of its own (a container's view: its own /run): the shim
    is written into that namespace (through /proc/PID/root), loaded, and the program runs
    exactly as untraced."""
    need_targets()
    if not shutil.which("unshare"):
        raise Skip("needs unshare (util-linux)")
    p = spawn(["unshare", "--mount", "--propagation", "private", "sh", "-c",
               'mount -t tmpfs bpfsight-test /run && exec "$@"', "sh", TARGETS["shared"],
               str(CALLS), str(BYTES)], env=dict(os.environ, LD_PRELOAD=STUB))
    check(readline(p).startswith("ready"), "the target's ready line")
    wait_for(lambda: threads_waiting(p.pid), 30, "the target's threads in their waits")
    check(os.stat(f"/proc/{p.pid}/ns/mnt").st_ino != os.stat("/proc/self/ns/mnt").st_ino,
          "the target has a mount namespace of its own")
    rec = inject(p.pid)
    check("loads" in injected_line(rec, p.pid), rec.stderr)
    wait_attached(rec, p.pid)
    shims = maps_shims(p.pid)
    eq(len(shims), 1, "one shim mapped")
    path = shims.pop()
    check(path.startswith("/run/bpfsight/") and os.path.exists(f"/proc/{p.pid}/root{path}"),
          f"the shim in the target's own /run: {path}")
    finish_target(p)
    check_cupti_reported(check_trace(rec, p.pid, 2 * CALLS))


def pyenv_python():
    for v in ("3.12", "3.11", "3.13", "3.10"):
        for d in sorted(os.listdir(PYENV)) if os.path.isdir(PYENV) else ():
            if d.startswith(v + "."):
                return os.path.join(PYENV, d, "bin", "python3")
    raise Skip("no pyenv CPython 3.10-3.13")


def test_inject_python_ctypes():
    need_targets()
    if not os.path.exists(CUDART):
        raise Skip(f"no {CUDART}")
    p = spawn([pyenv_python(), PY_CUDART, str(CALLS), CUDART],
              env=dict(os.environ, LD_PRELOAD=STUB))
    check(readline(p).startswith("ready"), "ready")
    rec = inject(p.pid)
    check("loads" in injected_line(rec, p.pid), rec.stderr)
    wait_attached(rec, p.pid)
    for i in range(2):
        tell(p, "go")
        eq(readline(p), f"done {CALLS * (i + 1)}", "calls")
    tell(p, "end")
    eq(json.loads(readline(p)), {"calls": 2 * CALLS}, "the script's summary")
    eq(p.wait(60), 0, "exit status")
    check_cupti_reported(check_trace(rec, p.pid, 2 * CALLS))


TORCH_LOOP = """
import os, sys, torch
torch.manual_seed(0)
torch.set_num_threads(2)
x = torch.randn(96, 96)
print("ready", os.getpid(), flush=True)
for line in sys.stdin:
    if line.startswith("end"):
        break
    for _ in range(int(sys.argv[1])):
        x = torch.tanh(x @ x * 0.01)
    print("done %.6f" % float(x.double().sum()), flush=True)
print("end", flush=True)
"""


def test_inject_torch_cpu_loop():
    """Debian's python3-torch (CPU) in a loop: the same numbers with and without injection."""
    need_root()
    if not pymods.has("/usr/bin/python3", "torch"):
        raise Skip("no python3-torch (apt-get install python3-torch)")
    script = os.path.join(tmpdir(), "loop.py")
    with open(script, "w") as f:
        f.write(TORCH_LOOP)

    # Both loops start at once (torch's import is the slow part), one of them injected.
    plain = spawn(["/usr/bin/python3", script, "50"])
    traced = spawn(["/usr/bin/python3", script, "50"])
    for p in (plain, traced):
        check(readline(p, 120).startswith("ready"), "torch ready")
    rec = inject(traced.pid, "gpu")
    check("loads" in injected_line(rec, traced.pid), rec.stderr)
    wait_attached(rec, traced.pid)
    out = {}
    for p in (plain, traced):
        out[p.pid] = []
        for _ in range(3):
            tell(p, "go")
            out[p.pid].append(readline(p, 120))
        tell(p, "end")
        out[p.pid].append(readline(p))
        eq(p.wait(60), 0, "torch's exit status")
    pid = traced.pid
    traced, plain = out[traced.pid], out[plain.pid]
    eq(traced, plain, "torch's results with and without the injection")
    eq(rec.wait(60), 0, "the recorder's exit status")
    s = row(stats(rec.out, "shim_sum")["shim_sum"], pid=pid)
    check("ptrace_injected" in s["state"], f"shim_sum: {s}")
    # CPU torch has no libcuda: the shim says why no GPU record can come.
    check("no libcuda" in s["last_error"], f"shim_sum says why no GPU records: {s}")


def test_inject_ten_times_one_shim():
    """Inject/record/stop ten times on one process: one shim loaded, one poller thread."""
    need_targets()
    p, _ = start_target("shared")
    for i in range(10):
        rec = inject(p.pid)
        lines = [l for l in rec.stderr_lines if "--inject" in l]
        if i == 0:
            check("loads" in injected_line(rec, p.pid), rec.stderr)
            wait_attached(rec, p.pid)
        else:
            eq(lines, [], f"recording {i + 1}: the loaded shim is used, nothing injected")
            wait_attached(rec, p.pid, injected=False)
        tell(p, "go")
        eq(readline(p), f"done {CALLS * (i + 1)}", "calls")
        if i < 9:
            eq(rec.stop(), 0, "recorder exit status")
            r = stats(rec.out, "cuda_api_sum")
            eq(row(r["cuda_api_sum"], name="cudaMalloc")["count"], CALLS,
               f"recording {i + 1}: calls")
    eq(len(maps_shims(p.pid)), 1, "shim files mapped")
    eq(shim_threads(p.pid), 1, "bpfsight-shim threads")
    tell(p, "end")
    summary = json.loads(readline(p))
    eq(p.wait(60), 0, "exit status")
    eq((summary["calls"], summary["eintr"], summary["errors"], summary["bytes"]),
       (10 * CALLS, 0, 0, BYTES), "the target's summary")
    eq(rec.wait(60), 0, "the last recorder")
    s = row(stats(rec.out, "shim_sum")["shim_sum"], pid=p.pid)
    check("ptrace_injected" in s["state"], f"shim_sum: {s}")


def test_inject_recorder_killed():
    """SIGKILL the recorder at points all through its start and injection: whenever it dies,
    the target is never left stopped or traced, ends exactly as untraced, one shim at most."""
    need_targets()
    p, _ = start_target("shared")
    for delay in (0.0, 0.05, 0.1, 0.2, 0.3, 0.5, 0.8, 1.2):
        rec = Recorder("-p", str(p.pid), "-t", "cuda,gpu", "--inject")
        time.sleep(delay)  # a kill point, not a wait: any moment must be safe
        rec.p.kill()
        rec.wait(30)

        def let_go():
            with open(f"/proc/{p.pid}/status") as f:
                st = dict(l.split(":", 1) for l in f)
            return st["TracerPid"].strip() == "0" and st["State"].split()[0] != "t"

        wait_for(let_go, 30, "the target neither traced nor stopped")
        check(len(maps_shims(p.pid)) <= 1, "at most one shim")
    finish_target(p)


NVTX_RANGES = workload("shim/nvtx_ranges")


def nvtx_counts(path):
    return sorted((r["name"], r["style"], r["count"])
                  for r in stats(path, "nvtx_sum")["nvtx_sum"])


def test_inject_nvtx_late():
    """NVTX instances initialized without a tool are reached through .symtab after --inject:
    the program's (initialized before the injection: every range, as a launch records them)
    and libnvtx_second.so's (initialized by its first call, after: taken from then on,
    never that first call)."""
    need_root()
    if not os.path.exists(NVTX_RANGES):
        raise Skip(f"{NVTX_RANGES} missing (built with the CUDA toolkit)")
    loops = 5
    launched = os.path.join(tmpdir(), "launch.bst")
    r = run([BPFSIGHT, "record", "-o", launched, "-t", "nvtx", "--", NVTX_RANGES,
             "--second-dso", "--loops", str(loops)])
    eq(r.returncode, 0, f"launch mode: {r.stderr[-500:]}")
    go = os.path.join(tmpdir(), "go")
    env = {k: v for k, v in os.environ.items() if k != "NVTX_INJECTION64_PATH"}
    p = spawn([NVTX_RANGES, "--second-dso", "--loops", str(loops), "--late", "--wait-file", go],
              env=env)
    pid = json.loads(readline(p))["pid"]
    rec = inject(pid, "nvtx")
    check("loads" in injected_line(rec, pid), rec.stderr)
    # What an injected shim does for NVTX is said once, whole.
    check(re.search(r"--inject: NVTX follows only partly .* \(docs/NVTX\.md\)\n",
                    rec.stderr), rec.stderr)
    wait_attached(rec, pid)
    open(go, "w").close()
    eq(p.wait(60), 0, "nvtx_ranges' exit status (it checks every level NVTX returns)")
    eq(rec.wait(60), 0, "recorder exit status")
    s = row(stats(rec.out, "shim_sum")["shim_sum"], pid=pid)
    check({"ptrace_injected", "nvtx_injected", "nvtx_on"} <= set(s["state"].split(",")),
          f"shim_sum: {s}")
    got = {(n, st): c for n, st, c in nvtx_counts(rec.out)}
    want = {(n, st): c for n, st, c in nvtx_counts(launched)}
    eq(want.pop(("second-dso", "PushPop")), loops, "the launch's second-DSO ranges")
    second = got.pop(("second-dso", "PushPop"), 0)
    eq(got, want, "the program's NVTX ranges, injected late vs launched with the shim")
    # Its first call initialized it (no tool then); the poller takes it within a poll.
    check(second <= loops - 1, f"second-DSO ranges after its first call: {second}")


def untouched(pid):
    with open(f"/proc/{pid}/status") as f:
        status = dict(l.split(":", 1) for l in f)
    eq(status["State"].split()[0], "S", "the target's state (waiting, not stopped)")
    eq(maps_shims(pid), set(), "no shim in the target")


def refused(pid, want):
    rec = Recorder("-p", str(pid), "-t", "cuda,gpu", "--inject")
    rec.wait_ready()
    line = injected_line(rec, pid)
    check(f"pid {pid} not injected: {want}" in line, f"the refusal: {line}")
    untouched(pid)
    eq(rec.stop(), 0, "recorder exit status")
    s = row(stats(rec.out, "shim_sum")["shim_sum"], pid=pid)
    check(s["last_error"].startswith("--inject refused: " + want), f"shim_sum: {s}")
    return line


def test_inject_refusals():
    """Another tracer, a static binary without dlopen, a dead pid: a message each, and the
    target untouched (it goes on and finishes exactly)."""
    need_targets()
    if not shutil.which("strace"):
        raise Skip("needs strace (apt-get install strace)")
    p, _ = start_target("shared", preload=False)
    st = spawn(["strace", "-p", str(p.pid), "-o", os.devnull])

    def traced():
        with open(f"/proc/{p.pid}/status") as f:
            return any(l.startswith("TracerPid:") and l.split()[1] != "0" for l in f)

    wait_for(traced, 30, "strace attached")
    refused(p.pid, f"already traced by pid {st.pid} (strace)")
    st.send_signal(signal.SIGINT)  # strace detaches (and exits by the signal)
    st.wait(30)
    wait_for(lambda: not traced(), 30, "strace detached")
    finish_target(p)

    s = spawn([STATIC])
    check(readline(s) == "ready", "static ready")
    refused(s.pid, "it is linked statically")
    tell(s, "still here")
    eq(readline(s), "echo still here", "the static program goes on")
    s.stdin.close()
    eq(s.wait(30), 0, "the static program's exit status")

    gone = spawn(["true"])
    gone.wait()
    r = run([BPFSIGHT, "record", "-p", str(gone.pid), "-t", "gpu", "--inject",
             "-o", os.path.join(tmpdir(), "t.bst")])
    check(r.returncode != 0 and f"no such process: {gone.pid}" in r.stderr, r.stderr)


def test_inject_refuses_ptrace_scope_3():
    need_root()
    raise Skip("kernel.yama.ptrace_scope=3 cannot be undone until reboot"
               + ("" if os.path.exists("/proc/sys/kernel/yama/ptrace_scope")
                  else " (and this kernel has no Yama)")
               + ": the refusal reads it, not tested here")


def test_no_inject_says_so():
    """-t gpu on a process without the shim and no --inject: stderr and info say so."""
    need_targets()
    p, _ = start_target("shared", preload=False)
    rec = Recorder("-p", str(p.pid), "-t", "cuda,gpu")
    rec.wait_ready()
    tell(p, "go")
    eq(readline(p), f"done {CALLS}", "calls")
    eq(rec.stop(), 0, "recorder exit status")
    check(f"pid {p.pid} was not started with the cupti-shim" in rec.stderr and
          "--inject" in rec.stderr, rec.stderr)
    r = run([BPFSIGHT, "info", rec.out], check=True)
    check("not started with the cupti-shim: record with --inject" in r.stdout, r.stdout)
    untouched(p.pid)
    tell(p, "end")
    readline(p)
    eq(p.wait(60), 0, "exit status")
