"""top's function view (f, --functions): py-spy top's %Own, %Total, OwnTime, TotalTime per line
or function of the CPU samples of the traced processes. Batch frames are read 200 columns wide
($COLUMNS): no name is cut.

The workload's truth: tests/workloads/py_stacks.py's `paced` mode runs outer -> inner_a (7 ms)
/ inner_b (3 ms) of its thread's CPU time, then sleeps 20 ms (a third of a core), until its
stdin closes; it then prints the CPU time it spent in each, measured with time.thread_time.
The lines that burn it carry `# BURN_A` / `# BURN_B` markers. A share read from N samples is
known to within its binomial error, 2.6 points at 70% and 300 samples (2 s of the workload at
999 Hz; 4 points at half of it, a machine so loaded the workload runs half as often): 10 points
is a bound.
"""
import json
import os
import re

from helpers import BPFSIGHT, Skip, check, eq, need_root, record, run, spawn, stats, tmpdir
from test_gil import pyenv_python
from test_py_stacks import WORK, body_lines, marker_lines
from test_top import ENTER, Pty, wait_for

# For tests/run_tests.py: about how long these tests take on CI's machine (its order).
SECONDS = 30

RATE = "999"  # samples per second of CPU: 300 in 2 s of a workload that takes a sixth of a core
WIDE = dict(os.environ, COLUMNS="200")
ROW = re.compile(r"^\s*(\S+)\s+(\S+)(?:\s+(\S+)\s+(\S+))?  (\S+|\[.*\])(?: \((.+?)\))?$")


def frames(out):
    """Batch frames: each a list of its rows {"own", "total", "own_time", "total_time",
    "func", "where"} (numbers as text), with its title and totals lines."""
    got = []
    for f in out.split("\n\n"):
        lines = f.strip("\n").splitlines()
        if len(lines) < 3 or "%Own" not in lines[2]:
            continue
        rows = []
        for line in lines[3:]:
            m = ROW.match(line)
            check(m, f"not a row: {line!r}")
            rows.append(dict(zip(("own", "total", "own_time", "total_time", "func", "where"),
                                 m.groups())))
        got.append({"title": lines[0], "totals": lines[1], "rows": rows})
    return got


def pct(text):
    return 0.0 if text == "-" else float(text)


def paced(py):
    """The paced split under PY, and its pid."""
    if not py:
        raise Skip("no pyenv python")
    w = spawn([py, WORK, "paced", "20"])
    return w, int(w.stdout.readline().split()[1])  # "pid P tid T"


def truth(w):
    """The workload's own measurement, once its stdin closes: inner_a's and inner_b's share
    of their CPU time, in %."""
    w.stdin.close()
    t = json.loads(w.stdout.readline())
    w.wait(30)
    return {"inner_a": 100 * t["a"] / (t["a"] + t["b"]),
            "inner_b": 100 * t["b"] / (t["a"] + t["b"])}


def test_functions_own_share_matches_the_jobs_own_split():
    """top -b --functions -p on a paced Python split (pyenv's 3.11 and 3.12): in the last
    frame (the first has samples taken before the interpreter was read, without Python
    frames) each function's %Own (the sum of its lines' rows) is within 10 points of the share
    of its CPU time the job measured itself; every row of inner_a and inner_b names
    py_stacks.py and one of its lines, most of its %Own at the lines that burn its CPU; outer, which only times them, is on nearly
    every stack (%Total) and runs little itself (%Own); the title says the view."""
    need_root()
    for minor in (11, 12):
        w, pid = paced(pyenv_python(minor))
        try:
            p = run([BPFSIGHT, "top", "-b", "--functions", "--sample-rate", RATE, "-i", "2s",
                     "-n", "2", "-p", str(pid)], timeout=120, env=WIDE)
            got = truth(w)
        finally:
            w.kill()
        eq(p.returncode, 0, f"3.{minor}: exit status: {p.stderr[-400:]}")
        fr = frames(p.stdout)
        eq(len(fr), 2, f"3.{minor}: frames: {p.stdout[-800:]}")
        last = fr[-1]
        check(last["title"].startswith(f"top - pid {pid} - functions by line - sort %Own"),
              last["title"])
        samples = int(re.match(r"(\d+) samples", last["totals"]).group(1))
        check(samples >= 100, f"3.{minor}: {samples} samples in the last 2 s: {last['totals']}")
        lines = {"inner_a": marker_lines("BURN_A"), "inner_b": marker_lines("BURN_B")}
        for func, want in got.items():
            rows = [r for r in last["rows"] if r["func"] == func]
            check(rows, f"3.{minor}: no row of {func}: {p.stdout[-1500:]}")
            own = sum(pct(r["own"]) for r in rows)
            check(abs(own - want) <= 10, f"3.{minor}: {func}'s %Own {own:.1f} against the "
                  f"job's own {want:.1f}: {last['rows'][:6]}")
            burning = 0
            for r in rows:
                file, _, line = r["where"].partition(":")
                eq(file, "py_stacks.py", f"3.{minor}: {func}'s file")
                check(int(line) in body_lines(func), f"3.{minor}: {func} at line {line}")
                burning += pct(r["own"]) if int(line) in lines[func] else 0
            # Its loop's lines, not the calls that time it.
            check(burning >= 0.8 * own, f"3.{minor}: {func}'s {own:.1f}%: {burning:.1f} at "
                  f"its burning lines {sorted(lines[func])}: {rows}")
        # outer's own lines only time the calls; it is on (nearly) every stack.
        outer = [r for r in last["rows"] if r["func"] == "outer"]
        check(sum(pct(r["own"]) for r in outer) <= 10 and
              sum(pct(r["total"]) for r in outer) >= 90, f"3.{minor}: outer's rows: {outer}")


