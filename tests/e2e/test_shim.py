"""The cupti-shim (libbpfsight-shim.so) on its own, driven by bpftrace instead of bpfsight.

bpftrace attaching the shim's USDT probes bumps their semaphores exactly as the recorder
does (-p: the kernel's uprobe ref_ctr for that process; --usdt-file-activation: every
process mapping the library), so the shim's whole state machine runs for real: attach,
NVTX on, sync, drain, detach, fork. BPFSIGHT_SHIM_DUMP makes the shim also write every
batch it fires to a file, the truth of what it sent; bpftrace, live before the workload is
told to go, sees each batch the probe really carried, and the test checks that every batch
of the workload's records was carried, then decodes the file (shim_batches.py) and compares
the records with what the workloads document they emit.
"""
import contextlib
import json
import os
import subprocess
import re
import shutil
import signal
import struct
import threading
import time
from collections import Counter

import shim_batches as sb
import touched
from helpers import BPFSIGHT, BUILD, ROOT, Recorder, Skip, alone, check, eq, need_root, run, spawn, tmpdir, wait_for, workload

# For tests/run_tests.py: about how long these tests take on CI's machine (its order).
SECONDS = 26

SHIM = os.path.abspath(os.path.join(BUILD, "libbpfsight-shim.so"))
# The test variant: the same shim plus the hook cupti_feed feeds CUPTI records through.
SHIM_TEST = os.path.abspath(workload("shim/libbpfsight-shim-test.so"))
NVTX_RANGES = workload("shim/nvtx_ranges")
CHAIN = os.path.abspath(workload("shim/libnvtx_chain.so"))
CUPTI_FEED = workload("shim/cupti_feed")
NVTX_BENCH = workload("shim/nvtx_bench")
CUDA_API = workload("cuda/cuda_api_shared")
MS = 1000000
SLACK = 500 * MS  # a loaded 2-core box: sleeps overrun, never underrun

PUSHPOP, OPEN, COLOR, REG = sb.PUSHPOP, sb.OPEN, sb.COLOR, sb.REGISTERED
U64, F64, U32, I32, F32 = 0x10, 0x30, 0x40, 0x50, 0x60


def need_shim():
    if not os.path.exists(SHIM):
        raise Skip("no libbpfsight-shim.so (built only with CUPTI headers: set CUDA_HOME)")


def need_bpftrace():
    need_root()
    need_shim()
    if not shutil.which("bpftrace"):
        raise Skip("needs bpftrace (make deps)")
    if not shutil.which("bpftool"):
        raise Skip("needs bpftool (make deps): it says when bpftrace's probes are live")


def bits(fmt, value):
    return struct.unpack("<Q" if fmt == "d" else "<I", struct.pack("<" + fmt, value))[0]


class Workload:
    """A shim workload started with --wait-file; its first stdout line names its pid."""

    def __init__(self, args, env=None, wait=True):
        self.dir = tmpdir()
        self.go_file = os.path.join(self.dir, "go")
        self.dump = os.path.join(self.dir, "dump.bin")
        full = dict(os.environ, BPFSIGHT_SHIM_DUMP=self.dump, BPFSIGHT_SHIM_DEBUG="1",
                    **(env or {}))
        self.p = spawn(args + (["--wait-file", self.go_file] if wait else []), env=full)
        self.hello = json.loads(self.p.stdout.readline())
        self.pid = self.hello["pid"]

    def go(self):
        self.go_ns = time.monotonic_ns()  # the shim's records' clock
        open(self.go_file, "w").close()

    @contextlib.contextmanager
    def stopped(self):
        """The workload stopped (SIGSTOP) inside: every one of its threads seen stopped, so
        its shim's poller reads no semaphore until it is continued (SIGCONT) after."""
        os.kill(self.pid, signal.SIGSTOP)
        try:
            wait_for(self._all_stopped, 30, f"every thread of {self.pid} stopped")
            yield
        finally:
            os.kill(self.pid, signal.SIGCONT)

    def _all_stopped(self):
        states = []
        for tid in os.listdir(f"/proc/{self.pid}/task"):
            try:
                with open(f"/proc/{self.pid}/task/{tid}/stat") as f:
                    states.append(f.read().rsplit(")", 1)[1].split()[0])
            except FileNotFoundError:
                pass  # a thread gone
        return states and all(s == "T" for s in states)

    def finish(self, timeout=120, json_lines=True):
        """(exit status, stdout after the first line: JSON lines or text, stderr)."""
        out, err = self.p.communicate(timeout=timeout)
        if json_lines:
            out = [json.loads(l) for l in out.splitlines() if l.strip()]
        return self.p.returncode, out, err

    def data(self):
        if not os.path.exists(self.dump):
            return b""
        with open(self.dump, "rb") as f:
            return f.read()

    def records(self):
        return sb.records(self.data())

    def wait_status(self, pred, what, timeout=15):
        def seen():
            try:
                return any(r["kind"] == "status" and pred(r) for r in self.records())
            except (AssertionError, struct.error):
                return False  # a batch being written
        wait_for(seen, timeout, what)


def usdt_sites(lib, names):
    """How many USDT sites of provider bpfsight LIB has named one of NAMES."""
    notes = run(["readelf", "-n", lib], check=True).stdout
    return sum(n in names for n in re.findall(r"Provider: bpfsight\n\s+Name: (\w+)", notes))


