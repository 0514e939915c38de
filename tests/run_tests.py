#!/usr/bin/env python3
"""bpfsight's test runner (make check).

Runs, in order: the C unit-test binaries (build/tests/test_*; each prints "ok - NAME" or
"not ok - NAME: why" per case), short libFuzzer runs of the trace reader, the record
decoders and reports, and the cupti-shim batch unpacker (FUZZERS), and the end-to-end
tests (tests/e2e/test_*.py: every function named test_*), which drive the real
build/bpfsight against the real kernel. Prints one line per test; then, when some were
skipped, how many for each cause (the reason a test gave); and ends with "N passed, N failed"
(", N skipped" when some were skipped). A unit case that prints "skip - NAME: why" (UNIT_SKIP
in tests/unit/unit.h) counts as skipped, never as passed.

  tests/run_tests.py [--build DIR] [-k SUBSTRING] [--no-unit] [--no-fuzz] [--no-e2e]
"""
import argparse
import importlib.util
import os
import subprocess
import sys
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


class Skip(Exception):
    """Raised by a test that cannot run here (the reason is printed)."""


class Results:
    def __init__(self):
        self.passed = self.failed = self.skipped = 0
        self.failures = []
        self.skips = {}  # cause -> names of the tests it skipped

    def ok(self, name, secs=None):
        self.passed += 1
        print(f"PASS {name}" + (f" ({secs:.1f}s)" if secs is not None else ""), flush=True)

    def fail(self, name, why):
        self.failed += 1
        self.failures.append(name)
        print(f"FAIL {name}: {why}", flush=True)

    def skip(self, name, why):
        self.skipped += 1
        self.skips.setdefault(why, []).append(name)
        print(f"SKIP {name}: {why}", flush=True)

    def skip_summary(self):
        """Skips by cause, most first: a green run that skipped something says what."""
        if not self.skips:
            return
        print(f"# {self.skipped} skipped, by cause:")
        for why, names in sorted(self.skips.items(), key=lambda kv: (-len(kv[1]), kv[0])):
            shown = ", ".join(names[:3]) + (f", ... ({len(names) - 3} more)"
                                             if len(names) > 3 else "")
            print(f"#   {len(names):3d}  {why}: {shown}")


def run_units(build, res, pattern):
    tests_dir = os.path.join(build, "tests")
    bins = sorted(f for f in os.listdir(tests_dir)
                  if f.startswith("test_") and not f.endswith(".d"))
    if not bins:
        res.fail("unit", f"no unit-test binaries in {tests_dir}: run make test-build")
    for b in bins:
        if pattern and pattern not in b:
            continue
        path = os.path.join(tests_dir, b)
        try:
            p = subprocess.run([path], capture_output=True, text=True, timeout=600)
        except subprocess.TimeoutExpired:
            res.fail(b, "timed out after 600 s")
            continue
        cases = 0
        for line in p.stdout.splitlines():
            if line.startswith("ok - "):
                res.ok(f"{b}:{line[5:]}")
                cases += 1
            elif line.startswith("not ok - "):
                name, _, why = line[9:].partition(": ")
                res.fail(f"{b}:{name}", why)
                cases += 1
            elif line.startswith("skip - "):
                name, _, why = line[7:].partition(": ")
                res.skip(f"{b}:{name}", why)
                cases += 1
            elif line.startswith("# "):
                print(f"     {b} {line}")
        if p.returncode != 0 and cases == 0:
            res.fail(b, f"exit {p.returncode} without results: {p.stderr.strip()[-500:]}")
        elif p.returncode not in (0, 1):
            res.fail(b, f"crashed (exit {p.returncode}): {p.stderr.strip()[-500:]}")


# (fuzzer, its seeds under tests/fuzz, seconds): every seed runs first, then new inputs. A
# failing input is kept as build/tests/FUZZER-crash-* (the output names it).
FUZZERS = [("fuzz_reader", "seeds", 20), ("fuzz_decode", "seeds-decode", 10),
           ("fuzz_shim_unpack", "seeds-shim_unpack", 10), ("fuzz_pylines", "seeds-pylines", 5)]


def run_fuzz(build, res, pattern):
    import tempfile
    for fz, seeds, secs in FUZZERS:
        name = f"{fz}:short"
        if pattern and pattern not in name:
            continue
        fuzzer = os.path.join(build, "tests", fz)
        if not os.path.exists(fuzzer):
            res.fail(name, f"{fuzzer} missing: run make test-build")
            continue
        with tempfile.TemporaryDirectory() as corpus:
            t0 = time.time()
            p = subprocess.run([fuzzer, f"-max_total_time={secs}", "-timeout=10",
                                "-rss_limit_mb=2048", f"-artifact_prefix={fuzzer}-", corpus,
                                os.path.join(ROOT, "tests", "fuzz", seeds)],
                               capture_output=True, text=True, timeout=300)
            if p.returncode == 0:
                last = [l for l in p.stderr.splitlines() if l.startswith("Done")]
                res.ok(f"{name} {last[-1] if last else ''}".strip(), time.time() - t0)
            else:
                res.fail(name, p.stderr.strip()[-1500:])


def load_module(path):
    spec = importlib.util.spec_from_file_location(os.path.basename(path)[:-3], path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def run_e2e(build, res, pattern):
    e2e = os.path.join(HERE, "e2e")
    sys.path.insert(0, e2e)
    os.environ["BPFSIGHT_BUILD"] = os.path.abspath(build)
    import helpers  # noqa: E402  (tests/e2e/helpers.py)
    helpers.Skip = Skip
    for f in sorted(os.listdir(e2e)):
        if not (f.startswith("test_") and f.endswith(".py")):
            continue
        mod = load_module(os.path.join(e2e, f))
        for name in sorted(n for n in dir(mod) if n.startswith("test_")):
            full = f"{f[:-3]}:{name}"
            if pattern and pattern not in full:
                continue
            t0 = time.time()
            try:
                getattr(mod, name)()
                res.ok(full, time.time() - t0)
            except Skip as e:
                res.skip(full, str(e))
            except Exception as e:  # a test's failure, whatever it is
                tb = traceback.format_exc().strip().splitlines()
                where = next((l.strip() for l in reversed(tb) if l.strip().startswith("File")), "")
                res.fail(full, f"{type(e).__name__}: {e} [{where}]")
            finally:
                helpers.cleanup()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("-k", dest="pattern", default=None, help="run tests whose name has this")
    ap.add_argument("--no-unit", action="store_true")
    ap.add_argument("--no-fuzz", action="store_true")
    ap.add_argument("--no-e2e", action="store_true")
    args = ap.parse_args()
    os.chdir(ROOT)
    res = Results()
    t0 = time.time()
    if not args.no_unit:
        run_units(args.build, res, args.pattern)
    if not args.no_fuzz:
        run_fuzz(args.build, res, args.pattern)
    if not args.no_e2e:
        run_e2e(args.build, res, args.pattern)
    res.skip_summary()
    print(f"# {time.time() - t0:.0f} s" + (f"; failed: {', '.join(res.failures)}"
                                          if res.failures else ""))
    line = f"{res.passed} passed, {res.failed} failed"
    if res.skipped:
        line += f", {res.skipped} skipped"
    print(line)
    # A run that executed nothing is not a green run.
    return 1 if res.failed or res.passed == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
