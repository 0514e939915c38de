"""Edges a hostile or unlucky user hits (issue 21, section 4): each is refused or explained,
with a non-zero exit and a message that says what is wrong; none leaves a half-made file."""
import glob
import os
import struct
import subprocess
import threading

from helpers import (BPFSIGHT, Recorder, Skip, check, eq, need_root, record, run, spawn,
                     tell, tmpdir, workload)

# For tests/run_tests.py: about how long these tests take on CI's machine (its order).
SECONDS = 4

SYSCALLS = workload("syscalls")


def refused(p, *words):
    """P failed with status 1 and its stderr holds every one of WORDS."""
    eq(p.returncode, 1, f"exit status (stderr: {p.stderr.strip()[-300:]})")
    for w in words:
        check(w in p.stderr, f"{w!r} not in {p.stderr.strip()[-400:]!r}")


def small_trace():
    p, out = record([SYSCALLS, "100", "0"], "-t", "osrt")
    eq(p.returncode, 0, f"record: {p.stderr[-300:]}")
    return out


def test_dump_offers_only_kinds_it_prints():
    """Metadata kinds (cumulative snapshots, strings, symbols) never become dump lines: they
    are not offered in --help, and asking for one says why."""
    out = small_trace()
    helptext = run([BPFSIGHT, "dump", "--help"], check=True).stdout
    offered = helptext.split("only these kinds (")[1].split(")")[0].split(", ")
    for meta in ("syscall_agg", "gil_agg", "gil_blame", "string", "symbol", "new_code",
                 "nvtx_begin"):
        check(meta not in offered, f"{meta} offered: {offered}")
        refused(run([BPFSIGHT, "dump", "--kind", meta, out]), "metadata kind", meta)
    for kind in ("syscall", "process", "thread", "exit"):
        check(kind in offered, f"{kind} not offered: {offered}")
    # The short calls of the workload are in syscall_agg records: still counted by osrt_sum.
    p = run([BPFSIGHT, "stats", out, "-r", "osrt_sum", "--format", "csv"], check=True)
    check(any(l.split(",")[-1] == "getppid" and l.split(",")[2] == "100"
              for l in p.stdout.splitlines()), p.stdout)


def test_launch_mode_ends_with_cmd_whatever_p_traces():
    """`-p 1 -- CMD` records pid 1 beside CMD and ends when CMD exits, with CMD's status."""
    need_root()
    out = os.path.join(tmpdir(), "t.bst")
    p = run([BPFSIGHT, "record", "-o", out, "-t", "osrt", "-p", "1", "--",
             "sh", "-c", "exit 7"], timeout=60)
    eq(p.returncode, 7, f"CMD's exit status: {p.stderr[-300:]}")
    check(os.path.getsize(out) > 0, "no trace")
    eq(run([BPFSIGHT, "info", out]).returncode, 0, "info of the trace")


# A job beside CMD: forks N children that exec a dynamic program (an exec and ld.so's
# link-map hook, where launch mode holds its command's processes), and waits for each with
# WUNTRACED, as a shell's job control does: a stop is seen.
FORKER = r"""
import os, sys
n = int(sys.argv[1])
print(os.getpid(), flush=True)
sys.stdin.readline()
stops = 0
for _ in range(n):
    pid = os.fork()
    if pid == 0:
        os.execv("/bin/true", ["/bin/true"])
    while True:
        _, st = os.waitpid(pid, os.WUNTRACED)
        if os.WIFSTOPPED(st):
            stops += 1
            os.kill(pid, 18)  # SIGCONT: the test goes on either way
            continue
        break
print("stopped", stops, "of", n, flush=True)
"""


def test_launch_mode_holds_only_its_commands_processes():
    """`-p JOB -- CMD` with a uprobe family: launch mode stops CMD's processes at new code
    until their probes are in (test_cuda, test_nccl, test_mem: their first calls), and never
    JOB's (nor -a's other processes): a process of JOB's that execs is not stopped (its
    parent's waitpid(WUNTRACED) would see it). So no SIGCONT of this recording can let go a
    process another recording holds (test_nccl's launch lost its first calls to `-p 1 --`)."""
    need_root()
    d = tmpdir()
    script, gate = os.path.join(d, "forker.py"), os.path.join(d, "gate")
    with open(script, "w") as f:
        f.write(FORKER)
    job = spawn(["python3", script, "20"])
    jpid = int(job.stdout.readline())
    rec = Recorder("-p", str(jpid), "-t", "nccl", "--", "sh", "-c",
                   f"while [ ! -e {gate} ]; do sleep 0.05; done; exit 3")
    try:
        rec.wait_ready()
        tell(job, "go")
        eq(job.stdout.readline().split(), ["stopped", "0", "of", "20"],
           f"the job's children held by a recording that did not launch them "
           f"({rec.stderr[-400:]})")
    finally:
        open(gate, "w").close()
    eq(rec.wait(60), 3, f"CMD's status: {rec.stderr[-400:]}")


def test_record_option_conflicts_are_refused():
    need_root()
    d = tmpdir()
    out = os.path.join(d, "t.bst")
    refused(run([BPFSIGHT, "record", "-o", out, "-a", "-p", "1", "-d", "1"]),
            "-a traces every process already")
    refused(run([BPFSIGHT, "record", "-o", out, "--capture-range=cudaProfilerApi",
                 "--capture-range=nvtx:step", "-t", "cuda,nvtx", "--", "true"]),
            "--capture-range given twice")
    # bpfsight itself: the shell execs into bpfsight, so $$ is the recorder's pid.
    refused(run(["sh", "-c", f'exec {BPFSIGHT} record -o {out} -p $$ -d 1']),
            "is bpfsight itself")
    check(not os.path.exists(out), "a refused recording left a file")


