"""--python-functions on CPython 3.11 without a frame-evaluation hook: once every name is found,
each function object of a traced plain function gets a type of the shim's, a subtype of
function, whose vectorcall records the call (cupti-shim/shim_pyfunc_swap.c), and the hook
leaves the interpreter's slot, so the job's other calls run inlined again (any hook in the
slot stops that on 3.11). The job: tests/workloads/pyfunc/pyfunc_swap_job.py.

On pyenv's 3.11 and Debian's stripped /usr/bin/python3.11, launched and with -p --inject:
- every call counted exactly: plain calls on three threads, recursion, exceptions unwinding
  three frames, a method and its base's through super(), a bound method and a function
  through functools.partial, a reassigned __code__, __getitem__ through b[i]; a call whose
  arguments do not bind is none (no frame ran), as the hook counted it; with -p, the job's
  call sites specialized before the attach (CALL_PY_EXACT_ARGS, BINARY_SUBSCR_GETITEM) too;
- while swapped, a program sees the same function: pickle (every protocol) and copy/deepcopy
  give the function itself, its repr, type name, inspect.isfunction, signature, weakref,
  __dict__;
- the shim says which mechanism (shim_sum's python_functions, which `info` shows);
- after the recording, stopped or its recorder SIGKILLed, every function's type is exactly
  function again and the slot holds the default evaluator;
- a second function object of a swapped code object (the same def run again) is found by
  the poller's count of the code object's holders, said, and its calls counted from then.
Where the swap cannot be exact, the hook stays and says why: a generator among the names, a
nested function; a function not defined yet at the attach has the hook until its def has run,
then is swapped, every call counted once across the change.
"""
import collections
import json
import os
import select

from helpers import (BPFSIGHT, Recorder, Skip, check, dump, eq, need_root, row, run, spawn,
                     stats, tell, tmpdir, wait_for)
from test_pyfunc_eval import ask

SECONDS = 40

JOB = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "workloads", "pyfunc",
                   "pyfunc_swap_job.py")
PYENV = os.path.expanduser("~/.pyenv/versions")
MECHANISM = "each function's own calls"
NAMES = ["__main__:step", "__main__:boom", "__main__:rec", "__main__:Base.go", "__main__:Sub.go",
         "__main__:Box.__getitem__"]
SPEC = ",".join(NAMES)
EXPECTED = {"__main__:step": 11, "__main__:boom": 9, "__main__:rec": 10, "__main__:Base.go": 3,
            "__main__:Sub.go": 2, "__main__:Box.__getitem__": 5}


def interpreters():
    out = []
    for d in sorted(os.listdir(PYENV)) if os.path.isdir(PYENV) else ():
        if d.startswith("3.11."):
            out.append(os.path.join(PYENV, d, "bin", "python3"))
            break
    if os.path.exists("/usr/bin/python3.11"):
        out.append("/usr/bin/python3.11")
    if not out:
        raise Skip("no CPython 3.11 here")
    return out


def serve(py):
    """The job on PY, answering commands: (the process, its pid)."""
    p = spawn([py, JOB, "serve"])
    r, _, _ = select.select([p.stdout], [], [], 60)
    check(r, f"{py}: the job did not start")
    return p, json.loads(p.stdout.readline())["pid"]


def counts(out, pid):
    calls = [e for e in dump(out) if e["kind"] == "pyfunc_call" and e["pid"] == pid]
    return calls, dict(collections.Counter(e["name"] for e in calls))


def check_work(py, calls, by, pid):
    eq(by, EXPECTED, f"{py}: every call of each named function, once")
    ends = collections.Counter((e["name"], e["args"]["end"]) for e in calls)
    eq(ends[("__main__:boom", "unwind")], 9, f"{py}: boom's frames unwound by ValueError")
    eq(collections.Counter(e["args"]["depth"] for e in calls if e["name"] == "__main__:rec"),
       {0: 2, 1: 2, 2: 2, 3: 2, 4: 1, 5: 1}, f"{py}: rec's recursion depths")
    steps = collections.Counter(e["tid"] for e in calls if e["name"] == "__main__:step")
    eq(sorted(steps.values()), [3, 3, 5], f"{py}: step on the main thread and two others")
    eq(steps[pid], 5, f"{py}: the main thread's steps")
    base = [e for e in calls if e["name"] == "__main__:Base.go"]
    eq(sorted(e["args"]["depth"] for e in base), [0, 1, 1],
       f"{py}: Base.go twice inside Sub.go (super()), once alone")


