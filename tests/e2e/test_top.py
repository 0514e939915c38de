"""bpfsight top: the live view, run in a real pseudo-terminal and its screen read back.

The workloads' truth: tests/workloads/gil_work.py's `cpu 2` mode has two CPU-bound threads
"cpu-0" and "cpu-1" (named with prctl) that fight for the GIL the whole time, so each waits
for it in every second (a third of it here, on 2 busy cores; the test asks for 1%, what any
load leaves); tests/workloads/cuda_paced.c's "cuda-caller" thread calls
cudaStreamQuery of the real libcudart every 10 ms while its main thread, "idle", makes no CUDA
call at all. The screen is what a terminal would show: the last whole frame (from the cursor's
home to the clear-to-end) with the escape sequences removed.
"""
import fcntl
import os
import pty
import re
import select
import signal
import struct
import termios
import threading
import time

from helpers import (BPFSIGHT, Recorder, Skip, check, eq, need_root, run, spawn, stats, tell,
                     tmpdir, wait_for, workload)
from test_gil import WORK, need_pyenv

# For tests/run_tests.py: about how long these tests take on CI's machine (its order).
SECONDS = 16

CUDART = "/usr/local/cuda/lib64/libcudart.so.13"
PACED = workload("cuda_paced")
FRAME = re.compile(rb"\x1b\[H(.*?)\x1b\[J", re.S)
ENTER, LEAVE = b"\x1b[?1049h", b"\x1b[?1049l"


class Pty:
    """bpfsight in a pseudo-terminal of ROWS x COLS (its controlling terminal: a resize sends
    it SIGWINCH), everything it writes kept."""

    def __init__(self, args, rows=24, cols=80):
        self.pid, self.fd = pty.fork()
        if self.pid == 0:
            fcntl.ioctl(0, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
            os.execve(args[0], args, dict(os.environ, TERM="xterm"))
        self.out = b""
        self.status = None
        self.lock = threading.Lock()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        while True:
            try:
                r, _, _ = select.select([self.fd], [], [], 0.1)
                data = os.read(self.fd, 65536) if r else b""
            except OSError:  # the child is gone: EIO
                return
            if r and not data:
                return
            with self.lock:
                self.out += data

    def text(self):
        with self.lock:
            return self.out

    def frames(self):
        """Every whole frame so far: its lines, as the screen shows them."""
        # The terminal turns each "\n" of "\r\n" into "\r\n" itself (ONLCR).
        return [f.replace(b"\x1b[K", b"").replace(b"\r\r\n", b"\r\n").decode("ascii", "replace")
                .split("\r\n") for f in FRAME.findall(self.text())]

    def resize(self, rows, cols):
        fcntl.ioctl(self.fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))

    def key(self, k):
        os.write(self.fd, k)

    def wait(self, timeout=30):
        end = time.time() + timeout
        while time.time() < end:
            pid, st = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                self.status = os.waitstatus_to_exitcode(st)
                self.reader.join(5)
                return self.status
            time.sleep(0.05)
        raise AssertionError(f"bpfsight top still running after {timeout}s: "
                             f"{self.text()[-600:]!r}")

    def kill(self):
        if self.status is None:
            try:
                os.kill(self.pid, signal.SIGKILL)
                os.waitpid(self.pid, 0)
            except OSError:
                pass
        os.close(self.fd)


def rows_of(lines):
    """The rows under the column headings: {(id, thread): {"name", "thread", HEADING: text}}
    (a process and its main thread have the same id), cut at
    the headings' places (numbers are right-aligned under theirs, at most one wider; the name
    and the text column left-aligned)."""
    head = next((i for i, l in enumerate(lines) if re.match(r"\s+ID NAME", l)), None)
    if head is None:
        return {}
    h = lines[head]
    cols = [(m.group(0), m.start(), m.end()) for m in re.finditer(r"\S+(?: SYSCALL)?", h)]
    out = {}
    for line in lines[head + 1:]:
        m = re.match(r"\s*(\d+) ", line)
        if not m:
            continue
        r = {"thread": line[8:9] == " ", "name": line[8:cols[2][1]].strip()}
        for name, start, end in cols[2:]:
            # A number is at most one wider than its heading, right-aligned under it.
            r[name] = (line[start:] if name == "SLOWEST SYSCALL" else
                       line[start - 1:end]).strip()
        out[int(m.group(1)), r["thread"]] = r
    return out


