#!/usr/bin/env python3
"""Every ELF file matching the globs (default: this machine's libraries and programs, CUDA's,
pyenv's libpythons, torch's) compared with readelf -wF row by row (tests/e2e/unwind_readelf.py),
the table from build/tests/unwind_dump. Prints a line per file that differs (FAIL), has no
table (ERR: no unwind section, not x86-64), or had FDEs refused or cut (NOTE), then the counts;
exits 1 when one differs. Files over MAX_MB are left out (readelf's output of libtorch_cpu
takes a minute of Python).

    make check-unwind-tables            # ~8 min on 2 loaded cores
    tests/tools/unwind_sweep.py [--build DIR] [--max-mb N] [GLOB...]
"""
import argparse
import glob
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e"))
import unwind_readelf  # noqa: E402

GLOBS = ["/usr/lib/x86_64-linux-gnu/*.so*", "/usr/bin/*", "/usr/local/cuda/lib64/*.so*",
         os.path.expanduser("~/.pyenv/versions/*/lib/libpython*.so*"),
         "/usr/lib/python3/dist-packages/torch/lib/*.so*"]


def elf_files(globs, max_mb):
    seen = set()
    for pat in globs:
        for p in sorted(glob.glob(pat)):
            r = os.path.realpath(p)
            if r in seen or not os.path.isfile(r) or os.path.getsize(r) > max_mb * 1e6:
                continue
            seen.add(r)
            with open(r, "rb") as f:
                if f.read(4) == b"\x7fELF":
                    yield r


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default=os.path.join(os.path.dirname(__file__), "..", "..",
                                                    "build"))
    ap.add_argument("--max-mb", type=float, default=60)
    ap.add_argument("globs", nargs="*")
    args = ap.parse_args()
    dump = os.path.join(args.build, "tests", "unwind_dump")
    counts = {"ok": 0, "fail": 0, "err": 0}
    for p in elf_files(args.globs or GLOBS, args.max_mb):
        d = subprocess.run([dump, p], capture_output=True, text=True)
        if d.returncode:
            print("ERR", p, d.stderr.strip()[:200], flush=True)
            counts["err"] += 1
            continue
        table, rows = unwind_readelf.table(d.stdout)
        sections = [(p, ".eh_frame")] + ([(p, ".debug_frame")] if table["sources"] & 2 else [])
        try:
            unwind_readelf.compare(p, rows, sections)
            counts["ok"] += 1
        except AssertionError as e:
            print("FAIL", p, str(e)[:600], flush=True)
            counts["fail"] += 1
            continue
        bad = {k: table[k] for k in ("fdes_refused", "fdes_bad", "sections_cut") if table[k]}
        if bad:
            print("NOTE", p, bad, flush=True)
    print(" ".join(f"{k} {v}" for k, v in counts.items()))
    return 1 if counts["fail"] else 0


if __name__ == "__main__":
    sys.exit(main())
