#!/usr/bin/env python3
"""Do two builds read traces alike? Every reader's output, byte for byte.

For each trace, both binaries run `info` (text, --json), `dump`, `stats` (every report; table,
json, csv), every `export` format and `report`; the outputs are compared by sha256. For
refactors that must not change what a user reads (the layout move of issue 28).

  tests/tools/same_outputs.py OLD_BINARY NEW_BINARY TRACE_OR_DIR... [-j N]

Build NEW with OLD's version string (make OUT=DIR VERSION=...): exports name it. Traces: .bst files, directories of them (e.g. the BPFSIGHT_KEEP_TRACES=DIR of a test run) and
../shared/traces. Exit status 0 when every output is identical, 1 otherwise (the differing
ones are listed with the first differing line).
"""
import argparse
import concurrent.futures
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile

EXPORTS = ["perfetto", "chrome", "sqlite", "folded", "pprof", "svg", "folded-offcpu"]


def commands(trace, out):
    """(name, argv, output file or None for stdout)."""
    yield "info", ["info", trace], None
    yield "info-json", ["info", "--json", trace], None
    yield "dump", ["dump", trace], None
    yield "stats", ["stats", trace], None
    for fmt in ("json", "csv"):
        yield f"stats-all-{fmt}", ["stats", "-r", "all", "--format", fmt, trace], None
    for fmt in EXPORTS:
        path = os.path.join(out, f"x.{fmt}")
        yield f"export-{fmt}", ["export", trace, "--format", fmt, "-o", path, "--force"], path
    path = os.path.join(out, "x.html")
    yield "report", ["report", trace, "-o", path, "--force"], path


def digest(binary, trace, reports, out):
    """Outputs go to OUT, the same directory for both binaries: some name it (traceName)."""
    res = {}
    if True:
        for name, argv, path in commands(trace, out):
            if argv[:3] == ["stats", "-r", "all"]:
                argv = ["stats", "-r", reports] + argv[3:]
            p = subprocess.run([binary] + argv, capture_output=True, timeout=600)
            data = p.stdout
            if path and os.path.exists(path):
                if name == "export-sqlite":  # the rows, not SQLite's page layout
                    data = subprocess.run(["sqlite3", path, ".dump"], capture_output=True,
                                          check=True).stdout
                else:
                    with open(path, "rb") as f:
                        data = f.read()
                os.unlink(path)
            res[name] = (p.returncode, hashlib.sha256(data).hexdigest(), data[:1 << 22],
                         p.stderr.replace(trace.encode(), b"TRACE"))
    return res


def first_diff(a, b):
    la, lb = a.split(b"\n"), b.split(b"\n")
    for i, (x, y) in enumerate(zip(la, lb)):
        if x != y:
            return f"line {i + 1}: {x[:160]!r} vs {y[:160]!r}"
    return f"lengths {len(la)} vs {len(lb)} lines"


def traces_of(paths):
    for p in paths:
        if os.path.isdir(p):
            for f in sorted(os.listdir(p)):
                if f.endswith(".bst"):
                    yield os.path.join(p, f)
        else:
            yield p


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("old")
    ap.add_argument("new")
    ap.add_argument("traces", nargs="+")
    ap.add_argument("-j", type=int, default=2)
    a = ap.parse_args()
    vers = [subprocess.run([b, "--version"], capture_output=True, text=True).stdout.strip()
            for b in (a.old, a.new)]
    if vers[0] != vers[1]:  # the exports and the report's footer name their own version
        print(f"warning: {vers[0]} vs {vers[1]}: build NEW with make VERSION=<OLD's>",
              file=sys.stderr)
    reports = subprocess.run([a.old, "__complete", "reports"], capture_output=True, text=True,
                             check=True).stdout.split()
    reports = ",".join(reports)
    traces = list(traces_of(a.traces))
    bad = 0

    top = tempfile.mkdtemp(prefix="same-outputs-")

    def one(i):
        out = os.path.join(top, str(i))
        os.mkdir(out)
        t = traces[i]
        return t, digest(a.old, t, reports, out), digest(a.new, t, reports, out)

    with concurrent.futures.ThreadPoolExecutor(a.j) as ex:
        for t, old, new in ex.map(one, range(len(traces))):
            for name in old:
                o, n = old[name], new[name]
                if o[:2] != n[:2] or o[3] != n[3]:
                    bad += 1
                    why = (f"exit {o[0]} vs {n[0]}" if o[0] != n[0] else
                           first_diff(o[2], n[2]) if o[1] != n[1] else
                           "stderr: " + first_diff(o[3], n[3]))
                    print(f"DIFF {os.path.basename(t)} {name}: {why}")
    print(f"{len(traces)} traces, {len(traces) * len(list(commands('t', '/x')))} outputs each "
          f"binary, {bad} differ")
    shutil.rmtree(top, ignore_errors=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
