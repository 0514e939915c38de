"""--python-functions from the first call, calls already running, and names never found.

Launch mode (issue 51): a script that calls its functions at once, as a script's main() called
right after its definitions does, is traced from the first call: tests/workloads/pyfunc/
pyfunc_at_once.py's main() calls f() 1,000 times as soon as it is defined, and the file holds
exactly 1,000 calls of f inside the one call of main, whose span holds what main() measured
of itself; two threads it starts right after `import threading` (before 3.12, the profile
function must be on them before the poller's next look) make every call of theirs. make check runs pyenv's 3.8, 3.10 (the C profile function), 3.12 and 3.13
(sys.monitoring); `make check-pyfunc-versions` every interpreter here (3.9, 3.11 and Debian's
stripped 3.11, 3.14 and 3.15 and 3.15's debug build too).

A name never found (issue 54): the same recording names __main__:trian_step; the recorder's
last lines, stats' pyfunc_not_found and info say why, with the name the job has.

A call already running when -p attaches (issue 54): tests/workloads/pyfunc/pyfunc_running.py's
main() runs the whole job. It is in the file once per recording, marked began_before, from
the moment tracing began (after the job's own clock says main began, before its first step)
to its return, or to the recording's end when it outlives the recording ("open"); the step
calls it makes meanwhile are exact (make check: Debian's 3.15 and pyenv's 3.10). A second
recorder joining the session of a first one while main() runs gets it once too.
"""
import collections
import json
import os
import re

from helpers import (BPFSIGHT, Recorder, Skip, check, dump, eq, info, record, row, run, spawn,
                     stats, tell, wait_for)
from test_pyfunc import ALL, interpreter, need_shim, newest_debian, readline

# For tests/run_tests.py: about how long these tests take on CI's machine (its order).
SECONDS = 20

HERE = os.path.join(os.path.dirname(__file__), "..", "workloads", "pyfunc")
# The shim's clock follows CLOCK_MONOTONIC to a fraction of a microsecond (docs/PYFUNC.md).
CLOCK_SLACK_NS = 50000


def calls_of(path):
    return [e for e in dump(path) if e["kind"] == "pyfunc_call"]


