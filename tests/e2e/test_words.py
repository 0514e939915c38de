"""What the commands say (issue 30's wrong or misleading words), each checked as a user meets
it: one line for a bad option with the one meant, --help's stacks default, -f, -d 0,
--trigger's families, a bare --listen port, report's own name in its errors, a truncated
file warned about once, a recording in progress said so, a flight recorder's ignored
SIGUSR1, an empty folded export refused, our own uretprobe syscalls not the application's,
and record's progress towards -d."""
import json
import os
import re
import signal
import subprocess
import sys

from free_ports import free_port

from helpers import (BPFSIGHT, Recorder, check, dump, eq, need_root, record, run, spawn, stats,
                     tmpdir, wait_for, workload)

# For tests/run_tests.py: about how long these tests take on CI's machine (its order).
SECONDS = 20

sys.path.insert(0, os.path.dirname(__file__))
from test_gil import WORK, need_pyenv  # noqa: E402

SYSCALLS = workload("syscalls")


def one_line(p, what):
    eq(p.returncode, 1, f"{what}: exit status")
    lines = p.stderr.strip().splitlines()
    eq(len(lines), 1, f"{what}: one line, not the help: {p.stderr}")
    return lines[0]


def test_bad_options_one_line_with_the_one_meant():
    for cmd, bad, meant in (("record", "--stakcs", "--stacks"), ("stats", "--fromat", "--format"),
                            ("export", "--outptu", "--output"), ("info", "--jsno", "--json"),
                            ("dump", "--kindd", "--kind"), ("report", "--forse", "--force"),
                            ("monitor", "--lisen", "--listen"), ("shim", "--insatll", "--install")):
        # The next argument, were the option taken for another: somewhere harmless.
        line = one_line(run([BPFSIGHT, cmd, bad, os.path.join(tmpdir(), "x")]), f"{cmd} {bad}")
        eq(line, f"bpfsight {cmd}: unknown option '{bad}' (did you mean {meant}?); "
           f"bpfsight {cmd} --help lists the options", f"{cmd} {bad}")
    line = one_line(run([BPFSIGHT, "stats", "-r"]), "stats -r")
    check("-r needs a value (-r is --report)" in line, line)
    line = one_line(run([BPFSIGHT, "export", "x.bst", "-f"]), "export -f")
    check("-f needs a value (-f is --format)" in line, line)


def test_record_help_says_which_stacks_are_on_by_default():
    text = run([BPFSIGHT, "record", "--help"], check=True).stdout
    flat = " ".join(text.split())
    check("or none (the default)" not in flat, "the old wrong default")
    said = flat[flat.find('--stacks'):][:400]
    check(re.search(r"Default: (\w+,)*gil\b", flat), f"gil's stacks are on by default: {said}")
    check("(sched: with -p only, not -a, a command or --flight-recorder)" in flat,
          f"sched's on by default for a job's threads only: {said}")
    check(re.search(r"gil:50us", flat) and re.search(r"sched:1ms", flat), "thresholds listed")


def test_dash_f_means_format_and_is_deprecated_for_force():
    need_root()
    out = os.path.join(tmpdir(), "t.bst")
    open(out, "w").close()
    p = run([BPFSIGHT, "record", "-f", "-o", out, "-t", "osrt", "--", "true"])
    eq(p.returncode, 0, p.stderr)
    check("-f is deprecated here: spell it --force (-f is --format in stats and export)"
          in p.stderr, p.stderr)
    p = run([BPFSIGHT, "record", "--force", "-o", out, "-t", "osrt", "--", "true"])
    check("deprecated" not in p.stderr, p.stderr)
    p = run([BPFSIGHT, "stats", out, "-f", "json"], check=True)
    check("reports" in json.loads(p.stdout), "stats -f json")


