"""Python stacks of the cpu family: frames read by BPF from the interpreter of CPython 3.8 to
3.13 (pyenv's, with symbols), Debian's stripped python3.11 and the CPythons under /opt/cpython
(Debian unstable's 3.14 and 3.15, stripped, and their debug builds, which have frame
pointers: `make deps`; make check reads the newest's),
named by the recorder from the code objects. Workload: tests/workloads/py_stacks.py, whose functions,
lines and CPU split are known (it measures its split with time.thread_time)."""
import ast
import json
import os
import re
import shutil

from helpers import (Recorder, Skip, alone, check, dump, eq, info, need_root, record, run, spawn,
                     stats, wait_for)
from test_gil import (LIBC, OPT_CPYTHON, bpftrace_live, debian_python, opt_matrix, opt_newest,
                      pyenv_python)

# For tests/run_tests.py: about how long these tests take on CI's machine (its order).
SECONDS = 170
# CPU-bound tests, each long: one job per test.
SPLIT = True

HERE = os.path.dirname(os.path.abspath(__file__))
WORK = os.path.realpath(os.path.join(HERE, "..", "workloads", "py_stacks.py"))
RATE = 999


def marker_lines(tag):
    with open(WORK) as f:
        return {i + 1 for i, l in enumerate(f) if f"# {tag}" in l}


def body_lines(func):
    """The lines of FUNC in the workload, its def line included (a frame that has not run
    its first instruction yet is at its first line, as CPython reports it)."""
    with open(WORK) as f:
        tree = ast.parse(f.read())
    node = next(n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == func)
    return set(range(node.lineno, node.end_lineno + 1))


# make check-python-versions: every interpreter here in every matrix test. make check reads
# one of each layout that differs (3.8's frame objects and co_lnotab, 3.10's co_linetable,
# 3.11's interpreter frames and locations in Debian's stripped build, 3.13's, and the newest
# release's through its own _Py_DebugOffsets: 3.15's) and leaves out 3.9, pyenv's 3.11 and
# 3.12, and 3.14, to keep its time (tests/README.md).
ALL_VERSIONS = os.environ.get("BPFSIGHT_PY_ALL_VERSIONS") == "1"
CHECK_PYENV = (8, 10, 13)


def pythons(first=8):
    """pyenv's CPython 3.FIRST..3.13, Debian's stripped python3.11 and those under
    /opt/cpython with a GIL (when there are: test_built_cpythons_are_in_the_matrix says
    when not); make check's subset of them (the newest release build there) unless
    BPFSIGHT_PY_ALL_VERSIONS=1."""
    opt = opt_matrix() if ALL_VERSIONS else [opt_newest()]
    found = ([pyenv_python(m) for m in range(first, 14) if ALL_VERSIONS or m in CHECK_PYENV] +
             [debian_python()] + opt)
    return [p for p in found
            if p and int(re.search(r"python3\.(\d+)$", p).group(1)) >= first]


def test_built_cpythons_are_in_the_matrix():
    """The CPythons under /opt/cpython (Debian unstable's 3.15 and its debug build; 3.14's too
    with BPFSIGHT_PY_ALL_VERSIONS=1: `make deps` installs both) are read like the others: a
    sample of main() in inner_a or inner_b names it at the top of its Python frames, outer
    below it. Skipped, saying so, where there are none (make deps could not install them)."""
    need_root()
    pys = opt_matrix()
    if not pys:
        raise Skip(f"no CPython under {OPT_CPYTHON} (tests/tools/install_sid_cpython.sh "
                   f"installs 3.14 and 3.15): the matrix has pyenv's and Debian's only")
    for py in pys:
        pid, _, out = run_py(py, "split", "1")
        tops = [[f["func"] for f in py_frames(e)][:2] for e in in_main(samples(out, pid))]
        named = [t for t in tops if t[:1] in (["inner_a"], ["inner_b"])]
        check(len(named) >= 0.8 * len(tops) and named,
              f"{py}: {len(named)} of {len(tops)} samples in main() name inner_a/inner_b")
        eq(sum(t[1:] == ["outer"] for t in named), len(named), f"{py}: callers of inner_X")


def run_py(py, *args):
    p, out = record([py, WORK, *args], "-t", "cpu", "--sample-rate", str(RATE))
    eq(p.returncode, 0, f"{py}: record exit ({p.stderr[-600:]})")
    m = re.search(r"^pid (\d+) tid (\d+)$", p.stdout, re.M)
    check(m, f"{py}: no pid line {p.stdout[:200]!r}")
    truth = json.loads([l for l in p.stdout.splitlines() if l.startswith("{")][-1])
    return int(m.group(1)), truth, out


