"""Which folder may include which: every #include "..." of user/ and bpf/ follows the tables of
docs/ARCHITECTURE.md's "Layers" section (tools/check_layers.py reads them there, so the rules
and the check cannot drift), and the check names what breaks them (planted in a copy)."""
import os
import shutil
import sys

from helpers import ROOT, check, eq, run, tmpdir

CHECK = os.path.join(ROOT, "tools", "check_layers.py")


def check_layers(root):
    return run([sys.executable, CHECK, "--root", root])


def test_includes_follow_the_layers():
    p = check_layers(ROOT)
    eq(p.returncode, 0, f"layers broken:\n{p.stdout}{p.stderr}")
    check("follow docs/ARCHITECTURE.md" in p.stdout, f"summary line: {p.stdout!r}")


def plant(path, after, line):
    """Add LINE after the first line of PATH that is AFTER; returns its line number."""
    with open(path) as f:
        lines = f.readlines()
    i = lines.index(after + "\n")
    lines.insert(i + 1, line + "\n")
    with open(path, "w") as f:
        f.writelines(lines)
    return i + 2


def test_a_planted_violation_is_named():
    d = tmpdir()
    for sub in ("user", "bpf"):
        shutil.copytree(os.path.join(ROOT, sub), os.path.join(d, sub))
    os.makedirs(os.path.join(d, "docs"))
    shutil.copy(os.path.join(ROOT, "docs", "ARCHITECTURE.md"), os.path.join(d, "docs"))
    eq(check_layers(d).returncode, 0, "the copy passes before anything is planted")

    core = plant(os.path.join(d, "user", "core", "trace_walk.c"), '#include "trace_walk.h"',
                 '#include "commands.h"')
    pair = plant(os.path.join(d, "user", "families", "osrt", "osrt.h"), '#include "family.h"',
                 '#include "gil.h"')
    p = check_layers(d)
    eq(p.returncode, 1, f"planted violations fail the check: {p.stdout}")
    lines = p.stdout.splitlines()
    eq(len(lines), 2, f"one line per violation: {lines}")
    eq(lines[0], f'user/core/trace_walk.c:{core}: #include "commands.h": core may not include '
       f'cli; core may include: lib (docs/ARCHITECTURE.md, "Layers")', "core -> cli named")
    check(lines[1].startswith(f'user/families/osrt/osrt.h:{pair}: #include "gil.h": family osrt '
                              f'includes family gil, which is not a listed pair'),
          f"an unlisted family pair named: {lines[1]}")
