"""--python-functions on 3.8-3.11 through the frame-evaluation hook (PEP 523), beside a job
that holds the interpreter's one slot for it itself, as torch.compile's TorchDynamo does
(tests/workloads/pyfunc/eval_owner.c: it saves the evaluator it finds and hands every frame
on to it; tests/workloads/pyfunc/eval_owner_job.py).

- The slot already the job's when the recording attaches (-p --inject): the shim says so (in
  shim_sum's python_functions, which `info` shows) and traces with the C profile function instead; every call counted, the job's hook still in
  and still handed every frame, and the slot the job's after the recording.
- The job takes the slot after the hook went in: the shim sees it at its next look, says so
  and falls back on the profile function; every call before and after counted exactly once
  (the job's hook hands frames on to the shim's, which leaves a thread with the profile
  function to it); the job's slot is left alone when the recording ends, and when the job
  gives it back (to the shim's hook, which it had saved) the shim puts the default back.
- A child the job forks (a DataLoader worker) is traced as the recording follows it: its first
  frame starts its shim again, which puts the child's own hook in (its calls made after
  that counted exactly).
- A throw() into a generator that never ran, while a name is looked for at first calls: the
  frame evaluation comes with the job's exception set, which the discovery must leave as it
  was (it was lost once: SystemError in the job).
- A job nobody else hooks: the slot holds the shim's hook while recording and the default
  after, also after the recorder is SIGKILLed (test_pyfunc.py's -p --inject rounds).
"""
import json
import os
import select
import subprocess
import threading

from helpers import BPFSIGHT, Recorder, Skip, check, dump, eq, need_root, row, spawn, stats, tell, \
    tmpdir, wait_for

SECONDS = 25

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "workloads", "pyfunc")
PYENV = os.path.expanduser("~/.pyenv/versions")


def interpreter(minor):
    for d in sorted(os.listdir(PYENV)) if os.path.isdir(PYENV) else ():
        if d.startswith(f"3.{minor}."):
            return os.path.join(PYENV, d, "bin", "python3")
    raise Skip(f"no pyenv 3.{minor} here")


def build_owner(py):
    """eval_owner.c built against PY's headers, into a folder of its own."""
    inc = subprocess.run([py, "-c", "import sysconfig; print(sysconfig.get_paths()['include'])"],
                         capture_output=True, text=True, check=True).stdout.strip()
    d = tmpdir()
    subprocess.run(["gcc", "-shared", "-fPIC", "-O1", "-I", inc,
                    os.path.join(HERE, "eval_owner.c"), "-o",
                    os.path.join(d, "eval_owner.so")], check=True, capture_output=True)
    return d


def ask(p, line, timeout=60):
    tell(p, line)
    r, _, _ = select.select([p.stdout], [], [], timeout)
    check(r, f"the job did not answer {line!r}")
    return json.loads(p.stdout.readline())


def job(minor):
    need_root()
    py = interpreter(minor)
    p = spawn([py, os.path.join(HERE, "eval_owner_job.py"), build_owner(py)])
    r, _, _ = select.select([p.stdout], [], [], 60)
    check(r, "the job did not start")
    json.loads(p.stdout.readline())
    return p


def attach(p, note):
    rec = Recorder("-p", str(p.pid), "-t", "pyfunc", "--python-functions", "__main__:work",
                   "--inject")
    rec.wait_ready()
    wait_for(lambda: note in rec.stderr, 30, f"the shim's note {note!r}: {rec.stderr[-1200:]}")
    return rec


def works(rec, pid, mechanism):
    """work()'s calls by PID in REC's file; its shim_sum (what `info` shows) names MECHANISM."""
    calls = [e for e in dump(rec.out) if e["kind"] == "pyfunc_call"]
    check(all(e["name"] == "__main__:work" and e["args"]["end"] == "return" for e in calls),
          f"only work(), each returned: {calls[:3]}")
    said = row(stats(rec.out, "shim_sum")["shim_sum"], pid=pid).get("python_functions", "")
    check(mechanism in said, f"shim_sum's python_functions names {mechanism!r}: {said!r}")
    return len([e for e in calls if e["pid"] == pid])


def check_taken_before(minor):
    p = job(minor)
    eq(ask(p, "take")["slot"], "own", f"3.{minor}: the job's hook in")
    rec = attach(p, "a C profile function (the frame-evaluation hook is another's")
    before = ask(p, "run 0")["frames"]
    s = ask(p, "run 1000")
    check(s["frames"] >= before + 1000, f"3.{minor}: the job's hook was handed every call: {s}")
    eq(s["slot"], "own", f"3.{minor}: the slot left to the job")
    eq(rec.stop(), 0, f"3.{minor}: record: {rec.stderr[-800:]}")
    eq(works(rec, p.pid, "a C profile function (the frame-evaluation hook is another's"), 1000,
       f"3.{minor}: work() calls traced by the profile function")
    eq(ask(p, "run 10")["slot"], "own", f"3.{minor}: still the job's after the recording")
    tell(p, "quit")
    p.wait(30)


