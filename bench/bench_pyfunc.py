# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""--python-functions' cost (section "Python functions" of bench/RESULTS.md; docs/USAGE.md).

For each interpreter, bench/pyfunc_loop.py times f() and g() untraced and f() under a hook
written in Python (a sys.monitoring tool's callbacks on 3.12+, a sys.setprofile function
before); then `bpfsight record -p PID -t pyfunc --python-functions __main__:f --inject`
attaches, and once the shim says it traces f, the job times f() traced and g() untraced while
the recording is on. Then launch mode, where the shim's hooks go in as the interpreter
starts and each function is found at its first call: `record --python-functions __main__:f
-- python3 pyfunc_loop.py` (f found at its first call: what untraced g() pays once every name
is found), and with a name the job never has (`__main__:f,__main__:nosuch`: the entries stay
looked for at every first call, what g() pays then). Prints ns per call: what tracing adds
per traced call (traced - untraced) against what the Python hook adds (python - untraced),
and what untraced code pays while recording (recording_g - untraced_g), attached and in
launch mode.

    python3 bench/run_bench.py --only pyfunc               # this section (~30 s)
    sudo python3 bench/bench_pyfunc.py [--build build]     # the table alone, printed
"""
import argparse
import json
import os
import re
import signal
import subprocess
import statistics
import threading

NAME = "pyfunc"
# Goals, as ratios (this machine's ns move from run to run): a traced call costs at most
# what an empty hook written in Python costs (3.12+: a sys.monitoring callback pair; before:
# a profile function), and untraced code pays nothing on 3.12+ (local events only).
TRACED_VS_PYTHON = 1.2
UNTRACED_312 = 1.10
# Launch mode installs the same hooks, earlier: untraced code pays what it pays attached.
LAUNCH_VS_ATTACHED = 1.10

HERE = os.path.dirname(os.path.abspath(__file__))
PYENV = os.path.expanduser("~/.pyenv/versions")


def interpreters():
    out = []
    for minor in range(8, 14):
        for d in sorted(os.listdir(PYENV)) if os.path.isdir(PYENV) else ():
            if d.startswith(f"3.{minor}."):
                out.append((f"pyenv {d}", os.path.join(PYENV, d, "bin", "python3")))
    for name, path in (("Debian 3.11", "/usr/bin/python3.11"),
                       ("Debian 3.14", "/opt/cpython/3.14/bin/python3.14")):
        if os.path.exists(path):
            out.append((name, path))
    return out


def one(bpfsight, py, out):
    job = subprocess.Popen([py, os.path.join(HERE, "pyfunc_loop.py")], stdin=subprocess.PIPE,
                           stdout=subprocess.PIPE, text=True)
    json.loads(job.stdout.readline())  # its untraced and Python-hook phases are done
    rec = subprocess.Popen([bpfsight, "record", "-o", out, "--force", "-p", str(job.pid),
                            "-t", "pyfunc", "--python-functions", "__main__:f", "--inject"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    traced = threading.Event()

    def read():
        for line in rec.stderr:
            if re.search(r": 1 code objects traced$", line.rstrip()):
                traced.set()
        traced.set()

    threading.Thread(target=read, daemon=True).start()
    traced.wait(60)
    job.stdin.write("go\n")
    job.stdin.flush()
    res = json.loads(job.stdout.readline())
    job.wait(60)
    rec.send_signal(signal.SIGINT)
    rec.wait(60)
    return res


def one_launch(bpfsight, py, out, spec):
    """Launch mode: the loop runs under the recording from its first line; its untraced
    phase times g() (f, named, is traced there). The job's ns per call of g."""
    rec = subprocess.Popen([bpfsight, "record", "-o", out, "--force", "--python-functions",
                            spec, "--", py, os.path.join(HERE, "pyfunc_loop.py")],
                           stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                           stderr=subprocess.DEVNULL, text=True)
    json.loads(rec.stdout.readline())
    rec.stdin.write("stop\n")  # not "go": its traced phase is the -p run's
    rec.stdin.flush()
    res = json.loads(rec.stdout.readline())
    rec.wait(60)
    return res["untraced_g"]


