"""A newcomer's first hour (issue 54): what README's and docs/USAGE.md's commands do for a user
who runs them as written: files they can read after sudo, nothing silent, no noise."""
import json
import os
import pwd
import shutil
import subprocess

import pymods
from helpers import BPFSIGHT, Skip, _procs, check, eq, need_root, run, tmpdir, workload

# For tests/run_tests.py: about how long these tests take on CI's machine (its order).
SECONDS = 10

SYSCALLS = workload("syscalls")


def as_user(uid, gid, args):
    """ARGS run as UID:GID with no other group (setpriv: what a shell of that user has)."""
    return run(["setpriv", f"--reuid={uid}", f"--regid={gid}", "--clear-groups", *args])


def test_files_written_under_sudo_belong_to_the_user_who_ran_it():
    """`sudo bpfsight record -o run.bst` then `bpfsight info run.bst`: sudo sets SUDO_UID and
    SUDO_GID; the trace, an export, a directory of rank files and the report page are that
    user's, who reads them without sudo. A root shell (no SUDO_UID) keeps root's files."""
    need_root()
    nobody = pwd.getpwnam("nobody")
    uid, gid = nobody.pw_uid, nobody.pw_gid
    d = tmpdir()
    os.chmod(d, 0o755)
    env = dict(os.environ, SUDO_UID=str(uid), SUDO_GID=str(gid), SUDO_USER="nobody")
    trace = os.path.join(d, "run.bst")
    p = run([BPFSIGHT, "record", "-t", "osrt", "-o", trace, "--", SYSCALLS, "3", "1", "1000"],
            env=env)
    eq(p.returncode, 0, f"record: {p.stderr[-600:]}")
    outs = {"trace": trace}
    for fmt, name in (("perfetto", "run.pftrace"), ("sqlite", "run.sqlite")):
        outs[fmt] = os.path.join(d, name)
        run([BPFSIGHT, "export", trace, "--format", fmt, "-o", outs[fmt]], env=env, check=True)
    outs["report"] = os.path.join(d, "run.html")
    run([BPFSIGHT, "report", trace, "-o", outs["report"]], env=env, check=True)
    for what, path in outs.items():
        st = os.stat(path)
        eq((st.st_uid, st.st_gid), (uid, gid), f"the {what}'s owner")
    # The trace stays private to that user: 0600.
    eq(os.stat(trace).st_mode & 0o777, 0o600, "the trace's mode")
    q = as_user(uid, gid, [BPFSIGHT, "info", trace])
    eq(q.returncode, 0, f"info as the user who ran sudo: {q.stderr[-400:]}")
    check("osrt" in q.stdout, f"info names the family: {q.stdout[-400:]}")
    # Root's own shell: root's file.
    own = os.path.join(d, "root.bst")
    env_root = {k: v for k, v in os.environ.items() if not k.startswith("SUDO_")}
    run([BPFSIGHT, "record", "-t", "osrt", "-o", own, "--", "/bin/true"], env=env_root,
        check=True)
    eq(os.stat(own).st_uid, 0, "a root shell's trace")


def test_a_launch_with_the_default_families_prints_no_libbpf_warning():
    """`record -- python3 script.py` with the default families: libbpf's feature probe, run
    after the seccomp filter refuses new programs, warned on every launch ("Detection of
    kernel BPF perf link support support failed: -1"). Only bpfsight's own lines; -v shows
    libbpf's."""
    need_root()
    py = shutil.which("python3")
    p = run([BPFSIGHT, "record", "-o", os.path.join(tmpdir(), "t.bst"), "--", py, "-c",
             "import time; time.sleep(0.2)"])
    eq(p.returncode, 0, f"record: {p.stderr[-600:]}")
    noise = [l for l in p.stderr.splitlines() if l.startswith("libbpf")]
    eq(noise, [], "libbpf's lines without -v")


def test_dry_run_on_a_process_without_cuda_says_why_it_lists_nothing():
    """`record -t cuda --dry-run -p PID` of a process that maps no CUDA library: "0 sites in 0
    objects" alone read as a failure; it says what was looked for and that a library loaded
    later is probed in a recording."""
    need_root()
    sleeper = subprocess.Popen(["sleep", "60"])
    _procs.append(sleeper)
    p = run([BPFSIGHT, "record", "-t", "cuda", "--dry-run", "-p", str(sleeper.pid)])
    eq(p.returncode, 0, f"dry-run: {p.stderr[-400:]}")
    check("0 sites in 0 objects" in p.stdout, f"the count: {p.stdout}")
    check("cuda: none of its" in p.stdout and "cudaLaunchKernel" in p.stdout,
          f"what was looked for: {p.stdout}")
    check("probed when it is loaded, in a recording" in p.stdout, f"what to do: {p.stdout}")


