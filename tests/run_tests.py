#!/usr/bin/env python3
"""bpfsight's test runner (make check).

Runs the C unit-test binaries (build/tests/test_*; each prints "ok - NAME" or "not ok - NAME:
why" per case), short libFuzzer runs of the trace reader, the record decoders and reports, and
the cupti-shim batch unpacker (FUZZERS), and the end-to-end tests (tests/e2e/test_*.py: every
function named test_*), which drive the real build/bpfsight against the real kernel. Prints
one line per test; then, when some were skipped, how many for each cause (the reason a test
gave); and ends with "N passed, N failed" (", N skipped" when some were skipped). A unit case
that prints "skip - NAME: why" (UNIT_SKIP in tests/unit/unit.h) counts as skipped, never as
passed.

Most of the work waits (on sleeps, on recorders starting, on workloads), so it runs in JOBS
worker processes at once (-j, default 4): each unit binary, each fuzzer and each e2e module's
tests (in order, in one process) is a job. E2e tests that cannot share the machine with other
tests are marked (`@alone("why")` from helpers, or a module's `ALONE = "why"`) and run
afterwards, one at a time, with no other test running: only the short fuzz runs (all at once,
at idle priority) and the modules that read files alone (`BESIDE = "why"`: no recording, no
workload, nothing traced; a single test says it with `@beside("why")`, one at a time) go on
beside them; a test marked `@alone("why", exclusive=True)` (a module's `EXCLUSIVE = True`: one
that takes both cores or measures its own CPU) runs last, with nothing beside it but the
fuzzers where it says they may run beside it (FUZZERS_BESIDE). Every test's lines are printed
whole, as its job reports them. With --build-later (make check), the unit tests and the
fuzzers are built while the other tests run (LaterBuild).

  tests/run_tests.py [--build DIR] [-k SUBSTRING] [-j JOBS] [--no-unit] [--no-fuzz] [--no-e2e]
                    [--build-later [VARS]]

tests/README.md is the longer story: what a skip means, the time budget and the order of
jobs, which tests run alone and why, the fuzzers and their seeds.
"""
import argparse
import ast
import collections
import gc
import importlib.util
import json
import os
import resource
import selectors
import signal
import subprocess
import sys
import tempfile
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
E2E = os.path.join(HERE, "e2e")
# Where the e2e modules are read from: E2E, or --e2e DIR (test_runner.py plants its own; the
# helpers are still E2E's).
MODULES = E2E
# What a worker writes before each of its result lines on stdout (a test may print too).
TAG = "\x1ebpfsight-test "


class Skip(Exception):
    """Raised by a test that cannot run here (the reason is printed)."""


class Results:
    def __init__(self):
        self.passed = self.failed = self.skipped = 0
        self.failures = []
        self.skips = {}  # cause -> names of the tests it skipped

    def ok(self, name, secs=None):
        self.passed += 1
        print(f"PASS {name}" + (f" ({secs:.1f}s)" if secs is not None else ""), flush=True)

    def fail(self, name, why):
        self.failed += 1
        self.failures.append(name)
        print(f"FAIL {name}: {why}", flush=True)

    def skip(self, name, why):
        self.skipped += 1
        self.skips.setdefault(why, []).append(name)
        print(f"SKIP {name}: {why}", flush=True)

    def note(self, text):
        print(text, flush=True)

    def skip_summary(self):
        """Skips by cause, most first: a green run that skipped something says what."""
        if not self.skips:
            return
        print(f"# {self.skipped} skipped, by cause:")
        for why, names in sorted(self.skips.items(), key=lambda kv: (-len(kv[1]), kv[0])):
            names = sorted(names)
            shown = ", ".join(names[:3]) + (f", ... ({len(names) - 3} more)"
                                             if len(names) > 3 else "")
            print(f"#   {len(names):3d}  {why}: {shown}")


class Reporter:
    """A worker's Results: each outcome one tagged JSON line on stdout, for the runner."""

    def __init__(self, out):
        self.out = out

    def _send(self, *msg):
        self.out.write(TAG + json.dumps(msg) + "\n")
        self.out.flush()

    def ok(self, name, secs=None):
        self._send("ok", name, secs)

    def fail(self, name, why):
        self._send("fail", name, why)

    def skip(self, name, why):
        self._send("skip", name, why)

    def note(self, text):
        self._send("note", text)

    def cpu(self, name, own, kids):
        self._send("cpu", name, own, kids)


# ---- the jobs, as a worker runs them ----

