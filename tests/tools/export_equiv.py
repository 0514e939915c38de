#!/usr/bin/env python3
"""Do two builds export traces alike? Chrome, Perfetto and SQLite, byte for byte (issue 62).

For each trace, both binaries run `export --format chrome|perfetto|sqlite` to the same path
(the Chrome header names it); the Chrome JSON and the Perfetto protobuf are compared byte for
byte, the SQLite database by `sqlite3 FILE .dump` (its rows and schema, not SQLite's page
layout). The exporter's version (Chrome's header, SQLite's META) is the one thing allowed to
differ: each binary writes its own, so it is replaced by "VERSION" on both sides. Export CPU
time (user + system) and peak RSS of each run are printed; with --rounds N each export runs N times, the two builds
alternating, and the medians (min..max) are printed (bench/RESULTS.md, "The export model").

  tests/tools/export_equiv.py BASE_BINARY NEW_BINARY [TRACE_OR_DIR...] [-f FORMATS] [-k WORD]
                              [--rounds N]
  tests/tools/export_equiv.py --record DIR BINARY   # the local traces, recorded here

Traces: .bst files and directories of them; none given: ../shared/traces and, when they exist,
/tmp/export-equiv-traces (what --record makes) and its kept/ (BPFSIGHT_KEEP_TRACES=DIR of a
test run keeps the traces the e2e tests recorded or made: tests/e2e/helpers.py). Exit status 0 when every export is identical,
1 otherwise (each difference with where it starts).
"""
import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from same_outputs import first_diff, traces_of  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FORMATS = ["chrome", "perfetto", "sqlite"]
LOCAL = "/tmp/export-equiv-traces"
SHARED = os.path.join(os.path.dirname(ROOT), "shared", "traces")
# What --record makes: the families no real trace has (osrt, sched, mem, cpu with a Python
# job), each trace a few seconds of a workload from tests/workloads.
RECORDINGS = [
    ("gil-osrt-sched-cpu", "gil,osrt,sched,cpu", ["--stacks=gil,osrt"],
     ["python3", "tests/workloads/gil_work.py", "cpu", "3", "2"]),
    ("gil-full", "gil,cpu", ["--gil-mode=full", "--stacks=gil"],
     ["python3", "tests/workloads/gil_work.py", "cpu", "2", "1"]),
    ("mem-rss", "mem,osrt,sched,cpu", ["--stacks=mem"],
     ["python3", "-c", "import time\nx = []\nfor i in range(40):\n"
      "    x.append(bytearray(8 << 20)); time.sleep(0.02)\ndel x[::2]; time.sleep(0.2)"]),
    ("syscalls", "osrt,sched", ["--stacks=osrt"], ["BUILD/tests/syscalls", "200", "20"]),
]


