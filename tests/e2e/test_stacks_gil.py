"""--stacks=gil (on by default with -t gil): a GIL wait carries the waiter's stack and the
holder's Python stack, read from the holder's thread state when each round of the wait
began; gil_stacks sums the waits by the holders' and the waiters' lines.
Workload: tests/workloads/gil_work.py (its source says which line holds the GIL when)."""
import os

import pymods
from helpers import Recorder, Skip, check, dump, eq, need_root, record, run, spawn, stats, tell
from test_gil import WORK, debian_python, need_pyenv, truth_of

# For tests/run_tests.py: about how long these tests take on CI's machine (its order).
SECONDS = 21

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


# Every step's GIL re-takes wait on the tokenizer (tens per step, idle or loaded): 20 steps
# give far more than the 10 waits the test asks for.
TORCH_STEPS = 20
TORCH_TOKENIZE = os.path.realpath(os.path.join(os.path.dirname(__file__), "..", "workloads",
                                               "torch_tokenize.py"))


def test_torch_trainer_waits_on_tokenize():
    """Issue 13's case: Debian's python3-torch (CPU, stripped /usr/bin/python3.11) trains while
    a thread runs a pure-Python tokenize(); attached with -p, gil_blocked_by says the trainer
    waited on the tokenizer thread and the holder stacks name tokenize() in its file as the
    code it waited on (most of the trainer's wait; a holder row of gil_stacks)."""
    need_root()
    py = debian_python()
    if not pymods.has(py, "torch"):
        raise Skip("Debian's python3-torch is not installed (apt-get install python3-torch, "
                   "or make deps)")
    w = spawn([py, TORCH_TOKENIZE, "--go", str(TORCH_STEPS)])
    line = w.stdout.readline()
    check(line.startswith("ready"), f"workload: {line} {'' if line else w.stderr.read()[-300:]}")
    pid = int(line.split()[1])
    rec = Recorder("-t", "gil", "-p", str(pid))
    rec.wait_ready()
    tell(w, "go")
    truth = truth_of(w.stdout.readline())
    rec.flush()  # named while the process lives
    tell(w, "end")
    eq(w.wait(60), 0, "workload exit")
    eq(rec.wait(60), 0, f"record exit ({rec.stderr[-400:]})")
    eq(truth["steps"], TORCH_STEPS, "training steps")
    trainer, tokenizer = truth["threads"]["trainer"], truth["threads"]["tokenizer"]
    s = stats(rec.out, "gil_blocked_by,gil_stacks")
    by = {(b["waiter_tid"], b["holder_tid"]): b for b in s["gil_blocked_by"] if b["pid"] == pid}
    check((trainer, tokenizer) in by, f"the trainer waited on the tokenizer: {list(by)}")
    eq(by[(trainer, tokenizer)]["holder_name"], "tokenizer", "holder thread name")
    # The trainer's waits, by the holder's innermost function when each began.
    rounds = {}
    for e in dump(rec.out):
        if e["kind"] == "gil_wait" and e["tid"] == trainer and e.get("holder_stack"):
            f = e["holder_stack"][0]
            key = (f["func"], os.path.realpath(f["file"]))
            rounds[key] = rounds.get(key, 0) + e["dur"]
    check(rounds, "holder stacks on the trainer's waits")
    waits = by[(trainer, tokenizer)]["wait_count"]
    check(waits >= 10, f"the trainer waited on the tokenizer {waits} times ({TORCH_STEPS} steps)")
    top = max(rounds, key=rounds.get)
    eq(top, ("tokenize", TORCH_TOKENIZE), f"the code the trainer waited on most: {rounds}")
    check(rounds[top] >= 0.5 * sum(rounds.values()), f"tokenize's share: {rounds}")
    print(f"  trainer: {waits} waits on the tokenizer; by holder code: {rounds}")
    # gil_stacks sums every waiter's rounds (the tokenizer also waits, on the trainer's
    # queue code): tokenize is among its holder rows, in its file, with a real share.
    holders = [r for r in s["gil_stacks"] if r["role"] == "holder"]
    tok = [r for r in holders if r["func"] == "tokenize"]
    eq({os.path.realpath(r["file"]) for r in tok}, {TORCH_TOKENIZE}, "gil_stacks: tokenize")
    check(sum(r["total_ns"] for r in tok) >= 0.1 * sum(r["total_ns"] for r in holders),
          f"gil_stacks: tokenize's share of the holders' time: {holders}")
