"""House style holds: every C source and header of the tree is as clang-format makes it
(.clang-format: the kernel's style, 100 columns; hand-aligned tables are fenced with
`// clang-format off` / `on`). `make format` rewrites the files a change touched."""
import os
import shutil
import subprocess

from helpers import Skip, check, run

# For tests/run_tests.py: about how long these tests take on CI's machine (its order).
SECONDS = 6

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")


def c_sources():
    p = run(["git", "-C", ROOT, "ls-files", "-z", "--", "*.c", "*.h"])
    if p.returncode != 0:
        raise Skip("not a git checkout: no list of tracked sources")
    return [f for f in p.stdout.split("\0") if f and not f.startswith("vmlinux/")]


def test_sources_are_clang_formatted():
    if not shutil.which("clang-format"):
        raise Skip("no clang-format (make deps installs it)")
    files = c_sources()
    check(len(files) > 100, f"only {len(files)} C files found")
    bad = []
    for i in range(0, len(files), 50):
        p = subprocess.run(["clang-format", "--dry-run", "--Werror", *files[i:i + 50]],
                           cwd=ROOT, capture_output=True, text=True)
        if p.returncode:
            bad += sorted({l.split(":")[0] for l in p.stderr.splitlines()
                           if ": error:" in l})
    check(not bad, f"not clang-formatted (run make format): {', '.join(bad[:20])}")
