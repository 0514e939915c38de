"""tests/run_tests.py itself: a skipped case is counted as skipped (never as a pass), a failed
one as failed, and the run says what was skipped and why before its last line."""
import importlib.util
import os
import sys

from helpers import check, eq, run, tmpdir

# For tests/run_tests.py: about how long these tests take on CI's machine (its order).
SECONDS = 8

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
RUNNER = os.path.join(ROOT, "tests", "run_tests.py")

CASES = r"""
#include "unit.h"

static void test_passes(void) { ASSERT_EQ(1 + 1, 2, "sum"); }
static void test_fails(void) { ASSERT_EQ(1 + 1, 3, "sum"); }
static void test_skips(void) { UNIT_SKIP("no %s here", "widget"); }
static void test_fails_then_skips(void)
{
	ASSERT_TRUE(0, "first");
	UNIT_SKIP("too late");
}

int main(void)
{
	RUN_TEST(test_passes);
	RUN_TEST(test_fails);
	RUN_TEST(test_skips);
	RUN_TEST(test_fails_then_skips);
	return UNIT_EXIT();
}
"""


def test_unit_skip_is_counted_as_skipped():
    build = tmpdir()
    os.mkdir(os.path.join(build, "tests"))
    src = os.path.join(build, "cases.c")
    with open(src, "w") as f:
        f.write(CASES)
    run(["cc", "-O0", "-I", os.path.join(ROOT, "tests", "unit"), "-o",
         os.path.join(build, "tests", "test_cases"), src, "-lm"], check=True)
    p = run([sys.executable, RUNNER, "--build", build, "--no-fuzz", "--no-e2e"], timeout=60)
    lines = p.stdout.splitlines()
    eq(p.returncode, 1, f"a run with a failure fails: {p.stdout[-800:]}")
    eq(lines[-1], "1 passed, 2 failed, 1 skipped", "the last line")
    check("SKIP test_cases:test_skips: no widget here" in lines, f"the skip: {p.stdout}")
    check("FAIL test_cases:test_fails_then_skips: " in p.stdout, "a failure stays a failure")
    check(not any(l.startswith("PASS test_cases:test_skips") for l in lines),
          "the skipped case is no pass")
    i = lines.index("# 1 skipped, by cause:")
    check(lines[i + 1].split() == ["#", "1", "no", "widget", "here:", "test_cases:test_skips"],
          f"the summary: {lines[i:]}")
    check(i < len(lines) - 2, "the summary comes before the last line")


# Planted e2e modules for the phases: each test writes its start and end to $RUNNER_LOG; what
# each may see of the others is the order the runner promises, asked by files, not times.
PHASES = {
    "test_p_together.py": '''
from helpers import beside
from runner_marks import mark, wait_mark
def test_together():
    mark("together")
@beside("reads files only")
def test_reader():
    mark("reader", after=["together end"], then=lambda: wait_mark("alone start"))
''',
    "test_p_beside.py": '''
import time
from runner_marks import mark, wait_mark
BESIDE = "reads files only"
def go_on():
    wait_mark("alone start")
    wait_mark("alone end")
    time.sleep(2)  # ended last: a test that should wait for it has time to begin too early
def test_beside():
    mark("beside", after=["together end"], then=go_on)
''',
    "test_p_alone.py": '''
from helpers import alone
from runner_marks import mark, wait_mark
@alone("the machine's")
def test_alone():
    mark("alone", after=["together end"], then=lambda: wait_mark("beside start"))
''',
    "test_p_last.py": '''
from helpers import alone
from runner_marks import mark
@alone("the machine's next pid", exclusive=True)
def test_last():
    mark("last", after=["together end", "alone end", "beside end"])
''',
    "test_p_storm.py": '''
from runner_marks import mark
ALONE = "both cores"
EXCLUSIVE = True
def test_storm():
    mark("storm", after=["together end", "alone end", "beside end"])
''',
    "runner_marks.py": '''
import os, time
LOG = os.environ["RUNNER_LOG"]
def marks():
    with open(LOG) as f:
        return set(l.strip() for l in f)
def wait_mark(m, bound=60):
    t = time.time() + bound
    while m not in marks():
        assert time.time() < t, f"{m} never came: {marks()}"
        time.sleep(0.05)
def mark(name, after=(), then=None):
    for m in after:
        assert m in marks(), f"{name} began before {m}: {marks()}"
    with open(LOG, "a") as f:
        f.write(name + " start\\n")
    if then:
        then()
    with open(LOG, "a") as f:
        f.write(name + " end\\n")
''',
}