def test_f_key_switches_views_and_l_groups_by_function():
    """top -p in a terminal: f shows the function view (its heading, its keys on the last
    line), l groups lines into functions ("inner_a (py_stacks.py)"), 3 sorts by OwnTime, ?
    lists the view's keys, f goes back to the processes, q quits with status 0."""
    need_root()
    w, pid = paced(pyenv_python(12))
    t = Pty([BPFSIGHT, "top", "-i", "500ms", "-p", str(pid)])
    try:
        wait_for(lambda: ENTER in t.text(), 30, "the alternate screen")

        def shows(pred):
            return lambda: any(pred(f) for f in t.frames()[-2:])
        wait_for(shows(lambda f: any("ID NAME" in l for l in f)), 30, "the process view")
        t.key(b"f")
        wait_for(shows(lambda f: any(re.search(r"inner_a \(py_stacks\.py:\d+\)", l)
                                     for l in f)), 30, "the function view by line")
        t.key(b"l")
        wait_for(shows(lambda f: any(l.endswith("inner_a (py_stacks.py)") for l in f) and
                       "functions by function" in f[0]), 30, "the function view by function")
        t.key(b"3")
        wait_for(shows(lambda f: "sort OwnTime" in f[0]), 10, "sorted by OwnTime")
        t.key(b"?")
        wait_for(shows(lambda f: any(l.startswith("l           a row per line") for l in f)),
                 10, "the function view's help")
        t.key(b"x")  # any key leaves the help
        t.key(b"f")
        wait_for(shows(lambda f: any("ID NAME" in l for l in f)), 10, "back to the processes")
        t.key(b"q")
        eq(t.wait(30), 0, "exit status after q")
    finally:
        t.kill()
        w.kill()


def test_replayed_recording_times_use_its_sample_rate():
    """top --functions FILE on a recording taken at 499 Hz: one frame over the whole file,
    whose TotalTime of main is its samples (stats -r cpu_sum --python's) at 1/499 s each;
    a recording without samples says so."""
    need_root()
    py = pyenv_python(12)
    if not py:
        raise Skip("no pyenv python")
    p, out = record([py, WORK, "split", "0.5"], "-t", "cpu", "--sample-rate", "499")
    eq(p.returncode, 0, p.stderr[-400:])
    r = run([BPFSIGHT, "top", "--functions", "-s", "total-time", "-i", "1h", out], env=WIDE)
    eq(r.returncode, 0, r.stderr[-400:])
    fr = frames(r.stdout)
    eq(len(fr), 1, f"one frame: {r.stdout[-600:]}")
    # Rows are per line: main is on every sample's stack at one line or another (the call
    # it was in), so its rows' TotalTimes add up to its samples.
    main = [x for x in fr[0]["rows"] if x["func"] == "main"]
    check(main, f"main's rows: {fr[0]['rows'][:5]}")
    want = sum(x["total_samples"] for x in stats(out, "cpu_sum")["cpu_sum"]
               if x["func"] == "main")
    got_ms = 0
    for row in main:
        m = re.fullmatch(r"([\d.]+)(ms|s)", row["total_time"])
        check(m, row["total_time"])
        got_ms += float(m.group(1)) * (1000 if m.group(2) == "s" else 1)
    check(abs(got_ms - want * 1000 / 499) <= 10 * len(main),
          f"main's TotalTime {[x['total_time'] for x in main]} for {want} samples at 499 Hz")
    p, out = record(["true"], "-t", "sched")
    r = run([BPFSIGHT, "top", "--functions", out])
    eq(r.returncode, 0, r.stderr[-400:])
    check("no CPU samples yet (the recording took none)" in r.stdout, r.stdout[-400:])


def test_functions_refuses_bad_sort_and_rate():
    """--functions with a process view's --sort key, a bad --sample-rate: exit status 1 and
    what to use, before anything is drawn."""
    p = run([BPFSIGHT, "top", "--functions", "-s", "cpu", "-p", str(os.getpid())])
    eq(p.returncode, 1, "bad --sort: exit status")
    check("bad --sort 'cpu' for --functions: use one of own, total, own-time, total-time"
          in p.stderr, p.stderr)
    eq(p.stdout, "", "nothing drawn")
    p = run([BPFSIGHT, "top", "--sample-rate", "0", "-p", str(os.getpid())])
    eq(p.returncode, 1, "bad --sample-rate: exit status")
    check("bad --sample-rate '0'" in p.stderr, p.stderr)
    eq(p.stdout, "", "nothing drawn")