class Bpftrace:
    """bpftrace on the shim's probes, returned once they are live: @NAME counts each probe's
    hits, @batch_seq[SEQ, BYTES] the batch probe's per batch (its header's seq, the bytes it
    carried), drain hits print their sequence argument.

    Live means every hit after it returns is counted. A hit that its own attach causes may
    come before: the kernel raises a site's semaphore inside perf_event_open, bpftrace sets
    the program after that call returns, and a shim polling in between acts on the
    semaphore with no program there (ATTACH, NVTX on: check_probe_counts; a drain: attached
    with the workload stopped, test_shim_nvtx_sync_and_drain)."""

    def __init__(self, probes, pid=None, lib=SHIM):
        prog = []
        for p in probes:
            body = f"@{p} = count();"
            if p == "batch":
                body += " @batch_seq[*(uint64 *)(arg0 + 16), arg1] = count();"
            if p == "drain":
                body += ' printf("drain %d\\n", arg0);'
            prog.append(f"usdt:{lib}:bpfsight:{p} {{ {body} }}")
        args = ["bpftrace"] + (["-p", str(pid)] if pid else ["--usdt-file-activation"])
        self.p = spawn(args + ["-e", " ".join(prog)])
        self.lines = []
        self.attached = threading.Event()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()
        if not self.attached.wait(60) or self.p.poll() is not None:
            raise AssertionError(f"bpftrace did not attach: {self.p.stderr.read()[-500:]}")
        # bpftrace says "Attaching" before it attaches, and the kernel raises a site's
        # semaphore (the shim may fire it) before bpftrace sets the site's program: a probe
        # is live once its perf event has the program (bpftool perf lists those alone)
        sites = usdt_sites(lib, probes)
        wait_for(lambda: self._live() >= sites, 60, f"bpftrace's {sites} probes live")

    def _live(self):
        p = run(["bpftool", "-j", "perf"])
        try:
            events = json.loads(p.stdout)
        except ValueError:
            return 0  # a process of the list gone while bpftool read it: asked again
        return sum(e.get("pid") == self.p.pid and e.get("fd_type") == "uprobe"
                   for e in events)

    def _read(self):
        for line in self.p.stdout:
            self.lines.append(line.rstrip("\n"))
            if line.startswith("Attaching"):
                self.attached.set()
        self.attached.set()

    def stop(self, timeout=60):
        """Wait for bpftrace (it ends with its -p process), or stop it; the maps."""
        if self.p.poll() is None:
            try:
                self.p.wait(3 if self.p.args[1] == "-p" else 0.2)
            except Exception:
                self.p.send_signal(signal.SIGINT)
        self.p.wait(timeout)
        self.reader.join(10)
        maps = {}
        for line in self.lines:
            m = re.match(r"^@(\w+): (\d+)$", line)
            if m:
                maps[m.group(1)] = int(m.group(2))
            m = re.match(r"^@(\w+)\[([\d, ]+)\]: (\d+)$", line)
            if m:
                key = tuple(int(k) for k in m.group(2).split(", "))
                maps.setdefault(m.group(1), {})[key] = int(m.group(3))
        return maps


def attach(w, probes, file_activation=False, lib=SHIM):
    """bpftrace on W's shim (LIB), and the shim's ATTACH (and NVTX on) seen in its dump."""
    bt = Bpftrace(probes, None if file_activation else w.pid, lib)
    w.wait_status(lambda r: r["event_name"] == "attach" and r["pid"] == w.pid, "shim attach")
    if "nvtx" in probes:
        w.wait_status(lambda r: "nvtx_on" in r["state_bits"] and r["pid"] == w.pid,
                      "NVTX recording on")
    return bt


def check_probe_counts(maps, w):
    """The batch probe carried each batch of the workload's records, once, with its bytes. The
    truth is the shim's own dump of what it fired; bpftrace was live before W went
    (Bpftrace), so it saw every batch with a record made after that. A batch from before
    (ATTACH, NVTX on: the shim fires as bpftrace raises the semaphores, before their programs
    are set) is seen or not, as the race goes; one seen is one the shim fired, as fired."""
    seen = maps.get("batch_seq", {})  # (seq, bytes) -> hits
    batches = [(b["seq"], 24 + b["len"], rs) for b, rs in sb.decode(w.data())]
    after = {(seq, n): 1 for seq, n, rs in batches if any(r["ts"] >= w.go_ns for r in rs)}
    check(after, f"no batch of the workload's records in the dump ({len(batches)} batches)")
    eq({k: c for k, c in seen.items() if k in after}, after,
       "batches of records made after go: seen once each, with their bytes")
    fired = {(seq, n) for seq, n, _ in batches}
    eq({k: c for k, c in seen.items() if k not in after},
       {k: 1 for k in seen if k not in after and k in fired},
       "batches bpftrace saw before: fired by the shim, once each, with their bytes")


def by_kind(recs, kind):
    return [r for r in recs if r["kind"] == kind]


def statuses(recs, pid=None):
    """The status events, but STATE and DRAINED: another tracer on this machine (a recorder
    with -a) may attach the gpu or drain probe of our process too, and cause them."""
    return [r["event_name"] for r in recs if r["kind"] == "status"
            and r["event_name"] not in ("state", "drained")
            and (pid is None or r["pid"] == pid)]


def expected_nvtx(hello, loops, second):
    """(kind, fields...) of every record nvtx_ranges documents for LOOPS (its stdout)."""
    m = hello["main"]
    dom = "bpfsight.test"
    exp = Counter()
    exp[("name", m, 1, m, "nvtx-main", None)] += 1
    exp[("name", m, 2, 1, "compute", None)] += 1
    exp[("name", m, 2, 2, "io", None)] += 1
    exp[("name", m, 2, 7, "domain-cat", dom)] += 1
    for lp in loops:
        i = lp["loop"]
        rng = [("outer", None, m, m, 0, PUSHPOP, 0, 0, 0, 0),
               ("middle", None, m, m, 1, PUSHPOP | COLOR | U64, 1, 0xff00ff00, i, 0),
               ("inner-\u03c9", None, m, m, 2, PUSHPOP, 0, 0, 0, 0),
               ("cross-thread", None, m, lp["w1"], 0, 0, 0, 0, 0, lp["cross"]),
               ("registered-step", dom, m, m, 0, PUSHPOP | U32 | REG, 0, 0, 7, 0),
               ("domain-inner", dom, m, m, 1, PUSHPOP | F32, 7, 0, bits("f", 1.5), 0),
               ("domain-startend", dom, m, m, 0, 0, 0, 0, 0, lp["domain_range"])]
        marks = [("mark-a", None, m, 0, 0, 0, 0),
                 ("mark-payload", None, m, COLOR | F64, 2, 0xffff0000, bits("d", 2.5)),
                 ("registered-mark", dom, m, REG, 0, 0, 0)]
        for k in (1, 2):
            w = lp[f"w{k}"]
            rng += [(f"worker-{k}", None, w, w, 0, PUSHPOP, 0, 0, 0, 0),
                    (f"worker-{k}-inner", None, w, w, 1, PUSHPOP | I32, 0, 0,
                     (-k) & 0xffffffff, 0)]
            exp[("name", w, 1, w, f"nvtx-worker-{k}", None)] += 1
        if second:
            rng.append(("second-dso", None, m, m, 0, PUSHPOP, 0, 0, 0, 0))
            marks.append(("second-dso-mark", None, m, 0, 0, 0, 0))
        for r in rng:
            exp[("range",) + r] += 1
        for r in marks:
            exp[("mark",) + r] += 1
    return exp


