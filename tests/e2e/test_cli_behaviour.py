"""What users rely on and the CLI's contract tests did not check: dump's filters, -p forms,
signals, -d forms, the default output name, --dry-run of a family system-wide, -v and
`bpfsight shim`'s default directory. Every count is the workload's."""
import filecmp
import json
import os
import re
import signal
import subprocess
import sys
import time

from helpers import (BPFSIGHT, BUILD, Recorder, alone, check, dump, eq, info, need_root, record,
                     run, spawn, tell, tmpdir, workload)

# For tests/run_tests.py: about how long these tests take on CI's machine (its order).
SECONDS = 28

SYSCALLS = workload("syscalls")
PY = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable
NCCL = "/usr/local/cuda/lib64/libnccl.so.2"


def names(events, pid, kind="syscall"):
    return [e["name"] for e in events if e["pid"] == pid and e["kind"] == kind]


def test_dump_kind_and_pid_filters_are_exact():
    """--kind and --pid print exactly the events of the whole dump that match, in its order:
    the parent's and the forked child's 5 getppid and 3 nanosleep each."""
    need_root()
    p, out = record([SYSCALLS, "--fork", "5", "3", "1000"], "-t", "osrt,sched",
                    "--osrt-threshold", "0")
    eq(p.returncode, 0, f"record exit ({p.stderr})")
    parent = int(re.search(r"^pid (\d+)", p.stdout, re.M).group(1))
    child = int(re.search(r"^child (\d+)", p.stdout, re.M).group(1))
    whole = dump(out)
    for pid in (parent, child):
        calls = names(whole, pid)
        eq((calls.count("getppid"), calls.count("nanosleep")), (5, 3), f"pid {pid}'s calls")
        got = [json.loads(l) for l in run([BPFSIGHT, "dump", "--pid", str(pid), out],
                                          check=True).stdout.splitlines()]
        eq(got, [e for e in whole if e["pid"] == pid], f"--pid {pid}")
        got = [json.loads(l) for l in run([BPFSIGHT, "dump", "-k", "syscall", "-p", str(pid),
                                           out], check=True).stdout.splitlines()]
        eq(got, [e for e in whole if e["pid"] == pid and e["kind"] == "syscall"],
           f"-k syscall -p {pid}")
    kinds = ("syscall", "offcpu", "fork", "exit")
    got = [json.loads(l) for l in run([BPFSIGHT, "dump", "--kind", ",".join(kinds), out],
                                      check=True).stdout.splitlines()]
    eq(got, [e for e in whole if e["kind"] in kinds], "--kind LIST")
    eq({e["kind"] for e in got}, set(kinds), "each kind asked for is there")


def waiting(n):
    """syscalls --wait-stdin N 0: blocked before its N getppid; (proc, pid)."""
    w = spawn([SYSCALLS, "--wait-stdin", str(n), "0"])
    return w, int(w.stdout.readline().split()[1])


def release(*procs):
    for w in procs:
        w.stdin.write("g")
        w.stdin.flush()
    for w in procs:
        eq(w.wait(30), 0, "workload exit")


def test_pid_repeated_and_comma_separated():
    """-p A -p B,C: the three processes, and only them, each with its exact calls; the
    recording ends when the last one exits."""
    need_root()
    ws = [waiting(n) for n in (3, 4, 5, 6)]
    (a, pa), (b, pb), (c, pc), (other, po) = ws
    r = Recorder("-t", "osrt", "--osrt-threshold", "0", "-p", str(pa), "-p", f"{pb},{pc}")
    r.wait_ready()
    release(a, b, c, other)
    eq(r.wait(60), 0, f"recorder exit ({r.stderr})")
    evs = dump(r.out)
    for pid, n in ((pa, 3), (pb, 4), (pc, 5)):
        eq(names(evs, pid).count("getppid"), n, f"pid {pid}: getppid")
    eq(names(evs, po), [], "a process not named is not traced")