def run(argv):
    """(exit status, CPU seconds, peak RSS in KiB, stderr) of ARGV, as /usr/bin/time -v says
    them (CPU time, not wall time: the machine is shared; the peak is the kernel's of the child
    alone, where os.wait4's counts the forking Python's too)."""
    with tempfile.NamedTemporaryFile("r") as t:
        p = subprocess.run(["/usr/bin/time", "-f", "%M %U %S", "-o", t.name] + argv,
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        rss, user, sys_ = t.read().split()[-3:]
    return p.returncode, float(user) + float(sys_), int(rss), p.stderr


def version(binary):
    return subprocess.run([binary, "--version"], capture_output=True, text=True,
                          check=True).stdout.split()[-1]


def normalized(fmt, path, ver):
    if fmt == "sqlite":
        data = subprocess.run(["sqlite3", path, ".dump"], capture_output=True,
                              check=True).stdout
        return data.replace(f"'exporter_version','{ver}'".encode(),
                            b"'exporter_version','VERSION'")
    with open(path, "rb") as f:
        data = f.read()
    if fmt == "chrome":  # the header's JSON is indented
        data = data.replace(f'"exporter_version": "{ver}"'.encode(),
                            b'"exporter_version": "VERSION"', 1)
    return data


def where(a, b):
    """The first difference: a line for text, an offset for binary data."""
    if b"\0" not in a[:4096] and b"\0" not in b[:4096]:
        return first_diff(a, b)
    n = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
    return f"byte {n} of {len(a)} vs {len(b)}: {a[n:n + 24].hex()} vs {b[n:n + 24].hex()}"


def export_one(binary, ver, trace, fmt, out):
    path = os.path.join(out, "x." + fmt)
    rc, secs, rss, err = run([binary, "export", trace, "--format", fmt, "-o", path, "--force"])
    data = b""
    if os.path.isdir(path):  # a merged file: a file per rank (export_split.h)
        for f in sorted(os.listdir(path)):
            data += f.encode() + b"\n" + normalized(fmt, os.path.join(path, f), ver)
        shutil.rmtree(path)
    elif os.path.exists(path):
        data = normalized(fmt, path, ver)
        os.unlink(path)
    return rc, secs, rss, data, err.replace(trace.encode(), b"TRACE")


def times(a, vers, trace, fmt, top, o, n):
    """Each build's export of TRACE a.rounds times, alternating: medians (min..max)."""
    runs = {"base": [o[1:3]], "new": [n[1:3]]}
    for _ in range(a.rounds - 1):
        for side, ver in (("base", vers[0]), ("new", vers[1])):
            r = export_one(getattr(a, side), ver, trace, fmt, top)
            runs[side].append(r[1:3])

    def med(vals, fmt_):
        return f"{fmt_(statistics.median(vals))} ({fmt_(min(vals))}..{fmt_(max(vals))})"
    secs = {s: [r[0] for r in v] for s, v in runs.items()}
    rss = {s: [r[1] / 1024 for r in v] for s, v in runs.items()}
    ratio = statistics.median([x / y for x, y in zip(secs["new"], secs["base"]) if y] or [1])
    print(f"| {os.path.basename(trace)} | {fmt} | {len(o[3]):,} | "
          f"{med(secs['base'], '{:.2f}'.format)} | {med(secs['new'], '{:.2f}'.format)} | "
          f"{ratio:.2f} | {med(rss['base'], '{:.0f}'.format)} | "
          f"{med(rss['new'], '{:.0f}'.format)} | {'same' if o[3] == n[3] else 'DIFFERENT'} |",
          flush=True)


def record(out, binary):
    os.makedirs(out, exist_ok=True)
    build = os.path.join(ROOT, "build")  # the workloads: make OUT=build test-build
    for name, fams, extra, cmd in RECORDINGS:
        cmd = [c.replace("BUILD", build) for c in cmd]
        path = os.path.join(out, name + ".bst")
        argv = [binary, "record", "-o", path, "--force", "-t", fams] + extra + ["--"] + cmd
        p = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True)
        print(f"{name}: exit {p.returncode} {path}" + (f"\n{p.stderr}" if p.returncode else ""))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("base", nargs="?")
    ap.add_argument("new", nargs="?")
    ap.add_argument("traces", nargs="*")
    ap.add_argument("-f", "--formats", default=",".join(FORMATS))
    ap.add_argument("-k", default="", help="only traces whose name has this")
    ap.add_argument("--record", metavar="DIR", help="record the local traces into DIR with BASE")
    ap.add_argument("--rounds", type=int, default=1, help="runs of each export (timing)")
    a = ap.parse_args()
    if a.record:
        record(a.record, a.base)
        return 0
    if not a.new:
        ap.error("BASE_BINARY and NEW_BINARY are needed")
    paths = a.traces or [SHARED] + [d for d in (LOCAL, os.path.join(LOCAL, "kept"))
                                    if os.path.isdir(d)]
    traces = [t for t in traces_of(paths) if a.k in os.path.basename(t)]
    top = tempfile.mkdtemp(prefix="export-equiv-")
    # Copies: a rebuild meanwhile replaces neither side.
    for side in ("base", "new"):
        setattr(a, side, shutil.copy(getattr(a, side), os.path.join(top, side)))
    vers = version(a.base), version(a.new)
    bad = 0
    if a.rounds > 1:
        print("| trace | format | bytes | base CPU (s) | new CPU (s) | new / base | base peak RSS (MiB) |"
              " new peak RSS (MiB) | output |\n|---|---|---|---|---|---|---|---|---|")
    try:
        for t in traces:
            for fmt in a.formats.split(","):
                o = export_one(a.base, vers[0], t, fmt, top)
                n = export_one(a.new, vers[1], t, fmt, top)
                same = o[0] == n[0] and o[3] == n[3] and o[4] == n[4]
                if a.rounds > 1:
                    times(a, vers, t, fmt, top, o, n)
                    continue
                why = ("identical" if same else f"exit {o[0]} vs {n[0]}" if o[0] != n[0]
                       else where(o[3], n[3]) if o[3] != n[3] else
                       "stderr: " + first_diff(o[4], n[4]))
                bad += not same
                print(f"{'SAME' if same else 'DIFF'} {os.path.basename(t):28} {fmt:8} "
                      f"{o[1]:6.2f}s {o[2] // 1024:4} MiB -> {n[1]:6.2f}s {n[2] // 1024:4} MiB "
                      f"{len(n[3]):>10} B  {'' if same else why}", flush=True)
    finally:
        shutil.rmtree(top, ignore_errors=True)
    print(f"{len(traces)} traces, {bad} exports differ")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
