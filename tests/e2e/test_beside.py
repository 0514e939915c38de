"""A recording harms no other process: its uprobes are in the traced processes only.

A uprobe is an int3 the kernel writes into a process's copy of the probed code. A program run
under a binary translator that reads its own code (Valgrind, QEMU's user mode, Pin, DynamoRIO)
takes it for the program's and dies of SIGTRAP (exit 133), and any other process pays a trap
per call. So each kind of recording of a job (tests/workloads/beside_job.py: ld.so, libc, a
Python, libcudart, libnccl and c10's allocator reporting, all probed) runs beside three such
programs, which must exit 0: `valgrind -q /bin/true`, `valgrind -q python3 -c 'import json'`
and `qemu-x86_64` running a CUDA program (its calls enter the libcudart the job's are probed
in). Beside them a twin of the job, the same program with the same libraries, not traced, must
have no code page written (/proc/PID/smaps), while the job has its probes (its pages written)
and its calls recorded exactly, those of a child it forks included.

Every uprobe link the recorder holds must also name a process of the job (its fdinfo's pid).

Other tracers on the machine may write into every process while a run goes on (a recording
under -a, bpftrace, an older bpfsight): a run beside one proves nothing, and is made again once
they are gone (touched.global_probes, watched during each run), for 3 minutes; a machine whose
tracers never leave that long gets the test's other checks and a Skip saying why. So is a run
whose twin had int3s that went while the recording still ran (touched.code_goes): a tracer's
probes being taken out after its descriptors closed, which nothing else shows (CI once found
the last 7 of libcudart's cuda sites in a twin so, with no tracer holding any)."""
import json
import os
import re
import shutil
import subprocess

import touched
from helpers import (BPFSIGHT, Recorder, Skip, alone, check, dump, eq, need_root, run, spawn,
                     tell, tmpdir, wait_for, workload)

# For tests/run_tests.py: about how long these tests take on CI's machine (its order).
SECONDS = 40

PY = "/usr/bin/python3"
JOB = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "workloads",
                   "beside_job.py")
CUDART = "/usr/local/cuda/lib64/libcudart.so.13"
NCCL = "/usr/local/cuda/lib64/libnccl.so.2"
C10 = workload("cuda/libfake_c10_cuda.so")
CUDA_PROGRAM = workload("cuda/cuda_api_shared")
STUB = workload("cuda/stubs/libcuda.so.1")
TRANSLATED = [["valgrind", "-q", "/bin/true"], ["valgrind", "-q", PY, "-c", "import json"],
              ["qemu-x86_64", CUDA_PROGRAM, "1"]]
N = 3  # calls of each function a "go" makes
# Files every recording of the job probes in it: ld.so's hook (new code), libc (gil's waits),
# libcudart (cuda), libnccl (nccl).
PROBED = ("/ld-linux", "/libc.so", "/libcudart", "/libnccl")


def need_all():
    need_root()
    for prog in ("valgrind", "qemu-x86_64"):
        if not shutil.which(prog):
            raise Skip(f"no {prog} (make deps: apt-get install valgrind qemu-user)")
    for p in (CUDART, NCCL):
        if not os.path.exists(p):
            raise Skip(f"no {p} (the CUDA toolkit)")
    for p in (C10, CUDA_PROGRAM):
        check(os.path.exists(p), f"{p} missing: make test-build")


class Job:
    """beside_job.py (ENV: its environment), its pid."""

    def __init__(self, env=None, cmd=()):
        self.p = spawn([*cmd, PY, JOB, CUDART, NCCL, C10], env=env)
        self.pid = json.loads(self.p.stdout.readline())["pid"]

    def ask(self, line):
        tell(self.p, line)
        return json.loads(self.p.stdout.readline())

    def end(self):
        tell(self.p, "exit")
        eq(self.p.wait(60), 0, "the job's exit")


def has_probes(pid, files=PROBED):
    """Wait until PID's code is written (its probes) in a mapping of each of FILES."""
    def written():
        paths = touched.written_code(pid)
        return all(any(f in p for p in paths) for f in files)
    wait_for(written, 60, f"pid {pid}'s probes in {files} (written: "
             f"{touched.written_code(pid) if os.path.exists(f'/proc/{pid}') else 'gone'})")