def py_frames(e):
    return [f for f in e.get("stack", []) if "line" in f]


def samples(out, pid):
    return [e for e in dump(out) if e["kind"] == "cpu_sample" and e["pid"] == pid]


def in_main(evs):
    """The samples taken while the workload ran its own main(): not those of the interpreter's
    start (a debug build takes about a second of CPU to import what it needs)."""
    return [e for e in evs if any(f["func"] == "main" and f.get("file") == WORK
                                  for f in py_frames(e))]


def frame_pointers(py):
    """Was PY's interpreter compiled with frame pointers (Fedora's, Ubuntu's, Debian's debug
    builds)? Its own build flags say."""
    p = run([py, "-c", "import sysconfig; print(sysconfig.get_config_var('CFLAGS'))"])
    return "-fno-omit-frame-pointer" in p.stdout


def test_python_frames_name_function_file_and_line_in_every_interpreter():
    """inner_a runs 7 parts of the thread's CPU time, inner_b 3: the samples holding the GIL
    in each are their share within 5 points; each such stack is inner_X <- outer <- main <-
    <module> of the workload's file, at the lines the source marks (the loop of inner_X,
    outer's call of it); cpu_sum names the lines."""
    need_root()
    pys = pythons()
    check(pys, "no CPython 3.8-3.13 here (make deps installs Debian's python3)")
    burn = {"inner_a": body_lines("inner_a"), "inner_b": body_lines("inner_b")}
    loop = {"inner_a": marker_lines("BURN_A"), "inner_b": marker_lines("BURN_B")}
    call = {"inner_a": marker_lines("CALL_A"), "inner_b": marker_lines("CALL_B")}
    for py in pys:
        pid, truth, out = run_py(py, "split", "1")
        evs = samples(out, pid)
        held = [e for e in evs if e["args"].get("gil")]
        check(len(held) >= 0.8 * len(evs), f"{py}: {len(held)} of {len(evs)} samples held "
              f"the GIL")
        n = {"inner_a": 0, "inner_b": 0}
        in_loop = 0
        for e in held:
            fr = py_frames(e)
            if not fr or fr[0]["func"] not in n:
                continue
            f = fr[0]["func"]
            n[f] += 1
            eq([x["func"] for x in fr], [f, "outer", "main", "<module>"], f"{py}: stack")
            check(all(x["file"] == WORK for x in fr), f"{py}: files {[x['file'] for x in fr]}")
            check(fr[0]["line"] in burn[f], f"{py}: {f} at line {fr[0]['line']}")
            in_loop += fr[0]["line"] in loop[f]
            check(fr[1]["line"] in call[f], f"{py}: outer at line {fr[1]['line']} calls {f}")
        share = 100.0 * truth["a"] / (truth["a"] + truth["b"])
        got = 100.0 * n["inner_a"] / max(1, n["inner_a"] + n["inner_b"])
        mine = len(in_main(evs))
        check(n["inner_a"] + n["inner_b"] >= 0.9 * mine, f"{py}: {n} of the {mine} samples "
              f"in main() ({len(evs)} in all)")
        check(in_loop >= 0.9 * (n["inner_a"] + n["inner_b"]), f"{py}: {in_loop} samples in "
              f"the loops")
        check(abs(got - share) <= 5.0, f"{py}: inner_a {got:.1f}% of samples, {share:.1f}% "
              f"of CPU time")
        rows = [r for r in stats(out, "cpu_sum")["cpu_sum"] if r["func"] == "inner_a"]
        check(rows and all(r["file"] == WORK and r["line"] in burn["inner_a"] for r in rows)
              and any(r["line"] in loop["inner_a"] for r in rows),
              f"{py}: cpu_sum rows of inner_a {rows}")