def check_at_once(which, why_too=False):
    need_shim()
    p, out = record([interpreter(which), os.path.join(HERE, "pyfunc_at_once.py")],
                    "-t", "pyfunc", "--python-functions",
                    "__main__:f,__main__:main,__main__:in_thread,__main__:trian_step")
    eq(p.returncode, 0, f"{which}: record ({p.stderr[-800:]})")
    job = json.loads(p.stdout.strip().splitlines()[-1])
    by = collections.defaultdict(list)
    for e in calls_of(out):
        by[e["name"]].append(e)
    eq(len(by["__main__:f"]), job["calls"], f"{which}: f's calls, made at once in launch mode")
    eq(len(by["__main__:main"]), 1, f"{which}: main(), called right after its definitions")
    threads = collections.Counter(e["tid"] for e in by["__main__:in_thread"])
    eq(sorted(threads.values()), [job["thread_calls"] // 2] * 2,
       f"{which}: two threads started right after `import threading`, every call")
    main = by["__main__:main"][0]
    began, ended = job["main"]
    check(main["ts"] <= began + CLOCK_SLACK_NS and
          main["ts"] + main["dur"] >= ended - CLOCK_SLACK_NS,
          f"{which}: main's call {main['ts']}+{main['dur']} holds what main() measured of "
          f"itself {job['main']}")
    inside = [e for e in by["__main__:f"] if e["args"]["depth"] == 1 and main["ts"] <= e["ts"]
              and e["ts"] + e["dur"] <= main["ts"] + main["dur"]]
    eq(len(inside), job["calls"], f"{which}: every f call inside main's, one deeper")
    check(not main["args"].get("began_before"), f"{which}: main began while traced: {main}")
    said = ("never found: __main__:trian_step: __main__ has no trian_step; "
            "did you mean train_step?")
    check(said in p.stderr, f"{which}: the recording's end says why: {p.stderr[-800:]}")
    if why_too:
        missing = stats(out, "pyfunc_not_found")["pyfunc_not_found"]
        eq(row(missing, function="__main__:trian_step")["why"],
           "__main__ has no trian_step; did you mean train_step?", "stats says why")
        eq([r["function"] for r in missing], ["__main__:trian_step"], "only the one never found")
        text = run([BPFSIGHT, "stats", out], check=True).stdout
        check("did you mean train_step?" in text, f"stats' tables say it: {text[-1500:]}")
        eq([r["function"] for r in info(out)["pyfunc_not_found"]], ["__main__:trian_step"],
           "info says it too")


def test_pyfunc_launch_calls_at_once():
    check_at_once("3.12", why_too=True)
    for which in ("3.8", "3.10", "3.13"):
        check_at_once(which)


def test_pyfunc_launch_calls_at_once_every_version():
    """make check-pyfunc-versions: the other interpreters here."""
    if not ALL:
        raise Skip("every interpreter: make check-pyfunc-versions")
    for which in ("3.9", "3.11", "debian3.11", "debian3.14", "debian3.15", "debian3.15d"):
        check_at_once(which)


def attach(pid, spec):
    rec = Recorder("-p", str(pid), "-t", "pyfunc", "--python-functions", spec, "--inject")
    rec.wait_ready()
    wait_for(lambda: re.search(r": 2 code objects traced$", rec.stderr, re.M), 30,
             f"the shim's hooks: {rec.stderr[-800:]}")
    return rec


def check_running(which, steps=(500, 300)):
    """Round 1 stops while main() still runs (its call "open"); round 2 sees it return."""
    need_shim()
    p = spawn([interpreter(which), os.path.join(HERE, "pyfunc_running.py")])
    first = readline(p)
    pid, began = first["pid"], first["began"]
    try:
        for round_, n in enumerate(steps, 1):
            rec = attach(pid, "__main__:main,__main__:step")
            tell(p, f"run {n}")
            ran = readline(p)
            if round_ < len(steps):
                eq(rec.stop(), 0, f"{which}: round {round_}: record ({rec.stderr[-800:]})")
            else:
                tell(p, "quit")
                returned = readline(p)["returned"]
                eq(rec.wait(60), 0, f"{which}: round {round_}: record ({rec.stderr[-800:]})")
            calls = calls_of(rec.out)
            steps_ = [e for e in calls if e["name"] == "__main__:step"]
            mains = [e for e in calls if e["name"] == "__main__:main"]
            eq(len(steps_), n, f"{which}: round {round_}: step's calls")
            eq(len(mains), 1, f"{which}: round {round_}: main, running all along: {mains}")
            main = mains[0]
            end = "open" if round_ < len(steps) else "return"
            eq((main["args"].get("began_before"), main["args"]["end"], main["args"]["depth"]),
               (True, end, 0), f"{which}: round {round_}: main began before the recording")
            first_step = min(e["ts"] for e in steps_)
            check(began < main["ts"] <= first_step,
                  f"{which}: round {round_}: main is timed from when tracing began "
                  f"({main['ts']}), after it was called ({began}), before its first step "
                  f"({first_step})")
            stop = main["ts"] + main["dur"]
            check(stop >= max(e["ts"] + e["dur"] for e in steps_) and
                  (end == "open" or stop <= returned + CLOCK_SLACK_NS),
                  f"{which}: round {round_}: main runs to its end ({stop}) past its steps, "
                  f"ran {ran}")
            check(all(e["args"]["depth"] == 1 for e in steps_),
                  f"{which}: round {round_}: the steps nest inside main")
            if round_ == 1:
                sums = stats(rec.out, "pyfunc_sum")["pyfunc_sum"]
                eq(row(sums, function="__main__:main")["began_before"], 1,
                   f"{which}: pyfunc_sum counts it")
    finally:
        if p.poll() is None:
            p.kill()
        p.wait(30)


def test_pyfunc_call_running_at_attach():
    """The C profile function on 3.10; sys.monitoring on the newest release under
    /opt/cpython (Debian's 3.15; pyenv's 3.12 is make check-pyfunc-versions' and
    test_pyfunc_second_recorder_joins_a_call_running's)."""
    check_running("3.10", steps=(500,))
    check_running(newest_debian())


def test_pyfunc_second_recorder_joins_a_call_running():
    """Recorder A attaches (-p) to a job whose main() runs, and the job makes 100 steps; B then
    attaches too, joining A's session (the shim's poller sees no detach between them: the
    same as a recording that follows another within one of its polls, which a loaded machine
    makes likely), and the job makes 300 more steps and returns. Each file holds main() once,
    returned, and its steps exactly: B's install found main() running again, which the job's
    thread already had open since A's (taken twice, one of them was left open: two calls,
    round 2 of test_pyfunc_call_running_at_attach under load)."""
    need_shim()
    p = spawn([interpreter("3.12"), os.path.join(HERE, "pyfunc_running.py")])
    pid = readline(p)["pid"]
    recs = []
    try:
        for n in (100, 300):
            recs.append(attach(pid, "__main__:main,__main__:step"))
            tell(p, f"run {n}")
            readline(p)
        tell(p, "quit")
        readline(p)
        for name, rec, steps in zip("AB", recs, (400, 300)):
            eq(rec.wait(60), 0, f"{name}: record ({rec.stderr[-800:]})")
            calls = calls_of(rec.out)
            mains = [(e["args"]["end"], e["args"].get("began_before")) for e in calls
                     if e["name"] == "__main__:main"]
            eq(mains, [("return", True)], f"{name}: main() once, returned")
            eq(sum(e["name"] == "__main__:step" for e in calls), steps, f"{name}: steps")
    finally:
        if p.poll() is None:
            p.kill()
        p.wait(30)


def test_pyfunc_call_running_at_attach_every_version():
    if not ALL:
        raise Skip("every interpreter: make check-pyfunc-versions")
    for which in ("3.8", "3.9", "3.11", "3.12", "3.13", "debian3.11", "debian3.14",
                  "debian3.15d"):
        check_running(which)
