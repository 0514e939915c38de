# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""What placing each traced process's own probes costs (issue 82), against probes on the files
for every process (the binary before it), side by side in one run: a recording's start, a
fork- and an exec-heavy job, a process of 1,000 threads, and -a beside 50,000 short processes.
By hand, not part of `make bench`:

    python3 bench/scoped_probes.py --old OLD/bpfsight --new build/bpfsight [--only NAMES]

Each figure is the median of its runs (min .. max), old and new alternated; the untraced job
is the floor of the job figures. Prints bench/RESULTS.md's table rows."""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PY = "/usr/bin/python3"
CUDART = "/usr/local/cuda/lib64/libcudart.so.13"
NCCL = "/usr/local/cuda/lib64/libnccl.so.2"
C10 = os.path.join(REPO, "build", "tests", "cuda", "libfake_c10_cuda.so")
JOB = os.path.join(REPO, "tests", "workloads", "beside_job.py")
CHURN = os.path.join(REPO, "build", "tests", "churn")
TMP = tempfile.mkdtemp(prefix="bench-scoped-")

# A job that forks N children, each calling cudaMalloc once and exiting at once; it prints its
# own time for the N forks (ns).
FORKER = r"""
import ctypes, os, sys, time
cudart = ctypes.CDLL(sys.argv[2]); ptr = ctypes.c_void_p()
if len(sys.argv) > 3:
    print(os.getpid(), flush=True); sys.stdin.readline()
t0 = time.monotonic_ns()
for _ in range(int(sys.argv[1])):
    pid = os.fork()
    if not pid:
        cudart.cudaMalloc(ctypes.byref(ptr), ctypes.c_size_t(256)); os._exit(0)
    os.waitpid(pid, 0)
print(time.monotonic_ns() - t0, flush=True)
"""
# An exec-heavy job: a shell running /bin/true N times; prints its time (ns).
EXECER = 'i=0; t0=$(date +%s%N); while [ $i -lt {n} ]; do /bin/true; i=$((i+1)); done; ' \
         'echo $(( $(date +%s%N) - t0 ))'
# A process of 1,000 idle threads whose main thread makes N cudaMalloc calls on each line.
THREADS = r"""
import ctypes, os, sys, threading, time
cudart = ctypes.CDLL(sys.argv[2]); ptr = ctypes.c_void_p(); ev = threading.Event()
for _ in range(1000):
    threading.Thread(target=ev.wait, daemon=True).start()
print(os.getpid(), flush=True)
for line in sys.stdin:
    t0 = time.monotonic_ns()
    for _ in range(int(sys.argv[1])):
        cudart.cudaMalloc(ctypes.byref(ptr), ctypes.c_size_t(256))
    print(time.monotonic_ns() - t0, flush=True)
"""


def med(v):
    v = [x for x in v if x is not None]
    if not v:
        return "n/a"
    return f"{statistics.median(v):.3g} ({min(v):.3g} .. {max(v):.3g})"


def ratio(a, b):
    return f"{statistics.median(a) / statistics.median(b):.2f}x" if a and b else "n/a"


