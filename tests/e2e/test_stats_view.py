"""stats for people (issue 30): the verdict first, tables in human units fitting the width, the
first rows, filters by process and thread, cpu_sum's rows as people read them. On the real
traces of ../shared/traces (their verdicts are known: the GIL-bound GPT-2, the launch-bound
eager GPT-2, the CPU-bound Lightning fit) and on workloads whose truth is known."""
import functools
import glob
import json
import os
import re
import sys

from helpers import (BPFSIGHT, Skip, beside, check, dump, eq, need_root, record, row, run, stats,
                     workload)

# For tests/run_tests.py: about how long these tests take on CI's machine (its order).
SECONDS = 20

sys.path.insert(0, os.path.dirname(__file__))
from test_gil import WORK, need_pyenv, pyenv_python  # noqa: E402

TRACES = os.environ.get("BPFSIGHT_SHARED_TRACES",
                        os.path.join(os.path.dirname(__file__), "..", "..", "..", "shared",
                                     "traces"))
SYSCALLS = workload("syscalls")
# The verdict's headline each real trace must have (../shared/traces/README.md says why).
VERDICTS = {
    "gpt2-gil-bound.bst": "GIL-bound",
    "gpt2-eager-range.bst": "launch-bound",
    "job-attach-p.bst": "launch-bound",
    "lightning-all.bst": "CPU-bound",
}


def shared_traces():
    files = sorted(glob.glob(os.path.join(TRACES, "*.bst")))
    if not files:
        raise Skip(f"no shared traces in {TRACES}")
    return files


@functools.lru_cache(maxsize=None)
def stats_text(path, columns, *args):
    env = dict(os.environ, COLUMNS=str(columns))
    p = run([BPFSIGHT, "stats", path, *args], env=env, timeout=300)
    check(p.returncode == 0, f"stats {path}: {p.stderr[-300:]}")
    return p.stdout


def section(text, report):
    """REPORT's part of stats' output: its header to the next report's."""
    part = text[text.index(f"({report}):\n"):]
    return part[:part.index("\n** ")] if "\n** " in part else part


def verdict_of(text):
    """The verdict's lines: from "Verdict:" to the footnote's end (its blank line after)."""
    lines = text.splitlines()
    start = next(i for i, l in enumerate(lines) if l.startswith("Verdict:"))
    end = next(i for i in range(start, len(lines)) if lines[i].startswith("** "))
    return [l for l in lines[start:end] if l.strip()]


@beside("reads the real traces only")
def test_every_shared_trace_fits_the_width():
    """COLUMNS=100: no line of `stats` is wider (other widths: tests/unit/test_table_view.c),
    the verdict has at most 25 lines."""
    for path in shared_traces():
        text = stats_text(path, 100)
        wide = [l for l in text.splitlines() if len(l) > 100]
        eq(wide, [], f"{os.path.basename(path)}: lines over 100 columns")
        check(len(verdict_of(text)) <= 25, f"{path}: verdict of {len(verdict_of(text))} lines")


@beside("reads the real traces only")
def test_shared_traces_verdicts():
    """Each real trace's headline, and the report its first claim cites comes right after."""
    for path in shared_traces():
        name = os.path.basename(path)
        if name not in VERDICTS:
            continue
        text = stats_text(path, 100)
        verdict = verdict_of(text)
        check(verdict[0].startswith(f"Verdict: {VERDICTS[name]}:"), f"{name}: {verdict[0]}")
        cited = re.search(r"\(-r\s+([a-z_]+)", " ".join(verdict)).group(1)
        first = re.search(r"^\*\* .*\(([a-z_]+)\):$", text, re.M).group(1)
        eq(first, cited, f"{name}: the report after the verdict is the one it cites first")
    # GIL-bound: the number is gil_sum's, which names the thread; the holder, its code.
    path = os.path.join(TRACES, "gpt2-gil-bound.bst")
    text = " ".join(verdict_of(stats_text(path, 100)))
    main = row(stats(path, "gil_sum")["gil_sum"], tid=618)
    check(f"{main['contention_pct']:.1f}%" in text, f"gil_sum's {main['contention_pct']}: {text}")
    check("tid 666" in text and "train.py:71" in text, f"holder and its line: {text}")


