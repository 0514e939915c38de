"""The newest CPython here, read on its first day: Debian unstable's 3.15 (release build,
stripped, and its debug build, with symbols and frame pointers; `make deps` installs both under
/opt/cpython), read through its own _Py_DebugOffsets with no table of its own (docs/STACKS.md,
"Versions and builds"). Workload: tests/workloads/py_thread_names.py (threads cpu-0 and cpu-1,
named by threading, spin in spin() and take turns on the GIL; the main thread reads stdin).

Then copies of the release build whose _PyRuntime was changed in the file: its debug offsets'
cookie corrupted (the layout cannot be read: said in `stacks`, on stderr, in `info` and in the
verdict, never native frames in silence), its version made 3.16 (a release after the last
known: read as 3.15's table, frames named), and 3.16 with a field more in the thread state's
table (said, what is missing named). The --python-functions checks of 3.15 are test_pyfunc's
and test_pyfunc_first's.
"""
import json
import os
import re
import shutil
import struct

from helpers import (BPFSIGHT, Skip, check, dump, eq, info, need_root, row, run, spawn, stats,
                     tmpdir, wait_for)
from test_gil import opt_newest

# For tests/run_tests.py: about how long these tests take on CI's machine (its order).
SECONDS = 30

HERE = os.path.dirname(os.path.abspath(__file__))
WORK = os.path.realpath(os.path.join(HERE, "..", "workloads", "py_thread_names.py"))
NAMES = ("MainThread", "cpu-0", "cpu-1")
COOKIE_SAID = 'its _PyRuntime does not start with _Py_DebugOffsets (no "xdebugpy" cookie)'


def newest(debug=False):
    py = opt_newest(debug)
    if not py:
        raise Skip("no CPython under /opt/cpython (make deps installs Debian unstable's 3.14 "
                   "and 3.15 with tests/tools/install_sid_cpython.sh)")
    return py


def minor_of(py):
    return int(re.search(r"python3\.(\d+)$", py).group(1))


def one_cpu():
    """The workload's two spinners take turns on one CPU (they hold the GIL in turns anyway):
    the other stays the recorder's and the other tests'."""
    os.sched_setaffinity(0, {os.cpu_count() - 1})


def start(py, env=None):
    """The workload under PY: (its process, pid, tids by name) once its threads run."""
    p = spawn([py, WORK], env=env, preexec_fn=one_cpu)
    line = p.stdout.readline()
    if not line.startswith("{"):
        p.kill()
        raise AssertionError(f"{py}: the workload's line {line!r} {p.stderr.read()[-500:]}")
    job = json.loads(line)
    return p, job["pid"], job["tids"]


def stop(p):
    p.kill()
    p.wait()


def stacks(pid):
    """`bpfsight stacks -p PID --json` and its stderr."""
    p = run([BPFSIGHT, "stacks", "-p", str(pid), "--json"])
    eq(p.returncode, 0, f"stacks exit ({p.stderr[-500:]})")
    return json.loads(p.stdout), p.stderr


def py_frames(th):
    return [f for f in th["stack"] or [] if "line" in f]


def check_stacks(py, pid, tids, mixed):
    """Every thread named as threading named it; one of cpu-0 and cpu-1 holds the GIL, in
    spin(); main's outermost frame is the workload's <module>. MIXED (a debug build): the
    interpreter's own native frames, named, right before the main thread's Python frames."""
    out, _ = stacks(pid)
    eq((out["python"], out["python_unread"]), (f"3.{minor_of(py)}", None), f"{py}: version")
    by = {t["tid"]: t for t in out["threads"]}
    for name in NAMES:
        eq(by[tids[name]]["python_name"], name, f"{py}: {name}'s threading name")
    holders = [t["name"] for t in out["threads"] if t["gil"]]
    check(len(holders) <= 1 and set(holders) <= {"cpu-0", "cpu-1"}, f"{py}: holders {holders}")
    for name in ("cpu-0", "cpu-1"):
        fr = py_frames(by[tids[name]])
        check(fr and (fr[0]["func"], fr[0]["file"]) == ("spin", WORK),
              f"{py}: {name}'s innermost Python frame {fr[:1]}")
    main = by[tids["MainThread"]]["stack"]
    fr = py_frames(by[tids["MainThread"]])
    check(fr and (fr[-1]["func"], fr[-1]["file"]) == ("<module>", WORK),
          f"{py}: main's outermost Python frame {fr[-1:]}")
    if mixed:
        first = next(i for i, f in enumerate(main) if "line" in f)
        named = [f["func"] for f in main[:first] if not f["func"].startswith("[")]
        check(first > 0 and named, f"{py}: the interpreter's named frames before main's Python "
              f"frames: {[f['func'] for f in main]}")