def test_a_loss_warns_above_the_reports_it_touches_only():
    """19 context switches lost (sched_missed) do not touch osrt_sum: no WARNING above it,
    a note on stderr (loss is never silent); above sched's report the WARNING names it."""
    from synth import Trace
    t = Trace("proc,osrt,sched")
    t.process(10, "train")
    t.syscall_agg(10, 10, 1000, 39, 5, 5000, 1000, 1000)  # 5 getpid
    t.loss(7, 19, 2000)  # BS_LOSS_SCHED
    path = t.write(tmpdir())
    p = run([BPFSIGHT, "stats", path, "-r", "osrt_sum"])
    eq(p.returncode, 0, f"stats: {p.stderr}")
    check("WARNING" not in p.stdout, f"no warning above osrt_sum: {p.stdout}")
    check("19 events were lost" in p.stderr and "do not read them" in p.stderr,
          f"a note on stderr: {p.stderr!r}")
    p = run([BPFSIGHT, "stats", path, "-r", "osrt_sum,sched_sum"])
    check("WARNING: 19 events were lost" in p.stdout and "sched_sum below undercounts" in p.stdout,
          f"the warning names sched_sum: {p.stdout}")
    check("osrt_sum below" not in p.stdout and "osrt_sum," not in p.stdout,
          f"and not osrt_sum: {p.stdout}")


def test_a_cpu_job_shows_no_gpu_columns_or_panel():
    """A CPU PyTorch job recorded with -t torch: torch_op_sum's Self GPU, GPU Total and GPU
    Ops, torch_step_sum's GPU Busy and the cupti-shim's counts are 0 on every row; the table
    leaves them out and says so once, --wide shows them, JSON keeps them (a schema does not
    change with the machine). The report page has neither those columns nor a GPU panel."""
    need_root()
    py = "/usr/bin/python3"
    if not pymods.has(py, "torch"):
        raise Skip(f"no torch for {py} (make deps installs python3-torch)")
    d = tmpdir()
    trace = os.path.join(d, "cpu.bst")
    here = os.path.dirname(os.path.abspath(__file__))
    train = os.path.join(here, "..", "workloads", "torch_train.py")
    p = run([BPFSIGHT, "record", "-t", "torch", "-o", trace, "--", py, train, "--steps", "5"])
    eq(p.returncode, 0, f"record: {p.stderr[-600:]}")
    reports = "torch_op_sum,torch_step_sum,shim_sum"
    text = run([BPFSIGHT, "stats", "-r", reports, trace], check=True).stdout
    for title in ("Self GPU", "GPU Total", "GPU Ops", "GPU Busy", "Kernels", "CUPTI Errors"):
        check(f"  {title}  " not in text.split("0 on every row")[0] and
              f"{title}  \n" not in text, f"no {title} column:\n{text}")
    eq(text.count("0 on every row, not shown:"), 3, f"said once per table:\n{text}")
    check("not shown: Self GPU, GPU Total, GPU Ops (--wide shows them)" in text,
          f"torch_op_sum names what it left out:\n{text}")
    wide = run([BPFSIGHT, "stats", "-r", "torch_op_sum", "--wide", trace], check=True).stdout
    check("Self GPU" in wide and "0 on every row" not in wide, f"--wide shows them:\n{wide}")
    js = json.loads(run([BPFSIGHT, "stats", "-r", "torch_op_sum", "--format", "json", trace],
                        check=True).stdout)
    rows = js["reports"]["torch_op_sum"]
    check(rows and all(r["gpu_self_ns"] == 0 and r["gpu_ops"] == 0 for r in rows),
          f"JSON keeps the GPU columns, 0: {rows[:1]}")
    page = os.path.join(d, "cpu.html")
    run([BPFSIGHT, "report", trace, "-o", page], check=True)
    html = open(page).read()
    check("tl-gpu" not in html and ">Self GPU<" not in html and ">GPU Busy<" not in html,
          "the page: no GPU panel, no GPU column")
    check("not shown: Self GPU, GPU Total, GPU Ops" in html, "the page says what it left out")