def test_c_code_between_python_frames_is_shown_where_the_interpreter_has_frame_pointers():
    """sorted() calls key_spin back from C. In every interpreter a sample in key_spin names
    key_spin <- callback <- main <- <module>, and no eval-loop frame is left. Where the
    interpreter was built with frame pointers (py-spy --native's mixed stacks) nearly every
    such stack is whole and in place: each eval-loop frame replaced by the Python frames it
    ran, sorted()'s C frames between key_spin and callback, the C main() below <module>, no
    cut marker before it (also when the sample caught a function before it made its frame:
    the recorder puts back the caller the walk skipped). Where it was not, most are whole
    too, through the unwind tables (docs/STACKS.md) of its files, loaded after its first
    cut stacks. The rest stop at a marker, after which only Python frames follow. Skipped,
    saying so, where no interpreter has frame pointers."""
    need_root()
    fp_seen = []
    for py in pythons():
        pid, truth, out = run_py(py, "callback", "0.3")  # ~300 in key_spin
        fp = frame_pointers(py)
        stacks = [e["stack"] for e in samples(out, pid)
                  if [f["func"] for f in py_frames(e)][:1] == ["key_spin"]]
        check(len(stacks) >= 100, f"{py}: {len(stacks)} samples in key_spin")
        whole = []
        for st in stacks:
            names = [f["func"] for f in st]
            eq([f["func"] for f in st if "line" in f], ["key_spin", "callback", "main",
                                                         "<module>"], f"{py}: Python frames")
            check("_PyEval_EvalFrameDefault" not in names, f"{py}: an eval-loop frame left "
                  f"in {names}")
            cut = [k for k, x in enumerate(names) if x.startswith("[unwind stopped in ")]
            # The C main(), or _start where main() tail-calls Py_BytesMain (pyenv's builds).
            cmain = [k for k, f in enumerate(st)
                     if f["func"] in ("main", "_start") and "line" not in f]
            if cut and not (cmain and cmain[-1] < cut[0]):
                check(all("line" in f for f in st[cut[0] + 1:]), f"{py}: native frames after "
                      f"the marker: {names}")
                continue
            check(cmain, f"{py}: neither a marker nor main() nor _start: {names}")
            i, j = names.index("key_spin"), names.index("callback")
            if i > cmain[-1]:
                # No symbol names the eval loop (sid's stripped 3.15): the Python frames
                # follow the whole native stack (docs/STACKS.md, "Unwind tables").
                whole.append(st)
                continue
            # (Debian's python3.11 is stripped: its static functions are module+offset.)
            check(any("sort" in x or x.startswith("[python") for x in names[i + 1:j]) and
                  all("line" not in f for f in st[i + 1:j]),
                  f"{py}: sorted()'s C frames between key_spin and callback: {names}")
            check(not any(x.startswith(("[unwind", "[truncated")) for x in names[:cmain[-1]]),
                  f"{py}: a whole native stack down to the C main(): {names}")
            whole.append(st)
        # Without frame pointers the stacks before the tables are loaded are cut.
        check(len(whole) >= (0.95 if fp else 0.5) * len(stacks), f"{py}: {len(whole)} of "
              f"{len(stacks)} stacks whole down to main()")
        if fp:
            fp_seen.append(py)
    if not fp_seen:
        raise Skip("no interpreter here was built with frame pointers (tests/tools/"
                   "install_sid_cpython.sh installs Debian's debug builds, which are); "
                   "the others passed")


def test_code_compiled_and_freed_in_a_loop_is_never_misnamed():
    """100 functions f_K, each from new source (defined on line K + 1 of gen_K.py, its body on
    the 3 lines after), each run for 20 ms of CPU and freed, one after the other, so their
    code objects, names and line tables reuse the same memory, often before the recorder
    reads them (samples drain every 20 ms): every frame named f_K is in gen_K.py at one of
    f_K's own lines, taken while f_K ran (the workload's clock: an identity BPF kept for
    a freed code object would name a later function after an earlier one, consistently),
    and most are named (those read after the free are not)."""
    need_root()
    # make check: the oldest and the newest frame layout (2 s of CPU each); every interpreter
    # with make check-python-versions
    pys = pythons()
    for py in pys if ALL_VERSIONS else pys[:1] + pys[-1:]:
        pid, truth, out = run_py(py, "exec", "100", "0.02")
        spans = truth["spans"]
        named = bad = late = 0
        for e in samples(out, pid):
            for f in py_frames(e):
                m = re.fullmatch(r"f_(\d+)", f["func"])
                if not m:
                    continue
                k = int(m.group(1))
                named += 1
                if f["file"] != f"gen_{k}.py" or f["line"] not in (k + 1, k + 2, k + 3, k + 4):
                    bad += 1
                if not spans[k][0] <= e["ts"] <= spans[k][1]:
                    late += 1
        check(named >= 500, f"{py}: {named} frames of the generated functions")
        eq(bad, 0, f"{py}: frames named after another function")
        eq(late, 0, f"{py}: frames named after a function that was not running then")


def test_deep_python_recursion_is_truncated_with_a_marker():
    """150 Python calls deep: 64 Python frames are read; the stack says it was cut."""
    need_root()
    py = pythons()[0]
    pid, _, out = run_py(py, "deep", "150", "0.5")
    deep = [e for e in samples(out, pid) if [f["func"] for f in py_frames(e)][:2] ==
            ["spin", "recurse"]]
    check(len(deep) > 50, f"{len(deep)} samples in spin")
    for e in deep:
        names = [f["func"] for f in py_frames(e)]
        eq(len(names), 64, "Python frames read")
        eq(set(names[1:]), {"recurse"}, "below spin")
        eq(e["stack"][-1]["func"], "[truncated]", "marker")