def got_nvtx(recs, pid):
    got = Counter()
    for r in recs:
        if r["pid"] != pid:
            continue
        if r["kind"] == "range" and not r["flags"] & OPEN:
            got[("range", r["name"], r["domain"], r["tid"], r["end_tid"], r["depth"],
                 r["flags"], r["category"], r["color"], r["payload"], r["range_id"])] += 1
        elif r["kind"] == "mark":
            got[("mark", r["name"], r["domain"], r["tid"], r["flags"], r["category"],
                 r["color"], r["payload"])] += 1
        elif r["kind"] == "name":
            got[("name", r["tid"], r["what"], r["key"], r["name"], r["domain"])] += 1
    return got


def check_nvtx_times(recs, t0, t1):
    """Ranges inside the run, sleeps honoured, nesting as pushed."""
    for r in recs:
        check(t0 <= r["ts"] <= t1, f"{r['kind']} {r.get('name')} at {r['ts']} outside the run")
    rng = [r for r in by_kind(recs, "range") if not r["flags"] & OPEN]
    floor = {"inner-\u03c9": 20, "middle": 20, "outer": 35, "worker-1": 10, "worker-2": 10,
             "cross-thread": 10, "registered-step": 5, "domain-inner": 5}
    for r in rng:
        lo = floor.get(r["name"], 0) * MS
        check(lo <= r["dur"] <= lo + SLACK, f"{r['name']} lasted {r['dur']} ns, slept {lo}")
        check(r["ts"] + r["dur"] <= t1, f"{r['name']} ends after the run")
    for inner, outer in (("inner-\u03c9", "middle"), ("middle", "outer"),
                         ("domain-inner", "registered-step")):
        for i in [r for r in rng if r["name"] == inner]:
            check(any(o["ts"] <= i["ts"] and i["ts"] + i["dur"] <= o["ts"] + o["dur"]
                      for o in rng if o["name"] == outer and o["tid"] == i["tid"]),
                  f"{inner} at {i['ts']} is not inside a {outer}")


def test_shim_library_shape():
    """Exports the two entry points, _exit (preloaded, it drains before os._exit: a
    multiprocessing child's end) and the pyfunc module's spec buffer, the one variable the
    recorder writes (the test hook is in the test variant alone); needs nothing but libc."""
    need_shim()

    def exported(lib):
        out = run(["objdump", "-T", lib], check=True).stdout
        return sorted(l.split()[-1] for l in out.splitlines()
                      if re.match(r"^[0-9a-f]+ g\s+DF \.text", l))
    eq(exported(SHIM), ["InitializeInjection", "InitializeInjectionNvtx2", "_exit"],
       "exported functions")
    eq(exported(SHIM_TEST),
       ["InitializeInjection", "InitializeInjectionNvtx2", "bpfsight_shim_test_feed",
        "bpfsight_shim_test_graph_node", "bpfsight_shim_test_hold_lock", "bpfsight_shim_test_locks"],
       "the test variant's exported functions")
    out = run(["objdump", "-T", SHIM], check=True).stdout
    eq(sorted(l.split()[-1] for l in out.splitlines() if re.match(r"^[0-9a-f]+ g\s+DO ", l)),
       ["bpfsight_pyfunc_spec"], "exported variables")
    p = run(["objdump", "-T", SHIM], check=True)
    versions = {tuple(int(x) for x in v.split(".")) for v in re.findall(r"GLIBC_([0-9.]+)",
                                                                        p.stdout)}
    check(max(versions) <= (2, 34), f"needs glibc {max(versions)} (> 2.34: Ubuntu 22.04)")
    p = run(["readelf", "-d", SHIM], check=True)
    needed = sorted(re.findall(r"\(NEEDED\)\s+Shared library: \[(.*)\]", p.stdout))
    eq(needed, ["libc.so.6"], "needed libraries (never libcupti)")
    check("NODELETE" in p.stdout, "linked -z nodelete (its poller runs its code)")
    p = run(["readelf", "-n", SHIM], check=True)
    probes = re.findall(r"Provider: (\w+)\n\s+Name: (\w+)\n\s+Location: \S+, Base: \S+, "
                        r"Semaphore: (\S+)\n\s+Arguments: (.*)", p.stdout)
    eq(sorted(n for prov, n, _, _ in probes if prov == "bpfsight"),
       ["batch", "drain", "gpu", "join", "nvtx", "pyfunc", "sync", "torch", "torch_op_stack",
        "torch_op_stack", "torch_shapes"], "USDT probes (torch_op_stack: an op's end, a scope's")
    for prov, name, sem, spec in probes:
        check(int(sem, 16) != 0, f"{name} has no semaphore")
        want = 2 if name in ("batch", "torch_op_stack") else 1
        args = spec.split()
        eq(len(args), want, f"{name} arguments {spec}")
        check(all(re.match(r"^8@(%\w+|\$-?\d+)$", a) for a in args),
              f"{name}: plain 64-bit register arguments, got {spec}")


def test_shim_dump_never_follows_a_link():
    """BPFSIGHT_SHIM_DUMP through a planted symlink: the shim refuses (O_NOFOLLOW) and says
    so; the program runs on unharmed and the link's target is never created."""
    need_shim()
    d = tmpdir()
    target = os.path.join(d, "victim")
    link = os.path.join(d, "dump.bin")
    os.symlink(target, link)
    env = dict(os.environ, NVTX_INJECTION64_PATH=SHIM, BPFSIGHT_SHIM_DUMP=link,
               BPFSIGHT_SHIM_DEBUG="1")
    p = run([NVTX_RANGES, "--loops", "2"], env=env)
    eq(p.returncode, 0, f"exit status: {p.stderr[-300:]}")
    check(not os.path.exists(target), "the dump was written through the link")
    check(f"BPFSIGHT_SHIM_DUMP {link}: Too many levels of symbolic links" in p.stderr,
          f"no word of the refused dump: {p.stderr[-500:]}")