def check_same(py, same):
    eq(same, {"pickle": [True] * 6, "pickle_method": True, "deepcopy": True, "copy": True,
              "deepcopy_in_dict": True, "repr": True, "type_name": "function",
              "type_qualname": "function", "type_doc": True, "isfunction": True,
              "isinstance": True,
              "signature": "(n)", "name": "step", "qualname": "Sub.go", "bound": True,
              "weakref": True, "dict": 7}, f"{py}: a traced function as a program sees it")


def said(out, pid):
    return row(stats(out, "shim_sum")["shim_sum"], pid=pid).get("python_functions", "")


def test_swap_launch_mode():
    need_root()
    for py in interpreters():
        out = os.path.join(tmpdir(), "launch.bst")
        p = run([BPFSIGHT, "record", "-o", out, "-t", "pyfunc", "--python-functions", SPEC,
                 "--", py, JOB, "launch"], timeout=180)
        got = json.loads(p.stdout.strip().splitlines()[-1])
        eq(got["state"], {"plain": {n: False for n in NAMES}, "slot": "default"},
           f"{py}: every named function swapped, no hook in the slot")
        check_same(py, got["same"])
        calls, by = counts(out, got["pid"])
        check_work(py, calls, by, got["pid"])
        check(MECHANISM in said(out, got["pid"]), f"{py}: the mechanism said: {p.stderr[-800:]}")


def attach(pid, spec=SPEC, note=f"{MECHANISM} (6 function objects"):
    rec = Recorder("-p", str(pid), "-t", "pyfunc", "--python-functions", spec, "--inject")
    rec.wait_ready()
    wait_for(lambda: note in rec.stderr, 30, f"the shim's note {note!r}: {rec.stderr[-1200:]}")
    return rec


def test_swap_inject_exact_and_restored():
    """-p --inject twice (stopped, then the recorder SIGKILLed): exact counts each time,
    and afterwards every type and the slot as they were."""
    need_root()
    for py in interpreters():
        p, pid = serve(py)
        try:
            plain = {"plain": {n: True for n in NAMES}, "slot": "default"}
            eq(ask(p, "state"), plain, f"{py}: plain functions before")
            # Call sites specialized before the swap (their caches hold the function's
            # version) deoptimize: the counts below hold for them.
            eq(ask(p, "warm"), {"specialized": ["BINARY_SUBSCR_GETITEM", "CALL_PY_EXACT_ARGS"]},
               f"{py}: the job's calls specialized before the recording")
            for round_ in (1, 2):
                rec = attach(pid)
                eq(ask(p, "state"), {"plain": {n: False for n in NAMES}, "slot": "default"},
                   f"{py}: round {round_}: swapped, no hook in the slot")
                check_same(py, ask(p, "same"))
                eq(ask(p, "run"), {"made": EXPECTED}, f"{py}: the job's run")
                if round_ == 1:
                    eq(rec.stop(), 0, f"{py}: record: {rec.stderr[-800:]}")
                    calls, by = counts(rec.out, pid)
                    check_work(py, calls, by, pid)
                    check(MECHANISM in said(rec.out, pid), f"{py}: the mechanism said")
                else:
                    rec.p.kill()
                    rec.wait(30)
                wait_for(lambda: ask(p, "state") == plain, 20,
                         f"{py}: round {round_}: every function plain again")
                check_same(py, ask(p, "same"))
        finally:
            tell(p, "quit")
            p.wait(30)


def test_swap_finds_a_function_made_later():
    """The same def run again (types.FunctionType of a swapped code object): the code
    object's holders outgrow what the shim counts, it looks and swaps the new one, says so;
    its calls from then on are counted."""
    need_root()
    for py in interpreters():
        p, pid = serve(py)
        try:
            rec = attach(pid, "__main__:step", f"{MECHANISM} (1 function objects")
            eq(ask(p, "clone"), {"clones": 1, "plain": True}, f"{py}: a new function of step")
            wait_for(lambda: "a new function object of step found" in rec.stderr, 30,
                     f"{py}: the new function found: {rec.stderr[-1200:]}")
            eq(ask(p, "run_clone 7"), {"plain": False}, f"{py}: the clone swapped")
            eq(rec.stop(), 0, f"{py}: record: {rec.stderr[-800:]}")
            _, by = counts(rec.out, pid)
            eq(by, {"__main__:step": 7}, f"{py}: the clone's calls")
            wait_for(lambda: ask(p, "run_clone 1") == {"plain": True}, 20,
                     f"{py}: the clone plain again")
        finally:
            tell(p, "quit")
            p.wait(30)