def test_json_and_csv_stay_exact():
    """Machine formats have no verdict, whole names, ns and every row; --top cuts them only
    when given."""
    path = os.path.join(TRACES, "gpt2-gil-bound.bst")
    if not os.path.exists(path):
        raise Skip(f"no {path}")
    full = json.loads(stats_text(path, 100, "--format", "json"))["reports"]
    check("verdict" not in json.dumps(full)[:200], "no verdict in JSON")
    check(len(full["osrt_sum"]) > 15, "every osrt row")
    check(any(r["func"].startswith("[python3.12+0x") for r in full["cpu_sum"]),
          "JSON keeps a row per unnamed address")
    check(len([r for r in full["gil_sum"] if r["wait_count"] == 0]) > 10,
          "JSON keeps threads that never waited")
    top = json.loads(stats_text(path, 100, "--format", "json", "--top", "3"))["reports"]
    eq(top["osrt_sum"], full["osrt_sum"][:3], "--top 3 in JSON")


@beside("reads the real traces only")
def test_tables_for_people_on_a_real_trace():
    """Human units, file names, hidden empty rows, the first 15 rows, cpu_sum grouped by module
    with the unwind's stops said, not ranked."""
    path = os.path.join(TRACES, "gpt2-gil-bound.bst")
    if not os.path.exists(path):
        raise Skip(f"no {path}")
    text = stats_text(path, 200, "-r", "gil_sum,gil_stacks,cpu_sum,osrt_sum")
    gil = section(text, "gil_sum")
    check("32.8 s" in gil and "Wait Total " in gil and "(ns)" not in gil, gil)
    rows = [l for l in gil.splitlines() if re.match(r"\s+\d+\s+\d+\s", l)]
    check(rows and all(int(l.split()[3]) > 0 for l in rows), f"only threads that waited: {rows}")
    check(re.search(r"\d+ rows with nothing in them not shown", gil), gil)
    stacks = section(text, "gil_stacks")
    check("modeling_gpt2.py" in stacks and "/opt/torch" not in stacks, "paths as file names")
    cpu = section(text, "cpu_sum")
    check("[python3.12]" in cpu and "+0x" not in cpu, "unnamed code grouped per module")
    check("[unwind stopped" not in cpu and "native unwind stopped" in cpu,
          "the unwind's stops said under the table, not ranked")
    osrt = section(text, "osrt_sum")
    eq(len([l for l in osrt.splitlines() if re.match(r"\s+\d+\.\d\s", l)]), 15, "15 rows")
    check(re.search(r"\d+ more rows \(--top 0 shows all\)", osrt), osrt[-300:])
    check("uretprobe" not in osrt, "our own probes' syscalls are not the application's")
    check("uretprobe" in run([BPFSIGHT, "dump", "-k", "syscall", path], timeout=300).stdout,
          "the trace does hold them")


def known_syscalls(n=200, m=3):
    """A recording of exactly N getppid and M nanosleep(1 ms) calls, each one recorded."""
    need_root()
    p, out = record([SYSCALLS, str(n), str(m)], "-t", "osrt", "--osrt-threshold", "0")
    eq(p.returncode, 0, f"record: {p.stderr[-400:]}")
    pid = int(re.search(r"pid (\d+)", p.stdout).group(1))
    return out, pid


def table_rows(text, report):
    """The data rows of REPORT's table (they start with a number)."""
    return [l for l in section(text, report).splitlines()[4:]
            if re.match(r"\s+\d", l) and "more row" not in l and "not shown" not in l]