def planted(d, modules):
    """MODULES ({file: text}) written to D/e2e, and an empty D/marks: (their folder, marks)."""
    mods = os.path.join(d, "e2e")
    os.mkdir(mods)
    for name, text in modules.items():
        with open(os.path.join(mods, name), "w") as f:
            f.write(text.lstrip())
    log = os.path.join(d, "marks")
    open(log, "w").close()
    return mods, log


def test_beside_modules_run_beside_the_alone_ones_and_exclusive_last():
    """A module marked BESIDE runs in the phase of the tests run alone, at the same time as
    one (each waits for the other to begin), never with the jobs run together, and so does a
    test marked @beside(why) in a module whose other tests run together; a test marked
    @alone(why, exclusive=True), or of a module with EXCLUSIVE = True, begins once every other
    test has ended."""
    d = tmpdir()
    mods, log = planted(d, PHASES)
    build = os.path.join(d, "build")
    os.makedirs(os.path.join(build, "tests"))
    p = run([sys.executable, RUNNER, "--build", build, "--no-unit", "--no-fuzz", "--e2e", mods],
            timeout=300, env={**os.environ, "RUNNER_LOG": log})
    eq(p.stdout.splitlines()[-1], "6 passed, 0 failed", f"the run: {p.stdout[-1500:]}")
    with open(log) as f:
        order = [l.strip() for l in f]
    eq(sorted(order[-4:]), ["last end", "last start", "storm end", "storm start"],
       f"the exclusive tests last: {order}")


# make check's builds left for later (run_tests.py --build-later), planted: the unit tests'
# build waits for the planted e2e test to run, so that test ran while they were built; the
# fuzzers' build fails.
LATER_MK = """
test-units:
	grep ^policy /proc/self/sched > $(OUT)/policy
	touch $(OUT)/started
	for i in $$(seq 600); do [ -e $(OUT)/e2e-ran ] && break; sleep 0.1; done
	cc -O0 -I{unit} -o $(OUT)/tests/test_cases $(OUT)/cases.c -lm
test-fuzzers:
	@sleep 2; touch $(OUT)/fuzzers-ended; echo planted failure; exit 3
"""
WHILE_BUILT = '''
import os, time
def test_runs_while_the_units_are_built():
    out = os.environ["LATER_OUT"]
    t = time.time() + 60
    while not os.path.exists(os.path.join(out, "started")):
        assert time.time() < t, "the units' build never began"
        time.sleep(0.05)
    assert not os.path.exists(os.path.join(out, "tests", "test_cases")), "built before"
    open(os.path.join(out, "e2e-ran"), "w").close()
'''
ALONE_AFTER = '''
import os
from helpers import alone
@alone("no compiler beside it")
def test_alone_after_the_builds():
    assert os.path.exists(os.path.join(os.environ["LATER_OUT"], "fuzzers-ended")), "a build runs"
'''


def test_units_and_fuzzers_built_later_at_idle_priority_and_waited_for():
    """--build-later (make check): the unit tests and the fuzzers are built by make's
    test-units and test-fuzzers, one after the other, at idle priority (SCHED_IDLE), while the
    other tests run; a unit test runs once built, each job whose build failed fails with the
    build's own words, and the tests run alone begin once the builds have ended (no compiler
    beside a system-wide recording)."""
    d = tmpdir()
    build = os.path.join(d, "build")
    os.makedirs(os.path.join(build, "tests"))
    with open(os.path.join(build, "cases.c"), "w") as f:
        f.write(CASES)
    mk = os.path.join(d, "later.mk")
    with open(mk, "w") as f:
        f.write(LATER_MK.lstrip().replace("{unit}", os.path.join(ROOT, "tests", "unit")))
    mods = os.path.join(d, "e2e")
    os.mkdir(mods)
    with open(os.path.join(mods, "test_p_while_built.py"), "w") as f:
        f.write(WHILE_BUILT.lstrip())
    with open(os.path.join(mods, "test_p_alone_after.py"), "w") as f:
        f.write(ALONE_AFTER.lstrip())
    p = run([sys.executable, RUNNER, "--build", build, "--e2e", mods, "--build-later",
             f"-f {mk}"], timeout=300, env={**os.environ, "LATER_OUT": build})
    out = p.stdout
    eq(p.returncode, 1, f"a run whose build failed fails: {out[-1500:]}")
    eq(out.splitlines()[-1], "3 passed, 8 failed, 1 skipped", f"the run: {out[-2500:]}")
    check("PASS test_p_alone_after:test_alone_after_the_builds" in out,
          f"the tests run alone begin once the builds have ended: {out[-2500:]}")
    check("PASS test_p_while_built:test_runs_while_the_units_are_built" in out, out[-2500:])
    check("PASS test_cases:test_passes" in out, f"the unit test ran once built: {out[-2500:]}")
    with open(os.path.join(build, "policy")) as f:
        eq(f.read().split(), ["policy", ":", "5"], "the build's scheduling policy: SCHED_IDLE")
    fuzz = [l for l in out.splitlines() if l.startswith("FAIL fuzz:")]
    eq(len(fuzz), 6, f"every fuzzer's job failed: {out[-2500:]}")
    for l in fuzz:
        check("not built: make test-fuzzers failed (exit 2; " in l, l)
    check(out.count("planted failure") >= 6, f"the build's words: {out[-2500:]}")