def num(text):
    """A cell's number ("-": nothing, 0)."""
    if text in ("", "-"):
        return 0.0
    m = re.fullmatch(r"([\d.]+)([kM]?)", text)
    check(m, f"not a number: {text!r}")
    return float(m.group(1)) * {"": 1, "k": 1e3, "M": 1e6}[m.group(2)]


# Losses a loaded machine makes whatever top does: a context switch that reaches no program
# (docs/USAGE.md, sched), counted under these causes.
KERNEL_MISSES = {"osrt: osrt_missed", "sched: sched_missed"}


def only_kernel_misses(frames, header):
    """HEADER's count of events lost is the sum of the frames' new losses ("LOST N (+K: WHY)"),
    each a switch the kernel called no program for: none of top's own."""
    total = 0
    for f in frames:
        m = re.search(r"LOST (\d+) \(\+(\d+): ([^)]*)", f[1]) if len(f) > 1 else None
        if not m:
            continue
        # the causes, the last one perhaps cut at the screen's edge ("osrt:")
        for c in m.group(3).split("; "):
            cause = c if c.endswith(":") else c.rsplit(" ", 1)[0]
            check(any(k.startswith(cause) for k in KERNEL_MISSES),
                  f"events lost other than missed switches: {f[1]}")
        total += int(m.group(2))
    m = re.search(r"(?:lost|LOST) (\d+)", header)
    check(m, f"no count of events lost: {header}")
    eq(int(m.group(1)), total, f"events lost by the header, and the frames' new ones ({header})")


def start_workloads():
    py = need_pyenv()
    if not os.path.exists(CUDART):
        raise Skip(f"no CUDA toolkit ({CUDART})")
    check(os.path.exists(PACED), f"{PACED} missing: run make test-build")
    gil = spawn([py, WORK, "--go", "cpu", "2", "60"])
    gil_pid = int(gil.stdout.readline().split()[1])  # "ready PID"
    cuda = spawn([PACED, CUDART, "20"])
    cuda_pid = int(cuda.stdout.readline().split()[1])
    caller = int(cuda.stdout.readline().split()[1])
    return gil, gil_pid, cuda, cuda_pid, caller


def test_top_screen_gil_and_cuda_threads_resize_and_quit():
    """top -p on two workloads in an 80x24 terminal: the processes and their threads by name,
    both GIL-bound threads waiting for the GIL, the CUDA caller's calls (and none for the idle
    thread), no line over 80 columns; resized to 60x20 it draws within that; q leaves the
    alternate screen, gives the terminal back as it was (echo, lines) and exits 0."""
    need_root()
    gil, gil_pid, cuda, cuda_pid, caller = start_workloads()
    slave_attrs = None
    t = Pty([BPFSIGHT, "top", "-p", f"{gil_pid},{cuda_pid}"])
    try:
        wait_for(lambda: ENTER in t.text(), 30, "the alternate screen")
        tell(gil, "go")
        names = {}

        def shows_all():
            for lines in reversed(t.frames()[-3:]):
                r = rows_of(lines)
                names.update({k: v["name"] for k, v in r.items()})
                cpus = [v for v in r.values() if v["thread"] and v["name"].startswith("cpu-")]
                if ((gil_pid, False) in r and (cuda_pid, False) in r and (caller, True) in r
                        and len(cpus) == 2 and all(1 <= num(v["GIL%"]) <= 100 for v in cpus)
                        and num(r[caller, True]["CUDA/s"]) > 0):
                    shows_all.rows, shows_all.lines = r, lines
                    return True
            return False
        try:
            wait_for(shows_all, 30, "a frame with both processes, GIL waits and CUDA calls")
        except AssertionError:
            raise AssertionError(f"last frame: {t.frames()[-1:]}")
        r, lines = shows_all.rows, shows_all.lines
        eq(r[caller, True]["name"], "cuda-caller", "the CUDA thread's name")
        eq(r[cuda_pid, False]["name"], "idle", "the CUDA process's name (its main thread's)")
        eq(r[cuda_pid, False]["CUDA/s"], r[caller, True]["CUDA/s"], "the process: its threads")
        check(list(r).index((caller, True)) > list(r).index((cuda_pid, False)),
              "the thread under its process")
        # The idle thread made no call: hidden (nothing this interval), or shown without any.
        if (cuda_pid, True) in r:
            eq(num(r[cuda_pid, True]["CUDA/s"]), 0, "the idle thread's CUDA calls")
        for v in r.values():
            if v["thread"] and v["name"].startswith("cpu-"):
                eq(num(v["CUDA/s"]), 0, f"{v['name']}: CUDA calls of a python thread")
        check(all(len(l) <= 80 for f in t.frames() for l in f),
              f"a line over 80 columns: {[l for f in t.frames() for l in f if len(l) > 80]}")
        check(all(len(f) <= 24 for f in t.frames()), "a frame over 24 lines")
        check(lines[0].startswith(f"top - pids {gil_pid},{cuda_pid} - sort CPU%"), lines[0])
        check("2 processes" in lines[1], lines[1])
        frames = t.frames()
        only_kernel_misses(frames[:frames.index(lines) + 1], lines[1])

        # Resized: the kernel sends SIGWINCH; the next frames fit 60x20.
        seen = len(t.frames())
        t.resize(20, 60)
        wait_for(lambda: any(max(map(len, f)) <= 60 and len(f) <= 20
                             and rows_of(f).get((caller, True)) for f in t.frames()[seen:]), 15,
                 "a frame redrawn within 60x20")
        narrow = [f for f in t.frames()[seen:] if max(map(len, f)) <= 60][-1]
        check("CPU%" in narrow[2] and "GIL%" in narrow[2], f"headings at 60: {narrow[2]}")

        slave_attrs = termios.tcgetattr(t.fd)
        t.key(b"q")
        eq(t.wait(30), 0, "exit status after q")
        out = t.text()
        check(out.rfind(LEAVE) > out.rfind(ENTER), "the alternate screen is left")
        check(out.rfind(b"\x1b[?25h") > out.rfind(b"\x1b[?25l"), "the cursor is shown again")
        end = out[out.rfind(LEAVE):]
        # One frame under load: the first came late and the resize redrew it (not a new one).
        check(re.search(rb"bpfsight top: (1 frame|\d+ frames) shown, q pressed: \d+ events "
                        rb"lost", end),
              f"the recording's end line after the screen, saying what happened: {end[-300:]}")
    finally:
        t.kill()
        gil.kill()
        cuda.kill()
    check(slave_attrs is not None, "terminal attributes read")