def test_generators_and_coroutines_show_their_callers():
    """A generator's and a coroutine's frames are not owned by the thread's C stack: both
    show spin on top and generators() below."""
    need_root()
    for py in pythons():
        pid, _, out = run_py(py, "gen", "0.3")  # ~150 samples of each
        chains = [[f["func"] for f in py_frames(e)] for e in samples(out, pid)]
        gen = [c for c in chains if c[:2] == ["spin", "gen_spin"]]
        coro = [c for c in chains if c[:2] == ["spin", "coro_spin"]]
        check(len(gen) > 20 and len(coro) > 20, f"{py}: {len(gen)} generator and "
              f"{len(coro)} coroutine samples")
        check(all(c[2:4] == ["generators", "main"] for c in gen), f"{py}: {gen[:1]}")
        check(all("generators" in c for c in coro), f"{py}: {coro[:1]}")


def test_attached_to_a_running_python():
    """-p on a python already running: its frames are named from the first inspection on."""
    need_root()
    py = pythons()[-1]
    w = spawn([py, WORK, "split", "4"])
    pid = int(w.stdout.readline().split()[1])
    r = Recorder("-t", "cpu", "--sample-rate", str(RATE), "-p", str(pid), "-d", "1")
    r.wait_ready()
    eq(r.wait(60), 0, f"recorder exit ({r.stderr[-400:]})")
    w.kill()  # recorded: its spin (4 s of CPU) need not go on while the samples are read
    evs = sorted(samples(r.out, pid), key=lambda e: e["ts"])
    # From the first inspection on: the samples before the recorder examined the interpreter
    # (later on a loaded machine, a share of a 1 s recording) carry no Python frames yet.
    first = next((i for i, e in enumerate(evs) if py_frames(e)), len(evs))
    after = evs[first:]
    # Enough samples for the share below to mean something: a 1 s recording of 4 spinning
    # threads gave 90 of 109 with the machine's both cores taken by other work.
    check(len(after) >= 40, f"{len(after)} of {len(evs)} samples after the inspection")
    named = [e for e in after if py_frames(e)[:1] and py_frames(e)[0]["func"] in
             ("inner_a", "inner_b")]
    check(len(named) >= 0.8 * len(after), f"{len(named)} of {len(after)} samples named "
          f"after the inspection ({first} before it)")


@alone("a system-wide recording (-a): other tests' processes would be traced by it")
def test_system_wide_names_the_frames_of_every_python():
    """-a: pythons of three builds already running (pyenv's, Debian's stripped 3.11, and the
    newest under /opt/cpython, or 3.12) are all found and read: most of each one's samples
    name inner_a or inner_b over outer, as when each is recorded alone."""
    need_root()
    pys = [p for p in (pyenv_python(12), debian_python(), opt_newest()) if p]
    check(len(pys) >= 2, f"interpreters {pys}")
    ws, pids = [], []
    for py in pys:
        w = spawn([py, WORK, "split", "6"])
        ws.append(w)
        pids.append(int(w.stdout.readline().split()[1]))
    r = Recorder("-a", "-t", "cpu", "--sample-rate", str(RATE), "-d", "1.5")
    r.wait_ready()
    eq(r.wait(90), 0, f"recorder exit ({''.join(r.stderr_lines)[-400:]})")
    for w in ws:
        w.kill()
    evs = [e for e in dump(r.out) if e["kind"] == "cpu_sample"]
    for py, pid in zip(pys, pids):
        # Once the python was read (args.gil says so); the first milliseconds' samples, while
        # the recording starts, come before and have native frames only.
        mine = [e for e in evs if e["pid"] == pid and "gil" in e["args"]]
        named = [e for e in mine if [f["func"] for f in py_frames(e)][:2] in
                 (["inner_a", "outer"], ["inner_b", "outer"])]
        # How many samples follow the read is the CPU the job got after it: a busy machine
        # left one python 33 in 1.5 s (100 were asked); a share needs a few dozen.
        check(len(mine) >= 20 and len(named) >= 0.9 * len(mine),
              f"{py}: {len(named)} of {len(mine)} samples name inner_X <- outer")


