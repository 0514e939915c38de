"""bpfsight monitor across a job's restarts, as an SRE runs it with a real Prometheus scraping it:
the job's series keep their job_name and role labels and go on from one process to the next,
exited one-shot processes hold no --top slot, and `monitor -p` serves the last interval for
--exit-grace after its target exits (and with --follow records the job's restart).

The job is tests/workloads/gil_work.py in mode cpu with --hold-start, whose threads each wait for
the GIL at least once per run; its job label comes from MASTER_ADDR:MASTER_PORT, its role from
RANK, as torchrun sets them.
"""
import json
import os
import re
import signal
import subprocess
import time

from helpers import Skip, alone, check, eq, need_root, spawn, tell, wait_for
from monitor_prom import Monitor, Prometheus
from pymods import has
from test_gil import WORK, need_pyenv

# For tests/run_tests.py: about how long these tests take on CI's machine (its order).
SECONDS = 55

RUNS = 4  # the job's first run and 3 restarts
TORCH_JOB = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "workloads",
                         "torch_input_bound.py")
ONE_SHOTS = 50


def job_env(port):
    """The environment torchrun gives rank 0 of a job: its label is 127.0.0.1:PORT, rank 0."""
    return dict(os.environ, MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK="0")


def run_job(py, env, *opts):
    """One run of the job, started and waiting for "go" (its pid printed once it is ready)."""
    w = spawn([py, WORK, "--go", "--name", "main", *opts, "--hold-start", "30", "cpu", "2",
               "0.2"], env=env)
    return w, int(w.stdout.readline().split()[1])


def finish(w):
    tell(w, "go")
    w.stdout.read()
    eq(w.wait(60), 0, "the job's exit status")


def one_shots(py, n):
    """N one-shot processes, one after the other: short pythons (the monitor finds each one's
    interpreter: a series of its own while it lives), sleep, cat."""
    for i in range(n):
        args = ([py, "-c", "import time; time.sleep(0.03)"] if i % 5 < 3 else
                ["sleep", "0.01"] if i % 5 == 3 else ["cat", "/dev/null"])
        eq(subprocess.run(args, timeout=60).returncode, 0, f"{args}")


def series_of(prom, sel):
    """Every sample of the series matching SEL over the last 2 minutes, as (time, value, pid),
    in time order."""
    out = []
    for s in prom.query(f"{sel}[2m]"):
        out += [(float(t), float(v), s["metric"]["pid"]) for t, v in s["values"]]
    return sorted(out)