def test_top_restores_terminal_modes():
    """The terminal's modes (echo, canonical lines, signals) are as they were once top exits:
    read from the pseudo-terminal's other side before and after an -n 1 run."""
    need_root()
    master, slave = pty.openpty()
    try:
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 0, 0))
        before = termios.tcgetattr(slave)
        p = spawn_on(slave, [BPFSIGHT, "top", "-n", "1", "-i", "200ms", "-p", str(os.getpid())])
        drained = drain(master, p)
        eq(p.returncode, 0, f"exit status: {drained[-400:]!r}")
        after = termios.tcgetattr(slave)
        eq(after[3] & (termios.ECHO | termios.ICANON | termios.ISIG),
           before[3] & (termios.ECHO | termios.ICANON | termios.ISIG), "lflag echo/icanon/isig")
        eq(after, before, "every terminal attribute")
        check(drained.rfind(LEAVE) > drained.rfind(ENTER) >= 0, "alternate screen entered, left")
    finally:
        os.close(master)
        os.close(slave)


def spawn_on(tty, args):
    import subprocess
    return subprocess.Popen(args, stdin=tty, stdout=tty, stderr=tty,
                            env=dict(os.environ, TERM="xterm"))


def drain(master, p, timeout=30):
    out, end = b"", time.time() + timeout
    while time.time() < end:
        r, _, _ = select.select([master], [], [], 0.1)
        if r:
            out += os.read(master, 65536)
        elif p.poll() is not None:
            return out
    p.kill()
    raise AssertionError(f"top did not exit: {out[-400:]!r}")