# The fuzzers beside the exclusive tests (run_tests.py's fuzz lane), planted: a fuzzer that
# says its scheduling policy and runs until the exclusive test that lets fuzzers beside it has
# begun; an exclusive test that does not, after it.
FAKE_FUZZER = """#!/bin/sh
grep ^policy /proc/self/sched > "$LATER_OUT/fuzz-policy"
echo "fuzz start" >> "$RUNNER_LOG"
for i in $(seq 600); do grep -q "storm start" "$RUNNER_LOG" && break; sleep 0.1; done
echo "fuzz end" >> "$RUNNER_LOG"
echo "Done 1 runs in 0 second(s)" >&2
"""
FUZZ_PHASES = {
    "test_py_storm.py": '''
from runner_marks import mark, wait_mark
ALONE = "both cores"
EXCLUSIVE = True
FUZZERS_BESIDE = "they take no core it wants"
def test_storm():
    # The fuzzer at idle priority starts with this test and runs when a core is idle: on a
    # loaded machine (the suite's own jobs) it may not have run yet. It waits for this
    # test's start before it ends, so "storm start" before "fuzz end" says they ran beside.
    wait_mark("fuzz start", bound=240)
    mark("storm")
''',
    "test_py_quiet.py": '''
from helpers import alone
from runner_marks import mark
@alone("the machine's next pid", exclusive=True)
def test_quiet():
    mark("quiet", after=["fuzz end", "storm end"])
''',
    "runner_marks.py": PHASES["runner_marks.py"],
}


def run_with_fuzzer(script, modules):
    """The runner over the planted MODULES, with SCRIPT as its only fuzzer (fuzz_pylines):
    (its CompletedProcess, the build folder, the marks' file)."""
    d = tmpdir()
    build = os.path.join(d, "build")
    os.makedirs(os.path.join(build, "tests"))
    fuzzer = os.path.join(build, "tests", "fuzz_pylines")
    with open(fuzzer, "w") as f:
        f.write(script)
    os.chmod(fuzzer, 0o755)
    mods, log = planted(d, modules)
    p = run([sys.executable, RUNNER, "--build", build, "--no-unit", "--e2e", mods, "-k", "py"],
            timeout=300, env={**os.environ, "RUNNER_LOG": log, "LATER_OUT": build})
    return p, build, log


def test_fuzzers_run_at_idle_priority_beside_the_exclusive_tests_that_let_them():
    """The fuzzers run at idle priority (SCHED_IDLE) beside the tests run alone, an exclusive
    test marked FUZZERS_BESIDE (a storm taking both cores) included; an exclusive test not so
    marked begins once they have ended."""
    p, build, log = run_with_fuzzer(FAKE_FUZZER, FUZZ_PHASES)
    eq(p.stdout.splitlines()[-1], "3 passed, 0 failed", f"the run: {p.stdout[-1500:]}")
    with open(log) as f:
        order = [l.strip() for l in f]
    # (the fuzzer waits for the storm's start: run one after the other, it would end first)
    check(order.index("storm start") < order.index("fuzz end"),
          f"the fuzzer ran beside the storm: {order}")
    eq(order[-2:], ["quiet start", "quiet end"], "the quiet test after both")
    with open(os.path.join(build, "fuzz-policy")) as f:
        eq(f.read().split(), ["policy", ":", "5"], "the fuzzer's scheduling policy: SCHED_IDLE")


