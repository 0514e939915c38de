"""tests/run_tests.py itself: a skipped case is counted as skipped (never as a pass), a failed
one as failed, and the run says what was skipped and why before its last line."""
import os
import sys

from helpers import check, eq, run, tmpdir

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