def test_units_top_and_filters_exact():
    out, pid = known_syscalls()
    js = stats(out, "osrt_sum")["osrt_sum"]
    eq(row(js, name="getppid")["count"], 200, "getppid calls")
    nano = row(js, name="nanosleep")
    env = dict(os.environ, COLUMNS="100")
    text = run([BPFSIGHT, "stats", out, "-r", "osrt_sum"], env=env, check=True).stdout
    line = next(l for l in table_rows(text, "osrt_sum") if l.endswith("nanosleep"))
    check(re.search(r"\b\d+(\.\d+)? ms\b", line), f"human units: {line}")
    check("Total Time (ns)" not in text and "Total Time" in text, "titles without (ns)")
    raw = run([BPFSIGHT, "stats", out, "-r", "osrt_sum", "--units", "ns"], env=env,
              check=True).stdout
    line = next(l for l in table_rows(raw, "osrt_sum") if l.endswith("nanosleep"))
    check(str(nano["total_ns"]) in line.split(), f"--units ns: exact {nano['total_ns']}: {line}")
    top = run([BPFSIGHT, "stats", out, "-r", "osrt_sum", "--top", "1"], env=env,
              check=True).stdout
    eq(len(table_rows(top, "osrt_sum")), 1, "--top 1")
    check(f"{len(js) - 1} more row" in top, top)
    p = run([BPFSIGHT, "stats", out, "-r", "osrt_sum", "--format", "json", "--top", "1"],
            check=True)
    eq(len(json.loads(p.stdout)["reports"]["osrt_sum"]), 1, "--top 1 in JSON")
    for opts, want in ((["--pid", str(pid)], 200), (["--tid", str(pid)], 200),
                       (["--comm", "syscalls"], 200), (["--comm", "bash,nope"], None),
                       (["--pid", "1"], None)):
        p = run([BPFSIGHT, "stats", out, "-r", "osrt_sum", "--format", "json", *opts],
                check=True)
        rows = json.loads(p.stdout)["reports"]["osrt_sum"]
        got = next((r["count"] for r in rows if r["name"] == "getppid"), None)
        eq(got, want, f"getppid with {opts}")


def test_gil_bound_two_threads_verdict():
    """Two CPU-bound Python threads: the verdict names them (the pool the two make, its critical
    unit) and its first two lines are their time on a CPU and their wait for the GIL, about
    half each on an idle machine of two CPUs (either may lead: their shares decide), the GIL's
    holding; every gil_sum row shown waited. On a machine other tests keep busy the time they
    waited for a CPU may be more: then that leads, the GIL's line among the next two."""
    need_root()
    py = need_pyenv()
    p, out = record([py, WORK, "cpu", "2", "1.5"], "-t", "gil,sched,osrt")
    eq(p.returncode, 0, f"record: {p.stderr[-400:]}")
    last = p.stderr.strip().splitlines()[-1]
    text = run([BPFSIGHT, "stats", out], env=dict(os.environ, COLUMNS="100"), check=True).stdout
    verdict = verdict_of(text)
    claims = [l for l in verdict if re.match(r" [ *] \S", l)]
    said = f"{last}\n" + "\n".join(verdict)
    # Launched: the main thread's own time is the interpreter's start and the threads' start
    # and join; where other tests took the CPUs through the start it waited for one longer
    # than the two threads ran (4.4 s against 1.5 s once), and leads, short of CPU.
    who = (r"(?:(?:GIL-bound|CPU-bound|short of CPU): cpu-0\.\.cpu-1 \(2 threads of pid \d+\)|"
           r"short of CPU: main \(main thread, pid \d+\) was ready to run)")
    check(re.match(rf"bpfsight record: verdict: {who}", last), f"the cpu threads named: {said}")
    check(re.match(rf"Verdict: {who}", verdict[0]), said)
    if "cpu-0..cpu-1" not in verdict[0]:
        return
    gil = [l for l in claims[:3] if re.match(r" \* GIL +(\d+\.\d)% ", l)]
    check(gil and float(re.match(r" \* GIL +(\d+\.\d)% ", gil[0]).group(1)) >= 20, said)
    for line in table_rows(text, "gil_sum"):
        check(int(line.split()[3]) > 0, f"a thread that never waited is shown: {line}")


