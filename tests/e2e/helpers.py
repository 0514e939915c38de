"""Helpers for bpfsight's end-to-end tests: run the real binary on the real kernel."""
import atexit
import json
import re
import os
import shutil
import signal
import subprocess
import tempfile
import threading
import time

BUILD = os.environ.get("BPFSIGHT_BUILD", os.path.join(os.path.dirname(__file__), "..", "..",
                                                      "build"))
BPFSIGHT = os.path.join(BUILD, "bpfsight")
# How many times slower than the machines the tests' latency and throughput bounds are set
# for: 10 in make check-kernels' QEMU without KVM (tests/kernels/init.sh). Only bounds a
# slower machine cannot meet scale with it, never an exact count.
SLOWDOWN = int(os.environ.get("BPFSIGHT_TEST_SLOWDOWN", "1"))
Skip = Exception  # replaced by the runner's Skip

_tmpdirs = []
_procs = []

# Recordings under test keep their scan cache (scan_cache.h) to themselves, never the
# machine's /var/cache/bpfsight: one test's programs must not make another's exact.
if "BPFSIGHT_CACHE_DIR" not in os.environ:
    os.environ["BPFSIGHT_CACHE_DIR"] = tempfile.mkdtemp(prefix="bpfsight-test-cache-")
    atexit.register(shutil.rmtree, os.environ["BPFSIGHT_CACHE_DIR"], True)


# bpfsight ignores the variables that name files when sudo ran it for another user (env.h):
# the tests' variables are the tests' own, even under `sudo make check`.
os.environ.pop("SUDO_UID", None)


def alone(why, exclusive=False, fuzzers_beside=None):
    """Marks a test that cannot share the machine with other tests (WHY says what it does to
    the machine or needs of it: a system-wide recording, a global setting). tests/run_tests.py
    runs such tests after the others, one at a time, the fuzzers (at idle priority) and the
    modules that only read files (BESIDE) beside them; EXCLUSIVE: not even those (the
    machine's next pid, both cores taken, a job's time measured against its own clock), but for
    the fuzzers where FUZZERS_BESIDE says why a process at idle priority does not change what
    it measures (it never takes a CPU a test's thread wants). A whole module says so with a
    module-level ALONE = "why" (and EXCLUSIVE = True, FUZZERS_BESIDE = "why")."""
    def mark(test):
        test.alone = why
        return test
    return mark


def beside(why):
    """Marks a test that only reads files (WHY says which: the real traces, a synthetic one)
    in a module whose other tests record: tests/run_tests.py runs it beside the tests run
    alone, as it runs a module marked BESIDE = "why" (no recording, no workload, no program
    but bpfsight, protoc and Python, nothing probed), in a job of its own."""
    def mark(test):
        test.beside = why
        return test
    return mark


def workload(name):
    return os.path.join(BUILD, "tests", name)


def tmpdir():
    d = tempfile.mkdtemp(prefix="bpfsight-test-")
    _tmpdirs.append(d)
    return d


def keep_tmpdir():
    """A temporary directory kept past each test's cleanup, removed as the job's process
    ends: where a module keeps what its tests share (a recording, once per job)."""
    d = tempfile.mkdtemp(prefix="bpfsight-test-")
    atexit.register(shutil.rmtree, d, True)
    return d


def need_root():
    if os.geteuid() != 0:
        raise Skip("needs root (BPF)")


def cleanup():
    """Kill what a test left running and remove its files (called after every test)."""
    while _procs:
        p = _procs.pop()
        if p.poll() is None:
            p.kill()
            p.wait()
    while _tmpdirs:
        d = _tmpdirs.pop()
        if KEEP_TRACES:
            _keep_traces(d)
        shutil.rmtree(d, ignore_errors=True)


# BPFSIGHT_KEEP_TRACES=DIR: every trace a test wrote is copied there before its files go
# (tests/tools/same_outputs.py reads them: the readers' outputs before and after a change).
KEEP_TRACES = os.environ.get("BPFSIGHT_KEEP_TRACES")


def _keep_traces(d):
    os.makedirs(KEEP_TRACES, exist_ok=True)
    for top, _, files in os.walk(d):
        for f in files:
            path = os.path.join(top, f)
            # Not the sparse giants of the bad-input tests.
            if (f.endswith(".bst") and os.path.isfile(path) and not os.path.islink(path)
                    and os.path.getsize(path) < 64 << 20):
                # A name no other test process (the runner's jobs run at once) has taken.
                n = len(os.listdir(KEEP_TRACES))
                while True:
                    try:
                        dst = open(os.path.join(KEEP_TRACES, f"{n:05d}-{f}"), "xb")
                        break
                    except FileExistsError:
                        n += 1
                with open(path, "rb") as src, dst:
                    shutil.copyfileobj(src, dst)


def run(args, timeout=120, check=False, **kw):
    p = subprocess.run(args, capture_output=True, text=True, timeout=timeout, **kw)
    if check and p.returncode != 0:
        raise AssertionError(f"{args} exited {p.returncode}: {p.stderr.strip()[-800:]}")
    return p


