"""The fault-bound verdict on a real job (docs/USAGE.md, "Verdict"): torchvision's resnet18 on
the CPU, whose steps glibc's heap hands back to the kernel and faults in again
(tests/workloads/fault_steps.py), attached with `record -p PID -t cpu,mem` as issue 61 asks.
The job measures its own truth: the same steps run beside it with MALLOC_MMAP_THRESHOLD_ and
MALLOC_TRIM_THRESHOLD_ at 4 GiB, on the same CPU, through the recording, and the CPU they save
in the recording's window is the share the verdict must give, within 10 points. The
thresholds the verdict suggests are then run too: they must remove the faults."""
import os
import re
import statistics
import threading
import time

import pymods
from helpers import BPFSIGHT, Skip, alone, check, eq, run, spawn, tell, tmpdir
from marked import PY, need_torch

# For tests/run_tests.py: about how long these tests take on CI's machine.
SECONDS = 36

HERE = os.path.dirname(os.path.abspath(__file__))
JOB = os.path.realpath(os.path.join(HERE, "..", "workloads", "fault_steps.py"))
RAISED = {"MALLOC_MMAP_THRESHOLD_": str(4 << 30), "MALLOC_TRIM_THRESHOLD_": str(4 << 30)}
# Both jobs run on this one CPU, time-sliced: the same CPU's speed at the same moment. On a CPU
# each, before the recording (this test before), the saving read 16-36% in runs whose verdict
# read 23-26%: this VM's two CPUs are not as fast as each other from minute to minute, and the
# raised job's step alone took 115-148 ms (bench/RESULTS.md, "fault-bound").
CPU = str(os.cpu_count() - 1)
# The recording, and its first seconds (the attach), whose steps are left out of the saving.
RECORD_S, ATTACH_S = 9, 2
# (Two jobs on one CPU run a step, ~0.2 s of CPU, in ~0.4 s each: ~17 steps each in the window.)
# Starts of the job tried for one that faults: 4 of 4 miss about once in 250.
START_TRIES = 4


class Job:
    """fault_steps.py running until told: its steps as (wall time, CPU ns, faults)."""

    def __init__(self, env=None):
        self.p = spawn(["taskset", "-c", CPU, PY, JOB], env=dict(os.environ, **(env or {})))
        line = self.p.stdout.readline()
        m = re.match(r"ready (\d+) (\d+)", line)
        check(m, f"the job's first line: {line!r}")
        self.pid, self.warm_faults = int(m.group(1)), int(m.group(2))
        self.steps = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.p.stdout:
            _, cpu, faults = line.split()
            self.steps.append((time.monotonic(), int(cpu), int(faults)))

    def stop(self):
        if self.p.poll() is None:
            tell(self.p, "stop")
        self.p.wait(60)


def median(steps, i):
    return statistics.median(s[i] for s in steps)


@alone("the saving it checks the verdict against is what faulting costs a step, which other "
       "tests' memory traffic changes: 17-22% under a memory-heavy load, 23-30% on a quiet one",
       exclusive=True)
def test_resnet18_cpu_step_is_fault_bound_by_what_the_thresholds_save():
    need_torch()
    if not pymods.has(PY, "torchvision"):
        raise Skip("Debian's python3-torchvision is not installed "
                   "(apt-get install python3-torchvision)")
    raised = Job(RAISED)
    # About one start in four lays its heap out so that the step faults nothing
    # (fault_steps.py): the job as it comes is the first start whose warm-up step faulted.
    for _ in range(START_TRIES):
        default = Job()
        if default.warm_faults > 5000:
            break
        default.stop()
    check(default.warm_faults > 5000, f"{START_TRIES} starts of the job, none faulted")
    try:
        path = os.path.join(tmpdir(), "faults.bst")
        start = time.monotonic()
        p = run([BPFSIGHT, "record", "-p", str(default.pid), "-t", "cpu,mem", "-d",
                 f"{RECORD_S}s", "-o", path], timeout=120)
        end = time.monotonic()
        eq(p.returncode, 0, p.stderr[-600:])
    finally:
        raised.stop()
        default.stop()
    # The steps that ended in the recording's window after its attach.
    base = [s for s in default.steps if start + ATTACH_S <= s[0] <= end]
    fixed_steps = [s for s in raised.steps if start + ATTACH_S <= s[0] <= end]
    check(len(base) >= 5 and len(fixed_steps) >= 5,
          f"steps in the recording: {len(base)} as it comes, {len(fixed_steps)} raised")
    check(median(base, 2) > 5000 and median(fixed_steps, 2) < 200,
          f"the effect this test is about: faults a step {median(base, 2)} as it comes, "
          f"{median(fixed_steps, 2)} with the thresholds raised")
    saving = 1 - median(fixed_steps, 1) / median(base, 1)
    out = run([BPFSIGHT, "stats", path, "--wide"], check=True).stdout
    # The verdict's first line (a warning of the events the stop left unread may come first).
    head = next((l for l in out.splitlines() if l.startswith("Verdict:")), out[:600])
    print(f"saving {saving:.3f}: {head}")
    m = re.match(rf"Verdict: fault-bound: python3 \(pid {default.pid}\) spent (\d+\.\d)% of "
                 r"its CPU in page faults \(\d+\.\d%\) and in calls that map and unmap memory "
                 r"\(\d+\.\d%\); it gave back and faulted in again \S+ \S+/s \(\d+ pages/s\): "
                 r"try MALLOC_MMAP_THRESHOLD_=(\d+) MALLOC_TRIM_THRESHOLD_=(\d+), or jemalloc "
                 r"or tcmalloc$", head)
    check(m, head)
    share = float(m.group(1)) / 100
    check(abs(share - saving) <= 0.10,
          f"the verdict's share {share:.3f} against the saving measured {saving:.3f} "
          f"(CPU a step: {[s[1] // 10**6 for s in base]} ms as it comes, "
          f"{[s[1] // 10**6 for s in fixed_steps]} ms raised)\n{head}")
    # The largest block is layer4's 3x3 conv weight's gradient, 512 * 512 * 9 floats (9 MiB):
    # the smallest power of two above it.
    eq(int(m.group(2)), 16 << 20, "the mmap threshold suggested")
    trim = int(m.group(3))
    check(trim >= 64 << 20 and trim & (trim - 1) == 0, f"the trim threshold suggested: {trim}")
    # The fix the verdict gives works: the same steps with its thresholds fault no more.
    fixed = run([PY, JOB, "4"], env=dict(os.environ, MALLOC_MMAP_THRESHOLD_=m.group(2),
                                         MALLOC_TRIM_THRESHOLD_=m.group(3)),
                timeout=240, check=True)
    faults = [int(l.split()[2]) for l in fixed.stdout.splitlines() if l.startswith("step ")]
    eq(len(faults), 4, fixed.stdout)
    check(statistics.median(faults) < 200, f"faults a step with the verdict's fix: {faults}")