def test_a_main_thread_joining_its_threads_waits_by_design():
    """A launched job whose main thread works first (--lead: a start as slow as a loaded
    machine makes it), then joins its two CPU-bound threads, recorded without stacks: its
    wait in join (a futex the exiting thread wakes) is waiting for its threads to finish, by
    design, named so (the waker known: sched_waking sees it also when the wakeup is queued to
    the sleeper's idle CPU), never the verdict's first line: the main thread leads by its own
    work, or its threads do."""
    need_root()
    py = need_pyenv()
    p, out = record([py, WORK, "--lead", "1.0", "cpu", "2", "1.5"], "-t", "gil,sched,osrt")
    eq(p.returncode, 0, f"record: {p.stderr[-400:]}")
    job = json.loads(p.stdout.strip().splitlines()[-1])
    last = p.stderr.strip().splitlines()[-1]
    check(re.match(r"bpfsight record: verdict: (?:CPU-bound|GIL-bound|short of CPU): "
                   r"(?:cpu-0\.\.cpu-1 \(2 threads|main \(main thread)", last), last)
    check("its threads' end" not in last, last)
    rows = [r for r in stats(out, "ledger")["ledger"]
            if r["unit"] == "thread" and r["tid"] == job["main_tid"]]
    join = [r for r in rows if r["what"] == "its threads' end (a join)" and r["kind"] == "lock"]
    said = "\n".join(f"{r['kind']} {r['what']} {r['time_ns']} idle={r['idle']}" for r in rows)
    check(join and all(r["idle"] for r in join), f"the join named, by design:\n{said}")
    joined = sum(r["time_ns"] for r in join)
    gil = sum(r["time_ns"] for r in rows if r["kind"] == "GIL")
    # the threads spin 1.5 s from the moment main sets them off and joins: main waits that
    # long, in join or for the GIL in between; never longer than its own mode's time
    check(joined + gil >= 1.45e9 and joined <= job["run_ns"],
          f"join {joined} ns, GIL {gil} ns, the job's run {job['run_ns']} ns:\n{said}")


def test_cpu_sum_for_people_and_python_only():
    """pyenv's CPython: no row per address, no unwind marker ranked, no _init (PLT stubs are
    FUNC@plt); --python: Python lines only, every sample's self time counted once."""
    need_root()
    py = pyenv_python(12) or need_pyenv()
    p, out = record([py, WORK, "cpu", "2", "1.0"], "-t", "cpu")
    eq(p.returncode, 0, f"record: {p.stderr[-400:]}")
    text = run([BPFSIGHT, "stats", out, "-r", "cpu_sum", "--top", "0"],
               env=dict(os.environ, COLUMNS="160"), check=True).stdout
    check("+0x" not in text and "[unwind stopped" not in text, text[:2000])
    full = stats(out, "cpu_sum")["cpu_sum"]
    check(not [r for r in full if r["func"] == "_init" and "libpython" in r["file"]],
          "no sample credited to _init")
    samples = len([e for e in dump(out) if e["kind"] == "cpu_sample"])
    p = run([BPFSIGHT, "stats", out, "-r", "cpu_sum", "--python", "--format", "json"],
            check=True)
    rows = json.loads(p.stdout)["reports"]["cpu_sum"]
    eq(sum(r["self_samples"] for r in rows), samples, "each sample's self once")
    for r in rows:
        check(r["func"] == "[no Python frame]" or r["line"] > 0 or
              r["func"].startswith("[python code "), f"a Python frame: {r}")
    check(any(r["func"] == "spin_until" and r["self_samples"] for r in rows),
          f"the workload's spin_until() runs: {rows[:5]}")