def check_recorded(py, pid, tids):
    """record -p -t cpu,gil,sched: cpu_sum, gil_stacks and offcpu_stacks (the GIL's waits
    block in its condition variable) name spin() in the workload; the threads' names are
    threading's; the GIL is measured with its holders; nothing says frames went unread."""
    out = os.path.join(tmpdir(), "newest.bst")
    p = run([BPFSIGHT, "record", "-p", str(pid), "-t", "cpu,gil,sched", "-d", "0.4", "-o", out])
    eq(p.returncode, 0, f"{py}: record ({p.stderr[-600:]})")
    check("not read" not in p.stderr, f"{py}: {p.stderr[-600:]}")
    got = stats(out, "cpu_sum,gil_stacks,gil_procs,offcpu_stacks")
    check(any(r["func"] == "spin" and r["file"] == WORK for r in got["cpu_sum"]),
          f"{py}: cpu_sum has spin(): {[r['func'] for r in got['cpu_sum']][:12]}")
    roles = {r["role"] for r in got["gil_stacks"] if r["func"] == "spin" and r["file"] == WORK}
    eq(roles, {"holder", "waiter"}, f"{py}: gil_stacks' rows of spin()")
    check(any(r.get("func") == "spin" and r.get("file") == WORK for r in got["offcpu_stacks"]),
          f"{py}: offcpu_stacks has spin(): {got['offcpu_stacks'][:3]}")
    proc = row(got["gil_procs"], pid=pid)
    check(proc["python"].startswith(f"3.{minor_of(py)}."), f"{py}: {proc['python']}")
    eq((proc["method"], proc["holder"], proc["verified"]), ("condwait", 1, 1),
       f"{py}: the GIL measured ({proc['note']})")
    names = {e["tid"]: e["name"] for e in dump(out) if e["kind"] == "thread_name"}
    eq({n: names.get(tids[n]) for n in NAMES}, {n: n for n in NAMES}, f"{py}: thread names")
    eq(info(out).get("python_unread"), None, f"{py}: no python unread")


def test_newest_release_and_debug_build_read_like_the_others():
    """3.15's release and debug builds: `stacks -p` names every thread as threading did, the
    GIL's holder in spin(); a recording's cpu_sum and gil_stacks name spin(), its thread names
    are threading's; the debug build's stacks mix the interpreter's named native frames."""
    need_root()
    for py, mixed in ((newest(), False), (newest(debug=True), True)):
        p, pid, tids = start(py)
        try:
            check_stacks(py, pid, tids, mixed)
            check_recorded(py, pid, tids)
        finally:
            stop(p)


GROW = """import time
keep = []
def grow():
    for i in range(20):
        keep.append(bytearray(8 << 20))  # GROW
        time.sleep(0.005)
grow()
"""


def test_newest_memory_growth_names_the_line():
    """-t mem on 3.15: the resident memory a loop keeps growing is at its line in mem_growth
    (the user's line, as memory_profiler's increments)."""
    need_root()
    py = newest()
    script = os.path.join(tmpdir(), "grow.py")
    with open(script, "w") as f:
        f.write(GROW)
    out = os.path.join(tmpdir(), "mem.bst")
    p = run([BPFSIGHT, "record", "-t", "mem", "-o", out, "--", py, script])
    eq(p.returncode, 0, f"record ({p.stderr[-600:]})")
    top = stats(out, "mem_growth")["mem_growth"][0]
    eq((top["func"], top["file"], top["line"]), ("grow", script, 5), f"mem_growth's top {top}")
    check(top["growth_bytes"] >= 150 << 20, f"160 MiB kept: {top}")


def runtime_offset(path):
    """The file offset of _PyRuntime's first byte in the ELF file PATH."""
    syms = run(["readelf", "-Ws", "--dyn-syms", path], check=True).stdout
    vaddr = next(int(f[1], 16) for f in (l.split() for l in syms.splitlines())
                 if f[-1:] == ["_PyRuntime"])
    for l in run(["readelf", "-lW", path], check=True).stdout.splitlines():
        f = l.split()
        if f and f[0] == "LOAD":
            off, va, size = int(f[1], 16), int(f[2], 16), int(f[4], 16)
            if va <= vaddr < va + size:
                return off + vaddr - va
    raise AssertionError(f"{path}: _PyRuntime in no LOAD segment")


