"""--stacks=gil (on by default with -t gil): a GIL wait carries the waiter's stack and the
holder's Python stack, read from the holder's thread state when each round of the wait
began; gil_stacks sums the waits by the holders' and the waiters' lines.
Workload: tests/workloads/gil_work.py (its source says which line holds the GIL when)."""
import os

from helpers import check, dump, eq, need_root, record, stats
from test_gil import WORK, need_pyenv, truth_of

WORK = os.path.realpath(WORK)


def line_of(text):
    with open(WORK) as f:
        return [i + 1 for i, l in enumerate(f) if text in l][0]


def py_frames(stack):
    return [(f["func"], f["line"]) for f in stack or [] if "line" in f]


def test_a_wait_names_the_holders_code_and_its_own():
    """hold: the main thread keeps the GIL through C calls (ctypes.PyDLL) while "spinner"
    waits: the wait's holder_stack is mode_hold at the first of those calls (the one running
    when the wait began), its stack the spinner at its sleep; gil_stacks blames the whole
    wait on that holder line and on that waiter line."""
    need_root()
    py = need_pyenv()
    p, out = record([py, WORK, "hold", "300"], "-t", "gil")
    eq(p.returncode, 0, f"record ({p.stderr[-400:]})")
    truth = truth_of(p.stdout)
    spinner = truth["threads"]["spinner"]["tid"]
    waits = [e for e in dump(out) if e["kind"] == "gil_wait" and e["tid"] == spinner]
    long = [e for e in waits if e["dur"] >= truth["threads"]["holder"]["call_ns"]]
    eq(len(long), 1, f"the spinner's wait through the call: {[w['dur'] for w in waits]}")
    w = long[0]
    hold_line = line_of("pylibc.usleep(100000)")
    eq(py_frames(w.get("holder_stack"))[0], ("mode_hold", hold_line), "the holder's code")
    eq(py_frames(w.get("stack"))[0], ("mode_hold.<locals>.spinner",
                                      line_of("time.sleep(0.002)")), "the waiter's line")
    rows = {(r["role"], r["func"], r["line"]): r for r in stats(out, "gil_stacks")["gil_stacks"]}
    holder = rows[("holder", "mode_hold", hold_line)]
    check(holder["total_ns"] >= w["dur"] * 0.99, f"holder row {holder} for a {w['dur']} wait")
    eq(os.path.realpath(holder["file"]), WORK, "holder file")


def test_cpu_bound_holders_are_the_spinning_lines():
    """cpu: three threads spin in spin_until; nearly all the waiting is blamed on its lines
    (the rest: thread start-up), and every wait with a record has a holder stack."""
    need_root()
    py = need_pyenv()
    p, out = record([py, WORK, "cpu", "3", "1"], "-t", "gil")
    eq(p.returncode, 0, f"record ({p.stderr[-400:]})")
    rows = stats(out, "gil_stacks")["gil_stacks"]
    holders = [r for r in rows if r["role"] == "holder"]
    total = sum(r["total_ns"] for r in holders)
    spin = sum(r["total_ns"] for r in holders if r["func"] == "spin_until")
    check(total and spin >= 0.9 * total, f"spin_until holds {spin} of {total} ns")
    first, last = line_of("def spin_until"), line_of("def cpu_thread") - 1
    check(all(first <= r["line"] <= last for r in holders if r["func"] == "spin_until"),
          "spin_until's own lines")
    waits = [e for e in dump(out) if e["kind"] == "gil_wait"]
    check(waits, "waits")
    with_holder = [e for e in waits if e.get("holder_stack")]
    check(len(with_holder) >= 0.9 * len(waits), f"{len(with_holder)} of {len(waits)} waits "
          f"with the holder's stack")


def test_stacks_none_turns_them_off():
    need_root()
    py = need_pyenv()
    p, out = record([py, WORK, "hold", "100"], "-t", "gil", "--stacks=none")
    eq(p.returncode, 0, f"record ({p.stderr[-400:]})")
    evs = dump(out)
    eq([e for e in evs if "stack" in e or "holder_stack" in e], [], "no stacks")
    eq(stats(out, "gil_stacks")["gil_stacks"], [], "no gil_stacks rows")


def test_without_bpf_loop_gil_records_without_stacks_and_asked_stacks_are_refused():
    """Stacks need bpf_loop (Linux 5.17+). Its absence forced (BPFSIGHT_NO_BPF_LOOP=1, the
    switch the feature probe honours): -t gil records its waits without stacks and says so;
    --stacks and -t cpu are refused, saying why."""
    import subprocess
    from helpers import BPFSIGHT, tmpdir
    need_root()
    py = need_pyenv()
    env = dict(os.environ, BPFSIGHT_NO_BPF_LOOP="1")
    out = os.path.join(tmpdir(), "t.bst")
    p = subprocess.run([BPFSIGHT, "record", "-o", out, "-t", "gil", "--", py, WORK, "hold",
                        "100"], capture_output=True, text=True, env=env, timeout=120)
    eq(p.returncode, 0, f"record ({p.stderr[-300:]})")
    check("no stacks on GIL waits" in p.stderr, p.stderr)
    evs = dump(out)
    check([e for e in evs if e["kind"] == "gil_wait"], "waits recorded")
    eq([e for e in evs if "stack" in e or "holder_stack" in e], [], "no stacks")
    for opts in (["-t", "gil", "--stacks=gil"], ["-t", "cpu"]):
        p = subprocess.run([BPFSIGHT, "record", "-o", out, "-f", *opts, "--", "/bin/true"],
                           capture_output=True, text=True, env=env, timeout=60)
        eq(p.returncode, 1, f"{opts}")
        check("bpf_loop" in p.stderr and "5.17" in p.stderr, f"{opts}: {p.stderr}")