def test_zero_duration_says_what_to_do():
    line = one_line(run([BPFSIGHT, "record", "-d", "0", "--", "true"]), "-d 0")
    eq(line, "bpfsight record: -d 0: a recording of no time records nothing; leave -d out to "
       "record until CMD or the -p processes exit, or Ctrl-C", "-d 0")
    check("bad duration" in one_line(run([BPFSIGHT, "record", "-d", "x", "--", "true"]), "-d x"),
          "a malformed one is still bad")


def test_trigger_lists_the_families():
    line = one_line(run([BPFSIGHT, "record", "--flight-recorder", "10s", "--trigger",
                         "gli:*>1ms", "--", "true"]), "--trigger gli")
    check("no family 'gli' (did you mean gil?); families: proc, osrt, sched, cpu, gil, cuda, "
          "nccl, gpu, nvtx" in line, line)


def test_report_errors_are_reports():
    junk = os.path.join(tmpdir(), "junk.bst")
    with open(junk, "wb") as f:
        f.write(b"not a trace at all\n" * 10)
    line = one_line(run([BPFSIGHT, "report", junk]), "report junk")
    eq(line, f"bpfsight report: {junk}: not a bpfsight trace (bad magic)", "report's own name")


def test_monitor_bare_port_is_this_machine():
    """--listen PORT is 127.0.0.1:PORT; :PORT every interface (as Prometheus's exporters)."""
    need_root()
    w = spawn(["sleep", "30"])
    for arg, host in (("{}", "127.0.0.1"), (":{}", "0.0.0.0")):
        port = free_port()
        p = run([BPFSIGHT, "monitor", "--listen", arg.format(port), "-t", "osrt", "-p",
                 str(w.pid), "-d", "1"], timeout=60)
        eq(p.returncode, 0, f"--listen {arg.format(port)}: {p.stderr[-300:]}")
        check(f"http://{host}:{port}/metrics" in p.stderr, p.stderr[-300:])


def known_trace():
    need_root()
    p, out = record([SYSCALLS, "300", "2"], "-t", "osrt", "--osrt-threshold", "0")
    eq(p.returncode, 0, p.stderr[-300:])
    return out


def test_truncated_file_said_once():
    out = known_trace()
    data = open(out, "rb").read()
    cut = os.path.join(tmpdir(), "cut.bst")
    with open(cut, "wb") as f:
        f.write(data[:len(data) - 40])  # the trailer and part of the footer
    p = run([BPFSIGHT, "info", cut])
    eq(p.returncode, 0, p.stderr)
    eq(p.stderr, "", "info says it in its output, not again on stderr")
    check(re.search(r"^truncated: +yes \(not closed cleanly", p.stdout, re.M), p.stdout)
    p = run([BPFSIGHT, "report", cut, "-o", os.path.join(tmpdir(), "r.html")])
    eq(p.returncode, 0, p.stderr)
    warns = [l for l in p.stderr.splitlines() if "not closed cleanly" in l]
    eq(len(warns), 1, f"report warns once: {p.stderr}")
    check(warns[0].startswith("bpfsight report: warning:"), warns[0])


def test_recording_in_progress_said_so():
    need_root()
    w = spawn(["sleep", "30"])
    r = Recorder("-t", "osrt", "-p", str(w.pid))
    r.wait_ready()
    r.flush()
    p = run([BPFSIGHT, "info", r.out], check=True)
    check(f"truncated:       no: a recording in progress (recorder pid {r.p.pid})" in p.stdout,
          p.stdout)
    eq(json.loads(run([BPFSIGHT, "info", "--json", r.out], check=True).stdout)["recorder_pid"],
       r.p.pid, "info --json")
    p = run([BPFSIGHT, "dump", r.out], check=True)
    check(f"is a recording in progress (recorder pid {r.p.pid})" in p.stderr, p.stderr)
    check("not closed cleanly" not in p.stderr, p.stderr)
    eq(r.stop(), 0, r.stderr[-300:])
    j = json.loads(run([BPFSIGHT, "info", "--json", r.out], check=True).stdout)
    check(j["clean_close"] and "recorder_pid" not in j, "once stopped: closed, no recorder")