def run_unit(build, res, b):
    path = os.path.join(build, "tests", b)
    try:
        p = subprocess.run([path], capture_output=True, text=True, timeout=600)
    except subprocess.TimeoutExpired:
        res.fail(b, "timed out after 600 s")
        return
    cases = 0
    for line in p.stdout.splitlines():
        if line.startswith("ok - "):
            res.ok(f"{b}:{line[5:]}")
            cases += 1
        elif line.startswith("not ok - "):
            name, _, why = line[9:].partition(": ")
            res.fail(f"{b}:{name}", why)
            cases += 1
        elif line.startswith("skip - "):
            name, _, why = line[7:].partition(": ")
            res.skip(f"{b}:{name}", why)
            cases += 1
        elif line.startswith("# "):
            res.note(f"     {b} {line}")
    if p.returncode != 0 and cases == 0:
        res.fail(b, f"exit {p.returncode} without results: {p.stderr.strip()[-500:]}")
    elif p.returncode not in (0, 1):
        res.fail(b, f"crashed (exit {p.returncode}): {p.stderr.strip()[-500:]}")


# (fuzzer, its seeds under tests/fuzz, runs): every seed runs first (fuzz_decode's take ~17
# CPU-s), then new inputs up to that many runs in all, about what a few seconds of one core
# make (as they did when these were seconds: the runs are what they were on a loaded machine
# too): make check's time is the 8-minute line on CI's 2 cores; `make fuzz` searches for long.
# A failing input is kept as build/tests/FUZZER-crash-* (the output names it).
FUZZERS = [("fuzz_reader", "seeds", 8000), ("fuzz_decode", "seeds-decode", 500),
           ("fuzz_shim_unpack", "seeds-shim_unpack", 300),
           ("fuzz_pylines", "seeds-pylines", 200000), ("fuzz_elf", "seeds-elf", 4000),
           ("fuzz_eh_frame", "seeds-eh_frame", 10000)]


def idle_priority():
    """This process (a fuzzer, a later build) at SCHED_IDLE: it runs only on a CPU that no
    test wants, and a test's thread that wakes takes the CPU from it at once. Until no test
    runs (promote)."""
    os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))


def promote(pid):
    """PID's threads and its descendants' from SCHED_IDLE back to the normal policy: once no
    test runs, idle priority yields to nobody of ours, only to the machine's other load (CI
    shares its cores), which would starve the fuzzers and the later build for as long as it
    lasts (a run beside two busy loops waited on its fuzzers until their 900 s ran out)."""
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return  # ended
    for tid in tids:
        try:
            if os.sched_getscheduler(int(tid)) == os.SCHED_IDLE:
                os.sched_setscheduler(int(tid), os.SCHED_OTHER, os.sched_param(0))
        except OSError:
            pass  # ended meanwhile, or not ours to raise (RLIMIT_NICE, not root): stays idle
        try:
            with open(f"/proc/{pid}/task/{tid}/children") as f:
                kids = f.read().split()
        except OSError:
            continue  # ended meanwhile
        for kid in kids:
            promote(int(kid))


def run_fuzzer(build, res, fz):
    seeds, runs = next((s, n) for f, s, n in FUZZERS if f == fz)
    name = f"{fz}:short"
    fuzzer = os.path.join(build, "tests", fz)
    if not os.path.exists(fuzzer):
        res.fail(name, f"{fuzzer} missing: run make test-build")
        return
    with tempfile.TemporaryDirectory() as corpus:
        t0 = time.time()
        try:
            # At idle priority, beside the tests run alone (FUZZ_LANE): an input's wall time
            # is what those tests leave it. -timeout is libFuzzer's hang detector for one
            # input (in wall time): the slowest seed takes 2.7 s of CPU
            # (fuzz_decode's regress-gil-waits-far-pids), and the tests beside it end within
            # ~3 minutes, after which it has the machine: 600 s is a bound.
            p = subprocess.run([fuzzer, f"-runs={runs}", "-timeout=600", "-rss_limit_mb=2048",
                                f"-artifact_prefix={fuzzer}-", corpus,
                                os.path.join(ROOT, "tests", "fuzz", seeds)],
                               capture_output=True, text=True, timeout=900,
                               preexec_fn=idle_priority)
        except subprocess.TimeoutExpired:
            res.fail(name, "timed out after 900 s")
            return
        if p.returncode == 0:
            last = [l for l in p.stderr.splitlines() if l.startswith("Done")]
            res.ok(f"{name} {last[-1] if last else ''}".strip(), time.time() - t0)
        else:
            res.fail(name, p.stderr.strip()[-1500:])