def launch_script(py, text, spec):
    """TEXT as a script run by PY under `record --python-functions SPEC`: (record's
    completed process, the calls per name)."""
    script, out = os.path.join(tmpdir(), "job.py"), os.path.join(tmpdir(), "job.bst")
    with open(script, "w") as f:
        f.write(text)
    p = run([BPFSIGHT, "record", "-o", out, "-t", "pyfunc", "--python-functions", spec, "--",
             py, script], timeout=180)
    return p, collections.Counter(e["name"] for e in dump(out) if e["kind"] == "pyfunc_call")


def test_swap_not_where_inexact_hook_says_why():
    """A generator among the names: its calls resume without its function, so the hook stays
    for every name and says why; the counts are the hook's, exact."""
    need_root()
    for py in interpreters():
        p, by = launch_script(py, "import types\n"
                              "def g():\n    yield 1\n    yield 2\n"
                              "def h():\n    return 1\n"
                              "import time\n"
                              "for _ in range(400):\n    time.sleep(0.005)\n"
                              "    list(g()); h()\n"
                              "print(type(h) is types.FunctionType)\n", "__main__:g,__main__:h")
        eq(p.stdout.strip(), "True", f"{py}: h never swapped")
        check("a frame-evaluation hook (PEP 523) (not each function's own calls: g is a "
              "generator or coroutine)" in p.stderr, f"{py}: why said: {p.stderr[-800:]}")
        eq(by["__main__:h"], 400, f"{py}: h's calls")
        eq(by["__main__:g"], 400 * 3, f"{py}: g's pieces")


def test_swap_of_a_function_defined_after_the_attach():
    """-p while a def below the running line has not run: its code object is found, with no
    function object yet, so the hook records its first calls and says why; once the def has
    run, the next resolve swaps it. Every call counted once across the change. The job hands
    the GIL over only where it blocks (a switch interval of 1000 s), and looks at late's type
    before its first sleep: the shim's resolve, which takes the GIL, comes after the first
    look, never between the def and it (a loaded machine once put it there, in the first
    sleep: swapped at the first look; a stall of 2.5 s after the def now leaves it plain)."""
    need_root()
    script = os.path.join(tmpdir(), "late_job.py")
    with open(script, "w") as f:
        f.write("import os, sys, time, types\n"
                "sys.setswitchinterval(1000)\n"
                "print(os.getpid(), flush=True)\n"
                "sys.stdin.readline()\n"  # the recording is on
                "def late():\n    pass\n"
                "plain = []\n"
                "for i in range(1500):\n    late()\n"
                "    plain.append(type(late) is types.FunctionType)\n"
                "    time.sleep(0.001)\n"
                "print(plain[0], plain[-1], flush=True)\n")
    for py in interpreters():
        p = spawn([py, script])
        try:
            r, _, _ = select.select([p.stdout], [], [], 60)
            check(r, f"{py}: the job did not start")
            pid = int(p.stdout.readline())
            rec = attach(pid, "__main__:late", "late has no function object yet")
            tell(p, "go")
            r, _, _ = select.select([p.stdout], [], [], 120)
            check(r, f"{py}: the job did not end")
            eq(p.stdout.readline().split(), ["True", "False"],
               f"{py}: late plain at first, swapped at the end")
            eq(rec.stop(), 0, f"{py}: record: {rec.stderr[-800:]}")
            check("a frame-evaluation hook (PEP 523) (not each function's own calls: late has "
                  "no function object yet)" in rec.stderr and
                  f"{MECHANISM} (1 function objects" in rec.stderr,
                  f"{py}: the hook, then each function's own calls: {rec.stderr[-1200:]}")
            _, by = counts(rec.out, pid)
            eq(by, {"__main__:late": 1500}, f"{py}: every call of late, once")
        finally:
            p.wait(60)


def test_swap_not_for_a_nested_function():
    """A nested function's function objects are made at each call of the one around it: the
    hook stays and says so; every call counted."""
    need_root()
    for py in interpreters():
        p, by = launch_script(py, "def outer(i):\n    def inner():\n        return i\n"
                              "    return inner()\n"
                              "import time\n"
                              "for i in range(300):\n    outer(i); time.sleep(0.002)\n",
                              "__main__:outer.<locals>.inner")
        check("(not each function's own calls: outer.<locals>.inner is made anew at each call "
              "of the function around it)" in p.stderr, f"{py}: why said: {p.stderr[-800:]}")
        eq(by, {"__main__:outer.<locals>.inner": 300}, f"{py}: inner's calls")