def cpu_of(pid):
    """user + sys seconds of PID (and its reaped children) so far."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return sum(int(x) for x in fields[11:15]) / os.sysconf("SC_CLK_TCK")


class Rec:
    """BIN record ARGS in the background (into OUT), live once it says so."""

    def __init__(self, binary, *args, out="t.bst"):
        self.out = os.path.join(TMP, out)
        self.t0 = time.monotonic()
        self.p = subprocess.Popen([binary, "record", "--force", "-o", self.out, *args],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for line in self.p.stderr:
            if "Ctrl-C to stop" in line:
                break
        self.ready_s = time.monotonic() - self.t0
        self.cpu_start = cpu_of(self.p.pid)

    def stop(self):
        cpu = cpu_of(self.p.pid)
        self.p.send_signal(2)
        err = self.p.communicate(timeout=300)[1]
        return cpu, err


def start(binaries, runs):
    """A start: launch mode's `record -- true` (its CPU), and `record -p` of the job (its
    time until live)."""
    rows = {b: {"launch_cpu": [], "p_ready": [], "p_cpu": []} for b in binaries}
    job = subprocess.Popen([PY, JOB, CUDART, NCCL, C10], stdin=subprocess.PIPE,
                           stdout=subprocess.PIPE, text=True)
    pid = json.loads(job.stdout.readline())["pid"]
    for _ in range(runs):
        for b in binaries:
            t = subprocess.run(["/usr/bin/time", "-f", "%U %S", b, "record", "--force", "-o",
                                os.path.join(TMP, "l.bst"), "--", "true"],
                               capture_output=True, text=True)
            u, s = t.stderr.strip().splitlines()[-1].split()
            rows[b]["launch_cpu"].append(float(u) + float(s))
            r = Rec(b, "-p", str(pid), "-t", "cuda,nccl,gil,mem")
            rows[b]["p_ready"].append(r.ready_s)
            rows[b]["p_cpu"].append(r.cpu_start)
            r.stop()
    job.communicate("exit\n", timeout=30)
    print("\n## start (s)")
    for b in binaries:
        x = rows[b]
        print(f"| {b} | launch -- true CPU {med(x['launch_cpu'])} | -p job -t cuda,nccl,gil,mem "
              f"live after {med(x['p_ready'])}, CPU until live {med(x['p_cpu'])} |")


def job_time(cmd, binary=None, args=(), attach=False):
    """The job's own time (its last stdout line, ns, in s), untraced or under BINARY record:
    launched, or (ATTACH) attached with -p to the job waiting for its cue."""
    if attach:
        p = subprocess.Popen(cmd + ["wait"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             text=True)
        pid = p.stdout.readline().strip()
        r = Rec(binary, "-p", pid, *args, out="j.bst") if binary else None
        out = p.communicate("go\n", timeout=600)[0]
        if r:
            r.stop()
        return int(out.split()[-1]) / 1e9
    if binary:
        cmd = [binary, "record", "--force", "-o", os.path.join(TMP, "j.bst"), *args, "--",
               *cmd]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    return int(p.stdout.split()[-1]) / 1e9


def calls_recorded(binary, name="cudaMalloc"):
    p = subprocess.run([binary, "dump", os.path.join(TMP, "j.bst")], capture_output=True,
                       text=True)
    return sum(1 for l in p.stdout.splitlines() if f'"{name}"' in l)


def forks(binaries, runs, n=200):
    """N forks, each child calling cudaMalloc at once: launched (held) and attached (-p)."""
    cmd = [PY, "-c", FORKER, str(n), CUDART]
    print(f"\n## fork-heavy: {n} forks, one cudaMalloc each (s; calls recorded)")
    for mode in ("launch", "attach"):
        base = [job_time(cmd, attach=mode == "attach") for _ in range(runs)]
        print(f"| {mode} untraced | {med(base)} |")
        for b in binaries:
            t, got = [], []
            for _ in range(runs):
                t.append(job_time(cmd, b, ("-t", "cuda,nccl,gil"), attach=mode == "attach"))
                got.append(calls_recorded(b))
            print(f"| {mode} {b} | {med(t)} | {ratio(t, base)} | calls {med(got)} of {n} |")


def execs(binaries, runs, n=300):
    cmd = ["sh", "-c", EXECER.format(n=n)]
    base = [job_time(cmd) for _ in range(runs)]
    print(f"\n## exec-heavy: a shell running /bin/true {n} times, launched (s)")
    print(f"| untraced | {med(base)} |")
    for b in binaries:
        t = [job_time(cmd, b) for _ in range(runs)]
        print(f"| {b} | {med(t)} | {ratio(t, base)} |")


def threads(binaries, runs, n=2000):
    """`record -p` of a process of 1,000 threads: time until live, N calls' time."""
    print(f"\n## 1,000 threads: record -p live after (s), {n} cudaMalloc (s)")
    base, res = [], {b: ([], []) for b in binaries}
    for _ in range(runs):
        for b in [None] + binaries:
            p = subprocess.Popen([PY, "-c", THREADS, str(n), CUDART], stdin=subprocess.PIPE,
                                 stdout=subprocess.PIPE, text=True)
            pid = p.stdout.readline().strip()
            r = Rec(b, "-p", pid, "-t", "cuda,nccl,gil,osrt,sched") if b else None
            p.stdin.write("go\n")
            p.stdin.flush()
            t = int(p.stdout.readline()) / 1e9
            p.stdin.close()
            p.wait(60)
            if r:
                r.stop()
                res[b][0].append(r.ready_s)
                res[b][1].append(t)
            else:
                base.append(t)
    print(f"| untraced | | {med(base)} |")
    for b in binaries:
        print(f"| {b} | {med(res[b][0])} | {med(res[b][1])} | {ratio(res[b][1], base)} |")


def churn(binaries, runs, n=50000):
    """-a beside `churn N 7 2 prio` (N short processes, two at a time): the churn's time, the
    recorder's CPU, its losses; new: without and with an exclusion (each process's own probes)."""
    def once(b, extra):
        r = Rec(b, "-a", "-t", "osrt,gil,cuda", *extra) if b else None
        t0 = time.monotonic()
        subprocess.run([CHURN, str(n), "7", "2", "prio"], capture_output=True, check=True)
        t = time.monotonic() - t0
        if not r:
            return t, None, None
        cpu, err = r.stop()
        lost = re.search(r"(\d[\d,]*) events lost", err)
        return t, cpu - r.cpu_start, lost.group(1) if lost else "?"
    print(f"\n## -a beside {n} short processes (churn {n} 7 2 prio)")
    base = [once(None, ())[0] for _ in range(runs)]
    print(f"| untraced | {med(base)} |")
    for b, extra in [(b, ()) for b in binaries] + [(binaries[-1], ("--exclude-comm", "none-such"))]:
        got = [once(b, extra) for _ in range(runs)]
        t = [g[0] for g in got]
        print(f"| {b} {' '.join(extra)} | {med(t)} | {ratio(t, base)} | recorder CPU "
              f"{med([g[1] for g in got])} | lost {[g[2] for g in got]} |")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--old", required=True)
    ap.add_argument("--new", required=True)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--only", default="start,forks,execs,threads,churn")
    a = ap.parse_args()
    binaries = [a.old, a.new]
    for name in a.only.split(","):
        globals()[name](binaries, a.runs if name != "churn" else max(1, a.runs // 3))
        sys.stdout.flush()


main()