@alone("a system-wide monitor (-a): other tests' processes would be traced by it")
def test_monitor_job_restarts_keep_their_series():
    """The job restarted 3 times while 50 one-shot processes come and go before each start: in
    Prometheus its GIL waits are one non-decreasing series under the same job_name and role
    across the 4 pids, each run adding to it, and pid="other" gets none of them (the one-shot
    processes, exited, hold no slot of --top 20 through --exit-grace: 30 of them are pythons)."""
    need_root()
    py = need_pyenv()
    port = 20000 + os.getpid() % 10000
    job = f'job_name="127.0.0.1:{port}",role="rank 0"'
    waits = f"bpfsight_gil_waits_total{{{job}}}"
    other = 'sum(bpfsight_gil_waits_total{pid="other"}) or vector(0)'
    mon = Monitor("-a", "-t", "gil", "--top", "20", "--exit-grace", "60s")
    prom = Prometheus(mon.target)
    pids, last = [], 0
    for run in range(RUNS):
        one_shots(py, ONE_SHOTS // RUNS + (run < ONE_SHOTS % RUNS))
        w, pid = run_job(py, job_env(port))
        pids.append(pid)
        # Its series, from its start (found before its threads run): Prometheus has it.
        sel = f'bpfsight_gil_waits_total{{pid="{pid}",{job}}}'
        wait_for(lambda: prom.value(sel) is not None, 30, f"run {run}: {sel} in Prometheus")
        before = prom.value(other)
        check(prom.value(sel) == last, f"run {run} begins where run {run - 1} ended ({last}): "
              f"{prom.value(sel)}")
        finish(w)
        # The waits come as the exited threads' last snapshot, within a poll (1 s); a scrape a
        # poll after the exit has them all.
        exited = time.time()
        wait_for(lambda: (prom.value(f"timestamp({sel})") or 0) >= exited + 1.5, 30,
                 f"run {run}: a scrape after its last waits")
        now = prom.value(sel)
        check(now > last, f"run {run}: its waits add to the series ({last} -> {now})")
        eq(prom.value(other), before, f"run {run}: pid=\"other\" got none of its waits")
        last = now
    samples = series_of(prom, waits)
    eq(sorted({p for _, _, p in samples}), sorted(str(p) for p in pids),
       "one series per run, all under the job's job_name and role")
    values = [v for _, v, _ in samples]
    check(values == sorted(values), f"non-decreasing across the restarts: {samples[:40]}")
    eq(values[-1], last, "the last run's series holds every run's waits")
    check(prom.value('count(count_over_time(bpfsight_gil_waits_total'
                     '{job_name=~".*time.sleep.*"}[2m]))') or 0,
          "the one-shot pythons had series of their own while they lived")
    prom.stop()
    eq(mon.stop(), 0, f"exit status after SIGTERM ({mon.stderr[-400:]})")


def metric_of(text, pid, job):
    """The job's GIL waits served for PID in an exposition TEXT, or None."""
    m = re.search(rf'^bpfsight_gil_waits_total{{pid="{pid}",comm="main",{job}}} (\S+)$', text,
                  re.M)
    return float(m.group(1)) if m else None


def test_monitor_p_follows_a_restart_and_serves_the_grace():
    """monitor -p --follow: after its target exits it keeps serving its last values, then
    records the job's restart (the same command line and job label), whose waits go on in the
    series of the same job_name and role. Without --follow it serves the last interval during
    --exit-grace, then exits 0 by itself."""
    need_root()
    py = need_pyenv()
    port = 30000 + os.getpid() % 10000
    job = f'job_name="127.0.0.1:{port}",role="rank 0"'
    w, pid = run_job(py, job_env(port))
    mon = Monitor("-p", str(pid), "-t", "gil", "--follow", "--exit-grace", "60s")
    finish(w)
    wait_for(lambda: "the targets exited: serving" in mon.stderr, 30, "the grace's start")
    first = metric_of(mon.metrics(), pid, job)
    check(first and first > 0, f"the exited target's waits served: {mon.metrics()[-600:]}")
    w2, pid2 = run_job(py, job_env(port))
    wait_for(lambda: f"recording pid: {pid2}" in mon.stderr, 60, f"following pid {pid2}")
    finish(w2)
    wait_for(lambda: mon.stderr.count("the targets exited: serving") == 2, 30, "its exit")
    text = mon.metrics()
    now = metric_of(text, pid2, job)
    check(now and now > first, f"the restart goes on from {first}: {now} ({text[-600:]})")
    check(metric_of(text, pid, job) is None, "the first run's series ended at the restart")
    eq(mon.stop(signal.SIGTERM), 0, f"SIGTERM during the grace ({mon.stderr[-400:]})")

    w3, pid3 = run_job(py, job_env(port))
    mon = Monitor("-p", str(pid3), "-t", "gil", "--exit-grace", "3s")
    finish(w3)
    wait_for(lambda: "the targets exited: serving" in mon.stderr, 30, "the grace's start")
    served = metric_of(mon.metrics(), pid3, job)
    check(served and served > 0, f"the last interval served after the exit: {served}")
    eq(mon.p.wait(30), 0, f"its own exit after the grace ({mon.stderr[-400:]})")


@alone("a system-wide monitor (-a): other tests' processes would be traced by it")
def test_monitor_torch_trainer_restarts_keep_its_and_its_workers_series():
    """A real torch trainer (Debian's python3-torch, tests/workloads/torch_input_bound.py: two
    DataLoader worker processes) started 4 times as torchrun starts rank 0: in Prometheus the
    trainer's reads are one non-decreasing series under job_name MASTER_ADDR:MASTER_PORT and
    role "rank 0" across its 4 pids, and each of its workers' under "rank 0 worker K" across
    theirs (torch 1.x names its workers nothing: `worker K` by fork order)."""
    need_root()
    if not has("/usr/bin/python3", "torch"):
        raise Skip("Debian's python3-torch is not installed (make deps)")
    port = 40000 + os.getpid() % 10000
    job = f'job_name="127.0.0.1:{port}"'
    roles = ("rank 0", "rank 0 worker 0", "rank 0 worker 1")
    # every process makes system calls: slots for the job's 3 and what runs beside (the
    # runner's builds, the fuzzers), whose exited ones never push out the job's (cap_dead)
    mon = Monitor("-a", "-t", "osrt", "--top", "60", "--exit-grace", "60s")
    prom = Prometheus(mon.target)
    pids = {r: [] for r in roles}
    last = dict.fromkeys(roles, 0)

    def sel(role, pid=None):
        who = f'pid="{pid}",' if pid else ""
        return f'bpfsight_syscalls_total{{{who}{job},role="{role}",syscall="read"}}'

    for run in range(RUNS):
        w = spawn(["/usr/bin/python3", TORCH_JOB, "--io-ms", "3", "--seconds", "60"],
                  env=job_env(port))
        first = json.loads(w.stdout.readline())
        for role, pid in zip(roles, [first["pid"], *first["workers"]]):
            pids[role].append(str(pid))
            wait_for(lambda: prom.value(sel(role, pid)) is not None, 60,
                     f"run {run}: {sel(role, pid)} in Prometheus")
            check(prom.value(sel(role, pid)) >= last[role],
                  f"run {run}: {role} goes on from {last[role]}: {prom.value(sel(role, pid))}")
        w.stdin.close()
        eq(w.wait(60), 0, "the trainer's exit status")
        exited = time.time()
        for role, pid in zip(roles, [first["pid"], *first["workers"]]):
            wait_for(lambda: (prom.value(f"timestamp({sel(role, pid)})") or 0) >= exited + 1.5,
                     30, f"run {run}: a scrape after {role}'s exit")
            now = prom.value(sel(role, pid))
            check(now > last[role], f"run {run}: {role}'s reads add to its series "
                                    f"({last[role]} -> {now})")
            last[role] = now
    for role in roles:
        samples = series_of(prom, sel(role))
        eq(sorted({p for _, _, p in samples}), sorted(pids[role]),
           f"{role}: one series per run, under the job's job_name and role")
        values = [v for _, v, _ in samples]
        check(values == sorted(values), f"{role}: non-decreasing across the restarts: "
                                        f"{samples[:40]}")
    prom.stop()
    eq(mon.stop(), 0, f"exit status after SIGTERM ({mon.stderr[-400:]})")