class Beside:
    """What ran beside a recording: the TRANSLATED programs exit 0 and the twin's code is its
    files'. A machine whose other tracers keep uprobes on every process gives no clean run:
    the test goes on with its other checks and says so at its end (done(): a Skip)."""

    def __init__(self):
        self.unproved = []

    def check(self, what, twin):
        def went(results, code):
            # this recording's probes stay in while it runs: int3s that go meanwhile were
            # another tracer's, being taken out
            if code and touched.code_goes(twin, 60):
                return f"the twin's int3s in {sorted(code)} went by themselves"
            return None

        results, twin_code = touched.run_untouched(
            TRANSLATED, what, lambda: touched.written_code(twin),
            lambda results, code: not code and all(rc == 0 for _, rc, _ in results), passing=went)
        if results is None:
            self.unproved.append(what)
            return
        eq(twin_code, {}, f"{what}: written code of the job's twin, not traced")
        for c, rc, (_, err) in results:
            eq(rc, 0, f"{what}: `{' '.join(c)}` beside it: {err[-800:]}")

    def done(self):
        if self.unproved:
            raise Skip(f"{', '.join(self.unproved)}: another tracer kept uprobes on every "
                       f"process meanwhile ({touched.global_probes()[:2]}): nothing ran beside "
                       "the recording alone (its own links were checked)")


def links_only_in(recorder, pids, what):
    """Every uprobe link RECORDER holds is limited to a process of PIDS (and it holds some)."""
    links = touched.own_links(recorder)
    check(links, f"{what}: no uprobe link")
    eq([l for l in links if l[1] not in pids], [], f"{what}: links not limited to {pids}")


def counts(out, pid):
    """{name: calls} of PID's cudaMalloc and ncclCommCount in the trace OUT (the calls: NCCL's
    NVTX ranges have the name too)."""
    got = {"cudaMalloc": 0, "ncclCommCount": 0}
    for name, kind in (("cudaMalloc", "cuda_api"), ("ncclCommCount", "nccl_api")):
        got[name] = sum(1 for e in dump(out, having=f'"kind":"{kind}","name":"{name}"'.encode())
                        if e["pid"] == pid and e["name"] == name)
    return got


def test_record_p_default_touches_only_the_job():
    """`record -p JOB`, its default families: probes in the job alone, its calls counted."""
    need_all()
    job, twin, beside = Job(), Job(), Beside()
    r = Recorder("-p", str(job.pid))
    r.wait_ready()
    has_probes(job.pid, PROBED)
    links_only_in(r.p.pid, {job.pid}, "record -p")
    beside.check("record -p", twin.pid)
    eq(job.ask(f"go {N}"), {"done": N}, "the job's calls")
    eq(r.stop(), 0, f"recorder exit: {r.stderr[-600:]}")
    eq(counts(r.out, job.pid), {"cudaMalloc": N, "ncclCommCount": N}, "the job's calls recorded")
    job.end()
    twin.end()
    beside.done()


def test_record_p_with_inject_touches_only_the_job():
    """`record -p JOB --inject`, its default families: the shim is injected into the job, and
    the shim's probes join the others in it alone."""
    need_all()
    check(os.path.exists(STUB), f"{STUB} missing: make test-build")
    # The toolkit's stub libcuda preloaded: the injected shim's CUPTI step runs (test_inject).
    job, twin, beside = Job(env=dict(os.environ, LD_PRELOAD=STUB)), Job(), Beside()
    r = Recorder("-p", str(job.pid), "--inject")
    r.wait_ready()
    wait_for(lambda: f"pid {job.pid}: the cupti-shim is loaded" in r.stderr, 60,
             f"the recorder finding the injected shim: {r.stderr[-600:]}")
    has_probes(job.pid, PROBED + ("/libbpfsight-shim",))
    links_only_in(r.p.pid, {job.pid}, "record -p --inject")
    beside.check("record -p --inject", twin.pid)
    eq(job.ask(f"go {N}"), {"done": N}, "the job's calls")
    eq(r.stop(), 0, f"recorder exit: {r.stderr[-600:]}")
    eq(counts(r.out, job.pid), {"cudaMalloc": N, "ncclCommCount": N}, "the job's calls recorded")
    job.end()
    twin.end()
    beside.done()