THREADED = r"""
import os, sys, threading
ready, go = threading.Event(), threading.Event()
tid = []
def worker():
    tid.append(threading.get_native_id())
    ready.set()
    go.wait()
t = threading.Thread(target=worker)
t.start()
ready.wait()
print(os.getpid(), tid[0], flush=True)
sys.stdin.read(1)
for _ in range(N):
    os.getppid()
go.set()
t.join()
"""


def test_pid_of_a_thread_means_its_process():
    """-p TID of a non-main thread traces its whole process: the main thread's calls too."""
    need_root()
    n = 7
    w = spawn([PY, "-c", THREADED.replace("N", str(n))])
    pid, tid = map(int, w.stdout.readline().split())
    check(tid != pid, "a thread other than the main one")
    r = Recorder("-t", "osrt", "--osrt-threshold", "0", "-p", str(tid))
    r.wait_ready()
    release(w)
    eq(r.wait(60), 0, f"recorder exit ({r.stderr})")
    evs = dump(r.out)
    eq([e["tid"] for e in evs if e["kind"] == "syscall" and e["name"] == "getppid"],
       [pid] * n, "the main thread's getppid, under the process's pid")
    eq({e["pid"] for e in evs if e["kind"] == "syscall"}, {pid}, "pids")


SIGNALLED = r"""
import os, signal, sys, time
got = []
for s in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
    signal.signal(s, lambda s, f: got.append(s))
print(os.getpid(), flush=True)
while not got:
    time.sleep(0.01)
print(got[0], flush=True)
sys.exit(40 + got[0])
"""


def test_signals_end_a_recording_cleanly_and_reach_cmd():
    """SIGTERM, SIGHUP, SIGINT to the recorder in launch mode: CMD gets the same signal (its
    handler runs; its exit status is passed through), the file is closed cleanly. With -p,
    they end the recording cleanly and leave the process alone."""
    need_root()
    for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
        out = os.path.join(tmpdir(), "t.bst")
        p = subprocess.Popen([BPFSIGHT, "record", "-t", "osrt", "-o", out, "--", PY, "-c",
                              SIGNALLED], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True)
        pid = int(p.stdout.readline())  # CMD runs: the recording has begun
        p.send_signal(sig)
        stdout, stderr = p.communicate(timeout=60)
        eq(stdout.split(), [str(int(sig))], f"{sig.name}: what CMD got")
        eq(p.returncode, 40 + sig, f"{sig.name}: CMD's exit status ({stderr[-300:]})")
        i = info(out)
        check(i["clean_close"], f"{sig.name}: closed cleanly")
        check(any(e["pid"] == pid for e in dump(out)), f"{sig.name}: CMD recorded")
    for sig in (signal.SIGTERM, signal.SIGHUP):
        w, pid = waiting(1)
        r = Recorder("-t", "osrt", "-p", str(pid))
        r.wait_ready()
        eq(r.stop(sig), 0, f"-p, {sig.name}: recorder exit ({r.stderr})")
        check(info(r.out)["clean_close"], f"-p, {sig.name}: closed cleanly")
        check(w.poll() is None, f"-p, {sig.name}: the process is left running")
        release(w)


CALLS_THEN_WAIT = r"""
import os, sys
print(os.getpid(), flush=True)
sys.stdin.readline()
for _ in range(int(sys.argv[1])):
    os.getppid()
print("done", flush=True)
sys.stdin.readline()
"""