def patched(py, name, edit):
    """A copy of interpreter PY (as NAME) whose _Py_DebugOffsets (its 1,024 first bytes of
    _PyRuntime, as 64-bit words) EDIT changed; with the environment it runs under (its own
    standard library)."""
    copy = os.path.join(tmpdir(), name, "bin", os.path.basename(py))
    os.makedirs(os.path.dirname(copy))
    shutil.copy(py, copy)
    at = runtime_offset(copy)
    with open(copy, "r+b") as f:
        f.seek(at)
        w = list(struct.unpack("<128Q", f.read(1024)))
        edit(w)
        f.seek(at)
        f.write(struct.pack("<128Q", *w))
    home = os.path.dirname(os.path.dirname(py))
    return copy, dict(os.environ, PYTHONHOME=home)


def test_unreadable_debug_offsets_are_said_never_silent():
    """A copy of 3.15 whose debug offsets' cookie is corrupted: `stacks` says CPython 3.15's
    Python frames are not read and why (JSON; the text of two such processes grouped, their
    pids once), once on stderr; a recording's `info` lists it and the verdict says it. Its
    stacks are native, but never in silence."""
    need_root()
    py = newest()
    copy, env = patched(py, "cookie", lambda w: w.__setitem__(0, w[0] ^ (1 << 56)))
    p, pid, tids = start(copy, env)
    p2, pid2, _ = start(copy, env)
    try:
        out, err = stacks(pid)
        said = f"CPython 3.{minor_of(py)}: its Python frames, GIL holder and thread names " \
               f"are not read: {COOKIE_SAID}"
        eq((out["python"], out["python_unread"]), (None, said), "stacks --json")
        eq(err.count(said), 1, f"said once on stderr: {err[-800:]}")
        check(not any(py_frames(t) for t in out["threads"]), "no Python frame")
        txt = run([BPFSIGHT, "stacks", "-p", str(pid), "-p", str(pid2)], check=True).stdout
        check(f"pid {pid}, {pid2}: {said}" in txt.splitlines(), f"grouped: {txt[:800]}")
        stop(p2)
        rec = os.path.join(tmpdir(), "unread.bst")
        r = run([BPFSIGHT, "record", "-p", str(pid), "-t", "cpu", "-d", "0.3", "-o", rec])
        eq(r.returncode, 0, f"record ({r.stderr[-600:]})")
        check(said in r.stderr, f"record's stderr: {r.stderr[-800:]}")
    finally:
        stop(p)
        stop(p2)
    rows = info(rec)["python_unread"]
    eq([(x["pid"], x["version"], x["why"], x["file"]) for x in rows],
       [(pid, f"3.{minor_of(py)}", COOKIE_SAID, copy)], "info's python_unread")
    verdict = run([BPFSIGHT, "stats", rec], check=True).stdout
    check("Python frames could not be read in 1 process" in verdict and COOKIE_SAID in verdict,
          f"the verdict: {verdict[:1500]}")


def test_a_release_after_the_newest_known():
    """The same copy made 3.16 in its debug offsets (a release after the last known table):
    read as 3.15's table, its frames and thread names read; then 3.16 with one more field in
    the thread state's table before its thread ids (every later offset a word on): not read,
    and the thread state named as what is missing."""
    need_root()
    py = newest()
    if minor_of(py) != 15:
        raise Skip(f"{py}: a copy of 3.15's, the newest table bpfsight knows, is needed "
                   f"(make deps installs it)")
    copy, env = patched(py, "v316", lambda w: w.__setitem__(1, 0x31000a0))
    p, pid, tids = start(copy, env)
    try:
        out, err = stacks(pid)
        eq((out["python"], out["python_unread"]), ("3.16", None), f"3.16 read ({err[-400:]})")
        by = {t["tid"]: t for t in out["threads"]}
        eq([by[tids[n]]["python_name"] for n in NAMES], list(NAMES), "threading's names")
        fr = py_frames(by[tids["cpu-0"]])
        check(fr and fr[0]["func"] == "spin", f"cpu-0 in spin(): {fr[:1]}")
    finally:
        stop(p)

    def moved(w):
        w[1] = 0x31000a0
        # thread_state: a word more after base_frame; the table's own 111 words only (the
        # runtime's fields after it are the interpreter's: left as they are)
        w[28:111] = [0x200] + w[28:110]

    copy, env = patched(py, "v316moved", moved)
    p, pid, tids = start(copy, env)
    try:
        out, err = stacks(pid)
        eq(out["python"], None, "3.16 laid out otherwise: not read")
        check(out["python_unread"] and "CPython 3.16" in out["python_unread"] and
              "laid out as no version bpfsight knows (read as 3.15's: the thread state's "
              "fields not found)" in out["python_unread"], out["python_unread"])
    finally:
        stop(p)