def test_shim_ignores_its_variables_in_a_secure_process():
    """A program with file capabilities run by an unprivileged user executes in secure mode
    (AT_SECURE): the shim loads and initializes, but reads none of its variables there
    (secure_getenv), so BPFSIGHT_SHIM_DUMP cannot make a privileged program write a file.
    The same program without capabilities writes the dump: the switch is the secure mode."""
    need_shim()
    need_root()
    if not shutil.which("setcap") or not shutil.which("setpriv"):
        raise Skip("no setcap/setpriv (libcap2-bin, util-linux)")
    d = tmpdir()
    os.chmod(d, 0o777)
    feed, lib = os.path.join(d, "cupti_feed"), os.path.join(d, "shim.so")
    shutil.copy(CUPTI_FEED, feed)
    shutil.copy(SHIM_TEST, lib)
    os.chmod(feed, 0o755)
    os.chmod(lib, 0o755)
    nobody = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", "env"]

    def feed_with_dump(dump):
        p = run(nobody + [f"BPFSIGHT_SHIM_DUMP={dump}", feed, lib])
        eq(json.loads(p.stdout.splitlines()[0])["init"], 1,
           f"InitializeInjection's return: {p.stderr[-300:]}")

    feed_with_dump(os.path.join(d, "plain.bin"))
    check(os.path.exists(os.path.join(d, "plain.bin")), "no dump from the plain program")
    run(["setcap", "cap_net_raw=ep", feed], check=True)
    feed_with_dump(os.path.join(d, "secure.bin"))
    check(not os.path.exists(os.path.join(d, "secure.bin")),
          "the shim read BPFSIGHT_SHIM_DUMP in a secure-execution process")


def test_shim_idle_nvtx():
    """Without a tracer the shim records nothing and the program behaves as without it."""
    need_shim()
    d = tmpdir()
    dump = os.path.join(d, "dump.bin")
    base = run([NVTX_RANGES, "--loops", "2", "--second-dso"], check=True)
    env = dict(os.environ, NVTX_INJECTION64_PATH=SHIM, BPFSIGHT_SHIM_DUMP=dump,
               BPFSIGHT_SHIM_DEBUG="1")
    p = run([NVTX_RANGES, "--loops", "2", "--second-dso"], env=env)
    # Exit 0 also means every push/pop returned the NVTX level (checked by the workload).
    eq(p.returncode, base.returncode, "exit status with the idle shim")
    pid = json.loads(p.stdout.splitlines()[0])["pid"]
    eq(p.stderr.count(f"bpfsight-shim[{pid}]: NVTX instance"), 2,
       "both NVTX instances (program and libnvtx_second.so) initialized the shim")
    eq(os.path.getsize(dump) if os.path.exists(dump) else 0, 0, "bytes the idle shim sent")
    shape = lambda out: [sorted(json.loads(l)) for l in out.splitlines()]
    eq(shape(p.stdout), shape(base.stdout), "stdout lines")


def test_shim_idle_cuda():
    """An idle shim in CUDA programs: InitializeInjection runs (cupti_feed calls it), CUPTI
    loads, nothing is enabled or sent; a CUDA program's output is unchanged."""
    need_shim()
    d = tmpdir()
    dump = os.path.join(d, "dump.bin")
    env = dict(os.environ, BPFSIGHT_SHIM_DUMP=dump, BPFSIGHT_SHIM_DEBUG="1")
    p = run([CUPTI_FEED, SHIM_TEST], env=env)
    eq(p.returncode, 0, f"cupti_feed exit: {p.stderr[-300:]}")
    hello = json.loads(p.stdout.splitlines()[0])
    eq(hello["init"], 1, "InitializeInjection's return")
    check("CUPTI version 13" in p.stderr, f"CUPTI not loaded: {p.stderr[-300:]}")
    eq(json.loads("".join(p.stdout.splitlines()[1:]))["fed"], 0, "records taken while idle")
    eq(os.path.getsize(dump) if os.path.exists(dump) else 0, 0, "bytes the idle shim sent")
    if not os.path.exists(CUDA_API):
        raise Skip("no cuda_api_shared (CUDA toolkit missing)")
    # Without the pid, and the addresses ASLR moves (heap, program) masked.
    pid_free = lambda out: [re.sub(r"0x[57][0-9a-f]{11}$", "ASLR",
                                   re.sub(r"^(\w+) \d+ ", r"\1 P ", l))
                            for l in out.splitlines() if l.startswith(("ptr", "ret"))]
    base = run([CUDA_API])
    env.update(CUDA_INJECTION64_PATH=SHIM, NVTX_INJECTION64_PATH=SHIM)
    p = run([CUDA_API], env=env)
    eq(p.returncode, base.returncode, "cuda_api_shared exit status")
    eq(pid_free(p.stdout), pid_free(base.stdout), "cuda_api_shared results")
    check(len(pid_free(base.stdout)) > 5, "cuda_api_shared printed its results")


def test_shim_nvtx_exact():
    """Every range, mark and name of nvtx_ranges (2 loops, 3 threads, a domain, registered
    strings, start/end across threads, a second DSO), exactly, through the real probe."""
    need_bpftrace()
    w = Workload([NVTX_RANGES, "--loops", "2", "--second-dso"],
                 {"NVTX_INJECTION64_PATH": SHIM})
    bt = attach(w, ["batch", "nvtx"])
    t0 = time.monotonic_ns()
    w.go()
    rc, out, err = w.finish()
    t1 = time.monotonic_ns()
    maps = bt.stop()
    eq(rc, 0, f"nvtx_ranges exit: {err[-300:]}")
    check_probe_counts(maps, w)
    recs = w.records()
    eq(statuses(recs), ["attach", "exit"], "status records")
    st = by_kind(recs, "status")
    changes = [s for s in st if s["event_name"] == "state"]
    eq(maps.get("nvtx"), len(changes), "nvtx(state) fired on each state change")
    eq(st[0]["state_bits"], ["nvtx_injected"], "state at attach")
    eq(changes[0]["state_bits"], ["nvtx_injected", "nvtx_on"], "state once on")
    eq(st[-1]["seq"], len(sb.decode(w.data())) - 1, "EXIT status: the batches before it")
    loops = [o for o in out if "loop" in o]
    eq(len(loops), 2, "loops run")
    eq(got_nvtx(recs, w.pid), expected_nvtx(w.hello, loops, True), "NVTX records")
    nvtx = [r for r in recs if r["kind"] in ("range", "mark", "name")]
    check_nvtx_times(nvtx, t0, t1)
    eq({r["pid"] for r in recs}, {w.pid}, "record pids")
    eq({r["cpu"] for r in recs}, {0}, "record cpus")


