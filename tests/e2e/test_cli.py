"""The CLI's contract: clear errors with a non-zero exit, exit statuses passed through."""
import os
import re
import time

from helpers import (BPFSIGHT, Recorder, alone, check, eq, info, need_root, record, run, spawn,
                     tmpdir, workload)
from synth import Trace

# For tests/run_tests.py: about how long these tests take on CI's machine (its order).
SECONDS = 20

SYSCALLS = workload("syscalls")


def test_exit_status_of_cmd_passed_through():
    need_root()
    p, _ = record([SYSCALLS, "--exit", "7", "0", "0"], "-t", "osrt")
    eq(p.returncode, 7, f"exit status ({p.stderr})")
    p, _ = record([SYSCALLS, "--kill-self", "0", "0"], "-t", "osrt")
    eq(p.returncode, 128 + 9, "killed CMD: 128 + SIGKILL")
    p, _ = record(["/nonexistent/cmd"], "-t", "osrt")
    eq(p.returncode, 127, "CMD not found: 127 like a shell")
    check("cannot run" in p.stderr, p.stderr)


def test_a_plain_recording_says_no_warning():
    """A recording on a machine that has all it needs warns of nothing: the defaults, each
    family alone, and stacks (cpu: unwind tables loaded). A recording without stacks once
    warned "unwind tables not loaded (Invalid argument)" on every run."""
    need_root()
    for opts in [[], ["-t", "osrt"], ["-t", "sched"], ["-t", "cuda,nccl"], ["-t", "gil"],
                 ["-t", "gpu,nvtx,torch"], ["-t", "cpu"], ["-t", "osrt", "--stacks", "osrt:0"]]:
        p, _ = record(["true"], *opts)
        eq(p.returncode, 0, f"{opts}: {p.stderr}")
        said = [ln for ln in p.stderr.splitlines()
                if "warning" in ln or "note:" in ln or "not loaded" in ln]
        eq(said, [], f"{opts}: what a plain recording said")


def test_unknown_family_lists_valid_ones():
    p = run([BPFSIGHT, "record", "-t", "osrt,bogus", "-o", os.path.join(tmpdir(), "x.bst"),
             "--", "true"])
    eq(p.returncode, 1, "exit status")
    check("unknown family 'bogus'" in p.stderr, p.stderr)
    check("osrt" in p.stderr and "sched" in p.stderr, f"valid families listed: {p.stderr}")
    # A typo gets the name meant, and the whole list.
    p = run([BPFSIGHT, "record", "-t", "gli", "--", "true"])
    eq(p.returncode, 1, "exit status")
    fams = run([BPFSIGHT, "__complete", "families"], check=True).stdout.split()
    check(re.search(r"unknown family 'gli' in -t \(did you mean gil\?\); valid families: (.*)",
                    p.stderr).group(1).strip() == ", ".join(fams), p.stderr)


def test_unknown_report_names_the_one_meant_and_lists_them_all():
    """A misspelt report gets "did you mean" and every report, the last one included (the list
    was cut at 512 bytes)."""
    path = os.path.join(tmpdir(), "r.bst")
    eq(run([BPFSIGHT, "record", "-t", "osrt", "-o", path, "--", "true"]).returncode, 0, "record")
    p = run([BPFSIGHT, "stats", path, "-r", "gil_sumx"])
    eq(p.returncode, 1, "exit status")
    reports = run([BPFSIGHT, "__complete", "reports"], check=True).stdout.split()
    m = re.search(r"unknown report 'gil_sumx'; did you mean gil_sum\? \(reports: (.*)\)$",
                  p.stderr.strip())
    check(m, p.stderr)
    eq(m.group(1).split(", "), reports, "every report listed")
    check(len(", ".join(reports)) > 512, "the list is longer than the old buffer")


def test_dead_pid_refused():
    w = spawn(["true"])
    w.wait()
    p = run([BPFSIGHT, "record", "-p", str(w.pid), "-o", os.path.join(tmpdir(), "x.bst")])
    eq(p.returncode, 1, "exit status")
    check("no such process" in p.stderr, p.stderr)
    p = run([BPFSIGHT, "record", "-p", "abc"])
    eq(p.returncode, 1, "non-numeric pid")


def test_bad_duration_and_options():
    for bad in ["abc", "-5", "10parsecs"]:
        p = run([BPFSIGHT, "record", "-d", bad, "-a"])
        eq(p.returncode, 1, f"-d {bad}")
        check("bad duration" in p.stderr, p.stderr)
    # -d 0 is not malformed: it says why it is refused (test_words.py).
    p = run([BPFSIGHT, "record", "-d", "0", "-a"])
    eq(p.returncode, 1, "-d 0")
    check("records nothing" in p.stderr, p.stderr)
    p = run([BPFSIGHT, "record", "--buffer-size", "3000", "-a"])
    eq(p.returncode, 1, "--buffer-size not a power of two")
    p = run([BPFSIGHT, "record"])
    eq(p.returncode, 1, "nothing to trace")
    check("nothing to trace" in p.stderr, p.stderr)
    p = run([BPFSIGHT, "frobnicate"])
    eq(p.returncode, 1, "unknown command")
    eq(p.stderr.splitlines()[:2], ["bpfsight: unknown command 'frobnicate'", ""],
       "said in the project's voice, then the usage")