def test_sigusr1_flushes_and_the_recording_goes_on():
    """SIGUSR1 (and SIGUSR2) to a recorder: what was recorded so far is on disk, readable while
    it goes on (every one of the target's 25 getppid calls), and the recording then ends
    cleanly with the same calls; the target never sees the signal."""
    need_root()
    n = 25
    for sig in (signal.SIGUSR1, signal.SIGUSR2):
        w = spawn([PY, "-c", CALLS_THEN_WAIT, str(n)])
        pid = int(w.stdout.readline())
        r = Recorder("-t", "osrt", "--osrt-threshold", "0", "-p", str(pid))
        r.wait_ready()
        tell(w, "go")
        eq(w.stdout.readline().strip(), "done", "the calls are made")
        r.flush(sig)
        check(r.p.poll() is None, f"{sig.name}: the recorder goes on ({r.stderr[-300:]})")
        got = [l for l in run([BPFSIGHT, "dump", "--pid", str(pid), r.out]).stdout.splitlines()
               if '"name":"getppid"' in l.replace(" ", "")]
        eq(len(got), n, f"{sig.name}: getppid calls readable during the recording")
        tell(w, "end")
        eq(w.wait(30), 0, f"{sig.name}: the target's exit")
        eq(r.wait(60), 0, f"{sig.name}: recorder exit ({r.stderr[-300:]})")
        check(info(r.out)["clean_close"], f"{sig.name}: closed cleanly")
        eq(names(dump(r.out), pid).count("getppid"), n, f"{sig.name}: getppid in the file")


def test_duration_forms():
    """-d 10 (seconds), 10s, 500ms, 2m, 1h: the recording's duration option, in ns (CMD ends
    first here)."""
    need_root()
    for arg, ns in (("10", 10 * 10**9), ("10s", 10 * 10**9), ("500ms", 5 * 10**8),
                    ("2m", 120 * 10**9), ("1h", 3600 * 10**9)):
        p, out = record(["true"], "-t", "osrt", "-d", arg)
        eq(p.returncode, 0, f"-d {arg} ({p.stderr})")
        check(f"duration_ns={ns}" in info(out)["options"].split(), f"-d {arg}: "
              f"{info(out)['options']}")
    t0 = time.monotonic()
    p, out = record(["sleep", "30"], "-t", "osrt", "-d", "1")
    eq(p.returncode, 128 + signal.SIGTERM, "-d 1 ends CMD with SIGTERM")
    check(1 <= time.monotonic() - t0, "-d 1 lasted at least a second")


def test_default_output_name_is_the_first_unused_report():
    need_root()
    d = tmpdir()
    open(os.path.join(d, "report2.bst"), "w").close()
    for want in ("report1.bst", "report3.bst"):
        p = run([BPFSIGHT, "record", "-t", "osrt", "--", "true"], cwd=d)
        eq(p.returncode, 0, f"record exit ({p.stderr})")
        check(f"wrote {want}" in p.stderr, p.stderr)
        eq(info(os.path.join(d, want))["clean_close"], True, want)
    eq(os.path.getsize(os.path.join(d, "report2.bst")), 0, "an existing report kept")