def test_p_of_a_zombie_says_it_has_exited():
    need_root()
    # sh forks a child that exits at once and is never reaped while sh sleeps.
    parent = spawn(["sh", "-c", "sleep 0 & exec sleep 30"])
    kids = []
    for _ in range(200):
        kids = [int(k) for k in open(f"/proc/{parent.pid}/task/{parent.pid}/children")
                .read().split()]
        if kids and open(f"/proc/{kids[0]}/stat").read().split(") ")[1][0] == "Z":
            break
        threading.Event().wait(0.05)
    check(kids, "no zombie child appeared")
    out = os.path.join(tmpdir(), "t.bst")
    refused(run([BPFSIGHT, "record", "-o", out, "-p", str(kids[0]), "-d", "1"]),
            f"process {kids[0]} has exited", "zombie")


def test_output_paths_that_are_not_files():
    need_root()
    d = tmpdir()
    link = os.path.join(d, "link.bst")
    os.symlink(os.path.join(d, "elsewhere.bst"), link)
    fifo = os.path.join(d, "fifo")
    os.mkfifo(fifo)
    cases = [(link, "is a symbolic link"), (d, "is a directory"),
             (fifo, "is not a regular file"), ("/dev/null", "is not a regular file")]
    for path, why in cases:
        for force in ([], ["-f"]):
            refused(run([BPFSIGHT, "record", *force, "-o", path, "-t", "osrt", "--", "true"]),
                    path, why)
    check(not os.path.exists(os.path.join(d, "elsewhere.bst")), "written through the link")


def test_sizes_and_durations_out_of_range():
    need_root()
    out = os.path.join(tmpdir(), "t.bst")
    refused(run([BPFSIGHT, "record", "-o", out, "--buffer-size", "4G", "--", "true"]),
            "too big", "at most 2G")
    refused(run([BPFSIGHT, "record", "-o", out, "-d", "99999999999", "--", "true"]),
            "out of range")
    check(not os.path.exists(out), "a refused recording left a file")


def test_stats_r_naming_nothing():
    out = small_trace()
    refused(run([BPFSIGHT, "stats", out, "-r", ",,,"]), "-r names no report", "osrt_sum")


def python_for_gil():
    for py in sorted(glob.glob("/root/.pyenv/versions/3.12.*/bin/python3")) + \
            ["/usr/bin/python3.11"]:
        if os.path.exists(py):
            return py
    raise Skip("no CPython here (pyenv 3.12 or Debian's python3.11)")


def test_info_from_a_pipe_is_the_info_of_the_file():
    """`cat t.bst | bpfsight info /dev/stdin`: the whole info, gil_procs table included, no
    error (info reads the stream once)."""
    need_root()
    py = python_for_gil()
    p, out = record([py, "-c", "import threading\n"
                     "ts = [threading.Thread(target=sum, args=(range(300000),)) "
                     "for i in range(3)]\n[t.start() for t in ts]\n[t.join() for t in ts]"],
                    "-t", "gil")
    eq(p.returncode, 0, f"record: {p.stderr[-300:]}")
    direct = run([BPFSIGHT, "info", out], check=True)
    check("(bpfsight stats -r gil_procs)" in direct.stdout,
          "no gil_procs table in info of the file")
    piped = run(["sh", "-c", f'cat "$1" | {BPFSIGHT} info /dev/stdin', "sh", out])
    eq(piped.returncode, 0, f"info of a pipe: {piped.stderr[-300:]}")
    eq(piped.stderr, "", "stderr of info of a pipe")
    eq(piped.stdout.replace("/dev/stdin", out, 1), direct.stdout, "info of a pipe")
    # A stream that is no trace: named as given, not as the copy.
    p = run([BPFSIGHT, "info", "/dev/null"])
    refused(p, "/dev/null: empty file")


def test_a_hole_after_the_header_is_skipped_not_read():
    """A header, a 50 GiB hole, then the chunks (a cut-off file extended later): the reader
    jumps over the hole (SEEK_DATA) instead of scanning 50 GiB of zeros, and finds the
    records after it. Bytes read (rchar) prove it, whatever the machine's speed."""
    out = small_trace()
    data = open(out, "rb").read()
    first = data.index(struct.pack("<I", 0x4b435342))  # the first chunk's magic
    holed = os.path.join(tmpdir(), "holed.bst")
    with open(holed, "wb") as f:
        f.write(data[:first])
        f.seek(first + (50 << 30))
        f.write(data[first:])
    p = subprocess.Popen([BPFSIGHT, "stats", holed, "-r", "osrt_sum", "--format", "csv"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out_s, err_s = p.stdout.read(), p.stderr.read()
    # Exited but not reaped (WNOWAIT): its /proc/PID/io still holds what it read.
    os.waitid(os.P_PID, p.pid, os.WEXITED | os.WNOWAIT)
    rchar = int(open(f"/proc/{p.pid}/io").read().split("rchar: ")[1].split()[0])
    p.wait()
    check(rchar < (64 << 20), f"read {rchar} bytes: the hole was scanned, not skipped")
    check(any(l.split(",")[-1] == "getppid" and l.split(",")[2] == "100"
              for l in out_s.splitlines()), f"the records after the hole: {out_s[-500:]}")
    check("skipped" in err_s, f"the damage is not reported: {err_s[-300:]}")