def test_record_p_cuda_nccl_gil_mem_touches_only_the_job():
    """`record -p JOB -t cuda,nccl,gil,mem`: c10's probes too. A child the job forks while
    recording gets the job's probes of its own, in it alone, and its calls are recorded."""
    need_all()
    job, twin, beside = Job(), Job(), Beside()
    r = Recorder("-p", str(job.pid), "-t", "cuda,nccl,gil,mem")
    r.wait_ready()
    has_probes(job.pid, PROBED + ("/libfake_c10_cuda",))
    beside.check("record -p -t cuda,nccl,gil,mem", twin.pid)
    child = job.ask(f"hold {N}")["child"]
    # -p does not hold a child: its probes are in once its fork's record is read.
    has_probes(child, PROBED + ("/libfake_c10_cuda",))
    links_only_in(r.p.pid, {job.pid, child}, "record -p -t cuda,nccl,gil,mem")
    eq(job.ask("release"), {"status": 0}, "the child's exit")
    eq(job.ask(f"go {N}"), {"done": N}, "the job's calls")
    eq(r.stop(), 0, f"recorder exit: {r.stderr[-600:]}")
    for pid in (job.pid, child):
        eq(counts(r.out, pid), {"cudaMalloc": N, "ncclCommCount": N}, f"pid {pid}'s calls")
    # its first moments ran unprobed: said, never silent
    check(re.search(r"note: 1 child process of the traced ones got its probes after it began "
                    r"to run \(at most \d+\.\d ms after its fork\)", r.stderr), r.stderr[-800:])
    job.end()
    twin.end()
    beside.done()


def test_launched_record_touches_only_the_job():
    """`record -- JOB`: a child it forks is held until its own probes are in, and calls at once:
    every call recorded, the child's too."""
    need_all()
    twin, beside = Job(), Beside()
    out = os.path.join(tmpdir(), "t.bst")
    job = Job(cmd=(BPFSIGHT, "record", "-o", out, "--"))
    has_probes(job.pid)
    links_only_in(job.p.pid, {job.pid}, "record -- JOB")
    beside.check("record -- JOB", twin.pid)
    child = job.ask(f"fork {N}")
    eq(child["status"], 0, "the child's exit")
    eq(job.ask(f"go {N}"), {"done": N}, "the job's calls")
    job.end()
    for pid in (job.pid, child["child"]):
        eq(counts(out, pid), {"cudaMalloc": N, "ncclCommCount": N}, f"pid {pid}'s calls")
    twin.end()
    beside.done()


def test_stacks_and_top_touch_nothing_beside():
    """`stacks -p JOB` and `top -p JOB`, each with the translated programs running beside it."""
    need_all()
    job, twin, beside = Job(), Job(), Beside()
    for what, args, says in (
            ("stacks -p", ["stacks", "-p", str(job.pid)], f"{job.pid}"),
            ("top -p", ["top", "-b", "-n", "3", "-i", "500ms", "-p", str(job.pid)],
             f"{job.pid}")):
        p = subprocess.Popen([BPFSIGHT, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True, errors="replace")
        beside.check(what, twin.pid)
        stdout, stderr = p.communicate(timeout=120)
        eq(p.returncode, 0, f"{what}: {stderr[-600:]}")
        check(says in stdout, f"{what} shows the job: {stdout[-600:]}")
    job.end()
    twin.end()
    beside.done()


@alone("a system-wide recording (-a): every other test's processes are traced by it")
def test_system_wide_leaves_the_excluded_untouched():
    """`record -a --exclude-comm valgrind --exclude-comm qemu-x86_64 --exclude-pid TWIN`: the
    programs named so (Valgrind's from its launcher's exec on, the tool it execs included) and
    the twin run untouched, while a process not left out, the job, has its probes."""
    need_all()
    job, twin, beside = Job(), Job(), Beside()
    r = Recorder("-a", "-t", "osrt,gil,cuda,nccl", "--exclude-comm", "valgrind",
                 "--exclude-comm", "qemu-x86_64", "--exclude-pid", str(twin.pid))
    r.wait_ready()
    has_probes(job.pid, ("/ld-linux", "/libcudart", "/libnccl"))
    # (a link of a process that exited says pid 0 until the exit is read: 3 s to go)
    links = touched.own_links(r.p.pid, settle=3)
    check(any(l[1] == job.pid for l in links), f"-a: the job's own links: {links[:5]}")
    eq([l for l in links if l[1] in (0, twin.pid)], [], "-a --exclude-*: links on every process "
       "or in the excluded twin")
    beside.check("record -a --exclude-*", twin.pid)
    eq(job.ask(f"go {N}"), {"done": N}, "the job's calls")
    eq(twin.ask(f"go {N}"), {"done": N}, "the twin's calls")
    eq(r.stop(), 0, f"recorder exit: {r.stderr[-600:]}")
    eq(counts(r.out, job.pid), {"cudaMalloc": N, "ncclCommCount": N}, "the job's calls recorded")
    eq(counts(r.out, twin.pid), {"cudaMalloc": 0, "ncclCommCount": 0}, "the twin left out")
    job.end()
    twin.end()
    beside.done()