def test_dry_run_system_wide_nccl():
    """--dry-run -a -t nccl: the sites in libnccl, each at its symbol's own offset in the
    file (nm -D), the summary line counting them; nothing recorded."""
    need_root()
    if not os.path.exists(NCCL):
        from helpers import Skip
        raise Skip(f"no NCCL ({NCCL})")
    d = tmpdir()
    p = run([BPFSIGHT, "record", "--dry-run", "-a", "-t", "nccl"], cwd=d)
    eq(p.returncode, 0, f"exit ({p.stderr})")
    eq(os.listdir(d), [], "no file written")
    lines = p.stdout.splitlines()
    check(lines[0].split()[:3] == ["FAMILY", "SYMBOL", "SITE"], lines[0])
    rows = [l.split() for l in lines[1:] if l.startswith("nccl ")]
    m = re.search(r"^(\d+) sites in (\d+) objects", p.stdout, re.M)
    check(m, f"summary: {p.stdout[-300:]}")
    real = os.path.realpath(NCCL)
    # -a sees every process: a torch job running beside (another test's, anyone's) maps a
    # libtorch_cpu, whose gloo collectives the family probes (ProcessGroupGloo::nextTag, and
    # AsyncWork's constructor and finishWorkGloo),
    # and another NCCL (the multi-rank tests' libnccl.so.2, tests/workloads/nccl_cpu/) is
    # probed as the real one is: its sites are checked the same way.
    gloo = {r[-1] for r in rows
            if os.path.realpath(r[-1]) != real and "libtorch_cpu" in r[-1]}
    gloo_syms = {"_ZN4c10d16ProcessGroupGloo7nextTagEv",
                 "_ZN4c10d16ProcessGroupGloo9AsyncWorkC2ESt6vectorIS2_IN2at6TensorESaIS4_EESaIS6_"
                 "EEPKcRKN3c108optionalIS6_EE",
                 "_ZN4c10d16ProcessGroupGloo9AsyncWork14finishWorkGlooEv"}
    check(all(r[1] in gloo_syms for r in rows if r[-1] in gloo), f"gloo sites: {p.stdout[-600:]}")
    ncclish = {r[-1] for r in rows if r[-1] not in gloo}
    check(all(os.path.basename(o).startswith("libnccl.so") for o in ncclish),
          f"sites outside an NCCL and libtorch_cpu: {p.stdout[-600:]}")
    check(any(os.path.realpath(o) == real for o in ncclish), f"{real} probed: {p.stdout[-600:]}")
    eq((len(rows), int(m.group(2))), (int(m.group(1)), len(gloo) + len(ncclish)),
       "rows, objects")
    rows = [r for r in rows if r[-1] not in gloo]
    syms = {}
    for obj in ncclish:
        syms[obj] = {}
        for l in run(["nm", "-D", "--defined-only", obj], check=True).stdout.splitlines():
            f = l.split()
            if len(f) == 3:
                syms[obj][f[2]] = int(f[0], 16)
    for r in rows:
        sym, site, off, obj = r[1], int(r[2][1:], 16), int(r[-2], 16), r[-1]
        eq(off, syms[obj][sym] + site, f"{sym} in {obj}: file offset = symbol + site")
    for obj in ncclish:
        mine = [r[1] for r in rows if r[-1] == obj]
        check(len(set(mine)) == len(mine), f"{obj}: each symbol once")


def test_verbose_shows_libbpf_debug():
    need_root()
    p, out = record(["true"], "-t", "osrt", "-v")
    eq(p.returncode, 0, f"record exit ({p.stderr[-300:]})")
    check(re.search(r"^libbpf: loading object", p.stderr, re.M), p.stderr[:300])
    q, _ = record(["true"], "-t", "osrt")
    check("libbpf:" not in q.stderr, f"quiet without -v: {q.stderr[:300]}")


@alone("writes and removes the machine's /usr/local/lib/bpfsight")
def test_shim_default_directory():
    """`bpfsight shim` writes the built-in shim to /usr/local/lib/bpfsight (the same bytes as
    build/libbpfsight-shim.so) and prints the two exports; a test-made directory is removed."""
    need_root()
    built = os.path.join(BUILD, "libbpfsight-shim.so")
    if not os.path.exists(built):
        from helpers import Skip
        raise Skip("no libbpfsight-shim.so (built only with CUPTI headers: set CUDA_HOME)")
    d = "/usr/local/lib/bpfsight"
    path = os.path.join(d, "libbpfsight-shim.so")
    existed = os.path.exists(d)
    try:
        p = run([BPFSIGHT, "shim"])
        eq(p.returncode, 0, f"exit ({p.stderr})")
        check(filecmp.cmp(path, built, shallow=False), "the shim written is the built one")
        check(f"export CUDA_INJECTION64_PATH={path}" in p.stdout, p.stdout)
        check(f"export NVTX_INJECTION64_PATH={path}" in p.stdout, p.stdout)
        p = run([BPFSIGHT, "shim", "--print-env"])
        eq(p.stdout.split("\n")[:2], [f"export CUDA_INJECTION64_PATH={path}",
                                      f"export NVTX_INJECTION64_PATH={path}"], "--print-env")
    finally:
        if not existed:
            subprocess.run(["rm", "-rf", d])