@alone("bpftrace --usdt-file-activation wakes the shim in every process that maps it")
def test_shim_launch_mode():
    """A tracer attached before the process starts (the kernel bumps the semaphores when the
    shim is mapped): the shim acts on them in the injection entry point itself, so the very
    first ranges are recorded."""
    need_bpftrace()
    # --usdt-file-activation: every process mapping the shim, also later ones. bpftrace says
    # "Attaching" before it has: a first process waiting tells when the probes are live.
    w0 = Workload([NVTX_RANGES], {"NVTX_INJECTION64_PATH": SHIM})
    bt = attach(w0, ["batch", "nvtx"], file_activation=True)
    w0.go()
    eq(w0.finish()[0], 0, "the first process's exit")
    d = tmpdir()
    dump = os.path.join(d, "dump.bin")
    env = dict(os.environ, NVTX_INJECTION64_PATH=SHIM, BPFSIGHT_SHIM_DUMP=dump)
    t0 = time.monotonic_ns()
    p = run([NVTX_RANGES, "--second-dso"], env=env)
    t1 = time.monotonic_ns()
    maps = bt.stop()
    eq(p.returncode, 0, f"nvtx_ranges exit: {p.stderr[-300:]}")
    out = [json.loads(l) for l in p.stdout.splitlines()]
    with open(dump, "rb") as f:
        data = f.read()
    recs = sb.records(data)
    pid = out[0]["pid"]
    eq(statuses(recs), ["attach", "exit"], "statuses")
    check(maps.get("batch", 0) >= len(sb.decode(data)), "batches bpftrace saw")
    eq(got_nvtx(recs, pid), expected_nvtx(out[0], out[1:], True), "NVTX records")
    check_nvtx_times([r for r in recs if r["kind"] in ("range", "mark", "name")], t0, t1)


def test_shim_nvtx_sync_and_drain():
    """Sync mode sends a BEGIN at once for each range; a drain sends the open ranges (OPEN,
    still open in the shim), a DRAINED status and fires drain(seq of the last batch)."""
    need_bpftrace()
    # held open until the drain is seen: however long bpftrace takes to start on a loaded
    # machine, the drain finds it open
    release = os.path.join(tmpdir(), "release")
    w = Workload([NVTX_RANGES, "--hold-file", release], {"NVTX_INJECTION64_PATH": SHIM})
    bt = attach(w, ["batch", "nvtx", "sync"])
    w.wait_status(lambda r: "sync" in r["state_bits"], "sync on")
    w.go()
    w.p.stdout.readline()  # the loop
    eq(json.loads(w.p.stdout.readline()), {"held": True}, "held line")
    # The drain is the rising edge of its semaphore, which this bpftrace's attach raises
    # before its program is set (Bpftrace): a poll in between drained with nothing there to
    # count it (0 != 1, once in a full run). Stopped, the shim polls again only once the
    # program is live.
    with w.stopped():
        drain_bt = Bpftrace(["drain"], w.pid)
    w.wait_status(lambda r: r["event_name"] == "drained", "DRAINED status")
    released = time.monotonic_ns()
    open(release, "w").close()
    rc, out, err = w.finish()
    exited = time.monotonic_ns()
    maps = bt.stop()
    dmaps = drain_bt.stop()
    eq(rc, 0, f"nvtx_ranges exit: {err[-300:]}")
    check_probe_counts(maps, w)
    eq(dmaps.get("drain"), 1, "drain fired once")
    batches = sb.decode(w.data())
    recs = [r for _, rs in batches for r in rs]
    drain_line = [l for l in drain_bt.lines if l.startswith("drain ")]
    eq(len(drain_line), 1, "drain probe hits printed")
    drain_seq = int(drain_line[0].split()[1])
    drained = [rs[-1] for b, rs in batches if b["seq"] == drain_seq]
    eq([(r["kind"], r["event_name"]) for r in drained], [("status", "drained")],
       "drain(seq) = the batch ending with DRAINED")
    eq(drained[0]["seq"], drain_seq - 1, "DRAINED.seq: the last batch before it")
    # Every range began with a BEGIN record sent at once (the last of its batch).
    begins = by_kind(recs, "begin")
    ranges = [r for r in by_kind(recs, "range") if not r["flags"] & OPEN]
    eq(len(begins), len(ranges), "BEGIN records")
    for b, rs in batches:
        for i, r in enumerate(rs):
            if r["kind"] == "begin":
                eq(i, len(rs) - 1, f"BEGIN {r['name']} sent at once")
    key = lambda r: (r["name"], r["domain"], r["tid"], r["ts"])
    eq(Counter(key(r) for r in begins), Counter(key(r) for r in ranges), "BEGIN per range")
    for r in ranges:
        begin = [b for b in begins if key(b) == key(r)][0]
        eq(begin["range_id"], r["range_id"], f"BEGIN range_id of {r['name']}")
        check(recs.index(begin) < recs.index(r), f"BEGIN of {r['name']} after its range")
    # The drain: "held" open at the time, sent with OPEN (after the previous status), and
    # its real end later.
    at = recs.index(drained[0])
    since = max(i for i, r in enumerate(recs[:at]) if r["kind"] == "status")
    opened = [r for r in recs[since:at] if r["kind"] == "range" and r["flags"] & OPEN]
    eq([(r["name"], r["depth"], r["end_tid"], r["flags"]) for r in opened],
       [("held", 0, 0, PUSHPOP | OPEN)], "open ranges at the drain")
    held = [r for r in ranges if r["name"] == "held"]
    eq(len(held), 1, "held's real range")
    eq(opened[0]["ts"], held[0]["ts"], "open and final held start")
    check(opened[0]["dur"] < held[0]["dur"], "open held shorter than the final one")
    check(opened[0]["ts"] + opened[0]["dur"] <= drained[0]["ts"], "OPEN dur up to the drain")
    held_end = held[0]["ts"] + held[0]["dur"]
    check(released <= held_end <= exited,
          f"held ended at {held_end}: released at {released}, exited by {exited}")
    check(recs.index(opened[0]) < recs.index(drained[0]), "OPEN before DRAINED")