def test_duration_not_a_finite_number_refused():
    """--duration nan was taken as 2^63 ns (its conversion to an integer is undefined) and
    recorded until CMD ended; nan, inf and a negative value are refused as malformed, one past
    2^64 ns as out of range, before anything is recorded."""
    out = os.path.join(tmpdir(), "x.bst")
    for bad, said in [("nan", "bad duration 'nan'"), ("inf", "bad duration 'inf'"),
                      ("-1", "bad duration '-1'"),
                      ("1e30s", "duration '1e30s' is out of range")]:
        p = run([BPFSIGHT, "record", "--duration", bad, "-o", out, "--", "true"])
        eq(p.returncode, 1, f"--duration {bad}: exit status ({p.stderr})")
        check(p.stderr.startswith(f"bpfsight record: {said}"), f"--duration {bad}: {p.stderr}")
        check(not os.path.exists(out), f"--duration {bad}: nothing recorded")


def test_merged_export_to_an_unusable_path_said():
    """A merged file's Chrome export is a directory of one file per rank: a path under a
    regular file cannot be one, said in the project's voice (it was perror's bare "PATH: Not a
    directory")."""
    d = tmpdir()
    ranks = []
    for r in range(2):
        t = Trace(families="proc,cublas")
        t.cublas_call(1, 1, 100_000, 1000, 6, args=(0x1, 0, 0, 8, 8, 8))
        ranks.append(t.write(d, name=f"rank{r}.bst"))
    merged = os.path.join(d, "job.bst")
    run([BPFSIGHT, "merge", "-o", merged, *ranks], check=True)
    open(os.path.join(d, "file"), "w").close()
    out = os.path.join(d, "file", "kineto")
    p = run([BPFSIGHT, "export", merged, "-f", "chrome", "-o", out])
    eq(p.returncode, 1, f"exit status ({p.stderr})")
    eq(p.stderr, f"bpfsight export: cannot use {out} for the ranks' files: Not a directory\n",
       "what it said")


def test_help_everywhere():
    for cmd in ["record", "info", "dump", "stats"]:
        p = run([BPFSIGHT, cmd, "--help"])
        eq(p.returncode, 0, f"{cmd} --help")
        check("usage:" in p.stdout.lower(), f"{cmd} --help prints usage")
    eq(run([BPFSIGHT, "--help"]).returncode, 0, "bpfsight --help")
    # record --help lists the families -t accepts: the same list as its error for a bad one,
    # each of which records
    helped = re.search(r"available: (.*)", run([BPFSIGHT, "record", "--help"]).stdout)
    check(helped, "record --help lists the families")
    bad = run([BPFSIGHT, "record", "-t", "bogus", "-o", os.path.join(tmpdir(), "x.bst"),
               "--", "true"])
    valid = re.search(r"valid families: (.*)", bad.stderr)
    check(valid, bad.stderr)
    eq(helped.group(1).strip().split(", "), valid.group(1).strip().split(", "), "families")


def test_not_root_is_refused_clearly():
    need_root()
    out = os.path.join(tmpdir(), "x.bst")
    p = run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--inh-caps=-all",
             BPFSIGHT, "record", "-o", out, "--", "true"])
    eq(p.returncode, 1, "exit status")
    check("needs root" in p.stderr and "CAP_BPF" in p.stderr, p.stderr)
    check(not os.path.exists(out), "no file left behind")
    # stacks says the same in one line, without libbpf's own lines about a refused load.
    p = run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--inh-caps=-all",
             BPFSIGHT, "stacks", "-p", str(os.getpid())])
    eq(p.returncode, 1, "stacks: exit status")
    eq(p.stderr.strip().splitlines(), ["bpfsight stacks: reading a process's stacks needs root "
                                       "(or CAP_BPF, CAP_PERFMON and CAP_SYS_PTRACE): run it "
                                       "with sudo"], "stacks as non-root")


def test_output_unwritable_or_existing():
    need_root()
    p = run([BPFSIGHT, "record", "-o", "/nonexistent-dir/x.bst", "--", "true"])
    eq(p.returncode, 1, "unwritable output")
    check("cannot create /nonexistent-dir/x.bst" in p.stderr, p.stderr)
    d = tmpdir()
    out = os.path.join(d, "x.bst")
    with open(out, "w") as f:
        f.write("precious")
    p = run([BPFSIGHT, "record", "-t", "osrt", "-o", out, "--", "true"])
    eq(p.returncode, 1, "existing output without --force")
    check("--force" in p.stderr, p.stderr)
    eq(open(out).read(), "precious", "existing file untouched")
    p = run([BPFSIGHT, "record", "-t", "osrt", "-f", "-o", out, "--", "true"])
    eq(p.returncode, 0, f"--force overwrites ({p.stderr})")
    eq(os.stat(out).st_mode & 0o777, 0o600, "trace created 0600")
    check(info(out)["clean_close"], "overwritten file is a trace")
    link = os.path.join(d, "link.bst")
    os.symlink(os.path.join(d, "target"), link)
    p = run([BPFSIGHT, "record", "-t", "osrt", "-f", "-o", link, "--", "true"])
    eq(p.returncode, 1, "symlink output refused even with --force")
    check(not os.path.exists(os.path.join(d, "target")), "symlink not followed")