def test_top_batch_frames():
    """-b -n 2: two plain frames on stdout (no escape sequence), the target's row in each,
    exit status 0; the end line on stderr. A -p target that exits ends top (status 0)."""
    need_root()
    w = spawn(["sleep", "60"])
    t = spawn([BPFSIGHT, "top", "-b", "-i", "10s", "-p", str(w.pid)])
    wait_for(lambda: "Ctrl-C to stop" in t.stderr.readline(), 60, "top's start line")
    w.kill()
    eq(t.wait(30), 0, "exit status once the target exited")
    out = t.stdout.read()
    # Its last frame, shorter than -i: the target there, then gone (shown once more).
    check("sleep" in out and "- every 10.0s -" in out, f"the last frame: {out[-500:]}")
    end = t.stderr.read()
    check("bpfsight top: the targets exited: 0 events lost" in end, f"the end line: {end}")
    w = spawn(["sleep", "30"])
    p = run([BPFSIGHT, "top", "-b", "-n", "2", "-i", "300ms", "-p", str(w.pid)], timeout=60)
    eq(p.returncode, 0, f"exit status: {p.stderr[-400:]}")
    check("\x1b" not in p.stdout, "no escape sequence in batch mode")
    frames = [f for f in p.stdout.split("\n\n") if f.strip()]
    eq(len(frames), 2, f"frames: {p.stdout[-600:]}")
    for f in frames:
        r = rows_of(f.splitlines())
        check(r.get((w.pid, False), {}).get("name") == "sleep", f"the -p process's row: {f}")
    # What happened, in top's words (not "stopped by signal": -n asked for two frames).
    check("bpfsight top: 2 frames shown: 0 events lost" in p.stderr, p.stderr[-300:])


def test_top_replays_a_dumps_gil_waits_frame_by_frame():
    """top FILE of a flight-recorder dump (issue 83): a dump writes gil's cumulative
    snapshots after its window, yet each frame shows its own interval's GIL%, as a live top
    would: gil_work's two CPU-bound threads fight for the GIL all the time, so both wait in
    every frame of the 3 s window, and their frames' mean is the share gil_sum gives the
    window (not "-" in each frame and the window's total in the last)."""
    need_root()
    py = need_pyenv()
    w = spawn([py, WORK, "--go", "cpu", "2", "5"])
    pid = int(w.stdout.readline().split()[1])  # "ready PID"
    r = Recorder("-t", "gil", "-p", str(pid), "--flight-recorder", "3s",
                 out=os.path.join(tmpdir(), "fr.bst"))
    r.wait_ready()
    tell(w, "go")
    # Each thread spins for 5 s of wall time from its start: a window of 3 s ending 3.3 s
    # after both are there lies inside the fight however slow the machine.
    def names():
        task = f"/proc/{pid}/task"
        try:
            return {open(f"{task}/{t}/comm").read().strip() for t in os.listdir(task)}
        except OSError:
            return set()
    wait_for(lambda: {"cpu-0", "cpu-1"} <= names(), 30, "the two threads")
    both = time.monotonic()
    while time.monotonic() < both + 3.3:
        time.sleep(0.05)
    r.p.send_signal(signal.SIGUSR1)
    wait_for(lambda: "flight recorder: wrote" in r.stderr, 30, "the dump")
    eq(r.stop(), 0, r.stderr[-600:])
    w.kill()
    path = re.search(r"flight recorder: wrote (\S+):", r.stderr).group(1)
    p = run([BPFSIGHT, "top", "-i", "1s", path])
    eq(p.returncode, 0, p.stderr[-400:])
    frames = [rows_of(f.splitlines()) for f in p.stdout.split("\n\n") if f.strip()]
    check(len(frames) >= 3, f"the 3 s window in 1 s frames: {p.stdout}")
    share = {x["thread_name"]: x["contention_pct"] for x in stats(path, "gil_sum")["gil_sum"]}
    for name in ("cpu-0", "cpu-1"):
        got = [num(next((x["GIL%"] for x in f.values() if x["name"] == name), "-"))
               for f in frames[:3]]
        check(all(g > 0 for g in got), f"{name}'s GIL% in every frame: {got}\n{p.stdout}")
        mean = sum(got) / len(got)
        check(0.5 * share[name] <= mean <= 1.5 * share[name] + 2,
              f"{name}: frames {got} against gil_sum's {share[name]}% of the window")


def test_top_refuses_dead_pid_bad_sort_no_root():
    """A pid that does not exist, an unknown --sort key, no privileges: exit status 1 and a
    message saying what to do, before the terminal is touched."""
    p = run([BPFSIGHT, "top", "-p", "999999999"])
    eq(p.returncode, 1, "dead pid: exit status")
    check("no such process: 999999999" in p.stderr, p.stderr)
    eq(p.stdout, "", "nothing drawn")
    need_root()
    p = run([BPFSIGHT, "top", "--sort", "bogus", "-p", str(os.getpid())])
    eq(p.returncode, 1, "bad --sort: exit status")
    check("bad --sort 'bogus'" in p.stderr and "cpu" in p.stderr and "gil" in p.stderr,
          p.stderr)
    # Root without capabilities (none in the bounding set): what a plain user has.
    p = run(["setpriv", "--bounding-set=-all", "--inh-caps=-all", BPFSIGHT, "top", "-p",
             str(os.getpid())])
    eq(p.returncode, 1, "not root: exit status")
    check("needs root" in p.stderr and "sudo" in p.stderr, p.stderr)
    eq(p.stdout, "", "nothing drawn")