def test_shim_threads_stress():
    """Four threads recording at full speed, new strings interned by all of them at once:
    nothing lost or reordered (each string before its first user, sequence contiguous)."""
    need_bpftrace()
    iters, threads = 50000, 4
    w = Workload([NVTX_BENCH, "--iters", str(iters), "--threads", str(threads), "--marks"],
                 {"NVTX_INJECTION64_PATH": SHIM})
    bt = attach(w, ["batch", "nvtx"])
    w.go()
    rc, out, err = w.finish()
    maps = bt.stop()
    eq(rc, 0, f"nvtx_bench exit: {err[-300:]}")
    check_probe_counts(maps, w)
    batches = sb.decode(w.data())
    check(all(b["len"] <= 16384 for b, _ in batches), "batch sizes")
    recs = [r for _, rs in batches for r in rs]
    tids = out[0]["tids"]
    per = iters + iters // 10  # the warm-up pairs too: recording was on
    ranges = Counter((r["tid"], r["end_tid"], r["name"], r["depth"], r["flags"])
                     for r in by_kind(recs, "range"))
    eq(ranges, Counter({(t, t, "bench", 0, PUSHPOP): per for t in tids}), "ranges")
    marks = sorted((r["tid"], r["name"]) for r in by_kind(recs, "mark"))
    eq(marks, sorted((t, f"m-{k}-{i}") for k, t in enumerate(tids)
                     for i in range(999, iters, 1000)), "marks")
    check(len(batches) > per * threads * 72 // 16384, "batches full")


def test_shim_detach_reattach():
    """A tracer leaving stops recording and drops what was unsent; the next one starts a new
    session: ATTACH, names given earlier sent again, every string re-sent before use."""
    need_bpftrace()
    # held until the second session began: a tracer stops and the next attaches meanwhile,
    # however long a loaded machine makes that take
    release = os.path.join(tmpdir(), "release")
    w = Workload([NVTX_RANGES, "--hold-file", release], {"NVTX_INJECTION64_PATH": SHIM})
    bt = attach(w, ["batch", "nvtx"])
    w.go()
    w.p.stdout.readline()
    w.p.stdout.readline()  # held: pushed in the first session
    wait_for(lambda: any(r["kind"] == "range" and r["name"] == "outer"
                         for r in w.records()), 10, "the loop's records")
    bt.p.send_signal(signal.SIGINT)
    maps1 = bt.stop()
    batches = sb.decode(w.data())
    n1 = len(batches)
    # bpftrace leaving detaches the nvtx probe before the batch probe: a shim polling in
    # between says NVTX is off (STATE), and that batch is counted or not as bpftrace's own
    # exit goes (uncounted once, beside other tests on hogged cores). Every other is counted.
    leaving = 0
    while leaving < n1 and all(r["kind"] == "status" and r["event_name"] == "state" and
                               "nvtx_on" not in r["state_bits"]
                               for r in batches[n1 - 1 - leaving][1]):
        leaving += 1
    check(n1 - leaving <= maps1.get("batch", 0) <= n1,
          f"first session's batches: bpftrace counted {maps1.get('batch')}, the shim sent {n1}"
          f" ({leaving} as the tracer left)")
    # the poller saw the semaphore drop (BPFSIGHT_SHIM_DEBUG logs it) before the next tracer
    early = []
    for line in w.p.stderr:
        early.append(line)
        if line.rstrip().endswith("detached"):
            break
    check(early and early[-1].rstrip().endswith("detached"), f"no detach: {''.join(early)}")
    bt2 = attach(w, ["batch", "nvtx"])

    # The shim sleeps since the first tracer left; bpftrace cannot wake it, `bpfsight shim
    # --wake` does. So its probes are live (Bpftrace) before the shim sees their semaphores,
    # and it counts every batch of the second session, ATTACH's too.
    def woken():
        run([BPFSIGHT, "shim", "--wake", str(w.pid)], check=True)
        return sum(r["kind"] == "status" and r["event_name"] == "attach"
                   for _, recs in sb.decode(w.data()) for r in recs) >= 2
    wait_for(woken, 30, "the second session's attach, once woken")
    open(release, "w").close()
    rc, out, err = w.finish()
    err = "".join(early) + err
    maps2 = bt2.stop()
    eq(rc, 0, f"nvtx_ranges exit: {err[-300:]}")
    eq(maps2.get("batch"), len(sb.decode(w.data())) - n1, "second session's batches")
    recs = w.records()  # checks strings against each session
    eq(statuses(recs), ["attach", "attach", "exit"], "statuses")
    second = recs[[i for i, r in enumerate(recs) if r.get("event_name") == "attach"][1]:]
    names = sorted((r["what"], r["name"]) for r in second if r["kind"] == "name")
    m = w.hello["main"]
    eq(names, sorted([(1, "nvtx-main"), (2, "compute"), (2, "io"), (2, "domain-cat"),
                      (1, "nvtx-worker-1"), (1, "nvtx-worker-2")]), "names re-sent")
    eq([r["key"] for r in second if r["kind"] == "name" and r["name"] == "nvtx-main"], [m],
       "main thread's name key")
    # held was pushed before the recording period it ends in (released once the second
    # session began): no record, by design.
    eq([r for r in second if r["kind"] == "range"], [], "ranges straddling the detach")


def test_shim_nvtx_chain():
    """BPFSIGHT_NVTX_CHAIN: the chained library gets every call with its own handles while
    the shim records the same ranges."""
    need_bpftrace()
    d = tmpdir()
    out_file = os.path.join(d, "chain.json")
    w = Workload([NVTX_RANGES, "--second-dso"],
                 {"NVTX_INJECTION64_PATH": SHIM, "BPFSIGHT_NVTX_CHAIN": CHAIN,
                  "BPFSIGHT_TEST_CHAIN_OUT": out_file})
    bt = attach(w, ["batch", "nvtx"])
    w.go()
    rc, out, err = w.finish()
    maps = bt.stop()
    eq(rc, 0, f"nvtx_ranges exit: {err[-300:]}")
    check_probe_counts(maps, w)
    with open(out_file) as f:
        counts = json.load(f)
    eq(counts, {"inits": 2, "push": 8, "pop": 8, "mark": 3, "start": 1, "end": 1,
                "name_thread": 3, "domain_create": 1, "register_string": 2, "domain_push": 2,
                "domain_pop": 2, "domain_mark": 1, "domain_start": 1, "domain_end": 1,
                "bad_handle": 0}, "calls the chained library got")
    recs = w.records()
    check(all("nvtx_chained" in r["state_bits"] for r in by_kind(recs, "status")),
          "NVTX_CHAINED state")
    loops = [o for o in out if "loop" in o]
    eq(loops[0]["cross"], 100001, "start/end ids are the chained library's")
    eq(got_nvtx(recs, w.pid), expected_nvtx(w.hello, loops, True), "NVTX records")


def test_shim_fork_child_unlocks_what_the_fork_held():
    """The shim's fork handlers lock its mutexes before a fork; in the child, the thread that
    forked holds them: it unlocks them. Initializing a locked mutex again is undefined, and
    Valgrind's DRD, watching every lock of the workload's fork, says so ("Mutex
    reinitialization"). Valgrind runs the shim's code itself: a recording beside it places
    its probes (the shim's USDT ones, ld.so's) in its own processes only, but another tracer's
    on every process (a recording under -a, bpftrace, an older bpfsight) is an int3 Valgrind
    cannot run (SIGTRAP): the run waits for those to be gone (touched.run_untouched)."""
    cmd = ["valgrind", "--tool=drd", "--trace-children=yes", "env",
           f"NVTX_INJECTION64_PATH={SHIM}", NVTX_RANGES, "--fork"]
    results, _ = touched.run_untouched(
        [cmd], "nvtx_ranges under DRD",
        ok=lambda results, _: results[0][1] == 0 and '"child"' in results[0][2][0])
    if results is None:
        raise Skip("another tracer kept uprobes on every process for 3 min: "
                   f"{touched.global_probes()}")
    [(_, rc, (stdout, stderr))] = results
    eq(rc, 0, f"nvtx_ranges --fork under DRD: {stderr[-600:]}")
    check("Mutex reinitialization" not in stderr,
          stderr[stderr.find("Mutex reinitialization") - 200:][:1500])
    check('"child"' in stdout, f"the child ran: {stdout[-300:]}")


def test_shim_fork_inherits_no_lock_another_thread_held():
    """Each of the shim's locks held by one of its threads while another thread forks (a
    DataLoader worker forked while the poller says the names never found): the fork waits for
    it, and the child, whose only thread is the one that forked, finds every lock free
    (tests/workloads/shim/fork_locks.c). And every lock the shim's sources define is in the
    list the fork takes (cupti-shim/shim_fork.c), so a lock added later without it fails here."""
    p = run([workload("shim/fork_locks"), SHIM_TEST, "400"], timeout=120)
    eq(p.returncode, 0, f"fork_locks: {p.stderr[-600:]}")
    rows = [json.loads(l) for l in p.stdout.splitlines()]
    src = os.path.join(ROOT, "cupti-shim")
    defined = set()
    for f in os.listdir(src):
        if f.endswith(".c"):
            with open(os.path.join(src, f)) as fh:
                defined |= set(re.findall(r"^(?:static )?pthread_mutex_t (\w+) = PTHREAD_MUTEX_"
                                          r"INITIALIZER", fh.read(), re.M))
    eq(sorted(r["lock"] for r in rows), sorted(defined), "the locks the fork takes")
    for r in rows:
        eq(r["held_in_child"], "", f"{r['lock']} held by another thread at the fork: {r}")
        eq(r["status"], 0, f"the child of the fork beside {r['lock']}: {r}")


def test_shim_debug_log_says_every_semaphore_change():
    """BPFSIGHT_SHIM_DEBUG logs each change of the semaphores its poller reads, as read:
    written here in the workload's memory as the kernel writes them, with no tracer attached
    (batch stays 0, so the poller only reads them). A count past 4095 beside another's fall
    (16-bit counts packed 12 bits apiece: sync 4096 with drain 0 read as drain 1, no change)
    and join's change alone (left out of the packing) went unlogged."""
    need_shim()
    w = Workload([NVTX_RANGES], {"NVTX_INJECTION64_PATH": SHIM})
    lines = []
    reader = threading.Thread(target=lambda: lines.extend(w.p.stderr), daemon=True)
    reader.start()
    addrs = sb.semaphore_addrs(SHIM, w.pid)
    names = ("batch", "gpu", "nvtx", "sync", "drain", "join")
    now = dict.fromkeys(names, 0)

    def put(**values):
        """VALUES into the semaphores in one write over the bytes they span: the poller sees
        them change together or not at all."""
        lo = min(addrs[n] for n in values)
        hi = max(addrs[n] for n in values) + 2
        check(hi - lo <= 2 * len(names), f"the semaphores written lie together: {addrs}")
        with open(f"/proc/{w.pid}/mem", "r+b", buffering=0) as mem:
            mem.seek(lo)
            buf = bytearray(mem.read(hi - lo))
            for n, v in values.items():
                buf[addrs[n] - lo:addrs[n] - lo + 2] = v.to_bytes(2, "little")
            mem.seek(lo)
            mem.write(bytes(buf))
        now.update(values)
        want = (f"bpfsight-shim[{w.pid}]: semaphores: " +
                " ".join(f"{n} {now[n]}" for n in names))
        wait_for(lambda: any(l.rstrip().endswith(want) for l in lines), 10,
                 f"{want!r} in the shim's log: {''.join(lines)[-800:]}")

    try:
        put(drain=1)
        put(sync=4096, drain=0)
        put(join=1)
        put(sync=0, join=0)
    finally:
        w.go()
        rc = w.p.wait(60)
        reader.join(10)
    eq(rc, 0, f"nvtx_ranges exit: {''.join(lines)[-300:]}")
    eq([l.split(": ", 1)[1].rstrip() for l in lines if "semaphores:" in l],
       ["semaphores: batch 0 gpu 0 nvtx 0 sync 0 drain 1 join 0",
        "semaphores: batch 0 gpu 0 nvtx 0 sync 4096 drain 0 join 0",
        "semaphores: batch 0 gpu 0 nvtx 0 sync 4096 drain 0 join 1",
        "semaphores: batch 0 gpu 0 nvtx 0 sync 0 drain 0 join 0"], "every change, once")


@alone("bpftrace --usdt-file-activation wakes the shim in every process that maps it")
def test_shim_fork():
    """A forked child restarts the poller on its next NVTX call and starts over as its own
    process: ATTACH, batch seq from 1, strings and category names re-sent, its ranges
    recorded."""
    need_bpftrace()
    w = Workload([NVTX_RANGES, "--fork"], {"NVTX_INJECTION64_PATH": SHIM})
    bt = attach(w, ["batch", "nvtx"], file_activation=True)
    w.go()
    rc, out, err = w.finish()
    bt.stop()
    eq(rc, 0, f"nvtx_ranges exit: {err[-300:]}")
    child = [o["child"] for o in out if "child" in o]
    eq(len(child), 1, "child line")
    child = child[0]
    batches = sb.decode(w.data())  # seq per process from 1, strings per process
    eq(sorted({b["pid"] for b, _ in batches}), sorted([w.pid, child]), "processes")
    recs = [r for _, rs in batches for r in rs if r["pid"] == child]
    eq(statuses(recs), ["attach", "exit"], "child's statuses")
    eq([(r["name"], r["depth"], r["tid"]) for r in by_kind(recs, "range")],
       [("child", 0, child)], "child's ranges")
    r = by_kind(recs, "range")[0]
    check(10 * MS <= r["dur"] <= 10 * MS + SLACK, f"child range lasted {r['dur']}")
    # the parent's category names hold in the child, its thread names do not (those threads
    # are not there): sent with the child's first record, as the child's
    eq(sorted((r["name"], r["tid"]) for r in by_kind(recs, "name")),
       sorted([("compute", child), ("io", child), ("domain-cat", child)]),
       "category names re-sent in the child")
    eq(by_kind(recs, "mark"), [], "child-wake: before the child's poller ran")
    parent = [r for _, rs in batches for r in rs if r["pid"] == w.pid]
    eq(statuses(parent), ["attach", "exit"], "parent's statuses")


def feed_expected(rec):
    """A cupti_feed record as the shim must write it (tid/pid/type checked apart)."""
    e = dict(rec)
    kind = e.pop("type")
    e.pop("tid", None)
    e["kind"] = kind
    if kind == "kernel" or kind == "memcpy" or kind == "memset":
        e["graph_id"] = e.get("graph_id", 0)
        e["graph_node_id"] = e.get("graph_node_id", 0)
        e["flags"] = 4 if e["graph_id"] else 0  # BS_GPU_GRAPH
        e["call_ts"] = 0
    if kind == "api":
        e["flags"] = 0
        e["call_ts"] = 0
    return e


def got_feed(r):
    keep = {"kernel": "ts dur correlation name device context stream grid block "
                      "shmem_dynamic shmem_static registers graph_id graph_node_id flags "
                      "call_ts",
            "memcpy": "ts dur correlation bytes copy_kind src_kind dst_kind async device "
                      "context stream src_device dst_device graph_id graph_node_id flags "
                      "call_ts",
            "memset": "ts dur correlation bytes value mem_kind device context stream "
                      "graph_id graph_node_id flags call_ts",
            "api": "ts dur correlation cbid domain name ret flags call_ts"}[r["kind"]]
    out = {k: r[k] for k in keep.split()}
    out["kind"] = r["kind"]
    return out


def test_shim_cupti_feed():
    """CUPTI 13 records through the shim's one decode path: every field, the launching
    thread and call of each API record, the CUPTI failures of a GPU-less box reported once."""
    need_bpftrace()
    w = Workload([CUPTI_FEED, "--extra", "1000", SHIM_TEST])
    eq(w.hello["init"], 1, "InitializeInjection's return")
    bt = attach(w, ["batch", "gpu"], lib=SHIM_TEST)
    w.go()
    rc, out, err = w.finish(json_lines=False)
    maps = bt.stop()
    eq(rc, 0, f"cupti_feed exit: {err[-300:]}")
    check_probe_counts(maps, w)
    fed = json.loads(out)
    eq(fed["fed"], len(fed["records"]), "records the hook wrote")
    eq(len(fed["records"]), 12 * 2 + 3 + 1000, "records fed")
    recs = w.records()
    gpu = [r for r in recs if r["kind"] in ("kernel", "memcpy", "memset", "api")]
    want = [feed_expected(r) for r in fed["records"]]
    eq(len(gpu), len(want), "GPU records")
    for i, (g, e) in enumerate(zip(gpu, want)):
        eq(got_feed(g), e, f"GPU record {i}")
    tid = w.hello["tid"]
    eq({r["tid"] for r in gpu if r["kind"] == "api"}, {tid}, "API records' thread")
    eq({r["tid"] for r in gpu if r["kind"] != "api"}, {0}, "GPU records: launcher unknown")
    for call, api in zip(fed["calls"], [r for r in gpu if r["kind"] == "api"]):
        check(call["t0"] < api["ts"] and api["ts"] + api["dur"] < call["t1"],
              f"{call['name']} API record inside the real call")
        eq(api["ret"], call["ret"], f"{call['name']} return value")
    batches = sb.decode(w.data())
    check(all(b["len"] <= 16384 for b, _ in batches), "batch sizes")
    check(len([b for b, rs in batches if any(r["kind"] == "kernel" for r in rs)]) >= 7,
          "1000+ kernels in several full batches")
    st = [s for s in by_kind(recs, "status") if s["event_name"] in statuses([s])]
    eq([(s["event_name"], s["detail"], s["cupti_result"]) for s in st],
       [("attach", None, 0),
        ("cupti_error", "cuptiActivityRegisterTimestampCallback", 999),
        ("exit", None, 0)], "statuses: CUPTI's failure here, once")
    check(all(s["cupti_version"] // 10000 == 13 for s in st), "CUPTI 13 version in statuses")
    check(all("gpu_on" not in s["state_bits"] for s in by_kind(recs, "status")),
          "GPU never on without CUPTI")