def load_module(path):
    spec = importlib.util.spec_from_file_location(os.path.basename(path)[:-3], path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def run_e2e_module(build, res, f, names):
    """Tests NAMES of e2e module F, in order, each followed by helpers.cleanup()."""
    sys.path.insert(0, E2E)
    if MODULES != E2E:
        sys.path.insert(0, MODULES)
    os.environ["BPFSIGHT_BUILD"] = os.path.abspath(build)
    import helpers  # noqa: E402  (tests/e2e/helpers.py)
    helpers.Skip = Skip
    mod = load_module(os.path.join(MODULES, f))
    for name in names:
        full = f"{f[:-3]}:{name}"
        t0 = time.time()
        c0 = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
        try:
            base, _, param = name.partition("[")
            getattr(mod, base)(*([param[:-1]] if param else []))
            res.ok(full, time.time() - t0)
        except Skip as e:
            res.skip(full, str(e))
        except Exception as e:  # a test's failure, whatever it is
            tb = traceback.format_exc().strip().splitlines()
            where = next((l.strip() for l in reversed(tb) if l.strip().startswith("File")), "")
            res.fail(full, f"{type(e).__name__}: {e} [{where}]")
        finally:
            helpers.cleanup()
            c1 = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
            own, kids = ((b.ru_utime + b.ru_stime) - (a.ru_utime + a.ru_stime)
                         for a, b in zip(c0, c1))
            res.cpu(full, round(own, 2), round(kids, 2))


def worker(build, job):
    """Run JOB (as the runner names it: unit:BIN, fuzz:FUZZER, e2e:FILE:TEST,TEST...),
    reporting on stdout; what the tests print goes to stderr."""
    out = os.fdopen(os.dup(sys.stdout.fileno()), "w")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    res = Reporter(out)
    # The tests' own Python builds big lists of dicts (a real trace's Chrome JSON, dump's
    # NDJSON): at Python's default threshold (700) the collector walks all of them again and
    # again while they are built, as long as the parse itself (json.loads of a 100 MB export:
    # 2.7 CPU-s, 1.4 s at 100,000). They hold no cycles; what does is still collected.
    gc.set_threshold(100_000, 10, 10)
    kind, _, what = job.partition(":")
    if kind == "unit":
        run_unit(build, res, what)
    elif kind == "fuzz":
        run_fuzzer(build, res, what)
    else:
        f, _, names = what.partition(":")
        if f not in PROM_MODULES:
            os.environ.pop("BPFSIGHT_TEST_PROMETHEUS", None)  # prom_server.ENV
        run_e2e_module(build, res, f, names.split(","))
    return 0


# ---- the runner ----

# A test's WHY when it is marked @beside("why") (helpers.beside): it runs beside the tests
# run alone, as a BESIDE module's tests do, in a job of its module's such tests.
BESIDE_TEST = "beside"


def e2e_modules():
    """{file: (its module-level settings, [(test, why it must run alone or None)])} of
    tests/e2e, read from the sources (importing them here would give every worker this
    process's helpers state). Settings: ALONE (every test alone, why; with EXCLUSIVE = True,
    nothing beside them; with FUZZERS_BESIDE = "why" too, nothing but the fuzzers at idle
    priority), BESIDE (its tests run beside those alone, why: they only read
    files), SPLIT (one job per test: a long module of CPU-bound tests), SECONDS (about how
    long its tests take on CI's machine: the order of a run with no times yet). A test's WHY
    is (why, exclusive, fuzzers beside): exclusive, nothing beside it, but the fuzzers at idle
    priority where it says they may run beside it; or BESIDE_TEST (@beside: this test of
    a module that records only reads files). PARAMS (a tuple of strings): each test that takes
    an argument runs once per value, named TEST[VALUE] (the ClickHouse modules' engines,
    clickhouse_server.ENGINES), all of one test in one job even under SPLIT, so that what the
    module keeps between tests (a recording, stats' answers) serves every value; a test without
    an argument runs once."""
    mods = {}
    for f in sorted(os.listdir(MODULES)):
        if not (f.startswith("test_") and f.endswith(".py")):
            continue
        tree = ast.parse(open(os.path.join(MODULES, f)).read(), f)
        settings = {}
        for node in tree.body:
            if (isinstance(node, ast.Assign) and len(node.targets) == 1 and
                    isinstance(node.targets[0], ast.Name) and
                    node.targets[0].id in ("ALONE", "EXCLUSIVE", "FUZZERS_BESIDE", "BESIDE",
                                           "SPLIT", "SECONDS", "PARAMS")):
                settings[node.targets[0].id] = ast.literal_eval(node.value)
        tests = []
        for node in tree.body:
            if isinstance(node, ast.FunctionDef) and node.name.startswith("test_"):
                why = settings.get("ALONE") and (settings["ALONE"],
                                                 bool(settings.get("EXCLUSIVE")),
                                                 bool(settings.get("FUZZERS_BESIDE")))
                for d in node.decorator_list:
                    name = isinstance(d, ast.Call) and d.args and \
                        getattr(d.func, "id", getattr(d.func, "attr", None))
                    if name == "alone":
                        kw = {k.arg: ast.literal_eval(k.value) for k in d.keywords}
                        why = (ast.literal_eval(d.args[0]), bool(kw.get("exclusive")),
                               bool(kw.get("fuzzers_beside")))
                    elif name == "beside":
                        why = BESIDE_TEST
                if node.args.args and settings.get("PARAMS"):
                    tests += [(f"{node.name}[{p}]", why) for p in settings["PARAMS"]]
                else:
                    tests.append((node.name, why))
        mods[f] = (settings, sorted(tests))
    return mods


def unit_jobs(build, pattern):
    """A job per unit-test binary in BUILD/tests whose name has PATTERN."""
    tests_dir = os.path.join(build, "tests")
    bins = sorted(f for f in os.listdir(tests_dir)
                  if f.startswith("test_") and not f.endswith(".d"))
    if not bins:
        return [("error", f"no unit-test binaries in {tests_dir}: run make test-build")]
    return [("unit", b) for b in bins if not pattern or pattern in b]


# The jobs that run alone with nothing beside them (@alone(why, exclusive=True)), and of those
# the ones that the fuzzers, at idle priority, may run beside (fuzzers_beside="why").
EXCLUSIVE = set()
FUZZERS_BESIDE = set()


def plan(build, args):
    """(jobs run together, longest first as far as known; jobs run alone, in order; jobs run
    beside those, one at a time; the fuzzers, all at once beside those at idle priority)."""
    together, alone = [], []
    pattern = args.pattern
    if not args.no_unit:
        # built later (--build-later): listed once they are (unit_jobs)
        together += [("unit", None)] if args.build_later is not None else \
            unit_jobs(build, pattern)
    # The fuzzers run beside the tests that run alone, all at once, at idle priority
    # (run_fuzzer): those mostly wait (a recorder's start, Prometheus's scrapes), and a fuzzer
    # traces nothing and is traced by nothing they look at (it loads no CUDA, Python or torch
    # library): ~35 s of one core, out of the CPU those tests and the file readers leave idle,
    # the exclusive ones' too where they say the fuzzers may run beside them.
    fuzz = [("fuzz", fz) for fz, _, _ in FUZZERS
            if not args.no_fuzz and (not pattern or pattern in f"{fz}:short")]
    beside = []
    hint = {}
    if not args.no_e2e:
        for f, (settings, tests) in e2e_modules().items():
            names = [(n, why) for n, why in tests
                     if not pattern or pattern in f"{f[:-3]}:{n}"]
            for lane in ("together", "beside", "alone", "exclusive"):
                mine = [n for n, why in names
                        if lane == ("together" if not why else "beside" if why == BESIDE_TEST
                                    else "exclusive" if why[1] else "alone")]
                if not mine:
                    continue
                groups = [mine]
                if settings.get("SPLIT") and lane == "together":
                    # a test's values of PARAMS together: what it keeps serves them all
                    by_test = collections.OrderedDict()
                    for n in mine:
                        by_test.setdefault(n.split("[")[0], []).append(n)
                    groups = list(by_test.values())
                for g in groups:
                    job = ("e2e", f"{f}:{','.join(g)}")
                    hint[job] = settings.get("SECONDS", 0) * len(g) / len(tests)
                    if lane == "exclusive":
                        EXCLUSIVE.add(job)
                        if all(why[2] for n, why in names if n in g):
                            FUZZERS_BESIDE.add(job)
                    (together if lane == "together" and not settings.get("BESIDE") else
                     beside if lane in ("together", "beside") else alone).append(job)
    # Longest first (the seconds a job took in the last run in this build directory, else
    # its module's SECONDS, else the fuzzer's): a long job started last runs on by itself.
    took = load_times(build)
    together.sort(key=lambda j: -took.get(job_key(j), hint.get(j, 0)))
    beside.sort(key=lambda j: -took.get(job_key(j), hint.get(j, 0)))
    # last, once nothing runs beside them; last of all, those the fuzzers may not run beside
    alone.sort(key=lambda j: (j in EXCLUSIVE, j not in FUZZERS_BESIDE))
    return together, alone, beside, fuzz


def job_key(job):
    return f"{job[0]}:{job[1]}"


def times_path(build):
    return os.path.join(build, "tests", ".job-seconds.json")


def load_times(build):
    try:
        with open(times_path(build)) as f:
            return json.load(f)
    except (OSError, ValueError):
        return {}


def save_times(build, took):
    old = load_times(build)
    old.update(took)
    try:
        with open(times_path(build), "w") as f:
            json.dump(old, f, indent=0, sort_keys=True)
    except OSError:
        pass


# What most jobs import, imported once by the runner before it forks them (Forked): a new
# interpreter per job (its start, the site's .pth files, these imports) cost 0.06-0.1 s of CPU
# more than a fork, ~25 s over make check's ~340 jobs (bench/RESULTS.md, "make check time").
# Not helpers itself: it makes each job's own scan-cache directory as it is imported.
PRELOAD = ("collections", "csv", "gzip", "hashlib", "html", "http.client", "http.server",
           "shutil", "signal", "socket", "sqlite3", "statistics", "struct", "threading",
           "urllib.request", "zlib")


class Forked:
    """A job's worker forked from the runner (not a new interpreter): what Job needs of a
    Popen. The runner has no threads and no buffered output when it forks; the worker runs
    the exit handlers its tests registered and leaves with os._exit, never through the
    runner's frames."""

    def __init__(self, build, job):
        r, w = os.pipe()
        sys.stdout.flush()
        sys.stderr.flush()
        self.pid = os.fork()
        if self.pid == 0:
            rc = 70
            try:
                os.close(r)
                os.dup2(w, 1)
                os.close(w)
                rc = worker(build, job)
                import atexit
                atexit._run_exitfuncs()
            except BaseException:  # a worker never returns into the runner's loop
                traceback.print_exc()
            finally:
                try:
                    sys.stdout.flush()
                    sys.stderr.flush()
                finally:
                    os._exit(rc)
        os.close(w)
        self.stdout = os.fdopen(r, "rb", buffering=0)
        self.returncode = None

    def kill(self):
        try:
            os.kill(self.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass

    def wait(self):
        if self.returncode is None:
            self.returncode = os.waitstatus_to_exitcode(os.waitpid(self.pid, 0)[1])
        return self.returncode


class Job:
    def __init__(self, build, job):
        self.job, self.t0, self.buf = job, time.time(), b""
        self.p = Forked(build, f"{job[0]}:{job[1]}")
        self.reported = 0

    def lines(self):
        """([the complete lines read so far], whether the job's output ended)."""
        data = os.read(self.p.stdout.fileno(), 65536)
        if not data:
            rest, self.buf = self.buf, b""
            return ([rest.decode(errors="replace")] if rest else []), True
        self.buf += data
        *done, self.buf = self.buf.split(b"\n")
        return [l.decode(errors="replace") for l in done], False


def handle(res, job, line):
    if not line.startswith(TAG):
        print(line, flush=True)  # a test's own output, whole
        return
    kind, *rest = json.loads(line[len(TAG):])
    if kind == "cpu":
        TEST_CPU[rest[0]] = tuple(rest[1:])
        return
    job.reported += kind != "note"
    getattr(res, kind)(*rest)


# {job: CPU seconds of its worker and the processes it waited for}: BPFSIGHT_TEST_CPU=N
# prints the N costliest at the end (make check's time is CPU on CI's 2 cores).
CPU = {}
# {e2e test: (the CPU seconds of the worker's own Python, of the processes it waited for)}
TEST_CPU = {}


# The share of the CPU time gone idle over a second above which one more job starts (Idle):
# at a quarter, the jobs run together left ~5% idle in bursts of 10-30% over 5 s; 10% was
# tried once, inside the runs' spread (bench/RESULTS.md, "make check time").
IDLE_MORE = 0.15


class Idle:
    """How much of the machine's CPU time went idle since the last look (/proc/stat), and
    from it how many jobs to run: N, and one more each second while over IDLE_MORE of the CPU
    time was idle (jobs waiting on sleeps, on recorders starting, on servers), up to 2 N; one
    fewer (no new one started) while almost none was. Four at a time leave CI's two cores
    about 5% idle while the jobs run together, now and then a quarter (bench/RESULTS.md,
    "make check time"): a few seconds of a run, more where the jobs wait more."""

    def __init__(self, n):
        self.n, self.extra, self.at, self.last = n, 0, time.time(), self.read()
        self.spent = {}  # jobs allowed -> seconds they were

    def said(self):
        """How many jobs ran at once, as the run's last lines say it."""
        total = sum(self.spent.values()) or 1
        mean = sum(k * v for k, v in self.spent.items()) / total
        return f"jobs at once: {min(self.spent, default=self.n)} to " \
            f"{max(self.spent, default=self.n)} allowed, {mean:.1f} on average"

    @staticmethod
    def read():
        try:
            with open("/proc/stat") as f:
                v = [int(x) for x in f.readline().split()[1:]]
        except (OSError, ValueError):
            return None
        return v[3] + v[4], sum(v)  # idle and iowait, all

    def jobs(self):
        now = time.time()
        if now - self.at >= 1 and self.last:
            k = self.n + self.extra
            self.spent[k] = self.spent.get(k, 0) + now - self.at
            cur = self.read()
            if cur and cur[1] > self.last[1]:
                idle = (cur[0] - self.last[0]) / (cur[1] - self.last[1])
                if idle > IDLE_MORE and self.extra < self.n:
                    self.extra += 1
                elif idle < 0.05 and self.extra > 0:
                    self.extra -= 1
            self.at, self.last = now, cur
        return self.n + self.extra


# make check's builds left for later (--build-later): (make target, the kind of job that waits
# for it), built in this order; the unit tests first, as they run with the first jobs.
LATER_TARGETS = (("test-units", "unit"), ("test-fuzzers", "fuzz"))


class LaterBuild:
    """The unit tests and the fuzzers, built while the first tests run (make check builds
    only what those need first): one make after the other at idle priority (SCHED_IDLE: the
    CPU the tests leave idle while they wait on their programs, ~6% of the two cores while
    the jobs run together; bench/RESULTS.md, "make check time"), into BUILD/tests/later-build.log.
    A job of a kind still being built waits for it (the others go first); of a kind whose build
    failed, it fails, with the log's end. No threads: the runner forks its workers."""

    def __init__(self, build, kinds, make_vars):
        self.build, self.vars = build, make_vars
        self.stages = [(t, k) for t, k in LATER_TARGETS if k in kinds]
        self.done = {}  # kind -> make's exit status
        self.p = None
        self.log = os.path.join(build, "tests", "later-build.log")
        os.makedirs(os.path.dirname(self.log), exist_ok=True)
        open(self.log, "w").close()
        self._next()

    def _next(self):
        if not self.stages:
            return
        target = self.stages[0][0]
        env = dict(os.environ)
        env.pop("MFLAGS", None)
        # make check's jobserver is not this make's (its descriptors are closed here): its own
        # -j, one job per CPU as the Makefile sets it; the command line's variables stay.
        env["MAKEFLAGS"] = " ".join(w for w in env.get("MAKEFLAGS", "").split()
                                    if not w.startswith(("-j", "--jobserver")))
        with open(self.log, "a") as log:
            log.write(f"# make {target}\n")
            log.flush()
            self.p = subprocess.Popen(
                ["make", "-C", ROOT, "--no-print-directory", f"OUT={self.build}", *self.vars,
                 target], stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                env=env, start_new_session=True,
                preexec_fn=idle_priority)

    def poll(self):
        while self.p and self.p.poll() is not None:
            _, kind = self.stages.pop(0)
            self.done[kind] = self.p.returncode
            self.p = None
            self._next()

    def ready(self, kind):
        """Whether a job of KIND may start (built, or its build failed: why_not says)."""
        self.poll()
        return kind not in [k for _, k in self.stages]

    def why_not(self, kind):
        """Why a job of KIND cannot run (its build failed), or None."""
        rc = self.done.get(kind, 0)
        if rc == 0:
            return None
        with open(self.log, errors="replace") as f:
            tail = f.read()[-1500:]
        return f"not built: make {dict((k, t) for t, k in LATER_TARGETS)[kind]} failed " \
            f"(exit {rc}; {self.log}):\n{tail}"

    def wait(self):
        """Until every build has ended: the seconds waited."""
        t0 = time.time()
        while self.p:
            self.p.wait()
            self.poll()
        return time.time() - t0

    def stop(self):
        if self.p and self.p.poll() is None:
            os.killpg(self.p.pid, signal.SIGKILL)
            self.p.wait()


# The builds left for later, when the run has some (main), and the run's -k.
LATER = None
PATTERN = None


# The lane of run_jobs' FUZZ jobs.
FUZZ_LANE = 2


def run_jobs(build, res, jobs, n, took, beside=(), fuzz=(), adapt=False):
    """Run JOBS, N at a time (ADAPT: more while the CPU is idle, Idle), and BESIDE them those,
    one at a time, two while the CPU is idle, and FUZZ, all at once (at idle priority:
    run_fuzzer); every result printed as it comes. (The tests run alone left 30% of the CPU
    idle beside one at a time: most of them wait, on workloads, sleeps, scrapes; a fresh
    clone's run, bench/RESULTS.md "make check time".)"""
    idle = Idle(n) if adapt else None
    lanes = [(list(jobs), idle or n), (list(beside), Idle(1) if beside else 1),
             (list(fuzz), max(1, len(fuzz)))]
    running = {}
    sel = selectors.DefaultSelector()
    try:
        loop(build, res, lanes, running, sel, took)
        if idle and jobs:
            res.note(f"# {idle.said()}")
    finally:
        for j in running.values():  # interrupted: no worker left behind
            j.p.kill()
            j.p.wait()


# BPFSIGHT_TEST_TIMELINE=1: a line when each job starts and ends, the seconds since the run's
# start first (where make check's time goes: bench/RESULTS.md, "make check time").
T0 = time.time()


def timeline(what, j):
    if os.environ.get("BPFSIGHT_TEST_TIMELINE"):
        print(f"# {time.time() - T0:7.1f} {what} lane {j.lane} {job_key(j.job)[:100]}",
              flush=True)


def loop(build, res, lanes, running, sel, took):
    while any(q for q, _ in lanes) or running:
        started = 0
        for lane, (queue, n) in enumerate(lanes):
            n = n.jobs() if isinstance(n, Idle) else n
            while queue and sum(j.lane == lane for j in running.values()) < n:
                # the first job whose binary is built (LaterBuild): the others wait for theirs
                k = next((k for k, job in enumerate(queue)
                          if not LATER or LATER.ready(job[0])), None)
                if k is None:
                    break
                # an exclusive job waits for the other lanes to empty (but for the fuzzers
                # running at idle priority, where it lets them run beside it); nothing starts
                # beside it
                if (queue[k] in EXCLUSIVE and
                        (any(q for i, (q, _) in enumerate(lanes) if i != lane) or
                         any(j.lane != lane and not (j.lane == FUZZ_LANE and
                                                     queue[k] in FUZZERS_BESIDE)
                             for j in running.values()))) or \
                        any(j.job in EXCLUSIVE for j in running.values()):
                    break
                job = queue.pop(k)
                why = LATER and LATER.why_not(job[0])
                if why:
                    res.fail(f"{job[0]}:{job[1] or 'every unit test'}", why)
                    continue
                if job == ("unit", None):  # built now: a job per binary, where it stood
                    queue[k:k] = unit_jobs(build, PATTERN)
                    continue
                if job[0] == "error":
                    res.fail("unit", job[1])
                    continue
                j = Job(build, job)
                j.lane = lane
                started += 1
                timeline("start", j)
                running[j.p.stdout.fileno()] = j
                sel.register(j.p.stdout, selectors.EVENT_READ, j)
        if not started and not any(j.lane != FUZZ_LANE for j in running.values()):
            # no test runs, and none could start (those left wait for a build, or for the
            # fuzzers): what runs at idle priority runs as they would
            for j in running.values():
                promote(j.p.pid)
            if LATER and LATER.p:
                promote(LATER.p.pid)
        if not running:
            time.sleep(0.1)  # every job left waits for its build (LaterBuild)
            continue
        # a second at most: an idle machine may take another job
        for key, _ in sel.select(timeout=1):
            j = key.data
            done, eof = j.lines()
            for line in done:
                handle(res, j, line)
            if eof:
                sel.unregister(j.p.stdout)
                del running[key.fd]
                _, status, ru = os.wait4(j.p.pid, 0)
                rc = j.p.returncode = os.waitstatus_to_exitcode(status)
                took[job_key(j.job)] = round(time.time() - j.t0, 1)
                timeline("end", j)
                CPU[job_key(j.job)] = round(ru.ru_utime + ru.ru_stime, 1)
                if rc != 0 or not j.reported:
                    res.fail(f"{j.job[0]}:{j.job[1].split(':')[0]}",
                             f"the job's process ended with status {rc} after "
                             f"{j.reported} results (see its output above)")


# The e2e modules whose jobs run alone get the runner's Prometheus server (start_prometheus).
PROM_MODULES = set()


def start_prometheus(alone):
    """A Prometheus server for the jobs that run alone and use one (their module's tests
    make a monitor_prom.Prometheus), started now, with the run: its first look for targets is
    5 s after its start (prom_server.py), a wait each of those jobs' first test would have in
    the lane that runs one job at a time. Only those jobs are handed it: another's monitors
    are scraped by nobody but their test. (prom_server, "PORT PID BASE LOG" for its ENV,
    stop()) or None."""
    for kind, what in alone:
        f = what.partition(":")[0]
        if kind == "e2e" and "Prometheus(" in open(os.path.join(MODULES, f)).read():
            PROM_MODULES.add(f)
    if E2E not in sys.path:
        sys.path.insert(0, E2E)  # its free_ports
    prom_server = load_module(os.path.join(E2E, "prom_server.py"))
    if not PROM_MODULES or not os.path.exists(prom_server.PROMETHEUS):
        return None
    port = prom_server.pick_scraped_port()
    p, base, log, stop = prom_server.start(port)
    return prom_server, f"{port} {p.pid} {base} {log}", stop


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("-k", dest="pattern", default=None, help="run tests whose name has this")
    ap.add_argument("-j", dest="jobs", type=int,
                    default=int(os.environ.get("BPFSIGHT_TEST_JOBS", "4")),
                    help="jobs at once (default 4, or BPFSIGHT_TEST_JOBS)")
    ap.add_argument("--fixed", action="store_true",
                    help="JOBS at once, never more (else more while the CPU is idle)")
    ap.add_argument("--no-unit", action="store_true")
    ap.add_argument("--no-fuzz", action="store_true")
    ap.add_argument("--no-e2e", action="store_true")
    ap.add_argument("--build-later", metavar="VARS", nargs="?", const="",
                    help="build the unit tests and fuzzers (make test-units, test-fuzzers, with "
                    "these make variables) at idle priority while the other tests run: make "
                    "check's way")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--e2e", default=E2E, help=argparse.SUPPRESS)
    args = ap.parse_args()
    global MODULES
    MODULES = os.path.abspath(args.e2e)
    os.chdir(ROOT)
    if args.worker:
        return worker(args.build, args.worker)
    res = Results()
    t0 = time.time()
    together, alone, beside, fuzz = plan(args.build, args)
    for m in PRELOAD:
        importlib.import_module(m)
    took = {}
    global LATER, PATTERN
    PATTERN = args.pattern
    if args.build_later is not None:
        LATER = LaterBuild(args.build, {j[0] for j in together + beside + fuzz},
                           args.build_later.split())
    prom = start_prometheus(alone)
    try:
        run_jobs(args.build, res, together, max(1, args.jobs), took, adapt=not args.fixed)
        # No compiler runs beside the tests run alone: a system-wide recording would examine
        # each of its processes (the fuzzers are built by now, most of the time).
        if LATER and (alone or beside or fuzz):
            waited = LATER.wait()
            if waited >= 1:
                res.note(f"# {waited:.0f} s waiting for the fuzzers' build")
        if alone or beside or fuzz:
            res.note(f"# {time.time() - t0:.0f} s; the tests that run alone"
                     + (" (and the fuzzers and file readers beside them):"
                        if beside or fuzz else ":"))
        if prom:
            os.environ[prom[0].ENV] = prom[1]
        run_jobs(args.build, res, alone, 1, took, beside, fuzz)
    finally:
        if prom:
            prom[2]()
        if LATER:
            LATER.stop()
    save_times(args.build, took)
    res.skip_summary()
    ncpu = int(os.environ.get("BPFSIGHT_TEST_CPU", "0"))
    if ncpu:
        print(f"# CPU: {sum(CPU.values()):.0f} s in all; the costliest jobs:")
        for k, v in sorted(CPU.items(), key=lambda kv: -kv[1])[:ncpu]:
            print(f"#   {v:7.1f} s  {k}")
        own = sum(o for o, _ in TEST_CPU.values())
        print(f"# e2e tests: {own:.0f} s in the tests' own Python, "
              f"{sum(k for _, k in TEST_CPU.values()):.0f} s in what they ran; the costliest:")
        for k, (o, c) in sorted(TEST_CPU.items(), key=lambda kv: -sum(kv[1]))[:ncpu]:
            print(f"#   {o + c:7.1f} s  (own {o:5.1f})  {k}")
    print(f"# {time.time() - t0:.0f} s" + (f"; failed: {', '.join(res.failures)}"
                                          if res.failures else ""))
    line = f"{res.passed} passed, {res.failed} failed"
    if res.skipped:
        line += f", {res.skipped} skipped"
    print(line)
    # A run that executed nothing is not a green run.
    return 1 if res.failed or res.passed == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