def test_top_replays_h100_traces():
    """top FILE: the frames of a real recording (../shared/traces, one H100). gpt2-gil-bound's
    main thread waits for the GIL almost all the time of its steps (~4 s a step against 15 ms
    without the CPU thread beside it: its README); job-attach-p's job keeps the GPU busy,
    autograd's thread makes CUDA calls. Lines fit $COLUMNS; no CPU% (nothing to read it
    from)."""
    from test_gpu_links import shared_traces
    paths = {os.path.basename(p): p for p in shared_traces()}
    for width in (80, 60):
        p = run([BPFSIGHT, "top", "-i", "2s", paths["gpt2-gil-bound.bst"]],
                env=dict(os.environ, COLUMNS=str(width)))
        eq(p.returncode, 0, f"exit status: {p.stderr[-300:]}")
        frames = [f.splitlines() for f in p.stdout.split("\n\n") if f.strip()]
        check(len(frames) >= 10, f"{len(frames)} frames")
        check(all(len(l) <= width for f in frames for l in f), f"a line over {width}")
        check("CPU%" not in p.stdout, "no CPU% in a replay")
        gil = [num(r["GIL%"]) for f in frames for r in rows_of(f).values()
               if r["thread"] and "GIL%" in r]
        check(sum(g >= 80 for g in gil) >= 3, f"the main thread's GIL waits: {sorted(gil)[-5:]}")
    p = run([BPFSIGHT, "top", "-i", "1s", "-s", "gpu", paths["job-attach-p.bst"]])
    eq(p.returncode, 0, f"exit status: {p.stderr[-300:]}")
    frames = [rows_of(f.splitlines()) for f in p.stdout.split("\n\n") if f.strip()]
    procs = [r for f in frames for r in f.values() if not r["thread"]]
    check(any(0 < num(r["GPU%"]) <= 100 for r in procs), f"GPU%: {procs[:3]}")
    autograd = [r for f in frames for r in f.values() if r["name"] == "pt_autograd_0"]
    check(any(num(r["CUDA/s"]) > 0 for r in autograd), f"autograd's calls: {autograd[:3]}")
    check("LOST 2169 (+2169" in p.stdout, "the trace's losses, said in the frame they came")
    p = run([BPFSIGHT, "top", "-p", "1", paths["job-attach-p.bst"]])
    eq(p.returncode, 1, "-p with a file")
    check("replayed whole" in p.stderr, p.stderr)


FEEDER_JOB = r"""
import os, sys, threading, time
r, w = os.pipe()
def feeder():
    os.read(r, 1)  # READ
threading.Thread(target=feeder, name="feeder", daemon=True).start()
print("ready", os.getpid(), flush=True)
end = time.time() + float(sys.argv[1])
x = 0
while time.time() < end:
    x += 1  # SPIN
"""


def test_top_process_now_is_its_leading_threads():
    """A process row's NOW says what its leading thread does: the main thread spins in the job's
    loop while a feeder thread sleeps in a read; the row says the main thread's state (running,
    or waiting for a CPU on a loaded machine) at its line, not the feeder's read, which its own
    row keeps (before, a process row showed its thread's longest: the feeder's read)."""
    need_root()
    py = need_pyenv(11)
    job = spawn([py, "-c", FEEDER_JOB, "60"])
    try:
        pid = int(job.stdout.readline().split()[1])
        p = run([BPFSIGHT, "top", "-b", "-p", str(pid), "-d", "3", "-i", "1s"], timeout=60,
                env=dict(os.environ, COLUMNS="200"))
        eq(p.returncode, 0, p.stderr[-600:])
        procs = [l for l in p.stdout.splitlines() if re.match(rf"^ +{pid} python", l)]
        feeders = [l for l in p.stdout.splitlines() if re.match(r"^ +\d+  feeder ", l)]
        check(procs and feeders, p.stdout[-1500:])
        check(all(re.search(r" read: feeder \(<string>:5\) \d+(\.\d+)?s$", l) for l in feeders),
              "\n".join(feeders))
        check(all(re.search(r" (running|runnable)\b", l) and " read:" not in l for l in procs),
              "the process rows say the main thread's:\n" + "\n".join(procs + feeders))
    finally:
        job.kill()
        job.wait()