def row(name, r):
    u, g = r["untraced_f"], r["untraced_g"]
    return (f"| {name} | {u:.0f} ns | {r['traced_f']:.0f} ({r['traced_f'] - u:+.0f}) | "
            f"{r['python_f']:.0f} ({r['python_f'] - u:+.0f}) | {r['recording_g']:.0f} "
            f"({r['recording_g'] - g:+.0f}) | {r['launch_g']:.0f} ({r['launch_g'] - g:+.0f}) "
            f"| {r['missing_g']:.0f} ({r['missing_g'] - g:+.0f}) |")


HEADER = ["| interpreter | untraced call | traced call (+ns) | Python hook (+ns) | untraced call "
          "while recording (+ns) | the same, launch mode (+ns) | launch mode, a name never "
          "found (+ns) |", "|---|---|---|---|---|---|---|"]


def run(ctx):
    """Each interpreter here (quick: 3.10 and 3.12 only), RUNS times; the median run by
    traced-call cost is kept per interpreter."""
    from bench_common import BenchError
    pys = interpreters()
    if ctx.quick:
        pys = [p for p in pys if p[0].startswith(("pyenv 3.10", "pyenv 3.12"))]
    if not pys:
        raise BenchError("pyfunc: no Python interpreter with symbols here (pyenv)")
    runs = 1 if ctx.quick else 3
    out = []
    for i, (name, py) in enumerate(pys):
        bst = os.path.join(ctx.r.tmp, "pyfunc.bst")
        rs = sorted((one(ctx.r.bpfsight, py, bst) for _ in range(runs)),
                    key=lambda r: r["traced_f"] - r["untraced_f"])
        r = dict(rs[len(rs) // 2], name=name, runs=runs)
        for key, spec in (("launch_g", "__main__:f"), ("missing_g", "__main__:f,__main__:nosuch")):
            r[key] = statistics.median(one_launch(ctx.r.bpfsight, py, bst, spec)
                                       for _ in range(runs))
        ctx.progress("interpreters", i + 1, len(pys), row(name, r))
        out.append(r)
    return {"rows": out, "runs": runs}


def ratios(r):
    added = r["traced_f"] - r["untraced_f"]
    hook = max(r["python_f"] - r["untraced_f"], 1e-9)
    return added / hook, r["recording_g"] / r["untraced_g"]


def launch_ratios(r):
    """Untraced g() in launch mode against untraced, and against -p's recording (names
    found either way: the same hooks, found at the first call rather than by the poller)."""
    return r["launch_g"] / r["untraced_g"], r["launch_g"] / r["recording_g"]


def text(ctx, res):
    worst = max(ratios(r)[0] for r in res["rows"])
    return (f"pyfunc: a traced call adds at most {worst:.2f}x what a Python hook adds; launch "
            "mode's untraced call at most "
            f"{max(launch_ratios(r)[1] for r in res['rows']):.2f}x the attached one's")


def markdown(ctx, res):
    from bench_common import block_head, end
    g = ctx.goals
    out = block_head(ctx, NAME, "Python functions (`--python-functions`)") + [
           "Per interpreter, bench/pyfunc_loop.py times `f()` and `g()` (both `pass`) untraced "
           "and `f()` under a hook written in Python (3.12+: a sys.monitoring tool whose "
           "PY_START and PY_RETURN callbacks are Python lambdas, local events on f only; "
           "before 3.12: a `sys.setprofile` function that checks the code object); then "
           "`record -p PID -t pyfunc --python-functions __main__:f --inject` attaches and, "
           "once the shim traces f, the job times `f()` traced and `g()` untraced while the "
           "recording is on. Launch mode: `record --python-functions __main__:f -- python3 "
           "pyfunc_loop.py` (the hooks in as the interpreter starts, f found at its first "
           "call) times `g()` untraced while recording; and the same with a name the job "
           "never has (`__main__:f,__main__:nosuch`), looked for at every first call all "
           "along. ns per call, each the best of 5 loops of 200,000 calls (the thread's CPU "
           f"time); of {res['runs']} runs per interpreter, the median by traced cost (launch "
           "mode: the median); every + against the untraced call of g.", ""] + HEADER
    for r in res["rows"]:
        out.append(row(r["name"], r))
    worst = max(res["rows"], key=lambda r: ratios(r)[0])
    w = ratios(worst)[0]
    new = [r for r in res["rows"] if tuple(map(int, r["version"].split("."))) >= (3, 12)]
    out += ["", "- A traced call (timed, its record written into the thread's batch and "
            f"sent) against an empty hook written in Python: at most {w:.2f}x its cost "
            f"({worst['name']}); "
            + g.check(NAME, "traced call / Python hook", f"{w:.2f}x",
                      f"<= {TRACED_VS_PYTHON}x", w <= TRACED_VS_PYTHON)]
    if new:
        u = max(ratios(r)[1] for r in new)
        out.append("- Untraced code while recording on 3.12+ (only the named code objects are "
                   f"instrumented): {u:.2f}x its untraced time; "
                   + g.check(NAME, "untraced call while recording, 3.12+", f"{u:.2f}x",
                             f"<= {UNTRACED_312}x", u <= UNTRACED_312))
        lw = max(launch_ratios(r)[0] for r in new)
        out.append("- Launch mode on 3.12+, every name found at its first call: untraced code "
                   f"at {lw:.2f}x its untraced time; "
                   + g.check(NAME, "untraced call in launch mode, 3.12+", f"{lw:.2f}x",
                             f"<= {UNTRACED_312}x", lw <= UNTRACED_312))
    old = [r for r in res["rows"] if tuple(map(int, r["version"].split("."))) < (3, 12)]
    if old:
        lp = max(launch_ratios(r)[1] for r in old)
        out.append("- Launch mode on 3.8-3.11, every name found: untraced code pays what it "
                   f"pays attached (the same frame-evaluation hook): at most {lp:.2f}x the "
                   "attached recording's untraced call; "
                   + g.check(NAME, "untraced call, launch vs attached, 3.8-3.11", f"{lp:.2f}x",
                             f"<= {LAUNCH_VS_ATTACHED}x", lp <= LAUNCH_VS_ATTACHED))
    if old:
        miss = max(r["missing_g"] - r["launch_g"] for r in old)
        out.append("- A name never found keeps every first call looked at: on 3.12+ once per "
                   "code object (sys.monitoring's DISABLE), nothing per call (the last column); "
                   "on 3.8-3.11 the frame-evaluation hook reads each untraced call's name and probes "
                   f"the missing names: at most {miss:+.0f} ns per untraced call over the names "
                   "found (the last column against the one before).")
    out += ["- On 3.8-3.11 the frame-evaluation hook (PEP 523) runs at every frame evaluation "
            "of every thread and probes its code object: untraced calls pay what the column "
            "\"untraced call while recording\" says (3.11 also stops inlining Python-to-Python "
            "calls while any such hook is in). After the recording, nothing is left: "
            "tests/e2e/test_pyfunc.py checks the loop's speed and the hooks.", end(NAME)]
    return "\n".join(out) + "\n"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(HERE, "..", "build"))
    a = ap.parse_args()
    bpfsight = os.path.join(a.build, "bpfsight")
    print("\n".join(HEADER))
    for name, py in interpreters():
        r = one(bpfsight, py, "/tmp/bench_pyfunc.bst")
        r["launch_g"] = one_launch(bpfsight, py, "/tmp/bench_pyfunc.bst", "__main__:f")
        r["missing_g"] = one_launch(bpfsight, py, "/tmp/bench_pyfunc.bst",
                                    "__main__:f,__main__:nosuch")
        print(row(name, r), flush=True)


if __name__ == "__main__":
    main()