def record(cmd, *opts, out=None, timeout=120):
    """bpfsight record [opts] -o OUT -- CMD. Returns (CompletedProcess, OUT)."""
    out = out or os.path.join(tmpdir(), "t.bst")
    p = run([BPFSIGHT, "record", "-o", out, *opts, "--", *cmd], timeout=timeout)
    return p, out


class Recorder:
    """A recorder running in the background (-p or -a); ready once its probes are live."""

    def __init__(self, *opts, out=None, env=None):
        self.out = out or os.path.join(tmpdir(), "t.bst")
        self.p = subprocess.Popen([BPFSIGHT, "record", "-o", self.out, *opts],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                  env=env)
        _procs.append(self.p)
        self.stderr_lines = []
        self._ready = threading.Event()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self):
        for line in self.p.stderr:
            self.stderr_lines.append(line)
            if "recording" in line and "Ctrl-C" in line:
                self.live = True
                self.ready_at = time.monotonic()
                self._ready.set()
        self._ready.set()

    live = False  # it printed its "recording ..." line
    ready_at = None  # when (time.monotonic) it did

    def started(self, timeout=60):
        """Whether it went live (False: it ended first, e.g. refused its options)."""
        if not self._ready.wait(timeout * SLOWDOWN):
            raise AssertionError(f"recorder neither live nor ended: {self.stderr[-800:]}")
        return self.live

    # Without uprobe_multi a recorder first waits for other recordings' detached processes
    # to free their uprobes, for at most this long (user/record/link_reaper.c), and says so:
    # tests running beside it may have just stopped theirs.
    OTHERS_WAIT_S = 120

    def wait_ready(self, timeout=60):
        # A slower machine's start is slower.
        ready = self._ready.wait(timeout * SLOWDOWN)
        if not ready and "earlier recording(s) to free their uprobes" in self.stderr:
            ready = self._ready.wait(self.OTHERS_WAIT_S * SLOWDOWN)
        if not ready or self.p.poll() is not None:
            raise AssertionError(f"recorder not ready: {''.join(self.stderr_lines)[-800:]}")

    def stop(self, sig=signal.SIGINT, timeout=60):
        if self.p.poll() is None:
            self.p.send_signal(sig)
        return self.wait(timeout)

    def flush(self, sig=signal.SIGUSR1, timeout=30):
        """Ask for a flush (SIGUSR1 or SIGUSR2) and wait until the recorder says it is done."""
        self.p.send_signal(sig)
        wait_for(lambda: "flushed" in self.stderr, timeout, f"{sig.name}: the recorder's flush")

    def wait(self, timeout=60):
        rc = self.p.wait(timeout)
        self._reader.join(5)
        return rc

    @property
    def stderr(self):
        return "".join(self.stderr_lines)


def spawn(args, **kw):
    p = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, **kw)
    _procs.append(p)
    return p


def tell(p, line):
    """One line to a spawned workload's stdin (its cue to go on)."""
    p.stdin.write(line + "\n")
    p.stdin.flush()


def stats(path, reports=None, check=True):
    args = [BPFSIGHT, "stats", path, "--format", "json"]
    if reports:
        args += ["-r", reports]
    p = run(args, check=check)
    return json.loads(p.stdout)["reports"]


def info(path, check=True):
    p = run([BPFSIGHT, "info", "--json", path], check=check)
    return json.loads(p.stdout)


def dump(path, check=True, kinds=None, having=None):
    """dump's events (KINDS: only those, as --kind reads them). HAVING: only the lines that
    hold these bytes are decoded (a dump of a few MB is most of a test's CPU when decoded
    whole): the caller still checks each event it keeps for what HAVING stands for."""
    args = [BPFSIGHT, "dump", path] + (["--kind", kinds] if kinds else [])
    if having is None:
        p = run(args, check=check, timeout=300)
        return [json.loads(l) for l in p.stdout.splitlines()]
    p = subprocess.run(args, capture_output=True, timeout=300)
    if check and p.returncode != 0:
        raise AssertionError(f"{args} exited {p.returncode}: "
                             f"{p.stderr.decode(errors='replace').strip()[-800:]}")
    return [json.loads(l) for l in p.stdout.splitlines() if having in l]


def row(report, **match):
    """The one row of REPORT whose fields equal MATCH."""
    rows = [r for r in report if all(r.get(k) == v for k, v in match.items())]
    if len(rows) != 1:
        raise AssertionError(f"expected one row with {match}, found {len(rows)}: "
                             f"{[r for r in report][:10]}")
    return rows[0]


def eq(a, b, what):
    if a != b:
        raise AssertionError(f"{what}: {a!r} != {b!r}")


def check(cond, what):
    if not cond:
        raise AssertionError(what)


def wait_for(pred, timeout=10, what="condition"):
    end = time.time() + timeout
    while time.time() < end:
        if pred():
            return
        time.sleep(0.02)
    raise AssertionError(f"timed out waiting for {what}")


ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")


def docs_query(name, doc="EXPORT.md"):
    """The docs/DOC SQL block whose first line is `-- NAME`: tests run the queries the docs
    show, so the two cannot drift apart."""
    with open(os.path.join(ROOT, "docs", doc)) as f:
        for block in re.findall(r"```sql\n(.*?)```", f.read(), re.S):
            if block.startswith(f"-- {name}\n"):
                return block
    raise AssertionError(f"docs/{doc} has no query '-- {name}'")