def check_taken_later(minor):
    """On 3.11 the shim records work()'s own calls once it is found (its function object given
    the shim's type, test_pyfunc_swap.py) and leaves the slot at the default: the job taking
    it later changes nothing for the shim, and every call is counted by the same means."""
    swap = minor == 11
    mechanism = "each function's own calls" if swap else "a frame-evaluation hook (PEP 523)"
    p = job(minor)
    rec = attach(p, f"{mechanism} (1 function objects" if swap else
                 "a frame-evaluation hook (PEP 523): 1 code objects traced")
    eq(ask(p, "run 500")["slot"], "default" if swap else "other",
       f"3.{minor}: the shim's hook in the slot (3.11: the default, work()'s own calls)")
    # A forked child (a DataLoader worker) is traced as the recording follows it: its first
    # frame starts its shim again, which installs the child's own hook.
    child = ask(p, "fork 300")["child"]
    wait_for(lambda: f"pid {child}: Python 3.{minor}: {mechanism}" in rec.stderr,
             30, f"3.{minor}: the child's own hook: {rec.stderr[-1200:]}")
    eq(ask(p, "go"), {"child_exit": 0}, f"3.{minor}: the child's exit")
    eq(ask(p, "take")["slot"], "own", f"3.{minor}: the job took the slot")
    if not swap:
        wait_for(lambda: "until another took its place" in rec.stderr, 30,
                 f"3.{minor}: the shim's note of the fallback: {rec.stderr[-1200:]}")
    before = ask(p, "run 0")["frames"]
    s = ask(p, "run 700")
    check(s["frames"] >= before + 700, f"3.{minor}: the job's hook was handed every call: {s}")
    eq(rec.stop(), 0, f"3.{minor}: record: {rec.stderr[-800:]}")
    check(not swap or "until another took its place" not in rec.stderr,
          f"3.{minor}: no fallback needed: {rec.stderr[-800:]}")
    eq(works(rec, p.pid, mechanism if swap else "until another took its place"), 1200,
       f"3.{minor}: work() calls before and after the job took the slot, each once")
    eq(len([e for e in dump(rec.out) if e["kind"] == "pyfunc_call" and e["pid"] == child]),
       300, f"3.{minor}: the child's calls once it was traced")
    eq(ask(p, "run 10")["slot"], "own", f"3.{minor}: the job's slot left alone at the end")
    # The job gives back what it saved: the shim's hook (3.11: the default), which the shim
    # then removes.
    ask(p, "give")
    wait_for(lambda: ask(p, "run 1")["slot"] == "default", 20,
             f"3.{minor}: the default evaluator back once the job gave the slot back")
    tell(p, "quit")
    p.wait(30)


def test_eval_slot_taken_before_the_attach():
    for minor in (10, 11):
        check_taken_before(minor)


def test_eval_slot_taken_during_the_recording():
    for minor in (10, 11):
        check_taken_later(minor)


def test_throw_into_a_generator_while_names_are_looked_for():
    need_root()
    for minor in (10, 11):
        py = interpreter(minor)
        out = os.path.join(tmpdir(), "throw.bst")
        p = subprocess.run([BPFSIGHT, "record", "-o", out, "--python-functions",
                            "__main__:Missing.gen,__main__:Missing.resumer", "--", py,
                            os.path.join(HERE, "pyfunc_throw.py")],
                           capture_output=True, text=True, timeout=120)
        eq(p.returncode, 0, f"3.{minor}: record: {p.stderr[-800:]}")
        check("a frame-evaluation hook" in p.stderr, f"3.{minor}: the hook: {p.stderr[-800:]}")
        eq(json.loads(p.stdout.strip().splitlines()[-1]),
           ["ValueError: never started", "caught"] * 3,
           f"3.{minor}: each throw() as the job threw it")


def launch_owner_job(out):
    """record -t pyfunc --python-functions __main__:work -- eval_owner_job.py (pyenv's 3.10):
    (the recorder, its stderr lines so far), the job's first line read."""
    py = interpreter(10)
    p = subprocess.Popen([BPFSIGHT, "record", "-o", out, "-t", "pyfunc", "--python-functions",
                          "__main__:work", "--", py, os.path.join(HERE, "eval_owner_job.py"),
                          build_owner(py)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    lines = []
    threading.Thread(target=lambda: lines.extend(p.stderr), daemon=True).start()
    r, _, _ = select.select([p.stdout], [], [], 60)
    check(r, f"the job did not start: {''.join(lines)[-800:]}")
    json.loads(p.stdout.readline())
    return p, lines


def test_forked_worker_ending_in_os_exit_loses_nothing():
    """Launch mode: a child the job forks (a DataLoader worker) calls work() 200 times as soon
    as it is traced and ends with os._exit, as multiprocessing's children do (no atexit):
    every call is in the file (the preloaded shim's _exit drains first; before, what it held
    since its last flush, 250 ms, was lost without a word)."""
    need_root()
    out = os.path.join(tmpdir(), "fork_exit.bst")
    p, lines = launch_owner_job(out)
    try:
        child = ask(p, "fork_exit 200")["child"]
        wait_for(lambda: f"pid {child}: Python 3.10: a frame-evaluation hook" in "".join(lines),
                 30, f"the child's own hook: {''.join(lines)[-1200:]}")
        eq(ask(p, "go"), {"child_exit": 0}, "the child's exit")
        tell(p, "quit")
        eq(p.wait(60), 0, f"record: {''.join(lines)[-800:]}")
    finally:
        if p.poll() is None:
            p.kill()
    calls = [e for e in dump(out) if e["kind"] == "pyfunc_call" and e["pid"] == child]
    eq(len(calls), 200, "the child's calls, every one, though it ended with os._exit")