def test_flight_recorder_says_an_ignored_sigusr1():
    need_root()
    w = spawn(["sleep", "30"])
    d = tmpdir()
    r = Recorder("-t", "osrt", "-p", str(w.pid), "--flight-recorder", "5s",
                 "--trigger-cooldown", "60s", out=os.path.join(d, "fr.bst"))
    r.wait_ready()
    r.p.send_signal(signal.SIGUSR1)
    wait_for(lambda: "flight recorder: wrote" in r.stderr, 30, "the first dump")
    for n in (1, 2):
        r.p.send_signal(signal.SIGUSR1)
        wait_for(lambda: f"(counted: {n} ignored so far)" in r.stderr, 30, f"ignored SIGUSR1 {n}")
    check("SIGUSR1 ignored: " in r.stderr and "--trigger-cooldown" in r.stderr, r.stderr)
    eq(r.stop(), 0, r.stderr[-300:])


def test_empty_folded_exports_refused():
    out = known_trace()
    for fmt, needs in (("folded-offcpu", "off-CPU intervals with a stack (record with -t "
                                          "sched --stacks=sched)"),
                       ("folded", "CPU samples (record with -t cpu)"),
                       ("svg", "CPU samples (record with -t cpu)"),
                       ("pprof", "CPU samples (record with -t cpu)")):
        dest = os.path.join(tmpdir(), "x.folded")
        line = one_line(run([BPFSIGHT, "export", out, "--format", fmt, "-o", dest]), fmt)
        eq(line, f"bpfsight export: {out} holds no {needs}: nothing to write to {dest}", fmt)
        check(not os.path.exists(dest), f"{fmt}: no empty file left")


def test_a_trace_without_events_is_refused_by_every_export_and_report():
    """A file with no event at all (here: its recorder killed before any record reached it)
    shows nothing: each export and report says so and exits 1, leaving no empty file."""
    out = os.path.join(tmpdir(), "empty.bst")
    p = subprocess.run([workload("bst_write"), "--no-close", out], input=b"", capture_output=True)
    eq(p.returncode, 0, p.stderr)
    for fmt in ("chrome", "perfetto", "sqlite"):
        dest = os.path.join(tmpdir(), "x." + fmt)
        p = run([BPFSIGHT, "export", out, "--format", fmt, "-o", dest])
        eq(p.returncode, 1, f"{fmt}: exit status ({p.stderr})")
        check(f"bpfsight export: {out} holds no events: nothing to write to {dest}"
              in p.stderr, f"{fmt}: {p.stderr}")
        check(not os.path.exists(dest), f"{fmt}: no empty file left")
    dest = os.path.join(tmpdir(), "x.html")
    p = run([BPFSIGHT, "report", out, "-o", dest])
    eq(p.returncode, 1, f"report: exit status ({p.stderr})")
    check(f"bpfsight report: {out} holds no events: nothing to report in {dest}" in p.stderr,
          p.stderr)
    check(not os.path.exists(dest), "report: no page left")


def test_our_uretprobes_are_not_the_applications_syscalls():
    """The gil family's return probes make the uretprobe syscall in the traced threads: osrt
    leaves it out (an older bpfsight counted ~100 here)."""
    need_root()
    py = need_pyenv()
    p, out = record([py, WORK, "cpu", "2", "0.5"], "-t", "osrt,gil", "--osrt-threshold", "0")
    eq(p.returncode, 0, p.stderr[-300:])
    check(sum(r["wait_count"] for r in stats(out, "gil_sum")["gil_sum"]) > 0,
          "the gil probes (and their return probes) ran")
    names = {e["name"] for e in dump(out) if e["kind"] == "syscall"}
    check("uretprobe" not in names and "futex" in names, f"syscalls recorded: {sorted(names)}")
    check(all(r["name"] != "uretprobe" for r in stats(out, "osrt_sum")["osrt_sum"]), "osrt_sum")