@alone("a system-wide recording (-a): other tests' processes would be traced by it")
def test_duration_stops_system_wide_recording():
    need_root()
    out = os.path.join(tmpdir(), "d.bst")
    t0 = time.time()
    p = run([BPFSIGHT, "record", "-a", "-t", "osrt", "-d", "1s", "-o", out], timeout=60)
    took = time.time() - t0
    eq(p.returncode, 0, f"exit ({p.stderr})")
    check(1.0 <= took < 15, f"-d 1s took {took:.1f}s")
    meta = info(out)
    check(meta["clean_close"], "clean close")
    check(0.9e9 <= meta["duration_ns"] <= 15e9, f"duration {meta['duration_ns']}")


def test_duration_is_the_recordings_time():
    """-d is the time recorded: from the moment every probe is live (the "recording" line)
    to the stop, within 100 ms, whatever the start-up took (attaching every default family
    to a Python process takes a while): `info` says so."""
    need_root()
    w = spawn(["python3", "-c", "import time\nwhile True: time.sleep(0.01)"])
    for d, secs in (("1s", 1.0), ("1500ms", 1.5)):
        out = os.path.join(tmpdir(), "d.bst")
        t0 = time.monotonic()
        p = run([BPFSIGHT, "record", "-p", str(w.pid), "-d", d, "-o", out], timeout=120)
        took = time.monotonic() - t0
        eq(p.returncode, 0, f"exit ({p.stderr[-500:]})")
        dur = info(out)["duration_ns"] / 1e9
        check(secs <= dur <= secs + 0.1, f"-d {d}: the file holds {dur:.3f} s "
              f"(the command took {took:.2f} s)")
    # Launch mode: CMD is released as the recording starts, and stopped at its end.
    p, out = record(["sleep", "30"], "-t", "osrt", "-d", "500ms", timeout=60)
    dur = info(out)["duration_ns"] / 1e9
    check(0.5 <= dur <= 0.6, f"-d 500ms in launch mode: {dur:.3f} s")


def test_duration_in_launch_mode_terminates_cmd():
    need_root()
    # nsys semantics: when -d ends, CMD gets SIGTERM (--kill) and its status is returned.
    p, _ = record(["sleep", "30"], "-t", "osrt", "-d", "500ms", timeout=60)
    eq(p.returncode, 128 + 15, f"sleep terminated by SIGTERM ({p.stderr})")
    p, _ = record(["sleep", "1"], "-t", "osrt", "-d", "200ms", "--kill", "none", timeout=60)
    eq(p.returncode, 0, "--kill none waits for CMD")


def test_sigkilled_recorder_leaves_readable_file():
    need_root()
    w = spawn([SYSCALLS, "--wait-stdin", "0", "100000", "100"])  # 100k sleeps: ~10+ s
    w.stdout.readline()
    r = Recorder("-p", str(w.pid), "--osrt-threshold", "0")
    r.wait_ready()
    w.stdin.write("g")
    w.stdin.flush()
    time.sleep(3.5)  # chunks close every second
    r.p.kill()
    r.wait()
    meta = info(r.out)
    check(meta["truncated"], "info says the file was truncated")
    check(not meta["clean_close"], "no clean close")
    check(meta["chunks"] >= 2, f"complete chunks recovered: {meta['chunks']}")
    check(meta["events"].get("syscall", 0) > 1000, f"events recovered: {meta['events']}")
    p = run([BPFSIGHT, "stats", r.out, "--format", "json"])
    eq(p.returncode, 0, f"stats on a recovered file ({p.stderr})")
    check("not closed cleanly" in p.stderr, f"warning on stderr: {p.stderr}")


def test_reading_bad_files():
    d = tmpdir()
    empty = os.path.join(d, "empty.bst")
    open(empty, "w").close()
    junk = os.path.join(d, "junk.bst")
    with open(junk, "wb") as f:
        f.write(os.urandom(4096))
    for cmd in ["info", "dump", "stats"]:
        for path in [empty, junk, os.path.join(d, "missing.bst")]:
            p = run([BPFSIGHT, cmd, path])
            eq(p.returncode, 1, f"{cmd} {os.path.basename(path)}")
            check(os.path.basename(path) in p.stderr, f"error names the file: {p.stderr}")
    p = run([BPFSIGHT, "stats", empty, "-r", "nope"])
    eq(p.returncode, 1, "unknown report")