@alone("bpftrace probes libc's clock_gettime in every process of the machine")
def test_a_sample_in_a_uprobe_single_step_says_so():
    """Another tool's uprobe on glibc's clock_gettime, which the workload calls in a tight loop:
    many samples catch the thread in the kernel while it single-steps the probed instruction
    out of line ([uprobes], the page the kernel maps for that): the innermost frame says so,
    none is an unnamed address, and the Python frames still follow (but in the first
    milliseconds, before the running python was read)."""
    need_root()
    py = pyenv_python(12) or debian_python()
    if not shutil.which("bpftrace") or not py or not os.path.exists(LIBC):
        raise Skip("needs bpftrace, glibc and a python")
    w = spawn([py, WORK, "split", "8"])
    pid = int(w.stdout.readline().split()[1])
    bt, _ = bpftrace_live(f"uprobe:{LIBC}:clock_gettime /pid == {pid}/ {{ @n = count(); }}\n")
    r = Recorder("-t", "cpu", "--sample-rate", str(RATE), "-p", str(pid), "-d", "1")
    r.wait_ready()
    eq(r.wait(60), 0, f"recorder exit ({''.join(r.stderr_lines)[-400:]})")
    bt.kill()
    w.kill()
    evs = [e for e in samples(r.out, pid) if e.get("stack")]
    xol = [e for e in evs if e["stack"][0]["file"] == "[uprobes]"]
    check(len(xol) >= 10, f"{len(xol)} of {len(evs)} samples in the uprobe's single step")
    eq([e["stack"][0] for e in evs if e["stack"][0]["func"].startswith("[unknown")], [],
       "unnamed innermost frames")
    # Those before the running python was read have none (the first milliseconds; longer on a
    # loaded machine); from the first that has them on, they follow.
    xol.sort(key=lambda e: e["ts"])
    read = next((i for i, e in enumerate(xol) if py_frames(e)), len(xol))
    later = xol[read:]
    check(len(later) >= 5 and sum(bool(py_frames(e)) for e in later) >= 0.9 * len(later),
          f"Python frames under the single step: {sum(bool(py_frames(e)) for e in later)} of "
          f"the {len(later)} samples from the first that had them ({read} before)")


def test_an_interpreter_whose_frames_are_not_read_says_so():
    """CPython 3.7 (pyenv's): its samples have native frames only, and the recorder says once
    why, naming the interpreter, even for two such processes; `info` lists both."""
    need_root()
    py = pyenv_python(7)
    if not py:
        raise Skip("no pyenv CPython 3.7 to stand for an interpreter whose frames are not read")
    # 0.4 s of CPU each (not of wall time: on a loaded machine that was 171 samples once)
    spin = "import time\nt = time.process_time()\nwhile time.process_time() - t < 0.4: pass\n"
    p, out = record(["sh", "-c", f'"$0" -c "$1" & "$0" -c "$1"; wait', py, spin], "-t", "cpu",
                    "--sample-rate", str(RATE))
    eq(p.returncode, 0, f"record exit ({p.stderr[-400:]})")
    said = [l for l in p.stderr.splitlines()
            if "its Python frames, GIL holder and thread names are not read" in l]
    eq(len(said), 1, f"said once: {p.stderr[-600:]}")
    check("libpython3.7m.so" in said[0] and "CPython 3.7:" in said[0] and
          "before 3.8" in said[0], f"why: {said[0]}")
    rows = info(out)["python_unread"]
    eq([(r["version"], r["why"]) for r in rows],
       [("3.7", "CPython before 3.8 is not supported")] * 2, "info: each process")
    evs = [e for e in dump(out) if e["kind"] == "cpu_sample" and e.get("stack")]
    check(len(evs) >= 200, f"{len(evs)} samples with stacks")
    eq([e for e in evs if py_frames(e)], [], "Python frames")


def test_a_thread_that_released_the_gil_still_names_its_python_code():
    """A thread compressing with zlib (which releases the GIL) while the main thread spins in
    Python: its samples say it did not hold the GIL, and still name compress_loop at the
    line of the zlib call (its thread state found in the interpreter's list)."""
    need_root()
    line = marker_lines("NOGIL")
    for py in pythons(11):  # native_thread_id in thread states: 3.11+
        pid, truth, out = run_py(py, "nogil", "0.5")
        mine = [e for e in samples(out, pid) if e["tid"] == truth["tid"]]
        free = [e for e in mine if e["args"].get("gil") is False]
        check(len(free) >= 0.5 * len(mine), f"{py}: {len(free)} of {len(mine)} samples "
              f"without the GIL")
        named = [e for e in free if py_frames(e)[:1] and py_frames(e)[0]["func"] ==
                 "compress_loop" and py_frames(e)[0]["line"] in line]
        check(len(named) >= 0.9 * len(free), f"{py}: {len(named)} of {len(free)} samples "
              f"without the GIL name compress_loop at the zlib call")