# A fuzzer that says its scheduling policy as it starts (beside a test run alone) and once
# that test has ended: by then nothing of the run's wants a core, and idle priority would only
# yield to the machine's other load.
PROMOTED_FUZZER = """#!/bin/sh
grep ^policy /proc/$$/sched > "$LATER_OUT/fuzz-policy"
echo "fuzz start" >> "$RUNNER_LOG"
for i in $(seq 600); do grep -q "alone end" "$RUNNER_LOG" && break; sleep 0.1; done
for i in $(seq 600); do grep -q "^policy *: *0$" /proc/$$/sched && break; sleep 0.1; done
grep ^policy /proc/$$/sched > "$LATER_OUT/fuzz-policy-after"
echo "Done 1 runs in 0 second(s)" >&2
"""
PROMOTE_PHASES = {
    "test_py_alone.py": '''
from runner_marks import mark, wait_mark
ALONE = "a system-wide recording"
def test_alone():
    wait_mark("fuzz start", bound=240)  # its first policy said while this test runs
    mark("alone")
''',
    "runner_marks.py": PHASES["runner_marks.py"],
}


def test_fuzzers_run_at_the_normal_priority_once_no_test_runs():
    """The fuzzers run at idle priority while a test runs beside them, and at the normal one
    once none does (the run's last minute, the runner waiting on them alone): a machine whose
    other load takes every core (CI shares its two) no longer starves them until their 900 s
    run out, as it did a run beside two busy loops."""
    p, build, _ = run_with_fuzzer(PROMOTED_FUZZER, PROMOTE_PHASES)
    eq(p.stdout.splitlines()[-1], "2 passed, 0 failed", f"the run: {p.stdout[-1500:]}")
    with open(os.path.join(build, "fuzz-policy")) as f:
        eq(f.read().split(), ["policy", ":", "5"], "beside the test: SCHED_IDLE")
    with open(os.path.join(build, "fuzz-policy-after")) as f:
        eq(f.read().split(), ["policy", ":", "0"], "once no test runs: SCHED_OTHER")


def test_every_module_says_how_long_it_takes():
    """Every e2e module says SECONDS, about how long its tests take on CI's machine: a fresh
    clone (CI's) has no times of a last run, and a module without it started last (test_cli's
    17 s job was, the run's end waiting on it with a core idle)."""
    spec = importlib.util.spec_from_file_location("run_tests", RUNNER)
    runner = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(runner)
    # As the runner reads them (its module settings), not a parse of our own.
    missing = [f for f, (settings, _) in sorted(runner.e2e_modules().items())
               if not (isinstance(settings.get("SECONDS"), (int, float)) and
                       settings["SECONDS"] > 0)]
    eq(missing, [], "modules without SECONDS = N (seconds, > 0)")


PARAMS_MODULE = '''
import os
SECONDS = 1
SPLIT = True
PARAMS = ("a", "b")


def mark(what):
    with open(os.environ["RUNNER_LOG"], "a") as f:
        f.write(f"{what} {os.getpid()}\\n")


def test_each(value):
    mark(f"each {value}")
    assert value != "b" or os.environ.get("FAIL_B") is None, "b fails"


def test_once():
    mark("once")
'''


def test_params_run_each_test_once_per_value_in_one_job():
    """A module's PARAMS: a test that takes an argument runs once per value, named
    test_x[VALUE], its values in one job even under SPLIT (one process: what the module keeps
    serves them all); a test without one runs once; -k selects a value; a failure names it."""
    d = tmpdir()
    mods, log = planted(d, {"test_planted_params.py": PARAMS_MODULE})
    build = os.path.join(d, "build")
    os.makedirs(os.path.join(build, "tests"))
    env = {**os.environ, "RUNNER_LOG": log, "FAIL_B": "1"}
    p = run([sys.executable, RUNNER, "--build", build, "--no-unit", "--no-fuzz", "--e2e", mods],
            timeout=300, env=env)
    eq(p.stdout.splitlines()[-1], "2 passed, 1 failed", f"the run: {p.stdout[-1500:]}")
    check("FAIL test_planted_params:test_each[b]: AssertionError: b fails" in p.stdout,
          f"the failure names its value: {p.stdout[-1500:]}")
    with open(log) as f:
        marks = [l.split() for l in f]
    each = [m for m in marks if m[0] == "each"]
    eq(sorted(m[1] for m in each), ["a", "b"], f"once per value: {marks}")
    eq(len({m[2] for m in each}), 1, f"both values in one job (one process): {marks}")
    eq([m[0] for m in marks].count("once"), 1, f"the test without an argument once: {marks}")
    open(log, "w").close()
    p = run([sys.executable, RUNNER, "--build", build, "--no-unit", "--no-fuzz", "--e2e", mods,
             "-k", "test_each[a]"], timeout=300, env=env)
    eq(p.stdout.splitlines()[-1], "1 passed, 0 failed", f"-k test_each[a]: {p.stdout[-800:]}")
